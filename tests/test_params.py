"""pipeline.params: one declaration and one validity rule per shared parameter (issue 30, item 1), and
the memory check: a size beyond the available memory is refused with its estimate before anything is allocated."""

from __future__ import annotations

import math
import warnings

import pytest
from helpers import compose_job
from hypothesis import given
from hypothesis import strategies as st

from pipeline import params
from pipeline.job.config import TOP_LEVEL, build
from pipeline.params import (BATCH, DELTA, INTERCEPT, LAM, POSITIVE, PROJECTION, RHO, T_STEPS, Param, ParamError, Rule,
                             UserError, above, at_least, one_of)
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


# ---------------------------------------------------------------- the memory: sizes checked before allocating


GIB = 2**30


def _compose(overrides: list[str]):  # noqa: ANN202
    """The job's config as the pre-flight composes it (helpers.compose_job: Hydra composes each choice of
    config groups once; the sizes are plain values set on a copy by Hydra's own code)."""
    return compose_job(overrides)


def _build(overrides: list[str]) -> object:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return build(_compose(overrides))


# (overrides too large for 1 GiB, the key the error must name)
TOO_LARGE = [
    (["n=100000", "d=2000"], "n"),
    (["n=20", "d=100000000"], "d"),
    (["n=200000", "d=200", "dataset.flip=0.1"], "n"),
    (["dataset=shells", "n=50000", "d=500"], "n"),
    (["dataset=sparse_margin", "n=10000000"], "n"),
    (["dataset=sparse_margin", "n=100", "dataset.d=1000000000", "dataset.nnz=5"], "dataset.d"),
    (["dataset=tight", "n=5000"], "n"),
    (["dataset=stream", "n=100000000", "d=5000", "dataset.chunk=100000"], "dataset.chunk"),
    (["dataset=stream", "n=100", "d=50000000"], "d"),
    (["dataset=finite_class", "dataset.cls=conjunctions", "dataset.size=15", "n=1"], "dataset.size"),
    (["dataset=multiclass_margin", "algorithm=multiclass_sgd", "n=10000000", "d=20"], "n"),
    (["dataset=multiclass_margin", "algorithm=multiclass_sgd", "T=100000000", "d=20"], "T"),
    (["dataset=multiclass_bundled", "algorithm=multiclass_svm", "dataset.sample=100000000"], "dataset.sample"),
    (["algorithm=pegasos", "T=100000000"], "T"),
    (["algorithm=pegasos", "T=10000000", "algorithm.batch=100"], "T"),
    (["algorithm=kernel_pegasos", "T=100000000"], "T"),
    (["algorithm=multiclass_pegasos", "dataset=multiclass_margin", "T=100000000"], "T"),
    (["algorithm=perceptron", "algorithm.passes=1000000"], "algorithm.passes"),
    (["algorithm=halving", "algorithm.experts=100000", "d=10000", "n=100"], "algorithm.experts"),
]


@pytest.mark.parametrize(("overrides", "key"), TOO_LARGE, ids=[" ".join(o) for o, _ in TOO_LARGE])
def test_a_size_beyond_the_memory_is_refused_with_the_estimate(overrides: list[str], key: str,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(params, "available_memory", lambda: float(GIB))
    with pytest.raises(ParamError) as error:
        _build(overrides)
    text = str(error.value)
    assert text.startswith(f"{key}=") and "GiB, more than the 1 GiB of memory available" in text, text
    assert "\n" not in text


@pytest.mark.parametrize(("overrides", "key"), TOO_LARGE, ids=[" ".join(o) for o, _ in TOO_LARGE])
def test_the_same_sizes_fit_a_machine_with_enough_memory(overrides: list[str], key: str,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(params, "available_memory", lambda: 1e6 * GIB)  # the refusal above is the memory's
    _build(overrides)


@pytest.mark.parametrize("overrides", [[], ["dataset=shells"], ["algorithm=pegasos"], ["algorithm=kernel_pegasos", "n=300"],
                                       ["dataset=multiclass_margin", "algorithm=multiclass_sgd"],
                                       ["dataset=tight", "n=100"], ["dataset=sparse_margin", "algorithm=perceptron"]])
def test_ordinary_runs_are_accepted_on_a_small_machine(overrides: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(params, "available_memory", lambda: float(GIB))
    _build(overrides)


def test_the_command_refuses_a_size_in_one_line_before_any_work(one_line_error, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: ANN001
    monkeypatch.setattr(params, "available_memory", lambda: 2.0 * GIB)
    err = one_line_error(["n=1000000", "d=1000"])
    assert err.startswith("boundlab: error: n=1000000: must be smaller: the data need ~") and "lower n or d" in err


def test_the_available_memory_is_read_or_estimated(monkeypatch: pytest.MonkeyPatch) -> None:
    assert 0 < params.available_memory() < float("inf")

    def no_proc(*args: object, **kwargs: object) -> None:
        raise OSError("no /proc")

    monkeypatch.setattr(params, "open", no_proc, raising=False)  # the sysconf fallback
    assert 0 < params.available_memory() < float("inf")


def test_check_memory_names_the_parameter_and_the_estimate(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(params, "available_memory", lambda: 3.0 * GIB)
    params.check_memory("n", 10, 3.0 * GIB, "lower n")  # exactly what is available: accepted
    with pytest.raises(UserError, match=r"^n=11: must be smaller: the data need ~6 GiB, more than the 3 GiB of memory "
                                        r"available; lower n$"):
        params.check_memory("n", 11, 6.0 * GIB, "lower n")


def test_a_small_request_is_never_refused_and_does_not_read_the_memory(monkeypatch: pytest.MonkeyPatch) -> None:
    """Below ``SMALL_REQUEST`` (1 MiB) nothing is asked of the system (a seed round checks each run's data); from
    it on the available memory decides."""
    def unread() -> float:
        raise AssertionError("the available memory was read")

    monkeypatch.setattr(params, "available_memory", unread)
    assert params.memory_shortfall(params.SMALL_REQUEST - 1.0) is None
    monkeypatch.setattr(params, "available_memory", lambda: params.SMALL_REQUEST / 2)
    assert "more than the" in str(params.memory_shortfall(params.SMALL_REQUEST))
