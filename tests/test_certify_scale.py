"""The working-set certificate of large samples (pipeline.solvers.max_margin._max_margin) against the exact
whole-sample path it replaced (HiGHS LP, Clarabel QP and polish on every row).

Each test is small: the working set's thresholds are lowered (monkeypatched) so that a few hundred rows
go through the rounds a large file goes through (seed, violators, degenerate working sets). Speed is
measured in benchmarks/bench_files.py, never asserted here.
"""

from __future__ import annotations

import importlib
import logging
import math
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

from pipeline.data import MarginBinary
from pipeline.data.certify import TARGET_GAP, certify_sample
from pipeline.solvers.certified import margins_lower
from pipeline.solvers.max_margin import SolverError

certify_module = importlib.import_module("pipeline.data.certify")
certified_module = importlib.import_module("pipeline.solvers.certified")
max_margin_module = importlib.import_module("pipeline.solvers.max_margin")  # where the max-margin search looks its names up


def shifted_gaussian(n: int, d: int, seed: int, shift: float = 0.05) -> tuple[np.ndarray, np.ndarray]:
    """The benchmark's recipe (benchmarks/bench_files.py): x ~ N(0, I), y = sign(w*.x), x += shift y w*."""
    rng = np.random.default_rng(seed)
    w = rng.normal(size=d)
    w /= np.linalg.norm(w)
    X = rng.normal(size=(n, d))
    y = np.where(X @ w >= 0, 1.0, -1.0)
    X += shift * y[:, None] * w
    return X, y


def exact_path(X: np.ndarray | sp.csr_matrix, y: np.ndarray) -> certify_module.Stats | None:
    Z = sp.diags(y) @ sp.csr_matrix(X) if sp.issparse(X) else y[:, None] * X
    found = max_margin_module._exact_witnesses(Z)
    return None if found is None else certify_module._certify_candidates(X, y, found)


@pytest.fixture
def small_working_set(monkeypatch: pytest.MonkeyPatch) -> None:
    """Rounds on small samples: the whole-sample start only up to 40 rows, few violators per round."""
    monkeypatch.setattr(max_margin_module, "_SEED_ROWS", 40)
    monkeypatch.setattr(max_margin_module, "_ADD_ROWS", 16)


def agree(new: certify_module.Stats, old: certify_module.Stats) -> None:
    """Both certificates are rigorous intervals around the same gamma*: they overlap, and each is tight."""
    assert new.separable and old.separable
    assert new.gamma_lo <= old.gamma_hi and old.gamma_lo <= new.gamma_hi
    assert new.gap <= TARGET_GAP and old.gap <= TARGET_GAP
    assert new.R == old.R and (new.m, new.d) == (old.m, old.d)


@pytest.mark.parametrize(("n", "d", "seed"), [(300, 5, 0), (600, 12, 1), (1500, 30, 2), (400, 3, 3)])
def test_the_working_set_matches_the_exact_path(n: int, d: int, seed: int, small_working_set: None,
                                                tmp_path: Path) -> None:
    X, y = shifted_gaussian(n, d, seed)
    agree(certify_sample(X, y, tmp_path), exact_path(X, y))


def test_the_whole_sample_start_matches_the_exact_path(tmp_path: Path) -> None:
    X, y = shifted_gaussian(800, 10, 4)
    agree(certify_sample(X, y, tmp_path), exact_path(X, y))


def test_sparse_rows_match_dense_rows(small_working_set: None, tmp_path: Path) -> None:
    rng = np.random.default_rng(5)
    X = rng.normal(size=(300, 40)) * (rng.random((300, 40)) < 0.2)  # 80 % zeros
    X[:, :5], y = shifted_gaussian(300, 5, 5, shift=0.2)  # separable along 5 dense columns
    dense = certify_sample(X, y, tmp_path / "dense")
    agree(certify_sample(sp.csr_matrix(X), y, tmp_path / "sparse"), dense)
    agree(dense, exact_path(X, y))


def test_many_features_use_the_gram_form(small_working_set: None, monkeypatch: pytest.MonkeyPatch,
                                         tmp_path: Path) -> None:
    monkeypatch.setattr(max_margin_module, "_DENSE_NNLS", 4)  # the sparse/high-d path on dense rows
    X, y = shifted_gaussian(200, 30, 6)
    agree(certify_sample(X, y, tmp_path), exact_path(X, y))


@pytest.mark.parametrize("rho", [1e-300, 1e-5, 1.0, 1e150])
def test_the_working_set_brackets_an_exactly_known_margin(rho: float, small_working_set: None, tmp_path: Path) -> None:
    from test_certificate_edges import pinned_sample  # tests/ is on sys.path (as for helpers)

    gamma = 0.01 * rho
    X, y, _, _ = pinned_sample(gamma, rho, n=300, d=4, seed=7)
    s = certify_sample(X, y, tmp_path)
    assert s.separable and s.gamma_lo <= gamma <= s.gamma_hi and s.gap <= TARGET_GAP


@pytest.mark.parametrize("flip", [0.05, 0.3])
def test_a_non_separable_working_set_is_proven_by_highs(flip: float, small_working_set: None, tmp_path: Path) -> None:
    ds = MarginBinary(gamma=0.1, rho=1.0, n=400, d=10, flip=flip).generate(np.random.default_rng(8))
    s = certify_sample(ds.X, ds.y, tmp_path)
    assert exact_path(ds.X, ds.y) is None  # the whole-sample LP agrees
    assert not s.separable and math.isnan(s.gamma_lo) and math.isnan(s.gamma_hi)


def test_one_flipped_row_outside_the_seed_is_found(small_working_set: None, tmp_path: Path) -> None:
    """The seed working set is separable; the rounds reach the one row that makes the sample not separable."""
    X, y = shifted_gaussian(400, 5, 9, shift=0.5)
    far = int(np.argmax(y * (X @ np.ones(5))))  # a row far from the boundary: not in the seed
    X = np.vstack([X, -X[far]])  # its mirror image with the same label: the origin lies on their segment
    y = np.append(y, y[far])
    assert not certify_sample(X, y, tmp_path).separable


def test_an_unproven_lp_status_on_the_working_set_raises(small_working_set: None, monkeypatch: pytest.MonkeyPatch,
                                                         tmp_path: Path) -> None:
    from types import SimpleNamespace

    monkeypatch.setattr("scipy.optimize.linprog", lambda *a, **k: SimpleNamespace(status=4, x=None, message="numerical"))
    X, y = shifted_gaussian(300, 5, 10)
    with pytest.raises(SolverError, match="HiGHS.*status 4"):
        certify_sample(X, y, tmp_path)
    assert not list(tmp_path.rglob("*.json"))


def test_long_certificates_log_their_progress(small_working_set: None, caplog: pytest.LogCaptureFixture,
                                              tmp_path: Path) -> None:
    X, y = shifted_gaussian(300, 5, 11)
    with caplog.at_level(logging.INFO, logger="boundlab"):
        certify_sample(X, y, tmp_path)
    rounds = [r.getMessage() for r in caplog.records if "certifying the margin of 300 x 5" in r.getMessage()]
    assert rounds and "0 rows violate" in rounds[-1]


def test_margins_in_blocks_equal_margins_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    X, y = shifted_gaussian(500, 7, 12)
    w = np.random.default_rng(12).normal(size=7)
    whole = margins_lower(X, y, w)
    monkeypatch.setattr(certified_module, "_CHUNK_ENTRIES", 50)  # 7 rows a block
    blocks = margins_lower(X, y, w)
    exact = y * (X @ w) / np.linalg.norm(w)
    assert np.all(blocks <= exact) and np.allclose(blocks, whole, rtol=1e-14, atol=0)
    assert np.array_equal(margins_lower(sp.csr_matrix(X), y, w) <= exact, np.ones(500, bool))


def test_the_largest_entry_needs_no_copy_and_refuses_nan() -> None:
    from pipeline.params import UserError

    X = np.array([[1.0, -3.0], [2.0, 0.5]])
    assert certified_module._largest(X) == 3.0
    X[1, 1] = np.nan
    with pytest.raises(UserError, match="NaN or infinite"):
        certified_module._largest(X)


def test_nnls_in_gram_form_solves_the_least_distance_problem() -> None:
    rng = np.random.default_rng(13)
    Z = rng.normal(size=(60, 8)) + 2.0  # all z_i in a half-space: the origin outside their hull
    H = Z @ Z.T + 1.0
    u = max_margin_module._nnls_gram(H, np.ones(60))
    from scipy.optimize import nnls

    E = np.vstack([Z.T, np.ones(60)])
    target = np.zeros(9)
    target[-1] = 1.0
    ref = nnls(E, target)[0]
    assert np.all(u >= 0) and np.allclose(Z.T @ u, Z.T @ ref, atol=1e-10) and math.isclose(u.sum(), ref.sum(), rel_tol=1e-10)


def sparse_many_features(n: int, d: int, k: int, seed: int, shift: float = 0.05) -> tuple[sp.csr_matrix, np.ndarray]:
    """The benchmark's sparse recipe (benchmarks/bench_files.py): k N(0, 1) entries a row, y = sign(w*.x)."""
    rng = np.random.default_rng(seed)
    w = rng.normal(size=d)
    w /= np.linalg.norm(w)
    cols = np.sort(np.argsort(rng.random((n, d)), axis=1)[:, :k], axis=1)
    values = rng.normal(size=(n, k))
    ws = w[cols]
    y = np.where(np.einsum("ij,ij->i", values, ws) >= 0, 1.0, -1.0)
    values += shift * (y / np.linalg.norm(ws, axis=1))[:, None] * ws
    return sp.csr_matrix((values.ravel(), cols.ravel(), np.arange(0, n * k + 1, k)), shape=(n, d)), y


def test_sparse_rows_in_many_dimensions_are_certified_by_the_active_set(
        monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture, tmp_path: Path) -> None:
    """m <= d sparse rows: the active set alone gives the certificate (the working set is never called), its
    rounds both drop rows from the guessed support and add rows back, and the interval agrees with the
    whole-sample solvers'."""
    monkeypatch.setattr(max_margin_module, "_SEED_ROWS", 40)  # its rounds are logged
    X, y = sparse_many_features(400, 500, 8, seed=13, shift=0.3)

    def refuse(*args: object) -> None:
        raise AssertionError("the working set was used")

    monkeypatch.setattr(max_margin_module, "_max_margin", refuse)
    with caplog.at_level(logging.INFO, logger="boundlab"):
        s = certify_sample(X, y, tmp_path)
    agree(s, exact_path(X, y))
    rounds = [r.getMessage() for r in caplog.records if "active set, round" in r.getMessage()]
    assert len(rounds) >= 3 and "(0 leave, 0 join)" in rounds[-1]
    assert "(0 leave" not in rounds[0]  # the first guess (every row) was not the support


def test_a_sparse_sample_that_is_not_separable_leaves_the_active_set_to_highs(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    X, y = sparse_many_features(200, 600, 6, seed=14)
    X, y = sp.vstack([X, X[:1]]).tocsr(), np.append(y, -y[0])  # one row twice, with both labels
    calls: list[object] = []
    active_set = max_margin_module._active_set
    monkeypatch.setattr(max_margin_module, "_active_set", lambda *a: calls.append(active_set(*a)) or calls[-1])
    s = certify_sample(X, y, tmp_path)
    assert calls == [None]  # it gave up, and HiGHS proved the sample not separable
    assert not s.separable and exact_path(X, y) is None


def test_a_working_set_too_large_for_the_memory_is_refused_before_it_is_built(
        small_working_set: None, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from pipeline.params import UserError

    monkeypatch.setattr(max_margin_module, "_DENSE_NNLS", 4)  # the Gram form on dense rows
    monkeypatch.setattr(max_margin_module, "memory_shortfall",
                        lambda nbytes, what: f"{what} need ~{nbytes / 2**30:.3g} GiB, more than the 0 GiB available")
    X, y = shifted_gaussian(3000, 30, 15)  # beyond the seed of 512 rows: the working set grows
    with pytest.raises(UserError, match=r"certifying the margin of 3000 x 30: a working set of \d+ rows need .*"
                                        r"certify a subsample \(fewer rows\)"):
        certify_sample(X, y, tmp_path)
    assert not list(tmp_path.rglob("*.json"))
