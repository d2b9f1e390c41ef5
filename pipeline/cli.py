"""The ``boundlab`` command: a Hydra app whose every job is validated before any work starts.

``main`` checks the whole sweep first (each job's composed config through the learners' and datasets'
parameter specs); a bad value stops it with one line on stderr and exit code 2, before an output
directory or an MLflow run exists. Heavy libraries (numba, mlflow, pandas) are imported only by jobs.
What it needs of Hydra's private internals (its argument parser, the basic sweeper's split of a sweep, the
compose-once cache, the ``--help`` listing) it reaches through ``pipeline.hydra_seam``.
"""

from __future__ import annotations

import hashlib
import os
import signal
import sys
import warnings
from dataclasses import dataclass, field
from types import FrameType
from typing import Sequence

import hydra
from omegaconf import DictConfig

from pipeline import hydra_seam, interrupts, sweep  # sweep also registers the config's ${boundlab:...} resolver
from pipeline.hydra_seam import parse_overrides
from pipeline.paths import CONF_DIR

USAGE_EXIT = 2


def _fail(message: str) -> None:
    print(f"boundlab: error: {message}", file=sys.stderr)
    raise SystemExit(USAGE_EXIT)


def explain(exc: BaseException, job: Sequence[str] | None = None) -> str:
    """One line for a Hydra or OmegaConf error: what was wrong and what is allowed. ``job``: the overrides
    that failed (inside ``hydra.initialize_config_dir``), to suggest the declared key a misspelt one meant."""
    text = str(exc).strip()
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    if "Could not find '" in text and "Available options" in text:
        group, _, option = text.split("Could not find '")[1].split("'")[0].rpartition("/")
        start = next(i for i, ln in enumerate(lines) if ln.startswith("Available options")) + 1
        options = [ln for ln in lines[start:] if not ln.startswith("Config search path")]
        options = options[: next((i for i, ln in enumerate(options) if ":" in ln or "=" in ln), len(options))]
        return f"{group}={option}: unknown {group}; {_choose(option, options)}"
    if "Interpolation key 'grid." in text:  # an experiment's grid chosen by a scale it does not define
        scale = text.split("Interpolation key 'grid.", 1)[1].split(".", 1)[0].split("'", 1)[0]
        return (f"scale={scale}: the experiment has no grid '{scale}'; choose one it defines (every experiment has "
                "scale=small and scale=paper; experiments/NAME.yaml lists its grids)")
    if text.startswith("Error merging override ") and exc.__cause__ is not None:  # a value of the wrong type
        arg = text.removeprefix("Error merging override ").strip()
        cause = [ln.strip() for ln in str(exc.__cause__).splitlines() if ln.strip()]
        why = cause[0] if cause else type(exc.__cause__).__name__
        return f"{arg}: {why[:1].lower()}{why[1:]}"
    if text.startswith("Recursive interpolation detected"):
        key = text.split("full_key:", 1)[1].split()[0] if "full_key:" in text else "a value"
        return (f"{key}: its value refers back to itself through ${{...}} (a recursive interpolation); give it a plain "
                "value or refer to another key")
    if "Could not override '" in text or "is not in struct" in text:
        key = text.split("'")[1]
        hint = _key_hint(key, job) if job is not None else ""
        if hint:
            return f"{key}: unknown key; {hint} ('boundlab --help' lists every key with its default)"
        return f"{key}: unknown key; 'boundlab --help' lists every key with its default"
    if text.startswith("Missing mandatory value"):
        key = text.split(":", 1)[1].split()[0]
        return f"{key}: missing; set it on the command line ({key}=...)"
    if "Ambiguous value for argument '" in text:
        arg = text.split("'")[1]
        key, _, value = arg.partition("=")
        quoted = f"""'{key.lstrip("+~")}="{value}"'"""
        if _looks_like_path(key, value):
            return (f"{arg}: a comma separates values; if it is part of the file name, quote the value for Hydra: "
                    f"{quoted} (for a sweep over several files add -m)")
        return f"{arg}: several values make a sweep: add -m (boundlab -m {arg} ...); or quote one value with a comma: {quoted}"
    if "LexerNoViableAltException" in text or "mismatched input" in text or "token recognition error" in text:
        arg = lines[0].split(":", 1)[-1].strip()
        return (f"{arg}: cannot be read as KEY=VALUE; quote a value with spaces, quotes or special characters "
                "for Hydra, e.g. 'question=\"Does it hold?\"' (Hydra's override grammar)")
    return " ".join(lines[:2])


def _choose(name: object, options: Sequence[str]) -> str:
    """What to do about an unknown group option: the options closest to a misspelt ``name`` first ('did you
    mean pegasos? (choose one of ...)'), then every option."""
    import difflib

    close = difflib.get_close_matches(str(name), list(options), n=3, cutoff=0.6) if name else []
    every = f"choose one of {', '.join(options)}"
    return f"did you mean {' or '.join(close)}? ({every})" if close else every


# The config groups whose keys are the learner's and the dataset's parameters (a misspelt one: the list).
PARAMETER_GROUPS = ("algorithm", "dataset")


def _key_hint(key: str, job: Sequence[str]) -> str:
    """For an unknown ``key``: the declared keys it may have meant ('did you mean gamma?'), from the job's
    config composed without it; for a key of the learner or dataset that none is close to, the keys that
    option takes. '' when nothing helps (or the job cannot be composed without it either)."""
    import difflib

    from omegaconf import OmegaConf

    rest = [o.input_line for o in parse_overrides(job) if o.key_or_group.lstrip("+~") != key]
    cfg = None
    for overrides in (rest, []):  # another bad override in the job: the defaults' keys still help
        try:
            cfg = hydra.compose("config", overrides=overrides, return_hydra_config=True)
            break
        except Exception:  # noqa: BLE001, S112 - only a hint; the error itself is reported
            continue
    if cfg is None:
        return ""
    choices = dict(cfg.hydra.runtime.choices)
    known = [k for k in _flat_keys(OmegaConf.to_container(cfg, resolve=False))
             if key.startswith("hydra.") or not k.startswith("hydra")]
    parent, _, leaf = key.rpartition(".")
    prefix = f"{parent}." if parent else ""
    siblings = [k[len(prefix):] for k in known if k.startswith(prefix) and "." not in k[len(prefix):]]
    if siblings:  # a misspelt leaf of a key that exists: gama, algorithm.lamda, tracking.urI
        close = [prefix + c for c in difflib.get_close_matches(leaf, siblings, n=3, cutoff=0.6)]
    else:  # a misspelt parent: algoritm.tie
        close = difflib.get_close_matches(key, known, n=3, cutoff=0.8)
    if not close and not parent:  # a learner's or dataset's key without its group: tie=mistake
        params = [k for k in known if k.count(".") == 1 and k.split(".")[0] in PARAMETER_GROUPS]
        close = [k for k in params if difflib.get_close_matches(leaf, [k.split(".")[1]], cutoff=0.8)]
    if close:
        return f"did you mean {' or '.join(close[:3])}?"
    if parent in PARAMETER_GROUPS and choices.get(parent):
        takes = [f"{parent}.{s}" for s in siblings if s != "name"]
        return (f"{parent}={choices[parent]} takes {', '.join(takes)}; for another option's key, choose that option "
                f"too ({parent}=OPTION {key}=...)")
    return ""


def _looks_like_path(key: str, value: str) -> bool:
    """A value that names a file: its key says so (``dataset.path``), or it has a directory or an extension."""
    import re

    leaf = key.rsplit(".", 1)[-1].lower()
    return (leaf.endswith(("path", "dir", "file", "uri")) or "/" in value or "\\" in value
            or re.search(r"\.[A-Za-z][A-Za-z0-9]{0,5}$", value) is not None)


# Top-level keys read when present (by the report and the sweep's parent run) that config.yaml leaves out:
# the only ones a `+key=value` override may add outside hydra and the algorithm/dataset groups.
ADDABLE = ("claims", "compare")


def experiment_names() -> list[str]:
    """The experiments a user can select: the files of experiments/ (conf/experiment), by name."""
    return sorted(p.stem for p in (CONF_DIR / "experiment").glob("*.yaml"))


def _own_callbacks() -> dict:
    from omegaconf import OmegaConf

    return OmegaConf.to_container(OmegaConf.load(CONF_DIR / "config.yaml").hydra.callbacks)


def _check_experiment(name: object, checked: set[str]) -> None:
    """``experiment=NAME``: one of the files of experiments/, chosen by name (never a path), whose overlay
    does not set Hydra callbacks (code Hydra would run) other than the package's own."""
    from omegaconf import OmegaConf

    from pipeline.params import UserError

    if name is None or name in checked:
        return
    options = experiment_names()
    if name not in options:
        path = (" (an experiment is chosen by name, not by path)" if any(c in str(name) for c in "/\\~") or ".." in str(name)
                else "")
        raise UserError(f"experiment={name}: unknown experiment{path}; {_choose('' if path else name, options)}")
    cfg = hydra.compose("config", overrides=[f"experiment={name}"], return_hydra_config=True)
    callbacks = OmegaConf.to_container(cfg.hydra.callbacks, resolve=False) if cfg.hydra.get("callbacks") else {}
    own = _own_callbacks()
    if callbacks != own:
        extra = sorted(k for k in callbacks if callbacks.get(k) != own.get(k))
        raise UserError(f"experiment={name}: experiments/{name}.yaml sets hydra.callbacks ({', '.join(extra)}): an "
                        "experiment may not add code for Hydra to run; remove hydra.callbacks from it")
    checked.add(name)


def check_names(overrides: Sequence, checked: set[str] | None = None) -> None:
    """``name=`` and ``experiment=`` values are names, checked before Hydra composes or makes directories
    (``name`` becomes multirun/NAME and an MLflow experiment; ``experiment`` selects experiments/NAME.yaml).
    Sweeps are checked job by job, once split."""
    from pipeline.config import NAME_ALLOWED, is_name
    from pipeline.params import ParamError

    checked = set() if checked is None else checked
    for o in overrides:
        if o.is_delete() or o.is_sweep_override() or o.key_or_group not in ("name", "experiment"):
            continue
        value = o.value()
        if o.key_or_group == "experiment":
            _check_experiment(value, checked)
        elif not is_name(str(value) if isinstance(value, int) and not isinstance(value, bool) else value):
            raise ParamError("name", value, NAME_ALLOWED)


def check_added(job: list[str], composed_without: DictConfig) -> None:
    """A ``+key=value`` override must add a key something reads: refuse a misspelt one, with close matches.
    ``composed_without``: the job's config without its additions (what the code reads)."""
    import difflib

    from omegaconf import OmegaConf

    from pipeline.params import UserError

    known = _flat_keys(OmegaConf.to_container(composed_without, resolve=False))
    for o in parse_overrides(job):
        if not (o.is_add() or o.is_force_add()):
            continue
        key = o.key_or_group
        # hydra.*: read by Hydra and its launchers; the groups: build() checks algorithm.* and dataset.*
        # against the learner's and dataset's parameters
        if key.split(".")[0] in ("hydra", "algorithm", "dataset", "experiment", *ADDABLE) or key in known:
            continue
        close = difflib.get_close_matches(key, known, n=3, cutoff=0.6)
        hint = f"did you mean {' or '.join(close)}? " if close else ""
        raise UserError(f"{o.input_line}: unknown key, nothing reads {key}; {hint}('boundlab --help' lists every key)")


def _flat_keys(d: object, prefix: str = "") -> list[str]:
    if not isinstance(d, dict):
        return []
    out = []
    for k, v in d.items():
        out.append(f"{prefix}{k}")
        out += _flat_keys(v, f"{prefix}{k}.")
    return out


@dataclass
class Plan:
    """What ``boundlab argv`` will do, known before any work: its jobs and where it tracks them."""

    multirun: bool = False
    overrides: list[str] = field(default_factory=list)
    jobs: list[list[str]] = field(default_factory=list)
    tracking_uri: str | None = None
    ray_init: dict | None = None  # the Ray launcher's ray.init arguments, when the sweep uses it
    sequential: tuple[int, int] | None = None  # seeds=auto: (seed_budget, seed_round)

    def task_jobs(self) -> list[list[str]]:
        """The jobs as Hydra's sweeper lists them: without the ``hydra.*`` overrides, which Hydra keeps
        aside and adds to every job it composes (its ``hydra.overrides.task``)."""
        return [[o.input_line for o in parse_overrides(job) if not o.is_hydra_override()] for job in self.jobs]

    def sweep_key(self) -> str:
        """Names the sweep directory: the same command (force aside) resumes in the same place."""
        kept = [o for o in self.overrides if not o.startswith(("force=", "log.", "hydra.launcher", "hydra/launcher"))]
        return hashlib.sha256("\0".join(kept).encode()).hexdigest()[:10]


def plan_of(argv: Sequence[str]) -> Plan:
    """The jobs that ``boundlab argv`` would run (each as its override list)."""
    from pipeline.params import UserError

    args = hydra_seam.parse_command_line(argv)
    if args.help or args.hydra_help or args.cfg or args.info or args.shell_completion:
        return Plan()
    overrides = hydra_seam.parser().parse_overrides(args.overrides)  # sweep values included: parsed as a whole
    checked: set[str] = set()
    check_names(overrides, checked)  # before Hydra reads an experiment file or makes a directory
    if not args.multirun:
        return Plan(False, list(args.overrides), [list(args.overrides)])
    fixed = [o.input_line for o in overrides if not o.is_sweep_override()]
    try:
        base = hydra.compose("config", overrides=fixed, return_hydra_config=True)
    except Exception as e:  # Hydra composes a sweep's fixed overrides before choosing the swept options
        swept = [o.key_or_group for o in overrides if o.is_sweep_override()]
        why = explain(e, fixed)
        if swept and "unknown key" in why and "did you mean" not in why:
            raise UserError(f"{why} (in a sweep over {', '.join(swept)}, the fixed keys must exist without the "
                            "swept options: name the group option on the command line, e.g. dataset=multiclass_margin)") from None
        if "unknown key" in why:
            raise UserError(why) from None
        raise
    _check_sweeper(base.hydra.sweeper)
    _check_launcher(base.hydra.launcher)
    if base.hydra.job.get("chdir"):  # set by an experiment file
        raise UserError(f"hydra.job.chdir=true: {NO_CHDIR}")
    params = [f"{k}={v}" for k, v in (base.hydra.sweeper.get("params") or {}).items()]
    jobs = hydra_seam.split_sweep(hydra_seam.parser().parse_overrides(params + list(args.overrides)))
    if any(o.is_sweep_override() and o.key_or_group in ("name", "experiment") for o in overrides):
        for job in jobs:  # swept names are checked one by one (the pre-flight then refuses more than one)
            check_names(parse_overrides(job), checked)
    plan = Plan(True, list(args.overrides), jobs)
    if "RayLauncher" in str(base.hydra.launcher.get("_target_", "")):
        from omegaconf import OmegaConf

        plan.ray_init = OmegaConf.to_container(base.hydra.launcher.ray.init, resolve=True)
    return plan


NO_CHDIR = ("boundlab runs every job in the command's directory (relative data paths, the cache and the tracking "
            "store are read from there, and each job writes into its own output directory already); remove it")


def _check_launcher(launcher: DictConfig) -> None:
    """Launcher settings Hydra's schemas let through but the launcher refuses once the jobs are due (after
    the sweep's parent run exists): checked here, in one line, before any work."""
    from pipeline.params import ParamError

    n_jobs = launcher.get("n_jobs")
    if "n_jobs" in launcher and (isinstance(n_jobs, bool) or not isinstance(n_jobs, int) or n_jobs == 0):
        raise ParamError("hydra.launcher.n_jobs", n_jobs, "a number of worker processes >= 1, or -1 for one per core "
                         "(-2: all but one, ...)")


def _check_sweeper(sweeper: DictConfig) -> None:
    """The sweep's jobs must be known before it starts (the pre-flight checks each): Hydra's basic sweeper
    or boundlab's (hydra_plugins/boundlab_sweeper), not a sweeper that chooses its jobs as it goes."""
    from hydra.utils import get_class

    from pipeline.params import UserError

    target = str(sweeper.get("_target_", ""))
    try:
        cls = get_class(target)
    except Exception:  # noqa: BLE001 - Hydra reports a sweeper it cannot load when it instantiates it
        return
    if not hydra_seam.knows_its_jobs(cls):
        raise UserError(f"hydra/sweeper: {target} chooses its jobs as the sweep goes, and boundlab checks every job "
                        "before any starts; use hydra/sweeper=boundlab (the default) or hydra/sweeper=basic")


def preflight(argv: Sequence[str], in_round: bool = False) -> Plan:
    """Validate every job of ``boundlab argv``; exit with code 2 and one line on the first bad one.
    ``in_round``: argv is a round of a ``seeds=auto`` sweep, whose seeds the command chose."""
    from hydra.errors import HydraException
    from omegaconf.errors import OmegaConfBaseException

    from pipeline.config import build
    from pipeline.params import UserError

    with hydra.initialize_config_dir(config_dir=str(CONF_DIR), version_base=None):
        try:
            plan = plan_of(argv)
        except UserError as e:
            _fail(str(e))
        except (HydraException, OmegaConfBaseException) as e:
            _fail(explain(e))
        if plan.multirun and not plan.jobs and not any(a.startswith("--") for a in argv):
            _fail("the sweep has no jobs (an empty list or range among its values, e.g. seed='range(0,0)'): give each "
                  "swept key at least one value")
        compose = hydra_seam.Composer()
        keys: set[str] = set()
        progress = _CheckProgress(len(plan.jobs))
        for i, job in enumerate(plan.jobs):
            progress(i)
            where = f" (in the job {' '.join(job)})" if plan.multirun and len(plan.jobs) > 1 else ""
            try:
                cfg = compose(job)
                keys.add(build(cfg).key())
                _check_log(cfg)
                if any(o.startswith("+") for o in job):
                    check_added(job, compose([o for o in job if not o.startswith("+")]))
            except UserError as e:
                _fail(f"{e}{where}")
            except (HydraException, OmegaConfBaseException) as e:
                _fail(f"{explain(e, job)}{where}")
            plan.tracking_uri = cfg.tracking.uri
        for o in parse_overrides(argv_overrides(argv)):
            if o.key_or_group == "hydra.job.chdir" and (o.is_sweep_override() or o.value() not in (False, "false")):
                _fail(f"{o.input_line}: {NO_CHDIR}")
        for key in ("experiment", "name"):  # one sweep is one experiment: its results land under one name
            values = {str(o.value()) for job in plan.jobs for o in parse_overrides(job) if o.key_or_group == key}
            if plan.multirun and len(values) > 1:
                _fail(f"{key}={','.join(sorted(values))}: a sweep runs one {key} (its results, parent run and verdicts "
                      f"are filed under it); run one command per {key}")
        if plan.multirun and len(keys) < len(plan.jobs):  # a value listed twice, or spelt two ways (0.1,1e-1)
            print(f"boundlab: the grid lists {len(plan.jobs)} jobs, {len(keys)} of them distinct: a job listed twice runs "
                  "once and counts once in every verdict", file=sys.stderr)
        if plan.jobs and cfg.get("seeds") == "auto":
            if not plan.multirun:
                _fail("seeds=auto: adds seeds to a sweep in rounds; add -m (boundlab -m seeds=auto ...)")
            given = [o.input_line for o in parse_overrides(argv_overrides(argv)) if o.key_or_group == "seed"]
            if given and not in_round:
                _fail(f"{given[0]}: seeds=auto chooses the seeds (0, 1, 2, ... in rounds of seed_round, at most "
                      "seed_budget); remove seed=..., or use seeds=fixed")
            plan.sequential = (int(cfg.seed_budget), int(cfg.seed_round))
    return plan


def _check_log(cfg: DictConfig) -> None:
    """``log.bounds``: true or false (what a sweep logs per job; never a part of the job itself)."""
    from omegaconf import OmegaConf

    from pipeline.params import ParamError

    value = OmegaConf.select(cfg, "log.bounds", default=False)
    if not isinstance(value, bool):
        raise ParamError("log.bounds", value, "true (a sweep logs every bound of every job, as one run does) or false "
                         "(one line per job)")


class _CheckProgress:
    """The pre-flight of a large grid says what it does: once its first jobs show that the checks take more
    than a few seconds, one line with the number of jobs and the estimated time, then a progress line every
    few seconds (on stderr: Hydra has not set up logging yet)."""

    SAMPLE, QUIET = 100, 5.0  # jobs timed before estimating; checks shorter than this stay silent

    def __init__(self, total: int) -> None:
        import time

        self.total, self.start, self.progress = total, time.monotonic(), None

    def __call__(self, done: int) -> None:
        import time

        if self.progress is not None:
            self.progress.update(done)
        elif done == self.SAMPLE and self.total > self.SAMPLE:
            estimate = (time.monotonic() - self.start) / done * self.total
            if estimate > self.QUIET:
                from pipeline.progress import Progress

                print(f"boundlab: checking the sweep's {self.total:,} jobs before the first starts (about {estimate:.0f} s)",
                      file=sys.stderr, flush=True)
                self.progress = Progress("pre-flight", self.total, "jobs checked", clock=time.monotonic,
                                         say=lambda line: print(f"boundlab: {line}", file=sys.stderr, flush=True))
                self.progress.start = self.start


def argv_overrides(argv: Sequence[str]) -> list[str]:
    """The override arguments of a command line (Hydra's own flags left out)."""
    return list(hydra_seam.parse_command_line(argv).overrides)


@hydra.main(version_base=None, config_path=str(CONF_DIR), config_name="config")
def _app(cfg: DictConfig) -> None:
    from pipeline.params import UserError
    from pipeline.stages import job

    try:
        job(cfg)
    except UserError as e:  # found once the data exist (a data file, a batch larger than the sample)
        _fail(str(e))


class _Rounds(Exception):
    """The pre-flight found ``seeds=auto``: the command runs the sweep in rounds (:func:`_sequential`)."""

    def __init__(self, budget: int, step: int) -> None:
        super().__init__(budget, step)
        self.budget, self.step = budget, step


def main(argv: Sequence[str] | None = None) -> None:
    """Entry point of the ``boundlab`` console script."""
    argv = _credentials_aside(list(sys.argv[1:] if argv is None else argv))
    try:
        _once(argv)
    except _Rounds as r:
        _sequential(argv, r.budget, r.step)


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
    stats = last.get("stats", {})
    wanted = [c["bound"] for c in last.get("claims", []) if c["guarantee"] in ("E", "P")] or \
        [b for b, s in stats.items() if isinstance(s, dict) and s.get("guarantee") in ("E", "P")]
    open_ = []
    for b in wanted:
        s = stats.get(b)
        if not isinstance(s, dict) or s.get("verdict") != "inconclusive" or not s.get("settings_informative"):
            continue
        if any("no upper end" in why for why in s.get("blocked_by", [])) and not s.get("seeds_needed"):
            continue
        open_.append(b)
    return open_


def _sequential(argv: list[str], budget: int, step: int) -> None:
    """``seeds=auto``: run the sweep with seeds 0..n-1 for n = step, 2 step, ... up to ``budget``, each round a
    sweep of its own (earlier seeds' jobs are reused from the job store), until every (E)/(P) claim is decided
    or cannot be by more seeds. The verdicts use anytime-valid tests tuned to the budget, so stopping at the
    round where a claim is decided keeps their level (docs/bounds.md section 9)."""
    from pipeline import callbacks

    sizes = list(range(step, budget, step)) + [budget]
    for r, n in enumerate(sizes, 1):
        print(f"boundlab: seeds=auto: round {r} of at most {len(sizes)}: seeds 0-{n - 1} (budget {budget})", flush=True)
        callbacks.LAST.clear()
        _once([*argv, f"seed=range(0,{n})"], in_round=True)
        open_ = _open_claims(callbacks.LAST)
        stats = callbacks.LAST.get("stats", {})
        decided = [f"{b} {s['verdict']} at {s.get('decided_at') or n} seeds" for b, s in stats.items()
                   if isinstance(s, dict) and s.get("guarantee") in ("E", "P") and s.get("verdict") in ("holds", "violated")]
        if not open_:
            print(f"boundlab: seeds=auto: done after {n} seeds per setting" + (f"; {', '.join(decided)}" if decided else "")
                  + "; nothing left that more seeds could decide", flush=True)
            return
        print(f"boundlab: seeds=auto: still undecided after {n} seeds: {', '.join(open_)}", flush=True)
    print(f"boundlab: seeds=auto: the budget of {budget} seeds is spent; undecided: {', '.join(open_)}", flush=True)


def _once(argv: list[str], in_round: bool = False) -> None:
    """One command: the pre-flight, then the run or the sweep (a round of a ``seeds=auto`` sweep when
    ``in_round``)."""
    # From the first line: a stop during the checks (which may create the MLflow store's tables) is clean too.
    guard = StopGuard(None)
    plan: Plan | None = None
    listing = None
    try:
        plan = _checked(argv, in_round)
        if plan.sequential and not in_round:
            raise _Rounds(*plan.sequential)
        guard.tracking = plan.tracking_uri
        # The command starts its own context (never one inherited from the environment). Its process: a
        # sweep's workers stop when it is gone, and a single run's directory is its own.
        context = sweep.Sweep(driver_pid=os.getpid())
        if plan.multirun:
            sweep.vouch(plan.task_jobs())  # the sweeper (hydra/sweeper=boundlab) need not compose them again
            if plan.ray_init is not None:
                from pipeline.ray_worker import keep_on_loopback

                keep_on_loopback(plan.ray_init)
            context = context.with_(size=len(plan.jobs), key=plan.sweep_key())
        context.publish()
        listing = hydra_seam.list_groups_once() if not plan.jobs else None  # --help, --cfg, --info, completion
        sys.argv = [sys.argv[0] if sys.argv else "boundlab", *argv]
        try:
            _app()
        finally:
            if not (guard.taken or guard.waiting):  # after a stop, the pool would wait for the jobs still running
                _stop_workers()
    except KeyboardInterrupt:
        _interrupted(plan)
    except SystemExit as e:
        # Hydra reports a job's error and exits 1; after a stop was asked for, that error is the stop's
        # (an interrupt that surfaced as another exception): the command was interrupted all the same.
        if e.code not in (0, None) and (guard.taken or guard.waiting):
            _interrupted(plan)
        if e.code not in (0, None):
            _end_stranded_parent(plan)
        raise
    except BaseException:
        _end_stranded_parent(plan)
        raise
    finally:
        sweep.forget()
        if listing is not None:  # Hydra's own method again (a later command in this process: its own repository)
            listing()
        guard.close()
        if "pipeline.callbacks" in sys.modules:  # a sweep ran in this process: its lock goes with it
            sys.modules["pipeline.callbacks"].release_sweep()


def _stop_workers() -> None:
    """Shut joblib's pool of worker processes down, once the sweep has ended, while signals are handled.

    Left to the interpreter's exit, loky joins its pool after the command's handlers are gone, and a
    Ctrl-C in that second printed a traceback.
    """
    module = sys.modules.get("joblib.externals.loky.reusable_executor")
    executor = getattr(module, "_executor", None)
    if executor is not None:
        executor.shutdown(wait=True)


def _checked(argv: list[str], in_round: bool = False) -> Plan:
    """The pre-flight: the config directory, every job's config, the tracking store. Exits 2 on a bad one."""
    from pipeline.schemas import register

    # conf/hydra/launcher/{ray,joblib}.yaml replace the plugins' configs with every field of their schemas
    warnings.filterwarnings("ignore", message=r"\s*'hydra/launcher/(ray|joblib)' is validated against ConfigStore schema")
    if not CONF_DIR.is_dir():
        _fail(f"no config directory at {CONF_DIR}: install boundlab from its checkout with 'pip install -e .'")
    register()
    plan = preflight(argv, True) if in_round else preflight(argv)
    if plan.jobs:
        from pipeline.tracking import check_store, tracking_uri

        uri = tracking_uri(plan.tracking_uri)
        why = check_store(uri)
        if why:
            from pipeline.tracking import redact

            _fail(f"tracking store {redact(uri)}: {why}; set MLFLOW_TRACKING_URI (or tracking.uri=...) to one that works")
        from pipeline import store

        why = store.problem()
        if why:  # a cache: the jobs run and finish all the same
            print(f"boundlab: warning: the job store {why}: jobs run and are kept in their own directories, but not "
                  "shared with later sweeps; set BOUNDLAB_CACHE to a writable directory", file=sys.stderr)
    return plan


def _end_stranded_parent(plan: Plan | None) -> None:
    """A sweep that stopped before its end hook (a launcher that refused its jobs, a full disk while Hydra
    saved a job's config, an error outside any job): its parent run and open children end FAILED, never
    left RUNNING. The end hook clears the parent from the context once it owns it, so nothing ends twice."""
    from pipeline import tracking

    parent = sweep.current().parent_run_id if plan is not None else None
    if not parent:
        return
    uri = tracking.tracking_uri(plan.tracking_uri)
    try:
        tracking.end_children(uri, parent, "the sweep stopped before this job ended")
        tracking.end_run(uri, parent, "FAILED")
    except Exception as e:  # noqa: BLE001 - the store may be the fault; the rerun marks them
        print(f"boundlab: could not end the sweep's parent run FAILED ({tracking.redact(f'{type(e).__name__}: {e}')})",
              file=sys.stderr)
    sweep.update(parent_run_id=None)
    print("boundlab: the sweep stopped before its end (the error is above); its parent run ended FAILED; finished "
          "jobs are kept: run the same command to resume", file=sys.stderr)


def _interrupted(plan: Plan | None) -> None:
    """End the sweep's parent run and its open jobs KILLED, say how to resume, exit 130."""
    from pipeline import tracking

    parent = sweep.current().parent_run_id if plan is not None else None  # None: stopped during the checks
    if parent:  # the launcher has stopped its workers (joblib kills them): their runs end with the parent
        uri = tracking.tracking_uri(plan.tracking_uri)
        try:
            tracking.end_children(uri, parent, "KeyboardInterrupt: the sweep was interrupted while this job ran")
            tracking.end_run(uri, parent, "KILLED")
        except Exception as e:  # noqa: BLE001 - the store may be the fault; the rerun marks them KILLED
            print(f"boundlab: could not end the sweep's runs KILLED ({tracking.redact(f'{type(e).__name__}: {e}')}); "
                  "the next run of the same command marks them", file=sys.stderr)
    print("boundlab: interrupted; finished jobs are kept: run the same command to resume", file=sys.stderr)
    raise SystemExit(130) from None


class StopGuard:
    """Ctrl-C, SIGTERM and SIGHUP (a closed terminal) stop the command within seconds, even during a long
    native call.

    Both raise ``KeyboardInterrupt`` in the main thread (the job's run then ends KILLED, the sweep's
    parent too, and the same command resumes). Python runs that handler only between bytecodes, so a
    long call into compiled code (HiGHS, Clarabel, a numba kernel) would delay it for minutes. Those
    calls release the GIL, and the signal also reaches a pipe (``signal.set_wakeup_fd``) that a watcher
    thread reads at once: if the main thread has not taken the signal ``grace`` seconds later, the
    watcher ends this process's open runs and the sweep's parent KILLED, prints one line and exits (130).
    Caches are written to a temporary file and renamed, so no entry is ever half-written.

    A signal that finds the main thread inside a library that cannot take an interrupt (omegaconf,
    MLflow, an import: ``pipeline.interrupts``) is raised as soon as that call returns; it counts as taken
    then, so a call that keeps it waiting is ended by the watcher too, after ``patience`` seconds.
    """

    SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)  # SIGHUP: the terminal closed

    def __init__(self, tracking: str | None, grace: float = 2.0, patience: float = 10.0) -> None:
        import threading

        self.tracking, self.grace, self.patience = tracking, grace, patience
        self.received = self.taken = self.waiting = 0
        self.taken_event = threading.Condition()
        self.handler = interrupts.Handler(on_raise=self._taken)
        self.previous = {s: signal.signal(s, self._take) for s in self.SIGNALS}
        self.read, self.write = os.pipe()
        os.set_blocking(self.write, False)
        self.previous_fd = signal.set_wakeup_fd(self.write, warn_on_full_buffer=False)
        threading.Thread(target=self._watch, name="boundlab-stop-guard", daemon=True).start()

    def _take(self, signum: int, frame: FrameType | None) -> None:
        """The main thread's handler: stop like Ctrl-C, where the interrupted code can take it."""
        self.waiting += 1
        self.handler(signum, frame)

    def _taken(self) -> None:
        with self.taken_event:
            self.taken += self.waiting
            self.waiting = 0
            self.taken_event.notify_all()

    def _watch(self) -> None:
        while True:
            try:
                data = os.read(self.read, 64)
            except OSError:
                return
            if not data:  # the write end closed: the command is done
                os.close(self.read)
                return
            arrived = [b for b in data if b in self.SIGNALS]
            if not arrived:
                continue
            self.received += len(arrived)
            with self.taken_event:
                if self.taken_event.wait_for(lambda: self.taken >= self.received, timeout=self.grace):
                    continue
                # A call the interrupt waits for is not cut at once: a new store's migrations take seconds,
                # and cut halfway they leave half a schema that the next command refuses.
                if self.handler.deferred is not None and self.taken_event.wait_for(
                        lambda: self.taken >= self.received, timeout=self.patience - self.grace):
                    continue
            deferred = self.handler.deferred
            self._stop_now(signal.Signals(arrived[-1]).name,
                           deferred.within if deferred else "a long native call")

    def _stop_now(self, name: str, during: str) -> None:
        """The main thread is inside a long call: end the runs it holds KILLED, and the process."""
        from pipeline import tracking

        tracking.end_open_runs(f"{name} during {during} (a solver, a compiled loop or a library)")
        parent = sweep.current().parent_run_id
        if parent:
            try:
                uri = tracking.tracking_uri(self.tracking)
                tracking.end_children(uri, parent, f"KeyboardInterrupt: {name}: the sweep was stopped while this job ran")
                tracking.end_run(uri, parent, "KILLED")
            except Exception:  # noqa: BLE001
                pass
        print(f"boundlab: stopped by {name} during {during}; finished jobs are kept: run the same "
              "command to resume", file=sys.stderr, flush=True)
        os._exit(130)

    def close(self) -> None:
        """Restore the handlers (a process that goes on, e.g. a test calling main) and stop the watcher."""
        self.handler.cancel()
        signal.set_wakeup_fd(self.previous_fd)
        for s, handler in self.previous.items():
            signal.signal(s, handler)
        os.close(self.write)  # the watcher reads the end of the pipe and closes its read end


if __name__ == "__main__":
    main()
