"""Synthetic binary data with exact margin and radius (docs/bounds.md section 9)."""

from __future__ import annotations

import math

import numpy as np

from pipeline.data.certify import certify, certify_sample
from pipeline.data.dataset import Dataset, Source, sample_bytes, size_param
from pipeline.params import (IN_SCALE, NOISE, RHO, Param, ParamError, above, at_least, check_margin_scale,
                             check_memory, check_params)

BLOCK_FLOATS = 1 << 20  # rows are moved into w*'s complement in blocks of about this many floats (8 MB)


def householder_direction(rng: np.random.Generator, d: int) -> tuple[np.ndarray, np.ndarray]:
    """A unit w* uniform on the sphere of R^d (d draws) and the unit vector v of the Householder reflection
    H = I - 2 v v^T that maps e_1 to +/-w*: H maps span(e_2..e_d) onto w*'s orthogonal complement, so
    H (0, u) for u uniform on the unit sphere of R^(d-1) is uniform on the unit sphere of that complement
    (the law of Q u for an orthonormal basis Q of it), in O(d) memory and time per row."""
    g = rng.standard_normal(d)
    w_star = g / np.linalg.norm(g)
    v = w_star.copy() if w_star[0] >= 0 else -w_star
    v[0] += 1.0  # |v_0| >= 1: no cancellation
    return w_star, v / np.linalg.norm(v)


def reflect_rows(Z: np.ndarray, v: np.ndarray, along: np.ndarray | None = None, w_star: np.ndarray | None = None) -> np.ndarray:
    """In place: each row z of Z (z_0 = 0) becomes H z = z - 2 (v.z) v, plus along_i w* when given; in
    blocks of rows, so that no temporary exceeds ~BLOCK_FLOATS floats."""
    rows = max(1, BLOCK_FLOATS // max(Z.shape[1], 1))
    for start in range(0, Z.shape[0], rows):
        block = Z[start:start + rows]
        block -= np.multiply.outer(2.0 * (block @ v), v)
        if along is not None:
            block += np.multiply.outer(along[start:start + rows], w_star)
    return Z


class MarginBinary(Source):
    """Binary data with exact best margin ``gamma`` and radius ``rho`` (docs/bounds.md section 9).

    Draw a unit w* and an orthonormal basis Q of its complement. Each point is
    x_i = y_i a_i w* + z_i with a_i log-uniform on [gamma, rho] (concentrated near gamma, the hard
    case) and z_i uniform in the (d-1)-ball of radius sqrt(rho^2 - a_i^2) in span(Q), so
    y_i w*.x_i = a_i >= gamma and ||x_i|| <= rho. The pinned pair x(+/-) = +/-gamma w* + z0 with
    ||z0|| = sqrt(rho^2 - gamma^2) makes the radius exactly rho and the best margin exactly gamma: for
    ||w|| <= 1, min_i y_i w.x_i <= (w.x+ - w.x-)/2 = gamma w.w* <= gamma. It also supplies the dual
    witness (alpha = 1 on the pair) of the certificate; w* is the primal witness.

    Parameters
    ----------
    gamma : margin, 0 < gamma <= rho.
    rho : radius.
    n : number of examples, the pinned pair included (n >= 2).
    d : dimension (d >= 2).
    pos_fraction : probability of the label +1 for the random points.
    flip : probability that a random point's label is flipped (symmetric label noise; w* stays the
        Bayes direction for flip < 1/2).
    violators : fraction of random points moved to a margin a in [-depth, gamma) (margin violators).
    depth : how far violators may cross the separator (0: they only fall inside the margin).

    With noise the pinned margin no longer holds: the statistics are then certified by solvers
    (:func:`pipeline.data.certify.certify_sample`: an LP for separability, the hard-margin QP).

    Examples
    --------
    >>> ds = MarginBinary(gamma=0.1, rho=1.0, n=500, d=5).generate(np.random.default_rng(0))
    >>> ds.X.shape, ds.stats.gap <= 1e-9, round(ds.stats.gamma_lo, 6), round(ds.stats.R, 6)
    ((500, 5), True, 0.1, 1.0)
    """

    name = "margin_binary"
    kind = "binary"
    params = (
        Param("gamma", float, above(0).because("and <= rho")),
        RHO,
        Param("n", int, at_least(2).because("the stream includes the pinned pair"), default=1000),
        Param("d", int, at_least(2), default=20),
        Param("pos_fraction", float, lambda v: 0 < v < 1, "a number in (0, 1)", default=0.5),
        Param("flip", float, NOISE, default=0.0),
        Param("violators", float, lambda v: 0 <= v <= 1, "a fraction in [0, 1]", default=0.0),
        Param("depth", float, lambda v: v >= 0, "a number >= 0", default=0.0),
    )

    def check(self) -> None:
        """Raise :class:`pipeline.params.ParamError` on an invalid parameter."""
        check_params(self)
        if self.gamma > self.rho:
            raise ParamError("gamma", self.gamma, f"<= rho = {self.rho} (no point of norm <= rho has a larger margin)")
        check_margin_scale(self.gamma, self.rho)
        n, d = int(self.n), int(self.d)
        noisy = self.flip > 0 or self.violators > 0
        need = sample_bytes(n, d, solvers=noisy) + (3.0 * 8 * d * d if d <= n else 0.0)
        check_memory(size_param(n, d), self.d if d > n else self.n, need, "lower n or d")

    def generate(self, rng: np.random.Generator) -> Dataset:
        self.check()
        gamma, rho, n, d = float(self.gamma), float(self.rho), int(self.n), int(self.d)
        # d <= n: a random rotation (QR of a d x d Gaussian), no larger than the sample (the original
        # construction: its output for a seed is unchanged). d > n: w* and a Householder reflection, O(n d)
        # memory; the same law (w* uniform on the sphere, the z_i uniform in balls of its complement).
        rotation = d <= n
        if rotation:
            basis, _ = np.linalg.qr(rng.standard_normal((d, d)))
            w_star, Q = basis[:, 0], basis[:, 1:]
        else:
            w_star, v = householder_direction(rng, d)

        k = n - 2
        y = np.where(rng.random(k) < self.pos_fraction, 1.0, -1.0)
        a = gamma * (rho / gamma) ** rng.random(k)
        if self.violators > 0:  # drawn only when asked: noiseless data stay identical
            moved = rng.random(k) < self.violators
            a[moved] = rng.uniform(-min(self.depth, rho), gamma, moved.sum())
        direction = rng.standard_normal((k, d - 1))
        direction /= np.linalg.norm(direction, axis=1, keepdims=True)
        r = np.sqrt(np.maximum(rho**2 - a**2, 0.0)) * rng.random(k) ** (1.0 / (d - 1))
        if rotation:
            X = (y * a)[:, None] * w_star + (r[:, None] * direction) @ Q.T
        else:
            X = np.zeros((k, d))
            X[:, 1:] = direction
            del direction
            X[:, 1:] *= r[:, None]
            reflect_rows(X, v, y * a, w_star)

        z0_dir = rng.standard_normal(d - 1)
        if rotation:
            z0 = Q @ (z0_dir / np.linalg.norm(z0_dir)) * math.sqrt(max(rho**2 - gamma**2, 0.0))
        else:
            z0 = np.zeros((1, d))
            z0[0, 1:] = z0_dir / np.linalg.norm(z0_dir)
            z0 = reflect_rows(z0, v)[0] * math.sqrt(max(rho**2 - gamma**2, 0.0))
        pair = np.stack([gamma * w_star + z0, -gamma * w_star + z0])
        at = np.sort(rng.choice(n, size=2, replace=False))
        X = np.insert(X, [at[0], at[1] - 1], pair, axis=0)
        y = np.insert(y, [at[0], at[1] - 1], [1.0, -1.0])

        if self.flip > 0:  # last draw: flips change labels only, never the points or their order
            flipped = rng.random(n) < self.flip
            flipped[at] = False
            y = np.where(flipped, -y, y)
        alpha = np.zeros(n)
        alpha[at] = 1.0
        X = np.ascontiguousarray(X)
        noisy = self.flip > 0 or self.violators > 0
        stats = certify_sample(X, y) if noisy else certify(X, y, w_star, alpha)
        return Dataset(self.name, X, y, stats, directions={"w*": w_star})


class SparseMargin(Source):
    """Bag-of-words-like sparse binary data with exact margin ``gamma`` and radius ``rho``.

    Two signal words carry the label: w* = (e_0 - e_1)/sqrt(2); a positive document has word 0 with
    weight sqrt(2) a_i, a negative one word 1, so y_i w*.x_i = a_i >= gamma (a_i log-uniform on
    [gamma, rho/sqrt(2)]). The other ``nnz - 1`` words are drawn Zipf-like from the remaining d - 2 and
    weighted so that ||x_i|| <= rho; they are orthogonal to w*. The pinned pair (sqrt(2) gamma e_0 + z0,
    sqrt(2) gamma e_1 + z0) with ||z0||^2 = rho^2 - 2 gamma^2 makes gamma* = gamma and R = rho exactly,
    as in :class:`MarginBinary`. All features are non-negative, as word weights are.
    """

    name = "sparse_margin"
    kind = "binary"
    params = (
        Param("gamma", float, above(0).because("and <= rho / sqrt(2)")),
        RHO,
        Param("n", int, at_least(2).because("the stream includes the pinned pair"), default=10_000),
        Param("d", int, at_least(3), default=100_000),
        Param("nnz", int, lambda v: v >= 2, "an integer >= 2 (non-zeros per row)", default=30),
        Param("zipf", float, lambda v: v > 1, "a number > 1 (word frequency exponent)", default=1.5),
    )

    def check(self) -> None:
        check_params(self)
        if self.gamma * math.sqrt(2) > self.rho:
            raise ParamError("gamma", self.gamma, f"<= rho / sqrt(2) = {self.rho / math.sqrt(2):g} (non-negative words)")
        check_margin_scale(self.gamma, self.rho)
        if self.nnz > self.d - 1:
            raise ParamError("nnz", self.nnz, f"<= d - 1 = {self.d - 1}")
        n, d, entries = int(self.n), int(self.d), float(self.n) * float(self.nnz)
        # rows, columns and values as Python lists (~120 B an entry), the COO and CSR copies, the solvers
        need = sample_bytes(n, d, entries=entries, copies=20) + 3.0 * 8 * d
        name = "d" if 8.0 * d > entries else "n"
        check_memory(name, getattr(self, name), need, "lower n, nnz or d")

    def _words(self, rng: np.random.Generator, count: int) -> tuple[np.ndarray, np.ndarray]:
        """``count`` distinct background words (indices >= 2) with positive weights of unit norm."""
        ranks = rng.zipf(self.zipf, size=4 * count + 8)
        words = np.unique((ranks - 1) % (self.d - 2) + 2)
        extra = np.setdiff1d(rng.choice(self.d - 2, size=min(self.d - 2, 2 * count), replace=False) + 2, words)
        words = np.concatenate([words, extra])[:count]
        weights = rng.random(words.size) + 0.5
        return np.sort(words), weights / np.linalg.norm(weights)

    def generate(self, rng: np.random.Generator) -> Dataset:
        self.check()
        from scipy import sparse

        gamma, rho, n = float(self.gamma), float(self.rho), int(self.n)
        k = n - 2
        y = np.where(rng.random(k) < 0.5, 1.0, -1.0)
        a = gamma * (rho / math.sqrt(2) / gamma) ** rng.random(k)  # sqrt(2) a <= rho
        rows, cols, vals = [], [], []
        pair_at = np.sort(rng.choice(n, size=2, replace=False))
        z0_words, z0_weights = self._words(rng, self.nnz - 1)
        z0 = math.sqrt(max(rho**2 - 2 * gamma**2, 0.0)) * z0_weights
        labels = np.empty(n)
        i_random = 0
        for i in range(n):
            if i in pair_at:
                sign = 1.0 if i == pair_at[0] else -1.0
                signal, words, weights = math.sqrt(2) * gamma, z0_words, z0
            else:
                sign, ai = y[i_random], a[i_random]
                i_random += 1
                signal = math.sqrt(2) * ai
                words, unit = self._words(rng, self.nnz - 1)
                room = max(rho**2 - 2 * ai**2, 0.0)
                weights = math.sqrt(room) * rng.random() ** (1.0 / self.nnz) * unit
            labels[i] = sign
            rows += [i] * (1 + words.size)
            cols += [0 if sign > 0 else 1, *words]
            vals += [signal, *weights]
        X = sparse.csr_matrix((vals, (rows, cols)), shape=(n, int(self.d)))
        X.sort_indices()
        w_star = np.zeros(int(self.d))
        w_star[0], w_star[1] = 1 / math.sqrt(2), -1 / math.sqrt(2)
        alpha = np.zeros(n)
        alpha[pair_at] = 1.0
        return Dataset(self.name, X, labels, certify(X, labels, w_star, alpha), directions={"w*": w_star})


class Shells(Source):
    """Two concentric shells in R^d: label +1 at radius in (1 - width, 1] * inner * rho, label -1 at
    radius in (1 - width, 1] * rho (docs/bounds.md section 5: data a Gaussian kernel separates and no linear
    classifier can). Directions are uniform on the sphere; ||x|| <= rho. A homogeneous linear classifier
    cannot separate them: the classes are symmetric under x -> -x,
    so w.x and w.(-x) have opposite signs within a class (the LP certificate reports it).

    Examples
    --------
    >>> ds = Shells(rho=1.0, n=200, d=3).generate(np.random.default_rng(0))
    >>> ds.X.shape, ds.stats.separable
    ((200, 3), False)
    """

    name = "shells"
    kind = "binary"
    params = (
        Param("rho", float, IN_SCALE.because("the outer radius")),
        Param("n", int, at_least(2), default=1000),
        Param("d", int, at_least(2), default=20),
        Param("inner", float, lambda v: 0 < v < 1, "a number in (0, 1) (inner radius / outer radius)", default=0.5),
        Param("width", float, lambda v: 0 <= v < 1, "a number in [0, 1) (band width relative to the radius)", default=0.2),
        Param("pos_fraction", float, lambda v: 0 < v < 1, "a number in (0, 1)", default=0.5),
    )

    def check(self) -> None:
        check_params(self)
        if self.inner >= 1 - self.width:
            raise ParamError("width", self.width, f"< 1 - inner = {1 - self.inner:g} (the shells must not touch)")
        n, d = int(self.n), int(self.d)
        check_memory(size_param(n, d), self.d if d > n else self.n, sample_bytes(n, d), "lower n or d")

    def generate(self, rng: np.random.Generator) -> Dataset:
        self.check()
        n, d, rho = int(self.n), int(self.d), float(self.rho)
        y = np.where(rng.random(n) < self.pos_fraction, 1.0, -1.0)
        direction = rng.standard_normal((n, d))
        direction /= np.linalg.norm(direction, axis=1, keepdims=True)
        centre = np.where(y > 0, self.inner * rho, rho)
        radius = centre * (1 - self.width * rng.random(n))
        X = np.ascontiguousarray(radius[:, None] * direction)
        return Dataset(self.name, X, y, certify_sample(X, y))
