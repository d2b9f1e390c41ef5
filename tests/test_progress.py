"""Long phases of one run show progress on the log; short ones stay silent."""

from __future__ import annotations

import logging
import os
import random
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from pipeline.sweep import progress
from pipeline.data import Stream


def test_a_long_stream_reports_its_progress(monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    monkeypatch.setattr(progress, "EVERY", 0.0)  # as if each chunk took longer than the interval
    data = Stream(gamma=0.1, rho=1.0, n=1000, d=3, chunk=250).generate(np.random.default_rng(0))
    with caplog.at_level(logging.INFO, logger="boundlab"):
        X, _ = data.materialise()
    lines = [r.getMessage() for r in caplog.records if r.getMessage().startswith("[progress]")]
    assert len(lines) == 4 and X.shape == (1000, 3)
    assert "25% (250 of 1000 examples)" in lines[1] and "75% (750 of 1000 examples)" in lines[3]


def test_a_short_phase_logs_nothing(caplog: pytest.LogCaptureFixture) -> None:
    data = Stream(gamma=0.1, rho=1.0, n=1000, d=3, chunk=250).generate(np.random.default_rng(0))
    with caplog.at_level(logging.INFO, logger="boundlab"):
        data.materialise()
    assert not [r for r in caplog.records if r.getMessage().startswith("[progress]")]


def _in_sweep(monkeypatch: pytest.MonkeyPatch, size: int, start: float) -> None:
    from pipeline.sweep import context as sweep

    monkeypatch.setenv(sweep.ENV, sweep.Sweep(driver_pid=os.getpid(), size=size, start=start).to_json())


def test_a_sweeps_lines_count_the_runs_finished_not_the_jobs_number(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The count is what the sweep's processes finished (through a file in its directory), whichever job
    says it: job 7 finishing first says 1 done, a part of 3 runs adds 3; the elapsed time is the line's own."""
    _in_sweep(monkeypatch, 10, 1000.0)
    monkeypatch.setattr(progress.time, "time", lambda: 1020.0)  # every line 20 s after the sweep's start
    with progress.finished(tmp_path, 1, 7) as line:
        assert line.startswith("[1/10, 20 s, ~180 s left] ")
    with progress.finished(tmp_path, 3, 0) as line:
        assert line.startswith("[4/10, 20 s, ~30 s left] ")
    with progress.finished(tmp_path, 6, 2) as line:
        assert line.startswith("[10/10, 20 s, ~0 s left] ")
    progress.forget_tallies(tmp_path)
    assert not list(tmp_path.iterdir())
    with progress.finished(tmp_path, 1, 7) as line:  # the next attempt counts afresh
        assert line.startswith("[1/10, ")


def test_without_a_sweep_directory_the_count_is_the_jobs_number_and_outside_a_sweep_nothing(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with progress.finished(tmp_path, 1, 3) as line:  # no sweep context: a single run
        assert line == ""
    _in_sweep(monkeypatch, 10, time.time())
    with progress.finished(None, 1, 3) as line:
        assert line.startswith("[4/10, ")
    with progress.finished(tmp_path / "gone", 1, 3) as line:  # a directory that cannot hold the tally
        assert line.startswith("[4/10, ")


def _say_finished(directory: str, out: str, n: int, seed: int) -> None:
    rng = random.Random(seed)
    for _ in range(n):
        with progress.finished(Path(directory), 1, 0) as line:
            time.sleep(rng.uniform(0.0, 0.004))  # between its count and its line: another process would pass it
            with open(out, "a") as f:
                f.write(line.split("/")[0].lstrip("[") + "\n")


def test_the_counts_of_parallel_workers_lines_never_go_back(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Three workers finishing runs at once: their lines, in the order they were written, count 1, 2, 3, ...
    (the count and the line under one lock on the tally, which each takes through its own opening of the file as
    a process does; without the lock a later count is written before an earlier one)."""
    _in_sweep(monkeypatch, 90, time.time())
    out = tmp_path / "lines"
    workers = [threading.Thread(target=_say_finished, args=(str(tmp_path), str(out), 30, k)) for k in range(3)]
    for w in workers:
        w.start()
    for w in workers:
        w.join(60)
    assert [int(x) for x in out.read_text().split()] == list(range(1, 91))
