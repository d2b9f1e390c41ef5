"""Helpers the test modules share (pytest puts this directory on sys.path: ``from helpers import ...``)."""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import threading
from collections.abc import Iterable
from pathlib import Path
from types import CodeType

import numpy as np

ROOT = Path(__file__).resolve().parents[1]


def with_sitecustomize(tmp_path: Path, code: str, env: dict[str, str]) -> dict[str, str]:
    """``env`` with a ``sitecustomize.py`` holding ``code`` on PYTHONPATH, so that a subprocess (a sweep and
    its jobs) runs it first: how faults are injected into the command."""
    site = tmp_path / "site"
    site.mkdir(exist_ok=True)
    (site / "sitecustomize.py").write_text(code)
    return env | {"PYTHONPATH": os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")])}


def wrap_call(monkeypatch, target: str, before) -> None:  # noqa: ANN001
    """Wrap ``target`` ("module:Attr.path") in this process so that ``before(n)`` runs before its n-th call (n from
    1), then the original; ``monkeypatch`` restores it."""
    import functools
    import importlib

    module_name, _, path = target.partition(":")
    owner = importlib.import_module(module_name)
    *parents, attr = path.split(".")
    for p in parents:
        owner = getattr(owner, p)
    original = getattr(owner, attr)
    calls = [0]

    @functools.wraps(original)
    def wrapped(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202
        calls[0] += 1
        before(calls[0])
        return original(*args, **kwargs)

    monkeypatch.setattr(owner, attr, wrapped)


def inject_fault(monkeypatch, target: str, call: int = 0) -> None:  # noqa: ANN001
    """In this process, what :data:`INJECTOR` does in a ``boundlab`` subprocess: wrap
    ``target`` ("module:Attr.path") so that its call number ``call`` (0: every call) raises
    RuntimeError('injected fault ...'). For a command run with ``boundlab_in_process``, whose jobs (basic
    launcher) and callbacks run here; ``monkeypatch`` restores the original."""
    path = target.partition(":")[2]

    def fault(n: int) -> None:
        if call in (0, n):
            raise RuntimeError(f"injected fault in {path} (call {n})")

    wrap_call(monkeypatch, target, fault)


_TEMPLATE: list[Path] = []  # an empty MLflow SQLite store with every migration applied, made once per process


def migrated_store(db: Path) -> str:
    """The URI of an MLflow store at ``db``: if there is none yet, a new, empty one, copied from one made
    (and migrated) once per test process. Creating a SQLite store runs MLflow's ~30 schema migrations (seconds); a
    sweep's test is about
    what the sweep records, not about the store's creation, which the tests that open a store afresh (the
    autouse ``_private_stores`` and the concurrency tests that race to create one) keep covering."""
    import atexit
    import shutil
    import tempfile

    if not _TEMPLATE:
        import mlflow

        where = Path(tempfile.mkdtemp(prefix="boundlab-store-"))
        atexit.register(shutil.rmtree, where, True)
        mlflow.MlflowClient(tracking_uri=f"sqlite:///{where / 'mlflow.db'}").search_experiments()
        _TEMPLATE.append(where / "mlflow.db")
    if not db.exists():
        import sqlite3

        db.parent.mkdir(parents=True, exist_ok=True)
        # SQLite's backup, not a copy of the file: once pipeline.tracking's listener has put this process's stores
        # in WAL mode, the template's last migrations can still be in its -wal file, which a file copy leaves out
        # (the copy was then a schema revision behind, and MLflow refused it)
        source, target = sqlite3.connect(_TEMPLATE[0]), sqlite3.connect(db)
        try:
            source.backup(target)
        finally:
            source.close()
            target.close()
    return f"sqlite:///{db}"


def copy_project(dest: Path) -> None:
    """The project's files as git sees them (tracked, and new ones not ignored) copied into ``dest``, without
    DVC's outputs and cache: what a fresh clone holds. Symbolic links (conf/experiment) stay links.

    Also numba's disk cache of the compiled kernels (``pipeline/**/__pycache__/*.nbi``, ``*.nbc``, as far as
    this checkout has compiled them). The sources keep their modification times
    (``copy2``), which is what numba's index checks, so the copy loads the kernels instead of compiling them
    again: the same machine code, the same bits, seconds less per kernel. numba writes a cache file whole
    (a temporary file, then a rename), so a file another worker is writing is copied old or new, never
    half; a kernel whose files are missing or stale is compiled, as in a fresh clone."""
    listed = subprocess.run(["git", "ls-files", "-co", "--exclude-standard"], cwd=ROOT, capture_output=True,
                            text=True, check=True).stdout.splitlines()
    for rel in listed:
        src = ROOT / rel
        if (rel.startswith(("results/", "report/", ".dvc/cache", ".dvc/tmp"))
                and rel not in ("report/claims.json", "report/counts.json")
                or not (src.exists() or src.is_symlink())):  # claims.json, counts.json: in git (cache: false), a clone has them
            continue
        (dest / rel).parent.mkdir(parents=True, exist_ok=True)
        if src.is_symlink():
            (dest / rel).symlink_to(os.readlink(src))
        else:
            shutil.copy2(src, dest / rel)
    for cached in ROOT.glob("pipeline/**/__pycache__/*.nb[ic]"):
        (dest / cached.relative_to(ROOT)).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(cached, dest / cached.relative_to(ROOT))


def file_order(selected: list[tuple[str, str]], known: dict[str, dict[str, float]],
               estimate: dict[str, float]) -> list[str]:
    """The files of ``selected`` (a (file, tier) pair per selected test), longest first (ties by name). A file's
    time is the sum over the tiers it has selected tests of: its measured seconds in that tier (``known``),
    else ``estimate[tier]`` per test.

    >>> file_order([("a", "fast")] * 30 + [("b", "slow")], {}, {"slow": 15.0, "fast": 0.1})
    ['b', 'a']
    >>> file_order([("a", "fast")] * 30 + [("b", "slow")], {"a": {"fast": 20.0}}, {"slow": 15.0, "fast": 0.1})
    ['a', 'b']
    >>> file_order([("docs", "fast"), ("c", "fast"), ("c", "fast")], {"docs": {"slow": 300.0, "fast": 0.01}},
    ...            {"slow": 15.0, "fast": 0.1})  # only docs' fast tests are selected
    ['c', 'docs']
    """
    counts: dict[str, dict[str, int]] = {}
    for file, tier in selected:
        counts.setdefault(file, {})
        counts[file][tier] = counts[file].get(tier, 0) + 1
    cost = {file: sum(known.get(file, {}).get(tier, estimate[tier] * n) for tier, n in tiers.items())
            for file, tiers in counts.items()}
    return sorted(cost, key=lambda f: (-cost[f], f))


def signal_once_started(argv: list[str], flag: Path, sig: int, cwd: Path, env: dict[str, str],
                        timeout: float = 120) -> tuple[int, str]:
    """Run the installed ``boundlab argv`` in a session of its own, wait until ``flag`` exists (an injected
    hang touches it), send ``sig`` to the whole process group; return (exit code, stderr)."""
    import sys
    import time

    proc = subprocess.Popen([str(Path(sys.executable).parent / "boundlab"), *argv], cwd=cwd, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, start_new_session=True)
    deadline = time.time() + 300
    while time.time() < deadline and not flag.exists() and proc.poll() is None:
        time.sleep(0.05)
    assert flag.exists(), f"{flag.name} never appeared: {proc.stderr.read()[-3000:] if proc.poll() is not None else ''}"
    os.killpg(proc.pid, sig)
    _, err = proc.communicate(timeout=timeout)
    return proc.returncode, err


def tiny_results(dest: Path, name: str, figures: bool = False) -> None:
    """results/NAME as a 2-job sweep publishes it (tables and summary; its figures too with ``figures``), from
    jobs run here: no Hydra multirun, no MLflow store (whose creation alone costs seconds). The default
    learner (the Perceptron, n = 50, seeds 0 and 1) and its bounds."""
    import json

    import pandas as pd
    from hydra import compose, initialize_config_dir

    from pipeline.outputs import plots
    from pipeline.sweep.callbacks import summary
    from pipeline.paths import CONF_DIR
    from pipeline.job.config import build
    from pipeline.job.run import run
    from pipeline.sweep.schemas import register

    register()
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base=None):
        runs = [run(build(compose("config", overrides=[f"seed={seed}", "n=50", f"name={name}"]))) for seed in (0, 1)]
    table = pd.concat([r.table for r in runs], ignore_index=True)
    curves = pd.concat([r.curve for r in runs], ignore_index=True)
    dest.mkdir(parents=True)
    table.to_parquet(dest / "results.parquet", index=False)
    curves.to_parquet(dest / "curves.parquet", index=False)
    (dest / "metrics.json").write_text(json.dumps(summary(table) | {"failed_jobs": 0}, indent=2) + "\n")
    if figures:
        plots.sweep_figures(table, curves, dest)


def small_separable(seed: int, n: int, off: float = 0.02) -> tuple[np.ndarray, np.ndarray]:
    """n Gaussian points in 2..5 dimensions, labelled by a random unit w*, pushed ``off`` off its boundary: the
    small separable samples the adversaries' searches are checked on against brute force."""
    rng = np.random.default_rng(seed)
    d = int(rng.integers(2, 6))
    w = rng.normal(size=d)
    w /= np.linalg.norm(w)
    X = rng.normal(size=(n, d))
    y = np.where(X @ w >= 0, 1.0, -1.0)
    return X + off * y[:, None] * w, y


# --- the installed command, raced, killed or signalled (the slow tests of several modules) -----------------

# In a process whose jobs must be slow, every job's run first sleeps BOUNDLAB_SLOW_JOB seconds (touching
# BOUNDLAB_SLOW_FLAG.<pid> first, if set): a kill lands part-way through a sweep and inside a job, whatever the
# machine's speed, without large data. Give it to a subprocess with ``with_sitecustomize``.
SLOW_JOBS = """\
import os, time
if os.environ.get("BOUNDLAB_SLOW_JOB"):
    import pipeline.job.run
    original = pipeline.job.run.measure  # a run's work, alone (a packed member) or within run()
    def slow(*args, **kwargs):
        flag = os.environ.get("BOUNDLAB_SLOW_FLAG")
        if flag:
            open(flag + "." + str(os.getpid()), "w").close()
        time.sleep(float(os.environ["BOUNDLAB_SLOW_JOB"]))
        return original(*args, **kwargs)
    pipeline.job.run.measure = slow
"""

# Wraps BOUNDLAB_FAULT ("module:Attr.path") so that call number BOUNDLAB_FAULT_CALL (0: every call)
# raises RuntimeError('injected fault ...'), or, with BOUNDLAB_FAULT_MODE=hang, touches
# BOUNDLAB_FAULT_FLAG and sleeps (to be interrupted from outside): ``inject_fault`` for a subprocess.
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


def boundlab_command() -> list[str]:
    """The installed ``boundlab`` command, as an argv prefix."""
    import sys

    exe = Path(sys.executable).parent / "boundlab"
    return [str(exe)] if exe.exists() else ["boundlab"]


def wait_for(predicate, timeout: float, what: str) -> None:  # noqa: ANN001
    """Poll ``predicate()`` until it is true; fail naming ``what`` after ``timeout`` seconds."""
    import time

    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, f"timed out after {timeout} s waiting for {what}"
        time.sleep(0.05)


def alive(pid: int) -> bool:
    """Whether process ``pid`` runs (a zombie does not), as the workers' watch of their driver sees it."""
    from pipeline.sweep.life import _alive

    return _alive(pid)


def mlflow_store(tmp_path: Path, migrated: bool = False) -> tuple[str, dict[str, str]]:
    """A store at tmp_path/mlflow.db: created by the command, or (``migrated``) a ready empty one; its URI and
    the environment that selects it."""
    uri = migrated_store(tmp_path / "mlflow.db") if migrated else f"sqlite:///{tmp_path / 'mlflow.db'}"
    return uri, {**os.environ, "MLFLOW_TRACKING_URI": uri}


def fault_env(tmp_path: Path, fault: str | None = None, call: int = 0, **extra: str) -> tuple[str, dict[str, str]]:
    """A ready store at tmp_path/mlflow.db and the environment that selects it, with ``extra`` variables and,
    given a ``fault`` ("module:Attr.path"), :data:`INJECTOR` on PYTHONPATH failing its call number ``call``."""
    uri = migrated_store(tmp_path / "mlflow.db")
    env = {**os.environ, "MLFLOW_TRACKING_URI": uri, **extra}
    if fault:
        env = with_sitecustomize(tmp_path, INJECTOR, env | {"BOUNDLAB_FAULT": fault, "BOUNDLAB_FAULT_CALL": str(call)})
    return uri, env


def all_runs(uri: str, experiment: str) -> list:
    """Every run of ``experiment`` in the store at ``uri``, deleted ones too."""
    import mlflow
    from mlflow.entities import ViewType

    client = mlflow.MlflowClient(tracking_uri=uri)
    exp = client.get_experiment_by_name(experiment)
    return client.search_runs([exp.experiment_id], run_view_type=ViewType.ALL, max_results=10_000)


def sweep_runs(uri: str, experiment: str) -> tuple[list, list]:
    """(parent runs, child runs) of ``experiment`` that are not deleted."""
    import mlflow

    client = mlflow.MlflowClient(tracking_uri=uri)
    exp = client.get_experiment_by_name(experiment)
    runs = client.search_runs([exp.experiment_id], max_results=1000) if exp else []
    return ([r for r in runs if "mlflow.parentRunId" not in r.data.tags],
            [r for r in runs if "mlflow.parentRunId" in r.data.tags])


def live_children(uri: str):  # noqa: ANN201
    """(run name, status) of the live child runs of every experiment in ``uri``, as a Counter."""
    from collections import Counter

    import mlflow

    client = mlflow.MlflowClient(tracking_uri=uri)
    runs = client.search_runs([e.experiment_id for e in client.search_experiments()], max_results=1000)
    return Counter((r.data.tags["mlflow.runName"], r.info.status) for r in runs if "mlflow.parentRunId" in r.data.tags)


def finished_job(out: Path, sources: dict[str, str] | None = None) -> None:
    """A job directory as a finished run of key 'k' leaves it (its data, outputs and done marker)."""
    import pandas as pd

    from pipeline.job import markers
    from pipeline.data.certify import content_hash

    X, y = np.eye(3), np.array([1.0, -1.0, 1.0])
    out.mkdir(parents=True, exist_ok=True)
    markers.save_data(out / "data.npz", X, y)
    for name in markers.OUTPUTS:
        pd.DataFrame({"run": ["k"], "v": [1.0]}).to_parquet(out / name)
    markers.record(out, "k", content_hash(X, y), sources=sources)


# --- samples, caches, memory -------------------------------------------------------------------------------


def separable_sample(m: int = 30, d: int = 3, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """m Gaussian points in d dimensions labelled by the sign of their first coordinate, pushed 0.2 off it."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((m, d))
    y = np.where(X[:, 0] >= 0, 1.0, -1.0)
    X[:, 0] += 0.2 * y
    return X, y


def cache_files(root: Path) -> list[Path]:
    """The files under a statistics cache directory, sorted."""
    return sorted(p for p in root.rglob("*") if p.is_file())


def peak_bytes(fn) -> int:  # noqa: ANN001
    """The peak of Python's traced allocations while ``fn()`` runs."""
    import tracemalloc

    tracemalloc.start()
    try:
        fn()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


# --- a tiny job: refused with one line naming a key, or run soundly ------------------------------------------

TINY = ["n=40", "d=3", "T=200"]


# The jobs' compositions in this test process, by config directory, then by choice of config groups
# (hydra_seam.Compositions' store): the hundreds of extreme values of tests/test_run.py, the sizes of
# tests/test_params.py, the options of tests/test_config.py and the experiments of tests/test_experiments.py
# differ in plain ``key=value`` overrides only, over a few group choices.
COMPOSED: dict[str, dict] = {}


# --- the tiers, checked (docs/testing.md, "Tiers") ------------------------------------------------------
PROCESS_FIXTURES = {"boundlab"}  # the installed command, in a process of its own
IN_PROCESS_FIXTURES = {"boundlab_in_process", "in_process"}  # the command or a stage's entry, end to end here
_STARTS_A_PROCESS = {"subprocess": {"run", "Popen", "check_output", "check_call", "call"}, "os": {"fork", "forkpty"},
                     "multiprocessing": {"Process", "Pool", "get_context"}}


def names_used(code: CodeType) -> set[str]:
    """The global and attribute names a function's code (and the functions and lambdas inside it) reads."""
    names = set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, CodeType):
            names |= names_used(const)
    return names


def tier_mismatches(tests: Iterable[tuple[str, set[str], set[str], set[str]]]) -> list[str]:
    """A line for each test in a tier its body contradicts, from (node id, its markers, its fixtures, the names its
    function reads: :func:`names_used`): a test that starts a process (the ``boundlab`` fixture, or
    ``subprocess``, ``os.fork`` or ``multiprocessing`` called in its own body) is ``slow``; one that runs the
    command or a stage's entry end to end in the test process (``boundlab_in_process``, ``in_process``) is
    ``e2e``, ``long`` or ``slow``. What a helper function starts is not seen: the rule's commonest forms are.

    >>> for line in tier_mismatches([("t.py::a", set(), {"boundlab"}, set()), ("t.py::b", {"slow"}, {"boundlab"}, set()),
    ...                              ("t.py::c", set(), {"in_process"}, set()),
    ...                              ("t.py::d", {"e2e"}, set(), {"subprocess", "run"}),
    ...                              ("t.py::e", set(), set(), {"os", "path", "run"})]):
    ...     print(line)
    t.py::a: starts a process (boundlab): mark it slow
    t.py::c: runs end to end in process (in_process): mark it e2e
    t.py::d: starts a process (subprocess.run): mark it slow
    """
    out = []
    for nodeid, markers, fixtures, names in tests:
        starts = sorted(fixtures & PROCESS_FIXTURES) + [f"{module}.{call}" for module, calls in _STARTS_A_PROCESS.items()
                                                         if module in names for call in sorted(calls & names)]
        if starts and "slow" not in markers:
            out.append(f"{nodeid}: starts a process ({', '.join(starts)}): mark it slow")
        elif fixtures & IN_PROCESS_FIXTURES and not markers & {"e2e", "long", "slow"}:
            out.append(f"{nodeid}: runs end to end in process ({', '.join(sorted(fixtures & IN_PROCESS_FIXTURES))}): mark it e2e")
    return out


def composer():  # noqa: ANN201
    """The pre-flight's composer (``hydra_seam.Composer``) with this process's store of compositions, for
    use inside ``initialize_config_dir(CONF_DIR)``."""
    from pipeline.sweep.hydra_seam import Composer
    from pipeline.paths import CONF_DIR

    made = Composer()
    made.cache.store = COMPOSED.setdefault(str(CONF_DIR), {})
    return made


def compose_job(overrides: list[str]):  # noqa: ANN201
    """The job config of ``overrides`` composed as the pre-flight composes it (:func:`composer`):
    Hydra's composition of its config-group choices, once per test process, its plain ``key=value``
    overrides applied to a copy by Hydra's own code (tests/test_config.py
    ``test_preflight_composes_each_job_as_hydra_does``: equal to Hydra's composition of the whole job); a
    value Hydra refuses is composed by Hydra itself, so the error is Hydra's. Hydra's composition of each
    job was ~0.07 s, most of a tiny job's time."""
    from hydra import initialize_config_dir

    from pipeline.paths import CONF_DIR
    from pipeline.sweep.schemas import register

    register()
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base=None):
        return composer()(list(overrides))


def compose_tiny(overrides: list[str]):  # noqa: ANN201
    """The job config of ``overrides`` at the tiny size :data:`TINY` (:func:`compose_job`)."""
    return compose_job([*TINY, *overrides])


def tiny_outcome(overrides: list[str]) -> tuple[str, object]:
    """("error", message) for a refused job, ("table", table) for one that ran."""
    import warnings

    from pipeline.job.config import build
    from pipeline.params import UserError
    from pipeline.job.run import run

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return "table", run(build(compose_tiny(overrides))).table
    except UserError as e:
        return "error", str(e)


def assert_sound(overrides: list[str], keys: set[str]) -> None:
    """Refused with one line naming one of ``keys`` (an empty set: must run), or run soundly: no NaN in an
    applicable row, no (D) bound violated, no R = 0 or inverted margin interval reaching a bound."""
    kind, out = tiny_outcome(overrides)
    if kind == "error":
        assert "\n" not in out, out
        named = out.split("=", 1)[0]
        assert named in keys, f"{overrides}: the error names {named!r}, not one of {sorted(keys)}: {out}"
        return
    table = out
    applicable = table[table["applicable"]]
    for column in ("empirical", "theoretical"):
        assert not applicable[column].isna().any(), f"{overrides}: NaN in an applicable row\n{applicable.T}"
    # a row above the bound at its upper estimate only (the comparator's bracket straddles it) is no violation
    straddles = (table["straddles"].map(lambda v: v is not None and v == v and bool(v)).astype(bool)
                 if "straddles" in table else False)
    violated = table[(table["guarantee"] == "D") & (table["holds"] == False) & ~straddles]  # noqa: E712
    assert violated.empty, f"{overrides}: a (D) bound VIOLATED from extreme values\n{violated.T}"
    for column in ("R", "gamma_lo", "gamma_hi"):
        if column in table:
            assert not (table[column] == 0.0).all() or column != "R", f"{overrides}: R = 0 reached a bound"
    if {"gamma_lo", "gamma_hi"} <= set(table):
        lo, hi = table["gamma_lo"], table["gamma_hi"]
        assert not (lo > hi).any(), f"{overrides}: gamma_lo > gamma_hi reached a bound"


@contextlib.contextmanager
def serving(server):  # noqa: ANN001, ANN201
    """``server`` (a socketserver) answering from a daemon thread until the block ends, then shut down and
    closed. serve_forever looks for the shutdown request every poll_interval seconds (0.5 by default): each
    fixture's teardown waited up to that long, so it looks every 10 ms."""
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
