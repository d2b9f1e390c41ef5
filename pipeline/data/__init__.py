"""Data: generators, loaders, and the certified statistics of exactly the vectors a learner sees.

``DATASETS`` maps a name to its generator class over every ``boundlab.datasets`` entry point: the
built-ins (declared in pyproject.toml) and installed plug-ins alike (:mod:`pipeline.plugins`, docs/plugins.md).
"""

from __future__ import annotations

from pipeline.data.certify import Stats, certify
from pipeline.data.dataset import KINDS, Dataset, Source
from pipeline.data.finite import FiniteClass
from pipeline.data.multiclass import MulticlassBundled, MulticlassDataset, MulticlassMargin, MulticlassStats, check_labels
from pipeline.data.multiclass_file import MulticlassFile
from pipeline.data.real import Bundled, File
from pipeline.data.stream import Stream
from pipeline.data.synthetic import MarginBinary, Shells, SparseMargin
from pipeline.data.tight import Tight
from pipeline.data.worst_case import WorstCase
from pipeline.plugins import DATASETS
from pipeline.solvers.certified import margin_lower, margin_upper, radius

__all__ = ["DATASETS", "KINDS", "Bundled", "Dataset", "File", "FiniteClass", "MarginBinary", "MulticlassBundled",
           "MulticlassDataset", "MulticlassFile", "MulticlassMargin", "MulticlassStats", "Shells", "Source", "SparseMargin",
           "Stats", "Stream", "Tight", "WorstCase", "certify", "check_labels", "margin_lower", "margin_upper", "radius"]
