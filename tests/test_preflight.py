"""pipeline.sweep.preflight (with the one line of pipeline.sweep.explain): inputs refused before any work with one line
naming what was wrong and what is allowed, exit code 2, no traceback: names that are paths, experiments chosen
by path, a misspelt key or group option (and the guess at what was meant), a comma inside one file name,
launcher settings, recursive interpolations, an experiment overlay that adds Hydra callbacks."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from pipeline.cli import main
from pipeline.paths import CONF_DIR
from pipeline.sweep.preflight import preflight
from pipeline.sweep.schemas import register


# Every command line here is checked with the pre-flight's compose-once cache kept for the module
# (tests/conftest.py shared_compositions): one Hydra composition per choice of config groups.
pytestmark = pytest.mark.usefixtures("shared_compositions")

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
    (["+foo=1"], "+foo=1: unknown key, nothing reads foo; 'boundlab --help' lists every key"),
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
    *[(["-m", "seed=0,1", "hydra/launcher=fork", f"hydra.launcher.n_jobs={v}"], "hydra.launcher.n_jobs=")
      for v in ("0", "abc", "1.5", "true", "-0.5")],
    (["-m", "seed=0,1", "hydra/launcher=fork", "hydra.launcher.n_jobs=0"], "worker processes >= 1, or -1"),
    (["-m", "seed=0,1", "hydra/launcher=fork", "hydra.launcher.backend=loky"], "hydra.launcher.backend: unknown key"),
    (["-m", "seed=0,1", "hydra/launcher=frok"], "unknown hydra/launcher; did you mean fork?"),
    (["-m", "seed=0,1", "hydra/launcher=joblib", "hydra.launcher.backend=multiprocessing"],
     "hydra.launcher.backend='multiprocessing': must be loky (or null): Hydra's joblib launcher always runs loky"),
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
    # a key of another launcher than the one chosen: which launcher takes it
    (["-m", "seed=0,1", "hydra.launcher.n_jobs=2"], ("hydra.launcher.n_jobs: unknown key; a key of hydra/launcher=fork and "
                                                     "hydra/launcher=joblib, not of hydra/launcher=basic: choose it too "
                                                     "(hydra/launcher=fork hydra.launcher.n_jobs=...)")),
    (["seed=0", "hydra.launcher.ray.remote.num_cpus=2"], "a key of hydra/launcher=ray, not of hydra/launcher=basic"),
    # the one key of the log: true or false
    (["log.bounds=yes"], "log.bounds='yes': must be true (a sweep logs every bound of every job"),
    (["-m", "seed=0,1", "log.bounds=1"], "log.bounds=1: must be true"),
    # round four, class 10: a key that steers the sweep is one value for all of it, refused when swept as pack is
    # (preflight.STEERING, one rule)
    (["-m", "seeds=auto,fixed"], "seeds=auto,fixed: seeds is how a sweep chooses its seeds"),
    (["-m", "seeds=auto", "seed_budget=10,20"], "seed_budget=10,20: seed_budget is the most seeds"),
    (["-m", "seed=0,1", "seed_budget=10,20"], "seed_budget=10,20: seed_budget is"),
    (["-m", "seeds=auto", "seed_round=5,10"], "seed_round=5,10: seed_round is the seeds each round"),
    (["-m", "seeds=auto", "seed_minutes=1,2"], "seed_minutes=1,2: seed_minutes is"),
    (["-m", "seed=0,1", "force=true,false"], "force=true,false: force is whether a sweep reruns"),
    (["-m", "seed=0,1", "log.bounds=true,false"], "log.bounds=true,false: log.bounds is what a sweep logs"),
    (["-m", "seed=0,1", "tracking.uri=sqlite:///a.db,sqlite:///b.db"], "tracking.uri is the store a sweep's parent run"),
    (["-m", "seed=0,1", "pack=range(1,3)"], "pack=range(1,3): pack is how a sweep runs"),
    (["-m", "seed=0,1", "hydra.sweep.dir=/tmp/a,/tmp/b"], "hydra.sweep.dir is where a sweep writes"),
    (["-m", "seed=0,1", "hydra/launcher=basic,joblib"], "hydra/launcher is what launches a sweep's jobs"),
    (["-m", "seed=0,1", "hydra/launcher=joblib", "hydra.launcher.n_jobs=1,2"], "hydra.launcher.n_jobs is how a sweep's jobs"),
    # round four, class 8: a directory Hydra would make beyond the system's limits (NAME_MAX a component, PATH_MAX
    # a path) names the key, before any work, never a traceback of 9 KB
    (["-m", "seed=0,1", f"hydra.sweep.dir=/tmp/{'a' * 5000}"], "hydra.sweep.dir=/tmp/aaaa"),
    (["-m", "seed=0,1", f"hydra.sweep.dir=/tmp/{'b' * 300}/x"], "is 300 bytes, above the file system's limit of"),
    (["-m", "seed=0,1", f"hydra.sweep.dir=/tmp/{'c/' * 2100}"], "give hydra.sweep.dir a shorter value"),
    (["-m", "seed=0,1", f"hydra.sweep.subdir={'d' * 300}"], "hydra.sweep.subdir=dddd"),
    # a job directory other than its number: the sweep's end would not find the jobs (it said they all failed)
    (["-m", "seed=0,1", "hydra.sweep.subdir=a/${hydra.job.num}"], "hydra.sweep.subdir=a/${hydra.job.num}: a sweep keeps "
                                                                 "each job in the directory named by its number"),
    (["-m", "seed=0,1", "pack=2", "hydra.sweep.subdir=."], "hydra.sweep.subdir=.: a sweep keeps each job"),
    ([f"hydra.run.dir=/tmp/{'e' * 300}"], "give hydra.run.dir a shorter value"),
    ([f"hydra.run.dir=/tmp/{'f/' * 2100}"], "above this system's limit of"),
    ([f"hydra.job.name={'g' * 300}"], "give hydra.job.name a shorter value"),
    (["-m", "seed=0,1", f"hydra.output_subdir={'h' * 300}"], "give hydra.output_subdir a shorter value"),
    # a group of settings set to a value, null or removed: one line, never a traceback from deep in the run
    (["tracking=null"], "tracking: a group of settings cannot be set to null"),
    (["-m", "seed=0,1", "~tracking"], "tracking: a group of settings cannot be removed"),
    (["log=3"], "log: a group of settings cannot be set to 3"),
    (["-m", "seed=0,1", "hydra.sweeper=null"], "hydra.sweeper: a group of settings cannot be set to null"),
    (["-m", "seed=0,1", "hydra.launcher=null"], "hydra.launcher: a group of settings cannot be set to null"),
    # an override Hydra or OmegaConf fails on with an error of another kind: named, in one line
    (["-m", "seed=0,1", "hydra.sweeper.params={seed: '0,1'}"],
     "hydra.sweeper.params={seed: '0,1'}: Hydra cannot compose the config with this override (AttributeError"),
    (["n=5", "algorithm=null"], "algorithm=null: Hydra cannot compose the config with this override (ValueError"),
    # a group given a mapping with a key it lacks: that key is named, with the close one (not the group itself)
    (["tracking={urx: 1}"], "tracking.urx: unknown key; did you mean tracking.uri?"),
    (["-m", "seed=0,1", "log={bounds: true, x: 2}"], "log.x: unknown key"),
]


@pytest.mark.parametrize("argv", [["zzz=1"], ["-m", "seed=0,1", "hydra/sweeper=nope"], ["experiment=../x"]])
def test_nothing_close_is_no_guess(argv: list[str], one_line_error) -> None:  # noqa: ANN001
    assert "did you mean" not in one_line_error(argv)


@pytest.mark.parametrize(("argv", "hint"), [
    (["-m", "dataset=margin_binary,multiclass_margin", "dataset.k=3"], True),  # k: a key of one swept option only
    (["-m", "seed=0,1", "hydra.launcher.zzz=2"], False),  # no option of any group takes it: no sweep to blame
    (["-m", "seed=0,1", "zzz=1"], False),
])
def test_the_sweep_hint_is_given_only_for_a_key_of_a_swept_group(argv: list[str], hint: bool, one_line_error) -> None:  # noqa: ANN001
    assert ("the fixed keys must exist without the swept options" in one_line_error(argv)) == hint


def test_the_bad_input_table_is_broad() -> None:
    assert len(BAD) >= 25


@pytest.mark.parametrize(("argv", "named"), BAD, ids=[" ".join(a)[:120] for a, _ in BAD])  # [:120]: a path of 5,000
def test_bad_input_is_one_line_naming_the_key(argv: list[str], named: str, one_line_error) -> None:  # noqa: ANN001
    err = one_line_error(argv)
    assert named in err, err


# Hydra's commands that show instead of run (--help, --hydra-help, --cfg/-c, --info) compose the config with the
# command's overrides: a bad one is the run's one line, never Hydra's traceback or its multi-line error
INFO_BAD = [
    (["--help", "foo"], "Error parsing override 'foo'"),
    (["foo", "--hydra-help"], "Error parsing override 'foo'"),
    (["-c", "job", "seed=["], "no viable alternative"),
    (["--help", "experiment=nope"], "experiment=nope: unknown experiment"),
    (["--cfg", "job", "algorithm=pegasus"], "did you mean pegasos?"),
    (["--cfg", "hydra", "hydra.job.chdri=true"], "did you mean hydra.job.chdir?"),
    (["--info", "config", "zzz=1"], "zzz: unknown key"),
    (["--cfg", "job", "algorithm=pegasos", "algorithm.lamda=0.1"], "did you mean algorithm.lam?"),
    (["--help", "seed=abc"], "seed='abc': must be an integer >= 0"),
    (["--cfg", "job", "n=-3"], "n=-3: must be an integer >= 2"),
    (["--cfg", "job", "seed=0,1"], "seed=0,1: --help, --cfg and --info show one job's config: give the key one value"),
    (["-m", "--help", "seed=0,1"], "give the key one value"),
    (["-m", "--cfg", "job"], "-m and --cfg: one at a time"),
    # what Hydra's argument parser refuses: argparse's message alone, not its usage lines
    (["hydra/launcher=joblib", "-m", "seed=0,1"], "unrecognized arguments: seed=0,1 (Hydra's flags come before"),
    (["--bogus"], "unrecognized arguments: --bogus"),
    (["--info", "foo"], "argument --info/-i: invalid choice: 'foo'"),
    # Hydra's flags that would run another config than the one the pre-flight checks
    (["-cn", "nope"], "--config-name nope: boundlab runs its own config (conf/config.yaml)"),
    (["--config-dir", "/tmp"], "--config-dir /tmp: boundlab composes its own config directory"),
    (["-cp", "elsewhere"], "--config-path elsewhere: boundlab runs its own config directory"),
    (["--experimental-rerun", "config.pickle"], "run the same command again"),
    (["--info", "all", "--cfg", "job"], "--cfg and --info: one at a time"),
]


@pytest.mark.parametrize(("argv", "named"), INFO_BAD, ids=[" ".join(a) for a, _ in INFO_BAD])
def test_a_command_that_shows_the_config_refuses_bad_input_in_one_line(argv: list[str], named: str,
                                                                        one_line_error) -> None:  # noqa: ANN001
    err = one_line_error(argv)
    assert named in err, err


@pytest.mark.parametrize("argv", [["--help"], ["--help", "algorithm=pegasos", "seed=3"], ["-m", "--help"],
                                  ["--cfg", "job", "experiment=perceptron_margin"], ["--info", "plugins", "zzz=1"],
                                  ["--hydra-help", "gamma=0.2"], ["-sc", "install=bash"],
                                  ["--config-name", "config", "--cfg", "job"]])
def test_a_command_that_shows_the_config_passes_good_input(argv: list[str]) -> None:
    register()
    plan = preflight(argv)
    assert not plan.jobs and not plan.multirun


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


def test_empty_experiment_name_stops_before_any_work(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                     capsys: pytest.CaptureFixture) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as exit_:
        main(["-m", "seed=0,1", "n=50", "name="])
    assert exit_.value.code == 2 and "name='': must be a plain name" in capsys.readouterr().err
    assert not any(tmp_path.iterdir())


# ---------------------------------------------------------------- an experiment overlay may not add Hydra callbacks


EVIL = """# @package _global_
name: evil
question: does it run my code?
hydra:
  callbacks:
    owned:
      _target_: tests.test_preflight.Marker
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
        EVIL.format(marker=marker).replace("owned:", "sweep:").replace("tests.test_preflight.Marker", "os.system"))
    monkeypatch.setattr("pipeline.sweep.preflight.CONF_DIR", conf)
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


def test_an_error_no_override_causes_alone_is_not_called_the_user_s() -> None:
    """``composed`` names an override only when that override alone fails to compose; an error of the code
    around Hydra (here a composition that always fails) keeps its type and traceback."""
    import hydra

    from pipeline.params import UserError
    from pipeline.paths import CONF_DIR
    from pipeline.sweep.preflight import composed
    from pipeline.sweep.schemas import register

    register()  # the learners' and datasets' schemas, as the command registers them before its pre-flight

    def broken() -> None:
        raise RuntimeError("a bug of ours")

    with hydra.initialize_config_dir(config_dir=str(CONF_DIR), version_base=None):
        with pytest.raises(RuntimeError, match="a bug of ours"):
            composed(broken, ["n=5", "seed=1"])
        with pytest.raises(UserError, match=r"^hydra.sweeper.params=\{seed: 1\}: Hydra cannot compose"):
            composed(broken, ["n=5", "hydra.sweeper.params={seed: 1}"])


@pytest.mark.parametrize(("first", "second", "said"), [(0.054, 0.001, None), (0.054, 0.054, "about 54 s")])
def test_the_checks_estimate_reads_the_rate_after_the_first_jobs(first: float, second: float, said: str | None,
                                                                   monkeypatch: pytest.MonkeyPatch,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    """The first job of a family is composed in full and the rest of a seed round the short way: the estimate
    reads the second hundred jobs' rate. A 100,000-seed round whose first hundred jobs take 54 ms and the next
    hundred 1 ms checks in ~1 s and says nothing; one whose jobs all take 0.5 ms says "about 54 s"."""
    import time

    from pipeline.sweep.preflight import _CheckProgress

    clock = iter([0.0, first, first + second, first + second])
    monkeypatch.setattr(time, "monotonic", lambda: next(clock))
    check = _CheckProgress(100_000)
    for done in range(1, 201):
        check(done)
    err = capsys.readouterr().err
    assert (said in err) if said else err == ""
