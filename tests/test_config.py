"""Configs: every group option and experiment composes and runs at a tiny size; bad input is
refused before any work with one line naming the key, exit code 2, no traceback, no MLflow run."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from helpers import compose_job
from hydra import compose, initialize_config_dir

from pipeline.sweep.preflight import preflight
from pipeline.job.config import build
from pipeline.paths import CONF_DIR
from pipeline.job.run import run
from pipeline.sweep.schemas import register

GROUPS = {g: sorted(p.stem for p in (CONF_DIR / g).glob("*.yaml")) for g in ("algorithm", "dataset", "experiment")}
TINY = ["n=50", "d=3", "T=500"]


@pytest.mark.parametrize(("group", "option"), [(g, o) for g, opts in GROUPS.items() for o in opts])
def test_every_option_composes_and_runs(group: str, option: str, svm_file: Path, tmp_path: Path) -> None:
    labels = tmp_path / "three.csv"
    labels.write_text("".join(f"{i % 7},{(i * 3) % 5},{i % 3}\n" for i in range(30)))
    extra = {"file": [f"dataset.path={svm_file}"], "sparse_margin": ["dataset.d=500"],
             "multiclass_file": ["algorithm=multiclass_sgd", f"dataset.path={labels}", "k=3"],
             "multiclass_margin": ["algorithm=multiclass_sgd", "dataset.n_test=1000"],
             "multiclass_bundled": ["algorithm=multiclass_sgd"]}.get(option, [])
    if group == "algorithm" and (option.startswith("multiclass") or option == "ova"):
        extra = ["dataset.n_test=1000"]
    result = run(build(compose_job([f"{group}={option}", *TINY, *extra])))
    assert len(result.table) >= 1 and result.table["applicable"].any()
    assert result.table.loc[result.table["guarantee"] == "D", "holds"].all()
    assert all(v.shape[0] == result.table["T"].iloc[0] for v in result.trace.values())


def test_experiments_state_their_question() -> None:
    for name in GROUPS["experiment"]:
        cfg = compose_job([f"experiment={name}"])
        assert cfg.name == name and cfg.question, f"experiment {name} must set name and question"


def test_group_keys_are_the_constructor_arguments() -> None:
    cfg = compose_job(["algorithm.passes=3", "algorithm.tie=mistake", "gamma=0.3", "rho=2"])
    job = build(cfg)
    assert job.learner.get_params() == {"tie": "mistake", "passes": 3, "ordering": "given"}
    assert job.dataset.gamma == 0.3 and job.dataset.rho == 2.0


@pytest.mark.parametrize(("algorithm", "reads_lam"), [("perceptron", False), ("halving", False), ("pegasos", True),
                                                    ("kernel_pegasos", True)])
def test_a_key_the_learner_does_not_read_leaves_the_job_unchanged(algorithm: str, reads_lam: bool) -> None:
    """A job is what its learner and dataset declare, and the seed: the top-level ``lam`` reaches only the
    learners with a ``lam`` parameter (their YAML interpolates it), so it changes only their jobs."""
    plain, other = (build(compose_job([f"algorithm={algorithm}", *extra])) for extra in ([], ["lam=0.5"]))
    assert (plain.key() != other.key()) == reads_lam and (plain.key(seeded=False) != other.key(seeded=False)) == reads_lam
    assert ("lam" in plain.params()) == reads_lam and set(plain.params()) == set(other.params())
    assert set(plain.params()) == {"seed", *plain.dataset.get_params(), *plain.learner.get_params()}
    if reads_lam:
        assert other.params()["lam"] == 0.5 and other.learner.lam == 0.5


BAD = [
    (["gamma=0"], "gamma=0"),
    (["gamma=-1"], "gamma=-1"),
    (["gamma=2", "rho=1"], "gamma=2"),
    (["rho=0"], "rho=0"),
    (["rho=-2"], "rho=-2"),
    (["n=0"], "n=0"),
    (["n=1"], "n=1"),
    (["n=1.5"], "n=1.5"),
    (["d=1"], "d=1"),
    (["gamma=abc"], "gamma='abc'"),
    (["rho=x"], "rho='x'"),
    (["seed=-1"], "seed=-1"),
    (["seed=zero"], "seed='zero'"),
    (["lam=0"], "lam=0"),
    (["algorithm=foo"], "algorithm=foo"),
    (["dataset=bar"], "dataset=bar"),
    (["experiment=nope"], "experiment=nope"),
    (["algorithm.tie=zero"], "algorithm.tie='zero'"),
    (["algorithm.passes=0"], "algorithm.passes=0"),
    (["dataset.pos_fraction=1"], "dataset.pos_fraction=1"),
    (["gama=0.1"], "gama"),
    (["gamma=0.1,0.2"], "add -m"),
    (["-m", "gamma=0.1,2", "rho=1"], "gamma=2"),
    (["-m", "seed=0,1,-3"], "seed=-3"),
    (["force=maybe"], "force='maybe'"),
    (["d=abc"], "d='abc'"),
    (["algorithm.passes=1.5"], "algorithm.passes=1.5"),
    (["dataset.pos_fraction=0"], "dataset.pos_fraction=0"),
    (["-m", "experiment=perceptron_margin", "rho=0.1"], "gamma=0.2"),
    (["algorithm=pegasos", "lam=0"], "lam=0"),
    (["algorithm=pegasos", "lam=-1"], "lam=-1"),
    (["algorithm=pegasos", "algorithm.batch=0"], "algorithm.batch=0"),
    (["algorithm=pegasos", "algorithm.batch=5000", "n=1000"], "algorithm.batch=5000"),
    (["algorithm=pegasos", "algorithm.sampling=shuffled"], "algorithm.sampling='shuffled'"),
    (["algorithm=pegasos", "algorithm.sampling=class_balanced"], "algorithm.sampling='class_balanced'"),
    (["algorithm=pegasos", "T=0"], "T=0"),
    (["algorithm=pegasos", "algorithm.objective=svm"], "algorithm.objective='svm'"),
    (["algorithm=kernel_pegasos", "algorithm.kernel=rbf"], "algorithm.kernel='rbf'"),
    (["algorithm=kernel_pegasos", "n=9000"], "n=9000"),
    (["algorithm=kernel_pegasos", "lam=0"], "lam=0"),
    (["algorithm=kernel_pegasos", "algorithm.sigma=0"], "algorithm.sigma=0"),
    (["algorithm=multiclass_sgd", "B=0"], "B=0"),
    (["algorithm=multiclass_sgd", "B=-1"], "B=-1"),
    (["algorithm=multiclass_sgd", "T=0"], "T=0"),
    (["algorithm=multiclass_sgd", "k=1"], "k=1"),
    (["algorithm=multiclass_svm", "B=0"], "B=0"),
    (["algorithm=ova", "lam=0"], "lam=0"),
    (["algorithm=multiclass_pegasos", "algorithm.sampling=class_balanced"], "algorithm.sampling='class_balanced'"),
    (["question=Does Novikoff's bound hold?"], "question=Does Novikoff's bound hold?: cannot be read as KEY=VALUE"),
    (["-m", "seed=0,1", "question=it's"], "question=it's: cannot be read"),
]


def test_the_bad_input_table_is_broad() -> None:
    assert len(BAD) >= 25


@pytest.mark.parametrize(("argv", "named"), BAD, ids=[" ".join(a) for a, _ in BAD])
def test_bad_input_is_one_line_naming_the_key(argv: list[str], named: str, one_line_error) -> None:  # noqa: ANN001
    err = one_line_error(argv)
    assert named in err, err


@pytest.mark.parametrize("job", [
    ["seed=3", "gamma=0.05"],
    ["algorithm=pegasos", "lam=0.1", "T=500", "algorithm.sampling=perm"],
    ["experiment=pegasos_imbalanced", "algorithm=pegasos_balanced", "dataset.pos_fraction=0.3", "seed=2"],
    ["experiment=multiclass_sgd_rate", "T=1000", "seed=1", "B=5"],
    ["dataset=finite_class", "algorithm=halving", "dataset.cls=intervals", "n=50"],
    ["+algorithm.unknown=1", "seed=1"],
    ["seed=1", "~seed"],  # a plain override before a deletion of its key: applied in Hydra's order
    ["seed=8", "+extra=1", "extra=2", "gamma=0.3"],
])
def test_preflight_composes_each_job_as_hydra_does(job: list[str]) -> None:
    """The pre-flight check's shortcut (one composition per choice of groups, values set as Hydra sets
    them) gives exactly the config Hydra composes for the job."""
    from omegaconf import OmegaConf

    from pipeline.sweep.hydra_seam import Composer

    register()
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base=None):
        composer = Composer()
        composer(["n=7", "d=3"])  # values set on a shared composition must not leak into other jobs
        ours = composer(job)
        try:
            theirs = compose("config", overrides=job)
        except Exception as e:  # noqa: BLE001
            pytest.fail(f"Hydra rejects {job}: {e}")
    assert OmegaConf.to_container(ours, resolve=True) == OmegaConf.to_container(theirs, resolve=True)


def _settings(plan, *keys: str) -> set[tuple[str, ...]]:  # noqa: ANN001
    """The distinct values of ``keys`` over a plan's jobs, each job's overrides read as key=value."""
    return {tuple(dict(o.split("=", 1) for o in job if "=" in o).get(k, "") for k in keys) for job in plan.task_jobs()}


def test_good_sweep_passes_preflight() -> None:
    """The pre-flight lists exactly the sweep's jobs: the product of the swept values, each job once; an
    experiment's grid, with a value on the command line replacing the grid's (the command line wins)."""
    register()
    plan = preflight(["-m", "gamma=0.05,0.1", "rho=0.5,1", "seed=0,1,2"])
    assert len(plan.jobs) == 12 and _settings(plan, "gamma", "rho", "seed") == {
        (g, r, s) for g in ("0.05", "0.1") for r in ("0.5", "1") for s in ("0", "1", "2")}
    grid = preflight(["-m", "experiment=perceptron_margin"])
    assert len(grid.jobs) == 27 and len(_settings(grid, "gamma", "d", "seed")) == 27
    assert {g for g, in _settings(grid, "gamma")} == {"0.05", "0.1", "0.2"}
    pinned = preflight(["-m", "experiment=perceptron_margin", "gamma=0.2"])
    assert len(pinned.jobs) == 9 and {g for g, in _settings(pinned, "gamma")} == {"0.2"}
    assert _settings(pinned, "d", "seed") == _settings(grid, "d", "seed")  # the rest of the grid unchanged


@pytest.mark.slow
def test_bad_input_from_the_command_line_leaves_nothing(tmp_path: Path, boundlab) -> None:  # noqa: ANN001
    db = tmp_path / "mlflow.db"
    env = {**os.environ, "MLFLOW_TRACKING_URI": f"sqlite:///{db}"}
    for argv in (["gamma=0"], ["-m", "gamma=0.1,0.2", "rho=0.15"], ["algorithm=foo"], ["n=abc"]):
        proc = boundlab(*argv, cwd=tmp_path, env=env)
        assert proc.returncode == 2, proc.stderr
        assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert not any(tmp_path.iterdir()), "no tracking store, no output directory"


def test_no_learner_parameter_shares_a_name_with_a_dataset_parameter() -> None:
    """A run's parameters are one flat mapping (its table columns and its key, pipeline.job.config.Job.params):
    a learner parameter named like a dataset parameter would hide it, and two runs differing only there
    would share a key (and one would be resumed as the other)."""
    from pipeline.plugins import DATASETS, LEARNERS

    for learner_name, learner in LEARNERS.items():
        for dataset_name, dataset in DATASETS.items():
            shared = {p.name for p in learner.params} & {p.name for p in getattr(dataset, "params", ())}
            assert not shared, (learner_name, dataset_name, shared)
