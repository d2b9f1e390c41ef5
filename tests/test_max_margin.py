"""pipeline.solvers.max_margin: a solver's failure is never a fact. An unproven LP status, or an exception in the
solver, raises SolverError naming both and caches nothing; only proven infeasibility means "not separable",
and the interior-point method settles what the simplex leaves unproven."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from helpers import cache_files as _cache_files
from helpers import separable_sample as _separable
from scipy.optimize import OptimizeResult

from pipeline.data.certify import certify_sample
from pipeline.solvers.max_margin import SolverError


LP_FAILURES = [1, 3, 4]  # iteration limit, unbounded, numerical difficulties (scipy.optimize.linprog)


def _failing_linprog(status: int):  # noqa: ANN202
    def linprog(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202
        return OptimizeResult(status=status, x=None, success=False, message=f"simulated status {status}")
    return linprog


def _raising_linprog(exc: BaseException):  # noqa: ANN202
    def linprog(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202
        raise exc
    return linprog


SOLVER_FAILURES = [(_failing_linprog(status), str(status)) for status in LP_FAILURES] + [
    (_raising_linprog(exc("simulated")), exc.__name__) for exc in (MemoryError, ValueError, RuntimeError)]


@pytest.mark.parametrize(("linprog", "status"), SOLVER_FAILURES, ids=[s for _, s in SOLVER_FAILURES])
def test_an_unproven_solver_outcome_raises_naming_solver_and_status(linprog, status: str, tmp_path: Path,  # noqa: ANN001
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """An unproven LP status, or an exception in the solver, is an error naming both; nothing is cached."""
    monkeypatch.setattr("scipy.optimize.linprog", linprog)
    X, y = _separable()
    with pytest.raises(SolverError, match=rf"HiGHS.*status {status}"):
        certify_sample(X, y, cache_dir=tmp_path)
    assert _cache_files(tmp_path) == []


def test_only_proven_infeasibility_means_not_separable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("scipy.optimize.linprog", _failing_linprog(2))
    X, y = _separable()
    stats = certify_sample(X, y, cache_dir=tmp_path)
    assert not stats.separable and math.isnan(stats.gamma_lo)
    assert len(_cache_files(tmp_path)) == 1


@pytest.mark.parametrize(("make", "flip"), [("margin", 0.1), ("margin", 0.2), ("shells", 0.0)])
def test_noisy_samples_the_simplex_cannot_settle_are_proven_not_separable(make: str, flip: float, tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """HiGHS's dual simplex ends these (1000 x 200, noisy labels; 2000 x 300 when this was found) with status
    "unknown"; the interior-point method proves them infeasible: a proven "not separable", never a
    SolverError, and never a margin. The simplex's unproven status is asserted, so the test says when a
    HiGHS release stops reproducing the case."""
    from scipy.optimize import linprog as real

    from pipeline.data.synthetic import MarginBinary, Shells

    outcomes: list[tuple[str, int]] = []

    def linprog(*args, method: str, **kwargs):  # noqa: ANN002, ANN003, ANN202
        res = real(*args, method=method, **kwargs)
        outcomes.append((method, res.status))
        return res

    monkeypatch.setattr("scipy.optimize.linprog", linprog)
    ds = (MarginBinary(gamma=0.1, rho=1.0, n=1000, d=200, flip=flip) if make == "margin"
          else Shells(rho=1.0, n=1000, d=200)).generate(np.random.default_rng(0))
    stats = certify_sample(ds.X, ds.y, cache_dir=tmp_path)
    assert not stats.separable and math.isnan(stats.gamma_lo) and math.isnan(stats.gamma_hi)
    assert ("highs", 4) in outcomes and ("highs-ipm", 2) in outcomes  # unknown, then proven infeasible


def test_the_interior_point_method_is_asked_only_after_an_unproven_simplex_status(tmp_path: Path,
                                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    from scipy.optimize import linprog as real

    methods: list[str] = []

    def linprog(*args, method: str, **kwargs):  # noqa: ANN002, ANN003, ANN202
        methods.append(method)
        return real(*args, method=method, **kwargs)

    monkeypatch.setattr("scipy.optimize.linprog", linprog)
    X, y = _separable()
    assert certify_sample(X, y, cache_dir=tmp_path).separable
    assert methods == ["highs"]
