"""The Perceptron (Rosenblatt 1958), as in the seeds: [S0] Alg. 1, [S1] slide 5, [S2]; docs/bounds.md section 1."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import cast

import numpy as np

from pipeline._jit import dot, dot_row, kernel
from pipeline.data.dataset import BINARY, Matrix, Sample, Source, StreamSample
from pipeline.contract import PresentedRun
from pipeline.learners.base import Learner, Outcome, log_grid
from pipeline.learners.orderings import ORDERINGS, TIES, choose, greedy_order
from pipeline.params import Param, ParamError, at_least

PERCEPTRON_ORDERINGS = (*ORDERINGS, "adaptive", "exact")  # the online Perceptron's; the batch rule's are ORDERINGS
ADAPTIVE_BUDGET = 200  # ordering=adaptive: rollouts after greedy (docs/bounds.md section 1, "Orderings")
ADAPTIVE_UPDATES = 100  # ordering=adaptive without certified statistics (fit): at most this many updates per example

@kernel
def perceptron_kernel(X: np.ndarray, y: np.ndarray, w: np.ndarray, tie: int, passes: int, mistakes: np.ndarray) -> int:
    """Run ``passes`` passes of the Perceptron over (X, y), updating ``w`` in place.

    ``mistakes[t]`` is set to 1 on every update (a mistake) at step t. Returns the number of updates.
    The dot product is :func:`pipeline._jit.dot_row`: four accumulators in a fixed order, the same in
    the plain reference, so results are bit-identical (no reassociation by the compiler).
    """
    n, d = X.shape
    t = 0
    updates = 0
    for _ in range(passes):
        for i in range(n):
            s = dot_row(w, X, i)
            yi = y[i]
            if tie == 2:
                update = yi * s <= 0.0
            else:
                predicted = 1.0 if s > 0.0 or (s == 0.0 and tie == 1) else -1.0
                update = predicted != yi
            if update:
                for j in range(d):
                    w[j] += yi * X[i, j]
                mistakes[t] = 1
                updates += 1
            t += 1
    return updates


@kernel
def perceptron_sparse_kernel(indptr: np.ndarray, indices: np.ndarray, data: np.ndarray, y: np.ndarray, w: np.ndarray,
                             tie: int, passes: int, mistakes: np.ndarray) -> int:
    """:func:`perceptron_kernel` over CSR rows: cost per step proportional to the row's non-zeros.
    Sums run left to right over the stored entries in index order (a row has few of them): the same
    mistakes as the dense kernel whenever the sums are exact (integer data, tested); otherwise the two
    orders may differ in the last bit of w.x."""
    n = indptr.shape[0] - 1
    t = 0
    updates = 0
    for _ in range(passes):
        for i in range(n):
            s = 0.0
            for k in range(indptr[i], indptr[i + 1]):
                s += w[indices[k]] * data[k]
            if tie == 2:
                update = y[i] * s <= 0.0
            else:
                predicted = 1.0 if s > 0.0 or (s == 0.0 and tie == 1) else -1.0
                update = predicted != y[i]
            if update:
                for k in range(indptr[i], indptr[i + 1]):
                    w[indices[k]] += y[i] * data[k]
                mistakes[t] = 1
                updates += 1
            t += 1
    return updates


@kernel
def dot_kernel(w: np.ndarray, x: np.ndarray) -> float:
    """w.x summed in the same order as :func:`perceptron_kernel`."""
    s: float = dot(w, x)
    return s


class Perceptron(Learner):
    """The Perceptron: w_1 = 0; on a mistake w_{t+1} = w_t + y_t x_t, otherwise w_{t+1} = w_t.

    Mistake bound (Novikoff 1962; [S2] Thm 2; [S1] slide 6): if ||x_t|| <= R and some unit w* has
    y_t w*.x_t >= gamma > 0 for all t, the number of updates is at most floor((R/gamma)^2), for any
    order, any T and any number of passes.

    Parameters
    ----------
    tie : how w.x = 0 is treated: "negative" (sgn(0) = -1, [S0], the default), "positive"
        (sgn(0) = +1, [S2]) or "mistake" (update iff y w.x <= 0, [S1] and UML 21.4).
    passes : passes over the stream made by :meth:`learn_stream`.
    ordering : the order :meth:`run` presents the sample in, every pass: "given" (the default), "random"
        (a permutation drawn from the algorithm's stream) or "adversarial" (a search for the order with the
        most mistakes, :mod:`pipeline.learners.orderings`); the bounds hold for every order. Or "adaptive":
        not an order but a sequence of the sample's examples with repetition, each step the one an
        adversary picks among those the current w gets wrong, until none is left
        (:func:`pipeline.learners.adaptive.adaptive`), then the sample once as given (no mistake there);
        Novikoff's bound holds for every such sequence. Or "exact": the certified worst case of Novikoff's
        whole class at the data's certified radius R and margin gamma_lo, in any dimension
        (:meth:`present`, docs/bounds.md section 1, "The exact worst case"): the run presents that class's
        worst instance in its certified order instead of the sample, and makes exactly its M* mistakes.

    Attributes
    ----------
    w_ : weight vector.
    t_ : number of examples seen.
    mistakes_ : number of updates made.

    Examples
    --------
    >>> import numpy as np
    >>> from pipeline.data import MarginBinary
    >>> ds = MarginBinary(gamma=0.2, rho=1.0, n=2000, d=10).generate(np.random.default_rng(1))
    >>> p = Perceptron()
    >>> trace = p.learn_stream(ds.X, ds.y)
    >>> p.mistakes_, int((ds.stats.R / ds.stats.gamma_lo) ** 2)  # mistakes, Novikoff's bound
    (9, 25)
    """

    name = "perceptron"
    accepts = BINARY | {"stream"}  # streamed data too: read chunk by chunk (dataset.chunks()), never materialised
    # the declared parameters as an instance holds them, for a type checker (tests/test_types.py: they agree)
    tie: str
    passes: int
    ordering: str
    params = (
        Param("tie", str, lambda v: v in TIES, f"one of {', '.join(TIES)}", default="negative"),
        Param("passes", int, at_least(1), default=1),
        Param("ordering", str, lambda v: v in PERCEPTRON_ORDERINGS, f"one of {', '.join(PERCEPTRON_ORDERINGS)}",
              default="given"),
    )

    def check_data(self, dataset: Sample | StreamSample) -> None:
        """A stream is read in its order: only ``ordering=given``."""
        if dataset.kind == "stream" and self.ordering != "given":
            raise ParamError("algorithm.ordering", self.ordering,
                             "given on dataset=stream (a stream is read in its order, never held whole to reorder)")

    def present(self, dataset: Sample) -> Sample:
        """``ordering=exact``: not the sample but the certified worst instance of Novikoff's class at the sample's
        certified R and gamma_lo (:class:`pipeline.data.worst_case.WorstCase`, its first label the one this
        tie rule gets wrong at w = 0), under the sample's name; its rows carry the certificate (``worst_case``,
        ``certificate_gap``, ...) and ``presented`` = "worst_case". Every other ordering presents the sample."""
        if self.ordering != "exact":
            return dataset
        from dataclasses import replace

        from pipeline.data.worst_case import MAX_ROWS, WorstCase

        stats = dataset.stats
        if not (stats.separable and stats.gamma_lo > 0):
            raise ParamError("algorithm.ordering", self.ordering, "given, random, adversarial or adaptive on data not "
                             "certified separable (exact presents the worst case of the class of radius R and "
                             "margin gamma_lo, which needs a certified margin gamma_lo > 0)")
        R, gamma = float(stats.R), float(stats.gamma_lo)
        worst = WorstCase(gamma=gamma, rho=R, label=-1 if self.tie == "positive" else 1)
        try:
            worst.check()
        except ParamError:
            raise ParamError("algorithm.ordering", self.ordering,
                             f"given, random, adversarial or adaptive here: the worst instance at this sample's "
                             f"(R/gamma_lo)^2 = {(R / gamma) ** 2:.4g} would have as many rows, at most {MAX_ROWS}") from None
        inst = worst.generate(np.random.default_rng(0))  # deterministic by construction
        return replace(inst, name=dataset.name, extra=dict(dataset.extra) | inst.extra | {"presented": "worst_case"})

    def _adaptive(self, X: Matrix, y: np.ndarray, rng: np.random.Generator, max_updates: int | None = None,
                  bound: int | None = None) -> np.ndarray:
        """The adaptive adversary's sequence (row indices, with repetition) on the sample: greedy, then
        :data:`ADAPTIVE_BUDGET` randomised rollouts drawn from ``rng`` (:mod:`pipeline.learners.adaptive`), then
        the sample once as given. A rollout longer than ``max_updates`` (default :data:`ADAPTIVE_UPDATES` per
        example: a sample the game never ends on is not separable) is a ValueError naming it. ``bound``: Novikoff's
        bound on the sample, from which the search's cost is estimated (and refused when out of reach) up front."""
        from scipy import sparse

        from pipeline.learners.adaptive import adaptive

        if sparse.issparse(X):
            raise ParamError("algorithm.ordering", self.ordering, "given, random or adversarial on sparse data "
                             "(the adaptive adversary scores dense rows)")
        cap = ADAPTIVE_UPDATES * int(X.shape[0]) if max_updates is None else int(max_updates)
        self.adversary_ = adaptive(X, y, budget=ADAPTIVE_BUDGET, rng=rng, tie=self.tie, max_updates=cap, bound=bound)
        sequence = self.adversary_.sequence
        # then one pass over the sample as given, where the converged w errs nowhere: the run shows the adversary
        # done, and its rounds T are more than its mistakes (the trivial value; a learner that never learns
        # would err on every round the adversary chose to play)
        return np.concatenate([sequence, np.arange(X.shape[0], dtype=sequence.dtype)])

    def order(self, X: Matrix, y: np.ndarray, rng: np.random.Generator) -> np.ndarray | None:
        """The permutation of the rows the run presents (every pass), or None for the given order:
        ``random`` a uniform permutation drawn from ``rng``; ``adversarial`` the search of
        :mod:`pipeline.learners.orderings` over this learner's own runs, started from the given order, that
        same random draw and the greedy order (so it never has fewer mistakes than either); ``adaptive`` the
        adaptive adversary's sequence, rows with repetition (:meth:`_adaptive`). ``exact`` has no order of a
        sample: it replaces the sample by its class's worst instance (:meth:`present`), a run's only."""
        if self.ordering == "exact":
            raise ParamError("ordering", self.ordering, "given, random, adversarial or adaptive to fit a sample (exact "
                             "presents the worst instance of the sample's class instead of the sample: a boundlab run's)")
        if self.ordering == "adaptive":
            return self._adaptive(X, y, rng)
        fresh = {k: v for k, v in self.get_params().items() if k != "ordering"}

        def mistakes(order: np.ndarray) -> int:
            learner = type(self)(**fresh)
            learner.learn_stream(X[order], y[order])
            return learner.mistakes_

        return choose(self.ordering, X.shape[0], rng, mistakes, lambda: greedy_order(X, y, self.tie))

    def check_with(self, dataset: Source) -> None:
        """The trace of passes x n steps (int8, the concatenated passes, the mistakes' int64 positions) fits."""
        from pipeline.learners.base import planned_shape
        from pipeline.params import check_memory

        n, d = planned_shape(dataset)
        if n is not None:
            check_memory("passes", self.passes, 10.0 * int(self.passes) * n + 8.0 * (d or 0),
                         "lower passes or n (the run keeps a per-step trace of passes x n steps)", "the run's trace")

    def _start(self, d: int) -> None:
        if not hasattr(self, "w_"):
            self.check()
            self.w_ = np.zeros(d)
            self.t_ = 0
            self.mistakes_ = 0
        elif self.w_.shape[0] != d:
            raise ValueError(f"x has {d} features, the learner was started with {self.w_.shape[0]}")

    def predict_one(self, x: np.ndarray) -> int:
        """The label the learner predicts for ``x`` (+1 or -1; before any learning w = 0)."""
        x = np.ascontiguousarray(x, dtype=np.float64)
        w = self.w_ if hasattr(self, "w_") else np.zeros(x.shape[0])
        s = dot_kernel(w, x)
        return 1 if s > 0.0 or (s == 0.0 and self.tie == "positive") else -1

    def learn_one(self, x: np.ndarray, y: float) -> bool:
        """Learn from one example; return True if it was a mistake (an update)."""
        x = np.ascontiguousarray(x, dtype=np.float64)
        self._start(x.shape[0])
        flag = np.zeros(1, dtype=np.int8)
        perceptron_kernel(x[None, :], np.array([float(y)]), self.w_, TIES[self.tie], 1, flag)
        self.t_ += 1
        self.mistakes_ += int(flag[0])
        return bool(flag[0])

    def learn_stream(self, X: np.ndarray, y: np.ndarray) -> np.ndarray:
        """Make ``passes`` passes over (X, y) in order; return the trace: 1 where step t was a mistake.
        ``X`` may be a scipy sparse matrix: it is read as CSR, never densified."""
        self._start(X.shape[1])
        trace = np.zeros(self.passes * X.shape[0], dtype=np.int8)
        self.mistakes_ += self._passes_over(X, y)(self.passes, trace)
        self.t_ += trace.shape[0]
        return trace

    def _passes_over(self, X: Matrix, y: np.ndarray) -> Callable[[int, np.ndarray], int]:
        """``run(passes, trace) -> updates``: that many passes of the compiled kernel over (X, y) from the
        current w, dense rows or CSR (read as such, never densified): the Perceptron's training core, which
        :meth:`learn_stream` and :meth:`learn_chunks` advance (:meth:`learn_one` calls the dense kernel on its
        one row directly: a closure per example would cost more than the step)."""
        from scipy import sparse

        y = np.ascontiguousarray(y, dtype=np.float64)
        tie = TIES[self.tie]
        if sparse.issparse(X):
            X = sparse.csr_matrix(X, dtype=np.float64)
            X.sort_indices()
            return lambda passes, trace: perceptron_sparse_kernel(X.indptr, X.indices, X.data, y, self.w_, tie,
                                                                  passes, trace)
        X = np.ascontiguousarray(X, dtype=np.float64)
        return lambda passes, trace: perceptron_kernel(X, y, self.w_, tie, passes, trace)

    def learn_chunks(self, chunks: Iterator[tuple[np.ndarray, np.ndarray]], n: int) -> np.ndarray:
        """One pass over a stream of ``n`` examples given as (X, y) chunks, the state carried across
        chunks: the same trace and weights as :meth:`learn_stream` on the concatenated chunks."""
        trace = np.zeros(n, dtype=np.int8)
        t = 0
        for X, y in chunks:
            X = np.ascontiguousarray(X, dtype=np.float64)
            self._start(X.shape[1])
            rows = X.shape[0]
            self.mistakes_ += self._passes_over(X, y)(1, trace[t:t + rows])
            t += rows
        if t != n:
            raise ValueError(f"the stream had {t} examples, {n} were announced")
        self.t_ += n
        return trace

    def run(self, dataset: Sample | StreamSample, rng: np.random.Generator) -> Outcome:
        """``passes`` passes over the dataset in its order (the Perceptron draws no randomness)."""
        if dataset.kind == "stream":  # each pass regenerates the stream, chunk by chunk
            stream = cast(StreamSample, dataset)
            parts = [self.learn_chunks(stream.chunks(), stream.n) for _ in range(self.passes)]
            trace = parts[0] if len(parts) == 1 else np.concatenate(parts)
            return self._outcome(trace)
        dataset = cast(Sample, dataset)
        if self.ordering == "adaptive":
            X, y = dataset.X, np.asarray(dataset.y)
            stats = dataset.stats
            if not (stats.separable and stats.gamma_lo > 0):  # the game ends only when nothing is misclassified
                raise ParamError("algorithm.ordering", self.ordering, "given, random or adversarial on data not "
                                 "certified separable (the adaptive adversary plays until nothing is misclassified)")
            # Novikoff's bound caps every rollout; twice it, so a learner that broke the bound would show it
            bound = int((stats.R / stats.gamma_lo) ** 2)
            order = self._adaptive(X, y, rng, max_updates=2 * bound + 2, bound=bound)
            trace = self.learn_stream(X[order], y[order])
            out = self._outcome(trace)
            # the row each round presented, for the statistics summed over rounds (the comparators' hinge losses)
            out.run = PresentedRun(presented=np.tile(order, int(self.passes)))
            # the search's convergence: greedy's mistakes, and the rollout that found the best (0: greedy)
            play = self.adversary_
            out.stats |= {"adversary_greedy": int(play.greedy), "adversary_budget": ADAPTIVE_BUDGET,
                          "adversary_best_at": int(np.argmax(play.trace == play.value))}
            return out
        else:
            X, y = dataset.X, np.asarray(dataset.y)
            # exact: the data are already the class's worst instance (present), its rows in the certified order
            given = None if self.ordering == "exact" else self.order(X, y, rng)
            trace = self.learn_stream(*((X, y) if given is None else (X[given], y[given])))
        return self._outcome(trace)

    def _outcome(self, trace: np.ndarray) -> Outcome:
        t = log_grid(trace.size)
        curves = {q: (t, v) for q, v in self.curve(trace, t).items()}
        return Outcome(quantities=self.quantities(trace), curves=curves, trace={"mistake": trace},
                       stats={"T": int(trace.size)})

    @staticmethod
    def quantities(trace: np.ndarray) -> dict[str, float]:
        """The empirical quantities the bounds of this learner are compared with."""
        return {"mistakes": int(trace.sum())}

    @staticmethod
    def curve(trace: np.ndarray, t: np.ndarray) -> dict[str, np.ndarray]:
        """Each quantity after steps ``t`` (1-based): the cumulative number of mistakes (counted from the
        mistakes' positions: memory in the number of mistakes, not in the length of the trace)."""
        return {"mistakes": np.searchsorted(np.flatnonzero(trace), t, side="left").astype(np.int64)}


class BatchPerceptron(Perceptron):
    """The batch Perceptron of [S1] (slides 2-3): passes over the sample in its order, updating on each
    mistake, until a pass makes none (every example classified correctly), at most ``passes`` passes.

    Its total updates M are those of the Perceptron on the concatenated passes, so Novikoff's bound
    M <= floor((R/gamma)^2) holds for them ([S1] slide 6; docs/bounds.md section 1: any order, any number
    of passes). Every pass before the last makes an update, so the passes made are at most M + 1 (the
    last one clean) when it converges, and M when it stops at the limit: passes <= floor((R/gamma)^2) + 1
    either way on separable data (docs/bounds.md section 1, the batch form).

    Parameters
    ----------
    tie : as :class:`Perceptron`.
    passes : the pass limit: it stops there, clean pass or not.
    ordering : as :class:`Perceptron` (one permutation for every pass), but for "adaptive": the adaptive
        adversary's sequence is this rule's worst case (any misclassified example until none is left), run
        with ``algorithm=perceptron algorithm.ordering=adaptive``.

    Attributes
    ----------
    w_, t_, mistakes_ : as :class:`Perceptron` (``t_`` counts the steps of the passes made).
    passes_ : passes made, the clean one included.
    converged_ : whether the last pass made no update.

    Examples
    --------
    >>> import numpy as np
    >>> from pipeline.data import MarginBinary
    >>> ds = MarginBinary(gamma=0.2, rho=1.0, n=200, d=10).generate(np.random.default_rng(1))
    >>> p = BatchPerceptron()
    >>> trace = p.learn_stream(ds.X, ds.y)
    >>> p.converged_, p.passes_, p.mistakes_, int((ds.stats.R / ds.stats.gamma_lo) ** 2)  # stopped after a clean pass
    (True, 2, 6, 25)
    """

    name = "batch_perceptron"
    accepts = BINARY  # the whole sample, pass after pass
    judged_as = ("perceptron",)  # the Perceptron's bounds speak about its updates too (pipeline.plugins)
    # the declared parameters as an instance holds them, for a type checker (tests/test_types.py: they agree)
    tie: str
    passes: int
    ordering: str
    params = (
        Perceptron.params[0],
        Param("passes", int, at_least(1).because("the pass limit"), default=1000),
        Param("ordering", str, lambda v: v in ORDERINGS,
              f"one of {', '.join(ORDERINGS)} (adaptive and exact are algorithm=perceptron's: the adaptive sequence "
              "already runs until nothing is misclassified, the batch rule's worst case)", default="given"),
    )

    def learn_stream(self, X: np.ndarray, y: np.ndarray) -> np.ndarray:
        """Passes over (X, y) in order until one makes no update, at most ``passes``; return the trace of
        the passes made (1 where step t was an update). ``X`` may be a scipy sparse matrix (read as CSR)."""
        self._start(X.shape[1])
        n, one_pass = X.shape[0], self._passes_over(X, y)
        parts, self.converged_ = [], False
        for _ in range(self.passes):
            part = np.zeros(n, dtype=np.int8)
            updates = one_pass(1, part)
            self.mistakes_ += updates
            parts.append(part)
            if updates == 0:
                self.converged_ = True
                break
        self.passes_ = len(parts)
        trace = np.concatenate(parts) if parts else np.zeros(0, dtype=np.int8)
        self.t_ += trace.shape[0]
        return trace

    def run(self, dataset: Sample | StreamSample, rng: np.random.Generator) -> Outcome:
        """Passes over the dataset (in ``ordering``) until a clean pass (the learner draws no randomness
        but the ordering's): the Perceptron's run over this :meth:`learn_stream`, with the passes made."""
        out = super().run(dataset, rng)
        out.quantities["passes_made"] = self.passes_
        out.stats |= {"pass_limit": int(self.passes), "converged": bool(self.converged_)}
        return out
