"""Locks: which process holds a job or a sweep, decided by an advisory lock on a file in its directory.

The lock (:func:`hold`) is taken by the process that runs the job or the sweep and released by the kernel
when that process ends, so a lock never outlives its holder. A second identical sweep is refused at once,
naming the holder; a job whose directory another live process holds waits for it instead of running twice
into one directory; a job that a concurrent sweep runs is held under its identity in the job store
(``pipeline.store.hold_identity``), so it is found there, never run twice.
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path
from typing import Callable

from pipeline import files

LOCK = ".lock"  # held (flock) by the process running the job or the sweep in that directory


class Held(Exception):
    """``directory`` is held by another live process (``holder``: its pid as it wrote it)."""

    def __init__(self, directory: Path, holder: str) -> None:
        super().__init__(f"{directory} is in use by process {holder}")
        self.directory, self.holder = directory, holder


_HOLDING: dict[int, str] = {}  # descriptor -> lock file this process holds (a second hold of one is a no-op)


def hold(directory: Path, wait: bool = False, waiting: Callable[[str], None] | None = None) -> int | None:
    """Take ``directory``'s lock for this process; return the descriptor that holds it (:func:`release` it).

    The lock is ``flock`` on ``directory/.lock``: the kernel drops it when the holder exits, however it
    exits, so a crash or a kill never leaves a stale lock. Held by another process: :class:`Held` at once
    (``wait=False``), or block until it is free (``wait=True``; ``waiting(holder)`` is called first, and a
    signal interrupts the wait). The holder's pid is written into the file for the refusal to name.
    Already held by this process (a job directory that is the sweep directory): None, nothing to release.
    """
    directory.mkdir(parents=True, exist_ok=True)
    path = os.path.join(os.path.realpath(directory), LOCK)  # the directory resolved, the lock file itself never
    if path in _HOLDING.values():
        return None
    while True:
        try:
            fd = files.open_lock(Path(path))  # a link planted as the lock is replaced, its target never written
        except FileNotFoundError:  # its directory pruned meanwhile (python -m pipeline.store prune)
            directory.mkdir(parents=True, exist_ok=True)
            continue
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                holder = os.pread(fd, 64, 0).decode(errors="replace").strip() or "unknown"
                if not wait:
                    raise Held(directory, holder) from None
                if waiting is not None:
                    waiting(holder)
                    waiting = None
                fcntl.flock(fd, fcntl.LOCK_EX)
            if not _same_file(fd, path):  # removed (pruned) while this process waited: lock the new one
                os.close(fd)
                continue
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        except BaseException:
            os.close(fd)
            raise
        _HOLDING[fd] = path
        return fd


def _same_file(fd: int, path: str) -> bool:
    """Whether ``path`` still names the file open as ``fd`` (a lock file unlinked by ``pipeline.store``'s
    pruning while another process held it is another file than the one a newcomer creates)."""
    try:
        st = os.stat(path, follow_symlinks=False)
    except FileNotFoundError:
        return False
    mine = os.fstat(fd)
    return (st.st_dev, st.st_ino) == (mine.st_dev, mine.st_ino)


def release(fd: int | None) -> None:
    """Release a lock taken by :func:`hold` (the file stays; only the lock is dropped)."""
    if fd is not None:
        _HOLDING.pop(fd, None)
        os.close(fd)
