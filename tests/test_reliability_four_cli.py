"""Reliability, round four (issue 50), classes 8 and 10 at the command: what the file system around it does, and
which store and which sweep it says it ran.

8. An error of the file system around the command, not of its code, is one line and a non-zero exit, never a
   traceback: a directory Hydra would make beyond the system's limits (``NAME_MAX`` a component, ``PATH_MAX`` a
   path) is refused before any work naming the key (``pipeline.sweep.preflight.check_outputs``, exit 2); a working
   directory removed before the command, or while it runs, is one line (``pipeline.paths.fault``, raised past
   Hydra's reporting by ``pipeline.sweep.hydra_seam.explain_errors``), the sweep's parent ends FAILED and what
   finished stays finished (the same command, from a directory that exists, reuses it).
10. No unclear or false provenance:
   1. ``tracking.uri``, when set, is the store (it wins over ``MLFLOW_TRACKING_URI``, and the command says so
      in one line when both are set), and every run records the store it is in as its ``tracking.uri``;
   2. a sweep over a key that steers the sweep (``seeds``, ``seed_budget``, ``seed_round``, ``pack``, ...) is
      refused in one line, by one rule over one list (``pipeline.sweep.preflight.STEERING``), on the command line or
      in an experiment's grid;
   3. two prunes of the job store at once count each entry (lock, link, temporary file) once: each claims what
      it removes by renaming it into a trash directory of its own inside the store (``pipeline.job.store._Trash``).

The bad-input table (tests/test_preflight.py ``BAD``) and the fault table (tests/test_cli.py, a sweep that dies
before its end) hold the in-process triggers; this file runs the command as a process where the process is the
point (its exit code, its stderr, a working directory removed under it), and races two prunes.
"""

from __future__ import annotations

import errno
import os
import re
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from helpers import boundlab_command, fault_env, migrated_store, sweep_runs, with_sitecustomize

from pipeline import paths
from pipeline.job import store

slow = pytest.mark.slow


def _boundlab(*args: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*boundlab_command(), *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=600)


def _one_line(proc: subprocess.CompletedProcess[str], code: int, *words: str) -> str:
    """The command's stderr: exactly one line, 'boundlab: error: ...' with ``words``, no traceback; exit ``code``."""
    err = proc.stderr
    assert proc.returncode == code, (proc.returncode, err[-3000:])
    assert err.count("\n") == 1 and err.startswith("boundlab: error: ") and "Traceback" not in err, err[-3000:]
    assert len(err) < 600, err  # never the 5,000-character path again
    for w in words:
        assert w in err, err
    return err


# ------------------------------------------------------------------------------------- 8. the file system's errors

def test_hydra_still_reports_through_the_name_the_seam_replaces(capsys: pytest.CaptureFixture) -> None:
    """``explain_errors`` replaces ``hydra._internal.utils.run_and_report``, which ``_run_hydra`` calls by name: an
    error the command words becomes ``Explained`` (one line, exit 1), any other is Hydra's as before."""
    import inspect

    from hydra._internal import utils

    from pipeline.sweep import hydra_seam

    assert "run_and_report(" in inspect.getsource(utils._run_hydra)
    try:
        hydra_seam.explain_errors(lambda e: "worded" if isinstance(e, ZeroDivisionError) else None)
        with pytest.raises(hydra_seam.Explained) as worded:
            utils.run_and_report(lambda: 1 / 0)
        assert worded.value.code == 1 and worded.value.line == "worded"
        capsys.readouterr()
        with pytest.raises(SystemExit) as other:
            utils.run_and_report(lambda: {}["missing"])
        assert not isinstance(other.value, hydra_seam.Explained) and other.value.code == 1
        assert "KeyError" in capsys.readouterr().err  # Hydra's own report
        assert utils.run_and_report(lambda: 7) == 7
    finally:
        hydra_seam.explain_errors(paths.fault)


def test_the_file_systems_errors_are_worded_in_one_line(tmp_path: Path) -> None:
    long_name = "n" * 300
    why = paths.too_long(tmp_path / long_name)
    assert why and "is 300 bytes" in why and "NAME_MAX" in why and long_name not in why
    deep = tmp_path.joinpath(*["d" * 200] * 21)
    assert "PATH_MAX" in (paths.too_long(deep) or "")
    assert paths.too_long(tmp_path / "fine") is None and paths.too_long(tmp_path, below=5000)
    line = paths.fault(OSError(errno.ENAMETOOLONG, "File name too long", str(tmp_path / ("a" * 5000))))
    assert line and "NAME_MAX" in line and len(line) < 400 and "use a shorter path" in line
    assert paths.fault(ValueError("not the file system's")) is None
    assert paths.fault(FileNotFoundError(errno.ENOENT, "no such file", "x")) is None  # the working directory is here
    gone = tmp_path / "gone"
    gone.mkdir()
    here = os.getcwd()
    try:
        os.chdir(gone)
        assert paths.remember_working_dir() == str(gone)
        gone.rmdir()
        for error in (FileNotFoundError(errno.ENOENT, "No such file or directory"), RuntimeError("anything")):
            line = paths.fault(error)
            assert line and f"the working directory {gone} was removed" in line and "run the same command" in line
    finally:
        os.chdir(here)


@slow  # the installed command, as a process: its exit code and its stderr are the point
def test_a_directory_beyond_the_systems_limits_is_one_line_before_any_work(tmp_path: Path) -> None:
    uri, env = fault_env(tmp_path)
    deep = tmp_path.joinpath(*["w" * 200] * 20)  # about 4,080 bytes: multirun/NAME/KEY/J/... do not fit below it
    deep.mkdir(parents=True)
    cases = [  # (argv, cwd, words)
        (["-m", "seed=0,1", "n=50", "name=limits", f"hydra.sweep.dir={tmp_path / ('a' * 5000)}"], tmp_path,
         ["hydra.sweep.dir=", "NAME_MAX", "give hydra.sweep.dir a shorter value"]),
        (["-m", "seed=0,1", "n=50", "name=limits", f"hydra.sweep.dir={tmp_path / ('b/' * 2100)}"], tmp_path,
         ["hydra.sweep.dir=", "PATH_MAX"]),
        (["n=50", "name=limits", f"hydra.run.dir={tmp_path / ('c' * 256)}"], tmp_path, ["hydra.run.dir=", "NAME_MAX"]),
        (["-m", "seed=0,1", "n=50", "name=limits"], deep,
         ["hydra.sweep.dir=multirun/${name}/${boundlab:sweep_key} (in the working directory", "PATH_MAX",
          "or run from a shorter directory"]),
    ]
    for argv, cwd, words in cases:
        _one_line(_boundlab(*argv, cwd=cwd, env=env), 2, *words)
    made = [os.path.join(top, d) for top, dirs, _ in os.walk(tmp_path) for d in dirs if d in ("multirun", "outputs")]
    assert not made, "nothing made"  # os.walk: a directory whose path is too long to reach is skipped, not an error
    assert sweep_runs(uri, "limits") == ([], [])


# Removes the command's working directory at the start of its BOUNDLAB_REMOVE_CWD-th job in this process (0: as
# the interpreter starts, before the command's first line).
REMOVE_CWD = """\
import os, shutil
when = os.environ.get("BOUNDLAB_REMOVE_CWD")
if when == "0":
    shutil.rmtree(os.getcwd())
elif when:
    import pipeline.sweep.stages as stages
    original, calls = stages.job, [0]
    def job(cfg):
        calls[0] += 1
        if calls[0] == int(when):
            shutil.rmtree(os.getcwd(), ignore_errors=True)
        return original(cfg)
    stages.job = job
"""


def _removing_env(tmp_path: Path, when: int) -> tuple[str, dict[str, str]]:
    uri, env = fault_env(tmp_path, BOUNDLAB_CACHE=str(tmp_path / "cache"))
    return uri, with_sitecustomize(tmp_path, REMOVE_CWD, env | {"BOUNDLAB_REMOVE_CWD": str(when)})


@slow  # the working directory of a process removed under it
@pytest.mark.parametrize(("argv", "when", "finished"), [
    (["-m", "seed=0,1,2,3"], 2, 1),  # while the second job runs: the first finished
    (["-m", "seed=0,1,2,3"], 3, 2),
    (["-m", "seed=0,1,2,3"], 1, 0),  # while the first job runs
    ([], 1, 0),  # a single run
], ids=["sweep-job-2", "sweep-job-3", "sweep-job-1", "single-run"])
def test_a_working_directory_removed_while_the_command_runs_is_one_line(tmp_path: Path, argv: list[str], when: int,
                                                                        finished: int) -> None:
    """One line naming the directory and how to resume, exit 1, no traceback; the sweep's parent ends FAILED (never
    RUNNING), the jobs that finished stay FINISHED and the same command from a directory that exists reuses them."""
    uri, env = _removing_env(tmp_path, when)
    work = tmp_path / "work"
    work.mkdir()
    cmd = [*argv, "n=50", "name=removed"]
    _one_line(_boundlab(*cmd, cwd=work, env=env), 1, f"the working directory {work} was removed while the command ran",
              "run the same command to resume, from a directory that exists")
    parents, children = sweep_runs(uri, "removed")
    assert all(r.info.status != "RUNNING" for r in parents), [r.info.status for r in parents]
    if not argv:
        return
    assert [p.info.status for p in parents] == ["FAILED"]
    done = sorted(c.data.params["seed"] for c in children if c.info.status == "FINISHED")
    assert len(done) >= finished, done
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    again = _boundlab(*cmd, cwd=elsewhere, env={k: v for k, v in env.items() if k != "BOUNDLAB_REMOVE_CWD"})
    assert again.returncode == 0, again.stderr[-3000:]
    reused = re.search(r"4 runs in .* \((\d+) reused from earlier sweeps\)", again.stdout + again.stderr)
    assert reused and int(reused.group(1)) >= len(done), (again.stdout + again.stderr)[-3000:]
    _, children = sweep_runs(uri, "removed")
    assert set(done) <= {c.data.params["seed"] for c in children if c.info.status == "FINISHED"}


@slow  # a process started in a directory removed before its first line
def test_a_working_directory_removed_before_the_command_is_one_line(tmp_path: Path) -> None:
    _, env = _removing_env(tmp_path, 0)
    for argv in (["-m", "seed=0,1", "n=50"], ["n=50"], ["--cfg", "job"]):
        work = tmp_path / "work"
        work.mkdir()
        _one_line(_boundlab(*argv, cwd=work, env=env | {"PWD": str(work)}), 2,
                  f"the working directory {work} does not exist", "cd to a directory that exists")


# ------------------------------------------------------------------------------------- 10.1 which tracking store

def test_tracking_uri_when_set_wins_over_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    from pipeline.tracking import tracking_uri

    monkeypatch.setenv("MLFLOW_TRACKING_URI", "sqlite:////env.db")
    assert tracking_uri("sqlite:////given.db") == "sqlite:////given.db"
    assert tracking_uri(None) == "sqlite:////env.db"
    monkeypatch.delenv("MLFLOW_TRACKING_URI")
    assert tracking_uri(None).endswith("/mlflow.db") and tracking_uri(None).startswith("sqlite:///")


@pytest.mark.e2e
def test_the_command_lines_tracking_uri_is_the_store_and_what_every_run_records(tmp_path: Path,
                                                                              boundlab_in_process) -> None:  # noqa: ANN001
    env_uri = migrated_store(tmp_path / "env" / "mlflow.db")
    given = migrated_store(tmp_path / "given" / "mlflow.db")
    env = {**os.environ, "MLFLOW_TRACKING_URI": env_uri, "BOUNDLAB_CACHE": str(tmp_path / "cache")}
    said = f"boundlab: the runs go to tracking.uri={given}, not to MLFLOW_TRACKING_URI={env_uri}"
    for i, how in enumerate((["-m", "seed=0,1", f"tracking.uri={given}"], [f"tracking.uri={given}"],
                             [f"++tracking.uri={given}"])):
        name = f"given{i}"  # a gamma each: two single runs in one second of this process share a directory
        done = boundlab_in_process(*how, "n=50", f"gamma=0.{i + 1}", f"name={name}", cwd=tmp_path, env=env)
        assert done.returncode == 0, done.stderr[-3000:]
        assert done.stderr.count(said) == 1, done.stderr[-3000:]
        parents, children = sweep_runs(given, name)
        runs = children if how[0] == "-m" else parents  # a single run is a run without a parent
        assert runs and all(r.data.params["tracking.uri"] == given for r in runs)
        assert all(r.info.status == "FINISHED" for r in parents + children)
        assert sweep_runs(env_uri, name) == ([], []), "nothing in the store the command line overrode"
    done = boundlab_in_process("n=50", "gamma=0.5", "name=fromenv", cwd=tmp_path, env=env)  # tracking.uri null: the environment's
    assert done.returncode == 0 and "the runs go to" not in done.stderr, done.stderr[-3000:]
    (run,), _ = sweep_runs(env_uri, "fromenv")
    assert run.data.params["tracking.uri"] == env_uri  # the store it is in, not the config's null


# ------------------------------------------------------------------------------------- 10.2 keys that steer a sweep

@slow  # the installed command, as a process
def test_a_sweep_over_a_steering_key_is_one_line_before_any_work(tmp_path: Path) -> None:
    uri, env = fault_env(tmp_path)
    for argv, words in ((["-m", "seeds=auto,fixed"], "seeds=auto,fixed: seeds is how a sweep chooses its seeds"),
                        (["-m", "seeds=auto", "seed_budget=10,20"], "seed_budget=10,20: seed_budget is"),
                        (["-m", "seeds=auto", "seed_round=5,10"], "seed_round=5,10: seed_round is"),
                        (["-m", "seed=0,1", "pack=1,2"], "pack=1,2: pack is how a sweep runs")):
        _one_line(_boundlab(*argv, "n=50", "name=steered", cwd=tmp_path, env=env), 2, words, "give one value")
    assert not (tmp_path / "multirun").exists() and sweep_runs(uri, "steered") == ([], [])


def test_an_experiments_grid_may_not_sweep_a_steering_key_either() -> None:
    from omegaconf import OmegaConf

    from pipeline.params import UserError
    from pipeline.sweep.preflight import check_steering, sweep_overrides

    def grid(**params: str):  # noqa: ANN202
        return OmegaConf.create({"hydra": {"sweeper": {"params": params}}})

    check_steering(sweep_overrides(grid(gamma="0.1,0.2", seed="0,1"), ["seeds=auto"]))  # a swept setting: fine
    for key, values in (("seeds", "auto,fixed"), ("seed_budget", "10,20"), ("pack", "1,2"), ("force", "true,false")):
        with pytest.raises(UserError, match=rf"^{key}={values}: {key} is .*one value for all of it"):
            check_steering(sweep_overrides(grid(gamma="0.1,0.2", **{key: values}), []))


def test_every_steering_key_is_a_key_of_the_config() -> None:
    """The list does not rot: each of its keys is one the config has (or a group Hydra chooses)."""
    from hydra import compose, initialize_config_dir
    from omegaconf import OmegaConf

    from pipeline.paths import CONF_DIR
    from pipeline.sweep.preflight import STEERING, steering
    from pipeline.sweep.schemas import register

    register()
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base=None):
        cfg = compose("config", return_hydra_config=True)
    for key in STEERING:
        if "/" in key:
            assert key in cfg.hydra.runtime.choices, key
        else:
            assert OmegaConf.select(cfg, key, default="absent", throw_on_missing=False) != "absent", key
    assert steering("hydra.launcher.n_jobs") and steering("seed") is None and steering("seeds_x") is None


# ------------------------------------------------------------------------------------- 10.3 two prunes at once

def _dead_pid() -> int:
    """A pid no process can have (above the kernel's pid_max)."""
    try:
        return int(Path("/proc/sys/kernel/pid_max").read_text()) + 1
    except (OSError, ValueError):
        return 2**22 + 1


def _stocked(root: Path, outside: Path, entries: int, lock_dirs: int, temps: int, links: int) -> None:
    """A store with ``entries`` entries unused for a year, ``lock_dirs`` lock directories no process holds,
    ``temps`` temporary files of a dead process and ``links`` symbolic links planted to files ``outside`` it."""
    old = time.time() - 365 * 86400
    for i in range(entries):
        entry = root / f"{i:024x}"
        entry.mkdir(parents=True)
        (entry / "results.parquet").write_bytes(b"x" * 100)
        (entry / store.ENTRY).write_text("{}\n")
        os.utime(entry / store.ENTRY, (old, old))
    for i in range(lock_dirs):
        (root / "locks" / f"{i:024x}").mkdir(parents=True)
        (root / "locks" / f"{i:024x}" / ".lock").write_text("1\n")
    dead = _dead_pid()
    for i in range(temps):
        (root / f".t{i}.{dead}.tmp").write_text("staged\n")
    outside.mkdir(exist_ok=True)
    for i in range(links):
        (outside / f"target{i}").write_text("not the store's\n")
        (root / f"link{i}").symlink_to(outside / f"target{i}")


KINDS = {"entries": 160, "locks": 40, "temporary": 20, "links": 10}


def _left(root: Path) -> list[str]:
    return sorted(p.name for p in root.iterdir() if p.name != "locks") + sorted(p.name for p in (root / "locks").iterdir())


def _prune_at(start: threading.Barrier, counts: list[dict[str, int]], errors: list[BaseException]) -> None:
    start.wait()
    try:
        counts.append(store.prune(older_than_days=30))
    except BaseException as e:  # noqa: BLE001 - the test's failure, named
        errors.append(e)


def test_two_prunes_at_once_count_each_entry_lock_and_file_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Two prunes of one store at once (threads started together): every entry, unheld lock, dead process's
    temporary file and planted link is removed and counted by exactly one of them, nothing outside the store is
    touched, and no trash is left behind."""
    monkeypatch.setenv("BOUNDLAB_CACHE", str(tmp_path / "cache"))
    root, outside = store.store_dir(), tmp_path / "outside"
    for _ in range(3):  # three races: the claims interleave differently each time
        _stocked(root, outside, KINDS["entries"], KINDS["locks"], KINDS["temporary"], KINDS["links"])
        start = threading.Barrier(2)
        counts: list[dict[str, int]] = []
        errors: list[BaseException] = []
        threads = [threading.Thread(target=_prune_at, args=(start, counts, errors)) for _ in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(120)
        assert not errors and len(counts) == 2, errors
        for kind, made in KINDS.items():
            assert sum(c[kind] for c in counts) == made, (kind, counts)
        assert sum(c["bytes"] for c in counts) == KINDS["entries"] * (100 + 3)
        assert _left(root) == [], _left(root)  # the entries, the locks, the temporaries, the links and both trashes
        assert sorted(p.name for p in outside.iterdir()) == [f"target{i}" for i in range(KINDS["links"])]
        assert sorted(p.name for p in tmp_path.iterdir()) == ["cache", "outside"]


PRUNE = """\
import os, sys, time
from pipeline.job import store
go = sys.argv[1]
while not os.path.exists(go):
    time.sleep(0.001)
sys.exit(store.main(["prune", "--older-than", "30"]))
"""


@slow  # two processes
def test_two_prune_commands_at_once_report_each_entry_once(tmp_path: Path) -> None:
    """``python -m pipeline.job.store prune`` twice at once, released together: the entries each reports removed add
    up to the entries there were."""
    env = {**os.environ, "BOUNDLAB_CACHE": str(tmp_path / "cache")}
    root = tmp_path / "cache" / "jobs"
    for race in range(3):
        _stocked(root, tmp_path / "outside", 300, 30, 10, 5)
        go = tmp_path / f"go{race}"
        procs = [subprocess.Popen([sys.executable, "-c", PRUNE, str(go)], cwd=tmp_path, env=env, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True) for _ in range(2)]
        time.sleep(1.5)  # both interpreters up and waiting
        go.touch()
        outs = [p.communicate(timeout=120) for p in procs]
        assert all(p.returncode == 0 for p in procs) and not any(err for _, err in outs), outs
        said = [re.search(r"removed (\d+) entries .*?, (\d+) unheld lock\(s\), (\d+) temporary file\(s\)", out)
                for out, _ in outs]
        assert all(said), outs
        assert sum(int(m.group(1)) for m in said) == 300, outs
        assert sum(int(m.group(2)) for m in said) == 30 and sum(int(m.group(3)) for m in said) == 10, outs
        assert _left(root) == []
