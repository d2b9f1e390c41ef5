"""The certified worst case beside each mistake or regret bound, per bound family (docs/bounds.md sections 1, 3, 4):
bound, exact worst case, its certificate and the solver's time, printed as tables and written as JSON.

    python benchmarks/worst_case_tables.py                 # about a minute on 2 cores
    python benchmarks/worst_case_tables.py --out /tmp/worst_case.json

- Perceptron (Novikoff, radius 1): M* by the margin SDP (pipeline.solvers.perceptron_worst), its duality gap at
  M* and M* + 1, against floor((R/gamma)^2) in exact arithmetic on the float gamma (the pipeline's bound, rounded
  upwards to stay rigorous, can say one more: 25 at gamma = 0.2).
- Halving: the adversary's exact value and the Littlestone dimension (pipeline.solvers.games) on thresholds and
  intervals over N points, against floor(log2 |H|).
- Weighted Majority (deterministic, beta = 1/2, a horizon of 10 rounds): the exact value over every sign pattern of
  N experts with the best expert erring at most m* times, against (ln|H| + m* ln(1/beta)) / ln(2/(1+beta)).
- Pegasos / online gradient descent, eta_t = 1/(lam t): the worst average regret by performance estimation
  (pipeline.analysis.pep), upper (certified from the SDP's dual) and lower (a replayed instance), against
  G^2 (1 + ln T) / (2 lam T); with a projection ball the upper end covers every convex set between {0, u} and the
  ball, so for the ball itself it is an upper bound only.

The samples' measured mistakes under the adaptive, random and given orders are the experiment worst_case's
(report/index.html, "The worst case beside the bound"); this script gives the classes' side only.
"""

from __future__ import annotations

import argparse
import json
import math
import time
from fractions import Fraction
from itertools import product

import numpy as np


def _timed(f, *args, **kwargs):  # noqa: ANN001, ANN002, ANN003, ANN202
    start = time.perf_counter()
    value = f(*args, **kwargs)
    return value, time.perf_counter() - start


def perceptron() -> list[dict]:
    from pipeline.data.worst_case import WorstCase

    rows = []
    for gamma in (0.5, 0.3, 0.2, 0.15):
        ds, seconds = _timed(WorstCase(gamma=gamma, rho=1.0).generate, np.random.default_rng(0))
        e = ds.extra
        rows.append({"gamma": gamma, "bound": int(Fraction(1) // Fraction(gamma) ** 2), "exact": e["worst_case"],
                     "certificate_gap": float(f"{e['certificate_gap']:.2g}"), "certified_by": e["certified_by"],
                     "sdp_seconds": round(seconds, 2)})
    return rows


def _thresholds(n: int) -> np.ndarray:
    return np.array([[1 if x >= k else -1 for k in range(n + 1)] for x in range(n)])  # points x hypotheses


def _intervals(n: int) -> np.ndarray:
    cols = [[1 if a <= x < b else -1 for x in range(n)] for a in range(n + 1) for b in range(a, n + 1)]
    return np.array(cols).T


def halving() -> list[dict]:
    from pipeline.solvers import games

    rows = []
    for name, make, n in (("thresholds", _thresholds, 10), ("thresholds", _thresholds, 30), ("intervals", _intervals, 6),
                          ("intervals", _intervals, 9)):
        t = make(n)
        game, seconds = _timed(games.halving_value, t)
        ldim = games.littlestone_dimension(t)
        rows.append({"class": f"{name} on {n} points", "H": game.H, "bound": game.H.bit_length() - 1,
                     "exact": game.value, "littlestone": ldim, "seconds": round(seconds, 3)})
    return rows


def weighted_majority() -> list[dict]:
    from pipeline.solvers import games

    rows, beta, horizon = [], Fraction(1, 2), 10
    for experts, best in product((2, 3, 4), (0, 1, 2)):
        t = np.array(list(product((-1, 1), repeat=experts)))  # every sign pattern: points x experts
        game, seconds = _timed(games.weighted_majority_value, t, beta, best, horizon=horizon)
        bound = (math.log(experts) + best * math.log(1 / beta)) / math.log(2 / (1 + beta))
        rows.append({"experts": experts, "best_mistakes": best, "horizon": horizon, "bound": round(bound, 3),
                     "exact": game.value, "seconds": round(seconds, 3)})
    return rows


def pegasos() -> list[dict]:
    from pipeline.analysis import pep

    rows = []
    for radius, T in product((None, 1 / math.sqrt(0.1)), (1, 2, 4, 8, 16)):
        r, seconds = _timed(pep.worst_regret, T, 0.1, 1.0, radius=radius)
        rows.append({"lam": 0.1, "G": 1.0, "radius": "none" if radius is None else "1/sqrt(lam)", "T": T,
                     "bound": round(r.bound, 6), "upper": round(r.upper, 6), "lower": round(r.lower, 6),
                     "gap": float(f"{r.gap:.2g}"), "bound_over_upper": round(r.bound / r.upper, 3),
                     "seconds": round(seconds, 2)})
    return rows


def _print(title: str, rows: list[dict]) -> None:
    print(f"\n{title}")
    keys = list(rows[0])
    width = {k: max(len(k), *(len(str(r[k])) for r in rows)) for k in keys}
    print("  ".join(k.rjust(width[k]) for k in keys))
    for r in rows:
        print("  ".join(str(r[k]).rjust(width[k]) for k in keys))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", help="also write the tables as JSON here")
    args = parser.parse_args()
    tables = {}
    for title, f in (("Perceptron: Novikoff's class, radius 1 (margin SDP)", perceptron),
                     ("Halving: the adversary's exact value (game search)", halving),
                     ("Weighted Majority, beta = 1/2: the exact value (game search)", weighted_majority),
                     ("Pegasos / OGD, eta_t = 1/(lam t): worst average regret (performance estimation)", pegasos)):
        tables[f.__name__] = f()
        _print(title, tables[f.__name__])
    if args.out:
        with open(args.out, "w") as fh:
            json.dump(tables, fh, indent=1)


if __name__ == "__main__":
    main()
