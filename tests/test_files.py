"""pipeline.files: every kept file is written whole, never through a planted symbolic link, and the
temporary files of dead processes are cleaned (issue 31, classes 8, 10 and 12)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from pipeline import files
from pipeline.job import locks, markers, store


@pytest.fixture
def victim(tmp_path: Path) -> Path:
    """A file outside the directories boundlab writes, that a planted link points at."""
    path = tmp_path / "elsewhere" / "precious.txt"
    path.parent.mkdir()
    path.write_text("keep me\n")
    return path


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_a_staged_write_replaces_the_file_whole_or_not_at_all(tmp_path: Path) -> None:
    target = tmp_path / "page.html"
    target.write_text("previous\n")
    # the failure is raised inside the staged write, after a partial one: the block is the test
    with pytest.raises(OSError, match="No space left"), files.staged(target) as tmp, open(tmp, "w") as f:  # noqa: PT012
        f.write("half of a new pa")
        raise OSError(28, "No space left on device")
    assert target.read_text() == "previous\n"
    assert [p.name for p in tmp_path.iterdir()] == ["page.html"]  # no temporary file left behind
    files.write_text(target, "new\n")
    assert target.read_text() == "new\n"


def test_a_link_planted_under_the_temporary_name_is_not_written_through(tmp_path: Path, victim: Path) -> None:
    target = tmp_path / "done.json"
    files.temp_name(target).symlink_to(victim)
    files.write_text(target, "{}\n")
    assert victim.read_text() == "keep me\n"
    assert target.read_text() == "{}\n" and not target.is_symlink()


def test_a_link_at_the_final_name_is_replaced_not_followed(tmp_path: Path, victim: Path) -> None:
    target = tmp_path / "error.txt"
    target.symlink_to(victim)
    files.write_text(target, "the error\n")
    assert victim.read_text() == "keep me\n"
    assert not target.is_symlink() and target.read_text() == "the error\n"


@pytest.mark.parametrize("where", ["sweep", "job", "store"])
def test_a_lock_file_planted_as_a_link_keeps_its_target(tmp_path: Path, victim: Path, where: str,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BOUNDLAB_CACHE", str(tmp_path / "cache"))
    directory = {"sweep": tmp_path / "multirun" / "x", "job": tmp_path / "multirun" / "x" / "0",
                 "store": store.store_dir() / "locks" / "abc"}[where]
    directory.mkdir(parents=True)
    (directory / locks.LOCK).symlink_to(victim)
    fd = store.hold_identity("abc") if where == "store" else locks.hold(directory)
    try:
        assert victim.read_text() == "keep me\n"
        assert not (directory / locks.LOCK).is_symlink()
        assert (directory / locks.LOCK).read_text() == f"{os.getpid()}\n"
    finally:
        locks.release(fd)


def test_markers_and_outputs_planted_as_links_keep_their_targets(tmp_path: Path, victim: Path) -> None:
    out = tmp_path / "job"
    out.mkdir()
    for name in ("results.parquet", "error.txt", "data.npz"):
        (out / name).symlink_to(victim)
    (out / f".{markers.MARKER}.{os.getpid()}.tmp").symlink_to(victim)
    markers.invalidate(out)  # what a job does before it writes
    assert not any(p.is_symlink() and p.name in markers.WRITTEN for p in out.iterdir())
    markers.record(out, "key", "hash", streamed=True)
    assert victim.read_text() == "keep me\n"
    assert markers._read_marker(out / markers.MARKER)["key"] == "key"


@pytest.mark.slow  # a process started and waited for: its pid is a dead process's
def test_stale_temporary_files_of_dead_processes_are_removed_and_live_ones_kept(tmp_path: Path) -> None:
    dead = _dead_pid()
    stale_file, stale_dir = tmp_path / f".results.parquet.{dead}.tmp", tmp_path / f".abc.x1y2.{dead}.tmp"
    live = tmp_path / f".job.json.{os.getppid()}.tmp"  # the test runner's parent: alive
    mine = tmp_path / f".job.json.{os.getpid()}.tmp"
    stale_file.write_text("x")
    stale_dir.mkdir()
    (stale_dir / "results.parquet").write_text("x")
    live.write_text("x")
    mine.write_text("x")
    keep = tmp_path / "results.parquet"
    keep.write_text("x")
    assert files.clean_stale(tmp_path) == 2
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([live.name, mine.name, keep.name])


def test_publishing_a_sweep_keeps_the_previous_results_until_the_new_ones_are_whole(tmp_path: Path,
                                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """The DVC stage's copy into results/NAME: a full disk mid-copy leaves the previous results whole."""
    from pipeline import dvc_stage

    sweep, dest = tmp_path / "sweep", tmp_path / "results" / "exp"
    sweep.mkdir()
    dest.mkdir(parents=True)
    (dest / "metrics.json").write_text("previous\n")
    (sweep / "metrics.json").write_text("new\n")
    (sweep / "results.parquet").write_bytes(b"new table")
    import shutil

    calls = [0]

    def full(src, dst, *a, **k):  # noqa: ANN001, ANN002, ANN003, ANN202
        calls[0] += 1
        if calls[0] == 2:
            raise OSError(28, "No space left on device")
        return shutil.copy2(src, dst)

    monkeypatch.setattr(shutil, "copyfile", full)
    with pytest.raises(OSError, match="No space left"):
        dvc_stage.publish(sweep, dest)
    monkeypatch.undo()
    assert [p.name for p in dest.iterdir()] == ["metrics.json"] and (dest / "metrics.json").read_text() == "previous\n"
    assert sorted(p.name for p in dest.parent.iterdir()) == ["exp"]  # no staging left
    published = dvc_stage.publish(sweep, dest)
    assert sorted(p.name for p in published) == ["metrics.json", "results.parquet"]
    assert (dest / "metrics.json").read_text() == "new\n" and sorted(p.name for p in dest.parent.iterdir()) == ["exp"]
