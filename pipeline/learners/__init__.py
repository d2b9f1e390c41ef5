"""Online learners: small classes holding parameters and state over compiled kernels.

``LEARNERS`` maps a name to its class over every ``boundlab.learners`` entry point: the built-ins
(declared in pyproject.toml) and installed plug-ins alike (:mod:`pipeline.plugins`, docs/plugins.md).
"""

from __future__ import annotations

from pipeline.learners.halving import Halving, WeightedMajority
from pipeline.learners.kernel_pegasos import KernelPegasos
from pipeline.learners.multiclass import MulticlassPegasos, MulticlassSGD, MulticlassSVM, OneVsAll
from pipeline.learners.pegasos import Pegasos
from pipeline.learners.perceptron import BatchPerceptron, Perceptron
from pipeline.plugins import LEARNERS

__all__ = ["LEARNERS", "BatchPerceptron", "Halving", "KernelPegasos", "MulticlassPegasos", "MulticlassSGD", "MulticlassSVM",
           "OneVsAll", "Pegasos", "Perceptron", "WeightedMajority"]
