"""The DVC stage of one experiment: ``python -m pipeline.dvc_stage NAME`` (dvc.yaml, one stage per experiment).

It runs ``boundlab -m experiment=NAME`` with the overrides in ``params.yaml`` (a list value sweeps), so
``dvc exp run -S gamma=0.2`` changes the sweep, and publishes its results into ``results/NAME``
(:func:`run_sweep`). A violated bound is recorded and left for the report stage to fail on (loudly,
after every experiment ran); any other failure stops the pipeline at once (:func:`stage`).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from pipeline.paths import EXPERIMENTS, WORK_DIR  # the main job's experiments, where their sweeps run

# The main job's experiments, in the docs' order (docs/experiments.md): dvc.yaml has one stage for each.
PARAMS = ("scale", "gamma", "rho", "seed", "n", "d")  # the keys of params.yaml: overrides of every experiment's grid
PUBLISHED = ("results.parquet", "curves.parquet", "metrics.json", "*.png", "*.svg")


def run_sweep(experiment: str, params_file: Path = Path("params.yaml"), results: Path = Path("results")) -> None:
    """Run the named experiment with the overrides of ``params_file``, then publish it into results/NAME.

    The sweep runs in ``multirun/dvc/NAME`` (its job directories, logs, Hydra's records with absolute
    paths, done markers with code hashes, the parent run's id): a rerun resumes there. DVC tracks
    results/NAME, which receives only what the computation determines (:func:`publish`), so a fresh
    clone's ``dvc repro`` reproduces the committed ``dvc.lock``. A sweep that ends with exit code 1 (a
    failed job or a violated bound) is published too, then the exit is passed on."""
    from omegaconf import OmegaConf

    from pipeline.sweep import callbacks
    from pipeline.cli import main

    params = OmegaConf.to_container(OmegaConf.load(params_file)) if params_file.exists() else {}
    overrides = []
    for key, value in (params or {}).items():
        if value is None:
            continue
        if isinstance(value, list):
            value = ",".join(str(v) for v in value)
        overrides.append(f"{key}={value}")
    work = WORK_DIR / experiment
    callbacks.LAST.clear()  # filled by this sweep's aggregation: only then are the sweep's files its own
    try:
        main(["-m", f"experiment={experiment}", f"hydra.sweep.dir={work}", *launcher(experiment), *overrides])
    except SystemExit as e:
        # an earlier sweep's metrics.json may still be there: published only if this sweep wrote it
        if e.code == 1 and callbacks.LAST and (work / "metrics.json").exists():
            publish(work, results / experiment)
        raise
    publish(work, results / experiment)


def launcher(experiment: str) -> list[str]:
    """The launcher of the experiment's stage: forked workers (``hydra/launcher=fork``, one per core) for a packed
    experiment (``pack:`` in experiments/NAME.yaml: a few jobs of many seeds each, seconds of work a job), the
    basic launcher for the rest (many small jobs: in a fresh clone each worker would compile and fill the caches
    the command has not yet, and the stages of small jobs lost as much as the packed ones gained; docs/performance.md,
    "Forked workers"). The results are the same bits on either (every job on one BLAS thread)."""
    from omegaconf import OmegaConf

    from pipeline.paths import PACKAGE_ROOT

    spec = OmegaConf.load(PACKAGE_ROOT / "experiments" / f"{experiment}.yaml")
    return ["hydra/launcher=fork"] if spec.get("pack") else []


def publish(sweep_dir: Path, dest: Path) -> list[Path]:
    """Copy the sweep's tables, verdict summary and figures (:data:`PUBLISHED`) into ``dest``, replacing it
    whole: staged beside it and renamed, so ``dest`` never mixes two sweeps' files."""
    import shutil

    staging = dest.with_name(f".{dest.name}.{os.getpid()}.tmp")
    old = dest.with_name(f".{dest.name}.old.{os.getpid()}.tmp")
    from pipeline import files

    files.clean_stale(dest.parent)  # what a killed stage left here
    for leftover in (staging, old):
        shutil.rmtree(leftover, ignore_errors=True)
    staging.mkdir(parents=True)
    try:
        for pattern in PUBLISHED:
            for path in sorted(sweep_dir.glob(pattern)):
                shutil.copyfile(path, staging / path.name)
    except BaseException:  # a full disk: the previous results stay as they were
        shutil.rmtree(staging, ignore_errors=True)
        raise
    if dest.exists():  # set aside, not deleted, until the new copy is in place: a crash never leaves neither
        os.replace(dest, old)
    os.replace(staging, dest)
    shutil.rmtree(old, ignore_errors=True)
    return sorted(dest.iterdir())


def stage(name: str, results: Path = Path("results")) -> None:
    """The DVC stage of experiment ``name``: its sweep into ``results/NAME``. A sweep whose only problem
    is a violated bound is recorded (results, metrics, MLflow parent run FAILED) and the stage goes on,
    so the report shows it and then fails the pipeline; any other failure stops it here."""
    from pipeline.judging.verdicts import VIOLATED

    try:
        run_sweep(name, results=results)
    except SystemExit as e:
        from pipeline.sweep import callbacks

        metrics_file = results / name / "metrics.json"
        if e.code != 1 or not metrics_file.exists() or not callbacks.LAST:  # not this sweep's results: a real failure
            raise
        m = json.loads(metrics_file.read_text())
        violated = [b for b, s in m.items() if isinstance(s, dict) and s.get("verdict") == VIOLATED]
        if m.get("failed_jobs") or not violated:
            raise
        print(f"boundlab: {name}: BOUND(S) VIOLATED: {', '.join(violated)}; recorded in {results / name} "
              "and in MLflow (parent run FAILED); the report stage will fail", file=sys.stderr)


def reads(experiment: str) -> list[str]:
    """The keys of params.yaml (:data:`PARAMS`) that ``experiment`` reads: ``scale`` (it picks the grid) and
    ``seed`` (every job has one) always; another key when the experiment's grid sweeps it or one of its
    jobs' learner or dataset configs refers to it (``${gamma}``). Its DVC stage depends on these alone, so
    ``dvc exp run -S gamma=0.2`` reruns only the experiments that use gamma."""
    import hydra
    from omegaconf import OmegaConf

    from pipeline.paths import CONF_DIR
    from pipeline.sweep.preflight import sweep_jobs
    from pipeline.sweep.schemas import register

    register()
    with hydra.initialize_config_dir(config_dir=str(CONF_DIR), version_base=None):
        # the jobs of ``boundlab -m experiment=NAME`` as pipeline.sweep.preflight.plan_of finds them, from the one
        # composition of the experiment (plan_of's checks of a user's command line, two compositions more,
        # have nothing to check in the package's own experiments)
        base = hydra.compose("config", overrides=[f"experiment={experiment}"], return_hydra_config=True)
        grid = set((base.hydra.sweeper.get("params") or {}).keys())
        jobs = sweep_jobs(base, [f"experiment={experiment}"])
        groups = {tuple(o for o in job if o.split("=", 1)[0] in ("algorithm", "dataset")) for job in jobs}
        chosen = base.hydra.runtime.choices  # a job choosing what the experiment chose is the base itself
        text = ""
        for choice in sorted(groups):
            same = all(chosen.get(group) == option for group, option in (o.split("=", 1) for o in choice))
            cfg = base if same else hydra.compose("config", overrides=[f"experiment={experiment}", *choice])
            text += OmegaConf.to_yaml({"algorithm": cfg.algorithm, "dataset": cfg.dataset}, resolve=False)
    return [k for k in PARAMS if k in ("scale", "seed") or k in grid or "${" + k + "}" in text]


def dvc_yaml() -> str:
    """dvc.yaml, written from :data:`EXPERIMENTS` and :func:`reads` (``python -m pipeline.dvc_stage
    --write-dvc-yaml``; tests/test_experiments.py checks that the committed file is this one). One stage per
    experiment, because DVC's templated stages cannot give each a list of params of its own."""
    import yaml

    stages: dict = {}
    for name in EXPERIMENTS:
        stages[name] = {"cmd": f"python -m pipeline.dvc_stage {name}",
                        "deps": ["pipeline", "conf", f"experiments/{name}.yaml", "constraints.txt"],
                        "params": [{"params.yaml": reads(name)}], "outs": [f"results/{name}"]}
    stages["report"] = {"cmd": "python -m pipeline.outputs.report",
                        "deps": ["pipeline", "constraints.txt", "results", "experiments"],
                        "outs": ["report/index.html", "report/experiments", "report/summary.md", "report/verdicts.json",
                                 "report/figures", {"report/claims.json": {"cache": False}}],
                        "metrics": [{"report/counts.json": {"cache": False}}]}
    plots = list(PLOTS)
    body = yaml.safe_dump({"stages": stages}, sort_keys=False, width=120, default_flow_style=None)
    body += yaml.safe_dump({"plots": plots}, sort_keys=False, width=120)
    return DVC_YAML_HEAD + body


DVC_YAML_HEAD = """\
# The main job: every experiment end to end (data, runs, results table, figures, MLflow), then the report.
# Written by `python -m pipeline.dvc_stage --write-dvc-yaml` from the experiments' configs: do not edit by hand.
# Each experiment's stage (`python -m pipeline.dvc_stage NAME`: `boundlab -m experiment=NAME` with the
# overrides in params.yaml) runs in multirun/dvc/NAME (resumable, not tracked) and publishes into
# results/NAME only what the computation determines, so a fresh clone's `dvc repro` reproduces dvc.lock. It
# depends on the params.yaml keys the experiment reads, so `dvc exp run -S gamma=0.2` reruns only those that
# use gamma. A violated bound is recorded there and fails the report stage, after every experiment ran. The
# report's report/counts.json (claims that hold, are inconclusive, fail) is the DVC metrics file `dvc exp show`
# tabulates; report/claims.json (per claim: verdict, informative share, largest ratio), both kept in git, is
# what `dvc metrics diff --targets report/claims.json` compares claim by claim (docs/reproduce.md).
"""


# The figures dvc.yaml declares as DVC plots (``dvc plots show/diff``): the ones that answer each experiment's
# question (every figure is in results/NAME and in the report).
PLOTS = (
    "results/perceptron_margin/novikoff_measured_vs_bound.png",
    "results/perceptron_margin/novikoff_heatmap_d_gamma.png",
    "results/perceptron_margin/novikoff_curves.png",
    "results/perceptron_tight/novikoff_measured_vs_bound.png",
    "results/perceptron_tight/novikoff_curves.png",
    "results/perceptron_nonseparable/hinge_all_rounds_measured_vs_bound.png",
    "results/perceptron_nonseparable/freund_schapire_measured_vs_bound.png",
    "results/perceptron_batch/novikoff_measured_vs_bound.png",
    "results/perceptron_batch/batch_passes_measured_vs_bound.png",
    "results/worst_case/mistakes_by_ordering.png",
    "results/worst_case/novikoff_measured_vs_bound.png",
    "results/halving_classes/halving_measured_vs_bound.png",
    "results/halving_classes/mistakes_by_cls.png",
    "results/halving_classes/mistakes_by_adversary.png",
    "results/pegasos_convergence/expectation_rate_vs_T.png",
    "results/pegasos_convergence/expectation_heatmap_T_lam.png",
    "results/pegasos_convergence/regret_heatmap_T_lam.png",
    "results/pegasos_convergence/regret_curves.png",
    "results/pegasos_high_probability/high_probability_measured_vs_bound.png",
    "results/pegasos_sampling/suboptimality_by_sampling.png",
    "results/pegasos_sampling/regret_measured_vs_bound.png",
    "results/pegasos_imbalanced/expectation_measured_vs_bound.png",
    "results/pegasos_imbalanced/regret_measured_vs_bound.png",
    "results/pegasos_transfer/expectation_measured_vs_bound.png",
    "results/pegasos_transfer/regret_measured_vs_bound.png",
    "results/pegasos_full_batch/full_batch_heatmap_T_lam.png",
    "results/pegasos_full_batch/full_batch_measured_vs_bound.png",
    "results/kernel_pegasos/suboptimality_by_kernel.png",
    "results/kernel_pegasos/kernel_regret_measured_vs_bound.png",
    "results/kernel_pegasos_projection/kernel_regret_measured_vs_bound.png",
    "results/kernel_pegasos_projection/suboptimality_by_projection.png",
    "results/multiclass_sgd_rate/cor17_2_rate_vs_T.png",
    "results/multiclass_sgd_rate/lemma14_1_measured_vs_bound.png",
    "results/multiclass_svm_samples/cor17_1_rate_vs_T.png",
    "results/multiclass_svm_samples/cor17_1_measured_vs_bound.png",
    "results/multiclass_pegasos_projection/mc_regret_measured_vs_bound.png",
    "results/multiclass_pegasos_projection/mc_expectation_rate_vs_T.png",
    "results/multiclass_cost/mc_regret_measured_vs_bound.png",
    "results/multiclass_cost/mc_expectation_rate_vs_T.png",
    "results/real_data_margins/novikoff_measured_vs_bound.png",
    "results/real_data_margins/hinge_all_rounds_measured_vs_bound.png",
    "report/figures/pegasos_sampling_suboptimality_by_sampling.png",
    "report/figures/kernel_pegasos_f_star_hi_by_kernel.png",
    "report/figures/pegasos_imbalanced_suboptimality_by_sampling.png",
)


USAGE = """usage: python -m pipeline.dvc_stage EXPERIMENT | --write-dvc-yaml

EXPERIMENT: runs boundlab -m experiment=EXPERIMENT with the overrides of params.yaml and publishes its results
into results/EXPERIMENT: the stage of that name in dvc.yaml (dvc repro EXPERIMENT; dvc exp run -S gamma=0.2
changes the sweep). --write-dvc-yaml: writes dvc.yaml from the experiments' configs. docs/reproduce.md explains
the main job."""


def main(argv: list[str]) -> int:
    """The command line of this module (its stages' ``cmd`` in dvc.yaml); the status to exit with."""
    if argv and argv[0] in ("-h", "--help"):
        print(USAGE)
        return 0
    if argv == ["--write-dvc-yaml"]:
        Path("dvc.yaml").write_text(dvc_yaml())
        return 0
    if len(argv) != 1:
        print(f"boundlab: error: {USAGE.splitlines()[0]} (--help says what each does)", file=sys.stderr)
        return 2
    stage(argv[0])
    return 0


if __name__ == "__main__":
    from pipeline.sweep.interrupts import quick_exit, seldom_collection, until_the_reader_leaves

    seldom_collection()

    # without the interpreter's teardown of MLflow and numba (~1 s a stage); quiet when stdout's reader has gone
    quick_exit(until_the_reader_leaves(lambda: main(sys.argv[1:])))
