"""Comparing two commits the way DVC does (docs/reproduce.md, "Comparing two commits").

A temporary git + DVC repository holds a copy of the project cut down to one experiment at a tiny size;
two commits differ in one parameter (the seed). ``dvc metrics diff``, ``dvc exp show`` and
``dvc plots diff`` between them must show the per-bound verdict metrics, the parameters and the figures
of both revisions.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from helpers import copy_project

EXPERIMENT = "perceptron_margin"
BOUNDS = ("novikoff", "hinge_all_rounds", "freund_schapire")
GIT = ["git", "-c", "user.email=t@t", "-c", "user.name=t", "-c", "commit.gpgsign=false"]


def _one_experiment(repo: Path) -> None:
    """dvc.yaml with the single experiment stage, its metrics file and its figures (no report stage)."""
    spec = yaml.safe_load((repo / "dvc.yaml").read_text())
    spec["vars"] = [{"experiments": [EXPERIMENT]}]
    spec["stages"] = {"experiment": spec["stages"]["experiment"]}
    prefix = f"results/{EXPERIMENT}/"
    spec["metrics"] = [m for m in spec["metrics"] if m.startswith(prefix)]
    spec["plots"] = [p for p in spec["plots"] if p.startswith(prefix)]
    assert spec["metrics"] and spec["plots"]
    (repo / "dvc.yaml").write_text(yaml.safe_dump(spec, sort_keys=False))
    (repo / "dvc.lock").unlink(missing_ok=True)


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

    # dvc metrics diff: every bound's verdict (a string, shown as is) and its numbers, old -> new
    diff = json.loads(run(*dvc, "metrics", "diff", "HEAD~1", "--all", "--json").stdout)
    metrics = diff[f"results/{EXPERIMENT}/metrics.json"]
    for bound in BOUNDS:
        assert metrics[f"{bound}.verdict"] == {"old": "holds", "new": "holds"}
        assert metrics[f"{bound}.violations"] == {"old": 0, "new": 0, "diff": 0}
        assert metrics[f"{bound}.informative"]["new"] == 4
        assert set(metrics[f"{bound}.max_ratio"]) == {"old", "new", "diff"}
    assert metrics["runs"] == {"old": 4, "new": 4, "diff": 0}
    # without --all: only what changed, here the ratios and the evidence that quotes the largest
    changed = json.loads(run(*dvc, "metrics", "diff", "HEAD~1", "--json").stdout)[f"results/{EXPERIMENT}/metrics.json"]
    assert changed and all(k.split(".", 1)[0] in BOUNDS for k in changed), changed
    assert any(k.endswith(".max_ratio") and v["diff"] != 0 for k, v in changed.items()), changed
    table = run(*dvc, "metrics", "diff", "HEAD~1", "--all").stdout
    assert "novikoff.verdict" in table and "holds" in table and "novikoff.violations" in table

    # dvc exp show: one row per commit (workspace, HEAD and HEAD~1 with -n 2), params and metrics as columns
    rows = json.loads(run(*dvc, "exp", "show", "-n", "2", "--json").stdout)
    revs = {r["rev"]: r for r in rows}
    assert {"workspace"} < set(revs) and len(rows) == 3
    seeds = []
    for row in rows:
        data = row["data"]
        seeds.append(data["params"]["params.yaml"]["data"]["seed"])
        shown = data["metrics"][f"results/{EXPERIMENT}/metrics.json"]["data"]
        assert shown["novikoff"]["verdict"] == "holds" and shown["novikoff"]["violations"] == 0
    assert seeds == [1, 1, 0]  # the workspace, HEAD, HEAD~1
    csv = run(*dvc, "exp", "show", "-n", "2", "--csv", "--drop", r".*\.(evidence|decided_by|judged_at)$").stdout
    header = csv.splitlines()[0].split(",")
    assert {"novikoff.verdict", "novikoff.violations", "novikoff.max_ratio", "gamma", "seed"} <= set(header), header
    assert "novikoff.evidence" not in header

    # dvc plots diff: one HTML page with each declared figure of both revisions
    out = tmp_path / "plots"
    shown = run(*dvc, "plots", "diff", "HEAD~1", "HEAD", "-o", str(out))
    assert "failed to load" not in shown.stdout + shown.stderr, shown.stdout + shown.stderr
    page = (out / "index.html").read_text()
    for figure in spec_plots(repo):
        assert f"<p>{figure}</p>" in page, figure
        for rev in ("HEAD~1", "HEAD"):
            image = out / "static" / f"{rev}_{figure.replace('/', '_')}"
            assert image.read_bytes()[:4] == b"\x89PNG" and f'src="static/{image.name}"' in page, image
    assert page.count("<img") == 2 * len(spec_plots(repo))


def spec_plots(repo: Path) -> list[str]:
    return yaml.safe_load((repo / "dvc.yaml").read_text())["plots"]
