"""The construction that attains Novikoff's bound (docs/bounds.md section 1): x_t = rho e_t."""

from __future__ import annotations

import numpy as np

from pipeline.data.certify import certify
from pipeline.data.dataset import Dataset, Source, sample_bytes
from pipeline.params import RHO, Param, check_memory, check_params

MAX_N = 5000  # the sample is the dense n x n matrix rho I


class Tight(Source):
    """x_t = rho e_t in R^n, every label ``label``: gamma* = rho / sqrt(n), R = rho, the bound is n.

    Every w_t is orthogonal to x_t, so each step is a tie, and a tie that the Perceptron's convention
    counts as a mistake (``label`` = +1 under tie=negative or tie=mistake, -1 under tie=positive) makes
    n updates in one pass: exactly the bound. The witnesses are exact: w = label (1, ..., 1) for the
    margin's lower end and alpha = (1, ..., 1) for its upper end.

    Examples
    --------
    >>> ds = Tight(rho=2.0, n=16).generate(np.random.default_rng(0))
    >>> ds.X.shape, round(ds.stats.R, 12), round(ds.stats.gamma_lo, 12), ds.stats.gap <= 1e-12
    ((16, 16), 2.0, 0.5, True)
    """

    name = "tight"
    kind = "binary"
    params = (
        RHO,
        Param("n", int, lambda v: 1 <= v <= MAX_N, f"an integer in [1, {MAX_N}] (the sample is n x n)", default=100),
        Param("label", int, lambda v: v in (-1, 1), "+1 or -1 (the label a tie must get wrong)", default=1),
    )

    def check(self) -> None:
        """Raise :class:`pipeline.params.ParamError` on an invalid parameter."""
        check_params(self)
        n = int(self.n)
        check_memory("n", self.n, sample_bytes(n, n, solvers=False), "lower n (the sample is the n x n matrix rho I)")

    def shape(self) -> tuple[int | None, int | None]:
        """(n, n): the sample is the n x n matrix rho I."""
        n = super().shape()[0]
        return n, n

    def generate(self, rng: np.random.Generator) -> Dataset:  # rng unused: deterministic by construction
        self.check()
        n = int(self.n)
        X = float(self.rho) * np.eye(n)
        y = np.full(n, float(self.label))
        stats = certify(X, y, y.copy(), np.ones(n))
        return Dataset(self.name, X, y, stats, directions={"w*": y / np.sqrt(n)})
