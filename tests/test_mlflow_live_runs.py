"""One live MLflow run per job of a sweep, and a parent whose params are the grid it ran.

Reruns of a sweep soft-delete the job's earlier FAILED and KILLED runs (same parent, same
``boundlab.config_hash``); a sweep directory reused with another grid gets a new parent run, the old
one left as it was. Each case is a tiny ``boundlab -m`` on a temporary SQLite store, run in this process
(``boundlab_in_process``, a failing job injected by :func:`_failing`) except the one stopped by a signal:
a subprocess whose hanging job is injected by a ``sitecustomize.py`` on ``PYTHONPATH`` (:data:`INJECTOR`).
"""

from __future__ import annotations

import os
import signal
from collections import Counter
from pathlib import Path

import pytest
from helpers import migrated_store, signal_once_started, with_sitecustomize

# Wraps pipeline.job.run.run so that the job whose overrides include BOUNDLAB_FAIL_JOB raises, or, with
# BOUNDLAB_HANG_FLAG set, touches that file and sleeps (to be stopped from outside). Keyed on the job,
# not on a call count: a rerun skips the jobs already done.
INJECTOR = """\
import os
job = os.environ.get("BOUNDLAB_FAIL_JOB")
if job:
    import functools, time
    import pipeline.job.run

    original = pipeline.job.run.run

    @functools.wraps(original)
    def faulty(*args, **kwargs):
        from hydra.core.hydra_config import HydraConfig

        if job in HydraConfig.get().overrides.task:
            flag = os.environ.get("BOUNDLAB_HANG_FLAG")
            if flag:
                open(flag, "w").close()
                time.sleep(300)
            raise RuntimeError(f"injected fault in the job {job}")
        return original(*args, **kwargs)

    pipeline.job.run.run = faulty
"""

NAME = "liveruns"
GRID = ("-m", "seed=0,1", "n=50", f"name={NAME}")
FAILING = "seed=1"


def _env(tmp_path: Path, fail: bool = False, **extra: str) -> tuple[str, dict[str, str]]:
    uri = migrated_store(tmp_path / "mlflow.db")
    env = {**os.environ, "MLFLOW_TRACKING_URI": uri, **extra}
    if fail:
        env = with_sitecustomize(tmp_path, INJECTOR, env | {"BOUNDLAB_FAIL_JOB": FAILING})
    return uri, env


def _failing(monkeypatch: pytest.MonkeyPatch) -> None:
    """In this process, what :data:`INJECTOR` does with BOUNDLAB_FAIL_JOB: the job :data:`FAILING` raises."""
    import functools

    import pipeline.job.run

    original = pipeline.job.run.run

    @functools.wraps(original)
    def faulty(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202
        from hydra.core.hydra_config import HydraConfig

        if FAILING in HydraConfig.get().overrides.task:
            raise RuntimeError(f"injected fault in the job {FAILING}")
        return original(*args, **kwargs)

    monkeypatch.setattr(pipeline.job.run, "run", faulty)


def _runs(uri: str) -> list:
    """Every run of the experiment, deleted ones too."""
    import mlflow
    from mlflow.entities import ViewType

    client = mlflow.MlflowClient(tracking_uri=uri)
    exp = client.get_experiment_by_name(NAME)
    return client.search_runs([exp.experiment_id], run_view_type=ViewType.ALL, max_results=10_000)


def _live_children(uri: str) -> dict[str, Counter]:
    """Per job (its seed param, or its run name while it has no params), the statuses of its live runs."""
    out: dict[str, Counter] = {}
    for r in _runs(uri):
        if r.info.lifecycle_stage == "active" and "mlflow.parentRunId" in r.data.tags:
            job = "seed=1" if "seed=1" in r.info.run_name else "seed=0"
            out.setdefault(job, Counter())[r.info.status] += 1
    return out


def _parents(uri: str) -> list:
    return sorted((r for r in _runs(uri) if "mlflow.parentRunId" not in r.data.tags), key=lambda r: r.info.start_time)


@pytest.mark.e2e
def test_rerunning_a_failing_job_keeps_one_live_failed_run(tmp_path: Path, boundlab_in_process,  # noqa: ANN001
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    uri, env = _env(tmp_path)
    sweep = tmp_path / "sweep"
    _failing(monkeypatch)
    for _ in range(3):
        proc = boundlab_in_process(*GRID, f"hydra.sweep.dir={sweep}", cwd=tmp_path, env=env)
        assert proc.returncode == 1 and "1 job(s) failed" in proc.stderr, proc.stderr[-3000:]
    live = _live_children(uri)
    assert live == {"seed=0": Counter(FINISHED=1), "seed=1": Counter(FAILED=1)}, live
    runs = _runs(uri)
    deleted = [r for r in runs if r.info.lifecycle_stage == "deleted"]
    assert len(deleted) == 2 and all(r.info.status == "FAILED" and "boundlab.superseded" in r.data.tags for r in deleted)
    assert len(_parents(uri)) == 1  # the same grid: the same parent, reopened


@pytest.mark.e2e
def test_a_failed_job_that_then_succeeds_leaves_one_live_finished_run(tmp_path: Path, boundlab_in_process,  # noqa: ANN001
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    uri, env = _env(tmp_path)
    sweep = tmp_path / "sweep"
    with monkeypatch.context() as fault:
        _failing(fault)
        failing = boundlab_in_process(*GRID, f"hydra.sweep.dir={sweep}", cwd=tmp_path, env=env)
    assert failing.returncode == 1, failing.stderr[-3000:]
    fixed = boundlab_in_process(*GRID, f"hydra.sweep.dir={sweep}", cwd=tmp_path, env=_env(tmp_path)[1])
    assert fixed.returncode == 0 and fixed.stdout.count("already done") == 1, fixed.stderr[-3000:]
    assert _live_children(uri) == {"seed=0": Counter(FINISHED=1), "seed=1": Counter(FINISHED=1)}
    (parent,) = _parents(uri)
    assert parent.info.status == "FINISHED"


@pytest.mark.slow  # a signal to the command's process
def test_a_killed_job_that_then_succeeds_leaves_one_live_finished_run(tmp_path: Path, boundlab) -> None:  # noqa: ANN001
    flag = tmp_path / "hanging"
    uri, env = _env(tmp_path, fail=True, BOUNDLAB_HANG_FLAG=str(flag))
    sweep = tmp_path / "sweep"
    code, err = signal_once_started([*GRID, f"hydra.sweep.dir={sweep}"], flag, signal.SIGTERM, tmp_path, env)
    assert code == 130, err[-3000:]
    assert _live_children(uri) == {"seed=0": Counter(FINISHED=1), "seed=1": Counter(KILLED=1)}
    again = boundlab(*GRID, f"hydra.sweep.dir={sweep}", cwd=tmp_path, env=_env(tmp_path)[1])
    assert again.returncode == 0, again.stderr[-3000:]
    assert _live_children(uri) == {"seed=0": Counter(FINISHED=1), "seed=1": Counter(FINISHED=1)}


@pytest.mark.e2e
def test_a_sweep_dir_reused_with_another_grid_gets_a_new_parent(tmp_path: Path, boundlab_in_process) -> None:  # noqa: ANN001
    boundlab = boundlab_in_process
    uri, env = _env(tmp_path)
    sweep = tmp_path / "sweep"
    first = boundlab(*GRID, f"hydra.sweep.dir={sweep}", cwd=tmp_path, env=env)
    assert first.returncode == 0, first.stderr[-3000:]
    (old,) = _parents(uri)
    assert old.data.params == {"seed": "0,1", "n": "50", "name": NAME}

    other = ("-m", "seed=2,3", "n=50", f"name={NAME}")
    second = boundlab(*other, f"hydra.sweep.dir={sweep}", cwd=tmp_path, env=env)
    assert second.returncode == 0, second.stderr[-3000:]
    said = [ln for ln in (second.stdout + second.stderr).splitlines() if "another grid" in ln]
    assert len(said) == 1 and "seed" in said[0] and old.info.run_id in said[0], said
    then, new = _parents(uri)
    assert then.info.run_id == old.info.run_id
    assert new.data.params == {"seed": "2,3", "n": "50", "name": NAME} and new.info.status == "FINISHED"
    # the old parent as it was: its params, status, end and children untouched
    assert (then.data.params, then.info.status, then.info.end_time) == (old.data.params, old.info.status, old.info.end_time)
    children = [r for r in _runs(uri) if "mlflow.parentRunId" in r.data.tags]
    by_parent = Counter(r.data.tags["mlflow.parentRunId"] for r in children if r.info.lifecycle_stage == "active")
    assert by_parent == {old.info.run_id: 2, new.info.run_id: 2}
    assert {r.data.params["seed"] for r in children if r.data.tags["mlflow.parentRunId"] == new.info.run_id} == {"2", "3"}

    again = boundlab(*other, f"hydra.sweep.dir={sweep}", cwd=tmp_path, env=env)  # the same grid: resumed
    assert again.returncode == 0 and again.stdout.count("already done") == 2, again.stderr[-3000:]
    assert "another grid" not in again.stdout + again.stderr and len(_parents(uri)) == 2


# ---------------------------------------------------------------- what a reviewer finds in MLflow's UI

def test_boundlab_experiments_are_tagged_model_training(tmp_path: Path) -> None:
    """MLflow 3's UI reads an experiment's kind from its tag ``mlflow.experimentKind``: boundlab's are model
    training (their page opens on the runs, not the GenAI traces). A new experiment gets it when created, an
    existing one without a kind when reused; a kind someone chose is kept."""
    import mlflow

    from pipeline import tracking

    uri = migrated_store(tmp_path / "mlflow.db")
    client = mlflow.MlflowClient(tracking_uri=uri)
    new = tracking.runs.experiment_id(uri, "fresh")
    older = client.create_experiment("older")  # made before boundlab tagged experiments
    chosen = client.create_experiment("chosen", tags={tracking.runs.EXPERIMENT_KIND_TAG: "genai_development"})
    assert tracking.runs.experiment_id(uri, "older") == older and tracking.runs.experiment_id(uri, "chosen") == chosen
    kinds = {e: client.get_experiment(e).tags.get("mlflow.experimentKind") for e in (new, older, chosen)}
    assert kinds == {new: "custom_model_development", older: "custom_model_development", chosen: "genai_development"}


def _reused_and_source(uri: str, tmp_path: Path) -> tuple[str, str, object]:
    """A finished run as a job leaves it (params, metrics with a history, boundlab tags, an artifact), and a
    parent run of another sweep in another experiment: (source run id, parent run id, client)."""
    import mlflow
    from mlflow.entities import Metric, Param, RunTag

    client = mlflow.MlflowClient(tracking_uri=uri)
    first = client.create_experiment("first", artifact_location=(tmp_path / "artifacts").as_uri())
    second = client.create_experiment("second", artifact_location=(tmp_path / "artifacts").as_uri())
    source = client.create_run(first, run_name="perceptron seed=0", tags={"boundlab.config_hash": "abc",
                               "boundlab.holds": "True", "boundlab.sweep_id": "first-sweep", "mlflow.user": "someone"})
    sid = source.info.run_id
    client.log_batch(sid, params=[Param("seed", "0"), Param("n", "50")],
                     metrics=[Metric("novikoff/ratio", 0.25, 1, 0)]
                     + [Metric("mistakes", float(k), 2, t) for k, t in enumerate((1, 10, 50))],
                     tags=[RunTag("boundlab.data_hash", "d1")])
    (tmp_path / "results.parquet").write_bytes(b"a job's table")
    client.log_artifact(sid, str(tmp_path / "results.parquet"))
    client.set_terminated(sid, status="FINISHED")
    parent = client.create_run(second, run_name="second sweep", tags={"boundlab.sweep_id": "second-sweep"})
    return sid, parent.info.run_id, client


def test_link_reused_reads_the_children_a_page_at_a_time(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A parent with more children than a page: its own children on any page are not linked again, a light
    child on any page is kept or let go as on one page, and no search returns more than a page (one search
    of every child made the end of a sweep of 3,000 jobs ~300 MB larger: docs/performance.md)."""
    from pipeline import tracking

    uri = migrated_store(tmp_path / "mlflow.db")
    sid, parent_id, client = _reused_and_source(uri, tmp_path)
    exp_id = client.get_run(parent_id).info.experiment_id
    own = [client.create_run(exp_id, run_name=f"job {i}", tags={"mlflow.parentRunId": parent_id}).info.run_id
           for i in range(5)]
    kept = tracking.runs.link_reused(uri, parent_id, [sid])
    gone = client.create_run(exp_id, run_name="old link", tags={"mlflow.parentRunId": parent_id,
                                                                  "boundlab.reused_from": own[0]}).info.run_id
    monkeypatch.setattr(tracking.runs, "CHILDREN_PAGE", 2)
    pages: list[int] = []
    search = type(client).search_runs

    def paged(self: object, *args: object, **kwargs: object) -> object:
        pages.append(kwargs.get("max_results", 1000))
        return search(self, *args, **kwargs)

    monkeypatch.setattr(type(client), "search_runs", paged)
    assert tracking.runs.link_reused(uri, parent_id, [*own, sid]) == kept  # own children: no link; sid: the same one
    assert len(pages) == 4 and max(pages) <= 2  # 7 children
    children = client.search_runs([exp_id], filter_string=f"tags.mlflow.parentRunId = '{parent_id}'")
    assert {c.info.run_id for c in children} == {*own, kept[sid]}
    assert client.get_run(gone).info.lifecycle_stage == "deleted"
    # nothing to link (the usual end of a sweep): only the light children are read, found by their tag
    pages.clear()
    assert tracking.runs.link_reused(uri, parent_id, []) == {}
    assert pages == [2]  # one page: the one light child left, not the parent's 6 children
    children = client.search_runs([exp_id], filter_string=f"tags.mlflow.parentRunId = '{parent_id}'")
    assert {c.info.run_id for c in children} == set(own)
    assert client.get_run(kept[sid]).info.lifecycle_stage == "deleted"


def test_a_reused_run_becomes_a_light_child_of_the_new_sweeps_parent_once(tmp_path: Path) -> None:
    from pipeline import tracking

    uri = migrated_store(tmp_path / "mlflow.db")
    sid, parent_id, client = _reused_and_source(uri, tmp_path)
    linked = tracking.runs.link_reused(uri, parent_id, [sid])
    again = tracking.runs.link_reused(uri, parent_id, [sid, sid])  # a rerun of the sweep: the same link, no second one
    assert again == linked and set(linked) == {sid}
    exp_id = client.get_run(parent_id).info.experiment_id
    children = client.search_runs([exp_id], filter_string=f"tags.mlflow.parentRunId = '{parent_id}'")
    (child,) = children
    source = client.get_run(sid)
    assert child.info.run_id == linked[sid] and child.info.status == "FINISHED"
    assert child.info.run_name == source.info.run_name and child.info.start_time == source.info.start_time
    assert child.data.params == source.data.params and child.data.metrics == source.data.metrics
    tags = child.data.tags
    assert tags["boundlab.reused_from"] == sid and tags["boundlab.reused_artifacts"] == source.info.artifact_uri
    assert tags["boundlab.sweep_id"] == "second-sweep" and tags["boundlab.config_hash"] == "abc"
    assert tags["boundlab.holds"] == "True" and tags["boundlab.data_hash"] == "d1"
    assert sid in tags["mlflow.note.content"] and "first" in tags["mlflow.note.content"]
    assert tags.get("mlflow.user") != "someone"  # who made the reused run is on the reused run, not copied
    assert [a.path for a in client.list_artifacts(sid)] == ["results.parquet"]
    assert client.list_artifacts(child.info.run_id) == []  # a link to them, not a copy
    # a job of the sweep rerun instead of reused: its light child goes (soft-deleted), the rest stays
    assert tracking.runs.link_reused(uri, parent_id, []) == {}
    assert client.search_runs([exp_id], filter_string=f"tags.mlflow.parentRunId = '{parent_id}'") == []
    assert client.get_run(linked[sid]).info.lifecycle_stage == "deleted"
    assert client.get_run(sid).info.lifecycle_stage == "active"  # the reused run itself is never touched


def test_verdict_tags_are_short_and_whole_in_metrics_json() -> None:
    from pipeline import tracking

    evidence = "0 violations in 2 runs, but the bound is vacuous in every run (not below the trivial value): " * 3
    tags = tracking.verdict_tags({"runs": 2, "failed_jobs": 0, "novikoff": {"verdict": "inconclusive", "evidence": evidence},
                                  "halving": {"verdict": "holds", "evidence": "0 violations in 2 runs (2 informative)"}})
    assert tags["verdict.halving"] == "holds: 0 violations in 2 runs (2 informative)"
    assert tags["verdict.novikoff"].startswith("inconclusive: 0 violations in 2 runs, but the bound is vacuous")
    assert len(tags["verdict.novikoff"]) == tracking.runs.VERDICT_TEXT and tags["verdict.novikoff"].endswith("…")
    assert set(tags) == {"verdict.novikoff", "verdict.halving"}


@pytest.mark.e2e
def test_a_sweep_that_reuses_jobs_has_a_parent_listing_every_job(tmp_path: Path, boundlab_in_process) -> None:  # noqa: ANN001
    """The second sweep reuses the first's two jobs from the job store and runs one: its parent has three
    children, two of them light links to the first sweep's runs, and a rerun of it adds none."""
    uri, env = _env(tmp_path)
    assert boundlab_in_process(*GRID, f"hydra.sweep.dir={tmp_path / 'a'}", cwd=tmp_path, env=env).returncode == 0
    (first,) = _parents(uri)
    bigger = ("-m", "seed=0,1,2", "n=50", f"name={NAME}")
    for _ in range(2):  # the second time, the same sweep resumed: its links are kept, not duplicated
        proc = boundlab_in_process(*bigger, f"hydra.sweep.dir={tmp_path / 'b'}", cwd=tmp_path, env=env)
        assert proc.returncode == 0, proc.stderr[-3000:]
        _, parent = _parents(uri)
        children = [r for r in _runs(uri) if r.data.tags.get("mlflow.parentRunId") == parent.info.run_id
                    and r.info.lifecycle_stage == "active"]
        assert len(children) == 3 == parent.data.metrics["runs"], [(r.info.run_name, r.data.tags) for r in children]
        light = {r.data.tags["boundlab.reused_from"]: r for r in children if "boundlab.reused_from" in r.data.tags}
        theirs = {r.info.run_id: r for r in _runs(uri) if r.data.tags.get("mlflow.parentRunId") == first.info.run_id}
        assert set(light) == set(theirs) == set(parent.data.tags["boundlab.reused_runs"].split())
        for source, child in light.items():
            assert child.info.status == "FINISHED" and child.data.params == theirs[source].data.params
            assert child.data.metrics == theirs[source].data.metrics
        # the verdicts: short keys and values the run page shows whole; no key of the old, cut-off form
        assert parent.data.tags["verdict.novikoff"].split(":")[0] in ("holds", "inconclusive", "violated")
        assert all(len(v) <= 100 for k, v in parent.data.tags.items() if k.startswith("verdict."))
        assert not [k for k in parent.data.tags if k.startswith("boundlab.verdict")]
