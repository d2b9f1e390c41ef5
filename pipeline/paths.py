"""Where the project lives: configs, experiments, the cache and the default tracking store."""

from __future__ import annotations

import os
from pathlib import Path

PACKAGE_ROOT = Path(__file__).resolve().parents[1]
CONF_DIR = PACKAGE_ROOT / "conf"


def project_root() -> Path:
    """The checkout that holds ``conf/``.

    DVC runs queued experiments in a temporary copy under ``.dvc/tmp/exps``; their runs belong to the
    workspace's tracking store, so the root is the checkout that holds that copy.
    """
    parts = PACKAGE_ROOT.parts
    for i in range(len(parts) - 2):
        if parts[i : i + 3] == (".dvc", "tmp", "exps"):
            return Path(*parts[:i])
    return PACKAGE_ROOT


def cache_dir() -> Path:
    """``BOUNDLAB_CACHE`` if set, else ``.cache`` in the project root: certified statistics, parsed imports
    and the job store (``pipeline.job.store``)."""
    return Path(os.environ.get("BOUNDLAB_CACHE") or project_root() / ".cache")


# --- The file system around the command: its working directory and its limits -------------------------------

_STARTED_IN: list[str] = []  # the working directory of the command running in this process (remember_working_dir)


def working_dir() -> str | None:
    """The working directory, or None when it no longer exists (removed while this process was in it)."""
    try:
        return os.getcwd()
    except FileNotFoundError:
        return None


def remember_working_dir() -> str | None:
    """Note the working directory a command starts in (what :func:`fault` names if it is removed later) and
    return it; None when it does not exist (then :func:`removed_dir` names it)."""
    here = working_dir()
    _STARTED_IN[:] = [here or removed_dir()]
    return here


def removed_dir() -> str:
    """The name of a working directory that no longer exists, as far as it can be told: the shell's ``PWD``
    when that is gone too (else ``PWD`` is not the directory this process was in), or '(removed)'."""
    pwd = os.environ.get("PWD")
    return pwd if pwd and not os.path.isdir(pwd) else "(removed)"


def shown(path: str | os.PathLike[str], keep: int = 60, count: bool = True) -> str:
    """``path`` for a one-line message: whole up to ``keep`` characters, else its start and end around '...'
    and (``count``) its length (a path of 5,000 characters is not repeated in an error)."""
    text = os.fspath(path)
    if len(text) <= keep:
        return text
    return f"{text[:keep - 20]}...{text[-14:]}" + (f" ({len(text):,} characters)" if count else "")


def _limit(path: str, name: str, default: int) -> int:
    """``os.pathconf(name)`` of the nearest existing directory on ``path``'s way (the file system it would be
    made on), else ``default``."""
    where = path
    while True:
        try:
            return int(os.pathconf(where, name))
        except (OSError, ValueError):
            parent = os.path.dirname(where)
            if parent == where:
                return default
            where = parent


def too_long(path: str | os.PathLike[str], below: int = 0) -> str | None:
    """Why ``path`` (made absolute) cannot be written on this system, with room for ``below`` more bytes of what
    goes inside it: a component longer than the file system's ``NAME_MAX`` bytes, or a whole longer than
    ``PATH_MAX`` - 1 bytes; None when it fits. One clause, the path never repeated whole."""
    full = os.path.abspath(os.fspath(path))
    name_max = _limit(full, "PC_NAME_MAX", 255)
    for part in full.split(os.sep):
        size = len(os.fsencode(part))
        if size > name_max:
            return (f"its component {shown(part, 40, count=False)} is {size:,} bytes, above the file system's limit of "
                    f"{name_max} bytes a name (NAME_MAX)")
    size = len(os.fsencode(full))
    path_max = _limit(full, "PC_PATH_MAX", 4096) - 1  # PATH_MAX counts the terminating NUL
    if size + below > path_max:
        inside = f" ({size + below:,} with what is written inside it)" if below else ""
        return f"it is {size:,} bytes long{inside}, above this system's limit of {path_max:,} bytes a path (PATH_MAX)"
    return None


def fault(error: BaseException) -> str | None:
    """The one line for an error of the file system around the command rather than of its code, or None:
    the working directory removed while the command ran (Hydra starts every job there), or a path longer
    than the system allows. Named with the directory :func:`remember_working_dir` noted."""
    import errno

    if working_dir() is None:  # whatever failed, it failed for that: nothing relative to it can be reached
        started = _STARTED_IN[0] if _STARTED_IN else removed_dir()
        return (f"the working directory {shown(started, 160)} was removed while the command ran (Hydra starts every job "
                "there); finished jobs are kept (their MLflow runs; the job store reuses them): run the same command "
                "to resume, from a directory that exists")
    if isinstance(error, OSError) and error.errno == errno.ENAMETOOLONG:
        where = os.fsdecode(error.filename) if isinstance(error.filename, (str, bytes)) else "a path"
        why = too_long(where) if error.filename is not None else None
        return (f"{shown(where)}: {why or 'a name or a path longer than this system allows'}; use a shorter "
                "path (hydra.sweep.dir, hydra.run.dir, BOUNDLAB_CACHE or the working directory)")
    return None


# The main job (dvc.yaml, written by pipeline.dvc_stage): its experiments in the order of docs/experiments.md, and
# where their stages' sweeps run (results/NAME gets what they determine). Here, below every reader of the results.
EXPERIMENTS = ("perceptron_margin", "perceptron_tight", "perceptron_nonseparable", "perceptron_batch", "worst_case",
               "halving_classes", "pegasos_convergence", "pegasos_expectation", "pegasos_high_probability", "pegasos_sampling",
               "pegasos_imbalanced", "pegasos_transfer", "pegasos_full_batch", "kernel_pegasos", "kernel_pegasos_projection",
               "kernel_pegasos_expectation", "multiclass_sgd_rate", "multiclass_svm_samples",
               "multiclass_excess_expectation", "multiclass_pegasos_projection", "multiclass_cost", "multiclass_expectation",
               "real_data_margins")
WORK_DIR = Path("multirun") / "dvc"
