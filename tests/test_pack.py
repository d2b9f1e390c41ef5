"""Packed sweeps (``pack=N``, pipeline/pack.py): the same table as the sweep unpacked, bit for bit; one MLflow
child run per pack; an interrupted pack resumes at its first missing part; a member's fault is recorded
and rerun; the key checked before any work."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pandas as pd
import pytest
from helpers import inject_fault, migrated_store
from pandas.testing import assert_frame_equal

from pipeline import pack

GRID = ("seed=0,1,2,3,4", "n=50", "d=3")


def _sweep(boundlab, tmp_path: Path, where: str, *args: str, code: int = 0):  # noqa: ANN001, ANN202
    uri = migrated_store(tmp_path / f"{where}.db")
    proc = boundlab("-m", *args, f"hydra.sweep.dir={tmp_path / where}", cwd=tmp_path,
                    env={**os.environ, "MLFLOW_TRACKING_URI": uri})
    assert proc.returncode == code, proc.stderr[-3000:]
    return proc, uri


def _tables(sweep: Path) -> tuple[pd.DataFrame, pd.DataFrame]:
    return pd.read_parquet(sweep / "results.parquet"), pd.read_parquet(sweep / "curves.parquet")


def test_the_members_travel_in_one_plain_hydra_value() -> None:
    from pipeline.hydra_seam import parse_overrides

    members = [["seed=0", "question='Does Novikoff''s bound hold?'", "algorithm.lam=${lam}"], ["x=[1,2]", "+y={a: 1}"]]
    job = pack.pack_overrides(members, index=3, first=12)
    assert job[:3] == members[0] and job[3] == "hydra.sweep.subdir=pack-3"
    parsed = parse_overrides(job[-1:])[0]  # Hydra's own parser reads it as one string, nothing to quote
    assert parsed.key_or_group == pack.KEY and isinstance(parsed.value(), str)
    assert pack.decode(parsed.value()) == {"index": 3, "first": 12, "members": members}
    many = [[f"seed={i}", "n=200", "d=5", "pack=500"] for i in range(500)]
    assert len(pack.encode({"members": many})) < 6000  # 500 members: a few kB on the job's line
    assert [pack.decode(j[-1].partition("=")[2])["first"] for j in pack.packs_of(many, 200, start=1, first=7)] == \
        [7, 207, 407]


@pytest.mark.e2e
@pytest.mark.parametrize(("grid", "n"), [(GRID, 2), (("algorithm=perceptron,halving", "seed=0,1,2", "n=40", "d=3"), 4)],
                         ids=["seeds", "two-learners"])
def test_a_packed_sweep_has_the_unpacked_sweeps_table_bit_for_bit(tmp_path: Path, boundlab_in_process,  # noqa: ANN001
                                                                   grid: tuple[str, ...], n: int) -> None:
    _sweep(boundlab_in_process, tmp_path, "unpacked", *grid)
    proc, uri = _sweep(boundlab_in_process, tmp_path, "packed", *grid, f"pack={n}")
    results, curves = _tables(tmp_path / "unpacked")
    packed_results, packed_curves = _tables(tmp_path / "packed")
    # every column, its dtype and every value; no column is per job directory, so none is left out
    assert_frame_equal(packed_results, results, check_exact=True)
    assert_frame_equal(packed_curves, curves, check_exact=True)
    for name in ("results.parquet", "curves.parquet", "metrics.json", "novikoff_measured_vs_bound.svg"):  # byte for byte
        assert (tmp_path / "packed" / name).read_bytes() == (tmp_path / "unpacked" / name).read_bytes(), name
    jobs = len(results["run"].unique())
    packs = -(-jobs // n)
    assert sorted(p.name for p in (tmp_path / "packed").iterdir() if p.is_dir()) == [f"pack-{k}" for k in range(packs)]
    assert not list((tmp_path / "packed").rglob("trace.npz"))  # no per-run trace in packed mode

    import mlflow

    client = mlflow.MlflowClient(tracking_uri=uri)
    runs = client.search_runs([client.get_experiment_by_name("boundlab").experiment_id])
    parents = [r for r in runs if "mlflow.parentRunId" not in r.data.tags]
    children = [r for r in runs if "mlflow.parentRunId" in r.data.tags]
    assert len(parents) == 1 and len(children) == packs  # one child run per pack, not per run
    assert {c.data.params["pack.index"] for c in children} == {str(k) for k in range(packs)}
    assert sum(c.data.metrics["runs"] for c in children) == jobs == parents[0].data.metrics["runs"]
    first = next(c for c in children if c.data.params["pack.index"] == "0")
    assert first.info.status == "FINISHED" and first.data.params["pack.size"] == str(n)
    assert first.data.params["range.seed"] == f"0..{min(n, 3 if 'halving' in ' '.join(grid) else 5) - 1}"
    assert [a.path for a in client.list_artifacts(first.info.run_id, "results")] == ["results/results-part-00000.parquet"]
    assert "novikoff/max_ratio" in first.data.metrics
    assert proc.stdout.count(" part 1/1: ") == packs  # one log line per part, not per run


@pytest.mark.e2e
def test_an_interrupted_pack_resumes_at_its_first_missing_part(tmp_path: Path, boundlab_in_process,  # noqa: ANN001
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pack, "PART", 2)  # parts of 2 members: 3 parts in a pack of 5
    _sweep(boundlab_in_process, tmp_path, "sweep", *GRID, "pack=5")
    out = tmp_path / "sweep" / "pack-0"
    before = _tables(tmp_path / "sweep")
    assert sorted(p.name for p in out.glob("part-*.json")) == ["part-00000.json", "part-00001.json", "part-00002.json"]
    # as a stop after the first part leaves it: the later parts' markers gone, the pack not done
    for name in ("part-00001.json", "part-00002.json", "done.json", "results-part-00002.parquet"):
        (out / name).unlink()
    kept = (out / "results-part-00000.parquet").stat().st_mtime_ns
    calls: list[object] = []
    run_member = pack._run_member
    monkeypatch.setattr(pack, "_run_member", lambda spec: calls.append(spec) or run_member(spec))
    proc, _ = _sweep(boundlab_in_process, tmp_path, "sweep", *GRID, "pack=5")
    assert len(calls) == 3  # parts 2 and 3 (members 2, 3 and 4), not part 1
    assert (out / "results-part-00000.parquet").stat().st_mtime_ns == kept
    assert "1 of 3 parts already done" in proc.stdout
    for got, want in zip(_tables(tmp_path / "sweep"), before):
        assert_frame_equal(got, want, check_exact=True)
    calls.clear()
    proc, _ = _sweep(boundlab_in_process, tmp_path, "sweep", *GRID, "pack=5")  # a finished pack: nothing runs
    assert calls == [], proc.stdout[-2000:]
    assert "pack 0 (runs 0-4): already done" in proc.stdout, proc.stdout[-2000:]


@pytest.mark.e2e
def test_a_members_fault_is_recorded_and_rerun(tmp_path: Path, boundlab_in_process,  # noqa: ANN001
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    with monkeypatch.context() as m:
        inject_fault(m, "pipeline.pack:_run_member", call=2)  # the second member of the first pack
        # Hydra's batches of 3 jobs do not split the packs of 2 (pack K holds jobs 2K and 2K + 1)
        proc, _ = _sweep(boundlab_in_process, tmp_path, "sweep", *GRID, "pack=2", "hydra.sweeper.max_batch_size=3",
                         code=1)
    assert "1 job(s) failed" in proc.stderr and "pack-0 run 1 (seed=1 n=50 d=3 pack=2)" in proc.stderr
    marker = json.loads((tmp_path / "sweep" / "pack-0" / "part-00000.json").read_text())
    assert list(marker["failed"]) == ["1"] and "injected fault" in marker["failed"]["1"]
    assert len(pd.read_parquet(tmp_path / "sweep" / "results.parquet")["run"].unique()) == 4  # the others are kept
    _sweep(boundlab_in_process, tmp_path, "sweep", *GRID, "pack=2", "hydra.sweeper.max_batch_size=3")  # completed
    table = pd.read_parquet(tmp_path / "sweep" / "results.parquet")
    assert list(table["seed"].unique()) == [0, 1, 2, 3, 4]


@pytest.mark.parametrize(("argv", "words"), [
    (["-m", "seed=0,1", "pack=0"], "pack=0: must be null (one Hydra job per setting) or an integer >= 1"),
    (["-m", "seed=0,1", "pack=1,2"], "pack=1,2: pack is how a sweep runs"),
    (["-m", "seed=0,1", "pack=2", "hydra/sweeper=basic"], "packs are made by boundlab's sweeper"),
    (["-m", "seeds=auto", "pack=2"], "not with seeds=auto"),
])
def test_the_pack_key_is_checked_before_any_work(one_line_error, argv: list[str], words: str) -> None:  # noqa: ANN001
    assert words in one_line_error(argv)


@pytest.mark.slow  # joblib's worker processes, the sweep a command of its own
def test_packs_spread_over_joblib_workers_with_the_same_table(tmp_path: Path, boundlab, boundlab_in_process) -> None:  # noqa: ANN001
    """The packs go through the configured launcher as jobs do (Ray's is the same path: docs/scale-out.md)."""
    _sweep(boundlab_in_process, tmp_path, "unpacked", *GRID)
    _sweep(boundlab, tmp_path, "packed", *GRID, "pack=2", "hydra/launcher=joblib", "hydra.launcher.n_jobs=2")
    for name in ("results.parquet", "curves.parquet", "metrics.json"):
        assert (tmp_path / "packed" / name).read_bytes() == (tmp_path / "unpacked" / name).read_bytes(), name


@pytest.mark.slow  # a local Ray instance, started by the sweep
def test_packs_spread_over_ray_workers_with_the_same_table(tmp_path: Path, boundlab, boundlab_in_process) -> None:  # noqa: ANN001
    """The packs go through Ray's launcher as jobs do, their members inside their configs (docs/scale-out.md)."""
    import secrets
    import shutil
    import tempfile

    pytest.importorskip("hydra_plugins.hydra_ray_launcher")
    _sweep(boundlab_in_process, tmp_path, "unpacked", *GRID)
    env = {**os.environ, "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0", "RAY_AUTH_MODE": "token",  # as tests/test_scaleout.py
           "RAY_AUTH_TOKEN": secrets.token_hex(32), "RAY_DEDUP_LOGS": "0", "RAY_USAGE_STATS_ENABLED": "0",
           "MLFLOW_TRACKING_URI": migrated_store(tmp_path / "ray.db")}
    env.pop("RAY_ADDRESS", None)
    temp = tempfile.mkdtemp(prefix="blray")
    try:
        proc = boundlab("-m", *GRID, "pack=2", "hydra/launcher=ray", f"+hydra.launcher.ray.init._temp_dir={temp}",
                        "+hydra.launcher.ray.init.include_dashboard=false", f"hydra.sweep.dir={tmp_path / 'packed'}",
                        cwd=tmp_path, env=env)
    finally:
        shutil.rmtree(temp, ignore_errors=True)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    assert "Started a local Ray instance" in proc.stderr + proc.stdout
    for name in ("results.parquet", "curves.parquet", "metrics.json"):
        assert (tmp_path / "packed" / name).read_bytes() == (tmp_path / "unpacked" / name).read_bytes(), name


@pytest.mark.e2e
def test_a_stopped_pack_keeps_its_written_parts_and_its_run_ends_killed(tmp_path: Path, boundlab_in_process,  # noqa: ANN001
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pack, "PART", 2)
    run_member = pack._run_member
    calls: list[object] = []

    def stopped_at_the_fourth(spec: object) -> object:
        calls.append(spec)
        if len(calls) == 4:  # in the second part
            raise KeyboardInterrupt
        return run_member(spec)

    with monkeypatch.context() as m:
        m.setattr(pack, "_run_member", stopped_at_the_fourth)
        _, uri = _sweep(boundlab_in_process, tmp_path, "sweep", *GRID, "pack=5", code=130)
    out = tmp_path / "sweep" / "pack-0"
    assert sorted(p.name for p in out.glob("part-*.json")) == ["part-00000.json"] and not (out / "done.json").exists()
    import mlflow

    client = mlflow.MlflowClient(tracking_uri=uri)
    runs = client.search_runs([client.get_experiment_by_name("boundlab").experiment_id])
    assert sorted(r.info.status for r in runs) == ["KILLED", "KILLED"]  # the parent and the pack's run
    calls.clear()
    monkeypatch.setattr(pack, "_run_member", lambda spec: calls.append(spec) or run_member(spec))
    proc, _ = _sweep(boundlab_in_process, tmp_path, "sweep", *GRID, "pack=5")
    assert len(calls) == 3 and "1 of 3 parts already done" in proc.stdout
    assert list(pd.read_parquet(tmp_path / "sweep" / "results.parquet")["seed"].unique()) == [0, 1, 2, 3, 4]
    runs = client.search_runs([client.get_experiment_by_name("boundlab").experiment_id])  # live runs only
    assert sorted(r.info.status for r in runs) == ["FINISHED", "FINISHED"]  # the killed pack run was replaced
