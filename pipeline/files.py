"""Files written whole, never through a planted link, and the temporary files of dead processes cleaned.

Every file boundlab keeps (a job's tables and marker, a cache entry, a lock) is written to a temporary
file in the same directory and renamed into place (:func:`staged`): a crash, a full disk or an interrupt
leaves the previous file whole, never half of a new one. The temporary file is created with
``O_EXCL | O_NOFOLLOW``, so a symbolic link planted under its name (or under the name of a lock) is never
followed: its target is neither truncated nor written. ``os.replace`` replaces a link at the final name
by the new file, again without touching its target.

Temporary names are ``.NAME.PID.tmp``: :func:`clean_stale` removes those whose process is gone.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
from pathlib import Path
from typing import Iterator

_NEW = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC | getattr(os, "O_NOFOLLOW", 0)
_TEMP = re.compile(r"^\..*\.(\d+)\.tmp$")


def temp_name(path: Path) -> Path:
    """The temporary name this process stages ``path`` under."""
    return path.with_name(f".{path.name}.{os.getpid()}.tmp")


def _remove(path: Path) -> None:
    """Remove a file, a link (not its target) or a directory tree at ``path``, if there is one."""
    if path.is_symlink() or not path.is_dir():
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
    else:
        shutil.rmtree(path, ignore_errors=True)


@contextlib.contextmanager
def staged(path: Path) -> Iterator[Path]:
    """Yield a fresh regular file to write ``path``'s new content into; on success it replaces ``path``
    (atomically), on any failure it is removed and ``path`` is left as it was."""
    tmp = temp_name(path)
    _remove(tmp)  # this process's own leftover, or something planted under its name
    os.close(os.open(tmp, _NEW, 0o644))  # O_EXCL: if anything (a link) appears here now, this fails
    try:
        yield tmp
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise


def write_text(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` whole (:func:`staged`)."""
    with staged(path) as tmp, open(tmp, "w", encoding="utf-8") as f:
        f.write(text)


def open_lock(path: Path) -> int:
    """A descriptor of the lock file ``path`` (created if missing), opened without following a link: a
    symbolic link planted there is removed (the link, never its target) and a regular file made instead."""
    flags = os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | getattr(os, "O_NOFOLLOW", 0)
    try:
        return os.open(path, flags, 0o644)
    except OSError:
        if not path.is_symlink():
            raise
        path.unlink()  # ELOOP: a link where the lock belongs
        return os.open(path, flags | os.O_EXCL, 0o644)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's live process
        return True
    return True


def clean_stale(directory: Path, recursive: bool = False) -> int:
    """Remove the temporary files (and staging directories) of processes that are gone from ``directory``
    (and its subdirectories if ``recursive``); return how many. Another live process's are left alone."""
    removed = 0
    try:
        entries = list(directory.rglob(".*.tmp") if recursive else directory.glob(".*.tmp"))
    except OSError:
        return 0
    for path in entries:
        m = _TEMP.match(path.name)
        if m and int(m.group(1)) != os.getpid() and not _alive(int(m.group(1))):
            _remove(path)
            removed += 1
    return removed
