"""The tree is clean under the project's ruff configuration (pyproject.toml, [tool.ruff]): every `# noqa`
names a rule that fires where it stands (RUF100), and nothing else is reported."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.slow  # ruff, a process
def test_ruff_reports_nothing() -> None:
    # --no-cache: the check leaves no .ruff_cache behind in the tree it checks
    proc = subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", str(ROOT)], cwd=ROOT,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, f"ruff check (exit {proc.returncode}):\n{proc.stdout}{proc.stderr}"


@pytest.mark.slow  # mypy, a process
def test_mypy_checks_the_contract_between_a_run_and_its_statistics() -> None:
    """The records a learner hands over (pipeline/contract.py, in Outcome: pipeline/learners/base.py) and the
    providers that read them (pipeline/statistics.py) type-check under [tool.mypy]: a provider reading a field
    its record lacks, or reading ``Outcome.run`` without checking which record it is, fails here."""
    proc = subprocess.run([sys.executable, "-m", "mypy"], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, f"mypy (exit {proc.returncode}):\n{proc.stdout}{proc.stderr}"


@pytest.mark.slow  # mypy, a process
def test_mypy_would_catch_a_misread_record(tmp_path: Path) -> None:
    """The check can fail: a provider reading a field no record has, or a field of ``Outcome.run`` without
    checking which record it is, is an error under the same configuration."""
    bad = tmp_path / "bad_provider.py"
    bad.write_text("import numpy as np\n\nfrom pipeline.contract import SvmRun\nfrom pipeline.learners.base import Outcome\n"
                   "\n\ndef lam_of(run: SvmRun) -> float:\n    return run.lamda\n"
                   "\n\ndef rows_of(out: Outcome) -> np.ndarray:\n    return out.run.X\n")
    proc = subprocess.run([sys.executable, "-m", "mypy", "--config-file", str(ROOT / "pyproject.toml"), str(bad)],
                          cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 1 and '"SvmRun" has no attribute "lamda"' in proc.stdout, proc.stdout + proc.stderr
    assert '"Run" of "Run | None" has no attribute "X"' in proc.stdout, proc.stdout  # the record unchecked
