"""Floating-point error bounds shared by every rigorous computation (certificates, bounds, solvers).

Higham, *Accuracy and Stability of Numerical Algorithms*, 2nd ed., eq. 3.5: a dot product of length n
computed in float64 has |fl(a.b) - a.b| <= gamma_n |a|.|b| with gamma_n = n u / (1 - n u). That model
ignores underflow: a product or quotient that underflows errs by up to ETA / 2 in absolute terms
(Higham section 2.1; sums and differences are exact there), which rigorous bounds add explicitly.
Scalar steps are rounded outwards with :func:`up` and :func:`down`: round-to-nearest followed by one
step to the next float bounds the exact result on that side, in the normal and subnormal ranges alike.
"""

from __future__ import annotations

import numpy as np

U = 2.0**-53  # unit roundoff of float64
ETA = 2.0**-1074  # smallest positive (subnormal) float64: twice the largest error of an underflowing product
TINY = 2.0**-1022  # smallest normal float64: below it, results lose relative accuracy


def gamma(n: int) -> float:
    """Higham's gamma_n, doubled to cover the evaluation of the error term itself."""
    return 2.0 * n * U / (1.0 - n * U)


def up(x: float | np.ndarray) -> float | np.ndarray:
    """The next float above ``x``: >= the exact value of a result that was rounded to nearest into ``x``."""
    out = np.nextafter(x, np.inf)
    return float(out) if np.ndim(out) == 0 else out


def down(x: float | np.ndarray) -> float | np.ndarray:
    """The next float below ``x``: <= the exact value of a result that was rounded to nearest into ``x``."""
    out = np.nextafter(x, -np.inf)
    return float(out) if np.ndim(out) == 0 else out
