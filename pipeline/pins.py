"""Pinned reproduction: ``constraints.txt``, the exact package versions CI tests.

Both of the README's commands install with ``-c constraints.txt``, so a fresh clone resolves the versions
that produced the committed ``dvc.lock`` and that CI ran. The file holds ``name==version`` lines only (no
paths, no index URLs). The report's provenance records whether the installed versions match it
(:func:`check`) and names every package that differs.

``python -m pipeline.pins check`` lists the differences (exit 1 if any); ``python -m pipeline.pins
refresh`` rewrites the file from a fresh virtual environment in which ``pip install -e '.[test]'`` resolved
the newest versions the project's own requirements allow (docs/reproduce.md, "Pinned versions").
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tempfile
import venv
from importlib import metadata
from pathlib import Path
from typing import Any

from pipeline.paths import PACKAGE_ROOT

CONSTRAINTS = PACKAGE_ROOT / "constraints.txt"
LINE = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==([A-Za-z0-9][A-Za-z0-9.+!_-]*)$")


def normalize(name: str) -> str:
    """A distribution name as pip compares it (PEP 503): lower case, runs of ``-_.`` as one ``-``."""
    return re.sub(r"[-_.]+", "-", name).lower()


def read(path: Path = CONSTRAINTS) -> dict[str, str]:
    """The pins of ``path``: normalized name -> version. Blank lines and ``#`` comments are skipped; any
    other line that is not ``name==version`` is an error naming the line."""
    pins: dict[str, str] = {}
    for number, raw in enumerate(path.read_text().splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        match = LINE.match(line)
        if not match:
            raise ValueError(f"{path.name} line {number}: {line!r} is not a name==version pin")
        pins[normalize(match[1])] = match[2]
    return pins


def installed() -> dict[str, str]:
    """Every installed distribution: normalized name -> version. Each distribution's metadata is parsed once
    (``d.metadata`` parses the file at every access, and ``d.version`` is one more: 0.25 s -> 0.06 s)."""
    have = {}
    for d in metadata.distributions():
        fields = d.metadata
        if fields["Name"]:
            have[normalize(fields["Name"])] = fields["Version"]
    return have


def check(path: Path | None = None) -> dict[str, Any]:
    """How the installed versions compare with the pins: ``{"file", "pinned", "matches", "differ"}``, where
    ``differ`` maps each pinned package that is installed at another version to ``installed != pinned``.
    A pinned package that is not installed is not a difference (the main job does not install the test
    extra); without the file (an installed, not checked-out, boundlab) ``matches`` is None. ``path``
    defaults to :data:`CONSTRAINTS`."""
    path = CONSTRAINTS if path is None else path
    if not path.exists():
        return {"file": path.name, "pinned": 0, "matches": None, "differ": {}}
    pins, have = read(path), installed()
    differ = {name: f"{have[name]} != {version}" for name, version in sorted(pins.items())
              if name in have and have[name] != version}
    return {"file": path.name, "pinned": len(pins), "matches": not differ, "differ": differ}


def summary(result: dict[str, Any]) -> str:
    """One line for the report: whether the installed versions are the pinned ones."""
    if result["matches"] is None:
        return f"no {result['file']} beside the package: versions not checked"
    if result["matches"]:
        return f"installed versions match {result['file']} ({result['pinned']} pins)"
    return (f"DIFFERENT from {result['file']}: " + ", ".join(f"{n} {d}" for n, d in result["differ"].items())
            + " (results may differ from the committed ones; docs/reproduce.md)")


def freeze(python: Path) -> list[str]:
    """``pip freeze`` of the environment of ``python``, editable installs excluded, as sorted pins. A line
    that is not ``name==version`` (a package installed from a path or URL) is an error."""
    out = subprocess.run([str(python), "-m", "pip", "freeze", "--exclude-editable"], check=True, capture_output=True,
                         text=True).stdout
    lines = [ln.strip() for ln in out.splitlines() if ln.strip() and not ln.startswith("#")]
    bad = [ln for ln in lines if not LINE.match(ln)]
    if bad:
        raise SystemExit(f"pipeline.pins: not a name==version pin (installed from a path or URL?): {bad[0]}")
    return sorted(lines, key=lambda ln: normalize(ln.split("==")[0]))


def refresh(root: Path = PACKAGE_ROOT, extras: str = "test") -> Path:
    """Resolve ``pip install -e '.[extras]'`` in a new virtual environment without constraints and write its
    versions to ``root/constraints.txt``."""
    with tempfile.TemporaryDirectory(prefix="boundlab-pins-") as tmp:
        env = Path(tmp) / "venv"
        venv.EnvBuilder(with_pip=True).create(env)
        python = env / "bin" / "python"
        print(f"pipeline.pins: resolving .[{extras}] in a fresh virtual environment (a few minutes)", flush=True)
        subprocess.run([str(python), "-m", "pip", "install", "-q", "-e", f".[{extras}]"], cwd=root, check=True)
        pins = freeze(python)
    target = root / "constraints.txt"
    target.write_text("\n".join(pins) + "\n")
    print(f"pipeline.pins: wrote {len(pins)} pins to {target.name}")
    return target


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m pipeline.pins", description=__doc__.split("\n\n")[0])
    parser.add_argument("command", choices=("check", "refresh"),
                        help="check: list installed versions that differ from constraints.txt (exit 1 if any); "
                             "refresh: rewrite constraints.txt from a fresh resolution")
    args = parser.parse_args(argv)
    if args.command == "refresh":
        refresh()
        return 0
    result = check()
    print(summary(result))
    return 0 if result["matches"] is not False else 1


if __name__ == "__main__":
    sys.exit(main())
