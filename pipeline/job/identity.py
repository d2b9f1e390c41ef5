"""Job identity: what a job is, whichever command, override order, grid or experiment reached it.

A job is its config key (``Job.key``), the code it runs with the versions of the libraries it computes
with (:func:`job_code`: the source of the import closure of its modules, never the whole package) and the
content of the input files its dataset reads (:func:`inputs`); :func:`job_identity` combines the three.
The done marker of a job directory (``pipeline.job.markers``) records them, and the job store
(``pipeline.job.store``) files a finished job under its identity, so a job is rerun exactly when one of them
changed (docs/architecture.md, "Job identity").
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
from pathlib import Path
from typing import Any, Mapping

from pipeline import files
from pipeline.paths import PACKAGE_ROOT


@functools.cache
def code_hash() -> str:
    """Hash of the package's source: results made by other code are not reused."""
    h = hashlib.sha256()
    for path in sorted((PACKAGE_ROOT / "pipeline").rglob("*.py")):
        h.update(path.relative_to(PACKAGE_ROOT).as_posix().encode())
        h.update(path.read_bytes())
    return h.hexdigest()[:16]


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


def job_identity(key: str, code: str, sources: Mapping[str, str] | None) -> str:
    """What a job is: its config (``Job.key``: the learner, the dataset and their resolved parameters,
    whatever command or override order chose them), the code it runs with the versions of the libraries
    it computes with (:func:`job_code`) and its input files' content (:func:`inputs`): the key under which
    the job store (``pipeline.job.store``) keeps a finished job."""
    payload = json.dumps({"config": key, "code": code, "inputs": dict(sources or {})}, sort_keys=True)
    return hashlib.sha256(payload.encode()).hexdigest()[:24]


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


_IMPORTS_FORMAT = "2"  # of the parsed-imports cache entries: another format, other entries


def _imports(name: str, path: Path, packages: frozenset[str]) -> set[str]:
    """What module ``name`` imports of ``packages`` anywhere in its source (functions included: the lazy imports
    count), read from its syntax tree, never by importing it (:func:`_parse_imports` says how it is written).

    Parsing every module of a job's closure costs a few tenths of a second, once per process: the answer
    is kept in the cache directory under a hash of everything it depends on (the source's bytes, the
    module's name and whether it is a package, ``packages``), so an edited source is parsed afresh."""
    from pipeline.data.certify import default_cache_dir

    source = path.read_bytes()
    key = hashlib.sha256(json.dumps([_IMPORTS_FORMAT, name, path.name == "__init__.py", sorted(packages)]).encode()
                         + b"\0" + source)
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
    """The imports of ``packages`` in ``source``: ``"m"`` for ``import m``; for ``from m import x as y``,
    ``"m:"`` (m is run, as a package's face or as a module), ``"m.x"`` (x may be a submodule) and ``"m:x:y"``
    (the name y bound from m's x: which module defines it, when m is a package, :func:`_through_face`)."""
    import ast

    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names if alias.name.split(".")[0] in packages}
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            if not module or module.split(".")[0] not in packages:
                continue
            found.add(f"{module}:")
            for alias in node.names:
                found.add(f"{module}.{alias.name}")  # `from pkg import submodule`
                found.add(f"{module}:{alias.name}:{alias.asname or alias.name}")
    return found


def _through_face(package: str, path: Path, attr: str, packages: frozenset[str]) -> list[str] | None:
    """The modules that define what ``from package import attr`` binds, when ``package``'s ``__init__`` only
    imports it from them (``from package.x import attr``: a face); None when it cannot be told (the name is
    defined in the ``__init__`` itself, or comes through ``import *``): then the whole face is followed."""
    sources = [e.split(":")[0] for e in _imports(package, path, packages) if e.count(":") == 2 and e.split(":")[2] == attr]
    return sources or None


@functools.cache
def closure(roots: tuple[str, ...]) -> dict[str, Path]:
    """``roots`` and every module they run, transitively, within their own top-level packages, each with its
    source file. A module imported (``import m``, or ``from m import f`` of a module m) is followed: its own
    imports are in the closure. A package imported for a name it only re-exports (``from pipeline.learners
    import Pegasos``, whose ``__init__`` imports every learner to register it) is a *face*: its ``__init__``
    is in the closure (it runs) and so is the module that defines the name, not the package's other members;
    so are the parents of every module (they run first). Where the defining module cannot be told, the
    face's every import is followed: where unsure, more."""
    packages = frozenset(r.split(".")[0] for r in roots)
    seen: dict[str, Path] = {}
    followed: set[str] = set()
    todo: list[tuple[str, bool]] = [(r, True) for r in roots]
    while todo:
        name, follow = todo.pop()
        if name in followed or (not follow and name in seen):
            continue
        path = _module_file(name)
        if path is None:
            continue
        seen[name] = path
        parts = name.split(".")
        todo += [(".".join(parts[:i]), False) for i in range(1, len(parts))]  # parents run first: faces
        if not follow:
            continue
        followed.add(name)
        for entry in sorted(_imports(name, path, packages)):
            if ":" not in entry:
                todo.append((entry, True))  # import m; or from m import submodule (as m.x)
                continue
            module, _, rest = entry.partition(":")
            target = _module_file(module)
            if not rest:  # m runs: followed if a module, a face if a package (its names are resolved below)
                todo.append((module, target is not None and target.name != "__init__.py"))
                continue
            if target is None or target.name != "__init__.py":
                continue  # a name of a module: the module is followed already
            attr = rest.split(":")[0]  # the name imported (what the face binds), not what it is bound to here
            if _module_file(f"{module}.{attr}") is not None:
                continue  # a submodule: followed as m.x
            defining = _through_face(module, target, attr, packages)
            todo += [(m, True) for m in defining] if defining is not None else [(module, True)]
    return dict(sorted(seen.items()))


def code_of(roots: tuple[str, ...]) -> str:
    """Hash of the source of :func:`closure` ``(roots)``. Editing a module outside it (the report, the plots,
    the tracking) leaves a job's identity unchanged; editing one inside it (a learner, a kernel, a bound,
    the data) changes it; editing another learner, or a module only a package's face imports, leaves it
    unchanged. Where unsure it includes more: a module reached is included whole."""
    h = hashlib.sha256()
    for name, path in closure(roots).items():
        h.update(name.encode() + b"\0" + path.read_bytes() + b"\0")
    return h.hexdigest()[:16]


def job_roots(spec: Any) -> tuple[str, ...]:
    """The modules a job runs from: the run loop (which reaches the bounds, comparators and certificates),
    its learner's and its dataset's modules, the modules defining its learner's bounds (plug-ins
    included) and those of the plug-ins' statistic providers (``boundlab.statistics``)."""
    from pipeline.plugins import BOUNDS, STATISTICS

    modules = {"pipeline.job.run", type(spec.learner).__module__, type(spec.dataset).__module__}
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
