"""Experiments, the report and the main job's failure path.

Every experiment states its question and claims, composes at both scales, and runs at a tiny size
with every claimed bound in its table; the report built from a small sweep holds every claim and
figure; a deliberately broken learner makes a (D) claim fail, the report say so, and its stage exit 1.
"""

from __future__ import annotations

import json
import re
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
from PIL import Image
import pytest
import yaml
from helpers import compose_job, composer, migrated_store
from hydra import initialize_config_dir

from pipeline.sweep import hydra_seam
from pipeline.bounds import BOUNDS
from pipeline.sweep.preflight import plan_of
from pipeline.job.config import build
from pipeline.judging.columns import disagreements
from pipeline.paths import CONF_DIR
from pipeline.job.run import run
from pipeline.sweep.schemas import register

ROOT = Path(__file__).resolve().parents[1]
EXPERIMENTS = sorted(p.stem for p in (ROOT / "experiments").glob("*.yaml"))
BOUND_NAMES = {b.name: b for b in BOUNDS}
TINY = ["n=40", "d=3", "T=200"]


# Hydra's own compositions (``hydra.compose``) in this module's fast tests, by config search path, arguments
# and working directory: the pre-flight's check of ``experiment=NAME``, plan_of's composition of the sweep and
# dvc_stage.reads each compose ``experiment=NAME`` with its hydra node, the same config four times an
# experiment here. Each caller gets its own copy, so none sees another's edits.
HYDRA_COMPOSED: dict = {}


@pytest.fixture(autouse=True)
def _compose_each_config_once(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """``hydra.compose`` composes each distinct call once for this module (the fast tests only: the
    ``e2e``, ``long`` and ``slow`` ones run the command as it runs): the same arguments over the same
    config files give the same config, so the tests check what Hydra composes, once."""
    if any(request.node.get_closest_marker(m) for m in ("e2e", "long", "slow")):
        return
    import copy
    import pickle

    import hydra
    from hydra.core.global_hydra import GlobalHydra
    from omegaconf import DictConfig

    real = hydra.compose

    def compose(config_name: str | None = None, overrides: list[str] | None = None,
                return_hydra_config: bool = False, strict: bool | None = None) -> DictConfig:
        path = GlobalHydra.instance().config_loader().get_search_path().get_path()
        key = (tuple((p.provider, p.path) for p in path), config_name, tuple(overrides or ()), return_hydra_config, strict,
               os.getcwd())  # Hydra records the working directory (hydra.runtime.cwd)
        if key not in HYDRA_COMPOSED:
            cfg = real(config_name, overrides, return_hydra_config, strict)
            if return_hydra_config and cfg.hydra.job.env_copy:  # a copy of variables: depends on the environment
                return cfg
            HYDRA_COMPOSED[key] = hydra_seam._frozen(cfg)
        kept = HYDRA_COMPOSED[key]
        return pickle.loads(kept) if isinstance(kept, bytes) else copy.deepcopy(kept)

    monkeypatch.setattr(hydra, "compose", compose)


def test_the_issue_lists_every_experiment() -> None:
    asked = {"perceptron_margin", "perceptron_tight", "perceptron_nonseparable", "perceptron_batch", "worst_case",
             "halving_classes",
             "pegasos_convergence", "pegasos_sampling", "pegasos_imbalanced", "pegasos_transfer",
             "pegasos_full_batch", "kernel_pegasos", "kernel_pegasos_projection",
             "multiclass_sgd_rate", "multiclass_svm_samples", "multiclass_pegasos_projection", "multiclass_cost",
             "real_data_margins"}
    assert asked <= set(EXPERIMENTS)


def test_dvc_runs_every_experiment_once_then_the_report_over_all() -> None:
    """dvc.yaml is what pipeline.dvc_stage writes: one stage per experiment (each once), depending on the
    params.yaml keys it reads; the report over all of them, its claims.json the one metrics file, in git."""
    import yaml

    from pipeline import dvc_stage

    written = (ROOT / "dvc.yaml").read_text()
    assert written == dvc_stage.dvc_yaml(), "dvc.yaml is stale: python -m pipeline.dvc_stage --write-dvc-yaml"
    dvc = yaml.safe_load(written)
    assert sorted(dvc_stage.EXPERIMENTS) == EXPERIMENTS and len(set(dvc_stage.EXPERIMENTS)) == len(EXPERIMENTS)
    assert set(dvc["stages"]) == {*EXPERIMENTS, "report"}
    for name in EXPERIMENTS:
        stage = dvc["stages"][name]
        assert stage["cmd"] == f"python -m pipeline.dvc_stage {name}" and stage["outs"] == [f"results/{name}"]
        keys = stage["params"][0]["params.yaml"]
        assert {"scale", "seed"} <= set(keys) <= set(dvc_stage.PARAMS)
    assert "gamma" not in dvc["stages"]["real_data_margins"]["params"][0]["params.yaml"]  # files have no margin knob
    assert "gamma" in dvc["stages"]["perceptron_margin"]["params"][0]["params.yaml"]
    assert "results" in dvc["stages"]["report"]["deps"]
    assert dvc["stages"]["report"]["metrics"] == [{"report/counts.json": {"cache": False}}] and "metrics" not in dvc
    assert {"report/claims.json": {"cache": False}} in dvc["stages"]["report"]["outs"]  # in git, compared by --targets
    assert all((ROOT / p).parent.name in EXPERIMENTS or p.startswith("report/") for p in dvc["plots"])


def test_the_packed_experiments_stages_run_on_forked_workers_and_the_rest_on_the_basic_launcher() -> None:
    """A packed experiment (a few jobs of many seeds) gains from a second worker; one of many small jobs lost as
    much in a fresh clone (docs/performance.md, "Forked workers"): the stage chooses by the experiment's ``pack``."""
    from pipeline import dvc_stage

    packed = {name for name in EXPERIMENTS if yaml.safe_load((ROOT / "experiments" / f"{name}.yaml").read_text()).get("pack")}
    assert {"pegasos_expectation", "kernel_pegasos_expectation", "multiclass_expectation"} <= packed
    for name in EXPERIMENTS:
        assert dvc_stage.launcher(name) == (["hydra/launcher=fork"] if name in packed else []), name


def test_the_stage_command_says_what_it_does(capsys: pytest.CaptureFixture) -> None:
    """``python -m pipeline.dvc_stage --help``: its usage, exit 0 (it was read as an experiment's name); no
    argument or two: one line, exit 2, nothing run."""
    from pipeline import dvc_stage

    assert dvc_stage.main(["--help"]) == 0
    assert capsys.readouterr().out.startswith("usage: python -m pipeline.dvc_stage EXPERIMENT | --write-dvc-yaml\n")
    for argv in ([], ["perceptron_margin", "worst_case"]):
        assert dvc_stage.main(argv) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and err.startswith("boundlab: error: usage: python -m pipeline.dvc_stage"), err


@pytest.mark.parametrize("name", EXPERIMENTS)
def test_experiment_states_question_and_claims(name: str) -> None:
    cfg = compose_job([f"experiment={name}"])
    assert cfg.name == name and len(str(cfg.question)) > 40
    assert cfg.claims, f"{name}: no claims"
    for claim in cfg.claims:
        assert claim.bound in BOUND_NAMES, f"{name}: unknown bound {claim.bound}"
        assert claim.guarantee == BOUND_NAMES[claim.bound].guarantee, f"{name}/{claim.bound}: wrong guarantee type"
        assert len(str(claim.claim)) > 20


@pytest.mark.parametrize("name", EXPERIMENTS)
def test_both_scales_compose_and_paper_is_larger(name: str) -> None:
    """The jobs are composed as the pre-flight composes them (``hydra_seam.Composer``: Hydra's composition of
    the config-group choices once, each job's plain ``key=value`` overrides applied by Hydra's own code;
    tests/test_compose_once.py checks that equals Hydra's composition of the whole job)."""
    register()
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base=None):
        small = plan_of(["-m", f"experiment={name}"]).jobs
        paper = plan_of(["-m", f"experiment={name}", "scale=paper"]).jobs
        assert 2 <= len(small) < len(paper)
        job_config = composer()
        for job in (small[0], small[-1], paper[-1]):
            build(job_config(job))  # every value valid


@pytest.mark.parametrize("name", EXPERIMENTS)
def test_experiment_runs_tiny_with_every_claimed_bound(name: str) -> None:
    """One tiny run per learner of the small grid (an experiment that sweeps ``algorithm`` claims the bounds of
    every learner it sweeps): together they evaluate every claimed bound, and every (D) bound holds."""
    cfg = compose_job([f"experiment={name}", *TINY])
    swept = str(cfg.grid.small.get("algorithm") or "").split(",")
    tables = [run(build(compose_job([f"experiment={name}", *TINY, *([f"algorithm={a}"] if a else [])]))).table
              for a in swept]
    assert {c.bound for c in cfg.claims} <= set().union(*(set(t["bound"]) for t in tables))
    for table in tables:
        deterministic = table[(table["guarantee"] == "D") & table["applicable"].astype(bool)]
        assert table["applicable"].astype(bool).any() and deterministic["holds"].all()
        # every row as pipeline/judging/columns.py declares it
        assert [(r["bound"], disagreements(r)) for r in table.to_dict("records") if disagreements(r)] == []


def _reduced_small_grid(name: str) -> pd.DataFrame:
    """The experiment's small grid with at most two seeds per setting, run in-process: every setting the
    main job judges, fewer seeds."""
    register()
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base=None):
        jobs = [j for j in plan_of(["-m", f"experiment={name}"]).jobs
                if not any(o.startswith("seed=") and o not in ("seed=0", "seed=1") for o in j)]
        job_config = composer()  # as the pre-flight composes each job (equal to Hydra's: tests/test_config.py)
        tables = [run(build(job_config(job))).table for job in jobs]
    return pd.concat(tables, ignore_index=True)


@pytest.mark.long  # every experiment's small grid, in the test process: minutes, no other process
@pytest.mark.parametrize("name", EXPERIMENTS)
def test_claims_are_true_and_informative_on_the_small_grid(name: str) -> None:
    """Each claim's sentence, checked on its own runs: nothing violated, every claimed bound informative
    somewhere on the grid, and the conditions particular sentences state."""
    from pipeline.judging.verdicts import VIOLATED, judge_claim, summarize

    cfg = compose_job([f"experiment={name}"])
    table = _reduced_small_grid(name)
    metrics = summarize(table)
    for claim in cfg.claims:
        v = judge_claim(name, claim, metrics)
        assert v.status != VIOLATED and not v.fails, (claim.bound, v.text)
        assert v.informative > 0, f"{name}/{claim.bound}: judged on vacuous runs only ({v.text})"
        if claim.get("attains"):
            rows = table[table["bound"] == claim.bound]
            assert (rows["ratio"] == 1.0).all()
    if name == "perceptron_margin":  # "never more than one above Novikoff's"
        wide = table.pivot(index="run", columns="bound", values="theoretical")
        assert (wide["hinge_all_rounds"] <= wide["novikoff"] + 1).all()


# --- The report and the failure path, end to end ------------------------------------------------------

def _env(tmp_path: Path) -> dict[str, str]:
    return {**os.environ, "MLFLOW_TRACKING_URI": migrated_store(tmp_path / "mlflow.db")}


def _workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir(parents=True)
    (ws / "experiments").symlink_to(ROOT / "experiments")
    (ws / "params.yaml").write_text("n: [6]\nrho: [1]\n")  # 2 jobs of perceptron_tight (both tie rules)
    return ws


def _python(*args: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=600)


# The stages' entry functions, in this process: what `python -m pipeline.dvc_stage NAME` and
# `python -m pipeline.outputs.report` run (their __main__ blocks call exactly these).

def _stage(in_process, name: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:  # noqa: ANN001
    from pipeline.dvc_stage import stage

    return in_process(lambda: stage(name), cwd=cwd, env=env)


def _report(in_process, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:  # noqa: ANN001
    from pipeline.outputs.report import main

    return in_process(lambda: main([]), cwd=cwd, env=env)


@pytest.mark.e2e  # a 2-job DVC stage and the report, through their entry points
def test_report_from_a_small_sweep_has_every_claim_and_figure(tmp_path: Path, in_process) -> None:  # noqa: ANN001
    ws, env = _workspace(tmp_path), _env(tmp_path)
    stage = _stage(in_process, "perceptron_tight", cwd=ws, env=env)
    assert stage.returncode == 0, stage.stderr[-3000:]
    report = _report(in_process, cwd=ws, env=env)
    assert report.returncode == 0, report.stdout[-2000:] + report.stderr[-2000:]
    page = (ws / "report" / "index.html").read_text()
    summary = (ws / "report" / "summary.md").read_text()
    verdicts = json.loads((ws / "report" / "verdicts.json").read_text())
    figures = sorted((ws / "results" / "perceptron_tight").glob("*.png"))
    assert figures and (ws / "results" / "perceptron_tight" / f"{figures[0].stem}.svg").exists()
    own = (ws / "report" / "experiments" / "perceptron_tight.html").read_text()
    for fig in figures:  # every figure on the experiment's page, as the report's own copy (self-contained)
        assert f"alt='{fig.stem}' src='../figures/perceptron_tight/{fig.stem}.png'" in own and f"{fig.stem}.png" in summary
        own_copy = ws / "report" / "figures" / "perceptron_tight" / fig.name  # the same figure, as a palette PNG
        with Image.open(own_copy) as copy, Image.open(fig) as drawn:
            assert copy.mode == "P" and copy.size == drawn.size, (copy.mode, copy.size, drawn.size)
        assert own_copy.stat().st_size < fig.stat().st_size and not own_copy.with_suffix(".svg").exists()
    cfg = compose_job(["experiment=perceptron_tight"])
    for claim in cfg.claims:
        assert f"<code>{claim.bound}</code>" in page and f"`{claim.bound}`" in summary
        assert verdicts["verdicts"][f"perceptron_tight/{claim.bound}"] == "holds"
    table = pd.read_parquet(ws / "results" / "perceptron_tight" / "results.parquet")
    assert table["data_hash"].iloc[0] in own and "0 violations in 2 runs (2 informative)" in page
    assert "attained (ratio exactly 1) in every run" in page  # x_t = rho e_t: mistakes = bound = n

    import mlflow

    client = mlflow.MlflowClient(tracking_uri=env["MLFLOW_TRACKING_URI"])
    exp = client.get_experiment_by_name("report")
    (run_,) = client.search_runs([exp.experiment_id])
    assert run_.info.status == "FINISHED" and run_.data.metrics["deterministic_failures"] == 0
    assert {"index.html", "summary.md", "provenance.json"} <= {a.path for a in client.list_artifacts(run_.info.run_id)}
    # what DVC tracks holds only what the computation determines; the circumstances are beside it
    published = sorted(p.name for p in (ws / "results" / "perceptron_tight").iterdir())
    assert all(p.endswith((".parquet", ".json", ".png", ".svg")) for p in published), published
    assert (ws / "multirun" / "dvc" / "perceptron_tight" / "0" / "done.json").exists()
    record = json.loads((ws / "report" / "provenance.json").read_text())
    parent = record["mlflow parent runs"]["perceptron_tight"]
    assert parent and client.get_run(parent).info.status == "FINISHED"
    for text in (page, summary, json.dumps(verdicts)):
        assert record["git commit"] not in text and record["written"] not in text and parent not in text
        assert str(ws) not in text and str(tmp_path) not in text


@pytest.mark.slow  # processes: each with its own hash seed, imports and caches, as two clones' would be
def test_the_tracked_outputs_of_two_fresh_workspaces_are_byte_identical(tmp_path: Path) -> None:
    """What DVC tracks (results/NAME, the report's pages and figures) is the same in two workspaces with
    their own MLflow stores, run ids, paths and times: a fresh clone's ``dvc repro`` reproduces dvc.lock."""
    outputs = []
    for i in range(2):
        ws, env = _workspace(tmp_path / str(i)), _env(tmp_path / str(i))
        for args in (("-m", "pipeline.dvc_stage", "perceptron_tight"), ("-m", "pipeline.outputs.report")):
            done = _python(*args, cwd=ws, env=env)
            assert done.returncode == 0, done.stderr[-3000:]
        tracked = [*(ws / "results").rglob("*"), *(ws / "report").rglob("*")]
        outputs.append({p.relative_to(ws).as_posix(): p.read_bytes() for p in tracked
                        if p.is_file() and p.name not in ("provenance.json", ".lock")})  # .lock: the report's, a pid
    assert len(outputs[0]) > 5 and outputs[0].keys() == outputs[1].keys()
    assert [k for k in outputs[0] if outputs[0][k] != outputs[1][k]] == []


@pytest.mark.e2e
def test_a_broken_learner_fails_the_report_stage_and_shows_in_the_report(tmp_path: Path, in_process,  # noqa: ANN001
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    from pipeline.dvc_stage import run_sweep
    from pipeline.learners.perceptron import Perceptron

    ws, env = _workspace(tmp_path), _env(tmp_path)
    learn = Perceptron.learn_stream

    def broken(self, X, y):  # noqa: ANN001, ANN202 - a Perceptron that counts every step as a mistake
        trace = learn(self, X, y)
        trace[:] = 1
        return trace

    monkeypatch.setattr(Perceptron, "learn_stream", broken)
    sweep = in_process(lambda: run_sweep("perceptron_tight"), cwd=ws, env=env)
    assert sweep.returncode == 1 and "bound(s) violated: " in sweep.stderr and "novikoff (D)" in sweep.stderr, \
        sweep.stderr[-2000:]
    assert "a bug until proven otherwise" in sweep.stderr
    stage = _stage(in_process, "perceptron_tight", cwd=ws, env=env)
    assert stage.returncode == 0 and "BOUND(S) VIOLATED: " in stage.stderr and "novikoff" in stage.stderr, stage.stderr[-2000:]
    report = _report(in_process, cwd=ws, env=env)
    assert report.returncode == 1, report.stdout[-2000:]
    assert "FAILING CLAIMS" in report.stderr and "perceptron_tight/novikoff (D) VIOLATED" in report.stderr
    page = (ws / "report" / "index.html").read_text()
    assert re.search(r'class="violated"[^>]*>VIOLATED</td>', page) and "2 of 2 runs above the bound" in page

    import mlflow

    client = mlflow.MlflowClient(tracking_uri=env["MLFLOW_TRACKING_URI"])
    statuses = {e: {r.info.status for r in client.search_runs([client.get_experiment_by_name(e).experiment_id],
                                                                 filter_string="tags.`boundlab.sweep_id` != ''")}
                for e in ("report",)}
    assert statuses["report"] == {"FAILED"}
    parents = client.search_runs([client.get_experiment_by_name("perceptron_tight").experiment_id],
                                 filter_string="attributes.run_name LIKE 'perceptron_tight sweep%'")
    assert parents and all(r.info.status == "FAILED" for r in parents)


@pytest.mark.slow  # git init, add and commit of a fixture repository, then the git the code runs
def test_the_commit_is_dirty_for_edited_code_but_not_for_the_lock_dvc_rewrites(tmp_path: Path,
                                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    from pipeline import tracking

    git = ["git", "-c", "user.email=t@t", "-c", "user.name=t"]
    (tmp_path / "dvc.lock").write_text("schema: '2.0'\n")
    (tmp_path / "code.py").write_text("x = 1\n")
    for cmd in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "fixture"]):
        subprocess.run([*git, *cmd], cwd=tmp_path, check=True)
    monkeypatch.setattr(tracking.runs, "project_root", lambda: tmp_path)
    commit = getattr(tracking.git_commit, "__wrapped__", tracking.git_commit)  # uncached: the checkout changes here
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=tmp_path, capture_output=True, text=True).stdout.strip()
    assert commit() == head
    (tmp_path / "dvc.lock").write_text("schema: '2.0'\nstages: {}\n")  # what dvc repro does while it runs
    assert commit() == head
    (tmp_path / "code.py").write_text("x = 2\n")
    assert commit() == f"{head}+dirty"


@pytest.mark.slow  # a clone of this repository, then the git the code runs
def test_a_fresh_clone_is_clean_while_dvc_rewrites_the_pipeline_s_outputs(tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """What ``dvc repro`` does to a fresh clone while its stages run (report/claims.json, a git-tracked metrics
    file, deleted before the report stage and written again, possibly different; dvc.lock rewritten) leaves the
    commit clean; an edit to what the runs compute from (code, a config, an experiment) makes it dirty."""
    from pipeline import tracking

    root = Path(tracking.runs.project_root())
    if not (root / ".git").exists():
        pytest.skip("not a git checkout")
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", "--no-hardlinks", str(root), str(clone)], check=True)
    monkeypatch.setattr(tracking.runs, "project_root", lambda: clone)
    commit = getattr(tracking.git_commit, "__wrapped__", tracking.git_commit)
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=clone, capture_output=True, text=True).stdout.strip()
    assert commit() == head
    claims = clone / "report" / "claims.json"
    assert claims.exists()
    claims.unlink()  # dvc repro removes a stage's outputs before it runs
    assert commit() == head
    claims.write_text("{}\n")  # and the stage writes them again
    (clone / "dvc.lock").write_text("schema: '2.0'\n")
    assert commit() == head
    for edited in ("pipeline/cli.py", "conf/config.yaml", "experiments/worst_case.yaml", "dvc.yaml"):
        original = (clone / edited).read_text()
        (clone / edited).write_text(original + "\n# an edit\n")
        assert commit() == f"{head}+dirty", edited
        (clone / edited).write_text(original)
    assert commit() == head
