"""Plug-ins: learners, bounds, datasets and statistic providers registered by installed packages under entry points.

Four entry-point groups, one per kind (docs/plugins.md):

- ``boundlab.learners``: ``NAME = "module:Class"``, a learner class whose ``name`` is ``NAME``;
- ``boundlab.datasets``: ``NAME = "module:Class"``, a dataset generator class whose ``name`` is ``NAME``;
- ``boundlab.bounds``: ``LABEL = "module:OBJECT"``, a :class:`pipeline.bounds.Bound` record or a sequence of
  them, each naming the learner it speaks about (``Bound.learner``);
- ``boundlab.statistics``: ``LABEL = "module:OBJECT"``, a :class:`pipeline.job.statistics.Provider` record or a
  sequence of them, each computing statistics from the runs of one :mod:`pipeline.contract` record type
  (``Provider.record``): what a plug-in learner's bounds require that its run does not give.

boundlab's own learners, bounds and datasets are registered the same way (``pyproject.toml``), so the
registries below hold built-ins and plug-ins alike; ``pipeline.learners.LEARNERS``,
``pipeline.data.DATASETS`` and ``pipeline.bounds.bounds_for`` are views over them. boundlab's own providers
are :data:`pipeline.job.statistics.PROVIDERS`, beside which :func:`pipeline.job.statistics.registry` puts the plug-ins'.

Discovery reads entry-point metadata only (:mod:`importlib.metadata`): nothing is imported until a
name is used (``registry[name]``), so ``boundlab --help`` and config errors stay fast. A name claimed by
a plug-in and a built-in keeps the built-in; a name claimed by two plug-ins is refused when selected; a
plug-in that fails to import is an error when selected (one line, exit code 2) and a warning otherwise.
"""

from __future__ import annotations

import importlib
import importlib.metadata as metadata
import sys
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from pipeline.params import UserError

GROUPS = {"learners": "boundlab.learners", "datasets": "boundlab.datasets", "bounds": "boundlab.bounds",
          "statistics": "boundlab.statistics"}
SELECT = {"learners": "algorithm", "datasets": "dataset"}  # the config group that selects a name of the kind
HOME = "boundlab"  # the distribution whose entry points are the built-ins


class PluginError(UserError):
    """A plug-in that cannot be used: ``str()`` is one line naming the entry point, its distribution and the fix."""


def warn(message: str) -> None:
    """One line on stderr, once per process and message (a sweep's jobs share the process)."""
    if message not in _WARNED:
        _WARNED.add(message)
        print(f"boundlab: warning: {message}", file=sys.stderr, flush=True)


_WARNED: set[str] = set()


@dataclass(frozen=True)
class Entry:
    """One entry point, read from metadata (nothing imported)."""

    group: str
    name: str
    value: str
    dist: str  # "NAME VERSION" of the distribution that declares it ("boundlab (pyproject.toml)" for the fallback)
    builtin: bool
    problem: str = ""  # why the name cannot be used (an ambiguous name), found without importing anything

    def describe(self) -> str:
        return f"entry point {self.group}: {self.name} = {self.value} (distribution {self.dist})"

    def load(self) -> Any:
        """Import the object the entry point names (``module:attr``); raise :class:`PluginError` in one line."""
        if self.problem:
            raise PluginError(self.problem)
        module, _, attr = self.value.partition(":")
        try:
            obj = importlib.import_module(module.strip())
            for part in attr.strip().split(".") if attr.strip() else ():
                obj = getattr(obj, part)
        except Exception as e:  # noqa: BLE001 - anything a plug-in's import raises
            what = f"{type(e).__name__}: {e}".splitlines()[0] if str(e) else type(e).__name__
            fix = ("reinstall boundlab ('pip install -e .' in its checkout)" if self.builtin else
                   f"fix or reinstall {self.dist.split()[0]}, or uninstall it (pip uninstall {self.dist.split()[0]})")
            raise PluginError(f"{self.describe()} failed to import ({what}); {fix}") from None
        return obj


def _dist_label(ep: metadata.EntryPoint) -> str:
    dist = getattr(ep, "dist", None)
    if dist is None:
        return "unknown distribution"
    return f"{dist.metadata['Name'] or dist.name} {dist.version}"


def _is_home(ep: metadata.EntryPoint) -> bool:
    dist = getattr(ep, "dist", None)
    name = (dist.metadata["Name"] or "") if dist is not None else ""
    return name.lower().replace("_", "-") == HOME


def _declared_builtins(group: str) -> list[Entry]:
    """The built-ins of ``group`` from the checkout's pyproject.toml: used when the installed metadata
    predates the entry points (an install made before they were added), so the built-ins never vanish."""
    import tomllib

    from pipeline.paths import PACKAGE_ROOT

    path = PACKAGE_ROOT / "pyproject.toml"
    try:
        table = tomllib.loads(path.read_text(encoding="utf-8"))["project"]["entry-points"][group]
    except (OSError, KeyError, tomllib.TOMLDecodeError):
        return []
    return [Entry(group, name, value, "boundlab (pyproject.toml)", True) for name, value in table.items()]


def _discover(kind: str) -> tuple[dict[str, Entry], list[str]]:
    """Name -> entry for one kind, resolving collisions, and the warnings found (metadata only)."""
    group = GROUPS[kind]
    eps = list(metadata.entry_points(group=group))
    builtin = [Entry(group, ep.name, ep.value, _dist_label(ep), True) for ep in eps if _is_home(ep)]
    plugins = [Entry(group, ep.name, ep.value, _dist_label(ep), False) for ep in eps if not _is_home(ep)]
    notes: list[str] = []
    if not builtin:
        builtin = _declared_builtins(group)
        if builtin:
            notes.append("boundlab's installed metadata has none of its entry points (installed before they were added); "
                         "using those of pyproject.toml: run 'pip install -e .' in the checkout")
    entries: dict[str, Entry] = {e.name: e for e in builtin}
    claims: dict[str, list[Entry]] = {}
    for e in plugins:
        claims.setdefault(e.name, []).append(e)
    for name in sorted(claims):
        mine = claims[name]
        if name in entries:  # a built-in keeps its name
            for e in mine:
                notes.append(f"{e.describe()} collides with boundlab's built-in {name!r} and is ignored; rename the "
                             f"entry point (and its 'name') in {e.dist.split()[0]} and reinstall it")
            continue
        if len(mine) > 1:
            dists = " and ".join(f"{e.dist} ({e.value})" for e in mine)
            problem = (f"{group} entry point {name!r} is registered by {dists}; boundlab will not guess: uninstall one "
                       "of them or rename its entry point")
            notes.append(f"{problem} (unusable until then)")
            entries[name] = Entry(group, name, " | ".join(e.value for e in mine), dists, False, problem)
            continue
        entries[name] = mine[0]
    return entries, notes


class Registry(Mapping):
    """Name -> class of one kind (learners or datasets), over the discovered entry points.

    ``name in registry``, ``len`` and iteration read metadata only; ``registry[name]`` imports the
    class on first use (then cached) and raises :class:`PluginError` (one line) for a broken plug-in.
    ``registry[name] = cls`` registers a class in this process only (tests, notebooks).
    """

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self._entries: dict[str, Entry] | None = None
        self._loaded: dict[str, type] = {}

    def entries(self) -> dict[str, Entry]:
        if self._entries is None:
            self._entries, notes = _discover(self.kind)
            for note in notes:
                warn(note)
        return self._entries

    def entry(self, name: str) -> Entry | None:
        return self.entries().get(name)

    def is_builtin(self, name: str) -> bool:
        e = self.entry(name)
        return e is not None and e.builtin

    def __contains__(self, name: object) -> bool:
        return name in self._loaded or name in self.entries()

    def __iter__(self) -> Iterator[str]:
        yield from self.entries()
        yield from (n for n in self._loaded if n not in self.entries())

    def __len__(self) -> int:
        return len(set(self.entries()) | set(self._loaded))

    def __getitem__(self, name: str) -> type:
        if name in self._loaded:
            return self._loaded[name]
        entry = self.entries().get(name)
        if entry is None:
            raise KeyError(name)
        cls = entry.load()
        self._check_class(entry, cls)
        self._loaded[name] = cls
        return cls

    def __setitem__(self, name: str, cls: type) -> None:
        self._loaded[name] = cls

    def _check_class(self, entry: Entry, cls: Any) -> None:
        need = ("name", "params", "run") if self.kind == "learners" else ("name", "params", "generate")
        missing = [a for a in need if not hasattr(cls, a)]
        if not isinstance(cls, type) or missing:
            what = f"lacks {', '.join(missing)}" if isinstance(cls, type) else f"is a {type(cls).__name__}, not a class"
            raise PluginError(f"{entry.describe()} names an object that {what}; a {self.kind[:-1]} is a class with "
                              f"{', '.join(need)} (docs/plugins.md)")
        if cls.name != entry.name:
            raise PluginError(f"{entry.describe()} names a class whose name is {cls.name!r}; the entry point's name "
                              f"and the class's 'name' must be equal (rename one and reinstall "
                              f"{entry.dist.split()[0]})")

    def loaded(self) -> dict[str, type]:
        """Every usable class, imported now; a broken plug-in is skipped with a warning."""
        out = {}
        for name in list(self):
            try:
                out[name] = self[name]
            except PluginError as e:
                warn(f"{e} (skipped)")
        return out

    def refresh(self) -> None:
        """Forget what was discovered and loaded (discovery runs again on next use)."""
        self._entries, self._loaded = None, {}


LEARNERS = Registry("learners")
DATASETS = Registry("datasets")


class BoundRegistry:
    """The bound records of every ``boundlab.bounds`` entry point, loaded on first use."""

    def __init__(self) -> None:
        self._entries: dict[str, Entry] | None = None
        self._bounds: list[tuple[Entry, Any]] | None = None
        self._broken: list[tuple[Entry, PluginError]] = []

    def entries(self) -> dict[str, Entry]:
        if self._entries is None:
            self._entries, notes = _discover("bounds")
            for note in notes:
                warn(note)
        return self._entries

    def _load(self) -> list[tuple[Entry, Any]]:
        if self._bounds is not None:
            return self._bounds
        from pipeline.bounds.base import Bound

        bounds: list[tuple[Entry, Any]] = []
        seen: dict[str, Entry] = {}
        broken: list[tuple[Entry, PluginError]] = []
        for entry in sorted(self.entries().values(), key=lambda e: not e.builtin):  # built-ins first, in order
            try:
                obj = entry.load()
                records = (obj,) if isinstance(obj, Bound) else tuple(obj) if isinstance(obj, (tuple, list)) else None
                if records is None or not all(isinstance(b, Bound) for b in records):
                    raise PluginError(f"{entry.describe()} names a {type(obj).__name__}; a bound entry point names a "
                                      "pipeline.bounds.Bound record or a tuple of them (docs/plugins.md)")
            except PluginError as e:
                broken.append((entry, e))
                continue
            for b in records:
                if b.name in seen:
                    where = seen[b.name]
                    warn(f"{entry.describe()}: bound {b.name!r} collides with the bound of the same name from "
                         f"{where.describe()} and is ignored; rename it ('name=') in {entry.dist.split()[0]}")
                    continue
                seen[b.name] = entry
                bounds.append((entry, b))
        self._bounds, self._broken = bounds, broken
        return bounds

    def all(self) -> tuple[Any, ...]:
        """Every loaded bound, built-ins first; a bound entry point that fails to load is warned about."""
        bounds = self._load()
        for _entry, e in self._broken:
            warn(f"{e} (its bounds are not evaluated)")
        return tuple(b for _, b in bounds)

    def for_learner(self, learner: str) -> tuple[Any, ...]:
        """Every bound that speaks about ``learner``. A broken bound entry point from the distribution that
        registers ``learner`` is an error (its learner would run unjudged); any other is a warning."""
        bounds = self._load()
        home = LEARNERS.entry(learner)
        for entry, e in self._broken:
            if home is not None and not home.builtin and entry.dist == home.dist:
                raise PluginError(f"{e} (it belongs with algorithm={learner}, which would run unjudged)")
            warn(f"{e} (its bounds are not evaluated)")
        names = self._judged_as(learner)
        return tuple(b for _, b in bounds if b.learner in names)

    @staticmethod
    def _judged_as(learner: str) -> tuple[str, ...]:
        """``learner`` and the learners whose bounds also speak about it (its class's ``judged_as``: e.g. the
        batch Perceptron, whose updates are the Perceptron's on the concatenated passes)."""
        cls = LEARNERS[learner] if learner in LEARNERS else None
        return (learner, *getattr(cls, "judged_as", ()))

    def modules_for(self, learner: str) -> tuple[str, ...]:
        """The modules that define the bounds of ``learner`` (what a job's identity must include: editing a
        plug-in's bound module reruns its jobs; pipeline.job.identity.job_roots)."""
        names = self._judged_as(learner)
        return tuple(sorted({e.value.partition(":")[0].strip() for e, b in self._load() if b.learner in names}))

    def check_for(self, learner: str) -> None:
        """Before any work: the plug-in bound entry points of ``learner``'s distribution load (plug-ins only:
        nothing is imported when ``learner`` is a built-in)."""
        home = LEARNERS.entry(learner)
        if home is None or home.builtin:
            return
        if any(not e.builtin and e.dist == home.dist for e in self.entries().values()):
            self.for_learner(learner)

    def refresh(self) -> None:
        self._entries, self._bounds, self._broken = None, None, []


BOUNDS = BoundRegistry()


class ProviderRegistry:
    """The objects of every ``boundlab.statistics`` entry point (plug-ins' statistic providers), loaded on first
    use. What they must be (a :class:`pipeline.job.statistics.Provider` or a tuple of them) is checked by
    :func:`pipeline.job.statistics.plugin_providers`, the layer that defines the record (this module stays below it)."""

    def __init__(self) -> None:
        self._entries: dict[str, Entry] | None = None
        self._loaded: list[tuple[Entry, Any]] | None = None

    def entries(self) -> dict[str, Entry]:
        if self._entries is None:
            self._entries, notes = _discover("statistics")
            for note in notes:
                warn(note)
        return self._entries

    def loaded(self) -> list[tuple[Entry, Any]]:
        """(entry, the object it names) for every entry point that imports, in discovery order; one that fails
        to import is warned about (its statistics stay missing, and the bounds requiring them say so)."""
        if self._loaded is None:
            loaded: list[tuple[Entry, Any]] = []
            for entry in self.entries().values():
                try:
                    loaded.append((entry, entry.load()))
                except PluginError as e:
                    warn(f"{e} (its statistics are not computed)")
            self._loaded = loaded
        return self._loaded

    def modules(self) -> tuple[str, ...]:
        """The modules the entry points name, from metadata (nothing imported): a provider may serve any run
        (``Provider.record`` None, or a record it does not own), so every job's identity includes them
        (pipeline.job.identity.job_roots); with no plug-in provider installed, none."""
        return tuple(sorted({e.value.partition(":")[0].strip() for e in self.entries().values()}))

    def refresh(self) -> None:
        self._entries, self._loaded = None, None


STATISTICS = ProviderRegistry()


def refresh() -> None:
    """Discover every kind again (after installing a plug-in in a running process, and in tests)."""
    for registry in (LEARNERS, DATASETS, BOUNDS, STATISTICS):
        registry.refresh()


def plugins() -> dict[str, list[Entry]]:
    """The plug-ins (not the built-ins) of each kind, as discovered (nothing imported)."""
    return {kind: [e for e in reg.entries().values() if not e.builtin]
            for kind, reg in (("learners", LEARNERS), ("datasets", DATASETS), ("bounds", BOUNDS),
                              ("statistics", STATISTICS))}
