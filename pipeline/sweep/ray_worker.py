"""Start-up of a Ray worker process that runs boundlab jobs (``conf/hydra/launcher/ray.yaml``).

Hydra resolves a job's output directory against the working directory of the process that runs it. A
worker of an existing cluster starts wherever ``ray start`` was run, so the preset's runtime_env names
this hook and sends the sweep context (``pipeline.sweep.context``), which holds the driver's directory: relative
sweep directories then mean on the worker what they mean on the driver, and the sweep finds its jobs'
results where it expects them.

Ray stays on loopback unless the preset is told otherwise (:func:`loopback_env`).
"""

from __future__ import annotations

import os
import sys
from typing import Any, Mapping


def setup() -> None:
    """Move into the driver's working directory (it must exist on this node: one machine or a shared disk)."""
    from pipeline.sweep import context as sweep

    cwd = sweep.current().driver_cwd
    if not cwd:
        return
    if not os.path.isdir(cwd):
        raise RuntimeError(f"boundlab: the sweep's directory {cwd} does not exist on this Ray node: "
                           "run the cluster on one machine or with the project on a shared disk at the same path")
    os.chdir(cwd)


# Ray reads this when it is imported: unless it is "0", Ray replaces a loopback node address with the
# machine's network address and its processes (GCS, raylet, workers, agents) listen on every interface.
CLUSTER_ENV = "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"
LOOPBACK = ("127.0.0.1", "localhost", "::1")


def loopback_env(init: Mapping[str, Any]) -> dict[str, str]:
    """The environment that keeps Ray on loopback when the preset's ``ray.init`` asks for it.

    ``conf/hydra/launcher/ray.yaml`` sets ``_node_ip_address: 127.0.0.1``: every Ray socket then listens on
    127.0.0.1 only. Exposing Ray is explicit: ``hydra.launcher.ray.init._node_ip_address=ADDRESS`` (this
    machine's address on the network the cluster uses), or ``=null`` for Ray's own choice.
    """
    host = init.get("_node_ip_address")
    return {CLUSTER_ENV: "0"} if host is not None and str(host) in LOOPBACK else {}


def keep_on_loopback(init: Mapping[str, Any]) -> None:
    """Apply :func:`loopback_env` in the driver before the launcher starts or joins Ray."""
    env = loopback_env(init)
    os.environ.update(env)
    constants = sys.modules.get("ray._private.ray_constants")
    if env and constants is not None:  # Ray already imported: it read the variable then
        constants.ENABLE_RAY_CLUSTER = False
