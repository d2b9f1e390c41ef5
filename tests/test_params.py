"""pipeline.params: one declaration and one validity rule per shared parameter (issue 30, item 1)."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pipeline import params
from pipeline.config import TOP_LEVEL
from pipeline.params import (BATCH, DELTA, INTERCEPT, LAM, POSITIVE, PROJECTION, RHO, T_STEPS, Param, ParamError, Rule,
                             above, at_least, one_of)
from pipeline.plugins import DATASETS, LEARNERS

SHARED = (LAM, T_STEPS, DELTA, PROJECTION, INTERCEPT, BATCH, RHO)


def _declarations() -> list[tuple[str, Param]]:
    """(owner, declaration) of every built-in learner and dataset, and the top-level keys."""
    out = [("top level", p) for p in TOP_LEVEL]
    for registry in (LEARNERS, DATASETS):
        for name, cls in registry.loaded().items():
            out += [(name, p) for p in cls.params]
    return out


@pytest.mark.parametrize("shared", SHARED, ids=[p.name for p in SHARED])
def test_a_shared_parameter_has_one_rule_wherever_it_is_declared(shared: Param) -> None:
    owners = [(owner, p) for owner, p in _declarations() if p.name == shared.name]
    assert len(owners) >= 2  # declared by several owners: else it need not be shared
    for owner, p in owners:
        same = p.valid is shared.valid or (isinstance(p.valid, Rule) and p.valid.test is shared.valid.test
                                           and p.allowed.startswith(shared.allowed + " ("))  # Rule.because
        assert same, f"{owner} declares {shared.name} with its own rule"
        assert p.type is shared.type, owner


def test_lam_is_refused_alike_by_the_config_the_learners_and_the_solvers() -> None:
    from pipeline.solvers import dual
    from pipeline.solvers.multiclass import multiclass_svm
    import numpy as np

    messages = set()
    for _, p in _declarations():
        if p.name == "lam":
            with pytest.raises(ParamError) as e:
                p.coerce(1e-310)  # subnormal: 1/lam overflows
            messages.add(str(e.value))
    X, y = np.eye(2), np.array([1.0, -1.0])
    for call in (lambda: dual.sdca(X, y, 1e-310), lambda: multiclass_svm(X, np.array([0, 1]), 2, 1e-310)):
        with pytest.raises(ParamError) as e:
            call()
        messages.add(str(e.value))
    assert messages == {f"lam=1e-310: must be {POSITIVE.words}"}


@given(st.floats(allow_nan=False), st.floats(-1e6, 1e6, allow_nan=False))
def test_a_rule_says_what_it_tests(value: float, low: float) -> None:
    rule = above(low)
    assert rule(value) == (value > low)
    assert rule.words == f"a number > {low:g}"
    if rule(value):
        rule.check("x", value)
    else:
        with pytest.raises(ParamError, match=r"^x=.*: must be a number > "):
            rule.check("x", value)


def test_because_keeps_the_test_and_adds_the_reason() -> None:
    rule = at_least(2).because("the pinned pair")
    assert rule.words == "an integer >= 2 (the pinned pair)"
    assert (rule(2), rule(1)) == (True, False)
    assert one_of("a", "b").words == "one of a, b" and not one_of("a", "b")("c")


def test_a_param_takes_its_words_from_its_rule_or_must_say_them() -> None:
    assert Param("k", int, at_least(2)).allowed == "an integer >= 2"
    assert Param("k", int, lambda v: v >= 2, "two or more").allowed == "two or more"
    with pytest.raises(TypeError, match="say the allowed values"):
        Param("k", int, lambda v: v >= 2)
    assert LAM.but(default=0.1).default == 0.1 and LAM.but(default=0.1).valid is LAM.valid


def test_positive_is_the_reciprocal_finite_rule() -> None:
    assert POSITIVE(2.2250738585072014e-308) and not POSITIVE(5e-324) and not POSITIVE(math.inf)
    assert POSITIVE.words == params.POSITIVE_WORDS and isinstance(POSITIVE, Rule)
