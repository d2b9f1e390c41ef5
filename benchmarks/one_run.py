"""Where one ``boundlab`` run's time goes, cold and warm (docs/performance.md, "One run").

Each run is a new process, as a user's command is, timed from the outside (wall) and from the inside: the
phases below are measured by wrapping the functions that do them, so a phase's seconds are its own and the
rest ("start, Hydra, logging") is the difference.

- **cold**: nothing compiled (an empty numba cache directory) and a new MLflow store, as the first run
  after a fresh clone;
- **warm**: the same caches and store again, as every later run;
- **warm, Python's own exit**: the same, ending as a plain Python program ends (the modules torn down),
  as the command did before :func:`pipeline.sweep.interrupts.quick_exit`.

Alternated with a bare Hydra app's single run (the ratio's denominator), each contender in its own output
directory. The load average is printed at the start; the machine is shared, so min and median are reported.

    python benchmarks/one_run.py --reps 3 [--out one_run.json]
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))
from timing import BARE_APP  # noqa: E402
from timing import timed as _run  # noqa: E402 - the same timed, checked subprocess

# Run in the child: wrap each phase's function, run the command, write the phases' seconds as JSON.
PROBE = textwrap.dedent("""
    import json, sys, time
    T0 = time.perf_counter()
    phases = {}
    def wrap(owner, name, phase):
        inner = getattr(owner, name)
        def timed(*a, **k):
            t = time.perf_counter()
            try:
                return inner(*a, **k)
            finally:
                phases[phase] = phases.get(phase, 0.0) + time.perf_counter() - t
        setattr(owner, name, timed)
    t = time.perf_counter()
    import numba.core.caching as caching, numba.core.dispatcher as dispatcher
    import pipeline.cli, pipeline.sweep.stages as stages
    phases["import: the command (Hydra, numba, the package's entry)"] = time.perf_counter() - t
    t = time.perf_counter()
    import pipeline.job.run, pipeline.job.identity as identity, pipeline.sweep.preflight as preflight
    phases["import: the run path (pandas, statistics, learners)"] = time.perf_counter() - t
    t = time.perf_counter()
    import pipeline.tracking.clients as clients, pipeline.tracking.runs as runs
    wrap(preflight, "checked_plan", "pre-flight check (composition, validation)")
    wrap(identity, "job_code", "the job's code identity (import closure)")
    wrap(pipeline.job.run, "prepare", "data and certificate")
    wrap(clients, "_open_client", "MLflow: import and open the store")
    wrap(caching.Cache, "load_overload", "numba: load kernels from the disk cache (first: numba's set-up)")
    wrap(dispatcher.Dispatcher, "compile", "numba: compile or load, in all")
    wrap(pipeline.job.run, "run", "learner, statistics, bounds (kernels included)")
    wrap(stages, "write", "writing the results")
    wrap(runs.JobRun, "finish", "MLflow: logging the run")
    def done():  # registered last, so the first exit handler to run
        phases["in all (inside)"] = time.perf_counter() - T0
        open(OUT, "w").write(json.dumps(phases))
    import atexit
    atexit.register(done)
    sys.argv = ["boundlab", *sys.argv[2:]]
    if ENTRY == "command":
        pipeline.cli.command()  # the console script's entry: it ends the process
    try:
        pipeline.cli.main()  # Python's own exit: the modules torn down
    except SystemExit as e:
        if e.code not in (0, None):
            raise
""")


MLFLOW = "MLflow: import and open the store"


def boundlab(tmp: Path, tag: str, env: dict[str, str], entry: str = "command") -> dict[str, float]:
    out = tmp / f"{tag}.json"
    code = f"OUT, ENTRY = {str(out)!r}, {entry!r}\n" + PROBE
    wall = _run([sys.executable, "-c", code, "-", f"hydra.run.dir={tmp / tag}"], tmp, env)
    phases = json.loads(out.read_text())
    return {"wall": wall, **phases}


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--out", type=Path)
    args = ap.parse_args(argv)
    print(f"load average at start: {os.getloadavg()}", flush=True)
    rows: dict[str, list[dict[str, float]]] = {"cold": [], "warm": [], "warm, Python's own exit": []}
    bare: list[float] = []
    with tempfile.TemporaryDirectory() as t:
        tmp = Path(t)
        (tmp / "bare.py").write_text(BARE_APP)
        for rep in range(args.reps):
            cache = tmp / f"numba{rep}"
            env = os.environ | {"NUMBA_CACHE_DIR": str(cache), "BOUNDLAB_CACHE": str(tmp / f"cache{rep}"),
                                "MLFLOW_TRACKING_URI": f"sqlite:///{tmp / f'mlflow{rep}.db'}",
                                "PYTHONPATH": str(ROOT)}
            bare.append(_run([sys.executable, str(tmp / "bare.py"), f"hydra.run.dir={tmp / f'b{rep}'}"], tmp, env))
            rows["cold"].append(boundlab(tmp, f"cold{rep}", env))
            bare.append(_run([sys.executable, str(tmp / "bare.py"), f"hydra.run.dir={tmp / f'c{rep}'}"], tmp, env))
            rows["warm"].append(boundlab(tmp, f"warm{rep}", env))
            rows["warm, Python's own exit"].append(boundlab(tmp, f"teardown{rep}", env, entry="main"))
    report: dict = {"load_at_start": os.getloadavg(), "bare_hydra_wall": {"min": min(bare), "median": statistics.median(bare)}}
    for kind, runs in rows.items():
        keys = list(runs[0])
        report[kind] = {k: {"min": min(r[k] for r in runs), "median": statistics.median(r[k] for r in runs)} for k in keys}
        report[kind]["over_bare_hydra"] = min(r["wall"] for r in runs) / min(bare)
        # issue 53's decided target: our share (the wall time less MLflow's own import and store opening) <= 1x
        ours = [r["wall"] - r.get(MLFLOW, 0.0) for r in runs]
        report[kind]["our_share"] = {"min": min(ours), "median": statistics.median(ours)}
        report[kind]["our_share_over_bare_hydra"] = min(ours) / min(bare)
    for kind in rows:
        print(f"\n{kind}: wall {report[kind]['wall']['min']:.2f} s min, {report[kind]['wall']['median']:.2f} s median; "
              f"{report[kind]['over_bare_hydra']:.1f}x a bare Hydra run ({min(bare):.2f} s); our share (less "
              f"MLflow's import and store) {report[kind]['our_share']['min']:.2f} s = "
              f"{report[kind]['our_share_over_bare_hydra']:.1f}x")
        print("| phase | seconds (min) | median |\n| --- | ---: | ---: |")
        for k, v in report[kind].items():
            if isinstance(v, dict) and k not in ("wall", "our_share"):
                print(f"| {k} | {v['min']:.2f} | {v['median']:.2f} |")
    if args.out:
        args.out.write_text(json.dumps(report, indent=1) + "\n")
    return report


if __name__ == "__main__":
    main()
