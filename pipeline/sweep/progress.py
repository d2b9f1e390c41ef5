"""Progress of a long phase of one run, on the ``boundlab`` log: at most one line every few seconds, and
none at all for a phase that ends sooner (a small run's log stays as it was). And a sweep's progress, on the
line each of its jobs (or each part of a pack) ends with: the runs all its workers have finished (:func:`finished`).

>>> import logging
>>> clock = iter([0.0, 1.0, 6.0, 7.0, 12.5]).__next__
>>> p = Progress("the stream", total=100, unit="examples", every=5.0, clock=clock)
>>> [p.update(done) for done in (10, 50, 60, 90)]
[None, '[progress] the stream: 50% (50 of 100 examples), 6 s, ~6 s left', None, '[progress] the stream: 90% (90 of 100 examples), 12 s, ~1 s left']
"""  # noqa: E501 - a doctest's output line

from __future__ import annotations

import contextlib
import logging
import os
import time
from pathlib import Path
from typing import Callable, Iterator

log = logging.getLogger("boundlab")
EVERY = 5.0  # seconds between two lines of a phase


class Progress:
    """``update(done)`` after each piece of a phase of ``total`` ``unit``: logs (and returns) a line
    with the share done, the elapsed time and an estimate of what is left, when ``every`` seconds have
    passed since the phase began or since the last line."""

    def __init__(self, what: str, total: float, unit: str, every: float | None = None,
                 clock: Callable[[], float] = time.monotonic, say: Callable[[str], None] | None = None) -> None:
        """``say``: where a line goes (the ``boundlab`` log by default; the command's pre-flight, which runs
        before Hydra sets up logging, prints to stderr)."""
        self.what, self.total, self.unit, self.clock = what, float(total), unit, clock
        self.say = log.info if say is None else say
        self.every = EVERY if every is None else every
        self.start = self.last = clock()

    def update(self, done: float) -> str | None:
        now = self.clock()
        if now - self.last < self.every or self.total <= 0:
            return None
        self.last = now
        elapsed = now - self.start
        share = min(done / self.total, 1.0)
        left = elapsed / share * (1.0 - share) if share > 0 else float("nan")
        line = (f"[progress] {self.what}: {100 * share:.0f}% ({done:.4g} of {self.total:.4g} {self.unit}), "
                f"{elapsed:.0f} s, ~{left:.0f} s left")
        self.say(line)
        return line


TALLY = ".progress-"  # + the sweep's start: in its directory, a byte per run its processes finished in this attempt


def tally_path(sweep_dir: Path, start: float) -> Path:
    """The file that counts the finished runs of the sweep in ``sweep_dir`` started at ``start`` (epoch seconds)."""
    return sweep_dir / f"{TALLY}{start:.6f}"


def forget_tallies(sweep_dir: Path) -> None:
    """Remove every tally of ``sweep_dir`` (the sweep's end: the next attempt counts afresh)."""
    for path in sweep_dir.glob(f"{TALLY}*"):
        path.unlink(missing_ok=True)


@contextlib.contextmanager
def finished(sweep_dir: Path | None, runs: int, job: int) -> Iterator[str]:
    """The prefix of the line that says ``runs`` more runs of a sweep finished (a job, a pack's part):
    ``'[done/total, elapsed, ~left] '``, the line logged inside the block; '' outside a sweep.

    ``done`` counts the runs every process of the sweep finished so far (its jobs or packs run in parallel, and
    finish out of their order), through a file in ``sweep_dir`` (:func:`tally_path`): a byte appended per run,
    under a lock held until the block has logged its line, so that the counts of the sweep's lines never go
    back. The elapsed time and the estimate of what is left are the line's own, not its job's start. Where the
    file cannot be used (no sweep directory, a file system without locks) the count is the job's number in the
    sweep (``job``, from 0: its last run's), as a serial sweep finishes them."""
    from pipeline.sweep import context as sweep

    context = sweep.current()
    if not context.size or context.start is None:
        yield ""
        return
    fd = None
    done = job + 1
    if sweep_dir is not None:
        try:
            import fcntl

            fd = os.open(tally_path(sweep_dir, context.start), os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            fcntl.flock(fd, fcntl.LOCK_EX)
            os.write(fd, b"." * max(runs, 0))
            done = os.fstat(fd).st_size
        except (OSError, ImportError):
            if fd is not None:
                os.close(fd)
                fd = None
    try:
        total = context.size
        done = min(max(done, 1), total)
        elapsed = max(time.time() - context.start, 0.0)
        yield f"[{done}/{total}, {elapsed:.0f} s, ~{elapsed / done * (total - done):.0f} s left] "
    finally:
        if fd is not None:
            os.close(fd)  # the lock goes with it


def duration(seconds: float) -> str:
    """A duration in words for an estimate: '40 ms', '12 s', '7.5 min', '3.2 h', '2.3 days'.

    >>> [duration(s) for s in (0.04, 12.3, 450, 11520, 2e5)]
    ['40 ms', '12 s', '7.5 min', '3.2 h', '2.3 days']
    """
    if seconds < 1.0:
        return f"{seconds * 1000:.0f} ms"
    if seconds < 100.0:
        return f"{seconds:.0f} s"
    if seconds < 3600.0:
        return f"{seconds / 60:.2g} min"
    if seconds < 2.0 * 86400:
        return f"{seconds / 3600:.2g} h"
    return f"{seconds / 86400:.2g} days"


def estimate(what: str, seconds: float, detail: str, say: Callable[[str], None] | None = None) -> str | None:
    """Say up front what a long phase will cost, before it starts: one ``[estimate] what: detail, ~duration``
    line (on the ``boundlab`` log, or ``say``) when ``seconds`` reaches :data:`EVERY`; nothing for a shorter
    phase, which shows no progress either. Returns the line. A phase that would cost more than its caller allows
    is the caller's to refuse, naming the parameter (:class:`pipeline.params.ParamError`)."""
    if not seconds >= EVERY:
        return None
    line = f"[estimate] {what}: {detail}, ~{duration(seconds)}"
    (log.info if say is None else say)(line)
    return line
