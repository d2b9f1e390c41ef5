"""The one home of judging: what a row, a setting, a sweep and a claim conclude (docs/bounds.md, "How a verdict is decided").

Every verdict is one of :data:`HOLDS`, :data:`VIOLATED`, :data:`INCONCLUSIVE` or :data:`NOT_APPLICABLE`,
with a sentence of evidence. The rules, by guarantee type (docs/bounds.md section 9):

- a **row** (one run, one bound) compares the measured quantity with the bound, at the last step or at
  every step ``t`` when the bound is an anytime statement (``max_ratio_over_t``), and with the bound's
  *trivial value*, the quantity's value for a learner that never learns (``informative`` when the bound
  is below it: a bound at or above it says nothing about the run);
- **(D)** violated when any run exceeds its bound (at any judged step); holds when none does and at least
  one run is informative; inconclusive when every run is vacuous;
- **(E)** per setting (the runs that differ only in their seed), the one-sided 95 % limits of the mean of
  measured - bound (Student t; with a declared range also Hoeffding's, each then at 97.5 %, so the pair
  stays at 95 %): the setting holds when the upper limit is <= 0, is violated when a Holm-corrected
  one-sided test over the claim's settings rejects E[measured - bound] <= 0, and is inconclusive otherwise.
  The claim holds when every informative setting holds, is violated when any setting is;
- **(P)** pooled over the informative runs (each run violates with probability at most delta, so the
  pooled rate does too): holds when the one-sided 95 % Clopper-Pearson upper limit of the violation rate is
  <= delta, violated when its lower limit is > delta, inconclusive otherwise.

An inconclusive verdict says how many seeds (E) or runs (P) would settle it at the observed spread or rate.
Nothing here imports another module of the package: it is the lowest layer, used by the bounds (rows), the
job's log line, the sweep callback, ``metrics.json``, MLflow and the report.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any, Iterable, Mapping

import numpy as np

HOLDS, VIOLATED, INCONCLUSIVE, NOT_APPLICABLE = "holds", "violated", "inconclusive", "not applicable"
VERDICTS = (HOLDS, VIOLATED, INCONCLUSIVE, NOT_APPLICABLE)
LEVEL = 0.95  # confidence of every one-sided limit
ALPHA = 1.0 - LEVEL
MAX_N = 100_000  # the largest number of seeds or runs an inconclusive verdict asks for


# --- Intervals (the only place they are computed) ----------------------------------------------------

def t_limits(values: Iterable[float], level: float = LEVEL) -> tuple[float, float, float]:
    """Mean and the one-sided ``level`` lower and upper Student t limits of the mean ((-inf, inf) for
    fewer than 2 values)."""
    from scipy import stats

    x = np.asarray(list(values) if not isinstance(values, np.ndarray) else values, dtype=np.float64).ravel()
    mean = float(x.mean()) if x.size else math.nan
    if x.size < 2:
        return mean, -math.inf, math.inf
    half = float(stats.t.ppf(level, x.size - 1)) * float(x.std(ddof=1)) / math.sqrt(x.size)
    return mean, mean - half, mean + half


def hoeffding_half_width(n: int, width: float, level: float = LEVEL) -> float:
    """One-sided Hoeffding deviation of a mean of ``n`` independent values each in a range of ``width``:
    P(mean - E mean >= h) <= exp(-2 n h^2 / width^2) = 1 - level."""
    return width * math.sqrt(math.log(1.0 / (1.0 - level)) / (2.0 * n)) if n else math.inf


def binomial_limits(k: int, n: int, level: float = LEVEL) -> tuple[float, float]:
    """One-sided ``level`` Clopper-Pearson lower and upper limits of a rate from ``k`` events in ``n`` trials
    (the two ends of scipy's exact two-sided interval at 2 level - 1)."""
    from scipy.stats import binomtest

    if n == 0:
        return 0.0, 1.0
    ci = binomtest(int(k), int(n)).proportion_ci(confidence_level=2.0 * level - 1.0, method="exact")
    return float(ci.low), float(ci.high)


def mean_interval(values: Iterable[float], level: float = 0.95) -> tuple[float, float]:
    """Mean and the half-width of its two-sided ``level`` t interval (0 for fewer than 2 values): the band
    of the figures and comparison tables."""
    mean, lo, hi = t_limits(values, 0.5 + level / 2.0)
    return mean, (0.0 if not math.isfinite(hi) else hi - mean)


# --- Rows ---------------------------------------------------------------------------------------------

def judge_row(measured: float, theoretical: float, trivial: float,
              prefix: tuple[np.ndarray, np.ndarray] | None = None) -> dict[str, Any]:
    """The columns a row's verdict rests on: ``ratio`` (at the last step), ``max_ratio_over_t`` (the
    largest measured_t / bound_t over the judged steps), ``holds`` (no judged step above its bound),
    ``informative`` (bound < trivial value). ``prefix`` is (measured_t, bound_t) over every step for an
    anytime bound, else None (judged at the last step only).

    A value that is not a number is never compared: ``holds`` is then None, with the reason.
    """
    measured, theoretical, trivial = float(measured), float(theoretical), float(trivial)
    if math.isnan(measured) or math.isnan(theoretical):
        return {"ratio": math.nan, "max_ratio_over_t": math.nan, "holds": None, "informative": False,
                "invalid": f"not a number: measured {measured}, bound {theoretical}"}
    ratio = _ratio(measured, theoretical)
    holds, worst = measured <= theoretical, ratio
    if prefix is not None:
        q, b = np.asarray(prefix[0], dtype=np.float64), np.asarray(prefix[1], dtype=np.float64)
        if np.isnan(q).any() or np.isnan(b).any():
            return {"ratio": ratio, "max_ratio_over_t": math.nan, "holds": None, "informative": False,
                    "invalid": "not a number in the per-step trace"}
        with np.errstate(divide="ignore", invalid="ignore"):
            r = np.where(b > 0, q / np.where(b > 0, b, 1.0), np.where(q <= b, 0.0, np.inf))
        worst = float(r.max()) if r.size else ratio
        holds = bool(np.all(q <= b)) and holds
    informative = bool(theoretical < trivial) if not math.isnan(trivial) else False
    return {"ratio": ratio, "max_ratio_over_t": worst, "holds": bool(holds), "informative": informative, "invalid": None}


def _ratio(measured: float, theoretical: float) -> float:
    if theoretical > 0:
        return measured / theoretical
    return 0.0 if measured <= theoretical else math.inf


def row_phrase(row: Any) -> str:
    """The verdict words of one row for the job's log line: (D) holds / VIOLATED, (E) and (P) how the row
    will be judged; 'vacuous' where the bound is not below the trivial value."""
    g = row.guarantee
    if g == "D":
        words = "holds" if row.holds else "VIOLATED"
        if getattr(row, "judged_at", "") and row.judged_at != "T only":
            words += f" at {row.judged_at}"
    elif g == "E":
        words = "E: judged over seeds"
    elif g == "P":
        words = "P: " + ("within" if row.holds else "above") + " the bound, counted against delta"
    else:
        words = g
    if not row.informative:
        words += f"; VACUOUS: bound >= trivial value {row.trivial:.4g}"
    return words


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


def _runs_needed_t(sd: float, margin: float, n: int) -> int | None:
    """Seeds at which a one-sided t limit at spread ``sd`` is within ``margin`` of the mean (None: never)."""
    from scipy import stats

    if margin <= 0 or not math.isfinite(sd):
        return None
    if sd == 0:
        return max(n, 2)
    ns = np.arange(max(n, 2), MAX_N + 1)
    ok = stats.t.ppf(LEVEL, ns - 1) * sd / np.sqrt(ns) < margin
    return int(ns[np.argmax(ok)]) if ok.any() else None


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


def expectation_settings(rows: Any) -> list[dict[str, Any]]:
    """(E) per setting: seeds, mean measured and bound, the limits of the mean of measured - bound, the
    p-value of 'E[measured - bound] <= 0', the limit that decided and the setting's verdict (Holm across
    the given settings for 'violated')."""
    from scipy import stats

    out = []
    labels = setting_labels(rows)
    for key, sel in _settings(rows):
        diff = (sel["empirical"] - sel["theoretical"]).to_numpy(dtype=np.float64)
        # a violation is claimed only from the lower estimate of the measured quantity (docs/bounds.md 9)
        low = sel["empirical_low"] if "empirical_low" in sel else sel["empirical"]
        diff_low = (low - sel["theoretical"]).to_numpy(dtype=np.float64)
        n = diff.size
        bound = float(sel["theoretical"].mean())
        lo_hi = [sel[c].iloc[0] for c in ("range_lo", "range_hi")] if "range_lo" in sel else [math.nan, math.nan]
        width = float(lo_hi[1] - lo_hi[0]) if all(isinstance(v, (int, float)) and math.isfinite(v) for v in lo_hi) else math.nan
        level = LEVEL if math.isnan(width) else 0.5 + LEVEL / 2.0  # two limits: Bonferroni keeps 95 %
        mean, _, t_hi = t_limits(diff, level)
        mean_low, t_lo, _ = t_limits(diff_low, level)
        candidates = [("one-sided Student t", t_lo, t_hi)]
        sd = float(diff.std(ddof=1)) if n >= 2 else math.nan
        p_t = 1.0
        if n >= 2:
            se = float(diff_low.std(ddof=1)) / math.sqrt(n)
            p_t = float(stats.t.sf(mean_low / se, n - 1)) if se > 0 else (0.0 if mean_low > 0 else 1.0)
        pvalue = p_t
        if not math.isnan(width):
            h = hoeffding_half_width(n, width, level)
            candidates.append(("one-sided Hoeffding", mean_low - h, mean + h))
            p_h = math.exp(-2.0 * n * mean_low * mean_low / (width * width)) if mean_low > 0 else 1.0
            pvalue = min(1.0, 2.0 * min(p_t, p_h))
        upper = min(candidates, key=lambda c: c[2])
        lower = max(candidates, key=lambda c: c[1])
        informative = bool(sel["informative"].astype(bool).all())
        out.append({
            "setting": key if isinstance(key, tuple) else (key,), "label": labels[key], "seeds": n, "mean": float(sel["empirical"].mean()),
            "bound": bound, "trivial": float(sel["trivial"].mean()), "informative": informative,
            "ucl": bound + upper[2], "lcl": bound + lower[1], "upper_by": upper[0], "lower_by": lower[0],
            "pvalue": pvalue, "sd": sd, "holds": bool(upper[2] <= 0.0),
        })
    for s, reject in zip(out, _holm([s["pvalue"] for s in out])):
        s["violated"] = reject
        s["verdict"] = VIOLATED if reject else (HOLDS if s["holds"] else INCONCLUSIVE)
        margin = s["bound"] - s["mean"]
        s["seeds_needed"] = _runs_needed_t(s["sd"], abs(margin), s["seeds"]) if s["verdict"] == INCONCLUSIVE else None
    return out


def _judge_deterministic(applicable: Any) -> tuple[Judgement, dict[str, Any]]:
    n = len(applicable)
    violated = applicable[~applicable["holds"].astype(bool)]
    informative = int(applicable["informative"].astype(bool).sum())
    worst = float(applicable["max_ratio_over_t"].max())
    where = sorted(set(applicable.get("judged_at", ["T only"])))
    at = " and ".join(where)
    extra = {"violations": len(violated), "max_ratio_over_t": worst, "judged_at": at}
    if len(violated):
        runs = ", ".join(str(r) for r in violated["run"].head(3))
        return Judgement(VIOLATED, f"{len(violated)} of {n} runs above the bound (judged at {at}); worst "
                         f"measured/bound {worst:.4g}; e.g. run {runs} (a bug until proven otherwise)", "every run"), extra
    if not informative:
        return Judgement(INCONCLUSIVE, f"0 violations in {n} runs, but the bound is vacuous in every run (not below "
                         "the trivial value): no run could show what the theorem adds", "every run"), extra
    return Judgement(HOLDS, f"0 violations in {n} runs ({informative} informative), judged at {at}; largest "
                     f"measured/bound {worst:.4g}", "every run"), extra


def _judge_expectation(applicable: Any) -> tuple[Judgement, dict[str, Any]]:
    settings = expectation_settings(applicable)
    informative = [s for s in settings if s["informative"]]
    violated = [s for s in settings if s["verdict"] == VIOLATED]
    holding = [s for s in informative if s["verdict"] == HOLDS]
    open_ = [s for s in informative if s["verdict"] == INCONCLUSIVE]
    worst = max(settings, key=lambda s: s["ucl"] / s["bound"] if s["bound"] > 0 else math.inf)
    seeds = sorted({s["seeds"] for s in settings})
    by = sorted({s["upper_by"] for s in holding}) or sorted({s["upper_by"] for s in settings})
    extra = {
        "settings": len(settings), "settings_informative": len(informative), "settings_holding": len(holding),
        "settings_violated": len(violated), "settings_inconclusive": len(open_),
        "seeds": seeds[-1], "worst_ucl_ratio": worst["ucl"] / worst["bound"] if worst["bound"] > 0 else math.inf,
        "worst_mean_ratio": worst["mean"] / worst["bound"] if worst["bound"] > 0 else math.inf,
        "seeds_needed": max((s["seeds_needed"] or MAX_N for s in open_ if s["seeds"] >= 2), default=None),
        "per_setting": [{k: s[k] for k in ("label", "seeds", "mean", "bound", "trivial", "informative", "lcl", "ucl",
                                           "upper_by", "verdict", "seeds_needed")} for s in settings],
    }
    head = f"{len(settings)} settings of {'/'.join(map(str, seeds))} seeds, {len(informative)} informative"
    decided = f"{' and '.join(by)} 95 % limit"
    if violated:
        s = violated[0]
        return Judgement(VIOLATED, f"{head}; {len(violated)} setting(s) with E[measured] above the bound (Holm-corrected "
                         f"one-sided test at 5 %), e.g. {_fmt_setting(s)}: mean {s['mean']:.4g}, lower limit {s['lcl']:.4g} "
                         f"> bound {s['bound']:.4g}", f"{s['lower_by']} 95 % limit, Holm-corrected"), extra
    if not informative:
        return Judgement(INCONCLUSIVE, f"{head}: the bound is vacuous (not below the trivial value) in every setting",
                         decided), extra
    if open_:
        need = extra["seeds_needed"]
        s = max(open_, key=lambda s: s["ucl"] / s["bound"])
        if any(s["seeds"] < 2 for s in open_):
            more = "a setting with one seed has no spread to judge by: run more seeds"
        elif need and need < MAX_N:
            more = f"about {need} seeds would settle it at the observed spread"
        else:
            more = "no feasible number of seeds settles it at the observed mean"
        return Judgement(INCONCLUSIVE, f"{head}; {len(holding)} hold, {len(open_)} undecided, e.g. {_fmt_setting(s)}: "
                         f"mean {s['mean']:.4g}, 95 % upper limit {s['ucl']:.4g} vs bound {s['bound']:.4g}; {more}",
                         decided), extra
    w = max(holding, key=lambda s: s["ucl"] / s["bound"])
    return Judgement(HOLDS, f"{head}, every informative setting holds: largest 95 % upper limit of the mean "
                     f"{w['ucl'] / w['bound']:.3g} x the bound ({_fmt_setting(w)})", decided), extra


def _fmt_setting(s: Mapping[str, Any]) -> str:
    return s["label"]


def _judge_probability(applicable: Any) -> tuple[Judgement, dict[str, Any]]:
    informative = applicable[applicable["informative"].astype(bool)]
    n = len(informative)
    k = int((~informative["holds"].astype(bool)).sum())
    low = informative["empirical_low"] if "empirical_low" in informative else informative["empirical"]
    k_low = int((low > informative["theoretical"]).sum())  # violations even at the lower estimate
    # each run's violation probability is at most its own delta: the pooled rate, at most their mean
    deltas = applicable["delta"] if "delta" in applicable else None
    delta = ALPHA if deltas is None else float(deltas.iloc[0]) if deltas.nunique() == 1 else float(deltas.mean())
    hi = binomial_limits(k, n)[1]
    lo = binomial_limits(k_low, n)[0]
    labels = setting_labels(informative) if n else {}
    per_setting = [{"setting": labels[key], "runs": len(sel), "violations": int((~sel["holds"].astype(bool)).sum())}
                   for key, sel in _settings(informative)]
    extra = {"informative_runs": n, "violations": k, "violation_rate": k / n if n else None,
             "violation_rate_lcl": lo, "violation_rate_ucl": hi, "delta": delta,
             "runs_needed": None, "per_setting": per_setting}
    decided = "one-sided 95 % Clopper-Pearson limit"
    if n == 0:
        return Judgement(INCONCLUSIVE, f"the bound is vacuous (not below the trivial value) in all {len(applicable)} runs",
                         decided), extra
    head = f"{k} violations in {n} informative runs (of {len(applicable)}), rate {k / n:.3g}"
    if hi <= delta:
        return Judgement(HOLDS, f"{head}; 95 % upper limit {hi:.3g} <= delta {delta:g}", decided + " (upper)"), extra
    if lo > delta:
        return Judgement(VIOLATED, f"{head}; 95 % lower limit {lo:.3g} > delta {delta:g}", decided + " (lower)"), extra
    need = _runs_needed_p(k, n, delta)
    extra["runs_needed"] = need
    more = f"about {need} runs at the observed rate would settle it" if need else \
        "the observed rate is not below delta: more runs could only show a violation"
    return Judgement(INCONCLUSIVE, f"{head}; 95 % limits [{lo:.3g}, {hi:.3g}] straddle delta {delta:g}; {more}",
                     decided), extra


def summarize(table: Any) -> dict[str, Any]:
    """Per bound, the sweep's verdict and the numbers behind it (``metrics.json``): runs, applicable and
    informative counts, ratio range, then the guarantee type's own statistics (docs/bounds.md, "How a verdict is decided")."""
    out: dict[str, Any] = {"runs": int(table["run"].nunique()) if len(table) else 0}
    for bound, rows in table.groupby("bound", sort=True) if len(table) else []:
        out[bound] = judge_bound(rows)
    return out


def judge_bound(rows: Any) -> dict[str, Any]:
    """The summary of one bound's rows: counts, ratio range, verdict, evidence and what decided it."""
    guarantee = str(rows["guarantee"].iloc[0])
    applicable = rows[rows["applicable"].astype(bool)]
    s: dict[str, Any] = {
        "guarantee": guarantee, "runs": len(rows), "applicable": len(applicable),
        "informative": int(applicable["informative"].astype(bool).sum()) if len(applicable) else 0,
        "max_ratio": float(applicable["ratio"].max()) if len(applicable) else None,
        "min_ratio": float(applicable["ratio"].min()) if len(applicable) else None,
        "violations": 0,
    }
    if not len(applicable):
        reasons = sorted(set(rows["reason"].astype(str)))
        j = Judgement(NOT_APPLICABLE, "applied in no run: " + "; ".join(reasons[:3]))
    elif guarantee == "D":
        j, extra = _judge_deterministic(applicable)
        s |= extra
    elif guarantee == "E":
        j, extra = _judge_expectation(applicable)
        s |= extra
    elif guarantee == "P":
        j, extra = _judge_probability(applicable)
        s |= extra
    else:
        j = Judgement(NOT_APPLICABLE, f"guarantee type {guarantee!r}: nothing to judge")
    return s | {"verdict": j.verdict, "evidence": j.evidence, "decided_by": j.decided_by}


def sweep_line(s: Mapping[str, Any]) -> str:
    """One line per bound at the end of a sweep."""
    return f"{s['verdict'].upper() if s['verdict'] == VIOLATED else s['verdict']}: {s['evidence']}"


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

    @property
    def fails(self) -> bool:
        """A claim the report stage fails on: violated (any type) or whose bound never ran."""
        return self.status in (VIOLATED, NOT_APPLICABLE)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def judge_claim(experiment: str, claim: Mapping[str, Any], metrics: Mapping[str, Any]) -> ClaimVerdict:
    """The verdict on an experiment's ``claim`` (bound, guarantee, sentence, optional ``attains``) from its
    sweep's ``metrics.json`` (:func:`summarize`)."""
    bound, guarantee = str(claim["bound"]), str(claim["guarantee"])
    s = metrics.get(bound)
    sentence = " ".join(str(claim["claim"]).split())

    def out(status: str, text: str, decided_by: str = "") -> ClaimVerdict:
        informative = int(s.get("informative", 0)) if isinstance(s, dict) else 0
        runs = int(s.get("applicable", 0)) if isinstance(s, dict) else 0
        return ClaimVerdict(experiment, bound, guarantee, sentence, status, text, informative, runs, decided_by)

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
