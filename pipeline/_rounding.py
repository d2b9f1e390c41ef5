"""Floating-point error bounds shared by every rigorous computation (certificates, bounds, solvers).

Higham, *Accuracy and Stability of Numerical Algorithms*, 2nd ed., eq. 3.5: a dot product of length n
computed in float64 has |fl(a.b) - a.b| <= gamma_n |a|.|b| with gamma_n = n u / (1 - n u).
"""

from __future__ import annotations

U = 2.0**-53  # unit roundoff of float64


def gamma(n: int) -> float:
    """Higham's gamma_n, doubled to cover the evaluation of the error term itself."""
    return 2.0 * n * U / (1.0 - n * U)
