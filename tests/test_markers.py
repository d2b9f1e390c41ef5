"""pipeline.job.markers: what "done" means. A job is done only when its done marker (written last) is whole and
matches its key, every output is there and its data are the data recorded: a truncated, garbled or unpickling
marker, a missing table or tampered data means the job runs again."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from helpers import fault_env as _env
from helpers import finished_job as _finished_job
from helpers import mlflow_store as _store
from helpers import sweep_runs as _runs

from pipeline.job import identity, markers


def _valid_marker() -> str:
    return json.dumps({"key": "k", "code": identity.code_hash(), "data_hash": "h"}) + "\n"


def _corrupt_markers() -> dict[str, bytes]:
    """Generated bad done.json contents: every truncation of a valid marker, JSON of the wrong shape,
    bytes that are not text."""
    valid = _valid_marker().encode()
    bad = {f"truncated@{n}": valid[:n] for n in range(0, len(valid) - 2, 3)}  # len-1: only the newline lost
    shapes = {"list": [1, 2], "list_of_marker": [json.loads(valid)], "number": 3, "null": None, "string": "done",
              "empty_object": {}, "key_not_str": {"key": 1, "code": identity.code_hash()},
              "code_missing": {"key": "k"}, "nested": {"key": {"k": 1}, "code": identity.code_hash()},
              "inputs_not_object": {"key": "k", "code": identity.code_hash(), "inputs": 5}}
    bad |= {f"json_{name}": (json.dumps(v) + "\n").encode() for name, v in shapes.items()}
    bad |= {"binary": bytes(range(256)), "latin1": "{\"key\": \"\xe9\"".encode("latin-1"), "nan_text": b"NaN"}
    return bad


CORRUPT_MARKERS = _corrupt_markers()


def test_intact_marker_is_done(tmp_path: Path) -> None:
    _finished_job(tmp_path)
    assert markers.check(tmp_path, "k") is None and markers.finished(tmp_path)


@pytest.mark.parametrize("content", CORRUPT_MARKERS.values(), ids=CORRUPT_MARKERS.keys())
def test_corrupt_marker_means_not_done(tmp_path: Path, content: bytes) -> None:
    _finished_job(tmp_path)
    (tmp_path / markers.MARKER).write_bytes(content)
    why = markers.check(tmp_path, "k")
    assert why is not None and markers.MARKER in why and "not done" in why, why


@pytest.mark.parametrize("missing", markers.OUTPUTS)
def test_missing_output_means_not_done(tmp_path: Path, missing: str) -> None:
    _finished_job(tmp_path)
    (tmp_path / missing).unlink()
    assert missing in markers.check(tmp_path, "k")


def test_resume_check_never_unpickles(tmp_path: Path) -> None:
    np.savez(tmp_path / "data.npz", X=np.array([{"evil": 1}], dtype=object), y=np.ones(1))
    markers.record(tmp_path, "k", "whatever")
    (tmp_path / "results.parquet").write_bytes(b"")
    assert "unreadable" in markers.check(tmp_path, "k")
    assert markers.check(tmp_path, "other") == "its config changed"


# ---------------------------------------------------------------- through the command (e2e: boundlab_in_process)


@pytest.mark.e2e
@pytest.mark.parametrize(("variant", "force"), [("truncated@30", False), ("binary", True)])  # all variants: unit level above
def test_sweep_with_a_corrupt_done_json_reruns_that_job(tmp_path: Path, boundlab_in_process, variant: str,  # noqa: ANN001
                                                        force: bool) -> None:
    boundlab = boundlab_in_process
    uri, env = _env(tmp_path)
    sweep = tmp_path / "sweep"
    cmd = ["-m", "seed=0,1", "n=50", "name=corrupt", f"hydra.sweep.dir={sweep}"]
    assert boundlab(*cmd, cwd=tmp_path, env=env).returncode == 0
    before = (sweep / "results.parquet").read_bytes()
    (sweep / "1" / markers.MARKER).write_bytes(CORRUPT_MARKERS[variant])
    again = boundlab(*cmd, *(["force=true"] if force else []), cwd=tmp_path, env=env)
    assert again.returncode == 0, again.stderr[-3000:]
    assert again.stdout.count("already done") == (0 if force else 1), again.stdout
    assert "treated as not done" in again.stdout
    assert (sweep / "results.parquet").read_bytes() == before  # same inputs: bit-identical
    key = json.loads((sweep / "1" / markers.MARKER).read_text())["key"]  # rewritten whole by the rerun
    assert markers.check(sweep / "1", key, code=_perceptron_code()) is None
    parents, children = _runs(uri, "corrupt")
    assert all(r.info.status == "FINISHED" for r in parents + children) and len(children) == 2


def _perceptron_code() -> str:
    """The code identity of a Perceptron job on the margin generator (what its marker records)."""
    from types import SimpleNamespace

    from pipeline.data import MarginBinary
    from pipeline.learners import Perceptron

    return identity.job_code(SimpleNamespace(learner=Perceptron(), dataset=MarginBinary(gamma=0.1, rho=1.0)))


@pytest.mark.e2e
def test_a_missing_job_table_reruns_that_job(tmp_path: Path, boundlab_in_process) -> None:  # noqa: ANN001
    boundlab = boundlab_in_process
    _, env = _env(tmp_path)
    sweep = tmp_path / "sweep"
    cmd = ["-m", "seed=0,1", "n=50", "name=missing", f"hydra.sweep.dir={sweep}"]
    assert boundlab(*cmd, cwd=tmp_path, env=env).returncode == 0
    before = (sweep / "results.parquet").read_bytes()
    (sweep / "1" / "results.parquet").unlink()
    again = boundlab(*cmd, cwd=tmp_path, env=env)
    assert again.returncode == 0 and "output(s) are missing: results.parquet" in again.stdout, again.stdout
    assert (sweep / "results.parquet").read_bytes() == before


@pytest.mark.e2e
def test_tampered_data_is_detected_and_recomputed(tmp_path: Path, boundlab_in_process) -> None:  # noqa: ANN001
    boundlab = boundlab_in_process
    _, env = _store(tmp_path, migrated=True)
    grid = ["-m", "seed=0,1", "n=300", "name=integrity"]
    assert boundlab(*grid, cwd=tmp_path, env=env).returncode == 0
    (sweep,) = tmp_path.glob("multirun/integrity/*")
    before = (sweep / "results.parquet").read_bytes()
    data = dict(np.load(sweep / "1" / "data.npz"))
    data["X"][0, 0] += 1e-9
    np.savez(sweep / "1" / "data.npz", **data)
    again = boundlab(*grid, cwd=tmp_path, env=env)
    assert again.returncode == 0 and "no longer matches its recorded hash" in again.stdout
    assert again.stdout.count("already done") == 1
    assert (sweep / "results.parquet").read_bytes() == before
