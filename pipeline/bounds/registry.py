"""``bounds_for(learner)``: the bounds of one learner, from the registry of built-in and plug-in bounds.

Its own module, apart from the package's ``__init__`` (which imports every family of bounds to list them): a
job imports this, so its identity (``pipeline.job.identity``) holds the families its learner's bounds come from
(``pipeline.plugins.BOUNDS.modules_for``), not every family; an edit to another learner's bounds keeps it.
"""

from __future__ import annotations

from typing import Any


def bounds_for(learner: str) -> tuple[Any, ...]:
    """Every bound that speaks about ``learner``: the built-ins' and the plug-ins' (a plug-in bound names
    its learner in ``Bound.learner``)."""
    from pipeline.plugins import BOUNDS as registry  # noqa: N811 - the registry object, not a constant

    return registry.for_learner(learner)
