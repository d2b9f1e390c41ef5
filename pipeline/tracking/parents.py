"""The sweep's parent run, made known to its jobs whichever process runs them: the sweep context, and a marker file
in the sweep directory (:data:`PARENT_FILE`, two words: the parent's run id and the sweep id)."""

from __future__ import annotations

from pathlib import Path

from pipeline import files
from pipeline.sweep import context as sweep

PARENT_FILE = ".boundlab_parent"  # in the sweep directory: reaches jobs where the environment does not

def sweep_context(sweep_dir: Path) -> tuple[str | None, str]:
    """The parent run id and sweep id of the running sweep, from the sweep context or the sweep dir."""
    context = sweep.current()
    parent, sweep_id = context.parent_run_id, context.sweep_id
    if not parent:
        parent, sweep_id = read_parent_marker(sweep_dir) or (None, "")
    return parent, sweep_id


def announce_sweep(sweep_dir: Path, parent_id: str, sweep_id: str, new: bool = False) -> None:
    """Make the parent run id known to the sweep's jobs, whichever process they run in (``new``: this
    command created it, so it has no earlier children)."""
    sweep.update(parent_run_id=parent_id, sweep_id=sweep_id, parent_new=new)
    sweep_dir.mkdir(parents=True, exist_ok=True)
    # staged: a job reading the marker never sees half of it, and a link planted there is not written through
    files.write_text(sweep_dir / PARENT_FILE, f"{parent_id} {sweep_id}\n")


def read_parent_marker(sweep_dir: Path) -> tuple[str, str] | None:
    """(parent run id, sweep id) from the sweep directory's marker; None, with a warning, when it is
    missing, empty or garbled: such a marker means "no parent to resume", never a crash."""
    import logging

    marker = sweep_dir / PARENT_FILE
    if not marker.exists():
        return None
    try:
        fields = marker.read_text().split()
    except (OSError, UnicodeDecodeError) as e:
        fields, why = [], f"unreadable ({type(e).__name__})"
    else:
        why = "empty" if not fields else f"garbled ({len(fields)} field(s), expected a run id and a sweep id)"
    # an MLflow run id is 32 hex digits; anything else was not written by announce_sweep
    if len(fields) == 2 and len(fields[0]) == 32 and all(c in "0123456789abcdef" for c in fields[0]):
        return fields[0], fields[1]
    if len(fields) == 2:
        why = f"garbled (run id {fields[0][:40]!r} is not an MLflow run id)"
    logging.getLogger("boundlab").warning("sweep %s: parent-run marker %s is %s; no parent run to resume",
                                          sweep_dir, marker.name, why)
    return None
