"""Packed sweeps (``pack=N``, pipeline/sweep/pack.py): the same table as the sweep unpacked, bit for bit; one MLflow
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

from pipeline.sweep import pack

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
    from pipeline.sweep.hydra_seam import parse_overrides

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
    for child in children:  # what the pack's parts say, read back from their files
        parts = sorted((tmp_path / "packed" / f"pack-{child.data.params['pack.index']}").glob("results-part-*.parquet"))
        table = pd.concat([pd.read_parquet(p) for p in parts], ignore_index=True)
        index, first_run = int(child.data.params["pack.index"]), int(child.data.params["pack.first"])
        assert child.data.params == pack._pack_params(table, index, min(n, jobs - first_run), first_run)
        assert child.data.metrics == pack._pack_metrics(table)
    for marker in (tmp_path / "packed").glob("pack-*/part-*.json"):  # what each part's runs cost, within the part
        seconds = json.loads(marker.read_text())["seconds"]
        assert 0 < seconds["runs"] <= seconds["part"] < 60
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
    # the resume from the pack's own directory (the job store would serve the whole pack: the next test)
    monkeypatch.setattr(pack, "_reuse_part", lambda *args: None)
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
        inject_fault(m, "pipeline.sweep.pack:_run_member", call=2)  # the second member of the first pack
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


# --------------------------------------------------------------------------- seeds=auto, packed

def test_a_packed_round_holds_each_settings_seeds_together() -> None:
    """Whatever position Hydra gives ``seed``, a packed round orders the jobs setting by setting, seeds in order,
    so that with rounds in whole packs every pack holds one block of one setting's seeds in every round."""
    seed_first = [[f"seed={s}", f"d={d}"] for s in range(3) for d in (2, 3)]
    assert pack.by_setting(seed_first) == [[f"seed={s}", f"d={d}"] for d in (2, 3) for s in range(3)]
    seed_last = [[f"d={d}", f"+seed={s}"] for d in (2, 3) for s in range(3)]
    assert pack.by_setting(seed_last) == seed_last
    assert pack.part_identity([["a", "c", {}]]) != pack.part_identity([["b", "c", {}]])
    assert pack.part_identity([["a", "c", {}], ["b", "c", {}]]) != pack.part_identity([["b", "c", {}], ["a", "c", {}]])


def test_packed_rounds_add_whole_packs(monkeypatch: pytest.MonkeyPatch) -> None:
    from test_sequential import DONE, OPEN, _fake_rounds

    from pipeline import cli
    from pipeline.sweep.preflight import preflight
    from pipeline.sweep.schemas import register

    calls = _fake_rounds(monkeypatch, [OPEN, OPEN, DONE])
    cli._sequential(["-m"], budget=100, step=10, unit=25)
    assert [c[-2] for c in calls] == ["seed=range(0,25)", "seed=range(0,50)", "seed=range(0,75)"]
    calls = _fake_rounds(monkeypatch, [OPEN])
    cli._sequential(["-m"], budget=60, step=10, unit=25)  # the budget is the last round, whole packs or not
    assert [c[-2] for c in calls] == ["seed=range(0,25)", "seed=range(0,50)", "seed=range(0,60)"]
    assert cli._next_size(25, 10, 500, {"a": 170}, unit=25) == 175  # the plan's seeds, rounded up to whole packs
    register()
    assert preflight(["-m", "seeds=auto", "pack=5", "d=2,3"]).seed_unit == 5
    assert preflight(["-m", "seeds=auto", "d=2,3"]).seed_unit == 1


@pytest.mark.e2e
def test_packed_rounds_reuse_the_earlier_rounds_parts(tmp_path: Path, boundlab_in_process,  # noqa: ANN001
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """seeds=auto pack=2: rounds of 2, 4, 6 seeds over two settings. Each later round reuses the earlier rounds'
    packs from the job store (2, then 4 of its packs) and runs only the new seeds; the last round's table is the
    unpacked rounds' table, bit for bit. A stored part that is damaged is run again, never read."""
    from pipeline import cli
    from pipeline.job import store

    monkeypatch.setattr(cli, "_open_claims", lambda last: ["b"])  # never decided: every round runs
    grid = ("-m", "seeds=auto", "seed_budget=6", "seed_round=2", "n=30", "d=2,3")

    def rounds(where: str, *extra: str):  # noqa: ANN202
        (tmp_path / where).mkdir(exist_ok=True)
        env = {**os.environ, "MLFLOW_TRACKING_URI": migrated_store(tmp_path / f"{where}.db"),
               "BOUNDLAB_CACHE": str(tmp_path / f"cache-{where}")}
        proc = boundlab_in_process(*grid, "name=rounds", *extra, cwd=tmp_path / where, env=env)
        assert proc.returncode == 0, proc.stderr[-3000:]
        last = max((tmp_path / where / "multirun" / "rounds").glob("*/results.parquet"),
                   key=lambda p: len(pd.read_parquet(p)))
        return proc.stdout + proc.stderr, last.parent

    out, packed = rounds("packed", "pack=2")
    assert out.count("round ") >= 3, out[-3000:]
    assert out.count("found in the job store, reused") == 2 + 4, out[-5000:]
    assert "seeds 0-5" in out and "seeds 0-3" in out
    _, unpacked = rounds("unpacked")
    results, curves = _tables(unpacked)
    packed_results, packed_curves = _tables(packed)
    assert len(results) and sorted(results["seed"].unique()) == list(range(6))
    assert_frame_equal(packed_results, results, check_exact=True)
    assert_frame_equal(packed_curves, curves, check_exact=True)
    assert (packed / "metrics.json").read_bytes() == (unpacked / "metrics.json").read_bytes()

    # a damaged stored part is dropped and run again, never read
    monkeypatch.setenv("BOUNDLAB_CACHE", str(tmp_path / "cache-packed"))
    parts = [p for p in store.store_dir().iterdir() if p.name.startswith("part-")]
    assert len(parts) == 6  # (d=2, d=3) x (seeds 0-1, 2-3, 4-5)
    for p in parts:
        (p / "results.parquet").write_bytes(b"not a table")
    for d in (tmp_path / "packed" / "multirun" / "rounds").iterdir():  # nothing left in the sweep directories to resume from
        for marker in d.glob("pack-*/part-*.json"):
            marker.unlink()
    out, again = rounds("packed", "pack=2")
    first_round = out.split("round 2:")[0]  # the damaged parts run again (and are stored afresh for later rounds)
    assert "found in the job store" not in first_round and first_round.count("stored result is damaged") == 2, out
    assert_frame_equal(_tables(again)[0], results, check_exact=True)


def test_a_packs_log_line_shows_its_members_as_a_count_not_their_encoding() -> None:
    """The launcher logs each job's overrides: a pack's members are kilobytes of base64 (a 100,000-seed round
    printed 200 such lines), shown as their count and the runs they are."""
    from pipeline.sweep.pack import pack_overrides, shown

    line = shown(pack_overrides([["n=200", f"seed={s}"] for s in range(1000, 1500)], 2, 1000))
    assert line[-1] == "+pack_members=<500 members: runs 1000-1499>" and "n=200" in line
    assert shown(["+pack_members=not-base64", "seed=1"]) == ["+pack_members=<24 characters>", "seed=1"]
    assert max(len(o) for o in line) < 60


def test_the_parts_read_ahead_are_those_of_the_packs_this_attempt_finished(tmp_path: Path) -> None:
    """pack.read_ahead: the results and curves of each part of a pack whose done.json this attempt wrote (its
    member count: its parts), not a pack left done by an earlier attempt, nor one not done."""
    import time

    from pipeline.outputs import tables

    frame = pd.DataFrame({"run": ["a"], "t": [1]})
    for k, members in ((0, 300), (1, 3), (2, 3)):  # 300 members: two parts (pack.PART = 250)
        out = tmp_path / f"pack-{k}"
        out.mkdir()
        for p in range(2):
            for name in (f"results-part-{p:05d}.parquet", f"curves-part-{p:05d}.parquet"):
                frame.to_parquet(out / name, index=False)
        if k < 2:
            (out / "done.json").write_text(json.dumps({"key": "k", "members": members}))
    earlier = tmp_path / "pack-1" / "done.json"
    os.utime(earlier, (time.time() - 100, time.time() - 100))  # done in an earlier attempt
    try:
        assert pack.read_ahead(tmp_path, time.time() - 50) == 4  # pack 0's two parts: results and curves
        assert sorted(Path(p).relative_to(tmp_path).as_posix() for p in tables._AHEAD) == [
            "pack-0/curves-part-00000.parquet", "pack-0/curves-part-00001.parquet",
            "pack-0/results-part-00000.parquet", "pack-0/results-part-00001.parquet"]
        tables.forget_ahead()
        assert pack.read_ahead(tmp_path, None) == 6  # unchecked: pack 1 too (one part), never pack 2
    finally:
        tables.forget_ahead()


@pytest.mark.parametrize("frame", [
    pd.DataFrame({"run": ["a", "a", "b"], "quantity": ["q", "r", "q"], "t": [1, 2, 1], "empirical": [0.5, float("nan"), -0.0]}),
    pd.DataFrame({"bound": ["x", None, "y"], "holds": [True, None, False], "flag": [True, False, True],
                  "n": [2**62, -1, 0], "ratio": [float("inf"), 1e-300, 2.5]}),
    pd.DataFrame({"empirical": [1.0, 2.0]}),  # no string column: no dictionary at all
    pd.DataFrame(),  # a part whose members all failed
], ids=["curves", "results", "numbers", "empty"])
def test_a_part_table_reads_back_as_the_frame_pandas_wrote(tmp_path: Path, frame: pd.DataFrame) -> None:
    """A part's table is written without statistics and with dictionaries on its strings only
    (``pack._write_part_table``): what reads back is what ``to_parquet`` wrote would read back, frame and schema
    (pandas' metadata included)."""
    import pyarrow.parquet as pq

    pack._write_part_table(frame, tmp_path / "part.parquet")
    frame.to_parquet(tmp_path / "pandas.parquet", index=False)
    assert_frame_equal(pd.read_parquet(tmp_path / "part.parquet"), pd.read_parquet(tmp_path / "pandas.parquet"),
                       check_exact=True)
    assert pq.read_schema(tmp_path / "part.parquet").equals(pq.read_schema(tmp_path / "pandas.parquet"),
                                                            check_metadata=True)
    metadata = pq.ParquetFile(tmp_path / "part.parquet").metadata
    for g in range(metadata.num_row_groups):
        for c in range(metadata.num_columns):
            assert metadata.row_group(g).column(c).statistics is None  # nothing reads a part by them
