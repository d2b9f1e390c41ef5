"""What the benchmark scripts share: a bare Hydra app (the reference a boundlab run is measured against) and a
timed, checked subprocess. Its own module, so that bench.py and one_run.py import it and not each other."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

BARE_APP = """
import hydra

@hydra.main(version_base=None, config_path=None, config_name=None)
def app(cfg) -> None:
    pass

if __name__ == "__main__":
    app()
"""


def timed(argv: list[str], cwd: Path, env: dict[str, str]) -> float:
    """Seconds ``argv`` took to run to its end; ``RuntimeError`` with its last words when it fails."""
    t = time.perf_counter()
    proc = subprocess.run(argv, capture_output=True, text=True, cwd=cwd, env=env)
    elapsed = time.perf_counter() - t
    if proc.returncode:
        raise RuntimeError(f"{' '.join(argv[:4])} ... exited {proc.returncode}: {proc.stderr[-2000:]}")
    return elapsed
