"""Reliability, round two, classes 9 and 10: user files that used to give tracebacks or huge allocations, and
sizes checked against the available memory before anything is allocated.

Every bad file stops the command's pre-flight with one line naming the file (and the line where it applies),
exit code 2; every size too large for the memory is refused with the estimate, before any allocation.
"""

from __future__ import annotations

import tracemalloc
import warnings
import zipfile
from pathlib import Path
from typing import Callable

import numpy as np
import pytest
from hydra import compose, initialize_config_dir
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import pipeline.params as params
from pipeline.config import build
from pipeline.data import File, MarginBinary
from pipeline.data.certify import content_hash
from pipeline.data.multiclass_file import MulticlassFile
from pipeline.data.stream import Stream
from pipeline.params import DataError, ParamError, UserError
from pipeline.paths import CONF_DIR
from pipeline.schemas import register

GIB = 2**30


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
]


@pytest.fixture
def bad_file(tmp_path: Path, request: pytest.FixtureRequest) -> tuple[Path, str, int | None]:
    _, name, write, message, line = request.param
    path = tmp_path / name
    write(path)
    return path, message, line


def _expected(path: Path, message: str, line: int | None) -> tuple[str, str]:
    where = f"dataset.path='{path}'" + (f", line {line}" if line is not None else ":")
    return where, message


@pytest.mark.parametrize("bad_file", BAD_FILES, ids=[b[0] for b in BAD_FILES], indirect=True)
def test_a_bad_binary_file_stops_the_command_with_one_line(bad_file, one_line_error) -> None:  # noqa: ANN001
    path, message, line = bad_file
    err = one_line_error(["dataset=file", f"dataset.path={path}"])
    where, words = _expected(path, message, line)
    assert where in err and words in err, err
    assert "Traceback" not in err


@pytest.mark.parametrize("bad_file", BAD_FILES, ids=[b[0] for b in BAD_FILES], indirect=True)
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
    assert len(BAD_FILES) >= 45 and {"npz", "npy", "empty", "csv", "svm"} <= kinds


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(row=st.lists(st.floats(-1e6, 1e6, allow_nan=False), min_size=2, max_size=6), at=st.integers(0, 5),
       junk=st.sampled_from(["x", "e", "..", "1", ",", "-"]), data=st.data())
def test_a_typo_in_any_field_of_the_first_row_is_named_not_taken_for_a_header(row, at, junk, data, tmp_path_factory) -> None:  # noqa: ANN001
    at = at % len(row)
    fields = [repr(v) for v in row]
    fields[at] = fields[at] + junk if junk not in ("1", ",") else fields[at][:-1] + "q"
    path = tmp_path_factory.mktemp("typo") / "t.csv"
    body = "\n".join(",".join(repr(float(v)) for v in r) for r in ([0.5] * (len(row) - 1) + [1.0], [0.2] * (len(row) - 1) + [-1.0]))
    path.write_text(",".join(fields) + "\n" + body + "\n")
    with pytest.raises(DataError) as error:
        File(path=str(path)).check()
    assert f"'{path}', line 1: '{fields[at]}' is not a number (field {at + 1})" in str(error.value)


def test_a_clear_header_is_still_a_header(tmp_path: Path) -> None:
    path = tmp_path / "h.csv"
    path.write_text("first,second,label\n0.5,1,1\n-0.5,0.2,-1\n")
    X, y = File(path=str(path), label_column="label").read()
    assert X.shape == (2, 2) and list(y) == [1.0, -1.0]


# --- allocations: nothing beyond what the data need -----------------------------------------------------


def _peak(fn: Callable[[], object]) -> int:
    tracemalloc.start()
    try:
        fn()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


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


def test_the_margin_generator_never_builds_d_by_d_when_d_exceeds_n() -> None:
    d, n = 20_000, 10
    peak = _peak(lambda: MarginBinary(gamma=0.1, rho=1.0, n=n, d=d).generate(np.random.default_rng(0)))
    assert peak < d * d * 8 / 100, peak  # d x d float64 is 3.2 GB; the sample is 1.6 MB


@pytest.mark.parametrize(("n", "d", "flip"), [(10, 300, 0.0), (40, 41, 0.0), (10, 3000, 0.0), (30, 200, 0.2)])
def test_the_wide_margin_generator_keeps_its_certified_statistics_and_determinism(n: int, d: int, flip: float) -> None:
    make = MarginBinary(gamma=0.1, rho=1.0, n=n, d=d, flip=flip)
    a, b = make.generate(np.random.default_rng(7)), make.generate(np.random.default_rng(7))
    assert np.array_equal(a.X, b.X) and np.array_equal(a.y, b.y)  # bit for bit for a seed
    w = a.directions["w*"]
    assert abs(np.linalg.norm(w) - 1.0) < 1e-12 and a.X.shape == (n, d)
    assert np.linalg.norm(a.X, axis=1).max() <= 1.0 + 1e-12
    if flip == 0:
        assert abs(a.stats.gamma_lo - 0.1) < 1e-9 and abs(a.stats.gamma_hi - 0.1) < 1e-9 and abs(a.stats.R - 1) < 1e-9
        assert (a.y * (a.X @ w)).min() >= 0.1 - 1e-12


def test_the_margin_generator_with_d_at_most_n_is_unchanged() -> None:
    import hashlib

    ds = MarginBinary(gamma=0.1, rho=1.0, n=500, d=20).generate(np.random.default_rng(0))
    # The construction's output before this change: its exact bits on the processor it was recorded on (the last
    # bits of LAPACK's orthonormal basis differ between AVX2 and AVX-512), or the same values to 10 digits.
    rounded = np.array([float(f"{v:.10g}") for v in np.asarray(ds.X).ravel()])
    digits = hashlib.sha256(rounded.tobytes() + np.asarray(ds.y).tobytes()).hexdigest()[:16]
    assert content_hash(ds.X, ds.y) == "5713886d19772ee9" or digits == "7fdae2744e5f1d52"


def test_the_stream_never_builds_d_by_d_when_d_exceeds_a_chunk() -> None:
    d = 20_000

    def read() -> None:
        data = Stream(gamma=0.1, rho=1.0, n=12, d=d, chunk=6).generate(np.random.default_rng(0))
        X, y = data.materialise()
        assert abs(data.stats.gamma_lo - 0.1) < 1e-9 and abs(data.stats.R - 1.0) < 1e-9
        assert (y * (X @ data.directions["w*"])).min() >= 0.1 - 1e-12

    Stream(gamma=0.1, rho=1.0, n=12, d=50, chunk=6).generate(np.random.default_rng(0)).materialise()  # compile first
    assert _peak(read) < d * d * 8 / 100


# --- class 10: sizes checked before allocating ------------------------------------------------------------


def _compose(overrides: list[str]):  # noqa: ANN202
    register()
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base=None):
        return compose("config", overrides=overrides)


def _build(overrides: list[str]) -> object:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return build(_compose(overrides))


# (overrides too large for 1 GiB, the key the error must name)
TOO_LARGE = [
    (["n=100000", "d=2000"], "n"),
    (["n=20", "d=100000000"], "d"),
    (["n=200000", "d=200", "dataset.flip=0.1"], "n"),
    (["dataset=shells", "n=50000", "d=500"], "n"),
    (["dataset=sparse_margin", "n=10000000"], "n"),
    (["dataset=sparse_margin", "n=100", "dataset.d=1000000000", "dataset.nnz=5"], "dataset.d"),
    (["dataset=tight", "n=5000"], "n"),
    (["dataset=stream", "n=100000000", "d=5000", "dataset.chunk=100000"], "dataset.chunk"),
    (["dataset=stream", "n=100", "d=50000000"], "d"),
    (["dataset=finite_class", "dataset.cls=conjunctions", "dataset.size=15", "n=1"], "dataset.size"),
    (["dataset=multiclass_margin", "algorithm=multiclass_sgd", "n=10000000", "d=20"], "n"),
    (["dataset=multiclass_margin", "algorithm=multiclass_sgd", "T=100000000", "d=20"], "T"),
    (["dataset=multiclass_bundled", "algorithm=multiclass_svm", "dataset.sample=100000000"], "dataset.sample"),
    (["algorithm=pegasos", "T=100000000"], "T"),
    (["algorithm=pegasos", "T=10000000", "algorithm.batch=100"], "T"),
    (["algorithm=kernel_pegasos", "T=100000000"], "T"),
    (["algorithm=multiclass_pegasos", "dataset=multiclass_margin", "T=100000000"], "T"),
    (["algorithm=perceptron", "algorithm.passes=1000000"], "algorithm.passes"),
    (["algorithm=halving", "algorithm.experts=100000", "d=10000", "n=100"], "algorithm.experts"),
]


@pytest.mark.parametrize(("overrides", "key"), TOO_LARGE, ids=[" ".join(o) for o, _ in TOO_LARGE])
def test_a_size_beyond_the_memory_is_refused_with_the_estimate(overrides: list[str], key: str,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(params, "available_memory", lambda: float(GIB))
    with pytest.raises(ParamError) as error:
        _build(overrides)
    text = str(error.value)
    assert text.startswith(f"{key}=") and "GiB, more than the 1 GiB of memory available" in text, text
    assert "\n" not in text


@pytest.mark.parametrize(("overrides", "key"), TOO_LARGE, ids=[" ".join(o) for o, _ in TOO_LARGE])
def test_the_same_sizes_fit_a_machine_with_enough_memory(overrides: list[str], key: str,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(params, "available_memory", lambda: 1e6 * GIB)  # the refusal above is the memory's
    _build(overrides)


@pytest.mark.parametrize("overrides", [[], ["dataset=shells"], ["algorithm=pegasos"], ["algorithm=kernel_pegasos", "n=300"],
                                       ["dataset=multiclass_margin", "algorithm=multiclass_sgd"],
                                       ["dataset=tight", "n=100"], ["dataset=sparse_margin", "algorithm=perceptron"]])
def test_ordinary_runs_are_accepted_on_a_small_machine(overrides: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(params, "available_memory", lambda: float(GIB))
    _build(overrides)


def test_the_command_refuses_a_size_in_one_line_before_any_work(one_line_error, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: ANN001
    monkeypatch.setattr(params, "available_memory", lambda: 2.0 * GIB)
    err = one_line_error(["n=1000000", "d=1000"])
    assert err.startswith("boundlab: error: n=1000000: must be smaller: the data need ~") and "lower n or d" in err


def test_a_file_too_large_to_certify_is_refused_naming_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "f.npz"
    np.savez(path, X=np.random.default_rng(0).standard_normal((400, 50)), y=np.tile([1.0, -1.0], 200))
    File(path=str(path)).check()
    monkeypatch.setattr(params, "available_memory", lambda: 2.0**20)
    with pytest.raises(DataError, match=r"has 400 rows and 50 features .* GiB, more than"):
        File(path=str(path)).check()


def test_the_available_memory_is_read_or_estimated(monkeypatch: pytest.MonkeyPatch) -> None:
    assert 0 < params.available_memory() < float("inf")

    def no_proc(*args: object, **kwargs: object) -> None:
        raise OSError("no /proc")

    monkeypatch.setattr(params, "open", no_proc, raising=False)  # the sysconf fallback
    assert 0 < params.available_memory() < float("inf")


def test_check_memory_names_the_parameter_and_the_estimate(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(params, "available_memory", lambda: 3.0 * GIB)
    params.check_memory("n", 10, 3.0 * GIB, "lower n")  # exactly what is available: accepted
    with pytest.raises(UserError, match=r"^n=11: must be smaller: the data need ~6 GiB, more than the 3 GiB of memory "
                                        r"available; lower n$"):
        params.check_memory("n", 11, 6.0 * GIB, "lower n")
