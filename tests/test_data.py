"""The generator's pinned margin and radius, and the rigour of the certified statistics."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from pipeline.data import MarginBinary, certify, margin_lower, margin_upper, radius
from pipeline.numerics import err_factor
from pipeline.params import ParamError

generator_params = st.fixed_dictionaries(
    {
        "gamma": st.floats(1e-3, 1.0),
        "ratio": st.floats(1.0, 1e3),
        "n": st.integers(2, 300),
        "d": st.integers(2, 60),
        "seed": st.integers(0, 2**32 - 1),
    }
)


@settings(max_examples=150, deadline=None)
@given(generator_params)
def test_generator_pins_margin_and_radius(p: dict) -> None:
    rho = p["gamma"] * p["ratio"]
    ds = MarginBinary(gamma=p["gamma"], rho=rho, n=p["n"], d=p["d"]).generate(np.random.default_rng(p["seed"]))
    s = ds.stats
    assert ds.X.shape == (p["n"], p["d"]) and set(np.unique(ds.y)) <= {-1.0, 1.0}
    assert s.separable and s.gap <= 1e-9
    assert s.gamma_lo <= s.gamma_hi
    assert abs(s.gamma_lo - p["gamma"]) <= 1e-9 * p["gamma"]
    assert abs(s.gamma_hi - p["gamma"]) <= 1e-9 * p["gamma"]
    assert abs(s.R - rho) <= 1e-9 * rho
    assert s.R >= np.linalg.norm(ds.X, axis=1).max()


def test_generator_is_deterministic_per_seed() -> None:
    gen = MarginBinary(gamma=0.1, rho=1.0, n=100, d=5)
    a, b = gen.generate(np.random.default_rng(7)), gen.generate(np.random.default_rng(7))
    assert np.array_equal(a.X, b.X) and np.array_equal(a.y, b.y) and a.stats == b.stats
    assert not np.array_equal(a.X, gen.generate(np.random.default_rng(8)).X)


def _exact_dot(a: np.ndarray, b: np.ndarray) -> Fraction:
    return sum((Fraction(float(u)) * Fraction(float(v)) for u, v in zip(a, b)), Fraction(0))


@settings(max_examples=100, deadline=None)
@given(st.integers(1, 40), st.integers(1, 12), st.integers(0, 2**32 - 1), st.floats(1e-6, 1e6))
def test_statistics_are_rigorous_in_exact_arithmetic(m: int, d: int, seed: int, scale: float) -> None:
    """R and gamma_lo bound the exact values of the float vectors, whatever the rounding of numpy."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((m, d)) * scale
    w = rng.standard_normal(d)
    sign = np.where(X @ w >= 0, 1.0, -1.0)
    y = np.where(rng.random(m) < 0.8, sign, -sign)
    R = Fraction(radius(X))
    assert all(R * R >= _exact_dot(x, x) for x in X)
    lo = Fraction(margin_lower(X, y, w))
    norm2 = _exact_dot(w, w)
    for x, label in zip(X, y):
        margin = Fraction(float(label)) * _exact_dot(w, x)  # exact y w.x; the bound is lo <= margin/||w||
        assert _at_most(lo, margin, norm2)


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 30), st.integers(1, 9), st.integers(1, 6), st.integers(0, 2**32 - 1), st.floats(1e-6, 1e6),
       st.booleans())
@example(30, 7, 5, 2871, 1.5, False)  # a margin of 6.6e-4 from terms of ~1: its last bits differ by summation order
def test_the_margins_of_several_directions_at_once_are_rigorous(m: int, d: int, k: int, seed: int, scale: float,
                                                                 csr: bool) -> None:
    """``margins_lower_each`` (the comparators' margins, the sample read once for all directions): every entry is
    below the exact normalised margin of its direction, and within rounding of that direction's own
    ``margins_lower``: BLAS sums the products of several directions in another order than one's, so the two differ by
    up to the rounding of the dot product, gamma_d of its terms (<= gamma_d ||x_i|| once normalised), which near a
    cancellation is many times the margin's own last bits."""
    import scipy.sparse as sp

    from pipeline.solvers.certified import margins_lower, margins_lower_each

    rng = np.random.default_rng(seed)
    X = rng.standard_normal((m, d)) * scale * (rng.random((m, d)) < 0.8)
    W = rng.standard_normal((k, d)) * 10.0 ** rng.uniform(-3, 3, (k, 1))
    y = np.where(rng.random(m) < 0.5, 1.0, -1.0)
    A = sp.csr_matrix(X) if csr else X
    lower = margins_lower_each(A, y, W)
    assert lower.shape == (k, m)
    for w, row in zip(W, lower):
        norm2 = _exact_dot(w, w)
        assert all(_at_most(Fraction(lo), Fraction(float(label)) * _exact_dot(w, x), norm2)
                   for lo, x, label in zip(row, X, y))
        one = margins_lower(A, y, w)
        rounding = 4.0 * err_factor(d) * np.linalg.norm(X, axis=1) + 1e-13 * np.abs(one) + 1e-300
        assert np.all(np.abs(row - one) <= rounding), np.max(np.abs(row - one) / rounding)


def _at_most(lo: Fraction, margin: Fraction, norm2: Fraction) -> bool:
    """lo <= margin / sqrt(norm2), decided in exact arithmetic."""
    if lo <= 0 <= margin:
        return True
    if lo > 0:
        return margin > 0 and lo * lo * norm2 <= margin * margin
    return margin < 0 and lo * lo * norm2 >= margin * margin


@pytest.mark.parametrize("n", [1, 2, 3, 7, 10, 49, 100, 333])
@pytest.mark.parametrize("rho", [0.1, 1.0, 3.7, 1e3])
def test_certificate_brackets_the_closed_form_margin(n: int, rho: float) -> None:
    """x_t = rho e_t with any labels has gamma* = rho / sqrt(n) (docs/bounds.md section 1)."""
    y = np.where(np.arange(n) % 3 == 0, -1.0, 1.0)
    X = rho * np.eye(n) * y[:, None]  # y_t x_t = rho e_t
    s = certify(X, y, w=np.ones(n), alpha=np.ones(n))
    exact = rho / math.sqrt(n)
    assert s.gamma_lo <= exact <= s.gamma_hi and s.gap <= 1e-9
    # A worse witness gives a smaller lower end, never one above the truth.
    worse = margin_lower(X, y, np.linspace(1.0, 2.0, n))
    assert worse <= s.gamma_lo + 1e-15 and worse <= exact
    assert margin_upper(X, y, np.linspace(1.0, 2.0, n)) >= exact


def test_non_separable_witness_is_reported() -> None:
    X = np.array([[1.0, 0.0], [1.0, 0.0]])
    y = np.array([1.0, -1.0])
    s = certify(X, y, w=np.array([1.0, 0.0]), alpha=np.array([1.0, 1.0]))
    assert not s.separable and s.gamma_lo < 0 and s.gamma_hi == 0.0


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [
        ({"gamma": 0.0, "rho": 1.0}, "gamma"),
        ({"gamma": 2.0, "rho": 1.0}, "gamma"),
        ({"gamma": 0.1, "rho": -1.0}, "rho"),
        ({"gamma": 0.1, "rho": 1.0, "n": 1}, "n"),
        ({"gamma": 0.1, "rho": 1.0, "d": 1}, "d"),
        ({"gamma": "x", "rho": 1.0}, "gamma"),
        ({"gamma": 0.1, "rho": 1.0, "pos_fraction": 1.0}, "pos_fraction"),
    ],
)
def test_bad_generator_parameters_name_the_parameter(kwargs: dict, name: str) -> None:
    with pytest.raises(ParamError) as err:
        MarginBinary(**kwargs).generate(np.random.default_rng(0))
    assert err.value.name == name and str(err.value).startswith(f"{name}=")


def test_tiny_noisy_sample_is_certified_even_where_the_strict_solve_fails() -> None:
    """m = 4 points in d = 5 made Clarabel fail at tolerance 1e-12 (found by hypothesis); the fallbacks
    still give a rigorous two-sided certificate."""
    import numpy as np

    from pipeline.data import MarginBinary

    st = MarginBinary(gamma=0.1, rho=1.0, n=4, d=5, flip=0.3).generate(np.random.default_rng(5)).stats
    assert st.separable and 0 < st.gamma_lo <= st.gamma_hi and st.gap <= 1e-6
