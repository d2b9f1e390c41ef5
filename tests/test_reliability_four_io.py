"""Issue 50 (reliability, round four), classes 4, 5 and 7: what a run, the tracking store and the job store
do with their inputs and outputs.

4. A learner that writes into the data it is handed fails its run with one line naming it; nothing of the
   changed data is kept (pipeline.run: the dataset's arrays hashed before and after the learner).
5. A tracking store that is locked by another process or refuses the credentials mid-sweep gets what an outage
   gets: one line naming the store and what happened, how to recover, no SQL and no traceback, finished runs
   kept, and the same command completing what is missing (pipeline.tracking: every client call classified).
7. Nothing is written or removed outside the job store: every path it writes or removes is reached from its root
   without following a link (pipeline.locks.open_dir/remove), so a planted link is refused or removed, never
   written through.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest
from helpers import compose_tiny, migrated_store

from pipeline import locks, store
from pipeline.params import UserError

# --------------------------------------------------------------------------- 4. a learner that changes its input


def _job(overrides: list[str]):  # noqa: ANN202
    import warnings

    from pipeline.config import build

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return build(compose_tiny(overrides))


def _write_x_element(ds) -> None:  # noqa: ANN001
    ds.X[0, 0] += 1.0


def _write_y(ds) -> None:  # noqa: ANN001
    ds.y[:] = -ds.y


def _write_row(ds) -> None:  # noqa: ANN001
    ds.X[3] = 0.0


def _write_view(ds) -> None:  # noqa: ANN001
    column = ds.X[:, 1]  # a view: writing it writes X
    column *= 0.5


def _write_in_place_op(ds) -> None:  # noqa: ANN001
    np.multiply(ds.X, 2.0, out=ds.X)


def _write_direction(ds) -> None:  # noqa: ANN001
    next(iter(ds.directions.values()))[0] += 1.0


def _replace_x(ds) -> None:  # noqa: ANN001
    object.__setattr__(ds, "X", ds.X * 2.0)


def _write_hypotheses(ds) -> None:  # noqa: ANN001
    ds.hypotheses[0] = -ds.hypotheses[0]


def _write_held_out(ds) -> None:  # noqa: ANN001
    ds.X_test[0] = 0.0


WRITES = [  # (learner config, what it writes, the array the refusal names)
    (["algorithm=perceptron"], _write_x_element, "X, y"),
    (["algorithm=perceptron"], _write_y, "X, y"),
    (["algorithm=perceptron"], _write_row, "X, y"),
    (["algorithm=perceptron"], _write_view, "X, y"),
    (["algorithm=pegasos"], _write_in_place_op, "X, y"),
    (["algorithm=perceptron"], _write_direction, "directions"),
    (["algorithm=perceptron"], _replace_x, "X, y"),
    (["algorithm=halving", "dataset=finite_class"], _write_hypotheses, "hypotheses"),
    (["algorithm=multiclass_sgd", "dataset=multiclass_margin", "dataset.n_test=1000"], _write_held_out, "X_test"),
]


@pytest.mark.parametrize(("overrides", "write", "named"), WRITES, ids=[w.__name__.lstrip("_") for _, w, _ in WRITES])
def test_a_learner_that_writes_into_its_input_fails_its_run_in_one_line(overrides: list[str], write, named: str,  # noqa: ANN001
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    from pipeline.run import prepare, run

    job = _job(overrides)
    ds = prepare(job)
    learner_class = type(job.learner)
    original = learner_class.run

    def writing(self, dataset, rng):  # noqa: ANN001, ANN202
        write(dataset)
        return original(self, dataset, rng)

    monkeypatch.setattr(learner_class, "run", writing)
    with pytest.raises(UserError) as refused:
        run(job, ds)
    text = str(refused.value)
    assert text.startswith(f"learner {job.learner.name} changed its input data: ") and "\n" not in text, text
    assert named in text.split(":", 1)[1].split(" differ")[0], text


@pytest.mark.parametrize("overrides", [
    ["algorithm=perceptron", "algorithm.ordering=random"], ["algorithm=perceptron", "algorithm.ordering=adaptive"],
    ["algorithm=batch_perceptron"], ["algorithm=pegasos_projected"], ["algorithm=kernel_pegasos"],
    ["algorithm=weighted_majority", "dataset=finite_class"], ["algorithm=ova", "dataset=multiclass_margin",
                                                              "dataset.n_test=1000"],
    ["algorithm=perceptron", "dataset=stream"], ["algorithm=perceptron", "dataset=sparse_margin"],
], ids=lambda o: "-".join(x.split("=")[1] for x in o))
def test_the_built_in_learners_leave_their_input_alone(overrides: list[str]) -> None:
    """The check holds every built-in learner to it: none writes into what it is handed (the data kept are the
    ones it saw, and their hash is the run's data_hash)."""
    from pipeline.data.certify import content_hash
    from pipeline.run import fingerprint, prepare, run

    job = _job(overrides)
    ds = prepare(job)
    before = fingerprint(ds)
    result = run(job, ds)
    assert fingerprint(ds) == before
    if ds.kind != "stream":
        assert result.table["data_hash"].iloc[0] == content_hash(ds.X, ds.y)


@pytest.mark.e2e
def test_a_sweep_keeps_nothing_of_a_learner_that_changed_its_data(tmp_path: Path, boundlab_in_process,  # noqa: ANN001
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """The issue's example: the run was accepted and the data kept with it were the changed data. Now each job
    fails with the one line, and no data, table or done marker is kept in its directory."""
    from pipeline.learners.perceptron import Perceptron

    original = Perceptron.run

    def writing(self, dataset, rng):  # noqa: ANN001, ANN202
        dataset.X[0] *= 3.0  # a row, three times longer than the radius certified for it
        return original(self, dataset, rng)

    monkeypatch.setattr(Perceptron, "run", writing)
    uri = migrated_store(tmp_path / "mlflow.db")
    env = {**os.environ, "MLFLOW_TRACKING_URI": uri, "BOUNDLAB_CACHE": str(tmp_path / "cache")}
    sweep = tmp_path / "sweep"
    done = boundlab_in_process("-m", "seed=0,1", "n=50", "name=writer", f"hydra.sweep.dir={sweep}", cwd=tmp_path, env=env)
    assert done.returncode == 1, done.stderr[-3000:]
    assert "2 job(s) failed" in done.stderr
    for job in ("0", "1"):
        error = (sweep / job / "error.txt").read_text()
        assert "learner perceptron changed its input data: X, y differ" in error
        assert not (sweep / job / "data.npz").exists() and not (sweep / job / "done.json").exists()
    assert not list((tmp_path / "cache" / "jobs").glob(f"*/{store.ENTRY}"))  # nothing stored for reuse either


# --------------------------------------------------------------------------- 7. nothing written outside the job store


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """BOUNDLAB_CACHE for the test, and an ``outside`` directory beside it that nothing may touch."""
    monkeypatch.setenv("BOUNDLAB_CACHE", str(tmp_path / "cache"))
    (tmp_path / "outside").mkdir()
    return tmp_path / "cache"


def _snapshot(directory: Path) -> dict[str, tuple[bytes | None, float]]:
    """Every file and directory under ``directory``: its content (files) and modification time."""
    out = {}
    for p in sorted(directory.rglob("*")):
        st = p.lstat()
        out[str(p.relative_to(directory))] = (p.read_bytes() if p.is_file() and not p.is_symlink() else None, st.st_mtime)
    return out


def _victim(outside: Path, name: str = "victim") -> Path:
    """A directory outside the store with a file the store's lock would be: what a planted link points to."""
    target = outside / name
    (target / "x").mkdir(parents=True)
    (target / "x" / locks.LOCK).write_text("someone else's file\n")
    (target / locks.LOCK).write_text("someone else's file\n")
    return target


@pytest.mark.parametrize("planted", ["locks", "locks/job", "jobs"])
def test_a_lock_is_never_taken_through_a_planted_link(cache: Path, planted: str) -> None:
    """The issue's example: the lock directory resolved through a link, a sweep wrote its pid into a file outside
    the store. A link where the store, its ``locks`` or a job's lock directory belongs is refused, naming it."""
    outside = cache.parent / "outside"
    target = _victim(outside)
    root = store.store_dir()
    link = root if planted == "jobs" else root / planted
    link.parent.mkdir(parents=True, exist_ok=True)
    link.symlink_to(target, target_is_directory=True)
    before = _snapshot(outside)
    with pytest.raises(OSError, match="symbolic link") as refused:
        store.hold_identity("job" if planted != "locks" else "x")
    assert str(link) in str(refused.value) and "\n" not in str(refused.value)
    assert _snapshot(outside) == before, "written outside the store"
    if planted == "jobs":
        assert "symbolic link" in (store.problem() or "")


def test_a_planted_entry_is_neither_reused_nor_touched(cache: Path) -> None:
    """An entry that is a link to a directory outside the store: never reused (it is not the store's), and its
    marker's time is not touched (the store's reuse used to set it through the link)."""
    outside = cache.parent / "outside" / "entry"
    outside.mkdir()
    for name in store.KEPT:
        (outside / name).write_bytes(b"x")
    (outside / store.ENTRY).write_text(json.dumps({"identity": "job", "tracking_uri": "u", "streamed": True,
                                                   "run_id": "r"}))
    os.utime(outside / store.ENTRY, (1_000_000, 1_000_000))
    store.store_dir().mkdir(parents=True)
    (store.store_dir() / "job").symlink_to(outside, target_is_directory=True)
    assert store.stored("job", "u", finished=lambda run_id: True) is None
    assert (outside / store.ENTRY).stat().st_mtime == 1_000_000


def test_storing_over_a_planted_entry_replaces_the_link_not_its_target(cache: Path, tmp_path: Path) -> None:
    """A link where an entry belongs is replaced (the link, never its target); a link where the store itself
    belongs is refused, naming it: the entry used to be written into the directory it points to."""
    outside = cache.parent / "outside" / "entry"
    outside.mkdir()
    (outside / "keep.txt").write_text("keep\n")
    store.store_dir().mkdir(parents=True)
    (store.store_dir() / "job").symlink_to(outside, target_is_directory=True)
    out = tmp_path / "out"
    out.mkdir()
    (out / "results.parquet").write_bytes(b"PAR1")
    store.put("job", out, {"run_id": "r"})
    entry = store.store_dir() / "job"
    assert entry.is_dir() and not entry.is_symlink() and json.loads((entry / store.ENTRY).read_text())["run_id"] == "r"
    assert [p.name for p in outside.iterdir()] == ["keep.txt"]
    store.forget("job")
    assert not entry.exists() and (outside / "keep.txt").exists()
    # the store itself planted: jobs -> a directory outside
    import shutil

    shutil.rmtree(store.store_dir())
    store.store_dir().symlink_to(outside, target_is_directory=True)
    with pytest.raises(OSError, match="is a symbolic link"):
        store.put("job", out, {"run_id": "r"})
    assert [p.name for p in outside.iterdir()] == ["keep.txt"]


@pytest.mark.parametrize("planted", ["locks", "locks/job", "entry", "temporary"])
def test_prune_removes_planted_links_and_nothing_they_point_to(cache: Path, planted: str) -> None:
    """The issue's example: prune deleted a file outside the store through the link. Now each link planted in the
    store is removed (the link itself) and what it points to is left as it was."""
    outside = cache.parent / "outside"
    target = _victim(outside)
    root = store.store_dir()
    fd = store.hold_identity("kept")  # a real, unheld lock beside the planted link: pruned as before
    locks.release(fd)
    path = {"locks": root / "locks", "locks/job": root / "locks" / "job", "entry": root / "job",
            "temporary": root / ".job.999999999.tmp"}[planted]
    if planted == "locks":
        import shutil

        shutil.rmtree(path)
    path.symlink_to(target, target_is_directory=True)
    before = _snapshot(outside)
    done = store.prune(older_than_days=0)
    assert _snapshot(outside) == before, "removed or written outside the store"
    assert not path.is_symlink() and not path.exists()
    assert done["links"] + done["temporary"] >= 1
    again = store.hold_identity("kept")  # the store works again once the link is gone
    locks.release(again)


def test_a_store_whose_parent_is_a_link_stays_inside_where_it_points(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """BOUNDLAB_CACHE is the user's path: a link to a shared disk is where the store lives. Everything lands in the
    directory it points to, and pruning removes only from there."""
    real = tmp_path / "shared"
    real.mkdir()
    (tmp_path / "link").symlink_to(real, target_is_directory=True)
    monkeypatch.setenv("BOUNDLAB_CACHE", str(tmp_path / "link"))
    assert store.problem() is None
    fd = store.hold_identity("job")
    out = tmp_path / "out"
    out.mkdir()
    (out / "results.parquet").write_bytes(b"PAR1")
    store.put("job", out, {"run_id": "r"})
    locks.release(fd)
    assert (real / "jobs" / "job" / store.ENTRY).is_file() and (real / "jobs" / "locks" / "job" / locks.LOCK).is_file()
    target = _victim(tmp_path / "outside")  # and a link planted inside it: removed, its target left alone
    (real / "jobs" / "locks" / "planted").symlink_to(target, target_is_directory=True)
    before = _snapshot(tmp_path / "outside")
    done = store.prune(older_than_days=0)
    assert done["entries"] == 1 and done["locks"] == 1 and sorted(p.name for p in (real / "jobs").iterdir()) == ["locks"]
    assert not list((real / "jobs" / "locks").iterdir()) and _snapshot(tmp_path / "outside") == before


@pytest.mark.e2e
def test_a_sweep_with_a_planted_lock_directory_writes_nothing_outside(tmp_path: Path, boundlab_in_process) -> None:  # noqa: ANN001
    """The sweep runs every job, without the store (said in one line naming the link), and the file the link
    points to keeps its content."""
    target = _victim(tmp_path / "outside")
    root = tmp_path / "cache" / "jobs"
    root.mkdir(parents=True)
    (root / "locks").symlink_to(target, target_is_directory=True)
    before = _snapshot(tmp_path / "outside")
    env = {**os.environ, "MLFLOW_TRACKING_URI": migrated_store(tmp_path / "mlflow.db"), "BOUNDLAB_CACHE": str(tmp_path / "cache")}
    done = boundlab_in_process("-m", "seed=0,1", "n=50", "name=planted", f"hydra.sweep.dir={tmp_path / 'sweep'}",
                               cwd=tmp_path, env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "2 runs in" in done.stdout
    assert f"{root / 'locks'} is a symbolic link" in done.stdout + done.stderr
    assert _snapshot(tmp_path / "outside") == before
