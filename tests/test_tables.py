"""pipeline.outputs.tables: many small parquet tables gathered into one frame. Reading a file as Arrow and converting it is
``pd.read_parquet`` for every column type a run records, and gathering is ``pd.concat`` of those frames, however
the files' schemas vary and wherever the chunks fall, cell for cell, dtype for dtype and byte for byte in parquet;
at most a chunk of small tables is held at a time."""

from __future__ import annotations

import gc
import weakref
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from pipeline.outputs import tables


def _zoo(i: int) -> pd.DataFrame:
    """A run's table as different learners write them: strings with gaps, an all-None column, bools with and
    without gaps, ints, floats with NaN, a column some tables lack, a column int in one and float in another."""
    frame = pd.DataFrame({"run": [f"r{i}", f"r{i}", None], "bound": ["a", "b", "c"], "holds": [True, i % 2 == 0, False],
                          "passes": [i, 2 * i, 3], "ratio": [0.5, np.nan, float(i)],
                          "tie": [None, None, None]})
    if i % 3 == 1:
        frame["straddles"] = [True, None, False]
    if i % 4 == 2:
        frame["passes"] = frame["passes"].astype(float) / 2
    if i % 5 == 3:
        frame["reason"] = ["x", None, "z"]
    return frame


def _write(root: Path, frames: list[pd.DataFrame]) -> list[Path]:
    paths = []
    for k, frame in enumerate(frames):
        paths.append(root / f"{k}.parquet")
        frame.to_parquet(paths[-1], index=False)
    return paths


def _same(got: pd.DataFrame, want: pd.DataFrame) -> None:
    assert list(got.columns) == list(want.columns) and list(got.dtypes) == list(want.dtypes)
    pd.testing.assert_frame_equal(got, want, check_exact=True)
    assert got.to_parquet(index=False) == want.to_parquet(index=False)


@pytest.mark.parametrize("frame", [_zoo(0), _zoo(1), _zoo(2), _zoo(3), _zoo(0).iloc[:0], pd.DataFrame()],
                         ids=["plain", "bool-gaps", "float-passes", "strings", "no-rows", "no-columns"])
def test_a_file_read_as_arrow_is_pd_read_parquet(tmp_path: Path, frame: pd.DataFrame) -> None:
    (path,) = _write(tmp_path, [frame])
    _same(tables.to_pandas(tables.read(path)), pd.read_parquet(path))


def test_reading_a_damaged_or_missing_file_raises_what_pandas_raises(tmp_path: Path) -> None:
    (tmp_path / "bad.parquet").write_bytes(b"not parquet")
    with pytest.raises(ValueError, match="magic bytes"):  # what collect catches: the job has no result
        tables.read(tmp_path / "bad.parquet")
    with pytest.raises(FileNotFoundError):
        tables.read(tmp_path / "missing.parquet")


def test_a_file_read_ahead_is_returned_only_while_it_is_the_same_file(tmp_path: Path) -> None:
    """tables.read_ahead: read() returns the table read ahead, once; a file replaced since (a part written
    again) is read anew, a file removed since raises as it would have, and what nobody took is forgotten."""
    a, b, c, d = _write(tmp_path, [_zoo(0), _zoo(1), _zoo(2), _zoo(3)])
    try:
        assert tables.read_ahead([a, b, c, tmp_path / "missing.parquet"]) == 3
        held = tables._AHEAD[str(a)][1]
        assert tables.read(a) is held  # the table read ahead
        assert tables.read(a) is not held  # once: the next read is a read
        _zoo(3).to_parquet(tmp_path / "new.parquet", index=False)
        (tmp_path / "new.parquet").replace(b)  # written again, as a rerun writes a part
        _same(tables.to_pandas(tables.read(b)), _zoo(3))
        c.unlink()
        with pytest.raises(FileNotFoundError):
            tables.read(c)
        assert tables.read_ahead([d]) == 1 and str(d) in tables._AHEAD
        tables.forget_ahead()
        assert not tables._AHEAD
    finally:
        tables.forget_ahead()


def _uniform(n: int) -> list[pd.DataFrame]:
    return [_zoo(0).assign(run=f"r{k}", passes=[k, k + 1, k + 2]) for k in range(n)]


def _blocks(n: int) -> list[pd.DataFrame]:
    """Runs of one schema, then another: the packed and mixed sweeps' case."""
    return [_zoo(1 if (k // 4) % 2 else 0).assign(run=f"r{k}") for k in range(n)]


@pytest.mark.parametrize("chunk", [1, 3, 4, 200])
@pytest.mark.parametrize("make", [_uniform, _blocks, lambda n: [_zoo(i) for i in range(n)]], ids=["uniform", "blocks", "varied"])
def test_gathering_is_one_concatenation(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, chunk: int, make: object) -> None:
    monkeypatch.setattr(tables, "CHUNK", chunk)
    paths = _write(tmp_path, make(17))  # type: ignore[operator]
    gather = tables.Gather()
    for p in paths:
        gather.add(tables.read(p))
    _same(gather.frame(), pd.concat([pd.read_parquet(p) for p in paths], ignore_index=True))


def test_gathering_nothing_is_an_empty_frame() -> None:
    assert tables.Gather().frame().equals(pd.DataFrame())


def test_gathering_holds_a_chunk_of_small_tables_at_a_time(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Kept to the end, each small table cost ~0.1 MB as a frame (docs/performance.md, "Large sweeps")."""
    monkeypatch.setattr(tables, "CHUNK", 3)
    paths = _write(tmp_path, _uniform(12))
    gather, refs, alive = tables.Gather(), [], []
    gc.freeze()  # what exists already stays out of the collections: each gc.collect() walks only what the loop made
    try:
        for p in paths:
            t = tables.read(p)
            refs.append(weakref.ref(t))
            gather.add(t)
            del t
            gc.collect()
            alive.append(sum(r() is not None for r in refs))
    finally:
        gc.unfreeze()
    assert max(alive) <= 3 and alive[-1] == 0, alive
    assert len(gather.frame()) == 36


def test_one_heap_allocates_from_malloc_and_restores_the_pool(tmp_path: Path) -> None:
    import pyarrow as pa

    before = pa.default_memory_pool().backend_name
    frame = pd.DataFrame({"a": ["x", None, "y"], "b": [1.0, 2.0, 3.0]})
    frame.to_parquet(tmp_path / "t.parquet", index=False)
    with tables.one_heap():
        assert pa.default_memory_pool().backend_name == "system"
        inside = tables.to_pandas(tables.read(tmp_path / "t.parquet"))
    assert pa.default_memory_pool().backend_name == before
    pd.testing.assert_frame_equal(inside, pd.read_parquet(tmp_path / "t.parquet"))
    with pytest.raises(RuntimeError), tables.one_heap():
        raise RuntimeError
    assert pa.default_memory_pool().backend_name == before
