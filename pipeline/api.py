"""Results from Python: a sweep's or an experiment's tables, verdicts, provenance and figures.

A sweep writes its results into a directory (``multirun/...`` after ``boundlab -m``, or
``results/NAME`` after ``dvc repro``) and logs the same files to its MLflow parent run.
:func:`load` reads either into a :class:`Results`; :func:`experiment` reads ``results/NAME`` of a
checkout together with the experiment's claims. Nothing is recomputed: the verdicts are the sweep's
(``metrics.json``, :func:`pipeline.sweep.callbacks.summary`) and each claim is judged from them as the report
judges it (:func:`pipeline.judging.verdicts.judge_claim`). :meth:`Results.plot` draws any of the report's figures
into a given matplotlib Axes. Neither this module nor :mod:`pipeline.outputs.plots` selects a matplotlib backend
or imports pyplot. See docs/notebook.md.

In a notebook::

    import matplotlib.pyplot as plt
    from pipeline import api

    res = api.experiment("perceptron_margin")          # results/perceptron_margin, with its claims
    res.verdicts                                       # per bound: guarantee, verdict, evidence, counts
    fig, ax = plt.subplots()
    res.plot("novikoff_measured_vs_bound", ax=ax)      # a figure of the report, by its file's stem
"""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping

import pandas as pd

from pipeline.outputs.reading import RESUME, SweepNotFinished, read_results
from pipeline.judging.verdicts import ClaimVerdict, judge_claim

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure, FigureBase

FILES = ("results.parquet", "curves.parquet", "metrics.json")  # what a sweep's directory and parent run hold
_RUN_ID = re.compile(r"^(?:runs:/)?([0-9a-f]{32})/?$")


@dataclass
class Results:
    """One sweep's results, as its directory or MLflow parent run holds them.

    ``table``: one row per (run, bound): settings, measured (``empirical``), bound (``theoretical``),
    ``ratio``, verdict inputs (results.parquet). ``curves``: the measured quantities and anytime bounds
    against step t (run, quantity, t, empirical). ``metrics``: metrics.json as written (per bound its
    verdict and evidence, plus ``runs`` and ``failed_jobs``). ``claim_verdicts``: the experiment's claims,
    judged (empty when its claims are not known). ``provenance``: what is known of how the results were
    made (source, experiment, parent run, overrides, git commit, ...). ``spec``: the experiment's file
    (question, claims, compare), when known.
    """

    table: pd.DataFrame
    curves: pd.DataFrame
    metrics: dict[str, Any]
    provenance: dict[str, Any]
    name: str | None = None
    spec: dict[str, Any] = field(default_factory=dict)
    claim_verdicts: list[ClaimVerdict] = field(default_factory=list)

    @property
    def verdicts(self) -> pd.DataFrame:
        """Per bound (index), the sweep's verdict: guarantee, verdict, evidence, decided_by and the counts."""
        rows = {b: s for b, s in self.metrics.items() if isinstance(s, dict)}
        first = ["guarantee", "verdict", "evidence", "decided_by", "runs", "applicable", "informative"]
        frame = pd.DataFrame.from_dict(rows, orient="index")
        frame.index.name = "bound"
        return frame[[c for c in first if c in frame] + [c for c in frame if c not in first]]

    @property
    def claims(self) -> pd.DataFrame:
        """The experiment's claims with their verdicts (one row per claim; empty when not known): ``claim`` the
        sentence claimed, ``evidence`` the verdict's sentence of evidence (as in :attr:`verdicts`)."""
        columns = ["bound", "guarantee", "status", "evidence", "informative", "runs", "decided_by", "claim"]
        rows = [v.as_dict() for v in self.claim_verdicts]
        for row in rows:  # the verdict's sentence of evidence, named as in :attr:`verdicts`; ``claim``: what is claimed
            row["evidence"] = row.pop("text", "")
        return pd.DataFrame(rows, columns=["experiment", *columns])[columns]

    @property
    def figures(self) -> list[str]:
        """The stems of the report's figures of this sweep (the files the sweep and the report write):
        each can be drawn with :meth:`plot`."""
        return list(self._plan())

    def _plan(self) -> dict[str, tuple[str, dict[str, Any]]]:
        from pipeline.outputs import plots

        plan = {s.stem: (s.kind, s.kwargs) for s in plots.figure_plan(self.table, self.curves)} if len(self.table) else {}
        compare = self.spec.get("compare")
        if compare and self.name and len(self.table):  # the report's own comparison (pipeline.outputs.report.load)
            plan[f"{self.name}_{compare['quantity']}_by_{compare['by']}"] = (
                "compare", {"quantity": compare["quantity"], "by": compare["by"], "x": compare.get("x")})
        return plan

    def plot(self, figure: str, ax: Axes | FigureBase | None = None, **kwargs: Any) -> Figure:
        """Draw ``figure`` into ``ax`` and return the Figure drawn on.

        ``figure``: a stem of :attr:`figures` (e.g. ``"novikoff_measured_vs_bound"``), whose arguments
        ``kwargs`` may override, or a figure function of :data:`pipeline.outputs.plots.KINDS`
        (``"measured_vs_bound"``, ``"curves_vs_bound"``, ``"rate_vs_bound"``, ``"ratio_heatmap"``,
        ``"compare"``) with its arguments, e.g. ``plot("measured_vs_bound", bound="novikoff", ax=ax)``.
        ``ax``: an Axes (for the figures of several panels, the one named by ``panel=``), a Figure or
        SubFigure (every panel), or None (a new Figure). See :mod:`pipeline.outputs.plots`.
        """
        from pipeline.outputs import plots

        plan = self._plan()
        if figure in plan:
            kind, args = plan[figure]
            kwargs = {**args, **kwargs}
        elif figure in plots.KINDS:
            kind = figure
        else:
            raise ValueError(f"no figure {figure!r}: name one of this sweep's figures ({', '.join(plan) or 'none'}) "
                             f"or a figure function ({', '.join(plots.KINDS)})")
        if not len(self.table):
            raise ValueError("the sweep has no results (no job finished): there is nothing to draw")
        return plots.draw(kind, self.table, self.curves, ax=ax, **kwargs)


# --- Loading ---------------------------------------------------------------------------------------------

def load(source: str | os.PathLike[str], *, tracking_uri: str | None = None,
         experiments: str | os.PathLike[str] | None = None, dest: str | os.PathLike[str] | None = None) -> Results:
    """The results of a sweep from its directory or its MLflow parent run.

    ``source``: a directory holding results.parquet, curves.parquet and metrics.json (a sweep directory
    such as ``multirun/NAME``, or an experiment's ``results/NAME``), or the id of a sweep's MLflow parent
    run (32 hex digits, or ``runs:/<id>``), whose artifacts are downloaded (into ``dest``, a new
    temporary directory if None) from the store ``tracking_uri`` (default:
    :func:`pipeline.tracking.tracking_uri`, i.e. ``MLFLOW_TRACKING_URI`` or the project's ``mlflow.db``).

    The experiment's claims are judged when its file is found: ``experiments/NAME.yaml`` in
    ``experiments`` (a directory) if given, else beside the results (``results/NAME`` ->
    ``experiments/NAME.yaml`` of the same checkout), else in the project; a sweep directory's own Hydra
    record (``multirun.yaml``) holds them too.

    Raises :class:`SweepNotFinished` (a FileNotFoundError and a ValueError) for the results of a sweep that
    was interrupted (job directories or tables but no ``metrics.json`` yet) or whose files are damaged (a
    truncated table, a summary that is not a JSON object); its message names the file and ends "the sweep
    did not finish: run the same command to resume it".
    """
    path = Path(source)
    if path.is_dir():
        return _from_directory(path, Path(experiments) if experiments is not None else None)
    found = run_id(source)
    if found:
        return _from_mlflow(found, tracking_uri, Path(experiments) if experiments is not None else None,
                            Path(dest) if dest is not None else None)
    raise FileNotFoundError(f"{source}: neither a directory of sweep results nor an MLflow run id (32 hex digits or runs:/<id>)")


def run_id(source: str | os.PathLike[str]) -> str | None:
    """The MLflow run id ``source`` names (``runs:/<id>`` or the bare 32 hex digits, followed by nothing or by
    whitespace and anything: a sweep directory's ``.boundlab_parent`` holds the parent's id and the sweep's),
    else None.

    >>> run_id("runs:/c0a0834cf432485fb978f05d1eb10cab")
    'c0a0834cf432485fb978f05d1eb10cab'
    >>> run_id("runs:/" + "c0a0834cf432485fb978f05d1eb10cab boundlab-20261129-041500-4242\\n")
    'c0a0834cf432485fb978f05d1eb10cab'
    >>> run_id("results/perceptron_margin") is None
    True
    """
    words = str(source).split()
    match = _RUN_ID.match(words[0]) if words else None
    return match.group(1) if match else None


def experiment(name: str, root: str | os.PathLike[str] = ".") -> Results:
    """Experiment ``name`` of the checkout ``root`` after ``dvc repro``: ``results/NAME`` with the claims of
    ``experiments/NAME.yaml``, and what the stage's sweep (``multirun/dvc/NAME``) and the report
    (``report/provenance.json``) record of its provenance."""
    from pipeline.paths import WORK_DIR

    root = Path(root)
    results = root / "results" / name
    if not results.is_dir():
        raise FileNotFoundError(f"{results}: no results of experiment {name} (run `dvc repro` first)")
    out = _from_directory(results, root / "experiments", sweep_dir=root / WORK_DIR / name,
                          resume=f"{RESUME} (dvc repro {name})")
    record = _report_record(root / "report" / "provenance.json")
    if record:
        out.provenance.setdefault("git commit", record.get("git commit"))
        out.provenance.setdefault("parent run", (record.get("mlflow parent runs") or {}).get(name))
        out.provenance["report written"] = record.get("written")
    return out


def _report_record(path: Path) -> dict[str, Any]:
    """The report's record of its circumstances (``report/provenance.json``), {} when there is none. An
    unreadable one only costs the provenance it adds (the results are whole), so it is a warning, not an error."""
    import warnings

    if not path.exists():
        return {}
    try:
        record = json.loads(path.read_bytes())
    except (OSError, ValueError) as e:
        record = e
    if isinstance(record, dict):
        return record
    warnings.warn(f"{path}: not the report's record (a JSON object); its git commit and parent run are left out: "
                  "run the report again (python -m pipeline.outputs.report)", stacklevel=3)
    return {}


def _name(table: pd.DataFrame, fallback: str | None) -> str | None:
    if "experiment" in table and table["experiment"].nunique() == 1:
        return str(table["experiment"].iloc[0])
    return fallback


def _spec_file(name: str | None, experiments: Path | None, near: Path | None) -> Path | None:
    """``experiments/NAME.yaml``: in ``experiments``, or in the checkout of ``near`` (results/NAME), or the project's."""
    if not name:
        return None
    from pipeline.paths import project_root

    places = [experiments] if experiments is not None else []
    if near is not None:
        places += [p / "experiments" for p in near.resolve().parents[:3]]
    places.append(project_root() / "experiments")
    return next((p / f"{name}.yaml" for p in places if (p / f"{name}.yaml").is_file()), None)


def _spec(path: Path | None) -> dict[str, Any]:
    if path is None:
        return {}
    from omegaconf import OmegaConf

    spec = OmegaConf.to_container(OmegaConf.load(path), resolve=False)
    return spec if isinstance(spec, dict) else {}


def _hydra_record(sweep_dir: Path) -> dict[str, Any]:
    """What a sweep directory's Hydra record (``multirun.yaml``) and parent marker say of the sweep: the parent
    run, the command's overrides, the grid (what the parent run's params record) and the composed config."""
    from pipeline.tracking import read_parent_marker

    out: dict[str, Any] = {}
    marker = read_parent_marker(sweep_dir)
    if marker:
        out["parent run"], out["sweep id"] = marker
    record = sweep_dir / "multirun.yaml"
    if record.exists():
        from omegaconf import OmegaConf

        loaded = OmegaConf.load(record)
        grid = {}
        for key in OmegaConf.select(loaded, "hydra.sweeper.params", default=None) or {}:
            try:  # the experiment's grid names its values through interpolations (grid.${scale}.gamma)
                grid[str(key)] = str(OmegaConf.select(loaded, f"hydra.sweeper.params.{key}"))
            except Exception:  # noqa: BLE001 - a resolver this process lacks: the text as recorded
                grid[str(key)] = str(loaded.hydra.sweeper.params._get_node(key)._value())
        cfg = OmegaConf.to_container(loaded, resolve=False)
        hydra = cfg.pop("hydra", {}) or {}
        out["overrides"] = [str(o) for o in (hydra.get("overrides") or {}).get("task") or []]
        for override in out["overrides"]:  # as the parent run's params record them (pipeline.sweep.callbacks._swept)
            key, _, value = override.lstrip("+~").partition("=")
            if value and not key.startswith("hydra") and key != "force":
                grid[key] = value
        out["grid"] = grid
        out["config"] = cfg  # the sweep's composed config (unresolved)
    return out


def _own_claims(from_file: dict[str, Any], recorded: dict[str, Any], name: str | None,
                overrides: list[str] | None) -> tuple[dict[str, Any], str]:
    """The claims a sweep is judged against: those recorded with it (its composed config, or its parent run's
    description), never an experiment file's claims for a sweep that did not run that experiment; the file's
    only where the sweep recorded nothing (a directory without Hydra's record). Returns the spec and where
    its claims came from."""
    def keys(claims: Any) -> list[tuple[str, str]]:
        return [(str(c.get("bound")), str(c.get("guarantee"))) for c in claims or []]

    if recorded.get("claims"):
        if keys(recorded["claims"]) == keys(from_file.get("claims")):  # the same claims: the file's words (attains, ...)
            return {**recorded, **from_file}, "the experiment file, as recorded with the sweep"
        return {**from_file, **recorded}, "the sweep's own record" + (
            " (the experiment file's claims have changed since)" if from_file.get("claims") else "")
    ran = overrides is None or any(o.lstrip("+~") == f"experiment={name}" for o in overrides)
    if from_file.get("claims") and not ran:
        return {k: v for k, v in {**from_file, **recorded}.items() if k != "claims"}, (
            f"none: the sweep did not run experiment={name}, so that file's claims are not judged")
    if from_file.get("claims"):
        return from_file, "the experiment file"
    return {k: v for k, v in {**from_file, **recorded}.items() if k != "claims" or v}, "none"


def _claims_in(description: str) -> list[dict[str, str]]:
    """The claims a parent run's description lists ('- bound (G): sentence', pipeline.sweep.callbacks._description)."""
    import re

    return [{"bound": m[1], "guarantee": m[2], "claim": m[3]}
            for m in re.finditer(r"^- (\S+) \(([DEP-])\): (.*)$", description.split("\n\nClaims:\n", 1)[-1], re.M)
            ] if "\n\nClaims:\n" in description else []


def _judge(name: str | None, spec: Mapping[str, Any], metrics: Mapping[str, Any]) -> list[ClaimVerdict]:
    return [judge_claim(name or "", c, metrics) for c in spec.get("claims") or []] if metrics else []


def _from_directory(directory: Path, experiments: Path | None, sweep_dir: Path | None = None,
                    resume: str = RESUME) -> Results:
    table, curves, metrics = read_results(directory, resume)
    record = _hydra_record(sweep_dir if sweep_dir is not None else directory)
    config = record.pop("config", {})
    name = _name(table, config.get("name") or (directory.name if sweep_dir is not None else None))
    found = _spec_file(name, experiments, directory)
    spec, claims_from = _own_claims(_spec(found), {k: config[k] for k in ("question", "claims") if config.get(k)},
                                    name, record.get("overrides") if record else None)
    provenance: dict[str, Any] = {"source": str(directory), "experiment": name, "claims from": claims_from,
                                  "question": " ".join(str(spec.get("question") or "").split()) or None,
                                  "experiment file": str(found) if found else None, **record}
    if "data_hash" in table:
        provenance["data hashes"] = sorted(table["data_hash"].astype(str).unique())
    provenance["environment"] = _environment()
    return Results(table, curves, metrics, provenance, name, spec, _judge(name, spec, metrics))


def _environment() -> dict[str, Any]:
    """Python and package versions of this process (what reads the results; the report records the same)."""
    from pipeline.outputs.reading import provenance

    return provenance()


def _download(uri: str, run_id: str, names: list[str], dest: Path) -> None:
    """The parent run's files into ``dest``, each downloaded beside it and renamed into place: an interrupted
    download leaves the previous file (or none), never a truncated one that a later load would read."""
    quiet = os.environ.get("MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR")
    os.environ["MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR"] = "false"  # three small files: no progress bars in a notebook
    from pipeline import files, tracking

    files.clean_stale(dest)  # what a killed download left (named with its pid)
    staging = Path(tempfile.mkdtemp(prefix=".download-", suffix=f".{os.getpid()}.tmp", dir=dest))
    try:
        for name in names:
            tracking.backend(uri).download(uri, run_id, [name], staging)
        for name in names:
            os.replace(staging / name, dest / name)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
        if quiet is None:
            os.environ.pop("MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR", None)
        else:
            os.environ["MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR"] = quiet


def _from_mlflow(run_id: str, tracking_uri: str | None, experiments: Path | None, dest: Path | None) -> Results:
    from pipeline import tracking

    uri = tracking.tracking_uri(tracking_uri) if tracking_uri is None else tracking_uri
    run = tracking.backend(uri).read_parent(uri, run_id)  # a missing SQLite store: FileNotFoundError, none made
    dest = Path(tempfile.mkdtemp(prefix=f"boundlab-{run_id[:8]}-")) if dest is None else dest
    dest.mkdir(parents=True, exist_ok=True)
    present = set(run["files"])
    if not present & set(FILES):
        raise FileNotFoundError(f"MLflow run {run_id} has none of {', '.join(FILES)}: not a finished sweep's parent run")
    resume = f"{RESUME} (parent run {run_id})"
    if "metrics.json" not in present:  # the parent's files are logged after the aggregation: it was interrupted
        raise SweepNotFinished(f"MLflow run {run_id} has {', '.join(sorted(present & set(FILES)))} but no metrics.json; "
                               f"{resume}")
    _download(uri, run_id, sorted(present & set(FILES)), dest)
    table, curves, metrics = read_results(dest, resume)
    tags, experiment_name = run["tags"], run["experiment"]
    name = _name(table, experiment_name)
    found = _spec_file(name, experiments, None)
    description = tags.get("mlflow.note.content", "")
    overrides = tags.get("boundlab.overrides", "").split()
    spec, claims_from = _own_claims(_spec(found), {"claims": _claims_in(description)}, name, overrides)
    question = description.split("\n\nClaims:")[0]
    provenance: dict[str, Any] = {
        "source": f"runs:/{run_id}", "tracking uri": tracking.redact(uri), "experiment": name, "claims from": claims_from,
        "question": " ".join((spec.get("question") or question or "").split()) or None,
        "experiment file": str(found) if found else None, "parent run": run_id,
        "sweep id": tags.get("boundlab.sweep_id"), "status": run["status"],
        "overrides": tags.get("boundlab.overrides", "").split(), "grid": run["params"],
        "git commit": tags.get("boundlab.git_commit"), "sweep dir": tags.get("boundlab.sweep_dir"),
        "downloaded to": str(dest),
    }
    if "data_hash" in table:
        provenance["data hashes"] = sorted(table["data_hash"].astype(str).unique())
    provenance["environment"] = _environment()
    return Results(table, curves, metrics, provenance, name, spec, _judge(name, spec, metrics))
