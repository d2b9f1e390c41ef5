"""The ``boundlab`` command: a Hydra app whose every job is validated before any work starts.

``main`` checks the whole sweep first (each job's composed config through the learners' and datasets'
parameter specs); a bad value stops it with one line on stderr and exit code 2, before an output
directory or an MLflow run exists. Heavy libraries (numba, mlflow, pandas) are imported only by jobs.
"""

from __future__ import annotations

import hashlib
import os
import signal
import sys
import warnings
from dataclasses import dataclass, field
from typing import Sequence

import hydra
from omegaconf import DictConfig

from pipeline.paths import CONF_DIR

USAGE_EXIT = 2


def _fail(message: str) -> None:
    print(f"boundlab: error: {message}", file=sys.stderr)
    raise SystemExit(USAGE_EXIT)


def explain(exc: BaseException) -> str:
    """One line for a Hydra or OmegaConf error: what was wrong and what is allowed."""
    text = str(exc).strip()
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    if "Could not find '" in text and "Available options" in text:
        group, _, option = text.split("Could not find '")[1].split("'")[0].rpartition("/")
        start = next(i for i, ln in enumerate(lines) if ln.startswith("Available options")) + 1
        options = [ln for ln in lines[start:] if not ln.startswith("Config search path")]
        options = options[: next((i for i, ln in enumerate(options) if ":" in ln or "=" in ln), len(options))]
        return f"{group}={option}: unknown {group}; choose one of {', '.join(options)}"
    if "Could not override '" in text or "is not in struct" in text:
        key = text.split("'")[1]
        return f"{key}: unknown key; 'boundlab --help' lists every key with its default"
    if text.startswith("Missing mandatory value"):
        key = text.split(":", 1)[1].split()[0]
        return f"{key}: missing; set it on the command line ({key}=...)"
    if "Ambiguous value for argument '" in text:
        arg = text.split("'")[1]
        return f"{arg}: several values make a sweep: add -m (boundlab -m {arg} ...)"
    if "LexerNoViableAltException" in text or "mismatched input" in text or "token recognition error" in text:
        arg = lines[0].split(":", 1)[-1].strip()
        return (f"{arg}: cannot be read as KEY=VALUE; quote a value with spaces, quotes or special characters "
                "for Hydra, e.g. 'question=\"Does it hold?\"' (Hydra's override grammar)")
    return " ".join(lines[:2])


@dataclass
class Plan:
    """What ``boundlab argv`` will do, known before any work: its jobs and where it tracks them."""

    multirun: bool = False
    overrides: list[str] = field(default_factory=list)
    jobs: list[list[str]] = field(default_factory=list)
    tracking_uri: str | None = None

    def sweep_key(self) -> str:
        """Names the sweep directory: the same command (force aside) resumes in the same place."""
        kept = [o for o in self.overrides if not o.startswith(("force=", "hydra.launcher", "hydra/launcher"))]
        return hashlib.sha256("\0".join(kept).encode()).hexdigest()[:10]


def plan_of(argv: Sequence[str]) -> Plan:
    """The jobs that ``boundlab argv`` would run (each as its override list)."""
    from hydra._internal.core_plugins.basic_sweeper import BasicSweeper
    from hydra._internal.utils import get_args_parser
    from hydra.core.override_parser.overrides_parser import OverridesParser

    args = get_args_parser().parse_args(list(argv))
    if args.help or args.hydra_help or args.cfg or args.info or args.shell_completion:
        return Plan()
    parser = OverridesParser.create()
    overrides = parser.parse_overrides(args.overrides)
    if not args.multirun:
        return Plan(False, list(args.overrides), [list(args.overrides)])
    fixed = [o.input_line for o in overrides if not o.is_sweep_override()]
    try:
        base = hydra.compose("config", overrides=fixed, return_hydra_config=True)
    except Exception as e:  # Hydra composes a sweep's fixed overrides before choosing the swept options
        from pipeline.params import UserError

        swept = [o.key_or_group for o in overrides if o.is_sweep_override()]
        if swept:
            raise UserError(f"{explain(e)} (in a sweep over {', '.join(swept)}, the fixed keys must exist without the "
                            "swept options: name the group option on the command line, e.g. dataset=multiclass_margin)") from None
        raise
    params = [f"{k}={v}" for k, v in (base.hydra.sweeper.get("params") or {}).items()]
    jobs = BasicSweeper.split_arguments(parser.parse_overrides(params + list(args.overrides)), None)
    return Plan(True, list(args.overrides), [job for batch in jobs for job in batch])


class _Composer:
    """Job configs for the pre-flight check, composed once per choice of config groups.

    Composing a config costs ~0.1 s; a sweep's jobs mostly differ in values only. Those share one
    composition of their group choices (and other structural overrides), copied, with each value set
    the way Hydra sets a plain ``key=value`` override (``OmegaConf.update(cfg, key, value, merge=True)``).
    Anything that fails that way is composed by Hydra itself, so errors read as Hydra's.
    """

    def __init__(self) -> None:
        from hydra.core.global_hydra import GlobalHydra
        from hydra.core.override_parser.overrides_parser import OverridesParser

        self.parser = OverridesParser.create()
        self.repository = GlobalHydra.instance().config_loader().repository
        self.composed: dict[tuple[str, ...], DictConfig] = {}

    def _plain(self, o) -> bool:  # noqa: ANN001
        return (not (o.is_delete() or o.is_add() or o.is_force_add()) and o.package is None
                and not o.key_or_group.startswith("hydra") and not self.repository.group_exists(o.key_or_group))

    def __call__(self, job: list[str]) -> DictConfig:
        import copy

        from omegaconf import OmegaConf
        from omegaconf.errors import OmegaConfBaseException

        parsed = self.parser.parse_overrides(job)
        plain = [o for o in parsed if self._plain(o)]
        structural = tuple(o.input_line for o in parsed if not self._plain(o))
        if structural not in self.composed:
            self.composed[structural] = hydra.compose("config", overrides=list(structural))
        cfg = copy.deepcopy(self.composed[structural])
        try:
            for o in plain:
                OmegaConf.update(cfg, o.key_or_group, o.value(), merge=True)
        except OmegaConfBaseException:
            return hydra.compose("config", overrides=job)
        return cfg


def _trust_preflight() -> None:
    """Every job of the sweep was composed and validated by ``preflight``: Hydra's basic sweeper need not
    compose each one once more before launching it (its ``validate_batch_is_legal``; the launcher still
    composes every job it runs)."""
    from hydra._internal.core_plugins.basic_sweeper import BasicSweeper

    BasicSweeper.validate_batch_is_legal = lambda self, batch: None


def preflight(argv: Sequence[str]) -> Plan:
    """Validate every job of ``boundlab argv``; exit with code 2 and one line on the first bad one."""
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
        compose = _Composer()
        for job in plan.jobs:
            where = f" (in the job {' '.join(job)})" if plan.multirun and len(plan.jobs) > 1 else ""
            try:
                cfg = compose(job)
                build(cfg)
            except UserError as e:
                _fail(f"{e}{where}")
            except (HydraException, OmegaConfBaseException) as e:
                _fail(f"{explain(e)}{where}")
            plan.tracking_uri = cfg.tracking.uri
    return plan


@hydra.main(version_base=None, config_path=str(CONF_DIR), config_name="config")
def _app(cfg: DictConfig) -> None:
    from pipeline.params import UserError
    from pipeline.stages import job

    try:
        job(cfg)
    except UserError as e:  # found once the data exist (a data file, a batch larger than the sample)
        _fail(str(e))


def main(argv: Sequence[str] | None = None) -> None:
    """Entry point of the ``boundlab`` console script."""
    from pipeline.schemas import register

    argv = list(sys.argv[1:] if argv is None else argv)
    # conf/hydra/launcher/ray.yaml replaces the plugin's `ray` config with every field of its schema
    warnings.filterwarnings("ignore", message=r"'hydra/launcher/ray' is validated against ConfigStore schema")
    if not CONF_DIR.is_dir():
        _fail(f"no config directory at {CONF_DIR}: install boundlab from its checkout with 'pip install -e .'")
    register()
    plan = preflight(argv)
    if plan.jobs:
        from pipeline.tracking import check_store, tracking_uri

        uri = tracking_uri(plan.tracking_uri)
        why = check_store(uri)
        if why:
            _fail(f"tracking store {uri}: {why}; set MLFLOW_TRACKING_URI (or tracking.uri=...) to one that works")
    if plan.multirun:
        from pipeline.stages import SWEEP_KEY_ENV, SWEEP_SIZE_ENV

        _trust_preflight()

        os.environ[SWEEP_SIZE_ENV] = str(len(plan.jobs))
        os.environ[SWEEP_KEY_ENV] = plan.sweep_key()
    sys.argv = [sys.argv[0] if sys.argv else "boundlab", *argv]
    signal.signal(signal.SIGTERM, _interrupt)
    try:
        _app()
    except KeyboardInterrupt:
        from pipeline import tracking

        parent = os.environ.get(tracking.PARENT_ENV)
        if parent:
            tracking.end_run(tracking.tracking_uri(plan.tracking_uri), parent, "KILLED")
        print("boundlab: interrupted; finished jobs are kept: run the same command to resume", file=sys.stderr)
        raise SystemExit(130) from None


def _interrupt(signum: int, frame: object) -> None:
    """SIGTERM ends a job like Ctrl-C does: its run ends KILLED and the sweep can be resumed."""
    raise KeyboardInterrupt


if __name__ == "__main__":
    main()
