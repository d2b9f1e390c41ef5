"""Results from Python (pipeline.api): a sweep loaded from its directory and from its MLflow parent run gives
the files' numbers; every figure of the report draws into a given Axes; importing the API leaves the
matplotlib backend alone; the example notebook runs against a tiny sweep."""

from __future__ import annotations

import ast
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from omegaconf import OmegaConf
from helpers import migrated_store
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from pipeline import api
from pipeline.outputs import plots

ROOT = Path(__file__).resolve().parents[1]
NAME = "api_sweep"


@pytest.fixture(scope="module")
def sweep(tmp_path_factory: pytest.TempPathFactory, boundlab_in_process) -> tuple[Path, str]:  # noqa: ANN001
    """A 4-job Perceptron sweep (gamma x rho, one seed) run in this process: its directory and store URI."""
    base = tmp_path_factory.mktemp("api")
    uri = migrated_store(base / "mlflow.db")
    sweep_dir = base / "sweep"
    proc = boundlab_in_process("-m", "gamma=0.1,0.25", "rho=0.5,1", "seed=0", "n=60", "d=4", f"name={NAME}",
                               "question=Does the API read it?", f"hydra.sweep.dir={sweep_dir}", cwd=base,
                               env={**os.environ, "MLFLOW_TRACKING_URI": uri})
    assert proc.returncode == 0, proc.stderr[-3000:]
    return sweep_dir, uri


def _parent(sweep_dir: Path) -> str:
    from pipeline.tracking import read_parent_marker

    found = read_parent_marker(sweep_dir)
    assert found is not None
    return found[0]


def _agrees_with_files(res: api.Results, sweep_dir: Path) -> None:
    pd.testing.assert_frame_equal(res.table, pd.read_parquet(sweep_dir / "results.parquet"))
    pd.testing.assert_frame_equal(res.curves, pd.read_parquet(sweep_dir / "curves.parquet"))
    metrics = json.loads((sweep_dir / "metrics.json").read_text())
    assert res.metrics == metrics
    verdicts = res.verdicts
    assert set(verdicts.index) == {b for b, s in metrics.items() if isinstance(s, dict)} == {
        "novikoff", "hinge_all_rounds", "freund_schapire"}
    for bound, row in verdicts.iterrows():
        assert row["verdict"] == metrics[bound]["verdict"] == "holds"
        assert row["evidence"] == metrics[bound]["evidence"] and row["runs"] == metrics[bound]["runs"] == 4
    assert set(res.figures) >= {p.stem for p in sweep_dir.glob("*.png")}  # the sweep's figures, by their files' stems
    assert res.name == NAME and res.provenance["parent run"] == _parent(sweep_dir)


@pytest.mark.e2e  # reads the module's sweep, run through the command (boundlab_in_process)
def test_load_from_the_sweep_directory_gives_the_files(sweep: tuple[Path, str]) -> None:
    sweep_dir, _ = sweep
    res = api.load(sweep_dir)
    _agrees_with_files(res, sweep_dir)
    assert set(res.figures) == {p.stem for p in sweep_dir.glob("*.png")}
    prov = res.provenance
    assert "n=60" in prov["overrides"] and prov["grid"]["gamma"] == "0.1,0.25" and prov["grid"]["n"] == "60"
    assert prov["question"] == "Does the API read it?" and prov["data hashes"] == sorted(res.table["data_hash"].unique())
    assert prov["environment"]["packages"]["matplotlib"] != "not installed"
    assert res.claim_verdicts == [] and res.claims.empty  # the sweep states no claims


@pytest.mark.e2e  # reads the module's sweep, run through the command (boundlab_in_process)
def test_load_from_the_mlflow_parent_run_downloads_the_same(sweep: tuple[Path, str], tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    sweep_dir, uri = sweep
    parent = _parent(sweep_dir)
    res = api.load(f"runs:/{parent}", tracking_uri=uri, dest=tmp_path / "downloaded")
    _agrees_with_files(res, sweep_dir)
    assert sorted(p.name for p in (tmp_path / "downloaded").iterdir()) == sorted(api.FILES)
    import mlflow

    tags = mlflow.MlflowClient(tracking_uri=uri).get_run(parent).data.tags
    prov = res.provenance
    assert prov["git commit"] == tags["boundlab.git_commit"] and prov["sweep id"] == tags["boundlab.sweep_id"]
    assert prov["status"] == "FINISHED" and "n=60" in prov["overrides"] and prov["question"] == "Does the API read it?"
    assert prov["grid"] == api.load(sweep_dir).provenance["grid"]  # the parent's params, as the directory records them
    monkeypatch.setenv("MLFLOW_TRACKING_URI", uri)  # the default store: pipeline.tracking.tracking_uri
    again = api.load(parent)
    pd.testing.assert_frame_equal(again.table, res.table)
    assert Path(again.provenance["downloaded to"]).is_dir()


def test_load_refuses_what_is_not_a_sweep(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="not a sweep's results"):
        api.load(tmp_path)
    with pytest.raises(FileNotFoundError, match="neither a directory"):
        api.load(tmp_path / "missing")
    with pytest.raises(FileNotFoundError, match="no MLflow store"):  # and no empty store made by reading one
        api.load("0" * 32, tracking_uri=f"sqlite:///{tmp_path / 'none.db'}")
    assert not (tmp_path / "none.db").exists()


def _cut_short(path: Path) -> None:
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


def _unlink(*names: str):  # noqa: ANN202
    return lambda d: [(d / n).unlink() for n in names]


# an interrupted or damaged sweep: how it is made from a finished one, and what the message must say
UNFINISHED = {
    "job directories only": (_unlink("results.parquet", "curves.parquet", "metrics.json"),
                             "job directories but no results.parquet or metrics.json yet"),
    "tables but no summary": (_unlink("metrics.json"), "results.parquet and curves.parquet but no metrics.json"),
    "summary cut short": (lambda d: _cut_short(d / "metrics.json"), "metrics.json: not valid JSON, perhaps cut short"),
    "summary not JSON": (lambda d: (d / "metrics.json").write_text("runs: 4\n"), "metrics.json: not valid JSON"),
    "summary not an object": (lambda d: (d / "metrics.json").write_text('"done"\n'),
                              "metrics.json: holds a JSON str, not a sweep's summary (an object)"),
    "table cut short": (lambda d: _cut_short(d / "results.parquet"), "results.parquet: not a whole Parquet table"),
    "curves cut short": (lambda d: _cut_short(d / "curves.parquet"), "curves.parquet: not a whole Parquet table"),
    "table missing": (_unlink("results.parquet"), "metrics.json counts 4 runs but results.parquet is missing"),
}


@pytest.mark.e2e  # reads the module's sweep, run through the command (boundlab_in_process)
@pytest.mark.parametrize("case", list(UNFINISHED))
def test_an_interrupted_or_damaged_sweep_is_one_clear_exception(case: str, sweep: tuple[Path, str],
                                                                tmp_path: Path) -> None:
    """Not a pandas or json traceback: SweepNotFinished (a FileNotFoundError and a ValueError), one line naming
    what is missing or damaged and how to finish the sweep."""
    directory = tmp_path / "sweep"
    shutil.copytree(sweep[0], directory, symlinks=True)
    breaks, fragment = UNFINISHED[case]
    breaks(directory)
    with pytest.raises(api.SweepNotFinished) as caught:
        api.load(directory)
    message = str(caught.value)
    assert fragment in message and message.startswith(str(directory)) and "\n" not in message
    assert message.endswith("the sweep did not finish: run the same command to resume it")
    assert isinstance(caught.value, FileNotFoundError) and isinstance(caught.value, ValueError)


@pytest.mark.e2e  # reads the module's sweep, run through the command (boundlab_in_process)
def test_an_experiments_damaged_results_name_its_stage(sweep: tuple[Path, str], tmp_path: Path) -> None:
    results = tmp_path / "results" / NAME
    results.mkdir(parents=True)
    for name in api.FILES:
        shutil.copyfile(sweep[0] / name, results / name)
    _cut_short(results / "metrics.json")
    with pytest.raises(api.SweepNotFinished, match=rf"{NAME}/metrics.json: not valid JSON.*run the same command to "
                                                   rf"resume it \(dvc repro {NAME}\)$"):
        api.experiment(NAME, root=tmp_path)


@pytest.mark.e2e  # reads the module's sweep, run through the command (boundlab_in_process)
def test_a_damaged_report_record_is_a_warning_not_an_error(sweep: tuple[Path, str], tmp_path: Path) -> None:
    """report/provenance.json only adds provenance: the results are whole, so they are still read."""
    results = tmp_path / "results" / NAME
    results.mkdir(parents=True)
    for name in api.FILES:
        shutil.copyfile(sweep[0] / name, results / name)
    (tmp_path / "report").mkdir()
    (tmp_path / "report" / "provenance.json").write_text('{"git commit": "abc')
    with pytest.warns(UserWarning, match=r"provenance.json: not the report's record.*run the report again"):
        res = api.experiment(NAME, root=tmp_path)
    assert "report written" not in res.provenance
    # the results themselves are read whole: every row of the sweep's table, as written
    written = pd.read_parquet(results / "results.parquet")
    assert len(res.table) == len(written) > 0 and set(res.table["run"]) == set(written["run"])


@pytest.mark.e2e  # reads the module's sweep, run through the command (boundlab_in_process)
def test_a_parent_run_without_its_summary_is_an_unfinished_sweep(sweep: tuple[Path, str], tmp_path: Path) -> None:
    """A parent run whose aggregation was interrupted after logging its table: no metrics.json to judge by."""
    import mlflow

    sweep_dir, uri = sweep
    client = mlflow.MlflowClient(tracking_uri=uri)
    run = client.create_run(client.get_experiment_by_name(NAME).experiment_id, run_name="interrupted")
    client.log_artifact(run.info.run_id, str(sweep_dir / "results.parquet"))
    with pytest.raises(api.SweepNotFinished, match=rf"MLflow run {run.info.run_id} has results.parquet but no "
                                                   rf"metrics.json; the sweep did not finish: .*\(parent run "):
        api.load(run.info.run_id, tracking_uri=uri, dest=tmp_path / "downloaded")


@pytest.mark.e2e  # reads the module's sweep, run through the command (boundlab_in_process)
def test_experiment_reads_results_with_its_claims_and_provenance(sweep: tuple[Path, str], tmp_path: Path) -> None:
    """A checkout after `dvc repro`: results/NAME, experiments/NAME.yaml, the stage's sweep dir and the report's record."""
    sweep_dir, _ = sweep
    results = tmp_path / "results" / NAME
    results.mkdir(parents=True)
    for name in api.FILES:
        shutil.copyfile(sweep_dir / name, results / name)
    (tmp_path / "experiments").mkdir()
    (tmp_path / "experiments" / f"{NAME}.yaml").write_text(
        "name: api_sweep\nquestion: Does it hold?\n"
        "claims:\n  - {bound: novikoff, guarantee: D, claim: mistakes <= (R/gamma)^2}\n"
        "  - {bound: pegasos_expectation, guarantee: E, claim: never ran here}\n"
        "compare: {quantity: mistakes, by: gamma}\n")
    stage = tmp_path / "multirun" / "dvc" / NAME
    stage.mkdir(parents=True)
    shutil.copyfile(sweep_dir / ".boundlab_parent", stage / ".boundlab_parent")
    shutil.copyfile(sweep_dir / "multirun.yaml", stage / "multirun.yaml")
    (tmp_path / "report").mkdir()
    (tmp_path / "report" / "provenance.json").write_text(json.dumps({"git commit": "abc123", "written": "then"}))
    # the sweep bears the experiment's name but did not run it: the file's claims are not its claims
    unrelated = api.experiment(NAME, root=tmp_path)
    assert unrelated.claims.empty and "did not run experiment=api_sweep" in unrelated.provenance["claims from"]
    # the stage's sweep of the experiment (its record says experiment=NAME): judged against the file's claims
    record = OmegaConf.load(stage / "multirun.yaml")
    record.hydra.overrides.task = [*record.hydra.overrides.task, f"experiment={NAME}"]
    OmegaConf.save(record, stage / "multirun.yaml")

    res = api.experiment(NAME, root=tmp_path)
    _agrees_with_files(res, sweep_dir)
    claims = res.claims
    assert list(claims["bound"]) == ["novikoff", "pegasos_expectation"]
    assert list(claims["status"]) == ["holds", "not applicable"]
    assert claims["evidence"].iloc[0] == res.metrics["novikoff"]["evidence"] and "text" not in claims
    assert res.provenance["git commit"] == "abc123" and res.provenance["question"] == "Does it hold?"
    assert f"{NAME}_mistakes_by_gamma" in res.figures  # the report's comparison (pipeline.outputs.report.load)
    fig = res.plot(f"{NAME}_mistakes_by_gamma")
    assert isinstance(fig, Figure) and fig.axes[0].collections
    with pytest.raises(FileNotFoundError, match="dvc repro"):
        api.experiment("nothing_here", root=tmp_path)


def _drew(ax: Axes) -> bool:
    return bool(ax.get_lines() or ax.collections or ax.images)


@pytest.mark.e2e  # reads the module's sweep, run through the command (boundlab_in_process)
def test_every_figure_of_the_sweep_draws_into_the_given_axes(sweep: tuple[Path, str]) -> None:
    res = api.load(sweep[0])
    kinds = set()
    for stem in res.figures:
        fig = Figure()
        left, right = fig.subplots(1, 2)
        kind = dict((s.stem, s.kind) for s in plots.figure_plan(res.table, res.curves))[stem]
        kinds.add(kind)
        extra = {"panel": 0} if kind == "curves_vs_bound" else {}
        assert res.plot(stem, ax=right, **extra) is fig
        assert _drew(right) and right.get_title() and not _drew(left) and not left.get_title(), stem
        assert len(fig.axes) == (3 if kind == "ratio_heatmap" else 2), stem  # a heatmap adds its colour bar only
        assert tuple(fig.get_size_inches()) == tuple(Figure().get_size_inches())  # the caller's figure, as it was
    assert kinds == {"measured_vs_bound", "curves_vs_bound", "ratio_heatmap"}
    ax = Figure().subplots()
    res.plot("measured_vs_bound", bound="novikoff", ax=ax)  # a figure function by name, with its arguments
    assert ax.get_xlabel().startswith("Novikoff bound") and ax.get_ylabel() == "measured mistakes"
    assert len(ax.collections) >= 4  # the runs' points (and the violation region)


@pytest.mark.e2e  # reads the module's sweep, run through the command (boundlab_in_process)
def test_a_panel_of_the_curves_goes_into_an_axes_and_every_panel_into_a_figure(sweep: tuple[Path, str]) -> None:
    res = api.load(sweep[0])
    ax = Figure().subplots()
    with pytest.raises(ValueError, match="4 panels.*0: gamma=0.1, rho=0.5"):
        res.plot("novikoff_curves", ax=ax)
    res.plot("novikoff_curves", ax=ax, panel={"gamma": 0.25, "rho": 1})
    assert ax.get_title().endswith("γ = 0.25, ρ = 1") and ax.get_legend() is not None
    (run,) = res.table.query("bound == 'novikoff' and gamma == 0.25 and rho == 1")["run"]
    mistakes = res.curves.query("run == @run and quantity == 'mistakes'")
    assert list(ax.get_lines()[0].get_ydata()) == list(mistakes["empirical"])  # that setting's run
    with pytest.raises(ValueError, match="not lam"):
        res.plot("novikoff_curves", ax=Figure().subplots(), panel={"lam": 1})
    fig = Figure()
    sub = fig.subfigures(1, 2)[1]
    assert res.plot("novikoff_curves", ax=sub) is fig
    assert len(sub.axes) == 4 and all(_drew(a) for a in sub.axes) and not sub.axes[0].get_legend()
    assert sub.legends and sub._suptitle is not None  # the figure's legend and title, in the subfigure
    assert res.plot("novikoff_curves").axes  # a new figure of every panel, as the pipeline saves it


@pytest.mark.e2e  # reads the module's sweep, run through the command (boundlab_in_process)
def test_the_pipeline_saves_figures_without_pyplot(sweep: tuple[Path, str], tmp_path: Path) -> None:
    """sweep_figures draws the plan's figures with no backend; the files are the sweep's, byte for byte."""
    res = api.load(sweep[0])
    paths = plots.sweep_figures(res.table, res.curves, tmp_path)
    assert sorted(p.name for p in paths) == sorted(p.name for p in [*sweep[0].glob("*.png"), *sweep[0].glob("*.svg")])
    for p in paths:
        assert p.read_bytes() == (sweep[0] / p.name).read_bytes(), p.name


def test_plots_and_api_neither_select_a_backend_nor_import_pyplot() -> None:
    for module in ("outputs/plots", "api"):
        tree = ast.parse((ROOT / "pipeline" / f"{module}.py").read_text())
        names = {a.name for n in ast.walk(tree) if isinstance(n, (ast.Import, ast.ImportFrom)) for a in n.names}
        modules = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
        calls = {ast.unparse(n.func) for n in ast.walk(tree) if isinstance(n, ast.Call)}
        assert "matplotlib.pyplot" not in names | modules and "matplotlib.use" not in calls, module


@pytest.mark.slow
def test_importing_plots_and_api_leaves_the_backend_alone() -> None:
    """A fresh interpreter whose backend is not Agg (MPLBACKEND, as a notebook's kernel sets it)."""
    code = ("import sys, matplotlib\n"
            "before = matplotlib.rcParams._get_backend_or_none()\n"
            "import pipeline.outputs.plots, pipeline.api\n"
            "print(before, matplotlib.rcParams._get_backend_or_none(), 'matplotlib.pyplot' in sys.modules)\n")
    env = {**os.environ, "MPLBACKEND": "pdf", "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.split() == ["pdf", "pdf", "False"]


@pytest.mark.slow
def test_the_example_notebook_runs_against_a_tiny_sweep(sweep: tuple[Path, str], tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    source = ROOT / "examples" / "results_in_a_notebook.ipynb"
    nb = nbformat.read(source, as_version=4)
    assert not any(c.get("outputs") or c.get("execution_count") for c in nb.cells if c.cell_type == "code")  # stored clean
    monkeypatch.setenv("BOUNDLAB_RESULTS", str(sweep[0]))
    monkeypatch.setenv("BOUNDLAB_BOUND", "novikoff")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    nbclient.NotebookClient(nb, timeout=300, kernel_name="python3",
                            resources={"metadata": {"path": str(tmp_path)}}).execute()
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs]
    assert not [o for o in outputs if o.output_type == "error"]
    text = "".join(o.get("text", "") for o in outputs if o.output_type == "stream")
    line = next(line for line in text.splitlines() if line.startswith("largest measured/bound of novikoff: "))
    table = pd.read_parquet(sweep[0] / "results.parquet")
    assert float(line.rsplit(": ", 1)[1]) == table.loc[table["bound"] == "novikoff", "ratio"].max()
    shown = "".join(o["data"].get("text/plain", "") for o in outputs if o.output_type == "execute_result")
    assert "holds" in shown and "novikoff" in shown  # the verdict table
    images = [o for o in outputs if o.output_type == "display_data" and "image/png" in o.get("data", {})]
    assert len(images) == 1  # the figure, drawn into the notebook's Axes by its own (inline) backend
