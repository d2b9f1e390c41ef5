"""Where the project lives: configs, experiments, the cache and the default tracking store."""

from __future__ import annotations

import os
from pathlib import Path

PACKAGE_ROOT = Path(__file__).resolve().parents[1]
CONF_DIR = PACKAGE_ROOT / "conf"


def project_root() -> Path:
    """The checkout that holds ``conf/``.

    DVC runs queued experiments in a temporary copy under ``.dvc/tmp/exps``; their runs belong to the
    workspace's tracking store, so the root is the checkout that holds that copy.
    """
    parts = PACKAGE_ROOT.parts
    for i in range(len(parts) - 2):
        if parts[i : i + 3] == (".dvc", "tmp", "exps"):
            return Path(*parts[:i])
    return PACKAGE_ROOT


def cache_dir() -> Path:
    """``BOUNDLAB_CACHE`` if set, else ``.cache`` in the project root: certified statistics, parsed imports
    and the job store (``pipeline.store``)."""
    return Path(os.environ.get("BOUNDLAB_CACHE") or project_root() / ".cache")
