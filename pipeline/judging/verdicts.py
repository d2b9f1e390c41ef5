"""The one home of judging: what a row, a setting, a sweep and a claim conclude (docs/bounds.md, "How a verdict is decided").

Every verdict is one of :data:`HOLDS`, :data:`VIOLATED`, :data:`INCONCLUSIVE` or :data:`NOT_APPLICABLE`,
with a sentence of evidence. The rules, by guarantee type (docs/bounds.md section 9):

- a **row** (one run, one bound) compares the measured quantity with the bound, at the last step or at
  every step ``t`` when the bound is an anytime statement (``max_ratio_over_t``), and with the bound's
  *trivial value*, the quantity's value for a learner that never learns (``informative`` when the bound
  is below it: a bound at or above it says nothing about the run);
- **(D)** violated when any run exceeds its bound (at any judged step); holds when none does and at least
  one run is informative; inconclusive when every run is vacuous;
- **units**: the rows are first reduced to distinct jobs; within a setting (the runs that differ only in
  their seed) each run is an independent unit; runs of one seed in different settings share their data and
  random streams, so settings are never pooled: a claim holds when every informative setting holds, and is
  violated when Holm's procedure over the settings rejects;
- **(E)** per setting, distribution-free tests of the mean by betting (:mod:`pipeline.judging.limits`): holds when
  the test of "E[measured] >= bound" rejects (it needs the top of the quantity's declared range), violated
  when the test of "E[measured] <= bound" from the lower estimate rejects after Holm (it needs the bottom);
  Student t limits are a description only;
- **(P)** per setting, the one-sided 95 % Clopper-Pearson limits of the violation rate against delta (in a
  sequential sweep, anytime-valid betting tests of the rate instead).

Every summary also says what it could have caught (``tightness``, ``detects_scale``), and an inconclusive
one what blocks it and how many distinct seeds would settle it. The row level (:func:`judge_row`, the
intervals, the verdict words) lives in :mod:`pipeline.judging.rows`, which the jobs import; this module, the
sweep level, imports nothing of the package beyond it and :mod:`pipeline.judging.limits`, and no job imports it, so
editing a sweep-level rule re-judges sweeps without rerunning a job (``pipeline.job.identity``). It is used by
the job's log line, the sweep callback, ``metrics.json``, MLflow and the report.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any, Iterable, Mapping, Sequence

import numpy as np

from pipeline.judging import limits
from pipeline.judging.guarantees import guarantee as kind_of
from pipeline.judging.rows import (  # noqa: F401 - the row level, re-exported: this module's callers read them here
    HOLDS, VIOLATED, INCONCLUSIVE, NOT_APPLICABLE, VERDICTS, LEVEL, ALPHA, MAX_N, mean_of,
    quotient, t_limits, hoeffding_half_width, binomial_limits, mean_interval, judge_row, _ratio, row_phrase,
)


# --- Sweeps: one summary per bound -------------------------------------------------------------------

@dataclass
class Judgement:
    """What a set of rows of one bound concludes."""

    verdict: str
    evidence: str
    decided_by: str = ""


def _setting_keys(rows: Any) -> list[str]:
    return ["setting", "part"] if "part" in rows and rows["part"].notna().any() else ["setting"]


def _settings(rows: Any) -> list[tuple[Any, Any]]:
    keys = _setting_keys(rows)
    return [(k, sel) for k, sel in rows.groupby(keys, sort=True, dropna=False)]


def _runs_needed_p(k: int, n: int, delta: float) -> int | None:
    """Runs at which the Clopper-Pearson upper limit at the observed rate k/n falls to delta (None: never)."""
    from scipy import stats

    rate = k / n if n else 0.0
    if rate >= delta:
        return None
    ns = np.arange(max(n, 1), MAX_N + 1)
    ks = np.round(rate * ns)
    upper = np.where(ks < ns, stats.beta.ppf(LEVEL, ks + 1, ns - ks), 1.0)
    ok = upper <= delta
    return int(ns[np.argmax(ok)]) if ok.any() else None


def _holm(pvalues: list[float], alpha: float = ALPHA) -> list[bool]:
    """Holm's step-down rejections at family-wise level ``alpha``."""
    order = sorted(range(len(pvalues)), key=lambda i: pvalues[i])
    reject = [False] * len(pvalues)
    for rank, i in enumerate(order):
        if pvalues[i] > alpha / (len(pvalues) - rank):
            break
        reject[i] = True
    return reject


def setting_labels(rows: Any) -> dict[Any, str]:
    """A readable name for each setting: the parameters (``param_names``) that differ between the settings
    of ``rows``, e.g. 'lam=0.1 T=1000' (the seed excluded), with the one-vs-all part."""
    keys = _setting_keys(rows)
    names = str(rows["param_names"].iloc[0]).split() if "param_names" in rows else []
    varying = [c for c in names if c in rows and c != "seed" and rows[c].nunique(dropna=False) > 1]
    out = {}
    for key, sel in rows.groupby(keys, sort=True, dropna=False):
        first = sel.iloc[0]
        label = " ".join(f"{c}={first[c]:g}" if isinstance(first[c], float) else f"{c}={first[c]}" for c in varying)
        part = first.get("part") if "part" in keys else None
        out[key] = " ".join(x for x in (label, str(part) if isinstance(part, str) else "") if x) or "the only setting"
    return out


def distinct(rows: Any) -> Any:
    """One row per job: a job listed twice in a grid (a repeated seed, one value spelt two ways) runs once and
    is one unit of evidence however often it is listed."""
    keys = [k for k in ("run", "part") if k in rows]
    if not keys or not len(rows):
        return rows
    return rows.drop_duplicates(subset=keys, keep="first")


def _examples(rows: Any, k: int = 3) -> str:
    """The ``k`` runs of ``rows`` a reader should look at first: the largest measured/bound, then by name
    (the same words whatever order the sweep's jobs finished in)."""
    ranked = sorted(zip(-rows["max_ratio_over_t"].astype(float).fillna(-math.inf), rows["run"].astype(str)))
    return ", ".join(run for _, run in ranked[:k])


def _units(sel: Any) -> int:
    """The independent units of a setting's rows: its distinct seeds (every row when no seed is recorded)."""
    return int(sel["seed"].nunique()) if "seed" in sel else len(sel)


def _range_columns(sel: Any) -> tuple[np.ndarray, np.ndarray]:
    lo = sel["range_lo"].to_numpy(dtype=np.float64) if "range_lo" in sel else np.full(len(sel), math.nan)
    hi = sel["range_hi"].to_numpy(dtype=np.float64) if "range_hi" in sel else np.full(len(sel), math.nan)
    return np.where(np.isnan(lo), -math.inf, lo), np.where(np.isnan(hi), math.inf, hi)


@dataclass
class _Sample:
    """A setting's (E) evidence: per distinct seed the upper and lower estimates of the quantity (clipped to
    its declared range, which a true value cannot leave), the bound, and the range."""

    up: np.ndarray
    low: np.ndarray
    bound: np.ndarray
    lo: np.ndarray
    hi: np.ndarray

    def holds_at(self, scale: float = 1.0, n: int | None = None) -> limits.Test:
        return limits.test_below(self.up, self.bound * scale, self.lo, self.hi, ALPHA, n)

    def violated_at(self, scale: float = 1.0, n: int | None = None) -> limits.Test:
        return limits.test_above(self.low, self.bound * scale, self.lo, self.hi, ALPHA, n)

    def take(self, idx: np.ndarray) -> "_Sample":
        return _Sample(self.up[idx], self.low[idx], self.bound[idx], self.lo[idx], self.hi[idx])


def _sample(sel: Any) -> _Sample:
    lo, hi = _range_columns(sel)
    up = np.minimum(sel["empirical"].to_numpy(dtype=np.float64), hi)
    low_col = sel["empirical_low"] if "empirical_low" in sel else sel["empirical"]
    low = np.maximum(low_col.to_numpy(dtype=np.float64), lo)
    return _Sample(up, low, sel["theoretical"].to_numpy(dtype=np.float64), lo, hi)


def _largest_scale(ok: Any, top: float = 1e6) -> float | None:
    """The largest k in [1, top] with ``ok(1/k)`` true, for a property that holds for every k below a
    threshold (bisection on log k to 0.1 %); None when ``ok(1)`` is false."""
    if not ok(1.0):
        return None
    if ok(1.0 / top):
        return top
    a, b = 0.0, math.log(top)
    while b - a > 1e-3:
        mid = (a + b) / 2.0
        a, b = (mid, b) if ok(math.exp(-mid)) else (a, mid)
    return math.exp(a)


PLANTED = (0.99, 0.95, 0.9, 0.8, 0.7, 0.5, 0.3, 0.2, 0.1, 0.05, 0.02, 0.01, 0.001)  # bound scales tried for detection
RESAMPLES = 100  # bootstrap resamples of the units behind a detection rate
DETECTION = 0.8  # the detection probability a planted error is reported at


def _detectable(violated: Any, groups: list[int]) -> float | None:
    """The mildest planted error the verdict catches with probability >= 0.8: the largest scale s of
    :data:`PLANTED` at which ``violated(idx_per_setting, s)`` is true in at least 80 % of bootstrap
    resamples of each setting's units (the observed runs standing in for their distribution; a fixed
    resampling seed keeps the figure reproducible). None: not even the bound x 0.001."""
    rng = np.random.default_rng(0)
    draws = [[rng.integers(0, n, n) for n in groups] for _ in range(RESAMPLES)]
    need = DETECTION * RESAMPLES
    for s in PLANTED:
        caught = missed = 0
        for d in draws:  # counted until the count is decided either way: the same answer, a fraction of the tests
            if violated(d, s):
                caught += 1
            else:
                missed += 1
            if caught >= need or RESAMPLES - missed < need:
                break
        if caught >= need:
            return s
    return None


def expectation_settings(rows: Any, planned: int | None = None) -> list[dict[str, Any]]:
    """(E) per setting: distinct seeds, mean measured and bound, the verdict and the tests behind it
    (:mod:`pipeline.judging.limits`): "holds" when the test of "mean >= bound" rejects, which needs the top of the
    quantity's declared range; "violated" when the test of "mean <= bound", from the lower estimate and the
    bottom of the range, rejects after Holm's correction over the given settings. The Student t limits are
    given as description and decide nothing. ``planned``: the seed budget of a sequential sweep (the tests are
    anytime valid whatever it is: their bets depend on no planned count). ``floor_seeds``: the fewest seeds any
    test could decide from at the observed mean, bound and range (:func:`pipeline.judging.limits.floor_seeds`);
    ``floor_ratio``: the seeds this test needs at the observed values (where it decided, or ``seeds_needed``)
    over that floor."""
    out: list[dict[str, Any]] = []
    labels = setting_labels(rows)
    for key, sel in _settings(rows):
        sel = sel.sort_values("seed", kind="stable") if "seed" in sel else sel  # the betting order: by seed
        x = _sample(sel)
        n = _units(sel)
        hold, above = x.holds_at(1.0, planned), x.violated_at(1.0, planned)
        mean = mean_of(sel["empirical"])
        _, _, t_hi = t_limits(sel["empirical"].to_numpy(dtype=np.float64))
        # the limits beside the verdict: over the range that holds every value (each seed's own range when they
        # differ, e.g. a top that reads the seed's sample, lies inside it: a wider range gives valid limits)
        lo, hi = (float(x.lo.min()), float(x.hi.max())) if len(sel) else (-math.inf, math.inf)
        ucl = limits.upper_limit(x.up, lo, hi) if hold.decidable else math.inf
        lcl = limits.lower_limit(x.low, lo, hi) if above.decidable else -math.inf
        out.append({
            "setting": key if isinstance(key, tuple) else (key,), "label": labels[key], "seeds": n, "mean": mean,
            "bound": mean_of(sel["theoretical"]), "trivial": mean_of(sel["trivial"]),
            "informative": bool(sel["informative"].astype(bool).all()), "range": [lo, hi],
            "ucl": ucl, "lcl": lcl, "t_ucl": t_hi, "pvalue": above.p, "holds": hold.reject,
            "upper_decidable": hold.decidable, "lower_decidable": above.decidable, "sample": x,
            "first_holds": hold.first, "first_violated": above.first,
            "bracket": bool(np.any(x.up - x.low > 0.1 * np.abs(x.bound))),  # the estimates differ by > 10 % of the bound
            # the information floor at the observed mean, bound and range (no test decides from fewer seeds)
            "floor_seeds": limits.floor_of(x.up, x.bound, x.lo, x.hi, ALPHA) if len(sel) else math.inf,
        })
    for s, reject in zip(out, _holm([s["pvalue"] for s in out])):
        s["violated"] = reject
        s["verdict"] = VIOLATED if reject else (HOLDS if s["holds"] else INCONCLUSIVE)
        s["seeds_needed"], s["blocked_by"] = None, ""
        if s["verdict"] == INCONCLUSIVE:
            if not s["upper_decidable"]:
                s["blocked_by"] = "no upper end of the quantity's range is declared"
            else:
                x = s["sample"]  # the observed values repeated: where the test's capital first reaches 1/alpha
                s["seeds_needed"] = limits.seeds_to_decide(x.up, x.bound, x.lo, x.hi, ALPHA, MAX_N)
                s["blocked_by"] = "seed noise" if s["seeds_needed"] else "the mean is not below the bound"
        # floor_ratio: the seeds the test needs at the observed values (where it decided when it holds, else
        # seeds_needed) over the floor at the observed mean; None when either is unknown or infinite
        needed = s["first_holds"] if s["holds"] else s["seeds_needed"]
        s["floor_ratio"] = needed / s["floor_seeds"] if needed and 0 < s["floor_seeds"] < math.inf else None
    return out


def _finite(v: Any) -> Any:
    """A float that is not finite becomes None (metrics.json is strict JSON); lists element-wise."""
    if isinstance(v, float) and not math.isfinite(v):
        return None
    if isinstance(v, list):
        return [_finite(x) for x in v]
    return v


def _public(s: Mapping[str, Any]) -> dict[str, Any]:
    keys = ("label", "seeds", "mean", "bound", "trivial", "informative", "range", "lcl", "ucl", "t_ucl", "verdict",
            "seeds_needed", "blocked_by", "floor_seeds", "floor_ratio")
    return {k: _finite(s[k]) for k in keys}


def _flag(rows: Any, column: str) -> Any:
    """A boolean column of ``rows`` as booleans, False where missing (tables written before it existed)."""
    if column not in rows:
        return rows["holds"].astype(bool) & False
    return rows[column].map(lambda v: bool(v) if v is not None and v == v else False).astype(bool)


def _judge_deterministic(applicable: Any) -> tuple[Judgement, dict[str, Any]]:
    n = len(applicable)
    straddles = _flag(applicable, "straddles")
    violated = applicable[~applicable["holds"].astype(bool) & ~straddles]  # a violation needs the lower estimate above
    straddling = applicable[straddles]
    inform = applicable[applicable["informative"].astype(bool)]
    informative = len(inform)
    worst = float(applicable["max_ratio_over_t"].max())
    where = sorted(set(applicable["judged_at"].unique()) if "judged_at" in applicable else {"T only"})
    at = " and ".join(where)
    identities = applicable[_flag(applicable, "identity")]
    # every informative run measured at most 0 (e.g. no mistake at all): any smaller positive bound still holds
    largest = float(inform["max_ratio_over_t"].max()) if informative else math.nan
    tight = ((quotient(1.0, largest) if largest > 0 else math.inf) if informative and not len(violated)
             and not len(straddling) else None)
    extra = {"violations": len(violated), "max_ratio_over_t": worst, "judged_at": at,
             "informative_share": f"{informative} of {_n(n, 'run')} informative",
             "tightness": tight if tight is None or math.isfinite(tight) else MAX_TIGHT,
             # a (D) bound scaled below the largest ratio is violated by that run, every time
             "detects_scale": worst if 0 < worst <= 1 and not len(violated) else None, "straddling": len(straddling)}
    if len(violated):
        runs = _examples(violated)
        return Judgement(VIOLATED, f"{len(violated)} of {n} runs above the bound (judged at {at}); worst "
                         f"measured/bound {worst:.4g}; e.g. run {runs} (a bug until proven otherwise)", "every run"), extra
    checks = ""
    if len(identities):
        gaps = [quotient(t - e, a) for t, e, a in zip(identities["theoretical"], identities["empirical"],
                                                       identities["allowance"])]
        checks = (f"; {len(identities)} run(s) an identity up to rounding, counted as consistency checks, not evidence "
                  f"(bound - measured at most {max(gaps):.3g} x the rounding allowance)")
    if len(straddling):
        runs = _examples(straddling)
        return Judgement(INCONCLUSIVE, f"0 violations in {n} runs, but in {len(straddling)} of them the comparator's bracket "
                         "straddles the bound (the upper estimate above it, the lower one not): a tighter comparator "
                         f"decides them, e.g. run {runs}{checks}", "every run"), extra
    if not informative:
        why = "vacuous or an identity up to rounding" if len(identities) else "vacuous"
        return Judgement(INCONCLUSIVE, f"0 violations in {n} runs, but the bound is {why} in every run (not below "
                         f"the trivial value): no run could show what the theorem adds{checks}", "every run"), extra
    return Judgement(HOLDS, f"0 violations in {n} runs ({informative} informative), judged at {at}; largest "
                     f"measured/bound {worst:.4g}{checks}", "every run"), extra


MAX_TIGHT = 1e6  # a tightness factor is reported up to this (a measured 0 against a positive bound)


def _sequential_note(planned: int | None, at: int | None) -> str:
    if not planned:
        return ""
    where = f"decided at {at} seeds per setting; " if at else ""
    return f" ({where}anytime-valid tests of a sequential sweep with a budget of {planned} seeds)"


def _judge_expectation(applicable: Any, power: bool = True, planned: int | None = None,
                       lost: Mapping[str, Any] | None = None) -> tuple[Judgement, dict[str, Any]]:
    settings = expectation_settings(applicable, planned)
    _mark_missing(settings, lost, "seeds_needed")
    informative = [s for s in settings if s["informative"]]
    violated = [s for s in settings if s["verdict"] == VIOLATED]
    holding = [s for s in informative if s["verdict"] == HOLDS]
    open_ = [s for s in informative if s["verdict"] == INCONCLUSIVE]

    def ratio(s: Mapping[str, Any], v: float) -> float:
        return quotient(v, s["bound"]) if s["bound"] > 0 else math.inf

    worst = max(settings, key=lambda s: ratio(s, s["mean"]))
    seeds = sorted({s["seeds"] for s in settings})
    samples = [s["sample"] for s in informative]
    tight = _largest_scale(lambda k: all(x.holds_at(k).reject for x in samples), MAX_TIGHT) if samples and power else None

    def violated_at(idx: list[np.ndarray], scale: float) -> bool:
        return any(_holm([s["sample"].take(i).violated_at(scale).p for s, i in zip(settings, idx)]))

    detects = _detectable(violated_at, [len(s["sample"].up) for s in settings]) if power else None
    blocked = sorted({s["blocked_by"] for s in open_ if s["blocked_by"]})
    extra = {
        "settings": len(settings), "settings_informative": len(informative), "settings_holding": len(holding),
        "settings_violated": len(violated), "settings_inconclusive": len(open_), "seeds": seeds[-1],
        "informative_share": f"{len(informative)} of {_n(len(settings), 'setting')} informative",
        "worst_mean_ratio": ratio(worst, worst["mean"]),
        "worst_ucl_ratio": _finite(max((ratio(s, s["ucl"]) for s in informative), default=math.nan)),
        "seeds_needed": max((s["seeds_needed"] for s in open_ if s["seeds_needed"]), default=None)
        if not any(s["blocked_by"] and not s["seeds_needed"] for s in open_) else None,
        "blocked_by": blocked, "tightness": tight, "detects_scale": detects,
        "per_setting": [_public(s) | _missing_public(s) for s in settings],
    }
    if planned:
        extra["seed_budget"] = planned
        firsts = [s["first_holds"] for s in informative]
        extra["decided_at"] = (min((s["first_violated"] or MAX_N) for s in violated) if violated else
                               max(firsts) if firsts and all(firsts) and not open_ else None)
    head = (f"{_n(len(settings), 'setting')} of {'/'.join(map(str, seeds))} distinct seed{'' if seeds == [1] else 's'}, "
            f"{len(informative)} informative")
    decided = "betting test of the mean, one-sided 5 %" + (", anytime-valid (sequential)" if planned else "")
    note = _sequential_note(planned, extra.get("decided_at"))
    if violated:
        s = violated[0]
        return Judgement(VIOLATED, f"{head}; {len(violated)} setting(s) with E[measured] above the bound (Holm-corrected "
                         f"one-sided test at 5 %), e.g. {_fmt_setting(s)}: mean {s['mean']:.4g}, lower limit {s['lcl']:.4g} "
                         f"vs bound {s['bound']:.4g} (p = {s['pvalue']:.2g}){note}", decided + ", Holm-corrected"), extra
    if not informative:
        return Judgement(INCONCLUSIVE, f"{head}: the bound is vacuous (not below the trivial value) in every setting",
                         decided), extra
    if open_ and not [s for s in open_ if s["blocked_by"] != MISSING]:
        return Judgement(INCONCLUSIVE, f"{head}; {len(holding)} hold, {_only_missing(open_)}{note}", decided), extra
    if open_:
        s = max((s for s in open_ if s["blocked_by"] != MISSING), key=lambda s: ratio(s, s["mean"]))
        desc = f"mean {s['mean']:.4g} vs bound {s['bound']:.4g}"
        if math.isfinite(s["t_ucl"]):
            desc += f" (Student t upper limit {s['t_ucl']:.4g}, a description that decides nothing)"
        if s["blocked_by"] == "no upper end of the quantity's range is declared":
            more = ("the quantity has no declared upper end, so no number of seeds can bound its mean from above (a "
                    "rare large value could hide above any sample); " + (
                        "a violation would still be caught from the lower end of its range" if s["lower_decidable"] else
                        "with no lower end declared either, no violation can be shown: the bound needs a declared range"))
        elif s["seeds_needed"]:
            more = f"about {s['seeds_needed']} distinct seeds (there are {s['seeds']}) would settle it by seed noise alone"
            top, floor = (s.get("range") or [None, None])[1], s.get("floor_seeds")
            if top is not None and math.isfinite(top) and s["bound"] > 0 and floor and math.isfinite(floor):
                more += (f" (the range's top is {top / s['bound']:.3g} x the bound, and no valid test decides from fewer "
                         f"than {math.ceil(floor)} seeds at these values)")
            if s.get("bracket"):
                more += "; the comparator's bracket (upper minus lower estimate) is part of what blocks it"
        else:
            more = "the observed mean is not below the bound: more seeds could only show a violation"
        return Judgement(INCONCLUSIVE, f"{head}; {len(holding)} hold, {len(open_)} undecided, e.g. {_fmt_setting(s)}: "
                         f"{desc}; {more}{note}", decided), extra
    w = max(holding, key=lambda s: ratio(s, s["ucl"]))
    return Judgement(HOLDS, f"{head}, every informative setting holds: largest 95 % upper limit of the mean "
                     f"{ratio(w, w['ucl']):.3g} x the bound ({_fmt_setting(w)}){note}", decided), extra


def _n(count: int, word: str) -> str:
    """'1 setting', '3 settings'."""
    return f"{count} {word}{'' if count == 1 else 's'}"


def _fmt_setting(s: Mapping[str, Any]) -> str:
    return str(s["label"])


def _binomial_p(k: int, n: int, delta: float) -> float:
    """P(Binomial(n, delta) >= k): the exact p-value of "rate <= delta" from k events in n trials."""
    from scipy.stats import binom

    return float(binom.sf(k - 1, n, delta)) if k > 0 else 1.0


def probability_rule(k: list[int], k_low: list[int], n: list[int], delta: list[float]) -> list[str]:
    """The (P) verdict of each setting from its violations at the upper (``k``) and lower (``k_low``)
    estimates among ``n`` runs of distinct seeds: holds when the one-sided 95 % Clopper-Pearson upper limit
    of the rate is <= delta; violated when the exact binomial test of "rate <= delta" rejects after Holm's
    correction over the settings; inconclusive otherwise."""
    rejects = _holm([_binomial_p(kl, m, d) for kl, m, d in zip(k_low, n, delta)])
    return [VIOLATED if r else HOLDS if binomial_limits(kk, m)[1] <= d else INCONCLUSIVE
            for r, kk, m, d in zip(rejects, k, n, delta)]


def probability_settings(informative: Any, planned: int | None = None) -> list[dict[str, Any]]:
    """(P) per setting, over its informative runs (each of a distinct seed, so independent): violations,
    the one-sided 95 % Clopper-Pearson limits of the rate, the setting's delta (the mean of its informative
    runs'), the exact binomial p-value of "rate <= delta" from the violations at the lower estimate. In a
    sequential sweep (``planned``: its seed budget) Clopper-Pearson would lose its level to the optional
    stopping: the rate is then judged by the anytime-valid betting tests of :mod:`pipeline.judging.limits` on the
    violation indicators (in seed order, bets tuned to the budget)."""
    labels = setting_labels(informative) if len(informative) else {}
    out = []
    for key, sel in _settings(informative):
        sel = sel.sort_values("seed", kind="stable") if "seed" in sel else sel
        n = len(sel)
        k = int((~sel["holds"].astype(bool)).sum())
        low = sel["empirical_low"] if "empirical_low" in sel else sel["empirical"]
        k_low = int((low > sel["theoretical"]).sum())
        # the bound's own failure probability where it declares one (e.g. 1/2 + delta), else the run's delta
        own = sel["failure"] if "failure" in sel and sel["failure"].notna().all() else None
        delta = mean_of(own) if own is not None else mean_of(sel["delta"]) if "delta" in sel else ALPHA
        lo, hi = binomial_limits(k_low, n)[0], binomial_limits(k, n)[1]
        out.append({"setting": key if isinstance(key, tuple) else (key,),
                    "label": labels[key], "runs": n, "seeds": _units(sel), "violations": k, "violations_low": k_low,
                    "delta": delta, "lcl": lo, "ucl": hi, "pvalue": _binomial_p(k_low, n, delta),
                    "ratio": (low / sel["theoretical"]).to_numpy(dtype=np.float64),
                    "ratio_up": sel["max_ratio_over_t"].to_numpy(dtype=np.float64),
                    "up": (~sel["holds"].astype(bool)).to_numpy(dtype=np.float64),
                    "low": (low > sel["theoretical"]).to_numpy(dtype=np.float64)})
    if planned:
        tests = [(limits.test_below(s["up"], s["delta"], 0.0, 1.0, ALPHA, planned),
                  limits.test_above(s["low"], s["delta"], 0.0, 1.0, ALPHA, planned)) for s in out]
        for s, reject, (hold, above) in zip(out, _holm([a.p for _, a in tests]), tests):
            s["pvalue"], s["first_holds"], s["first_violated"] = above.p, hold.first, above.first
            s["verdict"] = VIOLATED if reject else HOLDS if hold.reject else INCONCLUSIVE
            s["runs_needed"] = None
        return out
    verdicts = probability_rule([s["violations"] for s in out], [s["violations_low"] for s in out],
                                [s["runs"] for s in out], [s["delta"] for s in out])
    for s, verdict in zip(out, verdicts):
        s["verdict"] = verdict
        s["runs_needed"] = _runs_needed_p(s["violations"], s["runs"], s["delta"]) if s["verdict"] == INCONCLUSIVE else None
    return out


def _judge_probability(applicable: Any, power: bool = True, planned: int | None = None,
                       lost: Mapping[str, Any] | None = None) -> tuple[Judgement, dict[str, Any]]:
    all_settings = len(_settings(applicable))
    informative = applicable[applicable["informative"].astype(bool)]
    settings = probability_settings(informative, planned)
    _mark_missing(settings, lost, "runs_needed")
    n = len(informative)
    k = sum(s["violations"] for s in settings)
    violated = [s for s in settings if s["verdict"] == VIOLATED]
    open_ = [s for s in settings if s["verdict"] == INCONCLUSIVE]
    deltas = sorted({s["delta"] for s in settings})

    def holds_at(scale: float) -> bool:  # every setting holds, by the rule that decided, with the bound scaled
        if planned:
            return all(limits.test_below((s["ratio_up"] > scale).astype(float), s["delta"], 0.0, 1.0, ALPHA, planned).reject
                       for s in settings)
        return all(binomial_limits(int((s["ratio_up"] > scale).sum()), s["runs"])[1] <= s["delta"] for s in settings)

    def violated_at(idx: list[np.ndarray], scale: float) -> bool:
        return any(_holm([_binomial_p(int((s["ratio"][i] > scale).sum()), len(i), s["delta"])
                          for s, i in zip(settings, idx)]))

    tight = _largest_scale(holds_at, MAX_TIGHT) if settings and power else None
    detects = _detectable(violated_at, [s["runs"] for s in settings]) if settings and power else None
    extra = {"informative_runs": n, "violations": k, "violation_rate": k / n if n else None,
             "violation_rate_ucl": max((s["ucl"] for s in settings), default=None),
             "violation_rate_lcl": max((s["lcl"] for s in settings), default=None),
             "delta": deltas[0] if len(deltas) == 1 else deltas,
             "settings": all_settings, "settings_informative": len(settings),
             "informative_share": f"{len(settings)} of {_n(all_settings, 'setting')} informative",
             "runs_needed": max((s["runs_needed"] or MAX_N for s in open_), default=None),
             "tightness": tight, "detects_scale": detects,
             "per_setting": [{k_: s[k_] for k_ in ("label", "runs", "seeds", "violations", "delta", "lcl", "ucl", "verdict",
                                                   "runs_needed")} | _missing_public(s) for s in settings]}
    decided = "one-sided 95 % Clopper-Pearson limit per setting"
    if planned:  # the per-setting tests are the betting ones: the power figures follow them
        extra["seed_budget"] = planned
        extra["decided_at"] = (min((s["first_violated"] or MAX_N) for s in violated) if violated else
                               max(s["first_holds"] for s in settings) if settings and not open_ else None)
        decided = "betting test of the violation rate per setting, anytime-valid (sequential)"
    note = _sequential_note(planned, extra.get("decided_at"))
    if n == 0:
        return Judgement(INCONCLUSIVE, f"the bound is vacuous (not below the trivial value) in all {len(applicable)} runs",
                         decided), extra
    head = f"{k} violations in {n} informative runs of distinct seeds per setting ({len(settings)} of {all_settings} settings)"
    if violated:
        s = violated[0]
        return Judgement(VIOLATED, f"{head}; {s['label']}: {s['violations_low']} of {s['runs']} above the bound, 95 % lower "
                         f"limit {s['lcl']:.3g} > delta {s['delta']:g} (Holm-corrected, p = {s['pvalue']:.2g}){note}",
                         decided + " (lower), Holm-corrected"), extra
    if open_ and not [s for s in open_ if s.get("blocked_by") != MISSING]:
        return Judgement(INCONCLUSIVE, f"{head}; {_only_missing(open_)}{note}", decided), extra
    if open_:
        s = max((s for s in open_ if s.get("blocked_by") != MISSING), key=lambda s: s["ucl"] - s["delta"])
        need = s["runs_needed"]
        more = (f"about {need} distinct seeds in that setting (there are {s['runs']}) would settle it at the observed rate"
                if need else "more seeds, added in rounds, may settle it" if planned and s["violations"] < s["runs"] * s["delta"]
                else "its observed rate is not below delta: more runs could only show a violation")
        if s["violations"] > s["violations_low"]:  # above the bound at the upper estimate only: the bracket blocks
            more += (f"; {s['violations'] - s['violations_low']} of its {s['violations']} violations lie within the "
                     "comparator's bracket (above the bound at the upper estimate only): a tighter comparator decides those")
        return Judgement(INCONCLUSIVE, f"{head}; {len(open_)} setting(s) undecided, e.g. {s['label']}: {s['violations']} of "
                         f"{s['runs']}, 95 % limits [{s['lcl']:.3g}, {s['ucl']:.3g}] straddle delta {s['delta']:g}; {more}{note}",
                         decided), extra
    w = max(settings, key=lambda s: quotient(s["ucl"], s["delta"]))
    return Judgement(HOLDS, f"{head}; every informative setting's 95 % upper limit <= its delta, largest {w['ucl']:.3g} "
                     f"vs {w['delta']:g} ({w['label']}){note}", decided + ("" if planned else " (upper)")), extra


def summarize(table: Any, planned: int | None = None, failed: Iterable[Mapping[str, Any]] | None = None) -> dict[str, Any]:
    """Per bound, the sweep's verdict and the numbers behind it (``metrics.json``): runs, applicable and
    informative counts, ratio range, then the guarantee type's own statistics (docs/bounds.md, "How a verdict is decided").

    ``failed``: the sweep's failed jobs, one mapping each (``pipeline.sweep.callbacks.failures``): ``label``, and
    where known ``learner``, ``setting`` (the ``setting`` key of its rows, had it run), ``overrides`` (what
    chose it: its setting is found from them when ``setting`` is not known), and for a job that failed with a
    ``RangeError`` ``range_error`` true with the ``bound``, ``quantity``, ``value`` and ``range`` it names.
    A bound is never "holds" from the runs that survived (:func:`judge_bound`); a bound whose declared range a
    run contradicted is violated there, even when no run of it survived (docs/bounds.md section 9, "Missing
    runs"). Without failed jobs the summary is exactly the one without the argument."""
    failed = [dict(f) for f in failed or ()]
    out: dict[str, Any] = {"runs": int(table["run"].nunique()) if len(table) else 0}  # distinct jobs
    for bound, rows in table.groupby("bound", sort=True) if len(table) else []:
        out[bound] = judge_bound(rows, planned=planned, failed=failed) if failed else judge_bound(rows, planned=planned)
    refuted = sorted({str(f["bound"]) for f in failed if f.get("range_error") and f.get("bound")} - set(out))
    for bound in refuted:  # every run of the bound failed, some contradicting its range: refuted with no row left
        records = [f for f in failed if f.get("range_error") and str(f.get("bound")) == bound]
        guarantee = next((str(f["guarantee"]) for f in records if f.get("guarantee")), "")
        s = {"guarantee": guarantee, "runs": 0, "applicable": 0, "informative": 0, "max_ratio": None, "min_ratio": None,
             "violations": 0}
        out[bound] = s | _refuted(records, 0) | {"decided_by": RANGE_RULE}
    return out


def judge_bound(rows: Any, power: bool = True, planned: int | None = None,
                failed: Iterable[Mapping[str, Any]] | None = None) -> dict[str, Any]:
    """The summary of one bound's rows: counts, ratio range, verdict, evidence and what decided it, and with
    ``power`` what the evidence could have caught: the tightness factor (the largest k such that bound / k
    still holds) and the mildest planted error detected with probability >= 0.8 (``detects_scale``: the
    bound x that scale is caught).

    ``failed``: the sweep's failed jobs (:func:`summarize`). A run that contradicted this bound's declared
    range makes it violated, naming the run, the value and the range; any other failed job of its learner
    whose setting it applies in (or whose setting is not known) is missing evidence: the bound is then at
    best inconclusive (each (E)/(P) setting missing a job, and a (D) bound's whole sweep), and a violation
    among the survivors stays one. The summary then carries ``missing_jobs`` (and ``range_violations``)
    with a few labels."""
    guarantee = str(rows["guarantee"].iloc[0])
    listed = len(rows)
    rows = distinct(rows)
    refuting, missing = _failed_against(str(rows["bound"].iloc[0]) if "bound" in rows else "", rows, failed or ())
    lost = _lost(rows, missing) if missing else None
    applicable = rows[rows["applicable"].astype(bool)]
    s: dict[str, Any] = {
        "guarantee": guarantee, "runs": len(rows), "applicable": len(applicable),
        "informative": int(applicable["informative"].astype(bool).sum()) if len(applicable) else 0,
        "max_ratio": float(applicable["ratio"].max()) if len(applicable) else None,
        "min_ratio": float(applicable["ratio"].min()) if len(applicable) else None,
        "violations": 0,
    }
    if not len(applicable):
        reasons = sorted(set(rows["reason"].astype(str).unique()))
        j = Judgement(NOT_APPLICABLE, "applied in no run: " + "; ".join(reasons[:3]))
    elif kind_of(guarantee).per_run:
        j, extra = _judge_deterministic(applicable)
        s |= extra
    elif kind_of(guarantee).on_the_mean:
        j, extra = _judge_expectation(applicable, power, planned, lost)
        s |= extra
    elif kind_of(guarantee).on_the_rate:
        j, extra = _judge_probability(applicable, power, planned, lost)
        s |= extra
    else:
        j = Judgement(NOT_APPLICABLE, f"guarantee type {guarantee!r}: nothing to judge")
    if listed > len(rows):
        j.evidence += f" ({listed - len(rows)} repeated listing(s) of the same jobs counted once)"
    if missing:
        labels = [str(f.get("label", "a job")) for f, _ in missing]
        s |= {"missing_jobs": len(missing), "missing_examples": labels[:MISSING_SHOWN]}
        said = _jobs_phrase(labels)
        if lost and lost["absent"]:
            said += f" ({len(lost['absent'])} of them in a setting with no surviving run)"
        if j.verdict == HOLDS:
            j = Judgement(INCONCLUSIVE, f"{j.evidence}; but {said}: their runs are missing, and the runs that survived are "
                          "not a sample: a bound is never shown to hold without them", j.decided_by)
        elif j.verdict == VIOLATED:
            j.evidence += f"; also {said} (their runs are missing; a violation among the survivors stands)"
        else:
            j.evidence += f"; {said}: their runs are missing, and the runs that survived are not a sample"
    if kind_of(guarantee).over_seeds and len(applicable):
        s["design"] = design(applicable, guarantee, planned)
    if refuting:
        s |= _refuted(refuting, len(rows))
        return s | {"decided_by": RANGE_RULE}
    return s | {"verdict": j.verdict, "evidence": j.evidence, "decided_by": j.decided_by}


def design(applicable: Any, guarantee: str, planned: int | None = None) -> dict[str, Any]:
    """The design an (E) or (P) verdict was decided under (docs/bounds.md section 9, "The design beside the
    verdict"): the level, the test, the quantity's range over the settings and the name of its derivation
    (docs/bounds.md section 4, "Ranges from the theory"), the distinct seeds per setting, the seed budget
    (``planned``, a ``seeds=auto`` sweep's) and the stopping rule. In metrics.json, the sweep's log and the
    report, beside the verdict."""
    lo, hi = _range_columns(applicable)
    sources = sorted({str(v) for v in applicable["range_source"].unique() if isinstance(v, str) and v}) \
        if "range_source" in applicable else []  # each distinct value once (a row at a time: ~0.1 s at 10,000 seeds)
    seeds = [_units(sel) for _, sel in _settings(applicable)]
    test = ("betting test of the mean (an average of three predictable-plug-in bettors), one-sided; Holm over the "
            "settings for violated" if kind_of(guarantee).on_the_mean else
            ("betting test of the violation rate, anytime-valid" if planned else
             "one-sided Clopper-Pearson limit of the violation rate") + "; Holm over the settings for violated")
    stopping = (f"seeds=auto: rounds until decided, or until the plan shows the budget of {planned} seeds cannot "
                "decide (anytime-valid tests: any stopping round keeps the level)" if planned else
                "a fixed set of seeds, judged once" + (" (anytime-valid: judging again after added seeds keeps the level)"
                                                        if kind_of(guarantee).on_the_mean else ""))
    return {"alpha": ALPHA, "test": test, "range": _finite([float(lo.min()), float(hi.max())]) if len(lo) else None,
            "range_source": ", ".join(sources) or "none declared",
            "seeds_per_setting": [min(seeds), max(seeds)] if seeds else None,
            "seed_budget": planned, "stopping": stopping,
            "student_t": "the t_ucl column describes the sample and decides nothing (invalid for deciding: no normality)"}


def design_phrase(s: Mapping[str, Any]) -> str:
    """The design of an (E)/(P) summary in a few words: 'alpha 0.05, range [0, 5.23] (pegasos_ball), 200 seeds a
    setting, fixed seeds'."""
    d = s.get("design")
    if not d:
        return ""
    rng = d.get("range") or [None, None]
    ends = "[" + ", ".join("inf" if v is None else f"{v:.3g}" for v in rng) + "]"
    per = d.get("seeds_per_setting") or [0, 0]
    seeds = f"{per[0]}" if per[0] == per[1] else f"{per[0]}-{per[1]}"
    how = f"seeds=auto, budget {d['seed_budget']}" if d.get("seed_budget") else "fixed seeds"
    return f"alpha {d['alpha']:g}, range {ends} ({d['range_source']}), {seeds} seeds a setting, {how}"


# --- Missing runs: failed jobs (docs/bounds.md section 9, "Missing runs") -----------------------------------

MISSING = "failed jobs: their runs are missing"  # blocked_by of a setting that holds from its survivors alone
MISSING_SHOWN = 5  # failed jobs named in a summary (their count is always given)
RANGE_RULE = "the bound's declared range, every run"
_NOT_SETTING = {"hydra", "experiment", "force", "name", "question", "tracking", "scale", "log", "pack", "pack_members",
                "seed", "seeds", "seed_budget", "seed_round",
                "seed_minutes"}  # overrides that name, steer or seed a sweep: not a setting's parameter


def _jobs_phrase(labels: list[str]) -> str:
    """'2 job(s) failed: job 3 (seed=3), job 17 (seed=17)' (the first few, then how many more)."""
    more = len(labels) - MISSING_SHOWN
    shown = ", ".join(labels[:MISSING_SHOWN]) + (f" and {more} more" if more > 0 else "")
    return f"{len(labels)} job(s) failed: {shown}"


def _same(value: Any, text: str) -> bool:
    """Whether a table's ``value`` is what an override spelt ``text`` (0.1 is 1e-1; true is True)."""
    try:
        return float(value) == float(text)
    except (TypeError, ValueError):
        return str(value).lower() == str(text).strip("'\"").lower()


def _place(f: Mapping[str, Any], rows: Any) -> list[str] | None:
    """The settings (``setting`` keys) a failed job belongs to: its recorded setting, else the settings of
    ``rows`` whose parameters match every override of the job that names a column (the seed aside); None
    when it cannot be told (no setting column, no override naming a column, or none matching)."""
    if "setting" not in rows:
        return None
    if f.get("setting"):
        return [str(f["setting"])]
    keep = np.ones(len(rows), dtype=bool)
    compared = False
    for override in f.get("overrides") or ():
        key, sep, value = str(override).lstrip("+~").partition("=")
        name = key.rsplit(".", 1)[-1]
        if not sep or key.split(".")[0] in _NOT_SETTING or name in _NOT_SETTING or name not in rows:
            continue
        keep &= rows[name].map(lambda v, value=value: _same(v, value)).to_numpy(dtype=bool)
        compared = True
    found = sorted(set(rows.loc[keep, "setting"].astype(str))) if compared else []
    return found or None


def _failed_against(bound: str, rows: Any, failed: Iterable[Mapping[str, Any]]) -> tuple[list[Any], list[Any]]:
    """The failed jobs that concern a bound's (distinct) ``rows``: those whose run contradicted its declared
    range (a ``RangeError`` naming it), and those missing from its evidence, each with its settings
    (:func:`_place`; None: every setting). A job of another learner is not missing here, nor one whose
    setting is known and where no surviving run finds the bound applicable."""
    learners = set(rows["learner"].astype(str).unique()) if "learner" in rows else None
    refuting, missing = [], []
    for f in failed:
        if f.get("range_error") and str(f.get("bound")) == bound:
            refuting.append(f)
            continue
        if f.get("learner") and learners is not None and str(f["learner"]) not in learners:
            continue
        places = _place(f, rows)
        if places is not None:
            there = rows[rows["setting"].astype(str).isin(places)]
            if len(there) and not there["applicable"].astype(bool).any():
                continue  # the bound does not apply in its setting (every surviving run there says so)
        missing.append((f, places))
    return refuting, missing


def _lost(rows: Any, missing: list[Any]) -> dict[str, Any]:
    """The failed jobs' labels by setting key (``by_setting``), those of every setting (``everywhere``: the
    setting not known) and those of settings with no row here (``absent``)."""
    known = set(rows["setting"].astype(str).unique()) if "setting" in rows else set()
    by_setting: dict[str, list[str]] = {}
    everywhere, absent = [], []
    for f, places in missing:
        label = str(f.get("label", "a job"))
        if places is None:
            everywhere.append(label)
            continue
        if not set(places) & known:
            absent.append(label)
        for key in places:
            by_setting.setdefault(key, []).append(label)
    return {"by_setting": by_setting, "everywhere": everywhere, "absent": absent}


def _mark_missing(settings: list[dict[str, Any]], lost: Mapping[str, Any] | None, needed: str) -> None:
    """Each setting's failed jobs (``missing``); one that holds from its survivors alone is inconclusive,
    blocked by them (no number of seeds settles it: the failed jobs do)."""
    if not lost:
        return
    for s in settings:
        key = str(s["setting"][0]) if s.get("setting") else None
        labels = [*lost["by_setting"].get(key, []), *lost["everywhere"]]
        if not labels:
            continue
        s["missing"] = labels
        if s["verdict"] == HOLDS:
            s["verdict"], s["blocked_by"], s[needed] = INCONCLUSIVE, MISSING, None


def _missing_public(s: Mapping[str, Any]) -> dict[str, Any]:
    return {"missing_jobs": len(s["missing"]), "missing_examples": s["missing"][:MISSING_SHOWN]} if s.get("missing") else {}


def _only_missing(open_: Sequence[Mapping[str, Any]]) -> str:
    s = open_[0]
    return f"{len(open_)} would hold from their surviving runs alone but miss failed jobs, e.g. {s['label']}"


def _refuted(records: list[Mapping[str, Any]], runs: int) -> dict[str, Any]:
    """The verdict of a bound whose declared range runs contradicted (``RangeError``): violated there, naming
    each run, its value and the range (the range is part of the bound's claim), whatever the other runs show."""
    labels = [str(f.get("label", "a job")) for f in records]

    def one(f: Mapping[str, Any]) -> str:
        if f.get("value") is not None and f.get("range"):
            return (f"{f.get('label', 'a job')}: measured {f.get('quantity') or 'quantity'} {f['value']}, outside "
                    f"the declared range {f['range']}")
        return f"{f.get('label', 'a job')}: {f.get('message', 'RangeError')}"

    shown = "; ".join(one(f) for f in records[:MISSING_SHOWN]) + (
        f"; and {len(records) - MISSING_SHOWN} more" if len(records) > MISSING_SHOWN else "")
    others = f", whatever the other {runs} runs show" if runs else ""
    evidence = (f"{len(records)} run(s) contradicted the range the bound declares for its quantity (RangeError): {shown}; "
                f"the range is part of the bound's claim, so the bound is refuted there{others}")
    return {"range_violations": len(records), "range_examples": labels[:MISSING_SHOWN], "verdict": VIOLATED,
            "evidence": evidence}


def power_phrase(s: Mapping[str, Any]) -> str:
    """What the evidence of a bound's summary could have caught, in words: its tightness factor (bound / k
    still holds) and the mildest planted error detected with probability >= 0.8 (docs/bounds.md section 9)."""
    if s.get("verdict") == NOT_APPLICABLE or "tightness" not in s:
        return ""
    k, d = s.get("tightness"), s.get("detects_scale")
    tight = (f"bound / {k:.3g} still holds" if k < MAX_TIGHT else "any smaller bound still holds (measured 0)") \
        if k else "tightness not shown"
    if kind_of(s.get("guarantee")).per_run:  # a run above the scaled bound is a violation every time
        caught = ("catches any error in the bound, however small (it is attained)" if d == 1.0 else
                  f"catches the bound x s for any s < {d:.3g}" if d else "catches no planted error")
    else:
        caught = (f"catches the bound x {d:g} with probability >= {DETECTION:g}" if d else
                  f"would not catch even the bound x {PLANTED[-1]:g}")
    return f"{tight}; {caught}"


def sweep_line(s: Mapping[str, Any]) -> str:
    """One line per bound at the end of a sweep: the verdict with its informative share, the evidence and
    what it could have caught."""
    verdict = s["verdict"].upper() if s["verdict"] == VIOLATED else s["verdict"]
    share = f" ({s['informative_share']})" if s.get("informative_share") else ""
    power = power_phrase(s)
    planned = design_phrase(s)
    return (f"{verdict}{share}: {s['evidence']}" + (f" [power: {power}]" if power else "")
            + (f" [design: {planned}]" if planned else ""))


# --- Claims -------------------------------------------------------------------------------------------

@dataclass
class ClaimVerdict:
    """The verdict on one claim of an experiment."""

    experiment: str
    bound: str
    guarantee: str
    claim: str
    status: str
    text: str
    informative: int = 0
    runs: int = 0
    decided_by: str = ""
    share: str = ""
    tightness: float | None = None
    detects_scale: float | None = None
    power: str = ""
    ratio: float | None = None  # the claim's largest measured/bound: per run for (D)/(P), of a setting's mean for (E)
    informative_of: str = ""  # 'informative/total' in the verdict's own units (runs; settings for (E))
    design: str = ""  # (E)/(P): the level, range and its source, seeds and stopping rule (design_phrase)

    @property
    def fails(self) -> bool:
        """A claim the report stage fails on: violated (any type) or whose bound never ran."""
        return self.status in (VIOLATED, NOT_APPLICABLE)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    def compact(self) -> str:
        """One short line: 'holds 27/36 max 0.956' (27 of 36 runs informative; (E): settings, and 'mean' for the
        worst setting's mean ratio): what ``dvc metrics diff`` compares between two commits (report/claims.json),
        two of them side by side in a line of at most 160 characters even with three-digit counts."""
        parts = [self.status]
        if self.informative_of:
            parts.append(self.informative_of)
        if self.ratio is not None and math.isfinite(self.ratio):
            parts.append(f"{'mean' if kind_of(self.guarantee).on_the_mean else 'max'} {self.ratio:.3g}")
        return " ".join(parts)


def judge_claim(experiment: str, claim: Mapping[str, Any], metrics: Mapping[str, Any]) -> ClaimVerdict:
    """The verdict on an experiment's ``claim`` (bound, guarantee, sentence, optional ``attains``) from its
    sweep's ``metrics.json`` (:func:`summarize`)."""
    bound, guarantee = str(claim["bound"]), str(claim["guarantee"])
    s = metrics.get(bound)
    sentence = " ".join(str(claim["claim"]).split())

    def out(status: str, text: str, decided_by: str = "") -> ClaimVerdict:
        if not isinstance(s, dict):
            return ClaimVerdict(experiment, bound, guarantee, sentence, status, text, 0, 0, decided_by)
        if kind_of(guarantee).on_the_mean and "settings" in s:
            ratio, of = s.get("worst_mean_ratio"), f"{s.get('settings_informative', 0)}/{s['settings']}"
        else:
            ratio = s.get("max_ratio_over_t", s.get("max_ratio"))
            of = f"{s.get('informative', 0)}/{s.get('applicable', 0)}"
        ratio = float(ratio) if isinstance(ratio, (int, float)) and not isinstance(ratio, bool) else None
        return ClaimVerdict(experiment, bound, guarantee, sentence, status, text, int(s.get("informative", 0)),
                            int(s.get("applicable", 0)), decided_by, str(s.get("informative_share", "")),
                            s.get("tightness"), s.get("detects_scale"), power_phrase(s), ratio, of, design_phrase(s))

    if not isinstance(s, dict):
        return out(NOT_APPLICABLE, "the bound is not in the results")
    if s["guarantee"] != guarantee:
        return out(NOT_APPLICABLE, f"the results record the bound as ({s['guarantee']}), the claim as ({guarantee})")
    status, text = s["verdict"], s["evidence"]
    if status == HOLDS and claim.get("attains"):
        attained = s["min_ratio"] == 1.0 and s["max_ratio"] == 1.0
        text += "; attained (ratio exactly 1) in every run" if attained else \
            f"; NOT attained in every run (ratio {s['min_ratio']:.4g} to {s['max_ratio']:.4g})"
        status = HOLDS if attained else VIOLATED
    return out(status, text, s.get("decided_by", ""))
