"""Start-up of a Ray worker process that runs boundlab jobs (``conf/hydra/launcher/ray.yaml``).

Hydra resolves a job's output directory against the working directory of the process that runs it. A
worker of an existing cluster starts wherever ``ray start`` was run, so the preset's runtime_env names
this hook and sends the driver's directory: relative sweep directories then mean on the worker what
they mean on the driver, and the sweep finds its jobs' results where it expects them.
"""

from __future__ import annotations

import os

DRIVER_CWD_ENV = "BOUNDLAB_DRIVER_CWD"


def setup() -> None:
    """Move into the driver's working directory (it must exist on this node: one machine or a shared disk)."""
    cwd = os.environ.get(DRIVER_CWD_ENV)
    if not cwd:
        return
    if not os.path.isdir(cwd):
        raise RuntimeError(f"boundlab: the sweep's directory {cwd} does not exist on this Ray node: "
                           "run the cluster on one machine or with the project on a shared disk at the same path")
    os.chdir(cwd)
