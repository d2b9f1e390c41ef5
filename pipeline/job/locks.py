"""Locks: which process holds a job or a sweep, decided by an advisory lock on a file in its directory.

The lock (:func:`hold`) is taken by the process that runs the job or the sweep and released by the kernel
when that process ends, so a lock never outlives its holder. A second identical sweep is refused at once,
naming the holder; a job whose directory another live process holds waits for it instead of running twice
into one directory; a job that a concurrent sweep runs is held under its identity in the job store
(``pipeline.job.store.hold_identity``), so it is found there, never run twice.

Nothing is written or removed through a symbolic link planted on the way (:func:`open_dir`,
:func:`remove`): every path below a root (the job store, or the held directory itself) is walked one
component at a time with ``O_NOFOLLOW``, so a link where a directory or the lock belongs is refused,
naming it (:class:`Outside`), never followed. The job store may live on a shared disk
(docs/scale-out.md): nothing outside it is ever touched.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import shutil
import stat
from pathlib import Path
from typing import Callable

LOCK = ".lock"  # held (flock) by the process running the job or the sweep in that directory


class Held(Exception):
    """``directory`` is held by another live process (``holder``: its pid as it wrote it)."""

    def __init__(self, directory: Path, holder: str) -> None:
        super().__init__(f"{directory} is in use by process {holder}")
        self.directory, self.holder = directory, holder


_HOLDING: dict[int, str] = {}  # descriptor -> lock file this process holds (a second hold of one is a no-op)


class Outside(OSError):
    """A path boundlab would write or remove lies outside its root: a symbolic link (or something that is
    not a directory) stands where a directory of the root belongs. ``str(e)`` is one line naming it."""

    def __init__(self, path: Path | str, why: str) -> None:
        super().__init__(errno.ELOOP, f"{path} {why}: nothing is written or removed through it")
        self.path = Path(path)

    def __str__(self) -> str:
        return str(self.strerror)


_DIR = os.O_RDONLY | os.O_CLOEXEC | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_NOFOLLOW", 0)


def _parts(path: Path, root: Path) -> tuple[str, ...]:
    """The components of ``path`` below ``root`` (both as given: neither is resolved); :class:`Outside` if
    ``path`` does not lie under ``root`` or climbs out of it ('..')."""
    try:
        rel = Path(os.path.normpath(path)).relative_to(os.path.normpath(root))
    except ValueError:
        raise Outside(path, f"is not inside {root}") from None
    if ".." in rel.parts:
        raise Outside(path, f"climbs out of {root}")
    return rel.parts


def open_dir(path: Path, root: Path, make: bool = False) -> int:
    """A descriptor of the directory ``path`` inside ``root``, reached from ``root`` one component at a time
    without following a symbolic link (``O_NOFOLLOW | O_DIRECTORY`` on each, relative to the one before):
    the one helper through which every write or removal of the job store and of the locks goes. ``root``
    itself is opened the same way (its own parents are the user's path, taken as they are). ``make``:
    create the missing directories on the way. A link, or a file, where a directory belongs raises
    :class:`Outside` naming it; a missing one without ``make``, ``FileNotFoundError``. Close it with
    ``os.close``."""
    parts = _parts(path, root)
    if make:
        with contextlib.suppress(FileExistsError):
            os.makedirs(root, exist_ok=True)
    fd = _open_one(str(root), None, Path(root))
    where = Path(root)
    try:
        for name in parts:
            where = where / name
            if make:
                with contextlib.suppress(FileExistsError):
                    os.mkdir(name, 0o777, dir_fd=fd)
            inner = _open_one(name, fd, where)
            os.close(fd)
            fd = inner
    except BaseException:
        os.close(fd)
        raise
    return fd


def _open_one(name: str, dir_fd: int | None, shown: Path) -> int:
    try:
        return os.open(name, _DIR, dir_fd=dir_fd)
    except OSError as e:
        if e.errno in (errno.ELOOP, errno.ENOTDIR, errno.EMLINK):
            try:
                st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
            except OSError:
                raise e from None
            if stat.S_ISLNK(st.st_mode):
                target = os.readlink(name, dir_fd=dir_fd)
                raise Outside(shown, f"is a symbolic link (to {target})") from None
            raise Outside(shown, "is not a directory") from None
        raise


def confined(path: Path, root: Path) -> Path:
    """``path`` if every directory from ``root`` down to its parent is a real directory (no symbolic link)
    and ``path`` itself is not a symbolic link; else :class:`Outside` naming the component. A missing
    component is allowed (nothing there to be written through)."""
    parts = _parts(path, root)
    try:
        fd = open_dir(Path(root).joinpath(*parts[:-1]), root)
    except FileNotFoundError:
        return path
    try:
        if parts and stat.S_ISLNK(os.stat(parts[-1], dir_fd=fd, follow_symlinks=False).st_mode):
            raise Outside(path, f"is a symbolic link (to {os.readlink(parts[-1], dir_fd=fd)})")
    except FileNotFoundError:
        pass
    finally:
        os.close(fd)
    return path


def remove(path: Path, root: Path) -> bool:
    """Remove ``path`` (a file, a directory tree, or a symbolic link: the link itself, never its target)
    inside ``root``, reached as :func:`open_dir` reaches it: a link on the way to it raises
    :class:`Outside`; the tree is removed relative to its parent's descriptor (``shutil.rmtree`` with
    ``dir_fd``, which never follows a link inside it). Returns whether something was removed."""
    parts = _parts(path, root)
    if not parts:
        raise Outside(path, "is the root itself")
    try:
        fd = open_dir(Path(root).joinpath(*parts[:-1]), root)
    except FileNotFoundError:
        return False
    try:
        name = parts[-1]
        try:
            st = os.stat(name, dir_fd=fd, follow_symlinks=False)
        except FileNotFoundError:
            return False
        if stat.S_ISDIR(st.st_mode):
            shutil.rmtree(name, dir_fd=fd)
        else:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(name, dir_fd=fd)
        return True
    finally:
        os.close(fd)


def _open_lock(dir_fd: int) -> int:
    """The lock file in the directory open as ``dir_fd`` (created if missing), opened without following a
    link: a symbolic link planted there is removed (the link, never its target) and a regular file made."""
    flags = os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | getattr(os, "O_NOFOLLOW", 0)
    try:
        return os.open(LOCK, flags, 0o644, dir_fd=dir_fd)
    except OSError as e:
        if e.errno != errno.ELOOP:
            raise
        os.unlink(LOCK, dir_fd=dir_fd)  # a link where the lock belongs
        return os.open(LOCK, flags | os.O_EXCL, 0o644, dir_fd=dir_fd)


def hold(directory: Path, wait: bool = False, waiting: Callable[[str], None] | None = None,
         root: Path | None = None) -> int | None:
    """Take ``directory``'s lock for this process; return the descriptor that holds it (:func:`release` it).

    The lock is ``flock`` on ``directory/.lock``: the kernel drops it when the holder exits, however it
    exits, so a crash or a kill never leaves a stale lock. Held by another process: :class:`Held` at once
    (``wait=False``), or block until it is free (``wait=True``; ``waiting(holder)`` is called first, and a
    signal interrupts the wait). The holder's pid is written into the file for the refusal to name.
    Already held by this process (a job directory that is the sweep directory): None, nothing to release.

    ``root``: the directory ``directory`` must lie in (the job store's): it and every directory down to
    ``directory`` are reached without following a link (:func:`open_dir`), so a planted link is refused
    (:class:`Outside`), never written through. Without it, ``directory`` is its own root (the user's path,
    resolved): only the lock file is never a link.
    """
    shown = directory
    if root is None:
        directory.mkdir(parents=True, exist_ok=True)
        root = directory = Path(os.path.realpath(directory))
    else:
        directory = Path(os.path.normpath(directory))
    path = os.path.join(directory, LOCK)  # below a root reached without a link: one name per lock
    if path in _HOLDING.values():
        return None
    while True:
        dir_fd = open_dir(directory, root, make=True)
        try:
            fd = _open_lock(dir_fd)
        except FileNotFoundError:  # its directory pruned meanwhile (python -m pipeline.job.store prune)
            continue
        finally:
            os.close(dir_fd)
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                holder = os.pread(fd, 64, 0).decode(errors="replace").strip() or "unknown"
                if not wait:
                    raise Held(shown, holder) from None
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


def is_held(directory: Path) -> bool | None:
    """Whether a live process holds ``directory``'s lock (:func:`hold`): None when that cannot be told here
    (no such directory or lock file on this machine, a lock file that cannot be opened). Only looks: the
    probe takes a shared lock for an instant, never the holder's, and writes nothing."""
    try:
        fd = os.open(os.path.join(directory, LOCK), os.O_RDONLY | os.O_CLOEXEC | getattr(os, "O_NOFOLLOW", 0))
    except OSError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    except OSError:
        return None
    finally:
        os.close(fd)  # the probe's shared lock goes with it
    return False


def _same_file(fd: int, path: str) -> bool:
    """Whether ``path`` still names the file open as ``fd`` (a lock file unlinked by ``pipeline.job.store``'s
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
