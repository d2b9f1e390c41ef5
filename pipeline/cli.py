"""The ``boundlab`` command: a Hydra app whose every job is validated before any work starts.

``main`` runs the pre-flight first (``pipeline.sweep.preflight``: the whole sweep checked, a bad value stopped
with one line on stderr and exit code 2, before an output directory or an MLflow run exists), then the run
or the sweep, in rounds for ``seeds=auto``. From its first line a stop guard
(``pipeline.sweep.interrupts.StopGuard``) makes Ctrl-C, SIGTERM and SIGHUP end the command within seconds, its
runs KILLED. Heavy libraries (numba, mlflow, pandas) are imported only by jobs. What it needs of Hydra's
private internals (the ``--help`` listing) it reaches through ``pipeline.sweep.hydra_seam``.
"""

from __future__ import annotations

import os
import time
import sys
from typing import NoReturn, Sequence

import hydra
from omegaconf import DictConfig

# context (sweep) also registers the config's ${boundlab:...} resolver
from pipeline.sweep import context as sweep, hydra_seam, interrupts, preflight
from pipeline.paths import CONF_DIR, fault
from pipeline.sweep.preflight import Plan, fail


@hydra.main(version_base=None, config_path=str(CONF_DIR), config_name="config")
def _app(cfg: DictConfig) -> None:
    from pipeline.params import UserError
    from pipeline.sweep.stages import job

    if cfg.get("pack_members"):  # a pack job of a packed sweep (pack=N): its members, part by part
        from pipeline.sweep.pack import run_pack as job
    try:
        job(cfg)
    except UserError as e:  # found once the data exist (a data file, a batch larger than the sample)
        fail(str(e))
    except Exception as e:  # a single run's (a sweep's jobs keep theirs): one the command words is one line
        if fault(e):
            raise hydra_seam.Explained(str(fault(e))) from None
        raise


class _Rounds(Exception):
    """The pre-flight found ``seeds=auto``: the command runs the sweep in rounds (:func:`_sequential`)."""

    def __init__(self, budget: int, step: int, minutes: float | None = None, unit: int = 1) -> None:
        super().__init__(budget, step, minutes, unit)
        self.budget, self.step, self.minutes, self.unit = budget, step, minutes, unit


def command() -> NoReturn:
    """The ``boundlab`` console script: :func:`main`, then the process ends at once
    (:func:`pipeline.sweep.interrupts.quick_exit`: the exit handlers run, the modules are not torn down), quietly
    when the reader of its output has gone (``boundlab --help | head -1``). An exception other than
    ``SystemExit`` takes Python's own way out (its traceback, then the teardown)."""
    interrupts.seldom_collection()
    try:
        interrupts.quick_exit(interrupts.until_the_reader_leaves(main))
    except SystemExit as e:
        interrupts.quick_exit(e.code)


def main(argv: Sequence[str] | None = None) -> None:
    """The command's work, in the calling process (the console script is :func:`command`; tests and the DVC
    stage call this)."""
    argv = _credentials_aside(list(sys.argv[1:] if argv is None else argv))
    try:
        _once(argv)
    except _Rounds as r:
        _sequential(argv, r.budget, r.step, r.minutes, r.unit)


URI_KEYS = ("tracking.uri=", "+tracking.uri=", "++tracking.uri=")


def _credentials_aside(argv: list[str]) -> list[str]:
    """A tracking server's URL with a user and password (``http://user:secret@host``), given as
    ``tracking.uri=`` or ``MLFLOW_TRACKING_URI``, is accepted as MLflow accepts it, but the password never
    reaches a config Hydra saves, an MLflow parameter or a message: the credentials move to the variables
    MLflow reads them from (``MLFLOW_TRACKING_USERNAME``/``PASSWORD``) and the URL goes on without them.
    A database URI keeps its password (SQLAlchemy reads it there): every place that shows or stores it
    redacts it (``pipeline.tracking.redact``)."""
    if not any(a.startswith(URI_KEYS) for a in argv) and "@" not in os.environ.get("MLFLOW_TRACKING_URI", ""):
        return argv
    from pipeline.tracking import split_credentials

    env_uri = os.environ.get("MLFLOW_TRACKING_URI", "")
    if env_uri:
        clean, credentials = split_credentials(env_uri)
        if credentials:
            os.environ.update(credentials)
            os.environ["MLFLOW_TRACKING_URI"] = clean
    out = []
    for arg in argv:
        if arg.startswith(URI_KEYS):
            key, _, value = arg.partition("=")
            quoted = len(value) >= 2 and value[0] == value[-1] and value[0] in "'\""
            clean, credentials = split_credentials(value[1:-1] if quoted else value)
            if credentials:
                os.environ.update(credentials)
                arg = f"{key}={value[0]}{clean}{value[0]}" if quoted else f"{key}={clean}"
        out.append(arg)
    return out


def _open_claims(last: dict) -> list[str]:
    """The (E) and (P) bounds of the last round that more seeds could still decide: the experiment's claims
    (every (E)/(P) bound of the sweep when it states none) that are inconclusive with informative settings
    and not blocked by a quantity without a declared top (no number of seeds decides those)."""
    from pipeline.judging.guarantees import guarantee

    stats = last.get("stats", {})
    wanted = [c["bound"] for c in last.get("claims", []) if guarantee(c["guarantee"]).over_seeds] or \
        [b for b, s in stats.items() if isinstance(s, dict) and guarantee(s.get("guarantee")).over_seeds]
    open_ = []
    for b in wanted:
        s = stats.get(b)
        if not isinstance(s, dict) or s.get("verdict") != "inconclusive" or not s.get("settings_informative"):
            continue
        if any("no upper end" in why for why in s.get("blocked_by", [])) and not s.get("seeds_needed"):
            continue
        open_.append(b)
    return open_


def _whole(k: int, unit: int, budget: int) -> int:
    """``k`` seeds rounded up to whole packs of ``unit`` (a packed round: each pack one block of a setting's
    seeds, reused by the next round: ``pipeline.sweep.pack.by_setting``), at most ``budget``."""
    return min(budget, -(-k // unit) * unit)


def _next_size(n: int, step: int, budget: int, needs: dict[str, int | None], unit: int = 1) -> int:
    """The seeds per setting of the round after one of ``n``: at least ``step`` more, and at once as many as
    the plan of any open claim asks for (``needs``: its ``seeds_needed`` at the observed values) within the
    budget, so that a claim the plan shows decidable is decided in one more round, not in many; in whole
    packs of ``unit`` (:func:`_whole`). The tests are anytime-valid (docs/bounds.md section 9): where the
    rounds stop never changes their level."""
    within = [k for k in needs.values() if k is not None and n < k <= budget]
    return _whole(max([n + step, *within]), unit, budget)


def _sequential(argv: list[str], budget: int, step: int, minutes: float | None = None, unit: int = 1) -> None:
    """``seeds=auto``: run the sweep with seeds 0..n-1, n growing in rounds up to ``budget`` (each round a
    sweep of its own; earlier seeds' jobs are reused from the job store, also under ``force=true``: each
    seed is rerun once per command), until every (E)/(P) claim is decided or cannot be by more seeds.
    The first round has ``step`` seeds; each next one ``step`` more, or as many as the plan of an open claim
    asks for (:func:`_next_size`). ``minutes``: a round that the last rounds' pace says would end after
    that many minutes from the start is cut to what fits, and none starts when not one more seed fits.
    The verdicts use anytime-valid tests, so stopping at any round keeps their level (docs/bounds.md
    section 9). ``unit``: a packed sweep's ``pack``; its rounds add seeds in whole packs, each pack one block
    of one setting's seeds, and reuse the earlier rounds' packs from the job store (``pipeline.sweep.pack``)."""
    from pipeline.sweep import callbacks
    from pipeline.judging.guarantees import guarantee

    began, n, done, spent, r, why = time.monotonic(), _whole(step, unit, budget), 0, 0.0, 0, ""
    while True:
        r += 1
        print(f"boundlab: seeds=auto: round {r}: seeds 0-{n - 1} (budget {budget}"
              + (f", {minutes:g} min" if minutes else "") + f"){why}", flush=True)
        callbacks.LAST.clear()
        t0 = time.monotonic()
        _once([*argv, f"seed=range(0,{n})"], in_round=True, forced_from=done or None)
        spent, done = spent + time.monotonic() - t0, n
        open_ = _open_claims(callbacks.LAST)
        stats = callbacks.LAST.get("stats", {})
        decided = [f"{b} {s['verdict']} at {s.get('decided_at') or n} seeds" for b, s in stats.items()
                   if isinstance(s, dict) and guarantee(s.get("guarantee")).over_seeds
                   and s.get("verdict") in ("holds", "violated")]
        if not open_:
            print(f"boundlab: seeds=auto: done after {n} seeds per setting" + (f"; {', '.join(decided)}" if decided else "")
                  + "; nothing left that more seeds could decide", flush=True)
            return
        if n >= budget:
            print(f"boundlab: seeds=auto: the budget of {budget} seeds is spent; undecided: {', '.join(open_)}", flush=True)
            return
        needs = {b: stats[b]["seeds_needed"] for b in open_ if isinstance(stats.get(b), dict) and "seeds_needed" in stats[b]}
        # a claim with no plan (None: its mean is not below the bound, where more seeds can still show a violation)
        # keeps the rounds going
        if len(needs) == len(open_) and all(k is not None and k > budget for k in needs.values()):
            # the plan from the observed values: no claim left open is decided within the budget (stopping for
            # futility never makes a "holds" or "violated" more likely: the tests are anytime-valid)
            plan = ", ".join(f"{b} (needs about {k} seeds)" for b, k in needs.items())
            print(f"boundlab: seeds=auto: stopped after {n} seeds per setting: at the observed values the budget of "
                  f"{budget} seeds cannot decide {plan}; raise seed_budget to go on", flush=True)
            return
        nxt = _next_size(n, step, budget, needs, unit)
        if minutes is not None:  # the pace so far (seconds per seed of a setting) says how many more fit
            left = minutes * 60 - (time.monotonic() - began)
            fits = int(left / (spent / n)) if spent > 0 else nxt - n
            fits -= fits % unit  # whole packs
            if fits < 1:
                print(f"boundlab: seeds=auto: stopped after {n} seeds per setting: the next seeds would end after "
                      f"the budget of {minutes:g} min (about {spent / n:.2g} s a seed); undecided: {', '.join(open_)}; "
                      "raise seed_minutes to go on (the same command reuses every finished seed)", flush=True)
                return
            nxt = min(nxt, n + fits)
        print(f"boundlab: seeds=auto: still undecided after {n} seeds: {', '.join(open_)}", flush=True)
        asks = [f"{b} about {k}" for b, k in needs.items() if k is not None and n < k <= budget]
        why = f": the plan at the observed values asks for {', '.join(asks)}" if asks and nxt > n + step else ""
        why += " (cut to the minutes budget)" if minutes is not None and nxt < _next_size(n, step, budget, needs, unit) else ""
        n = nxt


def _once(argv: list[str], in_round: bool = False, forced_from: int | None = None) -> None:
    """One command: the pre-flight, then the run or the sweep (a round of a ``seeds=auto`` sweep when
    ``in_round``; ``forced_from``: under ``force=true``, the seeds below it were rerun by an earlier round)."""
    # From the first line: a stop during the checks (which may create the MLflow store's tables) is clean too.
    uri: str | None = None  # the tracking store a stop ends the runs in, once the pre-flight has read it
    guard = interrupts.StopGuard(lambda name, during: _stopped(name, during, uri))
    plan: Plan | None = None
    listing = None
    try:
        plan = preflight.checked_plan(argv, in_round, _tracking_imports(argv) if _sweeps(argv) else ())
        if plan.sequential and not in_round:
            raise _Rounds(*plan.sequential, unit=plan.seed_unit)
        uri = plan.tracking_uri
        # The command starts its own context (never one inherited from the environment). Its process: a
        # sweep's workers stop when it is gone, and a single run's directory is its own.
        context = sweep.Sweep(driver_pid=os.getpid(), forced_from=forced_from)
        if plan.multirun:
            sweep.vouch(plan.task_jobs())  # the sweeper (hydra/sweeper=boundlab) need not compose them again
            if plan.ray_init is not None:
                from pipeline.sweep.ray_worker import keep_on_loopback

                keep_on_loopback(plan.ray_init)
            context = context.with_(size=len(plan.jobs), key=plan.sweep_key())
        context.publish()
        listing = hydra_seam.list_groups_once() if not plan.jobs else None  # --help, --cfg, --info, completion
        sys.argv = [sys.argv[0] if sys.argv else "boundlab", *argv]
        hydra_seam.explain_errors(fault)  # an error outside every job that the command can word: one line, no traceback
        try:
            _app()
        finally:
            if not (guard.taken or guard.waiting):  # after a stop, the pool would wait for the jobs still running
                interrupts.stop_workers()
    except KeyboardInterrupt:
        _interrupted(plan)
    except SystemExit as e:
        # Hydra reports a job's error and exits 1; after a stop was asked for, that error is the stop's
        # (an interrupt that surfaced as another exception): the command was interrupted all the same.
        if e.code not in (0, None) and (guard.taken or guard.waiting):
            _interrupted(plan)
        if e.code not in (0, None):
            _end_stranded_parent(plan, getattr(e, "line", None))
        raise
    except BaseException:
        _end_stranded_parent(plan)
        raise
    finally:
        sweep.forget()
        if listing is not None:  # Hydra's own method again (a later command in this process: its own repository)
            listing()
        guard.close()
        if "pipeline.sweep.callbacks" in sys.modules:  # a sweep ran in this process: its lock goes with it
            sys.modules["pipeline.sweep.callbacks"].release_sweep()


def _sweeps(argv: list[str]) -> bool:
    """Whether ``argv`` runs a sweep (``-m``, not ``--help``, ``--cfg`` or another listing) in a process that has
    not imported MLflow yet and prints to its own stdout and stderr: its pre-flight runs in a child process
    beside that import (:func:`_tracking_imports`)."""
    if "mlflow" in sys.modules or not (_to_a_file(sys.stdout) and _to_a_file(sys.stderr)):
        return False  # imported already, or output redirected in this process (a child's prints would be lost)
    try:
        args = hydra_seam.parse_command_line(argv)
    except Exception:  # noqa: BLE001 - the pre-flight words what is wrong with the command line
        return False
    return bool(args.multirun) and not (args.help or args.hydra_help or args.cfg or args.info or args.shell_completion)


def _to_a_file(stream: object) -> bool:
    """Whether ``stream`` writes to a file descriptor (a forked child's writes to it reach the same file once
    flushed), not to an object in this process's memory (``contextlib.redirect_stdout``, a test's capture)."""
    try:
        return isinstance(stream.fileno(), int)  # type: ignore[attr-defined]
    except (AttributeError, OSError, ValueError):  # io.UnsupportedOperation is both
        return False


def _tracking_imports(argv: list[str]) -> list[str]:
    """What a sweep's start imports anyway, imported while its jobs are checked (``preflight.checked_plan``):
    MLflow, for the sweep's parent run (~1 s, most of it the libraries it imports, which the jobs use too),
    and, unless the store is a server (``tracking.uri=`` or ``MLFLOW_TRACKING_URI`` says ``http``), its
    database store (SQLAlchemy and Alembic, ~0.4 s). In steps: a bad value stops the command after the step
    under way, not after all of them."""
    given = [a.split("=", 1)[1] for a in argv if a.startswith(("tracking.uri=", "+tracking.uri=", "++tracking.uri="))]
    uri = (given or [os.environ.get("MLFLOW_TRACKING_URI", "")])[-1]
    server = uri.lower().startswith(("http:", "https:", "databricks"))
    return ["numpy", "pandas", "pyarrow", "scipy", "sqlalchemy", "mlflow",
            *([] if server else ["mlflow.store.tracking.sqlalchemy_store"])]


def _end_stranded_parent(plan: Plan | None, why: str | None = None) -> None:
    """A sweep that stopped before its end hook (a launcher that refused its jobs, a full disk while Hydra
    saved a job's config, an error outside any job): its parent run and open children end FAILED, never
    left RUNNING. The end hook clears the parent from the context once it owns it, so nothing ends twice.
    ``why``: the error's one line (``hydra_seam.Explained``), said here, with the parent's end."""
    from pipeline import tracking

    parent = sweep.current().parent_run_id if plan is not None else None
    if not parent:
        if why:
            print(f"boundlab: error: {why}", file=sys.stderr)
        return
    uri = tracking.tracking_uri(plan.tracking_uri)
    try:
        _end_sweep(uri, parent, "the sweep stopped before this job ended", "FAILED")
    except Exception as e:  # noqa: BLE001 - the store may be the fault; the rerun marks them
        print(f"boundlab: could not end the sweep's parent run FAILED ({tracking.redact(f'{type(e).__name__}: {e}')})",
              file=sys.stderr)
    sweep.update(parent_run_id=None)
    print(f"boundlab: error: {why}; its parent run ended FAILED" if why else "boundlab: the sweep stopped before "
          "its end (the error is above); its parent run ended FAILED; finished jobs are kept: run the same command to "
          "resume", file=sys.stderr)


def _end_sweep(uri: str, parent: str, reason: str, status: str) -> None:
    """End the sweep's open job runs KILLED with ``reason``, then its parent run with ``status``."""
    from pipeline import tracking

    store = tracking.backend(uri)
    store.end_children(uri, parent, reason)
    store.end_run(uri, parent, status)


def _interrupted(plan: Plan | None) -> None:
    """End the sweep's parent run and its open jobs KILLED, say how to resume, exit 130."""
    from pipeline import tracking

    parent = sweep.current().parent_run_id if plan is not None else None  # None: stopped during the checks
    if parent:  # the launcher has stopped its workers (joblib kills them): their runs end with the parent
        uri = tracking.tracking_uri(plan.tracking_uri)
        try:
            _end_sweep(uri, parent, "KeyboardInterrupt: the sweep was interrupted while this job ran", "KILLED")
        except Exception as e:  # noqa: BLE001 - the store may be the fault; the rerun marks them KILLED
            print(f"boundlab: could not end the sweep's runs KILLED ({tracking.redact(f'{type(e).__name__}: {e}')}); "
                  "the next run of the same command marks them", file=sys.stderr)
    print("boundlab: interrupted; finished jobs are kept: run the same command to resume", file=sys.stderr)
    raise SystemExit(130) from None


def _stopped(name: str, during: str, uri: str | None) -> None:
    """What the stop guard does before it ends the process (``pipeline.sweep.interrupts.StopGuard``): the runs
    this process holds, and the sweep's parent with its open children, end KILLED."""
    from pipeline import tracking

    tracking.end_open_runs(f"{name} during {during} (a solver, a compiled loop or a library)")
    parent = sweep.current().parent_run_id
    if parent:
        try:
            uri = tracking.tracking_uri(uri)
            _end_sweep(uri, parent, f"KeyboardInterrupt: {name}: the sweep was stopped while this job ran", "KILLED")
        except Exception:  # noqa: BLE001
            pass


if __name__ == "__main__":
    main()
