"""Finite hypothesis classes as prediction tables, with random and bisecting streams (docs/bounds.md section 3).

A finite class is handed to the learners as its prediction table on the presented sample: an
|H| x m array of +1/-1 (:attr:`pipeline.data.Dataset.hypotheses`). The learners count |H| as the
number of *distinct* functions on the sample (:func:`distinct_rows`), so duplicated hypotheses never
inflate the bounds.
"""

from __future__ import annotations

import math

import numpy as np

from pipeline.data.certify import certify_sample
from pipeline.data.dataset import Dataset, Source, sample_bytes
from pipeline.params import NOISE, Param, ParamError, at_least, check_memory, check_params

CLASSES = ("thresholds", "intervals", "conjunctions", "linear")
ADVERSARIES = ("random", "bisect")
# The prediction table |H| x n is materialised (int8): at most this many entries (50 MB).
MAX_ENTRIES = 50_000_000
# ``size`` when left null: N grid points, N grid points, n variables, K directions.
DEFAULT_SIZE = {"thresholds": 1000, "intervals": 100, "conjunctions": 8, "linear": 360}


def class_size(cls: str, size: int) -> int:
    """|H| of the whole class: N + 1 thresholds, N(N+1)/2 + 1 intervals (the empty one included),
    3^n + 1 conjunctions (each variable positive, negated or absent, plus the constant false), K
    directions."""
    return {"thresholds": size + 1, "intervals": size * (size + 1) // 2 + 1, "conjunctions": 3**size + 1,
            "linear": size}[cls]


def distinct_rows(table: np.ndarray) -> np.ndarray:
    """Indices of the first occurrence of each distinct row of a +1/-1 table, in increasing order.

    Rows are compared through their packed bits (one hash-sortable byte string per row).
    """
    table = np.asarray(table)
    if table.shape[0] == 0:
        return np.zeros(0, dtype=np.int64)
    packed = np.ascontiguousarray(np.packbits(table > 0, axis=1))
    keys = packed.view(np.dtype((np.void, max(packed.shape[1], 1)))).ravel() if packed.shape[1] else np.zeros(len(table))
    _, first = np.unique(keys, return_index=True)
    return np.sort(first).astype(np.int64)


def majority(column: np.ndarray) -> int:
    """The Halving vote on one column of a version space: the majority label, a tie going to +1."""
    plus = int((column > 0).sum())
    return 1 if 2 * plus >= column.shape[0] else -1


class FiniteClass(Source):
    """A stream labelled by a finite class, with the class's prediction table on the sample.

    Classes (``cls``; ``size`` is N, N, n or K):

    - thresholds on the grid {0..N-1}: h_theta(i) = +1 iff i >= theta, theta in {0..N}; |H| = N + 1.
    - intervals on {0..N-1}: +1 iff a <= i <= b, 0 <= a <= b < N, plus the empty interval;
      |H| = N(N+1)/2 + 1.
    - conjunctions of literals over n Boolean variables, plus the constant false; |H| = 3^n + 1.
    - linear: sign(w_j.x) (sign(0) = +1) for K directions w_j at angles 2 pi j/K in R^2, on points drawn
      uniformly on the unit circle (in general position almost surely).

    ``X`` holds the features of each domain point under which every hypothesis of the class is a
    homogeneous linear separator with non-zero margins: (s, 1) for thresholds and (s, s^2, 1) for
    intervals, with s = (i + 1/2)/N; (x_1..x_n, 1) for conjunctions; the point itself for linear. So
    the Perceptron runs on the same stream, and its statistics are certified (LP, hard-margin QP) on
    exactly these vectors; ``directions`` holds the target's separator.

    Adversaries:

    - random: i.i.d. uniform domain points (uniform angles for linear), labelled by a target drawn
      uniformly from the class.
    - bisect: the presented points P are the whole domain when n covers it, else n distinct random
      points (n random angles for linear). Starting from V = the distinct functions of the class on P,
      each step queries the unpresented point of P that splits V most evenly and labels it against the
      Halving vote of V (:func:`majority`, ties to +1), so Halving errs; V keeps the hypotheses that
      agree, at least one, so the stream stays realisable. When no point splits V, the survivor labels
      the rest of P in random order, then repeats drawn from P fill the stream to n. Halving then makes
      exactly one mistake per query and V keeps floor(|V|/2) hypotheses at best: against thresholds on
      N <= n points that is exactly floor(log2(N+1)) mistakes, the bound. For conjunctions the bound
      need not be attained: the minimax number of mistakes is the Littlestone dimension, which can be
      below floor(log2 |H|) (docs/bounds.md section 3: for n = 8 the greedy adversary forces 9, the bound is 12).

    ``flip`` flips each label independently (the last random draw): the stream is then usually not
    realisable, the case of Weighted Majority.

    Parameters
    ----------
    cls : the class, one of thresholds, intervals, conjunctions, linear.
    size : N, N, n or K; null picks the class's default (1000, 100, 8, 360). The table has |H| x n
        entries, at most 5e7: with n = 1000 that allows N <= 49999 thresholds, N <= 315 intervals,
        n <= 9 variables, K <= 50000 directions.
    n : stream length.
    adversary : random or bisect.
    flip : label-noise probability.

    Examples
    --------
    >>> ds = FiniteClass(cls="thresholds", size=100, n=300, adversary="bisect").sample(np.random.default_rng(0))
    >>> ds.hypotheses.shape, len(distinct_rows(ds.hypotheses)), int(math.log2(101))
    ((101, 300), 101, 6)
    """

    name = "finite_class"
    kind = "finite"
    params = (
        Param("cls", str, lambda v: v in CLASSES, f"one of {', '.join(CLASSES)}", default="thresholds"),
        Param("size", int, lambda v: v >= 1, "an integer >= 1 (or null for the class's default)", nullable=True,
              default=None),
        Param("n", int, at_least(1), default=1000),
        Param("adversary", str, lambda v: v in ADVERSARIES, f"one of {', '.join(ADVERSARIES)}", default="random"),
        Param("flip", float, NOISE, default=0.0),
    )

    def check(self) -> None:
        """Raise :class:`ParamError` on an invalid parameter, or a class too large to tabulate."""
        check_params(self)
        size, n = self._size(), int(self.n)
        if class_size(self.cls, size) * n > MAX_ENTRIES:
            if 2 * n > MAX_ENTRIES:
                raise ParamError("n", n,
                                 f"at most {MAX_ENTRIES // 2} (the table |H| x n holds at most {MAX_ENTRIES:.0e} entries)")
            most = 1
            while class_size(self.cls, most + 1) * n <= MAX_ENTRIES:
                most += 1
            raise ParamError("size", self.size, f"at most {most} for cls={self.cls} with n={n} (|H| = "
                             f"{class_size(self.cls, size):,} is too large to tabulate: |H| x n <= {MAX_ENTRIES:.0e} entries)")
        H = float(class_size(self.cls, size))
        width = {"thresholds": 1, "intervals": 2, "conjunctions": size + 2, "linear": 1}[self.cls]
        features = {"thresholds": 2, "intervals": 3, "conjunctions": size + 1, "linear": 2}[self.cls]
        # the class's parameters (int64, with their temporaries), the table (bool, int64 and int8 copies,
        # the bisecting adversary's sub-tables) and the certified features
        need = 3.0 * 8 * H * width + 24.0 * H * n + sample_bytes(n, features)
        name = "n" if n * 24.0 >= 3.0 * 8 * width else "size"
        check_memory(name, getattr(self, name), need, "lower size or n")

    def _size(self) -> int:
        return int(DEFAULT_SIZE[self.cls] if self.size is None else self.size)

    # --- the class: domain, features, table, separators --------------------------------------------

    def _domain(self, rng: np.random.Generator, count: int) -> np.ndarray:
        """``count`` domain points (grid indices, bit masks, or angles for linear)."""
        size = self._size()
        if self.cls == "linear":
            return rng.uniform(0.0, 2 * math.pi, count)
        return rng.integers(0, 2**size if self.cls == "conjunctions" else size, count)

    def _domain_size(self) -> float:
        size = self._size()
        return math.inf if self.cls == "linear" else 2**size if self.cls == "conjunctions" else size

    def _all_points(self) -> np.ndarray:
        return np.arange(2**self._size() if self.cls == "conjunctions" else self._size())

    def _hypotheses(self) -> np.ndarray:
        """The class's parameters, one row per hypothesis."""
        size = self._size()
        if self.cls == "thresholds":
            return np.arange(size + 1)[:, None]
        if self.cls == "intervals":
            a, b = np.triu_indices(size)
            return np.vstack([np.stack([a, b], axis=1), [[1, 0]]])  # [1, 0]: the empty interval
        if self.cls == "conjunctions":
            digits = (np.arange(3**size)[:, None] // 3 ** np.arange(size)) % 3  # 0 absent, 1 x_j, 2 not x_j
            weights = 1 << np.arange(size)
            pos, neg = (digits == 1) @ weights, (digits == 2) @ weights
            return np.vstack([np.stack([pos, neg], axis=1), [[1, 1]]])  # x_0 and not x_0: the constant false
        return np.arange(size)[:, None]

    def _table(self, hyp: np.ndarray, points: np.ndarray) -> np.ndarray:
        """Predictions (int8, +1/-1) of each hypothesis on each point."""
        if self.cls == "thresholds":
            plus = points[None, :] >= hyp[:, :1]
        elif self.cls == "intervals":
            plus = (hyp[:, :1] <= points[None, :]) & (points[None, :] <= hyp[:, 1:])
        elif self.cls == "conjunctions":
            pos, neg = hyp[:, :1], hyp[:, 1:]
            plus = ((points[None, :] & pos) == pos) & ((points[None, :] & neg) == 0)
        else:
            plus = self._features(points) @ self._separator(hyp).T >= 0.0
            plus = plus.T
        return np.where(plus, 1, -1).astype(np.int8)

    def _features(self, points: np.ndarray) -> np.ndarray:
        size = self._size()
        if self.cls == "linear":
            return np.stack([np.cos(points), np.sin(points)], axis=1)
        if self.cls == "conjunctions":
            bits = ((points[:, None] >> np.arange(size)) & 1).astype(np.float64)
            return np.hstack([bits, np.ones((len(points), 1))])
        s = (points + 0.5) / size
        columns = [s, np.ones_like(s)] if self.cls == "thresholds" else [s, s**2, np.ones_like(s)]
        return np.stack(columns, axis=1)

    def _separator(self, hyp: np.ndarray) -> np.ndarray:
        """Directions w with sign(w.features(x)) = h(x) (non-zero margins on the domain)."""
        hyp = np.atleast_2d(hyp).astype(np.float64)
        N = float(self._size())
        if self.cls == "thresholds":  # (i + 1/2 - theta)/N
            return np.stack([np.ones(len(hyp)), -hyp[:, 0] / N], axis=1)
        if self.cls == "intervals":  # -(sN - a)(sN - b - 1); the empty interval: -1
            a, b = hyp[:, 0], hyp[:, 1]
            w = np.stack([N * (a + b + 1), -(N**2) * np.ones(len(hyp)), -a * (b + 1)], axis=1)
            return np.where((a > b)[:, None], [0.0, 0.0, -1.0], w)
        if self.cls == "conjunctions":  # sum_P x - sum_Q x - |P| + 1/2; the constant false: -1
            size = self._size()
            pos = (hyp[:, :1].astype(np.int64) >> np.arange(size)) & 1
            neg = (hyp[:, 1:].astype(np.int64) >> np.arange(size)) & 1
            w = np.hstack([pos - neg, 0.5 - pos.sum(axis=1, keepdims=True)]).astype(np.float64)
            return np.where(((pos & neg).any(axis=1))[:, None], np.r_[np.zeros(size), -1.0], w)
        angle = 2 * math.pi * hyp[:, 0] / N
        return np.stack([np.cos(angle), np.sin(angle)], axis=1)

    # --- streams -------------------------------------------------------------------------------------

    def sample(self, rng: np.random.Generator) -> Dataset:
        """The stream with its table and the target's separator, without certified statistics
        (``stats`` is None): what :meth:`generate` certifies."""
        self.check()
        n = int(self.n)
        hyp = self._hypotheses()
        if self.adversary == "random":
            points = self._domain(rng, n)
            table = self._table(hyp, points)
            target = int(rng.integers(len(hyp)))
            y = table[target].astype(np.float64)
        else:
            points, y, target, table = self._bisect(hyp, rng, n)
        if self.flip > 0:  # last draw: flips change labels only
            y = np.where(rng.random(n) < self.flip, -y, y)
        X = np.ascontiguousarray(self._features(points))
        return Dataset(self.name, X, y, None, directions={"h*": self._separator(hyp[target])[0]}, hypotheses=table)

    def _bisect(self, hyp: np.ndarray, rng: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray, int, np.ndarray]:
        if self._domain_size() <= n:
            P = self._all_points()
        elif self.cls == "linear":
            P = self._domain(rng, n)
        else:
            P = rng.choice(int(self._domain_size()), size=n, replace=False)
        full = self._table(hyp, P)  # |H| x |P|
        rows = distinct_rows(full)  # the version space is over distinct functions on P, as Halving's
        V = rows
        presented = np.zeros(len(P), dtype=bool)
        order = []
        while True:
            free = np.flatnonzero(~presented)
            if len(free) == 0 or len(V) <= 1:
                break
            sub = full[np.ix_(V, free)]
            plus = (sub > 0).sum(axis=0)
            split = np.minimum(plus, len(V) - plus)
            if split.max() == 0:
                break
            best = np.flatnonzero(split == split.max())
            j = free[best[int(rng.integers(len(best)))]]
            label = -majority(full[V, j])
            V = V[full[V, j] == label]
            presented[j] = True
            order.append(j)
        target = int(V[0])
        rest = rng.permutation(np.flatnonzero(~presented))
        extra = rng.integers(0, len(P), max(0, n - len(P)))
        idx = np.concatenate([np.array(order, dtype=np.int64), rest, extra])[:n]
        y = full[target, idx].astype(np.float64)  # the survivor agrees with every label the adversary chose
        return P[idx], y, target, np.ascontiguousarray(full[:, idx])

    def generate(self, rng: np.random.Generator) -> Dataset:
        ds = self.sample(rng)
        stats = certify_sample(ds.X, ds.y)  # LP separability and the hard-margin QP; NaN margins if not separable
        return Dataset(ds.name, ds.X, ds.y, stats, directions=ds.directions, hypotheses=ds.hypotheses)
