"""Resume: a job directory holds a finished run only if its ``done.json`` marker says so and matches.

The marker is written last, atomically, after the outputs and the MLflow run are complete. It records
the run's config hash, the hash of the code that produced it, the fingerprint of every input file the
dataset reads (:func:`inputs`) and the content hash of its data, so a re-run of the same command skips
exactly the finished jobs, and reruns a job whose config, code or input files changed, whose outputs
are missing or whose data file no longer matches (data integrity). A marker that cannot be read means
"not done": the job reruns, never crashes.

Which process holds a job or a sweep is decided here too (:func:`hold`): an advisory lock on a file in
its directory, taken by the process that runs it and released by the kernel when that process ends, so a
lock never outlives its holder. A second identical sweep is refused at once, naming the holder; a job
whose directory another live process holds waits for it instead of running twice into one directory.
"""

from __future__ import annotations

import fcntl
import functools
import hashlib
import json
import os
from pathlib import Path
from typing import Any, Callable, Mapping

import numpy as np

from pipeline.data.certify import content_hash
from pipeline.paths import PACKAGE_ROOT

MARKER = "done.json"
LOCK = ".lock"  # held (flock) by the process running the job or the sweep in that directory
OUTPUTS = ("results.parquet", "curve.parquet")  # what the sweep's aggregation reads from a finished job


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


def _file_hash(path: str) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()[:16]


_FILE_HASHES: dict[tuple[str, int, int], str] = {}  # (path, size, mtime): a file is hashed once per version


def fingerprint(path: str | os.PathLike[str]) -> str:
    """Content fingerprint of one input file: 'size:sha256' of its bytes ('missing' if absent).

    The content decides, not the mtime: touching a file reruns nothing (results stay bit-identical);
    size and mtime only key the in-process cache so a sweep's jobs hash each file once.
    """
    try:
        st = os.stat(path)
    except OSError:
        return "missing"
    cache_key = (os.path.realpath(path), st.st_size, st.st_mtime_ns)
    if cache_key not in _FILE_HASHES:
        _FILE_HASHES[cache_key] = _file_hash(cache_key[0])
    return f"{st.st_size}:{_FILE_HASHES[cache_key]}"


def inputs(dataset: Any) -> dict[str, str]:
    """Fingerprint of every file ``dataset`` reads, by the path its config names (``dataset.path``).

    The config hash names a file, not its content: without this an edited file would look "done".
    Generated and bundled datasets read no user file: {}.
    """
    path = getattr(dataset, "path", None)
    return {str(path): fingerprint(path)} if isinstance(path, (str, os.PathLike)) and str(path) else {}


def record(out: Path, key: str, data_hash: str, streamed: bool = False, sources: Mapping[str, str] | None = None) -> None:
    """Mark ``out`` as a finished run of ``key`` (atomic: a crash leaves no half-written marker).
    ``streamed``: the data were a stream regenerated from the config's seed, with no ``data.npz``.
    ``sources``: :func:`inputs` of the dataset, taken before it was read (so an edit made while the
    job ran is seen as a change by the next check, never hidden)."""
    tmp = out / f".{MARKER}.tmp"
    done = {"key": key, "code": code_hash(), "data_hash": data_hash} | ({"streamed": True} if streamed else {})
    if sources:
        done["inputs"] = dict(sources)
    tmp.write_text(json.dumps(done) + "\n")
    os.replace(tmp, out / MARKER)


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


def check(out: Path, key: str, sources: Mapping[str, str] | None = None) -> str | None:
    """None if ``out`` holds an intact finished run of ``key`` made from ``sources`` (:func:`inputs`,
    as the files are now); otherwise why it must (re)run. Never raises for a damaged job directory."""
    marker = out / MARKER
    if not marker.exists():
        return "not run yet" if not (out / "results.parquet").exists() else "interrupted"
    done = _read_marker(marker)
    if isinstance(done, str):
        return done
    if done.get("key") != key:
        return "its config changed"
    if done.get("code") != code_hash():
        return "the code changed"
    recorded = done.get("inputs") or {}
    current = dict(sources or {})
    if recorded != current:
        changed = sorted(p for p in set(recorded) | set(current) if recorded.get(p) != current.get(p))
        return f"its input file(s) changed since it ran: {', '.join(changed)}"
    if not done.get("streamed"):  # a stream has no data file: the same key and code regenerate it
        why = _data_mismatch(out, done.get("data_hash"))
        if why:
            return why
    missing = [name for name in OUTPUTS if not (out / name).is_file()]
    if missing:
        return f"its output(s) are missing: {', '.join(missing)}"
    return None


def _data_mismatch(out: Path, recorded: object) -> str | None:
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


def invalidate(out: Path) -> None:
    """Remove the marker and error of a job about to (re)run."""
    for name in (MARKER, "error.txt"):
        (out / name).unlink(missing_ok=True)


class Held(Exception):
    """``directory`` is held by another live process (``holder``: its pid as it wrote it)."""

    def __init__(self, directory: Path, holder: str) -> None:
        super().__init__(f"{directory} is in use by process {holder}")
        self.directory, self.holder = directory, holder


def hold(directory: Path, wait: bool = False, waiting: Callable[[str], None] | None = None) -> int:
    """Take ``directory``'s lock for this process; return the descriptor that holds it (close it to release).

    The lock is ``flock`` on ``directory/.lock``: the kernel drops it when the holder exits, however it
    exits, so a crash or a kill never leaves a stale lock. Held by another process: :class:`Held` at once
    (``wait=False``), or block until it is free (``wait=True``; ``waiting(holder)`` is called first, and a
    signal interrupts the wait). The holder's pid is written into the file for the refusal to name.
    """
    directory.mkdir(parents=True, exist_ok=True)
    fd = os.open(directory / LOCK, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 64, 0).decode(errors="replace").strip() or "unknown"
            if not wait:
                raise Held(directory, holder) from None
            if waiting is not None:
                waiting(holder)
            fcntl.flock(fd, fcntl.LOCK_EX)
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
    except BaseException:
        os.close(fd)
        raise
    return fd


def release(fd: int | None) -> None:
    """Release a lock taken by :func:`hold` (the file stays; only the lock is dropped)."""
    if fd is not None:
        os.close(fd)
