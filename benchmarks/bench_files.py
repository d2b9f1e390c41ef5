"""Benchmark section "files": the whole command ``boundlab dataset=file dataset.path=F`` on generated files.

Three files, generated in a temporary directory (never in the repository):

- dense: x ~ N(0, I_d), y = sign(w*.x) for a random unit w*, then x += 0.05 y w* (NPZ, float64);
- large: the same recipe with ten times the rows;
- sparse: 50 random columns per row (without repeats) with N(0, 1) values, w* a random dense unit vector,
  y = sign(w*.x), then each row moves along w* restricted to its own columns, by 0.05 in norm:
  x += 0.05 y w*_S / ||w*_S|| (S the row's columns). The sparsity pattern is unchanged and
  y w*.x grows by 0.05 ||w*_S|| > 0, so w* separates the sample (svmlight text).

Each command runs in its own process with ``BOUNDLAB_CACHE`` and the MLflow store in the temporary
directory; its wall time and peak resident memory (``os.wait4``'s rusage of that child) are measured,
and a watchdog kills it above ``rss_limit`` bytes (read from /proc where there is one). The certificate's
relative gap is read from the run's log line ``data file: ... (relative gap G)``.

``files(tiny=True)`` uses small sizes and leaves out "large" (dense again, the same code), so a test can run it
in seconds; ``files(tiny=False)`` the sizes of the performance issue (1e5 x 100, 1e6 x 100, sparse 1e5 x 1e5
with 50 non-zeros a row).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

SHIFT = 0.05
SIZES = {False: {"dense": (100_000, 100), "large": (1_000_000, 100), "sparse": (100_000, 100_000, 50)},
         True: {"dense": (2_000, 20), "sparse": (500, 2_000, 10)}}  # tiny: "large" would be dense again, the same code
TARGET_SECONDS = {"dense": 8.0, "large": 60.0, "sparse": 60.0}  # issue 16's targets (full sizes only)
RSS_LIMIT = 8 * 2**30  # the watchdog: a command above this resident size is killed (a shared machine)


def dense_sample(n: int, d: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """x ~ N(0, I_d), y = sign(w*.x) (0 counts as +1), x += SHIFT y w*; generated in blocks of rows."""
    rng = np.random.default_rng(seed)
    w = rng.normal(size=d)
    w /= np.linalg.norm(w)
    X = np.empty((n, d))
    y = np.empty(n)
    step = max(1, (1 << 22) // d)
    for start in range(0, n, step):
        block = rng.normal(size=(min(step, n - start), d))
        labels = np.where(block @ w >= 0, 1.0, -1.0)
        block += SHIFT * labels[:, None] * w
        X[start:start + block.shape[0]], y[start:start + block.shape[0]] = block, labels
    return X, y


def sparse_sample(n: int, d: int, k: int, seed: int = 0):  # noqa: ANN201
    """The module docstring's sparse recipe: CSR (n, d) with k entries a row, and labels +/-1."""
    import scipy.sparse as sp

    rng = np.random.default_rng(seed)
    w = rng.normal(size=d)
    w /= np.linalg.norm(w)
    cols = np.empty((n, k), dtype=np.int64)
    for i in range(n):  # k distinct columns a row
        cols[i] = np.sort(rng.choice(d, size=k, replace=False))
    values = rng.normal(size=(n, k))
    ws = w[cols]
    y = np.where(np.einsum("ij,ij->i", values, ws) >= 0, 1.0, -1.0)
    values += SHIFT * (y / np.linalg.norm(ws, axis=1))[:, None] * ws
    X = sp.csr_matrix((values.ravel(), cols.ravel(), np.arange(0, n * k + 1, k)), shape=(n, d))
    return X, y


def write_files(where: Path, tiny: bool) -> dict[str, Path]:
    from sklearn.datasets import dump_svmlight_file

    sizes = SIZES[tiny]
    out = {}
    for name in [k for k in ("dense", "large") if k in sizes]:
        X, y = dense_sample(*sizes[name], seed=0)
        out[name] = where / f"{name}.npz"
        np.savez(out[name], X=X, y=y)
        del X, y
    X, y = sparse_sample(*sizes["sparse"], seed=0)
    out["sparse"] = where / "sparse.svm"
    dump_svmlight_file(X, y, str(out["sparse"]), zero_based=False)
    return out


def _rss(pid: int, field: str = "VmRSS") -> int:
    """Resident bytes of pid and its children (0 where /proc is not available); ``field="VmHWM"``: the peak."""
    total = 0
    pids = [pid]
    try:
        children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
        pids += [int(c) for c in children]
    except OSError:
        pass
    for p in pids:
        try:
            for line in Path(f"/proc/{p}/status").read_text().splitlines():
                if line.startswith(f"{field}:"):
                    total += int(line.split()[1]) * 1024
        except OSError:
            pass
    return total


def run_command(path: Path, work: Path, rss_limit: float = RSS_LIMIT, timeout: float = 3600.0) -> dict:
    """The whole ``boundlab dataset=file dataset.path=PATH`` in its own process: wall seconds, peak RSS
    bytes (the largest VmHWM of the process and its children seen while polling: the rusage's ru_maxrss
    would not do, since Linux carries the parent's resident size at the fork across the exec), its exit code, the
    certificate's relative gap (from its log), and whether
    the watchdog killed it (above ``rss_limit`` bytes, or after ``timeout`` seconds)."""
    exe = shutil.which("boundlab") or str(Path(sys.executable).with_name("boundlab"))
    env = {**os.environ, "BOUNDLAB_CACHE": str(work / "cache"), "MLFLOW_TRACKING_URI": f"sqlite:///{work / 'mlflow.db'}"}
    argv = [exe, "dataset=file", f"dataset.path={path}", f"hydra.run.dir={work / 'run'}", "force=true"]
    log = work / f"{path.stem}.log"
    began = time.perf_counter()
    with open(log, "w") as sink:
        proc = subprocess.Popen(argv, cwd=work, env=env, stdout=sink, stderr=subprocess.STDOUT)
        killed, peak = None, 0
        while True:
            peak = max(peak, _rss(proc.pid, "VmHWM"))
            pid, status, _ = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                break
            if _rss(proc.pid) > rss_limit:
                killed = f"resident memory above {rss_limit / 2**30:.3g} GiB"
            elif time.perf_counter() - began > timeout:
                killed = f"still running after {timeout:.0f} s"
            if killed:
                proc.kill()
            time.sleep(0.05)
    wall = time.perf_counter() - began
    proc.returncode = os.waitstatus_to_exitcode(status)
    text = log.read_text(errors="replace")
    gap = re.findall(r"data file: .*?relative gap ([-+0-9.eE]+|inf|nan)", text)
    return {"seconds": wall, "peak_rss_bytes": peak, "exit_code": proc.returncode,
            "gap": float(gap[-1]) if gap else None, "killed": killed,
            "tail": text.strip().splitlines()[-1][-300:] if text.strip() and proc.returncode else ""}


def data_bytes(path: Path) -> int:
    """Bytes of the sample as the run holds it: X and y as float64 (dense), or CSR data, indices, indptr, y."""
    if path.suffix == ".npz":
        with np.load(path) as f:
            return int(f["X"].size * 8 + f["y"].size * 8)
    from sklearn.datasets import load_svmlight_file

    X, y = load_svmlight_file(str(path))
    return int(X.data.nbytes + X.indices.nbytes + X.indptr.nbytes + y.size * 8)


def files(tiny: bool) -> dict:
    """Generate the files (three; two with ``tiny``) in a temporary directory and time the whole command on each.

    Returns ``{name: {"shape", "seconds", "peak_rss_bytes", "data_bytes", "rss_per_data_byte", "gap",
    "exit_code", "killed"}}`` for name in dense, large, sparse (``tiny``: dense and sparse).
    """
    out = {}
    with tempfile.TemporaryDirectory(prefix="boundlab-bench-files-") as tmp:
        where = Path(tmp)
        paths = write_files(where, tiny)
        for name, path in paths.items():
            work = where / f"work-{name}"
            work.mkdir()
            result = run_command(path, work)
            size = data_bytes(path)
            out[name] = {"shape": list(SIZES[tiny][name]), **result, "data_bytes": size,
                         "rss_per_data_byte": result["peak_rss_bytes"] / size}
            if not tiny:
                out[name]["target_seconds"] = TARGET_SECONDS[name]
    return out


if __name__ == "__main__":  # python benchmarks/bench_files.py [--tiny]
    import json

    print(json.dumps(files("--tiny" in sys.argv), indent=2))
