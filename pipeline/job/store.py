"""The job store: a finished job, found by its identity from any sweep, and kept as a cache.

Every finished job is copied into ``jobs/`` of the cache directory (``BOUNDLAB_CACHE``, else ``.cache`` in
the project root) under its identity (``pipeline.job.identity.job_identity``: config, code with library versions,
input files), so another sweep that reaches the same job reuses it instead of running it again (docs/sweeps.md).

It is a cache, and never the reason a job fails: an entry that is damaged, incomplete or made for
another tracking store is not reused (the job runs and replaces it); a cache that cannot be written (a
read-only or full disk, a cache path that is a file) is said once by the command's pre-flight
(:func:`problem`), and its jobs run and finish in their sweep directories without being stored. Its
growth is the user's to bound: ``python -m pipeline.job.store status`` shows its size, ``python -m
pipeline.job.store prune`` removes entries (by age, or the least recently used beyond a size) and the
temporary files of processes that are gone.

The store may live on a shared disk (docs/scale-out.md): nothing is written or removed outside it. Every
path it writes or removes is reached from its root without following a symbolic link
(``pipeline.job.locks.open_dir``, ``remove``): a link planted where an entry, the ``locks`` directory, a lock
directory or the store itself belongs is refused with one line naming it (``pipeline.job.locks.Outside``, an
``OSError``: the job runs without the store), and ``prune`` removes such links (the link, never its target).

Two prunes may run at once (two users, two cron jobs on a shared store): each removes what it claims, by renaming
it into a directory of its own inside the store (:class:`_Trash`), and a rename is atomic, so every entry, lock,
link and temporary file is claimed, removed and counted by exactly one of them.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from pipeline import files
from pipeline.paths import cache_dir

ENTRY = "job.json"
KEPT = ("results.parquet", "curve.parquet", "trace.npz", "data.npz")  # what a job directory holds of its result
PART_KEPT = ("results.parquet", "curves.parquet", "part.json")  # what an entry of a pack's part holds (pipeline.sweep.pack)


def store_dir() -> Path:
    """``jobs`` in the cache directory (``BOUNDLAB_CACHE``, else ``.cache`` in the project root). The cache
    directory is the user's path and is resolved (it may be a link to a shared disk); ``jobs`` and
    everything below it are the store's own, and never links (module docstring)."""
    return Path(os.path.realpath(cache_dir())) / "jobs"


def _in_store(path: Path) -> Path:
    """``path``, checked to lie in the store with no symbolic link on its way (``pipeline.job.locks.confined``);
    :class:`pipeline.job.locks.Outside` otherwise."""
    from pipeline.job.locks import confined

    return confined(path, store_dir())


def _remove(path: Path) -> bool:
    """Remove ``path`` (an entry, a lock directory, a link planted in the store: the link itself) inside the
    store, never through a link (``pipeline.job.locks.remove``)."""
    from pipeline.job.locks import remove

    return remove(path, store_dir())


def problem() -> str | None:
    """Why the store cannot keep jobs now (one clause), or None: its directory must be a directory this
    process can create files in (a real write: permission bits alone do not tell, e.g. as root or on a
    read-only mount). Also removes the temporary files that dead processes left there."""
    from pipeline.job.locks import Outside, open_dir

    root = store_dir()
    try:
        os.close(open_dir(root, root, make=True))
        with tempfile.NamedTemporaryFile(dir=root, prefix=".probe.", suffix=f".{os.getpid()}.tmp"):
            pass
    except Outside as e:
        return str(e)
    except OSError as e:
        return f"{root} cannot be written ({e.strerror or type(e).__name__})"
    _clean_stale(root)
    return None


def hold_identity(ident: str, waiting: Callable[[str], None] | None = None) -> int:
    """Hold job ``ident`` for this process, waiting while another process (a concurrent sweep that reached
    the same job) runs it: it is then found in the store, never run twice."""
    from pipeline.job.locks import hold

    return hold(store_dir() / "locks" / ident, wait=True, waiting=waiting, root=store_dir())


def stored(ident: str, uri: str, finished: Callable[[str], bool], kept: Sequence[str] = KEPT) -> dict[str, Any] | None:
    """The store's entry for job ``ident`` when it can be reused: whole (its files there, its data matching
    its recorded hash), tracked in the same store ``uri``, and its run still a live FINISHED run
    (``finished(run_id)``); None otherwise (the job runs). Never raises for a damaged entry. ``kept``: the
    files the entry must hold (a pack's part: :data:`PART_KEPT`)."""
    from pipeline.job.markers import data_mismatch

    entry_dir = store_dir() / ident
    try:
        _in_store(entry_dir / ENTRY)  # a linked entry (or marker) is not the store's: never reused nor touched
        entry = json.loads((entry_dir / ENTRY).read_text())
    except (OSError, UnicodeDecodeError, ValueError):
        return None
    if not isinstance(entry, dict) or entry.get("identity") != ident or entry.get("tracking_uri") != uri:
        return None
    needed = [n for n in kept if n != "data.npz" or not entry.get("streamed")]
    if not all((entry_dir / n).is_file() and not (entry_dir / n).is_symlink() for n in needed):
        return None
    if "data.npz" in kept and not entry.get("streamed") and data_mismatch(entry_dir, entry.get("data_hash")):
        return None
    try:
        alive = finished(str(entry.get("run_id")))
    except Exception:  # noqa: BLE001 - a run the store cannot show is not reused
        return None
    if not alive:
        return None
    try:  # used now: pruning by size removes the least recently used first
        os.utime(_in_store(entry_dir / ENTRY), follow_symlinks=False)
    except OSError:
        return None
    return entry | {"dir": str(entry_dir)}


def put(ident: str, out: Path, entry: Mapping[str, Any], sources: Mapping[str, Path] | None = None) -> None:
    """Keep the finished job in ``out`` as the store's entry ``ident`` (copies, staged and renamed into
    place: a reader sees a whole entry or none; a forced rerun replaces the earlier entry). A failure
    (a full disk) leaves no staging behind. ``sources``: the entry's files by their names in it, when they
    are not :data:`KEPT` in ``out`` (a pack's part)."""
    from pipeline.job.locks import open_dir

    root = store_dir()
    target = root / ident
    os.close(open_dir(root, root, make=True))  # the store itself a real directory, not a link
    # mkdtemp: a new directory of this process (mode 0700, O_EXCL), so nothing can be planted in it
    staging = Path(tempfile.mkdtemp(dir=root, prefix=f".{ident}.", suffix=f".{os.getpid()}.tmp"))
    try:
        for name, source in (sources or {name: out / name for name in KEPT}).items():
            if source.is_file():
                shutil.copyfile(source, staging / name, follow_symlinks=False)
        (staging / ENTRY).write_text(json.dumps(dict(entry) | {"identity": ident}, sort_keys=True) + "\n")
        _remove(target)  # an earlier entry, or a link planted in its place (the link, never its target)
        os.replace(staging, target)
    finally:
        with contextlib.suppress(OSError):
            _remove(staging)


def reuse(entry: Mapping[str, Any], out: Path, experiment: str) -> None:
    """Put the stored job ``entry`` into the job directory ``out`` as this sweep's result: its files, its
    table's rows under this sweep's experiment name, and ``reused.json`` naming the run that made it.
    Raises ``OSError`` or ``ValueError`` for an entry that turns out damaged (the caller runs the job)."""
    import pandas as pd

    from pipeline.job.markers import REUSED

    source = Path(str(entry["dir"]))
    out.mkdir(parents=True, exist_ok=True)
    table = pd.read_parquet(source / "results.parquet")  # first: a damaged table copies nothing
    table["experiment"] = experiment  # the same job, reached by another experiment: its rows are this one's
    for name in KEPT:
        if (source / name).is_file() and name != "results.parquet":
            with files.staged(out / name) as tmp:
                shutil.copyfile(source / name, tmp)
    with files.staged(out / "results.parquet") as tmp:
        table.to_parquet(tmp, index=False)
    files.write_text(out / REUSED, json.dumps({k: entry.get(k) for k in ("run_id", "experiment", "output_dir")}) + "\n")


def forget(ident: str) -> None:
    """Remove entry ``ident`` (found damaged): the job that runs now stores it again."""
    with contextlib.suppress(OSError):  # a link on the way is refused: nothing outside the store is removed
        _remove(store_dir() / ident)


def reused_run(out: Path) -> str | None:
    """The run whose result the job directory ``out`` reused, if it did."""
    from pipeline.job.markers import REUSED

    try:
        return str(json.loads((out / REUSED).read_text())["run_id"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


# --- Keeping the store bounded: status and prune ------------------------------------------------------------

def _entries(root: Path) -> list[tuple[Path, float, int]]:
    """(directory, last use, bytes) of each entry of the store: its marker's mtime is its last use. An entry
    that goes while it is looked at (claimed by another prune) is left out."""
    out = []
    try:
        listed = list(root.iterdir()) if root.is_dir() else []
    except OSError:
        return []
    for entry in listed:
        if entry.name.startswith(".") or entry.name == "locks" or not entry.is_dir() or entry.is_symlink():
            continue
        try:
            used = (entry / ENTRY).stat().st_mtime
        except OSError:
            used = 0.0  # no marker: an incomplete entry, the first to go
        try:
            size = sum(f.stat().st_size for f in entry.iterdir() if f.is_file() and not f.is_symlink())
        except OSError:  # gone meanwhile
            continue
        out.append((entry, used, size))
    return out


class _Trash:
    """A directory of this prune's own inside the store (``.prune.RANDOM.PID.tmp``) into which it claims what it
    removes: :meth:`claim` renames a path there, atomically, so of two prunes that reach the same entry exactly
    one claims it, and each counts only its claims. The trash is made and every path claimed is reached from
    the store's root without following a link (``pipeline.job.locks.open_dir``): nothing outside the store is
    moved or removed. :meth:`close` removes the trash with what it holds; a trash left by a prune that died is
    a dead process's temporary file, removed by the next prune or pre-flight (:func:`_clean_stale`)."""

    def __init__(self, root: Path) -> None:
        self.root, self.path, self.fd, self.count = root, None, None, 0

    def _open(self) -> int:
        import secrets

        from pipeline.job.locks import open_dir

        if self.fd is None:
            root_fd = open_dir(self.root, self.root)  # the store itself a real directory, not a link
            try:
                name = f".prune.{secrets.token_hex(6)}.{os.getpid()}.tmp"
                os.mkdir(name, 0o700, dir_fd=root_fd)
            finally:
                os.close(root_fd)
            self.path = self.root / name
            self.fd = open_dir(self.path, self.root)
        return self.fd

    def claim(self, path: Path) -> bool:
        """Move ``path`` (an entry, a lock directory, a symbolic link: the link itself, a temporary file), below
        the store's root, into the trash; False when it is not there any more (another prune claimed it) or
        cannot be moved (a link on the way to it: ``pipeline.job.locks.Outside``)."""
        from pipeline.job.locks import open_dir

        try:
            trash = self._open()
            parent = open_dir(path.parent, self.root)
        except OSError:
            return False
        try:
            self.count += 1
            os.rename(path.name, str(self.count), src_dir_fd=parent, dst_dir_fd=trash)
            return True
        except OSError:  # gone: claimed by another prune, or removed by its owner
            return False
        finally:
            os.close(parent)

    def close(self) -> None:
        """Remove the trash and what it holds (``pipeline.job.locks.remove``: never through a link)."""
        from pipeline.job.locks import remove

        if self.fd is None or self.path is None:
            return
        os.close(self.fd)
        self.fd = None
        for _ in range(2):  # a lock file made meanwhile in a claimed lock directory (a waiter's) may fail the first
            try:
                remove(self.path, self.root)
                return
            except OSError:
                continue

    def __enter__(self) -> _Trash:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def prune(older_than_days: float | None = None, max_bytes: int | None = None, dry_run: bool = False) -> dict[str, int]:
    """Remove entries unused for more than ``older_than_days``, then the least recently used ones until the
    store holds at most ``max_bytes``; the lock files of entries no process holds; the temporary files of
    dead processes; the symbolic links planted in the store (each link, never its target). A removed entry
    only means its job runs again when a sweep reaches it. Returns counts."""
    root = store_dir()
    entries = sorted(_entries(root), key=lambda e: e[1])
    now = time.time()
    doomed = [e for e in entries if older_than_days is not None and now - e[1] > older_than_days * 86400]
    kept = [e for e in entries if e not in doomed]
    total = sum(e[2] for e in kept)
    while max_bytes is not None and kept and total > max_bytes:
        oldest = kept.pop(0)
        doomed.append(oldest)
        total -= oldest[2]
    removed, locks, links, temps = doomed, 0, 0, 0
    if not dry_run:  # each entry, link, lock and temporary file counted by the one prune that claimed it
        with _Trash(root) as trash:
            removed = [e for e in doomed if trash.claim(e[0])]
            links = _remove_links(root, trash.claim)
            locks = _prune_locks(root, trash.claim)
            temps = _clean_stale(root, trash.claim)
    return {"entries": len(removed), "bytes": sum(e[2] for e in removed), "kept": len(kept), "kept_bytes": total,
            "locks": locks, "temporary": temps, "links": links}


def _links(directory: Path) -> list[Path]:
    """The symbolic links directly in ``directory`` (a real directory of the store), never followed."""
    try:
        return [p for p in directory.iterdir() if p.is_symlink()]
    except OSError:
        return []


def _remove_links(root: Path, claim: Callable[[Path], bool]) -> int:
    """Remove the symbolic links planted in the store, its ``locks`` directory and its lock directories
    (each link itself, never its target, claimed into the prune's trash: ``claim``); return how many."""
    import stat

    removed = 0
    places = [root]
    try:
        if stat.S_ISDIR(os.lstat(root / "locks").st_mode):
            places.append(root / "locks")
            places += [d for d in (root / "locks").iterdir() if not d.is_symlink() and d.is_dir()]
    except OSError:
        pass
    for place in places:
        for link in _links(place):
            removed += claim(link)
    return removed


def _prune_locks(root: Path, claim: Callable[[Path], bool]) -> int:
    """Remove the lock directories no process holds (each lock taken, then its directory claimed into the
    prune's trash while it is held: ``claim``); return how many. Reached without following a link
    (``pipeline.job.locks.open_dir``): a planted link is never locked, written or removed through."""
    import fcntl

    from pipeline.job.locks import LOCK, open_dir

    pruned = 0
    try:
        locks_fd = open_dir(root / "locks", root)
    except OSError:  # none yet, or a link (removed above, or refused)
        return 0
    try:
        names = [n for n in os.listdir(locks_fd) if not n.startswith(".")]
        for name in names:
            try:
                dir_fd = open_dir(root / "locks" / name, root)
            except OSError:  # a link, a file, or gone
                continue
            try:
                fd = os.open(LOCK, os.O_RDWR | os.O_CLOEXEC | getattr(os, "O_NOFOLLOW", 0), dir_fd=dir_fd)
            except OSError:  # no lock file there, or a link in its place (removed above, or refused)
                os.close(dir_fd)
                continue
            os.close(dir_fd)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # no process runs this job now
                # While held, and only if the file held is still the one at its place from the store's root (another
                # prune did not claim its directory meanwhile, nor a holder make a new one there): no other prune can
                # claim it now, and a waiter that wakes up finds no file and locks anew (pipeline.job.locks.hold).
                mine = os.fstat(fd)
                there = os.stat(f"{name}/{LOCK}", dir_fd=locks_fd, follow_symlinks=False)
                if (mine.st_dev, mine.st_ino) == (there.st_dev, there.st_ino) and claim(root / "locks" / name):
                    pruned += 1
            except OSError:  # held by a process (BlockingIOError), or gone meanwhile
                pass
            finally:
                os.close(fd)
    finally:
        os.close(locks_fd)
    return pruned


def _clean_stale(root: Path, claim: Callable[[Path], bool] | None = None) -> int:
    """The temporary files of dead processes removed from the store (``pipeline.files.clean_stale``'s choice
    of names, each removed through :func:`_remove`, or claimed into a prune's trash by ``claim``: a link,
    never its target); return how many."""
    removed = 0
    for path in root.glob(".*.tmp") if root.is_dir() and not root.is_symlink() else ():
        m = files._TEMP.match(path.name)
        if m and int(m.group(1)) != os.getpid() and not files._alive(int(m.group(1))):
            if claim is not None:
                removed += claim(path)
                continue
            with contextlib.suppress(OSError):
                removed += _remove(path)
    return removed


def _size(text: str) -> int:
    """'500M', '2G', '1.5GiB', '1000000' (bytes) as a number of bytes."""
    import re

    m = re.fullmatch(r"\s*(\d+(?:\.\d*)?)\s*([kmgt]?)(?:i?b)?\s*", text.lower())
    if m is None:
        raise argparse.ArgumentTypeError(f"{text!r}: a size such as 500M or 2G")
    number, unit = float(m.group(1)), m.group(2)
    return int(number * 1024 ** ("kmgt".index(unit) + 1)) if unit else int(number)


def _days(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not value >= 0:
        raise argparse.ArgumentTypeError(f"{text!r}: a number of days >= 0")
    return value


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m pipeline.job.store status | prune [--older-than DAYS] [--max-size SIZE] [--dry-run]``."""
    parser = argparse.ArgumentParser(prog="python -m pipeline.job.store", description=(
        "The job store (BOUNDLAB_CACHE/jobs, else .cache/jobs): finished jobs that later sweeps reuse. A removed "
        "entry only means its job runs again when a sweep reaches it."))
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("status", help="the store's place, entries and size")
    p = sub.add_parser("prune", help="remove entries by age and size, unheld locks and dead processes' temporary files")
    p.add_argument("--older-than", type=_days, metavar="DAYS", help="remove entries not used for more than DAYS days")
    p.add_argument("--max-size", type=_size, metavar="SIZE",
                   help="then remove the least recently used until at most SIZE (e.g. 2G)")
    p.add_argument("--dry-run", action="store_true", help="say what would be removed, remove nothing")
    args = parser.parse_args(argv)
    root = store_dir()
    if args.command == "status":
        entries = _entries(root)
        print(f"job store {root}: {len(entries)} entries, {sum(e[2] for e in entries) / 2**20:.1f} MiB")
        return 0
    if args.older_than is None and args.max_size is None:
        parser.error("prune: give --older-than DAYS and/or --max-size SIZE (e.g. prune --older-than 30)")
    done = prune(args.older_than, args.max_size, args.dry_run)
    verb = "would remove" if args.dry_run else "removed"
    print(f"job store {root}: {verb} {done['entries']} entries ({done['bytes'] / 2**20:.1f} MiB), {done['locks']} unheld "
          f"lock(s), {done['temporary']} temporary file(s) of dead processes"
          + (f", {done['links']} symbolic link(s) planted in the store" if done.get("links") else "")
          + f"; {done['kept']} entries "
          f"({done['kept_bytes'] / 2**20:.1f} MiB) kept")
    return 0


if __name__ == "__main__":
    sys.exit(main())
