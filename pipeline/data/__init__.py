"""Data: generators, loaders, and the certified statistics of exactly the vectors a learner sees."""

from __future__ import annotations

from pipeline.data.certify import Stats, certify, margin_lower, margin_upper, radius
from pipeline.data.dataset import Dataset
from pipeline.data.finite import FiniteClass
from pipeline.data.multiclass import MulticlassBundled, MulticlassDataset, MulticlassMargin, MulticlassStats, check_labels
from pipeline.data.real import Bundled, File
from pipeline.data.synthetic import MarginBinary, Shells, SparseMargin

DATASETS = {cls.name: cls for cls in (MarginBinary, SparseMargin, Shells, Bundled, File, FiniteClass,
                                      MulticlassMargin, MulticlassBundled)}

__all__ = ["DATASETS", "Bundled", "Dataset", "File", "MarginBinary", "MulticlassBundled", "MulticlassDataset",
           "MulticlassMargin", "MulticlassStats", "Shells", "SparseMargin", "Stats", "certify", "check_labels", "margin_lower",
           "margin_upper", "radius"]

from pipeline.data.tight import Tight  # noqa: E402

DATASETS[Tight.name] = Tight

from pipeline.data.multiclass_file import MulticlassFile  # noqa: E402

DATASETS[MulticlassFile.name] = MulticlassFile

from pipeline.data.stream import Stream  # noqa: E402

DATASETS[Stream.name] = Stream
