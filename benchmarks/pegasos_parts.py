"""Where Pegasos' single-step kernel spends what the margins-only pass does not (docs/performance.md, "Where
Pegasos' time goes"): a ladder of passes over the same rows, each adding one part of what a Pegasos step does
to the one before, timed round robin with the real kernel.

1. ``margins``: y_i w.x_i per row in the fixed order of ``dot_row``, stored (``margins_kernel``'s loop, into
   an array allocated beforehand, as the kernel's arrays are);
2. ``+ index``: the row of each step read from the index stream (``idx[r, 0]``), as Pegasos reads it;
3. ``+ 1/t``: the scale a = 1/t computed (a division a step) and summed (A += a), the margin y_i a w.x_i;
4. ``+ per-step record``: the step's loss, active flag and squared sub-gradient norm computed and written,
   as the regret bounds read them (what ``PegasosSteps`` holds);
5. ``kernel``: Pegasos' own kernel (``PegasosCore.advance``, every array allocated and touched beforehand), for
   the hinge objective as a default run passes it (unit weights, no reference: nothing more read a step),
   which also updates v and z on the active steps and writes the snapshots;
6. ``+ step reads``: 4 with the step's example weight and reference margin read (the margin ref_i + y_i a
   w.x_i), as the weighted and transfer objectives need;
7. ``kernel, weights read``: the kernel given those two arrays.

Each share is of the ``margins`` pass, min and median over the rounds (``--reps``), with the load average at
the start. The ladder's passes are benchmarks only: what they compute is not what a run computes.

    python benchmarks/pegasos_parts.py [--rows 1000000] [--dims 10,100,1000] [--reps 7]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench import linear_data, pegasos_kernel_alone, round_robin  # noqa: E402

from pipeline._jit import dot_row, kernel  # noqa: E402


@kernel
def margins_into(X, y, w, out):  # noqa: ANN001, ANN201
    for i in range(X.shape[0]):
        out[i] = y[i] * dot_row(w, X, i)
    return 0


@kernel
def margins_indexed(X, y, w, idx, out):  # noqa: ANN001, ANN201
    for r in range(idx.shape[0]):
        i = idx[r, 0]
        out[r] = y[i] * dot_row(w, X, i)
    return 0


@kernel
def margins_scaled(X, y, w, idx, ref, s, out):  # noqa: ANN001, ANN201
    A = 0.0
    for r in range(idx.shape[0]):
        i = idx[r, 0]
        a = 1.0 / (r + 1)
        A += a
        if ref is None:  # the hinge objective: no reads of the step's weight and reference margin (as the kernel)
            out[r] = y[i] * a * dot_row(w, X, i)
        else:
            out[r] = ref[i] + y[i] * a * dot_row(w, X, i) + 0.0 * s[i]
    return A


@kernel
def margins_recorded(X, y, w, idx, ref, s, lam, loss, active, grad2):  # noqa: ANN001, ANN201
    A = 0.0
    vv = 1.0
    half_lam = 0.5 * lam
    for r in range(idx.shape[0]):
        i = idx[r, 0]
        a = 1.0 / (r + 1)
        A += a
        if ref is None:
            margin = y[i] * a * dot_row(w, X, i)
            weight = 1.0
        else:
            margin = ref[i] + y[i] * a * dot_row(w, X, i)
            weight = s[i]
        if margin < 1.0:
            loss[r] = half_lam * a * a * vv + weight * (1.0 - margin)
            active[r] = 1
            grad2[r] = lam * lam * a * a * vv - 2.0 * lam * a * margin + weight
        else:
            loss[r] = half_lam * a * a * vv
            active[r] = 0
            grad2[r] = lam * lam * a * a * vv
    return A


def ladder(rows: int, d: int, reps: int, lam: float = 1e-4) -> dict[str, dict[str, float]]:
    """The shares of the ``margins`` pass, per part, at width d."""
    X, y = linear_data(rows, d)
    w = np.random.default_rng(1).standard_normal(d)
    idx = np.arange(rows, dtype=np.int64).reshape(rows, 1)
    ref, s = np.zeros(rows), np.ones(rows)
    out, loss, grad2, active = np.zeros(rows), np.zeros(rows), np.zeros(rows), np.zeros(rows, dtype=np.int32)
    times = round_robin({
        "margins": lambda: margins_into(X, y, w, out),
        "+ index": lambda: margins_indexed(X, y, w, idx, out),
        "+ 1/t": lambda: margins_scaled(X, y, w, idx, None, None, out),
        "+ per-step record": lambda: margins_recorded(X, y, w, idx, None, None, lam, loss, active, grad2),
        "kernel": pegasos_kernel_alone(X, y, lam),
        "+ step reads": lambda: margins_recorded(X, y, w, idx, ref, s, lam, loss, active, grad2),
        "kernel, weights read": pegasos_kernel_alone(X, y, lam, s=s, ref=ref),
    }, reps)
    base = times["margins"]
    return {name: {"min": min(b / t for b, t in zip(base, ts)), "median": statistics.median(b / t for b, t in zip(base, ts)),
                   "seconds_min": min(ts)} for name, ts in times.items()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", type=int, default=1_000_000, help="rows at d = 10 (fewer at larger d: rows x d <= 1e8)")
    ap.add_argument("--dims", default="10,100,1000")
    ap.add_argument("--reps", type=int, default=7)
    args = ap.parse_args()
    print(f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores; shares of the margins pass "
          "(its time / the pass's time: 1 = as fast), min .. median")
    for d in (int(x) for x in args.dims.split(",")):
        rows = min(args.rows, 100_000_000 // d)
        print(f"d = {d}, {rows:,} rows:")
        for name, r in ladder(rows, d, args.reps).items():
            print(f"  {name:24s} {r['median']:.2f} (min {r['min']:.2f})  {r['seconds_min'] * 1e3:7.1f} ms")


if __name__ == "__main__":
    main()
