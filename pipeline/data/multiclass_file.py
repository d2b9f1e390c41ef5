"""A user's multiclass file (docs/bounds.md sections 7 and 9): the loaders of :class:`pipeline.data.real.File`,
labels checked to be the classes 0..k-1, each present."""

from __future__ import annotations

import math

import numpy as np

from pipeline.data.dataset import Source
from pipeline.data.multiclass import MulticlassDataset, MulticlassStats, check_labels
from pipeline.data.real import FORMATS, File, check_radius_scale, preprocess
from pipeline.params import ANY, DataError, Param, UserError, at_least, check_params, memory_shortfall
from pipeline.solvers.certified import radius


class MulticlassFile(Source):
    """A multiclass sample from a file: svmlight, CSV or NPZ as for ``dataset=file``; labels must be the
    integers 0..k-1, every class present. Its population is the sample itself (risks are exact L_S;
    fresh examples are drawn from it with replacement).

    Parameters
    ----------
    path, format, d, label_column : as for :class:`pipeline.data.real.File`.
    k : the number of classes the file must have.
    standardize, unit_ball : preprocessing, as for the binary files.
    """

    name = "multiclass_file"
    kind = "multiclass"
    params = (
        Param("path", str, lambda v: len(v) > 0, "a file path"),
        Param("format", str, lambda v: v in FORMATS, f"one of {', '.join(FORMATS)}", default="auto"),
        Param("d", int, lambda v: v >= 1, "an integer >= 1 or null", nullable=True, default=None),
        Param("label_column", str, lambda v: True, "a column name or null (the last column)", nullable=True,
              default=None),
        Param("k", int, at_least(2)),
        Param("standardize", bool, ANY, default=False),
        Param("unit_ball", bool, ANY, default=False),
    )

    # dense float64 m x d copies while densifying and preprocessing (toarray, centring, scaling, the
    # contiguous result, the radius's products), and the learners' copies of the sample
    DENSE_COPIES = 6

    def _read(self) -> tuple[np.ndarray, np.ndarray]:
        """The file as read (sparse svmlight stays sparse: nothing is densified here) and its labels 0..k-1."""
        X, labels = File(path=self.path, format=self.format, d=self.d, label_column=self.label_column).read()
        try:
            y = check_labels(labels, int(self.k), f"dataset.path={self.path!r}")
        except UserError as e:  # name the file and the key that sets k
            raise DataError(self.path, f"{str(e).split(': ', 1)[1]} (set k to the file's number of classes)") from None
        return X, y

    def _check_dense(self, X: object) -> None:
        """Refuse, before densifying, a sample whose dense m x d copies exceed the available memory."""
        m, d = X.shape
        shortfall = memory_shortfall(8.0 * self.DENSE_COPIES * m * d, "its dense copies")
        if shortfall is not None:
            raise DataError(self.path, f"has {m} rows and {d} features, held dense by the multiclass learners: {shortfall}; "
                            "use fewer rows or features (svmlight: number the features 1..d with a smaller d)")

    def shape(self) -> tuple[int, int]:
        """(m, d) of the sample (the file read and cached, never densified), for the learners' size checks."""
        X = self._read()[0]
        return int(X.shape[0]), int(X.shape[1])

    def check(self) -> None:
        """Validate the parameters, read the file (cached) and its labels, and check the size of its dense
        copies: a bad file fails here, before work, and nothing is densified."""
        check_params(self)
        X, _ = self._read()
        self._check_dense(X)

    def generate(self, rng: np.random.Generator) -> MulticlassDataset:
        check_params(self)
        X, y = self._read()
        self._check_dense(X)
        X = X.toarray() if hasattr(X, "toarray") else np.asarray(X, dtype=np.float64)
        X = np.ascontiguousarray(preprocess(X, self.standardize, self.unit_ball, 0.0), dtype=np.float64)
        R = radius(X)
        check_radius_scale(R, self.path)
        stats = MulticlassStats(m=int(X.shape[0]), d=int(X.shape[1]), k=int(self.k), R=R, margin=math.nan,
                                acceptance=math.nan)
        return MulticlassDataset(self.name, X, y, int(self.k), stats, X, y, "S", None, None)
