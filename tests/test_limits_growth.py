"""The betting test of pipeline.judging.limits when the number of values grows: one test however many looks.

(i) the capital of a prefix is the prefix of the capital of its extension (the bets depend only on the
values before each and on fixed constants, never on a planned count); (ii) under a null at its edge the
rejection rate, judged once or at every prefix, stays within alpha plus three Monte Carlo standard errors;
(iii) power near the information floor. Each property is also run on the test before this change (bets
tuned to the number of values n), which fails (i) and (iii): the checks can fail.
"""

from __future__ import annotations

import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from pipeline.judging import limits

ALPHA = limits.ALPHA
SEQUENCES = 2000
TOLERANCE = ALPHA + 3.0 * math.sqrt(ALPHA * (1 - ALPHA) / SEQUENCES)
LOG_REJECT = math.log(1.0 / ALPHA)


def _old_log_capital(payoff: np.ndarray, top: np.ndarray, n: int) -> np.ndarray:
    """The bets before this change: one plug-in bettor, truncation 3/4, tuned to the planned count n."""
    t = payoff.shape[0]
    z = -payoff
    idx = np.arange(1, t + 1, dtype=np.float64).reshape((-1,) + (1,) * (payoff.ndim - 1))
    head = np.zeros((1,) + payoff.shape[1:])
    mean_prev = np.concatenate([head, np.cumsum(z, axis=0)[:-1] / idx[:-1]], axis=0)
    var = (0.25 + np.concatenate([head, np.cumsum((z - mean_prev) ** 2, axis=0)[:-1]], axis=0)) / idx
    lam = np.minimum(np.sqrt(2.0 * math.log(1.0 / ALPHA) / (max(n, 1) * var)), 0.75 * top)
    return np.cumsum(np.log1p(lam * payoff), axis=0)


def _new(payoff: np.ndarray, top: np.ndarray, n: int) -> np.ndarray:
    return limits._log_capital(payoff, top, n)


def _prefix_mismatch(log_capital, values: np.ndarray, u: float, k: int) -> float:  # noqa: ANN001
    """How far the capital of the first k values (judged with n = k) is from the first k of the capital of
    all of them (judged with n = len): 0 for a test whose bets ignore the count."""
    top = limits._top_below(np.array(u))
    whole = log_capital(u - values, top, values.size)
    part = log_capital(u - values[:k], top, k)
    return float(np.max(np.abs(part - whole[:k])))


values_st = st.lists(st.floats(0.0, 1.0), min_size=2, max_size=60).map(np.array)


@settings(max_examples=60, deadline=None)
@given(values=values_st, u=st.floats(0.01, 0.99), cut=st.floats(0.0, 1.0))
def test_the_capital_of_a_prefix_is_the_prefix_of_the_capital(values, u, cut) -> None:  # noqa: ANN001
    k = 1 + int(cut * (values.size - 1))
    assert _prefix_mismatch(_new, values, u, k) == 0.0
    # and through the public tests: the first crossing and p-value of a prefix follow from the whole's capital
    whole = limits._log_capital(u - values, limits._top_below(np.array(u)))
    part = limits.test_below(values[:k], u, 0.0, 1.0, n=10 * values.size)  # a planned count changes nothing
    assert part.p == limits._p_value(float(whole[:k].max()))
    assert part == limits.test_below(values[:k], u, 0.0, 1.0)
    above = limits.test_above(values[:k], u, 0.0, math.inf)
    extended = limits.test_above(np.concatenate([values[:k], values]), u, 0.0, math.inf)
    assert above.first is None or extended.first == above.first


def test_the_old_bets_tuned_to_n_fail_the_prefix_check() -> None:
    values = np.random.default_rng(0).beta(2.0, 5.0, 40)
    assert _prefix_mismatch(_old_log_capital, values, 0.4, 20) > 1e-3


def _nulls(rng: np.random.Generator, n: int) -> dict[str, tuple[np.ndarray, float]]:
    """Laws on [0, 1] at the null's edge (mean = the threshold), SEQUENCES sequences of n values each (columns)."""
    shape = (n, SEQUENCES)
    return {
        "two-point at the top": (np.where(rng.random(shape) < 0.4, 1.0, 0.1), 0.46),
        "range ends": ((rng.random(shape) < 0.3).astype(float), 0.3),
        "rare top": ((rng.random(shape) < 0.02).astype(float), 0.02),
        "beta(2, 5)": (rng.beta(2.0, 5.0, shape), 2.0 / 7.0),
        "near-constant": (rng.uniform(0.39, 0.41, shape), 0.4),
    }


def _rejection_rates(log_capital, n: int, seed: int) -> dict[str, tuple[float, float]]:  # noqa: ANN001
    """Per null: the rate of rejecting "mean >= threshold" judged once at n values, and at every prefix."""
    out = {}
    for name, (x, mean) in _nulls(np.random.default_rng(seed), n).items():
        top = limits._top_below(np.array(mean))
        once = log_capital(mean - x, top, n).max(axis=0) >= LOG_REJECT
        every = np.zeros(SEQUENCES, dtype=bool)
        for k in range(1, n + 1):  # each prefix judged as its own sweep (a count-tuned test re-tunes its bets)
            every |= log_capital(mean - x[:k], top, k).max(axis=0) >= LOG_REJECT
        out[name] = (float(once.mean()), float(every.mean()))
    return out


def test_at_the_null_edge_the_level_holds_once_and_at_every_prefix() -> None:
    for n, seed in ((5, 1), (40, 2)):
        rates = _rejection_rates(_new, n, seed)
        assert all(once <= TOLERANCE and every <= TOLERANCE for once, every in rates.values()), (n, rates)


def test_the_upper_side_at_its_edge_too() -> None:
    # "mean <= threshold" with no top declared (the lower estimate of a non-negative quantity), at every prefix
    rng = np.random.default_rng(5)
    x = rng.exponential(1.0, (60, SEQUENCES))
    scale, u_m, cap = limits._above_bets(np.array(1.0), 0.0, math.inf)
    log_k = limits._log_capital(x / scale - u_m, cap)
    assert float((log_k.max(axis=0) >= LOG_REJECT).mean()) <= TOLERANCE


def test_the_count_tuned_bets_lose_the_level_when_judged_at_every_prefix() -> None:
    # a fair coin at the edge of "mean >= 1/2", re-judged after every added value up to 300: the old test,
    # re-tuned to each count, says "below" in about 8 % of sequences; the capital that ignores the count stays
    # within alpha (its every-prefix rate is its largest capital's, by the prefix property checked above)
    rng = np.random.default_rng(4)
    n = 300
    x = (rng.random((n, SEQUENCES)) < 0.5).astype(float)
    top = limits._top_below(np.array(0.5))
    new = float((limits._log_capital(0.5 - x, top).max(axis=0) >= LOG_REJECT).mean())
    old = np.zeros(SEQUENCES, dtype=bool)
    for k in range(1, n + 1):
        old |= _old_log_capital(0.5 - x[:k], top, k).max(axis=0) >= LOG_REJECT
    assert new <= TOLERANCE < float(old.mean()), (new, float(old.mean()))


def _median_needed(log_capital, x: np.ndarray, b: float) -> float:  # noqa: ANN001
    log_k = log_capital(b - x, limits._top_below(np.array(b)), x.shape[0])
    hit = log_k >= LOG_REJECT
    return float(np.median(np.where(hit.any(axis=0), hit.argmax(axis=0) + 1.0, math.inf)))


def test_power_within_a_quarter_of_the_floor() -> None:
    # mu = b / 3 with the range's top 10 b: the floor is about 39 values
    b, mu = 0.1, 0.1 / 3.0
    floor = limits.floor_seeds(mu, b, 0.0, 1.0)
    assert 38 < floor < 40 and limits.floor_seeds(b, b, 0.0, 1.0) == math.inf
    assert limits.floor_seeds(mu, 10 * b, 0.0, 10 * 1.0) == limits.floor_seeds(mu / 10, b, 0.0, 1.0)  # unit scale
    rng = np.random.default_rng(3)
    laws = {"constant": np.full((200, 500), mu), "uniform": rng.uniform(0.0, 2 * mu, (200, 500)),
            "beta": rng.beta(2.0, 58.0, (200, 500))}
    for name, x in laws.items():
        assert _median_needed(_new, x, b) <= 1.25 * floor, name
        # the old bets, tuned to the floor's count (their best case), need more
        assert _median_needed(lambda p, t, n: _old_log_capital(p, t, round(floor)), x, b) > 1.25 * floor, name
    # seeds_to_decide: the observed values repeated, in one pass, agree with testing each count
    few = laws["uniform"][:7, 0]
    need = limits.seeds_to_decide(few, b, 0.0, 1.0)
    reps = np.resize(few, need)
    assert limits.test_below(reps, b, 0.0, 1.0).reject and not limits.test_below(reps[:-1], b, 0.0, 1.0).reject
    assert limits.seeds_to_decide(few, mu / 2, 0.0, 1.0, most=1000) is None  # the mean is not below the bound
