"""``boundlab-datasets``: the bundled binary tasks with their certified statistics, as a Markdown table.

For each task and preprocessing: n, d, R, the certified interval [gamma_lo, gamma_hi] of the best
margin gamma*, separability (an LP), and Novikoff's bound floor((R/gamma_lo)^2) from the bounds
catalog. The table in docs/datasets.md is this command's output (a test checks it).
"""

from __future__ import annotations

import math
import sys

import numpy as np

from pipeline.bounds import NOVIKOFF
from pipeline.data import Bundled

TASKS = (
    ("breast_cancer", 1, None, "benign vs malignant"),
    ("iris", 0, None, "setosa vs rest"),
    ("iris", 1, 2, "versicolor vs virginica"),
    ("wine", 0, None, "class 0 vs rest"),
    ("digits", 0, None, "0 vs rest"),
    ("digits", 3, 8, "3 vs 8"),
    ("digits", 1, 7, "1 vs 7"),
)
PREPROCESSING = (("raw", {}), ("standardized, bias 1", {"standardize": True, "bias": 1.0}))


def _num(x: float) -> str:
    return "-" if math.isnan(x) else f"{x:.6g}"


def _bound(value: float) -> str:
    """Exact below 1e9; above, 6 significant digits: the last digits of a 1e16 bound follow the solver's
    last bits, which differ between machines (the certificate, not the table, is the rigorous part)."""
    return f"{value:,.0f}" if value < 1e9 else f"{value:.6g}"


def _gap(gap: float) -> str:
    """The certificate's relative gap as the power of ten above it ('<= 1e-12'): its own digits follow the
    solvers' last bits, which differ between machines, as the bound's do."""
    if math.isnan(gap):
        return "-"
    if gap <= 0:
        return "0"
    return f"<= 1e{math.ceil(math.log10(gap)):d}"


def table() -> str:
    lines = [
        "| task | overrides | preprocessing | n | d | R | certified gamma* in | rel. gap | separable | Novikoff bound |",
        "| --- | --- | --- | ---: | ---: | ---: | --- | ---: | --- | ---: |",
    ]
    for source, positive, negative, label in TASKS:
        for prep, kwargs in PREPROCESSING:
            ds = Bundled(source=source, positive=positive, negative=negative, **kwargs).generate(np.random.default_rng(0))
            s = ds.stats.as_dict()
            margin = f"[{_num(s['gamma_lo'])}, {_num(s['gamma_hi'])}]" if s["separable"] else "none (LP infeasible)"
            bound = _bound(NOVIKOFF.value(s)) if NOVIKOFF.applies(s) is None else "n/a"
            overrides = f"dataset.source={source} dataset.positive={positive}" + (
                f" dataset.negative={negative}" if negative is not None else "")
            lines.append(f"| {source}: {label} | `{overrides}` | {prep} | {s['m']} | {s['d']} | {_num(s['R'])} | "
                         f"{margin} | {_gap(s['gap'])} | "
                         f"{'yes' if s['separable'] else 'no'} | {bound} |")
    return "\n".join(lines)


USAGE = """usage: boundlab-datasets

Prints the bundled binary tasks (scikit-learn's breast_cancer, iris, wine, digits), raw and standardized,
with their certified statistics as a Markdown table: n, d, the radius R, the certified interval of the best
margin gamma*, separability, and Novikoff's bound (R/gamma_lo)^2; each row's overrides select the task
(dataset=bundled dataset.source=... dataset.positive=...). docs/datasets.md shows the table. Takes no
arguments."""


def main(argv: list[str] | None = None) -> int:
    """``boundlab-datasets``: the table on stdout (exit 0); ``--help``: what it prints; anything else: one line
    and exit 2, before any dataset is certified. Quiet when the reader of stdout has gone
    (:func:`pipeline.sweep.interrupts.until_the_reader_leaves`)."""
    from pipeline.sweep.interrupts import until_the_reader_leaves

    return until_the_reader_leaves(lambda: _main(list(sys.argv[1:] if argv is None else argv)))


def _main(argv: list[str]) -> int:
    if argv and argv[0] in ("-h", "--help"):
        print(USAGE)
        return 0
    if argv:
        print(f"boundlab-datasets: error: {argv[0]!r}: the command takes no arguments ('boundlab-datasets --help' "
              "says what it prints)", file=sys.stderr)
        return 2
    print(table())
    return 0


if __name__ == "__main__":
    sys.exit(main())
