"""The tree is clean under the project's ruff configuration (pyproject.toml, [tool.ruff]): every `# noqa`
names a rule that fires where it stands (RUF100), and nothing else is reported."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_ruff_reports_nothing() -> None:
    # --no-cache: the check leaves no .ruff_cache behind in the tree it checks
    proc = subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", str(ROOT)], cwd=ROOT,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, f"ruff check (exit {proc.returncode}):\n{proc.stdout}{proc.stderr}"
