"""pipeline.job.store: the job store is a cache. A damaged entry means "run again", an unusable store costs the
reuse and never a job, its growth is bounded by a documented command, and a job's identity holds the
versions of the libraries it computes with (issue 31, classes 8 and 11)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from helpers import migrated_store

from pipeline.job import identity, locks, store

GRID = ["-m", "seed=0,1", "n=200", "d=5", "name=cache"]


def _env(tmp_path: Path, cache: Path | None = None) -> dict[str, str]:
    uri = migrated_store(tmp_path / "mlflow.db")
    return {**os.environ, "MLFLOW_TRACKING_URI": uri, "BOUNDLAB_CACHE": str(cache or tmp_path / "cache")}


def _entries(tmp_path: Path) -> list[Path]:
    return sorted(p.parent for p in (tmp_path / "cache" / "jobs").glob(f"*/{store.ENTRY}"))


def _run(boundlab, tmp_path: Path, sweep: str, env: dict[str, str], *extra: str):  # noqa: ANN001, ANN202
    done = boundlab(*GRID, *extra, f"hydra.sweep.dir={tmp_path / sweep}", cwd=tmp_path, env=env)
    assert done.returncode == 0, done.stderr[-2000:]
    return done


@pytest.mark.e2e
@pytest.mark.parametrize("damage", ["table", "entry-json", "entry-not-object", "entry-is-a-file", "missing-curve"])
def test_a_damaged_entry_means_the_job_runs_again(tmp_path: Path, boundlab_in_process, damage: str) -> None:  # noqa: ANN001
    env = _env(tmp_path)
    _run(boundlab_in_process, tmp_path, "a", env)
    entry = _entries(tmp_path)[0]
    if damage == "table":
        (entry / "results.parquet").write_bytes(b"PAR1 truncated")
    elif damage == "entry-json":
        (entry / store.ENTRY).write_text('{"run_id": ')
    elif damage == "entry-not-object":
        (entry / store.ENTRY).write_text("[1, 2]\n")
    elif damage == "entry-is-a-file":
        for f in entry.iterdir():
            f.unlink()
        entry.rmdir()
        entry.write_text("not a directory")
    else:
        (entry / "curve.parquet").unlink()
    again = _run(boundlab_in_process, tmp_path, "b", env)
    assert "1 reused from earlier sweeps" in again.stdout, again.stdout[-3000:]
    assert entry.is_dir() and json.loads((entry / store.ENTRY).read_text())["identity"] == entry.name  # stored again


@pytest.mark.e2e
def test_a_cache_path_that_is_a_file_is_said_once_and_every_job_finishes(tmp_path: Path, boundlab_in_process) -> None:  # noqa: ANN001
    cache = tmp_path / "cache-file"
    cache.write_text("not a directory\n")
    done = _run(boundlab_in_process, tmp_path, "a", _env(tmp_path, cache=cache))
    assert "boundlab: warning: the job store" in done.stderr and "set BOUNDLAB_CACHE" in done.stderr
    assert "2 runs in" in done.stdout and "0 reused" in done.stdout
    assert cache.read_text() == "not a directory\n"


@pytest.mark.e2e
def test_a_full_store_costs_the_entry_not_the_job_and_leaves_no_staging(tmp_path: Path, boundlab_in_process,  # noqa: ANN001
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    def full(*args: object, **kwargs: object) -> None:
        raise OSError(28, "No space left on device")

    import shutil
    import types

    monkeypatch.setattr(store, "shutil", types.SimpleNamespace(copyfile=full, rmtree=shutil.rmtree))
    done = _run(boundlab_in_process, tmp_path, "a", _env(tmp_path))
    assert "not kept in the job store" in done.stdout + done.stderr
    assert "2 runs in" in done.stdout
    assert not list((tmp_path / "cache" / "jobs").glob(".*.tmp")) and not _entries(tmp_path)


def _fill(root: Path, ages_days: list[float], size: int = 1000) -> list[Path]:
    now = time.time()
    made = []
    for i, age in enumerate(ages_days):
        entry = root / f"{i:024x}"
        entry.mkdir(parents=True)
        (entry / "results.parquet").write_bytes(b"x" * size)
        (entry / store.ENTRY).write_text("{}\n")
        os.utime(entry / store.ENTRY, (now - age * 86400, now - age * 86400))
        made.append(entry)
    return made


def test_prune_by_age_then_by_size_removes_the_least_recently_used(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BOUNDLAB_CACHE", str(tmp_path))
    entries = _fill(store.store_dir(), [100, 40, 20, 10, 1, 0])
    done = store.prune(older_than_days=30)
    assert done["entries"] == 2 and [e.exists() for e in entries] == [False, False, True, True, True, True]
    total = sum(f.stat().st_size for e in entries[2:] for f in e.iterdir())
    done = store.prune(max_bytes=total // 2)
    assert [e.exists() for e in entries[2:]] == [False, False, True, True]
    assert done["kept_bytes"] <= total // 2


def test_prune_dry_run_removes_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BOUNDLAB_CACHE", str(tmp_path))
    entries = _fill(store.store_dir(), [100, 1])
    assert store.prune(older_than_days=30, dry_run=True)["entries"] == 1
    assert all(e.exists() for e in entries)


@pytest.mark.slow  # a process started and waited for: its pid is a dead process's
def test_prune_removes_unheld_locks_and_dead_temporaries_but_not_a_held_lock(tmp_path: Path,
                                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BOUNDLAB_CACHE", str(tmp_path))
    free = store.hold_identity("free")
    locks.release(free)
    held = store.hold_identity("held")
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    stale = store.store_dir() / f".abc.q1.{proc.pid}.tmp"
    stale.mkdir()
    try:
        done = store.prune(older_than_days=365)
        assert done["locks"] == 1 and done["temporary"] == 1 and not stale.exists()
        assert not (store.store_dir() / "locks" / "free").exists()
        assert (store.store_dir() / "locks" / "held" / locks.LOCK).exists()
    finally:
        locks.release(held)
    again = store.hold_identity("free")  # a pruned lock is made anew
    locks.release(again)


PRUNER = """
import sys
from pipeline.job import store
fd = store.hold_identity("job")
print("held", flush=True)
sys.stdin.readline()
(store.store_dir() / "locks" / "job" / ".lock").unlink()  # as prune does, while it holds the lock
"""


@pytest.mark.slow  # a lock held by another process
def test_a_lock_pruned_while_a_process_waits_for_it_is_not_held_twice(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The waiter wakes up on the unlinked file: it must notice and lock the file now at that path."""
    import threading

    monkeypatch.setenv("BOUNDLAB_CACHE", str(tmp_path))
    holder = subprocess.Popen([sys.executable, "-c", PRUNER], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                              env={**os.environ, "BOUNDLAB_CACHE": str(tmp_path)})
    assert holder.stdout.readline().strip() == "held"
    got: list[int] = []
    waiting: list[str] = []
    waiter = threading.Thread(target=lambda: got.append(store.hold_identity("job", waiting=waiting.append)))
    waiter.start()
    for _ in range(100):
        if waiting:
            break
        time.sleep(0.05)
    assert waiting == [str(holder.pid)]
    holder.communicate("go\n", timeout=30)
    waiter.join(10)
    lock = store.store_dir() / "locks" / "job" / locks.LOCK
    assert got and got[0] is not None and os.fstat(got[0]).st_ino == lock.stat().st_ino  # the file there now
    locks.release(got[0])


@pytest.mark.parametrize(("argv", "message"), [
    (["prune"], "give --older-than DAYS and/or --max-size SIZE"),
    (["prune", "--max-size", "lots"], "a size such as 500M or 2G"),
    (["prune", "--older-than", "-3"], "a number of days >= 0"),
    (["prune", "--older-than", "nan"], "a number of days >= 0"),
    (["vacuum"], "invalid choice"),
])
def test_the_prune_command_refuses_bad_arguments_in_one_line(argv: list[str], message: str, tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch,
                                                            capsys: pytest.CaptureFixture) -> None:
    monkeypatch.setenv("BOUNDLAB_CACHE", str(tmp_path))
    with pytest.raises(SystemExit) as exit_:
        store.main(argv)
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


def test_the_status_and_prune_commands_report(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                              capsys: pytest.CaptureFixture) -> None:
    monkeypatch.setenv("BOUNDLAB_CACHE", str(tmp_path))
    _fill(store.store_dir(), [100, 1], size=2**20)
    assert store.main(["status"]) == 0
    assert "2 entries, 2.0 MiB" in capsys.readouterr().out
    assert store.main(["prune", "--older-than", "30"]) == 0
    assert "removed 1 entries (1.0 MiB)" in capsys.readouterr().out


def test_a_job_identity_changes_with_a_numerical_library_version(monkeypatch: pytest.MonkeyPatch) -> None:
    import hydra

    from pipeline.job.config import build
    from pipeline.paths import CONF_DIR
    from pipeline.sweep.schemas import register

    register()
    with hydra.initialize_config_dir(config_dir=str(CONF_DIR), version_base=None):
        spec = build(hydra.compose("config", overrides=["n=50"]))
    found = identity.versions()
    assert set(identity.NUMERICAL) | {"python"} == set(found) and found["numpy"] != "absent"
    identity._JOB_CODE.clear()
    before = identity.job_code(spec)
    for name in ("numpy", "numba", "python"):
        monkeypatch.setattr(identity, "versions", lambda name=name: {**found, name: "99.0"})
        identity._JOB_CODE.clear()
        assert identity.job_code(spec) != before, name
    monkeypatch.setattr(identity, "versions", lambda: dict(found))
    identity._JOB_CODE.clear()
    assert identity.job_code(spec) == before  # the same versions: the same identity
    identity._JOB_CODE.clear()
