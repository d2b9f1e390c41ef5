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
from pipeline.data.dataset import SOLVER_BYTES_PER_FEATURE, Dataset, Source, sample_bytes
from pipeline.params import DataError, Param, ParamError, check_params, in_scale, memory_shortfall

PREPROCESS = (
    Param("standardize", bool, lambda v: True, "true or false (centre and scale each feature; dense data)", default=False),
    Param("unit_ball", bool, lambda v: True, "true or false (divide by the largest norm)", default=False),
    Param("bias", float, lambda v: v >= 0, "a number >= 0 (0: none; c: append a constant feature c)", default=0.0),
    Param("shuffle", bool, lambda v: True, "true or false (present the examples in a seeded random order)", default=False),
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


class _Real(Source):
    """Shared behaviour of real datasets: preprocessing, labels, certification, seeded order."""

    kind = "binary"

    def _finish(self, X: np.ndarray | sparse.csr_matrix, labels: np.ndarray, where: str, rng: np.random.Generator) -> Dataset:
        keep, y = binary_labels(labels, self.positive, self.negative, where)
        # a dense sample keeps its rows without a copy when all are kept; a sparse one is always rebuilt by
        # the row selection, which gives it the canonical layout its saved copy (data.npz) has when read back
        dense_all = keep.all() and not sparse.issparse(X)
        X = preprocess(X if dense_all else X[keep], self.standardize, self.unit_ball, self.bias)
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
        Param("source", str, lambda v: v in BUNDLED, f"one of {', '.join(BUNDLED)}", default="breast_cancer"),
        Param("positive", int, lambda v: v >= 0, "a class label (an integer >= 0)", default=1),
        Param("negative", int, lambda v: v >= 0, "a class label or null (null: all other classes)", nullable=True,
              default=None),
        *PREPROCESS,
    )

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
        Param("format", str, lambda v: v in FORMATS, f"one of {', '.join(FORMATS)}", default="auto"),
        Param("d", int, lambda v: v >= 1, "an integer >= 1 or null", nullable=True, default=None),
        Param("label_column", str, lambda v: True, "a column name or null (the last column)", nullable=True, default=None),
        Param("positive", float, lambda v: True, "a label or null", nullable=True, default=None),
        Param("negative", float, lambda v: True, "a label or null", nullable=True, default=None),
        *PREPROCESS,
    )

    def check(self) -> None:
        """Validate the parameters and read the file (cached): a bad file fails here, before work."""
        check_params(self)
        X, labels = self.read()
        binary_labels(labels, self.positive, self.negative, self.path)
        check_file_memory(self.path, X, dense=bool(self.standardize), extra=1 if self.bias > 0 else 0)

    def shape(self) -> tuple[int, int]:
        """(n, d) of the sample the learner sees (the file read and cached), for the learners' size checks."""
        X = self.read()[0]
        return int(X.shape[0]), int(X.shape[1]) + (1 if self.bias > 0 else 0)

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


WORKSET_ROWS = 4096  # rows of the certificate's working set counted in the memory estimate


def check_file_memory(shown: str, X: np.ndarray | sparse.csr_matrix, dense: bool = False, extra: int = 0) -> None:
    """Refuse a file whose preprocessing and certificate would exceed the available memory (before any of it)."""
    n, d = X.shape[0], X.shape[1] + extra
    entries = float(n) * d if dense or not sparse.issparse(X) else float(X.nnz + n * extra)
    # the certificate's solvers work on a working set of rows (pipeline.data.certify._max_margin), not on
    # the whole sample: a few hundred thousand entries and, for sparse rows, its Gram matrix
    workset = 8.0 * WORKSET_ROWS * (d + 1 + (WORKSET_ROWS if sparse.issparse(X) else 0))
    shortfall = memory_shortfall(sample_bytes(n, d, entries=entries, copies=4 if dense or not sparse.issparse(X) else 6,
                                              solvers=False) + workset)
    if shortfall is not None:
        raise DataError(shown, f"has {n} rows and {d} features ({entries:.3g} entries): preprocessing and certifying "
                        f"{shortfall}; use fewer rows or features")


@functools.lru_cache(maxsize=8)
def _read(path: str, fmt: str, d: int | None, label_column: str | None, mtime: int, size: int, shown: str):  # noqa: ANN202
    X, labels = {"svmlight": _read_svmlight, "csv": _read_csv, "npz": _read_npz}[fmt](path, d, label_column, shown)
    if d is not None and X.shape[1] != d:
        raise DataError(shown, f"has {X.shape[1]} features, but dataset.d={d}")
    if X.shape[0] == 0:
        raise DataError(shown, "the file has no data rows")
    if X.shape[1] == 0:
        raise DataError(shown, "has no feature columns, only labels: a learner needs at least one feature")
    values = X.data if sparse.issparse(X) else X
    if not np.isfinite(values).all() or not np.isfinite(labels).all():
        row = _first_bad_row(X, labels)
        where = f" (row {row} of X or y)" if fmt == "npz" else ""
        raise DataError(shown, f"has a NaN or infinite value{where}", line=_line_of_row(path, fmt, row))
    if not values.any():
        raise DataError(shown, "every feature value is zero (only labels): there is no radius or margin to learn or certify")
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
    except OverflowError:  # an index beyond the loader's integers (2^31 - 1)
        line, index = _largest_index_line(path)
        raise DataError(shown, f"feature index {index} is too large (at most 2147483647, and d-sized vectors must fit in "
                        "memory); number the features 1..d with a smaller d", line=line) from None
    # d is the largest index: the learners' weights and the certificate's solvers hold d-sized vectors
    shortfall = memory_shortfall(SOLVER_BYTES_PER_FEATURE * float(X.shape[1]), "the d-sized vectors")
    if shortfall is not None:
        line, index = _largest_index_line(path)
        raise DataError(shown, f"feature index {index} makes d = {X.shape[1]} features: {shortfall}; number the "
                        "features 1..d with a smaller d", line=line)
    return sparse.csr_matrix(X), labels.astype(np.float64)


def _largest_index_line(path: str) -> tuple[int | None, int | None]:
    """The first line holding the file's largest feature index, and that index."""
    best, where = -1, None
    with open(path, encoding="utf-8", errors="replace") as f:
        for number, line in enumerate(f, start=1):
            for item in line.split("#", 1)[0].split()[1:]:
                index = item.split(":", 1)[0]
                if index.isdigit() and int(index) > best:
                    best, where = int(index), number
    return where, (best if best >= 0 else None)


def _first_bad_svmlight_line(path: str, d: int | None) -> int | None:
    with open(path, encoding="utf-8", errors="replace") as f:
        for number, line in enumerate(f, start=1):
            fields = line.split("#", 1)[0].split()
            if not fields:
                continue
            try:
                float(fields[0])
                previous = -1
                for item in fields[1:]:
                    if item.startswith("qid:"):
                        continue
                    index, value = item.split(":")
                    if int(index) < 0 or (d is not None and int(index) > d) or int(index) <= previous:
                        return number
                    previous = int(index)
                    float(value)
            except ValueError:
                return number
    return None


def _is_header(line: str) -> bool:
    """A header only when it is clearly one: no field of the line is a number (a first data row with a typo,
    ``1,0.5,0.3x``, is reported as a bad number, not silently dropped as a header)."""
    fields = next(csv.reader([line]), [])
    return bool(fields) and not any(_is_number(v) for v in fields)


def _read_csv(path: str, d: int | None, label_column: str | None, shown: str):  # noqa: ANN202
    """Rows parsed one at a time into a flat float64 buffer: memory ~ 8 bytes a field (never a list of
    every row's strings)."""
    import array

    header, width, count, values = None, None, 0, array.array("d")
    with open(path, newline="", encoding="utf-8", errors="replace") as f:
        for number, row in enumerate(csv.reader(f), start=1):
            if not row or not any(v.strip() for v in row):
                continue
            if width is None:
                width = len(row)
                if _is_header(",".join(row)):
                    header = row
                    continue
            if len(row) != width:
                raise DataError(shown, f"has {len(row)} fields where the file has {width} (ragged rows)", line=number)
            try:
                values.extend([float(v) for v in row])
            except ValueError:
                at, bad = next((i, v) for i, v in enumerate(row) if not _is_number(v))
                named = f"column {header[at]!r}" if header else f"field {at + 1}"
                first = " (a header row must have no numeric field)" if count == 0 and header is None else ""
                raise DataError(shown, f"{bad!r} is not a number ({named}){first}", line=number) from None
            count += 1
    if width is None:
        raise DataError(shown, "the file has no data rows")
    if count == 0:
        raise DataError(shown, "the file has a header but no data rows")
    if label_column is None:
        label_at = width - 1
    elif header is None or label_column not in header:
        raise DataError(shown, f"has no column {label_column!r}" + (f"; columns: {', '.join(header)}" if header else " (no header)"))
    else:
        label_at = header.index(label_column)
    table = np.frombuffer(values, dtype=np.float64).reshape(count, width)
    labels = table[:, label_at].copy()
    return np.ascontiguousarray(np.delete(table, label_at, axis=1)), labels


def _is_number(text: str) -> bool:
    try:
        float(text)
        return True
    except ValueError:
        return False


NPZ_MAGIC = (b"PK\x03\x04", b"PK\x05\x06")  # a zip archive (np.savez), an empty one


def _npz_header(archive: object, name: str, shown: str) -> tuple[tuple[int, ...], np.dtype]:
    """Shape and dtype of the member ``name`` from its .npy header alone (nothing of the array read)."""
    with archive.open(f"{name}.npy") as member:
        try:
            version = np.lib.format.read_magic(member)
            reader = {(1, 0): np.lib.format.read_array_header_1_0, (2, 0): np.lib.format.read_array_header_2_0}
            if version not in reader:
                raise ValueError(f"unsupported .npy version {version}")
            shape, _, dtype = reader[version](member)
        except ValueError as e:
            raise DataError(shown, f"array {name} is not a readable .npy array ({str(e).splitlines()[0]})") from None
    if dtype.hasobject:
        raise DataError(shown, f"array {name} is an object array (dtype {dtype}), which cannot be read without unpickling; "
                        "X and y must be plain numeric arrays (save with np.savez(path, X=X.astype(float), y=y))")
    if dtype.fields is not None or dtype.subdtype is not None:
        raise DataError(shown, f"array {name} is a structured (record) array (dtype {dtype}); X and y must be plain numeric "
                        "arrays (save with np.savez(path, X=X.astype(float), y=y))")
    if dtype.kind not in "biuf":
        raise DataError(shown, f"array {name} has dtype {dtype} ({'complex' if dtype.kind == 'c' else 'not a real number'}); "
                        "X and y must hold real numbers (integers or floats)")
    return shape, dtype


def _read_npz(path: str, d: int | None, label_column: str | None, shown: str):  # noqa: ANN202
    import zipfile

    with open(path, "rb") as f:
        magic = f.read(6)
    if magic.startswith(b"\x93NUMPY"):
        raise DataError(shown, "is a single .npy array (np.save), not an NPZ archive; save X and y with "
                        "np.savez(path, X=X, y=y)")
    if not magic.startswith(NPZ_MAGIC):
        raise DataError(shown, "is not an NPZ (zip) archive; save X and y with np.savez(path, X=X, y=y), or set dataset.format")
    try:
        with zipfile.ZipFile(path) as archive:
            names = [n[:-4] for n in archive.namelist() if n.endswith(".npy")]
            if "X" not in names or "y" not in names:
                raise DataError(shown, f"needs arrays X and y; it has {', '.join(names) or 'none'}")
            (x_shape, _), (y_shape, _) = _npz_header(archive, "X", shown), _npz_header(archive, "y", shown)
            if len(x_shape) != 2 or len(y_shape) != 1 or y_shape[0] != x_shape[0]:
                raise DataError(shown, f"X must be 2-D and y 1-D of the same length; got {x_shape} and {y_shape}")
            need = 8.0 * 3 * (x_shape[0] * x_shape[1] + y_shape[0])  # the stored arrays, as float64, and a copy
            shortfall = memory_shortfall(need, "its arrays")
            if shortfall is not None:
                raise DataError(shown, f"X has shape {x_shape}: {shortfall}; use fewer rows or features")
    except DataError:
        raise
    except (OSError, ValueError, zipfile.BadZipFile, EOFError) as e:
        raise DataError(shown, f"not a readable NPZ archive ({str(e).splitlines()[0] if str(e) else type(e).__name__})") from None
    try:
        with np.load(path, allow_pickle=False) as data:
            X, labels = np.asarray(data["X"], dtype=np.float64), np.asarray(data["y"], dtype=np.float64)
    except (OSError, ValueError, zipfile.BadZipFile, EOFError) as e:
        raise DataError(shown, f"not a readable NPZ without unpickling ({str(e).splitlines()[0] if str(e) else type(e).__name__})") from None
    return np.ascontiguousarray(X), labels
