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
that waits too long (a library call of minutes) is the watcher's to end (:class:`StopGuard`, which the
``boundlab`` command installs for its whole run), and :func:`stop_workers` shuts joblib's worker pool down
while the command's handlers are still in place.
"""

from __future__ import annotations

import os
import signal
import sys
from types import FrameType
from typing import Callable, NoReturn

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


class StopGuard:
    """Ctrl-C, SIGTERM and SIGHUP (a closed terminal) stop the command within seconds, even during a long
    native call.

    Both raise ``KeyboardInterrupt`` in the main thread (the job's run then ends KILLED, the sweep's
    parent too, and the same command resumes). Python runs that handler only between bytecodes, so a
    long call into compiled code (HiGHS, Clarabel, a numba kernel) would delay it for minutes. Those
    calls release the GIL, and the signal also reaches a pipe (``signal.set_wakeup_fd``) that a watcher
    thread reads at once: if the main thread has not taken the signal ``grace`` seconds later, the
    watcher ends this process's open runs and the sweep's parent KILLED (``end_runs(signal name, what the
    main thread is inside)``, the command's: this module knows no run), prints one line and exits (130).
    Caches are written to a temporary file and renamed, so no entry is ever half-written.

    A signal that finds the main thread inside a library that cannot take an interrupt (omegaconf,
    MLflow, an import: :class:`Handler`) is raised as soon as that call returns; it counts as taken
    then, so a call that keeps it waiting is ended by the watcher too, after ``patience`` seconds.
    """

    SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)  # SIGHUP: the terminal closed

    def __init__(self, end_runs: Callable[[str, str], None] | None = None, grace: float = 2.0,
                 patience: float = 10.0) -> None:
        import threading

        self.end_runs, self.grace, self.patience = end_runs, grace, patience
        self.received = self.taken = self.waiting = 0
        self.taken_event = threading.Condition()
        self.handler = Handler(on_raise=self._taken)
        self.previous = {s: signal.signal(s, self._take) for s in self.SIGNALS}
        self.read, self.write = os.pipe()
        os.set_blocking(self.write, False)
        self.previous_fd = signal.set_wakeup_fd(self.write, warn_on_full_buffer=False)
        threading.Thread(target=self._watch, name="boundlab-stop-guard", daemon=True).start()

    def _take(self, signum: int, frame: FrameType | None) -> None:
        """The main thread's handler: stop like Ctrl-C, where the interrupted code can take it."""
        self.waiting += 1
        self.handler(signum, frame)

    def _taken(self) -> None:
        with self.taken_event:
            self.taken += self.waiting
            self.waiting = 0
            self.taken_event.notify_all()

    def _watch(self) -> None:
        while True:
            try:
                data = os.read(self.read, 64)
            except OSError:
                return
            if not data:  # the write end closed: the command is done
                os.close(self.read)
                return
            arrived = [b for b in data if b in self.SIGNALS]
            if not arrived:
                continue
            self.received += len(arrived)
            with self.taken_event:
                if self.taken_event.wait_for(lambda: self.taken >= self.received, timeout=self.grace):
                    continue
                # A call the interrupt waits for is not cut at once: a new store's migrations take seconds,
                # and cut halfway they leave half a schema that the next command refuses.
                if self.handler.deferred is not None and self.taken_event.wait_for(
                        lambda: self.taken >= self.received, timeout=self.patience - self.grace):
                    continue
            deferred = self.handler.deferred
            self._stop_now(signal.Signals(arrived[-1]).name,
                           deferred.within if deferred else "a long native call")

    def _stop_now(self, name: str, during: str) -> None:
        """The main thread is inside a long call: end the runs it holds KILLED, and the process."""
        if self.end_runs is not None:
            self.end_runs(name, during)
        print(f"boundlab: stopped by {name} during {during}; finished jobs are kept: run the same "
              "command to resume", file=sys.stderr, flush=True)
        os._exit(130)

    def close(self) -> None:
        """Restore the handlers (a process that goes on, e.g. a test calling main) and stop the watcher."""
        self.handler.cancel()
        signal.set_wakeup_fd(self.previous_fd)
        for s, handler in self.previous.items():
            signal.signal(s, handler)
        os.close(self.write)  # the watcher reads the end of the pipe and closes its read end


def stop_workers() -> None:
    """Shut joblib's pool of worker processes down, once the sweep has ended, while signals are handled.

    Left to the interpreter's exit, loky joins its pool after the command's handlers are gone, and a
    Ctrl-C in that second printed a traceback.
    """
    module = sys.modules.get("joblib.externals.loky.reusable_executor")
    executor = getattr(module, "_executor", None)
    if executor is not None:
        executor.shutdown(wait=True)


GC_THRESHOLD = (10_000, 20, 20)  # allocations less deallocations before a young collection; then as Python's own


def seldom_collection() -> None:
    """Python's cycle collector at a command's pace: a young collection every 10,000 net allocations, not 700.

    A command holds a large heap of long-lived objects (Hydra's, MLflow's, SQLAlchemy's, pandas' modules, a
    sweep's configs), and every tenth middle collection scans all of it. A packed seed round allocates fast
    (each run's rows and tables): at Python's thresholds each of its workers spent 1.2-1.4 s in full
    collections per 1,000 Pegasos seeds, ~10 % of the round, and the command ~0.9 s at its start and end
    (docs/performance.md, "Seeds by the thousand"). Nothing boundlab computes depends on when garbage is
    collected; a cycle waits longer to be freed, a few megabytes at most. Called by the ``boundlab`` command and the
    DVC stage at their start; forked workers inherit it (:func:`pipeline.forks.pool`)."""
    import gc

    gc.set_threshold(*GC_THRESHOLD)


def quick_exit(code: object = 0) -> NoReturn:
    """End the process as ``sys.exit(code)`` does, without the interpreter's teardown of its modules.

    A command that imported MLflow, its SQLAlchemy store and numba spends about a second after its last
    line tearing those modules down (0.5 s for ``import mlflow`` alone; docs/performance.md, "One run"),
    a third of a single run. What the teardown would do that matters is done first: the exit handlers
    (``atexit``: the log files flushed and closed by ``logging.shutdown``, the MLflow stores' connections
    closed by :mod:`pipeline.tracking`, temporary directories removed) and the standard streams flushed.
    Another live non-daemon thread would be joined by a normal exit: then this is ``sys.exit``.
    """
    import atexit
    import threading

    others = [t for t in threading.enumerate() if t is not threading.main_thread() and not t.daemon and t.is_alive()]
    if others:
        sys.exit(code)
    if code is None or isinstance(code, int):
        status = code or 0
    else:  # sys.exit("message"): the message on stderr, status 1
        print(code, file=sys.stderr)
        status = 1
    atexit._run_exitfuncs()  # the interpreter's own exit handlers, run as a normal exit runs them
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed pipe: nothing left to say
            pass
    os._exit(status)


CLOSED_PIPE = 128 + signal.SIGPIPE  # the status a shell gives a command its closed pipe ended (141)


def _reader_gone() -> NoReturn:
    """stdout's reader has gone: stdout is pointed at /dev/null, so that flushing it at exit cannot raise
    again (the signal module's "Note on SIGPIPE"), and the command ends with :data:`CLOSED_PIPE`."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.__stdout__.fileno())
    os.close(devnull)
    raise SystemExit(CLOSED_PIPE)


class _Stdout:
    """sys.stdout, whose write or flush to a reader that has gone raises SystemExit(:data:`CLOSED_PIPE`): not an
    Exception, so that Hydra's own reporting of errors (which prints ``--cfg``'s config) does not turn it into a
    traceback. Everything else is the stream's own."""

    def __init__(self, stream: object) -> None:
        self._stream = stream

    def __getattr__(self, name: str) -> object:
        return getattr(self._stream, name)

    def write(self, text: str) -> int:
        try:
            return self._stream.write(text)
        except BrokenPipeError:
            _reader_gone()

    def flush(self) -> None:
        try:
            self._stream.flush()
        except BrokenPipeError:
            _reader_gone()


def until_the_reader_leaves(main: Callable[[], int | None]) -> int | None:
    """``main()`` as a command runs it: if the reader of its stdout has gone (``boundlab --cfg job | head -1``),
    the command ends quietly with :data:`CLOSED_PIPE` (by SystemExit) instead of a ``BrokenPipeError``
    traceback. sys.stdout is wrapped (:class:`_Stdout`) while ``main`` runs."""
    stdout = sys.stdout
    sys.stdout = _Stdout(stdout)
    try:
        return main()
    except BrokenPipeError:  # a write that went around sys.stdout
        _reader_gone()
    finally:
        sys.stdout = stdout
