"""The results row is declared once (pipeline/judging/columns.py): every row a run writes has the declared
columns with the declared types, in each of its three cases (judged, not applicable, outside every theorem),
docs/bounds.md's table of the columns is the declaration's, and the check finds a row that departs from it."""

from __future__ import annotations

import math
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from pipeline.bounds import BOUNDS
from pipeline.data import MarginBinary
from pipeline.judging.columns import BY_NAME, CONTEXT, IDENT, JUDGED, ROW, disagreements, markdown

ROOT = Path(__file__).resolve().parents[1]
NOVIKOFF = next(b for b in BOUNDS if b.name == "novikoff")


def test_the_docs_table_is_the_declaration() -> None:
    text = (ROOT / "docs" / "bounds.md").read_text()
    block = re.search(r"<!-- generated: python -m pipeline.judging.columns -->\n(.*?)\n<!-- end generated -->", text, re.S)
    assert block and block.group(1) == markdown()
    assert len(ROW) == len(BY_NAME) == len(IDENT) + len(JUDGED) + len(CONTEXT)  # no column declared twice


def _rows_of_a_run(**job: object) -> list[dict[str, object]]:
    """The rows a run writes, as dicts (the run loop's, before the table is made)."""
    from pipeline.job.config import build
    from pipeline.job.run import run

    from helpers import compose_job

    overrides = [f"{k}={v}" for k, v in job.items()]
    return run(build(compose_job(overrides))).table.to_dict("records")


@pytest.mark.parametrize("algorithm", ["perceptron", "pegasos", "halving", "multiclass_sgd"])
def test_every_row_a_run_writes_is_declared(algorithm: str) -> None:
    dataset = {"multiclass_sgd": "multiclass_margin"}.get(algorithm, "margin_binary")
    rows = _rows_of_a_run(algorithm=algorithm, dataset=dataset, n=40, d=3, T=200, seed=1)
    assert rows
    assert [r["bound"] for r in rows if disagreements(r)] == [], [disagreements(r) for r in rows]
    for r in rows:  # the run's own parameters and statistics follow the declared columns
        assert set(str(r["param_names"]).split()) <= set(r)


def test_a_row_that_does_not_apply_and_one_outside_every_theorem_are_declared() -> None:
    ds = MarginBinary(gamma=0.2, rho=1.0, n=30, d=3).generate(np.random.default_rng(0))
    stats = ds.stats.as_dict() | {"T": 30}
    ident = {"run": "r", "setting": "s", "experiment": "e", "learner": "perceptron", "dataset": "margin_binary",
             "param_names": "seed", "seed": 0, "T": 30, "data_hash": "h"}
    novikoff = NOVIKOFF
    judged = novikoff.evaluate(stats, {"mistakes": 3.0})
    not_applicable = novikoff.evaluate(stats | {"separable": False}, {"mistakes": 3.0})
    outside = novikoff.evaluate(stats | {"not_covered": "a free bias"}, {"mistakes": 3.0})
    assert judged["applicable"] and not not_applicable["applicable"] and not outside["applicable"]
    for row in (judged, not_applicable, outside):
        assert disagreements(ident | row) == [], row
    frame = pd.DataFrame([ident | judged, ident | not_applicable, ident | outside])  # read back: columns unioned
    assert [disagreements(r) for r in frame.to_dict("records")] == [[], [], []]


def test_a_row_that_departs_from_the_declaration_is_found() -> None:
    ds = MarginBinary(gamma=0.2, rho=1.0, n=30, d=3).generate(np.random.default_rng(0))
    row = {"run": "r", "setting": "s", "experiment": "e", "learner": "perceptron", "dataset": "margin_binary",
           "param_names": "seed", "seed": 0, "T": 30, "data_hash": "h"}
    row |= NOVIKOFF.evaluate(ds.stats.as_dict() | {"T": 30}, {"mistakes": 3.0})
    assert disagreements(row) == []
    assert disagreements({k: v for k, v in row.items() if k != "identity"}) == ["identity: missing"]
    assert disagreements(row | {"ratio": "0.5"}) == ["ratio: '0.5' is not a number"]
    assert disagreements(row | {"holds": None}) == ["holds: None in a row that applies"]
    assert disagreements(row | {"seed": 1.5}) == ["seed: 1.5 is not a count"]
    assert disagreements(row | {"applicable": "yes"}) == ["applicable: 'yes' is not a flag"]
    assert math.isnan(row["failure"])
