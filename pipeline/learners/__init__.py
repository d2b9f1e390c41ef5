"""Online learners: small classes holding parameters and state over compiled kernels."""

from __future__ import annotations

from pipeline.learners.halving import Halving, WeightedMajority
from pipeline.learners.kernel_pegasos import KernelPegasos
from pipeline.learners.multiclass import MulticlassPegasos, MulticlassSGD, MulticlassSVM, OneVsAll
from pipeline.learners.pegasos import Pegasos
from pipeline.learners.perceptron import Perceptron

LEARNERS = {cls.name: cls for cls in (Perceptron, Pegasos, KernelPegasos, Halving, WeightedMajority, MulticlassSGD,
                                      MulticlassSVM, OneVsAll, MulticlassPegasos)}

__all__ = ["LEARNERS", "Halving", "KernelPegasos", "MulticlassPegasos", "MulticlassSGD", "MulticlassSVM", "OneVsAll",
           "Pegasos", "Perceptron", "WeightedMajority"]
