"""Reliability, round two: inputs that used to slip past the pre-flight check.

Tracking stores that cannot keep runs (read-only, file, in-memory, a missing database driver), names that
are paths, experiment overlays that add Hydra callbacks, a Ray instance listening beyond loopback, a
misspelt ``+key`` and a comma inside one file name. Each is refused before any work with one line naming
what was wrong and what is allowed, exit code 2, no traceback.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from pipeline.cli import main
from pipeline.paths import CONF_DIR
from pipeline.preflight import preflight
from pipeline.ray_worker import CLUSTER_ENV, loopback_env
from pipeline.schemas import register
from pipeline.tracking import check_store

NAME_RULE = "must be a plain name"
BY_NAME = "an experiment is chosen by name, not by path"

BAD = [
    # class 2: names are names, experiments are files of experiments/ chosen by name
    (["name=../escape"], f"name='../escape': {NAME_RULE}"),
    (["name=a/b"], f"name='a/b': {NAME_RULE}"),
    (["name=/tmp/abs"], f"name='/tmp/abs': {NAME_RULE}"),
    (["name=.."], f"name='..': {NAME_RULE}"),
    (["name=.hidden"], f"name='.hidden': {NAME_RULE}"),
    (["name=a..b"], f"name='a..b': {NAME_RULE}"),
    (["name='~root'"], f"name='~root': {NAME_RULE}"),
    (["name='my sweep'"], f"name='my sweep': {NAME_RULE}"),
    (["name="], f"name='': {NAME_RULE}"),  # class 1: an empty MLflow experiment name
    (["-m", "seed=0,1", "name=../up"], f"name='../up': {NAME_RULE}"),
    (["-m", "name=ok,../up"], f"name='../up': {NAME_RULE}"),  # a swept value, checked job by job
    (["+name=x/y"], f"name='x/y': {NAME_RULE}"),
    (["experiment=../config"], f"experiment=../config: unknown experiment ({BY_NAME})"),
    (["experiment=../experiments/perceptron_margin"], f"unknown experiment ({BY_NAME})"),
    (["-m", "experiment=/etc/passwd"], f"experiment=/etc/passwd: unknown experiment ({BY_NAME})"),
    (["experiment=perceptron_margin/../perceptron_tight"], BY_NAME),
    (["-m", "experiment=perceptron_tight,../config"], f"experiment=../config: unknown experiment ({BY_NAME})"),
    # class 4: a misspelt +key; a comma inside one file name
    (["+gama=0.1"], "+gama=0.1: unknown key, nothing reads gama; did you mean gamma?"),
    (["++gama=0.1"], "++gama=0.1: unknown key, nothing reads gama; did you mean gamma?"),
    (["+tracking.urI=x"], "did you mean tracking.uri"),
    (["-m", "seed=0,1", "+sed=3"], "+sed=3: unknown key, nothing reads sed; did you mean seed"),
    (["algorithm=pegasos", "+algorithm.lamda=0.1"], "algorithm.lamda=0.1: must be left out: pegasos takes lam"),
    (["algorithm=pegasos", "+algorithm.lamda=0.1"], "did you mean algorithm.lam?"),
    (["+algorithm.pases=3"], "did you mean algorithm.passes?"),
    (["dataset=file", "dataset.path=a,b.npz"], """quote the value for Hydra: 'dataset.path="a,b.npz"'"""),
    (["dataset=file", "dataset.path=data/x,y.svm"], """'dataset.path="data/x,y.svm"'"""),
    # round three, class 15/18: launcher settings refused before the parent run exists, in one line each
    *[(["-m", "seed=0,1", "hydra/launcher=joblib", f"hydra.launcher.n_jobs={v}"], f"hydra.launcher.n_jobs={v}")
      for v in ("0", "abc", "1.5", "true")],
    (["-m", "seed=0,1", "hydra/launcher=joblib", "hydra.launcher.n_jobs=0"], "worker processes >= 1, or -1"),
    (["-m", "seed=0,1", "hydra/launcher=joblib", "hydra.launcher.n_jobs=abc"], "could not be converted to Integer"),
    (["-m", "seed=0,1", "hydra/launcher=joblib", "hydra.launcher.verbose=loud"], "hydra.launcher.verbose=loud: value 'loud'"),
    # the key a recursive interpolation loops on, and what to do
    (["gamma=${gamma}"], "dataset.gamma: its value refers back to itself"),
    (["-m", "seed=0,1", "n=${n}"], "refers back to itself"),
    # running jobs elsewhere than the command's directory breaks relative paths: refused, also when swept
    (["hydra.job.chdir=true"], "hydra.job.chdir=true: boundlab runs every job in the command's directory"),
    (["-m", "seed=0,1", "hydra.job.chdir=true"], "hydra.job.chdir=true: boundlab runs every job"),
    (["-m", "hydra.job.chdir=false,true"], "hydra.job.chdir=false,true: boundlab runs every job"),
    # "The three workflows" item 5: a misspelt key, key of a group or group option names the declared ones it
    # may have meant (difflib over the composed config's keys and the group's options), in a sweep too
    (["gama=0.1"], "gama: unknown key; did you mean gamma? ('boundlab --help' lists every key"),
    (["-m", "seed=0,1", "gama=0.1"], "gama: unknown key; did you mean gamma? ('boundlab --help'"),  # a fixed key
    (["-m", "gama=0.1,0.2"], "gama: unknown key; did you mean gamma? ('boundlab --help'"),  # a swept one
    (["dataset.gama=0.1"], "dataset.gama: unknown key; did you mean dataset.gamma?"),
    (["tracking.urii=x"], "tracking.urii: unknown key; did you mean tracking.uri?"),
    (["algorithm=pegasos", "algorithm.lamda=0.1"], "algorithm.lamda: unknown key; did you mean algorithm.lam?"),
    (["-m", "seed=0,1", "algorithm=pegasos", "algorithm.lamda=0.1"], "did you mean algorithm.lam?"),
    (["-m", "algorithm=pegasos", "algorithm.lamda=0.1,0.2"], "did you mean algorithm.lam?"),
    (["algorithm.lamda=0.1"],  # the Perceptron takes no key close to it: the keys it does take, and what to do
     ("algorithm.lamda: unknown key; algorithm=perceptron takes algorithm.tie, algorithm.passes, algorithm.ordering; "
      "for another option's key, choose that option too (algorithm=OPTION algorithm.lamda=...)")),
    (["tie=mistake"], "tie: unknown key; did you mean algorithm.tie?"),  # a learner's key without its group
    (["algoritm.tie=mistake"], "algoritm.tie: unknown key; did you mean algorithm.tie?"),
    (["hydra.job.chdri=true"], "did you mean hydra.job.chdir?"),
    (["algorithm=pegasus"], "algorithm=pegasus: unknown algorithm; did you mean pegasos? (choose one of batch_perceptron,"),
    (["-m", "seed=0,1", "algorithm=pegasus"], "algorithm=pegasus: unknown algorithm; did you mean pegasos?"),
    (["-m", "algorithm=perceptron,pegasus"], "did you mean pegasos? (choose one of"),
    (["dataset=margin_binry"], "dataset=margin_binry: unknown dataset; did you mean margin_binary?"),
    (["-m", "seed=0,1", "hydra/launcher=jobib"], "unknown hydra/launcher; did you mean joblib?"),
    (["experiment=perceptron_margn"], "unknown experiment; did you mean perceptron_margin or"),
    (["zzz=1"], "zzz: unknown key; 'boundlab --help' lists every key"),  # nothing close: no guess
    # the one key of the log: true or false
    (["log.bounds=yes"], "log.bounds='yes': must be true (a sweep logs every bound of every job"),
    (["-m", "seed=0,1", "log.bounds=1"], "log.bounds=1: must be true"),
]


@pytest.mark.parametrize("argv", [["zzz=1"], ["-m", "seed=0,1", "hydra/sweeper=nope"], ["experiment=../x"]])
def test_nothing_close_is_no_guess(argv: list[str], one_line_error) -> None:  # noqa: ANN001
    assert "did you mean" not in one_line_error(argv)


def test_the_bad_input_table_is_broad() -> None:
    assert len(BAD) >= 25


@pytest.mark.parametrize(("argv", "named"), BAD, ids=[" ".join(a) for a, _ in BAD])
def test_bad_input_is_one_line_naming_the_key(argv: list[str], named: str, one_line_error) -> None:  # noqa: ANN001
    err = one_line_error(argv)
    assert named in err, err


@pytest.mark.parametrize("argv", [
    ["name=my_sweep-2.v1"], ["name=2024"], ["experiment=perceptron_margin"], ["-m", "experiment=perceptron_tight"],
    ["++gamma=0.2"], ["+claims=[]"], ["-m", "seed=0,1", "+hydra.launcher.ray.init._temp_dir=/tmp/x"],
    ["-m", "seed=0,1", "log.bounds=true"], ["log.bounds=false"],
])
def test_good_names_and_keys_pass(argv: list[str]) -> None:
    register()
    assert preflight(argv).jobs


def test_a_quoted_comma_is_one_file_name(tmp_path: Path, svm_file: Path) -> None:
    register()
    path = tmp_path / "a,b.svm"
    shutil.copy(svm_file, path)
    assert preflight(["dataset=file", f"""dataset.path="{path}\""""]).jobs


def test_a_plain_comma_still_suggests_a_sweep(capsys: pytest.CaptureFixture) -> None:
    register()
    with pytest.raises(SystemExit):
        preflight(["gamma=0.1,0.2"])
    assert "add -m" in capsys.readouterr().err


# --- class 1: tracking stores -------------------------------------------------------------------------

STORES = [
    ("sqlite://", "in-memory SQLite database"),
    ("sqlite:///:memory:", "in-memory SQLite database"),
    ("sqlite:///file::memory:?cache=shared", "in-memory SQLite database"),
    ("file:///tmp/boundlab-mlruns", "a file store: MLflow 3 deprecates file stores"),
    ("./mlruns", "a file store"),
    ("/tmp/boundlab-mlruns", "a file store"),
    ("postgresql://user@localhost/boundlab", "database driver"),
    ("mysql://user@localhost/boundlab", "database driver MySQLdb"),
    ("mssql://user@localhost/boundlab", "database driver"),
    ("postgresql+pg8000://user@localhost/boundlab", "database driver pg8000"),
]


def _missing(module: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(module) is None


@pytest.mark.parametrize("how", ["env", "config"])
@pytest.mark.parametrize(("uri", "why"), STORES, ids=[u for u, _ in STORES])
def test_unusable_store_stops_before_any_work(uri: str, why: str, how: str, tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture) -> None:
    if "driver" in why and not all(_missing(m) for m in ("psycopg", "psycopg2", "MySQLdb", "pyodbc", "pg8000")):
        pytest.skip("a database driver is installed here: the missing-driver case cannot be made")
    monkeypatch.chdir(tmp_path)
    argv = ["-m", "seed=0,1", "n=50"]
    if how == "env":
        monkeypatch.setenv("MLFLOW_TRACKING_URI", uri)
    else:
        monkeypatch.delenv("MLFLOW_TRACKING_URI")
        argv.append(f"tracking.uri='{uri}'")  # quoted: Hydra's grammar takes '?' and '=' only in quotes
    with pytest.raises(SystemExit) as exit_:
        main(argv)
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"tracking store {uri}: " in err and why in err and "MLFLOW_TRACKING_URI" in err, err
    assert not any(tmp_path.iterdir()), "nothing written before the check"


def test_empty_experiment_name_stops_before_any_work(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                     capsys: pytest.CaptureFixture) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as exit_:
        main(["-m", "seed=0,1", "n=50", "name="])
    assert exit_.value.code == 2 and "name='': must be a plain name" in capsys.readouterr().err
    assert not any(tmp_path.iterdir())


def test_a_database_with_its_driver_installed_passes() -> None:
    assert check_store("sqlite:///" + str(Path(tempfile.gettempdir()) / "boundlab-probe-absent.db")) is None
    assert check_store("databricks") is None


def _check_as_nobody(uri: str) -> str | None:
    """``check_store(uri)`` in a forked child that dropped root (root ignores file permissions)."""
    if os.geteuid() != 0:
        return check_store(uri)
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        try:
            os.close(read)
            os.setgid(65534)
            os.setuid(65534)
            os.write(write, json.dumps(check_store(uri)).encode())
        finally:
            os._exit(0)
    os.close(write)
    data = b""
    while chunk := os.read(read, 65536):
        data += chunk
    os.close(read)
    os.waitpid(pid, 0)
    return json.loads(data)


@pytest.fixture
def open_dir():  # noqa: ANN201
    """A directory outside pytest's private (0700) temp tree, so an unprivileged child can reach it."""
    where = Path(tempfile.mkdtemp(prefix="blro"))
    where.chmod(0o755)
    yield where
    for p in where.rglob("*"):
        p.chmod(0o755 if p.is_dir() else 0o644)
    shutil.rmtree(where, ignore_errors=True)


def _db(path: Path) -> None:
    """A database with MLflow's first tables (a store whose creation was cut short: accepted, and written)."""
    import sqlite3

    with sqlite3.connect(path) as conn:
        for table in ("experiments", "runs", "tags", "metrics", "params"):
            conn.execute(f"CREATE TABLE {table} (x)")


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX permissions")
def test_read_only_sqlite_file_is_refused(open_dir: Path) -> None:
    """chmod 444 on the database: the check writes for real (as an unprivileged user when run as root)."""
    open_dir.chmod(0o777)
    _db(open_dir / "mlflow.db")
    (open_dir / "mlflow.db").chmod(0o444)
    why = _check_as_nobody(f"sqlite:///{open_dir / 'mlflow.db'}")
    assert why is not None and "cannot be written" in why and "readonly" in why


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX permissions")
def test_sqlite_file_in_a_read_only_directory_is_refused(open_dir: Path) -> None:
    """A writable file in a directory that is not: SQLite cannot make its journal, so no run can be written."""
    sub = open_dir / "ro"
    sub.mkdir()
    _db(sub / "mlflow.db")
    (sub / "mlflow.db").chmod(0o666)
    sub.chmod(0o555)
    why = _check_as_nobody(f"sqlite:///{sub / 'mlflow.db'}")
    assert why is not None and "cannot be written" in why
    fresh = _check_as_nobody(f"sqlite:///{sub / 'new.db'}")
    assert fresh is not None and "not writable" in fresh


def test_the_write_probe_leaves_the_database_as_it_was(tmp_path: Path) -> None:
    import sqlite3

    _db(tmp_path / "mlflow.db")
    before = (tmp_path / "mlflow.db").read_bytes()
    assert check_store(f"sqlite:///{tmp_path / 'mlflow.db'}") is None
    assert (tmp_path / "mlflow.db").read_bytes() == before
    with sqlite3.connect(tmp_path / "mlflow.db") as conn:
        assert sorted(r[0] for r in conn.execute("SELECT name FROM sqlite_master")) == [
            "experiments", "metrics", "params", "runs", "tags"]


# --- class 2: an experiment overlay may not add Hydra callbacks --------------------------------------

EVIL = """# @package _global_
name: evil
question: does it run my code?
hydra:
  callbacks:
    owned:
      _target_: tests.test_reliability_cli.Marker
      path: {marker}
"""


class Marker:
    """A Hydra callback that leaves a file behind when Hydra instantiates it."""

    def __init__(self, path: str) -> None:
        Path(path).write_text("ran")


@pytest.fixture
def conf_with_evil_experiment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    conf = tmp_path / "conf"
    shutil.copytree(CONF_DIR, conf, symlinks=False)  # experiment/ becomes a real copy
    marker = tmp_path / "marker"
    (conf / "experiment" / "evil.yaml").write_text(EVIL.format(marker=marker))
    (conf / "experiment" / "sneaky.yaml").write_text(
        EVIL.format(marker=marker).replace("owned:", "sweep:").replace("tests.test_reliability_cli.Marker", "os.system"))
    monkeypatch.setattr("pipeline.preflight.CONF_DIR", conf)
    return marker


@pytest.mark.parametrize("argv", [["experiment=evil"], ["-m", "experiment=evil"], ["-m", "experiment=sneaky"],
                                  ["-m", "experiment=perceptron_tight,evil"]])
def test_experiment_setting_hydra_callbacks_is_refused(argv: list[str], conf_with_evil_experiment: Path,
                                                       tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                       capsys: pytest.CaptureFixture) -> None:
    register()
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    with pytest.raises(SystemExit) as exit_:
        main(argv)
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "sets hydra.callbacks" in err and "experiment=" in err, err
    assert not conf_with_evil_experiment.exists() and not any(work.iterdir())


def test_own_experiments_keep_the_package_callbacks(conf_with_evil_experiment: Path) -> None:
    register()
    plan = preflight(["-m", "experiment=perceptron_margin"])
    # the package's own experiment, its grid whole: 3 gammas x 3 dimensions x 3 seeds, each job once
    jobs = {tuple(sorted(job)) for job in plan.task_jobs()}
    assert len(plan.jobs) == 27 == len(jobs) and all("experiment=perceptron_margin" in job for job in jobs)


# --- class 3: Ray on loopback unless told otherwise ---------------------------------------------------

def _ray_plan(*extra: str):  # noqa: ANN202
    register()
    return preflight(["-m", "seed=0,1", "hydra/launcher=ray", *extra])


def test_ray_preset_binds_loopback_by_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    init = _ray_plan().ray_init
    assert init["_node_ip_address"] == "127.0.0.1" and init["dashboard_host"] == "127.0.0.1"
    assert loopback_env(init) == {CLUSTER_ENV: "0"}  # or Ray swaps 127.0.0.1 for the machine's address


@pytest.mark.parametrize(("address", "exposed"), [("192.0.2.5", True), ("null", True), ("localhost", False)])
def test_exposing_ray_is_an_explicit_setting(address: str, exposed: bool) -> None:
    init = _ray_plan(f"hydra.launcher.ray.init._node_ip_address={address}").ray_init
    assert (loopback_env(init) == {}) is exposed


def test_other_launchers_leave_ray_alone() -> None:
    register()
    assert preflight(["-m", "seed=0,1"]).ray_init is None


RAY_PROBE = """
import json, os, shutil, sys, tempfile
from pipeline.preflight import preflight
from pipeline.ray_worker import keep_on_loopback
from pipeline.schemas import register
register()
init = preflight(["-m", "seed=0,1", "hydra/launcher=ray"]).ray_init
keep_on_loopback(init)
import psutil, ray
temp = tempfile.mkdtemp(prefix="blray")
init = {k: v for k, v in init.items() if k != "runtime_env"}
ray.init(**init, _temp_dir=temp, include_dashboard=False, num_cpus=1)
me = psutil.Process()
hosts = set()
for p in [me, *me.children(recursive=True)]:
    try:
        hosts |= {c.laddr.ip for c in p.net_connections(kind="inet") if c.status == psutil.CONN_LISTEN}
    except psutil.Error:
        pass
ray.shutdown()
shutil.rmtree(temp, ignore_errors=True)
print(json.dumps(sorted(hosts)))
"""


@pytest.mark.slow
def test_a_ray_instance_the_sweep_starts_listens_on_loopback_only(tmp_path: Path) -> None:
    """The launcher's ray.init arguments, as the sweep resolves them, on a real local Ray instance (~6 s)."""
    pytest.importorskip("ray")
    pytest.importorskip("psutil")
    env = {k: v for k, v in os.environ.items() if k not in ("RAY_ADDRESS", CLUSTER_ENV)}
    env |= {"RAY_USAGE_STATS_ENABLED": "0", "PYTHONPATH": str(CONF_DIR.parent)}
    proc = subprocess.run([sys.executable, "-c", RAY_PROBE], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    hosts = json.loads(proc.stdout.strip().splitlines()[-1])
    assert hosts and all(h in ("127.0.0.1", "::ffff:127.0.0.1", "::1") for h in hosts), hosts
