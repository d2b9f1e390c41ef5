"""Online learners: small classes holding parameters and state over compiled kernels."""

from __future__ import annotations

from pipeline.learners.halving import Halving, WeightedMajority
from pipeline.learners.perceptron import Perceptron

LEARNERS = {cls.name: cls for cls in (Perceptron, Halving, WeightedMajority)}

__all__ = ["LEARNERS", "Perceptron"]
