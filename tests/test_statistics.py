"""The statistic providers (pipeline/job/statistics.py): a learner's run reports what it did, and the registry
computes exactly what the evaluated bounds read, no more."""

from __future__ import annotations

import numpy as np
import pytest

from pipeline.bounds import bounds_for
from pipeline.contract import HalvingRun, KernelSvmRun, SvmRun
from pipeline.data import MarginBinary
from pipeline.learners import Pegasos, Perceptron
from pipeline.job.statistics import PROVIDERS, REGISTRY, available, complete, measure, provider_for, reads


def _data():  # noqa: ANN202
    return MarginBinary(gamma=0.1, rho=1.0, n=200, d=5, flip=0.1).generate(np.random.default_rng(0))


def test_a_run_reports_what_it_did_and_no_bound_statistic() -> None:
    out = Pegasos(lam=0.05, T=300).run(_data(), np.random.default_rng(1))
    assert isinstance(out.run, SvmRun) and out.quantities == {} and out.curves == {}
    assert not {"c", "f_star_lo", "f_star_hi", "dual_gap", "regret_still"} & set(out.stats)
    assert out.run.avg.shape == out.run.last.shape == (out.run.grid.size, 5) and out.run.loss.shape == (300,)


def test_complete_asks_for_exactly_what_the_bounds_read() -> None:
    ds = _data()
    learner = Pegasos(lam=0.05, T=300)
    nothing = complete(ds, learner, learner.run(ds, np.random.default_rng(1)), ())
    assert nothing.quantities == {} and "f_star_hi" not in nothing.stats
    last = next(b for b in bounds_for("pegasos") if b.name == "last_iterate")  # reads only suboptimality_last
    out = complete(ds, learner, learner.run(ds, np.random.default_rng(1)), (last,))
    assert "suboptimality_last" in out.quantities and "f_star_hi" in out.stats  # one solve gives its whole group
    assert "c" not in out.stats  # the constant is another provider, not asked for
    full = measure(Pegasos(lam=0.05, T=300), ds, np.random.default_rng(1))
    assert full.stats["f_star_hi"] == out.stats["f_star_hi"] and "c" in full.stats


def test_the_registry_is_keyed_by_what_the_bounds_read_and_the_records_type() -> None:
    assert provider_for("c", SvmRun).name == "svm_constant"
    assert provider_for("c", KernelSvmRun).name == "kernel_svm_constant"
    assert provider_for("comparators", SvmRun).name == "comparators"  # None serves every record
    assert provider_for("comparators", None).name == "comparators"
    assert provider_for("c", None) is None and provider_for("c", HalvingRun) is None
    assert provider_for("no such statistic", SvmRun) is None

    class Shifted(SvmRun):  # a plug-in's refinement of a contract record is served as its base (the MRO)
        pass

    assert provider_for("f_star_hi", Shifted).name == "svm_optimum"
    assert all(p.provides for p in PROVIDERS) and set(REGISTRY) == {n for p in PROVIDERS for n in p.provides}
    hinge = next(b for b in bounds_for("perceptron") if "comparators" in b.requires)
    assert reads([hinge])[: len(hinge.requires)] == list(hinge.requires)


def test_a_stream_has_no_comparators_and_their_bounds_are_not_evaluated() -> None:
    from pipeline.data import Stream

    stream = Stream(gamma=0.1, rho=1.0, d=5, n=500).generate(np.random.default_rng(0))
    judged = [b.name for b in bounds_for("perceptron") if available(b, stream)]
    assert judged == ["novikoff"]
    out = measure(Perceptron(), stream, np.random.default_rng(1))
    assert "comparators" not in out.stats


@pytest.mark.parametrize("record", sorted({p.record.__name__ for p in PROVIDERS if p.record is not None}))
def test_every_record_has_one_provider_per_name(record: str) -> None:
    names = [n for p in PROVIDERS if p.record is not None and p.record.__name__ == record for n in p.provides]
    assert len(names) == len(set(names))


def test_a_provider_reads_only_the_record_it_declared() -> None:
    from pipeline.job.statistics import record_of

    out = Pegasos(lam=0.05, T=30).run(_data(), np.random.default_rng(1))
    assert record_of(out, SvmRun) is out.run
    with pytest.raises(TypeError, match="KernelSvmRun"):
        record_of(out, KernelSvmRun)


def test_the_held_out_risks_are_a_providers_and_always_computed() -> None:
    """The multiclass learners hand over their predictor; its held-out risks (docs/bounds.md section 9) come
    from a provider run for every such run, whatever the bounds read, in the columns they always had."""
    from pipeline.contract import CrammerSingerRun
    from pipeline.data.multiclass import MulticlassMargin
    from pipeline.learners import MulticlassPegasos
    from pipeline.job.statistics import held_out_risks

    ds = MulticlassMargin(k=3, gamma=0.1, rho=1.0, d=5, n=100, n_test=1000).generate(np.random.default_rng(0))
    learner = MulticlassPegasos(lam=0.1, T=200, cost="absolute")
    out = learner.run(ds, np.random.default_rng(1))
    assert isinstance(out.run, CrammerSingerRun) and "risk_hinge" not in out.stats  # the run reports what it did
    complete(ds, learner, out, ())  # no bound reads them: computed all the same
    assert list(out.stats) == ["T", "lam", "R", "sampling", "delta", "k", "risk_hinge", "risk_hinge_lo", "risk_hinge_hi",
                               "risk_01", "risk_01_lo", "risk_01_hi", "n_test", "risk_cost", "risk_cost_lo",
                               "risk_cost_hi", "cost_max", "zero_loss_lo"]
    assert {k: out.stats[k] for k in held_out_risks(ds, out.run.avg[-1], "absolute")} == held_out_risks(
        ds, learner.W_bar_, "absolute")
    assert out.stats["risk_hinge_lo"] <= out.stats["risk_hinge"] <= out.stats["risk_hinge_hi"]
