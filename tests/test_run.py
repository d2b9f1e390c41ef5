"""pipeline.job.run (with pipeline.job.config's build): extreme but accepted values never yield a false VIOLATED. Every
radius, margin, regularisation, comparator radius, step count or kernel parameter at float64's extremes is
either refused before any work with one line naming the key the user set (pipeline.params.UserError), or runs
to a table with no NaN in an applicable row and no (D) row violated."""

from __future__ import annotations

import math

import pytest
from helpers import assert_sound as _assert_sound
from helpers import tiny_outcome as _outcome

from test_certify import CORRUPTIONS  # the counted cases of the solvers and the cache
from test_max_margin import LP_FAILURES


TINY_VALUES = [5e-324, 1e-320, 1e-310, 2.2e-308, 1e-300, 1e-200, 1e-150, 1e-101]
HUGE_VALUES = [1e101, 1e154, 1e155, 1e200, 1e300, 1.7e308, math.inf]
EDGE_VALUES = [1e-100, 1e-50, 1e50, 1e100]
RHO_CASES = [(ds, rho) for ds in ("margin_binary", "stream") for rho in TINY_VALUES + HUGE_VALUES + EDGE_VALUES]
GAMMA_CASES = [(ds, g) for ds in ("margin_binary", "stream") for g in [5e-324, 1e-310, 1e-160, 1e-101, 1e-99, 1e-30]]
LAM_CASES = [(alg, lam) for alg in ("pegasos", "kernel_pegasos") for lam in
             [5e-324, 1e-310, 1e-300, 1e-200, 1e-148, 1e-140, 1e-10, 1e10, 1e300, 1.7e308, math.inf]]
B_CASES = [(alg, B) for alg in ("multiclass_sgd", "multiclass_svm") for B in
           [5e-324, 1e-300, 1e-101, 1e-60, 1e-3, 1e3, 1e60, 1e101, 1e300, math.inf]]
T_CASES = [(alg, T) for alg in ("pegasos", "kernel_pegasos", "multiclass_pegasos") for T in [10**8 + 1, 10**12, 2**63]]


def _value(v: float) -> str:
    return "inf" if v == math.inf else repr(float(v))


@pytest.mark.parametrize(("dataset", "rho"), RHO_CASES, ids=[f"{d}-rho={r:g}" for d, r in RHO_CASES])
def test_extreme_radius_is_refused_or_sound(dataset: str, rho: float) -> None:
    gamma = min(0.1, rho) if math.isfinite(rho) else 0.1
    _assert_sound([f"dataset={dataset}", f"rho={_value(rho)}", f"gamma={_value(gamma)}"], {"rho", "gamma"})


@pytest.mark.parametrize(("dataset", "gamma"), GAMMA_CASES, ids=[f"{d}-gamma={g:g}" for d, g in GAMMA_CASES])
def test_tiny_margin_is_refused_or_sound(dataset: str, gamma: float) -> None:
    _assert_sound([f"dataset={dataset}", f"gamma={_value(gamma)}"], {"gamma"})


@pytest.mark.parametrize(("algorithm", "lam"), LAM_CASES, ids=[f"{a}-lam={v:g}" for a, v in LAM_CASES])
@pytest.mark.parametrize("rho", [1e-100, 1.0, 1e100])
def test_extreme_regularisation_is_refused_or_sound(algorithm: str, lam: float, rho: float) -> None:
    gamma = min(0.1, rho)
    _assert_sound([f"algorithm={algorithm}", f"lam={_value(lam)}", f"rho={_value(rho)}", f"gamma={_value(gamma)}"],
                  {"lam", "rho", "gamma"})


@pytest.mark.parametrize(("algorithm", "B"), B_CASES, ids=[f"{a}-B={v:g}" for a, v in B_CASES])
@pytest.mark.parametrize("rho", [1e-50, 1.0, 1e50])
def test_extreme_comparator_radius_is_refused_or_sound(algorithm: str, B: float, rho: float) -> None:
    """B = 1e-300 divided by zero and B = 1e300 overflowed the held-out risks (an error naming mean_ci, after the
    run): B R must stay in [1e-100, 1e100], refused before any work naming B."""
    # the held-out sample at its smallest (1000 draws, not the default 100,000): B R reaches the risks the same way
    _assert_sound([f"algorithm={algorithm}", "dataset=multiclass_margin", "dataset.n_test=1000", f"B={_value(B)}",
                   f"rho={_value(rho)}", f"gamma={_value(0.1 * rho)}"], {"B", "rho", "gamma"})


@pytest.mark.parametrize("rho", [1.0, 140.0, 1e6, 1e50])
@pytest.mark.parametrize("T", [300, 20000])
def test_projected_pegasos_on_long_rows_is_sound(rho: float, T: int) -> None:
    """Rows far outside the ball 1/sqrt(lam): the projection shrinks the iterate at every step (its scale used to
    underflow: a ZeroDivisionError, or an average of 1e254 counted against the P bound)."""
    _assert_sound(["algorithm=pegasos_projected", f"rho={_value(rho)}", f"gamma={_value(0.1 * rho)}", f"T={T}"],
                  {"lam", "rho", "gamma"})
    kind, table = _outcome(["algorithm=pegasos_projected", f"rho={_value(rho)}", f"gamma={_value(0.1 * rho)}", f"T={T}"])
    assert kind == "table"
    trivial = table.set_index("bound").loc["expectation", "trivial"]
    suboptimality = table.set_index("bound").loc["expectation", "empirical"]
    assert 0.0 <= suboptimality <= 2.0 * max(trivial, 1.0) * rho * rho, table.T  # f(w_bar) - f* stays at the data's scale


@pytest.mark.parametrize(("algorithm", "T"), T_CASES, ids=[f"{a}-T={t}" for a, t in T_CASES])
def test_huge_step_counts_are_refused_with_one_line(algorithm: str, T: int) -> None:
    extra = ["dataset=multiclass_margin"] if algorithm.startswith("multiclass") else []
    kind, out = _outcome([f"algorithm={algorithm}", *extra, f"T={T}"])
    assert kind == "error" and out.startswith("T=") and "\n" not in out, out


@pytest.mark.parametrize(("overrides", "named"), [
    (["algorithm.sigma=1e-200"], "algorithm.sigma"),
    (["algorithm.sigma=1e-160"], "algorithm.sigma"),
    (["algorithm.sigma=1e300"], "algorithm.sigma"),
    (["algorithm.kernel=polynomial", "algorithm.degree=10", "algorithm.coef0=1e40"], "algorithm.coef0"),
    (["algorithm.kernel=polynomial", "algorithm.degree=10", "algorithm.coef0=1e300"], "algorithm.coef0"),
    (["algorithm.kernel=polynomial", "algorithm.degree=10", "rho=1e50", "gamma=0.1"], "algorithm.degree"),
])
def test_gram_errors_name_the_key_the_user_set(overrides: list[str], named: str) -> None:
    kind, out = _outcome(["algorithm=kernel_pegasos", *overrides])
    assert kind == "error" and out.startswith(f"{named}=") and "\n" not in out, out
    assert not out.startswith("K=")


def test_generated_bad_inputs_are_many() -> None:
    cases = (len(RHO_CASES) + len(GAMMA_CASES) + 3 * len(LAM_CASES) + len(T_CASES) + 6 + 4 + 5 + 3
             + len(LP_FAILURES) + 3 + len(CORRUPTIONS))
    assert cases >= 150
