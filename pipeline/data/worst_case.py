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

Sizes and cost. Up to :data:`MAX_MISTAKES` mistakes three margin SDPs decide and build it (at M*, M* + 1 and the
instance's; ~5 s each at M* = 63); above, the proven closed form gives M* and the exact instance x_t = rho e_t
without a solver, up to :data:`MAX_ROWS` rows (the dense M* x M* matrix: 200 MB and ~7 s to certify at 5,000). No
step has a fixed size below that: the instance and its exact certificate cost O(M*)
(:func:`pipeline.solvers.perceptron_worst.tie_instance`). A construction estimated to take a few seconds or more
says so first (an ``[estimate]`` line, :func:`pipeline.sweep.progress.estimate`) and logs its progress; every step is a
call of seconds at most, so Ctrl-C and SIGTERM stop it within seconds. Reported upper ends are rounded outwards:
``certificate_upper`` is the smallest float at or above the exact dual bound (rho / sqrt(M* + 1) exactly for the
closed form), ``certificate_gap`` rounded upwards, and the refusal quotes a smallest margin that is accepted.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import TYPE_CHECKING

import numpy as np

from pipeline.data.certify import certify
from pipeline.data.dataset import Dataset, Source, sample_bytes
from pipeline.params import RHO, Param, ParamError, above, check_memory, check_params
from pipeline.sweep.progress import Progress, estimate

if TYPE_CHECKING:
    from pipeline.solvers.perceptron_worst import MarginSDP

MAX_MISTAKES = 63  # solved by the SDP up to here (64 x 64 at most: seconds); above, the proven closed form
MAX_ROWS = 5000  # the closed form's instance is the dense M x M matrix rho I, as dataset=tight's
CERTIFY_SECONDS = 3e-7  # the M x M instance's certificate (pipeline.data.certify): ~c M^2 s (7 s at M = 5000)


def _closed_form(rho: float, gamma: float) -> int:
    """floor((rho/gamma)^2) in exact rational arithmetic on the floats given: the largest M with gamma <= rho/sqrt(M)."""
    return int(Fraction(float(rho)) ** 2 // Fraction(float(gamma)) ** 2)


def closed_form_upper(rho: float, M: int) -> float:
    """rho / sqrt(M), the largest margin that allows M mistakes (proven closed form), rounded upwards: the smallest
    float whose square is at least rho^2 / M, exactly. The certificate's upper end at M* + 1 above the SDPs' range.

    >>> import math
    >>> closed_form_upper(1.0, 66) > 1.0 / math.sqrt(66)  # rounded to nearest, 1/sqrt(66) is one float too low
    True
    """
    from pipeline.solvers.perceptron_worst import sqrt_up

    return sqrt_up(Fraction(float(rho)) ** 2 / int(M))


def smallest_gamma(rho: float, rows: int = MAX_ROWS) -> float:
    """The smallest margin of 4 significant digits whose worst instance has at most ``rows`` rows at radius
    ``rho``: floor((rho/gamma)^2) <= rows iff gamma > rho / sqrt(rows + 1), rounded upwards to 4 digits and checked
    in exact arithmetic on the float it prints as, so the value a refusal quotes is one it accepts.

    >>> smallest_gamma(1.0), _closed_form(1.0, 0.01415) <= MAX_ROWS, _closed_form(1.0, 0.01414) <= MAX_ROWS
    (0.01415, True, False)
    """
    exact = float(rho) / math.sqrt(rows + 1)
    e = math.floor(math.log10(exact)) - 3
    k = math.ceil(exact / 10.0**e)
    while _closed_form(rho, float(f"{k}e{e}")) > rows:
        k += 1
    return float(f"{k}e{e}")


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
        M = _closed_form(self.rho, self.gamma)
        if M > MAX_ROWS:
            raise ParamError("gamma", self.gamma, f">= {smallest_gamma(self.rho):.4g} at rho = {float(self.rho):g} (the "
                             f"worst instance has floor((rho/gamma)^2) rows in as many dimensions, at most {MAX_ROWS})")
        check_memory("gamma", self.gamma, sample_bytes(M, M, solvers=False),
                     "raise gamma (the worst instance is the dense M* x M* matrix, M* = floor((rho/gamma)^2))")

    def shape(self) -> tuple[int | None, int | None]:
        """(M*, M*) at most: M* rows in dimension the rank of the SDP's solution (M* exactly, in rationals)."""
        try:
            m = _closed_form(self.rho, self.gamma)
        except (TypeError, ValueError, ZeroDivisionError, OverflowError):  # not a valid margin: check() says so
            return None, None
        return m, m

    def generate(self, rng: np.random.Generator) -> Dataset:  # rng unused: deterministic by construction
        """The worst instance; an SDP-built one (at most MAX_MISTAKES rows) is built once per process and (rho,
        gamma, label) and handed out as a copy: a sweep's seeds and orderings of one margin share it, and solving
        its SDPs again (seconds each) would give the same bits."""
        import copy

        key = (float(self.gamma), float(self.rho), int(self.label))
        if key not in _BUILT:
            built = self._generate()
            if built.extra["certified_by"] == "closed_form":  # O(M) to build again, and up to 200 MB to keep
                return built
            _BUILT[key] = built
        return copy.deepcopy(_BUILT[key])

    def _generate(self) -> Dataset:
        import pipeline.solvers.perceptron_worst as pw

        self.check()
        gamma, rho = float(self.gamma), float(self.rho)
        label_tie = "negative" if self.label == 1 else "positive"
        M = _closed_form(rho, gamma)
        what = f"dataset worst_case (rho = {rho:g}, gamma = {gamma:g})"
        if M > MAX_MISTAKES:  # the proven closed form (pipeline.solvers.perceptron_worst): exact, no solver
            estimate(what, CERTIFY_SECONDS * M * M, f"M* = {M:,} by the closed form, its {M:,} x {M:,} instance certified")
            progress = Progress(what, 2, "steps")  # the instance, its certificate
            inst = pw.tie_instance(M, rho, label_tie)
            how, gap = "closed_form", 0.0
            upper = closed_form_upper(rho, M + 1)
        else:
            # M*: from the closed form, moved to where the exact feasibility test (pw.feasible, monotone in M) says M*
            # is feasible and M* + 1 is not (two SDPs near M*, cached, none far above it), then the instance's SDP
            sizes = (max(M, 1), M + 1, max(M, 1))
            estimate(what, sum(pw.sdp_seconds(m) for m in sizes), f"M* = {M} by {len(sizes)} margin SDPs of up to "
                     f"{M + 2} x {M + 2}")
            progress = Progress(what, len(sizes) + 1, "steps")  # the SDPs, the certificate
            M = max(M, 1)
            while M > 1 and not pw.feasible(M, rho, gamma)[0]:
                M -= 1
            progress.update(1)
            while pw.feasible(M + 1, rho, gamma)[0]:
                M += 1
            progress.update(2)
            inst = pw.instance(M, rho, gamma, tie=label_tie, labels="constant")
            at_m, above = pw.probe(M), pw.probe(M + 1)  # radius 1 (cached): the problem is homogeneous in rho
            more, how = pw.feasible(M + 1, rho, gamma)  # "sdp": its dual bound excludes gamma; "closed_form":
            if more:  # within the solver's tolerance of rho / sqrt(M* + 1), decided in exact arithmetic on the floats
                raise RuntimeError(f"M* + 1 = {M + 1} mistakes are feasible at gamma = {gamma!r}: M* is not the worst case")
            gap, upper = _gap(at_m, above), _scaled_up(above.upper, rho)
        progress.update(progress.total - 1)
        X, y = np.ascontiguousarray(inst.X), inst.y.astype(np.float64)
        stats = certify(X, y, inst.u, np.ones(M))
        progress.update(progress.total)
        # no solver time here: a row holds only what the computation determines (bit for bit on any machine)
        extra = {"worst_case": int(M), "certificate_gap": float(gap), "certificate_upper": float(upper), "certified_by": how,
                 "instance": inst.source}
        return Dataset(self.name, X, y, stats, directions={"u": inst.u / np.linalg.norm(inst.u)}, extra=extra)


_BUILT: dict[tuple[float, float, int], Dataset] = {}  # SDP-built worst instances of this process (WorstCase.generate)


def _scaled_up(upper: float, rho: float) -> float:
    """rho times a dual bound at radius 1 (the SDP is homogeneous in rho), rounded upwards; inf stays inf."""
    import pipeline.solvers.perceptron_worst as pw

    return pw.float_up(Fraction(upper) * Fraction(rho)) if math.isfinite(upper) else math.inf


def _gap(*solves: MarginSDP) -> float:
    """The largest duality gap (dual bound minus the margin reached) of the SDPs, rounded upwards."""
    import pipeline.solvers.perceptron_worst as pw

    if not all(math.isfinite(r.upper) and math.isfinite(r.primal) for r in solves):
        return math.inf
    return pw.float_up(max(Fraction(r.upper) - Fraction(r.primal) for r in solves))
