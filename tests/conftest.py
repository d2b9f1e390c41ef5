"""Shared fixtures: every test tracks to its own temporary MLflow store, never the project's."""

from __future__ import annotations

import itertools
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Callable, Iterable, Iterator, Sequence

import pytest
from helpers import file_order, names_used, tier_mismatches

ROOT = Path(__file__).resolve().parents[1]

# --- the order of the test files: longest first --------------------------------------------------------
# tests/durations.json holds each file's measured seconds by tier (setup, call and teardown of its tests),
# written by `pytest ... --store-durations` (docs/testing.md). A file it does not know is estimated from its
# tests' tiers. Stale figures only make the balance worse, never a result.
DURATIONS = ROOT / "tests" / "durations.json"
TIERS = ("slow", "long", "e2e")  # a test's tier: the first of these marks it has, else "fast" (docs/testing.md)
ESTIMATE = {"slow": 15.0, "long": 7.0, "e2e": 5.0, "fast": 0.1}  # seconds per test, for files not in DURATIONS
_measured: dict[str, dict[str, float]] = {}


def _file(nodeid: str) -> str:
    return nodeid.split("::", 1)[0]


def _tier(names: Iterable[str]) -> str:
    names = set(names)
    return next((t for t in TIERS if t in names), "fast")


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--store-durations", action="store_true",
                     help="write each test file's measured seconds, by tier, into tests/durations.json (a file or tier that "
                          "did not run keeps its figure): the order in which --dist loadfile hands the files out")


def pytest_configure(config: pytest.Config) -> None:
    if hasattr(config.option, "loadscopereorder"):  # pytest-xdist: hand the files out in the order below
        config.option.loadscopereorder = False


@pytest.hookimpl(trylast=True)  # after -m and -k have deselected
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Files in decreasing order of their time, tests within a file as written.

    ``--dist loadfile`` hands whole files to the workers in collection order (once :func:`pytest_configure` has
    turned off xdist's own reorder, which puts the files with the most tests first: that sent the few long
    files of subprocess tests last, to one worker, while the other had finished). Longest first, the last
    files handed out are short, and the workers finish close together. Every worker computes the same order
    (they must agree). Without xdist it changes nothing but the order."""
    wrong = tier_mismatches((item.nodeid, {m.name for m in item.iter_markers()}, set(getattr(item, "fixturenames", ())),
                             _names(item)) for item in items)
    if wrong:
        raise pytest.UsageError("tests in the wrong tier (docs/testing.md, \"Tiers\"):\n  " + "\n  ".join(wrong))
    known = json.loads(DURATIONS.read_text()) if DURATIONS.exists() else {}
    order = file_order([(_file(item.nodeid), _tier(m.name for m in item.iter_markers())) for item in items], known, ESTIMATE)
    rank = {file: k for k, file in enumerate(order)}
    items.sort(key=lambda item: rank[_file(item.nodeid)])  # stable: a file's tests keep their order
    if items and all(_tier(m.name for m in item.iter_markers()) == "fast" for item in items):
        _one_blas_thread()


def _names(item: pytest.Item) -> set[str]:
    """The names a test's own function reads (:func:`helpers.names_used`; none for a doctest)."""
    function = getattr(item, "function", None)
    code = getattr(function, "__code__", None)
    return names_used(code) if code is not None else set()


_LIMITS: list[object] = []  # the BLAS limit of this test process, kept for the session


def _one_blas_thread() -> None:
    """BLAS on one thread in a process that runs only fast tests (``-m "not slow and not long and not e2e"``).
    Their matrices are small: OpenBLAS's second thread (one per core) mostly waits, spinning, on a core the
    other xdist worker needs; one thread cut the fast tier's CPU time by about a fifth. Only there: a fast test
    starts no process, so none compares this process's arithmetic with another's (a long dot product's
    rounding can depend on BLAS's thread count); a run of other tiers keeps BLAS as the command has it."""
    from threadpoolctl import threadpool_limits

    _LIMITS.append(threadpool_limits(limits=1, user_api="blas"))


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    by_tier = _measured.setdefault(_file(report.nodeid), {})
    tier = _tier(report.keywords)
    by_tier[tier] = by_tier.get(tier, 0.0) + report.duration


def pytest_sessionfinish(session: pytest.Session) -> None:
    if session.config.getoption("store_durations") and not hasattr(session.config, "workerinput"):
        known = json.loads(DURATIONS.read_text()) if DURATIONS.exists() else {}
        for file, by_tier in _measured.items():  # a tier that did not run keeps its figure
            known[file] = dict(sorted((known.get(file, {}) | {t: round(s, 2) for t, s in by_tier.items()}).items()))
        lines = (f"  {json.dumps(file)}: {json.dumps(known[file])}" for file in sorted(known))
        DURATIONS.write_text("{\n" + ",\n".join(lines) + "\n}\n")  # a line per file: small diffs


@pytest.fixture(scope="session")
def stats_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("cache")


@pytest.fixture(scope="session")
def _stores(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The directories of the tests' own MLflow stores: ``<this directory>/<n>``, n counting up."""
    root = tmp_path_factory.mktemp("mlflow")
    return (root / str(n) for n in itertools.count())


@pytest.fixture(autouse=True)
def _private_stores(_stores: Iterator[Path], monkeypatch: pytest.MonkeyPatch, stats_cache: Path) -> None:
    """Every test tracks to its own MLflow store and caches statistics outside the project.

    Each store's directory is the next of one session directory's numbered subdirectories, not a
    ``tmp_path_factory.mktemp`` of its own: mktemp finds its number by listing the whole base temporary
    directory, which then held a directory per test run so far (quadratic in a worker's ~1,700 tests)."""
    store = next(_stores)
    store.mkdir()
    db = store / "mlflow.db"
    monkeypatch.setenv("MLFLOW_TRACKING_URI", f"sqlite:///{db}")
    monkeypatch.setenv("BOUNDLAB_CACHE", str(stats_cache))


@pytest.fixture(scope="session")
def svm_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A separable svmlight file written by scikit-learn (iris, setosa against the rest)."""
    import numpy as np
    from sklearn.datasets import dump_svmlight_file, load_iris

    X, t = load_iris(return_X_y=True)
    path = tmp_path_factory.mktemp("files") / "iris.svm"
    dump_svmlight_file(X, np.where(t == 0, 1, -1), str(path))
    return path


def _boundlab(*args: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    exe = str(Path(sys.executable).parent / "boundlab")
    exe = exe if Path(exe).exists() else shutil.which("boundlab")
    return subprocess.run([exe, *args], cwd=cwd, env=env or dict(os.environ), capture_output=True, text=True, timeout=900)


@pytest.fixture(scope="session")  # session: module fixtures (a shared sweep) can use it too
def boundlab():  # noqa: ANN201
    """Run the installed ``boundlab`` command: ``boundlab(*args, cwd=..., env=...)``."""
    return _boundlab


def _in_process(call: Callable[[], object], *, cwd: Path, env: dict[str, str] | None = None,
                args: Sequence[str] = ()) -> subprocess.CompletedProcess[str]:
    """``call()`` as a command's process would run it: in ``cwd`` with exactly the environment ``env``,
    its stdout and stderr captured; its exit code is what it returns (an int) or exits with."""
    import contextlib
    import io

    out, err = io.StringIO(), io.StringIO()
    saved_env, saved_cwd, saved_argv = dict(os.environ), os.getcwd(), list(sys.argv)
    code: object = 0
    try:
        if env is not None:
            os.environ.clear()
            os.environ.update(env)
        os.chdir(cwd)
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = call()
            except SystemExit as e:
                code = e.code
    finally:
        os.chdir(saved_cwd)
        os.environ.clear()
        os.environ.update(saved_env)
        sys.argv = saved_argv
    if code is not None and not isinstance(code, int):  # sys.exit("message"): printed, exit code 1
        print(code, file=err)
    returncode = 0 if code is None else code if isinstance(code, int) else 1
    return subprocess.CompletedProcess(list(args), returncode, out.getvalue(), err.getvalue())


def _boundlab_in_process(*args: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    from pipeline.cli import main

    return _in_process(lambda: main(list(args)), cwd=cwd, env=env, args=["boundlab", *args])


@pytest.fixture(scope="session")
def in_process():  # noqa: ANN201
    """``in_process(call, cwd=..., env=...)``: run ``call()`` (a command's entry function, e.g.
    ``pipeline.outputs.report.main``) in this process as its command would run, returning what the process would
    (exit code, stdout, stderr)."""
    return _in_process


@pytest.fixture(scope="session")
def boundlab_in_process():  # noqa: ANN201
    """``boundlab`` as its console script runs it, ``pipeline.cli.main``, but in this process:
    ``boundlab_in_process(*args, cwd=..., env=...)`` returns what ``boundlab`` does (exit code, stdout,
    stderr). The pre-flight, Hydra, the sweep callbacks and the jobs (basic launcher) all run here, without
    the ~5-10 s of a fresh interpreter's imports. For the tests whose claim is about what a sweep computes
    and records, not about the process (exit codes of the installed command, signals, locks held across
    processes, faults injected at interpreter start, other launchers' workers): those use ``boundlab``."""
    return _boundlab_in_process


@pytest.fixture(scope="module")
def _compositions() -> dict[str, dict]:
    """The pre-flight's compositions, kept for one test module: {config directory: the compose-once store}."""
    return {}


@pytest.fixture
def shared_compositions(monkeypatch: pytest.MonkeyPatch, _compositions: dict[str, dict]) -> None:
    """The pre-flight's compose-once cache (``hydra_seam.Composer``: one Hydra composition per choice of config
    groups, each job's plain ``key=value`` overrides applied by Hydra's own code to an unpickled copy) kept
    for the test module instead of one command, keyed by the config directory the pre-flight reads (a test
    may point ``pipeline.sweep.preflight.CONF_DIR`` elsewhere). The whole pre-flight still runs, as the command runs
    it: a module's many command lines over the same few groups cost one composition each group choice
    (~60 ms) instead of one each command line; a value that does not apply is composed by Hydra itself, as
    in the command (tests/test_config.py ``test_preflight_composes_each_job_as_hydra_does``)."""
    from pipeline.sweep import hydra_seam
    from pipeline.sweep import preflight as pre

    class Composer(hydra_seam.Composer):
        def __init__(self) -> None:
            super().__init__()
            self.cache.store = _compositions.setdefault(str(pre.CONF_DIR), {})

    monkeypatch.setattr(hydra_seam, "Composer", Composer)


@pytest.fixture
def one_line_error(capsys: pytest.CaptureFixture, shared_compositions: None):  # noqa: ANN201
    """``one_line_error(argv)``: the command's pre-flight check on ``argv`` must stop with exit code 2 and
    one line 'boundlab: error: ...' on stderr, which is returned.

    The whole pre-flight runs, as the command runs it; only its compose-once cache lives for the test
    module instead of one command (:func:`shared_compositions`): a module's hundreds of bad values over the
    same few groups then cost one composition each group choice instead of one each value; the checks,
    and the line a user sees, are the same."""
    from pipeline.sweep.preflight import preflight
    from pipeline.sweep.schemas import register

    def check(argv: list[str]) -> str:
        register()
        with pytest.raises(SystemExit) as exit_:
            preflight(argv)
        assert exit_.value.code == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and err.startswith("boundlab: error: "), err
        return err

    return check
