"""pipeline.job.identity: a job's identity includes its input files' fingerprint, which follows their content: an
edit that changes the data reruns the job, a touch or a rewrite of the same bytes does not, and a missing file
is seen."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pandas as pd
import pytest
from helpers import fault_env as _env
from helpers import finished_job as _finished_job

from pipeline.job import identity, markers


INPUT_EDITS = {
    "value": (lambda p: p.write_text(p.read_text().replace("1:0.5", "1:0.25")), True),
    "row": (lambda p: p.write_text(p.read_text() + "-1 1:-0.75\n"), True),
    "same_size": (lambda p: p.write_text(p.read_text().replace("1:0.5", "1:0.6")), True),
    "touch": (lambda p: os.utime(p, ns=(time.time_ns() + 10**9,) * 2), False),
    "rewrite_same": (lambda p: p.write_text(p.read_text()), False),
}


def _svm(path: Path) -> Path:
    path.write_text("1 1:0.5 2:0.1\n-1 1:-0.5 2:0.2\n1 1:0.7 2:-0.1\n-1 1:-0.6 2:0.0\n")
    return path


@pytest.mark.parametrize("edit", INPUT_EDITS, ids=INPUT_EDITS.keys())
def test_input_fingerprint_follows_content(tmp_path: Path, edit: str) -> None:
    from pipeline.data.real import File

    path = _svm(tmp_path / "d.svm")
    before = identity.inputs(File(path=str(path)))
    _finished_job(tmp_path / "job", before)
    change, reruns = INPUT_EDITS[edit]
    change(path)
    now = identity.inputs(File(path=str(path)))
    assert (now != before) == reruns
    why = markers.check(tmp_path / "job", "k", now)
    assert (why is not None) == reruns and (not reruns or "input file(s) changed" in why), why


def test_input_fingerprint_of_generated_data_is_empty_and_missing_file_is_seen(tmp_path: Path) -> None:
    from pipeline.data.real import File
    from pipeline.data.synthetic import MarginBinary

    assert identity.inputs(MarginBinary(gamma=0.1, rho=1.0)) == {}
    path = _svm(tmp_path / "d.svm")
    _finished_job(tmp_path / "job", identity.inputs(File(path=str(path))))
    path.unlink()
    assert "input file(s) changed" in markers.check(tmp_path / "job", "k", identity.inputs(File(path=str(path))))


slow = pytest.mark.slow


SWEPT_EDITS = ("same_size", "touch")  # every edit is covered in-process by test_input_fingerprint_follows_content


@slow  # a subprocess per command: each reads the edited file afresh, as a user's next command does
@pytest.mark.parametrize("edit", SWEPT_EDITS)
def test_sweep_over_an_edited_file_reruns_exactly_when_its_content_changed(tmp_path: Path, boundlab, edit: str) -> None:  # noqa: ANN001
    _, env = _env(tmp_path)
    data = _svm(tmp_path / "data.svm")
    sweep = tmp_path / "sweep"
    cmd = ["-m", "dataset=file", f"dataset.path={data}", "seed=0,1", "name=edited", f"hydra.sweep.dir={sweep}"]
    first = boundlab(*cmd, cwd=tmp_path, env=env)
    assert first.returncode == 0, first.stderr[-3000:]
    before = pd.read_parquet(sweep / "results.parquet")
    before_bytes = (sweep / "results.parquet").read_bytes()
    change, reruns = INPUT_EDITS[edit]
    change(data)
    again = boundlab(*cmd, cwd=tmp_path, env=env)
    assert again.returncode == 0, again.stderr[-3000:]
    after = pd.read_parquet(sweep / "results.parquet")
    if reruns:
        assert again.stdout.count("input file(s) changed") == 2 and "already done" not in again.stdout, again.stdout
        assert set(after["data_hash"]).isdisjoint(before["data_hash"])
    else:
        assert again.stdout.count("already done") == 2, again.stdout
        assert (sweep / "results.parquet").read_bytes() == before_bytes
    third = boundlab(*cmd, cwd=tmp_path, env=env)  # nothing changed since: both skipped, table unchanged
    assert third.returncode == 0 and third.stdout.count("already done") == 2, third.stdout
    assert pd.read_parquet(sweep / "results.parquet").equals(after)
