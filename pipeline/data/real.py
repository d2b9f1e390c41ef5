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
import stat
import warnings
from pathlib import Path

import numpy as np
from pipeline._lazy import LazyModule

sparse = LazyModule("scipy.sparse")

from pipeline.data.certify import certify_sample  # noqa: E402 - below the lazy scipy.sparse, as it stood
from pipeline.data.dataset import SOLVER_BYTES_PER_FEATURE, Dataset, Source, sample_bytes  # noqa: E402
from pipeline.params import DataError, Param, ParamError, check_params, in_scale, memory_shortfall  # noqa: E402

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


def binary_labels(labels: np.ndarray, positive: float | None, negative: float | None,
                  where: str) -> tuple[np.ndarray, np.ndarray]:
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
            raise DataError(where, f"has {len(classes)} class{'es' if len(classes) != 1 else ''} "
                            f"({', '.join(f'{c:g}' for c in classes[:6])}); "
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
        head = check_data_file(self.path)
        path = Path(self.path)
        fmt = self.format
        if fmt == "auto":
            fmt = {".csv": "csv", ".npz": "npz"}.get(path.suffix.lower(), "svmlight")
        if fmt == "csv" or (fmt == "svmlight" and not self.path.endswith(SVMLIGHT_COMPRESSED)):
            check_text(head, self.path)
        st = path.stat()
        return _read(str(path.resolve()), fmt, self.d, self.label_column, st.st_mtime_ns, st.st_size, self.path)

    def generate(self, rng: np.random.Generator) -> Dataset:
        check_params(self)
        X, labels = self.read()
        return self._finish(X, labels, self.path, rng)


WORKSET_ROWS = 4096  # rows of the certificate's working set counted in the memory estimate


def check_file_memory(shown: str, X: np.ndarray | sparse.csr_matrix, dense: bool = False, extra: int = 0) -> None:
    """Refuse a file whose preprocessing and certificate would exceed the available memory (before any of it)."""
    n, d = X.shape[0], X.shape[1] + extra
    entries = float(n) * d if dense or not sparse.issparse(X) else float(X.nnz + n * extra)
    # the certificate's solvers work on a working set of rows (pipeline.solvers.max_margin._max_margin), not on
    # the whole sample: a few hundred thousand entries and, for sparse rows, its Gram matrix
    workset = 8.0 * WORKSET_ROWS * (d + 1 + (WORKSET_ROWS if sparse.issparse(X) else 0))
    shortfall = memory_shortfall(sample_bytes(n, d, entries=entries, copies=4 if dense or not sparse.issparse(X) else 6,
                                              solvers=False) + workset)
    if shortfall is not None:
        raise DataError(shown, f"has {n} rows and {d} features ({entries:.3g} entries): preprocessing and certifying "
                        f"{shortfall}; use fewer rows or features")


HEAD_BYTES = 4096  # the first bytes of a file, read to tell its kind (text, UTF-16, binary) before parsing it

NOT_REGULAR = {  # stat.S_IFMT of a path that is not a regular file: what it is, and why it cannot be used
    stat.S_IFDIR: "is a directory, not a file: give the path of the data file in it",
    stat.S_IFIFO: "is a FIFO (named pipe), not a regular file: boundlab reads a file more than once (to check it, to "
                  "fingerprint it for resuming, to certify and learn from it) and a pipe's data can be read only once; "
                  "save the data to a file and give its path",
    stat.S_IFCHR: "is a character device, not a regular file (/dev/zero never ends, /dev/null holds nothing): give the "
                  "path of a data file",
    stat.S_IFBLK: "is a block device, not a regular file: give the path of a data file",
    stat.S_IFSOCK: "is a socket, not a regular file: save the data to a file and give its path",
}


def check_data_file(shown: str) -> bytes:
    """The first :data:`HEAD_BYTES` of the user's file ``shown``, once it is known to be a readable regular file.

    Anything else is refused in one line saying what it is, without opening it: opening a FIFO blocks until a
    writer comes (and its data can be read once), a device never ends or holds nothing, and ``Path.is_file``
    would call all of them "no such file". The open itself is non-blocking, should the path change meanwhile.
    """
    try:
        st = os.stat(shown)
    except FileNotFoundError:
        if os.path.islink(shown):
            raise DataError(shown, f"is a symbolic link to {os.readlink(shown)!r}, which does not exist; point it at "
                            "the data file, or give the file's own path") from None
        raise DataError(shown, "no such file") from None
    except NotADirectoryError:
        raise DataError(shown, "no such file: a part of the path before the file's name is a file, not a directory") from None
    except PermissionError:
        raise DataError(shown, "cannot be reached: a directory of the path denies access (permission denied)") from None
    except (OSError, ValueError) as e:  # a name too long, a loop of links, a NUL character
        raise DataError(shown, f"cannot be used as a file path ({getattr(e, 'strerror', None) or e})") from None
    if not stat.S_ISREG(st.st_mode):
        raise DataError(shown, NOT_REGULAR.get(stat.S_IFMT(st.st_mode), "is not a regular file: give the path of a data file"))
    if st.st_size == 0:
        raise DataError(shown, "the file is empty")
    try:
        fd = os.open(shown, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
        with os.fdopen(fd, "rb") as f:
            return f.read(HEAD_BYTES)
    except OSError as e:
        if isinstance(e, PermissionError):
            raise DataError(shown, "the file is not readable (permission denied): give your user read permission "
                            "(chmod u+r FILE)") from None
        raise DataError(shown, f"the file cannot be read ({e.strerror or e})") from None


SVMLIGHT_COMPRESSED = (".gz", ".bz2")  # svmlight files scikit-learn's loader decompresses, by their name
UTF8_BOM = b"\xef\xbb\xbf"
WIDE_BOMS = ((b"\xff\xfe\x00\x00", "UTF-32"), (b"\x00\x00\xfe\xff", "UTF-32"), (b"\xff\xfe", "UTF-16"), (b"\xfe\xff", "UTF-16"))
BINARY_MAGIC = (
    (b"\x1f\x8b", "is gzip-compressed, not text: decompress it first (gunzip)"),
    (b"PK\x03\x04", "is a zip archive, not text: an NPZ archive is read with dataset.format=npz (or a name ending .npz)"),
    (b"\x93NUMPY", "is a .npy array, not text: save X and y with np.savez(path, X=X, y=y) and give that .npz"),
)


def check_text(head: bytes, shown: str) -> None:
    """Refuse in one line a text-format file (CSV, svmlight) whose first bytes ``head`` are not UTF-8 text.

    The readers decode UTF-8 (a UTF-8 byte-order mark is skipped): a UTF-16 or UTF-32 file would otherwise read
    as characters interleaved with NULs ("'\\x00-\\x001\\x00' is not a number") and a binary file as garbled
    fields, neither of which says what to do.
    """
    for bom, encoding in WIDE_BOMS:  # UTF-32 first: its little-endian mark begins with UTF-16's
        if head.startswith(bom):
            raise DataError(shown, f"is {encoding} encoded (it starts with a {encoding} byte-order mark); save it as UTF-8")
    for magic, problem in BINARY_MAGIC:
        if head.startswith(magic):
            raise DataError(shown, problem)
    if b"\x00" not in head:
        return
    encoding = _wide_encoding(head)
    if encoding is not None:
        raise DataError(shown, f"is {encoding} encoded (a NUL byte beside each character); save it as UTF-8")
    raise DataError(shown, "has NUL bytes: it is a binary file, not text (CSV and svmlight files are text; "
                    "an NPZ archive is read with dataset.format=npz)", line=head.count(b"\n", 0, head.index(b"\x00")) + 1)


def _wide_encoding(head: bytes) -> str | None:
    """UTF-32 or UTF-16 when ``head`` is text in one of them without a byte-order mark: in nearly every
    character of 4 (2) bytes the same 3 (1) positions are NUL, as for any Latin text; else None."""
    for encoding, width in (("UTF-32", 4), ("UTF-16", 2)):
        chars = len(head) // width
        body = head[: chars * width]
        if chars >= 2 and sum(body[i::width].count(0) >= 0.9 * chars for i in range(width)) == width - 1:
            return encoding
    return None


def _first_non_utf8(path: str) -> tuple[int | None, int | None]:
    """1-based line of the first byte that is not UTF-8, and that byte (lines split at b"\\n", which no
    multi-byte UTF-8 character contains)."""
    with open(path, "rb") as f:
        for number, line in enumerate(f, start=1):
            try:
                line.decode("utf-8")
            except UnicodeDecodeError as e:
                return number, line[e.start]
    return None, None


def _not_utf8(path: str, shown: str) -> DataError:
    line, byte = _first_non_utf8(path)
    which = f"byte 0x{byte:02x}" if byte is not None else "a byte"
    return DataError(shown, f"{which} is not UTF-8: the file is in another encoding (Latin-1 or Windows-1252?); "
                     "save it as UTF-8", line=line)


def _clip(text: str, limit: int = 40) -> str:
    """``text`` cut to ``limit`` characters: a field quoted in a message stays short (a binary or runaway
    field can be thousands of characters)."""
    return text if len(text) <= limit else text[:limit] + "..."


@functools.lru_cache(maxsize=8)
def _read(path: str, fmt: str, d: int | None, label_column: str | None, mtime: int, size: int, shown: str):  # noqa: ANN202
    import zlib

    try:
        X, labels = {"svmlight": _read_svmlight, "csv": _read_csv, "npz": _read_npz}[fmt](path, d, label_column, shown)
    except (OSError, EOFError, zlib.error) as e:  # the file gone or changed since it was checked, a damaged .gz
        packed = fmt == "svmlight" and path.endswith(SVMLIGHT_COMPRESSED)
        hint = "; a name ending .gz or .bz2 is decompressed: is it compressed, and whole?" if packed else ""
        raise DataError(shown, f"the file cannot be read ({getattr(e, 'strerror', None) or e}){hint}") from None
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
    with open(path, encoding="utf-8-sig", errors="replace") as f:
        for number, line in enumerate(f, start=1):
            text = line.split("#", 1)[0].strip() if fmt == "svmlight" else line.strip()
            if not text or (fmt == "csv" and number == 1 and _is_header(next(csv.reader([text]), []))):
                continue
            seen += 1
            if seen == row:
                return number
    return None


def _read_svmlight(path: str, d: int | None, label_column: str | None, shown: str):  # noqa: ANN202
    try:
        X, labels = _load_svmlight(path, d)
    except (ValueError, UnicodeDecodeError) as e:
        line = _first_bad_svmlight_line(path, d)
        raise DataError(shown, f"not valid svmlight/LibSVM ({_svmlight_problem(e)})", line=line) from None
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


def _load_svmlight(path: str, d: int | None):  # noqa: ANN202
    """scikit-learn's loader on ``path``, past a UTF-8 byte-order mark (which it would read as part of the first
    label); a .gz or .bz2 file goes by its name, which the loader decompresses."""
    from sklearn.datasets import load_svmlight_file

    if path.endswith(SVMLIGHT_COMPRESSED):
        return load_svmlight_file(path, n_features=d, dtype=np.float64)
    with open(path, "rb") as f:
        if f.read(len(UTF8_BOM)) != UTF8_BOM:
            f.seek(0)
        return load_svmlight_file(f, n_features=d, dtype=np.float64)


SVMLIGHT_LINE = "a line is LABEL [qid:N] INDEX:VALUE ..., indices increasing"


def _svmlight_problem(error: Exception) -> str:
    """scikit-learn's complaint in the user's words, with the form of a line: the offending token as text, cut
    short (its message quotes it as Python bytes, all of it, be it a binary file's first line)."""
    import ast
    import re

    text = str(error).splitlines()[0] if str(error) else type(error).__name__
    found = re.fullmatch(r"(could not convert string to float|invalid literal for int\(\) with base 10): (b?(['\"]).*\3)", text)
    if "unpack" in text:  # "need more than 1 value to unpack", "too many values to unpack"
        return f"a feature is not INDEX:VALUE; {SVMLIGHT_LINE}"
    if found is None:
        return f"{text.rstrip('.')}; {SVMLIGHT_LINE}"
    try:
        token = ast.literal_eval(found[2])
    except (ValueError, SyntaxError):
        return f"{text}; {SVMLIGHT_LINE}"
    if isinstance(token, bytes):
        try:
            token = token.decode("utf-8")
        except UnicodeDecodeError as e:
            return f"byte 0x{token[e.start]:02x} is not UTF-8: the file is in another encoding (Latin-1?); save it as UTF-8"
    if "\x00" in token:
        return "a NUL byte: the file is binary, not text"
    if "," in token and ":" not in token:
        return f"{_clip(token)!r} is not a number: a CSV file? name it .csv or set dataset.format=csv"
    return (f"{_clip(token)!r} is not {'a number' if 'float' in found[1] else 'a feature index (an integer >= 0)'}; "
            f"{SVMLIGHT_LINE}")


def _largest_index_line(path: str) -> tuple[int | None, int | None]:
    """The first line holding the file's largest feature index, and that index."""
    best, where = -1, None
    with open(path, encoding="utf-8-sig", errors="replace") as f:
        for number, line in enumerate(f, start=1):
            for item in line.split("#", 1)[0].split()[1:]:
                index = item.split(":", 1)[0]
                if index.isdigit() and int(index) > best:
                    best, where = int(index), number
    return where, (best if best >= 0 else None)


def _first_bad_svmlight_line(path: str, d: int | None) -> int | None:
    with open(path, encoding="utf-8-sig", errors="replace") as f:
        for number, line in enumerate(f, start=1):
            fields = line.split("#", 1)[0].split()
            if not fields:
                continue
            try:
                float(fields[0])
                previous = -1
                for at, item in enumerate(fields[1:]):
                    if at == 0 and item.startswith("qid:"):  # a query id, only right after the label
                        int(item[4:])
                        continue
                    index, value = item.split(":")
                    if int(index) < 0 or (d is not None and int(index) > d) or int(index) <= previous:
                        return number
                    previous = int(index)
                    float(value)
            except ValueError:
                return number
    return None


def _is_header(fields: list[str]) -> bool:
    """A header only when it is clearly one: no field of the row is a number (a first data row with a typo,
    ``1,0.5,0.3x``, is reported as a bad number, not silently dropped as a header). It takes the parsed fields,
    not their text joined again: a quoted field may hold commas or line breaks."""
    return bool(fields) and not any(_is_number(v) for v in fields)


def _read_csv(path: str, d: int | None, label_column: str | None, shown: str):  # noqa: ANN202
    """Rows parsed one at a time into a flat float64 buffer: memory ~ 8 bytes a field (never a list of
    every row's strings)."""
    import array

    header, width, first, count, values = None, None, None, 0, array.array("d")
    with open(path, newline="", encoding="utf-8-sig") as f:
        for number, end, row in _csv_rows(f, path, shown):
            if not row or not any(v.strip() for v in row):
                continue
            if end > number:  # only a quoted field spans lines, and no number needs one
                raise _open_quote(shown, number, end)
            if width is None:
                width, first = len(row), (number, row)
                if _is_header(row):
                    header = row
                    continue
            if len(row) != width:
                comment = next((at for at, r in ((number, row), first) if _is_comment(r)), None)
                if comment is not None:
                    raise _comment_line(shown, comment)
                raise DataError(shown, f"has {len(row)} fields where the file has {width} (ragged rows)", line=number)
            try:
                values.extend([float(v) for v in row])
            except ValueError:
                if _is_comment(row):
                    raise _comment_line(shown, number) from None
                at, bad = next((i, v) for i, v in enumerate(row) if not _is_number(v))
                named = f"column {_clip(header[at])!r}" if header else f"field {at + 1}"
                why = _why_not_a_number(bad) or (" (a header row must have no numeric field)" if count == 0 and header is None
                                                 else "")
                raise DataError(shown, f"{_clip(bad)!r} is not a number ({named}){why}", line=number) from None
            count += 1
    if width is None:
        raise DataError(shown, "the file has no data rows")
    if count == 0:
        raise DataError(shown, "the file has a header but no data rows")
    if label_column is None:
        label_at = width - 1
    elif header is None or label_column not in header:
        raise DataError(shown, f"has no column {label_column!r}"
                        + (f"; columns: {', '.join(header)}" if header else " (no header)"))
    else:
        label_at = header.index(label_column)
    table = np.frombuffer(values, dtype=np.float64).reshape(count, width)
    labels = table[:, label_at].copy()
    return np.ascontiguousarray(np.delete(table, label_at, axis=1)), labels


def _csv_rows(f: object, path: str, shown: str):  # noqa: ANN202
    """(first line, last line, fields) of each record of the CSV file ``f``: a quoted field can span lines.

    The csv module's own errors (an unclosed quote, a field over its size limit) and a byte that is not UTF-8
    become one line naming the record's line, instead of a ``_csv.Error`` or ``UnicodeDecodeError`` traceback.
    """
    reader, end = csv.reader(f), 0
    while True:
        start = end + 1
        try:
            row = next(reader)
        except StopIteration:
            return
        except csv.Error as e:
            raise _csv_error(path, start, e, shown) from None
        except UnicodeDecodeError:
            raise _not_utf8(path, shown) from None
        end = reader.line_num
        yield start, end, row


def _csv_error(path: str, line: int, error: csv.Error, shown: str) -> DataError:
    """What a ``csv.Error`` on the record starting at ``line`` means for the user: an unbalanced quote (the
    usual cause: the rest of the file becomes one field, which overflows the reader's limit or meets the end),
    a field too long for the reader, or else the module's words."""
    import itertools

    with open(path, encoding="utf-8-sig", errors="replace", newline="") as f:
        text = next(itertools.islice(f, line - 1, None), "")
    if text.count('"') % 2:
        return _open_quote(shown, line, None)
    if "field larger than field limit" in str(error):
        return DataError(shown, f"a field is longer than {csv.field_size_limit()} characters, the CSV reader's limit; "
                         "no number is that long: is this a CSV file?", line=line)
    return DataError(shown, f"is not valid CSV ({str(error).splitlines()[0]})", line=line)


def _open_quote(shown: str, start: int, end: int | None) -> DataError:
    """An unbalanced quote at line ``start``: the field it opens runs to line ``end`` (None: the end of the file)."""
    to = f"line {end}" if end is not None else "the end of the file"
    return DataError(shown, f'a quote (") opens a field that runs on to {to}: an unbalanced quote? Close or remove it '
                     "(numbers need no quotes and no line breaks)", line=start)


def _is_comment(row: list[str]) -> bool:
    return bool(row) and row[0].lstrip().startswith("#")


def _comment_line(shown: str, line: int) -> DataError:
    """A ``#`` line: CSV has no comments (a first line ``# text`` would be read as a one-column header, and the
    data as ragged rows)."""
    return DataError(shown, "is a comment line (# ...): comment lines are not supported in CSV; remove them (a header "
                     "is one line of column names)", line=line)


def _why_not_a_number(field: str) -> str:
    """The likely cause of a field that is not a number, when the field shows a common mistake; else ''."""
    if "\x00" in field:
        return ": it holds a NUL byte, so the file is binary, not text"
    if "#" in field:
        return ": comments (#) are not supported in CSV; remove them"
    separator = next((c for c in ";\t|" if c in field), None)
    if separator is not None:
        return f": fields are separated by commas, and this one holds {separator!r}; save the file with commas"
    return ""


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


ZIP_METHODS = (0, 8, 12, 14)  # stored, deflate (np.savez_compressed), bzip2, LZMA: the methods zipfile reads
ZIP_METHOD_NAMES = {6: "implode", 9: "deflate64", 93: "Zstandard", 95: "xz", 98: "PPMd", 99: "AES encryption"}
RESAVE = "save X and y again with np.savez(path, X=X, y=y)"


def _npz_member(archive: object, name: str, shown: str) -> None:
    """Refuse, from its directory entry alone, a member ``name``.npy that zipfile cannot read or that could not
    fit: encrypted, compressed by a method zipfile lacks, or declaring more uncompressed bytes than the memory
    (a zip bomb is refused before a byte of it is inflated). Each would otherwise raise mid-read."""
    info = archive.getinfo(f"{name}.npy")
    if info.flag_bits & 0x1:
        raise DataError(shown, f"is an encrypted (password-protected) zip archive, and boundlab takes no passwords; {RESAVE}")
    if info.compress_type not in ZIP_METHODS:
        method = ZIP_METHOD_NAMES.get(info.compress_type, "unknown")
        raise DataError(shown, f"array {name} is compressed with zip method {info.compress_type} ({method}), which Python's "
                        f"zipfile cannot read; {RESAVE} (or np.savez_compressed)")
    shortfall = memory_shortfall(float(info.file_size), "they")
    if shortfall is not None:
        raise DataError(shown, f"array {name} declares {info.file_size} uncompressed bytes: {shortfall}; use fewer rows or "
                        "features (or the archive is damaged)")


def _npz_unreadable(error: Exception, shown: str, what: str) -> DataError:
    """One line for an error of zipfile or numpy while reading an NPZ: a damaged or truncated archive says so."""
    import zipfile
    import zlib

    words = str(error).splitlines()[0] if str(error) else type(error).__name__
    if isinstance(error, (zipfile.BadZipFile, zlib.error, EOFError)):
        return DataError(shown, f"not a readable NPZ archive: it is truncated or damaged ({words}); copy it again, or {RESAVE}")
    return DataError(shown, f"{what} ({words})")


def _read_npz(path: str, d: int | None, label_column: str | None, shown: str):  # noqa: ANN202
    import zipfile
    import zlib

    unreadable = (OSError, ValueError, zipfile.BadZipFile, EOFError, zlib.error, RuntimeError, NotImplementedError)
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
                others = [n for n in archive.namelist() if not n.endswith(".npy")]
                extra = f" (and {', '.join(_clip(n) for n in others[:5])}, not .npy arrays)" if others else ""
                raise DataError(shown, f"needs arrays X and y (members X.npy and y.npy, as np.savez(path, X=X, y=y) "
                                f"writes them); it has {', '.join(names) or 'none'}{extra}")
            _npz_member(archive, "X", shown)
            _npz_member(archive, "y", shown)
            (x_shape, _), (y_shape, _) = _npz_header(archive, "X", shown), _npz_header(archive, "y", shown)
            if len(x_shape) != 2 or len(y_shape) != 1 or y_shape[0] != x_shape[0]:
                raise DataError(shown, f"X must be 2-D and y 1-D of the same length; got {x_shape} and {y_shape}")
            need = 8.0 * 3 * (x_shape[0] * x_shape[1] + y_shape[0])  # the stored arrays, as float64, and a copy
            shortfall = memory_shortfall(need, "its arrays")
            if shortfall is not None:
                raise DataError(shown, f"X has shape {x_shape}: {shortfall}; use fewer rows or features")
    except DataError:
        raise
    except unreadable as e:
        raise _npz_unreadable(e, shown, "not a readable NPZ archive") from None
    try:
        with np.load(path, allow_pickle=False) as data:
            X, labels = np.asarray(data["X"], dtype=np.float64), np.asarray(data["y"], dtype=np.float64)
    except unreadable as e:
        raise _npz_unreadable(e, shown, "not a readable NPZ without unpickling") from None
    return np.ascontiguousarray(X), labels
