"""Lazy compilation of kernels: plain Python functions over arrays, compiled with numba on first call.

Keeping kernels importable without numba keeps ``boundlab --help`` and config errors fast, and leaves
the plain function as the reference implementation that tests compare the compiled one against.
``cache=True`` stores the machine code on disk so a new worker process does not compile again.
Compiled without ``fastmath``: sums are never reassociated, so results are bit-identical run to run.
"""

from __future__ import annotations

from typing import Any, Callable


class kernel:
    """Decorator: ``f`` stays callable as ``f.py`` (pure Python) and compiles on first ``f(...)``."""

    def __init__(self, func: Callable[..., Any]) -> None:
        self.py = func
        self._compiled: Callable[..., Any] | None = None
        self.__doc__ = func.__doc__
        self.__name__ = func.__name__

    def __call__(self, *args: Any) -> Any:
        if self._compiled is None:
            import numba

            self._compiled = numba.njit(cache=True, nogil=True)(self.py)
        return self._compiled(*args)
