"""pipeline.sweep.callbacks: a sweep's start and end. The aggregation (collect) counts a done job without a readable
table, or with an error after its marker, as failed; a fault in a callback exits nonzero with one line and
ends the parent run; a SIGTERM during the aggregation leaves the previous sweep files whole."""

from __future__ import annotations

import signal
from pathlib import Path

import pytest
from helpers import inject_fault, signal_once_started
from helpers import fault_env as _env
from helpers import finished_job as _finished_job
from helpers import sweep_runs as _runs

from pipeline.sweep.callbacks import collect


@pytest.mark.parametrize("damage", ["missing", "garbage"])
def test_collect_counts_a_done_job_without_readable_table_as_failed(tmp_path: Path, damage: str) -> None:
    for j in ("0", "1"):
        _finished_job(tmp_path / j)
    table = tmp_path / "1" / "results.parquet"
    table.unlink() if damage == "missing" else table.write_bytes(b"not parquet")
    rows, _, failed = collect(tmp_path, 2)
    assert failed == [tmp_path / "1"] and len(rows) == 1


def test_collect_counts_an_error_after_the_marker_as_failed(tmp_path: Path) -> None:
    _finished_job(tmp_path / "0")
    (tmp_path / "0" / "error.txt").write_text("boom\n")
    assert collect(tmp_path, 1)[2] == [tmp_path / "0"]


def _varied_jobs(root: Path, n: int) -> list[tuple[object, object]]:
    """``n`` finished jobs whose tables differ as different learners' do: a column some jobs lack, a column
    int in one job and float in another, bool with gaps, strings with gaps. Returns (table, curve) of each."""
    import numpy as np
    import pandas as pd

    frames = []
    for i in range(n):
        _finished_job(root / str(i))
        table = pd.DataFrame({"run": [f"r{i}"] * 2, "bound": ["a", "b"], "holds": [True, i % 2 == 0],
                              "ratio": [i, 2 * i] if i % 3 else [0.5, np.nan]})
        if i % 4 == 1:
            table["part"] = ["x", None]
        if i % 5 == 2:
            table["straddles"] = [False, True]
        curve = pd.DataFrame({"run": [f"r{i}"] * 3, "t": [1, 2, 3], "empirical": [0.0, 1.0, float(i)]})
        table.to_parquet(root / str(i) / "results.parquet")
        curve.to_parquet(root / str(i) / "curve.parquet")
        frames.append((pd.read_parquet(root / str(i) / "results.parquet"), pd.read_parquet(root / str(i) / "curve.parquet")))
    return frames


def test_collect_in_chunks_is_one_concatenation(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import pandas as pd

    from pipeline.outputs import tables

    frames = _varied_jobs(tmp_path, 11)
    monkeypatch.setattr(tables, "CHUNK", 3)
    table, curve, failed = collect(tmp_path, 11)
    whole = pd.concat([t for t, _ in frames], ignore_index=True)
    curves = pd.concat([c for _, c in frames], ignore_index=True)
    assert failed == []
    assert list(table.columns) == list(whole.columns) and list(table.dtypes) == list(whole.dtypes)
    pd.testing.assert_frame_equal(table, whole, check_exact=True)
    pd.testing.assert_frame_equal(curve, curves, check_exact=True)
    assert table.to_parquet() == whole.to_parquet()


def test_collect_shows_its_progress_on_a_long_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                   caplog: pytest.LogCaptureFixture) -> None:
    """A sweep's end reads every job's tables (~20 s at 10,000 jobs): a line every few seconds, in job order."""
    from pipeline.sweep import callbacks, progress

    _varied_jobs(tmp_path, 5)
    monkeypatch.setattr(progress, "EVERY", 0.0)
    monkeypatch.setattr(callbacks, "WINDOW", 2)
    with caplog.at_level("INFO", logger="boundlab"):
        assert len(collect(tmp_path, 5)[0]) == 10
    lines = [r.getMessage() for r in caplog.records if "[progress]" in r.getMessage()]
    assert [line.split(" (")[1].split(" of")[0] for line in lines] == ["2", "4", "5"], lines
    assert all(line.startswith("[progress] the sweep's end: reading the jobs' tables:") for line in lines)


def test_collect_holds_a_chunk_of_job_tables_at_a_time(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The aggregation's memory: each job's tables are let go once their chunk is gathered (kept to the end,
    they made a sweep's peak grow by ~0.05 MB a job: docs/performance.md); the readers run a window ahead."""
    import gc
    import weakref

    from pipeline.sweep import callbacks
    from pipeline.outputs import tables

    _varied_jobs(tmp_path, 12)
    monkeypatch.setattr(tables, "CHUNK", 3)
    monkeypatch.setattr(callbacks, "WINDOW", 2)
    read, alive = tables.read, []
    refs: list[weakref.ref] = []

    def tracked(path: Path) -> object:
        gc.collect()
        alive.append(sum(r() is not None for r in refs))
        table = read(path)
        refs.append(weakref.ref(table))
        return table

    monkeypatch.setattr(tables, "read", tracked)
    # Every object made before the aggregation is frozen (left out of the collections, and alive anyway): each
    # gc.collect() then walks only what collect made, the tables among it, not the test process's whole heap
    # (seconds a call, 24 calls).
    gc.freeze()
    try:
        assert len(collect(tmp_path, 12)[0]) == 24
    finally:
        gc.unfreeze()
    # a chunk's results and curves and a window's, never the whole sweep's
    assert len(refs) == 24 and max(alive) <= 2 * (3 + 2), alive


slow = pytest.mark.slow


# ---------------------------------------------------------------- through the command


CALLBACK_FAULTS = {
    "lock": ("pipeline.job.locks:hold", "start"),  # the sweep directory cannot be locked (read-only, no flock)
    "start_parent": ("pipeline.tracking.runs:start_parent", "start"),
    "announce": ("pipeline.tracking:announce_sweep", "start"),
    "collect": ("pipeline.sweep.callbacks:collect", "aggregation"),
    "figures": ("pipeline.outputs.plots:sweep_figures_beside", "aggregation"),
    "summary": ("pipeline.sweep.callbacks:summary", "aggregation"),
    "finish_parent": ("pipeline.tracking.runs:finish_parent", "aggregation"),
}


@pytest.mark.e2e
@pytest.mark.parametrize("fault", CALLBACK_FAULTS, ids=CALLBACK_FAULTS.keys())
def test_a_callback_fault_exits_nonzero_and_ends_the_parent(tmp_path: Path, boundlab_in_process, fault: str,  # noqa: ANN001
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    target, phase = CALLBACK_FAULTS[fault]
    uri, env = _env(tmp_path)
    sweep = tmp_path / "sweep"
    inject_fault(monkeypatch, target)
    proc = boundlab_in_process("-m", "seed=0,1", "n=50", "name=cbfault", f"hydra.sweep.dir={sweep}", cwd=tmp_path, env=env)
    assert proc.returncode == 1, proc.stderr[-3000:]
    lines = [ln for ln in proc.stderr.splitlines() if ln.startswith("boundlab:")]
    assert len(lines) == 1 and f"sweep {phase}" in lines[0] and "injected fault" in lines[0], proc.stderr[-3000:]
    parents, children = _runs(uri, "cbfault")
    assert all(r.info.status != "RUNNING" for r in parents + children)
    if fault not in ("lock", "start_parent"):  # no parent run was made before these
        assert [p.info.status for p in parents] == ["FAILED"]
    assert not sweep.exists() or not list(sweep.glob(".aggregate*"))


def _sweep_files(sweep: Path) -> dict[str, bytes]:
    """What the aggregation writes (Hydra's own multirun.yaml and the parent marker aside)."""
    return {p.name: p.read_bytes() for p in sweep.iterdir()
            if p.is_file() and not p.name.startswith(".") and p.name != "multirun.yaml"}


@slow
@pytest.mark.parametrize("earlier", [False, True], ids=["first_run", "rerun"])
def test_sigterm_during_aggregation_ends_the_parent_killed_and_leaves_whole_files(tmp_path: Path, boundlab,  # noqa: ANN001
                                                                                  earlier: bool) -> None:
    uri, env = _env(tmp_path)
    sweep = tmp_path / "sweep"
    cmd = ["-m", "seed=0,1", "n=50", "name=aggterm", f"hydra.sweep.dir={sweep}"]
    before: dict[str, bytes] = {}
    if earlier:
        assert boundlab(*cmd, cwd=tmp_path, env=env).returncode == 0
        before = _sweep_files(sweep)
    flag = tmp_path / "aggregating"
    _, env = _env(tmp_path, "pipeline.outputs.plots:sweep_figures_beside", BOUNDLAB_FAULT_MODE="hang",
                  BOUNDLAB_FAULT_FLAG=str(flag))
    code, err = signal_once_started(cmd, flag, signal.SIGTERM, tmp_path, env)  # once the aggregation started
    assert code == 130 and "run the same command to resume" in err, err[-3000:]
    parents, children = _runs(uri, "aggterm")
    assert [p.info.status for p in parents] == ["KILLED"] and all(c.info.status == "FINISHED" for c in children)
    assert not list(sweep.glob(".aggregate*")) and not list(sweep.glob("*.tmp"))
    after = _sweep_files(sweep)
    assert after == before  # the previous sweep files whole (or none at all), never part of new ones
    again = boundlab(*cmd, cwd=tmp_path, env=_env(tmp_path)[1])
    assert again.returncode == 0 and again.stdout.count("already done") == 2, again.stderr[-3000:]
    parents, _ = _runs(uri, "aggterm")
    assert [p.info.status for p in parents] == ["FINISHED"]
