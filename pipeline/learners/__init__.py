"""Online learners: small classes holding parameters and state over compiled kernels."""

from __future__ import annotations

from pipeline.learners.perceptron import Perceptron

LEARNERS = {cls.name: cls for cls in (Perceptron,)}

__all__ = ["LEARNERS", "Perceptron"]
