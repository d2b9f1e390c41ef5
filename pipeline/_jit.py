"""Lazy compilation of kernels: plain Python functions over arrays, compiled with numba on first call.

Keeping kernels importable without numba keeps ``boundlab --help`` and config errors fast, and leaves
the plain function as the reference implementation that tests compare the compiled one against.
``cache=True`` stores the machine code on disk so a new worker process does not compile again.
Compiled without ``fastmath``: sums are never reassociated, so results are bit-identical run to run.

A kernel may call another kernel (a helper such as :func:`dot_row`): the plain reference calls the
plain helper, the compiled kernel the compiled one, so both run the same arithmetic in the same order.
numba's disk cache only notices edits to the caller's own file, so the helpers' bytecode is hashed into
the cached name: editing a helper recompiles every kernel that calls it. Beside the dot products, the
helpers are the error-free transformations of compensated sums (:func:`two_sum`, :func:`two_product`),
written once for every kernel.
"""

from __future__ import annotations

import hashlib
import types
from typing import TYPE_CHECKING, Any, Callable, Generic, Literal, ParamSpec, TypeVar

if TYPE_CHECKING:
    import numpy as np

P = ParamSpec("P")
R = TypeVar("R")


class kernel(Generic[P, R]):  # noqa: N801 - a decorator, spelt as one (@kernel, @helper)
    """Decorator: ``f`` stays callable as ``f.py`` (pure Python) and compiles on first ``f(...)``.
    ``helper(f)`` marks a small kernel that other kernels call: numba inlines it into its callers. A call
    has the plain function's signature for a type checker (its annotations; numba reads none of them)."""

    def __init__(self, func: Callable[P, R], *, inline: bool = False) -> None:
        self.py = func
        self.inline = inline
        self._compiled: Callable[..., Any] | None = None
        self.__doc__ = func.__doc__
        self.__name__ = func.__name__

    def _helpers(self) -> dict[str, kernel[..., Any]]:
        g = self.py.__globals__
        return {n: g[n] for n in self.py.__code__.co_names if isinstance(g.get(n), kernel)}

    def fingerprint(self) -> str:
        """Hash of this kernel's bytecode and of the helpers it calls (recursively)."""
        code = self.py.__code__
        h = hashlib.sha256(code.co_code + repr(code.co_consts).encode())
        for name, helper in sorted(self._helpers().items()):
            h.update(name.encode() + helper.fingerprint().encode())
        return h.hexdigest()[:12]

    def compiled(self) -> Callable[..., Any]:
        """The numba dispatcher (compiled, or loaded from the disk cache, on first use)."""
        if self._compiled is None:
            import numba

            func = self.py
            helpers = self._helpers()
            if helpers:  # the same code, with the helpers' compiled dispatchers as its globals
                env = dict(func.__globals__) | {n: h.compiled() for n, h in helpers.items()}
                func = types.FunctionType(func.__code__, env, func.__name__, func.__defaults__, func.__closure__)
                func.__qualname__ = f"{self.py.__qualname__}_{self.fingerprint()}"
            inline: Literal["always", "never"] = "always" if self.inline else "never"  # numba's default: "never"
            self._compiled = numba.njit(cache=True, nogil=True, inline=inline)(func)
        return self._compiled

    def __call__(self, *args: P.args, **kwargs: P.kwargs) -> R:
        # keyword arguments are numba's too: it folds them into the positional signature before dispatch
        result: R = (self._compiled or self.compiled())(*args, **kwargs)
        return result


def helper(func: Callable[P, R]) -> kernel[P, R]:
    """A kernel meant to be called from kernels, inlined into them (no call per row)."""
    return kernel(func, inline=True)


@helper
def dot_row(w: np.ndarray, X: np.ndarray, i: int) -> float:
    """w.X[i] in a fixed order: four accumulators over j = 0, 1, 2, 3 (mod 4), the tail added to the
    first, combined as (s0 + s1) + (s2 + s3).

    Four independent sums let the CPU overlap the additions (one chain of d dependent additions is
    latency-bound, about 4 cycles each); the order is fixed, in the plain reference as in the compiled
    kernel, so results stay bit-identical run to run and machine to machine (no ``fastmath``).
    """
    d = w.shape[0]
    quads = d >> 2  # a unit-step loop: no division per call for the trip count of a stepped range
    s0 = 0.0
    s1 = 0.0
    s2 = 0.0
    s3 = 0.0
    for q in range(quads):
        j = 4 * q
        s0 += w[j] * X[i, j]
        s1 += w[j + 1] * X[i, j + 1]
        s2 += w[j + 2] * X[i, j + 2]
        s3 += w[j + 3] * X[i, j + 3]
    for j in range(4 * quads, d):
        s0 += w[j] * X[i, j]
    return (s0 + s1) + (s2 + s3)


@helper
def dot(a: np.ndarray, b: np.ndarray) -> float:
    """a.b for vectors, in the order of :func:`dot_row` (the same bits as ``dot_row(a, b[None, :], 0)``)."""
    d = a.shape[0]
    quads = d >> 2
    s0 = 0.0
    s1 = 0.0
    s2 = 0.0
    s3 = 0.0
    for q in range(quads):
        j = 4 * q
        s0 += a[j] * b[j]
        s1 += a[j + 1] * b[j + 1]
        s2 += a[j + 2] * b[j + 2]
        s3 += a[j + 3] * b[j + 3]
    for j in range(4 * quads, d):
        s0 += a[j] * b[j]
    return (s0 + s1) + (s2 + s3)


# --- Error-free transformations (Ogita, Rump & Oishi, "Accurate sum and dot product", SIAM J. Sci. Comput.
# 26(6), 2005, section 2), written once for every compiled kernel that needs them (Dot2 in
# pipeline.solvers.dual). Inlined, they compile to the same operations in the same order as written out
# in the caller; pipeline.numerics.two_product is the numpy form of two_product for arrays.

@helper
def split(a: float) -> tuple[float, float]:
    """a = hi + lo exactly with hi and lo of at most 26 significant bits each (Dekker's splitting, Ogita,
    Rump & Oishi 2005, Alg. 2.4), for |a| < 2^996: the halves' products are then exact."""
    t = 134217729.0 * a  # 2^27 + 1 (a literal: the kernels' disk cache hashes constants, not globals)
    hi = t - (t - a)
    return hi, a - hi


@helper
def two_product_split(a: float, ah: float, al: float, b: float) -> tuple[float, float]:
    """:func:`two_product` with a's halves ``split(a)`` given: a kernel that multiplies one a by many b
    splits it once, outside its loop."""
    p = a * b
    bh, bl = split(b)
    return p, al * bl - (((p - ah * bh) - al * bh) - ah * bl)


@helper
def two_product(a: float, b: float) -> tuple[float, float]:
    """(p, e) with p = fl(a b) and a b = p + e exactly (Dekker's TwoProduct, no FMA needed: Ogita, Rump &
    Oishi 2005, Alg. 2.5), for |a|, |b| < 2^995 and |p| >= 2^-968 (below, e itself may underflow)."""
    ah, al = split(a)
    return two_product_split(a, ah, al, b)


@helper
def two_sum(a: float, b: float) -> tuple[float, float]:
    """(s, e) with s = fl(a + b) and a + b = s + e exactly (Knuth's TwoSum: Ogita, Rump & Oishi 2005,
    Alg. 2.1), for |a|, |b| <= 2^1020: then no intermediate result overflows."""
    s = a + b
    z = s - a
    return s, (a - (s - z)) + (b - z)
