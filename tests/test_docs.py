"""The documentation runs: every ```bash block of README.md and docs/*.md is executed here, in order, in a
fresh copy of the repository (a git checkout of the tracked files, its own MLflow store and caches), and the
```output block right after it (every block that runs has one) lists lines its output must contain, in order
(``...`` in a line matches anything). A block that needs what a test machine does not have is marked on the
line before its fence, ``<!-- not run: REASON -->``, with REASON one of :data:`REASONS`; the marks are checked
here too, so a block cannot be left out silently (docs/testing.md).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from helpers import copy_project

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
REASONS = {
    "install": "creates a virtual environment and installs (CI runs the README's commands itself)",
    "cluster": "needs a Ray or SLURM cluster",
    "server": "starts a long-running server (tests/test_dashboard.py runs one)",
    "browser": "needs a browser",
    "paper-scale": "runs the paper-scale grids (hours)",
    "slow": "minutes of work, run by another test (named beside the block)",
    "interactive": "waits for a person",
}
MARK = re.compile(r"^<!-- not run: ([a-z-]+)(?: .*)? -->$")
BLOCK_TIMEOUT = 300  # s, per block


@dataclass
class Block:
    page: Path
    line: int  # of the opening fence, 1-based
    lang: str
    code: str
    reason: str | None = None  # why it is not run, from its mark
    expected: list[str] | None = None  # the lines of the ```output block after it

    @property
    def name(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"


def blocks(page: Path) -> list[Block]:
    """The fenced blocks of ``page``, with their marks and expected output attached."""
    lines = page.read_text().splitlines()
    found: list[Block] = []
    i = 0
    while i < len(lines):
        if lines[i].startswith("```"):
            lang = lines[i][3:].strip()
            end = next(j for j in range(i + 1, len(lines)) if lines[j].startswith("```"))
            before = next((lines[j].strip() for j in range(i - 1, -1, -1) if lines[j].strip()), "")
            mark = MARK.match(before)
            block = Block(page, i + 1, lang, "\n".join(lines[i + 1 : end]), mark[1] if mark else None)
            if lang == "output":
                previous = found[-1] if found else None
                assert previous and previous.lang == "bash" and previous.expected is None, (
                    f"{block.name}: an output block must follow a bash block")
                previous.expected = [ln for ln in block.code.splitlines() if ln.strip()]
            else:
                found.append(block)
            i = end + 1
        else:
            i += 1
    return found


def _runnable(page: Path) -> list[Block]:
    return [b for b in blocks(page) if b.lang == "bash" and b.reason is None]


def test_every_block_is_run_or_marked_with_a_known_reason() -> None:
    seen = 0
    for page in PAGES:
        text = page.read_text()
        for n, line in enumerate(text.splitlines(), 1):
            if line.startswith("<!-- not run"):
                assert MARK.match(line) and MARK.match(line)[1] in REASONS, \
                    f"{page.name}:{n}: {line} (reasons: {sorted(REASONS)})"
        for b in blocks(page):
            assert b.lang, f"{b.name}: a fence without a language (bash, output, python, toml, text, ...)"
            if b.reason:
                assert b.lang == "bash", f"{b.name}: only bash blocks run, so only they are marked"
                assert b.expected is None, f"{b.name}: the output of a block that is not run cannot be checked"
            elif b.lang == "bash":
                assert b.expected, f"{b.name}: a block that runs says what its output must contain (an output block)"
            seen += b.lang == "bash"
    assert seen > 20
    (install,) = [b for b in blocks(ROOT / "README.md") if b.reason == "install"]
    assert "pip install" in install.code and install.line < 20, "the README opens with its two commands"


def test_every_page_is_linked_and_every_link_resolves() -> None:
    readme = (ROOT / "README.md").read_text()
    for page in PAGES[1:]:
        assert f"(docs/{page.name})" in readme, f"README's map of docs/ lacks {page.name}"
    for page in PAGES:
        for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", page.read_text()):
            if not re.match(r"[a-z]+://", target):
                assert (page.parent / target).exists(), f"{page.name}: broken link {target}"


def _checkout(tmp_path: Path) -> Path:
    """A git repository of the project's files (DVC wants one), as a newcomer's clone is."""
    repo = tmp_path / "boundlab"
    copy_project(repo)
    git = ["git", "-c", "user.name=docs", "-c", "user.email=docs@example.org"]
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
    subprocess.run(git + ["add", "-A"], cwd=repo, check=True)
    subprocess.run(git + ["commit", "-q", "-m", "checkout"], cwd=repo, check=True)
    return repo


def _matches(expected: list[str], output: str) -> str | None:
    """None if every expected line occurs in ``output`` in order (``...`` matching anything); else the first
    expected line that does not."""
    lines = output.splitlines()
    at = 0
    for want in expected:
        pattern = re.compile(".*".join(re.escape(part) for part in want.strip().split("...")))
        hit = next((k for k in range(at, len(lines)) if pattern.search(lines[k])), None)
        if hit is None:
            return want
        at = hit + 1
    return None


@pytest.mark.slow
@pytest.mark.parametrize("page", [p for p in PAGES if _runnable(p)], ids=lambda p: p.name)
def test_the_page_runs(page: Path, tmp_path: Path) -> None:
    repo = _checkout(tmp_path)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MLFLOW_", "BOUNDLAB_", "HYDRA_"))}
    env |= {"PATH": f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}", "BOUNDLAB_CACHE": str(repo / ".cache"),
            "MLFLOW_TRACKING_URI": f"sqlite:///{repo / 'mlflow.db'}", "COLUMNS": "120"}
    for block in _runnable(page):
        proc = subprocess.run(["bash", "-eo", "pipefail", "-c", block.code], cwd=repo, env=env, capture_output=True,
                              text=True, timeout=BLOCK_TIMEOUT)
        output = proc.stdout + proc.stderr
        assert proc.returncode == 0, f"{block.name} exited {proc.returncode}:\n{block.code}\n--- output:\n{output[-4000:]}"
        if block.expected:
            missing = _matches(block.expected, output)
            assert missing is None, f"{block.name}: expected {missing!r} in the output of\n{block.code}\n---\n{output[-4000:]}"
