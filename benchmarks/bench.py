"""boundlab's performance, measured side by side in one run, as ratios (the machine is shared: every
contender runs once per repetition, round robin, and each ratio is reported as min/median/max over the
repetitions of that ratio).

    python benchmarks/bench.py                 # the README's table; writes benchmarks/results.json
    python benchmarks/bench.py --tiny          # seconds: what the test suite runs (timings not asserted)
    python benchmarks/bench.py --only kernels,startup --reps 7   # re-measures these, keeps the rest of --out

Sections: ``kernels`` (one pass of the Perceptron and of Pegasos against scikit-learn with the same
semantics and against the streaming floor, one compiled read of the same array), ``kernel_pegasos``
(against a straightforward NumPy implementation), ``cache`` (a new process loads compiled kernels from
disk), ``startup`` (``boundlab --help``, a rejected config), ``compose`` (a composition of boundlab's config by
Hydra's own loader against the same with ``pipeline.sweep.hydra_seam``'s two patches), ``single`` (the default ``boundlab``
against a
bare Hydra app's single run), ``stream`` (T examples generated in chunks, never materialised: wall time and
peak memory), ``files`` (the whole ``boundlab dataset=file`` run on generated files of 1e5 and 1e6 rows and a
sparse one: wall time and peak memory, benchmarks/bench_files.py) and ``sweep`` (sweeps of each job kind of
100 and 1,000 jobs against a bare Hydra multirun of as many jobs, with the per-job cost broken down, and the
joblib launcher on both cores), ``packed`` (packed sweeps of tiny runs), ``seeds`` (seed rounds as a user runs
them, 10,000 Pegasos and 100,000 Perceptron seeds, beside what a seed computes) and ``memory`` (a sweep's peak
memory at 1,000 and 10,000 jobs against its tables). The machine's load average is printed before each section.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
import warnings
from pathlib import Path
from typing import Any, Callable

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # run from a checkout without installing
    sys.path.insert(0, str(ROOT))

from pipeline._jit import kernel  # noqa: E402
from pipeline.numerics import margins_kernel  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))  # run as a script or imported (tests): its siblings
from timing import BARE_APP  # noqa: E402
from timing import timed as _timed  # noqa: E402


# --- the streaming floor ----------------------------------------------------------------------------

@kernel
def stream_floor(X):  # noqa: ANN001, ANN201
    """One compiled read of every entry of ``X``: eight independent sums, so the loop is limited by
    memory bandwidth, not by the latency of the additions."""
    n, d = X.shape
    flat = X.reshape(n * d)
    m = n * d
    s0 = s1 = s2 = s3 = s4 = s5 = s6 = s7 = 0.0
    for q in range(m >> 3):
        k = 8 * q
        s0 += flat[k]
        s1 += flat[k + 1]
        s2 += flat[k + 2]
        s3 += flat[k + 3]
        s4 += flat[k + 4]
        s5 += flat[k + 5]
        s6 += flat[k + 6]
        s7 += flat[k + 7]
    for k in range(8 * (m >> 3), m):
        s0 += flat[k]
    return ((s0 + s1) + (s2 + s3)) + ((s4 + s5) + (s6 + s7))


@kernel
def floor_repeated(X, times):  # noqa: ANN001, ANN201
    """:func:`stream_floor` ``times`` times over the same block: with the block in cache, the floor's own
    arithmetic (eight chains of dependent additions), not memory, is what it measures."""
    s = 0.0
    for _ in range(times):
        s += stream_floor(X)
    return s


@kernel
def margins_repeated(X, y, w, times):  # noqa: ANN001, ANN201
    """``margins_kernel`` ``times`` times over the same block (y_i w.x_i per row in the fixed order of
    ``pipeline._jit.dot_row``, stored): with the block in cache, the ceiling of that summation order on
    this CPU, without the memory traffic."""
    s = 0.0
    for _ in range(times):
        s += margins_kernel(X, y, w)[0]
    return s


IN_CACHE_BYTES = 256 * 1024  # a block that stays in a core's L2 cache on current CPUs


# --- helpers ----------------------------------------------------------------------------------------

def spread(values: list[float]) -> dict[str, float]:
    return {"min": min(values), "median": statistics.median(values), "max": max(values)}


def round_robin(contenders: dict[str, Callable[[], Any]], reps: int) -> dict[str, list[float]]:
    """Seconds of each contender per repetition; contenders alternate so load hits them alike."""
    for f in contenders.values():  # warm-up: compilation, caches, page faults
        f()
    times: dict[str, list[float]] = {k: [] for k in contenders}
    for _ in range(reps):
        for name, f in contenders.items():
            t = time.perf_counter()
            f()
            times[name].append(time.perf_counter() - t)
    return times


def ratios(times: dict[str, list[float]], num: str, den: str) -> dict[str, float]:
    """times[num] / times[den] per repetition (same round), as min/median/max."""
    return spread([a / b for a, b in zip(times[num], times[den])])


def linear_data(n: int, d: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Dense float64 data labelled by a random direction (a few mistakes, as in the margin runs)."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    w = rng.standard_normal(d)
    return X, np.where(X @ w > 0, 1.0, -1.0)


def _as_a_user() -> dict[str, str]:
    """This process's environment for a timed command, as a user's Python runs it: caching bytecode. Some CI and
    sandbox machines set ``PYTHONDONTWRITEBYTECODE``; under it every command compiles boundlab's own modules anew
    from source (~0.2 s at a command's start, and again in each forked worker for the modules it imports
    later), where a user's Python reads them from ``__pycache__`` after the first run."""
    return {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def boundlab_cmd() -> list[str]:
    script = Path(sys.executable).parent / "boundlab"
    return [str(script)] if script.exists() else [sys.executable, "-c", "from pipeline.cli import main; main()"]


# --- kernels ----------------------------------------------------------------------------------------

def _pegasos_arrays(X: np.ndarray, y: np.ndarray) -> dict[str, Any]:
    """The inputs of one in-order pass of Pegasos (k = 1, no projection) and its outputs' arrays, allocated as
    :meth:`pipeline.learners.pegasos.Pegasos.run` allocates them (:class:`~pipeline.learners.pegasos.PegasosSteps`:
    per-step loss, active flags, sub-gradient norms, averaged and last iterates)."""
    from pipeline.learners.base import log_grid
    from pipeline.learners.pegasos import SNAPSHOTS, PegasosSteps, index_stream

    m, d = X.shape
    grid = log_grid(m, SNAPSHOTS)
    # the hinge objective, as a default run: unit weights and no reference (None, as Pegasos.run passes them)
    return {"idx": index_stream("inorder", y, m, 1, np.random.default_rng(0)), "grid": grid, "ref": None,
            "s": None, "out": PegasosSteps.empty(m, grid.size, d)}


def _pegasos_call(X: np.ndarray, y: np.ndarray, lam: float, a: dict[str, Any]) -> np.ndarray:
    """The pass through :class:`~pipeline.learners.pegasos.PegasosCore`, the training core the runs use."""
    from pipeline.learners.pegasos import PegasosCore

    core = PegasosCore.start(X.shape[1], lam)  # as Pegasos.run starts it
    core.advance(X, y, a["idx"], a["grid"], a["s"], a["ref"], out=a["out"])
    return core.u


def pegasos_pass(X: np.ndarray, y: np.ndarray, lam: float) -> np.ndarray:
    """One in-order pass of Pegasos (k = 1, no projection) through its training core, its arrays allocated as
    :meth:`pipeline.learners.pegasos.Pegasos.run` does; the final iterate."""
    return _pegasos_call(X, y, lam, _pegasos_arrays(X, y))


def pegasos_kernel_alone(X: np.ndarray, y: np.ndarray, lam: float, s: np.ndarray | None = None,
                         ref: np.ndarray | None = None) -> Callable[[], None]:
    """:func:`pegasos_pass` with its arrays allocated, and touched, once beforehand: what the per-step work
    costs without the fresh memory a run allocates (the index stream, the per-step loss, sub-gradient norm
    and active flag: 28 bytes a step). ``s`` and ``ref``: the weights and reference margins a weighted or
    transfer objective reads at every step (None: the hinge objective's, which the kernel does not read)."""
    arrays = _pegasos_arrays(X, y) | {"s": s, "ref": ref}
    for name in ("loss", "active", "grad2", "avg", "last"):
        getattr(arrays["out"], name)[...] = 0
    return lambda: _pegasos_call(X, y, lam, arrays)


def bench_kernels(n: int, dims: list[int], reps: int, max_entries: int) -> dict[str, Any]:
    warnings.filterwarnings("ignore", message=".*max_iter.*")  # one epoch is what we ask for
    # one function call per width: its data (and every closure over them) are freed before the next width's
    return {f"d={d}": _kernels_at(min(n, max_entries // d), d, 1e-4, reps) for d in dims}


def _kernels_at(rows: int, d: int, lam: float, reps: int) -> dict[str, Any]:
    from sklearn.linear_model import Perceptron as SkPerceptron
    from sklearn.linear_model import SGDClassifier

    from pipeline.learners import Perceptron
    from pipeline.learners.perceptron import TIES, perceptron_kernel

    X, y = linear_data(rows, d)
    ours_p = Perceptron(tie="mistake")  # sklearn's Perceptron updates iff y w.x <= 0
    sk_p = SkPerceptron(fit_intercept=False, shuffle=False, max_iter=1, tol=None, eta0=1.0)
    # P11's step eta_t = 1/(lam t) with (1 - eta_t lam) shrink: invscaling with eta0 = 1/lam, power_t = 1
    sk_s = SGDClassifier(loss="hinge", penalty="l2", alpha=lam, fit_intercept=False, shuffle=False, max_iter=1,
                         tol=None, learning_rate="invscaling", eta0=1.0 / lam, power_t=1.0)

    def perceptron() -> None:
        for attr in ("w_", "t_", "mistakes_"):  # a fresh start, as sklearn's fit
            ours_p.__dict__.pop(attr, None)
        ours_p.learn_stream(X, y)

    result: dict[str, Any] = {}
    w_margin = np.random.default_rng(1).standard_normal(d)
    block_rows = max(8, IN_CACHE_BYTES // (8 * d))
    repeats = max(1, rows // block_rows)
    block = np.ascontiguousarray(X[:block_rows])
    in_cache_trace = np.zeros(block_rows * repeats, dtype=np.int8)
    times = round_robin({"floor": lambda: stream_floor(X), "perceptron": perceptron,
                         "sklearn_perceptron": lambda: sk_p.fit(X, y),
                         "pegasos": lambda: pegasos_pass(X, y, lam), "sklearn_sgd": lambda: sk_s.fit(X, y),
                         "pegasos_kernel_alone": pegasos_kernel_alone(X, y, lam),
                         "margins": lambda: margins_kernel(X, y, w_margin),
                         # the same rows' work with the data in cache (one block read ``repeats`` times): the
                         # ceiling of each loop's own arithmetic, to tell a slow kernel from a fast memory
                         "floor_in_cache": lambda: floor_repeated(block, repeats),
                         "margins_in_cache": lambda: margins_repeated(block, y[:len(block)], w_margin, repeats),
                         "perceptron_in_cache": lambda: perceptron_kernel(block, y[:len(block)], np.zeros(d),
                                                                          TIES["mistake"], repeats, in_cache_trace)}, reps)
    result["n"], result["d"], result["GB"] = rows, d, X.nbytes / 1e9
    result["seconds_min"] = {k: min(v) for k, v in times.items() if not k.endswith("_in_cache")}  # those: scaled, below
    result["perceptron_vs_sklearn"] = ratios(times, "sklearn_perceptron", "perceptron")
    result["perceptron_share_of_floor"] = ratios(times, "floor", "perceptron")
    # issue 53's target: the Perceptron's whole pass (as a run does it) >= 0.9 of the margins-only pass in the
    # same summation order, the same rounds
    result["perceptron_vs_margins"] = ratios(times, "margins", "perceptron")
    result["pegasos_vs_sklearn"] = ratios(times, "sklearn_sgd", "pegasos")
    result["pegasos_share_of_floor"] = ratios(times, "floor", "pegasos")
    # where Pegasos' time goes: its kernel without the run's fresh memory, and the least any pass that
    # computes one margin per row and stores it (in the kernels' fixed summation order) costs
    result["pegasos_kernel_alone_share_of_floor"] = ratios(times, "floor", "pegasos_kernel_alone")
    result["margins_share_of_floor"] = ratios(times, "floor", "margins")
    # the target of issue 34: the kernel at >= 0.8 of the margins-only pass (same rounds)
    result["pegasos_kernel_alone_vs_margins"] = ratios(times, "margins", "pegasos_kernel_alone")
    # in cache, per row (the blocks cover block_rows * repeats rows, about the pass's): the floor against the
    # fixed-order margins' arithmetic is the most any fixed-order pass can reach of the floor on this machine
    scale = rows / (block_rows * repeats)
    in_cache = {k: [t * scale for t in times[k]] for k in ("floor_in_cache", "margins_in_cache", "perceptron_in_cache")}
    result["in_cache_rows"] = block_rows
    result["seconds_min_in_cache"] = {k: min(v) for k, v in in_cache.items()}
    result["fixed_order_ceiling_share_of_floor"] = ratios(times | in_cache, "floor", "margins_in_cache")
    result["perceptron_in_cache_share_of_floor"] = ratios(times | in_cache, "floor", "perceptron_in_cache")
    result["floor_in_cache_over_floor"] = ratios(times | in_cache, "floor_in_cache", "floor")
    result["sklearn_perceptron_share_of_floor"] = ratios(times, "floor", "sklearn_perceptron")
    result["best_possible_vs_sklearn_perceptron"] = ratios(times, "sklearn_perceptron", "floor")
    result["best_possible_vs_sklearn_sgd"] = ratios(times, "sklearn_sgd", "floor")
    # the same semantics: the same weights up to sklearn's own summation order
    w_peg = pegasos_pass(X, y, lam)
    scale = max(1.0, float(np.abs(ours_p.w_).max()))
    result["max_weight_difference_vs_sklearn"] = {
        "perceptron": float(np.abs(ours_p.w_ - sk_p.coef_.ravel()).max()) / scale,
        "pegasos": float(np.abs(w_peg - sk_s.coef_.ravel()).max()) / max(1.0, float(np.abs(w_peg).max())),
    }
    # bit-identical run to run, and against the plain reference on a prefix
    again = Perceptron(tie="mistake")
    again.learn_stream(X, y)
    head = min(rows, 3000)
    w_ref, tr = np.zeros(d), np.zeros(head, dtype=np.int8)
    perceptron_kernel.py(X[:head], y[:head], w_ref, TIES["mistake"], 1, tr)
    w_fast, tr_fast = np.zeros(d), np.zeros(head, dtype=np.int8)
    perceptron_kernel(X[:head], y[:head], w_fast, TIES["mistake"], 1, tr_fast)
    result["bit_identical"] = {"run_to_run": bool(np.array_equal(again.w_, ours_p.w_)),
                               "compiled_vs_reference": bool(np.array_equal(w_ref, w_fast) and np.array_equal(tr, tr_fast))}
    return result


# --- kernel Pegasos ---------------------------------------------------------------------------------

def kernel_pegasos_numpy(X: np.ndarray, y: np.ndarray, idx: np.ndarray, lam: float, sigma: float) -> tuple[np.ndarray, int]:
    """The straightforward implementation: BLAS Gram matrix, then each step's margin as K[j] @ (beta y)."""
    sq = np.einsum("ij,ij->i", X, X)
    K = np.exp(-np.maximum(sq[:, None] + sq[None, :] - 2.0 * (X @ X.T), 0.0) / (2.0 * sigma * sigma))
    m = y.shape[0]
    beta, bar = np.zeros(m), np.zeros(m)
    active = 0
    for t in range(1, idx.shape[0] + 1):
        j = idx[t - 1, 0]
        h = 0.0 if t == 1 else 1.0 / (lam * (t - 1))
        bar += h * beta
        if y[j] * (K[j] @ (beta * y)) * h < 1.0:
            beta[j] += 1.0
            active += 1
    return bar / idx.shape[0], active


def kernel_pegasos_ours(X: np.ndarray, y: np.ndarray, idx: np.ndarray, lam: float, sigma: float) -> tuple[np.ndarray, int]:
    """KernelPegasos.run's training: the Gram matrix, then its core (:class:`~pipeline.learners.kernel_pegasos.
    KernelPegasosCore`) over the steps; the average's coefficients and the number of active steps."""
    from pipeline.learners.base import log_grid
    from pipeline.learners.kernel_pegasos import KernelPegasosCore, gram_kernel

    K = gram_kernel(X, 2, 2, 1.0, sigma)
    done = KernelPegasosCore.start(y.shape[0], lam).advance(K, y, idx, log_grid(idx.shape[0], 40))
    return done.avg[-1], int(done.active.sum())


def bench_kernel_pegasos(m: int, d: int, T: int, reps: int) -> dict[str, Any]:
    from pipeline.data import Shells

    ds = Shells(rho=1.0, n=m, d=d).generate(np.random.default_rng(0))
    X, y = np.ascontiguousarray(ds.X), np.ascontiguousarray(ds.y)
    idx = np.random.default_rng(1).integers(0, m, size=(T, 1))
    lam, sigma = 1e-3, 0.5
    times = round_robin({"ours": lambda: kernel_pegasos_ours(X, y, idx, lam, sigma),
                         "numpy": lambda: kernel_pegasos_numpy(X, y, idx, lam, sigma)}, reps)
    (a_ours, n_ours), (a_np, n_np) = kernel_pegasos_ours(X, y, idx, lam, sigma), kernel_pegasos_numpy(X, y, idx, lam, sigma)
    return {"m": m, "d": d, "T": T, "seconds_min": {k: min(v) for k, v in times.items()},
            "speedup_vs_numpy": ratios(times, "numpy", "ours"), "same_active_steps": n_ours == n_np,
            "max_average_coefficient_difference": float(np.abs(a_ours - a_np).max())}


# --- compiled kernels from the disk cache -----------------------------------------------------------

def bench_cache(reps: int) -> dict[str, Any]:
    """First Perceptron pass in a new process, numba already imported: with the on-disk cache, and
    compiling (an empty cache dir)."""
    code = textwrap.dedent("""
        import time, numba, numpy as np
        from pipeline.learners import Perceptron
        X = np.random.default_rng(0).standard_normal((1000, 10)); y = np.sign(X[:, 0])
        t = time.perf_counter(); Perceptron().learn_stream(X, y); print(time.perf_counter() - t)
    """)
    cached, compiling = [], []
    subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, cwd=ROOT)  # fill the cache
    for _ in range(reps):
        cached.append(float(subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True,
                                           cwd=ROOT).stdout))
        with tempfile.TemporaryDirectory() as empty:
            env = _as_a_user() | {"NUMBA_CACHE_DIR": empty}
            compiling.append(float(subprocess.run([sys.executable, "-c", code], check=True, capture_output=True,
                                                  text=True, cwd=ROOT, env=env).stdout))
    return {"first_pass_seconds_cached": spread(cached), "first_pass_seconds_compiling": spread(compiling),
            "compile_over_cached": spread([c / a for a, c in zip(cached, compiling)])}


# --- start-up ---------------------------------------------------------------------------------------

def bench_startup(reps: int) -> dict[str, Any]:
    cmd = boundlab_cmd()
    cases = {"help": [*cmd, "--help"], "config_error": [*cmd, "gamma=2.0"]}
    out: dict[str, Any] = {}
    for name, argv in cases.items():
        times = []
        for _ in range(reps + 1):
            t = time.perf_counter()
            proc = subprocess.run(argv, capture_output=True, text=True, cwd=ROOT)
            times.append(time.perf_counter() - t)
        expected = 0 if name == "help" else 2
        if proc.returncode != expected:
            raise RuntimeError(f"{' '.join(argv)} exited {proc.returncode}: {proc.stderr}")
        out[name] = {"seconds": spread(times[1:])}  # the first run warms the file cache
    return out


COMPOSE_JOBS = (["seed=1"], ["algorithm=pegasos", "T=100"], ["experiment=perceptron_margin"], ["dataset=bundled"])


def bench_compose(reps: int, per: int) -> dict[str, Any]:
    """One composition of boundlab's config (``load_configuration``, the ``hydra`` node included, as the
    run and each composed sweep job do) by Hydra's own loader, against the same loader with the seam's
    shallow repository copy and kept config reads (``pipeline.sweep.hydra_seam.copy_repositories_shallow``,
    ``keep_config_reads``), alternating per repetition in this process. Each repetition composes the
    :data:`COMPOSE_JOBS` ``per`` times; both must give the same configs."""
    from hydra import initialize_config_dir
    from hydra._internal.config_repository import CachingConfigRepository, ConfigRepository
    from hydra.core.global_hydra import GlobalHydra
    from hydra.types import RunMode
    from omegaconf import OmegaConf

    from pipeline.sweep import hydra_seam
    from pipeline.paths import CONF_DIR
    from pipeline.sweep.schemas import register

    register()
    hydra_seam.copy_repositories_shallow()
    hydra_seam.keep_config_reads()
    patched = {"boundlab": (CachingConfigRepository.__init__, ConfigRepository.load_config)}
    patched["hydra"] = (patched["boundlab"][0].hydras, patched["boundlab"][1].hydras)
    configs: dict[str, list[str]] = {}
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base=None):
        loader = GlobalHydra.instance().config_loader()

        def compose(name: str) -> Callable[[], None]:
            def run() -> None:
                CachingConfigRepository.__init__, ConfigRepository.load_config = patched[name]
                try:
                    configs[name] = [OmegaConf.to_yaml(loader.load_configuration("config", overrides=[*job, f"seed={i}"],
                                                                                 run_mode=RunMode.RUN))
                                     for i in range(per) for job in COMPOSE_JOBS]
                finally:
                    CachingConfigRepository.__init__, ConfigRepository.load_config = patched["boundlab"]
            return run

        times = round_robin({name: compose(name) for name in ("hydra", "boundlab")}, reps)
    each = per * len(COMPOSE_JOBS)
    return {"ms_per_composition": {k: spread([1e3 * t / each for t in v]) for k, v in times.items()},
            "hydra_over_boundlab": ratios(times, "hydra", "boundlab"), "compositions_per_rep": each,
            "same_configs": configs["hydra"] == configs["boundlab"]}


def bench_single(reps: int, warm: bool = True) -> dict[str, Any]:
    """The default ``boundlab`` (one run: data, certificate, learner, bounds, MLflow run) against a bare
    Hydra app's single run, alternating, each in a new process with its own output directory; ``warm``: each
    contender once before the timed rounds (``--tiny`` leaves that out: its timings mean nothing)."""
    with tempfile.TemporaryDirectory() as tmp:
        tmp_path = Path(tmp)
        env = _as_a_user() | {"MLFLOW_TRACKING_URI": f"sqlite:///{tmp_path / 'mlflow.db'}",
                            "BOUNDLAB_CACHE": str(tmp_path / "cache")}
        (tmp_path / "bare.py").write_text(BARE_APP)
        count = iter(range(10**6))
        contenders = {
            "bare_hydra": lambda: _timed([sys.executable, str(tmp_path / "bare.py"),
                                          f"hydra.run.dir={tmp_path / f'b{next(count)}'}"], tmp_path, env),
            "boundlab": lambda: _timed([*boundlab_cmd(), f"hydra.run.dir={tmp_path / f'o{next(count)}'}"], tmp_path, env),
        }
        for f in contenders.values() if warm else ():  # warm-up: the store's tables, compiled kernels, the file cache
            f()
        times: dict[str, list[float]] = {k: [] for k in contenders}
        for _ in range(reps):
            for k, f in contenders.items():
                times[k].append(f())
    return {"seconds": {k: spread(v) for k, v in times.items()},
            "boundlab_over_bare_hydra": spread([o / b for o, b in zip(times["boundlab"], times["bare_hydra"])]),
            "best_of_reps_ratio": min(times["boundlab"]) / min(times["bare_hydra"])}


# --- real files at scale ---------------------------------------------------------------------------

def bench_files(tiny: bool) -> dict[str, Any]:
    """The whole ``boundlab dataset=file`` run on generated files (benchmarks/bench_files.py)."""
    try:
        from bench_files import files  # the script's own directory is on sys.path
    except ImportError as e:
        return {"error": f"benchmarks/bench_files.py: {e}"}
    return files(tiny)


# --- the streamed run -------------------------------------------------------------------------------

STREAM_CODE = """
import json, resource, sys, time
import numpy as np
from pipeline.data import DATASETS
from pipeline.learners import Perceptron
T, d, chunk = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
t0 = time.perf_counter()
ds = DATASETS["stream"](gamma=0.1, rho=1.0, n=T, d=d, chunk=chunk).generate(np.random.default_rng(0))
out = Perceptron().run(ds, np.random.default_rng(1))
seconds = time.perf_counter() - t0
print(json.dumps({"seconds": seconds, "peak_rss_MiB": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                  "mistakes": out.quantities["mistakes"], "R": ds.stats.R, "gamma_lo": ds.stats.gamma_lo}))
"""


def bench_stream(T: int, d: int, chunk: int) -> dict[str, Any]:
    proc = subprocess.run([sys.executable, "-c", STREAM_CODE, str(T), str(d), str(chunk)], capture_output=True,
                          text=True, cwd=ROOT)
    if proc.returncode:
        return {"error": proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else f"exit {proc.returncode}"}
    return {"T": T, "d": d, "chunk": chunk} | json.loads(proc.stdout.strip().splitlines()[-1])


# --- sweeps -----------------------------------------------------------------------------------------

SWEEP_JOBS = {"perceptron n=200 d=5": ["n=200", "d=5"], "pegasos T=10000 d=20": ["algorithm=pegasos", "T=10000", "d=20"]}
# per-job cost / bare Hydra's, by kind: issue 34's for small jobs; the earlier issue's 1.5 for Pegasos' larger job
SWEEP_TARGETS = {"perceptron": 1.25, "pegasos": 1.5}


def bench_sweeps(sizes: list[int], parallel: bool, tiny: bool, learners: set[str] | None = None) -> dict[str, Any]:
    """Every job kind of the issue (or those of ``learners``) at every size: per-job cost against a bare Hydra
    multirun, the joblib launcher's speed-up; the breakdown of one job's cost once per kind (the largest size)."""
    out: dict[str, Any] = {}
    kinds = {k: v for k, v in SWEEP_JOBS.items() if learners is None or k.split()[0] in learners}
    kinds = dict(list(kinds.items())[:1]) if tiny else kinds
    for kind, args in kinds.items():
        for jobs in sizes:
            t = time.perf_counter()
            out[f"{kind}, {jobs} jobs"] = bench_sweep(jobs, args, parallel, breakdown_too=jobs == max(sizes))
            print(f"  sweep {kind}, {jobs} jobs: {time.perf_counter() - t:.0f} s (load {os.getloadavg()[0]:.2f})",
                  file=sys.stderr)
    return out


def bench_sweep(jobs: int, job_args: list[str], parallel: bool, breakdown_too: bool = True) -> dict[str, Any]:
    """Per-job cost = (time of N jobs - time of 1 job) / (N - 1): the process start-up, the sweep's
    parent run and its figures are paid once and left out; both commands are measured the same way."""
    with tempfile.TemporaryDirectory() as tmp:
        tmp_path = Path(tmp)
        env = _as_a_user() | {"MLFLOW_TRACKING_URI": f"sqlite:///{tmp_path / 'mlflow.db'}",
                            "BOUNDLAB_CACHE": str(tmp_path / "cache")}
        (tmp_path / "bare.py").write_text(BARE_APP)
        bare = [sys.executable, str(tmp_path / "bare.py"), "-m"]
        ours = [*boundlab_cmd(), "-m", *job_args]

        def sweep(base: list[str], count: int, tag: str, extra: tuple[str, ...] = ()) -> float:
            seeds = f"seed=range(0,{count})" if base is ours else f"+seed=range(0,{count})"
            return _timed([*base, seeds, f"hydra.sweep.dir={tmp_path / tag}", *extra], tmp_path, env)

        sweep(ours, 2, "warm")  # the store's schema and the experiment exist, kernels are cached
        t_bare_1, t_bare_n = sweep(bare, 1, "bare1"), sweep(bare, jobs, "bareN")
        t_ours_1, t_ours_n = sweep(ours, 1, "ours1"), sweep(ours, jobs, "oursN")
        bare_job, ours_job = (t_bare_n - t_bare_1) / (jobs - 1), (t_ours_n - t_ours_1) / (jobs - 1)
        out: dict[str, Any] = {
            "jobs": jobs, "job": " ".join(job_args),
            "seconds": {"bare_hydra_1": t_bare_1, "bare_hydra_N": t_bare_n, "boundlab_1": t_ours_1, "boundlab_N": t_ours_n},
            "per_job_seconds": {"bare_hydra": bare_job, "boundlab": ours_job},
            "per_job_over_bare_hydra": ours_job / bare_job,
        }
        if breakdown_too:
            out["breakdown_per_job_seconds"] = breakdown(job_args, env, reps=min(jobs, 20)) | {"hydra (bare)": bare_job}
        if parallel:
            t_par = sweep(ours, jobs, "oursP", ("hydra/launcher=joblib", "hydra.launcher.n_jobs=2"))
            t_par_1 = sweep(ours, 1, "oursP1", ("hydra/launcher=joblib", "hydra.launcher.n_jobs=2"))
            par_job = (t_par - t_par_1) / (jobs - 1)
            out["parallel"] = {"launcher": "joblib, n_jobs=2", "seconds_N": t_par, "seconds_1": t_par_1,
                               "per_job_seconds": par_job, "speedup_per_job_vs_basic": ours_job / par_job,
                               "speedup_wall_vs_basic": t_ours_n / t_par}
        return out


def bench_sweep_memory(sizes: list[int], job_args: list[str]) -> dict[str, Any]:
    """Issue 53's decided memory target: a sweep's peak resident memory may grow by at most twice its results
    tables from the smaller size to the larger (1,000 and 10,000 jobs, the basic launcher, one job a seed).
    The peak is the command's own (``os.wait4``: its largest resident set, its forked helpers included); the
    tables are the sweep's results and curves as its end holds them (``pipeline.sweep.callbacks.collect`` of
    its directory, ``memory_usage(deep=True)``), read after the command ended."""
    from pipeline.sweep.callbacks import collect

    out: dict[str, Any] = {"job": " ".join(job_args), "launcher": "basic"}
    with tempfile.TemporaryDirectory() as tmp:
        tmp_path = Path(tmp)
        env = _as_a_user() | {"MLFLOW_TRACKING_URI": f"sqlite:///{tmp_path / 'mlflow.db'}",
                            "BOUNDLAB_CACHE": str(tmp_path / "cache")}
        _timed([*boundlab_cmd(), "-m", *job_args, "seed=range(0,2)", f"hydra.sweep.dir={tmp_path / 'warm'}"],
               tmp_path, env)
        for jobs in sizes:
            sweep_dir = tmp_path / f"s{jobs}"
            argv = [*boundlab_cmd(), "-m", *job_args, f"seed=range(0,{jobs})", f"hydra.sweep.dir={sweep_dir}"]
            t = time.perf_counter()
            proc = subprocess.Popen(argv, cwd=tmp_path, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                    text=True)
            err = proc.stderr.read() if proc.stderr else ""
            _, status, usage = os.wait4(proc.pid, 0)
            proc.returncode = os.waitstatus_to_exitcode(status)
            if proc.returncode:
                raise RuntimeError(f"{' '.join(argv[:4])} ... exited {proc.returncode}: {err[-2000:]}")
            results, curves, failed = collect(sweep_dir, jobs)
            table_bytes = int(results.memory_usage(deep=True).sum() + curves.memory_usage(deep=True).sum())
            out[str(jobs)] = {"seconds": time.perf_counter() - t, "peak_resident_MB": usage.ru_maxrss / 1024,
                              "tables_MB": table_bytes / 2**20, "rows": len(results), "failed": len(failed)}
            print(f"  sweep of {jobs} jobs: peak {usage.ru_maxrss / 1024:.0f} MB, tables {table_bytes / 2**20:.1f} MB "
                  f"(load {os.getloadavg()[0]:.2f})", file=sys.stderr)
    small, large = str(min(sizes)), str(max(sizes))
    growth = out[large]["peak_resident_MB"] - out[small]["peak_resident_MB"]
    out["peak_growth_MB"] = growth
    out["growth_over_larger_tables"] = growth / out[large]["tables_MB"]
    out["target"] = "peak growth <= 2 x the larger sweep's tables"
    out["met"] = growth <= 2 * out[large]["tables_MB"]
    return out


def _one_run(reps: int) -> dict[str, Any]:
    """One run's phases, cold and warm (benchmarks/one_run.py)."""
    from one_run import main as one_run  # the script's own directory is on sys.path

    return one_run(["--reps", str(reps)])


def bench_packed(sizes: list[int], pack: int, workers: int, warm: bool = True) -> dict[str, Any]:
    """A packed sweep of tiny runs (``pack=N``, joblib with ``workers`` processes) at two sizes: the per-run
    cost is the difference of their times over the difference of their runs, so the process start-up, the
    sweep's parent run, its figures and the first compilations are paid once and left out; the 100,000-run
    time is projected from both (fixed + 100,000 x per run). Peak memory: the largest peak resident set of
    any one process of these commands, driver or worker (``getrusage(RUSAGE_CHILDREN)``). ``warm``: a small
    packed sweep first, so that both timed ones find the kernels compiled (``--tiny`` leaves it out)."""
    import resource

    out: dict[str, Any] = {"pack": pack, "workers": workers, "job": "n=200 d=5 (the Perceptron)"}
    with tempfile.TemporaryDirectory() as tmp:
        tmp_path = Path(tmp)
        env = _as_a_user() | {"MLFLOW_TRACKING_URI": f"sqlite:///{tmp_path / 'mlflow.db'}",
                            "BOUNDLAB_CACHE": str(tmp_path / "cache")}
        base = [*boundlab_cmd(), "-m", "n=200", "d=5", f"pack={pack}", "hydra/launcher=joblib",
                f"hydra.launcher.n_jobs={workers}"]
        if warm:  # kernels cached
            _timed([*base, "seed=range(0,4)", f"hydra.sweep.dir={tmp_path / 'warm'}"], tmp_path, env)
        seconds = {}
        for runs in sizes:
            seconds[runs] = _timed([*base, f"seed=range(0,{runs})", f"hydra.sweep.dir={tmp_path / str(runs)}"],
                                   tmp_path, env)
            print(f"  packed sweep of {runs} runs: {seconds[runs]:.0f} s (load {os.getloadavg()[0]:.2f})", file=sys.stderr)
        peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1e6  # KB -> GB
    small, large = min(sizes), max(sizes)
    per_run = (seconds[large] - seconds[small]) / (large - small)
    fixed = seconds[small] - small * per_run
    out |= {"seconds": {str(k): v for k, v in seconds.items()}, "per_run_seconds": per_run, "fixed_seconds": fixed,
            "projected_100000_runs_minutes": (fixed + 1e5 * per_run) / 60, "peak_resident_GB": peak,
            "load_average_at_end": os.getloadavg()}
    return out


SEED_JOBS = {"pegasos": ["algorithm=pegasos", "n=1000", "d=10", "T=1000"], "perceptron": ["n=200", "d=5"]}
SEED_TARGETS = {"pegasos": (10_000, 60.0), "perceptron": (100_000, 120.0)}  # issue 53: seeds, seconds on 2 cores


SEED_PARTS = ("data", "learner alone", "learner, statistics, bounds", "the part's tables (rows, curves)")


def seed_costs(job_args: list[str], seeds: int) -> dict[str, float]:
    """Per seed, in this process (after a first seed that pays the imports and compilations): the data (generated
    and certified) and the run's learner, statistics (what the bounds read) and bounds (``pipeline.job.run.measure``),
    one after the other as a pack's member runs them; the learner alone (its run again on the same data, in a pass
    of its own: between the data and the run it would warm the run's learner, ~2 % of a Perceptron seed); and the
    tables a pack's part makes of its runs' rows and curves (``part_tables`` of the ``seeds`` runs: plumbing);
    seconds. As each of the round's workers computes: BLAS
    on one thread (two workers on two cores: ``pipeline.forks``), the command's cycle collector
    (``pipeline.sweep.interrupts.seldom_collection``), the objects made before the round frozen (``gc.freeze``, as
    at a worker's start)."""
    import gc

    import numpy as np
    from hydra import initialize_config_dir

    from pipeline.job.config import build
    from pipeline.job.run import measure, part_tables, prepare
    from pipeline.numerics import single_thread
    from pipeline.paths import CONF_DIR
    from pipeline.sweep import hydra_seam
    from pipeline.sweep.interrupts import seldom_collection
    from pipeline.sweep.schemas import register

    register()
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base=None):
        compose = hydra_seam.Composer()
        jobs = [build(compose([*job_args, f"seed={s}"])) for s in range(seeds + 1)]
    parts = dict.fromkeys(SEED_PARTS, 0.0)
    threshold, measured = gc.get_threshold(), []
    limit = single_thread()
    seldom_collection()
    gc.freeze()
    try:
        for i, job in enumerate(jobs):  # as a pack's member runs: its data, then its run (learner, statistics, bounds)
            t0 = time.perf_counter()
            ds = prepare(job)
            t1 = time.perf_counter()
            rows = measure(job, ds).rows
            t2 = time.perf_counter()
            if i:
                measured.append(rows)
                parts[SEED_PARTS[0]] += (t1 - t0) / seeds
                parts[SEED_PARTS[2]] += (t2 - t1) / seeds
        for i, job in enumerate(jobs):  # apart: the learner again on the same data would warm the run after it
            ds = prepare(job)
            t0 = time.perf_counter()
            job.learner.run(ds, np.random.default_rng(0))
            if i:
                parts[SEED_PARTS[1]] += (time.perf_counter() - t0) / seeds
        t = time.perf_counter()
        part_tables(measured)
        parts[SEED_PARTS[3]] = (time.perf_counter() - t) / seeds
    finally:
        gc.unfreeze()
        gc.set_threshold(*threshold)
        limit.restore_original_limits()
    return parts


def _runs_seconds(sweep_dir: Path) -> float:
    """What a packed sweep's runs cost in the round, seconds: the sum over its parts' markers of their runs' own
    time (``seconds.runs``: each member's data, learner, statistics and bounds, timed around it in its worker)."""
    total = 0.0
    for marker in sweep_dir.glob("pack-*/part-*.json"):
        total += float(json.loads(marker.read_text()).get("seconds", {}).get("runs", 0.0))
    return total


def bench_seeds(sizes: dict[str, int], pack: int, workers: int, probe: int, warm: bool = True) -> dict[str, Any]:
    """A seed round as a user runs it (``boundlab -m 'seed=range(0,N)' ... pack=P`` on ``workers`` forked
    workers, ``hydra/launcher=fork``, a fresh store, the kernels compiled by a small round first): its wall
    time from the command's start to its end (start-up, pre-flight, packs, the job store, tables, verdicts, figures), beside the
    per-seed cost of what a seed computes (:func:`seed_costs`, ``probe`` seeds). Plumbing is the rest: the
    wall time less the compute spread over the workers, as a share of the wall time. The compute twice: probed
    in this process before the round, and as the round's own runs took it (:func:`_runs_seconds`): on a shared
    machine the two sittings' speeds differ by several per cent (1.63 and 1.79 ms a Perceptron seed within an
    hour), which moves a share computed across them by several points; the round's own measure does not. Then a
    round of a fifth of the seeds: with it, the plumbing a command pays whatever its seeds (its start and its end)
    and the plumbing a seed adds, and the round from which the share is 20 % (:func:`_plumbing_model`)."""
    out: dict[str, Any] = {"pack": pack, "workers": workers}
    with tempfile.TemporaryDirectory() as tmp:
        tmp_path = Path(tmp)
        env = _as_a_user() | {"MLFLOW_TRACKING_URI": f"sqlite:///{tmp_path / 'mlflow.db'}",
                            "BOUNDLAB_CACHE": str(tmp_path / "cache")}
        for name, seeds in sizes.items():
            args = SEED_JOBS[name]
            base = [*boundlab_cmd(), "-m", *args, f"pack={pack}", "hydra/launcher=fork", f"hydra.launcher.n_jobs={workers}"]
            if warm:
                _timed([*base, "seed=range(0,4)", f"hydra.sweep.dir={tmp_path / (name + '-warm')}"], tmp_path, env)
            costs = seed_costs(args, probe)
            wall = _timed([*base, f"seed=range(0,{seeds})", f"hydra.sweep.dir={tmp_path / name}"], tmp_path, env)
            compute = costs["data"] + costs["learner, statistics, bounds"]  # the rest is plumbing
            plumbing = max(0.0, wall - seeds * compute / workers)
            in_round = _runs_seconds(tmp_path / name)  # the same, timed around each run in the round itself
            plumbing_in_round = max(0.0, wall - in_round / workers)
            out[name] = {"job": " ".join(args), "seeds": seeds, "wall_seconds": wall, "per_seed_ms": {
                k: 1e3 * v for k, v in costs.items()}, "compute_per_seed_ms": 1e3 * compute,
                "plumbing_share_of_wall": plumbing / wall, "compute_per_seed_ms_in_round": 1e3 * in_round / seeds,
                "plumbing_share_of_wall_in_round": plumbing_in_round / wall,
                "projected_10000_seeds_seconds": wall * 1e4 / seeds,
                "target_seeds": SEED_TARGETS[name][0], "projected_target_seconds": wall * SEED_TARGETS[name][0] / seeds,
                "load_average_at_end": os.getloadavg()}
            print(f"  {seeds} seeds of {name}: {wall:.1f} s, compute {1e3 * compute:.2f} ms a seed (in the round "
                  f"{1e3 * in_round / seeds:.2f}), plumbing {100 * plumbing / wall:.0f} % (in the round "
                  f"{100 * out[name]['plumbing_share_of_wall_in_round']:.0f} %; load {os.getloadavg()[0]:.2f})",
                  file=sys.stderr)
            small = max(seeds // 5, min(2 * pack, seeds // 2))
            if small < seeds:  # a smaller round: the plumbing's share of the command and its share of a seed apart
                # seeds of its own: the job store holds the larger round's, which a rerun of them would reuse
                small_wall = _timed([*base, f"seed=range({seeds},{seeds + small})",
                                     f"hydra.sweep.dir={tmp_path / (name + '-small')}"], tmp_path, env)
                out[name] |= _plumbing_model({small: (small_wall, _runs_seconds(tmp_path / (name + "-small"))),
                                              seeds: (wall, in_round)}, workers)
                model = out[name]["plumbing_model"]
                print(f"  {small} seeds of {name}: {small_wall:.1f} s; plumbing {model['fixed_seconds']:.1f} s a command "
                      f"and {model['per_seed_ms']:.3f} ms a seed against {model['compute_per_seed_ms']:.3f} ms of runs: "
                      f"20 % from {model['seeds_at_20_percent'] or 'no number of'} seeds", file=sys.stderr)
            fixed = out[name]["fixed_parts"] = _fixed_parts(tmp_path / name, env, 5 if seeds >= 1000 else 1)
            # the plumbing less MLflow's import: decision 1's "our share" of one run, read here for the seed round too
            out[name]["plumbing_less_mlflow_import_share"] = max(
                0.0, plumbing_in_round - fixed["mlflow_import_seconds"]["median"]) / wall
            print(f"  MLflow's import with its store {fixed['mlflow_import_seconds']['median']:.2f} s; the round's "
                  f"{fixed['figures']} figures {fixed['figures_cpu_seconds']:.2f} CPU s", file=sys.stderr)
    return out


IMPORT_CODE = """
import sys, time
import hydra, omegaconf, pipeline.cli  # what the command has imported when its tracking imports start
from pipeline.cli import _tracking_imports
names = _tracking_imports(sys.argv[1:])
for name in names[:names.index("sqlalchemy")]:  # numpy, pandas, ...: imported before, and used by the jobs too
    __import__(name)
t = time.perf_counter()
for name in names[names.index("sqlalchemy"):]:  # SQLAlchemy, MLflow and (unless a server) its SQL store
    __import__(name)
print(time.perf_counter() - t)
"""

FIGURES_CODE = """
import sys, tempfile, time
from pathlib import Path
import pandas as pd
from pipeline.outputs import plots
d = Path(sys.argv[1])
table, curves = pd.read_parquet(d / "results.parquet"), pd.read_parquet(d / "curves.parquet")
with tempfile.TemporaryDirectory() as out:
    t = time.process_time()
    plan = plots.figure_plan(table, curves)
    for s in plan:
        plots.save(plots.draw(s.kind, table, curves, **s.kwargs), Path(out), s.stem)
    print(time.process_time() - t, len(plan))
"""


def _fixed_parts(sweep_dir: Path, env: dict[str, str], reps: int) -> dict[str, Any]:
    """Two parts of what a seed round's command pays whatever its seeds, measured in the sitting of the round: MLflow's
    import with SQLAlchemy and its SQL store (seconds, ``reps`` fresh interpreters that first import what the
    command has imported by then: the command pays it before its first job, on one core), which issue 53's first
    decision leaves out of "our share" of one run; and the round's figures drawn and saved in one process (CPU
    seconds, the best of two: the sweep's end shares them between two processes)."""
    def run(code: str, *args: str) -> list[str]:
        return subprocess.run([sys.executable, "-c", code, *args], env=env, cwd=ROOT, capture_output=True, text=True,
                              check=True).stdout.split()

    imports = [float(run(IMPORT_CODE)[0]) for _ in range(reps)]
    figures = [run(FIGURES_CODE, str(sweep_dir)) for _ in range(2)]
    return {"mlflow_import_seconds": {"min": min(imports), "median": statistics.median(imports), "reps": reps},
            "figures_cpu_seconds": min(float(f[0]) for f in figures), "figures": int(figures[0][1])}


def _plumbing_model(rounds: dict[int, tuple[float, float]], workers: int) -> dict[str, Any]:
    """Two rounds of one setting ({seeds: (wall seconds, the runs' own seconds)}) read as the plumbing a command pays
    whatever its seeds (its start, the fixed part of its end: figures, exit) plus plumbing and runs that grow with
    the seeds (packs, parts, the end's tables and verdicts), all as the wall time they take on ``workers`` workers;
    and from them the fewest seeds at which the plumbing is <= 20 % of the wall time (None when its share a seed
    is 20 % or more: no round reaches it).

    >>> m = _plumbing_model({2000: (7.0, 8.0), 10000: (27.0, 44.0)}, 2)["plumbing_model"]
    >>> m["fixed_seconds"], m["per_seed_ms"], m["compute_per_seed_ms"], m["seeds_at_20_percent"]
    (2.5, 0.25, 2.2, 8334)
    """
    (n0, (w0, r0)), (n1, (w1, r1)) = sorted(rounds.items())
    p0, p1 = w0 - r0 / workers, w1 - r1 / workers
    per_seed = (p1 - p0) / (n1 - n0)
    fixed = p1 - per_seed * n1
    compute = r1 / workers / n1  # the runs' wall time a seed, the larger round's (the smaller one's first parts warm up)
    # (fixed + p n) / (fixed + (p + c) n) <= 0.2  <=>  n (0.2 c - 0.8 p) >= 0.8 fixed
    gain = 0.2 * compute - 0.8 * per_seed
    at = math.ceil(0.8 * fixed / gain) if gain > 0 and fixed > 0 else (1 if gain > 0 else None)
    return {"plumbing_model": {"rounds": {str(n): {"wall_seconds": w, "runs_seconds": r} for n, (w, r) in rounds.items()},
                               "fixed_seconds": fixed, "per_seed_ms": 1e3 * per_seed, "compute_per_seed_ms": 1e3 * compute,
                               "share_a_seed": per_seed / (per_seed + compute), "seeds_at_20_percent": at}}


BREAKDOWN_CODE = """
import json, sys, time
from pathlib import Path
from hydra import compose, initialize_config_dir
from pipeline import tracking
from pipeline.job import markers
from pipeline.job.config import build
from pipeline.paths import CONF_DIR
from pipeline.job.run import prepare, run
from pipeline.sweep.schemas import register
from pipeline.sweep.stages import write
reps, out_dir, args = int(sys.argv[1]), Path(sys.argv[2]), sys.argv[3:]
register()
with initialize_config_dir(config_dir=str(CONF_DIR), version_base=None):
    cfgs = [compose("config", overrides=[f"seed={s}", *args]) for s in range(reps + 1)]
uri = tracking.tracking_uri(None)
parts = {}
for j, cfg in enumerate(cfgs):
    marks = [("", time.perf_counter())]
    def mark(name):
        marks.append((name, time.perf_counter()))
    spec = build(cfg); mark("config")
    ds = prepare(spec); mark("data (generate, certify)")
    res = run(spec, ds); mark("learner and bounds")
    files = write(res, out_dir / str(j)); mark("write outputs")
    tr = tracking.backend(uri).job_run(uri, experiment="breakdown", name="x", parent_id=None,
                                       tags={"boundlab.config_hash": spec.key()})
    tr.finish({"seed": j}, res.table, res.curve, files); mark("mlflow")
    markers.record(out_dir / str(j), spec.key(), res.table["data_hash"].iloc[0]); mark("resume marker")
    if j:  # the first job pays imports and compilation
        for (_, a), (name, b) in zip(marks, marks[1:]):
            parts[name] = parts.get(name, 0.0) + (b - a) / reps
from pipeline.sweep.preflight import preflight
t = time.perf_counter()
preflight(["-m", f"seed=range(0,{reps})", *args])
parts["preflight (every job composed and validated before the first)"] = (time.perf_counter() - t) / reps
print(json.dumps(parts))
"""


def breakdown(job_args: list[str], env: dict[str, str], reps: int) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as tmp:
        proc = subprocess.run([sys.executable, "-c", BREAKDOWN_CODE, str(reps), tmp, *job_args], capture_output=True,
                              text=True, cwd=ROOT, env=env)
    if proc.returncode:
        raise RuntimeError(proc.stderr[-2000:])
    return json.loads(proc.stdout.strip().splitlines()[-1])


# --- main -------------------------------------------------------------------------------------------

SECTIONS = ("kernels", "kernel_pegasos", "cache", "startup", "compose", "single", "one_run", "stream", "files", "sweep", "packed",
            "seeds", "memory")


def main(argv: list[str] | None = None) -> dict[str, Any]:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tiny", action="store_true", help="tiny sizes (the test suite): seconds, timings meaningless")
    ap.add_argument("--only", default=None,
                    help=f"comma-separated sections of {', '.join(SECTIONS)} (default all; --tiny leaves out the sweep "
                         "and one_run)")
    ap.add_argument("--reps", type=int, default=None, help="repetitions per measurement (default 5, tiny 2)")
    ap.add_argument("--n", type=int, default=1_000_000, help="rows of the kernel benchmark")
    ap.add_argument("--max-entries", type=float, default=1e8,
                    help="cap on n x d per array (1e8 = 800 MB; d = 1000 then runs at n = 1e5; raise it for n = 1e6)")
    ap.add_argument("--stream-T", type=float, default=1e8, help="examples of the streamed run")
    ap.add_argument("--jobs", default="100,1000", help="comma-separated sweep sizes of the sweep comparison")
    ap.add_argument("--no-parallel", action="store_true", help="skip the joblib sweep")
    ap.add_argument("--learners", default=None,
                    help="comma-separated job kinds of the sweep section, by learner: "
                         f"{', '.join(k.split()[0] for k in SWEEP_JOBS)} (default both)")
    ap.add_argument("--packed", default="2000,10000", help="the two sizes (runs) of the packed sweep")
    ap.add_argument("--seeds", type=lambda v: [int(x) for x in v.split(",")], default=[10000, 100000],
                    help="seeds of the seed rounds: Pegasos (n=1000 d=10 T=1000), Perceptron (n=200 d=5); issue 53's "
                         "sizes by default (10,000 and 100,000)")
    ap.add_argument("--memory-jobs", type=lambda v: [int(x) for x in v.split(",")], default=[1000, 10000],
                    help="the two sweep sizes of the memory section (Perceptron n=200 d=5, one job a seed)")
    ap.add_argument("--out", type=Path, default=Path(__file__).with_name("results.json"))
    args = ap.parse_args(argv)
    only = set(args.only.split(",")) if args.only else set(SECTIONS) - ({"sweep", "one_run"} if args.tiny else set())
    unknown = only - set(SECTIONS)
    if unknown:
        ap.error(f"unknown section(s) {', '.join(sorted(unknown))}; choose from {', '.join(SECTIONS)}")
    learners = set(args.learners.split(",")) if args.learners else None
    if learners and learners - {k.split()[0] for k in SWEEP_JOBS}:
        ap.error(f"--learners: choose from {', '.join(k.split()[0] for k in SWEEP_JOBS)}")
    reps = args.reps or (2 if args.tiny else 5)
    n, dims, max_entries = (2000, [10, 100], 1e6) if args.tiny else (args.n, [10, 100, 1000], args.max_entries)
    earlier = json.loads(args.out.read_text()) if args.only and args.out.exists() else {}
    for stale in ("reps", "tiny"):  # once top-level, they described only the last section measured
        earlier.pop(stale, None)
    earlier.get("machine", {}).pop("load_average_at_start", None)
    # what each section was measured under: its own date, load, repetitions and command, kept with it when a
    # later --only re-measures other sections (the machine is shared: a section's load is its own)
    measured: dict[str, Any] = earlier.get("sections_measured", {})
    report: dict[str, Any] = earlier | {"machine": {"cpus": os.cpu_count(), "python": platform.python_version(),
                                                    "processor": platform.machine(), **cpu_model()},
                                        "sections_measured": measured}
    steps: dict[str, Callable[[], Any]] = {
        "kernels": lambda: bench_kernels(n, dims, reps, int(max_entries)),
        "kernel_pegasos": lambda: bench_kernel_pegasos(*((100, 3, 500) if args.tiny else (2000, 10, 20_000)), reps),
        "cache": lambda: bench_cache(1 if args.tiny else 3),
        "startup": lambda: bench_startup(reps),
        "compose": lambda: bench_compose(reps, 2 if args.tiny else 10),
        "stream": lambda: bench_stream(*((20_000, 10, 5000) if args.tiny else (int(args.stream_T), 10, 250_000))),
        "single": lambda: bench_single(1 if args.tiny else reps, warm=not args.tiny),
        "files": lambda: bench_files(args.tiny),
        "one_run": lambda: _one_run(1 if args.tiny else 3),
        "packed": lambda: bench_packed([4, 8] if args.tiny else [int(j) for j in str(args.packed).split(",")],
                                       pack=4 if args.tiny else 1000, workers=2, warm=not args.tiny),
        "seeds": lambda: bench_seeds({"perceptron": 6} if args.tiny else
                                     {"pegasos": args.seeds[0], "perceptron": args.seeds[1]},
                                     pack=10 if args.tiny else 500, workers=2, probe=3 if args.tiny else 1000,
                                     warm=not args.tiny),
        "memory": lambda: bench_sweep_memory([3, 6] if args.tiny else args.memory_jobs, ["n=200", "d=5"]),
        "sweep": lambda: bench_sweeps([3] if args.tiny else [int(j) for j in str(args.jobs).split(",")],
                                      parallel=not args.no_parallel, tiny=args.tiny, learners=learners),
    }
    for name in SECTIONS:
        if name in only:
            load = os.getloadavg()
            print(f"{name}: starting (load average {load[0]:.2f} on {os.cpu_count()} cores)", file=sys.stderr)
            t = time.perf_counter()
            report[name] = steps[name]()
            measured[name] = {"date": time.strftime("%Y-%m-%d"), "machine": report["machine"], "load_average_at_start": load,
                              "load_average_at_end": os.getloadavg(), "reps": reps, "tiny": args.tiny,
                              "seconds": round(time.perf_counter() - t, 1),
                              "command": " ".join(["python benchmarks/bench.py", *(argv if argv is not None else sys.argv[1:])])}
            print(f"{name}: done in {time.perf_counter() - t:.1f} s", file=sys.stderr)
            args.out.write_text(json.dumps(report, indent=2) + "\n")  # partial results survive a later failure
    print(table(report))
    return report


def cpu_model() -> dict[str, Any]:
    """The CPU's model name and cache sizes as the OS reports them (Linux: /proc/cpuinfo and sysfs): kernel
    ratios differ between machines, so every ratio is kept beside the machine it was measured on."""
    info: dict[str, Any] = {}
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                info["model"] = line.split(":", 1)[1].strip()
                break
    except OSError:
        info["model"] = platform.processor() or "unknown"
    caches = {}
    for index in sorted(Path("/sys/devices/system/cpu/cpu0/cache").glob("index*")):
        try:
            level, kind = (index / "level").read_text().strip(), (index / "type").read_text().strip()
            caches[f"L{level} {kind.lower()}"] = (index / "size").read_text().strip()
        except OSError:
            continue
    if caches:
        info["caches_per_core"] = caches
    return info


def _r(s: dict[str, float], fmt: str = "{:.2f}") -> str:
    return f"{fmt.format(s['median'])} ({fmt.format(s['min'])}..{fmt.format(s['max'])})"


def _target(value: float, limit: float, above: bool = False, unit: str = "") -> str:
    met = value >= limit if above else value <= limit
    return f"{'>=' if above else '<='} {limit:g}{unit}: {'met' if met else 'not met'}"


def table(report: dict[str, Any]) -> str:
    """The README's table: median (min..max) over repetitions of each same-round ratio, with the target."""
    lines = ["| measurement | ratio or value: median (min..max) | target |", "| --- | --- | --- |"]
    for key, r in report.get("kernels", {}).items():
        share = r["perceptron_share_of_floor"]
        goal = {"d=10": 0.5, "d=100": 0.8}.get(key)  # issue 34's targets for the Perceptron's pass
        lines += [
            f"| Perceptron {key}, n = {r['n']:.0e}: sklearn time / ours | {_r(r['perceptron_vs_sklearn'])}x | |",
            f"| Perceptron {key}: share of the streaming floor | {_r(share)} | "
            f"{_target(share['median'], goal, above=True) + ' (median)' if goal else ''} |",
            *([f"| Perceptron {key}: its whole pass as a share of the margins-only pass (same order, same rounds) | "
               f"{_r(r['perceptron_vs_margins'])} | {_target(r['perceptron_vs_margins']['median'], 0.9, above=True)} "
               "(median) |"] if "perceptron_vs_margins" in r else []),
            f"| Pegasos {key}: sklearn SGDClassifier time / ours | {_r(r['pegasos_vs_sklearn'])}x | |",
            f"| Pegasos {key}: share of the streaming floor | {_r(r['pegasos_share_of_floor'])} | |",
        ]
        if "pegasos_kernel_alone_share_of_floor" in r:
            lines += [
                f"| Pegasos {key}: its kernel alone, arrays allocated beforehand: share of the floor | "
                f"{_r(r['pegasos_kernel_alone_share_of_floor'])} | |",
                f"| one margin per row, stored (`margins_kernel`) {key}: share of the floor | "
                f"{_r(r['margins_share_of_floor'])} | |",
            ]
        if "pegasos_kernel_alone_vs_margins" in r:
            mine = r["pegasos_kernel_alone_vs_margins"]
            lines.append(f"| Pegasos {key}: its kernel alone as a share of the margins-only pass (same rounds) | "
                         f"{_r(mine)} | {_target(mine['median'], 0.8, above=True)} (median) |")
        if "fixed_order_ceiling_share_of_floor" in r:
            lines += [
                f"| {key}, data in cache: the fixed-order margins' arithmetic as a share of the floor (the ceiling "
                f"of any pass in that order) | {_r(r['fixed_order_ceiling_share_of_floor'])} | |",
                f"| {key}, data in cache: the Perceptron's pass as a share of the floor | "
                f"{_r(r['perceptron_in_cache_share_of_floor'])} | |",
            ]
    if "kernel_pegasos" in report:
        r = report["kernel_pegasos"]
        lines.append(f"| kernel Pegasos m = {r['m']}, T = {r['T']}: NumPy time / ours | {_r(r['speedup_vs_numpy'])}x | |")
    if "cache" in report:
        r = report["cache"]
        lines.append(f"| first pass in a new process, cached / compiling (s) | {_r(r['first_pass_seconds_cached'], '{:.3f}')}"
                     f" / {_r(r['first_pass_seconds_compiling'], '{:.2f}')} | |")
    for key, r in report.get("startup", {}).items():
        what = "`boundlab --help`" if key == "help" else "`boundlab gamma=2.0` (a rejected config)"
        lines.append(f"| {what} (s) | {_r(r['seconds'])} | {_target(r['seconds']['median'], 1.0, unit=' s')} (median) |")
    if "compose" in report:
        r = report["compose"]
        lines.append(f"| a composition of boundlab's config, Hydra's own / with the seam's shallow copy and kept reads | "
                     f"{_r(r['hydra_over_boundlab'])}x ({r['ms_per_composition']['hydra']['median']:.0f} ms vs "
                     f"{r['ms_per_composition']['boundlab']['median']:.0f} ms; same configs: {r['same_configs']}) | |")
    if "single" in report:
        r = report["single"]
        lines.append(f"| default `boundlab` (one run) / a bare Hydra app's single run | {_r(r['boundlab_over_bare_hydra'])}x "
                     f"({r['seconds']['boundlab']['median']:.2f} s vs {r['seconds']['bare_hydra']['median']:.2f} s) | "
                     f"{_target(r['boundlab_over_bare_hydra']['median'], 3.0)} |")
    if "stream" in report and "seconds" in report["stream"]:
        r = report["stream"]
        lines.append(f"| streamed Perceptron, T = {r['T']:.0e}, d = {r['d']}: seconds, peak RSS | {r['seconds']:.1f} s, "
                     f"{r['peak_rss_MiB']:.0f} MiB | |")
    for name, r in report.get("files", {}).items() if isinstance(report.get("files"), dict) else ():
        if isinstance(r, dict) and "seconds" in r:
            limit = r.get("target_seconds")
            lines.append(f"| `boundlab dataset=file` on {name}: wall s, peak RSS / data bytes | {r['seconds']:.1f} s, "
                         f"{r.get('peak_rss_bytes', 0) / 2**30:.2f} GiB = "
                         f"{r.get('rss_per_data_byte', float('nan')):.1f}x the data | "
                         f"{_target(r['seconds'], limit, unit=' s') if limit else ''} |")
    for name, r in report.get("sweep", {}).items():
        if not isinstance(r, dict) or "per_job_over_bare_hydra" not in r:
            continue
        lines.append(f"| sweep, {name}: per-job cost / bare Hydra's | {r['per_job_over_bare_hydra']:.2f} "
                     f"({r['per_job_seconds']['boundlab']:.3f} s vs {r['per_job_seconds']['bare_hydra']:.3f} s) | "
                     f"{_target(r['per_job_over_bare_hydra'], SWEEP_TARGETS[name.split()[0]])} |")
        if "parallel" in r:
            lines.append(f"| the same, joblib n_jobs=2: wall-time speed-up over the basic launcher | "
                         f"{r['parallel']['speedup_wall_vs_basic']:.2f}x | "
                         f"{_target(r['parallel']['speedup_wall_vs_basic'], 1.7, above=True)} |")
    seeds = report.get("seeds", {})
    for name, (size, goal) in SEED_TARGETS.items():  # issue 53: 10,000 Pegasos seeds in 60 s; 100,000 Perceptron in 2 min
        r = seeds.get(name)
        if not isinstance(r, dict):
            continue
        parts = ", ".join(f"{k} {v:.2f}" for k, v in r["per_seed_ms"].items())
        projected = r["wall_seconds"] * size / r["seeds"]
        lines += [f"| {r['seeds']} seeds of {name} ({r['job']}, pack={seeds['pack']}, {seeds['workers']} workers): wall"
                  + ("" if r["seeds"] == size else f", projected to {size:,}") + " | "
                  + (f"{r['wall_seconds']:.1f} s" if r["seeds"] == size else f"{r['wall_seconds']:.1f} s, {projected:.0f} s")
                  + f" | {_target(projected, goal, unit=' s')} |",
                  f"| the same: per seed (ms) in one process | {parts} | |"]
        probed = 100 * r["plumbing_share_of_wall"]
        if "plumbing_share_of_wall_in_round" in r:  # the runs' own time in the round (bench_seeds)
            share = 100 * r["plumbing_share_of_wall_in_round"]
            lines.append(f"| the same: plumbing (the wall time less the runs' own time in the round over the workers; "
                         f"{r['compute_per_seed_ms_in_round']:.2f} ms a seed) | {share:.0f} % (with the compute probed in "
                         f"one process: {probed:.0f} %) | {_target(share, 20, unit=' %')} |")
        else:
            lines.append(f"| the same: plumbing (the wall time less the compute over the workers) | {probed:.0f} % | "
                         f"{_target(probed, 20, unit=' %')} |")
        model = r.get("plumbing_model")
        if model:  # two rounds: the command's own plumbing and a seed's apart
            sizes = " and ".join(f"{int(k):,}" for k in sorted(model["rounds"], key=int))
            lines.append(f"| the same, rounds of {sizes} seeds: plumbing a command (whatever its seeds) / a seed, "
                         f"against a seed's runs | {model['fixed_seconds']:.1f} s / {model['per_seed_ms']:.3f} ms "
                         f"against {model['compute_per_seed_ms']:.3f} ms ({100 * model['share_a_seed']:.0f} % a seed); "
                         f"<= 20 % from ~{model['seeds_at_20_percent'] or 'no number of'} seeds | |")
        fixed = r.get("fixed_parts")
        if fixed:  # what the command's fixed plumbing is made of, measured in the same sitting
            imports = fixed["mlflow_import_seconds"]
            lines += [f"| the same: two parts of the command's fixed plumbing: MLflow's import with its SQL store (a "
                      f"fresh interpreter, min / median of {imports['reps']}); the round's {fixed['figures']} figures "
                      f"drawn and saved in one process (CPU, shared by two at the sweep's end) | {imports['min']:.2f} / "
                      f"{imports['median']:.2f} s; {fixed['figures_cpu_seconds']:.1f} s | |",
                      f"| the same: plumbing less MLflow's import with its store (the rule of issue 53's first decision "
                      f"for one run, not decided for a seed round) | "
                      f"{100 * r['plumbing_less_mlflow_import_share']:.0f} % | |"]
    memory = report.get("memory")
    if isinstance(memory, dict) and "peak_growth_MB" in memory:
        sizes = sorted((k for k in memory if k.isdigit()), key=int)
        peaks = ", ".join(f"{k} jobs {memory[k]['peak_resident_MB']:.0f} MB (tables {memory[k]['tables_MB']:.1f} MB)"
                          for k in sizes)
        lines.append(f"| sweep memory ({memory['job']}, one job a seed): peak resident | {peaks}; growth "
                     f"{memory['peak_growth_MB']:.0f} MB = {memory['growth_over_larger_tables']:.2f}x the larger tables | "
                     f"<= 2x: {'met' if memory['met'] else 'not met'} |")
    return "\n".join(lines)


if __name__ == "__main__":
    main()
