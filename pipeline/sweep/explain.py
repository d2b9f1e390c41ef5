"""A Hydra or OmegaConf error in one line: what was wrong and what is allowed.

The command's pre-flight (``pipeline.sweep.preflight``) reports the first bad job of a sweep with one line on
stderr and exit code 2. Hydra's and OmegaConf's own messages name their grammar and internals; this
module turns each kind into the key or value at fault and what to write instead, with the declared keys
or options closest to a misspelt one ('did you mean gamma?').
"""

from __future__ import annotations

import re

from typing import Sequence

import hydra

from pipeline.sweep.hydra_seam import parse_overrides


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
        return f"{group}={option}: unknown {group}; {choose(option, options)}"
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
        inner = re.search(r"full_key: (\S+)", str(exc.__cause__ or ""))
        if inner and inner[1].startswith(key + "."):  # a group given a mapping with a key it lacks: name that key
            key = inner[1]
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


def choose(name: object, options: Sequence[str]) -> str:
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
    known = [k for k in flat_keys(OmegaConf.to_container(cfg, resolve=False))
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
    group = next((g for g in SWITCHED_GROUPS if key.startswith(g.replace("/", ".") + ".")), None)
    if group:  # hydra.launcher.n_jobs without hydra/launcher=joblib
        owners = _options_taking(group, key, [o for o in rest if not o.startswith(f"{group}=")])
        if owners:
            return (f"a key of {' and '.join(f'{group}={o}' for o in owners)}, not of {group}={choices.get(group)}: "
                    f"choose it too ({group}={owners[0]} {key}=...)")
    return ""


SWITCHED_GROUPS = ("hydra/launcher", "hydra/sweeper")  # Hydra's groups whose options take keys of their own


def _options_taking(group: str, key: str, overrides: list[str]) -> list[str]:
    """The options of the config group ``group`` whose composed config has ``key`` (dotted, e.g.
    ``hydra.launcher.ray.remote.num_cpus``), each composed with ``overrides`` (only on the way to an error message:
    one composition per option)."""
    from hydra.core.global_hydra import GlobalHydra
    from omegaconf import OmegaConf

    absent = object()
    owners = []
    for option in GlobalHydra.instance().config_loader().get_group_options(group):
        try:
            cfg = hydra.compose("config", overrides=[*overrides, f"{group}={option}"], return_hydra_config=True)
        except Exception:  # noqa: BLE001, S112 - only a hint; an option that does not compose here takes nothing
            continue
        if OmegaConf.select(cfg, key, default=absent, throw_on_resolution_failure=False) is not absent:
            owners.append(option)
    return owners


def _looks_like_path(key: str, value: str) -> bool:
    """A value that names a file: its key says so (``dataset.path``), or it has a directory or an extension."""
    import re

    leaf = key.rsplit(".", 1)[-1].lower()
    return (leaf.endswith(("path", "dir", "file", "uri")) or "/" in value or "\\" in value
            or re.search(r"\.[A-Za-z][A-Za-z0-9]{0,5}$", value) is not None)


def flat_keys(d: object, prefix: str = "") -> list[str]:
    """Every key of a nested config container, dotted (``a``, ``a.b``, ...): what a misspelt key is matched against."""
    if not isinstance(d, dict):
        return []
    out = []
    for k, v in d.items():
        out.append(f"{prefix}{k}")
        out += flat_keys(v, f"{prefix}{k}.")
    return out
