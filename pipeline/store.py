"""The job store: a finished job, found by its identity from any sweep, and kept as a cache.

Every finished job is copied into ``jobs/`` of the cache directory (``BOUNDLAB_CACHE``, else ``.cache`` in
the project root) under its identity (``pipeline.identity.job_identity``: config, code with library versions,
input files), so another sweep that reaches the same job reuses it instead of running it again (docs/sweeps.md).

It is a cache, and never the reason a job fails: an entry that is damaged, incomplete or made for
another tracking store is not reused (the job runs and replaces it); a cache that cannot be written (a
read-only or full disk, a cache path that is a file) is said once by the command's pre-flight
(:func:`problem`), and its jobs run and finish in their sweep directories without being stored. Its
growth is the user's to bound: ``python -m pipeline.store status`` shows its size, ``python -m
pipeline.store prune`` removes entries (by age, or the least recently used beyond a size) and the
temporary files of processes that are gone.
"""

from __future__ import annotations

import argparse
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


def store_dir() -> Path:
    """``jobs`` in the cache directory (``BOUNDLAB_CACHE``, else ``.cache`` in the project root)."""
    return cache_dir() / "jobs"


def problem() -> str | None:
    """Why the store cannot keep jobs now (one clause), or None: its directory must be a directory this
    process can create files in (a real write: permission bits alone do not tell, e.g. as root or on a
    read-only mount). Also removes the temporary files that dead processes left there."""
    root = store_dir()
    try:
        root.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=root, prefix=".probe.", suffix=f".{os.getpid()}.tmp"):
            pass
    except OSError as e:
        return f"{root} cannot be written ({e.strerror or type(e).__name__})"
    files.clean_stale(root)
    return None


def hold_identity(ident: str, waiting: Callable[[str], None] | None = None) -> int:
    """Hold job ``ident`` for this process, waiting while another process (a concurrent sweep that reached
    the same job) runs it: it is then found in the store, never run twice."""
    from pipeline.locks import hold

    return hold(store_dir() / "locks" / ident, wait=True, waiting=waiting)


def stored(ident: str, uri: str, finished: Callable[[str], bool]) -> dict[str, Any] | None:
    """The store's entry for job ``ident`` when it can be reused: whole (its files there, its data matching
    its recorded hash), tracked in the same store ``uri``, and its run still a live FINISHED run
    (``finished(run_id)``); None otherwise (the job runs). Never raises for a damaged entry."""
    from pipeline.markers import data_mismatch

    entry_dir = store_dir() / ident
    try:
        entry = json.loads((entry_dir / ENTRY).read_text())
    except (OSError, UnicodeDecodeError, ValueError):
        return None
    if not isinstance(entry, dict) or entry.get("identity") != ident or entry.get("tracking_uri") != uri:
        return None
    needed = [n for n in KEPT if n != "data.npz" or not entry.get("streamed")]
    if not all((entry_dir / n).is_file() and not (entry_dir / n).is_symlink() for n in needed):
        return None
    if not entry.get("streamed") and data_mismatch(entry_dir, entry.get("data_hash")):
        return None
    try:
        alive = finished(str(entry.get("run_id")))
    except Exception:  # noqa: BLE001 - a run the store cannot show is not reused
        return None
    if not alive:
        return None
    os.utime(entry_dir / ENTRY)  # used now: pruning by size removes the least recently used first
    return entry | {"dir": str(entry_dir)}


def put(ident: str, out: Path, entry: Mapping[str, Any]) -> None:
    """Keep the finished job in ``out`` as the store's entry ``ident`` (copies, staged and renamed into
    place: a reader sees a whole entry or none; a forced rerun replaces the earlier entry). A failure
    (a full disk) leaves no staging behind."""
    root = store_dir()
    root.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(dir=root, prefix=f".{ident}.", suffix=f".{os.getpid()}.tmp"))
    try:
        for name in KEPT:
            if (out / name).is_file():
                shutil.copyfile(out / name, staging / name, follow_symlinks=False)
        (staging / ENTRY).write_text(json.dumps(dict(entry) | {"identity": ident}, sort_keys=True) + "\n")
        target = root / ident
        if target.is_symlink() or target.is_file():
            target.unlink()
        elif target.exists():
            shutil.rmtree(target)
        os.replace(staging, target)
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def reuse(entry: Mapping[str, Any], out: Path, experiment: str) -> None:
    """Put the stored job ``entry`` into the job directory ``out`` as this sweep's result: its files, its
    table's rows under this sweep's experiment name, and ``reused.json`` naming the run that made it.
    Raises ``OSError`` or ``ValueError`` for an entry that turns out damaged (the caller runs the job)."""
    import pandas as pd

    from pipeline.markers import REUSED

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
    target = store_dir() / ident
    if target.is_symlink() or target.is_file():
        target.unlink(missing_ok=True)
    else:
        shutil.rmtree(target, ignore_errors=True)


def reused_run(out: Path) -> str | None:
    """The run whose result the job directory ``out`` reused, if it did."""
    from pipeline.markers import REUSED

    try:
        return str(json.loads((out / REUSED).read_text())["run_id"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


# --- Keeping the store bounded: status and prune ------------------------------------------------------------

def _entries(root: Path) -> list[tuple[Path, float, int]]:
    """(directory, last use, bytes) of each entry of the store: its marker's mtime is its last use."""
    out = []
    for entry in root.iterdir() if root.is_dir() else ():
        if entry.name.startswith(".") or entry.name == "locks" or not entry.is_dir() or entry.is_symlink():
            continue
        try:
            used = (entry / ENTRY).stat().st_mtime
        except OSError:
            used = 0.0  # no marker: an incomplete entry, the first to go
        size = sum(f.stat().st_size for f in entry.iterdir() if f.is_file() and not f.is_symlink())
        out.append((entry, used, size))
    return out


def prune(older_than_days: float | None = None, max_bytes: int | None = None, dry_run: bool = False) -> dict[str, int]:
    """Remove entries unused for more than ``older_than_days``, then the least recently used ones until the
    store holds at most ``max_bytes``; the lock files of entries no process holds; the temporary files of
    dead processes. A removed entry only means its job runs again when a sweep reaches it. Returns counts."""
    import fcntl

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
    locks = 0
    if not dry_run:
        for entry, _, _ in doomed:
            shutil.rmtree(entry, ignore_errors=True)
        for lock_dir in (root / "locks").iterdir() if (root / "locks").is_dir() else ():
            lock = lock_dir / ".lock"
            if not lock.is_file() or lock.is_symlink():
                continue
            fd = files.open_lock(lock)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # no process runs this job now
            except BlockingIOError:
                os.close(fd)
                continue
            lock.unlink()  # while held: a waiter that wakes up sees another file and locks anew (locks.hold)
            os.close(fd)
            shutil.rmtree(lock_dir, ignore_errors=True)
            locks += 1
    temps = 0 if dry_run else files.clean_stale(root)
    return {"entries": len(doomed), "bytes": sum(e[2] for e in doomed), "kept": len(kept), "kept_bytes": total,
            "locks": locks, "temporary": temps}


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
    """``python -m pipeline.store status | prune [--older-than DAYS] [--max-size SIZE] [--dry-run]``."""
    parser = argparse.ArgumentParser(prog="python -m pipeline.store", description=(
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
          f"lock(s), {done['temporary']} temporary file(s) of dead processes; {done['kept']} entries "
          f"({done['kept_bytes'] / 2**20:.1f} MiB) kept")
    return 0


if __name__ == "__main__":
    sys.exit(main())
