"""The one seam between boundlab and Hydra's private internals.

Every import of ``hydra._internal`` and of the joblib launcher's private ``_core`` module, every patch of a
Hydra object and every read of a private attribute of Hydra is here, behind a small named function;
``pipeline.cli``, ``pipeline.sweep.preflight``, ``pipeline.sweep.explain`` and the sweeper plug-in
(``hydra_plugins/boundlab_sweeper``) call these and import nothing private from Hydra
(tests/test_hydra_seam.py fails if another module of ``pipeline/`` or ``hydra_plugins/`` does). What is
private, and why boundlab needs it:

- ``hydra._internal.utils.get_args_parser`` (:func:`parse_command_line`): the pre-flight reads a command line
  exactly as ``@hydra.main`` will (its flags, ``-m``, the overrides) before Hydra runs.
- ``hydra._internal.core_plugins.basic_sweeper.BasicSweeper``: the plug-in's sweeper subclasses it;
  :func:`split_sweep` splits a sweep into jobs with its ``split_arguments``, so the pre-flight checks the
  very jobs the sweeper launches; :func:`knows_its_jobs` refuses sweepers that choose jobs as they go.
- ``hydra._internal.config_loader_impl``: ``ConfigLoaderImpl._apply_overrides_to_config`` (a private static
  method: Hydra's own application of ``key=value`` overrides after composing, :func:`apply_overrides`),
  ``get_overrides_dirname`` (a job's ``override_dirname``), the loader's ``repository`` (is a key a config
  group? an attribute of the implementation, not of the ``ConfigLoader`` interface), and
  ``ConfigLoaderImpl.get_group_options``, replaced while ``--help`` lists the groups
  (:func:`list_groups_once`, with the private ``_parse_overrides_and_create_caching_repo``).
- ``hydra._internal.config_repository.CachingConfigRepository``: its constructor's deep copy of the whole
  repository, made shallow (:func:`copy_repositories_shallow`), for every composition in the process; and
  ``ConfigRepository.load_config``, whose results for config files are kept by the files' bytes
  (:func:`keep_config_reads`), with the private ``_find_object_source`` and ``_normalize_file_name``.
- ``hydra._internal.utils.run_and_report``: how Hydra reports an error raised outside every job (its launcher
  failing to start a job, a job's directory that cannot be made), a traceback and exit 1; :func:`explain_errors`
  makes the errors the command can word (the working directory removed mid-sweep, a path too long for the
  system) one line instead.
- ``hydra_plugins.hydra_joblib_launcher._core`` (``launch``, ``execute_job``) and ``Singleton._instances``:
  :func:`launch_keeping_plugins` swaps the worker function for :func:`execute_job`, which hands a worker's
  plugin registry on to its next job instead of rescanning the plugins for every job.

The compose-once cache (:class:`Compositions`) is here too, one for the pre-flight (:class:`Composer`) and
the launcher (:class:`ComposeOnce`), with one definition of a *plain* override (:meth:`Compositions.split`).

Every private name is looked up when it is used, never bound when this module is imported: Hydra's plugin
scan executes the modules of ``hydra._internal.core_plugins`` (and ``hydra_plugins``) again, in place, so a
class bound before the scan (``BasicSweeper``) is not the one Hydra's own code refers to after it
(``super(BasicSweeper, self)`` then fails). tests/test_hydra_seam.py checks this module imports them only
inside functions.

Checked against hydra-core 1.3 (1.3.8) and hydra-joblib-launcher 1.2: tests/test_sweep.py
(``test_what_the_sweeper_relies_on_in_hydra``) and tests/test_compose_once.py
(``test_what_the_loader_relies_on_in_hydra``, the ``--help`` listing, the joblib preset) fail when a Hydra
release changes a signature used here or a line of Hydra's source that this module repeats.
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import pickle
import re
import uuid
import warnings
from typing import Any, Callable, Iterable, NoReturn, Sequence

__all__ = ["CommandLineError", "ComposeOnce", "Composer", "Compositions", "Explained", "apply_overrides",
           "basic_sweeper", "copy_repositories_shallow", "execute_job", "explain_errors", "keep_config_reads",
           "knows_its_jobs", "launch_keeping_plugins", "list_groups_once", "parse_command_line", "parse_overrides",
           "parser", "split_sweep"]


# ---------------------------------------------------------------- the command line

@functools.lru_cache(maxsize=None)
def parser():  # noqa: ANN201
    """Hydra's override parser (``hydra.core``: public), made once per process."""
    from hydra.core.override_parser.overrides_parser import OverridesParser

    return OverridesParser.create()


# ``key=N``: a dotted key and a plain non-negative integer (no sign, underscore or leading zero), as a seed round's
# lines are; Hydra's grammar reads N as the int N whatever the key (a line Hydra would refuse never gets here:
# the same key with 0 is parsed by Hydra first)
_KEY_INT = re.compile(r"([A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*)=(0|[1-9][0-9]*)")


@functools.lru_cache(maxsize=65536)
def _override(line: str):  # noqa: ANN202
    """Hydra's parse of one override line. A ``key=N`` line (:data:`_KEY_INT`) is Hydra's parse of ``key=0``
    with N as its value and the line as its text (equal, field for field, to Hydra's parse of the line:
    tests/test_hydra_seam.py): a seed round of 10,000 seeds has 10,000 distinct ``seed=`` lines, and Hydra's
    ANTLR parser took ~0.1 ms each (1.2 s of the round's start)."""
    plain = _KEY_INT.fullmatch(line)
    if plain is not None and plain.group(2) != "0":
        key, value = plain.groups()
        return dataclasses.replace(_override(f"{key}=0"), _value=int(value), input_line=line)
    return parser().parse_overrides([line])[0]


def parse_overrides(lines: Iterable[str]) -> list:
    """Hydra's parse of each override line, each distinct line parsed once per process.

    A sweep's jobs repeat the same few ``key=value`` lines (a 1,620-job paper grid: 11,577 lines, a few
    dozen distinct), and Hydra's ANTLR parser costs about 0.5 ms a line: parsed job by job, the pre-flight
    of such a grid spent 6 s in the parser alone. The parsed ``Override`` records are only read, never
    changed, so one record serves every job that has its line; errors are Hydra's own.
    """
    return [_override(line) for line in lines]


class CommandLineError(ValueError):
    """Hydra's argument parser refused the command line: argparse's message, without the usage lines it would
    print before exiting."""


def parse_command_line(argv: Sequence[str]) -> Any:
    """``argv`` read by Hydra's own argument parser (private: ``hydra._internal.utils.get_args_parser``):
    ``.overrides``, ``.multirun``, ``.help``, ``.hydra_help``, ``.cfg``, ``.info``, ``.shell_completion``, and
    the flags that choose another config (``.config_name``, ``.config_path``, ``.config_dir``,
    ``.experimental_rerun``). What it refuses raises :class:`CommandLineError`."""
    from hydra._internal.utils import get_args_parser

    parser = get_args_parser()

    def refuse(message: str) -> NoReturn:
        raise CommandLineError(message)

    parser.error = refuse  # argparse's own: prints the usage and exits
    return parser.parse_args(list(argv))


def basic_sweeper() -> type:
    """Hydra's basic sweeper class (private: ``hydra._internal.core_plugins.basic_sweeper.BasicSweeper``), the
    one its module holds now (Hydra's plugin scan executes that module again: a new class)."""
    from hydra._internal.core_plugins.basic_sweeper import BasicSweeper

    return BasicSweeper


def split_sweep(overrides: Sequence[Any]) -> list[list[str]]:
    """The jobs of a sweep, as Hydra's basic sweeper splits its parsed overrides (one batch: no size limit)."""
    return [job for batch in basic_sweeper().split_arguments(list(overrides), None) for job in batch]


def knows_its_jobs(cls: object) -> bool:
    """Whether a sweeper class lists its jobs before the sweep starts: Hydra's basic sweeper or a subclass."""
    return isinstance(cls, type) and issubclass(cls, basic_sweeper())


# ---------------------------------------------------------------- compose once

def apply_overrides(overrides: Sequence[Any], cfg: Any) -> None:
    """Apply config overrides to a composed config, in order, with Hydra's own code (what Hydra does after
    composing: ``ConfigLoaderImpl._apply_overrides_to_config``, a private static method)."""
    from hydra._internal.config_loader_impl import ConfigLoaderImpl

    ConfigLoaderImpl._apply_overrides_to_config(list(overrides), cfg)


def _frozen(cfg: Any) -> Any:
    """A composition as the cache keeps it: pickled, when it pickles, so that each job's copy is one
    unpickling (a deep copy in a quarter of ``copy.deepcopy``'s time: ~0.2 ms against ~0.8 ms, twice a run
    of a packed sweep). A config holding a class pickle cannot name (a structured config of a plug-in module
    that Hydra's plugin scan imported again, e.g. the joblib launcher's in the ``hydra`` node) is kept as
    it is and deep-copied. Pickle refuses any class that is not the one its module names, so an unpickled
    copy holds the same classes as the original."""
    try:
        return pickle.dumps(cfg, pickle.HIGHEST_PROTOCOL)
    except (pickle.PicklingError, TypeError, AttributeError):
        return cfg


def cache_interpolation_parses() -> None:
    """OmegaConf parses an interpolation's text (``${n}``) with its ANTLR grammar every time a node holding
    it is read: four parses a job of boundlab's configs, a third of the pre-flight's check of a job (~0.5 ms)
    and as much of a pack's composition of each run. A parse tree depends on the text alone and resolving
    only reads it (the node it resolves against is passed beside it), so the parses are kept, by text,
    in this process: ``omegaconf.base.parse``, the name OmegaConf's nodes call, becomes a cached
    ``omegaconf.grammar_parser.parse`` (tests/test_compose_once.py fails when OmegaConf's nodes stop
    calling that name). A text that does not parse raises as before, and is not kept."""
    import omegaconf.base
    import omegaconf.grammar_parser

    if omegaconf.base.parse is omegaconf.grammar_parser.parse:
        omegaconf.base.parse = functools.lru_cache(maxsize=4096)(omegaconf.grammar_parser.parse)


def copy_repositories_shallow() -> None:
    """Every composition starts with ``CachingConfigRepository(loader.repository)``, whose constructor
    deep-copies the loader's repository "to avoid mutating it with initialize_sources()" (Hydra's comment).
    That copy takes the structured-config source's ``ConfigStore`` along, with every schema registered in the
    process (Hydra's, the launchers', boundlab's): ~6 ms a composition, a quarter of composing one of
    boundlab's configs, and most of the time tests spend composing. ``ConfigRepository.initialize_sources``
    only binds the repository's ``sources`` to a new list, so a shallow copy keeps the loader's repository
    unchanged just as well; and ``ConfigStore.load`` hands out a copy of each node, so no composition changes
    the store. A repository of another type keeps Hydra's deep copy. Installed once per process;
    tests/test_compose_once.py fails when Hydra's constructor or ``initialize_sources`` changes, and checks
    that compositions equal Hydra's own."""
    from hydra._internal import config_repository

    caching = config_repository.CachingConfigRepository
    if getattr(caching.__init__, "boundlab_shallow", False):
        return
    hydras = caching.__init__

    def shallow(self: Any, delegate: Any) -> None:
        if type(delegate) is not config_repository.ConfigRepository:
            hydras(self, delegate)
            return
        self.delegate = copy.copy(delegate)
        self.cache = {}

    shallow.boundlab_shallow = True  # type: ignore[attr-defined]
    shallow.hydras = hydras  # type: ignore[attr-defined]
    caching.__init__ = shallow


_READS: dict = {}  # (scheme, provider, path, config name, the file's bytes) -> the pickled ConfigResult


def keep_config_reads() -> None:
    """Hydra reads and parses every config file again for each composition (a new caching repository each
    time): YAML parsing and ``OmegaConf.create`` are a quarter of composing one of boundlab's configs.
    ``ConfigRepository.load_config`` now keeps what it returned for a file (``file://``) or package resource
    (``pkg://``), pickled, keyed by the file's bytes, and hands out an unpickled copy; the file is read again
    each time, so an edited file is parsed again, even within the same second and at the same size. Other
    sources (structured configs) and anything that does not pickle are Hydra's as before. Installed once per
    process; tests/test_compose_once.py fails when the lines of Hydra's sources this repeats (where a config
    name's file is) change."""
    from hydra._internal import config_repository
    from hydra.core.object_type import ObjectType

    repository = config_repository.ConfigRepository
    if getattr(repository.load_config, "boundlab_kept", False):
        return
    hydras = repository.load_config

    def load_config(self: Any, config_path: str) -> Any:
        source = self._find_object_source(config_path=config_path, object_type=ObjectType.CONFIG)
        text = _config_bytes(source, config_path)
        if text is None:
            return hydras(self, config_path)
        key = (source.scheme(), source.provider, source.path, config_path, text)
        kept = _READS.get(key)
        if kept is not None:
            return pickle.loads(kept)
        result = hydras(self, config_path)
        if result is not None and _config_bytes(source, config_path) == text:  # not edited while Hydra read it
            try:
                kept = pickle.dumps(result, pickle.HIGHEST_PROTOCOL)
            except (pickle.PicklingError, TypeError, AttributeError):
                return result
            if len(_READS) >= 4096:  # a long process that writes many configs (a test session): start again
                _READS.clear()
            _READS[key] = kept
        return result

    load_config.boundlab_kept = True  # type: ignore[attr-defined]
    load_config.hydras = hydras  # type: ignore[attr-defined]
    repository.load_config = load_config


def _config_bytes(source: Any, config_path: str) -> bytes | None:
    """The bytes of the file a ``file://`` or ``pkg://`` source reads for ``config_path``, found as its
    ``load_config`` finds it; None for another source or a file that cannot be read."""
    import os
    from importlib import resources

    if source is None or source.scheme() not in ("file", "pkg"):
        return None
    name = source._normalize_file_name(config_path)
    try:
        if source.scheme() == "file":
            with open(os.path.realpath(os.path.join(source.path, name)), "rb") as f:
                return f.read()
        return resources.files(source.path).joinpath(name).read_bytes()
    except (OSError, ValueError, TypeError, ImportError):
        return None


RUN_TIME_HYDRA = frozenset({"hydra.sweep.subdir"})  # hydra leaves no composition reads: the launcher's plain ones


class Compositions:
    """The compose-once cache: one composition per choice of config groups, copied per job (:func:`_frozen`).

    Composing a config costs ~0.1 s with boundlab's groups; a sweep's jobs mostly differ in values only.
    Hydra composes a config in two steps: the defaults list (the config-group choices and the other
    structural overrides), then its "config overrides", applied in order to the composed config
    (``hydra._internal.defaults_list.Overrides``: an override is a config override when its value is a dict
    or its key is not a config group). The cache keeps the first step's result, keyed by the structural
    overrides, and repeats the second on a deep copy with Hydra's own code (:func:`apply_overrides`).

    A **plain** override, the one definition for the pre-flight and the launcher, is a ``key=value`` or
    ``+key=value`` config override that Hydra applies as a plain set or addition (one node; an addition whose
    key is already there fails as Hydra's does, by the fallback): no ``++``, ``~`` or ``@package``, not a
    sweep, its key not a config group and not under ``hydra.``/``hydra/`` (but, for the launcher, whose
    compositions keep the ``hydra`` node, the keys of ``run_time``, read only once the job runs: a packed sweep's
    ``hydra.sweep.subdir=pack-N``), its value not a dict; and no other
    (non-plain) config override outside ``hydra`` follows it on the job's line (which could touch the same
    keys: ``seed=1 ~seed``, ``extra=2 +extra=1``): then applying the plain ones after the composition of the
    rest keeps the order Hydra applies config overrides in. Every other override is structural: part of
    the cache's key, composed by Hydra.

    ``store``: the dict that holds the compositions (the pre-flight's own; the launcher's per process).
    ``run_time``: the hydra keys that are plain (the launcher's ``RUN_TIME_HYDRA``; none for the pre-flight, whose
    compositions have no ``hydra`` node to set them in).
    """

    def __init__(self, loader: Any, store: dict | None = None, run_time: frozenset[str] = frozenset()) -> None:
        self.repository = loader.repository  # ConfigLoaderImpl's (not the ConfigLoader interface's)
        self.store: dict = {} if store is None else store
        self.run_time = run_time
        self.groups: dict[str, bool] = {}  # key -> whether it names a config group (the repository asks its sources)
        cache_interpolation_parses()
        copy_repositories_shallow()
        keep_config_reads()

    def _group(self, key: str) -> bool:
        if key not in self.groups:
            self.groups[key] = bool(self.repository.group_exists(key))
        return self.groups[key]

    def _plain(self, o: Any) -> bool:
        return (not (o.is_delete() or o.is_force_add() or o.is_sweep_override())
                and o.package is None and (not o.is_hydra_override() or o.key_or_group in self.run_time)
                and not isinstance(o.value(), dict) and not self._group(o.key_or_group))

    def _config_override(self, o: Any) -> bool:
        return isinstance(o.value(), dict) or not self._group(o.key_or_group)

    def split(self, parsed: Sequence[Any]) -> tuple[list[Any], list[str]]:
        """(the plain overrides, the structural override lines) of a parsed job, each in the job's order."""
        plain = [self._plain(o) for o in parsed]
        last = max((i for i, o in enumerate(parsed)
                    if not plain[i] and not o.is_hydra_override() and self._config_override(o)), default=-1)
        plain = [p and i > last for i, p in enumerate(plain)]
        return [o for o, p in zip(parsed, plain) if p], [o.input_line for o, p in zip(parsed, plain) if not p]

    def config(self, parsed: Sequence[Any], compose: Callable[[list[str]], Any], key: tuple = (),
               fallback: Callable[[], Any] | None = None) -> Any:
        """The job's config: ``compose(structural lines)`` once per ``(*key, *structural lines)``, copied, the
        plain overrides applied. If applying them fails: ``fallback()`` (Hydra composes the whole job, so
        the error reads as Hydra's), or Hydra's own error without one."""
        from hydra.errors import HydraException
        from omegaconf.errors import OmegaConfBaseException

        plain, structural = self.split(parsed)
        k = (*key, *structural)
        if k not in self.store:
            self.store[k] = _frozen(compose(structural))
        kept = self.store[k]
        cfg = pickle.loads(kept) if isinstance(kept, bytes) else copy.deepcopy(kept)
        try:
            apply_overrides(plain, cfg)
        except (HydraException, OmegaConfBaseException):
            if fallback is None:
                raise
            return fallback()
        return cfg


class Composer:
    """The pre-flight's job configs (``hydra.compose``: without the ``hydra`` node), composed once per choice
    of config groups (:class:`Compositions`), for as long as this object lives. Anything that fails is
    composed by Hydra itself, so errors read as Hydra's. Inside ``hydra.initialize_config_dir``."""

    def __init__(self) -> None:
        from hydra.core.global_hydra import GlobalHydra

        self.cache = Compositions(GlobalHydra.instance().config_loader())

    def __call__(self, job: list[str]) -> Any:
        import hydra

        return self.cache.config(parse_overrides(job), lambda structural: hydra.compose("config", overrides=structural),
                                 fallback=lambda: hydra.compose("config", overrides=job))


# The packs' compositions of their members in this process (pipeline.sweep.pack): {"key": ..., "composer": ...}.
PACK_COMPOSER: dict = {}


def sweep_composer(sweep: str) -> Composer:
    """A :class:`Composer` kept in this process for the sweep ``sweep`` (its context's JSON) and Hydra's current
    loader: a worker composes its packs' members once per choice of config groups, not again in every pack
    (two compositions a pack, ~35 ms each)."""
    from hydra.core.global_hydra import GlobalHydra

    key = (sweep, id(GlobalHydra.instance().config_loader()))
    if PACK_COMPOSER.get("key") != key:
        PACK_COMPOSER.clear()
        PACK_COMPOSER.update(key=key, composer=Composer())
    composer: Composer = PACK_COMPOSER["composer"]
    return composer


# The launcher's compositions of the running sweep's configs, in this process (ComposeOnce):
# {"sweep": id, "configs": {key: config}}. Kept in this module, which Hydra's plugin scan never runs again
# (it does run hydra_plugins/boundlab_sweeper again, per job in a joblib worker).
COMPOSED: dict = {}


class ComposeOnce:
    """A config loader for the launcher: one composition per choice of config groups, not one per job.

    Wraps Hydra's loader (every other call goes to it). ``load_sweep_config`` does what Hydra's does,
    ``load_configuration(master's hydra overrides + job overrides)`` then the master's resolver cache,
    with the composition itself taken from a per-process cache (:class:`Compositions`, keyed by the config
    name and the job's structural overrides), the plain overrides applied by Hydra's own code, and the job's
    override records filled as Hydra fills them. tests/test_compose_once.py checks the result equals
    Hydra's own, node for node.
    """

    def __init__(self, loader: Any) -> None:
        self.loader = loader
        self.sweep = uuid.uuid4().hex  # the sweep this loader composes for, in whichever process it lands

    def __getattr__(self, name: str) -> Any:  # everything but load_sweep_config is Hydra's
        if name in ("loader", "sweep"):
            raise AttributeError(name)
        return getattr(self.loader, name)

    @property
    def _composed(self) -> dict:
        """This process's compositions for this sweep. A launcher that ships the loader to its workers
        with each job (joblib pickles it per job) finds the worker's compositions of the same sweep
        here; a worker that moves on to another sweep drops the earlier one's."""
        if COMPOSED.get("sweep") != self.sweep:
            COMPOSED.clear()
            COMPOSED.update(sweep=self.sweep, configs={})
        return COMPOSED["configs"]

    def _compose(self, config_name: Any, structural: list[str]) -> Any:
        from hydra.types import RunMode

        with warnings.catch_warnings():  # a worker's first composition: the presets' schemas (pipeline.sweep.preflight)
            warnings.filterwarnings("ignore", message=r"\s*'hydra/launcher/\w+' is validated against ConfigStore schema")
            return self.loader.load_configuration(config_name=config_name, overrides=structural, run_mode=RunMode.RUN)

    def load_sweep_config(self, master_config: Any, sweep_overrides: list[str]) -> Any:
        from hydra._internal.config_loader_impl import get_overrides_dirname
        from omegaconf import OmegaConf

        overrides = list(OmegaConf.to_container(master_config.hydra.overrides.hydra)) + list(sweep_overrides)
        parsed = parse_overrides(overrides)
        name = master_config.hydra.job.config_name
        cfg = Compositions(self.loader, self._composed, RUN_TIME_HYDRA).config(
            parsed, lambda structural: self._compose(name, structural), key=(str(name),))
        app = [o for o in parsed if not o.is_hydra_override()]
        cfg.hydra.overrides.hydra = [o.input_line for o in parsed if o.is_hydra_override()]
        cfg.hydra.overrides.task = [o.input_line for o in app]
        dirname = cfg.hydra.job.config.override_dirname
        cfg.hydra.job.override_dirname = get_overrides_dirname(
            overrides=app, kv_sep=dirname.kv_sep, item_sep=dirname.item_sep, exclude_keys=dirname.exclude_keys)
        OmegaConf.copy_cache(from_config=master_config, to_config=cfg)
        return cfg


# ---------------------------------------------------------------- --help

def list_groups_once() -> Callable[[], None]:
    """Make Hydra's listing of config-group options read one copy of the config repository; returns the
    function that puts Hydra's own method back.

    ``boundlab --help`` lists every group and its options. Hydra answers each of those ~80 questions
    with a fresh deep copy of its whole config repository (``ConfigLoaderImpl.get_group_options``:
    ~15 ms each, most of the command's time); the files do not change while the command runs, so
    one copy per (config name, overrides) answers them all. Only for the commands that run no job.
    tests/test_compose_once.py fails if a Hydra release changes the method this replaces.
    """
    from hydra._internal.config_loader_impl import ConfigLoaderImpl
    from hydra.core.object_type import ObjectType

    repos: dict[tuple, object] = {}

    def get_group_options(self, group_name: str, results_filter: ObjectType | None = ObjectType.CONFIG,  # noqa: ANN001
                          config_name: str | None = None, overrides: list[str] | None = None) -> list[str]:
        key = (id(self), config_name, tuple(overrides or ()))
        if key not in repos:
            repos[key] = self._parse_overrides_and_create_caching_repo(config_name, list(overrides or ()))[1]
        return repos[key].get_group_options(group_name, results_filter)

    hydras = ConfigLoaderImpl.get_group_options
    ConfigLoaderImpl.get_group_options = get_group_options

    def restore() -> None:
        ConfigLoaderImpl.get_group_options = hydras

    return restore


# ---------------------------------------------------------------- errors outside every job

class Explained(SystemExit):
    """An error raised outside every job that the command words in one line (:func:`explain_errors`): exit code
    1, the line in ``line``, no traceback. A ``SystemExit``, so that Hydra's reporting lets it through."""

    def __init__(self, line: str) -> None:
        super().__init__(1)
        self.line = line


_EXPLAIN: list[Callable[[BaseException], str | None]] = []  # the explanation explain_errors installed last


def explain_errors(explain: Callable[[BaseException], str | None]) -> None:
    """Hydra runs the app inside ``run_and_report`` (private: ``hydra._internal.utils.run_and_report``), which
    prints an error raised outside every job (its launcher, the making of a job's directory, a callback) with
    its traceback and exits 1. From now on, in this process, an error that ``explain(error)`` words in one line
    raises :class:`Explained` with that line instead; ``explain`` returning None leaves the error to Hydra, as
    before. Installed once per process (a later call only replaces ``explain``);
    tests/test_reliability_four_cli.py fails when Hydra's ``_run_hydra`` stops calling that name."""
    from hydra._internal import utils

    _EXPLAIN[:] = [explain]
    if getattr(utils.run_and_report, "boundlab_explains", False):
        return
    hydras = utils.run_and_report

    def run_and_report(func: Callable[[], Any]) -> Any:
        def explained() -> Any:
            try:
                return func()
            except Exception as e:
                line = _EXPLAIN[0](e) if _EXPLAIN else None
                if line:
                    raise Explained(line) from None
                raise

        return hydras(explained)

    run_and_report.boundlab_explains = True  # type: ignore[attr-defined]
    run_and_report.hydras = hydras  # type: ignore[attr-defined]
    utils.run_and_report = run_and_report


# ---------------------------------------------------------------- the joblib launcher

_HYDRAS: dict = {}  # the joblib launcher's own worker function, kept while launch_keeping_plugins swaps it


def launch_keeping_plugins(launcher: Any, job_overrides: Sequence[Sequence[str]], initial_job_idx: int) -> Any:
    """The joblib launcher's ``launch``, its workers running :func:`execute_job` (what ``_core.launch``
    ships to the workers, by reference) instead of Hydra's worker function."""
    from hydra_plugins.hydra_joblib_launcher import _core

    hydras = _core.execute_job
    if hydras is not execute_job:
        _HYDRAS["execute_job"] = hydras
    _core.execute_job = execute_job
    try:
        return _core.launch(launcher=launcher, job_overrides=job_overrides, initial_job_idx=initial_job_idx)
    finally:
        _core.execute_job = hydras


def execute_job(idx: int, overrides: Sequence[str], hydra_context: Any, config: Any, task_function: Any,
                singleton_state: dict[Any, Any]) -> Any:
    """Hydra's joblib worker function, with this worker's plugin registry kept from its previous job.

    Hydra's worker function restores the driver's singletons for every job, and the plugin registry is not
    among them (``Singleton.get_state`` leaves it out), so each job would re-run Hydra's plugin scan."""
    from hydra.core.plugins import Plugins
    from hydra.core.singleton import Singleton
    from hydra_plugins.hydra_joblib_launcher import _core

    kept = Singleton._instances.get(Plugins)
    if kept is not None:
        singleton_state = {**singleton_state, "instances": {**singleton_state["instances"], Plugins: kept}}
    run = _core.execute_job if _core.execute_job is not execute_job else _HYDRAS["execute_job"]
    return run(idx, overrides, hydra_context, config, task_function, singleton_state)
