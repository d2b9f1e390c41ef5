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
def test_mypy_strict_is_clean_on_what_a_job_computes_with() -> None:
    """``mypy --strict`` ([tool.mypy]: strict) reports nothing on the learners, the bounds, the row-level judging,
    the records a run hands over (pipeline/contract.py, in Outcome) and the providers that read them
    (pipeline/job/statistics.py): a provider reading a field its record lacks, a learner reading a parameter it
    does not declare, or a kernel called with the wrong arguments, fails here."""
    proc = subprocess.run([sys.executable, "-m", "mypy"], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, f"mypy (exit {proc.returncode}):\n{proc.stdout}{proc.stderr}"
    assert "Success: no issues found in" in proc.stdout and "pipeline/learners" in (ROOT / "pyproject.toml").read_text()


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


@pytest.mark.slow  # mypy, a process
def test_mypy_would_catch_a_misread_parameter_or_dataset(tmp_path: Path) -> None:
    """A learner's parameters and the data it reads are typed: a misspelt parameter, a parameter of the wrong
    type, or a sample member that no dataset kind has, is an error under the same configuration."""
    bad = tmp_path / "bad_learner.py"
    bad.write_text("from pipeline.data.dataset import Sample\nfrom pipeline.learners.perceptron import Perceptron\n"
                   "\n\ndef passes(p: Perceptron) -> int:\n    return p.pases\n"
                   "\n\ndef tie(p: Perceptron) -> int:\n    return p.tie\n"
                   "\n\ndef classes(s: Sample) -> int:\n    return s.k\n")
    proc = subprocess.run([sys.executable, "-m", "mypy", "--config-file", str(ROOT / "pyproject.toml"), str(bad)],
                          cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert '"Perceptron" has no attribute "pases"' in proc.stdout, proc.stdout
    assert 'Incompatible return value type (got "str", expected "int")' in proc.stdout, proc.stdout
    assert '"Sample" has no attribute "k"' in proc.stdout, proc.stdout
