"""A packed part's tables made once for all its runs (pipeline.job.run.part_tables) against the runs' own tables
concatenated, as the part made them before: the same frame, cell for cell, dtype for dtype, and the same parquet
bytes, on generated rows of every kind of column (the values chosen to break pandas' inference where it reads
them: NaN, infinities, signed zeros, integers beyond int64, strings that read as numbers) and on real runs."""

from __future__ import annotations

import io

import numpy as np
import pandas as pd
import pytest
from helpers import compose_job
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from pipeline.job import run as job_run
from pipeline.job.config import build
from pipeline.job.run import RunRows, curve_table, part_tables, rows_table

FLOATS = st.floats(allow_nan=True, allow_infinity=True) | st.sampled_from([0.0, -0.0, float("nan"), 1e308])
INTS = st.integers(-2**64, 2**64) | st.sampled_from([0, -1, 2**63 - 1, 2**63, -2**63, 2**53 + 1])
VALUES = {
    "float": FLOATS,
    "int": INTS,
    "bool": st.booleans(),
    "str": st.text(max_size=4) | st.sampled_from(["", "nan", "1", "True", "None"]),
    "none": st.none(),
    "np.float64": FLOATS.map(np.float64),
    "np.int64": st.integers(-2**63, 2**63 - 1).map(np.int64),
    "list": st.lists(st.integers(0, 3), max_size=2),
}
# each column draws from one of these kinds, the same in every run or not (a run may lack the second kind)
KINDS = [("float",), ("int",), ("bool",), ("str",), ("none",), ("np.float64",), ("np.int64",), ("float", "none"),
         ("bool", "none"), ("str", "none"), ("int", "none"), ("int", "float"), ("str", "float"), ("bool", "int"),
         ("float", "np.float64"), ("list",), ("list", "none")]


@st.composite
def runs(draw: st.DrawFn) -> list[RunRows]:
    columns = draw(st.lists(st.sampled_from(range(len(KINDS))), min_size=1, max_size=5))
    shared_keys = draw(st.booleans())
    out = []
    for r in range(draw(st.integers(1, 5))):
        rows = []
        for _ in range(draw(st.integers(1, 3))):
            row = {}
            for c, kind in enumerate(columns):
                if not shared_keys and draw(st.integers(0, 5)) == 0:
                    continue  # a key some rows lack: its cells are missing
                row[f"c{c}"] = draw(VALUES[draw(st.sampled_from(KINDS[kind]))])
            rows.append(row)
        curves = {}
        for q in range(draw(st.integers(0 if r else 1, 2))):
            n = draw(st.integers(0, 3))
            t_kind = draw(st.sampled_from([np.int64, np.float64])) if draw(st.integers(0, 4)) == 0 else np.int64
            curves[f"q{q}"] = (np.arange(n, dtype=t_kind), np.array(draw(st.lists(FLOATS, min_size=n, max_size=n))))
        out.append(RunRows(key=f"run{r}", rows=rows, curves=curves))
    return out


@st.composite
def runs_of_one_signature(draw: st.DrawFn) -> list[RunRows]:
    """Runs whose rows share one signature by construction (the same keys, the same value type at each row and
    column in every run; only the values differ): the part's one-build path, whose guards these values probe."""
    columns = draw(st.lists(st.sampled_from(range(len(KINDS))), min_size=1, max_size=5))
    n_rows = draw(st.integers(1, 3))
    pattern = [[draw(st.sampled_from(KINDS[kind])) for kind in columns] for _ in range(n_rows)]
    out = []
    for r in range(draw(st.integers(2, 5))):
        rows = [{f"c{c}": draw(VALUES[name]) for c, name in enumerate(names)} for names in pattern]
        n = draw(st.integers(1, 3))
        out.append(RunRows(key=f"run{r}", rows=rows, curves={"q": (np.arange(n), np.zeros(n))}))
    return out


def _parquet(frame: pd.DataFrame) -> bytes | None:
    buffer = io.BytesIO()
    try:
        frame.to_parquet(buffer, index=False)
    except Exception:  # noqa: BLE001 - a column parquet cannot write (mixed objects): compared as frames only
        return None
    return buffer.getvalue()


def _same(got: pd.DataFrame, want: pd.DataFrame) -> None:
    pd.testing.assert_frame_equal(got, want, check_exact=True)
    assert list(got.columns) == list(want.columns) and list(got.dtypes) == list(want.dtypes)
    for column in got.columns:  # object cells of the same types (True is not 1, np.float64 is not float)
        if got[column].dtype == object:
            assert [type(v) for v in got[column]] == [type(v) for v in want[column]], column
    assert _parquet(got) == _parquet(want)


def _two(first: list[dict], second: list[dict]) -> list[RunRows]:
    point = {"q": (np.arange(1), np.zeros(1))}
    return [RunRows(key="run0", rows=first, curves=point), RunRows(key="run1", rows=second, curves=point)]


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(runs())
# where pandas' inference reads the values: integers beyond int64 (uint64 in one run, int64 in the other: their
# concatenation is float64) and integers with floats (an object column whose 1 stays an int in the frame of all
# the rows, and becomes 1.0 in the concatenation)
@example(_two([{"c0": 2**63}], [{"c0": -1}]))
@example(_two([{"c0": 2**63}], [{"c0": 1}]))
@example(_two([{"c0": 2**64}, {"c0": 1.5}], [{"c0": 1}, {"c0": 1.5}]))
def test_a_parts_tables_are_its_runs_tables_concatenated(measured: list[RunRows]) -> None:
    table, curve = part_tables(measured)
    _same(table, pd.concat([rows_table(m.rows) for m in measured], ignore_index=True))
    _same(curve, pd.concat([curve_table(m.key, m.curves) for m in measured], ignore_index=True))


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(runs_of_one_signature())
def test_runs_of_one_signature_are_built_once_unless_their_values_decide(measured: list[RunRows]) -> None:
    """The one-build path taken whenever its guards allow (every column's types of a kind pandas types alone, integers
    within int64), and then the same tables as the concatenation."""
    want_table = pd.concat([rows_table(m.rows) for m in measured], ignore_index=True)
    want_curve = pd.concat([curve_table(m.key, m.curves) for m in measured], ignore_index=True)
    built: list[int] = []
    curves_table = job_run._curves_table
    job_run.rows_table = lambda rows: built.append(len(rows)) or rows_table(rows)
    job_run._curves_table = lambda runs: built.append(-len(runs)) or curves_table(runs)
    try:
        table, curve = part_tables(measured)
    finally:
        job_run.rows_table, job_run._curves_table = rows_table, curves_table
    assert -len(measured) in built  # every run has a point, of one dtype: the curves in one table
    built.remove(-len(measured))
    _same(table, want_table)
    _same(curve, want_curve)
    types = {k: {type(v) for m in measured for row in m.rows for k2, v in row.items() if k2 == k}
             for k in measured[0].rows[0]}
    by_type = all(frozenset(t) in job_run._BY_TYPE for t in types.values())
    in_int64 = all(-2**63 <= v < 2**63 for m in measured for row in m.rows for v in row.values() if type(v) is int)
    if by_type and in_int64:
        assert built == [sum(len(m.rows) for m in measured)]  # one frame for the part


@pytest.mark.parametrize("job", [["n=200", "d=5"], ["algorithm=pegasos", "n=300", "d=5", "T=300"]])
def test_real_runs_take_the_one_build_and_give_the_same_tables(job: list[str],
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """A seed round's runs (the issue's kinds) share their rows' signature: the part's frame is built once, and it is
    the frame of their own tables concatenated."""
    measured = [job_run.measure(build(compose_job([*job, f"seed={s}"]))).rows for s in range(4)]
    want_table = pd.concat([rows_table(m.rows) for m in measured], ignore_index=True)
    want_curve = pd.concat([curve_table(m.key, m.curves) for m in measured], ignore_index=True)
    built = []
    monkeypatch.setattr(job_run, "rows_table", lambda rows: built.append(len(rows)) or rows_table(rows))
    table, curve = part_tables(measured)
    assert built == [sum(len(m.rows) for m in measured)]  # one frame for the part, not one a run
    _same(table, want_table)
    _same(curve, want_curve)
