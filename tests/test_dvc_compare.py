"""Comparing two commits the way DVC does (docs/reproduce.md, "Comparing two commits").

A temporary git + DVC repository holds a copy of the project cut down to one experiment at a tiny size and the
report; two commits differ in one parameter (the seed). ``dvc metrics diff``, ``dvc exp show`` and ``dvc plots
diff`` between them must show each claim's verdict line (report/claims.json), the parameters and the figures of
both revisions; a third commit (margins so small that Novikoff's bound is vacuous in every run) changes a
verdict, and ``dvc metrics diff`` shows it. The same commands on this repository itself keep within a terminal:
``dvc exp show`` at most 80 columns, ``dvc metrics diff`` lines at most 160 characters.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from helpers import copy_project

EXPERIMENT = "perceptron_margin"
GIT = ["git", "-c", "user.email=t@t", "-c", "user.name=t", "-c", "commit.gpgsign=false"]


ROOT = Path(__file__).resolve().parents[1]
DROP = "^(pipeline|conf|constraints.txt|results|experiments)$|^experiments/"  # docs/reproduce.md: the dependencies
BOUNDS = ("novikoff", "hinge_all_rounds")  # the experiment's claims


def _one_experiment(repo: Path) -> None:
    """dvc.yaml with the single experiment's stage, the report (its claims.json the metrics) and the
    experiment's figures."""
    spec = yaml.safe_load((repo / "dvc.yaml").read_text())
    spec["stages"] = {EXPERIMENT: spec["stages"][EXPERIMENT], "report": spec["stages"]["report"]}
    spec["plots"] = [p for p in spec["plots"] if p.startswith(f"results/{EXPERIMENT}/")]
    assert spec["plots"]
    (repo / "dvc.yaml").write_text(yaml.safe_dump(spec, sort_keys=False))
    (repo / "dvc.lock").unlink(missing_ok=True)
    (repo / "report" / "claims.json").unlink(missing_ok=True)
    (repo / "report" / "counts.json").unlink(missing_ok=True)


@pytest.mark.slow  # git and DVC subprocesses, two DVC runs of one tiny sweep
def test_metrics_exp_and_plots_diff_between_two_commits(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    copy_project(repo)
    assert (repo / ".dvc" / "config").exists()  # tracked: no `dvc init`
    _one_experiment(repo)
    # a 2 x 2 grid over gamma and d (the heatmap needs both swept), one seed, 100 points: 4 runs
    params = {"scale": "small", "gamma": [0.1, 0.2], "rho": None, "seed": 0, "n": 100, "d": [2, 5]}
    (repo / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    bindir = Path(sys.executable).parent
    env = {**os.environ, "MLFLOW_TRACKING_URI": f"sqlite:///{tmp_path / 'mlflow.db'}",
           "PATH": f"{bindir}{os.pathsep}{os.environ['PATH']}", "DVC_NO_ANALYTICS": "1"}
    env.pop("PYTHONPATH", None)  # the stage's `python -m pipeline.dvc_stage` imports the copy's package
    dvc = [str(bindir / "dvc")]

    def run(*cmd: str) -> subprocess.CompletedProcess[str]:
        proc = subprocess.run(list(cmd), cwd=repo, env=env, capture_output=True, text=True, timeout=600)
        assert proc.returncode == 0, f"{' '.join(cmd)}\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
        return proc

    run(*GIT, "init", "-q")
    run(*GIT, "add", "-A")
    run(*GIT, "commit", "-qm", "seed 0")
    run(*dvc, "repro")
    run(*GIT, "add", "-A")
    run(*GIT, "commit", "-qm", "results of seed 0")
    assert run(*GIT, "status", "--porcelain").stdout == ""  # results/ is DVC's (.gitignore), dvc.lock is git's

    # the second commit: another seed (other data, other mistakes), so the counts and ratios change
    params["seed"] = 1
    (repo / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    run(*dvc, "repro")
    run(*GIT, "add", "-A")
    run(*GIT, "commit", "-qm", "seed 1")

    # dvc metrics diff: each claim's line (verdict, informative share, largest ratio), old -> new
    claim_by_claim = ("--targets", "report/claims.json")
    diff = json.loads(run(*dvc, "metrics", "diff", "HEAD~1", "--all", "--json", *claim_by_claim).stdout)
    claims = diff["report/claims.json"]
    assert set(claims) == {f"{EXPERIMENT}/{b}" for b in BOUNDS}, claims
    for bound in BOUNDS:
        line = claims[f"{EXPERIMENT}/{bound}"]
        assert line["old"].startswith("holds ") and re.fullmatch(r"holds \d+/\d+ max [0-9.e+-]+", line["new"]), line
    # without --all: only what changed (another seed: other mistakes, so other ratios)
    changed = json.loads(run(*dvc, "metrics", "diff", "HEAD~1", "--json", *claim_by_claim).stdout)["report/claims.json"]
    assert changed and all(v["old"] != v["new"] for v in changed.values()), changed
    table = run(*dvc, "metrics", "diff", "HEAD~1", "--all", *claim_by_claim).stdout
    assert f"{EXPERIMENT}/novikoff" in table and "holds " in table
    assert max(len(line) for line in table.splitlines()) <= 160, table

    # dvc exp show: one row per commit (workspace, HEAD and HEAD~1 with -n 2), params and claims as columns
    rows = json.loads(run(*dvc, "exp", "show", "-n", "2", "--json").stdout)
    revs = {r["rev"]: r for r in rows}
    assert {"workspace"} < set(revs) and len(rows) == 3
    seeds = []
    for row in rows:
        data = row["data"]
        seeds.append(data["params"]["params.yaml"]["data"]["seed"])
        shown = data["metrics"]["report/counts.json"]["data"]
        assert shown["claims"] == len(BOUNDS) and shown["hold"] + shown["inconclusive"] == len(BOUNDS), shown
        assert "report/claims.json" not in data["metrics"]  # one column per claim does not fit a terminal
    assert seeds == [1, 1, 0]  # the workspace, HEAD, HEAD~1 (before the third commit)
    header = run(*dvc, "exp", "show", "-n", "2", "--csv").stdout.splitlines()[0].split(",")
    assert {"claims", "hold", "inconclusive", "failing", "gamma", "seed"} <= set(header), header

    # a commit that changes a verdict: margins so small that Novikoff's bound exceeds the n = 100 mistakes any run
    # can make, in every run: the bound says nothing there, and its claim goes from "holds" to "inconclusive"
    params["gamma"] = [0.02, 0.03]
    (repo / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    run(*dvc, "repro")
    run(*GIT, "add", "-A")
    run(*GIT, "commit", "-qm", "margins below 1/sqrt(n)")
    changed = json.loads(run(*dvc, "metrics", "diff", "HEAD~1", "--json", *claim_by_claim).stdout)["report/claims.json"]
    novikoff = changed[f"{EXPERIMENT}/novikoff"]
    assert novikoff["old"].startswith("holds ") and novikoff["new"].startswith("inconclusive "), novikoff
    counts = json.loads(run(*dvc, "metrics", "diff", "HEAD~1", "--json").stdout)["report/counts.json"]
    assert counts["hold"]["diff"] == -1 and counts["inconclusive"]["diff"] == 1, counts
    shown = run(*dvc, "metrics", "diff", "HEAD~1", *claim_by_claim).stdout
    print(shown)  # docs/reproduce.md quotes it
    assert "inconclusive" in shown and max(len(line) for line in shown.splitlines()) <= 160, shown

    # dvc plots diff: one HTML page with each declared figure of both revisions
    out = tmp_path / "plots"
    shown = run(*dvc, "plots", "diff", "HEAD~2", "HEAD~1", "-o", str(out))
    assert "failed to load" not in shown.stdout + shown.stderr, shown.stdout + shown.stderr
    page = (out / "index.html").read_text()
    for figure in spec_plots(repo):
        assert f"<p>{figure}</p>" in page, figure
        for rev in ("HEAD~2", "HEAD~1"):
            image = out / "static" / f"{rev}_{figure.replace('/', '_')}"
            assert image.read_bytes()[:4] == b"\x89PNG" and f'src="static/{image.name}"' in page, image
    assert page.count("<img") == 2 * len(spec_plots(repo))


def spec_plots(repo: Path) -> list[str]:
    return yaml.safe_load((repo / "dvc.yaml").read_text())["plots"]


@pytest.mark.slow  # DVC reads this repository's dvc.lock, params and claims.json
def test_this_repositorys_comparison_fits_a_terminal() -> None:
    """On the main job itself: ``dvc exp show`` has the claims' counts (not a column per claim) and, with the
    docs' ``--drop`` of the dependencies, fits 160 characters; ``dvc metrics diff --all --targets
    report/claims.json`` (HEAD against the workspace) prints every claim in lines of at most 160."""
    bindir = Path(sys.executable).parent
    env = {**os.environ, "DVC_NO_ANALYTICS": "1", "PATH": f"{bindir}{os.pathsep}{os.environ['PATH']}"}

    def run(*cmd: str) -> str:
        proc = subprocess.run([str(bindir / "dvc"), *cmd], cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
        assert proc.returncode == 0, proc.stderr[-3000:]
        return proc.stdout

    claims = json.loads((ROOT / "report" / "claims.json").read_text())
    header = run("exp", "show", "--csv", "-n", "1").splitlines()[0].split(",")
    shown = [c for c in header if c not in ("rev", "typ", "parent")]  # the CSV's own columns, not the table's
    # 5 counts, 6 params, the stages' dependencies (one per experiment file) and the bookkeeping: not a column per claim
    assert {"claims", "hold", "inconclusive", "failing"} <= set(header) and not set(claims) & set(header), header
    assert len(shown) <= 5 + 6 + len(list((ROOT / "experiments").glob("*.yaml"))) + 6, (len(shown), shown)
    # the table's natural width (Markdown: every cell whole, whatever the terminal), without the dependencies
    dropped = run("exp", "show", "-n", "1", "--no-pager", "--md", "--drop", DROP)
    assert max(len(line) for line in dropped.splitlines()) <= 160, dropped
    table = run("metrics", "diff", "HEAD", "--all", "--targets", "report/claims.json")
    assert all(name in table for name in claims)
    assert max(len(line) for line in table.splitlines()) <= 160
