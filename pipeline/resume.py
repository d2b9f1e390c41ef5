"""Resume: a job directory holds a finished run only if its ``done.json`` marker says so and matches.

The marker is written last, atomically, after the outputs and the MLflow run are complete. It records
the run's config hash, the hash of the code that produced it and the content hash of its data, so a
re-run of the same command skips exactly the finished jobs, and reruns a job whose config or code
changed or whose data file no longer matches (data integrity).
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
from pathlib import Path

import numpy as np

from pipeline.data.certify import content_hash
from pipeline.paths import PACKAGE_ROOT

MARKER = "done.json"


@functools.cache
def code_hash() -> str:
    """Hash of the package's source: results made by other code are not reused."""
    h = hashlib.sha256()
    for path in sorted((PACKAGE_ROOT / "pipeline").rglob("*.py")):
        h.update(path.relative_to(PACKAGE_ROOT).as_posix().encode())
        h.update(path.read_bytes())
    return h.hexdigest()[:16]


def _matrix(data: np.lib.npyio.NpzFile) -> object:
    if "X" in data:
        return data["X"]
    from scipy import sparse

    return sparse.csr_matrix((data["data"], data["indices"], data["indptr"]), shape=tuple(data["shape"]))


def save_data(path: Path, X: object, y: np.ndarray) -> None:
    """Save the exact arrays a learner saw (sparse as CSR parts): never pickled."""
    from scipy import sparse

    if sparse.issparse(X):
        X = sparse.csr_matrix(X)
        np.savez(path, data=X.data, indices=X.indices, indptr=X.indptr, shape=np.array(X.shape), y=y)
    else:
        np.savez(path, X=X, y=y)


def record(out: Path, key: str, data_hash: str, streamed: bool = False) -> None:
    """Mark ``out`` as a finished run of ``key`` (atomic: a crash leaves no half-written marker).
    ``streamed``: the data were a stream regenerated from the config's seed, with no ``data.npz``."""
    tmp = out / f".{MARKER}.tmp"
    done = {"key": key, "code": code_hash(), "data_hash": data_hash} | ({"streamed": True} if streamed else {})
    tmp.write_text(json.dumps(done) + "\n")
    os.replace(tmp, out / MARKER)


def check(out: Path, key: str) -> str | None:
    """None if ``out`` holds an intact finished run of ``key``; otherwise why it must (re)run."""
    marker = out / MARKER
    if not marker.exists():
        return "not run yet" if not (out / "results.parquet").exists() else "interrupted"
    done = json.loads(marker.read_text())
    if done.get("key") != key:
        return "its config changed"
    if done.get("code") != code_hash():
        return "the code changed"
    if done.get("streamed"):  # no data file: the same key and code regenerate the same stream
        return None
    try:
        with np.load(out / "data.npz", allow_pickle=False) as data:
            found = content_hash(_matrix(data), data["y"])
    except (OSError, ValueError, KeyError) as e:
        return f"its data file is unreadable ({type(e).__name__})"
    if found != done.get("data_hash"):
        return f"its data file no longer matches its recorded hash ({found} != {done.get('data_hash')})"
    return None


def invalidate(out: Path) -> None:
    """Remove the marker and error of a job about to (re)run."""
    for name in (MARKER, "error.txt"):
        (out / name).unlink(missing_ok=True)
