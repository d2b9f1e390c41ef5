"""The one run loop: generate the data, run the learner, evaluate every bound that applies."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from pipeline.bounds import bounds_for
from pipeline.comparators import comparator_margins
from pipeline.config import Job
from pipeline.data import Dataset
from pipeline.data.certify import content_hash
from pipeline.params import UserError


@dataclass
class Result:
    """What one run produced.

    table : one row per (run, bound): the measured quantity next to the bound, with the run's
        parameters and the data's certified statistics.
    curve : long table (run, quantity, t, empirical): each measured quantity after step t, on a
        log-spaced grid of t (for plots and MLflow).
    trace : the per-step arrays of the run (e.g. ``mistake``: 1 where step t was a mistake).
    dataset : the data the learner saw.
    """

    table: pd.DataFrame
    curve: pd.DataFrame
    trace: dict[str, np.ndarray]
    dataset: Dataset


def _seeds(job: Job) -> tuple[np.random.SeedSequence, np.random.SeedSequence]:
    data_seed, algorithm_seed = np.random.SeedSequence(job.seed).spawn(2)
    return data_seed, algorithm_seed


def prepare(job: Job) -> Dataset:
    """The job's data, checked against its learner: raises :class:`pipeline.params.UserError` before
    anything is run or written if the learner cannot take them (e.g. a batch larger than the sample)."""
    ds = job.dataset.generate(np.random.default_rng(_seeds(job)[0]))
    multiclass = getattr(job.learner, "multiclass", False)
    if hasattr(ds, "k") and not multiclass:
        raise UserError(f"algorithm={job.learner.name} is a binary learner and dataset {ds.name} has {ds.k} classes; "
                        "use algorithm=multiclass_sgd, multiclass_svm, ova or multiclass_pegasos")
    if getattr(ds, "streamed", False) and not getattr(job.learner, "reads_chunks", False):
        raise UserError(f"dataset {ds.name} is streamed in chunks, never held whole; algorithm={job.learner.name} "
                        "needs the whole sample: use algorithm=perceptron or dataset=margin_binary")
    job.learner.check_data(ds)
    return ds


def run(job: Job, ds: Dataset | None = None) -> Result:
    """Run ``job`` (on ``ds`` from :func:`prepare`, or freshly prepared). Data and algorithm draw from
    separate streams spawned from the job's seed."""
    ds = prepare(job) if ds is None else ds
    learner = job.learner
    algorithm_seed = _seeds(job)[1]
    outcome = learner.run(ds, np.random.default_rng(algorithm_seed))
    bounds = bounds_for(learner.name)
    streamed = getattr(ds, "streamed", False)
    if streamed:  # no comparator margins are kept for a stream (never materialised): Novikoff, not those bounds
        bounds = [b for b in bounds if "comparators" not in b.requires]
    stats = ds.stats.as_dict() | outcome.stats
    if any("comparators" in b.requires for b in bounds):
        stats["comparators"] = comparator_margins(ds.X, ds.y, ds.directions)

    ident = {"run": job.key(), "setting": job.key(seeded=False), "experiment": job.experiment, "learner": learner.name,
             "dataset": ds.name, "param_names": " ".join(["learner", "dataset", *sorted(job.params())])}
    context = job.params() | {k: stats[k] for k in ("T", "R", "gamma_lo", "gamma_hi", "gap", "separable") if k in stats}
    context |= {k: v for k, v in outcome.stats.items() if isinstance(v, (int, float, str, bool)) and k not in context}
    context["data_hash"] = ds.data_hash if streamed else content_hash(ds.X, ds.y)
    rows, curves = [], {}
    parts = outcome.parts.items() if outcome.parts else [("", outcome)]
    for part, out in parts:  # one-vs-all: every binary problem is judged on its own
        part_stats = stats | out.stats
        label = {"part": part} if part else {}
        if part:  # the part's own statistics (its comparator, constants) as columns of its rows
            label |= {k: v for k, v in out.stats.items() if isinstance(v, (int, float, str, bool))}
        rows += [ident | b.evaluate(part_stats, out.quantities, out.steps) | context | label for b in bounds]
        prefix = f"{part}/" if part else ""
        curves |= {f"{prefix}{q}": v for q, v in out.curves.items()}
        for b in bounds:  # anytime bounds as curves beside the measured ones (plots never recompute a bound)
            if b.quantity in out.curves:
                t = out.curves[b.quantity][0]
                values = b.curve_of(part_stats, t)
                if values is not None:
                    curves[f"{prefix}bound/{b.name}"] = (t, values)
    if outcome.parts:
        curves |= outcome.curves
    table = pd.DataFrame(rows)
    curve = pd.concat(
        [pd.DataFrame({"run": job.key(), "quantity": q, "t": t, "empirical": v}) for q, (t, v) in curves.items()],
        ignore_index=True,
    )
    return Result(table=table, curve=curve, trace=outcome.trace, dataset=ds)
