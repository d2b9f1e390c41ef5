"""The seam between a sweep and the store its runs are recorded in: :class:`Backend`, what the sweep, the job
lifecycle, the command's stop handling, the report and the API ask of a store (:func:`pipeline.tracking.backend`
picks the one for a tracking URI).

MLflow's (:mod:`pipeline.tracking.runs`) is the one boundlab ships and the default for every URI. Another
backend is an object with these methods, registered for a URI scheme, either with :func:`pipeline.tracking.register` or as an
entry point of the group ``boundlab.trackers`` named after the scheme (its value the object, or a class
or function that makes it when called without arguments). What does not depend on the store stays in the
package for every backend: credentials kept out of text (:mod:`~pipeline.tracking.secrets`), the server-down protocol
(:mod:`~pipeline.tracking.down`), the parent-run marker (:mod:`~pipeline.tracking.parents`) and this process's
open runs (:data:`OPEN_RUNS`). docs/mlflow.md lists what a new backend touches.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterable, Mapping, Protocol

class Run(Protocol):
    """A job's run (a child of its sweep's parent run), open from the moment the backend made it."""

    run_id: str

    def finish(self, params: Mapping[str, Any], table: Any, curve: Any, artifacts: Iterable[Path]) -> None:
        """Record the job's params, its results row's metrics, its curve's history and files; end it FINISHED."""

    def finish_pack(self, params: Mapping[str, Any], metrics: Mapping[str, float], artifacts: Iterable[Path],
                    failed: bool = False) -> None:
        """End a pack's run: its params, aggregate metrics and results parts; FAILED if a member failed."""

    def fail(self, error: BaseException) -> None:
        """End it FAILED (KILLED for an interrupt) with the error's one line."""


class Backend(Protocol):
    """What boundlab asks of a tracking store. Every method takes the store's URI first; runs are named by the
    ids the backend gave them. A store that cannot be reached raises :class:`pipeline.tracking.down.StoreDown`."""

    def check_store(self, uri: str) -> str | None:
        """None if the store can be used; otherwise why not, one clause (credentials redacted)."""

    def start_parent(self, uri: str, experiment: str, name: str, question: str, sweep_id: str,
                     tags: Mapping[str, str], params: Mapping[str, str] = {}) -> str:
        """Open a sweep's parent run in ``experiment``; its id."""

    def resume_parent(self, uri: str, sweep_dir: Path,
                      params: Mapping[str, str] | None = None) -> tuple[str, str, int] | None:
        """Reopen the parent an earlier start of the same sweep recorded in ``sweep_dir``: (run id, sweep id,
        children it has), or None when there is none to resume."""

    def end_orphaned_parents(self, uri: str, experiment: str, own_dir: Path) -> list[str]:
        """End the parents of ``experiment`` whose sweep process is gone (not ``own_dir``'s); their ids."""

    def finish_parent(self, uri: str, run_id: str, artifacts: Iterable[Path], metrics: Mapping[str, float],
                      failed: bool, tags: Mapping[str, str] = {}) -> None:
        """End a parent run with its files, finite metrics and tags."""

    def link_reused(self, uri: str, parent_id: str, run_ids: Iterable[str]) -> dict[str, str]:
        """Give the parent a light child per reused job, naming the run that made it: reused id -> child id."""

    def end_children(self, uri: str, parent_id: str, reason: str, status: str = "KILLED") -> int:
        """End the parent's children still running, with ``reason``; how many."""

    def end_run(self, uri: str, run_id: str, status: str) -> None:
        """End one run with ``status`` (FINISHED, FAILED, KILLED)."""

    def is_finished(self, uri: str, run_id: str) -> bool:
        """Whether the run exists and ended FINISHED (a stored job's run may be reused)."""

    def job_run(self, uri: str, experiment: str, name: str, parent_id: str | None, tags: Mapping[str, str],
                supersede: bool = False) -> Run:
        """Open a job's run under ``parent_id`` (``supersede``: end earlier children with the job's config key)."""

    def read_parent(self, uri: str, run_id: str) -> dict[str, Any]:
        """A sweep's parent run for the API: "status", "tags", "params", "experiment" (its name) and "files" (the
        names logged at its top level)."""

    def download(self, uri: str, run_id: str, names: Iterable[str], into: Path) -> None:
        """The run's files ``names`` into the directory ``into``."""


OPEN_RUNS: dict[str, Run] = {}  # this process's job runs not ended yet, any backend's (end_open_runs on a hard stop)


def end_open_runs(reason: str) -> None:
    """End this process's open job runs KILLED with ``reason``, from a thread other than the one running the
    job (which is stuck in a native call, or about to be stopped): a hard stop leaves no run RUNNING."""
    for run in list(OPEN_RUNS.values()):
        try:
            run.fail(KeyboardInterrupt(reason))
        except Exception:  # noqa: BLE001 - stopping matters more; a rerun marks it KILLED
            pass
