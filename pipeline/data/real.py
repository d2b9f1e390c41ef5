"""Real data: scikit-learn's bundled sets and user files (svmlight/LibSVM, CSV, NPZ), as binary tasks.

Statistics are certified (:func:`pipeline.data.certify.certify_sample`) on exactly the vectors the
learner sees, after preprocessing (standardise, scale into the unit ball, append a constant bias
feature c: a regularised bias, which changes R and gamma*, docs/bounds.md section 0). Files are never
unpickled; a bad file stops with one line naming it and, where it applies, the line.
"""

from __future__ import annotations

import csv
import functools
import os
import warnings
from pathlib import Path

import numpy as np
from pipeline._lazy import LazyModule

sparse = LazyModule("scipy.sparse")

from pipeline.data.certify import certify_sample
from pipeline.data.dataset import Dataset
from pipeline.params import DataError, Param, ParamError, check_params, get_params, in_scale

PREPROCESS = (
    Param("standardize", bool, lambda v: True, "true or false (centre and scale each feature; dense data)"),
    Param("unit_ball", bool, lambda v: True, "true or false (divide by the largest norm)"),
    Param("bias", float, lambda v: v >= 0, "a number >= 0 (0: none; c: append a constant feature c)"),
    Param("shuffle", bool, lambda v: True, "true or false (present the examples in a seeded random order)"),
)


def preprocess(X: np.ndarray | sparse.csr_matrix, standardize: bool, unit_ball: bool, bias: float):  # noqa: ANN201
    """The vectors the learner sees: standardised, scaled into the unit ball, with a bias feature."""
    if standardize:
        if sparse.issparse(X):
            raise ParamError("standardize", True, "false for sparse data (centring would densify it)")
        std = X.std(axis=0)
        X = (X - X.mean(axis=0)) / np.where(std > 0, std, 1.0)
    if unit_ball:
        norms = np.sqrt(np.asarray(X.multiply(X).sum(axis=1)).ravel()) if sparse.issparse(X) else np.linalg.norm(X, axis=1)
        X = X / norms.max() if norms.max() > 0 else X
    if bias > 0:
        column = np.full((X.shape[0], 1), float(bias))
        X = sparse.hstack([X, column], format="csr") if sparse.issparse(X) else np.hstack([X, column])
    return sparse.csr_matrix(X) if sparse.issparse(X) else np.ascontiguousarray(X, dtype=np.float64)


def binary_labels(labels: np.ndarray, positive: float | None, negative: float | None, where: str) -> tuple[np.ndarray, np.ndarray]:
    """Rows to keep and +/-1 labels: ``positive`` against ``negative`` (or the rest); with neither,
    the data must have exactly two classes and the larger is +1."""
    classes = np.unique(labels)
    if positive is None and negative is None and len(classes) == 1 and abs(classes[0]) == 1.0:
        # already +/-1, only one of them (e.g. the tight stream, every label +1): the labels as they are
        warnings.warn(f"{where}: every label is {classes[0]:+g}; a one-class sample is used as it is (labels +/-1 "
                      "need no mapping)", UserWarning, stacklevel=2)
        return np.ones(len(labels), bool), labels.astype(np.float64)
    if positive is None:
        if len(classes) != 2:
            raise DataError(where, f"has {len(classes)} class{'es' if len(classes) != 1 else ''} ({', '.join(f'{c:g}' for c in classes[:6])}); "
                            "a binary learner needs two: choose one with dataset.positive=LABEL")
        positive = classes[1]
    found = ", ".join(f"{c:g}" for c in classes[:10])
    if positive not in classes:
        raise ParamError("positive", positive, f"a label of {where}: {found}")
    if negative is not None and negative not in classes:
        raise ParamError("negative", negative, f"a label of {where} (or null): {found}")
    keep = np.ones(len(labels), bool) if negative is None else (labels == positive) | (labels == negative)
    return keep, np.where(labels[keep] == positive, 1.0, -1.0)


def check_radius_scale(R: float, where: str) -> None:
    """Refuse data whose certified radius lies outside [1/SCALE, SCALE] (pipeline.params.SCALE): their squares
    and products underflow or overflow in the learners and bounds (e.g. all entries subnormal)."""
    if not in_scale(R):
        raise DataError(where, f"its radius after preprocessing is R = {R:.3g}, outside [1e-100, 1e100] where squares "
                        "and products of the data stay normal doubles; rescale the data or set dataset.unit_ball=true")


class _Real:
    """Shared behaviour of real datasets: preprocessing, labels, certification, seeded order."""

    def get_params(self) -> dict[str, object]:
        return get_params(self)

    def _finish(self, X: np.ndarray | sparse.csr_matrix, labels: np.ndarray, where: str, rng: np.random.Generator) -> Dataset:
        keep, y = binary_labels(labels, self.positive, self.negative, where)
        X = preprocess(X[keep], self.standardize, self.unit_ball, self.bias)
        stats = certify_sample(X, y)  # order-free statistics, cached by content
        check_radius_scale(stats.R, where)
        if self.shuffle:
            order = rng.permutation(len(y))
            X, y = X[order], y[order]
        return Dataset(self.name, X, y, stats)


BUNDLED = ("breast_cancer", "digits", "iris", "wine")


class Bundled(_Real):
    """A binary task on a scikit-learn bundled set: ``positive`` against ``negative`` or the rest.

    Parameters
    ----------
    source : breast_cancer, digits, iris or wine.
    positive, negative : class labels (negative = null: every other class).
    standardize, unit_ball, bias, shuffle : see :func:`preprocess`; shuffle uses the data seed.
    """

    name = "bundled"
    params = (
        Param("source", str, lambda v: v in BUNDLED, f"one of {', '.join(BUNDLED)}"),
        Param("positive", int, lambda v: v >= 0, "a class label (an integer >= 0)"),
        Param("negative", int, lambda v: v >= 0, "a class label or null (null: all other classes)", nullable=True),
        *PREPROCESS,
    )

    def __init__(self, *, source: str = "breast_cancer", positive: int = 1, negative: int | None = None,
                 standardize: bool = False, unit_ball: bool = False, bias: float = 0.0, shuffle: bool = False) -> None:
        self.source, self.positive, self.negative = source, positive, negative
        self.standardize, self.unit_ball, self.bias, self.shuffle = standardize, unit_ball, bias, shuffle

    def check(self) -> None:
        check_params(self)
        if self.negative == self.positive:
            raise ParamError("negative", self.negative, "a class other than dataset.positive (or null)")
        binary_labels(self.read()[1], self.positive, self.negative, self.source)

    def read(self) -> tuple[np.ndarray, np.ndarray]:
        return _bundled(self.source)

    def generate(self, rng: np.random.Generator) -> Dataset:
        self.check()
        X, labels = self.read()
        return self._finish(X, labels, self.source, rng)


@functools.lru_cache(maxsize=None)
def _bundled(source: str) -> tuple[np.ndarray, np.ndarray]:
    import sklearn.datasets

    X, labels = getattr(sklearn.datasets, f"load_{source}")(return_X_y=True)
    return X.astype(np.float64), labels.astype(np.float64)


FORMATS = ("auto", "svmlight", "csv", "npz")


class File(_Real):
    """A user file: svmlight/LibSVM (kept sparse), CSV (header optional; label column by name or
    the last column) or NPZ (arrays X and y, never unpickled).

    Parameters
    ----------
    path : the file.
    format : auto (by extension: .csv, .npz, anything else svmlight), svmlight, csv or npz.
    d : the number of features the file must have (null: as found).
    label_column : CSV label column name (null: the last column).
    positive, negative : labels as in :class:`Bundled`; with neither, the file must have two classes.
    """

    name = "file"
    params = (
        Param("path", str, lambda v: len(v) > 0, "a file path"),
        Param("format", str, lambda v: v in FORMATS, f"one of {', '.join(FORMATS)}"),
        Param("d", int, lambda v: v >= 1, "an integer >= 1 or null", nullable=True),
        Param("label_column", str, lambda v: True, "a column name or null (the last column)", nullable=True),
        Param("positive", float, lambda v: True, "a label or null", nullable=True),
        Param("negative", float, lambda v: True, "a label or null", nullable=True),
        *PREPROCESS,
    )

    def __init__(self, *, path: str, format: str = "auto", d: int | None = None, label_column: str | None = None,
                 positive: float | None = None, negative: float | None = None, standardize: bool = False,
                 unit_ball: bool = False, bias: float = 0.0, shuffle: bool = False) -> None:
        self.path, self.format, self.d, self.label_column = path, format, d, label_column
        self.positive, self.negative = positive, negative
        self.standardize, self.unit_ball, self.bias, self.shuffle = standardize, unit_ball, bias, shuffle

    def check(self) -> None:
        """Validate the parameters and read the file (cached): a bad file fails here, before work."""
        check_params(self)
        X, labels = self.read()
        binary_labels(labels, self.positive, self.negative, self.path)

    def read(self) -> tuple[np.ndarray | sparse.csr_matrix, np.ndarray]:
        path = Path(self.path)
        if not path.is_file():
            raise DataError(self.path, "no such file")
        if path.stat().st_size == 0:
            raise DataError(self.path, "the file is empty")
        if not os.access(path, os.R_OK):
            raise DataError(self.path, "the file is not readable")
        fmt = self.format
        if fmt == "auto":
            fmt = {".csv": "csv", ".npz": "npz"}.get(path.suffix.lower(), "svmlight")
        stat = path.stat()
        return _read(str(path.resolve()), fmt, self.d, self.label_column, stat.st_mtime_ns, stat.st_size, self.path)

    def generate(self, rng: np.random.Generator) -> Dataset:
        check_params(self)
        X, labels = self.read()
        return self._finish(X, labels, self.path, rng)


@functools.lru_cache(maxsize=8)
def _read(path: str, fmt: str, d: int | None, label_column: str | None, mtime: int, size: int, shown: str):  # noqa: ANN202
    X, labels = {"svmlight": _read_svmlight, "csv": _read_csv, "npz": _read_npz}[fmt](path, d, label_column, shown)
    if d is not None and X.shape[1] != d:
        raise DataError(shown, f"has {X.shape[1]} features, but dataset.d={d}")
    values = X.data if sparse.issparse(X) else X
    if not np.isfinite(values).all() or not np.isfinite(labels).all():
        row = _first_bad_row(X, labels)
        raise DataError(shown, "has a NaN or infinite value", line=_line_of_row(path, fmt, row))
    return X, labels


def _first_bad_row(X: np.ndarray | sparse.csr_matrix, labels: np.ndarray) -> int:
    if sparse.issparse(X):
        bad = np.zeros(X.shape[0], bool)
        rows = np.repeat(np.arange(X.shape[0]), np.diff(X.indptr))
        bad[rows[~np.isfinite(X.data)]] = True
    else:
        bad = ~np.isfinite(X).all(axis=1)
    return int(np.flatnonzero(bad | ~np.isfinite(labels))[0])


def _line_of_row(path: str, fmt: str, row: int) -> int | None:
    """1-based line of data row ``row`` in a text file (comments, blanks and a CSV header skipped)."""
    if fmt == "npz":
        return None
    seen = -1
    with open(path, encoding="utf-8", errors="replace") as f:
        for number, line in enumerate(f, start=1):
            text = line.split("#", 1)[0].strip() if fmt == "svmlight" else line.strip()
            if not text or (fmt == "csv" and number == 1 and _is_header(text)):
                continue
            seen += 1
            if seen == row:
                return number
    return None


def _read_svmlight(path: str, d: int | None, label_column: str | None, shown: str):  # noqa: ANN202
    from sklearn.datasets import load_svmlight_file

    try:
        X, labels = load_svmlight_file(path, n_features=d, dtype=np.float64)
    except (ValueError, UnicodeDecodeError) as e:
        line = _first_bad_svmlight_line(path, d)
        raise DataError(shown, f"not valid svmlight/LibSVM ({str(e).splitlines()[0]})", line=line) from None
    return sparse.csr_matrix(X), labels.astype(np.float64)


def _first_bad_svmlight_line(path: str, d: int | None) -> int | None:
    with open(path, encoding="utf-8", errors="replace") as f:
        for number, line in enumerate(f, start=1):
            fields = line.split("#", 1)[0].split()
            if not fields:
                continue
            try:
                float(fields[0])
                for item in fields[1:]:
                    if item.startswith("qid:"):
                        continue
                    index, value = item.split(":")
                    if int(index) < 1 or (d is not None and int(index) > d):
                        return number
                    float(value)
            except ValueError:
                return number
    return None


def _is_header(line: str) -> bool:
    try:
        [float(v) for v in next(csv.reader([line]))]
        return False
    except ValueError:
        return True


def _read_csv(path: str, d: int | None, label_column: str | None, shown: str):  # noqa: ANN202
    with open(path, newline="", encoding="utf-8", errors="replace") as f:
        rows = list(enumerate(csv.reader(f), start=1))
    rows = [(n, r) for n, r in rows if r and any(v.strip() for v in r)]
    if not rows:
        raise DataError(shown, "the file has no data rows")
    header = rows[0][1] if _is_header(",".join(rows[0][1])) else None
    body = rows[1:] if header else rows
    width = len(header or body[0][1])
    if label_column is None:
        label_at = width - 1
    elif header is None or label_column not in header:
        raise DataError(shown, f"has no column {label_column!r}" + (f"; columns: {', '.join(header)}" if header else " (no header)"))
    else:
        label_at = header.index(label_column)
    values = np.empty((len(body), width))
    for i, (number, row) in enumerate(body):
        if len(row) != width:
            raise DataError(shown, f"has {len(row)} fields where the file has {width} (ragged rows)", line=number)
        try:
            values[i] = [float(v) for v in row]
        except ValueError:
            bad = next(v for v in row if not _is_number(v))
            raise DataError(shown, f"{bad!r} is not a number", line=number) from None
    if not body:
        raise DataError(shown, "the file has a header but no data rows")
    return np.ascontiguousarray(np.delete(values, label_at, axis=1)), values[:, label_at]


def _is_number(text: str) -> bool:
    try:
        float(text)
        return True
    except ValueError:
        return False


def _read_npz(path: str, d: int | None, label_column: str | None, shown: str):  # noqa: ANN202
    try:
        with np.load(path, allow_pickle=False) as data:
            if "X" not in data or "y" not in data:
                raise DataError(shown, f"needs arrays X and y; it has {', '.join(data.files) or 'none'}")
            X, labels = np.asarray(data["X"], dtype=np.float64), np.asarray(data["y"], dtype=np.float64)
    except DataError:
        raise
    except (OSError, ValueError) as e:
        raise DataError(shown, f"not a readable NPZ without unpickling ({str(e).splitlines()[0]})") from None
    if X.ndim != 2 or labels.shape != (X.shape[0],):
        raise DataError(shown, f"X must be 2-D and y 1-D of the same length; got {X.shape} and {labels.shape}")
    return np.ascontiguousarray(X), labels


