"""Plug-ins: entry-point discovery (built-ins and plug-ins alike), the conformance check over every registered
learner, bound and dataset, the worked example installed and swept, and broken or colliding plug-ins."""

from __future__ import annotations

import inspect
import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from pipeline import plugins
from pipeline.bounds import BOUNDS, bounds_for
from pipeline.data import DATASETS
from pipeline.learners import LEARNERS, Perceptron
from pipeline.testing import check_bound, check_dataset, check_learner

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "boundlab-passive-aggressive"


# --- The registries -----------------------------------------------------------------------------------

def test_builtins_are_entry_points_and_the_views_are_unchanged() -> None:
    declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["entry-points"]
    for kind, registry in (("learners", plugins.LEARNERS), ("datasets", plugins.DATASETS), ("bounds", plugins.BOUNDS)):
        builtin = {n: e.value for n, e in registry.entries().items() if e.builtin}
        assert builtin == declared[plugins.GROUPS[kind]], f"reinstall boundlab (pip install -e .): {kind} metadata is stale"
    assert LEARNERS["perceptron"] is Perceptron and LEARNERS is plugins.LEARNERS
    assert {"perceptron", "pegasos", "halving", "multiclass_sgd"} <= set(LEARNERS)
    assert {"margin_binary", "tight", "stream", "multiclass_file"} <= set(DATASETS)
    assert [b.name for b in bounds_for("perceptron")] == ["novikoff", "hinge_all_rounds", "freund_schapire"]
    assert len({b.name for b in BOUNDS}) == len(BOUNDS) >= 27


@pytest.mark.slow  # a fresh interpreter: what discovery imports
def test_discovery_imports_nothing(example: Path) -> None:
    code = ("import sys; from pipeline.sweep.schemas import register; from pipeline.learners import LEARNERS; register(); "
            "print('passive_aggressive' in LEARNERS, sorted(m for m in sys.modules if m.startswith('boundlab_pa')))")
    out = subprocess.run([sys.executable, "-c", code], env=_env(example), capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "True []"


# --- The conformance check over everything registered ------------------------------------------------

@pytest.fixture(scope="module")
def files(svm_file: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict]:
    labels = tmp_path_factory.mktemp("labels") / "three.csv"
    labels.write_text("".join(f"{i % 7},{(i * 3) % 5},{i % 3}\n" for i in range(30)))
    # bundled: iris, the smallest of the bundled sets (150 rows; breast cancer's 569 take 50 times as long to
    # certify): what is checked (determinism, pickling, statistics against the arrays, a run) is the class's, not the set's
    return {"file": {"path": str(svm_file)}, "multiclass_file": {"path": str(labels), "k": 3},
            "sparse_margin": {"d": 500, "nnz": 5}, "bundled": {"source": "iris"}}


@pytest.mark.parametrize("name", sorted(LEARNERS))
def test_learner_conforms(name: str) -> None:
    report = check_learner(LEARNERS[name], seeds=(0, 1))
    assert {"determinism", "pickling", "parameter validation", "no mutation of inputs"} <= set(report.passed)
    assert ("learn_one equals run" in report.passed) == (name == "perceptron")


@pytest.mark.parametrize("bound", [b.name for b in BOUNDS])
def test_bound_conforms(bound: str) -> None:
    record = next(b for b in BOUNDS if b.name == bound)
    report = check_bound(record, seeds=(0,))
    assert "statistics provided" in report.passed
    assert ("no (D) bound violated" in report.passed) == (record.guarantee == "D")


@pytest.mark.parametrize("name", sorted(DATASETS))
def test_dataset_conforms(name: str, files: dict[str, dict]) -> None:
    report = check_dataset(DATASETS[name], **files.get(name, {}))
    assert {"determinism", "pickling", "certified statistics agree with the arrays"} <= set(report.passed)


# --- Declarations: parameters once (Param with its default), kinds of data declared ---------------------

def _classes() -> list[tuple[str, type]]:
    return [(f"algorithm={n}", LEARNERS[n]) for n in sorted(LEARNERS)] + [(f"dataset={n}", DATASETS[n]) for n in sorted(DATASETS)]


@pytest.mark.parametrize(("label", "cls"), _classes(), ids=[label for label, _ in _classes()])
def test_parameters_are_declared_once(label: str, cls: type) -> None:
    """The constructor, its signature, the stored attributes, get_params and the config schema all come from
    ``params``: keyword-only, in declaration order, with the declared defaults (docs/plugins.md)."""
    from pipeline.params import REQUIRED
    from pipeline.sweep.schemas import node
    from pipeline.testing import SMALL

    assert getattr(cls.__init__, "generated", False), f"{label}: a hand-written __init__ that only stores parameters"
    signature = inspect.signature(cls).parameters
    assert list(signature) == [p.name for p in cls.params]
    assert all(s.kind is inspect.Parameter.KEYWORD_ONLY for s in signature.values())
    empty = inspect.Parameter.empty
    assert {k: s.default for k, s in signature.items()} == {p.name: empty if p.default is REQUIRED else p.default
                                                            for p in cls.params}
    required = {p.name: ({"path": "x.csv"} | SMALL)[p.name] for p in cls.params if p.default is REQUIRED}
    obj = cls(**required)
    declared = {p.name: required.get(p.name, p.default) for p in cls.params}
    assert {k: getattr(obj, k) for k in declared} == declared
    assert obj.get_params() == {k: v for k, v in declared.items() if not (cls.name == "multiclass_bundled" and k == "sample")}
    assert node(cls) == {"name": cls.name, **{p.name: "???" if p.default is REQUIRED else p.default for p in cls.params}}
    with pytest.raises(TypeError, match="unexpected keyword argument 'no_such_key'"):
        cls(**required, no_such_key=1)


def test_registering_again_stores_a_schema_only_when_it_changed(monkeypatch: pytest.MonkeyPatch) -> None:
    """schemas.register() runs at every pre-flight check: it keeps the store's entry for an unchanged schema
    (making the structured node is most of its cost), and stores again one whose defaults changed, or one a
    reset store lost."""
    from hydra.core.config_store import ConfigStore

    from pipeline.sweep.schemas import register

    def entry() -> object:
        return ConfigStore.instance().repo["schema"]["algorithm"]["perceptron.yaml"]

    register()
    first = entry()
    register()
    assert entry() is first
    changed = tuple(p.but(default="mistake") if p.name == "tie" else p for p in Perceptron.params)
    monkeypatch.setattr(Perceptron, "params", changed)
    register()
    assert entry() is not first and entry().node.tie == "mistake"
    monkeypatch.undo()
    register()
    assert entry().node.tie == first.node.tie
    again = entry()
    del ConfigStore.instance().repo["schema"]["algorithm"]["perceptron.yaml"]
    register()
    assert entry() is not again and entry().node == again.node


def test_the_generated_constructor_behaves_like_a_written_one() -> None:
    from pipeline.learners.base import Learner
    from pipeline.params import Param

    class Step(Learner):
        name = "step"
        params = (Param("passes", int, lambda v: v >= 1, "an integer >= 1", default=1),
                  Param("eta", float, lambda v: v > 0, "a number > 0"))

    assert str(inspect.signature(Step)) == "(*, passes: int = 1, eta: float)"
    assert Step(eta=0.5).get_params() == {"passes": 1, "eta": 0.5}
    with pytest.raises(TypeError, match=r"Step\(\): missing a required argument: 'eta'"):
        Step()
    with pytest.raises(TypeError, match="too many positional arguments"):
        Step(2, 0.5)

    class Inherits(Step):  # a subclass that declares nothing new keeps the constructor
        name = "inherits"

    assert Inherits(eta=1.0, passes=3).get_params() == {"passes": 3, "eta": 1.0}

    class More(Step):  # a constructor that does more than store calls the generated one
        name = "more"

        def __init__(self, **params: object) -> None:
            super().__init__(**params)
            self.rate = 1.0 / self.eta

    more = More(eta=0.5)
    assert (more.passes, more.eta, more.rate) == (1, 0.5, 2.0)

    class Written(Learner):  # a plug-in from before Param.default: its own __init__ is kept, its defaults read
        name = "written"
        params = (Param("passes", int, lambda v: v >= 1, "an integer >= 1"),)

        def __init__(self, *, passes: int = 2) -> None:
            self.passes = passes

    from pipeline.params import param_defaults

    assert param_defaults(Written) == {"passes": 2} and Written().get_params() == {"passes": 2}
    with pytest.raises(TypeError, match="declare it once"):
        class Twice(Learner):  # two defaults for one parameter
            name = "twice"
            params = (Param("passes", int, lambda v: v >= 1, "an integer >= 1", default=1),)

            def __init__(self, *, passes: int = 2) -> None:
                self.passes = passes


def test_kinds_are_declared() -> None:
    from pipeline.data.dataset import KINDS

    assert {DATASETS[n].kind for n in DATASETS} == set(KINDS)
    for name in LEARNERS:
        assert LEARNERS[name].accepts and LEARNERS[name].accepts <= set(KINDS), name
    assert {n for n in LEARNERS if "stream" in LEARNERS[n].accepts} == {"perceptron"}
    assert {n for n in LEARNERS if "multiclass" in LEARNERS[n].accepts} == {"multiclass_sgd", "multiclass_svm", "ova",
                                                                            "multiclass_pegasos"}


@pytest.mark.parametrize(("learner", "dataset", "message"), [
    ("pegasos", "stream", "dataset stream is streamed in chunks, never held whole; algorithm=pegasos needs the whole "
                          "sample: use algorithm=perceptron or dataset=margin_binary"),
    ("multiclass_sgd", "margin_binary", "algorithm=multiclass_sgd: dataset margin_binary is binary; use "
                                        "dataset=multiclass_margin or dataset=multiclass_bundled"),
    ("ova", "finite_class", "algorithm=ova: dataset finite_class is binary; use dataset=multiclass_margin or "
                            "dataset=multiclass_bundled"),
    ("multiclass_svm", "stream", "dataset stream is streamed in chunks, never held whole; algorithm=multiclass_svm "
                                 "needs the whole sample: use algorithm=perceptron or dataset=margin_binary"),
    ("perceptron", "multiclass_margin", "algorithm=perceptron is a binary learner and dataset multiclass_margin has 3 "
                                        "classes; use algorithm=multiclass_sgd, multiclass_svm, ova or multiclass_pegasos"),
])
def test_kinds_that_do_not_meet_are_refused_in_one_line(learner: str, dataset: str, message: str) -> None:
    from pipeline.job.config import Job
    from pipeline.params import UserError
    from pipeline.job.run import prepare
    from pipeline.testing import SMALL, _kwargs

    lrn = LEARNERS[learner](**_kwargs(LEARNERS[learner], {}))
    ds = DATASETS[dataset](**{k: v for k, v in _kwargs(DATASETS[dataset], {}).items() if k in SMALL})
    with pytest.raises(UserError) as info:
        prepare(Job(experiment="t", seed=0, learner=lrn, dataset=ds))
    assert str(info.value) == message


class Mutating(Perceptron):
    name = "mutating"

    def run(self, dataset, rng):  # noqa: ANN001, ANN201
        dataset.X[0, 0] += 1.0
        return super().run(dataset, rng)


class Unseeded(Perceptron):
    name = "unseeded"

    def run(self, dataset, rng):  # noqa: ANN001, ANN201
        import numpy as np

        out = super().run(dataset, rng)
        out.stats["noise"] = float(np.random.default_rng().random())
        return out


class Unchecked(Perceptron):
    name = "unchecked"

    def check(self) -> None:
        pass


def test_the_check_catches_a_broken_learner() -> None:
    with pytest.raises(AssertionError, match="no mutation of inputs: run.. changed the dataset's array X"):
        check_learner(Mutating, seeds=(0,))
    with pytest.raises(AssertionError, match="determinism: two runs with seed 0 differ"):
        check_learner(Unseeded, seeds=(0,))
    with pytest.raises(AssertionError, match="parameter validation: tie=12345 is accepted"):
        check_learner(Unchecked, seeds=(0,))


# --- The worked example: installed beside the venv, swept ---------------------------------------------

def _install_example_dir() -> Path:
    """The example package installed into a fresh directory (its dist metadata and module), venv untouched.
    setuptools (in the venv) writes the metadata from its pyproject.toml; ``pip install --target`` would need
    the ``wheel`` package, which a fresh venv lacks."""
    import tempfile

    target = Path(tempfile.mkdtemp(prefix="boundlab-plugin-"))
    subprocess.run([sys.executable, "-c", "from setuptools import setup; setup()", "egg_info", "--egg-base", str(target)],
                   cwd=EXAMPLE, check=True, capture_output=True)
    shutil.copy(EXAMPLE / "boundlab_pa.py", target)
    return target


def _env(*paths: Path, tracking: Path | None = None) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([*map(str, paths), *([env["PYTHONPATH"]] if env.get("PYTHONPATH") else [])])
    if tracking is not None:
        env["MLFLOW_TRACKING_URI"] = f"sqlite:///{tracking / 'mlflow.db'}"
    return env


@pytest.fixture(scope="module")
def example() -> Path:
    target = _install_example_dir()
    yield target
    shutil.rmtree(target, ignore_errors=True)


@pytest.fixture(scope="module")
def example_module(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The example's module alone in a directory, to import in this process: what the in-process tests use.
    Its dist metadata, which only discovery reads, is written by setuptools in a process (``example``: slow)."""
    target = tmp_path_factory.mktemp("plugin")
    shutil.copy(EXAMPLE / "boundlab_pa.py", target)
    return target


def test_example_conforms(example_module: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(example_module))
    import boundlab_pa

    assert "learn_one equals run" in check_learner(boundlab_pa.PassiveAggressive, bounds=boundlab_pa.BOUNDS).passed
    for bound in boundlab_pa.BOUNDS:
        assert "no (D) bound violated" in check_bound(bound, learner=boundlab_pa.PassiveAggressive).passed


def _docs_estimator_block() -> str:
    """The ```python block of docs/plugins.md that wraps the worked example as a scikit-learn estimator."""
    import re

    text = (ROOT / "docs" / "plugins.md").read_text()
    (block,) = [b for b in re.findall(r"^```python\n(.*?)^```", text, flags=re.DOTALL | re.MULTILINE)
                if "import boundlab_pa" in b]
    return block


def test_the_docs_example_is_wrapped_as_a_scikit_learn_estimator(example_module: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """docs/plugins.md's block, run exactly as written with a sample X, y: the example learner (learn_one and w_,
    no learn_stream) is adapted, and fit is its run, bit for bit."""
    import numpy as np

    from pipeline.data import MarginBinary

    monkeypatch.syspath_prepend(str(example_module))
    ds = MarginBinary(gamma=0.2, rho=1.0, n=300, d=5).generate(np.random.default_rng(0))
    scope = {"X": ds.X, "y": np.where(ds.y > 0, "yes", "no")}
    exec(compile(_docs_estimator_block(), "docs/plugins.md", "exec"), scope)  # noqa: S102 - the docs' own code
    assert scope["scores"].shape == (5,) and scope["scores"].min() > 0.9, scope["scores"]
    import boundlab_pa

    cls = scope["PassiveAggressiveClassifier"]
    learner = boundlab_pa.PassiveAggressive(passes=3)
    learner.run(ds, np.random.default_rng(0))
    est = cls(passes=3).fit(ds.X, ds.y)
    np.testing.assert_array_equal(est.coef_[0], learner.w_)
    np.testing.assert_array_equal(est.predict(ds.X), np.where(ds.X @ learner.w_ > 0, 1.0, -1.0))
    halves = cls().partial_fit(ds.X[:150], ds.y[:150], classes=[-1, 1]).partial_fit(ds.X[150:], ds.y[150:])
    np.testing.assert_array_equal(halves.coef_, cls().fit(ds.X, ds.y).coef_)


def test_the_docs_example_passes_the_scikit_learn_checks_but_one(example_module: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """scikit-learn's check_estimator on the wrapped example, constructed with no argument: every API check passes.
    The one failure is check_classifiers_train's accuracy > 0.83 on standardised blobs: PA's last iterate, with no
    intercept, reaches 0.79 there (the Perceptron's 0.965): a property of the learner, not of the adapter."""
    import warnings

    from sklearn.utils.estimator_checks import check_estimator

    from pipeline.estimators import estimator

    monkeypatch.syspath_prepend(str(example_module))
    import boundlab_pa

    est = estimator(boundlab_pa.PassiveAggressive)()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        results = check_estimator(est, on_fail=None)
    failed = {r["check_name"] for r in results if r["status"] == "failed"}
    assert failed == {"check_classifiers_train"}, failed
    assert sum(r["status"] == "passed" for r in results) > 40


@pytest.mark.slow  # the installed command finds the plug-in on its PYTHONPATH
def test_example_sweeps_and_is_judged(example: Path, tmp_path: Path, boundlab) -> None:  # noqa: ANN001
    done = boundlab("-m", "algorithm=passive_aggressive", "seed=0,1,2", "n=200", cwd=tmp_path,
                    env=_env(example, tracking=tmp_path))
    assert done.returncode == 0, done.stderr[-3000:]
    assert "warning" not in done.stderr
    (table,) = [pd.read_parquet(p) for p in tmp_path.glob("multirun/*/*/results.parquet")]
    assert set(table["learner"]) == {"passive_aggressive"} and sorted(table["seed"].unique()) == [0, 1, 2]
    assert set(table["bound"]) == {"pa_mistakes", "pa_squared_hinge"}
    assert table["holds"].all() and table["informative"].all() and (table["guarantee"] == "D").all()
    assert "pa_mistakes (D): holds (3 of 3 runs informative): 0 violations in 3 runs" in done.stdout + done.stderr
    helped = boundlab("--help", cwd=tmp_path, env=_env(example))
    assert "passive_aggressive" in helped.stdout.split("== Config ==")[0]


@pytest.mark.slow  # the installed command finds the plug-in on its PYTHONPATH
def test_example_attains_its_bound_as_the_guide_says(example: Path, tmp_path: Path, boundlab) -> None:  # noqa: ANN001
    """docs/plugins.md's "the bound attained" line: both bounds hold, informative, with measured/bound exactly 1."""
    done = boundlab("-m", "algorithm=passive_aggressive", "algorithm.passes=2", "dataset=tight", "n=50,100",
                    cwd=tmp_path, env=_env(example, tracking=tmp_path))
    assert done.returncode == 0, done.stderr[-3000:]
    (table,) = [pd.read_parquet(p) for p in tmp_path.glob("multirun/*/*/results.parquet")]
    assert table["informative"].all() and table["holds"].all(), table
    assert ((table["ratio"] > 1 - 1e-12) & (table["ratio"] <= 1)).all(), table["ratio"]  # the bound rounded up by (1 + 8u)
    for bound in ("pa_mistakes", "pa_squared_hinge"):
        assert f"{bound} (D): holds (2 of 2 runs informative)" in done.stdout + done.stderr


# --- Broken and colliding plug-ins --------------------------------------------------------------------

def _fake(root: Path, dist: str, entry_points: str, module: str = "", source: str = "") -> None:
    info = root / f"{dist.replace('-', '_')}-0.1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(entry_points)
    if module:
        (root / f"{module}.py").write_text(source)


@pytest.fixture(scope="module")
def fakes(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("fakes")
    _fake(root, "fake-collide", "[boundlab.learners]\nperceptron = fake_collide:Perceptron\n", "fake_collide",
          "from pipeline.learners import Perceptron\n")
    _fake(root, "fake-broken", "[boundlab.learners]\nbroken = fake_broken:Broken\n"
          "[boundlab.bounds]\nbroken = fake_broken:BOUNDS\n", "fake_broken", "import no_such_module_anywhere\n")
    _fake(root, "fake-bound", "[boundlab.bounds]\nstray = fake_stray:BOUNDS\n", "fake_stray", "raise RuntimeError('boom')\n")
    _fake(root, "fake-twin-a", "[boundlab.datasets]\ntwin = fake_twin:A\n")
    _fake(root, "fake-twin-b", "[boundlab.datasets]\ntwin = fake_twin:B\n")
    return root


def _warnings(stderr: str) -> list[str]:
    return [ln for ln in stderr.splitlines() if ln.startswith("boundlab: warning:")]


@pytest.mark.slow  # the installed command with fake distributions on its PYTHONPATH
def test_collisions_warn_and_unselected_broken_plugins_do_not_crash(fakes: Path, tmp_path: Path, boundlab) -> None:  # noqa: ANN001
    done = boundlab("--help", cwd=tmp_path, env=_env(fakes))
    assert done.returncode == 0, done.stderr
    lines = _warnings(done.stderr)
    assert len(lines) == 2 and len(done.stderr.splitlines()) == 2, done.stderr
    collide = next(ln for ln in lines if "fake-collide" in ln)
    assert "boundlab.learners: perceptron = fake_collide:Perceptron (distribution fake-collide 0.1)" in collide
    assert "collides with boundlab's built-in 'perceptron' and is ignored; rename the entry point" in collide
    twin = next(ln for ln in lines if "twin" in ln)
    assert "fake-twin-a 0.1" in twin and "fake-twin-b 0.1" in twin and "uninstall one" in twin
    assert "broken" in done.stdout  # listed, not imported
    # the built-in keeps its name; the stray bound plug-in that does not import is a warning, the run goes on
    run = boundlab("n=30", cwd=tmp_path, env=_env(fakes, tracking=tmp_path))
    assert run.returncode == 0, run.stderr[-2000:]
    stray = [ln for ln in _warnings(run.stderr) if "fake_stray" in ln]
    assert len(stray) == 1 and "failed to import (RuntimeError: boom)" in stray[0] and "(distribution fake-bound 0.1)" in stray[0]


@pytest.mark.slow  # the installed command's one line and exit code 2
@pytest.mark.parametrize(("argv", "expected"), [
    (["algorithm=broken", "n=30"], "boundlab: error: entry point boundlab.learners: broken = fake_broken:Broken "
     "(distribution fake-broken 0.1) failed to import (ModuleNotFoundError: No module named 'no_such_module_anywhere'); "
     "fix or reinstall fake-broken, or uninstall it (pip uninstall fake-broken)"),
    (["dataset=twin"], "boundlab: error: boundlab.datasets entry point 'twin' is registered by fake-twin-a 0.1 "
     "(fake_twin:A) and fake-twin-b 0.1 (fake_twin:B); boundlab will not guess: uninstall one of them or rename its "
     "entry point"),
])
def test_selecting_a_broken_plugin_is_one_line_exit_2(fakes: Path, tmp_path: Path, boundlab, argv: list[str],  # noqa: ANN001
                                                      expected: str) -> None:
    done = boundlab(*argv, cwd=tmp_path, env=_env(fakes, tracking=tmp_path))
    assert done.returncode == 2, done.stderr
    errors = [ln for ln in done.stderr.splitlines() if not ln.startswith("boundlab: warning:")]
    assert errors == [expected]
    assert not (tmp_path / "outputs").exists()


# --- round three, class 2: a plug-in's impossible values fail the job, naming the learner or the bound -------

LIAR = '''
import math
import numpy as np
from pipeline.bounds.base import Bound
from pipeline.learners.base import Learner, Outcome
from pipeline.params import Param

LIES = {"not_a_number": math.nan, "infinite": math.inf, "negative": -1.0, "above_T": 10**9, "honest": 0.0}


class Liar(Learner):
    """A plug-in that reports what it is told to: an impossible mistake count, or an honest 0."""

    name = "liar"
    params = (Param("lie", str, lambda v: v in LIES or v == "nan_bound", "one of " + ", ".join([*LIES, "nan_bound"]),
                    default="honest"),)

    def run(self, dataset, rng):
        T = int(dataset.X.shape[0])
        mistakes = 0.0 if self.lie == "nan_bound" else LIES[self.lie]
        return Outcome(quantities={"mistakes": mistakes}, curves={}, trace={}, stats={"T": T, "lie": self.lie})


BOUNDS = (
    Bound(name="liar_bound", title="liar", learner="liar", guarantee="D", quantity="mistakes", requires=("T", "lie"),
          reference="none", formula="T / 2", trivial=lambda s: float(s["T"]),
          value=lambda s: math.nan if s["lie"] == "nan_bound" else s["T"] / 2, range=lambda s: (0.0, float(s["T"]))),
)
'''


@pytest.fixture(scope="module")
def liar(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("liar")
    _fake(root, "fake-liar", "[boundlab.learners]\nliar = fake_liar:Liar\n[boundlab.bounds]\nliar = fake_liar:BOUNDS\n",
          "fake_liar", LIAR)
    return root


@pytest.mark.slow  # the installed command with a fake distribution on its PYTHONPATH
@pytest.mark.parametrize(("lie", "named"), [
    ("not_a_number", "learner liar: its mistakes is nan, not a finite number"),
    ("infinite", "learner liar: its mistakes is inf"),
    ("negative", "the measured mistakes is -1, outside the range"),
    ("above_T", "the measured mistakes is 1000000000, outside the range [0, 30]"),
    ("nan_bound", "bound liar_bound: its value is not a number"),
])
def test_a_plugins_impossible_value_fails_the_job_naming_it(liar: Path, tmp_path: Path, boundlab, lie: str,  # noqa: ANN001
                                                            named: str) -> None:
    done = boundlab("algorithm=liar", f"algorithm.lie={lie}", "n=30", cwd=tmp_path, env=_env(liar, tracking=tmp_path))
    assert done.returncode != 0, done.stdout[-2000:]
    assert named in done.stdout + done.stderr, (done.stdout + done.stderr)[-3000:]
    assert "holds" not in done.stdout and "not applicable" not in done.stdout


@pytest.mark.slow  # the installed command with a fake distribution on its PYTHONPATH
def test_the_same_plugin_telling_the_truth_passes(liar: Path, tmp_path: Path, boundlab) -> None:  # noqa: ANN001
    """The control of the test above, once for its five cases: the same plug-in and command, on a store of the
    same kind, pass when the learner reports an honest count, so those failures are the lies, not the set-up."""
    honest = boundlab("algorithm=liar", "algorithm.lie=honest", "n=30", cwd=tmp_path, env=_env(liar, tracking=tmp_path))
    assert honest.returncode == 0 and "liar_bound" in honest.stdout, honest.stderr[-2000:]


# --- A plug-in's statistic provider (boundlab.statistics) -----------------------------------------------

def _docs_provider_block() -> str:
    """The provider example of docs/plugins.md, run here as a plug-in's module."""
    blocks = re.findall(r"```python\n(.*?)```", (ROOT / "docs" / "plugins.md").read_text(), re.S)
    (block,) = [b for b in blocks if "class PaRun(Run)" in b]
    return block


CLASHING = '''
from pipeline.contract import SvmRun
from pipeline.learners.base import Outcome
from pipeline.job.statistics import Provider

CLASH = Provider("c_again", SvmRun, ("c",), lambda ds, learner, out: Outcome({}, {}, {}, stats={"c": -1.0}), "none")
NOT_A_PROVIDER = {"c": 1.0}
'''


def test_a_plugin_brings_its_own_provider_through_an_entry_point(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    """A provider registered under boundlab.statistics serves its own record type (and its subclasses) in
    complete(), as the docs' example declares it; one that claims a built-in's (name, record) is ignored, an
    entry point naming something else is skipped, each with a warning."""
    from types import SimpleNamespace

    from pipeline.job import statistics
    from pipeline.contract import SvmRun
    from pipeline.learners.base import Outcome

    _fake(tmp_path, "fake-stat", "[boundlab.statistics]\npa_worst = fake_stat:PROVIDERS\nclash = fake_stat_clash:CLASH\n"
          "wrong = fake_stat_clash:NOT_A_PROVIDER\n", "fake_stat", _docs_provider_block())
    (tmp_path / "fake_stat_clash.py").write_text(CLASHING)
    monkeypatch.syspath_prepend(str(tmp_path))
    plugins.refresh()
    try:
        from pipeline.data import MarginBinary
        from pipeline.job.identity import job_roots

        # a job's identity includes the plug-in providers' modules (editing one reruns the jobs), read from metadata
        assert plugins.STATISTICS.modules() == ("fake_stat", "fake_stat_clash") and "fake_stat" not in sys.modules
        job = SimpleNamespace(learner=Perceptron(), dataset=MarginBinary(gamma=0.1, rho=1.0))
        assert {"fake_stat", "fake_stat_clash"} <= set(job_roots(job))
        assert statistics.provider_for("worst_loss", SvmRun) is None  # loads the plug-ins' providers: not this record's
        mod = sys.modules["fake_stat"]
        assert statistics.provider_for("worst_loss", mod.PaRun) is mod.PROVIDERS[0]
        assert statistics.provider_for("c", SvmRun).name == "svm_constant"  # the built-in keeps its name
        warnings = _warnings(capsys.readouterr().err)
        assert any("clash = fake_stat_clash:CLASH" in w and "'c_again'" in w and "ignored" in w for w in warnings), warnings
        assert any("wrong = fake_stat_clash:NOT_A_PROVIDER" in w and "names a dict" in w for w in warnings), warnings

        class Longer(mod.PaRun):
            pass

        run = Longer(loss=np.array([0.5, 2.0, 0.0]))
        out = Outcome({}, {}, {}, stats={"T": 3}, run=run)
        reader = SimpleNamespace(requires=("worst_loss",), beside=(), quantity="", quantity_low="")
        dataset = SimpleNamespace(stats=None)
        assert statistics.complete(dataset, None, out, [reader]).stats == {"T": 3, "worst_loss": 2.0}
    finally:
        plugins.refresh()
