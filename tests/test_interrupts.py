"""Ctrl-C and SIGTERM land where the interrupted code can take them (pipeline.sweep.interrupts).

A signal that arrives while omegaconf, MLflow or an import is inside a call waits for that call to return,
then stops the command like Ctrl-C; anywhere else it stops it at once. The watcher thread of the command
(pipeline.sweep.interrupts.StopGuard) ends a call that keeps it waiting: the slow tests at the end signal the
installed command, and its joblib workers, during a long native call.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import pytest
from helpers import alive as _alive
from helpers import boundlab_command as _command
from helpers import wait_for as _wait_for
from helpers import with_sitecustomize
from omegaconf import ListConfig, OmegaConf

from pipeline.sweep import interrupts


@contextmanager
def handler_on_sigterm(handler: object) -> Iterator[None]:
    previous = signal.signal(signal.SIGTERM, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
        if isinstance(handler, interrupts.Handler):
            handler.cancel()


def send_sigterm_and_wait() -> None:
    """SIGTERM to this process, then Python code long enough for its handler to run (in this frame)."""
    os.kill(os.getpid(), signal.SIGTERM)
    deadline = time.monotonic() + 0.2
    while time.monotonic() < deadline:
        pass


# A thread already traced (coverage, a debugger) is interrupted at once, by design (pipeline.sweep.interrupts):
# these tests are about the waiting.
waits = pytest.mark.skipif(sys.gettrace() is not None, reason="a traced test process: the interrupt does not wait")


def raised_in(raised: pytest.ExceptionInfo) -> str:
    """The function the interrupt was raised in (the handler's own frames left out)."""
    return [e.name for e in raised.traceback if str(e.path) != interrupts.__file__][-1]


def signal_inside_list_assignment(monkeypatch: pytest.MonkeyPatch) -> list:
    """SIGTERM while omegaconf sets a list's second item, after ``append`` made room for it (a None)."""
    set_item, calls = ListConfig._set_item_impl, []

    def set_item_then_signal(self: ListConfig, key: object, value: object) -> None:
        calls.append(value)
        if len(calls) == 2:
            send_sigterm_and_wait()
        set_item(self, key, value)

    monkeypatch.setattr(ListConfig, "_set_item_impl", set_item_then_signal)
    return calls


@waits
def test_a_signal_while_omegaconf_fills_a_list_waits_for_the_assignment(monkeypatch: pytest.MonkeyPatch) -> None:
    # The CI failure: SIGTERM while Hydra assigned a job's overrides (a list) between two jobs.
    cfg = OmegaConf.create({"task": []})
    calls = signal_inside_list_assignment(monkeypatch)

    def assign() -> None:
        cfg.task = ["seed=0", "seed=1", "seed=2"]
        calls.append("the next line")  # the interrupt is raised before it runs

    with handler_on_sigterm(interrupts.Handler()), pytest.raises(KeyboardInterrupt) as raised:
        assign()
    assert list(cfg.task) == ["seed=0", "seed=1", "seed=2"]  # the assignment finished; then the stop
    assert calls == ["seed=0", "seed=1", "seed=2"] and raised_in(raised) == "assign"


def test_raised_where_it_lands_the_same_signal_breaks_omegaconf(monkeypatch: pytest.MonkeyPatch) -> None:
    # What the handler prevents, so the test above can fail: the interrupt leaves the None in the list,
    # and flag_override's exit trips over it; Hydra printed that AttributeError and exited 1.
    cfg = OmegaConf.create({"task": []})
    signal_inside_list_assignment(monkeypatch)
    with handler_on_sigterm(signal.default_int_handler), pytest.raises(BaseException) as raised:  # noqa: PT011 - its type and message are checked below
        cfg.task = ["seed=0", "seed=1", "seed=2"]
    assert raised.type is not KeyboardInterrupt, "omegaconf now takes an interrupt here: it may leave FRAGILE"
    assert "_invalidate_flags_cache" in str(raised.value)


def fragile_caller(package: str):  # noqa: ANN201
    """A function whose frames count as ``package``'s: it calls back, then finishes its work."""
    namespace: dict = {"__name__": f"{package}.store"}
    exec(  # noqa: S102 - a frame of another module's name, for the handler to see
        "def call(callback, done):\n"
        "    callback()\n"
        "    done.append('after the callback')\n"
        "    return len(done)\n", namespace)
    return namespace["call"]


@waits
@pytest.mark.parametrize("package", sorted(interrupts.FRAGILE))
def test_a_signal_inside_any_fragile_library_is_raised_in_its_caller(package: str) -> None:
    call, done, where = fragile_caller(package), [], []

    def caller() -> None:
        where.append("before")
        call(send_sigterm_and_wait, done)
        where.append("after the call")  # the interrupt is raised before this line runs

    with handler_on_sigterm(interrupts.Handler()), pytest.raises(KeyboardInterrupt) as raised:
        caller()
    assert done == ["after the callback"] and where == ["before"]
    assert raised_in(raised) == "caller"
    assert sys.gettrace() is None  # the waiting left no tracer behind


@waits
def test_a_signal_during_an_import_waits_for_the_module_to_be_whole(tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: ANN001
    # Interrupted halfway, an import leaves its submodules in sys.modules without their parent.
    package = tmp_path / "halfway"
    package.mkdir()
    (package / "__init__.py").write_text("from halfway import first\nimport tests_signal\ntests_signal.send()\n"
                                         "from halfway import second\n")
    (package / "first.py").write_text("")
    (package / "second.py").write_text("")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setitem(sys.modules, "tests_signal", type(sys)("tests_signal"))
    sys.modules["tests_signal"].send = send_sigterm_and_wait

    def load() -> None:
        import halfway  # noqa: F401
        sys.modules["tests_signal"].send = None  # the interrupt is raised before this line runs

    try:
        with handler_on_sigterm(interrupts.Handler()), pytest.raises(KeyboardInterrupt) as raised:
            load()
        assert raised_in(raised) == "load" and sys.modules["tests_signal"].send is send_sigterm_and_wait
        assert {"halfway", "halfway.first", "halfway.second"} <= set(sys.modules)
    finally:
        for name in ("halfway", "halfway.first", "halfway.second"):
            sys.modules.pop(name, None)


def test_elsewhere_the_signal_is_raised_at_once() -> None:
    done: list[str] = []

    def work() -> None:
        send_sigterm_and_wait()
        done.append("after")

    with handler_on_sigterm(interrupts.Handler()), pytest.raises(KeyboardInterrupt) as raised:
        work()
    assert done == [] and raised_in(raised) == "send_sigterm_and_wait"


@waits
def test_signals_while_one_waits_are_raised_as_one_interrupt() -> None:
    call, done, raised_at = fragile_caller("mlflow"), [], []

    def twice() -> None:
        send_sigterm_and_wait()
        send_sigterm_and_wait()

    def caller() -> None:
        try:
            call(twice, done)
            done.append("not reached")
        except KeyboardInterrupt:
            raised_at.append(time.monotonic())
        done.append("handled")  # a second interrupt would be raised here

    with handler_on_sigterm(interrupts.Handler(on_raise=lambda: raised_at.append("counted"))):
        caller()
    assert done == ["after the callback", "handled"] and raised_at[0] == "counted" and len(raised_at) == 2


@waits
def test_a_traced_thread_keeps_its_tracer_and_is_interrupted_at_once() -> None:
    call, done = fragile_caller("omegaconf"), []
    events: list[str] = []

    def tracer(frame, event, arg):  # noqa: ANN001, ANN202
        events.append(event)

    sys.settrace(tracer)
    try:
        with handler_on_sigterm(interrupts.Handler()), pytest.raises(KeyboardInterrupt):
            call(send_sigterm_and_wait, done)
        assert sys.gettrace() is tracer
    finally:
        sys.settrace(None)
    assert done == [] and events


@pytest.mark.parametrize("signalled", [True, False])
def test_a_stop_that_surfaced_as_another_error_exits_130(tmp_path, monkeypatch: pytest.MonkeyPatch,  # noqa: ANN001
                                                         capsys: pytest.CaptureFixture, signalled: bool) -> None:
    # A library that turns the interrupt into its own error, which Hydra reports and exits 1 with:
    # once a stop was asked for, the command says it was interrupted, and how to resume.
    from pipeline import cli

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("MLFLOW_TRACKING_URI", f"sqlite:///{tmp_path / 'mlflow.db'}")

    def app() -> None:
        try:
            if signalled:
                send_sigterm_and_wait()
            raise RuntimeError("a job's error")
        except BaseException:  # noqa: BLE001 - as Hydra's run: any failure, an interrupt included, exits 1
            raise SystemExit(1) from None

    monkeypatch.setattr(cli, "_app", app)
    with pytest.raises(SystemExit) as exit_:
        cli.main(["n=50"])
    err = capsys.readouterr().err
    assert exit_.value.code == (130 if signalled else 1)
    assert ("run the same command to resume" in err) == signalled, err


def test_a_stop_during_the_checks_exits_130_with_one_line(tmp_path, monkeypatch: pytest.MonkeyPatch,  # noqa: ANN001
                                                          capsys: pytest.CaptureFixture) -> None:
    # The checks may create the MLflow store's tables: the command's handlers are in place before them.
    from pipeline import cli
    from pipeline.sweep import preflight

    monkeypatch.chdir(tmp_path)
    checks = preflight.preflight

    def checks_then_signal(argv):  # noqa: ANN001, ANN202
        plan = checks(argv)
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(0.2)
        return plan

    monkeypatch.setattr(preflight, "preflight", checks_then_signal)
    with pytest.raises(BaseException) as stopped:  # noqa: PT011 - a KeyboardInterrupt escaping is the failure
        cli.main(["n=50"])
    err = capsys.readouterr().err
    assert stopped.type is SystemExit and stopped.value.code == 130, stopped
    assert err.strip().splitlines() == ["boundlab: interrupted; finished jobs are kept: run the same command to resume"]
    assert not (tmp_path / "outputs").exists()


WAITING_CALL = """\
import sys, time
from pipeline.sweep.interrupts import StopGuard
guard = StopGuard(grace=0.3, patience=2.0)
namespace = {"__name__": "mlflow.store"}
exec("def call(seconds):\\n    import time\\n    time.sleep(seconds)\\n", namespace)
print("ready", flush=True)
try:
    namespace["call"](float(sys.argv[1]))
    print("not interrupted", flush=True)
except KeyboardInterrupt:
    print("interrupted after the call", flush=True)
    sys.exit(130)
"""


@pytest.mark.slow
@pytest.mark.parametrize(("seconds", "out", "last_line"), [
    (1.0, "interrupted after the call", None),  # longer than the grace, within the patience: not cut
    (60.0, "", "boundlab: stopped by SIGTERM during a call into mlflow; finished jobs are kept: run the same "
               "command to resume"),
])
def test_the_watcher_gives_a_call_the_interrupt_waits_for_its_patience(tmp_path, seconds: float, out: str,  # noqa: ANN001
                                                                       last_line: str | None) -> None:

    proc = subprocess.Popen([sys.executable, "-c", WAITING_CALL, str(seconds)], cwd=tmp_path, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline() == "ready\n"
        time.sleep(0.2)
        sent = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        stdout, stderr = proc.communicate(timeout=30)
        took = time.monotonic() - sent
    finally:
        proc.kill()
    assert proc.returncode == 130 and stdout.strip() == out, (proc.returncode, stdout, stderr[-2000:])
    if last_line is None:  # it waited for the call (0.8 s more), past the grace
        assert took > 0.7, took
    else:  # it waited the patience, then stopped within seconds
        assert stderr.strip().splitlines()[-1] == last_line and 1.9 < took < 10, (took, stderr[-2000:])


@pytest.mark.slow
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_stop_while_a_new_store_is_migrated_leaves_a_store_the_rerun_uses(tmp_path, boundlab, sig: int) -> None:  # noqa: ANN001
    # MLflow's migrations cut halfway leave a temporary table behind: the next command then fails on
    # "table _alembic_tmp_... already exists", for good. The stop waits for them.
    env = {**os.environ, "MLFLOW_TRACKING_URI": f"sqlite:///{tmp_path / 'mlflow.db'}"}
    argv = ["-m", "seed=0,1", "n=100", "d=5", "name=migrating"]
    exe = str(Path(sys.executable).parent / "boundlab")
    proc = subprocess.Popen([exe, *argv], cwd=tmp_path, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            text=True)
    try:
        err = ""
        while "Updating database tables" not in err:  # MLflow's own log line, as the migrations begin
            line = proc.stderr.readline()
            assert line, f"the command ended before migrating a store: {err[-2000:]}"
            err += line
        time.sleep(0.3)  # into the migrations, which take about a second
        proc.send_signal(sig)
        err += proc.stderr.read()
        code = proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert code == 130 and err.strip().splitlines()[-1] == (
        "boundlab: interrupted; finished jobs are kept: run the same command to resume"), err[-2000:]
    again = boundlab(*argv, cwd=tmp_path, env=env)
    assert again.returncode == 0, again.stderr[-2000:]


@pytest.mark.slow  # joblib's worker processes
def test_the_command_shuts_joblibs_workers_down_while_it_still_handles_signals() -> None:
    # Left to the interpreter's exit, loky joined them after the handlers were restored: a Ctrl-C in that
    # second printed a KeyboardInterrupt traceback under a sweep that had finished.
    import joblib
    from joblib.externals.loky import reusable_executor

    assert joblib.Parallel(n_jobs=2, backend="loky")(joblib.delayed(abs)(-i) for i in range(4)) == [0, 1, 2, 3]
    executor = reusable_executor._executor
    workers = list(executor._processes.values())
    assert workers and all(w.is_alive() for w in workers)
    interrupts.stop_workers()
    assert not any(w.is_alive() for w in workers)


# ---------------------------------------------------------------- signals during long native calls, through the installed command


# A long call into C that releases the GIL and never checks for signals, as HiGHS, Clarabel or a numba
# kernel: OpenSSL's PBKDF2 with a huge iteration count (minutes); made where BOUNDLAB_NATIVE_AT names.
NATIVE_HANG = """\
import os
where = os.environ.get("BOUNDLAB_NATIVE_AT")
if where:
    import hashlib, importlib
    module_name, _, attr = where.partition(":")
    module = importlib.import_module(module_name)
    original = getattr(module, attr)
    def hang(*args, **kwargs):
        open(os.environ["BOUNDLAB_NATIVE_FLAG"] + "." + str(os.getpid()), "w").close()
        hashlib.pbkdf2_hmac("sha256", b"boundlab", b"salt", 500_000_000)
        return original(*args, **kwargs)
    setattr(module, attr, hang)
"""


@pytest.mark.slow
@pytest.mark.parametrize(("where", "sig", "sweep"), [
    ("pipeline.solvers.max_margin:_separating_direction", signal.SIGTERM, True),  # the LP, before the job's run opens
    ("pipeline.solvers.max_margin:_separating_direction", signal.SIGINT, False),
    ("pipeline.job.run:run", signal.SIGINT, True),  # inside the job's open run
    ("pipeline.job.run:run", signal.SIGTERM, False),
])
def test_a_signal_during_a_long_native_call_stops_the_run_within_seconds(tmp_path: Path, svm_file: Path, where: str,
                                                                          sig: int, sweep: bool) -> None:
    import mlflow

    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    cache, flag = tmp_path / "cache", tmp_path / "in-native-call"
    env = with_sitecustomize(tmp_path, NATIVE_HANG, {**os.environ, "MLFLOW_TRACKING_URI": uri, "BOUNDLAB_CACHE": str(cache),
                                                     "BOUNDLAB_NATIVE_AT": where, "BOUNDLAB_NATIVE_FLAG": str(flag)})
    argv = [*_command(), *(["-m", "seed=0,1"] if sweep else []), "dataset=file", f"dataset.path={svm_file}", "name=native"]
    proc = subprocess.Popen(argv, cwd=tmp_path, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        _wait_for(lambda: list(tmp_path.glob("in-native-call.*")), 300, "the run to enter the native call")
        time.sleep(0.5)
        sent = time.monotonic()
        proc.send_signal(sig)
        code = proc.wait(timeout=60)
        took = time.monotonic() - sent
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    err = proc.stderr.read()
    assert code == 130 and took < 6, (code, took, err[-2000:])
    assert err.strip().splitlines()[-1] == (f"boundlab: stopped by {signal.Signals(sig).name} during a long native call; "
                                            "finished jobs are kept: run the same command to resume")
    runs = mlflow.MlflowClient(tracking_uri=uri).search_runs(
        [e.experiment_id for e in mlflow.MlflowClient(tracking_uri=uri).search_experiments()])
    # the sweep's parent and an open job run end KILLED (a single run stopped while preparing its data has none)
    assert len(runs) == int(sweep) + int(where == "pipeline.job.run:run")
    assert all(r.info.status == "KILLED" for r in runs), [(r.info.run_name, r.info.status) for r in runs]
    if where == "pipeline.job.run:run":  # the job's run was open: it says why it ended
        (child,) = [r for r in runs if "mlflow.parentRunId" in r.data.tags] if sweep else runs
        assert f"{signal.Signals(sig).name} during a long native call" in child.data.tags["boundlab.error"]
    # no cache entry from the interrupted job, whole or partial
    assert not [p for p in cache.rglob("*") if p.is_file() and "lp-highs" in p.name and where.endswith("direction")]
    assert not list(cache.rglob("*.tmp"))


@pytest.mark.slow
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
@pytest.mark.parametrize("launcher", ["joblib", "fork"])
def test_stopping_a_sweep_whose_workers_are_in_native_calls(tmp_path: Path, sig: int, launcher: str) -> None:
    """The driver stops at once; its workers (joblib's fresh processes, or forked from the driver) are gone
    within seconds; every run it started ends KILLED."""
    import mlflow

    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    env = with_sitecustomize(tmp_path, NATIVE_HANG, {**os.environ, "MLFLOW_TRACKING_URI": uri,
                                                     "BOUNDLAB_NATIVE_AT": "pipeline.job.run:run",
                                                     "BOUNDLAB_NATIVE_FLAG": str(tmp_path / "in-native-call")})
    argv = [*_command(), "-m", f"hydra/launcher={launcher}", "hydra.launcher.n_jobs=2", "seed=0,1,2", "n=100", "d=5"]
    proc = subprocess.Popen(argv, cwd=tmp_path, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        _wait_for(lambda: len(list(tmp_path.glob("in-native-call.*"))) == 2, 300, "two workers in a native call")
        workers = [int(p.name.rsplit(".", 1)[1]) for p in tmp_path.glob("in-native-call.*")]
        sent = time.monotonic()
        proc.send_signal(sig)
        assert proc.wait(timeout=60) == 130
        assert time.monotonic() - sent < 6
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    _wait_for(lambda: not any(_alive(w) for w in workers), 15, "the workers to stop")
    client = mlflow.MlflowClient(tracking_uri=uri)
    runs = client.search_runs([e.experiment_id for e in client.search_experiments()])
    assert len(runs) == 3 and all(r.info.status == "KILLED" for r in runs), [(r.info.run_name, r.info.status) for r in runs]


QUICK_EXIT = """
import logging, sys, threading, time
from pipeline.sweep.interrupts import quick_exit
log = logging.getLogger("t")
handler = logging.FileHandler(sys.argv[1])
log.addHandler(handler)
log.warning("last line")  # buffered until the handler is flushed
sys.stdout.write("no newline")  # a pipe: block-buffered
if sys.argv[3] == "thread":  # a live non-daemon thread: a normal exit joins it
    threading.Thread(target=lambda: (time.sleep(0.5), open(sys.argv[1] + ".joined", "w").close())).start()
quick_exit(eval(sys.argv[2]))
"""


@pytest.mark.slow
@pytest.mark.parametrize(("code", "status", "stderr"),
                         [("None", 0, ""), ("3", 3, ""), ("'why it stopped'", 1, "why it stopped\n")])
@pytest.mark.parametrize("thread", ["none", "thread"])
def test_quick_exit_ends_as_sys_exit_would(tmp_path: Path, code: str, status: int, stderr: str, thread: str) -> None:
    """The console script's exit (``interrupts.quick_exit``) skips the modules' teardown only: its status
    and message are sys.exit's, the exit handlers ran (the log line is in the file), the streams were
    flushed, and a live non-daemon thread is waited for as a normal exit waits for it."""
    log_file = tmp_path / "t.log"
    proc = subprocess.run([sys.executable, "-c", QUICK_EXIT, str(log_file), code, thread], capture_output=True,
                          text=True, timeout=60, env={**os.environ, "PYTHONPATH": str(Path(__file__).parents[1])})
    assert (proc.returncode, proc.stdout, proc.stderr) == (status, "no newline", stderr)
    assert log_file.read_text() == "last line\n"
    assert (tmp_path / "t.log.joined").exists() == (thread == "thread")



class _GoneReader:
    """A stdout whose reader has gone: every write raises BrokenPipeError, as a closed pipe's does."""

    def write(self, text: str) -> int:
        raise BrokenPipeError(32, "Broken pipe")

    def flush(self) -> None:
        pass


@pytest.mark.parametrize("how", ["print", "write", "around"])
def test_a_reader_that_has_gone_ends_the_command_quietly(how: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Whether the command prints, writes to sys.stdout inside code that reports every Exception (Hydra's
    printing of --cfg), or writes around sys.stdout: SystemExit with the closed pipe's status, stdout pointed
    at /dev/null (recorded here, not done to the test's own stdout), and sys.stdout given back."""
    moved: list[int] = []
    monkeypatch.setattr(interrupts.os, "dup2", lambda fd, to: moved.append(to))
    gone = _GoneReader()
    monkeypatch.setattr(sys, "stdout", gone)

    def main() -> int:
        if how == "print":
            print("text")
        elif how == "write":
            try:
                sys.stdout.write("text")
            except Exception:  # noqa: BLE001 - what Hydra's run_and_report does with an error
                return 1
        else:
            raise BrokenPipeError(32, "Broken pipe")
        return 0

    with pytest.raises(SystemExit) as stop:
        interrupts.until_the_reader_leaves(main)
    assert stop.value.code == interrupts.CLOSED_PIPE == 141
    assert moved == [sys.__stdout__.fileno()] and sys.stdout is gone


@pytest.mark.slow
@pytest.mark.parametrize("argv", [["--help"], ["--cfg", "job"]])
def test_the_command_piped_into_a_reader_that_has_gone_says_nothing(argv: list[str]) -> None:
    """``boundlab --cfg job | head -1`` with the reader gone before the first line: exit 141, no traceback."""
    read, write = os.pipe()
    os.close(read)
    try:
        proc = subprocess.run([*_command(), *argv], stdout=write, stderr=subprocess.PIPE, text=True, timeout=120)
    finally:
        os.close(write)
    assert (proc.returncode, proc.stderr) == (interrupts.CLOSED_PIPE, "")


def test_the_command_collects_cycles_at_its_own_pace(monkeypatch: pytest.MonkeyPatch) -> None:
    """The ``boundlab`` command sets the cycle collector's thresholds before its work (a seed round spent ~10 % of
    its time in full collections at Python's own: docs/performance.md)."""
    import gc

    from pipeline import cli

    class Ended(Exception):
        pass

    seen = []

    def ended(code: object = 0) -> None:
        raise Ended(code)

    monkeypatch.setattr(cli, "main", lambda: seen.append(gc.get_threshold()))
    monkeypatch.setattr(interrupts, "quick_exit", ended)
    threshold = gc.get_threshold()
    gc.set_threshold(700, 10, 10)
    try:
        with pytest.raises(Ended):
            cli.command()
    finally:
        gc.set_threshold(*threshold)
    assert seen == [interrupts.GC_THRESHOLD] and interrupts.GC_THRESHOLD[0] > 700
