"""pipeline.data.real and pipeline.data.multiclass_file: user data files. Every bad file (its format, encoding,
dtype, shape, values, or a path that is not a regular file) stops the command's pre-flight with one line
naming the file and the line where it applies, exit code 2, and raises the same DataError for the multiclass
reader; files beside the bad ones still read; nothing is densified or inflated beyond the memory; values
outside the scale range and label sets other than +/-1 are refused naming the file."""

from __future__ import annotations

import csv
import gzip
import io
import os
import shutil
import socket
import struct
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Callable

import numpy as np
import pytest
from helpers import assert_sound as _assert_sound
from helpers import compose_tiny as _compose
from helpers import peak_bytes as _peak
from helpers import separable_sample as _separable
from helpers import tiny_outcome as _outcome
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import pipeline.params as params
from pipeline.job.config import build
from pipeline.data import File
from pipeline.data.multiclass_file import MulticlassFile
from pipeline.params import DataError
from pipeline.job.run import run


def _npz(**arrays: object) -> Callable[[Path], None]:
    return lambda path: np.savez(path, **arrays)


def _bytes(content: bytes | str) -> Callable[[Path], None]:
    return lambda path: path.write_bytes(content if isinstance(content, bytes) else content.encode())


def _npy(array: np.ndarray) -> Callable[[Path], None]:
    def write(path: Path) -> None:
        with open(path, "wb") as f:  # np.save output under a .npz name
            np.save(f, array)
    return write


def _truncated_zip(path: Path) -> None:
    np.savez(path, X=np.ones((4, 2)), y=np.array([1.0, -1.0, 1.0, -1.0]))
    path.write_bytes(path.read_bytes()[:40])  # a zip's magic, then nothing usable


def _zip_without_npy(path: Path) -> None:
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("X.txt", "1 2 3")


def _nothing(path: Path) -> None:
    """The path is left as it is (missing, or a device given by its absolute name)."""


def _fifo(path: Path) -> None:
    os.mkfifo(path)


def _socket(path: Path) -> None:
    with socket.socket(socket.AF_UNIX) as s:
        s.bind(str(path))  # the socket file stays when the socket is closed


def _dangling(path: Path) -> None:
    path.symlink_to(path.parent / "gone.csv")


def _link_to_fifo(path: Path) -> None:
    os.mkfifo(path.parent / "pipe")
    path.symlink_to(path.parent / "pipe")


def _under_a_file(path: Path) -> None:
    path.parent.write_text("1,2,1\n-1,-2,-1\n")  # .../f.csv/x.csv: f.csv is a file


def _text(content: str, encoding: str) -> Callable[[Path], None]:
    return lambda path: path.write_bytes(content.encode(encoding))


def _npz_bytes(path: Path) -> None:
    with open(path, "wb") as f:  # np.savez to an open file: the name stays as given (.csv, .svm)
        np.savez(f, X=np.ones((3, 2)), y=Y3)


def _zip_bytes(compression: int = zipfile.ZIP_STORED) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression) as archive:
        for name, array in (("X", np.arange(6.0).reshape(3, 2)), ("y", Y3)):
            member = io.BytesIO()
            np.save(member, array)
            archive.writestr(f"{name}.npy", member.getvalue())
    return buffer.getvalue()


def _patched_zip(flags: int = 0, method: int | None = None) -> Callable[[Path], None]:
    """An NPZ whose entries (local and central headers) get general-purpose ``flags`` or the compression ``method``:
    bit 0 is 'encrypted', a method zipfile lacks is unreadable; the bytes need not be either."""
    def write(path: Path) -> None:
        data = bytearray(_zip_bytes())
        for signature, at in ((b"PK\x03\x04", 6), (b"PK\x01\x02", 8)):  # flag bits, then the method 2 bytes on
            start = data.find(signature)
            while start >= 0:
                struct.pack_into("<H", data, start + at, struct.unpack_from("<H", data, start + at)[0] | flags)
                if method is not None:
                    struct.pack_into("<H", data, start + at + 2, method)
                start = data.find(signature, start + 4)
        path.write_bytes(bytes(data))
    return write


def _encrypted_zip(path: Path) -> None:
    """An NPZ encrypted by the zip command (zip -P), if it is installed; else by its flag bit."""
    if shutil.which("zip") is None:
        _patched_zip(flags=0x1)(path)
        return
    for name, array in (("X", np.arange(6.0).reshape(3, 2)), ("y", Y3)):
        np.save(path.parent / f"{name}.npy", array)
    subprocess.run(["zip", "-q", "-j", "-P", "secret", str(path), str(path.parent / "X.npy"), str(path.parent / "y.npy")],
                   check=True)


def _cut_npz(keep: float) -> Callable[[Path], None]:
    return lambda path: path.write_bytes(_zip_bytes()[: int(len(_zip_bytes()) * keep)])


def _corrupt_deflate(path: Path) -> None:
    data = bytearray(_zip_bytes(zipfile.ZIP_DEFLATED))
    start = data.find(b"X.npy") + len("X.npy") + 4  # into X's deflated bytes
    data[start:start + 12] = b"\xff" * 12
    path.write_bytes(bytes(data))


def _bad_crc(path: Path) -> None:
    data = bytearray(_zip_bytes())
    at = data.find(b"y.npy") + len("y.npy") + 128 + 8  # a byte of y's values, past its .npy header
    data[at] ^= 0x40
    path.write_bytes(bytes(data))


def _zip_with_text_member(path: Path) -> None:
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("X.npy", np.array2string(np.ones((3, 2))))  # a text dump named .npy
        archive.writestr("y.npy", "1 -1 1")


def _zip_with_notes(path: Path) -> None:
    with zipfile.ZipFile(path, "w") as archive:
        member = io.BytesIO()
        np.save(member, np.ones((3, 2)))
        archive.writestr("X.npy", member.getvalue())
        archive.writestr("notes.txt", "y is in the other file")


RECORD = np.zeros(3, dtype=[("a", float), ("b", float)])
Y3 = np.array([1.0, -1.0, 1.0])

# (id, file name, writer, words the message must hold, line or None)
BAD_FILES = [
    # NPZ: dtypes that are not plain real numbers
    ("npz-record-X", "f.npz", _npz(X=RECORD, y=Y3), "structured (record)", None),
    ("npz-record-y", "f.npz", _npz(X=np.ones((3, 2)), y=np.zeros(3, dtype=[("a", float)])), "structured (record)", None),
    ("npz-complex128-X", "f.npz", _npz(X=np.ones((3, 2)) * (1 + 1j), y=Y3), "complex", None),
    ("npz-complex64-X", "f.npz", _npz(X=np.ones((3, 2), dtype=np.complex64), y=Y3), "complex", None),
    ("npz-complex-y", "f.npz", _npz(X=np.ones((3, 2)), y=Y3 + 0j), "complex", None),
    ("npz-object-X", "f.npz", _npz(X=np.array([[1, 2], [3, 4], [5, 6]], dtype=object), y=Y3), "object array", None),
    ("npz-object-y", "f.npz", _npz(X=np.ones((3, 2)), y=np.array([1, -1, 1], dtype=object)), "object array", None),
    ("npz-string-y", "f.npz", _npz(X=np.ones((3, 2)), y=np.array(["a", "b", "a"])), "real numbers", None),
    ("npz-bytes-X", "f.npz", _npz(X=np.array([[b"1", b"2"]] * 3), y=Y3), "real numbers", None),
    # NPZ: shapes
    ("npz-X-1d", "f.npz", _npz(X=np.ones(3), y=Y3), "X must be 2-D", None),
    ("npz-X-3d", "f.npz", _npz(X=np.ones((3, 2, 2)), y=Y3), "X must be 2-D", None),
    ("npz-X-0d", "f.npz", _npz(X=np.float64(1.0), y=Y3), "X must be 2-D", None),
    ("npz-y-2d", "f.npz", _npz(X=np.ones((3, 2)), y=np.ones((3, 1))), "X must be 2-D", None),
    ("npz-y-shorter", "f.npz", _npz(X=np.ones((3, 2)), y=Y3[:2]), "same length", None),
    ("npz-y-longer", "f.npz", _npz(X=np.ones((2, 2)), y=Y3), "same length", None),
    # NPZ: values
    ("npz-nan-X", "f.npz", _npz(X=np.array([[1.0, np.nan], [0, 1], [1, 1]]), y=Y3), "NaN or infinite value (row 0", None),
    ("npz-inf-X", "f.npz", _npz(X=np.array([[1.0, 0], [0, 1], [np.inf, 1]]), y=Y3), "NaN or infinite value (row 2", None),
    ("npz-neginf-X", "f.npz", _npz(X=np.array([[1.0, 0], [-np.inf, 1], [1, 1]]), y=Y3), "NaN or infinite value (row 1", None),
    ("npz-nan-y", "f.npz", _npz(X=np.eye(3), y=np.array([1.0, np.nan, -1.0])), "NaN or infinite value (row 1", None),
    # not an NPZ archive under an .npz name
    ("npy-2d-as-npz", "f.npz", _npy(np.ones((3, 3))), "single .npy array", None),
    ("npy-1d-as-npz", "f.npz", _npy(np.arange(5.0)), "single .npy array", None),
    ("npy-int-as-npz", "f.npz", _npy(np.arange(6).reshape(2, 3)), "single .npy array", None),
    ("text-as-npz", "f.npz", _bytes("1,2,1\n3,4,-1\n"), "not an NPZ (zip) archive", None),
    ("binary-as-npz", "f.npz", _bytes(bytes(range(256))), "not an NPZ (zip) archive", None),
    ("truncated-zip", "f.npz", _truncated_zip, "not a readable NPZ archive", None),
    ("zip-without-arrays", "f.npz", _zip_without_npy, "needs arrays X and y", None),
    # an empty file in every format (and the formats' own "nothing in it")
    ("empty-npz", "f.npz", _bytes(b""), "the file is empty", None),
    ("empty-csv", "f.csv", _bytes(b""), "the file is empty", None),
    ("empty-svm", "f.svm", _bytes(b""), "the file is empty", None),
    ("empty-txt", "f.txt", _bytes(b""), "the file is empty", None),
    ("blank-csv", "f.csv", _bytes("\n  \n\n"), "no data rows", None),
    ("comment-only-svm", "f.svm", _bytes("# nothing here\n\n"), "no data rows", None),
    ("header-only-csv", "f.csv", _bytes("a,b,y\n"), "header but no data rows", None),
    # zero feature columns
    ("csv-label-only", "f.csv", _bytes("1\n-1\n1\n"), "no feature columns", None),
    ("csv-label-only-header", "f.csv", _bytes("y\n1\n-1\n"), "no feature columns", None),
    ("npz-X-n-by-0", "f.npz", _npz(X=np.ones((3, 0)), y=Y3), "no feature columns", None),
    ("svm-labels-only", "f.svm", _bytes("1\n-1\n1\n"), "every feature value is zero", None),
    ("csv-all-zero", "f.csv", _bytes("0,0,1\n0,0,-1\n"), "every feature value is zero", None),
    # a first CSV row with a typo is not a header: the line and the field are named
    ("csv-typo-last", "f.csv", _bytes("1,0.5,0.3x\n0.2,0.1,1\n0.3,0.2,-1\n"), "'0.3x' is not a number (field 3)", 1),
    ("csv-typo-first", "f.csv", _bytes("1e,0.5,1\n0.2,0.1,1\n0.3,0.2,-1\n"), "'1e' is not a number (field 1)", 1),
    ("csv-typo-empty", "f.csv", _bytes("0.5,,1\n0.2,0.1,1\n0.3,0.2,-1\n"), "'' is not a number (field 2)", 1),
    ("csv-typo-word", "f.csv", _bytes("abc,0.1,1\n0.2,0.1,1\n0.3,0.2,-1\n"), "'abc' is not a number (field 1)", 1),
    ("csv-typo-after-header", "f.csv", _bytes("a,b,y\n1,2,1\n3,4o,-1\n"), "'4o' is not a number (column 'b')", 3),
    # svmlight indices whose d-sized vectors cannot exist (d is the largest index)
    ("svm-index-3e9", "f.svm", _bytes("1 1:1\n-1 3000000000:1\n"), "feature index 3000000000 is too large", 2),
    ("svm-index-1e11", "f.svm", _bytes("1 100000000000:1\n-1 1:1\n"), "feature index 100000000000 is too large", 1),
    ("svm-index-2^31-1", "f.svm", _bytes("1 1:1\n\n-1 2147483647:1\n"), "feature index 2147483647 makes d = 2147483647", 3),
    ("svm-index-1e9", "f.svm", _bytes("# c\n1 2:1\n-1 1000000000:0.5\n"), "feature index 1000000000 makes d", 3),
    # svmlight lines that break the format
    ("svm-unsorted", "f.svm", _bytes("1 1:1\n-1 3:1 2:1\n"), "sorted and unique", 2),
    ("svm-duplicate", "f.svm", _bytes("1 1:1 1:2\n-1 2:1\n"), "sorted and unique", 1),
    # paths that are not a regular file: said what they are, never opened (a FIFO's open would block)
    ("path-directory", "f.csv", lambda path: path.mkdir(), "is a directory, not a file", None),
    ("path-fifo", "f.csv", _fifo, "is a FIFO (named pipe), not a regular file: boundlab reads a file more than once", None),
    ("path-fifo-npz", "f.npz", _fifo, "is a FIFO (named pipe)", None),
    ("path-link-to-fifo", "f.svm", _link_to_fifo, "is a FIFO (named pipe)", None),
    ("path-dev-zero", "/dev/zero", _nothing, "is a character device, not a regular file", None),
    ("path-dev-null", "/dev/null", _nothing, "is a character device, not a regular file", None),
    ("path-socket", "s.svm", _socket, "is a socket, not a regular file", None),
    ("path-dangling-link", "f.csv", _dangling, "is a symbolic link to", None),
    ("path-missing", "f.csv", _nothing, "no such file", None),
    ("path-under-a-file", "f.csv/x.csv", _under_a_file,
     "no such file: a part of the path before the file's name is a file", None),
    # CSV: quotes and the csv module's limits (once tracebacks), comments
    ("csv-quote-to-the-end", "f.csv", _bytes('1,"2,1\n-1,-2,-1\n'), 'a quote (") opens a field that runs on to line 2', 1),
    ("csv-quote-in-the-middle", "f.csv", _bytes('1,2,1\n-1,"-2,-1\n1,3",1\n-1,-1,-1\n'),
     "runs on to line 3: an unbalanced quote?", 2),
    ("csv-quote-to-the-end-ragged", "f.csv", _bytes('1,2,1\n-1,"-2,-1\n1,3,1\n'), "an unbalanced quote?", 2),
    ("csv-quote-over-the-field-limit", "f.csv", _bytes('1,2,1\n-1,"2,1\n' + "-1,-2,-1\n" * 20000),
     "runs on to the end of the file", 2),
    ("csv-field-over-the-limit", "f.csv", _bytes('1,"' + "7" * 200000 + '",1\n-1,2,-1\n'),
     "a field is longer than 131072 characters", 1),
    ("csv-comment-first", "f.csv", _bytes("# comment\n1,2,1\n-1,-2,-1\n"),
     "comment lines are not supported in CSV; remove them", 1),
    ("csv-comment-middle", "f.csv", _bytes("1,2,1\n# note\n-1,-2,-1\n"), "comment lines are not supported", 2),
    ("csv-comment-with-commas", "f.csv", _bytes("1,2,1\n# a,b,c\n-1,-2,-1\n"), "comment lines are not supported", 2),
    ("csv-comment-numeric-first", "f.csv", _bytes("# 1,2,1\n1,2,1\n-1,-2,-1\n"), "comment lines are not supported", 1),
    ("csv-comment-trailing", "f.csv", _bytes("1,2,1 # x\n-1,-2,-1\n"), "comments (#) are not supported in CSV", 1),
    ("csv-semicolons", "f.csv", _bytes("a;b;y\n1;2;1\n-1;-2;-1\n"), "fields are separated by commas, and this one holds ';'", 2),
    ("csv-tabs", "f.csv", _bytes("1\t2\t1\n-1\t-2\t-1\n"), "this one holds '\\t'", 2),
    # CSV and svmlight: encodings other than UTF-8, binary files
    ("csv-utf16", "f.csv", _text("1,2,1\n-1,-2,-1\n", "utf-16"),
     "is UTF-16 encoded (it starts with a UTF-16 byte-order mark); save it as UTF-8", None),
    ("csv-utf16-be", "f.csv", _text("\ufeffa,b,y\n1,2,1\n", "utf-16-be"), "is UTF-16 encoded (it starts", None),
    ("csv-utf16-no-bom", "f.csv", _text("1,2,1\n-1,-2,-1\n", "utf-16-le"),
     "is UTF-16 encoded (a NUL byte beside each character)", None),
    ("csv-utf32", "f.csv", _text("1,2,1\n-1,-2,-1\n", "utf-32"),
     "is UTF-32 encoded (it starts with a UTF-32 byte-order mark)", None),
    ("csv-utf32-no-bom", "f.csv", _text("1,2,1\n-1,-2,-1\n", "utf-32-be"), "is UTF-32 encoded (a NUL byte", None),
    ("csv-latin1-header", "f.csv", _text("café,b,y\n1,2,1\n-1,-2,-1\n", "latin-1"),
     "byte 0xe9 is not UTF-8: the file is in another encoding", 1),
    ("csv-latin1-late", "f.csv", _text("1,2,1\n" * 3000 + "-1,2é,-1\n", "latin-1"), "byte 0xe9 is not UTF-8", 3001),
    ("csv-cp1252-quotes", "f.csv", _text("1,2,1\n-1,“2”,-1\n", "cp1252"), "byte 0x93 is not UTF-8", 2),
    ("csv-nul", "f.csv", _bytes("1,2,1\n-1,\x00-2,-1\n"), "has NUL bytes: it is a binary file, not text", 2),
    ("csv-nul-late", "f.csv", _bytes("1,2,1\n" * 1000 + "-1,\x00-2,-1\n"), "it holds a NUL byte, so the file is binary", 1001),
    ("csv-binary", "f.csv", _bytes(bytes(range(256)) * 4), "has NUL bytes: it is a binary file", 1),
    ("csv-gzip", "f.csv", _bytes(gzip.compress(b"1,2,1\n-1,-2,-1\n")), "is gzip-compressed, not text", None),
    ("csv-npz", "f.csv", _npz_bytes, "is a zip archive, not text: an NPZ archive is read with dataset.format=npz", None),
    ("svm-utf16", "f.svm", _text("1 1:1\n-1 2:1\n", "utf-16"), "is UTF-16 encoded", None),
    ("svm-utf32-no-bom", "f.svm", _text("1 1:1\n-1 2:1\n", "utf-32-le"), "is UTF-32 encoded", None),
    ("svm-binary", "f.svm", _bytes(b"\x7fELF\x02\x01\x01\x00" + bytes(range(256))), "has NUL bytes: it is a binary file", 1),
    ("svm-nul-late", "f.svm", _bytes("1 1:1\n" * 1000 + "-1 2:\x001\n"), "a NUL byte: the file is binary", 1001),
    ("svm-latin1", "f.svm", _text("1 1:1\n-1 2:1é\n", "latin-1"), "byte 0xe9 is not UTF-8", 2),
    ("svm-random-bytes", "f.svm", _bytes(b"1 1:1\n" + b"\x81\xfe" * 50 + b"\n"), "byte 0x81 is not UTF-8", 2),
    ("svm-gzip-unnamed", "f.svm", _bytes(gzip.compress(b"1 1:1\n-1 2:1\n")), "is gzip-compressed", None),
    ("svm-gz-not-gzip", "f.svm.gz", _bytes("1 1:1\n-1 2:1\n"), "cannot be read (Not a gzipped file", None),
    ("svm-gz-corrupt", "f.svm.gz", _bytes(gzip.compress(b"1 1:1\n-1 2:1\n" * 50)[:15] + b"\xff" * 5 + b"junk"),
     "a name ending .gz or .bz2 is decompressed", None),
    # svmlight lines scikit-learn refuses: the token, in words, and the form of a line
    ("svm-qid-after-features", "f.svm", _bytes("1 1:1\n-1 2:1 qid:3\n"), "'qid' is not a feature index", 2),
    ("svm-qid-before-label", "f.svm", _bytes("qid:1 1:1\n-1 2:1\n"),
     "'qid:1' is not a number; a line is LABEL [qid:N] INDEX:VALUE", 1),
    ("svm-negative-index", "f.svm", _bytes("1 1:1\n-1 -2:1\n"), "Invalid index -2", 2),
    ("svm-word-label", "f.svm", _bytes("1 1:1\n\nspam 2:1\n"), "'spam' is not a number", 3),
    ("svm-word-value", "f.svm", _bytes("1 1:abc\n-1 2:1\n"), "'abc' is not a number", 1),
    ("svm-no-colon", "f.svm", _bytes("1 1:1\n-1 2\n"), "a feature is not INDEX:VALUE", 2),
    ("svm-two-colons", "f.svm", _bytes("1 1:1:1\n-1 2:1\n"), "'1:1' is not a number", 1),
    ("svm-float-index", "f.svm", _bytes("1 1.5:1\n-1 2:1\n"), "'1.5' is not a feature index (an integer >= 0)", 1),
    ("svm-empty-value", "f.svm", _bytes("1 1:\n-1 2:1\n"), "'' is not a number", 1),
    ("svm-space-after-colon", "f.svm", _bytes("1 1: 1\n-1 2:1\n"), "'' is not a number", 1),
    ("svm-csv", "f.svm", _bytes("1,2,1\n-1,-2,-1\n"), "'1,2,1' is not a number: a CSV file? name it .csv", 1),
    ("svm-long-token", "f.svm", _bytes("1 1:" + "9x" * 5000 + "\n"),
     "'9x9x9x9x9x9x9x9x9x9x9x9x9x9x9x9x9x9x9x9x...' is not a number", 1),
    # NPZ: archives zipfile cannot read
    ("npz-encrypted", "f.npz", _encrypted_zip, "is an encrypted (password-protected) zip archive", None),
    ("npz-encrypted-flag", "f.npz", _patched_zip(flags=0x1), "is an encrypted (password-protected) zip archive", None),
    ("npz-method-deflate64", "f.npz", _patched_zip(method=9), "array X is compressed with zip method 9 (deflate64)", None),
    ("npz-method-zstd", "f.npz", _patched_zip(method=93), "zip method 93 (Zstandard), which Python's zipfile cannot read", None),
    ("npz-method-unknown", "f.npz", _patched_zip(method=77), "zip method 77 (unknown)", None),
    ("npz-truncated-half", "f.npz", _cut_npz(0.5), "not a readable NPZ archive: it is truncated or damaged", None),
    ("npz-truncated-last-byte", "f.npz", _cut_npz(0.999), "it is truncated or damaged", None),
    ("npz-corrupt-deflate", "f.npz", _corrupt_deflate, "it is truncated or damaged", None),
    ("npz-bad-crc", "f.npz", _bad_crc, "it is truncated or damaged (Bad CRC-32", None),
    ("npz-text-member", "f.npz", _zip_with_text_member, "array X is not a readable .npy array", None),
    ("npz-notes-not-y", "f.npz", _zip_with_notes, "it has X (and notes.txt, not .npy arrays)", None),
]


# the zip command is a process: the case that writes with it is slow (docs/testing.md); its flag-bit twin stays fast
BAD_FILE_CASES = [pytest.param(b, id=b[0], marks=[pytest.mark.slow] if b[2] is _encrypted_zip else []) for b in BAD_FILES]


@pytest.fixture
def bad_file(tmp_path: Path, request: pytest.FixtureRequest) -> tuple[Path, str, int | None]:
    _, name, write, message, line = request.param
    path = tmp_path / name
    write(path)
    return path, message, line


def _expected(path: Path, message: str, line: int | None) -> tuple[str, str]:
    where = f"dataset.path='{path}'" + (f", line {line}" if line is not None else ":")
    return where, message


@pytest.mark.parametrize("bad_file", BAD_FILE_CASES, indirect=True)
def test_a_bad_binary_file_stops_the_command_with_one_line(bad_file, one_line_error) -> None:  # noqa: ANN001
    path, message, line = bad_file
    err = one_line_error(["dataset=file", f"dataset.path={path}"])
    where, words = _expected(path, message, line)
    assert where in err and words in err, err
    assert "Traceback" not in err


@pytest.mark.parametrize("bad_file", BAD_FILE_CASES, indirect=True)
def test_a_bad_multiclass_file_raises_a_data_error(bad_file) -> None:  # noqa: ANN001
    path, message, line = bad_file
    with pytest.raises(DataError) as error:
        MulticlassFile(path=str(path), k=3).check()
    where, words = _expected(path, message, line)
    text = str(error.value)
    assert "\n" not in text and where in text and words in text, text


def test_the_multiclass_command_names_the_file(tmp_path: Path, one_line_error) -> None:  # noqa: ANN001
    path = tmp_path / "wide.svm"
    path.write_text("0 1:1\n1 2:1\n2 2147483647:1\n")
    err = one_line_error(["algorithm=multiclass_sgd", "dataset=multiclass_file", f"dataset.path={path}", "k=3"])
    assert f"dataset.path='{path}', line 3: feature index 2147483647" in err


def test_the_bad_files_are_many_and_of_every_kind() -> None:
    kinds = {b[0].split("-")[0] for b in BAD_FILES}
    assert len(BAD_FILES) >= 110 and {"npz", "npy", "empty", "csv", "svm", "path"} <= kinds


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(row=st.lists(st.floats(-1e6, 1e6, allow_nan=False), min_size=2, max_size=6), at=st.integers(0, 5),
       junk=st.sampled_from(["x", "e", "..", "1", ",", "-"]), data=st.data())
def test_a_typo_in_any_field_of_the_first_row_is_named_not_taken_for_a_header(row, at, junk, data, tmp_path_factory) -> None:  # noqa: ANN001
    at = at % len(row)
    fields = [repr(v) for v in row]
    fields[at] = fields[at] + junk if junk not in ("1", ",") else fields[at][:-1] + "q"
    path = tmp_path_factory.mktemp("typo") / "t.csv"
    body = "\n".join(",".join(repr(float(v)) for v in r)
                     for r in ([0.5] * (len(row) - 1) + [1.0], [0.2] * (len(row) - 1) + [-1.0]))
    path.write_text(",".join(fields) + "\n" + body + "\n")
    with pytest.raises(DataError) as error:
        File(path=str(path)).check()
    assert f"'{path}', line 1: '{fields[at]}' is not a number (field {at + 1})" in str(error.value)


def test_a_clear_header_is_still_a_header(tmp_path: Path) -> None:
    path = tmp_path / "h.csv"
    path.write_text("first,second,label\n0.5,1,1\n-0.5,0.2,-1\n")
    X, y = File(path=str(path), label_column="label").read()
    assert X.shape == (2, 2) and list(y) == [1.0, -1.0]


# (id, file name, writer, File keywords, the labels read): files near the bad ones above that must still read
GOOD_FILES = [
    ("csv-utf8-bom-header", "f.csv", _bytes(b"\xef\xbb\xbfa,b,y\n1,2,1\n-1,-2,-1\n"), {"label_column": "a"}, [1.0, -1.0]),
    ("csv-utf8-bom-numbers", "f.csv", _bytes(b"\xef\xbb\xbf1,2,1\n-1,-2,-1\n"), {}, [1.0, -1.0]),
    ("csv-utf8-text-header", "f.csv", _text("température,b,y\n1,2,1\n-1,-2,-1\n", "utf-8"), {"label_column": "y"}, [1.0, -1.0]),
    ("csv-crlf", "f.csv", _bytes("1,2,1\r\n-1,-2,-1\r\n"), {}, [1.0, -1.0]),
    ("csv-quoted-numbers", "f.csv", _bytes('"1","2",1\n-1,"-2",-1\n'), {}, [1.0, -1.0]),
    ("csv-hash-header", "f.csv", _bytes("# a,b,y\n1,2,1\n-1,-2,-1\n"), {}, [1.0, -1.0]),  # np.savetxt's header, as before
    ("csv-hash-column", "f.csv", _bytes("#,b,y\n1,2,1\n-1,-2,-1\n"), {}, [1.0, -1.0]),
    ("svm-utf8-bom", "f.svm", _bytes(b"\xef\xbb\xbf1 1:1\n-1 2:1\n"), {}, [1.0, -1.0]),
    ("svm-blank-lines-comments-qid", "f.svm", _bytes("\n# c\n1 qid:1 1:1 # x\n\n-1 qid:2 2:1\n\n"), {}, [1.0, -1.0]),
    ("svm-latin1-comment", "f.svm", _bytes(b"1 1:1 # caf\xe9\n-1 2:1\n"), {}, [1.0, -1.0]),
    ("svm-gz", "f.svm.gz", _bytes(gzip.compress(b"1 1:1\n-1 2:1\n")), {}, [1.0, -1.0]),
    ("npz-compressed", "f.npz", lambda path: np.savez_compressed(path, X=np.eye(2), y=np.array([1.0, -1.0])), {}, [1.0, -1.0]),
]


@pytest.mark.parametrize(("name", "write", "keywords", "labels"), [g[1:] for g in GOOD_FILES], ids=[g[0] for g in GOOD_FILES])
def test_files_beside_the_bad_ones_still_read(name: str, write: Callable[[Path], None], keywords: dict, labels: list[float],
                                              tmp_path: Path) -> None:
    path = tmp_path / name
    write(path)
    X, y = File(path=str(path), **keywords).read()
    assert list(y) == labels and X.shape[0] == len(labels)
    File(path=str(path), **keywords).check()


def _declares_too_much(path: Path) -> None:
    """An NPZ whose X.npy holds a 3 x 2 array then 32 MiB of zeros: small on disk, large as declared."""
    member = io.BytesIO()
    np.save(member, np.arange(6.0).reshape(3, 2))
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("X.npy", member.getvalue() + bytes(32 * 2**20))
        member = io.BytesIO()
        np.save(member, Y3)
        archive.writestr("y.npy", member.getvalue())


def test_an_npz_member_declaring_more_than_the_memory_is_refused_before_inflating(tmp_path: Path,
                                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "bomb.npz"
    _declares_too_much(path)
    assert path.stat().st_size < 2**20
    with monkeypatch.context() as patch:
        patch.setattr(params, "available_memory", lambda: 8.0 * 2**20)
        with pytest.raises(DataError, match=r"array X declares 33554\d{3} uncompressed bytes: they need ~0\.0313 GiB, more "
                                            r"than the 0\.00781 GiB of memory available"):
            File(path=str(path)).read()
    X, _ = File(path=str(path)).read()  # with the memory: only the array's own bytes are read
    assert X.shape == (3, 2)


def _unreadable(path: Path) -> None:
    path.write_text("1,2,1\n-1,-2,-1\n")
    path.chmod(0)


@pytest.mark.skipif(os.name != "posix" or os.geteuid() == 0, reason="root reads a file whatever its permissions")
def test_a_file_without_read_permission_is_named(tmp_path: Path) -> None:
    path = tmp_path / "f.csv"
    _unreadable(path)
    with pytest.raises(DataError, match=r"the file is not readable \(permission denied\): give your user read permission"):
        File(path=str(path)).read()


def test_a_file_the_system_refuses_to_open_is_named(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The same refusal under root too: the open itself denied (as without read permission, or by an ACL)."""
    path = tmp_path / "f.csv"
    path.write_text("1,2,1\n-1,-2,-1\n")
    real_open = os.open

    def denied(name: object, *args: object, **kwargs: object) -> int:
        if str(name) == str(path):
            raise PermissionError(13, "Permission denied", str(name))
        return real_open(name, *args, **kwargs)

    monkeypatch.setattr(os, "open", denied)
    for source in (File(path=str(path)), MulticlassFile(path=str(path), k=2)):
        with pytest.raises(DataError, match=r"^dataset.path='.*f.csv': the file is not readable \(permission denied\)"):
            source.check()


def test_any_other_csv_error_is_one_line_with_its_line(tmp_path: Path) -> None:
    from pipeline.data.real import _csv_error

    path = tmp_path / "f.csv"
    path.write_text("1,2,1\n-1,-2,-1\n")
    error = _csv_error(str(path), 2, csv.Error("some new complaint\nof two lines"), str(path))
    assert str(error) == f"dataset.path='{path}', line 2: is not valid CSV (some new complaint)"


@pytest.mark.parametrize("write", [_fifo, _text("0,1,0\n1,0,1\n", "utf-16"), _bytes('0,1,0\n1,"0,1\n')],
                         ids=["fifo", "utf16", "quote"])
def test_the_multiclass_command_says_the_same(write: Callable[[Path], None], tmp_path: Path, one_line_error) -> None:  # noqa: ANN001
    path = tmp_path / "f.csv"
    write(path)
    binary = one_line_error(["dataset=file", f"dataset.path={path}"])
    multiclass = one_line_error(["algorithm=multiclass_sgd", "dataset=multiclass_file", f"dataset.path={path}", "k=2"])
    assert multiclass == binary and "Traceback" not in multiclass


@pytest.mark.slow
def test_the_installed_command_never_blocks_on_a_fifo(tmp_path: Path) -> None:
    """The one member a bug would hang rather than fail: the installed command, in its own process, with a time limit."""
    path = tmp_path / "data.csv"
    os.mkfifo(path)
    exe = Path(sys.executable).parent / "boundlab"
    env = dict(os.environ, BOUNDLAB_CACHE=str(tmp_path / "cache"), MLFLOW_TRACKING_URI=f"sqlite:///{tmp_path / 'm.db'}")
    done = subprocess.run([str(exe) if exe.exists() else "boundlab", "dataset=file", f"dataset.path={path}"], cwd=tmp_path,
                          env=env, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert done.stderr == (f"boundlab: error: dataset.path='{path}': is a FIFO (named pipe), not a regular file: boundlab "
                           "reads a file more than once (to check it, to fingerprint it for resuming, to certify and learn "
                           "from it) and a pipe's data can be read only once; save the data to a file and give its path\n")


# ---------------------------------------------------------------- allocations: nothing beyond what the data need


@pytest.mark.parametrize("d", [10**6, 5 * 10**6])
def test_a_multiclass_file_is_not_densified_to_be_checked(d: int, tmp_path: Path) -> None:
    path = tmp_path / "wide.svm"
    path.write_text(f"0 1:1\n1 2:1\n2 {d}:1\n0 3:1\n")
    File(path=str(path)).read()  # parse once (cached): what is measured is the check alone
    peak = _peak(lambda: MulticlassFile(path=str(path), k=3).check())
    assert peak < 4 * d * 8 / 20, peak  # the dense 4 x d matrix would be 4 d 8 bytes


@pytest.mark.parametrize("available", [1 * 2**20, 64 * 2**20])
def test_a_multiclass_file_too_wide_to_densify_is_refused_before_densifying(available: int, tmp_path: Path,
                                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "wide.svm"
    path.write_text("0 1:1\n1 2:1\n2 1000000:1\n")
    File(path=str(path)).read()  # cached with the machine's memory
    monkeypatch.setattr(params, "available_memory", lambda: float(available))
    with pytest.raises(DataError, match=r"has 3 rows and 1000000 features, held dense .* GiB"):
        MulticlassFile(path=str(path), k=3).check()
    with pytest.raises(DataError):
        MulticlassFile(path=str(path), k=3).generate(np.random.default_rng(0))


@pytest.mark.parametrize("line", [1, 2, 4])
def test_a_large_svmlight_index_beyond_the_memory_names_its_line(line: int, tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(params, "available_memory", lambda: 2.0**20)  # 1 MiB: 10^5 features need ~24 MiB
    rows = ["1 1:1", "-1 2:1", "1 3:1", "-1 1:2"]
    rows[line - 1] = rows[line - 1].split()[0] + " 100000:1"
    path = tmp_path / "f.svm"
    path.write_text("\n".join(rows) + "\n")
    with pytest.raises(DataError) as error:
        File(path=str(path)).check()
    assert f"line {line}: feature index 100000 makes d = 100000 features" in str(error.value)


def test_a_file_too_large_to_certify_is_refused_naming_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "f.npz"
    np.savez(path, X=np.random.default_rng(0).standard_normal((400, 50)), y=np.tile([1.0, -1.0], 200))
    File(path=str(path)).check()
    monkeypatch.setattr(params, "available_memory", lambda: 2.0**20)
    with pytest.raises(DataError, match=r"has 400 rows and 50 features .* GiB, more than"):
        File(path=str(path)).check()


# ---------------------------------------------------------------- values and labels: refused naming the file, or run soundly


def _svmlight(path: Path, X: np.ndarray, y: np.ndarray) -> Path:
    lines = [" ".join([f"{label:g}", *(f"{j + 1}:{float(v)!r}" for j, v in enumerate(row) if v != 0)])
             for row, label in zip(X, y)]
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.mark.parametrize("tiny", [5e-324, 1e-315, 2.2e-308, 1e-200])
def test_subnormal_entries_beside_normal_ones_run_soundly(tiny: float, tmp_path: Path) -> None:
    X, y = _separable()
    X[::3, 2] = tiny
    path = _svmlight(tmp_path / "tiny.svm", X, y)
    _assert_sound(["dataset=file", f"dataset.path={path}"], set())


@pytest.mark.parametrize("scale", [1e-310, 1e-200, 1e-120, 1e120, 1e250])
def test_data_outside_the_scale_range_are_refused_naming_the_file(scale: float, tmp_path: Path) -> None:
    X, y = _separable()
    path = _svmlight(tmp_path / "scaled.svm", X * scale, y)
    kind, out = _outcome(["dataset=file", f"dataset.path={path}"])
    assert kind == "error" and out.startswith("dataset.path=") and "\n" not in out, out


@pytest.mark.parametrize("label", [1.0, -1.0])
def test_a_file_with_one_of_the_labels_plus_minus_one_runs_as_it_is(label: float, tmp_path: Path) -> None:
    X = 2.0 * np.eye(12)  # the seeds' tight stream: x_t = rho e_t, every label the same
    path = _svmlight(tmp_path / "one_class.svm", X, np.full(12, label))
    with pytest.warns(UserWarning, match="one-class sample is used as it is"):
        table = run(build(_compose(["dataset=file", f"dataset.path={path}"]))).table
    assert (table[table["guarantee"] == "D"]["holds"] != False).all()  # noqa: E712
    assert table["separable"].all()


@pytest.mark.parametrize("labels", [[0.0], [2.0], [0.0, 1.0, 2.0]])
def test_other_label_sets_keep_the_two_class_rule(labels: list[float], tmp_path: Path) -> None:
    X, _ = _separable(m=12)
    path = _svmlight(tmp_path / "labels.svm", X, np.resize(labels, 12))
    kind, out = _outcome(["dataset=file", f"dataset.path={path}"])
    assert kind == "error" and out.startswith("dataset.path=") and "class" in out, out
