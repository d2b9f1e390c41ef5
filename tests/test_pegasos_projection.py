"""Projected Pegasos at scales where the projection shrinks the iterate by many orders of magnitude.

The kernel keeps w_t = a v with a scalar scale a; with the projection onto ||u|| <= 1/sqrt(lam) active at every
step (rows much longer than the ball), a used to underflow within a few hundred steps: ||v||^2 overflowed, the
averaged iterate came out as 1e254 or a division by zero, and the run reported a P "violation" from garbage.
The kernel now restarts its representation whenever the projection has shrunk a by 2^-8; these tests hold it
to a plain reference that keeps u itself.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from pipeline.learners.pegasos import SNAPSHOTS, PegasosCore, index_stream, pegasos_kernel
from pipeline.learners.base import log_grid


def _reference(X: np.ndarray, y: np.ndarray, idx: np.ndarray, lam: float, radius: float) -> tuple[np.ndarray, np.ndarray]:
    """Plain Pegasos with projection, u kept as a vector: (average of u_1..u_T, u_(T+1))."""
    T, k = idx.shape
    u = np.zeros(X.shape[1])
    total = np.zeros_like(u)
    for t in range(1, T + 1):
        total += u
        rows = idx[t - 1]
        margins = y[rows] * (X[rows] @ u)
        grad = (y[rows][margins < 1.0, None] * X[rows][margins < 1.0]).sum(axis=0)
        u = (1.0 - 1.0 / t) * u + grad / (lam * t * k)
        norm = math.sqrt(u @ u)
        if norm > radius:
            u *= radius / norm
    return total / T, u


def _run(X: np.ndarray, y: np.ndarray, idx: np.ndarray, lam: float, radius: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    T, k = idx.shape
    m, d = X.shape
    grid = log_grid(T, SNAPSHOTS)
    state = np.array([1.0, 0.0, 0.0, 1.0])
    v, z, buf = np.zeros(d), np.zeros(d), np.zeros(d)
    loss, active = np.empty(T), np.empty(T, dtype=np.int32)
    avg, last = np.empty((grid.size, d)), np.empty((grid.size, d))
    pegasos_kernel(X, y, np.zeros(m), np.ones(m), idx, lam, radius, 0, grid, state, v, z, buf, loss, active, avg, last,
                   np.empty(T))
    return avg[-1], last[-1], loss


@pytest.mark.parametrize(("norm", "T", "k", "sampling"), [(140.0, 300, 1, "iid"), (140.0, 300, 4, "perm"),
                                                          (1e6, 3000, 1, "iid"), (1e3, 20000, 2, "perm"),
                                                          (1.0, 2000, 1, "iid")])
def test_projected_kernel_follows_the_plain_reference(norm: float, T: int, k: int, sampling: str) -> None:
    rng = np.random.default_rng(7)
    m, d, lam = 50, 6, 0.01
    X = rng.normal(size=(m, d))
    X *= norm / np.linalg.norm(X, axis=1, keepdims=True)
    y = np.where(rng.random(m) < 0.5, -1.0, 1.0)
    idx = index_stream(sampling, y, T, k, rng)
    radius = 1.0 / math.sqrt(lam)
    avg, last, loss = _run(X, y, idx, lam, radius)
    ref_avg, ref_last = _reference(X, y, idx, lam, radius)
    assert np.all(np.isfinite(avg)) and np.all(np.isfinite(last)) and np.all(np.isfinite(loss))
    assert np.linalg.norm(last) <= radius * (1 + 1e-12)
    np.testing.assert_allclose(last, ref_last, rtol=1e-9, atol=1e-12 * radius)
    np.testing.assert_allclose(avg, ref_avg, rtol=1e-7, atol=1e-9 * radius)


def test_unprojected_runs_are_unchanged_by_the_restart() -> None:
    """Without the projection a = 1/t exactly: the representation is never restarted."""
    rng = np.random.default_rng(3)
    X = rng.normal(size=(40, 5))
    y = np.where(X[:, 0] > 0, 1.0, -1.0)
    idx = index_stream("iid", y, 5000, 1, rng)
    T = idx.shape[0]
    grid = log_grid(T, SNAPSHOTS)
    for core in (PegasosCore.start(5, 0.1), None):  # the runs' core (the single-step kernel), the general kernel
        state = np.array([1.0, 0.0, 0.0, 1.0])
        if core is not None:
            core.advance(X, y, idx, grid, np.ones(40), np.zeros(40))
            state = core.scalars
        else:
            v, z, buf = np.zeros(5), np.zeros(5), np.zeros(5)
            loss, active = np.empty(T), np.empty(T, dtype=np.int32)
            avg, last = np.empty((grid.size, 5)), np.empty((grid.size, 5))
            pegasos_kernel(X, y, np.zeros(40), np.ones(40), idx, 0.1, 0.0, 0, grid, state, v, z, buf, loss, active, avg,
                           last, np.empty(T))
        assert state[0] == 1.0 / T and state[3] == 1.0
