"""Raise an asynchronous ``KeyboardInterrupt`` only where the code it unwinds can take it.

A Python signal handler runs between any two bytecodes of the main thread, so the ``KeyboardInterrupt``
it raises can land inside a library that mutates its own state without guarding against
``BaseException``. There the stop turns into another error:

- omegaconf restores a config's flags in ``flag_override``'s exit; interrupted while Hydra assigned a
  list (between two jobs of a sweep), the restore walks a half-filled ``ListConfig`` and raises
  ``AttributeError``, which Hydra prints with a traceback and exits 1;
- MLflow creates a new store's tables through alembic's migrations, which on SQLite run without a
  transaction (alembic's ``transactional_ddl`` is False there): interrupted halfway, the store keeps
  half a schema. Its other calls also keep in-process state beside the store (the active-run stack);
- an interrupted import leaves the submodules it had imported in ``sys.modules`` without their parent's
  finished state, and the code that ends the runs imports them again.

So while a frame of such a library (``FRAGILE``, importlib for an import) is on the main thread's
stack, the interrupt waits:
it is raised at the first trace event of the frame that called the outermost of them, i.e. as soon
as that call has returned or unwound. Only that one frame is traced, for that short while. A stop
that waits too long (a library call of minutes) is the watcher's to end (``pipeline.cli.StopGuard``).
"""

from __future__ import annotations

import sys
from types import FrameType
from typing import Callable

FRAGILE = frozenset({"omegaconf", "mlflow", "alembic", "importlib"})  # importlib: an import


def library(frame: FrameType) -> str:
    """The top-level package a frame's code belongs to (``""`` when it has no module name)."""
    return str(frame.f_globals.get("__name__") or "").partition(".")[0]


def fragile(frame: FrameType) -> str | None:
    """What ``frame`` is part of, if an interrupt must not unwind it (else None)."""
    name = library(frame)
    if name not in FRAGILE:
        return None
    return "an import" if name == "importlib" else f"a call into {name}"


def outermost_fragile(frame: FrameType | None) -> tuple[FrameType, str] | None:
    """The outermost fragile frame on ``frame``'s stack, and what it is part of (None when there is none).

    An interrupt can be raised in the frame that called it (its ``f_back``): by then its call has
    returned or unwound, and no other fragile frame is on the stack.
    """
    found = None
    while frame is not None:
        within = fragile(frame)
        if within:
            found = frame, within
        frame = frame.f_back
    return found


class Deferred:
    """An interrupt waiting for ``frame``'s next trace event (its fragile call is done).

    ``within`` says what it waits for ("a call into omegaconf", "an import").
    """

    def __init__(self, frame: FrameType, within: str, raise_it: Callable[[], None]) -> None:
        self.frame, self.within, self.raise_it = frame, within, raise_it
        self.old_local = frame.f_trace
        frame.f_trace = self._event
        frame.f_trace_lines = True
        sys.settrace(_untraced)  # tracing on for this thread, every newly called frame left untraced

    def _event(self, frame: FrameType, event: str, arg: object) -> None:
        self.cancel()
        self.raise_it()

    def cancel(self) -> None:
        """Stop waiting (the interrupt is raised, or was raised elsewhere)."""
        sys.settrace(None)
        self.frame.f_trace = self.old_local


def _untraced(frame: FrameType, event: str, arg: object) -> None:
    return None


def raise_when_safe(frame: FrameType | None, raise_it: Callable[[], None]) -> Deferred | None:
    """Call ``raise_it`` (which raises) now if ``frame``'s stack holds no fragile frame, else defer it.

    Called by a signal handler with the frame it interrupted. Returns the waiting ``Deferred`` when
    the interrupt waits. A thread already traced (a debugger, coverage) would lose its tracer, so
    there the interrupt is raised at once, as Python would.
    """
    found = outermost_fragile(frame)
    if found is None or found[0].f_back is None or sys.gettrace() is not None:
        raise_it()
        return None
    return Deferred(found[0].f_back, found[1], raise_it)


class Handler:
    """A SIGINT/SIGTERM handler that stops like Ctrl-C, where the interrupted code can take it.

    ``on_raise`` is called just before the ``KeyboardInterrupt`` is raised. A signal that comes while
    an earlier one waits is raised with it, as one interrupt.
    """

    def __init__(self, on_raise: Callable[[], None] | None = None) -> None:
        self.on_raise, self.deferred = on_raise, None

    def __call__(self, signum: int, frame: FrameType | None) -> None:
        if self.deferred is None:
            self.deferred = raise_when_safe(frame, self._raise)

    def _raise(self) -> None:
        self.deferred = None
        if self.on_raise is not None:
            self.on_raise()
        raise KeyboardInterrupt

    def cancel(self) -> None:
        """Drop a waiting interrupt (the handler is being removed)."""
        if self.deferred is not None:
            self.deferred.cancel()
            self.deferred = None
