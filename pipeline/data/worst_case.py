"""The certified worst case of Novikoff's setting as a sample (docs/bounds.md section 1, "The exact worst case").

Among all sequences with ||x_t|| <= rho that a unit vector separates with margin gamma, in any dimension, the
Perceptron makes at most M* mistakes, M* the largest M whose margin SDP (:mod:`pipeline.solvers.perceptron_worst`:
the Gram matrix of the comparator and the signed examples) still reaches gamma; its value is rho / sqrt(M), so
M* = floor((rho/gamma)^2) on exact reals, and one less when the float gamma lies just above rho / sqrt(M).
This dataset is an instance that attains M*, factored from the SDP's solution: presented as given, the
Perceptron makes exactly M* mistakes. Its rows record the certificate: M* (``worst_case``), the duality gap of
the two SDPs that decide it (at M* and at M* + 1, whose dual bound stays below gamma: no instance of the class
makes M* + 1 mistakes; ``certified_by`` "sdp", or "closed_form" where gamma is within the solver's tolerance of
rho / sqrt(M* + 1) and the closed form decides in exact arithmetic).
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from pipeline.data.certify import certify
from pipeline.data.dataset import Dataset, Source
from pipeline.params import RHO, Param, ParamError, above, check_params

MAX_MISTAKES = 63  # solved by the SDP up to here (64 x 64 at most: seconds); above, the proven closed form
MAX_ROWS = 5000  # the closed form's instance is the dense M x M matrix rho I, as dataset=tight's


def _closed_form(rho: float, gamma: float) -> int:
    """floor((rho/gamma)^2) in exact rational arithmetic on the floats given: the largest M with gamma <= rho/sqrt(M)."""
    return int(Fraction(float(rho)) ** 2 // Fraction(float(gamma)) ** 2)


class WorstCase(Source):
    """The Perceptron's certified worst case for radius ``rho`` and margin ``gamma`` (module docstring).

    Parameters
    ----------
    gamma : the margin, with (rho/gamma)^2 <= 5000 rows; up to 63 mistakes the SDP solves and certifies it, above
        the proven closed form gives M* and the exact instance x_t = rho e_t (``certified_by`` "closed_form").
    rho : the radius.
    label : the first example's label: the one a tie must get wrong at w_1 = 0 (+1 under the Perceptron's
        tie=negative or tie=mistake, -1 under tie=positive), as in ``dataset=tight``; every later round is a
        strict mistake whatever the tie rule.

    Examples
    --------
    >>> ds = WorstCase(gamma=0.3, rho=1.0).generate(np.random.default_rng(0))
    >>> ds.extra["worst_case"], ds.X.shape[0], ds.stats.R <= 1.0, ds.stats.gamma_lo >= 0.3
    (11, 11, True, True)
    """

    name = "worst_case"
    kind = "binary"
    params = (
        Param("gamma", float, above(0).because("and <= rho")),
        RHO,
        Param("label", int, lambda v: v in (-1, 1), "+1 or -1 (the label a tie must get wrong)", default=1),
    )

    def check(self) -> None:
        """Raise :class:`pipeline.params.ParamError` on an invalid parameter."""
        check_params(self)
        if self.gamma > self.rho:
            raise ParamError("gamma", self.gamma, f"<= rho = {self.rho} (no point of norm <= rho has a larger margin)")
        if _closed_form(self.rho, self.gamma) > MAX_ROWS:
            raise ParamError("gamma", self.gamma, f">= rho / {MAX_ROWS ** 0.5:.4g} = {float(self.rho) / MAX_ROWS ** 0.5:.4g} "
                             f"(the worst instance has floor((rho/gamma)^2) rows in as many dimensions, at most {MAX_ROWS})")

    def shape(self) -> tuple[int | None, int | None]:
        """(M*, M*) at most: M* rows in dimension the rank of the SDP's solution."""
        m = int((float(self.rho) / float(self.gamma)) ** 2)
        return m, m

    def generate(self, rng: np.random.Generator) -> Dataset:  # rng unused: deterministic by construction
        import pipeline.solvers.perceptron_worst as pw

        self.check()
        gamma, rho = float(self.gamma), float(self.rho)
        label_tie = "negative" if self.label == 1 else "positive"
        M = _closed_form(rho, gamma)
        if M > MAX_MISTAKES:  # the proven closed form (pipeline.solvers.perceptron_worst): exact, no solver
            inst = pw.tie_instance(M, rho, label_tie)
            how, gap, upper = "closed_form", 0.0, rho / math.sqrt(M + 1)
        else:
            # M*: from the closed form, moved to where the exact feasibility test (pw.feasible, monotone in M) says M*
            # is feasible and M* + 1 is not (two or three SDPs near M*, none far above it)
            M = max(M, 1)
            while M > 1 and not pw.feasible(M, rho, gamma)[0]:
                M -= 1
            while pw.feasible(M + 1, rho, gamma)[0]:
                M += 1
            inst = pw.instance(M, rho, gamma, tie=label_tie, labels="constant")
            at_m, above = pw.max_margin(M), pw.max_margin(M + 1)  # radius 1: the problem is homogeneous in rho
            more, how = pw.feasible(M + 1, rho, gamma)  # "sdp": its dual bound excludes gamma; "closed_form":
            if more:  # within the solver's tolerance of rho / sqrt(M* + 1), decided in exact arithmetic on the floats
                raise RuntimeError(f"M* + 1 = {M + 1} mistakes are feasible at gamma = {gamma!r}: M* is not the worst case")
            gap, upper = max(at_m.upper - at_m.primal, above.upper - above.primal), above.upper * rho
        X, y = np.ascontiguousarray(inst.X), inst.y.astype(np.float64)
        stats = certify(X, y, inst.u, np.ones(M))
        # no solver time here: a row holds only what the computation determines (bit for bit on any machine)
        extra = {"worst_case": int(M), "certificate_gap": float(gap), "certificate_upper": float(upper), "certified_by": how,
                 "instance": inst.source}
        return Dataset(self.name, X, y, stats, directions={"u": inst.u / np.linalg.norm(inst.u)}, extra=extra)
