"""Helpers the test modules share (pytest puts this directory on sys.path: ``from helpers import ...``)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]


def with_sitecustomize(tmp_path: Path, code: str, env: dict[str, str]) -> dict[str, str]:
    """``env`` with a ``sitecustomize.py`` holding ``code`` on PYTHONPATH, so that a subprocess (a sweep and
    its jobs) runs it first: how faults are injected into the command."""
    site = tmp_path / "site"
    site.mkdir(exist_ok=True)
    (site / "sitecustomize.py").write_text(code)
    return env | {"PYTHONPATH": os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")])}


def inject_fault(monkeypatch, target: str, call: int = 0) -> None:  # noqa: ANN001
    """In this process, what ``test_reliability_faults.INJECTOR`` does in a ``boundlab`` subprocess: wrap
    ``target`` ("module:Attr.path") so that its call number ``call`` (0: every call) raises
    RuntimeError('injected fault ...'). For a command run with ``boundlab_in_process``, whose jobs (basic
    launcher) and callbacks run here; ``monkeypatch`` restores the original."""
    import functools
    import importlib

    module_name, _, path = target.partition(":")
    owner = importlib.import_module(module_name)
    *parents, attr = path.split(".")
    for p in parents:
        owner = getattr(owner, p)
    original = getattr(owner, attr)
    calls = [0]

    @functools.wraps(original)
    def faulty(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202
        calls[0] += 1
        if call in (0, calls[0]):
            raise RuntimeError(f"injected fault in {path} (call {calls[0]})")
        return original(*args, **kwargs)

    monkeypatch.setattr(owner, attr, faulty)


_TEMPLATE: list[Path] = []  # an empty MLflow SQLite store with every migration applied, made once per process


def migrated_store(db: Path) -> str:
    """The URI of an MLflow store at ``db``: if there is none yet, a new, empty one, copied from one made
    (and migrated) once per test process. Creating a SQLite store runs MLflow's ~30 schema migrations (seconds); a
    sweep's test is about
    what the sweep records, not about the store's creation, which the tests that open a store afresh (the
    autouse ``_private_stores`` and the concurrency tests that race to create one) keep covering."""
    import atexit
    import shutil
    import tempfile

    if not _TEMPLATE:
        import mlflow

        where = Path(tempfile.mkdtemp(prefix="boundlab-store-"))
        atexit.register(shutil.rmtree, where, True)
        mlflow.MlflowClient(tracking_uri=f"sqlite:///{where / 'mlflow.db'}").search_experiments()
        _TEMPLATE.append(where / "mlflow.db")
    if not db.exists():
        db.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(_TEMPLATE[0], db)
    return f"sqlite:///{db}"


def copy_project(dest: Path) -> None:
    """The project's files as git sees them (tracked, and new ones not ignored) copied into ``dest``, without
    DVC's outputs and cache: what a fresh clone holds. Symbolic links (conf/experiment) stay links.

    Also numba's disk cache of the compiled kernels (``pipeline/**/__pycache__/*.nbi``, ``*.nbc``, as far as
    this checkout has compiled them). The sources keep their modification times
    (``copy2``), which is what numba's index checks, so the copy loads the kernels instead of compiling them
    again: the same machine code, the same bits, seconds less per kernel. numba writes a cache file whole
    (a temporary file, then a rename), so a file another worker is writing is copied old or new, never
    half; a kernel whose files are missing or stale is compiled, as in a fresh clone."""
    listed = subprocess.run(["git", "ls-files", "-co", "--exclude-standard"], cwd=ROOT, capture_output=True,
                            text=True, check=True).stdout.splitlines()
    for rel in listed:
        src = ROOT / rel
        if (rel.startswith(("results/", "report/", ".dvc/cache", ".dvc/tmp")) and rel != "report/claims.json"
                or not (src.exists() or src.is_symlink())):  # claims.json: in git (cache: false), a clone has it
            continue
        (dest / rel).parent.mkdir(parents=True, exist_ok=True)
        if src.is_symlink():
            (dest / rel).symlink_to(os.readlink(src))
        else:
            shutil.copy2(src, dest / rel)
    for cached in ROOT.glob("pipeline/**/__pycache__/*.nb[ic]"):
        (dest / cached.relative_to(ROOT)).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(cached, dest / cached.relative_to(ROOT))


def file_order(selected: list[tuple[str, str]], known: dict[str, dict[str, float]],
               estimate: dict[str, float]) -> list[str]:
    """The files of ``selected`` (a (file, tier) pair per selected test), longest first (ties by name). A file's
    time is the sum over the tiers it has selected tests of: its measured seconds in that tier (``known``),
    else ``estimate[tier]`` per test.

    >>> file_order([("a", "fast")] * 30 + [("b", "slow")], {}, {"slow": 15.0, "fast": 0.1})
    ['b', 'a']
    >>> file_order([("a", "fast")] * 30 + [("b", "slow")], {"a": {"fast": 20.0}}, {"slow": 15.0, "fast": 0.1})
    ['a', 'b']
    >>> file_order([("docs", "fast"), ("c", "fast"), ("c", "fast")], {"docs": {"slow": 300.0, "fast": 0.01}},
    ...            {"slow": 15.0, "fast": 0.1})  # only docs' fast tests are selected
    ['c', 'docs']
    """
    counts: dict[str, dict[str, int]] = {}
    for file, tier in selected:
        counts.setdefault(file, {})
        counts[file][tier] = counts[file].get(tier, 0) + 1
    cost = {file: sum(known.get(file, {}).get(tier, estimate[tier] * n) for tier, n in tiers.items())
            for file, tiers in counts.items()}
    return sorted(cost, key=lambda f: (-cost[f], f))


def signal_once_started(argv: list[str], flag: Path, sig: int, cwd: Path, env: dict[str, str],
                        timeout: float = 120) -> tuple[int, str]:
    """Run the installed ``boundlab argv`` in a session of its own, wait until ``flag`` exists (an injected
    hang touches it), send ``sig`` to the whole process group; return (exit code, stderr)."""
    import sys
    import time

    proc = subprocess.Popen([str(Path(sys.executable).parent / "boundlab"), *argv], cwd=cwd, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, start_new_session=True)
    deadline = time.time() + 300
    while time.time() < deadline and not flag.exists() and proc.poll() is None:
        time.sleep(0.05)
    assert flag.exists(), f"{flag.name} never appeared: {proc.stderr.read()[-3000:] if proc.poll() is not None else ''}"
    os.killpg(proc.pid, sig)
    _, err = proc.communicate(timeout=timeout)
    return proc.returncode, err


def tiny_results(dest: Path, name: str, figures: bool = False) -> None:
    """results/NAME as a 2-job sweep publishes it (tables and summary; its figures too with ``figures``), from
    jobs run here: no Hydra multirun, no MLflow store (whose creation alone costs seconds). The default
    learner (the Perceptron, n = 50, seeds 0 and 1) and its bounds."""
    import json

    import pandas as pd
    from hydra import compose, initialize_config_dir

    from pipeline import plots
    from pipeline.callbacks import summary
    from pipeline.paths import CONF_DIR
    from pipeline.config import build
    from pipeline.run import run
    from pipeline.schemas import register

    register()
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base=None):
        runs = [run(build(compose("config", overrides=[f"seed={seed}", "n=50", f"name={name}"]))) for seed in (0, 1)]
    table = pd.concat([r.table for r in runs], ignore_index=True)
    curves = pd.concat([r.curve for r in runs], ignore_index=True)
    dest.mkdir(parents=True)
    table.to_parquet(dest / "results.parquet", index=False)
    curves.to_parquet(dest / "curves.parquet", index=False)
    (dest / "metrics.json").write_text(json.dumps(summary(table) | {"failed_jobs": 0}, indent=2) + "\n")
    if figures:
        plots.sweep_figures(table, curves, dest)


def small_separable(seed: int, n: int, off: float = 0.02) -> tuple[np.ndarray, np.ndarray]:
    """n Gaussian points in 2..5 dimensions, labelled by a random unit w*, pushed ``off`` off its boundary: the
    small separable samples the adversaries' searches are checked on against brute force."""
    rng = np.random.default_rng(seed)
    d = int(rng.integers(2, 6))
    w = rng.normal(size=d)
    w /= np.linalg.norm(w)
    X = rng.normal(size=(n, d))
    y = np.where(X @ w >= 0, 1.0, -1.0)
    return X + off * y[:, None] * w, y
