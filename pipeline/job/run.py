"""The one run loop: generate the data, run the learner, evaluate every bound that applies."""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from pipeline.bounds.registry import bounds_for
from pipeline.job.config import Job
from pipeline.data import Dataset
from pipeline.data.certify import content_hash
from pipeline.params import UserError
from pipeline.job.statistics import available, complete
from pipeline.numerics import jobs_on_one_blas_thread


@dataclass
class Result:
    """What one run produced.

    table : one row per (run, bound): the measured quantity next to the bound, with the run's
        parameters and the data's certified statistics.
    curve : long table (run, quantity, t, empirical): each measured quantity after step t, on a
        log-spaced grid of t (for plots and MLflow).
    trace : the per-step arrays of the run (e.g. ``mistake``: 1 where step t was a mistake).
    dataset : the data the learner saw.
    """

    table: pd.DataFrame
    curve: pd.DataFrame
    trace: dict[str, np.ndarray]
    dataset: Dataset


def _seeds(job: Job) -> tuple[np.random.SeedSequence, np.random.SeedSequence]:
    data_seed, algorithm_seed = np.random.SeedSequence(job.seed).spawn(2)
    return data_seed, algorithm_seed


def refusal(learner: object, ds: object) -> str:
    """Why ``learner`` cannot take ``ds``: the sample's declared kind is not among those the learner
    ``accepts`` (pipeline.data.dataset.KINDS)."""
    name = learner.name
    if ds.kind == "multiclass":
        return (f"algorithm={name} is a binary learner and dataset {ds.name} has {ds.k} classes; "
                "use algorithm=multiclass_sgd, multiclass_svm, ova or multiclass_pegasos")
    if ds.kind == "stream":
        return (f"dataset {ds.name} is streamed in chunks, never held whole; algorithm={name} "
                "needs the whole sample: use algorithm=perceptron or dataset=margin_binary")
    if "multiclass" in learner.accepts:
        return f"algorithm={name}: dataset {ds.name} is binary; use dataset=multiclass_margin or dataset=multiclass_bundled"
    return f"algorithm={name} takes {' or '.join(sorted(learner.accepts))} data; dataset {ds.name} is {ds.kind}"


def prepare(job: Job) -> Dataset:
    """The job's data, checked against its learner: raises :class:`pipeline.params.UserError` before
    anything is run or written if the learner cannot take them: a kind of data it does not accept
    (:func:`refusal`), or what its ``check_data`` refuses (e.g. a batch larger than the sample)."""
    jobs_on_one_blas_thread()  # the same bits whatever BLAS's thread count (a QR's and a product's roundings follow it)
    ds = job.dataset.generate(np.random.default_rng(_seeds(job)[0]))
    if ds.kind not in job.learner.accepts:
        raise UserError(refusal(job.learner, ds))
    job.learner.check_data(ds)
    ds = job.learner.present(ds)
    verify_radius(ds)
    return ds


def verify_radius(ds: Dataset) -> None:
    """A certificate the data contradict is refused before anything is judged against it: the radius R a
    dataset reports must be at least every row's norm (one pass over the sample; a plug-in's R below them
    would turn into a false (D) violation). Computed norms may exceed the true ones by a few units of
    rounding, which the tolerance allows; a stream, never held whole, is not checked here."""
    R = getattr(getattr(ds, "stats", None), "R", None)
    X = getattr(ds, "X", None)
    if R is None or X is None or ds.kind == "stream" or X.shape[0] == 0:
        return
    import scipy.sparse

    sq = np.asarray(X.multiply(X).sum(axis=1)).ravel() if scipy.sparse.issparse(X) else np.einsum("ij,ij->i", X, X)
    largest = float(np.sqrt(sq.max()))
    if not float(R) >= largest * (1.0 - 1e-12):
        raise UserError(f"dataset {ds.name}: its certified radius R = {float(R)!r} is below the norm of one of its rows "
                        f"({largest!r}): a certificate its own data contradict; the dataset's statistics must come "
                        "from the vectors the learner sees (docs/plugins.md)")


class InputChanged(UserError):
    """A learner wrote into the data it was handed (:func:`check_unchanged`): its run is refused, whatever it
    measured, since the sample it ran on is no longer the one whose statistics were certified."""


def fingerprint(ds: object) -> dict[str, str]:
    """Content hashes of every array a dataset holds (``X, y`` together: :func:`content_hash`, the run's
    ``data_hash``; then each other array: ``hypotheses``, each of ``directions``, ``X_test``, a stream's
    generating arrays, ...), by name. What a learner is handed must hash the same after its run.

    Hashing, not read-only flags: numba compiles a second version of every kernel for read-only arrays
    (seconds each on first use); one more pass of SHA-256 over the sample costs about as much as the
    ``data_hash`` each run computes anyway (docs/plugins.md)."""
    import dataclasses

    import scipy.sparse

    out: dict[str, str] = {}
    X, y = getattr(ds, "X", None), getattr(ds, "y", None)
    if X is not None and y is not None:
        out["X, y"] = content_hash(X, y)
    fields = ({f.name: getattr(ds, f.name, None) for f in dataclasses.fields(ds)} if dataclasses.is_dataclass(ds)
              else dict(vars(ds)) if hasattr(ds, "__dict__") else {})
    for name, value in fields.items():
        if name in ("X", "y") and "X, y" in out:
            continue
        items = value.items() if isinstance(value, dict) else [(None, value)]
        for key, v in items:
            if isinstance(v, np.ndarray) or scipy.sparse.issparse(v):
                out[name.lstrip("_") + (f"[{key!r}]" if key is not None else "")] = _array_hash(v)
    return out


def _array_hash(a: Any) -> str:
    import hashlib

    import scipy.sparse

    h = hashlib.sha256()
    parts = [a.data, a.indices, a.indptr] if scipy.sparse.issparse(a) and hasattr(a, "indptr") else (
        [a.toarray()] if scipy.sparse.issparse(a) else [a])
    for p in parts:
        p = np.asarray(p)
        h.update(str((p.dtype.str, p.shape)).encode())
        h.update(memoryview(np.ascontiguousarray(p)).cast("B") if p.dtype != object else repr(p.tolist()).encode())
    return h.hexdigest()[:16]


def check_unchanged(learner: str, before: dict[str, str], after: dict[str, str]) -> None:
    """Raise :class:`InputChanged`, one line naming the learner and the arrays, if the data a learner was
    handed changed during its run: it measured on another sample than the one whose statistics (R, the
    margins) certify the bounds, and the data kept with the run would be the changed ones."""
    changed = [k for k in before.keys() | after.keys() if before.get(k) != after.get(k)]
    if changed:
        order = list(before) + [k for k in after if k not in before]
        names = ", ".join(k for k in order if k in changed)
        raise InputChanged(f"learner {learner} changed its input data: {names} differ after its run from what it was "
                           "handed; the run is refused and nothing of it is kept (a learner must copy an array before "
                           "writing into it: docs/plugins.md)")


@dataclass
class RunRows:
    """What one run's tables are made of: its key, its rows (one per bound, and per part) and its curves
    (quantity -> (t, values)). :func:`run` makes its tables; a pack makes one pair for a part's runs
    (:func:`part_tables`)."""

    key: str
    rows: list[dict[str, Any]]
    curves: dict[str, tuple[Any, Any]]


@dataclass
class Measured:
    """What one run measured, before its tables: its rows, its trace and its data."""

    rows: RunRows
    trace: dict[str, np.ndarray]
    dataset: Dataset


def run(job: Job, ds: Dataset | None = None) -> Result:
    """Run ``job`` (on ``ds`` from :func:`prepare`, or freshly prepared). Data and algorithm draw from
    separate streams spawned from the job's seed."""
    m = measure(job, ds)
    return Result(table=rows_table(m.rows.rows), curve=curve_table(m.rows.key, m.rows.curves), trace=m.trace,
                  dataset=m.dataset)


def measure(job: Job, ds: Dataset | None = None) -> Measured:
    """:func:`run` up to its tables: the learner, the statistics and the bounds, as rows and curves."""
    ds = prepare(job) if ds is None else ds
    learner = job.learner
    algorithm_seed = _seeds(job)[1]
    streamed = ds.kind == "stream"
    before = fingerprint(ds)  # what the learner is handed: it must find the same after its run
    outcome = learner.run(ds, np.random.default_rng(algorithm_seed))
    # a stream is never materialised: no statistic read off the whole sample (the comparators' margins)
    bounds = [b for b in bounds_for(learner.name) if available(b, ds)]
    outcome = complete(ds, learner, outcome, bounds)  # the statistics these bounds read, from the providers
    check_unchanged(learner.name, before, fingerprint(ds))
    stats = ds.stats.as_dict() | outcome.stats

    ident = {"run": job.key(), "setting": job.key(seeded=False), "experiment": job.experiment, "learner": learner.name,
             "dataset": ds.name, "param_names": " ".join(["learner", "dataset", *sorted(job.params())])}
    context = job.params() | {k: stats[k] for k in ("T", "R", "gamma_lo", "gamma_hi", "gap", "separable") if k in stats}
    context |= {k: v for k, v in outcome.stats.items() if isinstance(v, (int, float, str, bool)) and k not in context}
    context |= {k: v for k, v in getattr(ds, "extra", {}).items() if k not in context}
    context["data_hash"] = ds.data_hash if streamed else before["X, y"]
    rows, curves = [], {}
    parts = outcome.parts.items() if outcome.parts else [("", outcome)]
    for part, out in parts:  # one-vs-all: every binary problem is judged on its own
        part_stats = stats | out.stats
        label = {"part": part} if part else {}
        if part:  # the part's own statistics (its comparator, constants) as columns of its rows
            label |= {k: v for k, v in out.stats.items() if isinstance(v, (int, float, str, bool))}
        rows += [ident | b.evaluate(part_stats, out.quantities, out.steps) | context | label for b in bounds]
        prefix = f"{part}/" if part else ""
        curves |= {f"{prefix}{q}": v for q, v in out.curves.items()}
        for b in bounds:  # anytime bounds as curves beside the measured ones (plots never recompute a bound)
            if b.quantity in out.curves:
                t = out.curves[b.quantity][0]
                values = b.curve_of(part_stats, t, out.steps)
                if values is not None:
                    curves[f"{prefix}bound/{b.name}"] = (t, values)
    if outcome.parts:
        curves |= outcome.curves
    return Measured(rows=RunRows(key=job.key(), rows=rows, curves=curves), trace=outcome.trace, dataset=ds)


def rows_table(rows: list[dict[str, Any]]) -> pd.DataFrame:
    """The run's rows (one per bound, and per part) as its results table."""
    return pd.DataFrame(rows)


def _signature(rows: list[dict[str, Any]]) -> tuple[Any, ...]:
    """What pandas' inference of a frame from ``rows`` reads: each row's keys in order, and each column's set of
    value types (exact types: ``bool`` is not ``int``, ``np.float64`` is not ``float``)."""
    types: dict[str, set[type]] = {}
    for row in rows:
        for k, v in row.items():
            types.setdefault(k, set()).add(type(v))
    return tuple(tuple(r) for r in rows), tuple((k, frozenset(t)) for k, t in types.items())


def _shape(rows: list[dict[str, Any]]) -> tuple[Any, ...]:
    """Each row's keys and the types of its values, in order: rows of the same shape have the same
    :func:`_signature` (each column's set of types is the union of its rows' types)."""
    return tuple((tuple(row), tuple(map(type, row.values()))) for row in rows)


# The columns' sets of value types whose dtype pandas infers from the types alone (tests/test_run_tables.py tries
# each with adversarial values): one type, or one type with None. Integers are checked apart (see part_tables).
_BY_TYPE = {frozenset(t) for t in ({float}, {int}, {bool}, {str}, {type(None)}, {np.float64}, {float, type(None)},
                                   {bool, type(None)}, {str, type(None)})}


def part_tables(runs: list[RunRows]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The results and curves of ``runs``: exactly ``pd.concat`` of each run's own tables (:func:`run`'s), each
    built once for all of them when that is the same frame, cell for cell and dtype for dtype.

    pandas infers a column's dtype from the types of its values (floats, with None: float64 and NaN; bools with
    None: object; ...), and ``pd.concat`` keeps a dtype the frames share. So when every run's rows have the same
    keys in the same order and each column the same set of value types in every run, one of the sets whose dtype
    follows from the types alone (``_BY_TYPE``), each run's frame has the dtypes of the frame of all of them, and
    the frame of all the rows is their concatenation. Integers follow their values too (beyond int64 they become
    uint64 or object): an integer column must come out int64. Curves likewise, when every run has a point and their
    steps and values one dtype each. Any other case takes the runs one by one. A packed part of 100-250 runs built
    ~0.6 ms of frames a run and concatenated them (docs/performance.md, "Seeds by the thousand");
    tests/test_run_tables.py tries the equality on generated rows of every kind."""
    if not runs:
        return pd.DataFrame(), pd.DataFrame()
    table = curve = None
    first = _signature(runs[0].rows)
    if all(kinds in _BY_TYPE for _, kinds in first[1]):
        shape = _shape(runs[0].rows)  # the same keys and value types row by row: the same signature, found cheaper
        same = all(_shape(m.rows) == shape or _signature(m.rows) == first for m in runs[1:])
    else:
        same = False
    if same:
        table = rows_table([row for m in runs for row in m.rows])
        ints = [k for k, kinds in first[1] if kinds == {int}]
        if any(table[k].dtype != np.int64 for k in ints):
            table = None
    kinds = {_curve_kinds(m.curves) for m in runs}
    if len(kinds) == 1 and None not in kinds:
        curve = _curves_table([(m.key, m.curves) for m in runs])
    if table is None:
        table = pd.concat([rows_table(m.rows) for m in runs], ignore_index=True)
    if curve is None:
        curve = pd.concat([curve_table(m.key, m.curves) for m in runs], ignore_index=True)
    return table, curve


@functools.cache
def _strings() -> tuple[Any, Any]:
    """The dtype pandas infers for a column of strings, and its Arrow type (None when it is not Arrow-backed)."""
    import pyarrow as pa

    sample = pd.Series(["a"])
    return sample.dtype, pa.array(sample.array).type if getattr(sample.dtype, "storage", None) == "pyarrow" else None


def _repeated(labels: list[str], sizes: list[int]) -> Any:
    """Each of ``labels`` ``sizes`` times, as the column pandas infers from those strings. With pandas' Arrow-backed
    strings (pandas 3) the distinct labels are taken in Arrow: no string is made or converted per cell (a part's
    curves, ~92,000 points: 8 -> 1.3 ms, the same parquet bytes); else an object array, for pandas to infer."""
    dtype, arrow = _strings()
    if arrow is not None and all(type(label) is str for label in labels):
        import pyarrow as pa

        return pd.array(pa.array(labels, type=arrow).take(np.repeat(np.arange(len(labels)), sizes)), dtype=dtype)
    column = np.empty(sum(sizes), dtype=object)
    column[:] = np.repeat(np.array(labels, dtype=object), sizes)
    return column


def _curve_kinds(curves: dict[str, tuple[Any, Any]]) -> tuple[Any, Any] | None:
    """The dtypes of a run's curve table's steps and values (None: no point, its table's columns typed apart)."""
    ts = [np.asarray(t) for t, _ in curves.values()]
    if not sum(t.shape[0] for t in ts):
        return None
    return np.result_type(*ts), np.result_type(*(np.asarray(v) for _, v in curves.values()))  # the concatenations' dtypes


def curve_table(run_key: str, curves: dict[str, tuple[Any, Any]]) -> pd.DataFrame:
    """The run's curves as one long table (run, quantity, t, empirical), built in one step: the table
    ``pd.concat`` of one frame per curve gives, cell for cell and dtype for dtype, at a fraction of the cost
    (a packed sweep builds one per run). A run no bound speaks of may have no curve: an empty table with
    the columns."""
    if not curves:
        return pd.DataFrame({"run": pd.Series(dtype=object), "quantity": pd.Series(dtype=object),
                             "t": pd.Series(dtype=np.int64), "empirical": pd.Series(dtype=np.float64)})
    return _curves_table([(run_key, curves)])


def _curves_table(runs: list[tuple[str, dict[str, tuple[Any, Any]]]]) -> pd.DataFrame:
    """The curves of runs that each have some, one after the other, as one long table."""
    keys, names, ts, values = [], [], [], []
    for key, curves in runs:
        for q, (t, v) in curves.items():
            t = np.asarray(t)
            keys.append(key)
            names.append(q)
            ts.append(t)
            values.append(np.asarray(v))
    sizes = [t.shape[0] for t in ts]
    return pd.DataFrame({"run": _repeated(keys, sizes), "quantity": _repeated(names, sizes), "t": np.concatenate(ts),
                         "empirical": np.concatenate(values)})
