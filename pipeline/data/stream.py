"""A long stream of margin data generated in chunks from a seed, never held in memory as a whole.

The stream is :class:`pipeline.data.MarginBinary`'s construction (exact margin ``gamma``, radius ``rho``,
the pinned pair in the first chunk), drawn chunk by chunk: chunk c comes from its own generator seeded
by (the stream's entropy, c), so the stream is the same every time it is read, and a learner reads it
in one pass at the cost of generating it. Its statistics are certified on exactly the generated
vectors, chunk by chunk, during that pass: the radius R (max over chunks), gamma_lo (the witness w*'s
certified margin, min over chunks) and gamma_hi (the pinned pair, a dual witness), as
:func:`pipeline.data.certify` does on a whole sample.
"""

from __future__ import annotations

import hashlib
import math
from typing import Iterator

import numpy as np

from pipeline._jit import kernel
from pipeline.data.certify import Stats
from pipeline.data.dataset import Source
from pipeline.data.synthetic import householder_direction, reflect_rows
from pipeline.params import RHO, Param, ParamError, above, at_least, check_margin_scale, check_memory, check_params
from pipeline.sweep.progress import Progress
from pipeline.solvers.certified import margin_lower, margin_upper, radius


@kernel
def rows_kernel(direction, radial, along, w_star, Q, X):  # noqa: ANN001, ANN201
    """X[i] = along[i] w* + radial[i] Q u_i, u_i = direction[i] / ||direction[i]||: one compiled pass per
    chunk (no temporaries), sums in a fixed order (bit-identical run to run, no BLAS)."""
    k, e = direction.shape
    d = w_star.shape[0]
    for i in range(k):
        nrm2 = 0.0
        for j in range(e):
            u = np.float64(direction[i, j])  # products in float64 (numba keeps float(float32) in float32)
            nrm2 += u * u
        f = radial[i] / math.sqrt(nrm2)
        for c in range(d):
            acc = 0.0
            for j in range(e):
                acc += Q[c, j] * np.float64(direction[i, j])
            X[i, c] = along[i] * w_star[c] + f * acc
    return 0


@kernel
def reflected_rows_kernel(direction, radial, along, w_star, v, X):  # noqa: ANN001, ANN201
    """X[i] = along[i] w* + radial[i] H (0, u_i), u_i = direction[i] / ||direction[i]||, H = I - 2 v v^T the
    Householder reflection of :func:`pipeline.data.synthetic.householder_direction`: O(d) per row, sums in
    a fixed order (bit-identical run to run, no BLAS)."""
    k, e = direction.shape
    d = w_star.shape[0]
    for i in range(k):
        nrm2 = 0.0
        for j in range(e):
            u = np.float64(direction[i, j])
            nrm2 += u * u
        f = radial[i] / math.sqrt(nrm2)
        vz = 0.0
        for j in range(e):
            vz += v[j + 1] * (f * np.float64(direction[i, j]))
        X[i, 0] = along[i] * w_star[0] - 2.0 * vz * v[0]
        for c in range(1, d):
            X[i, c] = along[i] * w_star[c] + (f * np.float64(direction[i, c - 1]) - 2.0 * vz * v[c])
    return 0


class StreamedData:
    """The data of a :class:`Stream`: ``chunks()`` yields (X, y) in order; ``stats`` and ``data_hash``
    are known once a pass has read every chunk (asking for them earlier makes that pass).

    ``X`` is None: the stream is never materialised. Learners that read chunks say so by accepting the
    kind ``"stream"`` (``Learner.accepts``); the run loop refuses the others.
    """

    X = None
    kind = "stream"

    def __init__(self, name: str, n: int, d: int, chunk: int, entropy: int, w_star: np.ndarray, basis: np.ndarray,
                 gamma: float, rho: float, pair_at: np.ndarray, z0: np.ndarray) -> None:
        self.name, self.n, self.d, self.chunk = name, n, d, chunk
        self._entropy, self._basis, self._gamma, self._rho = entropy, basis, gamma, rho
        self._pair_at, self._z0 = pair_at, z0
        self.directions = {"w*": w_star}
        self._stats: Stats | None = None
        self._hash: str | None = None

    def _chunk(self, c: int) -> tuple[np.ndarray, np.ndarray]:
        rng = np.random.default_rng([self._entropy, c])
        start = c * self.chunk
        rows = min(self.chunk, self.n - start)
        pinned = c == 0  # the pinned pair lies in the first chunk
        k = rows - 2 if pinned else rows
        gamma, rho, d = self._gamma, self._rho, self.d
        y = np.where(rng.random(k) < 0.5, 1.0, -1.0)
        a = gamma * (rho / gamma) ** rng.random(k)
        direction = rng.standard_normal((k, d - 1), dtype=np.float32)  # a direction only: float32 draws, 2x faster
        radial = np.sqrt(np.maximum(rho**2 - a**2, 0.0)) * rng.random(k) ** (1.0 / (d - 1))
        X = np.empty((k, d))
        w_star = self.directions["w*"]
        if self._basis.ndim == 2:  # a d x d rotation (d <= min(n, chunk))
            rows_kernel(direction, radial, y * a, w_star, np.ascontiguousarray(self._basis[:, 1:]), X)
        else:  # the Householder vector v (d > min(n, chunk)): O(d) per row
            reflected_rows_kernel(direction, radial, y * a, w_star, self._basis, X)
        if pinned:  # radius exactly rho, best margin exactly gamma (MarginBinary's pair)
            pair = np.stack([gamma * w_star + self._z0, -gamma * w_star + self._z0])
            at = self._pair_at
            X = np.insert(X, [at[0], at[1] - 1], pair, axis=0)
            y = np.insert(y, [at[0], at[1] - 1], [1.0, -1.0])
        return np.ascontiguousarray(X), y

    def chunks(self) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        """The stream in order, chunk by chunk; certifies and hashes it on the way."""
        R, lo, h = 0.0, math.inf, hashlib.sha256()
        w_star = self.directions["w*"]
        progress = Progress(f"stream {self.name} ({self.n} x {self.d})", self.n, "examples")
        for c in range(-(-self.n // self.chunk)):
            progress.update(c * self.chunk)  # the consumer has handled every earlier chunk
            X, y = self._chunk(c)
            R, lo = max(R, radius(X)), min(lo, margin_lower(X, y, w_star))
            h.update(str((X.shape, y.shape)).encode())
            h.update(X.data)
            h.update(y.data)
            yield X, y
        pair = np.stack([self._gamma * w_star + self._z0, -self._gamma * w_star + self._z0])
        hi = margin_upper(pair, np.array([1.0, -1.0]), np.ones(2))
        self._stats = Stats(m=self.n, d=self.d, R=R, gamma_lo=lo, gamma_hi=hi, separable=lo > 0,
                            gap=(hi - lo) / hi if hi > 0 else math.inf)
        self._hash = h.hexdigest()[:16]

    def _read(self) -> None:
        for _ in self.chunks():
            pass

    @property
    def stats(self) -> Stats:
        if self._stats is None:
            self._read()
        return self._stats

    @property
    def data_hash(self) -> str:
        """Hash of the stream's chunks (shapes and bytes, in order): the same for the same stream."""
        if self._hash is None:
            self._read()
        return self._hash

    def materialise(self) -> tuple[np.ndarray, np.ndarray]:
        """The whole stream as arrays (tests, small streams)."""
        parts = list(self.chunks())
        return np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts])


class Stream(Source):
    """Margin data (:class:`pipeline.data.MarginBinary`'s construction) as a stream of ``n`` examples
    generated ``chunk`` rows at a time: memory is set by the chunk, not by n.

    Examples
    --------
    >>> data = Stream(gamma=0.1, rho=1.0, n=5000, d=5, chunk=1000).generate(np.random.default_rng(0))
    >>> X, y = data.materialise()
    >>> X.shape, round(data.stats.gamma_lo, 6), round(data.stats.R, 6), data.stats.gap < 1e-9
    ((5000, 5), 0.1, 1.0, True)
    """

    name = "stream"
    kind = "stream"
    params = (
        Param("gamma", float, above(0).because("and <= rho")),
        RHO,
        Param("n", int, at_least(2).because("examples in the stream"), default=1000),
        Param("d", int, at_least(2), default=20),
        Param("chunk", int, lambda v: v >= 2, "an integer >= 2 (rows generated at a time)", default=250_000),
    )

    def check(self) -> None:
        check_params(self)
        if self.gamma > self.rho:
            raise ParamError("gamma", self.gamma, f"<= rho = {self.rho} (no point of norm <= rho has a larger margin)")
        check_margin_scale(self.gamma, self.rho)
        d, rows = int(self.d), min(int(self.n), int(self.chunk))
        # one chunk at a time: float32 draws, the rows, np.insert's copy, the certificate's products
        need = 8.0 * 5 * rows * d + (3.0 * 8 * d * d if d <= rows else 0.0)
        name = "chunk" if rows >= d and int(self.chunk) <= int(self.n) else "d" if d > rows else "n"
        check_memory(name, getattr(self, name), need, "lower chunk or d")

    def generate(self, rng: np.random.Generator) -> StreamedData:
        self.check()
        gamma, rho, n, d = float(self.gamma), float(self.rho), int(self.n), int(self.d)
        if d <= min(n, int(self.chunk)):  # a d x d rotation no larger than a chunk: the original construction
            basis, _ = np.linalg.qr(rng.standard_normal((d, d)))
            z0_dir = rng.standard_normal(d - 1)
            z0 = basis[:, 1:] @ (z0_dir / np.linalg.norm(z0_dir)) * math.sqrt(max(rho**2 - gamma**2, 0.0))
            w_star = basis[:, 0].copy()
        else:  # w* and a Householder reflection (MarginBinary's construction for d > n): O(d) memory
            w_star, basis = householder_direction(rng, d)
            z0_dir = rng.standard_normal(d - 1)
            z0 = np.zeros((1, d))
            z0[0, 1:] = z0_dir / np.linalg.norm(z0_dir)
            z0 = reflect_rows(z0, basis)[0] * math.sqrt(max(rho**2 - gamma**2, 0.0))
        pair_at = np.sort(rng.choice(min(n, int(self.chunk)), size=2, replace=False))  # in the first chunk
        entropy = int(rng.integers(0, 2**63))
        return StreamedData(self.name, n, d, int(self.chunk), entropy, w_star, basis, gamma, rho, pair_at, z0)
