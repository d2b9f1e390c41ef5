"""The control plane's seams: the sweep context (one record, one environment variable, read by every
process of a sweep) and boundlab's Hydra sweeper (Hydra's basic sweeper trusting the pre-flight)."""

from __future__ import annotations

import dataclasses
import inspect
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir
from hydra.plugins.sweeper import Sweeper
from omegaconf import OmegaConf

from pipeline.sweep import context as sweep
from pipeline.paths import CONF_DIR
from pipeline.sweep.schemas import register

SWEEPER = "hydra_plugins.boundlab_sweeper.boundlab_sweeper.BoundlabSweeper"


@pytest.fixture(autouse=True)
def _own_context(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test starts without a context, and leaves none behind."""
    monkeypatch.delenv(sweep.ENV, raising=False)
    sweep.forget()
    yield
    sweep.forget()


# ---------------------------------------------------------------- the sweep context

@pytest.mark.slow  # a started interpreter reads it
def test_the_context_is_one_variable_that_a_started_process_inherits() -> None:
    published = sweep.update(driver_pid=123, key="k1", size=4, start=1.5, parent_run_id="p" * 32, sweep_id="s-1")
    assert sweep.current() == published
    assert [k for k in os.environ if k.startswith(("BOUNDLAB_SWEEP", "BOUNDLAB_DRIVER", "BOUNDLAB_PARENT",
                                                    "BOUNDLAB_RUN"))] == [sweep.ENV]
    code = "from pipeline.sweep import context as sweep; c = sweep.current(); print(c.key, c.size, c.parent_run_id == 'p' * 32)"
    child = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert child.stdout.split() == ["k1", "4", "True"]
    sweep.update(driver_cwd="/somewhere")  # one field changed, the others kept
    assert sweep.current() == published.with_(driver_cwd="/somewhere")


def test_an_ended_sweep_keeps_only_the_commands_fields() -> None:
    sweep.update(driver_pid=7, driver_cwd="/d", key="k", size=2, start=3.0, parent_run_id="p", sweep_id="s")
    sweep.current().ended().publish()
    assert sweep.current() == sweep.Sweep(driver_pid=7, driver_cwd="/d")


def test_an_empty_or_foreign_context(monkeypatch: pytest.MonkeyPatch) -> None:
    assert sweep.current() == sweep.Sweep()
    monkeypatch.setenv(sweep.ENV, "")  # what the Ray preset forwards when the driver has none
    assert sweep.current() == sweep.Sweep()
    monkeypatch.setenv(sweep.ENV, '{"key": "k", "from_a_newer_version": 1}')
    assert sweep.current() == sweep.Sweep(key="k")
    monkeypatch.setenv(sweep.ENV, "not json")
    with pytest.raises(ValueError, match=sweep.ENV):
        sweep.current()


def test_the_config_reads_the_context_through_the_resolver(monkeypatch: pytest.MonkeyPatch) -> None:
    register()
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base=None):
        cfg = compose("config", return_hydra_config=True)
    assert OmegaConf.select(cfg, "hydra.sweep.dir") == "multirun/boundlab/adhoc"
    assert OmegaConf.select(cfg, "hydra.run.dir").endswith("-0")
    sweep.update(driver_pid=4242, key="0123abcdef")  # read when resolved, never cached
    assert OmegaConf.select(cfg, "hydra.sweep.dir") == "multirun/boundlab/0123abcdef"
    assert OmegaConf.select(cfg, "hydra.run.dir").endswith("-4242")
    with pytest.raises(Exception, match="sweep_key"):
        OmegaConf.create({"x": "${boundlab:nothing}"}).x  # noqa: B018


def test_the_ray_preset_forwards_the_context_and_the_users_settings_only(monkeypatch: pytest.MonkeyPatch) -> None:
    preset = OmegaConf.load(CONF_DIR / "hydra" / "launcher" / "ray.yaml")
    forwarded = preset.ray.init.runtime_env.env_vars
    assert sorted(forwarded) == sorted([sweep.ENV, "MLFLOW_TRACKING_URI", "BOUNDLAB_CACHE"])
    published = sweep.update(key="k", parent_run_id="p", driver_cwd="/d")
    assert sweep.Sweep.from_json(forwarded[sweep.ENV]) == published
    assert preset.ray.init.runtime_env.worker_process_setup_hook == "pipeline.sweep.ray_worker.setup"


def test_no_module_but_the_context_names_its_variable() -> None:
    pipeline = Path(sweep.__file__).parents[1]
    named = sorted(str(p.relative_to(pipeline)) for p in pipeline.rglob("*.py") if sweep.ENV in p.read_text())
    assert named == ["sweep/context.py"]


@pytest.mark.slow  # a fresh interpreter: what the import pulls in
def test_the_job_entry_point_does_not_import_the_command() -> None:
    code = "import sys, pipeline.sweep.stages, pipeline.sweep.callbacks, pipeline.tracking; print('pipeline.cli' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip() == "False"


# ---------------------------------------------------------------- boundlab's sweeper

def test_what_the_sweeper_relies_on_in_hydra() -> None:
    """Fails when a Hydra release changes the basic sweeper the plugin subclasses: its private module
    path, the hook it overrides, where its sweep calls that hook, its constructor and config fields, and
    the splitting of a sweep into jobs that the pre-flight repeats (pipeline.sweep.hydra_seam.split_sweep)."""
    from hydra._internal.core_plugins.basic_sweeper import BasicSweeper, BasicSweeperConf
    from hydra.core.override_parser.types import Override

    from hydra_plugins.boundlab_sweeper.boundlab_sweeper import BoundlabSweeper, BoundlabSweeperConf

    assert list(inspect.signature(Sweeper.validate_batch_is_legal).parameters) == ["self", "batch"]
    assert "validate_batch_is_legal" not in vars(BasicSweeper)  # super() reaches Hydra's check
    assert "self.validate_batch_is_legal(batch)" in inspect.getsource(BasicSweeper.sweep)
    assert "self.launcher.launch(batch" in inspect.getsource(BasicSweeper.sweep)
    assert list(inspect.signature(BasicSweeper.__init__).parameters) == ["self", "max_batch_size", "params"]
    ours = {f.name: f.default for f in dataclasses.fields(BoundlabSweeperConf)}
    theirs = {f.name: f.default for f in dataclasses.fields(BasicSweeperConf)}
    assert ours == theirs | {"_target_": SWEEPER}
    assert isinstance(inspect.getattr_static(BasicSweeper, "split_arguments"), staticmethod)
    assert list(inspect.signature(BasicSweeper.split_arguments).parameters) == ["overrides", "max_batch_size"]
    assert callable(Override.is_hydra_override)
    assert issubclass(BoundlabSweeper, BasicSweeper)


def test_hydra_finds_the_plugin_and_the_config_selects_it() -> None:
    from hydra.core.plugins import Plugins

    register()
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base=None):
        assert "BoundlabSweeper" in [c.__name__ for c in Plugins.instance().discover(Sweeper)]
        assert compose("config", return_hydra_config=True).hydra.sweeper._target_ == SWEEPER
        basic = compose("config", overrides=["hydra/sweeper=basic"], return_hydra_config=True)
        assert basic.hydra.sweeper._target_ == "hydra._internal.core_plugins.basic_sweeper.BasicSweeper"


def test_the_sweeper_trusts_only_batches_the_preflight_validated(monkeypatch: pytest.MonkeyPatch) -> None:
    from hydra_plugins.boundlab_sweeper.boundlab_sweeper import BoundlabSweeper

    checked: list[list[list[str]]] = []
    monkeypatch.setattr(Sweeper, "validate_batch_is_legal", lambda self, batch: checked.append(batch))
    sweeper = BoundlabSweeper(max_batch_size=None)
    sweep.vouch([["seed=0", "n=5"], ["seed=1", "n=5"]])
    sweeper.validate_batch_is_legal([["seed=1", "n=5"], ["seed=0", "n=5"]])
    assert checked == []
    for batch in ([["seed=2", "n=5"]], [["seed=0", "n=5"], ["seed=0", "n=6"]], [["n=5", "seed=0"]]):
        sweeper.validate_batch_is_legal(batch)  # a job it did not validate, exactly as given: Hydra checks
        assert checked[-1] == batch
    sweep.forget()
    sweeper.validate_batch_is_legal([["seed=0", "n=5"]])
    assert len(checked) == 4


def _in_process_sweep(argv: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, list]:
    """Run ``boundlab -m argv`` in this process with a job that only records its overrides (and without
    the sweep callback): what the sweeper vouched, what Hydra composed and what it launched."""
    from hydra._internal.config_loader_impl import ConfigLoaderImpl
    from hydra.core.hydra_config import HydraConfig

    from pipeline.sweep import stages
    from pipeline.cli import main

    seen: dict[str, list] = {"vouched": [], "hydra_checked": [], "composed": [], "ran": [], "launcher_composed": []}
    vouched = sweep.vouched
    monkeypatch.setattr(sweep, "vouched", lambda batch: seen["vouched"].append(list(batch)) or vouched(batch))
    monkeypatch.setattr(Sweeper, "validate_batch_is_legal", lambda self, batch: seen["hydra_checked"].append(list(batch)))
    load = ConfigLoaderImpl.load_sweep_config
    monkeypatch.setattr(ConfigLoaderImpl, "load_sweep_config",
                        lambda self, master_config, sweep_overrides: seen["composed"].append(sweep_overrides)
                        or load(self, master_config, sweep_overrides))
    compose = ConfigLoaderImpl.load_configuration

    def composing(self, config_name, overrides, run_mode, *args, **kwargs):  # noqa: ANN001, ANN002, ANN003, ANN202
        if sys._getframe(1).f_code.co_name in ("load_sweep_config", "_compose"):  # the launcher's loader (ComposeOnce)
            seen["launcher_composed"].append([o for o in overrides if not o.lstrip("~+").startswith("hydra")])
        return compose(self, config_name, overrides, run_mode, *args, **kwargs)

    monkeypatch.setattr(ConfigLoaderImpl, "load_configuration", composing)
    monkeypatch.setattr(stages, "job", lambda cfg: seen["ran"].append(list(HydraConfig.get().overrides.task)))
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "argv", ["boundlab"])
    main(["-m", *argv, "~hydra.callbacks.sweep", f"hydra.sweep.dir={tmp_path / 'sweep'}"])
    return seen


def test_the_sweep_launches_the_preflights_jobs_composing_each_once(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """The jobs the pre-flight validated are exactly the batch Hydra's sweeper builds (the experiment's
    sweeper params, the command line over them, quoted values, hydra overrides set aside), the sweeper
    does not compose them again, and the launcher composes them once per choice of config groups
    (the six jobs differ in values only: one composition; tests/test_compose_once.py checks each job's
    config equals Hydra's own composition of it)."""
    argv = ["experiment=perceptron_margin", "gamma=0.2", "seed=0,1", "n=40", "rho=0.5", 'question="a, b?"']
    seen = _in_process_sweep(argv, tmp_path, monkeypatch)
    assert len(seen["ran"]) == 6 and seen["hydra_checked"] == []  # the experiment's 3 d x 2 seeds
    assert seen["vouched"] == [seen["ran"]] and seen["composed"] == []  # Hydra's per-job composition: not used
    assert seen["launcher_composed"] == [["experiment=perceptron_margin"]]
    assert seen["ran"][0][0] == "gamma=0.2" and 'question="a, b?"' in seen["ran"][0]


def test_hydras_own_sweeper_still_works(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    seen = _in_process_sweep(["seed=0,1", "n=40", "d=3", "hydra/sweeper=basic"], tmp_path, monkeypatch)
    assert seen["vouched"] == [] and seen["hydra_checked"] == [seen["ran"]] == [[["seed=0", "n=40", "d=3"],
                                                                                   ["seed=1", "n=40", "d=3"]]]


class ChoosingSweeper(Sweeper):
    """A sweeper that chooses its jobs as it goes (like an optimiser's)."""

    def __init__(self, **kwargs: object) -> None:
        pass

    def setup(self, **kwargs: object) -> None:
        pass

    def sweep(self, arguments: list[str]) -> None:
        pass


def test_a_sweeper_that_chooses_its_jobs_is_refused_in_one_line(one_line_error) -> None:  # noqa: ANN001
    from hydra.core.config_store import ConfigStore

    ConfigStore.instance().store(group="hydra/sweeper", name="test_choosing",
                                 node={"_target_": f"{__name__}.ChoosingSweeper"})
    line = one_line_error(["-m", "seed=0,1", "hydra/sweeper=test_choosing"])
    assert "chooses its jobs as the sweep goes" in line and "hydra/sweeper=boundlab" in line
    assert "unknown hydra/sweeper; choose one of basic, boundlab" in one_line_error(["-m", "seed=0,1", "hydra/sweeper=nope"])


# ---------------------------------------------------------------- what a sweep logs per job

def _table(rows: list[dict]) -> object:
    import pandas as pd

    base = {"part": None, "applicable": True, "holds": True, "informative": True, "straddles": False, "guarantee": "D",
            "quantity": "mistakes", "empirical": 3.0, "theoretical": 10.0, "reason": ""}
    return pd.DataFrame([base | r for r in rows])


def test_the_job_line_counts_what_holds_and_names_the_rest() -> None:
    from pipeline.sweep.stages import bounds_summary

    held = _table([{"bound": "novikoff", "informative": False, "theoretical": 100.0}, {"bound": "hinge_all_rounds"},
                   {"bound": "freund_schapire"}])
    assert bounds_summary(held) == "3 bounds: 3 hold; 1 vacuous: novikoff"
    mixed = _table([
        {"bound": "novikoff", "holds": False, "empirical": 120.0, "theoretical": 100.0},  # named, with its numbers
        {"bound": "tight", "holds": False, "straddles": True},
        {"bound": "hinge"},
        {"bound": "expectation", "guarantee": "E"},
        {"bound": "high_probability", "guarantee": "P", "holds": False},
        {"bound": "sure", "guarantee": "P"},
        *({"bound": "last_iterate", "applicable": False, "part": f"class {c}", "reason": "no"} for c in range(5)),
        *({"bound": f"loose_{i}", "informative": False} for i in range(6)),
    ])
    line = bounds_summary(mixed)
    assert line.startswith("17 bounds: VIOLATED: novikoff (mistakes 120 vs 100), "), line
    assert "straddling the bound (measured above it, its lower estimate not): tight" in line
    assert "7 hold, 1 within the bound (P), above the bound (P, counted against delta): high_probability" in line
    assert "1 judged over seeds (E), 5 not applicable: last_iterate [5 parts]" in line
    assert line.endswith("; 6 vacuous: loose_0, loose_1, loose_2, loose_3, 2 more"), line


def test_every_violated_bound_is_named_however_many() -> None:
    from pipeline.sweep.stages import bounds_summary

    line = bounds_summary(_table([{"bound": f"b{i}", "holds": False, "part": "class 1" if i == 0 else None,
                                   "empirical": 11.0} for i in range(7)]))
    assert line == ("7 bounds: VIOLATED: b0 [class 1] (mistakes 11 vs 10), " + ", ".join(
        f"b{i} (mistakes 11 vs 10)" for i in range(1, 7)))


@pytest.mark.e2e  # a 2-job sweep through the command
def test_a_sweep_logs_one_line_per_job_and_each_bound_on_request(tmp_path: Path, boundlab_in_process) -> None:  # noqa: ANN001
    argv = ["-m", "seed=0,1", "n=40", "d=3"]
    done = boundlab_in_process(*argv, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    jobs = [ln for ln in done.stdout.splitlines() if "[boundlab][INFO]" in ln and "perceptron seed=" in ln]
    assert len(jobs) == 2 and all("n=40 d=3: 3 bounds: 3 hold" in ln for ln in jobs), done.stdout
    assert " vs novikoff " not in done.stdout
    again = boundlab_in_process(*argv, "log.bounds=true", "force=true", cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    where = [ln.split("results in ")[1].split()[0] for ln in (done.stdout, again.stdout)]
    assert where[0] == where[1], where  # log.bounds is no part of the sweep's key: the same directory
    rows = [ln for ln in again.stdout.splitlines() if "[boundlab][INFO]" in ln and "perceptron seed=" in ln]
    assert len(rows) == 6 and sum(" vs novikoff " in ln for ln in rows) == 2 and "3 bounds:" not in again.stdout
    assert all("log.bounds" not in ln for ln in rows)  # not a parameter of the run: not in its name
