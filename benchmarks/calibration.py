"""The verdict engine's own calibration: its size and power on simulated sweeps, its power on the real runs.

    python benchmarks/calibration.py                 # 10,000 simulated sweeps per family and case (~10 min)
    python benchmarks/calibration.py --sweeps 500    # a quick look
    python benchmarks/calibration.py --out PATH --figure PATH

**Size and power.** Each simulated sweep is what the engine sees of one bound: settings of distinct seeds,
each seed's measured value drawn from a family whose true mean (E) or violation rate (P) is known, and a
bound placed exactly at the truth (the edge: both one-sided nulls are true there, so "violated" and "holds"
must each come out in at most alpha = 5 % of sweeps), 5 % and 20 % below it (a false bound: "holds" must come
out in at most 5 %), 25 % above it and at twice it (a true bound with room: "holds" is the power). Every (E)
family declares a finite range, so every one can say "holds" and its false-holds rate could fail; the (E)
verdict is the engine's test by betting (:mod:`pipeline.judging.limits`, the mixture of plug-in bettors whose bets
depend on no planned count), run on all sweeps of a cell at once (columns of one array, checked against
:func:`pipeline.judging.limits.test_below` / ``test_above`` on a few sweeps). The (E) families:

- ``bounded``: Beta(2, 5) on [0, 1];
- ``skewed``: a log-normal capped at 60, skewness about 10 (the random-iterate suboptimality's shape), [0, 60];
- ``rare_large``: 0 in 98 % of seeds, the top of [0, 1] in 2 % (a rare large value);
- ``two_point_top``: 0.1 or the top of [0, 1], the top with probability 0.4 (the null law bets lose most on);
- ``range_ends``: exactly 0 or exactly 1, the ends of [0, 1] (1 with probability 0.3);
- ``few_seeds``: uniform on [0.3, 0.5] in [0, 1], 1 to 5 seeds (a fifth of the sweeps each);
- ``unequal_ranges``: Beta(2, 5) x s with s = 1, 10, 100 by seed, each seed's range [0, s] and bound s x the
  case's (the per-run form of a theorem whose bound and range depend on the run's data);
- ``unbounded``: a log-normal with no top, [0, inf): *cannot hold by design* (no number of seeds bounds its
  mean from above), reported apart and not counted as calibration of "holds".

Per family: the rates at each case; for the true bounds with room, the median over sweeps of the seeds the
test needs (where its capital first reaches 1/alpha on a long stream of the family) over the information
floor :func:`pipeline.judging.limits.floor_seeds` at the true mean (``floor_ratio``), and the same for a bettor who
knows the law and bets its Kelly fraction (``kelly_ratio``, ln(1/alpha) over the law's best growth rate: what
the spread of the law costs any test, which the floor, stated for values that all equal the mean, ignores).

**Growth.** The bets depend only on the values before each, so a sweep judged at n seeds and judged again
after its budget is raised to 2n, or re-judged after every 10 added seeds up to 100, is one test: the rate at
which *any* look says "holds" (at the edge, and with the bound 5 % low) or "violated" (at the edge) must stay
<= alpha. Beside it, the rate of the test before this change, whose bets were tuned to the number of values
judged (each look a new test on the same data).

**(P).** The per-setting rule :func:`pipeline.judging.verdicts.probability_rule` (what ``judge_bound`` decides with)
on simulated violation counts: ``seed_correlated`` (10 settings x 60 seeds, every setting's runs of one seed
violate together: one shared uniform per seed), the same with 200 seeds, ``partly_shared`` (3 x 200, the
settings' violations correlated through a Gaussian copula, rho = 0.5) and ``independent`` (one setting of 60
seeds). At the edge (rate exactly delta) "holds" is a false "holds"; for the layouts whose settings see
identical counts its exact probability is given beside the simulated one. Beside each single-look rate is
the engine's before issue 32 (Student t limits for (E), Clopper-Pearson over pooled rows for (P)).

**Power on the real runs.** Every built-in bound of the main job's results (``results/*/results.parquet``,
from ``dvc repro``) is scaled by 0.99, 0.9, 0.5 and 0.1 (a planted error: the bound made 1 %, 10 %, 50 %, 90 %
too small) and judged again by :func:`pipeline.judging.verdicts.judge_bound` on the same runs: the share of claims
whose verdict becomes "violated", per guarantee type, and whether every (D) bound attained with ratio 1 (the
tight constructions) is caught at 0.99. Without results (no ``dvc repro`` here) the previous file's section
is carried over and marked so.

The results go to ``benchmarks/calibration.json`` and the power curves to ``docs/img/calibration_power.png``.
"""

from __future__ import annotations

import argparse
import functools
import json
import math
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from pipeline.judging import limits  # noqa: E402
from pipeline.judging.verdicts import ALPHA, HOLDS, VIOLATED, binomial_limits, judge_bound, probability_rule  # noqa: E402

# bound / truth: at the truth (the edge: a false "violated" or a false "holds" is the error), 5 % and 20 % below
# it (a false "holds" is the error; "violated" is power), 25 % and 100 % above it ("holds" is power)
CASES = {"at the bound": 1.0, "bound 5 % low": 1.0 / 1.05, "bound 20 % low": 1.0 / 1.2,
         "bound 25 % high": 1.25, "bound 2x": 2.0}
SCALES = (0.99, 0.9, 0.5, 0.1, 0.01, 0.001)
CELLS = 1 << 21  # values x sweeps computed at once
RATIO_SWEEPS = 2000  # sweeps behind a median floor ratio


# --- (E): simulated sweeps ----------------------------------------------------------------------------

@dataclass(frozen=True)
class Family:
    """An (E) family: ``draw(rng, n, sweeps)`` the values on the base range [0, top] (rows: seeds in order),
    its true mean there, the base top (inf: no top declared), the seeds per sweep (a tuple: sweeps split
    evenly among them) and a per-seed scale (each seed's values, range and bound multiplied by it)."""

    draw: Callable[[np.random.Generator, int, int], np.ndarray]
    mean: float
    top: float
    seeds: tuple[int, ...]
    scale: Callable[[int], np.ndarray] = lambda n: np.ones(n)


def _lognormal(rng: np.random.Generator, shape: tuple, cap: float) -> np.ndarray:
    return np.minimum(rng.lognormal(0.0, 1.5, shape), cap)


@functools.lru_cache(maxsize=None)
def _capped_lognormal_mean(cap: float) -> float:
    rng = np.random.default_rng(12345)  # the family's true mean, to 1e-3 relative (a fixed draw of 4e6 values)
    return float(_lognormal(rng, (4_000_000,), cap).mean())


def _families(seeds: int) -> dict[str, Family]:
    """The (E) families; ``seeds`` (the command's --seeds) for those whose power comes at a few tens of seeds."""
    return {
        "bounded": Family(lambda rng, n, k: rng.beta(2.0, 5.0, (n, k)), 2.0 / 7.0, 1.0, (seeds,)),
        "skewed": Family(lambda rng, n, k: _lognormal(rng, (n, k), 60.0), _capped_lognormal_mean(60.0), 60.0, (150,)),
        "rare_large": Family(lambda rng, n, k: (rng.random((n, k)) < 0.02).astype(np.float64), 0.02, 1.0, (600,)),
        "two_point_top": Family(lambda rng, n, k: np.where(rng.random((n, k)) < 0.4, 1.0, 0.1), 0.46, 1.0, (seeds,)),
        "range_ends": Family(lambda rng, n, k: (rng.random((n, k)) < 0.3).astype(np.float64), 0.3, 1.0, (seeds,)),
        "few_seeds": Family(lambda rng, n, k: rng.uniform(0.3, 0.5, (n, k)), 0.4, 1.0, (1, 2, 3, 4, 5)),
        "unequal_ranges": Family(lambda rng, n, k: rng.beta(2.0, 5.0, (n, k)), 2.0 / 7.0, 1.0, (seeds,),
                                 lambda n: np.resize([1.0, 10.0, 100.0], n)),
        "unbounded": Family(lambda rng, n, k: rng.lognormal(0.0, 1.5, (n, k)), math.exp(1.5 ** 2 / 2.0), math.inf,
                            (seeds,)),
    }


def _columns(fam: Family, n: int, factor: float):  # noqa: ANN202
    """Per seed (as a column vector): its range [0, hi] and the bound at ``factor`` x the truth."""
    s = fam.scale(n)[:, None]
    return np.zeros_like(s), fam.top * s, factor * fam.mean * s, s


def _log_below(x: np.ndarray, b: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """log capital of :func:`limits.test_below` for every column of ``x`` (a finite range, b inside it)."""
    u_m = np.clip((b - lo) / (hi - lo), 0.0, 1.0)
    return limits._log_capital(u_m - (x - lo) / (hi - lo), limits._top_below(u_m))


def _log_above(x: np.ndarray, b: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """log capital of :func:`limits.test_above` for every column of ``x`` (lo finite, hi maybe infinite)."""
    scale, u_m, cap = limits._above_bets(b, lo, hi)
    return limits._log_capital((x - lo) / scale - u_m, cap)


def _rejects(log_k: np.ndarray) -> np.ndarray:
    """Per column: the test rejects (p = 1 / the largest capital <= alpha, as :func:`limits._outcome`)."""
    best = log_k.max(axis=0)
    return np.where(best > 0, np.exp(-np.maximum(best, 0.0)), 1.0) <= ALPHA


def _check_against_the_tests(x: np.ndarray, b, lo, hi) -> None:  # noqa: ANN001
    """The vectorised capital is the tests' own: the same p-values on a few columns."""
    hold, above = _log_below(x[:, :3], b, lo, hi) if np.all(np.isfinite(hi)) else None, _log_above(x[:, :3], b, lo, hi)
    for j in range(min(3, x.shape[1])):
        args = (x[:, j], b.ravel(), lo.ravel(), hi.ravel())
        if hold is not None:
            assert limits.test_below(*args).p == limits._p_value(float(hold[:, j].max()))
        assert limits.test_above(*args).p == limits._p_value(float(above[:, j].max()))


def _verdicts(x: np.ndarray, b, lo, hi) -> tuple[np.ndarray, np.ndarray]:  # noqa: ANN001
    """Per sweep (column): violated, and holds (when not violated), as :func:`pipeline.judging.verdicts` decides one
    setting."""
    violated = _rejects(_log_above(x, b, lo, hi))
    holds = _rejects(_log_below(x, b, lo, hi)) & ~violated if np.all(np.isfinite(hi)) else np.zeros_like(violated)
    return violated, holds


def _old_t(x: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The engine before issue 32 on one setting, per column: Student t limits, 95 % one-sided, of the raw
    values against the mean bound (it knew no ranges)."""
    from scipy import stats

    n = x.shape[0]
    bound = float(np.mean(b))
    if n < 2:
        return np.zeros(x.shape[1], bool), np.zeros(x.shape[1], bool)
    mean, sd = x.mean(axis=0), x.std(axis=0, ddof=1)
    se = sd / math.sqrt(n)
    holds = mean + stats.t.ppf(0.95, n - 1) * se <= bound
    with np.errstate(divide="ignore", invalid="ignore"):
        violated = (sd > 0) & (stats.t.sf((mean - bound) / se, n - 1) <= ALPHA)
    return violated, holds & ~violated


def _old_log_below(x: np.ndarray, b, lo, hi, n: int) -> np.ndarray:  # noqa: ANN001
    """The test before this change (for the growth cases' comparison): one plug-in bettor, truncation 3/4,
    bets tuned to the number of values n judged."""
    u_m = np.clip((b - lo) / (hi - lo), 0.0, 1.0)
    payoff = u_m - (x - lo) / (hi - lo)
    cap = np.where(u_m < 1.0, 0.75 / np.maximum(1.0 - u_m, 1e-300), 1e6)
    t = payoff.shape[0]
    z = -payoff
    idx = np.arange(1, t + 1, dtype=np.float64)[:, None]
    head = np.zeros((1, payoff.shape[1]))
    mean_prev = np.concatenate([head, np.cumsum(z, axis=0)[:-1] / idx[:-1]], axis=0)
    var = (0.25 + np.concatenate([head, np.cumsum((z - mean_prev) ** 2, axis=0)[:-1]], axis=0)) / idx
    lam = np.minimum(np.sqrt(2.0 * math.log(1.0 / ALPHA) / (max(n, 1) * var)), cap)
    return np.cumsum(np.log1p(lam * payoff), axis=0)


def _chunks(rows: int, sweeps: int) -> list[tuple[int, int]]:
    step = max(1, CELLS // max(rows, 1))
    return [(a, min(a + step, sweeps)) for a in range(0, sweeps, step)]


def _kelly_rate(fam: Family, factor: float) -> float:
    """The best growth rate of a bettor who knows the law: max over lambda of E log(1 + lambda (u - x)) on the
    unit scale (a fixed draw of 200,000 values)."""
    from scipy.optimize import minimize_scalar

    x = fam.draw(np.random.default_rng(99), 1, 200_000).ravel() / fam.top
    u = factor * fam.mean / fam.top
    top = 1.0 / (1.0 - u)
    best = minimize_scalar(lambda lam: -np.mean(np.log1p(lam * (u - x))), bounds=(0.0, top * (1 - 1e-9)),
                           method="bounded")
    return float(-best.fun)


def _floor_ratio(fam: Family, factor: float, rng: np.random.Generator, sweeps: int) -> dict:
    """The median over sweeps of the seeds the test needs (first crossing of 1/alpha on a stream of the
    family) over the floor at the truth, and a Kelly bettor's ln(1/alpha) / growth rate over the same floor."""
    floor = limits.floor_seeds(fam.mean, factor * fam.mean, 0.0, fam.top)
    kelly = math.log(1.0 / ALPHA) / _kelly_rate(fam, factor)
    length = int(min(4.0 * kelly + 100, 40_000))
    lo, hi, b, _ = _columns(Family(fam.draw, fam.mean, fam.top, (length,)), length, factor)  # one range: scale 1
    needed = []
    for a, z in _chunks(length, sweeps):
        log_k = _log_below(fam.draw(rng, length, z - a), b, lo, hi)
        hit = log_k >= math.log(1.0 / ALPHA)
        needed.append(np.where(hit.any(axis=0), hit.argmax(axis=0) + 1.0, math.inf))
    needed = np.concatenate(needed)
    return {"floor_seeds": floor, "median_seeds_needed": float(np.median(needed)),
            "floor_ratio": float(np.median(needed)) / floor, "kelly_ratio": kelly / floor,
            "not_decided_within": int(np.sum(~np.isfinite(needed))), "stream": length}


def size_expectation(sweeps: int, seeds: int, rng: np.random.Generator) -> dict:
    out = {}
    for name, fam in _families(seeds).items():
        row = {"seeds": list(fam.seeds) if len(fam.seeds) > 1 else fam.seeds[0],
               "range": [0.0, fam.top if math.isfinite(fam.top) else None],
               "true_mean": fam.mean}
        if name == "unequal_ranges":
            row["range"] = "[0, s] with s = 1, 10, 100 by seed"
        if not math.isfinite(fam.top):
            row["note"] = "cannot hold by design: no top declared, so no number of seeds bounds the mean from above"
        for case, factor in CASES.items():
            counts = {"holds": 0, "violated": 0, "holds_before": 0, "violated_before": 0}
            per = [sweeps // len(fam.seeds) + (i < sweeps % len(fam.seeds)) for i in range(len(fam.seeds))]
            for n, k in zip(fam.seeds, per):
                lo, hi, b, s = _columns(fam, n, factor)
                for a, z in _chunks(n, k):
                    x = fam.draw(rng, n, z - a) * s
                    if a == 0:
                        _check_against_the_tests(x, b, lo, hi)
                    violated, holds = _verdicts(x, b, lo, hi)
                    old_v, old_h = _old_t(x, b)
                    counts["holds"] += int(holds.sum())
                    counts["violated"] += int(violated.sum())
                    counts["holds_before"] += int(old_h.sum())
                    counts["violated_before"] += int(old_v.sum())
            cell = _cell(factor, counts, sweeps)
            if factor > 1.0 and math.isfinite(fam.top):
                cell |= _floor_ratio(fam, factor, rng, min(sweeps, RATIO_SWEEPS))
            row[case] = cell
        out[name] = row
    return out


def _cell(factor: float, counts: dict, sweeps: int) -> dict:
    """One case's rates and the error it measures (both at the edge, "holds" below it, none above it)."""
    cell = {k: v / sweeps for k, v in counts.items()}
    se = lambda p: math.sqrt(max(p, ALPHA) * (1 - max(p, ALPHA)) / sweeps)  # noqa: E731
    if factor == 1.0:
        cell |= {"error": "false violated and false holds", "rate": cell[VIOLATED], "rate_holds": cell[HOLDS],
                 "rate_before": cell["violated_before"], "rate_holds_before": cell["holds_before"]}
    elif factor < 1.0:
        cell |= {"error": "false holds", "rate": cell[HOLDS], "rate_before": cell["holds_before"]}
    if factor <= 1.0:
        worst = max(cell["rate"], cell.get("rate_holds", 0.0))
        cell["within_alpha"] = bool(worst <= ALPHA + 3.0 * se(worst))
    return cell


def growth(sweeps: int, seeds: int, rng: np.random.Generator) -> dict:
    """Per finite (E) family, two ways a sweep grows: (a) judged at n seeds, then at 2n after its budget is
    raised; (b) judged after every 10 added seeds up to 100. The error is any look's "holds" (at the edge and
    5 % low) or "violated" (at the edge), now and with the bets tuned to the count judged (before)."""
    out = {}
    for name, fam in _families(seeds).items():
        if not math.isfinite(fam.top):
            continue
        n = max(fam.seeds)
        plans = {"n then 2n": [n, 2 * n], "every 10 up to 100": list(range(10, 101, 10))}
        row = {}
        for plan, looks in plans.items():
            length = looks[-1]
            for case in ("at the bound", "bound 5 % low"):
                lo, hi, b, s = _columns(fam, length, CASES[case])
                now = {"holds": 0, "violated": 0}
                before = {"holds": 0}
                for a, z in _chunks(length, sweeps):
                    x = fam.draw(rng, length, z - a) * s
                    hold_k = _log_below(x, b, lo, hi)  # one pass: the looks are its prefixes
                    above_k = _log_above(x, b, lo, hi)
                    now["holds"] += int(np.any([_rejects(hold_k[:m]) & ~_rejects(above_k[:m]) for m in looks],
                                               axis=0).sum())
                    now["violated"] += int(np.any([_rejects(above_k[:m]) for m in looks], axis=0).sum())
                    before["holds"] += int(np.any([_rejects(_old_log_below(x[:m], b[:m], lo[:m], hi[:m], m))
                                                   for m in looks], axis=0).sum())
                cell = {"looks": looks, "holds": now["holds"] / sweeps, "holds_before": before["holds"] / sweeps}
                if case == "at the bound":
                    cell["violated"] = now["violated"] / sweeps
                worst = max(cell["holds"], cell.get("violated", 0.0))
                cell["within_alpha"] = bool(worst <= ALPHA + 3.0 * math.sqrt(ALPHA * (1 - ALPHA) / sweeps))
                row[f"{plan}, {case}"] = cell
        out[name] = row
    return out


# --- (P): simulated violation counts -------------------------------------------------------------------

P_LAYOUTS = {  # name: (settings, seeds per setting, how the settings' violations are shared)
    "seed_correlated": (10, 60, "identical"),
    "seed_correlated_200": (10, 200, "identical"),
    "partly_shared": (3, 200, "copula 0.5"),
    "independent": (1, 60, "identical"),
}


@functools.lru_cache(maxsize=None)
def _rule(k: tuple[int, ...], n: int, delta: float) -> str:
    """The claim's verdict over settings with these counts (sorted: the rule does not depend on their order)."""
    verdicts = probability_rule(list(k), list(k), [n] * len(k), [delta] * len(k))
    return VIOLATED if VIOLATED in verdicts else HOLDS if all(v == HOLDS for v in verdicts) else "inconclusive"


def _exact_identical(n: int, rate: float, delta: float, n_settings: int) -> dict:
    """Settings with identical counts: the claim's verdict is a function of one binomial count, so its rates
    are exact sums over k."""
    from scipy.stats import binom

    pmf = binom.pmf(np.arange(n + 1), n, rate)
    verdict = [_rule((k,) * n_settings, n, delta) for k in range(n + 1)]
    return {"holds": float(sum(p for p, v in zip(pmf, verdict) if v == HOLDS)),
            "violated": float(sum(p for p, v in zip(pmf, verdict) if v == VIOLATED))}


def size_probability(sweeps: int, rng: np.random.Generator, delta: float = ALPHA) -> dict:
    from scipy.stats import norm

    out = {}
    for name, (n_settings, n_seeds, shared) in P_LAYOUTS.items():
        row = {"settings": n_settings, "seeds": n_seeds, "delta": delta, "shared": shared}
        for case, factor in CASES.items():
            rate = delta / factor  # a bound false by 5 %: each run violates with probability delta * 1.05
            counts = {"holds": 0, "violated": 0, "holds_before": 0, "violated_before": 0}
            if shared == "identical":
                u = rng.random((sweeps, n_seeds))  # one uniform per seed: its runs in every setting share it
                ks = np.repeat((u < rate).sum(axis=1)[:, None], n_settings, axis=1)
            else:
                rho = float(shared.split()[1])
                z = (math.sqrt(rho) * rng.standard_normal((sweeps, 1, n_seeds))
                     + math.sqrt(1.0 - rho) * rng.standard_normal((sweeps, n_settings, n_seeds)))
                ks = (norm.cdf(z) < rate).sum(axis=2)
            for k in ks:
                v = _rule(tuple(sorted(int(c) for c in k)), n_seeds, delta)
                w = _old_probability(int(k.sum()), n_seeds * n_settings, delta)
                counts["holds"] += v == HOLDS
                counts["violated"] += v == VIOLATED
                counts["holds_before"] += w == HOLDS
                counts["violated_before"] += w == VIOLATED
            cell = _cell(factor, counts, sweeps)
            if shared == "identical":
                cell["exact"] = _exact_identical(n_seeds, rate, delta, n_settings)
            row[case] = cell
        out[name] = row
    return out


def _old_probability(k: int, n: int, delta: float) -> str:
    lo, hi = binomial_limits(k, n)
    return HOLDS if hi <= delta else VIOLATED if lo > delta else "inconclusive"


def p_at_delta_exact(delta: float = ALPHA, seeds: tuple[int, ...] = tuple(range(20, 301))) -> dict:
    """Settings that share their seeds (identical counts) at a violation rate of exactly delta: the exact
    probability that the claim says "holds", for every number of seeds from 20 to 300 (the Clopper-Pearson
    limit is exact, so it cannot exceed alpha)."""
    from scipy.stats import binom

    worst_n, worst = 0, 0.0
    table = {}
    for n in seeds:
        k = 0  # the upper limit grows with k: the k that qualify are 0..k - 1
        while k <= n and binomial_limits(k, n)[1] <= delta:
            k += 1
        p = float(binom.cdf(k - 1, n, delta)) if k else 0.0
        table[n] = p
        if p > worst:
            worst_n, worst = n, p
    return {"delta": delta, "largest": worst, "at_seeds": worst_n, "at_60": table.get(60), "at_120": table.get(120),
            "at_200": table.get(200)}


# --- power: planted errors on the real runs -----------------------------------------------------------

def power(results: Path, experiments: Path = ROOT / "experiments") -> dict:
    import pandas as pd
    import yaml

    out: dict = {}
    tight_caught: list[bool] = []
    for table_path in sorted(results.glob("*/results.parquet")):
        name = table_path.parent.name
        spec_path = experiments / f"{name}.yaml"
        if not spec_path.exists():
            continue
        table = pd.read_parquet(table_path)
        claims = yaml.safe_load(spec_path.read_text()).get("claims") or []
        for claim in claims:
            rows = table[table["bound"] == claim["bound"]]
            if not len(rows):
                continue
            g = str(claim["guarantee"])
            if judge_bound(rows, power=False)["verdict"] == VIOLATED:
                continue  # a bound already violated plants nothing
            for s in SCALES:
                scaled = _scaled(rows, s)
                caught = judge_bound(scaled, power=False)["verdict"] == VIOLATED
                cell = out.setdefault(g, {}).setdefault(str(s), {"claims": 0, "caught": 0})
                cell["claims"] += 1
                cell["caught"] += int(caught)
                if g == "D" and s == 0.99 and float(rows["max_ratio_over_t"].max()) == 1.0:
                    tight_caught.append(caught)
    for g in out:
        for s in out[g]:
            out[g][s]["rate"] = out[g][s]["caught"] / out[g][s]["claims"]
    return {"by_guarantee": out, "tight_constructions": len(tight_caught),
            "tight_caught_at_0.99": all(tight_caught) if tight_caught else None}


def _scaled(rows, s: float):  # noqa: ANN001, ANN202
    """The rows judged against the bound x s: the bound, its per-step ratio and each row's holds recomputed."""
    rows = rows.copy()
    rows["theoretical"] = rows["theoretical"] * s
    rows["ratio"] = rows["ratio"] / s
    rows["max_ratio_over_t"] = rows["max_ratio_over_t"] / s
    rows["holds"] = rows["max_ratio_over_t"] <= 1.0
    rows["informative"] = rows["theoretical"] < rows["trivial"]
    return rows


# --- the command --------------------------------------------------------------------------------------

def figure(result: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.0, 3.6), dpi=150)
    for g, cells in sorted(result["power"]["by_guarantee"].items()):
        xs = sorted(cells, key=float, reverse=True)
        ax.plot(range(len(xs)), [cells[x]["rate"] for x in xs], marker="o",
                label=f"({g}) {cells[xs[0]]['claims']} claims")
    ax.set_xticks(range(len(SCALES)), [f"x{s:g}" for s in sorted(SCALES, reverse=True)])  # larger errors to the right
    ax.set_xlabel("planted error: each claim judged again, against its bound x s")
    ax.set_ylabel("claims whose verdict becomes violated")
    ax.set_ylim(-0.03, 1.03)
    ax.set_title("Power of the verdicts on the main job's runs", fontsize=10)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sweeps", type=int, default=10_000, help="simulated sweeps per family and case (default 10000)")
    ap.add_argument("--seeds", type=int, default=30, help="seeds per simulated (E) setting of the families whose "
                    "power comes at a few tens of seeds (default 30)")
    ap.add_argument("--results", type=Path, default=ROOT / "results", help="the main job's results (default results/)")
    ap.add_argument("--experiments", type=Path, default=ROOT / "experiments", help="their claims (default experiments/)")
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "calibration.json")
    ap.add_argument("--figure", type=Path, default=ROOT / "docs" / "img" / "calibration_power.png")
    args = ap.parse_args(argv)
    if args.sweeps < 1 or args.seeds < 2:
        ap.error("--sweeps must be >= 1 and --seeds >= 2")
    rng = np.random.default_rng(20261125)
    t0 = time.time()
    result = {
        "alpha": ALPHA,
        "sweeps": args.sweeps,
        "size_expectation": size_expectation(args.sweeps, args.seeds, rng),
        "growth": growth(args.sweeps, args.seeds, rng),
        "size_probability": size_probability(args.sweeps, rng),
        "p_at_delta_exact": p_at_delta_exact(),
        "power": power(args.results, args.experiments),
    }
    if not result["power"]["by_guarantee"] and args.out.exists():  # no results here: keep the last measured section
        last = json.loads(args.out.read_text()).get("power") or {}
        if last.get("by_guarantee"):
            last.setdefault("note", "carried over from an earlier run with the main job's results (not re-judged "
                                    "by the current engine: results/ was absent)")
            result["power"] = last
    result["seconds"] = round(time.time() - t0, 1)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    if result["power"]["by_guarantee"] and "note" not in result["power"]:
        figure(result, args.figure)
    _print(result)
    return 0


def _print(r: dict) -> None:
    print(f"(E) {r['sweeps']} sweeps per cell, alpha = {r['alpha']}: now (before issue 32)")
    print(f"  {'family':15s} {'edge: viol / holds':>26s} {'5% low holds':>17s} {'20% low holds':>17s} "
          f"{'25% high holds':>15s} {'2x holds':>9s} {'ratio 25%/2x (Kelly)':>24s}")
    for fam, row in r["size_expectation"].items():
        e, a, b, c, d = (row[case] for case in CASES)
        ratios = " / ".join(f"{x['floor_ratio']:.2f} ({x['kelly_ratio']:.2f})" if "floor_ratio" in x else "-" for x in (c, d))
        print(f"  {fam:15s} {e['rate']:.4f} / {e['rate_holds']:.4f} ({e['rate_before']:.3f}/{e['rate_holds_before']:.3f})"
              f" {a['rate']:.4f} ({a['rate_before']:.3f}) {b['rate']:.4f} ({b['rate_before']:.3f})"
              f" {c['holds']:15.3f} {d['holds']:9.3f} {ratios:>24s}")
    print("growth: any look holds (bets tuned to the count judged, before) / any look violated")
    for fam, row in r["growth"].items():
        cells = "; ".join(f"{k}: {v['holds']:.4f} ({v['holds_before']:.4f})"
                          + (f" / {v['violated']:.4f}" if "violated" in v else "") for k, v in row.items())
        print(f"  {fam:15s} {cells}")
    print("(P): edge false violated / false holds [exact], 5 % and 20 % low false holds, 25 % high and 2x holds")
    for fam, row in r["size_probability"].items():
        e = row["at the bound"]
        exact = f" [{e['exact']['violated']:.4f} / {e['exact']['holds']:.4f}]" if "exact" in e else ""
        print(f"  {fam:20s} {e['rate']:.4f} / {e['rate_holds']:.4f}{exact}; {row['bound 5 % low']['rate']:.4f}, "
              f"{row['bound 20 % low']['rate']:.4f}; {row['bound 25 % high']['holds']:.3f}, {row['bound 2x']['holds']:.3f}")
    x = r["p_at_delta_exact"]
    print(f"(P) shared seeds at a rate of exactly delta: P(holds) exact, largest {x['largest']:.4f} (at {x['at_seeds']} "
          f"seeds); at 60 seeds {x['at_60']:.4f}")
    for g, cells in sorted(r["power"]["by_guarantee"].items()):
        print(f"power ({g}): " + ", ".join(f"x{s}: {c['caught']}/{c['claims']}" for s, c in cells.items()))
    print(f"{r['seconds']} s")


if __name__ == "__main__":
    raise SystemExit(main())
