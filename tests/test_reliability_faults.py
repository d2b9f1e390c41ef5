"""Reliability, round two: stale results after an input file changes, faults outside the learner step,
faults in the sweep callbacks, and an interrupted aggregation.

Faults wrap one named function to raise (or hang) on a chosen call: in a sweep run in this process
(``boundlab_in_process``) by ``helpers.inject_fault``; in a ``boundlab`` subprocess, for the tests that
signal it, by a ``sitecustomize.py`` on ``PYTHONPATH`` (:data:`INJECTOR`).
"""

from __future__ import annotations

import json
import os
import signal
import time
from collections import Counter
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from helpers import inject_fault, migrated_store, signal_once_started, with_sitecustomize

from pipeline import identity, markers, sweep, tracking
from pipeline.callbacks import collect

# Wraps BOUNDLAB_FAULT ("module:Attr.path") so that call number BOUNDLAB_FAULT_CALL (0: every call)
# raises RuntimeError('injected fault ...'), or, with BOUNDLAB_FAULT_MODE=hang, touches
# BOUNDLAB_FAULT_FLAG and sleeps (to be interrupted from outside).
INJECTOR = """\
import os
target = os.environ.get("BOUNDLAB_FAULT")
if target:
    import functools, importlib, time
    module_name, _, path = target.partition(":")
    owner = importlib.import_module(module_name)
    *parents, attr = path.split(".")
    for p in parents:
        owner = getattr(owner, p)
    original = getattr(owner, attr)
    which = int(os.environ.get("BOUNDLAB_FAULT_CALL", "0"))
    calls = [0]

    @functools.wraps(original)
    def faulty(*args, **kwargs):
        calls[0] += 1
        if which in (0, calls[0]):
            if os.environ.get("BOUNDLAB_FAULT_MODE") == "hang":
                open(os.environ["BOUNDLAB_FAULT_FLAG"], "w").close()
                time.sleep(300)
            raise RuntimeError(f"injected fault in {path} (call {calls[0]})")
        return original(*args, **kwargs)

    setattr(owner, attr, faulty)
"""


def _env(tmp_path: Path, fault: str | None = None, call: int = 0, **extra: str) -> tuple[str, dict[str, str]]:
    uri = migrated_store(tmp_path / "mlflow.db")
    env = {**os.environ, "MLFLOW_TRACKING_URI": uri, **extra}
    if fault:
        env = with_sitecustomize(tmp_path, INJECTOR, env | {"BOUNDLAB_FAULT": fault, "BOUNDLAB_FAULT_CALL": str(call)})
    return uri, env


def _runs(uri: str, experiment: str) -> tuple[list, list]:
    """(parent runs, child runs) of ``experiment`` that are not deleted."""
    import mlflow

    client = mlflow.MlflowClient(tracking_uri=uri)
    exp = client.get_experiment_by_name(experiment)
    runs = client.search_runs([exp.experiment_id], max_results=1000) if exp else []
    return ([r for r in runs if "mlflow.parentRunId" not in r.data.tags],
            [r for r in runs if "mlflow.parentRunId" in r.data.tags])


# ---------------------------------------------------------------- unit level: resume markers, parent marker

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


def _finished_job(out: Path, sources: dict[str, str] | None = None) -> None:
    """A job directory as a finished run of key 'k' leaves it."""
    X, y = np.eye(3), np.array([1.0, -1.0, 1.0])
    out.mkdir(parents=True, exist_ok=True)
    markers.save_data(out / "data.npz", X, y)
    for name in markers.OUTPUTS:
        pd.DataFrame({"run": ["k"], "v": [1.0]}).to_parquet(out / name)
    from pipeline.data.certify import content_hash

    markers.record(out, "k", content_hash(X, y), sources=sources)


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


PARENT_MARKERS = {
    "empty": "", "blank": " \n\n", "one_field": "0123456789abcdef0123456789abcdef\n",
    "three_fields": "0123456789abcdef0123456789abcdef s x\n", "not_a_run_id": "parent sweep\n",
    "short_id": "0123 sweep\n", "upper_hex": "0123456789ABCDEF0123456789ABCDEF sweep\n",
    "binary": "\x00\x01\x02 \x03", "truncated": "0123456789abcdef01234",
}


@pytest.mark.parametrize("content", PARENT_MARKERS.values(), ids=PARENT_MARKERS.keys())
def test_garbled_parent_marker_means_no_parent(tmp_path: Path, content: str, monkeypatch: pytest.MonkeyPatch,
                                                caplog: pytest.LogCaptureFixture) -> None:
    (tmp_path / tracking.PARENT_FILE).write_text(content)
    monkeypatch.delenv(sweep.ENV, raising=False)
    assert tracking.read_parent_marker(tmp_path) is None
    assert tracking.resume_parent("sqlite:///never-opened.db", tmp_path) is None  # no store touched
    assert tracking.sweep_context(tmp_path) == (None, "")
    assert "no parent run to resume" in caplog.text


def test_valid_parent_marker_round_trips(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(sweep.ENV, raising=False)
    tracking.announce_sweep(tmp_path, "0123456789abcdef0123456789abcdef", "s-1")
    assert sweep.current().parent_run_id == "0123456789abcdef0123456789abcdef"
    monkeypatch.delenv(sweep.ENV)  # a job that did not inherit the context: the marker tells
    assert tracking.sweep_context(tmp_path) == ("0123456789abcdef0123456789abcdef", "s-1")
    assert not list(tmp_path.glob("*.tmp"))


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


# ---------------------------------------------------------------- sweeps
# In this process (e2e; boundlab_in_process: the command's main, its callbacks and its jobs run here, faults
# injected by inject_fault), except where the test is about the process (slow): a signal, a fresh read.

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


JOB_FAULTS = {  # where, and the call that fails (2: job 1 of the sweep)
    "prepare": "pipeline.run:prepare",
    "resume_check": "pipeline.markers:check",
    "input_fingerprint": "pipeline.identity:inputs",
    "tracking_open": "pipeline.tracking:JobRun.__init__",
    "experiment_lookup": "pipeline.tracking:experiment_id",
    "run": "pipeline.run:run",
    "write": "pipeline.stages:write",
    "tracking_finish": "pipeline.tracking:JobRun.finish",
    "record": "pipeline.markers:record",
}


# one sweep per fault: the points before the run opens, the opening itself, and after it
SWEPT_JOB_FAULTS = ("prepare", "resume_check", "tracking_open", "run", "record")


@pytest.mark.e2e
@pytest.mark.parametrize("fault", [JOB_FAULTS[k] for k in SWEPT_JOB_FAULTS], ids=SWEPT_JOB_FAULTS)
def test_a_job_fault_anywhere_is_recorded_and_the_sweep_still_aggregates(tmp_path: Path, boundlab_in_process,  # noqa: ANN001
                                                                          fault: str, monkeypatch: pytest.MonkeyPatch) -> None:
    boundlab = boundlab_in_process
    # experiment_id is called once in the start callback (start_parent) before the jobs: its call 3 is job 1's
    call = 3 if fault.endswith("experiment_id") else 2
    uri, env = _env(tmp_path)
    sweep = tmp_path / "sweep"
    with monkeypatch.context() as faults:
        inject_fault(faults, fault, call)
        proc = boundlab("-m", "seed=0,1", "n=50", "name=jobfault", f"hydra.sweep.dir={sweep}", cwd=tmp_path, env=env)
    assert proc.returncode == 1, proc.stderr[-3000:]
    assert "1 job(s) failed" in proc.stderr and f"{sweep / '1'} (seed=1" in proc.stderr, proc.stderr[-3000:]
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
    table = pd.read_parquet(sweep / "results.parquet")
    assert len(table) and set(table["seed"]) == {0}
    assert "injected fault" in (sweep / "1" / "error.txt").read_text()
    assert not (sweep / "1" / markers.MARKER).exists() and (sweep / "0" / markers.MARKER).exists()
    assert json.loads((sweep / "metrics.json").read_text())["failed_jobs"] == 1
    parents, children = _runs(uri, "jobfault")
    assert [p.info.status for p in parents] == ["FAILED"]
    statuses = Counter(c.info.status for c in children)
    assert statuses["RUNNING"] == 0 and statuses["FINISHED"] == 1
    failed = [c for c in children if c.info.status == "FAILED"]
    # a FAILED run whenever one can be opened: every fault here but the one in opening it (whose retry
    # for the failure record succeeds, call 3) leaves exactly one
    assert len(failed) == 1 and "injected fault" in failed[0].data.tags["boundlab.error"]

    clean = boundlab("-m", "seed=0,1", "n=50", "name=jobfault", f"hydra.sweep.dir={sweep}", cwd=tmp_path,
                     env=_env(tmp_path)[1])  # the fault gone, the same command completes only job 1
    assert clean.returncode == 0, clean.stderr[-3000:]
    assert clean.stdout.count("already done") == 1 and not (sweep / "1" / "error.txt").exists()
    assert set(pd.read_parquet(sweep / "results.parquet")["seed"]) == {0, 1}


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


CALLBACK_FAULTS = {
    "lock": ("pipeline.locks:hold", "start"),  # the sweep directory cannot be locked (read-only, no flock)
    "start_parent": ("pipeline.tracking:start_parent", "start"),
    "announce": ("pipeline.tracking:announce_sweep", "start"),
    "collect": ("pipeline.callbacks:collect", "aggregation"),
    "figures": ("pipeline.plots:sweep_figures", "aggregation"),
    "summary": ("pipeline.callbacks:summary", "aggregation"),
    "finish_parent": ("pipeline.tracking:finish_parent", "aggregation"),
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


@pytest.mark.e2e
@pytest.mark.parametrize("content", ["abc def ghi\n"], ids=["three_words"])  # every garbling: unit level above
def test_a_garbled_parent_marker_starts_a_new_parent(tmp_path: Path, boundlab_in_process, content: str) -> None:  # noqa: ANN001
    boundlab = boundlab_in_process
    uri, env = _env(tmp_path)
    sweep = tmp_path / "sweep"
    cmd = ["-m", "seed=0,1", "n=50", "name=marker", f"hydra.sweep.dir={sweep}"]
    assert boundlab(*cmd, cwd=tmp_path, env=env).returncode == 0
    (sweep / tracking.PARENT_FILE).write_text(content)
    again = boundlab(*cmd, cwd=tmp_path, env=env)
    assert again.returncode == 0, again.stderr[-3000:]
    assert "no parent run to resume" in again.stdout + again.stderr
    parents, _ = _runs(uri, "marker")
    assert len(parents) == 2 and all(p.info.status == "FINISHED" for p in parents)
    assert tracking.read_parent_marker(sweep) is not None


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
    _, env = _env(tmp_path, "pipeline.plots:sweep_figures", BOUNDLAB_FAULT_MODE="hang", BOUNDLAB_FAULT_FLAG=str(flag))
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


# ---------------------------------------------------------------- round three, class 9: every end of a sweep ends its parent

def _no_run_left_running(uri: str, experiment: str) -> tuple[list, list]:
    parents, children = _runs(uri, experiment)
    assert parents and all(p.info.status != "RUNNING" for p in parents), [p.info.status for p in parents]
    assert all(c.info.status != "RUNNING" for c in children), [c.info.status for c in children]
    return parents, children


@pytest.mark.e2e
@pytest.mark.parametrize("where", ["hydra-saves-a-config", "the-launcher", "the-sweep-directory"])
def test_a_sweep_that_dies_before_its_end_ends_its_parent(tmp_path: Path, boundlab_in_process, where: str,  # noqa: ANN001
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """A fault outside every job (a full disk while Hydra saves a job's config, a launcher that raises, a
    sweep directory gone mid-way) stops the sweep before its end hook: the parent still ends FAILED, and
    the same command then resumes and finishes."""
    import hydra.core.utils
    from hydra._internal.core_plugins.basic_launcher import BasicLauncher

    uri, env = _env(tmp_path)
    cmd = ["-m", "seed=0,1,2", "n=50", "name=stranded", f"hydra.sweep.dir={tmp_path / 'sweep'}"]
    calls = [0]
    if where == "hydra-saves-a-config":
        original = hydra.core.utils._save_config

        def full(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202
            calls[0] += 1
            if calls[0] == 4:  # the second job's first file (three per job)
                raise OSError(28, "No space left on device")
            return original(*args, **kwargs)
        monkeypatch.setattr(hydra.core.utils, "_save_config", full)
    elif where == "the-launcher":
        def broken(self, job_overrides, initial_job_idx):  # noqa: ANN001, ANN202
            raise RuntimeError("the launcher cannot start its workers")
        monkeypatch.setattr(BasicLauncher, "launch", broken)
    else:
        import pipeline.stages

        original_job = pipeline.stages.job

        def vanish(cfg):  # noqa: ANN001, ANN202
            calls[0] += 1
            if calls[0] == 2:
                raise OSError(2, "No such file or directory (the sweep directory was removed)")
            return original_job(cfg)
        monkeypatch.setattr(pipeline.stages, "job", vanish)
    done = boundlab_in_process(*cmd, cwd=tmp_path, env=env)
    assert done.returncode != 0
    assert "its parent run ended FAILED" in done.stderr and "run the same command to resume" in done.stderr, done.stderr[-2000:]
    parents, _ = _no_run_left_running(uri, "stranded")
    assert [p.info.status for p in parents] == ["FAILED"]
    monkeypatch.undo()
    again = boundlab_in_process(*cmd, cwd=tmp_path, env=env)
    assert again.returncode == 0, again.stderr[-2000:]
    parents, children = _no_run_left_running(uri, "stranded")
    assert [p.info.status for p in parents] == ["FINISHED"]
    assert sorted(c.info.status for c in children if c.info.lifecycle_stage == "active") == ["FINISHED"] * 3


@slow
def test_a_closed_terminal_sighup_stops_a_sweep_like_ctrl_c(tmp_path: Path) -> None:
    flag = tmp_path / "running"
    uri, env = _env(tmp_path, "pipeline.run:run", BOUNDLAB_FAULT_MODE="hang", BOUNDLAB_FAULT_FLAG=str(flag))
    code, err = signal_once_started(["-m", "seed=0,1", "n=50", "name=hangup", f"hydra.sweep.dir={tmp_path / 'sweep'}"],
                                    flag, signal.SIGHUP, tmp_path, env, timeout=60)  # once the job started
    assert code == 130 and "run the same command to resume" in err, err[-3000:]
    parents, children = _no_run_left_running(uri, "hangup")
    assert [p.info.status for p in parents] == ["KILLED"] and [c.info.status for c in children] == ["KILLED"]
