"""Real and sparse data: certification by solvers, caching, loaders, bad files, the sparse kernel."""

from __future__ import annotations

import importlib
import math
import os
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from helpers import migrated_store
from scipy import sparse

from pipeline import catalog
from pipeline.sweep.preflight import preflight
from pipeline.data import Bundled, File, MarginBinary, SparseMargin
from pipeline.data.certify import certify_sample
from pipeline.learners import Perceptron
from pipeline.learners.perceptron import TIES, perceptron_sparse_kernel
from pipeline.sweep.schemas import register

ROOT = Path(__file__).resolve().parents[1]
max_margin_module = importlib.import_module("pipeline.solvers.max_margin")


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize(("gamma", "rho", "d"), [(0.1, 1.0, 5), (1e-3, 1.0, 30), (0.3, 50.0, 3)])
def test_solver_certificate_brackets_the_known_margin(seed: int, gamma: float, rho: float, d: int, tmp_path: Path) -> None:
    """The generator pins gamma* = gamma exactly; the solver, knowing nothing of it, must bracket it."""
    ds = MarginBinary(gamma=gamma, rho=rho, n=300, d=d).generate(np.random.default_rng(seed))
    s = certify_sample(ds.X, ds.y, tmp_path)
    assert s.separable and s.gap <= 1e-6
    assert s.gamma_lo <= gamma * (1 + 1e-12) and gamma * (1 - 1e-12) <= s.gamma_hi
    assert s.R == ds.stats.R


@pytest.mark.parametrize("n", [2, 5, 40])
def test_solver_certificate_on_the_tight_construction(n: int, tmp_path: Path) -> None:
    X, y = 2.5 * np.eye(n), np.where(np.arange(n) % 2 == 0, 1.0, -1.0)
    s = certify_sample(X * y[:, None], y, tmp_path)  # y_t x_t = 2.5 e_t: gamma* = 2.5 / sqrt(n)
    assert s.gamma_lo <= 2.5 / math.sqrt(n) <= s.gamma_hi and s.gap <= 1e-6


def test_sparse_sample_is_certified_without_densifying_the_learner(tmp_path: Path) -> None:
    ds = SparseMargin(gamma=0.05, rho=1.0, n=400, d=5000, nnz=10).generate(np.random.default_rng(1))
    assert sparse.issparse(ds.X) and ds.X.nnz == 400 * 10 and ds.X.min() >= 0
    assert abs(ds.stats.gamma_lo - 0.05) <= 1e-9 and abs(ds.stats.R - 1.0) <= 1e-9 and ds.stats.gap <= 1e-9
    s = certify_sample(ds.X, ds.y, tmp_path)
    assert s.gamma_lo <= 0.05 * (1 + 1e-12) <= s.gamma_hi * (1 + 2e-12) and s.gap <= 1e-6


def test_non_separable_sets_are_detected(tmp_path: Path) -> None:
    xor = np.array([[1.0, 1.0], [-1.0, -1.0], [1.0, -1.0], [-1.0, 1.0]])
    s = certify_sample(xor, np.array([1.0, 1.0, -1.0, -1.0]), tmp_path)
    assert not s.separable and math.isnan(s.gamma_lo)
    iris = Bundled(source="iris", positive=1, negative=2).generate(np.random.default_rng(0))
    assert not iris.stats.separable
    p = Perceptron()
    from pipeline.bounds import NOVIKOFF

    trace = p.learn_stream(iris.X, iris.y)
    row = NOVIKOFF.evaluate(iris.stats.as_dict() | {"T": trace.size}, p.quantities(trace))
    assert row["applicable"] is False and "separable" in row["reason"]


def test_statistics_are_cached_by_content(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    X, y = np.array([[1.0, 0.2], [-0.5, -1.0], [0.3, 0.9]]), np.array([1.0, -1.0, 1.0])
    first = certify_sample(X, y, tmp_path)
    assert len(list((tmp_path / "stats").glob("*.json"))) == 1

    def no_solver(*args: object) -> None:
        raise AssertionError("recomputed")

    monkeypatch.setattr(max_margin_module, "_hard_margin", no_solver)
    monkeypatch.setattr(max_margin_module, "_separating_direction", no_solver)
    assert certify_sample(X.copy(), y.copy(), tmp_path) == first
    with pytest.raises(AssertionError, match="recomputed"):
        certify_sample(X * 2, y, tmp_path)  # other content, other key


def _labels_pm(t: np.ndarray) -> np.ndarray:
    return np.where(t == 0, 1.0, -1.0)


def test_loaders_round_trip_files_written_by_other_tools(tmp_path: Path) -> None:
    from sklearn.datasets import dump_svmlight_file, load_wine

    X, t = load_wine(return_X_y=True)
    dump_svmlight_file(X, t, str(tmp_path / "wine.svm"))
    pd.DataFrame(X, columns=[f"f{i}" for i in range(13)]).assign(label=t).to_csv(tmp_path / "wine.csv", index=False)
    np.savetxt(tmp_path / "plain.csv", np.column_stack([X, t]), delimiter=",")  # no header
    np.savez(tmp_path / "wine.npz", X=X, y=t)
    for name, extra in [("wine.svm", {}), ("wine.csv", {"label_column": "label"}), ("wine.csv", {}),
                        ("plain.csv", {}), ("wine.npz", {})]:
        read_X, labels = File(path=str(tmp_path / name), **extra).read()
        read_X = read_X.toarray() if sparse.issparse(read_X) else read_X
        np.testing.assert_allclose(read_X, X, rtol=1e-15 if name.endswith("npz") else 1e-12)
        assert np.array_equal(labels, t), name
    ds = File(path=str(tmp_path / "wine.svm"), positive=0).generate(np.random.default_rng(0))
    assert sparse.issparse(ds.X) and np.array_equal(ds.y, _labels_pm(t)) and ds.stats.separable


def _write(path: Path, content: str | bytes) -> Path:
    path.write_bytes(content if isinstance(content, bytes) else content.encode())
    return path


BAD_FILES = [
    ("missing.svm", None, [], "no such file", None),
    ("empty.svm", "", [], "the file is empty", None),
    ("ragged.csv", "a,b,y\n1,2,1\n3,4\n5,6,0\n", [], "ragged rows", 3),
    ("nan.csv", "a,b,y\n1,2,1\n3,nan,0\n", [], "NaN or infinite", 3),
    ("inf.svm", "1 1:2 2:3\n# comment\n-1 1:inf\n", [], "NaN or infinite", 3),
    ("word.csv", "1,2,1\n3,x,0\n", [], "'x' is not a number", 2),
    ("token.svm", "1 1:2\n-1 1:2 2:y\n", [], "not valid svmlight", 2),
    ("three.csv", "a,y\n1,0\n2,1\n3,2\n", [], "has 3 classes", None),
    ("one.svm", "2 1:1\n2 1:2\n", [], "has 1 class (2)", None),  # labels in {-1, +1} run as they are
    ("wide.svm", "1 1:2\n-1 7:1\n", ["dataset.d=3"], "input file contains 7 features", 2),
    ("narrow.csv", "1,2,1\n3,4,0\n", ["dataset.d=3"], "has 2 features, but dataset.d=3", None),
    ("pickled.npz", None, [], "without unpickling", None),
    ("arrays.npz", None, [], "needs arrays X and y", None),
    ("label.csv", "a,b\n1,2\n3,4\n", ["dataset.label_column=y"], "has no column 'y'", None),
]


@pytest.mark.parametrize(("name", "content", "extra", "message", "line"), BAD_FILES, ids=[b[0] for b in BAD_FILES])
def test_bad_files_stop_with_one_line_naming_the_file(name, content, extra, message, line, tmp_path, capsys) -> None:  # noqa: ANN001
    path = tmp_path / name
    if name == "pickled.npz":
        np.savez(path, X=np.array([{"x": 1}, None], dtype=object), y=np.ones(2))
    elif name == "arrays.npz":
        np.savez(path, features=np.ones((2, 2)))
    elif content is not None:
        _write(path, content)
    register()
    with pytest.raises(SystemExit) as exit_:
        preflight(["dataset=file", f"dataset.path={path}", *extra])
    err = capsys.readouterr().err
    assert exit_.value.code == 2 and err.count("\n") == 1, err
    assert f"dataset.path='{path}'" in err and message in err, err
    assert (f", line {line}:" in err) == (line is not None), err


@pytest.mark.e2e
def test_file_dataset_end_to_end(svm_file: Path, tmp_path: Path, boundlab_in_process) -> None:  # noqa: ANN001
    uri = migrated_store(tmp_path / "mlflow.db")
    proc = boundlab_in_process("algorithm=perceptron", "dataset=file", f"dataset.path={svm_file}", cwd=tmp_path,
                    env={**os.environ, "MLFLOW_TRACKING_URI": uri})
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "data file: m=150 d=4 R=11.1113 gamma* in [0.743137, 0.743137]" in proc.stdout
    assert "mistakes" in proc.stdout and "vs novikoff 223 (holds" in proc.stdout
    import mlflow

    client = mlflow.MlflowClient(tracking_uri=uri)
    (run,) = client.search_runs([client.get_experiment_by_name("boundlab").experiment_id])
    (table,) = list(tmp_path.glob("outputs/*/*/results.parquet"))
    assert run.data.tags["boundlab.data_hash"] == pd.read_parquet(table)["data_hash"].iloc[0]


@pytest.mark.parametrize("tie", sorted(TIES))
@pytest.mark.parametrize("seed", range(3))
def test_sparse_kernel_equals_dense_and_reference(tie: str, seed: int) -> None:
    rng = np.random.default_rng(seed)
    X = sparse.random(300, 50, density=0.1, random_state=seed, format="csr", data_rvs=lambda k: rng.integers(-2, 3, k))
    y = np.where(rng.random(300) < 0.5, 1.0, -1.0)
    dense, sparse_learner = Perceptron(tie=tie, passes=3), Perceptron(tie=tie, passes=3)
    t_dense = dense.learn_stream(X.toarray(), y)
    t_sparse = sparse_learner.learn_stream(X, y)
    assert np.array_equal(t_dense, t_sparse) and np.array_equal(dense.w_, sparse_learner.w_)
    w, trace = np.zeros(50), np.zeros(900, dtype=np.int8)
    perceptron_sparse_kernel.py(X.indptr, X.indices, X.data.astype(float), y, w, TIES[tie], 3, trace)
    assert np.array_equal(trace, t_sparse) and np.array_equal(w, sparse_learner.w_)


def test_the_datasets_page_table_is_the_catalog_command_output() -> None:
    assert catalog.table() in (ROOT / "docs" / "datasets.md").read_text()


def test_the_catalog_command_explains_itself_and_refuses_arguments(capsys: pytest.CaptureFixture,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """--help says what it prints; an argument is one line and exit 2; neither certifies a dataset."""
    monkeypatch.setattr(catalog, "table", lambda: pytest.fail("the table was computed"))
    assert catalog.main(["--help"]) == 0
    assert capsys.readouterr().out.startswith("usage: boundlab-datasets\n")
    assert catalog.main(["iris"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("boundlab-datasets: error: 'iris': the command takes no arguments")


def test_witness_certificate_still_matches_solver_on_generated_data(tmp_path: Path) -> None:
    ds = MarginBinary(gamma=0.2, rho=1.0, n=200, d=4).generate(np.random.default_rng(3))
    s = certify_sample(ds.X, ds.y, tmp_path)
    assert max(s.gamma_lo, ds.stats.gamma_lo) <= min(s.gamma_hi, ds.stats.gamma_hi)


def test_a_radius_below_the_rows_norms_is_refused_before_any_verdict() -> None:
    from types import SimpleNamespace

    import scipy.sparse

    from pipeline.params import UserError
    from pipeline.job.run import verify_radius

    X = np.array([[3.0, 4.0], [0.6, 0.8]])
    for rows in (X, scipy.sparse.csr_matrix(X)):
        verify_radius(SimpleNamespace(name="ok", kind="binary", X=rows, stats=SimpleNamespace(R=5.0)))
        with pytest.raises(UserError, match=r"dataset liar: its certified radius R = 4\.9 is below the norm of one of its rows"):
            verify_radius(SimpleNamespace(name="liar", kind="binary", X=rows, stats=SimpleNamespace(R=4.9)))
