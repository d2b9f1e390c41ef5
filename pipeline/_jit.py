"""Lazy compilation of kernels: plain Python functions over arrays, compiled with numba on first call.

Keeping kernels importable without numba keeps ``boundlab --help`` and config errors fast, and leaves
the plain function as the reference implementation that tests compare the compiled one against.
``cache=True`` stores the machine code on disk so a new worker process does not compile again.
Compiled without ``fastmath``: sums are never reassociated, so results are bit-identical run to run.

A kernel may call another kernel (a helper such as :func:`dot_row`): the plain reference calls the
plain helper, the compiled kernel the compiled one, so both run the same arithmetic in the same order.
numba's disk cache only notices edits to the caller's own file, so the helpers' bytecode is hashed into
the cached name: editing a helper recompiles every kernel that calls it.
"""

from __future__ import annotations

import hashlib
import types
from typing import Any, Callable


class kernel:  # noqa: N801 - a decorator, spelt as one (@kernel, @helper)
    """Decorator: ``f`` stays callable as ``f.py`` (pure Python) and compiles on first ``f(...)``.
    ``helper(f)`` marks a small kernel that other kernels call: numba inlines it into its callers."""

    def __init__(self, func: Callable[..., Any], *, inline: bool = False) -> None:
        self.py = func
        self.inline = inline
        self._compiled: Callable[..., Any] | None = None
        self.__doc__ = func.__doc__
        self.__name__ = func.__name__

    def _helpers(self) -> dict[str, kernel]:
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
            options = {"inline": "always"} if self.inline else {}
            self._compiled = numba.njit(cache=True, nogil=True, **options)(func)
        return self._compiled

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        # keyword arguments are numba's too: it folds them into the positional signature before dispatch
        return (self._compiled or self.compiled())(*args, **kwargs)


def helper(func: Callable[..., Any]) -> kernel:
    """A kernel meant to be called from kernels, inlined into them (no call per row)."""
    return kernel(func, inline=True)


@helper
def dot_row(w, X, i):  # noqa: ANN001, ANN202
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
def dot(a, b):  # noqa: ANN001, ANN202
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
