"""The sweep's plumbing costs per job: one composition per choice of config groups (the sweeper's
launcher loader), a bounded MLflow metric history, and no search for runs a new parent cannot have."""

from __future__ import annotations

import inspect
import pickle
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hydra import initialize_config_dir
from hydra.core.global_hydra import GlobalHydra
from hydra.errors import ConfigCompositionException
from helpers import migrated_store
from hydra.types import RunMode
from omegaconf import OmegaConf

from hydra_plugins.boundlab_sweeper.boundlab_sweeper import ComposeOnce
from pipeline import tracking
from pipeline.sweep import context as sweep
from pipeline.paths import CONF_DIR
from pipeline.sweep.schemas import register

JOBS = [
    ["seed=1"],
    ["seed=2", "algorithm=pegasos", "T=100"],
    ["algorithm=pegasos", "seed=3", "T=200", "algorithm.lam=0.5"],
    ["algorithm=pegasos", "T=200", "seed=3"],  # the same groups as the one above: from the cache
    ["dataset=file", "dataset.path=a.npz", "seed=0"],
    ["gamma=0.2", "rho=2", "name='a b'"],
    ["+extra=1", "seed=1"],  # an addition: applied to the cached composition, as Hydra applies it
    ["~k", "seed=4"],  # a deletion: composed by Hydra
    ["experiment=perceptron_margin", "seed=5"],
    ["hydra.job.name=other", "seed=6"],  # a hydra override: composed by Hydra
    ["tracking.uri=sqlite:///x.db", "seed=7"],
    ["algorithm=perceptron", "algorithm.tie=mistake", "gamma=0.05"],
    ["seed=1", "~seed"],  # a plain override before a deletion of its key: in Hydra's order
    ["seed=8", "+extra=1", "extra=2", "gamma=0.3"],  # plain ones after the addition: from the cache
    ["n=200", "d=5", "pack=50", "+pack_members=zeNq_a-b", "seed=9"],  # a pack job's line: from the cache
    ["++extra=1", "seed=10"],  # a forced addition: composed by Hydra
    ["hydra.sweep.subdir=pack-3", "n=200", "+pack_members=zeNq_c", "seed=11"],  # a pack's directory: plain too
    ["hydra.sweep.dir=other", "seed=12"],  # another hydra key: composed by Hydra
]


@pytest.fixture(scope="module")
def loader():  # noqa: ANN201
    register()
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base=None):
        yield GlobalHydra.instance().config_loader()


@pytest.fixture(scope="module")
def master(loader):  # noqa: ANN001, ANN201
    return loader.load_configuration("config", overrides=["hydra.sweep.dir=sweeps/x", "seed=range(3)"],
                                     run_mode=RunMode.MULTIRUN)


def _flags(cfg) -> tuple:  # noqa: ANN001
    return OmegaConf.is_struct(cfg), OmegaConf.is_readonly(cfg), OmegaConf.is_readonly(cfg.hydra)


def test_each_job_config_equals_hydras_own(loader, master) -> None:  # noqa: ANN001
    once = ComposeOnce(loader)
    for job in JOBS:
        theirs = loader.load_sweep_config(master, job)
        for _ in range(2):  # composed, then from the cache
            ours = once.load_sweep_config(master, job)
            assert OmegaConf.to_yaml(ours) == OmegaConf.to_yaml(theirs), job
            assert _flags(ours) == _flags(theirs), job
            assert OmegaConf.to_container(ours, resolve=False) == OmegaConf.to_container(theirs, resolve=False)
            assert ours.hydra.overrides.task == theirs.hydra.overrides.task
            assert ours.hydra.job.override_dirname == theirs.hydra.job.override_dirname


def test_a_copy_never_shares_nodes_with_the_cache(loader, master) -> None:  # noqa: ANN001
    once = ComposeOnce(loader)
    a = once.load_sweep_config(master, ["seed=1"])
    a.seed = 99
    a.hydra.overrides.task.append("x=1")
    b = once.load_sweep_config(master, ["seed=2"])
    assert b.seed == 2 and list(b.hydra.overrides.task) == ["seed=2"]


def test_value_only_jobs_compose_once_per_group_choice(loader, master, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: ANN001
    once = ComposeOnce(loader)
    calls: list[list[str]] = []
    real = loader.load_configuration
    monkeypatch.setattr(loader, "load_configuration", lambda **kw: calls.append(kw["overrides"]) or real(**kw))
    for s in range(20):
        assert once.load_sweep_config(master, [f"seed={s}", "gamma=0.2"]).seed == s
        assert once.load_sweep_config(master, [f"seed={s}", "algorithm=pegasos", "T=50"]).T == 50
    assert len(calls) == 2
    assert ["algorithm=pegasos"] == [o for o in calls[1] if not o.startswith("hydra.")]


def test_a_packed_sweeps_packs_compose_once(loader, master, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: ANN001
    """A pack job's line differs from the next one's in its directory (hydra.sweep.subdir), its members (an
    addition) and its first seed: values only, so one composition serves every pack (one each before, ~30 ms)."""
    once = ComposeOnce(loader)
    calls: list[list[str]] = []
    real = loader.load_configuration
    monkeypatch.setattr(loader, "load_configuration", lambda **kw: calls.append(kw["overrides"]) or real(**kw))
    for p in range(5):
        cfg = once.load_sweep_config(master, [f"hydra.sweep.subdir=pack-{p}", "pack=4", f"+pack_members=m{p}",
                                              f"seed={4 * p}"])
        assert (cfg.hydra.sweep.subdir, cfg.pack_members, cfg.seed) == (f"pack-{p}", f"m{p}", 4 * p)
    assert len(calls) == 1


def test_a_bad_value_fails_as_hydras_does(loader, master) -> None:  # noqa: ANN001
    once = ComposeOnce(loader)
    for job in (["nosuchkey=1"], ["algorithm.nosuch=2"], ["seed=1", "dataset=nosuch"], ["extra=2", "+extra=1"]):
        with pytest.raises(Exception) as theirs:  # noqa: PT011 - whatever Hydra raises, compared below
            loader.load_sweep_config(master, job)
        with pytest.raises(Exception) as ours:  # noqa: PT011 - the same type and message as Hydra's
            once.load_sweep_config(master, job)
        assert type(ours.value) is type(theirs.value) and str(ours.value) == str(theirs.value)
    with pytest.raises(ConfigCompositionException, match="nosuchkey"):
        once.load_sweep_config(master, ["nosuchkey=1"])


def test_a_worker_keeps_its_compositions_per_sweep_not_in_the_pickle(loader, master) -> None:  # noqa: ANN001
    import sys

    # Hydra's plugin scan may import the module anew: pickle finds the class that is in sys.modules now
    once = sys.modules[ComposeOnce.__module__].ComposeOnce(loader)
    once.load_sweep_config(master, ["seed=1"])
    assert once._composed
    copy = pickle.loads(pickle.dumps(once))  # in this process: the same sweep's compositions
    assert copy._composed is once._composed and copy.repository is not None
    size = len(pickle.dumps(once))
    for s in range(5):
        once.load_sweep_config(master, [f"seed={s}", "algorithm=pegasos"])
    assert len(pickle.dumps(once)) == size  # the compositions stay in the process, not in what is shipped
    other = sys.modules[ComposeOnce.__module__].ComposeOnce(loader)  # another sweep: its own
    assert other._composed == {} and copy._composed == {}
    assert OmegaConf.to_yaml(copy.load_sweep_config(master, ["seed=1"])) == OmegaConf.to_yaml(
        loader.load_sweep_config(master, ["seed=1"]))


def test_what_the_loader_relies_on_in_hydra() -> None:
    """Fails when a Hydra release changes what :class:`ComposeOnce` repeats of Hydra's loader."""
    from hydra._internal.config_loader_impl import ConfigLoaderImpl, get_overrides_dirname
    from hydra._internal.core_plugins.basic_launcher import BasicLauncher
    from hydra._internal.core_plugins.basic_sweeper import BasicSweeper

    assert list(inspect.signature(ConfigLoaderImpl.load_sweep_config).parameters) == [
        "self", "master_config", "sweep_overrides"]
    source = inspect.getsource(ConfigLoaderImpl._load_configuration_impl)
    for step in ("ConfigLoaderImpl._apply_overrides_to_config(config_overrides, cfg)",
                 "cfg.hydra.overrides.hydra.append(override.input_line)",
                 "cfg.hydra.overrides.task.append(override.input_line)",
                 "cfg.hydra.job.override_dirname = get_overrides_dirname("):
        assert step in source, step
    assert "is_dict or not is_group" in inspect.getsource(__import__("hydra._internal.defaults_list",
                                                                     fromlist=["Overrides"]).Overrides)
    assert isinstance(inspect.getattr_static(ConfigLoaderImpl, "_apply_overrides_to_config"), staticmethod)
    assert callable(get_overrides_dirname)
    assert "config_loader.load_sweep_config" in inspect.getsource(BasicLauncher.launch)
    assert "self.launcher = Plugins.instance().instantiate_launcher(" in inspect.getsource(BasicSweeper.setup)


# ---------------------------------------------------------------- tracking

def test_metric_history_keeps_the_ends_and_at_most_the_limit() -> None:
    t = np.unique(np.geomspace(1, 10_000, 300).astype(int))
    curve = pd.concat([pd.DataFrame({"quantity": "mistakes", "t": t, "empirical": np.arange(len(t), dtype=float)}),
                       pd.DataFrame({"quantity": "bound/x", "t": t[:5], "empirical": [5.0, 4, 3, 2, 1]})])
    rows = tracking.runs.history(curve, points=64)
    mistakes = [(v, s) for q, v, s in rows if q == "mistakes"]
    assert len(mistakes) == 64 and mistakes[0] == (0.0, 1) and mistakes[-1] == (len(t) - 1.0, 10_000)
    assert all(v == float(np.flatnonzero(t == s)[0]) for v, s in mistakes)  # each value at its own step
    assert [(v, s) for q, v, s in rows if q == "bound/x"] == [(5.0, 1), (4.0, 2), (3.0, 3), (2.0, 4), (1.0, 5)]


@pytest.mark.parametrize("new", [True, False])
def test_a_new_parent_has_no_earlier_runs_to_look_for(new: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(sweep.ENV, raising=False)
    uri = migrated_store(tmp_path / "mlflow.db")  # about the runs' search, not the store's creation
    parent = tracking.runs.start_parent(uri, "e", "p", "q", "s-1", tags={})
    tracking.announce_sweep(tmp_path, parent, "s-1", new=new)
    searched: list[str] = []
    monkeypatch.setattr(tracking.runs.JobRun, "_supersede", lambda self, *a, **k: searched.append(self.run_id))
    tags = {"boundlab.config_hash": "k"}
    tracking.runs.JobRun(uri, "e", "job", parent_id=parent, tags=tags)
    tracking.runs.JobRun(uri, "e", "job", parent_id=parent, tags=tags, supersede=True)  # a forced rerun always looks
    tracking.runs.JobRun(uri, "e", "job", parent_id="f" * 32 if new else parent, tags=tags)  # another parent: looks
    assert len(searched) == (2 if new else 3)
    sweep.current().ended().publish()
    assert sweep.current().parent_new is False


# ---------------------------------------------------------------- --help

@pytest.mark.slow  # two fresh interpreters, one for each listing
def test_help_lists_the_same_groups_from_one_repository_copy() -> None:
    """``boundlab --help`` answers Hydra's per-group questions from one copy of the repository: the
    text is the one Hydra's own listing gives, and Hydra's method keeps the signature replaced."""
    import subprocess
    import sys

    from hydra._internal.config_loader_impl import ConfigLoaderImpl

    assert list(inspect.signature(ConfigLoaderImpl.get_group_options).parameters) == [
        "self", "group_name", "results_filter", "config_name", "overrides"]
    code = ("import sys\nfrom pipeline import cli\n"
            "if sys.argv[1] == 'hydra': cli.hydra_seam.list_groups_once = lambda: None\n"
            "sys.argv = ['boundlab', '--help']\ncli.main(['--help'])\n")
    texts = [subprocess.run([sys.executable, "-c", code, which], capture_output=True, text=True, check=True).stdout
             for which in ("hydra", "ours")]
    assert texts[0] == texts[1] and "algorithm: " in texts[0] and "dataset: " in texts[0]


def test_the_listing_is_hydras_again_once_the_command_ends() -> None:
    from hydra._internal.config_loader_impl import ConfigLoaderImpl

    from pipeline.sweep import hydra_seam

    hydras = ConfigLoaderImpl.get_group_options
    restore = hydra_seam.list_groups_once()
    assert ConfigLoaderImpl.get_group_options is not hydras
    restore()
    assert ConfigLoaderImpl.get_group_options is hydras


# ---------------------------------------------------------------- the joblib launcher

@pytest.mark.filterwarnings(r"ignore:\s*'hydra/launcher/joblib' is validated against ConfigStore schema")
def test_the_joblib_preset_selects_the_launcher_that_keeps_its_plugins(loader) -> None:  # noqa: ANN001
    """hydra/launcher=joblib is boundlab's subclass with the plugin's fields and defaults, and Hydra's
    worker function still restores the singletons as the subclass's worker function expects."""
    import dataclasses

    from hydra import compose
    from hydra_plugins.hydra_joblib_launcher import _core
    from hydra_plugins.hydra_joblib_launcher.config import JobLibLauncherConf

    from hydra_plugins.boundlab_sweeper.boundlab_sweeper import BoundlabJoblibLauncher

    launcher = compose("config", overrides=["hydra/launcher=joblib"], return_hydra_config=True).hydra.launcher
    theirs = {f.name: f.default for f in dataclasses.fields(JobLibLauncherConf)}
    assert launcher._target_ == "hydra_plugins.boundlab_sweeper.boundlab_sweeper.BoundlabJoblibLauncher"
    assert {k: v for k, v in OmegaConf.to_container(launcher).items() if k != "_target_"} == {
        k: v for k, v in theirs.items() if k != "_target_"}
    assert list(inspect.signature(_core.execute_job).parameters) == [
        "idx", "overrides", "hydra_context", "config", "task_function", "singleton_state"]
    assert "Singleton.set_state(singleton_state)" in inspect.getsource(_core.execute_job)
    assert "delayed(execute_job)(" in inspect.getsource(_core.launch)
    singleton = __import__("hydra.core.singleton", fromlist=["x"]).Singleton
    assert 'instances.pop(Plugins, None)' in inspect.getsource(singleton.get_state)
    # by name: Hydra's plugin scan may have executed either module again (new class objects)
    assert "JoblibLauncher" in [c.__name__ for c in BoundlabJoblibLauncher.__mro__[1:]]


def test_a_worker_keeps_its_plugin_registry_between_jobs(monkeypatch: pytest.MonkeyPatch) -> None:
    from hydra.core.plugins import Plugins
    from hydra.core.singleton import Singleton
    from hydra_plugins.hydra_joblib_launcher import _core

    import hydra_plugins.boundlab_sweeper.boundlab_sweeper as plugin

    Plugins.instance()
    registry = Singleton._instances[Plugins]
    seen: list = []

    def hydras(idx, overrides, hydra_context, config, task_function, singleton_state):  # noqa: ANN001, ANN202
        Singleton.set_state(singleton_state)
        seen.append(Singleton._instances[Plugins])
        return idx

    monkeypatch.setattr(_core, "execute_job", hydras)
    state = Singleton.get_state()
    assert Plugins not in state["instances"]  # Hydra's state leaves it out: a worker would scan again
    assert plugin.execute_job(3, [], None, None, None, state) == 3
    assert seen == [registry]



def test_a_composition_that_does_not_pickle_is_deep_copied(loader) -> None:  # noqa: ANN001
    """The cache keeps a composition pickled (a copy is one unpickling), or, when pickle cannot name one of
    its classes (a plug-in's structured config imported twice by Hydra's plugin scan), as it is, deep-copied
    per job: either way each job gets its own copy with its overrides applied."""
    from pipeline.sweep.hydra_seam import Compositions, _frozen, parse_overrides

    class Local:  # a class pickle cannot import by name
        pass

    plain = OmegaConf.create({"a": 1, "b": {"c": 2}})
    odd = OmegaConf.create({"a": 1, "b": {"c": Local()}}, flags={"allow_objects": True})
    assert isinstance(_frozen(plain), bytes) and _frozen(odd) is odd
    for composed in (plain, odd):
        cache = Compositions(loader)
        one, two = (cache.config(parse_overrides([f"a={v}"]), lambda _, c=composed: c) for v in (5, 6))
        assert (one.a, two.a, composed.a) == (5, 6, 1) and one.b is not two.b and one.b is not composed.b
        assert type(one.b.c) is type(composed.b.c)


def test_interpolation_parses_are_kept_and_resolve_as_before() -> None:
    """``hydra_seam.cache_interpolation_parses``: OmegaConf's nodes call ``omegaconf.base.parse`` (fails when
    an OmegaConf release stops doing so); once cached, each text is parsed once, every config resolves as
    before, and a text that does not parse raises every time."""
    import omegaconf.base
    import omegaconf.grammar_parser
    from omegaconf.errors import GrammarParseError

    from pipeline.sweep.hydra_seam import cache_interpolation_parses

    assert "parse(_get_value(value))" in inspect.getsource(omegaconf.base.Container._maybe_resolve_interpolation)
    cache_interpolation_parses()
    cached = omegaconf.base.parse
    assert cached.__wrapped__ is omegaconf.grammar_parser.parse
    cache_interpolation_parses()  # once per process: not wrapped twice
    assert omegaconf.base.parse is cached
    before = cached.cache_info().misses
    for n in (3, 4):
        cfg = OmegaConf.create({"n": n, "m": "${n}", "s": "a${n}b", "d": {"x": "${n}"}})
        assert OmegaConf.to_container(cfg, resolve=True) == {"n": n, "m": n, "s": f"a{n}b", "d": {"x": n}}
    assert cached.cache_info().misses - before <= 2  # '${n}' and 'a${n}b', whatever their nodes and values
    for _ in range(2):
        with pytest.raises(GrammarParseError):
            OmegaConf.create({"bad": "${oops"}).bad  # noqa: B018 - reading the node resolves it


def test_what_the_shallow_repository_copy_relies_on_in_hydra() -> None:
    """``hydra_seam.copy_repositories_shallow`` replaces Hydra's deep copy: fails when Hydra's constructor
    copies anything else, or when ``initialize_sources`` (what the copy protects the original from) starts
    changing the repository in place instead of binding a new list."""
    from hydra._internal.config_repository import CachingConfigRepository, ConfigRepository

    from pipeline.sweep.hydra_seam import copy_repositories_shallow

    copy_repositories_shallow()
    constructor = CachingConfigRepository.__init__
    assert constructor.boundlab_shallow
    body = [line.strip() for line in inspect.getsource(constructor.hydras).splitlines()[1:] if line.strip()]
    assert body == ["# copy the underlying repository to avoid mutating it with initialize_sources()",
                    "self.delegate = copy.deepcopy(delegate)",
                    "self.cache: Dict[str, Optional[ConfigResult]] = {}"], body
    source = inspect.getsource(ConfigRepository.initialize_sources)
    assert "self.sources = []" in source and source.count("self.") == 3  # the new list, its appends, _get_scheme
    assert "self.sources.append(source)" in source and "self._get_scheme(" in source
    copy_repositories_shallow()  # once per process: not wrapped twice
    assert CachingConfigRepository.__init__ is constructor


@pytest.mark.parametrize("overrides", [["seed=3"], ["algorithm=pegasos", "T=10"], ["experiment=perceptron_margin"],
                                       ["hydra.searchpath=[pkg://hydra.conf]", "seed=2"]])
def test_compositions_on_a_shallow_copy_and_kept_reads_equal_hydras_own(loader, overrides: list[str]) -> None:  # noqa: ANN001
    """The same config, node for node, composed on Hydra's deep copy from files read afresh, and on the
    shallow copy from kept reads (twice); the loader's own repository keeps its sources, also when a
    ``hydra.searchpath`` makes the composition set new ones."""
    from hydra._internal.config_repository import CachingConfigRepository, ConfigRepository

    from pipeline.sweep.hydra_seam import copy_repositories_shallow, keep_config_reads

    copy_repositories_shallow()
    keep_config_reads()
    shallow, kept = CachingConfigRepository.__init__, ConfigRepository.load_config
    sources = list(loader.repository.sources)
    composed = {}
    contenders = (("Hydra's", shallow.hydras, kept.hydras), ("ours", shallow, kept), ("ours, again", shallow, kept))
    for name, constructor, load in contenders:
        CachingConfigRepository.__init__, ConfigRepository.load_config = constructor, load
        try:
            cfg = loader.load_configuration("config", overrides=list(overrides), run_mode=RunMode.RUN)
        finally:
            CachingConfigRepository.__init__, ConfigRepository.load_config = shallow, kept
        composed[name] = OmegaConf.to_yaml(cfg)
        assert loader.repository.sources == sources
    assert composed["Hydra's"] == composed["ours"] == composed["ours, again"]


def test_what_the_kept_config_reads_rely_on_in_hydra() -> None:
    """``hydra_seam.keep_config_reads`` finds a config name's file as Hydra's sources do: fails when those
    lines change."""
    from hydra._internal.config_repository import ConfigRepository
    from hydra._internal.core_plugins.file_config_source import FileConfigSource
    from hydra._internal.core_plugins.importlib_resources_config_source import ImportlibResourcesConfigSource

    from pipeline.sweep.hydra_seam import keep_config_reads

    keep_config_reads()
    kept = ConfigRepository.load_config
    assert kept.boundlab_kept
    assert "config_path=config_path, object_type=ObjectType.CONFIG" in inspect.getsource(kept.hydras)
    assert "ret = source.load_config(config_path=config_path)" in inspect.getsource(kept.hydras)
    for cls, line in ((FileConfigSource, "full_path = os.path.realpath(os.path.join(self.path, normalized_config_path))"),
                      (ImportlibResourcesConfigSource, "res = resources.files(self.path).joinpath(normalized_config_path)")):
        source = inspect.getsource(cls.load_config)
        assert "normalized_config_path = self._normalize_file_name(config_path)" in source and line in source, cls
    keep_config_reads()  # once per process: not wrapped twice
    assert ConfigRepository.load_config is kept


def _tiny_loader(conf: Path):  # noqa: ANN202
    from hydra._internal.config_loader_impl import ConfigLoaderImpl
    from hydra._internal.utils import create_config_search_path

    return ConfigLoaderImpl(config_search_path=create_config_search_path(str(conf)))


def test_a_kept_config_read_is_parsed_once_and_again_when_the_file_changes(tmp_path: Path,
                                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """The second composition parses no file; a file rewritten at once, to the same size, is parsed again."""
    from pipeline.sweep.hydra_seam import keep_config_reads

    keep_config_reads()
    (tmp_path / "g").mkdir()
    (tmp_path / "config.yaml").write_text("defaults:\n  - g: one\n  - _self_\na: 1\n")
    (tmp_path / "g" / "one.yaml").write_text("b: 10\n")
    parsed = []
    load = OmegaConf.load
    monkeypatch.setattr(OmegaConf, "load", staticmethod(lambda f: parsed.append(getattr(f, "name", f)) or load(f)))
    loader = _tiny_loader(tmp_path)
    compose = lambda: loader.load_configuration("config", overrides=[], run_mode=RunMode.RUN)  # noqa: E731
    first = compose()
    assert (first.a, first.g.b) == (1, 10) and any(name.endswith("one.yaml") for name in parsed)
    parsed.clear()
    again = compose()
    assert (again.a, again.g.b) == (1, 10) and parsed == []  # Hydra's own files too
    handed = loader.repository.load_config("g/one")  # each read is a copy: changing one changes no later one
    handed.config.b = 11
    assert loader.repository.load_config("g/one").config.b == 10 and parsed == []
    (tmp_path / "g" / "one.yaml").write_text("b: 20\n")  # same size, same second
    third = compose()
    assert (third.a, third.g.b) == (1, 20) and [name for name in parsed if "one.yaml" in name]
    assert compose().g.b == 20
