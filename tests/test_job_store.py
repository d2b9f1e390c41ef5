"""The job store: a job is what it computes (config, the code it runs, its input files), whichever command,
override order, grid or experiment reaches it; a finished job is reused, never run twice (pipeline.job.identity,
pipeline.job.store)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from collections import Counter
from pathlib import Path

import pandas as pd
import pytest
from helpers import migrated_store, with_sitecustomize

from pipeline.job import identity, store


def _children(uri: str, experiment: str, light: bool = False) -> list:
    """The child runs that ran a job; with ``light``, the light children instead (a sweep's links to the runs
    it reused, tag ``boundlab.reused_from``)."""
    import mlflow

    client = mlflow.MlflowClient(tracking_uri=uri)
    exp = client.get_experiment_by_name(experiment)
    runs = client.search_runs([exp.experiment_id], max_results=1000) if exp else []
    return [r for r in runs if "mlflow.parentRunId" in r.data.tags and ("boundlab.reused_from" in r.data.tags) == light]


def _parents(uri: str, experiment: str) -> list:
    import mlflow

    client = mlflow.MlflowClient(tracking_uri=uri)
    exp = client.get_experiment_by_name(experiment)
    return [r for r in client.search_runs([exp.experiment_id], order_by=["attributes.start_time ASC"])
            if "mlflow.parentRunId" not in r.data.tags]


def _env(tmp_path: Path, fresh: bool = False) -> tuple[str, dict[str, str]]:
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}" if fresh else migrated_store(tmp_path / "mlflow.db")
    return uri, {**os.environ, "MLFLOW_TRACKING_URI": uri, "BOUNDLAB_CACHE": str(tmp_path / "cache")}


def _rows(sweep: Path) -> pd.DataFrame:
    table = pd.read_parquet(sweep / "results.parquet")
    return table.sort_values(["run", "bound"]).reset_index(drop=True)


# The sweeps run in this process (e2e, boundlab_in_process) but those started together: two processes (slow).

@pytest.mark.e2e
@pytest.mark.parametrize(("first", "second", "runs"), [
    (["seed=0,1,2"], ["seed=0,1,2,3"], 4),  # the grid grows by a seed: one more job
    (["gamma=0.1,0.2", "seed=0,1"], ["seed=0,1", "gamma=0.1,0.2"], 4),  # the same grid in another order
    (["gamma=0.1,0.2", "seed=0,1"], ["gamma=0.2", "seed=1,2"], 5),  # overlapping grids
], ids=["grid-grows", "override-order", "overlap"])
def test_a_job_reached_by_another_command_is_reused_not_rerun(tmp_path: Path, boundlab_in_process, first: list[str],  # noqa: ANN001
                                                              second: list[str], runs: int) -> None:
    boundlab = boundlab_in_process
    uri, env = _env(tmp_path)
    common = ["n=200", "d=5", "name=store"]
    a = boundlab("-m", *first, *common, f"hydra.sweep.dir={tmp_path / 'a'}", cwd=tmp_path, env=env)
    assert a.returncode == 0, a.stderr[-3000:]
    b = boundlab("-m", *second, *common, f"hydra.sweep.dir={tmp_path / 'b'}", cwd=tmp_path, env=env)
    assert b.returncode == 0, b.stderr[-3000:]
    children = _children(uri, "store")
    assert len(children) == runs and all(r.info.status == "FINISHED" for r in children)
    assert len({r.data.tags["boundlab.config_hash"] for r in children}) == runs  # each job run exactly once
    first_parent, second_parent = _parents(uri, "store")
    reused = second_parent.data.tags["boundlab.reused_runs"].split()
    mine = {r.info.run_id for r in children if r.data.tags["mlflow.parentRunId"] == second_parent.info.run_id}
    theirs = {r.info.run_id for r in children if r.data.tags["mlflow.parentRunId"] == first_parent.info.run_id}
    assert set(reused) <= theirs and len(reused) + len(mine) == second_parent.data.metrics["runs"]
    assert second_parent.data.metrics["reused_jobs"] == len(reused) > 0
    # the second parent lists every job it covers: its own runs and a light child per reused run
    links = [r for r in _children(uri, "store", light=True) if r.data.tags["mlflow.parentRunId"] == second_parent.info.run_id]
    assert sorted(r.data.tags["boundlab.reused_from"] for r in links) == sorted(reused)
    assert len(links) + len(mine) == second_parent.data.metrics["runs"]
    # the second sweep's table has a row set for every job it covers; the reused ones equal the first's
    table_a, table_b = _rows(tmp_path / "a"), _rows(tmp_path / "b")
    assert table_b["run"].nunique() == second_parent.data.metrics["runs"]
    shared = sorted(set(table_a["run"]) & set(table_b["run"]))
    assert len(shared) == len(reused)
    pd.testing.assert_frame_equal(table_a[table_a["run"].isin(shared)].reset_index(drop=True),
                                  table_b[table_b["run"].isin(shared)].reset_index(drop=True))


@pytest.mark.e2e
def test_force_and_another_tracking_store_rerun_a_stored_job(tmp_path: Path, boundlab_in_process) -> None:  # noqa: ANN001
    boundlab = boundlab_in_process
    uri, env = _env(tmp_path)
    grid = ["-m", "seed=0,1", "n=200", "d=5", "name=store"]
    assert boundlab(*grid, f"hydra.sweep.dir={tmp_path / 'a'}", cwd=tmp_path, env=env).returncode == 0
    forced = boundlab(*grid, "force=true", f"hydra.sweep.dir={tmp_path / 'b'}", cwd=tmp_path, env=env)
    assert forced.returncode == 0 and "reused, not rerun" not in forced.stdout
    assert len(_children(uri, "store")) == 4
    other_uri = migrated_store(tmp_path / "other.db")  # a run in another store cannot be linked: the job runs
    other = boundlab(*grid, f"hydra.sweep.dir={tmp_path / 'c'}", cwd=tmp_path, env={**env, "MLFLOW_TRACKING_URI": other_uri})
    assert other.returncode == 0 and "reused, not rerun" not in other.stdout
    assert len(_children(other_uri, "store")) == 2


@pytest.mark.e2e
def test_a_deleted_run_or_a_damaged_entry_is_not_reused(tmp_path: Path, boundlab_in_process) -> None:  # noqa: ANN001
    import mlflow

    uri, env = _env(tmp_path)
    grid = ["-m", "seed=0,1", "n=200", "d=5", "name=store"]
    assert boundlab_in_process(*grid, f"hydra.sweep.dir={tmp_path / 'a'}", cwd=tmp_path, env=env).returncode == 0
    first = {r.data.tags["boundlab.config_hash"]: r for r in _children(uri, "store")}
    deleted, damaged = sorted(first)
    mlflow.MlflowClient(tracking_uri=uri).delete_run(first[deleted].info.run_id)
    (entry,) = [p.parent for p in (tmp_path / "cache" / "jobs").glob(f"*/{store.ENTRY}")
                if json.loads(p.read_text())["run_id"] == first[damaged].info.run_id]
    (entry / "data.npz").write_bytes(b"not the data")
    again = boundlab_in_process(*grid, f"hydra.sweep.dir={tmp_path / 'b'}", cwd=tmp_path, env=env)
    assert again.returncode == 0 and "reused, not rerun" not in again.stdout, again.stdout[-2000:]
    live = [r for r in _children(uri, "store") if r.info.lifecycle_stage == "active"]
    assert Counter(r.data.tags["boundlab.config_hash"] for r in live) == Counter({deleted: 1, damaged: 2})


SLOW = """\
import os, time
if os.environ.get("BOUNDLAB_SLOW_JOB"):
    import pipeline.job.run
    original = pipeline.job.run.measure  # a run's work, alone (a packed member) or within run()
    def slow(*args, **kwargs):
        time.sleep(float(os.environ["BOUNDLAB_SLOW_JOB"]))
        return original(*args, **kwargs)
    pipeline.job.run.measure = slow
"""


@pytest.mark.slow
def test_two_sweeps_sharing_jobs_run_each_job_once(tmp_path: Path) -> None:
    uri, env = _env(tmp_path, fresh=True)  # two processes open the new store at once, as before
    env = with_sitecustomize(tmp_path, SLOW, env | {"BOUNDLAB_SLOW_JOB": "2"})
    exe = Path(sys.executable).parent / "boundlab"
    argv = {"a": ["seed=0,1,2"], "b": ["seed=2,1,0"]}  # the same jobs, another order: another sweep directory
    procs = [subprocess.Popen([str(exe), "-m", *grid, "n=200", "d=5", "name=store", f"hydra.sweep.dir={tmp_path / k}"],
                              cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for k, grid in argv.items()]
    outs = [(p.wait(timeout=600), *p.communicate()) for p in procs]
    assert [code for code, _, _ in outs] == [0, 0], [err[-2000:] for _, _, err in outs]
    children = _children(uri, "store")
    assert len(children) == 3 and len({r.data.tags["boundlab.config_hash"] for r in children}) == 3
    assert sum(out.count("reused, not rerun") for _, out, _ in outs) == 3
    for k in argv:
        assert _rows(tmp_path / k)["run"].nunique() == 3


# ---------------------------------------------------------------- a job's code: the modules it runs

def test_a_jobs_code_is_its_import_closure_not_the_whole_package() -> None:
    modules = set(identity.closure(("pipeline.job.run",)))
    for needed in ("pipeline.job.run", "pipeline._jit", "pipeline.bounds.registry", "pipeline.learners",
                   "pipeline.data.certify", "pipeline.solvers.dual", "pipeline.solvers.comparators"):
        assert needed in modules
    for outside in ("pipeline.outputs.report", "pipeline.outputs.plots", "pipeline.tracking", "pipeline.sweep.callbacks",
                    "pipeline.cli", "pipeline.sweep.stages", "pipeline.learners.halving"):
        assert outside not in modules


@pytest.mark.parametrize("algorithm", ["pegasos", "perceptron", "halving", "kernel_pegasos", "multiclass_pegasos"])
def test_a_job_runs_the_row_level_judging_not_the_sweep_level_rules(algorithm: str) -> None:
    """A job judges its rows (pipeline.judging.rows: the row's verdict columns, the risk intervals) and never the
    sweep-level rules (pipeline.judging.verdicts, the betting tests of pipeline.judging.limits), the report, the figures
    or tracking: editing those re-judges sweeps from their tables and reuses every finished job (docs/sweeps.md)."""
    from helpers import compose_tiny

    from pipeline.job.config import build

    overrides = [f"algorithm={algorithm}"] + (["dataset=multiclass_margin"] if algorithm.startswith("multiclass") else [])
    modules = set(identity.closure(identity.job_roots(build(compose_tiny(overrides)))))
    assert {"pipeline.judging", "pipeline.judging.rows", "pipeline.bounds.base"} <= modules
    assert not modules & {"pipeline.judging.verdicts", "pipeline.judging.limits", "pipeline.outputs.report",
                          "pipeline.outputs.plots", "pipeline.tracking", "pipeline.sweep.callbacks", "pipeline.sweep.stages",
                          "pipeline.sweep.pack", "pipeline.job.store"}, modules


@pytest.mark.parametrize(("algorithm", "runs", "not_run"), [
    ("pegasos", {"pipeline.learners.pegasos", "pipeline.learners.base", "pipeline.bounds.pegasos"},
     {"pipeline.learners.halving", "pipeline.learners.perceptron", "pipeline.learners.multiclass",
      "pipeline.learners.kernel_pegasos", "pipeline.learners.adaptive", "pipeline.data.worst_case",
      "pipeline.bounds.perceptron", "pipeline.bounds.finite", "pipeline.bounds.multiclass"}),
    ("halving", {"pipeline.learners.halving", "pipeline.learners.orderings", "pipeline.bounds.finite"},
     {"pipeline.learners.pegasos", "pipeline.learners.perceptron", "pipeline.learners.multiclass",
      "pipeline.bounds.pegasos", "pipeline.bounds.perceptron"}),
    ("perceptron", {"pipeline.learners.perceptron", "pipeline.bounds.perceptron"},
     {"pipeline.learners.pegasos", "pipeline.bounds.pegasos", "pipeline.bounds.multiclass"}),
    ("kernel_pegasos", {"pipeline.learners.kernel_pegasos", "pipeline.learners.pegasos"},
     {"pipeline.learners.halving", "pipeline.learners.perceptron"}),
])
def test_a_job_runs_its_own_learner_not_every_learner_its_package_registers(algorithm: str, runs: set[str],
                                                                            not_run: set[str]) -> None:
    """pipeline.learners' __init__ imports every learner to register it: a job that only names it (``from
    pipeline.learners import LEARNERS``) runs its own learner's module (and what that imports), so an edit to
    another learner keeps its identity; an edit to its own, or to what it imports, changes it. The same for the
    bounds: a job reaches them through pipeline.bounds.registry and holds its own learner's families only."""
    from helpers import compose_tiny

    from pipeline.job.config import build

    modules = set(identity.closure(identity.job_roots(build(compose_tiny([f"algorithm={algorithm}"])))))
    assert runs <= modules and not modules & not_run, (runs - modules, modules & not_run)


def test_a_face_is_followed_where_the_name_cannot_be_traced(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``from pkg import name``: the module that defines name when pkg's __init__ re-exports it; the face's
    every import when name is defined in the __init__ itself or comes through ``import *`` (where unsure, more);
    a module's own name (``from pkg.mod import f``) follows the module."""
    pkg = "facepkg"
    package = tmp_path / pkg
    package.mkdir()
    sources = {
        "__init__.py": f"from {pkg}.a import A\nfrom {pkg}.b import B as Bee\nfrom {pkg}.c import *\n\ndef local():\n    pass\n",
        "a.py": f"from {pkg}.helper import h\n\nclass A:\n    pass\n",
        "b.py": "class B:\n    pass\n",
        "c.py": "C = 1\n",
        "helper.py": "def h():\n    pass\n",
        "uses_a.py": f"from {pkg} import A\n",
        "uses_alias.py": f"from {pkg} import A as Alias\n",
        "uses_bee.py": f"from {pkg} import Bee\n",
        "uses_local.py": f"from {pkg} import local\n",
        "uses_c.py": f"from {pkg} import C\n",
        "uses_module.py": f"from {pkg}.a import A\n",
    }
    for name, text in sources.items():
        (package / name).write_text(text)
    monkeypatch.syspath_prepend(str(tmp_path))
    identity.closure.cache_clear()
    try:
        def modules(root: str) -> set[str]:
            return set(identity.closure((f"{pkg}.{root}",))) - {pkg, f"{pkg}.{root}"}

        assert modules("uses_a") == modules("uses_module") == modules("uses_alias") == {f"{pkg}.a", f"{pkg}.helper"}
        assert modules("uses_bee") == {f"{pkg}.b"}
        everything = {f"{pkg}.a", f"{pkg}.b", f"{pkg}.c", f"{pkg}.helper"}
        assert modules("uses_local") == everything  # defined in the face itself: all it imports may matter
        assert modules("uses_c") == everything  # through import *: not traced
        before = identity.code_of((f"{pkg}.uses_bee",))
        with (package / "a.py").open("a") as f:  # another member of the face: not run by uses_bee
            f.write("# edited\n")
        assert identity.code_of((f"{pkg}.uses_bee",)) == before
        with (package / "__init__.py").open("a") as f:  # the face itself runs: its edit counts
            f.write("# edited\n")
        assert identity.code_of((f"{pkg}.uses_bee",)) != before
    finally:
        identity.closure.cache_clear()


@pytest.mark.parametrize(("edited", "changes"), [("kernel", True), ("bound", True), ("report", False), ("plots", False)])
def test_editing_a_module_changes_the_identity_of_exactly_the_jobs_that_run_it(tmp_path: Path, edited: str, changes: bool,
                                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    pkg = f"plugpkg_{edited}"  # its own name: another case's package stays in sys.modules
    package = tmp_path / pkg
    package.mkdir()
    sources = {
        "__init__.py": "",
        "learner.py": f"from {pkg} import kernel\nfrom {pkg}.bound import BOUND\n\ndef run():\n    from . import lazy\n",
        "kernel.py": "def step(x):\n    return x\n",
        "bound.py": "BOUND = 1\n",
        "lazy.py": "",
        "report.py": f"from {pkg} import learner\n",
        "plots.py": "import matplotlib\n",
    }
    for name, text in sources.items():
        (package / name).write_text(textwrap.dedent(text))
    monkeypatch.syspath_prepend(str(tmp_path))
    identity.closure.cache_clear()
    before = identity.code_of((f"{pkg}.learner",))
    assert set(identity.closure((f"{pkg}.learner",))) == {pkg, f"{pkg}.learner", f"{pkg}.kernel", f"{pkg}.bound", f"{pkg}.lazy"}
    with (package / f"{edited}.py").open("a") as f:
        f.write("# edited\n")
    assert (identity.code_of((f"{pkg}.learner",)) != before) is changes
    identity.closure.cache_clear()


def test_the_parsed_imports_are_cached_by_the_source_they_were_read_from(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BOUNDLAB_CACHE", str(tmp_path / "cache"))
    module = tmp_path / "a.py"
    module.write_text("import json\nfrom pkgx import b\n\ndef f():\n    from . import lazy\n")
    packages = frozenset({"pkgx"})
    first = identity._imports("pkgx.a", module, packages)
    assert first == {"pkgx:", "pkgx.b", "pkgx:b:b", "pkgx.lazy", "pkgx:lazy:lazy"} \
        == identity._parse_imports("pkgx.a", module, module.read_bytes(), packages)
    entries = list((tmp_path / "cache" / "imports").iterdir())
    assert len(entries) == 1
    assert identity._imports("pkgx.a", module, packages) == first  # from the entry
    assert identity._imports("pkgx.a", module, frozenset({"other"})) == set()  # another question, another entry
    module.write_text(module.read_text() + "from pkgx import c\n")  # an edit is parsed afresh
    assert identity._imports("pkgx.a", module, packages) == first | {"pkgx.c", "pkgx:c:c"}
    for entry in (tmp_path / "cache" / "imports").iterdir():
        entry.write_text("{not json")
    assert identity._imports("pkgx.a", module, packages) == first | {"pkgx.c", "pkgx:c:c"}  # a damaged entry is parsed again


def test_identity_is_the_config_the_code_and_the_input_files() -> None:
    base = identity.job_identity("key", "code", {"data.svm": "10:abc"})
    assert base == identity.job_identity("key", "code", {"data.svm": "10:abc"})
    assert len({base, identity.job_identity("key2", "code", {"data.svm": "10:abc"}),
                identity.job_identity("key", "code2", {"data.svm": "10:abc"}),
                identity.job_identity("key", "code", {"data.svm": "10:abd"}), identity.job_identity("key", "code", {})}) == 5
