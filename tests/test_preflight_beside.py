"""pipeline.sweep.preflight._checked_beside and pipeline.cli._sweeps: a sweep's pre-flight in a forked child while
the command imports what it needs anyway (MLflow). The same plan as the checks here, the child's one line and exit
code on a bad value, the checks run here when the child is lost, an interrupt ending the child at once; and which
commands take that way (a sweep, its output this process's own, MLflow not imported yet)."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import pytest

from pipeline import cli, forks
from pipeline.sweep import preflight as pre

pytestmark = [pytest.mark.slow,  # each test forks the checks' child
              pytest.mark.skipif(forks.cores() < 2 or not forks.available(), reason="one core, or no fork: checked here")]

SWEEP = ["-m", "seed=range(0,7)", "gamma=0.1,0.2"]


def _in_child(recorded: Path, then=None):  # noqa: ANN001, ANN202
    """A stand-in for the pre-flight that records the process it runs in, then does ``then`` there (in the
    child only) before the real checks."""
    real, parent = pre.preflight, os.getpid()

    def checks(argv: list[str], in_round: bool = False) -> pre.Plan:  # as the command calls it
        with recorded.open("a") as f:
            f.write(f"{os.getpid()}\n")
        if then is not None and os.getpid() != parent:
            then()
        return real(argv, in_round)

    return checks


def test_the_checks_beside_give_the_plan_the_checks_here_give(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    here = pre.checked_plan(SWEEP)
    monkeypatch.setattr(pre, "preflight", _in_child(tmp_path / "pids"))
    monkeypatch.delitem(sys.modules, "json.tool", raising=False)  # a module the child never needs: imported here
    beside = pre.checked_plan(SWEEP, imports=["json.tool"])
    assert beside == here and len(beside.jobs) == 14
    pids = (tmp_path / "pids").read_text().split()
    assert len(pids) == 1 and int(pids[0]) != os.getpid()  # checked once, in another process
    assert "json.tool" in sys.modules


def test_a_bad_value_checked_beside_is_the_child_s_one_line_and_exit_2(capfd: pytest.CaptureFixture) -> None:
    with pytest.raises(SystemExit) as exit_:
        pre.checked_plan(["-m", "seed=0,1", "gamma=-1"], imports=["json"])
    assert exit_.value.code == 2
    err = capfd.readouterr().err
    assert err.count("\n") == 1 and err.startswith("boundlab: error: gamma"), err


def test_a_bad_value_stops_the_imports_after_the_one_under_way(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                              capfd: pytest.CaptureFixture) -> None:
    imported: list[str] = []
    real, parent = __import__("importlib").import_module, os.getpid()

    def slow_import(name: str, package: str | None = None) -> object:  # here, each import outlasts the child's checks
        if os.getpid() == parent:
            imported.append(name)
            time.sleep(1.0)
        return real(name, package)

    monkeypatch.setattr("importlib.import_module", slow_import)
    with pytest.raises(SystemExit):
        pre.checked_plan(["-m", "seed=0,1", "gamma=-1"], imports=["json", "json.tool", "csv", "wave"])
    assert 1 <= len(imported) < 4, imported
    capfd.readouterr()


def test_a_lost_checks_child_is_checked_here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    here = pre.checked_plan(SWEEP)
    monkeypatch.setattr(pre, "preflight", _in_child(tmp_path / "pids", then=lambda: os._exit(9)))
    assert pre.checked_plan(SWEEP, imports=["json"]) == here
    pids = [int(p) for p in (tmp_path / "pids").read_text().split()]
    assert len(pids) == 2 and pids[0] != os.getpid() and pids[1] == os.getpid()  # the child, lost; then here


def test_a_module_that_will_not_import_is_left_to_the_command(monkeypatch: pytest.MonkeyPatch) -> None:
    """The imports are a head start: one that fails ends them, and the checks' plan is returned as without them (the
    command imports the module where it needs it, and says so there)."""
    here = pre.checked_plan(SWEEP)
    assert pre.checked_plan(SWEEP, imports=["json", "no_such_module_here", "csv"]) == here


@pytest.mark.parametrize("refusal", ["pool", "fork"])
def test_a_system_that_will_not_fork_is_checked_here(refusal: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No semaphores for the pool's queues (no /dev/shm), or a fork refused (a process limit): checked here, once."""
    import concurrent.futures

    here = pre.checked_plan(SWEEP)
    monkeypatch.setattr(pre, "preflight", _in_child(tmp_path / "pids"))

    def refused(*args: object, **kwargs: object) -> None:
        raise OSError(12, "Cannot allocate memory") if refusal == "fork" else OSError(38, "Function not implemented")

    if refusal == "pool":
        monkeypatch.setattr(forks, "pool", refused)
    else:
        monkeypatch.setattr(concurrent.futures.ProcessPoolExecutor, "submit", refused)
    assert pre.checked_plan(SWEEP, imports=["json"]) == here
    assert [int(p) for p in (tmp_path / "pids").read_text().split()] == [os.getpid()]


def test_an_interrupt_while_checking_beside_ends_the_child_at_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import multiprocessing

    monkeypatch.setattr(pre, "preflight", _in_child(tmp_path / "pids", then=lambda: time.sleep(60)))

    real, parent = __import__("importlib").import_module, os.getpid()

    def interrupted(name: str, package: str | None = None) -> object:
        if os.getpid() != parent:  # the child imports as it checks
            return real(name, package)
        while not (tmp_path / "pids").exists():  # the child is checking
            time.sleep(0.01)
        raise KeyboardInterrupt

    monkeypatch.setattr("importlib.import_module", interrupted)
    started = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        pre.checked_plan(SWEEP, imports=["json"])
    assert time.monotonic() - started < 10
    assert not multiprocessing.active_children()
    child = int((tmp_path / "pids").read_text().split()[0])
    with pytest.raises(ProcessLookupError):
        os.kill(child, 0)


@pytest.mark.parametrize(("argv", "beside"), [
    (["-m", "seed=0,1"], True),
    (["--multirun", "seed=0,1"], True),
    (["seed=0"], False),  # a single run: its checks are one job
    (["-m", "seed=0,1", "--help"], False),
    (["-m", "seed=0,1", "--cfg", "job"], False),
    (["-m", "seed=0,1", "--info"], False),
    (["-m", "seed=0,1", "--hydra-help"], False),
    (["-m", "--no-such-flag"], False),  # the pre-flight words it, here
])
def test_a_sweep_is_checked_beside_the_import_of_mlflow(argv: list[str], beside: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delitem(sys.modules, "mlflow", raising=False)
    monkeypatch.setattr(sys, "stdout", sys.__stdout__)
    monkeypatch.setattr(sys, "stderr", sys.__stderr__)
    assert cli._sweeps(argv) is beside


def test_a_sweep_is_checked_here_once_mlflow_is_imported_or_the_output_redirected(monkeypatch: pytest.MonkeyPatch) -> None:
    import io

    monkeypatch.setattr(sys, "stdout", sys.__stdout__)
    monkeypatch.setattr(sys, "stderr", sys.__stderr__)
    monkeypatch.setitem(sys.modules, "mlflow", sys.modules.get("mlflow") or object())
    assert not cli._sweeps(["-m", "seed=0,1"])
    monkeypatch.delitem(sys.modules, "mlflow")
    assert cli._sweeps(["-m", "seed=0,1"])
    monkeypatch.setattr(sys, "stderr", io.StringIO())  # a child's prints would go to its own copy
    assert not cli._sweeps(["-m", "seed=0,1"])


@pytest.mark.parametrize(("uri", "database"), [("", True), ("sqlite:////tmp/x.db", True), ("http://localhost:5000", False),
                                           ("https://mlflow.example.org", False)])
def test_the_database_store_is_imported_unless_the_store_is_a_server(uri: str, database: bool,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MLFLOW_TRACKING_URI", uri)
    assert ("mlflow.store.tracking.sqlalchemy_store" in cli._tracking_imports(["-m", "seed=0,1"])) is database
    given = cli._tracking_imports(["-m", "seed=0,1", f"tracking.uri={uri or 'sqlite:////tmp/y.db'}"])
    assert ("mlflow.store.tracking.sqlalchemy_store" in given) is database
    assert "mlflow" in cli._tracking_imports(["-m"])


def test_a_bad_sweep_from_the_command_is_one_line_and_exit_2(tmp_path: Path, boundlab) -> None:  # noqa: ANN001
    env = {k: v for k, v in os.environ.items() if k != "MLFLOW_TRACKING_URI"}
    env["MLFLOW_TRACKING_URI"] = f"sqlite:///{tmp_path / 'mlflow.db'}"
    proc = boundlab("-m", "seed=0,1", "gamma=-1", cwd=tmp_path, env=env)
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and proc.stderr.startswith("boundlab: error: gamma"), proc.stderr
    assert not (tmp_path / "mlflow.db").exists() and not (tmp_path / "multirun").exists()
