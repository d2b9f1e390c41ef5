"""The error-free transformations of :mod:`pipeline._jit` (and the numpy TwoProduct of :mod:`pipeline.numerics`)
are exact: checked in rational arithmetic (``fractions.Fraction``), never to a tolerance, on random doubles
across the whole exponent range and on adversarial ones (all significand bits set, powers of two and their
neighbours, the edges of each transformation's domain, subnormals). Dot2 in :mod:`pipeline.solvers.dual`
relies on them for the duality certificate (docs/bounds.md sections 4-6)."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
from hypothesis import example, given, settings
from hypothesis import strategies as st

from pipeline import numerics
from pipeline._jit import split, two_product, two_product_split, two_sum

SUM_MAX = 2.0**1020  # two_sum's domain: sums and their intermediate differences stay finite
PRODUCT_MAX = math.nextafter(2.0**995, 0.0)  # two_product's domain: |a|, |b| < 2^995 ...
PRODUCT_MIN = numerics.EXACT_PRODUCT  # ... and |fl(a b)| >= 2^-968 (else the error term may underflow)

ADVERSARIAL = [
    1.0, 1.0 - 2.0**-53, 1.0 + 2.0**-52, 2.0 - 2.0**-52, 3.0, 1.0 / 3.0, math.pi, 2.0**27 + 1.0, 2.0**26 - 1.0,
    2.0**53 - 1.0, 2.0**53 + 2.0, 0.1, 1e300, 1e-300, PRODUCT_MAX, 2.0**-1022, 2.0**-1074, 5e-324 * 3,
    math.nextafter(2.0**-1022, 0.0),
]
ADVERSARIAL += [-x for x in ADVERSARIAL]


def sum_floats() -> st.SearchStrategy[float]:
    return st.floats(min_value=-SUM_MAX, max_value=SUM_MAX, allow_nan=False, allow_infinity=False)


def product_floats() -> st.SearchStrategy[float]:
    return st.floats(min_value=-PRODUCT_MAX, max_value=PRODUCT_MAX, allow_nan=False, allow_infinity=False)


def significant_bits(x: float) -> int:
    """Bits of x's significand from its leading one to its last one (0 for x = 0)."""
    n = abs(Fraction(x)).numerator  # the denominator is a power of two: the significand is n's odd part
    while n and n % 2 == 0:
        n //= 2
    return n.bit_length()


def in_product_domain(a: float, b: float) -> bool:
    p = a * b
    return math.isfinite(p) and (a == 0.0 or b == 0.0 or abs(p) >= PRODUCT_MIN)


def check_two_sum(a: float, b: float) -> None:
    s, e = two_sum(a, b)
    assert s == a + b  # s is the rounded sum ...
    assert Fraction(a) + Fraction(b) == Fraction(s) + Fraction(e)  # ... and e its exact error
    assert abs(e) <= math.ulp(s) / 2  # |e| is at most half an ulp of s (round to nearest)


def check_two_product(a: float, b: float) -> None:
    p, e = two_product(a, b)
    assert p == a * b
    assert Fraction(a) * Fraction(b) == Fraction(p) + Fraction(e)
    ah, al = split(a)
    assert (p, e) == two_product_split(a, ah, al, b)  # a split once, outside a loop: the same two floats
    q, f = numerics.two_product(np.array([a]), np.array([b]))
    assert (float(q[0]), float(f[0])) == (p, e)  # the numpy form: the same operations, the same bits


@settings(max_examples=2000, deadline=None)
@given(a=sum_floats(), b=sum_floats())
def test_two_sum_is_exact(a: float, b: float) -> None:
    check_two_sum(a, b)


def test_two_sum_is_exact_on_adversarial_pairs() -> None:
    for a in ADVERSARIAL:
        check_two_sum(a, math.nextafter(-a, math.inf))  # near-total cancellation
        check_two_sum(a, a * 2.0**-60)  # b far below a's last bit
        for b in ADVERSARIAL:
            check_two_sum(a, b)


@settings(max_examples=2000, deadline=None)
@given(a=product_floats(), b=product_floats())
@example(a=1.0 + 2.0**-30, b=1.0 + 2.0**-30)
@example(a=PRODUCT_MAX, b=1.0 - 2.0**-53)
def test_two_product_is_exact(a: float, b: float) -> None:
    if in_product_domain(a, b):
        check_two_product(a, b)


PRODUCT_PAIRS = [(a, c) for a in ADVERSARIAL for b in ADVERSARIAL for c in (b, math.nextafter(b, math.inf))
                 if abs(a) <= PRODUCT_MAX and abs(c) <= PRODUCT_MAX and in_product_domain(a, c)]


def test_two_product_is_exact_on_adversarial_pairs() -> None:
    assert len(PRODUCT_PAIRS) > len(ADVERSARIAL) ** 2 // 2  # the domain filter keeps most pairs
    for a, b in PRODUCT_PAIRS:
        check_two_product(a, b)


def test_the_domain_is_where_exactness_ends() -> None:
    """Below 2^-968 the error term may underflow: the documented domain is not a formality."""
    a = b = (1.0 + 2.0**-52) * 2.0**-500  # |ab| ~ 2^-1000: the error 2^-1104 is below the smallest subnormal
    p, e = two_product(a, b)
    assert not in_product_domain(a, b)
    assert Fraction(a) * Fraction(b) != Fraction(p) + Fraction(e)


@settings(max_examples=2000, deadline=None)
@given(a=product_floats())
@example(a=2.0**53 - 1.0)
@example(a=1.0 - 2.0**-53)
def test_split_halves_are_exact_and_short(a: float) -> None:
    hi, lo = split(a)
    assert Fraction(hi) + Fraction(lo) == Fraction(a)
    assert significant_bits(hi) <= 26 and significant_bits(lo) <= 26  # so the halves' products are exact
