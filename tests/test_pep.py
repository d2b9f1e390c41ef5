"""Worst-case regret of Pegasos' update by performance estimation (pipeline/analysis/pep.py; docs/bounds.md section 4):
the certified SDP upper bound is above the replayed instance's regret and below the closed form of `regret`, equals
the proven exact value G^2 H_T/(2 lam T) without projection and the hand-derived value at T = 1, and the replayed
instances satisfy the class's conditions and follow the update rule, checked by an independent re-implementation."""

from __future__ import annotations

import math

import numpy as np
import pytest

from pipeline.analysis.pep import MAX_T, bound, replay, worst_regret

TOL = 1e-6  # relative: Clarabel at 1e-10 tolerances; the lower bound's instance is shrunk by 1e-9

SETTINGS = [  # (lam, G, radius): no projection; Pegasos' 1/sqrt(lam); a small ball; another scale
    (0.1, 1.0, None),
    (0.1, 1.0, 1.0 / math.sqrt(0.1)),
    (0.1, 1.0, 1.0),
    (1.0, 2.0, None),
    (0.5, 1.5, 1.0),
]


def harmonic(T: int) -> float:
    return sum(1.0 / t for t in range(1, T + 1))


@pytest.mark.parametrize(("lam", "G", "radius"), SETTINGS)
@pytest.mark.parametrize("T", [1, 2, 3, 5])
def test_lower_upper_bound_order(T: int, lam: float, G: float, radius: float | None) -> None:
    """lower <= upper <= bound: the instance is a member of the class (its regret is a lower bound of the worst
    case) and the class is inside the theorem's assumptions (Lemma 1 holds for it), so the SDP cannot exceed it."""
    r = worst_regret(T, lam, G, radius, polish=30)
    scale = G * G / lam
    assert r.status in ("optimal", "optimal_inaccurate"), r.status
    assert r.lower <= r.upper + TOL * scale, (r.lower, r.upper)
    assert r.upper <= r.bound * (1.0 + 1e-9), (r.upper, r.bound)
    assert abs(r.upper - r.dual) <= TOL * scale and abs(r.value - r.dual) <= TOL * scale
    assert r.gap == r.upper - r.lower and r.bound == bound(T, lam, G)
    assert abs(r.instance.regret - r.lower) == 0.0 and r.instance.centers.shape[0] == T


@pytest.mark.parametrize(("lam", "G"), [(0.1, 1.0), (1.0, 2.0), (0.01, 0.5)])
def test_exact_without_projection(lam: float, G: float) -> None:
    """Without projection the SDP is exact and equals G^2 H_T/(2 lam T) (module docstring): upper and lower both
    within solver accuracy of it, so the gap is closed; bound/upper = (1 + ln T)/H_T."""
    for T in (1, 2, 4, 8, 16):
        r = worst_regret(T, lam, G)
        exact = G * G * harmonic(T) / (2.0 * lam * T)
        assert exact - TOL * exact <= r.upper and abs(r.upper - exact) <= TOL * exact, (T, r.upper, exact)
        assert abs(r.lower - exact) <= TOL * exact, (T, r.lower, exact)
        assert abs(r.bound / exact - (1.0 + math.log(T)) / harmonic(T)) <= 1e-12


def test_one_dimensional_attainer() -> None:
    """The proof's attainer: g_t = G in R^1 (centres c_t = w_t - G/lam), comparator w_(T+1) (= the best one)."""
    lam, G, T = 0.1, 1.0, 7
    w, centers = 0.0, []
    for t in range(1, T + 1):
        centers.append(w - G / lam)
        w -= G / (lam * t)
    inst = replay(np.array(centers)[:, None], lam)
    assert abs(inst.u[0] - w) <= 1e-12 * abs(w)
    assert abs(inst.regret - G * G * harmonic(T) / (2 * lam * T)) <= 1e-12
    assert abs(inst.max_grad - G) <= 1e-12


@pytest.mark.parametrize(("lam", "G", "radius"), SETTINGS)
def test_T1_hand_value(lam: float, G: float, radius: float | None) -> None:  # noqa: N802 - the horizon T = 1
    """T = 1: w_1 = 0, regret = -<g, u> - lam/2 ||u||^2, maximised at u = -a g/||g||, ||g|| = G, a = min(r, G/lam):
    G a - lam a^2/2 (G^2/(2 lam) = bound(1) without projection)."""
    a = G / lam if radius is None else min(radius, G / lam)
    hand = G * a - lam * a * a / 2.0
    r = worst_regret(1, lam, G, radius)
    assert hand <= r.upper <= hand * (1.0 + TOL) and abs(r.lower - hand) <= TOL * hand, (r.upper, r.lower, hand)
    if radius is None:
        assert abs(hand - bound(1, lam, G)) <= 1e-12 * hand


def test_projection_gap_and_polish() -> None:
    """With Pegasos' ball (lam = 0.1, G = 1, r = 1/sqrt(lam)) the gap closes at T = 4 (the ball is worst among the
    sets C) but not at T = 2 (the relaxation gap of the family of sets); the polish never lowers the lower bound."""
    lam, G, rad = 0.1, 1.0, 1.0 / math.sqrt(0.1)
    r4 = worst_regret(4, lam, G, rad)
    assert r4.gap <= TOL * G * G / lam, r4.gap
    raw, pol = worst_regret(2, lam, G, rad, polish=0), worst_regret(2, lam, G, rad)
    assert pol.lower >= raw.lower and pol.upper - pol.lower > 0.1
    assert pol.instance.projected >= 1


def independent_replay(centers: np.ndarray, lam: float, radius: float | None) -> tuple[np.ndarray, np.ndarray]:
    """Pegasos' update written out afresh: w_1 = 0, grad_t = lam (w_t - c_t), w_(t+1) = (1 - 1/t) w_t + c_t/t, scaled
    back into the ball."""
    T, d = centers.shape
    w, ws, gs = np.zeros(d), [], []
    for t in range(1, T + 1):
        ws.append(w.copy())
        gs.append(lam * (w - centers[t - 1]))
        w = (1.0 - 1.0 / t) * w + centers[t - 1] / t
        if radius is not None and np.linalg.norm(w) > radius:
            w = w * (radius / np.linalg.norm(w))
    return np.array(ws), np.array(gs)


@pytest.mark.parametrize(("lam", "G", "radius"), SETTINGS)
def test_instance_in_class_and_update(lam: float, G: float, radius: float | None) -> None:
    """The replayed instance: gradients of norm <= G, the update rule (independent re-implementation), u in the
    ball, the regret recomputed from the functions, and lam-strong convexity between w_t and u (an equality for
    lam/2 ||x - c_t||^2) and at random points."""
    T = 5
    r = worst_regret(T, lam, G, radius, polish=30)
    inst = r.instance
    c = inst.centers
    ws, gs = independent_replay(c, lam, radius)
    scale = 1.0 + float(np.abs(c).max())
    assert np.allclose(ws, inst.w, rtol=0, atol=1e-12 * scale) and np.allclose(gs, inst.g, rtol=0, atol=1e-12 * lam * scale)
    assert inst.max_grad <= G and float(np.linalg.norm(gs, axis=1).max()) <= G * (1.0 + 1e-12)
    if radius is not None:
        assert float(np.linalg.norm(inst.u)) <= radius * (1.0 + 1e-12)
        assert float(np.linalg.norm(ws, axis=1).max()) <= radius * (1.0 + 1e-12)

    def f(t: int, x: np.ndarray) -> float:
        return lam / 2.0 * float((x - c[t]) @ (x - c[t]))

    regret = np.mean([f(t, ws[t]) - f(t, inst.u) for t in range(T)])
    assert abs(regret - inst.regret) <= 1e-9 * scale**2 * lam
    rng = np.random.default_rng(0)
    for t in range(T):
        for x, z in [(ws[t], inst.u)] + [tuple(rng.standard_normal((2, c.shape[1])) * scale) for _ in range(3)]:
            gx = lam * (x - c[t])
            lhs, rhs = f(t, z), f(t, x) + float(gx @ (z - x)) + lam / 2.0 * float((z - x) @ (z - x))
            assert lhs >= rhs - 1e-9 * scale**2 * lam
    # the comparator is the best admissible one: no point of the ball (or space) does better
    mean_c = c.mean(axis=0)
    for _ in range(20):
        v = inst.u + 0.1 * rng.standard_normal(c.shape[1])
        if radius is not None and np.linalg.norm(v) > radius:
            v *= radius / np.linalg.norm(v)
        assert float((v - mean_c) @ (v - mean_c)) >= float((inst.u - mean_c) @ (inst.u - mean_c)) - 1e-12 * scale**2


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [
        ({"T": 0, "lam": 0.1, "G": 1.0}, "T"),
        ({"T": MAX_T + 1, "lam": 0.1, "G": 1.0}, "T"),
        ({"T": 2.0, "lam": 0.1, "G": 1.0}, "T"),
        ({"T": True, "lam": 0.1, "G": 1.0}, "T"),
        ({"T": 3, "lam": 0.0, "G": 1.0}, "lam"),
        ({"T": 3, "lam": -1.0, "G": 1.0}, "lam"),
        ({"T": 3, "lam": math.inf, "G": 1.0}, "lam"),
        ({"T": 3, "lam": "x", "G": 1.0}, "lam"),
        ({"T": 3, "lam": 0.1, "G": 0.0}, "G"),
        ({"T": 3, "lam": 0.1, "G": math.nan}, "G"),
        ({"T": 3, "lam": 0.1, "G": 1.0, "radius": 0.0}, "radius"),
        ({"T": 3, "lam": 0.1, "G": 1.0, "radius": -2.0}, "radius"),
        ({"T": 3, "lam": 0.1, "G": 1.0, "radius": 1.0, "polish": -1}, "polish"),
    ],
)
def test_bad_input(kwargs: dict, name: str) -> None:
    with pytest.raises(ValueError, match=f"^{name}:"):
        worst_regret(**kwargs)
    if "polish" not in kwargs and "radius" not in kwargs:
        with pytest.raises(ValueError, match=f"^{name}:"):
            bound(kwargs["T"], kwargs["lam"], kwargs["G"])
