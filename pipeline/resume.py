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

from pipeline import files
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


def record(out: Path, key: str, data_hash: str, streamed: bool = False, sources: Mapping[str, str] | None = None,
           code: str | None = None) -> None:
    """Mark ``out`` as a finished run of ``key`` (atomic: a crash leaves no half-written marker).
    ``streamed``: the data were a stream regenerated from the config's seed, with no ``data.npz``.
    ``sources``: :func:`inputs` of the dataset, taken before it was read (so an edit made while the
    job ran is seen as a change by the next check, never hidden). ``code``: the job's :func:`job_code`
    (the whole package's :func:`code_hash` if not given)."""
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
    """None if ``out`` holds an intact finished run of ``key`` made from ``sources`` (:func:`inputs`,
    as the files are now) by ``code`` (:func:`job_code`; the whole package's hash if not given); otherwise
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


class Held(Exception):
    """``directory`` is held by another live process (``holder``: its pid as it wrote it)."""

    def __init__(self, directory: Path, holder: str) -> None:
        super().__init__(f"{directory} is in use by process {holder}")
        self.directory, self.holder = directory, holder


_HOLDING: dict[int, str] = {}  # descriptor -> lock file this process holds (a second hold of one is a no-op)


def hold(directory: Path, wait: bool = False, waiting: Callable[[str], None] | None = None) -> int | None:
    """Take ``directory``'s lock for this process; return the descriptor that holds it (:func:`release` it).

    The lock is ``flock`` on ``directory/.lock``: the kernel drops it when the holder exits, however it
    exits, so a crash or a kill never leaves a stale lock. Held by another process: :class:`Held` at once
    (``wait=False``), or block until it is free (``wait=True``; ``waiting(holder)`` is called first, and a
    signal interrupts the wait). The holder's pid is written into the file for the refusal to name.
    Already held by this process (a job directory that is the sweep directory): None, nothing to release.
    """
    directory.mkdir(parents=True, exist_ok=True)
    path = os.path.join(os.path.realpath(directory), LOCK)  # the directory resolved, the lock file itself never
    if path in _HOLDING.values():
        return None
    while True:
        try:
            fd = files.open_lock(Path(path))  # a link planted as the lock is replaced, its target never written
        except FileNotFoundError:  # its directory pruned meanwhile (python -m pipeline.store prune)
            directory.mkdir(parents=True, exist_ok=True)
            continue
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                holder = os.pread(fd, 64, 0).decode(errors="replace").strip() or "unknown"
                if not wait:
                    raise Held(directory, holder) from None
                if waiting is not None:
                    waiting(holder)
                    waiting = None
                fcntl.flock(fd, fcntl.LOCK_EX)
            if not _same_file(fd, path):  # removed (pruned) while this process waited: lock the new one
                os.close(fd)
                continue
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        except BaseException:
            os.close(fd)
            raise
        _HOLDING[fd] = path
        return fd


def _same_file(fd: int, path: str) -> bool:
    """Whether ``path`` still names the file open as ``fd`` (a lock file unlinked by ``pipeline.store``'s
    pruning while another process held it is another file than the one a newcomer creates)."""
    try:
        st = os.stat(path, follow_symlinks=False)
    except FileNotFoundError:
        return False
    mine = os.fstat(fd)
    return (st.st_dev, st.st_ino) == (mine.st_dev, mine.st_ino)


def release(fd: int | None) -> None:
    """Release a lock taken by :func:`hold` (the file stays; only the lock is dropped)."""
    if fd is not None:
        _HOLDING.pop(fd, None)
        os.close(fd)


# --- Job identity: what a job is, whichever command reached it ------------------------------------------

def _module_file(name: str) -> Path | None:
    """The source file of module ``name`` (a package's ``__init__.py``), or None if it has none."""
    import importlib.util

    parts = name.split(".")
    if parts[0] == "pipeline":  # ours: by path, without importing anything
        base = PACKAGE_ROOT.joinpath(*parts)
        for candidate in (base / "__init__.py", base.with_suffix(".py")):
            if candidate.is_file():
                return candidate
        return None
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return None
    origin = getattr(spec, "origin", None)
    return Path(origin) if origin and origin.endswith(".py") else None


def _imports(name: str, path: Path, packages: frozenset[str]) -> set[str]:
    """The modules of ``packages`` that module ``name`` imports anywhere in its source (functions included:
    the lazy imports count), read from its syntax tree, never by importing it.

    Parsing every module of a job's closure costs a few tenths of a second, once per process: the answer
    is kept in the cache directory under a hash of everything it depends on (the source's bytes, the
    module's name and whether it is a package, ``packages``), so an edited source is parsed afresh."""
    from pipeline.data.certify import default_cache_dir

    source = path.read_bytes()
    key = hashlib.sha256(json.dumps([name, path.name == "__init__.py", sorted(packages)]).encode() + b"\0" + source)
    entry = default_cache_dir() / "imports" / f"{key.hexdigest()[:32]}.json"
    try:
        return set(json.loads(entry.read_text()))
    except (OSError, ValueError):
        pass
    found = _parse_imports(name, path, source, packages)
    try:
        entry.parent.mkdir(parents=True, exist_ok=True)
        files.write_text(entry, json.dumps(sorted(found)))
    except OSError:  # a read-only, full or missing cache costs the parse, nothing else
        pass
    return found


def _parse_imports(name: str, path: Path, source: bytes, packages: frozenset[str]) -> set[str]:
    import ast

    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            found.add(module)
            found |= {f"{module}.{alias.name}" for alias in node.names}  # `from pkg import submodule`
    return {m for m in found if m and m.split(".")[0] in packages}


@functools.cache
def closure(roots: tuple[str, ...]) -> dict[str, Path]:
    """``roots`` and every module they import, transitively, within their own top-level packages (the
    parents of a module included: they run first), each with its source file."""
    packages = frozenset(r.split(".")[0] for r in roots)
    seen: dict[str, Path] = {}
    todo = list(roots)
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        path = _module_file(name)
        if path is None:
            continue
        seen[name] = path
        parts = name.split(".")
        todo += [".".join(parts[:i]) for i in range(1, len(parts))]
        todo += sorted(_imports(name, path, packages))
    return dict(sorted(seen.items()))


def code_of(roots: tuple[str, ...]) -> str:
    """Hash of the source of :func:`closure` ``(roots)``. Editing a module outside it (the report, the plots,
    the tracking) leaves a job's identity unchanged; editing one inside it (a learner, a kernel, a bound,
    the data) changes it. Where unsure it includes more: a module reached is included whole, and a
    package's ``__init__`` reaches every module it imports (all learners, all datasets)."""
    h = hashlib.sha256()
    for name, path in closure(roots).items():
        h.update(name.encode() + b"\0" + path.read_bytes() + b"\0")
    return h.hexdigest()[:16]


def job_roots(spec: Any) -> tuple[str, ...]:
    """The modules a job runs from: the run loop (which reaches the bounds, comparators and certificates),
    its learner's and its dataset's modules, the modules defining its learner's bounds (plug-ins
    included) and those of the plug-ins' statistic providers (``boundlab.statistics``)."""
    from pipeline.plugins import BOUNDS, STATISTICS

    modules = {"pipeline.run", type(spec.learner).__module__, type(spec.dataset).__module__}
    return tuple(sorted(modules | set(BOUNDS.modules_for(spec.learner.name)) | set(STATISTICS.modules())))


_JOB_CODE: dict[tuple[str, ...], str] = {}  # per process: the sources are read once (a sweep's jobs share them)


def job_code(spec: Any) -> str:
    """:func:`code_of` the job's :func:`job_roots`, with the :func:`versions` of the libraries it computes
    with: an upgraded numpy, scipy, numba or solver may change a result's last bits (or more), so a job
    stored under other versions is run again, never reused."""
    roots = job_roots(spec)
    if roots not in _JOB_CODE:
        payload = code_of(roots) + json.dumps(versions(), sort_keys=True)
        _JOB_CODE[roots] = hashlib.sha256(payload.encode()).hexdigest()[:16]
    return _JOB_CODE[roots]


# The libraries whose arithmetic reaches a job's numbers (kernels, solvers, certificates, tables).
NUMERICAL = ("numpy", "scipy", "numba", "llvmlite", "scikit-learn", "cvxpy", "clarabel", "highspy", "pandas", "pyarrow")


@functools.cache
def versions() -> dict[str, str]:
    """The interpreter's and :data:`NUMERICAL` libraries' versions ('absent' for one not installed)."""
    import platform
    from importlib import metadata

    found = {"python": f"{platform.python_implementation()} {platform.python_version()}"}
    for name in NUMERICAL:
        try:
            found[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            found[name] = "absent"
    return found
