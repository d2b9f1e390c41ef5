"""The results row, declared once: one row per run and bound (``results.parquet``), its columns, their types and
what each means. The writers (:func:`pipeline.job.run.run`, :meth:`pipeline.bounds.base.Bound.evaluate`) produce these
columns, tests/test_columns.py checks every row they write against this declaration, and docs/bounds.md section 9
("Row columns") is this table, generated (``python -m pipeline.judging.columns``; a test compares them).

A row is the run's identity (:data:`IDENT`), the bound's judgement (:data:`JUDGED`), and the run's context: the
fixed columns of :data:`CONTEXT`, then the job's parameters (named in ``param_names``) and the statistics its
learner and the providers recorded (open: each learner's own, docs/bounds.md per bound).
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass
from typing import Any, Mapping

import numpy as np

TEXT, NUMBER, FLAG, COUNT = "text", "number", "flag", "count"


@dataclass(frozen=True)
class Column:
    """One column of the results row: its ``name``, its ``type`` (``text``, ``number``: a float, NaN where it
    says so; ``flag``: a bool; ``count``: an int), whether it may be None (``nullable``), what it means, and
    ``judged``: always in the row of a bound that was compared, possibly absent from a row that does not apply."""

    name: str
    type: str
    meaning: str
    nullable: bool = False
    judged: bool = False

    def accepts(self, value: Any) -> bool:
        """Whether ``value`` is of this column's type (numpy's scalars included; a bool is only a flag)."""
        if value is None:
            return self.nullable
        flag = isinstance(value, (bool, np.bool_))
        if self.type == FLAG or flag:
            return self.type == FLAG and flag
        if self.type == NUMBER:
            return isinstance(value, numbers.Real)
        if self.type == COUNT:
            return isinstance(value, numbers.Integral)
        return isinstance(value, str)


IDENT: tuple[Column, ...] = (
    Column("run", TEXT, "the job's config hash: one run, its seed included"),
    Column("setting", TEXT, "the config hash without the seed: the runs that differ only in their seed share it"),
    Column("experiment", TEXT, "the named experiment (experiments/) or sweep the run belongs to"),
    Column("learner", TEXT, "the learner's name (`algorithm=`)"),
    Column("dataset", TEXT, "the dataset's name (`dataset=`)"),
    Column("param_names", TEXT, "the columns that are the job's parameters, space-separated"),
)

JUDGED: tuple[Column, ...] = (
    Column("bound", TEXT, "the bound's name (docs/bounds.md)"),
    Column("title", TEXT, "the bound's title, as figures and the report show it"),
    Column("guarantee", TEXT, "its guarantee type: D (every run), E (in expectation), P (with high probability)"),
    Column("quantity", TEXT, "the measured quantity the bound speaks of (mistakes, excess risk, ...)"),
    Column("empirical", NUMBER, "the measured quantity at the last step; where it depends on an estimated optimum, "
           "its upper estimate (\"holds\" is decided on it)"),
    Column("empirical_low", NUMBER, "the lower estimate of the measured quantity (\"violated\" is decided on it); "
           "equal to `empirical` elsewhere"),
    Column("formula", TEXT, "the bound's formula in words"),
    Column("reference", TEXT, "where the bound is stated (the seeds, the literature, docs/bounds.md)"),
    Column("judged_at", TEXT, "\"every t\", \"every t (last step worst)\" or \"T only\" (a trace bound evaluated "
           "without the per-step trace falls back to \"T only\" and says so)"),
    Column("trivial_text", TEXT, "what the trivial value is, in words"),
    Column("range_lo", NUMBER, "the lower end of the range the quantity's true value lies in by the theory (NaN: "
           "not declared); a measurement outside the range fails the job (`RangeError`) and refutes the bound"),
    Column("range_hi", NUMBER, "the upper end of that range (NaN: not declared)"),
    Column("range_source", TEXT, "the name of the range's derivation (`pegasos_ball`, `sgd_growth`, `rlm_norm`; "
           "empty: none)", judged=True),
    Column("theoretical", NUMBER, "the bound at the last step (NaN where it does not apply; may be +inf: vacuous)"),
    Column("trivial", NUMBER, "the trivial value of the quantity (what no learning attains; NaN: unknown)"),
    Column("ratio", NUMBER, "empirical / theoretical (when the bound is <= 0: 0 if the measured value is at most "
           "the bound, otherwise inf)"),
    Column("max_ratio_over_t", NUMBER, "the largest measured / bound over the judged steps (equal to `ratio` for "
           "T-only and monotone bounds)"),
    Column("holds", FLAG, "measured <= bound at every judged step; None where the bound does not apply",
           nullable=True),
    Column("informative", FLAG, "bound < trivial (false when the trivial value is unknown, for an identity up to "
           "rounding and for a bound that may fail in every run)"),
    Column("applicable", FLAG, "whether the theorem's assumptions hold in this run"),
    Column("reason", TEXT, "why not applicable, or what qualifies an applicable row (vacuous, an identity up to "
           "rounding); empty otherwise"),
    Column("comparator", TEXT, "what attained a minimised bound (the comparator u); empty otherwise"),
    Column("identity", FLAG, "an identity up to rounding: 0 <= bound - measured <= 2 x `allowance` (a consistency "
           "check, never informative evidence)", judged=True),
    Column("allowance", NUMBER, "the rounding allowance included in the bound (NaN: none)", judged=True),
    Column("straddles", FLAG, "above the bound at the upper estimate only: the comparator's bracket straddles the "
           "bound, no violation shown", judged=True),
    Column("failure", NUMBER, "the probability with which a (P) bound may fail in a run, when it is not the run's "
           "`delta` (NaN: the run's delta)", judged=True),
)

CONTEXT: tuple[Column, ...] = (
    Column("seed", COUNT, "the job's seed: the data's and the algorithm's random streams are spawned from it"),
    Column("T", COUNT, "the steps (rounds) the learner made"),
    Column("data_hash", TEXT, "the content hash of the data the learner was handed"),
)

ROW: tuple[Column, ...] = IDENT + JUDGED + CONTEXT
BY_NAME: dict[str, Column] = {c.name: c for c in ROW}


def _absent(row: Mapping[str, Any], name: str) -> bool:
    """Not in the row, or (a row read back from a table, whose columns are the union of its rows') None or NaN."""
    value = row.get(name)
    return value is None or (isinstance(value, float) and math.isnan(value))


def disagreements(row: Mapping[str, Any]) -> list[str]:
    """Where ``row`` (one row of the results table: as a writer made it, or read back from a table) departs
    from the declaration: a declared column missing (every judged column of an applicable row included), a
    value of another type, or ``holds`` set where nothing was compared (or unset where it was)."""
    out = []
    applicable = row.get("applicable")
    if not isinstance(applicable, bool) and type(applicable).__name__ != "bool_":
        return [f"applicable: {applicable!r} is not a flag"]
    applicable = bool(applicable)
    for c in ROW:
        if c.judged and not applicable and _absent(row, c.name):
            continue  # a row that does not apply need not carry what only a comparison gives
        if c.name not in row:
            out.append(f"{c.name}: missing")
        elif not c.accepts(row[c.name]):
            out.append(f"{c.name}: {row[c.name]!r} is not a {c.type}" + (" or None" if c.nullable else ""))
    if applicable != (row.get("holds") is not None):
        out.append(f"holds: {row.get('holds')!r} in a row that {'applies' if applicable else 'does not apply'}")
    return out


def markdown() -> str:
    """The declaration as the Markdown table docs/bounds.md section 9 shows."""
    lines = ["| column | type | meaning |", "|---|---|---|"]
    for group, columns in (("the run", IDENT), ("the judgement", JUDGED), ("the context", CONTEXT)):
        for c in columns:
            kind = c.type + (" or None" if c.nullable else "") + (" (compared rows)" if c.judged else "")
            lines.append(f"| `{c.name}` | {kind} | {c.meaning} ({group}) |".replace("\n", " "))
    return "\n".join(lines)


if __name__ == "__main__":  # pragma: no cover - prints the table docs/bounds.md holds
    print(markdown())
