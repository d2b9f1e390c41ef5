"""The learners' parameters are visible to a type checker: every parameter a built-in learner declares
(``params``, :class:`pipeline.params.Param`) is annotated on its class with the type an instance holds, so
``mypy --strict`` (tests/test_lint.py) checks every read of ``self.<param>`` in the learners; and the
annotation cannot drift from the declaration, which stays the single source of the constructor, the config
key and the validation."""

from __future__ import annotations

import numpy as np
import pytest

from pipeline.learners import LEARNERS
from pipeline.learners.base import Learner
from pipeline.params import REQUIRED, Param

REQUIRED_VALUES = {"lam": 0.1, "B": 1.0}  # a valid value of each parameter that has no default


def annotations_of(cls: type) -> dict[str, str]:
    """The class's annotations over its bases, nearest last (strings: the modules postpone them)."""
    out: dict[str, str] = {}
    for c in reversed(cls.__mro__):
        out |= {k: str(v) for k, v in vars(c).get("__annotations__", {}).items()}
    return out


def disagreements(cls: type) -> list[str]:
    """Each declared parameter whose annotation is missing or says another type than the instance holds."""
    notes = annotations_of(cls)
    return [f"{cls.__name__}.{p.name}: declared {p.annotation!r}, annotated {notes.get(p.name)!r}"
            for p in cls.params if notes.get(p.name) != p.annotation]


BUILT_IN = sorted((name, cls) for name, cls in LEARNERS.items() if cls.__module__.startswith("pipeline."))


def test_every_built_in_learner_is_checked() -> None:
    names = {name for name, _ in BUILT_IN}
    assert {"perceptron", "batch_perceptron", "pegasos", "kernel_pegasos", "halving", "weighted_majority",
            "multiclass_sgd", "multiclass_svm", "multiclass_pegasos", "ova"} <= names, names
    assert all(cls.params for _, cls in BUILT_IN)


@pytest.mark.parametrize(("name", "cls"), BUILT_IN, ids=[n for n, _ in BUILT_IN])
def test_each_declared_parameter_is_annotated_with_what_the_instance_holds(name: str, cls: type[Learner]) -> None:
    assert disagreements(cls) == []
    learner = cls(**{p.name: REQUIRED_VALUES[p.name] for p in cls.params if p.default is REQUIRED})
    learner.check()
    for p in cls.params:  # what the instance holds after the check is of the annotated type
        value = getattr(learner, p.name)
        allowed = (str, tuple) if p.held else (p.type,) + ((type(None),) if p.nullable else ())
        assert isinstance(value, allowed), (name, p.name, value)


def test_a_missing_or_wrong_annotation_is_found() -> None:
    class Drifted(Learner):
        name = "drifted"
        passes: float  # declared int below
        params = (Param("passes", int, lambda v: v >= 1, "an integer >= 1", default=1),
                  Param("eta", float, lambda v: v > 0, "a number > 0", default=0.5, nullable=True))

    assert disagreements(Drifted) == ["Drifted.passes: declared 'int', annotated 'float'",
                                      "Drifted.eta: declared 'float | None', annotated None"]


def test_a_cost_matrix_is_held_as_its_annotation_says() -> None:
    cls = LEARNERS["multiclass_sgd"]
    learner = cls(B=1.0, cost=[[0, 1], [2, 0]])
    learner.check()
    assert learner.cost == ((0.0, 1.0), (2.0, 0.0)) and np.asarray(learner.cost).shape == (2, 2)
