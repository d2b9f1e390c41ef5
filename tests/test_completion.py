"""Shell completion of the ``boundlab`` command (Hydra's; docs/reproduce.md, "Shell completion").

Config groups complete to their options, ``experiment=`` to the files of experiments/, and ``GROUP.``
to the keys of the chosen option. Through the installed command, and once through bash itself.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
ALGORITHMS = sorted(p.stem for p in (ROOT / "conf" / "algorithm").glob("*.yaml"))
EXPERIMENTS = sorted(p.stem for p in (ROOT / "experiments").glob("*.yaml"))

pytestmark = pytest.mark.slow  # each test starts the installed command


def _query(boundlab, line: str, cwd: Path, shell: str = "bash") -> list[str]:  # noqa: ANN001
    proc = boundlab("-sc", f"query={shell}", cwd=cwd, env={**os.environ, "COMP_LINE": line})
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout.split()


def test_install_prints_a_bash_completion_function(boundlab, tmp_path: Path) -> None:  # noqa: ANN001
    proc = boundlab("--shell-completion", "install=bash", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "hydra_bash_completion()" in proc.stdout
    assert "complete -o nospace -o default -F hydra_bash_completion boundlab" in proc.stdout
    # zsh uses the bash script (after bashcompinit); fish has its own
    assert boundlab("-sc", "install=zsh", cwd=tmp_path).stdout == proc.stdout
    fish = boundlab("-sc", "install=fish", cwd=tmp_path).stdout
    assert "complete -c boundlab -x -a '(hydra_fish_completion)'" in fish


def test_groups_experiments_and_keys_complete(boundlab, tmp_path: Path) -> None:  # noqa: ANN001
    assert {"perceptron", "pegasos", "kernel_pegasos", "multiclass_sgd"} <= set(ALGORITHMS)
    assert _query(boundlab, "boundlab algorithm=", tmp_path) == [f"algorithm={a}" for a in ALGORITHMS]
    assert _query(boundlab, "boundlab algorithm=pegasos_", tmp_path) == [
        "algorithm=pegasos_balanced", "algorithm=pegasos_inorder", "algorithm=pegasos_projected",
        "algorithm=pegasos_transfer", "algorithm=pegasos_weighted"]

    assert "perceptron_margin" in EXPERIMENTS and "multiclass_cost" in EXPERIMENTS
    assert _query(boundlab, "boundlab -m experiment=", tmp_path) == [f"experiment={e}" for e in EXPERIMENTS]
    assert _query(boundlab, "boundlab -m experiment=perceptron_m", tmp_path) == ["experiment=perceptron_margin"]

    # the keys of the chosen option: the default algorithm (perceptron), then pegasos once chosen
    assert _query(boundlab, "boundlab algorithm.", tmp_path) == [
        "algorithm.name=", "algorithm.ordering=", "algorithm.passes=", "algorithm.tie="]
    pegasos = _query(boundlab, "boundlab algorithm=pegasos algorithm.", tmp_path)
    assert {"algorithm.lam=", "algorithm.T=", "algorithm.projection=", "algorithm.sampling="} <= set(pegasos)
    assert "algorithm.passes=" not in pegasos
    assert _query(boundlab, "boundlab algorithm=pegasos algorithm.la", tmp_path) == ["algorithm.lam="]
    assert _query(boundlab, "boundlab ga", tmp_path) == ["gamma="]
    # fish: the same candidates, one per line
    fish = boundlab("-sc", "query=fish", cwd=tmp_path,
                    env={**os.environ, "COMP_LINE": "boundlab algorithm=pegasos algorithm.la"}).stdout
    assert fish.splitlines() == ["algorithm.lam="]


@pytest.mark.skipif(shutil.which("bash") is None, reason="no bash")
def test_bash_completes_through_the_installed_function(tmp_path: Path) -> None:
    """What bash does on TAB: the installed function asks ``boundlab -sc query=bash`` and filters."""
    exe = Path(sys.executable).parent / "boundlab"
    exe = exe if exe.exists() else Path(shutil.which("boundlab") or "boundlab")
    script = f"""
        export PATH={str(exe.parent)!r}:"$PATH"
        eval "$(boundlab -sc install=bash)"
        complete -p boundlab
        COMP_LINE="boundlab -m experiment=perceptron_margin algorithm=peg"
        COMP_POINT=${{#COMP_LINE}}
        COMP_CWORD=3
        hydra_bash_completion
        printf '%s\\n' "${{COMPREPLY[@]}}"
    """
    proc = subprocess.run(["bash", "--norc", "--noprofile", "-c", script], cwd=tmp_path, capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0] == "complete -o default -o nospace -F hydra_bash_completion boundlab"
    assert lines[1:] == ["algorithm=pegasos", "algorithm=pegasos_balanced", "algorithm=pegasos_inorder",
                         "algorithm=pegasos_projected", "algorithm=pegasos_transfer", "algorithm=pegasos_weighted"]
