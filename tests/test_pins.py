"""Pinned reproduction (pipeline/pins.py): constraints.txt holds name==version pins of everything the
project installs, both README commands use it, and the report's provenance flags installed versions that
differ from it."""

from __future__ import annotations

import re
import sys
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement

from pipeline import pins
from pipeline.outputs import report

ROOT = Path(__file__).resolve().parents[1]


def _readme_commands() -> list[str]:
    text = (ROOT / "README.md").read_text()
    block = text.split("```bash\n", 1)[1].split("```", 1)[0]
    return [ln for ln in block.splitlines() if ln.strip()]


def test_constraints_file_is_name_version_lines_only() -> None:
    lines = (ROOT / "constraints.txt").read_text().splitlines()
    # name==version and nothing else: no comments, paths, URLs or pip options
    assert lines and all(pins.LINE.match(ln) for ln in lines), [ln for ln in lines if not pins.LINE.match(ln)]
    names = [pins.normalize(ln.split("==")[0]) for ln in lines]
    assert len(names) == len(set(names)), "a package pinned twice"
    assert names == sorted(names), "keep the file sorted (python -m pipeline.pins refresh writes it so)"


def test_every_requirement_of_the_project_is_pinned() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    requirements = list(project["dependencies"]) + [r for extra in project["optional-dependencies"].values() for r in extra]
    pinned = pins.read(ROOT / "constraints.txt")
    names = {pins.normalize(Requirement(r).name) for r in requirements} - {"boundlab"}
    assert names - pinned.keys() == set()
    for r in map(Requirement, requirements):  # and each pin satisfies the project's own specifier
        if pins.normalize(r.name) != "boundlab":
            assert r.specifier.contains(pinned[pins.normalize(r.name)], prereleases=True), (r, pinned[pins.normalize(r.name)])


def test_both_readme_commands_install_with_the_constraints() -> None:
    commands = _readme_commands()[:2]
    assert len(commands) == 2
    for cmd in commands:
        install = re.search(r"pip install ([^&]*)", cmd)
        assert install and "-c constraints.txt" in install[1], cmd


def test_read_rejects_anything_but_a_pin(tmp_path: Path) -> None:
    f = tmp_path / "constraints.txt"
    f.write_text("numpy==2.1.0\n\n# a comment\nScikit_Learn==1.5.2\n")
    assert pins.read(f) == {"numpy": "2.1.0", "scikit-learn": "1.5.2"}
    for bad in ("numpy>=2", "numpy @ file:///wheels/numpy.whl", "--index-url http://example.org/simple", "numpy"):
        f.write_text(f"pandas==2.2.0\n{bad}\n")
        with pytest.raises(ValueError, match="line 2: .* is not a name==version pin"):
            pins.read(f)


def test_check_flags_exactly_the_packages_that_differ(tmp_path: Path) -> None:
    have = pins.installed()
    f = tmp_path / "constraints.txt"
    lines = [f"{n}=={v}" for n, v in sorted(have.items()) if pins.LINE.match(f"{n}=={v}")]
    f.write_text("\n".join(lines + ["not-installed-package==1.0"]) + "\n")
    result = pins.check(f)
    assert result["matches"] is True and result["differ"] == {}  # a pin of a package not installed is no difference
    assert "match constraints.txt" in pins.summary(result)
    f.write_text("\n".join(lines).replace(f"numpy=={have['numpy']}", "numpy==0.0.1") + "\n")
    result = pins.check(f)
    assert result["matches"] is False and result["differ"] == {"numpy": f"{have['numpy']} != 0.0.1"}
    assert pins.summary(result).startswith("DIFFERENT from constraints.txt: numpy")
    assert pins.check(tmp_path / "absent.txt")["matches"] is None


def test_the_report_flags_a_run_outside_the_pins(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    f = tmp_path / "constraints.txt"
    f.write_text(f"numpy==0.0.1\npandas=={pins.installed()['pandas']}\n")
    monkeypatch.setattr(pins, "CONSTRAINTS", f)
    prov = report.provenance()
    assert prov["pinned versions"].startswith("DIFFERENT from constraints.txt: numpy ")
    page = report.render_html([], prov, tmp_path)
    assert "banner not-applicable'>Package versions DIFFERENT" in page
    assert "**Package versions DIFFERENT" in report.render_markdown([], prov, tmp_path)
    f.write_text(f"pandas=={pins.installed()['pandas']}\n")
    prov = report.provenance()
    assert prov["pinned versions"] == "installed versions match constraints.txt (1 pins)"
    assert "Package versions" not in report.render_html([], prov, tmp_path)


@pytest.mark.slow  # pip freeze, a process
def test_freeze_gives_pins_of_an_environment() -> None:
    frozen = pins.freeze(Path(sys.executable))
    assert frozen and all(pins.LINE.match(ln) for ln in frozen)
    assert not any(pins.normalize(ln.split("==")[0]) == "boundlab" for ln in frozen)  # the editable install is left out
