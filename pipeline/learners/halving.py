"""Halving and Weighted Majority over a finite class of experts (Littlestone & Warmuth 1994; UML
section 21.1 and Thm 21.11; docs/bounds.md section 3)."""

from __future__ import annotations

import math

import numpy as np

from pipeline._jit import kernel
from pipeline.data.dataset import Sample, Source
from pipeline.data.finite import distinct_rows
from pipeline.contract import HalvingRun
from pipeline.learners.base import Learner, Outcome, log_grid
from pipeline.learners.orderings import ORDERINGS, choose, greedy_halving
from pipeline.params import Param, UserError

# The class is a prediction table; without one (e.g. margin_binary) the learners use discretised linear
# separators sign(w.x), sign(0) = +1: ``experts`` random unit directions plus the data's known ones.
MAX_ENTRIES = 50_000_000  # |H| x m table entries the learners materialise


@kernel
def halving_kernel(table_T: np.ndarray, y: np.ndarray, order: np.ndarray, alive: np.ndarray, mistakes: np.ndarray) -> int:
    """Halving over the m x |H| table (row i: every hypothesis on x_i), presented in ``order`` (step t
    shows row order[t]), updating the mask ``alive`` (V_t).

    Predict the majority vote of V_t, a tie going to +1; V_{t+1} keeps the hypotheses that were right.
    ``mistakes[t]`` is set to 1 where step t erred. Returns the number of mistakes. (The order is an
    argument so that an adversary's search evaluates orders without copying the table.)
    """
    m = order.shape[0]
    H = table_T.shape[1]
    survivors = np.empty(H, dtype=np.int64)
    k = 0
    for i in range(H):
        if alive[i]:
            survivors[k] = i
            k += 1
    count = 0
    for t in range(m):
        row = order[t]
        plus = 0
        for j in range(k):
            if table_T[row, survivors[j]] > 0:
                plus += 1
        predicted = 1 if 2 * plus >= k else -1
        if predicted != y[row]:
            mistakes[t] = 1
            count += 1
        kept = 0
        for j in range(k):
            i = survivors[j]
            if table_T[row, i] == y[row]:
                survivors[kept] = i
                kept += 1
            else:
                alive[i] = False
        k = kept
    return count


@kernel
def weighted_majority_kernel(table_T: np.ndarray, y: np.ndarray, log_factor: float, losses: np.ndarray,
                             mistakes: np.ndarray, probs: np.ndarray) -> int:
    """Multiplicative weights over the m x |H| table: expert i weighs exp(log_factor * losses[i]), and
    every wrong expert's loss grows by one (its weight is multiplied by exp(log_factor)).

    Weights are computed relative to the leader (fewest losses), whose weight is exactly 1: nothing
    underflows on long streams, and at log_factor = -inf (beta = 0) the weights are the beta -> 0 limit
    of the normalised ones, 1 on the current leaders and 0 elsewhere. At step t it records the weighted
    majority's mistake (``mistakes[t]``, a tie going to +1) and the exact mistake probability
    <p_t, v_t> of the randomised prediction (``probs[t]``). Returns the weighted majority's mistakes.
    """
    m, H = table_T.shape
    lead = losses.min() if H > 0 else 0
    count = 0
    for t in range(m):
        plus = 0.0
        minus = 0.0
        for i in range(H):
            d = losses[i] - lead
            w = 1.0 if d == 0 else math.exp(d * log_factor)
            if table_T[t, i] > 0:
                plus += w
            else:
                minus += w
        predicted = 1 if plus >= minus else -1
        if predicted != y[t]:
            mistakes[t] = 1
            count += 1
        probs[t] = (minus if y[t] > 0 else plus) / (plus + minus)
        lead = -1
        for i in range(H):
            if table_T[t, i] != y[t]:
                losses[i] += 1
            if lead < 0 or losses[i] < lead:
                lead = losses[i]
    return count


def _labels(y: np.ndarray) -> np.ndarray:
    return np.where(np.asarray(y) > 0, 1, -1).astype(np.int8)


class _Experts(Learner):
    """What Halving and Weighted Majority share: the class as a table of distinct functions."""

    experts: int  # each declares it (the random directions drawn when the data bring no class)

    def _known(self, dataset: Sample) -> np.ndarray:
        """The table the data provides: its own class, else the rows of its known directions."""
        if getattr(dataset, "hypotheses", None) is not None:
            return np.asarray(dataset.hypotheses)
        directions = [np.asarray(v, dtype=np.float64) for _, v in sorted(dataset.directions.items())]
        if not directions:
            return np.zeros((0, dataset.X.shape[0]), dtype=np.int8)
        return np.where(np.asarray(dataset.X @ np.stack(directions).T) >= 0.0, 1, -1).astype(np.int8).T

    def table(self, dataset: Sample, rng: np.random.Generator) -> np.ndarray:
        """The |H| x m table of distinct functions on the sample the learner uses.

        The dataset's own table when it has one; otherwise sign(w.x) (sign(0) = +1) over ``experts``
        random unit directions drawn from ``rng`` followed by the dataset's known directions.
        """
        if getattr(dataset, "hypotheses", None) is not None:
            table = np.asarray(dataset.hypotheses)
        else:
            W = rng.standard_normal((self.experts, dataset.X.shape[1]))
            W /= np.linalg.norm(W, axis=1, keepdims=True)
            random = np.where(np.asarray(dataset.X @ W.T) >= 0.0, 1, -1).astype(np.int8).T
            table = np.vstack([random, self._known(dataset)])
        if table.ndim != 2 or table.shape[1] != len(dataset.y) or not np.isin(table, (-1, 1)).all():
            raise UserError(f"algorithm={self.name}: the hypothesis table must be |H| x {len(dataset.y)} with entries +1/-1, "
                            f"got shape {table.shape}")
        return np.ascontiguousarray(table[distinct_rows(table)], dtype=np.int8)

    def check_with(self, dataset: Source) -> None:
        """Before the data exist: the ``experts`` random directions (experts x d, drawn and normalised) and
        their predictions on the sample (n x experts, float64 then int8) fit in memory."""
        from pipeline.learners.base import planned_shape
        from pipeline.params import check_sizes

        if isinstance(dataset, Source) and dataset.kind == "finite":  # its own table: sized by the dataset's check
            return
        n, d = planned_shape(dataset)
        experts = int(getattr(self, "experts", 0))
        check_sizes({"experts": (self.experts, 8.0 * 2 * experts * (d or 0) + 10.0 * experts * (n or 0))},
                    "lower experts (or d)", "the experts")

    def check_data(self, dataset: Sample) -> None:
        m = len(dataset.y)
        own = getattr(dataset, "hypotheses", None)
        H = len(own) if own is not None else self.experts + len(dataset.directions)
        if H == 0:
            raise UserError(f"algorithm={self.name}: the class is empty (no hypothesis table, no known directions, "
                            f"algorithm.experts=0); set algorithm.experts >= 1")
        if H * m > MAX_ENTRIES:
            raise UserError(f"algorithm={self.name}: the class table |H| x m = {H} x {m} exceeds {MAX_ENTRIES:.0e} entries; "
                            "use fewer experts or a shorter stream")

    @staticmethod
    def best_expert(table: np.ndarray, y: np.ndarray) -> np.ndarray:
        """Each expert's number of mistakes on the whole stream (exact integers)."""
        counts: np.ndarray = (table != _labels(y)[None, :]).sum(axis=1)
        return counts

    @staticmethod
    def running_best(table: np.ndarray, y: np.ndarray, t: np.ndarray) -> np.ndarray:
        """min_i (mistakes of expert i in steps 1..t) at each t of the grid, without an |H| x m cumsum."""
        wrong = table != _labels(y)[None, :]
        losses = np.zeros(table.shape[0], dtype=np.int64)
        out, prev = np.empty(len(t), dtype=np.int64), 0
        for k, stop in enumerate(t):
            losses += wrong[:, prev:stop].sum(axis=1)
            prev = stop
            out[k] = losses.min()
        return out


class Halving(_Experts):
    """The Halving algorithm over a finite class (Littlestone 1988; Littlestone & Warmuth 1994; UML
    section 21.1; docs/bounds.md section 3).

    V_1 = H. Predict the majority vote of V_t, a tie going to +1 (any tie-break works: a wrong
    majority is at least half of V_t). V_{t+1} = the hypotheses of V_t that were right. If some
    hypothesis agrees with every label (realisability), each mistake at least halves V_t, so the
    number of mistakes is at most floor(log2 |H|), |H| counting the distinct functions on the sample.

    The class is the dataset's prediction table (:attr:`pipeline.data.Dataset.hypotheses`) when it has
    one; otherwise the discretised linear separators sign(w.x), sign(0) = +1, over ``experts`` random
    unit directions drawn from the algorithm's stream plus the dataset's known directions (the
    generator's w*, which realises clean margin data). A stream that is not known to be realisable is
    refused before the run (:meth:`check_data`).

    Parameters
    ----------
    experts : random directions added to the known ones when the data has no hypothesis table.
    ordering : the order of the stream: "given" (the default), "random" or "adversarial" (a search for the
        order with the most mistakes, :mod:`pipeline.learners.orderings`); the bound holds for every order.

    Attributes
    ----------
    alive_ : the final version space, a mask over the distinct functions.
    mistakes_ : number of mistakes.

    :meth:`run` hands its class (the table of distinct functions on the run's points) to the statistics in
    ``Outcome.run`` (:class:`~pipeline.contract.HalvingRun`): the exact worst case of this game there is computed beside the bound
    (:func:`pipeline.job.statistics.exact_game`: ``game_value``, ``littlestone``, ``game_status``).

    Examples
    --------
    >>> from pipeline.data.finite import FiniteClass
    >>> ds = FiniteClass(cls="thresholds", size=1000, n=1000, adversary="bisect").sample(np.random.default_rng(0))
    >>> h = Halving()
    >>> _ = h.run(ds, np.random.default_rng(0))
    >>> h.mistakes_, int(np.log2(1001))  # the bisecting adversary forces the bound: floor(log2 |H|)
    (9, 9)
    """

    name = "halving"
    # the declared parameters as an instance holds them, for a type checker (tests/test_types.py: they agree)
    experts: int
    ordering: str
    params = (Param("experts", int, lambda v: 0 <= v <= 100_000, "an integer in [0, 100000]", default=100),
              Param("ordering", str, lambda v: v in ORDERINGS, f"one of {', '.join(ORDERINGS)}", default="given"))

    def check_data(self, dataset: Sample) -> None:
        """Refuse a stream that no hypothesis known before the run agrees with (the run would empty V)."""
        super().check_data(dataset)
        known = self._known(dataset)
        if not (known == _labels(dataset.y)[None, :]).all(axis=1).any():
            m = len(dataset.y)
            if getattr(dataset, "hypotheses", None) is not None:
                what = f"no hypothesis among |H| = {len(distinct_rows(known))} agrees with all {m} labels"
            else:
                what = (f"none of the known directions ({', '.join(sorted(dataset.directions)) or 'none'}) agrees with all "
                        f"{m} labels, and random ones are not relied on")
            raise UserError(f"algorithm=halving: the stream is not realisable by the class ({what}); "
                            "use algorithm=weighted_majority for noisy streams")

    def learn_table(self, table: np.ndarray, y: np.ndarray, order: np.ndarray | None = None) -> np.ndarray:
        """Run Halving over a table of distinct functions, its examples in ``order`` (default: as given);
        return the trace: 1 where step t erred."""
        self.check()
        table = np.asarray(table, dtype=np.int8)
        return self._learn_rows(np.ascontiguousarray(table.T), _labels(y), order)

    def _learn_rows(self, table_T: np.ndarray, labels: np.ndarray, order: np.ndarray | None) -> np.ndarray:
        order = np.arange(table_T.shape[0]) if order is None else np.asarray(order, dtype=np.int64)
        self.alive_ = np.ones(table_T.shape[1], dtype=np.bool_)
        trace = np.zeros(order.shape[0], dtype=np.int8)
        self.mistakes_ = int(halving_kernel(table_T, labels, order, self.alive_, trace))
        return trace

    def run(self, dataset: Sample, rng: np.random.Generator) -> Outcome:
        """One pass over the dataset in the order ``ordering`` says (:mod:`pipeline.learners.orderings`;
        randomness draws the random directions, then the order)."""
        self.check()
        table = self.table(dataset, rng)
        y = np.asarray(dataset.y)
        table_T, labels = np.ascontiguousarray(table.T), _labels(y)

        def mistakes(order: np.ndarray) -> int:
            return int(Halving(experts=self.experts)._learn_rows(table_T, labels, order).sum())

        order = choose(self.ordering, y.size, rng, mistakes, lambda: greedy_halving(table, labels))
        trace = self._learn_rows(table_T, labels, order)
        t = log_grid(trace.size)
        stats = {"T": int(trace.size), "H": int(table.shape[0]), "m_star": int(self.best_expert(table, y).min())}
        return Outcome(quantities={"mistakes": int(trace.sum())},
                       curves={"mistakes": (t, np.cumsum(trace, dtype=np.int64)[t - 1])},
                       trace={"mistake": trace}, stats=stats, run=HalvingRun(class_table=table))


class WeightedMajority(_Experts):
    """Weighted Majority over a finite class of experts (Littlestone & Warmuth 1994; UML Thm 21.11;
    docs/bounds.md section 3), for streams no expert gets entirely right.

    Every expert starts with weight 1; a wrong expert's weight is multiplied by a factor.

    - Deterministic (``randomized=false``): the factor is ``beta`` in [0, 1) and the prediction is the
      weighted majority, a tie going to +1. On a mistake at least half the weight was wrong, so the
      total shrinks by (1 + beta)/2, while the best expert keeps beta^m*: M <= (ln|H| + m* ln(1/beta))
      / ln(2/(1+beta)) [LW94]. At beta = 0 the weights are the beta -> 0 limit of the normalised ones
      (1 on the experts with the fewest mistakes so far): Halving while some expert is perfect.
    - Randomised (``randomized=true``): the factor is exp(-eta), eta = sqrt(2 ln|H| / T) for the
      stream's length T (fixed horizon), and the prediction is expert i's with probability p_t,i =
      w_t,i / sum w_t. Nothing is sampled: the learner reports the exact expected number of mistakes
      sum_t <p_t, v_t>, v_t,i = 1 where expert i errs, computed from the weights. UML Thm 21.11: if
      T > 2 ln|H|, sum_t <p_t, v_t> - m* <= sqrt(2 ln|H| T).

    Weights are kept as integer losses relative to the leader (log-weights, renormalised every step),
    so long streams never underflow. The class is as for :class:`Halving`, |H| its distinct functions.

    Parameters
    ----------
    beta : the factor of the deterministic version, in [0, 1).
    randomized : false: deterministic weighted majority; true: randomised, eta = sqrt(2 ln|H|/T).
    experts : random directions added to the known ones when the data has no hypothesis table.

    Attributes
    ----------
    losses_ : each distinct expert's mistakes on the stream.
    mistakes_ : the deterministic version's mistakes, or the randomised version's expected mistakes.

    Examples
    --------
    >>> from pipeline.data.finite import FiniteClass
    >>> ds = FiniteClass(cls="intervals", size=40, n=2000, flip=0.05).sample(np.random.default_rng(0))
    >>> wm = WeightedMajority(beta=0.5)
    >>> out = wm.run(ds, np.random.default_rng(0))
    >>> wm.mistakes_, out.stats["m_star"]  # the weighted majority's mistakes, the best expert's
    (121, 114)
    """

    name = "weighted_majority"
    # the declared parameters as an instance holds them, for a type checker (tests/test_types.py: they agree)
    beta: float
    randomized: bool
    experts: int
    params = (
        Param("beta", float, lambda v: 0 <= v < 1, "a number in [0, 1)", default=0.5),
        Param("randomized", bool, lambda v: True, "true or false (randomised predictions, eta = sqrt(2 ln|H|/T))",
              default=False),
        Param("experts", int, lambda v: 0 <= v <= 100_000, "an integer in [0, 100000]", default=100),
    )

    def log_factor(self, H: int, T: int) -> float:
        """ln of the factor a wrong expert's weight is multiplied by: ln beta, or -eta."""
        if self.randomized:
            return -math.sqrt(2.0 * math.log(H) / T) if H > 1 and T > 0 else 0.0
        return math.log(self.beta) if self.beta > 0 else -math.inf

    def learn_table(self, table: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Run over a table of distinct functions; return the deterministic mistakes (1 where step t
        erred) and the randomised mistake probabilities <p_t, v_t>."""
        self.check()
        table = np.asarray(table, dtype=np.int8)
        H, T = table.shape
        self.losses_ = np.zeros(H, dtype=np.int64)
        mistakes, probs = np.zeros(T, dtype=np.int8), np.zeros(T)
        weighted_majority_kernel(np.ascontiguousarray(table.T), _labels(y), self.log_factor(H, T), self.losses_,
                                 mistakes, probs)
        # fsum: the expected count is correctly rounded, whatever T
        self.mistakes_ = math.fsum(probs) if self.randomized else int(mistakes.sum())
        return mistakes, probs

    def run(self, dataset: Sample, rng: np.random.Generator) -> Outcome:
        """One pass over the dataset in its order (randomness only draws the random directions)."""
        self.check()
        table = self.table(dataset, rng)
        H, T = table.shape
        mistakes, probs = self.learn_table(table, dataset.y)
        m_star = int(self.losses_.min())
        t = log_grid(T)
        if self.randomized:
            curve = np.cumsum(probs)[t - 1]
            trace = {"mistake_probability": probs}
            regret = math.fsum([*probs, -m_star])
        else:
            curve = np.cumsum(mistakes, dtype=np.int64)[t - 1]
            trace = {"mistake": mistakes}
            regret = self.mistakes_ - m_star
        stats = {"T": int(T), "H": int(H), "m_star": m_star, "beta": float(self.beta), "randomized": bool(self.randomized)}
        return Outcome(quantities={"mistakes": self.mistakes_, "regret": regret},
                       curves={"mistakes": (t, curve), "regret": (t, curve - self.running_best(table, dataset.y, t))},
                       trace=trace, stats=stats)
