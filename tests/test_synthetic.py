"""pipeline.data.synthetic: the margin generator never builds a d x d matrix when d exceeds n, and keeps its
certified statistics and its determinism there; with d <= n its output is unchanged."""

from __future__ import annotations


import numpy as np
import pytest
from helpers import peak_bytes as _peak

from pipeline.data import MarginBinary
from pipeline.data.certify import content_hash


def test_the_margin_generator_never_builds_d_by_d_when_d_exceeds_n() -> None:
    d, n = 20_000, 10
    peak = _peak(lambda: MarginBinary(gamma=0.1, rho=1.0, n=n, d=d).generate(np.random.default_rng(0)))
    assert peak < d * d * 8 / 100, peak  # d x d float64 is 3.2 GB; the sample is 1.6 MB


@pytest.mark.parametrize(("n", "d", "flip"), [(10, 300, 0.0), (40, 41, 0.0), (10, 3000, 0.0), (30, 200, 0.2)])
def test_the_wide_margin_generator_keeps_its_certified_statistics_and_determinism(n: int, d: int, flip: float) -> None:
    make = MarginBinary(gamma=0.1, rho=1.0, n=n, d=d, flip=flip)
    a, b = make.generate(np.random.default_rng(7)), make.generate(np.random.default_rng(7))
    assert np.array_equal(a.X, b.X) and np.array_equal(a.y, b.y)  # bit for bit for a seed
    w = a.directions["w*"]
    assert abs(np.linalg.norm(w) - 1.0) < 1e-12 and a.X.shape == (n, d)
    assert np.linalg.norm(a.X, axis=1).max() <= 1.0 + 1e-12
    if flip == 0:
        assert abs(a.stats.gamma_lo - 0.1) < 1e-9 and abs(a.stats.gamma_hi - 0.1) < 1e-9 and abs(a.stats.R - 1) < 1e-9
        assert (a.y * (a.X @ w)).min() >= 0.1 - 1e-12


def test_the_margin_generator_with_d_at_most_n_is_unchanged() -> None:
    import hashlib

    ds = MarginBinary(gamma=0.1, rho=1.0, n=500, d=20).generate(np.random.default_rng(0))
    # The construction's output before this change: its exact bits on the processor it was recorded on (the last
    # bits of LAPACK's orthonormal basis differ between AVX2 and AVX-512), or the same values to 10 digits.
    rounded = np.array([float(f"{v:.10g}") for v in np.asarray(ds.X).ravel()])
    digits = hashlib.sha256(rounded.tobytes() + np.asarray(ds.y).tobytes()).hexdigest()[:16]
    assert content_hash(ds.X, ds.y) == "5713886d19772ee9" or digits == "7fdae2744e5f1d52"
