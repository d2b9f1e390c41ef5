"""The pre-flight: every job of ``boundlab argv`` composed and validated before any work starts.

The command's :func:`checked_plan` checks the config directory, then the whole sweep (:func:`preflight`:
each job's composed config through the learners' and datasets' parameter specs, names, experiments,
launcher and sweeper settings), then the tracking store and the job store. A bad value stops the command
with one line on stderr (``pipeline.sweep.explain`` words it) and exit code 2, before an output directory or an
MLflow run exists. The jobs it validated are the :class:`Plan` the command runs; the sweeper plug-in
(``hydra_plugins/boundlab_sweeper``) trusts them rather than composing each again.
"""

from __future__ import annotations

import hashlib
import os
import sys
import warnings
from dataclasses import dataclass, field
from typing import Any, Sequence

import hydra
from omegaconf import DictConfig, open_dict

import pipeline.sweep.context  # noqa: F401 - registers the config's ${boundlab:...} resolver before any composition
from pipeline.sweep import hydra_seam
from pipeline.sweep.explain import choose, explain, flat_keys
from pipeline.sweep.hydra_seam import parse_overrides
from pipeline.paths import CONF_DIR, remember_working_dir, removed_dir, shown

USAGE_EXIT = 2


def fail(message: str) -> None:
    """Say what was wrong in one line on stderr and exit with :data:`USAGE_EXIT` (a usage error)."""
    print(f"boundlab: error: {message}", file=sys.stderr)
    raise SystemExit(USAGE_EXIT)


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
        raise UserError(f"experiment={name}: unknown experiment{path}; {choose('' if path else name, options)}")
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
    from pipeline.job.config import NAME_ALLOWED, is_name
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

    known = flat_keys(OmegaConf.to_container(composed_without, resolve=False))
    for o in parse_overrides(job):
        if not (o.is_add() or o.is_force_add()):
            continue
        key = o.key_or_group
        # hydra.*: read by Hydra and its launchers; the groups: build() checks algorithm.* and dataset.*
        # against the learner's and dataset's parameters
        if key.split(".")[0] in ("hydra", "algorithm", "dataset", "experiment", *ADDABLE) or key in known:
            continue
        close = difflib.get_close_matches(key, known, n=3, cutoff=0.6)
        hint = f"did you mean {' or '.join(close)}? ('boundlab --help' lists every key)" if close else \
            "'boundlab --help' lists every key"
        raise UserError(f"{o.input_line}: unknown key, nothing reads {key}; {hint}")


@dataclass
class Plan:
    """What ``boundlab argv`` will do, known before any work: its jobs and where it tracks them."""

    multirun: bool = False
    overrides: list[str] = field(default_factory=list)
    jobs: list[list[str]] = field(default_factory=list)
    tracking_uri: str | None = None
    ray_init: dict | None = None  # the Ray launcher's ray.init arguments, when the sweep uses it
    sequential: tuple[int, int, float | None] | None = None  # seeds=auto: (seed_budget, seed_round, seed_minutes)
    seed_unit: int = 1  # seeds=auto: its rounds add seeds in multiples of this (a packed sweep's pack)

    def task_jobs(self) -> list[list[str]]:
        """The jobs as Hydra's sweeper lists them: without the ``hydra.*`` overrides, which Hydra keeps
        aside and adds to every job it composes (its ``hydra.overrides.task``)."""
        # an override that does not spell "hydra" is not one of them: only those are parsed (100,000 seeds: ~0.3 s)
        return [[o for o in job if "hydra" not in o or not parse_overrides([o])[0].is_hydra_override()]
                for job in self.jobs]

    def sweep_key(self) -> str:
        """Names the sweep directory: the same command (force aside) resumes in the same place."""
        kept = [o for o in self.overrides if not o.startswith(("force=", "log.", "hydra.launcher", "hydra/launcher"))]
        return hashlib.sha256("\0".join(kept).encode()).hexdigest()[:10]


def sweep_overrides(base: Any, overrides: Sequence[str]) -> list:
    """The overrides of a sweep whose composed config (with its Hydra node) is ``base``, parsed: the sweeper's
    ``params`` first (an experiment's grid), then the command line's ``overrides``."""
    params = [f"{k}={v}" for k, v in (base.hydra.sweeper.get("params") or {}).items()]
    return hydra_seam.parser().parse_overrides(params + list(overrides))


def sweep_jobs(base: Any, overrides: Sequence[str]) -> list[list[str]]:
    """The jobs of a sweep whose composed config (with its Hydra node) is ``base``: the sweeper's ``params``
    first, then the command line's ``overrides``, split as Hydra's basic sweeper splits them."""
    return hydra_seam.split_sweep(sweep_overrides(base, overrides))


# The keys that say how a sweep runs, not what a job computes: one value for the whole sweep, never swept (on the
# command line or in an experiment's grid), each with what it is (:func:`check_steering`). A key or a prefix
# (``hydra.launcher`` covers ``hydra.launcher.n_jobs``).
STEERING = {
    "pack": "how a sweep runs (settings per Hydra job)",
    "seeds": "how a sweep chooses its seeds (fixed, or auto: in rounds)",
    "seed_budget": "the most seeds seeds=auto gives a setting",
    "seed_round": "the seeds each round of seeds=auto adds",
    "seed_minutes": "the minutes seeds=auto's rounds may take",
    "force": "whether a sweep reruns the jobs already done",
    "log.bounds": "what a sweep logs of each job",
    "tracking.uri": "the store a sweep's parent run and its jobs are recorded in",
    "hydra.sweep": "where a sweep writes",
    "hydra/launcher": "what launches a sweep's jobs",
    "hydra.launcher": "how a sweep's jobs are launched",
    "hydra/sweeper": "what lists a sweep's jobs",
    "hydra.sweeper": "how a sweep lists its jobs",
}


def steering(key: str) -> str | None:
    """What the sweep-steering ``key`` is (:data:`STEERING`), or None for a key a job's results may depend on."""
    for name, what in STEERING.items():
        if key == name or key.startswith((f"{name}.", f"{name}/")):
            return what
    return None


def check_steering(overrides: Sequence) -> None:
    """Refuse a sweep over a sweep-steering key (:data:`STEERING`) in one line (UserError)."""
    from pipeline.params import UserError

    for o in overrides:
        what = steering(o.key_or_group) if o.is_sweep_override() else None
        if what:
            raise UserError(f"{o.input_line}: {o.key_or_group} is {what}, one value for all of it; give one value "
                            "(or run one command per value)")


def composed(make: Any, overrides: Sequence[str]) -> Any:
    """``make()``, a composition of ``overrides`` by Hydra. Hydra's and OmegaConf's own errors pass through (the
    pre-flight explains them); any other exception raised while composing a user's overrides (OmegaConf fails
    with an ``AttributeError`` on ``hydra.sweeper.params={...}``, for one) becomes one line naming the
    override it comes from, found by composing each override alone. When no override fails alone, the error
    is not the user's to fix: it propagates, with its traceback."""
    from hydra.errors import HydraException
    from omegaconf.errors import OmegaConfBaseException

    from pipeline.params import UserError

    try:
        return make()
    except (HydraException, OmegaConfBaseException, UserError, KeyboardInterrupt):
        raise
    except Exception as e:  # Hydra's composition of the user's overrides failed in another way
        first = next((ln.strip() for ln in str(e).splitlines() if ln.strip()), "")
        why = f"{type(e).__name__}: {first}" if first else type(e).__name__
        culprit = None
        for override in overrides:
            try:
                hydra.compose("config", overrides=[override], return_hydra_config=True)
            except Exception:  # noqa: BLE001 - this one alone fails: it is the one to name
                culprit = override
                break
        if culprit is None:
            raise
        raise UserError(f"{culprit}: Hydra cannot compose the config with this override ({why[:200]}); check its "
                        "key and the syntax of its value ('boundlab --help' lists every key with its default)") from None


# The groups of settings a composed config must keep as groups (the command and the job read their keys):
# `tracking=null` or `~tracking` would otherwise fail deep inside the run, with a traceback.
SECTIONS = ("algorithm", "dataset", "log", "tracking", "hydra.sweeper", "hydra.launcher")


def check_sections(cfg: DictConfig) -> None:
    """Each of :data:`SECTIONS` is still a group of settings in ``cfg``: not set to a value, null or removed."""
    from omegaconf import OmegaConf

    from pipeline.params import UserError

    for key in SECTIONS:
        if key.startswith("hydra.") and not isinstance(cfg.get("hydra"), DictConfig):
            continue  # a job's own composition, without Hydra's settings (the sweep's are checked once)
        node = OmegaConf.select(cfg, key, default="<missing>") if key.startswith("hydra.") or key in cfg else "<missing>"
        if isinstance(node, DictConfig):
            continue
        what = "removed" if node == "<missing>" else "set to null" if node is None else f"set to {node!r}"
        raise UserError(f"{key}: a group of settings cannot be {what}; set its keys instead (e.g. {key}.KEY=VALUE; "
                        f"'boundlab --help' lists them with their defaults)")


def plan_of(argv: Sequence[str]) -> Plan:
    """The jobs that ``boundlab argv`` would run (each as its override list)."""
    from pipeline.params import UserError

    args = command_line(argv)
    if args.help or args.hydra_help or args.cfg or args.info or args.shell_completion:
        _check_info_command(args)
        return Plan()
    overrides = hydra_seam.parser().parse_overrides(args.overrides)  # sweep values included: parsed as a whole
    checked: set[str] = set()
    check_names(overrides, checked)  # before Hydra reads an experiment file or makes a directory
    if not args.multirun:
        return Plan(False, list(args.overrides), [list(args.overrides)])
    fixed = [o.input_line for o in overrides if not o.is_sweep_override()]
    try:
        base = composed(lambda: hydra.compose("config", overrides=fixed, return_hydra_config=True), fixed)
    except UserError:  # composed named the override already
        raise
    except Exception as e:  # Hydra composes a sweep's fixed overrides before choosing the swept options
        swept = [o.key_or_group for o in overrides if o.is_sweep_override()]
        why = explain(e, fixed)
        key = why.split(":", 1)[0]  # a key of a swept group's options: dataset.k with -m dataset=a,b
        if "unknown key" in why and "did you mean" not in why and any(key.startswith(g.replace("/", ".") + ".") for g in swept):
            raise UserError(f"{why} (in a sweep over {', '.join(swept)}, the fixed keys must exist without the "
                            "swept options: name the group option on the command line, e.g. dataset=multiclass_margin)") from None
        if "unknown key" in why:
            raise UserError(why) from None
        raise
    check_sections(base)
    _check_sweeper(base.hydra.sweeper)
    _check_launcher(base.hydra.launcher)
    check_steering(sweep_overrides(base, args.overrides))
    _check_pack(base)
    if base.hydra.job.get("chdir"):  # set by an experiment file
        raise UserError(f"hydra.job.chdir=true: {NO_CHDIR}")
    jobs = sweep_jobs(base, args.overrides)
    if any(o.is_sweep_override() and o.key_or_group in ("name", "experiment") for o in overrides):
        for job in jobs:  # swept names are checked one by one (the pre-flight then refuses more than one)
            check_names(parse_overrides(job), checked)
    plan = Plan(True, list(args.overrides), jobs)
    if "RayLauncher" in str(base.hydra.launcher.get("_target_", "")):
        from omegaconf import OmegaConf

        plan.ray_init = OmegaConf.to_container(base.hydra.launcher.ray.init, resolve=True)
    return plan


def _check_info_command(args: Any) -> None:
    """``--help``, ``--hydra-help``, ``--cfg`` and ``--info`` compose the config with the command's overrides, as
    a run does: a bad override, or two of Hydra's commands at once, is refused here in the run's one line,
    not by Hydra's traceback or its multi-line error. ``--info plugins`` and shell completion compose nothing
    (completion reads its own arguments, e.g. ``install=bash``)."""
    from hydra.errors import HydraException
    from omegaconf.errors import OmegaConfBaseException

    from pipeline.job.config import build
    from pipeline.params import UserError

    if not (args.help or args.hydra_help):  # Hydra shows a help whatever else the command asks
        asked = [flag for flag, on in (("--run", args.run), ("-m", args.multirun), ("--cfg", args.cfg),
                                       ("--info", args.info is not None), ("--shell-completion", args.shell_completion))
                 if on]
        if len(asked) > 1:
            raise UserError(f"{' and '.join(asked)}: one at a time (-m runs a sweep, --cfg prints the config, --info "
                            "describes it, --shell-completion completes a command line)")
    if args.shell_completion or args.info == "plugins" or not args.overrides:
        return
    overrides = hydra_seam.parser().parse_overrides(args.overrides)
    swept = [o.input_line for o in overrides if o.is_sweep_override()]
    if swept:  # Hydra composes these commands as one run, with or without -m
        raise UserError(f"{swept[0]}: --help, --cfg and --info show one job's config: give the key one value")
    check_names(overrides)
    try:
        cfg = hydra.compose("config", overrides=list(args.overrides), return_hydra_config=True)
        with open_dict(cfg):
            del cfg["hydra"]
        build(cfg)  # the values checked as a run checks them: what is shown is a job that would run
    except (HydraException, OmegaConfBaseException) as e:  # explained as a run's composition is
        raise UserError(explain(e, list(args.overrides))) from None


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
    backend = launcher.get("backend")
    if "JoblibLauncher" in str(launcher.get("_target_", "")) and backend not in (None, "loky"):
        # Hydra's joblib launcher sets loky whatever this says (its _core.launch): refused, not silently ignored
        raise ParamError("hydra.launcher.backend", backend, "loky (or null): Hydra's joblib launcher always runs "
                         "loky's fresh processes; for workers forked from the command choose hydra/launcher=fork")


def _check_pack(base: DictConfig) -> None:
    """``pack=N`` (``pipeline.sweep.pack``): packed by boundlab's sweeper (with ``seeds=auto`` too: its rounds add
    seeds in whole packs and reuse the earlier rounds' parts from the job store). One value for the whole sweep,
    as every key that steers it (:func:`check_steering`)."""
    from hydra.utils import get_class

    from pipeline.params import UserError

    if base.get("pack") is None:
        return
    target = str(base.hydra.sweeper.get("_target_", ""))
    try:
        packs = issubclass(get_class(target), get_class("hydra_plugins.boundlab_sweeper.boundlab_sweeper.BoundlabSweeper"))
    except Exception:  # noqa: BLE001 - Hydra reports a sweeper it cannot load when it instantiates it
        packs = False
    if not packs:
        raise UserError(f"pack={base.pack}: packs are made by boundlab's sweeper; use hydra/sweeper=boundlab (the "
                        "default), or leave pack out")
    if base.get("pack_members") is not None:
        raise UserError("pack_members: set by the sweeper for each pack, never on the command line")


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

    from pipeline.job.config import build
    from pipeline.params import UserError
    from pipeline.sweep.seeded import Seeded

    with hydra.initialize_config_dir(config_dir=str(CONF_DIR), version_base=None):
        try:
            plan = plan_of(argv)
        except UserError as e:
            fail(str(e))
        except (HydraException, OmegaConfBaseException) as e:
            fail(explain(e))
        if plan.multirun and not plan.jobs and not any(a.startswith("--") for a in argv):
            fail("the sweep has no jobs (an empty list or range among its values, e.g. seed='range(0,0)'): give each "
                  "swept key at least one value")
        compose = hydra_seam.Composer()
        seeded = Seeded(fresh=False)  # a job that differs from a checked one only in its seed: that job, reseeded

        def check(job: list[str]) -> tuple[Any, Any]:
            cfg = composed(lambda: compose(job), job)
            check_sections(cfg)
            built = build(cfg)
            _check_log(cfg)
            if any(o.startswith("+") for o in job):
                check_added(job, compose([o for o in job if not o.startswith("+")]))
            return cfg, built

        keys: set[tuple[str, Any]] = set()
        settings: dict[tuple[int, int], tuple[Any, Any, str, Any]] = {}
        progress = _CheckProgress(len(plan.jobs))
        for i, job in enumerate(plan.jobs):
            progress(i)
            try:
                cfg, built, short = seeded.build(job, check)
                keys.add(distinct(built, short, settings))
            except UserError as e:
                fail(f"{e}{_in_job(plan, job)}")
            except (HydraException, OmegaConfBaseException) as e:
                fail(f"{explain(e, job)}{_in_job(plan, job)}")
        if plan.jobs:  # the last job's store (one sweep, one store: the jobs differ in what they run)
            plan.tracking_uri = cfg.tracking.uri
        if plan.jobs:  # the directories Hydra makes for the jobs fit the system (a job's node: the sweep's is one)
            try:
                check_outputs(compose.cache.config(parse_overrides(plan.jobs[0]), lambda structural: hydra.compose(
                    "config", overrides=structural, return_hydra_config=True), key=("hydra",)), plan.multirun, len(plan.jobs))
            except UserError as e:
                fail(str(e))
        for o in parse_overrides(argv_overrides(argv)):
            if o.key_or_group == "hydra.job.chdir" and (o.is_sweep_override() or o.value() not in (False, "false")):
                fail(f"{o.input_line}: {NO_CHDIR}")
        for key in ("experiment", "name"):  # one sweep is one experiment: its results land under one name
            # only an override that spells the key can set it: the others are not parsed (100,000 jobs: ~0.5 s)
            values = {str(o.value()) for job in plan.jobs for o in parse_overrides([t for t in job if key in t])
                      if o.key_or_group == key}
            if plan.multirun and len(values) > 1:
                fail(f"{key}={','.join(sorted(values))}: a sweep runs one {key} (its results, parent run and verdicts "
                      f"are filed under it); run one command per {key}")
        if plan.multirun and len(keys) < len(plan.jobs):  # a value listed twice, or spelt two ways (0.1,1e-1)
            print(f"boundlab: the grid lists {len(plan.jobs)} jobs, {len(keys)} of them distinct: a job listed twice runs "
                  "once and counts once in every verdict", file=sys.stderr)
        if plan.jobs and cfg.get("seeds") == "auto":
            if not plan.multirun:
                fail("seeds=auto: adds seeds to a sweep in rounds; add -m (boundlab -m seeds=auto ...)")
            given = [o.input_line for o in parse_overrides(argv_overrides(argv)) if o.key_or_group == "seed"]
            if given and not in_round:
                fail(f"{given[0]}: seeds=auto chooses the seeds (0, 1, 2, ... in rounds of seed_round, at most "
                      "seed_budget); remove seed=..., or use seeds=fixed")
            minutes = cfg.get("seed_minutes")
            plan.sequential = (int(cfg.seed_budget), int(cfg.seed_round), None if minutes is None else float(minutes))
            plan.seed_unit = int(cfg.get("pack") or 1)
    return plan


def _in_job(plan: Plan, job: Sequence[str]) -> str:
    """Where a refused job is, after its error: its overrides, in a sweep of more than one job."""
    return f" (in the job {' '.join(job)})" if plan.multirun and len(plan.jobs) > 1 else ""


_OWN = object()  # no learner or dataset parameter named seed: the job's own seed is its params' seed


def distinct(job: Any, short: bool, settings: dict[tuple[int, int], tuple[Any, Any, str, Any]]) -> tuple[str, Any]:
    """What tells the jobs of a sweep apart, as ``Job.key`` does (its learner, its dataset, their parameters and
    its params' seed), without hashing every job: (its setting's key, ``Job.key(seeded=False)``; the seed of its
    ``params()``). A job built the short way (``short``: pipeline.sweep.seeded, without copies) shares its family's
    learner and dataset, whose setting is computed once and kept in ``settings`` (with them, so that their ids
    stay theirs). 100,000 seeds: ~0.5 s of hashing less."""
    if not short:
        return job.key(seeded=False), job.params()["seed"]
    held = settings.get((id(job.learner), id(job.dataset)))
    if held is None:
        own = {**job.dataset.get_params(), **job.learner.get_params()}.get("seed", _OWN)
        held = settings[(id(job.learner), id(job.dataset))] = (job.learner, job.dataset, job.key(seeded=False), own)
    return held[2], job.seed if held[3] is _OWN else held[3]


# Bytes kept below a job's (or a sweep's) directory for what is written in it: a pack's parts
# (pack-00001/results-part-00000.parquet), figures named by their bound, and each staged under a temporary name
# (.NAME.PID.tmp).
BELOW = 128


JOB_SUBDIR = "${hydra.job.num}"  # a sweep's job directory in its sweep's: the one the sweep's end reads


def check_outputs(cfg: DictConfig, multirun: bool, jobs: int = 1) -> None:
    """The directories Hydra makes for the command (``hydra.run.dir``; ``hydra.sweep.dir`` and in it each job's
    ``hydra.sweep.subdir``) and what it names in them (``hydra.output_subdir``, the log ``hydra.job.name``.log)
    fit the system: no component longer than ``NAME_MAX``, no path longer than ``PATH_MAX`` with :data:`BELOW`
    bytes to spare (``pipeline.paths.too_long``). Refused naming the key (UserError), never Hydra's traceback
    when it makes the directory. ``cfg``: a job's config with its Hydra node."""
    import os

    from omegaconf import OmegaConf

    from pipeline.params import UserError
    from pipeline.paths import shown, too_long

    raw_hydra = OmegaConf.to_container(cfg.hydra, resolve=False)

    def raw(key: str) -> str | None:  # as configured: what the message shows
        node: Any = raw_hydra
        for part in key.split(".")[1:]:
            node = node.get(part) if isinstance(node, dict) else None
        return None if node is None else str(node)

    def value(key: str) -> str | None:  # as Hydra will make it (what the sweep context sets is about as long)
        try:
            got = OmegaConf.select(cfg, key, throw_on_missing=True)
        except Exception:  # noqa: BLE001 - an interpolation of what Hydra sets as the job starts: the text itself
            got = (raw(key) or "").replace("${hydra.job.num}", str(max(jobs - 1, 0))) or None
        return None if got is None else str(got)

    def check(key: str, path: str, below: int) -> None:
        why = too_long(path, below)
        if why:  # a relative path too long: the working directory it is made in is part of its length
            here = not os.path.isabs(path) and "PATH_MAX" in why
            inside = f" (in the working directory {shown(os.getcwd())})" if here else ""
            raise UserError(f"{key}={shown(raw(key) or path, 72)}{inside}: {why}; give {key} a shorter value"
                            + (", or run from a shorter directory" if here else ""))

    if multirun:
        subdir = raw("hydra.sweep.subdir")
        if subdir is not None and subdir != JOB_SUBDIR:
            raise UserError(f"hydra.sweep.subdir={shown(subdir, 72)}: a sweep keeps each job in the directory named by "
                            f"its number ({JOB_SUBDIR}, Hydra's default), where the sweep's end and a rerun find it; "
                            "remove this override (hydra.sweep.dir names the sweep's directory)")
        top = value("hydra.sweep.dir") or "."
        check("hydra.sweep.dir", top, BELOW)
        out = os.path.join(top, value("hydra.sweep.subdir") or "")
        check("hydra.sweep.subdir", out, BELOW)
    else:
        out = value("hydra.run.dir") or "."
        check("hydra.run.dir", out, BELOW)
    saved = value("hydra.output_subdir")
    if saved:
        check("hydra.output_subdir", os.path.join(out, saved, "overrides.yaml"), 0)
    name = value("hydra.job.name")
    if name:
        check("hydra.job.name", os.path.join(out, f"{name}.log"), 0)


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
    few seconds (on stderr: Hydra has not set up logging yet).

    The estimate is the rate of the second ``SAMPLE`` jobs, not the first: the first job of each family is
    composed in full (~50 ms), the others of a seed round the short way (~10 us; ``pipeline.sweep.seeded``), so
    the first hundred jobs alone read a 100,000-seed round's 1.5 s check as 54 s."""

    SAMPLE, QUIET = 100, 5.0  # jobs timed before estimating; checks shorter than this stay silent

    def __init__(self, total: int) -> None:
        import time

        self.total, self.start, self.progress, self.mark = total, time.monotonic(), None, 0.0

    def __call__(self, done: int) -> None:
        import time

        if self.progress is not None:
            self.progress.update(done)
        elif self.total > 2 * self.SAMPLE and done == self.SAMPLE:
            self.mark = time.monotonic()
        elif self.total > 2 * self.SAMPLE and done == 2 * self.SAMPLE:
            now = time.monotonic()
            estimate = self.estimate(now - self.start, now - self.mark, done)
            if estimate > self.QUIET:
                from pipeline.sweep.progress import Progress

                print(f"boundlab: checking the sweep's {self.total:,} jobs before the first starts (about {estimate:.0f} s)",
                      file=sys.stderr, flush=True)
                self.progress = Progress("pre-flight", self.total, "jobs checked", clock=time.monotonic,
                                         say=lambda line: print(f"boundlab: {line}", file=sys.stderr, flush=True))
                self.progress.start = self.start

    def estimate(self, elapsed: float, last_sample: float, done: int) -> float:
        """Seconds the whole check takes: what it took so far, and the rest at the rate of the last sample."""
        return elapsed + last_sample / self.SAMPLE * (self.total - done)


def argv_overrides(argv: Sequence[str]) -> list[str]:
    """The override arguments of a command line (Hydra's own flags left out)."""
    return list(command_line(argv).overrides)


CHOOSE = ("choose what runs with overrides (experiment=NAME, algorithm=..., dataset=...); a learner, dataset or bound "
          "of your own is a plug-in (docs/plugins.md)")
ANOTHER_CONFIG = {  # Hydra's flags that would run another config than the one the pre-flight checks
    "config_name": ("--config-name", f"boundlab runs its own config (conf/config.yaml), the one its pre-flight checks "
                                     f"before any work; {CHOOSE}"),
    "config_path": ("--config-path", f"boundlab runs its own config directory (conf/), the one its pre-flight checks "
                                     f"before any work; {CHOOSE}"),
    "config_dir": ("--config-dir", f"boundlab composes its own config directory (conf/) alone, the one its "
                                   f"pre-flight checks; {CHOOSE}"),
    "experimental_rerun": ("--experimental-rerun", "boundlab reruns nothing from a saved config: run the same command "
                                                   "again (its finished jobs are reused; force=true runs them again)"),
}


def command_line(argv: Sequence[str]) -> Any:
    """``argv`` as Hydra reads it (:func:`hydra_seam.parse_command_line`), refused in one line (UserError) when
    Hydra's parser refuses it or when it asks Hydra for another config than the one the pre-flight checks."""
    from pipeline.params import UserError

    try:
        args = hydra_seam.parse_command_line(argv)
    except hydra_seam.CommandLineError as e:
        stray = str(e).startswith("unrecognized arguments:") and any("=" in a for a in str(e).split(":", 1)[1].split())
        raise UserError(f"{e}" + (" (Hydra's flags come before the overrides: boundlab -m key=value ...)"
                                  if stray else "")) from None
    for attr, (flag, why) in ANOTHER_CONFIG.items():
        value = getattr(args, attr)
        if value is not None and not (attr == "config_name" and value == "config"):
            raise UserError(f"{flag} {value}: {why}")
    return args


def checked_plan(argv: list[str], in_round: bool = False, imports: Sequence[str] = ()) -> Plan:
    """The pre-flight: the config directory, every job's config, the tracking store. Exits 2 on a bad one.
    ``imports``: modules this process imports while the jobs are checked (:func:`_checked_beside`)."""
    from pipeline.sweep.schemas import register

    # conf/hydra/launcher/{ray,joblib}.yaml replace the plugins' configs with every field of their schemas
    warnings.filterwarnings("ignore", message=r"\s*'hydra/launcher/(ray|joblib)' is validated against ConfigStore schema")
    if remember_working_dir() is None:  # Hydra reads it first (each job starts there): its traceback otherwise
        fail(f"the working directory {shown(removed_dir(), 160)} does not exist (removed since the shell entered it): "
             "cd to a directory that exists and run the command again")
    if not CONF_DIR.is_dir():
        fail(f"no config directory at {CONF_DIR}: install boundlab from its checkout with 'pip install -e .'")
    register()
    plan = _checked_beside(argv, in_round, imports) if imports else _checks(argv, in_round)
    if plan.jobs:
        from pipeline.tracking import backend, redact, tracking_uri

        uri = tracking_uri(plan.tracking_uri)  # tracking.uri when set, else MLFLOW_TRACKING_URI, else mlflow.db
        why = backend(uri).check_store(uri)
        if why:
            fix = ("give tracking.uri one that works (when set, it wins over MLFLOW_TRACKING_URI)" if plan.tracking_uri
                   else "set MLFLOW_TRACKING_URI (or tracking.uri=...) to one that works")
            fail(f"tracking store {redact(uri)}: {why}; {fix}")
        env = os.environ.get("MLFLOW_TRACKING_URI")
        if plan.tracking_uri and env and env != plan.tracking_uri and not in_round:  # said once, not each round
            print(f"boundlab: the runs go to tracking.uri={redact(uri)}, not to MLFLOW_TRACKING_URI={redact(env)} "
                  "(tracking.uri, when set, wins: docs/mlflow.md)", file=sys.stderr)
        from pipeline.job import store

        why = store.problem()
        if why:  # a cache: the jobs run and finish all the same
            print(f"boundlab: warning: the job store {why}: jobs run and are kept in their own directories, but not "
                  "shared with later sweeps; set BOUNDLAB_CACHE to a writable directory", file=sys.stderr)
    return plan


def _checked_beside(argv: list[str], in_round: bool, imports: Sequence[str]) -> Plan:
    """:func:`preflight` in a process forked from this one (:func:`pipeline.forks.pool`: it inherits the
    imported modules and the registered configs) while this one imports ``imports``, which the command needs
    whatever the checks find (``pipeline.cli``: MLflow, ~1 s): on two cores, at once instead of one after the
    other. The child prints what the pre-flight prints (a bad value's one line, the checks' progress) as it
    happens; its exit on a bad value (code 2) is this process's after the import under way (the others are
    left). The :class:`Plan` is the one :func:`preflight` returns; on one core, without fork (or a pool: no
    semaphores), when the system would not fork, or when the child is lost (a signal, the memory), the pre-flight
    runs here. An interrupt ends the child at once."""
    import importlib
    from concurrent.futures.process import BrokenProcessPool

    from pipeline import forks

    try:
        pool = forks.pool(1) if forks.cores() >= 2 else None
    except (OSError, ImportError, NotImplementedError):  # no semaphores for the pool's queues (no /dev/shm)
        pool = None
    if pool is None:
        return _checks(argv, in_round)
    sys.stdout.flush()  # what is buffered is printed once, by this process
    sys.stderr.flush()
    lost = False
    try:
        try:
            task = pool.submit(_flushed, argv, in_round)
        except OSError:  # the system would not fork (a process limit, the memory): the checks run here
            forks.stop(pool)
            return _checks(argv, in_round)
        for name in imports:
            if task.done() and task.exception() is not None:
                break
            try:
                importlib.import_module(name)
            except ImportError:  # said where the command needs it, as without this head start
                break
        try:
            plan = task.result()
        except BrokenProcessPool:
            lost = True
    except BaseException:  # an interrupt, or the child's exit on a bad value (it has said why): it ends now
        forks.stop(pool)
        raise
    pool.shutdown(wait=True)
    return _checks(argv, in_round) if lost else plan


def _checks(argv: list[str], in_round: bool) -> Plan:
    """:func:`preflight` of a command (``in_round``: a round of a ``seeds=auto`` sweep)."""
    return preflight(argv, True) if in_round else preflight(argv)


def _flushed(argv: list[str], in_round: bool) -> Plan:
    """:func:`_checks`, then what they printed flushed (a forked child's buffers are not flushed at its exit)."""
    try:
        return _checks(argv, in_round)
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
