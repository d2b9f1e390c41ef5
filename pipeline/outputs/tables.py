"""A sweep's tables gathered from many parquet files: the same frame as reading each with pandas and
concatenating them, in a fraction of the memory and time.

A sweep's end reads two small tables per job (a few rows each, ~50 columns) or per packed part.
``pd.read_parquet`` spends ~3 ms converting each one to pandas, and each small frame carries ~0.1 MB
of overhead until it is concatenated. At 10,000 jobs, the end step spent 93 s reading. Its peak grew by
~3.6 times the size of the table it built (docs/performance.md, "Large sweeps").

Here each file is read as an Arrow table. A run of consecutive tables with one schema (the usual
case: the jobs of one experiment) is joined in Arrow and converted to pandas once, at the end. Tables
whose schemas differ (different learners record different columns) keep pandas' concatenation rules:
a run is converted by itself and concatenated as pandas would. tests/test_tables.py checks the result
against ``pd.concat`` of ``pd.read_parquet``, cell for cell, dtype for dtype and byte for byte in
parquet.
"""

from __future__ import annotations

import os
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterable, Iterator

CHUNK = 200  # files joined into one contiguous Arrow table at a time (at most this many small tables are held)
READERS = 4  # threads reading a sweep's tables at its end (pyarrow reads without the GIL): its jobs', or its packs' parts
WINDOW = 64  # files (jobs, or parts) read ahead of the one being gathered, at most


def read(path: Path) -> Any:
    """The parquet file ``path`` as the Arrow table ``pd.read_parquet`` converts. Raises ``OSError`` (missing,
    unreadable) or ``ValueError`` (not parquet, damaged), as ``pd.read_parquet`` does. A file :func:`read_ahead`
    read is returned from there, once, when it is still the file that was read (its device, inode, size and
    modification time: a file written again, replaced or removed since is read anew)."""
    ahead = _AHEAD.pop(os.fspath(path), None)
    if ahead is not None:
        try:
            if _stat_key(path) == ahead[0]:
                return ahead[1]
        except OSError:
            pass
    return _read(path)


def _read(path: Path) -> Any:
    import pyarrow.parquet as pq

    return pq.ParquetFile(path).read(use_pandas_metadata=True)


_AHEAD: dict[str, tuple[tuple[int, ...], Any]] = {}  # files read ahead of a sweep's end: path -> (its stat key, its table)


def _stat_key(path: Path) -> tuple[int, ...]:
    st = os.stat(path)
    return st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns


def read_ahead(paths: Iterable[Path]) -> int:
    """Read ``paths`` now for :func:`read` to return later (a sweep's end reads its finished packs' parts while
    its last jobs run: ``pipeline.sweep.callbacks.ahead_of_the_end``); how many were read. A file that cannot
    be read, or changes while it is read, is left for :func:`read` (its error is the end's to report)."""
    count = 0
    with one_heap():  # the end's heap (:func:`one_heap`): these tables are the end's
        for path in paths:
            if os.fspath(path) not in _AHEAD and (got := _read_unchanged(path)) is not None:
                _AHEAD[os.fspath(path)] = got
                count += 1
    return count


def _read_unchanged(path: Path) -> tuple[tuple[int, ...], Any] | None:
    """(``path``'s stat key, its table) when it reads and does not change meanwhile; None otherwise."""
    try:
        before = _stat_key(path)
        table = _read(path)
        return (before, table) if _stat_key(path) == before else None
    except Exception:  # noqa: BLE001 - only a head start: the end reads it again and reports what it meets
        return None


def forget_ahead() -> None:
    """Drop what :func:`read_ahead` read and no :func:`read` took (a sweep's end calls it when it has gathered)."""
    _AHEAD.clear()


def to_pandas(table: Any) -> Any:
    """``table`` as ``pd.read_parquet`` returns it. With pyarrow 19 or later and pandas' default dtypes, pandas
    calls exactly this (``pandas.io._util.arrow_table_to_pandas``). tests/test_tables.py compares the two on
    every column type a run records."""
    import pandas as pd

    frame = table.to_pandas()
    frame.index = pd.RangeIndex(len(frame))  # ignore_index: the files were written without an index
    return frame


class Gather:
    """Tables added in order, returned by :meth:`frame` as one pandas frame equal to
    ``pd.concat([to_pandas(t) for t in tables], ignore_index=True)``.

    Every :data:`CHUNK` tables are folded. If they share one schema, they become one contiguous Arrow
    table, appended to the previous one when the schemas agree. If their schemas differ, they are
    concatenated in pandas. pandas unions columns in order of appearance and takes each column's common
    type the same way whatever the grouping, so the order of concatenation does not change the result.
    """

    def __init__(self) -> None:
        self._chunk: list[Any] = []
        self._pieces: list[Any] = []  # Arrow tables (one schema each) and pandas frames, in order

    def add(self, table: Any) -> None:
        self._chunk.append(table)
        if len(self._chunk) >= CHUNK:
            self._fold()

    def _fold(self) -> None:
        import pandas as pd
        import pyarrow as pa

        chunk, self._chunk = self._chunk, []
        if not chunk:
            return
        runs: list[list[Any]] = []
        for t in chunk:
            if runs and runs[-1][0].schema.equals(t.schema, check_metadata=True):
                runs[-1].append(t)
            else:
                runs.append([t])
        if len(runs) > 1:
            self._pieces.append(pd.concat([to_pandas(pa.concat_tables(r)) for r in runs], ignore_index=True))
            return
        joined = pa.concat_tables(chunk).combine_chunks()
        last = self._pieces[-1] if self._pieces else None
        if isinstance(last, pa.Table) and last.schema.equals(joined.schema, check_metadata=True):
            self._pieces[-1] = pa.concat_tables([last, joined])
        else:
            self._pieces.append(joined)

    def frame(self) -> Any:
        """The tables added so far as one pandas frame (an empty frame if none); the gathered tables are let go."""
        import pandas as pd
        import pyarrow as pa

        self._fold()
        frames = []
        while self._pieces:  # one piece converted at a time, its Arrow table released as it goes
            piece = self._pieces.pop(0)
            frames.append(to_pandas(piece) if isinstance(piece, pa.Table) else piece)
        if not frames:
            return pd.DataFrame()
        return frames[0] if len(frames) == 1 else pd.concat(frames, ignore_index=True)


@contextmanager
def one_heap() -> Iterator[None]:
    """Arrow allocates from malloc inside the block, the heap pandas' numeric arrays come from.

    pyarrow's default pool (mimalloc) keeps pages it freed for its own later use, and malloc does the
    same. A sweep's end alternates between the two (Arrow: reading, string columns, their compute; numpy:
    numbers, masks, hashes, the figures' grids), so each heap kept its own high-water mark. At 10,000 jobs
    this held ~50 MB more at the end's peak (docs/performance.md, "Large sweeps"), for the same time.
    Buffers keep the pool they came from: the previous pool is restored on leaving."""
    import pyarrow as pa

    previous = pa.default_memory_pool()
    pa.set_memory_pool(pa.system_memory_pool())
    try:
        yield
    finally:
        pa.set_memory_pool(previous)


__all__ = ["CHUNK", "READERS", "WINDOW", "Gather", "forget_ahead", "one_heap", "read", "read_ahead", "to_pandas"]
