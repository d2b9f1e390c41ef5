"""pipeline/sweep/seeded.py: jobs that differ only in their seed, built once per family, and never when the seed is
read anywhere else or the short way disagrees with the full build."""

from __future__ import annotations

from typing import Any

import hydra
import pytest
from omegaconf import OmegaConf

from pipeline.job.config import Job, build
from pipeline.paths import CONF_DIR
from pipeline.sweep import hydra_seam
from pipeline.sweep.schemas import register
from pipeline.sweep.seeded import Seeded, reads_seed, split, with_seed


@pytest.fixture(scope="module")
def compose():  # noqa: ANN201
    register()
    with hydra.initialize_config_dir(config_dir=str(CONF_DIR), version_base=None):
        yield hydra_seam.Composer()


def _full(compose: Any, calls: list[list[str]]) -> Any:
    def full(overrides: list[str]) -> tuple[Any, Job]:
        calls.append(overrides)
        cfg = compose(overrides)
        return cfg, build(cfg)
    return full


@pytest.mark.parametrize("extra", [[], ["algorithm=pegasos", "T=300"], ["experiment=kernel_pegasos_expectation"],
                                   ["experiment=multiclass_expectation"], ["experiment=halving_classes"]])
def test_a_family_of_seeds_is_the_same_jobs_as_their_full_builds(compose: Any, extra: list[str]) -> None:
    calls: list[list[str]] = []
    seeded = Seeded()
    jobs = [[*extra, f"seed={s}", "n=120"] for s in range(6)]
    built = [seeded.build(job, _full(compose, calls)) for job in jobs]
    assert len(calls) == 2 and seeded.short == 4  # the first in full, the second in full and compared, then short
    for job, (_, short, _) in zip(jobs, built):
        full = build(compose(job))
        assert (short.key(), short.params(), short.experiment, short.force, short.seed) == \
               (full.key(), full.params(), full.experiment, full.force, full.seed)
        assert type(short.learner) is type(full.learner) and type(short.dataset) is type(full.dataset)
    # a pack runs each on its own learner and dataset, as full builds give them
    assert built[3][1].learner is not built[4][1].learner and built[3][1].dataset is not built[4][1].dataset


def test_other_overrides_make_another_family(compose: Any) -> None:
    calls: list[list[str]] = []
    seeded = Seeded()
    for n in (100, 120):
        for s in range(4):
            seeded.build([f"seed={s}", f"n={n}"], _full(compose, calls))
    assert len(calls) == 4 and seeded.short == 4


@pytest.mark.parametrize("tree", [
    {"seed": 1, "dataset": {"n": "${seed}"}},  # a group reads it
    {"seed": 1, "n": "${seed}", "dataset": {"n": "${n}"}},  # through a chain
    {"seed": 1, "dataset": {"n": "${oc.select:seed,3}"}},  # through a resolver that names it
    {"seed": 1, "dataset": {"sizes": [1, "${seed}"]}},  # in a list
])
def test_a_config_that_reads_the_seed_elsewhere_is_always_built_in_full(tree: dict) -> None:
    cfg = OmegaConf.create(tree)
    assert reads_seed(cfg)
    calls: list[list[str]] = []

    def full(overrides: list[str]) -> tuple[Any, Any]:
        calls.append(overrides)
        return cfg, object()

    seeded = Seeded()
    for s in range(5):
        seeded.build([f"seed={s}"], full)
    assert len(calls) == 5 and seeded.short == 0


def test_a_family_whose_second_job_disagrees_is_built_in_full_from_then_on(compose: Any) -> None:
    """What the scan of the config cannot see (a seed read in code, say): the comparison of the second job catches."""
    calls: list[list[str]] = []
    base = _full(compose, calls)

    def full(overrides: list[str]) -> tuple[Any, Job]:
        cfg, job = base(overrides)
        if job.seed > 0:  # as if the seed changed the dataset by some other path
            job.dataset.n += job.seed
        return cfg, job

    seeded = Seeded()
    built = [seeded.build([f"seed={s}", "n=100"], full)[1] for s in range(5)]
    assert len(calls) == 5 and seeded.short == 0
    assert [j.dataset.n for j in built] == [100, 101, 102, 103, 104]


@pytest.mark.parametrize("job", [["n=100"], ["seed=1", "seed=2"], ["seed=01"], ["seed=-1"], ["seed=${n}"], ["+seed=1"],
                                 ["seed=1.0"], ["seed=1,2"]])
def test_jobs_without_one_plain_integer_seed_are_built_in_full(compose: Any, job: list[str]) -> None:
    assert split(job) is None
    calls: list[list[str]] = []

    def full(overrides: list[str]) -> tuple[Any, Any]:
        calls.append(overrides)
        return OmegaConf.create({"seed": 0}), object()

    seeded = Seeded()
    for _ in range(4):
        seeded.build(job, full)
    assert seeded.short == 0


def test_a_job_reseeded_without_copies_shares_its_learner() -> None:
    job = Job(experiment="e", seed=0, learner=object(), dataset=object())
    assert with_seed(job, 3, fresh=False).learner is job.learner and with_seed(job, 3, fresh=False).seed == 3
    assert job.seed == 0


class _OwnCopy:
    name = "own"

    def __deepcopy__(self, memo: dict) -> _OwnCopy:
        return self  # copies itself its own way: pickling would not


def test_a_familys_copies_are_unpickled_where_that_is_a_deep_copy(compose: Any) -> None:
    """Seeded copies a family's first job by unpickling it (seeded.freeze) once its second job agreed with its full
    build: each copy its own learner and dataset down to their inner state; a job that copies itself its own way
    (``__deepcopy__``) or cannot be pickled (a lambda) is deep-copied."""
    from pipeline.sweep.seeded import freeze

    seeded = Seeded()
    built = [seeded.build([f"seed={s}", "n=120"], _full(compose, []))[1] for s in range(4)]
    family = next(iter(seeded.families.values()))
    assert family.frozen is not None and family.frozen == freeze(family.job)
    a, b = built[2], built[3]
    assert a.learner is not b.learner and a.dataset is not b.dataset and (a.seed, b.seed) == (2, 3)
    assert all(vars(x) is not vars(y) for x, y in ((a.learner, b.learner), (a.dataset, b.dataset)))
    a.learner.__dict__["state"] = [1]  # a run's state on one copy is not on the next one's
    assert "state" not in vars(seeded.build(["seed=9", "n=120"], _full(compose, []))[1].learner)
    job = build(compose(["seed=0", "n=120"]))
    assert freeze(Job(experiment="e", seed=0, learner=_OwnCopy(), dataset=job.dataset)) is None
    assert freeze(Job(experiment="e", seed=0, learner=job.learner, dataset=lambda: None)) is None


@pytest.mark.parametrize("pickled", [True, False], ids=["unpickled", "deep-copied"])
def test_what_a_run_leaves_on_its_job_never_reaches_the_familys_later_jobs(compose: Any, pickled: bool,
                                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """A worker keeps its families of seeds for the whole sweep (pack._sweep_seeded): the jobs it hands out run and
    may keep state on their learner and dataset; every later job of the family, built in full, unpickled or
    deep-copied, starts from the family's job as it was built."""
    from pipeline.sweep import seeded as module

    if not pickled:
        monkeypatch.setattr(module, "freeze", lambda job: None)
    seeded = Seeded()
    first = seeded.build(["seed=0", "n=120"], _full(compose, []))[1]
    first.learner.__dict__["state"] = "left by a run"
    first.dataset.__dict__["state"] = "left by a run"
    later = [seeded.build([f"seed={s}", "n=120"], _full(compose, []))[1] for s in range(1, 5)]
    assert seeded.short == 3 and all("state" not in vars(j.learner) and "state" not in vars(j.dataset) for j in later)
    family = next(iter(seeded.families.values()))
    assert (family.frozen is not None) is pickled and "state" not in vars(family.job.learner)
