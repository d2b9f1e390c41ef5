"""The verdict engine's own calibration: its size on simulated sweeps and its power on the real runs.

    python benchmarks/calibration.py                 # 10,000 simulated sweeps per family and case
    python benchmarks/calibration.py --sweeps 200    # a quick look
    python benchmarks/calibration.py --out PATH --figure PATH

**Size.** Each simulated sweep is what the engine sees of one bound: settings of distinct seeds, each
seed's measured value drawn from a family whose true mean (E) or violation rate (P) is known, and a bound
placed exactly at the truth (a true bound at its edge: "violated" must come out in at most alpha = 5 % of
sweeps) or 5 % and 20 % below it (a false bound: "holds" must come out in at most 5 %). The families:

- ``bounded``: Beta(2, 5), range [0, 1] declared;
- ``skewed``: a log-normal capped at 60, skewness about 10 (the random-iterate suboptimality's shape),
  range [0, 60] declared;
- ``rare_large``: 0 in 98 % of seeds, the top of the range [0, 1] in 2 % (a rare large value);
- ``unbounded``: a log-normal with no top declared, range [0, inf);
- ``seed_correlated`` (P): 10 settings x 20 seeds, every setting's runs of one seed violate together (one
  shared uniform per seed), rate delta = 0.05 per run (the rule is :func:`pipeline.verdicts.probability_rule`,
  which ``judge_bound`` decides with);
- ``independent`` (P): one setting of 60 seeds, rate delta per run.

Beside each rate is the rate of the engine before issue 32 (Student t limits for (E), Clopper-Pearson over
pooled rows for (P)) on the same sweeps, so the table shows what changed.

**Power.** Every built-in bound of the main job's results (``results/*/results.parquet``, from ``dvc repro``)
is scaled by 0.99, 0.9, 0.5 and 0.1 (a planted error: the bound made 1 %, 10 %, 50 %, 90 % too small) and
judged again by :func:`pipeline.verdicts.judge_bound` on the same runs: the share of claims whose verdict
becomes "violated", per guarantee type, and whether every (D) bound attained with ratio 1 (the tight
constructions) is caught at 0.99.

The results go to ``benchmarks/calibration.json`` and the power curves to ``docs/img/calibration_power.png``.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from pipeline import limits  # noqa: E402
from pipeline.verdicts import ALPHA, HOLDS, VIOLATED, binomial_limits, judge_bound, probability_rule, t_limits  # noqa: E402

# bound / truth: at the truth (a false "violated" is the error), 5 % and 20 % below it (a false "holds" is the
# error; "violated" is power), 25 % and 100 % above it (a true bound with room: "holds" is power)
CASES = {"at the bound": 1.0, "bound 5 % low": 1.0 / 1.05, "bound 20 % low": 1.0 / 1.2,
         "bound 25 % high": 1.25, "bound 2x": 2.0}
SCALES = (0.99, 0.9, 0.5, 0.1, 0.01, 0.001)


# --- size: simulated sweeps ---------------------------------------------------------------------------

def _lognormal(rng: np.random.Generator, size: int, cap: float) -> np.ndarray:
    return np.minimum(rng.lognormal(0.0, 1.5, size), cap)


def _capped_lognormal_mean(cap: float) -> float:
    rng = np.random.default_rng(12345)  # the family's true mean, to 1e-3 relative (a fixed draw of 4e6 values)
    return float(_lognormal(rng, 4_000_000, cap).mean())


FAMILIES_E = {
    # name: (sampler(rng, n) -> values, true mean, range)
    "bounded": (lambda rng, n: rng.beta(2.0, 5.0, n), 2.0 / 7.0, (0.0, 1.0)),
    "skewed": (lambda rng, n: _lognormal(rng, n, 60.0), None, (0.0, 60.0)),
    "rare_large": (lambda rng, n: (rng.random(n) < 0.02).astype(np.float64), 0.02, (0.0, 1.0)),
    "unbounded": (lambda rng, n: rng.lognormal(0.0, 1.5, n), math.exp(1.5 ** 2 / 2.0), (0.0, math.inf)),
}


def _old_expectation(x: np.ndarray, bound: float) -> str:
    """The engine before issue 32 on one setting: Student t limits, 95 % one-sided."""
    from scipy import stats

    mean, _, hi = t_limits(x)
    if hi <= bound:
        return HOLDS
    sd = float(x.std(ddof=1)) if x.size > 1 else 0.0
    if x.size > 1 and sd > 0 and stats.t.sf((mean - bound) / (sd / math.sqrt(x.size)), x.size - 1) <= ALPHA:
        return VIOLATED
    return "inconclusive"


def _new_expectation(x: np.ndarray, bound: float, lo: float, hi: float) -> str:
    if limits.test_above(x, bound, lo, hi).reject:
        return VIOLATED
    return HOLDS if limits.test_below(x, bound, lo, hi).reject else "inconclusive"


def size_expectation(sweeps: int, seeds: int, rng: np.random.Generator) -> dict:
    out = {}
    for name, (sample, mean, (lo, hi)) in FAMILIES_E.items():
        mean = _capped_lognormal_mean(60.0) if mean is None else mean
        row = {"seeds": seeds, "range": [lo, hi], "true_mean": mean}
        for case, factor in CASES.items():
            bound = mean * factor
            new = {HOLDS: 0, VIOLATED: 0}
            old = {HOLDS: 0, VIOLATED: 0}
            for _ in range(sweeps):
                x = sample(rng, seeds)
                v = _new_expectation(x, bound, lo, hi)
                w = _old_expectation(x, bound)
                new[v] = new.get(v, 0) + 1
                old[w] = old.get(w, 0) + 1
            row[case] = _cell(factor, new, old, sweeps)
        out[name] = row
    return out


def _cell(factor: float, new: dict, old: dict, sweeps: int) -> dict:
    """One case's rates: the error it measures (none above the truth), then power, now and before."""
    cell = {"holds": new[HOLDS] / sweeps, "violated": new[VIOLATED] / sweeps,
            "holds_before": old[HOLDS] / sweeps, "violated_before": old[VIOLATED] / sweeps}
    if factor <= 1.0:
        wrong = VIOLATED if factor == 1.0 else HOLDS
        cell |= {"error": f"false {wrong}", "rate": cell[wrong], "rate_before": cell[f"{wrong}_before"]}
    return cell


def _old_probability(k: int, n: int, delta: float) -> str:
    lo, hi = binomial_limits(k, n)
    return HOLDS if hi <= delta else VIOLATED if lo > delta else "inconclusive"


def size_probability(sweeps: int, rng: np.random.Generator, delta: float = ALPHA) -> dict:
    """(P): the engine's per-setting rule (:func:`pipeline.verdicts.probability_rule`, what judge_bound
    decides with) on simulated violation counts, against the rule before issue 32 (pooled rows)."""
    out = {}
    layouts = {"seed_correlated": (10, 20), "independent": (1, 60)}
    for name, (n_settings, n_seeds) in layouts.items():
        row = {"settings": n_settings, "seeds": n_seeds, "delta": delta}
        for case, factor in CASES.items():
            rate = delta / factor  # a bound false by 5 %: each run violates with probability delta * 1.05
            new = {HOLDS: 0, VIOLATED: 0}
            old = {HOLDS: 0, VIOLATED: 0}
            for _ in range(sweeps):
                u = rng.random(n_seeds)  # one uniform per seed: its runs in every setting share it
                if name == "seed_correlated":
                    k = [int((u < rate).sum())] * n_settings
                else:
                    k = [int((u < rate).sum())]
                verdicts = probability_rule(k, k, [n_seeds] * len(k), [delta] * len(k))
                v = VIOLATED if VIOLATED in verdicts else HOLDS if all(x == HOLDS for x in verdicts) else "inconclusive"
                w = _old_probability(sum(k), n_seeds * len(k), delta)
                new[v] = new.get(v, 0) + 1
                old[w] = old.get(w, 0) + 1
            row[case] = _cell(factor, new, old, sweeps)
        out[name] = row
    return out


def optional_stopping(sweeps: int, rng: np.random.Generator, rounds: int = 10, step: int = 10) -> dict:
    """A sweep that adds ``step`` seeds per round and stops as soon as the (E) test says "holds", on a bound
    5 % below the truth (skewed family): the betting test keeps its level under this optional stopping."""
    sample, _, (lo, hi) = FAMILIES_E["skewed"]
    bound = _capped_lognormal_mean(60.0) / 1.05
    false_holds = 0
    for _ in range(sweeps):
        x = sample(rng, rounds * step)
        false_holds += any(limits.test_below(x[: r * step], bound, lo, hi, n=rounds * step).reject
                           for r in range(1, rounds + 1))
    return {"rounds": rounds, "seeds_per_round": step, "false_holds": false_holds / sweeps}


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
    ap.add_argument("--seeds", type=int, default=30, help="seeds per simulated (E) setting (default 30)")
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
        "size_probability": size_probability(args.sweeps, rng),
        "optional_stopping": optional_stopping(max(1, args.sweeps // 10), rng),
        "power": power(args.results, args.experiments),
    }
    result["seconds"] = round(time.time() - t0, 1)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    if result["power"]["by_guarantee"]:
        figure(result, args.figure)
    _print(result)
    return 0


def _print(r: dict) -> None:
    print(f"size (alpha = {r['alpha']}), {r['sweeps']} sweeps per cell: rate now (rate before issue 32)")
    for part in ("size_expectation", "size_probability"):
        for fam, row in r[part].items():
            cells = "; ".join(f"{case}: {row[case]['error']} {row[case]['rate']:.4f} ({row[case]['rate_before']:.4f})"
                              for case in CASES if "rate" in row[case])
            print(f"  {fam:16s} {cells}")
    print("power: share of sweeps judged holds / violated, now (before)")
    for part in ("size_expectation", "size_probability"):
        for fam, row in r[part].items():
            cells = "; ".join(f"{case}: {row[case]['holds']:.3f} / {row[case]['violated']:.3f} "
                              f"({row[case]['holds_before']:.3f} / {row[case]['violated_before']:.3f})" for case in CASES)
            print(f"  {fam:16s} {cells}")
    o = r["optional_stopping"]
    print(f"optional stopping ({o['rounds']} rounds of {o['seeds_per_round']} seeds, bound 5 % low): false holds "
          f"{o['false_holds']:.4f}")
    for g, cells in sorted(r["power"]["by_guarantee"].items()):
        print(f"power ({g}): " + ", ".join(f"x{s}: {c['caught']}/{c['claims']}" for s, c in cells.items()))
    print(f"tight (D) constructions caught at x0.99: {r['power']['tight_caught_at_0.99']} "
          f"({r['power']['tight_constructions']} claims); {r['seconds']} s")


if __name__ == "__main__":
    raise SystemExit(main())
