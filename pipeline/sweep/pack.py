"""Packed sweeps (``pack=N``): many settings per Hydra job, their results in columnar parts.

A sweep's job costs Hydra ~0.16 s (its directory, three YAML files, logging) and boundlab an MLflow child
run and three files, before the learner runs at all; for a grid of 10^4-10^5 tiny settings that is most of
the time. With ``pack=N`` the sweeper (``hydra_plugins/boundlab_sweeper``) launches one Hydra job per N
consecutive jobs of the sweep, through the configured launcher (basic, joblib, Ray: unchanged). The pack
job carries its members' override lists inside its own config (:func:`pack_overrides`: one override,
``+pack_members``, compressed), so a worker on another node needs no shared file to know them.

The pack job (:func:`run_pack`) composes each member's config from one composition of its config groups
(``pipeline.sweep.hydra_seam.Composer``, what the pre-flight uses), builds and runs it exactly as a job does
(``pipeline.job.run.prepare``/``run``), and writes the members' rows in parts of :data:`PART` members
(``results-part-00003.parquet``, ``curves-part-00003.parquet``), each followed by its marker
(``part-00003.json``: the members' config keys, code and input files; the members that failed, and
the kind of each one's error, as a job's ``error.json`` holds it). A rerun of
the same command skips the parts whose marker matches and runs the rest: an interrupted pack resumes at
its first missing part. The job store (``pipeline.job.store``) keeps a pack's parts, not its members: once the
pack's run has FINISHED with no member failed, each part is kept under the identities of its members in
order (:func:`part_identity`), and a later sweep whose pack holds the same members in the same order (the
next round of ``seeds=auto``, whose packs hold one setting's seeds in blocks: docs/sweeps.md) reuses it.
No per-member ``trace.npz``, ``data.npz`` or MLflow child run is written: the pack has one child run (its index, size
and the ranges of its swept keys; runs, violations and the largest ratio per bound; its parts as
artifacts). The sweep's end (``pipeline.sweep.callbacks.collect``) reads the parts in job order, so its table,
verdicts and figures are those of the same sweep unpacked (tests/test_pack.py compares the tables).
"""

from __future__ import annotations

import base64
import hashlib
import json
import logging
import math
import time
import zlib
from pathlib import Path
from typing import Any, Sequence

from pipeline.sweep.life import Life, Place

log = logging.getLogger("boundlab")

PART = 250  # members per part at most: what an interrupted pack loses, and what one file holds (a pack of 500: 2 parts)
KEY = "pack_members"  # the pack job's config key that holds its members (added by the sweeper: +pack_members=...)
_store_said: set[str] = set()  # the sweeps (their directories) whose parts the job store could not keep: said once each
PREFIX = "z"  # before the encoded members: a Hydra ID token (letters, digits, '-', '_'), never a number


def part_size(n: int) -> int:
    """Members per part of a pack of ``n``."""
    return max(1, min(n, PART))


def encode(payload: dict[str, Any]) -> str:
    """``payload`` (JSON) as one unquoted Hydra value: zlib, then URL-safe base64 without padding, after
    :data:`PREFIX`. Hydra's override grammar reads such a value as one string token, with nothing to quote
    or escape and no ``${`` for OmegaConf to interpolate, whatever the members' overrides contain."""
    raw = zlib.compress(json.dumps(payload, separators=(",", ":")).encode(), 9)
    return PREFIX + base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode(text: str) -> dict[str, Any]:
    """The payload :func:`encode` made."""
    body = str(text).removeprefix(PREFIX)
    return json.loads(zlib.decompress(base64.urlsafe_b64decode(body + "=" * (-len(body) % 4))))


def shown(overrides: Sequence[str]) -> list[str]:
    """A job's overrides as a log line shows them: a pack's encoded members (kilobytes of base64) as their count
    and range, ``+pack_members=<500 members: runs 1000-1499>``; any other override as it is."""
    out = []
    for o in overrides:
        if o.startswith(f"+{KEY}="):
            try:
                payload = decode(o.split("=", 1)[1])
                n, first = len(payload["members"]), int(payload["first"])
                o = f"+{KEY}=<{n} members: runs {first}-{first + n - 1}>"
            except (ValueError, KeyError, TypeError, zlib.error):
                o = f"+{KEY}=<{len(o)} characters>"
        out.append(o)
    return out


def pack_dir_name(index: int) -> str:
    return f"pack-{index}"


def pack_overrides(members: Sequence[Sequence[str]], index: int, first: int) -> list[str]:
    """The pack job's overrides: its first member's (a config the pre-flight validated: the pack's tracking
    store, name and question), its own directory (``pack-INDEX`` in the sweep directory) and its members
    (``first``: the sweep's index of its first member)."""
    payload = {"index": index, "first": first, "members": [list(m) for m in members]}
    return [*members[0], f"hydra.sweep.subdir={pack_dir_name(index)}", f"+{KEY}={encode(payload)}"]


def by_setting(jobs: Sequence[Sequence[str]]) -> list[list[str]]:
    """The jobs of a ``seeds=auto`` round, each setting's seeds together and in order, the settings in the
    order the grid first lists them. Rounds add seeds in whole packs (``pipeline.cli``), so every pack holds
    one block of one setting's seeds, the same members in every round: the next round reuses its parts from
    the job store (:func:`_reuse_part`) and runs only the new seeds, wherever Hydra's order puts ``seed``."""
    order: dict[tuple[str, ...], int] = {}

    def setting(job: Sequence[str]) -> int:
        rest = tuple(o for o in job if o.partition("=")[0].lstrip("+~") != "seed")
        return order.setdefault(rest, len(order))

    return [list(job) for job in sorted(jobs, key=setting)]  # stable: seeds keep their order


def packs_of(jobs: Sequence[Sequence[str]], n: int, start: int = 0, first: int = 0) -> list[list[str]]:
    """``jobs`` as pack jobs of ``n`` consecutive members each (the last one shorter), numbered from ``start``;
    ``first``: the sweep's index of ``jobs[0]``."""
    return [pack_overrides(jobs[i:i + n], start + k, first + i) for k, i in enumerate(range(0, len(jobs), n))]


# ---------------------------------------------------------------- the pack job

def _write_part_table(frame: Any, path: Path) -> None:
    """Write a part's table (results or curves) to ``path`` whole, as parquet: without column statistics (nothing
    reads a part by them: the sweep's end and the job store read parts whole) and dictionary-encoded in its string
    columns only (a part's numbers are nearly all distinct: the dictionary pyarrow tries first on every column is
    dropped again). The same frame reads back; a part of 250 Pegasos runs is written in ~4.5 ms instead of ~7.5
    (its files ~14 % larger). The sweep's own ``results.parquet`` and ``curves.parquet`` are written as before."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from pipeline import files

    table = pa.Table.from_pandas(frame, preserve_index=False)
    strings = [f.name for f in table.schema if pa.types.is_string(f.type) or pa.types.is_large_string(f.type)]
    with files.staged(path) as tmp:
        pq.write_table(table, tmp, write_statistics=False, use_dictionary=strings)


def _part_paths(out: Path, p: int) -> tuple[Path, Path, Path]:
    return out / f"results-part-{p:05d}.parquet", out / f"curves-part-{p:05d}.parquet", out / f"part-{p:05d}.json"


def _identity(spec: Any) -> list[Any]:
    """What a member's result depends on (as ``pipeline.job.markers`` records a job's): its config key, the code
    it runs and its input files."""
    from pipeline.job import identity

    return [spec.key(), identity.job_code(spec), identity.inputs(spec.dataset)]


def part_identity(identities: list[list[Any]]) -> str:
    """The job store's name for a part of these members (their config keys, code and input files, in order):
    a later sweep whose pack holds the same members in the same order reuses the part (:func:`_reuse_part`)."""
    payload = json.dumps({"part": identities}, sort_keys=True, default=str)
    return "part-" + hashlib.sha256(payload.encode()).hexdigest()[:24]


def _reuse_part(out: Path, p: int, identities: list[list[Any]], first: int, experiment: str, uri: str) -> str | None:
    """Part ``p`` of the pack in ``out`` from the job store, when another sweep finished the same members (in
    the same order, with the same code and inputs) in a run that is still a live FINISHED run of the same
    tracking store: its tables (their rows under this sweep's experiment) and its marker with this sweep's run
    numbers. The run that made it, or None (the part runs). A damaged entry is dropped and the part runs."""
    import shutil

    import pandas as pd

    from pipeline import files, tracking
    from pipeline.job import store

    ident = part_identity(identities)
    backend = tracking.backend(uri)
    entry = store.stored(ident, tracking.redact(uri), finished=lambda run_id: backend.is_finished(uri, run_id),
                         kept=store.PART_KEPT)
    if entry is None:
        return None
    source = Path(str(entry["dir"]))
    results, curves, marker = _part_paths(out, p)
    try:
        kept = _read_marker(source / "part.json")
        if kept is None or kept.get("members") != identities or kept.get("failed"):
            raise ValueError("its marker is not this part's")
        table = pd.read_parquet(source / "results.parquet")  # first: a damaged table copies nothing
        table["experiment"] = experiment
        marker.unlink(missing_ok=True)
        with files.staged(curves) as tmp:
            shutil.copyfile(source / "curves.parquet", tmp)
        with files.staged(results) as tmp:
            table.to_parquet(tmp, index=False)
        files.write_text(marker, json.dumps({"members": identities, "first": first, "failed": {}, "errors": {},
                                             "reused": entry.get("run_id")}, default=str) + "\n")
        why = read_part(out, p, identities)
        if isinstance(why, str):
            raise ValueError(why)
    except (OSError, ValueError) as e:  # ArrowInvalid is a ValueError
        log.warning("%s part %d: its stored result is damaged (%s): it runs again", out, p, e)
        marker.unlink(missing_ok=True)
        store.forget(ident)
        return None
    return str(entry.get("run_id"))


def _keep_parts(out: Path, parts: Sequence[int], identities: list[list[Any]], size: int, entry: dict[str, Any],
                label: str) -> None:
    """Keep the parts ``parts`` of the pack in ``out`` (each finished without a failed member, in the pack's
    FINISHED run ``entry["run_id"]``) in the job store, for any later sweep that reaches the same members. The
    store is a cache: a part it cannot keep is said once, and later sweeps run it."""
    from pipeline.job import store

    for p in parts:
        results, curves, marker = _part_paths(out, p)
        try:
            store.put(part_identity(identities[p * size:(p + 1) * size]), out, entry | {"kind": "part"},
                      sources={"results.parquet": results, "curves.parquet": curves, "part.json": marker})
        except OSError as e:  # said once per sweep (the command's pre-flight says an unusable store too)
            said = str(out.parent)
            (log.debug if said in _store_said else log.warning)(
                "%s: its parts are not kept in the job store (%s); later sweeps rerun them", label, e)
            _store_said.add(said)
            return


def _read_marker(path: Path) -> dict[str, Any] | None:
    try:
        done = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, ValueError):
        return None
    return done if isinstance(done, dict) and isinstance(done.get("members"), list) else None


def read_part(out: Path, p: int, identities: list[list[Any]]) -> tuple[Any, Any, dict[str, Any]] | str:
    """Part ``p`` of the pack in ``out`` as (results, curves, marker) Arrow tables and record when it is complete
    and current: its marker readable and naming exactly ``identities`` (the members' config keys, code and input
    files as they are now), both tables readable, and its results holding a row of every member the marker does
    not name as failed. Otherwise why not, in words. The one predicate of a part: a pack's rerun runs the parts
    it refuses (:func:`part_complete`) and the sweep's end (:func:`collect`) reads only the parts it accepts."""
    from pipeline.outputs import tables

    results, curves, marker = _part_paths(out, p)
    if not marker.exists():
        return "not written"
    done = _read_marker(marker)
    if done is None or not isinstance(done.get("failed") or {}, dict):
        return f"its marker {marker.name} is unreadable or not a part's marker"
    if done["members"] != identities:
        return (f"its marker {marker.name} is stale: written for other settings, another version of the code they run "
                "or other input files")
    try:
        table, curve = tables.read(results), tables.read(curves)
    except Exception as e:  # noqa: BLE001 - a damaged file raises whatever its reader meets (ArrowInvalid, OSError, ...)
        return f"its tables cannot be read ({type(e).__name__}: {e})"
    failed = done.get("failed") or {}
    first = done.get("first")
    if not isinstance(first, int):
        return f"its marker {marker.name} does not say which runs it holds"
    want = {str(ident[0]) for i, ident in enumerate(identities) if str(first + i) not in failed}
    have = set(map(str, table.column("run").to_pylist())) if "run" in table.column_names else set()
    if want - have:
        return f"its results table lacks the rows of {len(want - have)} of its runs (damaged or replaced)"
    return table, curve, done


def part_complete(out: Path, p: int, identities: list[list[Any]]) -> bool:
    """Whether part ``p`` of the pack in ``out`` holds every member of ``identities``, finished by the same
    code on the same inputs, with its tables there and readable (:func:`read_part`) and no member failed."""
    got = read_part(out, p, identities)
    return not isinstance(got, str) and not got[2].get("failed")


def current_members(out: Path, attempt: float | None = None) -> tuple[int, list[list[Any]]] | str:
    """The first run number and the members' identities of the pack in ``out`` as its last attempt computed
    them, when that attempt belongs to this run of the sweep (``attempt``: the sweep's start,
    ``pipeline.sweep.context.Sweep.start``; None: not checked) and did not fail as a whole; otherwise why not. A pack
    that failed whole, stopped before it built its members or never ran in this sweep has no current part:
    each of its members counts as failed, whatever earlier attempts left (:func:`collect`)."""
    if (out / "error.txt").exists():
        return f"the pack failed as a whole (see {out / 'error.txt'})"
    try:
        listed = json.loads((out / "members.json").read_text())
    except (OSError, UnicodeDecodeError, ValueError):
        return "the pack never started (no readable members.json)"
    if not isinstance(listed, dict) or not isinstance(listed.get("first"), int):
        return "its members.json is not a pack's"
    if attempt is not None and listed.get("attempt") != attempt:
        return "the pack did not run in this sweep (its members.json is an earlier run's)"
    identities = listed.get("identities")
    if not isinstance(identities, list):
        return "the pack stopped before it built its members"
    return listed["first"], identities


def read_ahead(sweep_dir: Path, attempt: float | None) -> int:
    """Read the parts of the packs of ``sweep_dir`` this run of the sweep finished (``done.json`` written since
    ``attempt``, the sweep's start: an attempt removes it as a pack starts) for the sweep's end to take
    (``pipeline.outputs.tables.read_ahead``); how many files were read. Only a head start: the end checks every
    part (:func:`collect`), and a file changed since is read again."""
    from pipeline.outputs import tables

    paths = []
    for out in sorted(sweep_dir.glob("pack-*"), key=lambda d: (len(d.name), d.name)):  # job order: pack-2 before pack-10
        members = _done_members(out / "done.json", attempt)
        paths += [path for p in range(math.ceil(members / part_size(members))) for path in _part_paths(out, p)[:2]]
    return tables.read_ahead(paths)


def _done_members(done: Path, attempt: float | None) -> int:
    """How many members ``done`` (a pack's ``done.json``) says the pack finished, when written since ``attempt``;
    else 0."""
    try:
        if attempt is not None and done.stat().st_mtime < attempt:
            return 0
        members = json.loads(done.read_text())["members"]
    except (OSError, ValueError, TypeError, KeyError):
        return 0
    return members if isinstance(members, int) and members > 0 else 0


def part_summary(table: Any) -> str:
    """A part's bounds in a few words, per bound over its runs (a sweep logs one line per part, not per run):
    every (D) bound VIOLATED, with how many runs; every bound vacuous in some runs, with how many; e.g.
    'every bound holds; vacuous: novikoff in 2 runs'."""
    if not len(table):
        return "no results"
    columns = ["run", "bound", "guarantee", "applicable", "holds", "informative"]  # all it reads: 6 columns, not ~50
    table = table[[c for c in columns if c in table.columns]]
    applicable = table[table["applicable"].astype(bool)]
    from pipeline.judging.guarantees import PER_RUN

    d = applicable[applicable["guarantee"].isin(PER_RUN)]
    broken = d[~d["holds"].fillna(True).astype(bool)].groupby("bound", sort=True)["run"].nunique()
    vacuous = applicable[~applicable["informative"].astype(bool)].groupby("bound", sort=True)["run"].nunique()
    words = [("VIOLATED: " + ", ".join(f"{b} in {k} run{'s' * (k != 1)}" for b, k in broken.items()))
             if len(broken) else "every (D) bound holds"]
    if len(vacuous):
        words.append("vacuous: " + ", ".join(f"{b} in {k} run{'s' * (k != 1)}" for b, k in vacuous.items()))
    return "; ".join(words)


def _run_member(spec: Any) -> Any:
    """A member's run up to its tables (:func:`pipeline.job.run.measure`): its part makes them for all its runs."""
    from pipeline.job.run import measure, prepare

    return measure(spec, prepare(spec))


def _pack_params(table: Any, index: int, size: int, first: int) -> dict[str, str]:
    """The pack run's params: its index, size and first member, and each run parameter's range over the
    pack (``min..max``, or the values when they are not numbers)."""
    params = {"pack.index": str(index), "pack.size": str(size), "pack.first": str(first)}
    if not len(table):
        return params
    names = set()
    for value in table["param_names"].dropna().unique():
        names.update(str(value).split())
    for name in sorted(n for n in names if n in table.columns):
        values = table[name].dropna().unique()
        if len(values) == 0:
            continue
        try:
            low, high = min(values), max(values)
            params[f"range.{name}"] = str(low) if low == high else f"{low}..{high}"
        except TypeError:  # values that do not order
            params[f"range.{name}"] = ",".join(sorted(map(str, values)))[:500]
    return params


def _pack_metrics(table: Any) -> dict[str, float]:
    """The pack run's metrics: its runs, and per bound the violations among its applicable rows and the
    largest measured/bound."""
    if not len(table):
        return {"runs": 0.0}
    metrics = {"runs": float(table["run"].nunique())}
    table = table[["bound", "applicable", "holds", "ratio"]]  # all it reads (a pack's rows have ~70 columns)
    for bound, rows in table.groupby("bound", sort=True):
        applicable = rows[rows["applicable"].astype(bool)]
        metrics[f"{bound}/violations"] = float((~applicable["holds"].fillna(True).astype(bool)).sum())
        if len(applicable):
            metrics[f"{bound}/max_ratio"] = float(applicable["ratio"].max())
    return metrics


def _pack_run(uri: str, sweep_dir: Path, out: Path, experiment: str, label: str, index: int, size: int, pack_key: str,
              earlier: bool) -> Any:
    """The pack's child run under the sweep's parent (one MLflow run for its ``size`` runs); ``earlier``: a
    rerun of the pack, whose earlier runs it replaces."""
    from pipeline import tracking

    parent_id, sweep_id = tracking.sweep_context(sweep_dir)
    return tracking.backend(uri).job_run(uri, experiment=experiment, name=f"{experiment} {label}", parent_id=parent_id,
                                         tags={"boundlab.config_hash": pack_key, "boundlab.sweep_id": sweep_id,
                                               "boundlab.output_dir": str(out), "boundlab.pack": str(index),
                                               "mlflow.note.content": f"{label}: {size} runs of the sweep "
                                                                      f"{experiment!r}, packed (docs/sweeps.md)."},
                                         supersede=earlier)


def _run_part(out: Path, p: int, parts: int, specs: list[Any], members: list[Any], identities: list[Any], first: int,
              label: str) -> tuple[bool, Any]:
    """Run one part's members (run numbers ``first``, ``first`` + 1, ...) and write the part whole: its
    results and curves, then its marker naming any run that failed (the others are kept) and what the part cost
    (``seconds``: its runs' own, and the part's up to its marker: the benchmark's plumbing is the difference).
    Returns (whether one failed, the results table written)."""
    from pipeline import files, tracking
    from pipeline.job.run import part_tables
    from pipeline.sweep import stages
    from pipeline.sweep.progress import finished

    results, curves, marker = _part_paths(out, p)
    marker.unlink(missing_ok=True)
    measured, failed, kinds = [], {}, {}
    started = running = time.perf_counter()
    computing = 0.0  # the members' own runs (data, learner, statistics, bounds), seconds: the rest is the part's plumbing
    for i, spec in enumerate(specs):
        try:
            running = time.perf_counter()
            result = _run_member(spec)
            computing += time.perf_counter() - running
        except Exception as e:  # noqa: BLE001 - recorded in the part; the sweep's end reports it
            computing += time.perf_counter() - running
            failed[str(first + i)] = tracking.redact(f"{type(e).__name__}: {e}")
            try:  # its kind, as a job's error.json holds it (a RangeError is evidence against its bound)
                kinds[str(first + i)] = stages.failure_record(e, spec, " ".join(members[i]))
            except Exception:  # noqa: BLE001 - the message in "failed" still tells
                pass
            log.error("%s: run %d (%s) FAILED: %s", label, first + i, " ".join(members[i]), failed[str(first + i)])
            continue
        measured.append(result.rows)  # its rows and curves: its data and trace are let go
    table, curve = part_tables(measured)
    _write_part_table(table, results)
    _write_part_table(curve, curves)
    seconds = {"runs": round(computing, 6), "part": round(time.perf_counter() - started, 6)}  # what its runs cost
    files.write_text(marker, json.dumps({"members": identities, "first": first, "failed": failed, "errors": kinds,
                                         "seconds": seconds}, default=str) + "\n")
    with finished(out.parent, len(specs), first + len(specs) - 1) as step:  # a pack's directory is in its sweep's
        log.info("%s%s: %d runs%s: %s", step, f"{label} part {p + 1}/{parts}", len(specs) - len(failed),
                 f" ({len(failed)} FAILED)" if failed else "", part_summary(table))
    return bool(failed), table


def _pack_failed(out: Path, label: str, tracker: Any, e: BaseException) -> None:
    """A fault of the pack itself: its traceback in ``error.txt``, its run ended FAILED, one line in the log
    (the sweep goes on; its end reports the pack)."""
    import traceback

    from pipeline import files, tracking

    try:
        files.write_text(out / "error.txt", tracking.redact(traceback.format_exc()))
    except OSError as disk:
        log.error("%s: cannot record its failure in %s: %s", label, out, disk)
    try:
        if tracker is not None and tracker.run_id in tracking.OPEN_RUNS:
            tracker.fail(e)
    except Exception as tracking_error:  # noqa: BLE001 - the store may be the fault: error.txt still tells
        log.error("%s: cannot record its failure in MLflow: %s", label, tracking.redact(str(tracking_error)))
    log.error("%s: FAILED: %s (see %s)", label, tracking.redact(f"{type(e).__name__}: {e}"), out / "error.txt")


class PackLife(Life):
    """A pack job's lifecycle: :class:`~pipeline.sweep.life.Life`'s frame (the one a job has) around the pack's
    body (:meth:`run`). A fault of the pack itself is recorded in its ``error.txt`` and its run ended FAILED
    (:func:`_pack_failed`), and the sweep goes on; an interrupt ends the pack's run KILLED and keeps every part
    already written."""

    def __init__(self, cfg: Any, place: Place | None = None) -> None:
        from pipeline import tracking

        super().__init__(Place.from_hydra() if place is None else place)
        payload = decode(cfg[KEY])
        self.index, self.first, self.members = int(payload["index"]), int(payload["first"]), payload["members"]
        self.uri = tracking.tracking_uri(cfg.tracking.uri)
        self.label = f"pack {self.index} (runs {self.first}-{self.first + len(self.members) - 1})"
        self.sweep_dir = self.place.sweep_dir if self.place.sweep_dir is not None else self.out.parent

    def failed(self, e: Exception) -> bool:
        _pack_failed(self.out, self.label, self.tracker, e)
        return True

    def run(self) -> None:
        """The pack's members, part by part (see :func:`run_pack`)."""
        _run_pack(self)


def run_pack(cfg: Any, place: Place | None = None) -> None:
    """One pack job: its members run part by part, each part written whole with its marker, the pack's child
    run in MLflow. In a sweep, a member's fault is recorded in its part (the others go on; the sweep's end
    reports it and exits 1) and a fault of the pack itself in its ``error.txt``; an interrupt ends the
    pack's run KILLED and keeps every part already written (:class:`PackLife`)."""
    with PackLife(cfg, place) as life:
        life.hold()
        life.run()


def _run_pack(life: PackLife) -> None:
    """The pack's body: its parts checked against its members, the missing ones taken from the job store or run,
    its run in MLflow finished and its ``done.json`` written once every member finished."""
    import pandas as pd

    from pipeline import files, tracking
    from pipeline.sweep import hydra_seam, context as sweep
    from pipeline.sweep.progress import finished
    from pipeline.job.config import build

    out, sweep_dir, label, uri = life.out, life.sweep_dir, life.label, life.uri
    index, first, members = life.index, life.first, life.members
    attempt = sweep.current().start  # this run of the sweep: the sweep's end trusts only what this attempt vouched for
    earlier = (out / "members.json").exists()  # an earlier start of this pack: its run is replaced
    done = _recorded_done(out)
    listed = _start_attempt(out, first, members, attempt)
    compose = hydra_seam.sweep_composer(sweep.current().to_json())
    seeded = _sweep_seeded(compose)
    specs = [seeded.build(m, lambda o: (cfg := compose(o), build(cfg)))[1] for m in members]
    force = any(sweep.forces(s.force, s.seed) for s in specs)
    identities = json.loads(json.dumps([_identity(s) for s in specs], default=str))  # as a marker reads them back
    files.write_text(out / "members.json", json.dumps(listed | {"identities": identities}) + "\n")
    pack_key = hashlib.sha256(json.dumps([i[0] for i in identities]).encode()).hexdigest()[:16]
    size = part_size(len(members))
    parts = range(math.ceil(len(members) / size))
    todo = [p for p in parts if force or not part_complete(out, p, identities[p * size:(p + 1) * size])]

    def runs_of(ps: Any) -> int:  # the members of these parts
        return sum(min((p + 1) * size, len(members)) - p * size for p in ps)

    if not todo and done == {"key": pack_key, "members": len(members)}:
        files.write_text(out / "done.json", json.dumps(done) + "\n")
        with finished(sweep_dir, len(members), first + len(members) - 1) as step:
            log.info("%s%s: already done in %s, skipped (force=true reruns it)", step, label, out)
        return
    if len(todo) < len(parts):
        with finished(sweep_dir, runs_of(p for p in parts if p not in todo), first + len(members) - 1) as step:
            log.info("%s%s: %d of %d parts already done in %s; %s", step, label, len(parts) - len(todo), len(parts),
                     out, "running the rest" if todo else "recording its run")
    reused = {} if force else _reuse_parts(out, todo, len(parts), size, identities, first, specs[0].experiment,
                                           uri, label, runs_of)
    todo = [p for p in todo if p not in reused]
    tracker = life.tracker = _pack_run(uri, sweep_dir, out, specs[0].experiment, label, index, len(members), pack_key,
                                       earlier)
    failed_any, made = _run_parts(out, todo, len(parts), size, specs, members, identities, first, label)
    # the pack run's params and metrics: the parts it ran as they were written, the others read (done or reused)
    tables = [made[p] if p in made else pd.read_parquet(_part_paths(out, p)[0]) for p in parts]
    table = pd.concat(tables, ignore_index=True) if tables else pd.DataFrame()
    artifacts = [_part_paths(out, p)[0] for p in parts]
    tracker.finish_pack(_pack_params(table, index, len(members), first), _pack_metrics(table), artifacts,
                        failed=failed_any)
    if not failed_any:
        kept = {"run_id": tracker.run_id, "tracking_uri": tracking.redact(uri), "experiment": specs[0].experiment,
                "output_dir": str(out)}
        _keep_parts(out, [p for p in parts if p not in reused], identities, size, kept, label)
        files.write_text(out / "done.json", json.dumps({"key": pack_key, "members": len(members)}) + "\n")


_SEEDED: dict[str, Any] = {}  # this process's packs' families of seeds: {"composer": ..., "seeded": Seeded}
FAMILIES = 256  # families kept at most: a grid of distinct settings starts afresh (each family holds a config)


def _sweep_seeded(compose: Any) -> Any:
    """The :class:`~pipeline.sweep.seeded.Seeded` of this process's packs of one sweep (``compose``: the sweep's
    composer, ``hydra_seam.sweep_composer``): a setting's family is built and checked in full once per worker,
    not again in each of its packs (a seed round of 100,000: 200 packs, two full builds each)."""
    from pipeline.sweep.seeded import Seeded

    if _SEEDED.get("composer") is not compose or len(_SEEDED["seeded"].families) > FAMILIES:
        _SEEDED.clear()
        _SEEDED.update(composer=compose, seeded=Seeded())
    return _SEEDED["seeded"]


def _recorded_done(out: Path) -> Any:
    """What the pack's ``done.json`` says an earlier attempt finished, or None (no such file, or unreadable)."""
    try:
        return json.loads((out / "done.json").read_text())
    except (OSError, UnicodeDecodeError, ValueError):
        return None


def _start_attempt(out: Path, first: int, members: list[Any], attempt: Any) -> dict[str, Any]:
    """This attempt's start in the pack's directory ``out``: an earlier attempt's ``done.json`` and ``error.txt``
    removed, and ``members.json`` listing the members for this attempt. Returns that listing."""
    from pipeline import files

    # this attempt starts: nothing an earlier one left stands for it until its parts are checked against the
    # members as they are now (a fault from here on, before or after, is this attempt's: error.txt)
    (out / "done.json").unlink(missing_ok=True)
    (out / "error.txt").unlink(missing_ok=True)
    listed = {"first": first, "members": members, "attempt": attempt}
    files.write_text(out / "members.json", json.dumps(listed) + "\n")
    return listed


def _reuse_parts(out: Path, todo: list[int], parts: int, size: int, identities: list[Any], first: int, experiment: str,
                 uri: str, label: str, runs_of: Any) -> dict[int, str]:
    """The parts of ``todo`` (of ``parts``) taken from the job store (:func:`_reuse_part`), each with the run
    that finished it; said in one line when there are any (``runs_of``: the members of some parts, counted as
    finished in the sweep's progress)."""
    from pipeline.sweep.progress import finished

    reused = {p: _reuse_part(out, p, identities[p * size:(p + 1) * size], first + p * size, experiment, uri)
              for p in todo}
    reused = {p: run for p, run in reused.items() if run}
    if reused:
        runs = sorted(set(reused.values()))
        with finished(out.parent, runs_of(reused), first + len(identities) - 1) as step:
            log.info("%s%s: %d of %d parts found in the job store, reused (finished in run%s %s; force=true reruns "
                     "them)", step, label, len(reused), parts, "s" * (len(runs) > 1), ", ".join(runs))
    return reused


def _run_parts(out: Path, todo: list[int], parts: int, size: int, specs: list[Any], members: list[Any],
               identities: list[Any], first: int, label: str) -> tuple[bool, dict[int, Any]]:
    """Run the parts ``todo`` (of ``parts``) in order, each written whole (:func:`_run_part`). Returns (whether a
    member failed, each part's results table as written)."""
    failed_any, tables = False, {}
    for p in todo:  # in order: the parts not already done
        lo, hi = p * size, min((p + 1) * size, len(members))
        failed, tables[p] = _run_part(out, p, parts, specs[lo:hi], members[lo:hi], identities[lo:hi], first + lo, label)
        failed_any |= failed
    return failed_any, tables


# ---------------------------------------------------------------- the sweep's end

def member_path(sweep_dir: Path, n: int, job: int) -> Path:
    """Where a failed member is named: ``pack-K/run-J`` (no such file; :func:`member_label` reads it)."""
    return sweep_dir / pack_dir_name(job // n) / f"run-{job}"


def _member(path: Path) -> int | None:
    """The sweep's index of the member ``path`` names (:func:`member_path`), None for another path."""
    if not (path.parent.name.startswith("pack-") and path.name.startswith("run-")):
        return None
    try:
        return int(path.name.removeprefix("run-"))
    except ValueError:
        return None


def member_overrides(path: Path) -> list[str] | None:
    """A member's overrides, from its pack's ``members.json`` (None: not a member's path, or not recorded)."""
    job = _member(path)
    if job is None:
        return None
    try:
        listed = json.loads((path.parent / "members.json").read_text())
        return [str(o) for o in listed["members"][job - int(listed["first"])]]
    except (OSError, ValueError, KeyError, IndexError, TypeError):
        return None


def member_failure(path: Path, attempt: float | None = None) -> dict[str, Any] | None:
    """A failed member's record of its error (``pipeline.sweep.stages.failure_record``), from its part's marker; None
    when the member is not named there (its part was never written whole, or a marker of an older version), or
    when that marker is not current (:func:`current_members` with the sweep's ``attempt``, and the part's
    members as they are now): an earlier attempt's record never speaks for this one."""
    job = _member(path)
    if job is None:
        return None
    current = current_members(path.parent, attempt)
    if isinstance(current, str):
        if attempt is not None or (path.parent / "error.txt").exists():
            return None
        markers = [_read_marker(m) or {} for m in sorted(path.parent.glob("part-*.json"))]  # no attempt to check against
    else:
        first, identities = current
        size = part_size(len(identities))
        if not 0 <= job - first < len(identities):
            return None
        p = (job - first) // size
        done = _read_marker(_part_paths(path.parent, p)[2]) or {}
        markers = [done] if done.get("members") == identities[p * size:(p + 1) * size] else []
    for done in markers:
        found = done.get("errors")
        if isinstance(found, dict) and isinstance(found.get(str(job)), dict):
            return found[str(job)]
    return None


def member_label(path: Path) -> str | None:
    """A failed member as a reader finds it: its pack directory, its index and overrides (None for a path
    that is not a member's)."""
    job = _member(path)
    if job is None:
        return None
    chosen = " ".join(member_overrides(path) or [])
    return f"{path.parent} run {job}" + (f" ({chosen})" if chosen else "")


def collect(sweep_dir: Path, size: int, n: int, results: Any, curves: Any, attempt: float | None = None) -> list[Path]:
    """Add the result and curve tables of a packed sweep of ``size`` jobs in packs of ``n`` to the gatherers
    ``results`` and ``curves`` (``pipeline.outputs.tables.Gather``), part by part in job order; return the members
    that failed or left no readable results (:func:`member_path`). Only what this run of the sweep vouched for
    is read (``attempt``: the sweep's start, ``pipeline.sweep.context.Sweep.start``; None: not checked): a pack that
    failed whole, never ran in this sweep or stopped before it built its members counts each of its members as
    failed (:func:`current_members`), and so does a part that is not complete and current (:func:`read_part`,
    the predicate a rerun uses to decide what to run again): stale, damaged, truncated or gone. The parts are read
    by ``READERS`` threads, ``WINDOW`` parts ahead at most (``pipeline.outputs.tables``), and gathered in job order
    (as an unpacked sweep's jobs: ``pipeline.sweep.callbacks.collect``)."""
    from concurrent.futures import ThreadPoolExecutor

    from pipeline.outputs.tables import READERS, WINDOW

    failed: list[Path] = []
    size_of_part = part_size(n)
    plan: list[tuple[int, int, Any]] = []  # in job order: (first run, past the last, the part to read or why none)
    for k in range(math.ceil(size / n)):
        out = sweep_dir / pack_dir_name(k)
        count = min(n, size - k * n)
        current = current_members(out, attempt)
        if isinstance(current, str) or current[0] != k * n or len(current[1]) != count:
            why = current if isinstance(current, str) else "its members.json is for another grid"
            plan.append((k * n, k * n + count, (out, why)))
            continue
        identities = current[1]
        for p in range(math.ceil(count / size_of_part)):
            lo, hi = k * n + p * size_of_part, min(k * n + (p + 1) * size_of_part, k * n + count)
            plan.append((lo, hi, (out, p, identities[p * size_of_part:(p + 1) * size_of_part])))

    def read(item: tuple[int, int, Any]) -> Any:
        return read_part(*item[2]) if len(item[2]) == 3 else None

    with ThreadPoolExecutor(READERS, thread_name_prefix="boundlab-collect") as pool:  # pyarrow reads without the GIL
        for start in range(0, len(plan), WINDOW):
            window = plan[start:start + WINDOW]
            for (lo, hi, what), got in zip(window, pool.map(read, window)):
                if len(what) == 2:  # the pack has no current part: each of its members counts as failed
                    log.error("%s: runs %d-%d count as failed: %s", what[0], lo, hi - 1, what[1])
                    failed += [member_path(sweep_dir, n, j) for j in range(lo, hi)]
                elif isinstance(got, str):  # stale, damaged or gone: its members have no result (a rerun runs it)
                    if got != "not written":
                        log.error("%s part %d (runs %d-%d): %s; its runs count as failed", what[0], what[1], lo, hi - 1,
                                  got)
                    failed += [member_path(sweep_dir, n, j) for j in range(lo, hi)]
                else:
                    table, part_curve, done = got
                    if table.num_rows:
                        results.add(table)
                        curves.add(part_curve)
                    failed += [member_path(sweep_dir, n, int(j)) for j in sorted(done.get("failed") or {}, key=int)]
    return failed


__all__ = ["KEY", "PART", "by_setting", "collect", "current_members", "decode", "encode", "member_failure", "member_label",
           "member_overrides", "member_path", "pack_overrides", "packs_of", "part_complete", "part_identity", "read_part",
           "run_pack"]
