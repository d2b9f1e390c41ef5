"""The Hydra job: one learner on one dataset, built, run, written, tracked and marked done (:func:`job`).

``pipeline.cli`` calls it; it reads what the command tells it from the sweep context (``pipeline.sweep.context``)
and never imports the command itself. The DVC stage is ``pipeline.dvc_stage``.
"""

from __future__ import annotations

import contextlib
import json
import logging
import re
import sys
import traceback
from pathlib import Path
from typing import Any

import numpy as np
from omegaconf import DictConfig, OmegaConf

from pipeline.sweep import context as sweep
from pipeline.sweep.life import Life, Place
from pipeline.judging.guarantees import PER_RUN, guarantee

log = logging.getLogger("boundlab")


def flatten(d: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in d.items():
        if isinstance(v, dict):
            out |= flatten(v, f"{prefix}{k}.")
        else:
            out[f"{prefix}{k}"] = v
    return out


# Why a sweep's finished job runs again, in the cases an edit or a new value is meant to cause (pipeline.job.markers):
# said in the job's one line rather than in a warning of its own (the rest, e.g. an interrupted run, warn).
EXPECTED_RERUN = ("its config changed", "the code it runs", "its input file(s) changed")

# Overrides that name, describe or steer the sweep rather than choose the run's parameters.
NOT_PARAMETERS = ("hydra", "experiment=", "force=", "name=", "question=", "tracking.", "scale=", "log.")


def run_name(learner: str, overrides: Any) -> str:
    """The learner and the parameters the command chose, e.g. 'perceptron gamma=0.1 seed=0': the name a
    job's log lines and MLflow run carry. Short enough for MLflow's runs table: a group's key without its
    group (``cost=absolute``, not ``algorithm.cost=absolute``; the run's params keep the full names) and
    no ``algorithm=`` that repeats the learner.

    >>> run_name("multiclass_pegasos", ["algorithm=multiclass_pegasos", "algorithm.cost=absolute", "lam=0.1", "seed=2"])
    'multiclass_pegasos cost=absolute lam=0.1 seed=2'
    """
    chosen = []
    for o in overrides:
        if o.lstrip("+~").startswith(NOT_PARAMETERS):
            continue
        key, _, value = o.lstrip("+~").partition("=")
        if key == "algorithm" and value == learner:
            continue
        group, dot, rest = key.partition(".")
        chosen.append(f"{rest if dot and group in ('algorithm', 'dataset') else key}={value}")
    return " ".join([learner, *chosen])


def bounds_summary(table: Any, most: int = 4) -> str:
    """A job's bounds in a few words, for a sweep's one line per job: how many hold, and by name those
    VIOLATED (always, each, with the numbers), straddled, above their bound (P), not applicable or vacuous
    (the first ``most`` of these), e.g. '3 bounds: 3 hold; 1 vacuous: novikoff'. A bound measured on several
    parts (a class each) is named once with the number of its parts. ``log.bounds=true`` logs each row."""
    groups: dict[str, list[tuple[str, str]]] = {k: [] for k in ("straddles", "hold", "within", "above", "over seeds",
                                                                 "not applicable", "vacuous")}
    violated: list[str] = []
    for row in table.itertuples():
        part = getattr(row, "part", None)
        label = (str(row.bound), part if isinstance(part, str) else "")
        if not row.applicable:
            groups["not applicable"].append(label)
            continue
        kind = guarantee(row.guarantee)
        if kind.per_run:
            straddles = getattr(row, "straddles", None)
            if row.holds:
                groups["hold"].append(label)
            elif isinstance(straddles, (bool, np.bool_)) and straddles:  # None or NaN: a table without the column
                groups["straddles"].append(label)
            else:
                violated.append(f"{label[0]}{f' [{label[1]}]' if label[1] else ''} ({row.quantity} {row.empirical:g} "
                                f"vs {row.theoretical:g})")
        elif kind.on_the_rate:
            groups["within" if row.holds else "above"].append(label)
        else:  # (E): judged over seeds, by the sweep
            groups["over seeds"].append(label)
        if not row.informative:
            groups["vacuous"].append(label)

    def names(labels: list[tuple[str, str]], cap: int | None = most) -> str:
        counts: dict[str, list[str]] = {}
        for bound, part in labels:
            counts.setdefault(bound, []).append(part)
        named = [f"{b} [{parts[0]}]" if len(parts) == 1 and parts[0] else f"{b} [{len(parts)} parts]" if len(parts) > 1
                 else b for b, parts in counts.items()]
        if cap is not None and len(named) > cap:
            named = [*named[:cap], f"{len(named) - cap} more"]
        return ", ".join(named)

    words = []
    if violated:  # never shortened: each violated bound by name, with what was measured
        words.append(f"VIOLATED: {', '.join(violated)}")
    if groups["straddles"]:
        words.append(f"straddling the bound (measured above it, its lower estimate not): {names(groups['straddles'], None)}")
    for key, what in (("hold", "hold"), ("within", "within the bound (P)")):
        if groups[key]:
            words.append(f"{len(groups[key])} {'holds' if what == 'hold' and len(groups[key]) == 1 else what}")
    if groups["above"]:
        words.append(f"above the bound (P, counted against delta): {names(groups['above'], None)}")
    if groups["over seeds"]:
        words.append(f"{len(groups['over seeds'])} judged over seeds (E)")
    if groups["not applicable"]:
        words.append(f"{len(groups['not applicable'])} not applicable: {names(groups['not applicable'])}")
    head = f"{len(table)} bound{'' if len(table) == 1 else 's'}: {', '.join(words)}" if len(table) else "no bounds"
    vacuous = groups["vacuous"]
    return head + (f"; {len(vacuous)} vacuous: {names(vacuous)}" if vacuous else "")


def write(result: Any, out: Path) -> list[Path]:
    """Write a run's tables, trace and data into its output directory; return what to log."""
    out.mkdir(parents=True, exist_ok=True)
    table, curve, trace = out / "results.parquet", out / "curve.parquet", out / "trace.npz"
    result.table.to_parquet(table, index=False)
    result.curve.to_parquet(curve, index=False)
    np.savez_compressed(trace, **result.trace)
    from pipeline.job.markers import save_data

    if result.dataset.kind != "stream":  # a stream is regenerated from its seed, not saved
        save_data(out / "data.npz", result.dataset.X, result.dataset.y)
    return [table, curve, trace]


_store_said: set[str] = set()  # the sweeps (their directories) for which this process has said the job store cannot be used


def redact_saved(directory: Path) -> None:
    """Hide credentials (``pipeline.tracking.redact``) in the config files Hydra saved in ``directory``."""
    from pipeline import files, tracking

    for path in sorted(directory.glob("*.yaml")) if directory.is_dir() else ():
        text = path.read_text()
        if tracking.redact(text) != text:
            files.write_text(path, tracking.redact(text))


def _name_of_error(e: BaseException) -> str:
    return f"{type(e).__name__}: {e}"


FAILURE = "error.json"  # beside error.txt: the failure's kind, read at the sweep's end (pipeline.sweep.callbacks.failures)
_RANGE = re.compile(r"^bound (?P<bound>\S+?)(?: \(learner \S+\))?: the measured (?P<quantity>\S+) is (?P<value>.+?), "
                    r"outside the range (?P<range>\[[^\]]*\])")
_NAMED = re.compile(r"^(?P<who>bound|learner) (?P<name>[^\s:(]+)")


def _plain(value: Any) -> Any:
    """A parameter's value as JSON holds it (numbers, strings, booleans, None; anything else as its text)."""
    if isinstance(value, (bool, int, float, str)) or value is None:
        return value
    if isinstance(value, np.generic):
        return value.item()
    return str(value)


def failure_record(e: BaseException, spec: Any = None, name: str = "") -> dict[str, Any]:
    """What the sweep's end needs of a failed job to judge without it (docs/bounds.md section 9, "Missing
    runs"): the error's kind and message; the bound or learner an ``ImpossibleValue`` names; for a
    ``RangeError`` (a measurement outside the range a bound declares: evidence against that bound) the bound,
    the quantity, the value and the range; and, when the job's spec was built, its run name, learner, setting
    (the run's key without its seed, the ``setting`` column of the survivors' rows) and parameters."""
    from pipeline import tracking
    from pipeline.bounds.base import ImpossibleValue, RangeError

    message = tracking.redact(str(e))
    record: dict[str, Any] = {"kind": type(e).__name__, "message": message, "range_error": isinstance(e, RangeError)}
    if isinstance(e, ImpossibleValue) and (named := _NAMED.match(message)):
        record[named["who"]] = named["name"]
    if isinstance(e, RangeError) and (found := _RANGE.match(message)):
        record |= {"bound": found["bound"], "quantity": found["quantity"], "value": found["value"], "range": found["range"]}
    if name:
        record["run_name"] = name
    if spec is not None:
        try:
            record |= {"learner": spec.learner.name, "setting": spec.key(seeded=False), "run": spec.key(),
                       "params": {k: _plain(v) for k, v in spec.params().items()}}
            if record["range_error"] and record.get("bound"):
                from pipeline.bounds.registry import bounds_for

                record["guarantee"] = next((b.guarantee for b in bounds_for(spec.learner.name)
                                            if b.name == record["bound"]), None)
        except Exception:  # noqa: BLE001 - a spec that cannot say more: the kind and message still tell
            pass
    return record


def write_failure(out: Path, record: dict[str, Any]) -> None:
    """Write ``record`` (:func:`failure_record`) as ``error.json`` beside the job's ``error.txt`` (after it: a
    reader takes it only when it is not older than ``error.txt``)."""
    from pipeline import files

    files.write_text(out / FAILURE, json.dumps(record, default=str) + "\n")


def read_failure(job_dir: Path) -> dict[str, Any] | None:
    """A failed job's :func:`failure_record`, or None: no ``error.json``, one older than the job's ``error.txt``
    (written by an earlier attempt), unreadable, or no ``error.txt`` at all (the job did not fail by an error)."""
    try:
        error, record = (job_dir / "error.txt").stat(), job_dir / FAILURE
        if record.stat().st_mtime_ns < error.st_mtime_ns:
            return None
        found = json.loads(record.read_text())
    except (OSError, UnicodeDecodeError, ValueError):
        return None
    return found if isinstance(found, dict) else None


class JobLife(Life):
    """One Hydra job's lifecycle as a context manager: hold its directory -> check whether it is done ->
    its identity in the job store -> reuse a stored result or run -> record -> release.

    Constructed from the job's config and its :class:`~pipeline.sweep.life.Place` (Hydra's, unless given: the
    lifecycle runs without Hydra too); credentials are hidden in the configs Hydra saved. The frame is
    :class:`~pipeline.sweep.life.Life`'s, shared with a pack: ``with`` marks the process as inside a job and
    releases the directory's lock and the job store's hold on the way out, whatever happens. Inside,
    :meth:`done`, :meth:`reused` and :meth:`run` are the steps. A fault anywhere inside is recorded once, by
    :meth:`failed` (a FAILED run when one can be opened, ``error.txt``, no ``done.json``): in a sweep it is
    swallowed so the sweep goes on (its end reports it and exits non-zero); outside a sweep it is raised after
    being recorded, and data the learner cannot take (a :class:`pipeline.params.UserError` before any run
    opened) is raised unrecorded.
    """

    def __init__(self, cfg: DictConfig, place: Place | None = None) -> None:
        from pipeline import tracking
        from pipeline.job.config import build

        super().__init__(Place.from_hydra() if place is None else place)
        self.cfg = cfg
        self.spec = build(cfg)
        self.forced = sweep.forces(self.spec.force, self.spec.seed)  # force=true, less what this command reran
        self.name = run_name(self.spec.learner.name, self.place.overrides)
        self.label = self.name
        self.why: str | None = "unknown (its resume check failed)"
        self.tracker: tracking.Run | None = None
        self.uri = tracking.tracking_uri(cfg.tracking.uri)
        self.sweep_dir = self.place.sweep_dir
        self.held = self.ident = None
        self.rerun_why = ""  # why a sweep's job that had run runs again, when that is the expected case
        self.sources = self.code = None
        if tracking.redact(self.uri) != self.uri:  # a database password in the URI: not in the configs Hydra saved
            redact_saved(self.out / ".hydra")
            if self.sweep_dir is not None:
                redact_saved(self.sweep_dir)  # multirun.yaml, saved after the sweep's start hook ran

    def _open_run(self) -> Any:
        from pipeline import tracking

        spec = self.spec
        parent_id, sweep_id = tracking.sweep_context(self.sweep_dir) if self.sweep_dir is not None else (None, "")
        return tracking.backend(self.uri).job_run(
            self.uri,
            experiment=spec.experiment,
            name=self.name,
            parent_id=parent_id,
            tags={"boundlab.config_hash": spec.key(), "boundlab.sweep_id": sweep_id, "boundlab.output_dir": str(self.out),
                  "mlflow.note.content": f"{self.name}: one run of the sweep {spec.experiment!r}. "
                                         + str(self.cfg.question or "Its measured quantities against every bound that applies.")},
            supersede=self.why != "not run yet",
        )

    def ended(self) -> Any:
        """Around the job's last line(s) (finished, skipped, reused or failed): in a sweep, the sweep's progress with
        this job counted (:func:`pipeline.sweep.progress.finished`), '' otherwise."""
        from pipeline.sweep.progress import finished

        return finished(self.sweep_dir, 1, self.place.num) if self.multirun else contextlib.nullcontext("")

    def said(self, level: int, message: str, *args: Any) -> None:
        """The job's last line: ``message % args`` after its progress (:meth:`ended`) and its name."""
        with self.ended() as step:
            log.log(level, "%s%s: " + message, step, self.name, *args)

    def done(self) -> bool:
        """Hold the job's directory (a twin process is waited for) and say whether it already holds an intact
        finished run of the same config, code and input files (then the job is skipped, unless force=true)."""
        from pipeline import tracking
        from pipeline.job import identity, markers

        name, out = self.name, self.out
        self.hold()  # one process per job directory: a twin (an orphaned worker, the directory named twice) is waited for
        self.sources = identity.inputs(self.spec.dataset)  # before the data are read: an edit during the run reruns it
        self.code = identity.job_code(self.spec)
        self.why = markers.check(out, self.spec.key(), self.sources, self.code)
        if self.why is None and not self.forced:
            self.said(logging.INFO, "already done in %s, skipped (force=true reruns it)", out)
            return True
        if self.why not in ("not run yet", None):
            if self.multirun and self.why.startswith(EXPECTED_RERUN):
                # what an edit or a new value (dvc exp run -S ...) does to every job of a sweep: said in the job's one
                # line, not in a warning per job
                self.rerun_why = self.why
                log.debug("%s: not done in %s because %s", name, out, self.why)
            else:
                log.warning("%s: not done in %s because %s", name, out, self.why)
        tracking.ensure_up(self.uri, self.sweep_dir)  # a server found down by an earlier job: fail now, not after retries
        return False

    def reused(self) -> bool:
        """The same job reached by another command or sweep: wait while another process runs it, then reuse its
        stored result (a sweep's job only; the store is a cache: one that cannot be used costs the reuse)."""
        from pipeline import tracking
        from pipeline.job import identity, markers, store

        name, spec = self.name, self.spec
        self.ident = identity.job_identity(spec.key(), self.code, self.sources)
        try:
            self.held = store.hold_identity(self.ident, waiting=lambda pid: log.warning(
                "%s: waiting for process %s, which runs the same job", name, pid))
            self.keep(self.held)
        except OSError as e:  # said once per sweep (not per process: one process may run several, e.g. a test's)
            said = str(self.sweep_dir)
            (log.debug if said in _store_said else log.warning)(
                "%s: the job store cannot be used (%s): jobs run without it", name, _name_of_error(e))
            _store_said.add(said)
            self.ident = None
        if not (self.multirun and not self.forced and self.ident is not None):
            return False
        uri = self.uri
        backend = tracking.backend(uri)
        entry = store.stored(self.ident, tracking.redact(uri), finished=lambda run_id: backend.is_finished(uri, run_id))
        if entry is None:
            return False
        try:
            markers.invalidate(self.out)
            store.reuse(entry, self.out, spec.experiment)
        except (OSError, ValueError) as e:  # a damaged entry: the job runs and stores it again
            log.warning("%s: its stored result is damaged (%s): it runs again", name, _name_of_error(e))
            store.forget(self.ident)
            return False
        markers.record(self.out, spec.key(), str(entry["data_hash"]), streamed=bool(entry.get("streamed")),
                      sources=self.sources, code=self.code)
        self.said(logging.INFO, "the same job finished in run %s (%s): reused, not rerun (force=true reruns it)",
                  entry["run_id"], entry.get("output_dir"))
        return True

    def run(self) -> Any:
        """Prepare the data, run, write, track, mark done and keep the result in the job store; None when a
        sweep's learner cannot take the data (one line in ``error.txt``, no run recorded)."""
        from pipeline import files, tracking
        from pipeline.job import markers, store
        from pipeline.params import UserError
        from pipeline.job.run import prepare, run

        spec, out = self.spec, self.out
        try:
            dataset = prepare(spec)
        except UserError as e:  # the learner cannot take these data: one line, no run recorded
            if not self.multirun:
                raise
            markers.invalidate(out)
            out.mkdir(parents=True, exist_ok=True)
            files.write_text(out / "error.txt", f"{e}\n")
            write_failure(out, failure_record(e, spec, self.name))
            self.said(logging.ERROR, "%s", e)
            return None
        markers.invalidate(out)
        self.tracker = self._open_run()
        result = run(spec, dataset)
        written = write(result, out)
        resolved = OmegaConf.to_container(self.cfg, resolve=True)
        params = flatten(resolved) | flatten({"algorithm": spec.learner.get_params(), "dataset": spec.dataset.get_params()})
        self.tracker.finish(params, result.table, result.curve, written)
        streamed = result.dataset.kind == "stream"
        data_hash = str(result.table["data_hash"].iloc[0])
        markers.record(out, spec.key(), data_hash, streamed=streamed, sources=self.sources, code=self.code)
        try:  # the store is a cache: a job whose result cannot be kept there is still finished
            if self.ident is not None:
                store.put(self.ident, out, {"run_id": self.tracker.run_id, "tracking_uri": tracking.redact(self.uri),
                                            "experiment": spec.experiment, "output_dir": str(out),
                                            "data_hash": data_hash, "streamed": streamed})
        except OSError as e:
            log.warning("%s: not kept in the job store (%s); later sweeps rerun it", self.name, _name_of_error(e))
        return result

    def failed(self, e: Exception) -> bool:
        """Record a fault of the job; True (swallow it) in a sweep, False (raise it) outside one."""
        from pipeline import files, tracking
        from pipeline.job import markers
        from pipeline.params import UserError

        name, out = self.name, self.out
        if isinstance(e, UserError) and self.tracker is None and not self.multirun:
            return False  # data this learner cannot take, outside a sweep: the command's one-line error, no run
        down = isinstance(e, tracking.StoreDown)
        if not down and tracking.is_connection_error(e):  # the next jobs fail at once (sibling workers too)
            tracking.mark_down(self.uri, self.sweep_dir, e)
            down = True
        # Recorded before anything else can fail: the directory must not keep an earlier done.json
        # (the sweep would count the job as finished), and error.txt is what the sweep's end points to.
        error = tracking.redact(str(e) + "\n" if isinstance(e, tracking.StoreDown) else traceback.format_exc())
        try:
            markers.invalidate(out)
            out.mkdir(parents=True, exist_ok=True)
            files.write_text(out / "error.txt", error)
        except OSError as disk:
            log.error("%s: cannot record its failure in %s: %s", name, out, _name_of_error(disk))
        try:  # its kind, for the sweep's end (a RangeError is evidence against its bound); error.txt is written first
            write_failure(out, failure_record(e, getattr(self, "spec", None), name))
        except Exception as why:  # noqa: BLE001 - error.txt still tells; the sweep's end counts the job as failed
            log.error("%s: cannot record its failure's kind in %s: %s", name, out, _name_of_error(why))
        try:
            if not down:
                (self.tracker or self._open_run()).fail(e)
        except Exception as tracking_error:  # noqa: BLE001 - the store itself may be the fault: error.txt still tells
            log.error("%s: cannot record its failure in MLflow: %s", name, tracking.redact(_name_of_error(tracking_error)))
        if not self.multirun:
            return False
        if isinstance(e, tracking.StoreDown):
            self.said(logging.ERROR, "not run: %s", e)
        else:
            self.said(logging.ERROR, "FAILED: %s (see %s)", tracking.redact(_name_of_error(e)), out / "error.txt")
        return True


def job(cfg: DictConfig) -> None:
    """One Hydra job: build, run, write, track, mark done (:class:`JobLife`), then its lines in the log.

    In a sweep, a job whose directory already holds an intact finished run of the same config, code and
    input files is skipped (``force=true`` reruns it). Any fault of the job, wherever it arises (resume
    check, data, cache, tracking, the learner, writing), is recorded (a FAILED run when one can be
    opened, ``error.txt``, no ``done.json``) without stopping the sweep; the sweep's end reports it and
    exits non-zero. Outside a sweep the fault is recorded the same way, then raised.

    A pack job of a packed sweep (``pack=N``: its config holds its members) is not one: the command runs it
    with ``pipeline.sweep.pack.run_pack`` (``pipeline.cli``), which uses this module's pieces, never the other way.
    """
    life = JobLife(cfg)
    result = None
    with life:
        if life.done() or life.reused():
            return
        result = life.run()
    if result is not None:
        _said(cfg, life, result)


def _said(cfg: DictConfig, life: JobLife, result: Any) -> None:
    """A finished job's lines: one per bound outside a sweep (with the data's certificate), one per job in a
    sweep; outside a sweep a violated (D) bound exits 1."""
    from pipeline.judging.rows import row_phrase

    multirun, name, out = life.multirun, life.name, life.out
    if not multirun and {"dual_gap", "f_star_lo"} <= set(result.table):
        first = result.table.iloc[0]
        log.info("comparator: f* in [%.10g, %.10g] (certified duality gap %.2g)", first["f_star_lo"], first["f_star_hi"],
                 first["dual_gap"])
    if not multirun:
        st = result.dataset.stats
        shown = result.dataset.name
        extra = getattr(result.dataset, "extra", {})
        if extra.get("presented"):  # ordering=exact: the class's worst instance, not the sample
            shown += f" (presented: its class's {extra['presented']}, M* = {extra['worst_case']})"
        if hasattr(st, "gamma_lo"):
            log.info("data %s: m=%d d=%d R=%.6g gamma* in [%.6g, %.6g] (relative gap %.1e), separable=%s, hash %s",
                     shown, st.m, st.d, st.R, st.gamma_lo, st.gamma_hi, st.gap, st.separable,
                     result.table["data_hash"].iloc[0])
        else:
            log.info("data %s: %s, hash %s", shown,
                     " ".join(f"{k}={v:.6g}" if isinstance(v, float) else f"{k}={v}" for k, v in st.as_dict().items()),
                     result.table["data_hash"].iloc[0])
    # A sweep: one line per job (thousands of bound lines say less than the verdicts at its end); a single
    # run, or log.bounds=true: one line per bound (docs/sweeps.md, "A sweep").
    each_bound = not multirun or OmegaConf.select(cfg, "log.bounds", default=False) is True
    with life.ended() as step:
        if not each_bound:
            log.info("%s%s: %s%s", step, name, bounds_summary(result.table),
                     f" (run again: {life.rerun_why})" if life.rerun_why else "")
        for row in result.table.itertuples() if each_bound else ():
            part = getattr(row, "part", None)
            name_ = f"{name} [{part}]" if isinstance(part, str) and part else name
            if not row.applicable:
                measured = f"{row.empirical:g}" if row.empirical == row.empirical else "not measured"
                log.info("%s%s: %s %s; %s not applicable: %s", step, name_, row.quantity, measured, row.bound, row.reason)
                continue
            log.info("%s%s: %s %g vs %s %g (%s, ratio %.3g)%s", step, name_, row.quantity, row.empirical, row.bound,
                     row.theoretical, row_phrase(row), row.ratio, f"; {row.reason}" if row.reason else "")
    if not multirun:  # a single run fails on a violated (D) bound as a sweep does (docs/sweeps.md, "One run")
        table = result.table
        broken = sorted(set(table.loc[table["guarantee"].isin(PER_RUN) & table["applicable"].astype(bool)
                                      & ~table["holds"].fillna(True).astype(bool), "bound"]))
        if broken:
            print(f"boundlab: (D) bound(s) violated in this run: {', '.join(broken)}; a violated (D) bound is a bug "
                  f"until proven otherwise (the run is recorded in {out})", file=sys.stderr)
            raise SystemExit(1)
