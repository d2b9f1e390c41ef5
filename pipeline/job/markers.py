"""Done markers: a job directory holds a finished run only if its ``done.json`` marker says so and matches.

The marker is written last, atomically, after the outputs and the MLflow run are complete. It records
the run's config hash, the hash of the code that produced it, the fingerprint of every input file the
dataset reads (``pipeline.job.identity.inputs``) and the content hash of its data, so a re-run of the same
command skips exactly the finished jobs, and reruns a job whose config, code or input files changed, whose
outputs are missing or whose data file no longer matches (data integrity). A marker that cannot be read
means "not done": the job reruns, never crashes.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Mapping

import numpy as np

from pipeline import files
from pipeline.data.certify import content_hash
from pipeline.job.identity import code_hash

MARKER = "done.json"
OUTPUTS = ("results.parquet", "curve.parquet")  # what the sweep's aggregation reads from a finished job


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


def record(out: Path, key: str, data_hash: str, streamed: bool = False, sources: Mapping[str, str] | None = None,
           code: str | None = None) -> None:
    """Mark ``out`` as a finished run of ``key`` (atomic: a crash leaves no half-written marker).
    ``streamed``: the data were a stream regenerated from the config's seed, with no ``data.npz``.
    ``sources``: ``pipeline.job.identity.inputs`` of the dataset, taken before it was read (so an edit made
    while the job ran is seen as a change by the next check, never hidden). ``code``: the job's
    ``pipeline.job.identity.job_code`` (the whole package's ``code_hash`` if not given)."""
    done = {"key": key, "code": code or code_hash(), "data_hash": data_hash} | ({"streamed": True} if streamed else {})
    if sources:
        done["inputs"] = dict(sources)
    files.write_text(out / MARKER, json.dumps(done) + "\n")


def _read_marker(marker: Path) -> dict[str, Any] | str:
    """The marker's record, or why it cannot be trusted (truncated, not JSON, not an object)."""
    try:
        done = json.loads(marker.read_text())
    except (OSError, UnicodeDecodeError, ValueError) as e:
        return f"its {MARKER} is unreadable ({type(e).__name__}); it is treated as not done"
    if (not isinstance(done, dict) or not all(isinstance(done.get(k), str) for k in ("key", "code"))
            or not isinstance(done.get("inputs", {}), dict)):
        return f"its {MARKER} is not a valid marker ({type(done).__name__}); it is treated as not done"
    return done


def check(out: Path, key: str, sources: Mapping[str, str] | None = None, code: str | None = None) -> str | None:
    """None if ``out`` holds an intact finished run of ``key`` made from ``sources`` (``pipeline.job.identity.inputs``,
    as the files are now) by ``code`` (``pipeline.job.identity.job_code``; the whole package's hash if not given); otherwise
    why it must (re)run. Never raises for a damaged job directory."""
    marker = out / MARKER
    if not marker.exists():
        return "not run yet" if not (out / "results.parquet").exists() else "interrupted"
    done = _read_marker(marker)
    if isinstance(done, str):
        return done
    if done.get("key") != key:
        return "its config changed"
    if done.get("code") != (code or code_hash()):
        return "the code it runs, or the version of a library it computes with, changed"
    recorded = done.get("inputs") or {}
    current = dict(sources or {})
    if recorded != current:
        changed = sorted(p for p in set(recorded) | set(current) if recorded.get(p) != current.get(p))
        return f"its input file(s) changed since it ran: {', '.join(changed)}"
    if not done.get("streamed"):  # a stream has no data file: the same key and code regenerate it
        why = data_mismatch(out, done.get("data_hash"))
        if why:
            return why
    missing = [name for name in OUTPUTS if not (out / name).is_file()]
    if missing:
        return f"its output(s) are missing: {', '.join(missing)}"
    return None


def data_mismatch(out: Path, recorded: object) -> str | None:
    """Why the saved data of ``out`` do not match the hash its marker recorded (None if they do)."""
    try:
        with np.load(out / "data.npz", allow_pickle=False) as data:
            found = content_hash(_matrix(data), data["y"])
    except (OSError, ValueError, KeyError, EOFError) as e:
        return f"its data file is unreadable ({type(e).__name__})"
    if found != recorded:
        return f"its data file no longer matches its recorded hash ({found} != {recorded})"
    return None


def finished(out: Path) -> bool:
    """Whether the last attempt of the job in ``out`` completed: its marker is there and no error was
    recorded after it (what the sweep's aggregation counts; :func:`check` decides whether to rerun)."""
    return (out / MARKER).is_file() and not (out / "error.txt").exists()


REUSED = "reused.json"  # in a job directory whose result was taken from the job store: the run that made it
WRITTEN = ("results.parquet", "curve.parquet", "trace.npz", "data.npz", "error.txt")  # what a job writes there


def invalidate(out: Path) -> None:
    """Remove the marker, error and reuse record of a job about to (re)run, and any symbolic link among
    the files it writes (the link, never its target: a planted link is not written through)."""
    for name in (MARKER, "error.txt", REUSED):
        (out / name).unlink(missing_ok=True)
    for name in WRITTEN:
        if (out / name).is_symlink():
            (out / name).unlink()

