"""The conformance check a plug-in author runs: one call per learner, bound or dataset (docs/plugins.md).

>>> from pipeline.testing import check_learner
>>> from pipeline.learners import Perceptron
>>> report = check_learner(Perceptron, seeds=(0,))
>>> "learn_one equals run" in report.passed, "no (D) bound violated" in report.passed
(True, True)

Each function raises :class:`AssertionError` with one clear message on the first failure and otherwise
returns a :class:`Report`: the checks that passed and those that do not apply, each with the reason.

What is checked (small samples, a few seeds: each call takes seconds):

- ``check_learner(Class)``: it declares ``name``, ``params`` (each a constructor keyword) and ``accepts`` (kinds
  of :data:`pipeline.data.dataset.KINDS`); parameter validation (a value of the wrong type, and values outside
  each declared :class:`pipeline.params.Param`'s predicate, raise :class:`pipeline.params.UserError` with a one-line
  message naming the parameter);
  pickling (a fresh learner round-trips and then runs to the same outcome; a learner after its run pickles);
  determinism (the same seed gives a bit-identical :class:`Outcome`); no mutation of the dataset's arrays;
  ``learn_one`` fed row by row equals the whole-stream ``run`` (its ``mistake`` trace, and ``w_``), where the
  learner has ``learn_one``; each curve ends at its quantity's final value; and no (D) bound of the learner is
  violated on the library's constructions (margin data, noisy margin data, the tight construction, shells, a
  finite class, multiclass margin data, a stream: those the learner accepts) over a few seeds.
- ``check_bound(bound)``: a well-formed :class:`pipeline.bounds.Bound`; its learner is registered (or given);
  every statistic it ``requires`` is provided by the dataset's certified statistics, the learner's
  ``Outcome.stats`` or a registered statistic provider (:func:`pipeline.job.statistics.registry`), its ``quantity``
  by ``Outcome.quantities`` or such a provider (per step in
  ``Outcome.steps`` for ``anytime="trace"``); its value is deterministic; a (D) bound is never violated.
- ``check_dataset(Class, **params)``: it declares ``name``, ``params`` and ``kind``, and ``generate`` makes a sample
  of that kind; parameter validation; pickling (the generator and the sample); determinism (the same seed gives
  bit-identical arrays and statistics); the
  certified statistics agree with the arrays (``m``, ``d``, ``R`` >= every row's norm, ``gamma_lo <= gamma_hi``,
  no known direction beats ``gamma_hi``, labels +1/-1 for binary data); some built-in learner runs on it with
  no (D) bound violated.
"""

from __future__ import annotations

import inspect
import math
import pickle
from dataclasses import dataclass, field, fields, is_dataclass
from typing import Any, Iterable

import numpy as np

from pipeline.judging.guarantees import GUARANTEES, PER_RUN
from pipeline.judging.guarantees import guarantee as kind_of
from pipeline.params import REQUIRED, Param, UserError, param_defaults

# Values for parameters that need one (no default) or whose default is large: a check runs in seconds.
SMALL: dict[str, Any] = {"gamma": 0.1, "rho": 1.0, "lam": 0.1, "B": 10.0, "T": 300, "n": 60, "d": 5, "n_test": 1000,
                         "k": 3, "chunk": 16}

PREFERRED = ("perceptron", "halving", "multiclass_sgd")  # the learners check_dataset tries first


def _preference(name: str) -> tuple[int, str]:
    return (PREFERRED.index(name) if name in PREFERRED else len(PREFERRED), name)

# The library's constructions a learner is run on (those it accepts): dataset name -> parameters.
CONSTRUCTIONS: tuple[tuple[str, dict[str, Any]], ...] = (
    ("margin_binary", {"gamma": 0.1, "rho": 1.0, "n": 60, "d": 5}),
    ("margin_binary", {"gamma": 0.05, "rho": 1.0, "n": 60, "d": 5, "flip": 0.1}),
    ("tight", {"rho": 1.0, "n": 20}),
    ("shells", {"rho": 1.0, "n": 60, "d": 5}),
    ("finite_class", {"n": 60}),
    ("multiclass_margin", {"k": 3, "gamma": 0.1, "rho": 1.0, "d": 5, "n": 60, "n_test": 1000}),
    ("stream", {"gamma": 0.1, "rho": 1.0, "n": 60, "d": 5, "chunk": 16}),
)


@dataclass
class Report:
    """What a check verified: ``passed`` check names, ``not_applicable`` check -> why not."""

    subject: str
    passed: list[str] = field(default_factory=list)
    not_applicable: dict[str, str] = field(default_factory=dict)

    def __str__(self) -> str:
        lines = [f"{self.subject}: {len(self.passed)} checks passed"]
        lines += [f"  passed: {p}" for p in self.passed]
        lines += [f"  not applicable: {k} ({v})" for k, v in self.not_applicable.items()]
        return "\n".join(lines)


def _fail(subject: str, check: str, message: str) -> AssertionError:
    return AssertionError(f"{subject}: {check}: {message}")


# --- Shared pieces ----------------------------------------------------------------------------------

def _declares(cls: Any, subject: str, need: tuple[str, ...]) -> None:
    missing = [a for a in need if not hasattr(cls, a)]
    if not isinstance(cls, type) or missing:
        raise _fail(subject, "declares name and params", f"a class with {', '.join(need)} is expected; missing "
                    f"{', '.join(missing) or 'a class'}")
    if not isinstance(cls.name, str) or not cls.name:
        raise _fail(subject, "declares name and params", "'name' must be a non-empty string")
    if not isinstance(cls.params, tuple) or not all(isinstance(p, Param) for p in cls.params):
        raise _fail(subject, "declares name and params", "'params' must be a tuple of pipeline.params.Param")
    signature = inspect.signature(cls.__init__).parameters
    absent = [p.name for p in cls.params if p.name not in signature]
    if absent:
        raise _fail(subject, "declares name and params", f"parameters {absent} are declared but not constructor "
                    "keywords (config keys are constructor argument names)")


def _declares_kinds(cls: Any, subject: str, attr: str) -> None:
    """A learner's ``accepts`` (a non-empty set of kinds) or a dataset's ``kind``: kinds of KINDS."""
    from pipeline.data.dataset import KINDS

    value = getattr(cls, attr, None)
    kinds = value if isinstance(value, (set, frozenset)) else {value} if attr == "kind" else None
    if not kinds or not all(isinstance(k, str) and k in KINDS for k in kinds):
        what = "a frozenset of" if attr == "accepts" else "one of"
        raise _fail(subject, "declares its kinds", f"{attr!r} must be {what} {', '.join(KINDS)} "
                    f"(pipeline.data.dataset.KINDS); got {value!r}")


def _kwargs(cls: type, given: dict[str, Any]) -> dict[str, Any]:
    """Constructor arguments: ``given``, then SMALL values for declared parameters (sizes, required ones)."""
    defaults = param_defaults(cls)
    out = {name: SMALL[name] for name, default in defaults.items()  # not where None means "from the data" (a file's d)
           if name in SMALL and default is not None}
    out |= given
    missing = [name for name, default in defaults.items() if name not in out and default is REQUIRED]
    if missing:
        raise _fail(cls.__name__, "construction", f"required parameters {missing} have no value: pass them "
                    f"(e.g. check_...({cls.__name__}, {missing[0]}=...))")
    return out


def _make(cls: type, kwargs: dict[str, Any], subject: str) -> Any:
    try:
        obj = cls(**kwargs)
        obj.check()
    except UserError as e:
        raise _fail(subject, "construction", f"{cls.__name__}(**{kwargs}) is refused: {e}") from None
    return obj


def _bad_values(p: Param) -> list[Any]:
    """A value of the wrong type, then candidate values of the right type that ``p.valid`` rejects."""
    wrong = {str: 12345, bool: "maybe", int: "many", float: "much"}.get(p.type, object())
    candidates = {int: [-(10**9), -1, 0, 1, 2, 10**12], float: [-1e300, -1.0, 0.0, 1e-320, 0.5, 1.0, 2.0, 1e300, math.inf],
                  str: ["", "no-such-option"], bool: []}.get(p.type, [])
    bad = [wrong]
    for c in candidates:
        try:
            if not p.valid(c):
                bad.append(c)
        except Exception:  # noqa: BLE001 - a predicate that cannot take the value rejects it
            bad.append(c)
    return bad


def _check_params(cls: type, kwargs: dict[str, Any], subject: str) -> int:
    """Every declared parameter refuses bad values with a one-line UserError naming it; returns how many were tried."""
    tried = 0
    for p in cls.params:
        for i, value in enumerate(_bad_values(p)):
            tried += 1
            try:
                cls(**(kwargs | {p.name: value})).check()
            except UserError as e:
                text = str(e)
                if "\n" in text or not text:
                    raise _fail(subject, "parameter validation", f"{p.name}={value!r}: the message must be one line, "
                                f"got {text!r}") from None
                if i == 0 and p.name not in text:
                    raise _fail(subject, "parameter validation", f"{p.name}={value!r}: the message does not name the "
                                f"parameter: {text!r}") from None
                continue
            except Exception as e:  # noqa: BLE001
                raise _fail(subject, "parameter validation", f"{p.name}={value!r}: raised {type(e).__name__} "
                            f"({e}), not pipeline.params.ParamError/UserError") from None
            raise _fail(subject, "parameter validation", f"{p.name}={value!r} is accepted by check(), but the Param "
                        f"allows only {p.allowed}: call pipeline.params.check_params(self) in check()")
    return tried


def _same(a: Any, b: Any, where: str = "") -> str | None:
    """None when ``a`` and ``b`` are bit-identical (arrays, numbers, dicts, dataclasses), else where they differ."""
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        a, b = np.asarray(a), np.asarray(b)
        if a.dtype != b.dtype or a.shape != b.shape:
            return f"{where}: {a.dtype}{a.shape} vs {b.dtype}{b.shape}"
        return None if a.tobytes() == b.tobytes() else f"{where}: arrays differ"
    if hasattr(a, "tocsr") and hasattr(b, "tocsr"):  # scipy sparse
        a, b = a.tocsr(), b.tocsr()
        return (_same(a.data, b.data, where) or _same(a.indices, b.indices, where) or _same(a.indptr, b.indptr, where))
    if isinstance(a, dict) and isinstance(b, dict):
        if set(a) != set(b):
            return f"{where}: keys {sorted(map(str, a))} vs {sorted(map(str, b))}"
        for k in a:
            diff = _same(a[k], b[k], f"{where}.{k}" if where else str(k))
            if diff:
                return diff
        return None
    if isinstance(a, (tuple, list)) and isinstance(b, (tuple, list)):
        if len(a) != len(b):
            return f"{where}: lengths {len(a)} vs {len(b)}"
        for i, (x, y) in enumerate(zip(a, b)):
            diff = _same(x, y, f"{where}[{i}]")
            if diff:
                return diff
        return None
    if is_dataclass(a) and is_dataclass(b) and not isinstance(a, type):
        return _same({f.name: getattr(a, f.name) for f in fields(a)}, {f.name: getattr(b, f.name) for f in fields(b)}, where)
    if isinstance(a, float) and isinstance(b, float):
        return None if (a == b or (math.isnan(a) and math.isnan(b))) else f"{where}: {a!r} vs {b!r}"
    try:
        return None if a == b else f"{where}: {a!r} vs {b!r}"
    except Exception:  # noqa: BLE001 - objects without a usable ==
        return None


def _arrays(ds: Any) -> dict[str, Any]:
    """The arrays of a sample (copies), to see whether a run changed them."""
    out: dict[str, Any] = {}
    for k in ("X", "y", "hypotheses", "X_test", "y_test"):
        v = getattr(ds, k, None)
        if v is not None and (isinstance(v, np.ndarray) or hasattr(v, "tocsr")):
            out[k] = v.copy()
    for k, v in (getattr(ds, "directions", None) or {}).items():
        out[f"directions.{k}"] = np.array(v, copy=True)
    return out


def _seeds(seed: int) -> tuple[np.random.Generator, np.random.Generator]:
    data_seed, algorithm_seed = np.random.SeedSequence(seed).spawn(2)  # as pipeline.job.run does
    return np.random.default_rng(data_seed), np.random.default_rng(algorithm_seed)


def _compatible(learner: Any, generator: Any, seed: int) -> tuple[Any, str | None]:
    """(the job's sample, None) when ``learner`` runs on ``generator``'s data, else (None, why not)."""
    from pipeline.job.config import Job
    from pipeline.job.run import prepare

    try:
        return prepare(Job(experiment="conformance", seed=seed, learner=learner, dataset=generator)), None
    except UserError as e:
        return None, str(e)


def _stats(bounds: Iterable[Any], ds: Any, outcome: Any, learner: Any = None) -> dict[str, Any]:
    """The statistics the pipeline hands the bounds (pipeline.job.run.run): the sample's and the outcome's,
    completed by the statistic providers with what ``bounds`` read."""
    from pipeline.job.statistics import complete

    return ds.stats.as_dict() | complete(ds, learner, outcome, bounds).stats


def _judge(bounds: tuple[Any, ...], ds: Any, outcome: Any, subject: str, where: str,
           learner: Any = None) -> list[dict[str, Any]]:
    """Evaluate ``bounds`` on one run as the pipeline does (each part of a split run on its own); fail on a
    statistic or quantity neither the run nor a statistic provider gives, or on a violated (D) bound."""
    from pipeline.job.statistics import available

    bounds = tuple(b for b in bounds if available(b, ds))
    stats = _stats(bounds, ds, outcome, learner)
    rows = []
    for part, out in (outcome.parts.items() if outcome.parts else [("", outcome)]):
        part_stats = stats | out.stats
        for b in bounds:
            missing = [k for k in b.requires if k not in part_stats]
            if missing:
                raise _fail(subject, "statistics provided", f"bound {b.name} requires {missing}, which neither the "
                            f"dataset's statistics, the learner's Outcome.stats nor a statistic provider for its "
                            f"run's record {type(out.run).__name__ if out.run is not None else None} "
                            f"(pipeline.job.statistics) provide ({where}); provided: "
                            f"{sorted(part_stats)}")
            for q in (b.quantity, b.quantity_low):
                if q and q not in out.quantities:
                    raise _fail(subject, "statistics provided", f"bound {b.name} bounds {q!r}, which the learner's "
                                f"Outcome.quantities lacks ({where}); it has {sorted(out.quantities)}")
            if b.anytime == "trace" and b.quantity not in out.steps:
                raise _fail(subject, "statistics provided", f"bound {b.name} is judged at every step and the learner "
                            f"gives no Outcome.steps[{b.quantity!r}] ({where})")
            row = b.evaluate(part_stats, out.quantities, out.steps or None)
            again = b.evaluate(part_stats, out.quantities, out.steps or None)
            diff = _same({k: row[k] for k in ("theoretical", "holds")}, {k: again[k] for k in ("theoretical", "holds")})
            if diff:
                raise _fail(subject, "deterministic bound", f"bound {b.name} gives two values on the same statistics "
                            f"({diff}; {where})")
            if kind_of(b.guarantee).per_run and row["holds"] is False:
                raise _fail(subject, "no (D) bound violated", f"bound {b.name} ({b.formula}) is violated {where}"
                            f"{' part ' + part if part else ''}: measured {b.quantity} = {row['empirical']:.6g} > "
                            f"{row['theoretical']:.6g} (max ratio over t {row['max_ratio_over_t']:.6g})")
            rows.append(row | {"part": part})
    return rows


def _library(names: Iterable[tuple[str, dict[str, Any]]] = CONSTRUCTIONS) -> list[tuple[str, Any]]:
    from pipeline.data import DATASETS

    out = []
    for name, kwargs in names:
        if name in DATASETS:
            out.append((f"dataset={name}" + "".join(f" {k}={v}" for k, v in kwargs.items() if k not in ("gamma", "rho")),
                        DATASETS[name](**kwargs)))
    return out


def _final_values(outcome: Any, subject: str, where: str) -> None:
    """A curve ends at the final value of its quantity when it reaches the run's last step T."""
    T = outcome.stats.get("T")
    for q, (t, v) in outcome.curves.items():
        if q not in outcome.quantities or not len(t) or T is None or int(t[-1]) != int(T):
            continue
        last, final = float(np.asarray(v)[-1]), float(outcome.quantities[q])
        if not math.isclose(last, final, rel_tol=1e-9, abs_tol=1e-12):
            raise _fail(subject, "curves end at the quantities", f"curve {q!r} ends at {last!r} at t = T, the run's "
                        f"quantity is {final!r} ({where})")


# --- Learners ---------------------------------------------------------------------------------------

def check_learner(cls: type, *, params: dict[str, Any] | None = None, datasets: Iterable[Any] | None = None,
                  bounds: Iterable[Any] = (), seeds: Iterable[int] = (0, 1, 2)) -> Report:
    """Check a learner class (see the module docstring). ``params``: constructor arguments (sizes and
    required ones default to small values); ``datasets``: dataset generators to run on instead of the
    library's constructions; ``bounds``: bound records to judge besides those registered for its name."""
    from pipeline.bounds.registry import bounds_for
    from pipeline.job.config import Job
    from pipeline.job.run import run

    subject = f"learner {getattr(cls, 'name', cls)!r}"
    report = Report(subject)
    _declares(cls, subject, ("name", "params", "run", "check"))
    report.passed.append("declares name and params")
    _declares_kinds(cls, subject, "accepts")
    report.passed.append("declares its kinds")
    kwargs = _kwargs(cls, dict(params or {}))
    fresh = lambda: _make(cls, kwargs, subject)  # noqa: E731
    _check_params(cls, kwargs, subject)
    report.passed.append("parameter validation")

    seeds = tuple(seeds)
    generators = [(repr(g), g) for g in datasets] if datasets is not None else _library()
    runs, skipped = _runnable(fresh, generators, seeds[0], subject)
    _check_one_run(fresh, *runs[0], seeds[0], subject, report)  # on the first dataset and seed

    if hasattr(cls, "learn_one"):
        _learn_one(cls, fresh, runs, seeds[0], subject, report)
    else:
        report.not_applicable["learn_one equals run"] = "no learn_one(x, y): the learner has no single-step API"

    registered = tuple(bounds_for(cls.name))
    judged = registered + tuple(b for b in bounds if b not in registered)
    if not judged:
        report.not_applicable["no (D) bound violated"] = f"no bound names learner {cls.name!r}"
        return report
    for where, generator in runs:
        for seed in seeds:
            learner = fresh()
            ds, why = _compatible(learner, generator, seed)
            if ds is None:
                continue
            if not bounds and datasets is None:  # the pipeline's own loop, exactly as a job runs it
                result = run(Job(experiment="conformance", seed=seed, learner=learner, dataset=generator), ds)
                _check_table(result.table, subject, f"on {where} seed {seed}")
            else:
                out = learner.run(ds, np.random.default_rng(_seeds(seed)[1]))
                _judge(judged, ds, out, subject, f"on {where} seed {seed}", learner)
    report.passed += ["statistics provided", "no (D) bound violated"]
    if skipped:
        report.not_applicable["runs on " + ", ".join(w.split()[0] for w in skipped)] = "the learner refuses that data"
    return report


def _runnable(fresh: Any, generators: list[tuple[str, Any]], seed: int, subject: str) -> tuple[list, dict[str, str]]:
    """The (where, generator) pairs whose data a fresh learner accepts, and why it refuses each other one
    (where -> why); fails when it accepts none."""
    runs, skipped = [], {}
    for where, generator in generators:
        ds, why = _compatible(fresh(), generator, seed)
        if ds is None:
            skipped[where] = why
            continue
        runs.append((where, generator))
    if not runs:
        raise _fail(subject, "runs", f"no dataset it accepts among {', '.join(w for w, _ in generators)}: "
                    f"{'; '.join(f'{w}: {y}' for w, y in skipped.items())}")
    return runs, skipped


def _check_one_run(fresh: Any, where: str, generator: Any, seed: int, subject: str, report: Report) -> None:
    """Pickling, determinism, no mutation of the inputs and the curves' final values, on one dataset and seed."""
    from pipeline.job.statistics import measure

    ds, _ = _compatible(fresh(), generator, seed)
    before = _arrays(ds)
    learner = fresh()
    try:
        copy = pickle.loads(pickle.dumps(learner))
    except Exception as e:  # noqa: BLE001
        raise _fail(subject, "pickling", f"a fresh learner does not pickle: {type(e).__name__}: {e}") from None
    first = measure(learner, ds, np.random.default_rng(_seeds(seed)[1]))  # the run and its providers' statistics
    diff = next((f"array {k}" for k, v in _arrays(ds).items() if _same(before[k], v)), None) or (
        "arrays removed" if set(_arrays(ds)) != set(before) else None)
    if diff:
        raise _fail(subject, "no mutation of inputs", f"run() changed the dataset's {diff} ({where}); copy before writing")
    try:
        pickle.loads(pickle.dumps(learner))
    except Exception as e:  # noqa: BLE001
        raise _fail(subject, "pickling", f"the learner after its run does not pickle: {type(e).__name__}: {e}") from None
    second = measure(fresh(), _compatible(fresh(), generator, seed)[0], np.random.default_rng(_seeds(seed)[1]))
    diff = _same(first, second, "Outcome")
    if diff:
        raise _fail(subject, "determinism", f"two runs with seed {seed} differ ({diff}; {where}): draw every random "
                    "number from the rng passed to run()")
    report.passed += ["determinism", "no mutation of inputs"]
    from_copy = measure(copy, ds, np.random.default_rng(_seeds(seed)[1]))
    diff = _same(first, from_copy, "Outcome")
    if diff:
        raise _fail(subject, "pickling", f"the unpickled learner runs to another outcome ({diff}; {where})")
    report.passed.append("pickling")
    _final_values(first, subject, where)
    report.passed.append("curves end at the quantities")


def _check_table(table: Any, subject: str, where: str) -> None:
    bad = table[table["guarantee"].isin(PER_RUN) & (table["holds"] == False)]  # noqa: E712 - holds is True/False/None
    if len(bad):
        r = bad.iloc[0]
        raise _fail(subject, "no (D) bound violated", f"bound {r['bound']} ({r['formula']}) is violated {where}: "
                    f"measured {r['quantity']} = {r['empirical']:.6g} > {r['theoretical']:.6g}")


def _learn_one(cls: type, fresh: Any, runs: list, seed: int, subject: str, report: Report) -> None:
    """``learn_one`` row by row against ``run`` over the same stream (one pass, in order)."""
    for where, generator in runs:
        ds, _ = _compatible(fresh(), generator, seed)
        if ds.kind == "stream" or not isinstance(ds.X, np.ndarray):  # one dense materialised sample
            continue
        out = fresh().run(ds, np.random.default_rng(_seeds(seed)[1]))
        trace = out.trace.get("mistake")
        if trace is None or len(trace) != ds.X.shape[0]:
            report.not_applicable["learn_one equals run"] = ("run() gives no one-pass 'mistake' trace to compare "
                                                             "learn_one with")
            return
        stepper, whole = fresh(), fresh()
        flags = np.array([bool(stepper.learn_one(ds.X[i], ds.y[i])) for i in range(ds.X.shape[0])], dtype=np.int8)
        if not np.array_equal(flags, np.asarray(trace, dtype=np.int8)):
            t = int(np.flatnonzero(flags != np.asarray(trace, dtype=np.int8))[0]) + 1
            raise _fail(subject, "learn_one equals run", f"learn_one and run() disagree first at step t = {t} ({where})")
        whole.run(ds, np.random.default_rng(_seeds(seed)[1]))
        if hasattr(stepper, "w_") and hasattr(whole, "w_") and _same(stepper.w_, whole.w_):
            raise _fail(subject, "learn_one equals run", f"the weights after learn_one over the stream differ from "
                        f"those after run() ({where}): not bit-identical")
        report.passed.append("learn_one equals run")
        return
    report.not_applicable["learn_one equals run"] = "no materialised binary sample among its datasets"


# --- Bounds -----------------------------------------------------------------------------------------

def check_bound(bound: Any, *, learner: type | None = None, params: dict[str, Any] | None = None,
                datasets: Iterable[Any] | None = None, seeds: Iterable[int] = (0, 1, 2)) -> Report:
    """Check a bound record (see the module docstring). ``learner``: its learner class when not registered
    under ``bound.learner``; ``params``, ``datasets``, ``seeds``: as for :func:`check_learner`."""
    from pipeline.bounds.base import Bound
    from pipeline.learners import LEARNERS

    subject = f"bound {getattr(bound, 'name', bound)!r}"
    report = Report(subject)
    if not isinstance(bound, Bound):
        raise _fail(subject, "a Bound record", f"a pipeline.bounds.Bound is expected, got {type(bound).__name__}")
    problems = [w for ok, w in ((bound.name and bound.name.replace("_", "").isalnum(), "name: letters, digits and _"),
                                (bound.guarantee in GUARANTEES, f"guarantee: one of {', '.join(GUARANTEES)}"),
                                (bound.anytime in ("", "trace", "monotone"), "anytime: '', 'trace' or 'monotone'"),
                                (isinstance(bound.requires, tuple), "requires: a tuple of statistic names"),
                                (bool(bound.quantity), "quantity: the learner's quantity it bounds"),
                                (bound.anytime != "trace" or bound.curve is not None, "anytime='trace' needs curve"))
                if not ok]
    if problems:
        raise _fail(subject, "a Bound record", "; ".join(problems))
    report.passed.append("a Bound record")
    if learner is None:
        if bound.learner not in LEARNERS:
            raise _fail(subject, "names a registered learner", f"learner {bound.learner!r} is not registered (one of "
                        f"{', '.join(sorted(LEARNERS))}); pass learner=Class to check it before installing")
        learner = LEARNERS[bound.learner]
    elif learner.name != bound.learner:
        raise _fail(subject, "names a registered learner", f"the bound names learner {bound.learner!r}, the class given "
                    f"is {learner.name!r}")
    report.passed.append("names a registered learner")
    kwargs = _kwargs(learner, dict(params or {}))
    seeds = tuple(seeds)
    generators = [(repr(g), g) for g in datasets] if datasets is not None else _library()
    judged = 0
    for where, generator in generators:
        for seed in seeds:
            lrn = _make(learner, kwargs, subject)
            ds, why = _compatible(lrn, generator, seed)
            if ds is None:
                break
            out = lrn.run(ds, np.random.default_rng(_seeds(seed)[1]))
            rows = _judge((bound,), ds, out, subject, f"on {where} seed {seed} with learner {learner.name}", lrn)
            judged += sum(bool(r["applicable"]) for r in rows)
    report.passed += ["statistics provided", "deterministic bound"]
    kind = kind_of(bound.guarantee)
    if kind.per_run:
        report.passed.append("no (D) bound violated")
    else:
        report.not_applicable["no (D) bound violated"] = (
            f"a ({bound.guarantee}) bound speaks of an expectation or a probability: a sweep's verdict judges it, not "
            "one run" if kind.over_seeds else "the bound is reported, never judged (guarantee '-')")
    if kind.over_seeds and bound.range is None:
        report.not_applicable["declares a range"] = (
            "no range(stats) declared: an (E) verdict needs its top to show 'holds' and its bottom to show "
            "'violated' (docs/plugins.md); without one the sweep's verdict stays inconclusive")
    elif kind.over_seeds:
        report.passed.append("declares a range (checked against every measurement)")
    if not judged:
        report.not_applicable["applies"] = "it did not apply on any of the datasets tried"
    return report


# --- Datasets ---------------------------------------------------------------------------------------

def _materialise(ds: Any) -> dict[str, Any]:
    """The sample's content: arrays (a stream's chunks concatenated), statistics, hypotheses, directions."""
    if ds.kind == "stream":
        parts = list(ds.chunks())
        X = np.concatenate([np.asarray(x) for x, _ in parts]) if parts else np.zeros((0, 0))
        y = np.concatenate([np.asarray(y) for _, y in parts]) if parts else np.zeros(0)
        return {"X": X, "y": y, "stats": ds.stats.as_dict()}
    out = {"stats": ds.stats.as_dict()} | _arrays(ds)
    return out


def check_dataset(cls: type, *, seeds: Iterable[int] = (0, 1), **params: Any) -> Report:
    """Check a dataset generator class (see the module docstring); ``params`` are its constructor arguments
    (sizes and required margins default to small values)."""
    from pipeline.job.config import Job
    from pipeline.learners import LEARNERS
    from pipeline.job.run import run

    subject = f"dataset {getattr(cls, 'name', cls)!r}"
    report = Report(subject)
    _declares(cls, subject, ("name", "params", "generate", "check", "get_params"))
    report.passed.append("declares name and params")
    _declares_kinds(cls, subject, "kind")
    report.passed.append("declares its kinds")
    kwargs = _kwargs(cls, params)
    generator = _make(cls, kwargs, subject)
    _check_params(cls, kwargs, subject)
    report.passed.append("parameter validation")
    seeds = tuple(seeds)

    ds = generator.generate(_seeds(seeds[0])[0])
    if getattr(ds, "kind", None) != cls.kind:
        raise _fail(subject, "declares its kinds", f"the class declares kind {cls.kind!r} and generate() made a sample "
                    f"of kind {getattr(ds, 'kind', None)!r} ({type(ds).__name__}; pipeline.data.dataset.KINDS)")
    content = _materialise(ds)
    diff = _same(content, _materialise(_make(cls, kwargs, subject).generate(_seeds(seeds[0])[0])), "sample")
    if diff:
        raise _fail(subject, "determinism", f"two samples with seed {seeds[0]} differ ({diff}): draw every random number "
                    "from the rng passed to generate()")
    report.passed.append("determinism")
    try:
        copy = pickle.loads(pickle.dumps(generator))
        diff = _same(content, _materialise(copy.generate(_seeds(seeds[0])[0])), "sample") or _same(
            generator.get_params(), copy.get_params(), "params")
        pickle.loads(pickle.dumps(ds))
    except Exception as e:  # noqa: BLE001
        raise _fail(subject, "pickling", f"{type(e).__name__}: {e}") from None
    if diff:
        raise _fail(subject, "pickling", f"the unpickled generator makes another sample ({diff})")
    report.passed.append("pickling")
    _check_stats(ds, content, subject)
    report.passed.append("certified statistics agree with the arrays")

    tried = []
    for name in sorted((n for n in LEARNERS if LEARNERS.is_builtin(n)), key=_preference):
        learner_cls = LEARNERS[name]
        learner = _make(learner_cls, _kwargs(learner_cls, {}), subject)
        if _compatible(learner, generator, seeds[0])[0] is None:
            continue
        for seed in seeds:
            lrn = _make(learner_cls, _kwargs(learner_cls, {}), subject)
            result = run(Job(experiment="conformance", seed=seed, learner=lrn, dataset=generator))
            _check_table(result.table, subject, f"with algorithm={name} seed {seed}")
        tried.append(name)
        break
    if tried:
        report.passed.append(f"runs with algorithm={tried[0]}, no (D) bound violated")
    else:
        report.not_applicable["runs with a built-in learner"] = "no built-in learner accepts this sample"
    return report


def _check_stats(ds: Any, content: dict[str, Any], subject: str) -> None:
    stats = content["stats"]
    X, y = content.get("X"), content.get("y")
    what = "certified statistics agree with the arrays"
    if X is None or y is None:
        raise _fail(subject, what, "the sample has no X and y")
    m, d = X.shape
    if stats.get("m", m) != m or stats.get("d", d) != d:
        raise _fail(subject, what, f"stats say m = {stats.get('m')}, d = {stats.get('d')}; the arrays are {m} x {d}")
    if len(y) != m:
        raise _fail(subject, what, f"{len(y)} labels for {m} rows")
    if "R" in stats and m:
        rows = X.multiply(X).sum(axis=1).A.ravel() if hasattr(X, "multiply") else np.einsum("ij,ij->i", X, X)
        norm = float(np.sqrt(rows.max()))
        if norm > stats["R"] * (1 + 1e-12):
            raise _fail(subject, what, f"R = {stats['R']!r} is below a row's norm {norm!r}: R must bound every ||x_i||")
    lo, hi = stats.get("gamma_lo", math.nan), stats.get("gamma_hi", math.nan)
    if lo == lo and hi == hi and lo > hi:
        raise _fail(subject, what, f"gamma_lo = {lo!r} > gamma_hi = {hi!r}")
    if stats.get("separable") and not lo > 0:
        raise _fail(subject, what, f"separable with gamma_lo = {lo!r}: a certified separable sample has gamma_lo > 0")
    if ds.kind != "multiclass" and "gamma_lo" in stats:
        labels = set(np.unique(np.asarray(y)).tolist())
        if not labels <= {-1.0, 1.0}:
            raise _fail(subject, what, f"binary labels must be +1/-1, found {sorted(labels)[:5]}")
        for name, w in (getattr(ds, "directions", None) or {}).items():
            w = np.asarray(w, dtype=np.float64)
            if hi == hi and np.linalg.norm(w) > 0:
                margin = float((np.asarray(y) * (X @ w)).min() / np.linalg.norm(w))
                if margin > hi * (1 + 1e-9) + 1e-12:
                    raise _fail(subject, what, f"direction {name!r} has margin {margin!r} > gamma_hi = {hi!r}: the "
                                "certificate's upper end is wrong")
