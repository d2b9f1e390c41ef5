"""pipeline.sweep.ray_worker: Ray on loopback unless told otherwise. The Ray preset binds 127.0.0.1 and keeps Ray from
swapping in the machine's address, exposing it is an explicit setting, other launchers leave Ray alone, and a
Ray instance the sweep starts listens on loopback only."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from pipeline.paths import CONF_DIR
from pipeline.sweep.preflight import preflight
from pipeline.sweep.ray_worker import CLUSTER_ENV, loopback_env
from pipeline.sweep.schemas import register


def _ray_plan(*extra: str):  # noqa: ANN202
    register()
    return preflight(["-m", "seed=0,1", "hydra/launcher=ray", *extra])


def test_ray_preset_binds_loopback_by_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    init = _ray_plan().ray_init
    assert init["_node_ip_address"] == "127.0.0.1" and init["dashboard_host"] == "127.0.0.1"
    assert loopback_env(init) == {CLUSTER_ENV: "0"}  # or Ray swaps 127.0.0.1 for the machine's address


@pytest.mark.parametrize(("address", "exposed"), [("192.0.2.5", True), ("null", True), ("localhost", False)])
def test_exposing_ray_is_an_explicit_setting(address: str, exposed: bool) -> None:
    init = _ray_plan(f"hydra.launcher.ray.init._node_ip_address={address}").ray_init
    assert (loopback_env(init) == {}) is exposed


def test_other_launchers_leave_ray_alone() -> None:
    register()
    assert preflight(["-m", "seed=0,1"]).ray_init is None


RAY_PROBE = """
import json, os, shutil, sys, tempfile
from pipeline.sweep.preflight import preflight
from pipeline.sweep.ray_worker import keep_on_loopback
from pipeline.sweep.schemas import register
register()
init = preflight(["-m", "seed=0,1", "hydra/launcher=ray"]).ray_init
keep_on_loopback(init)
import psutil, ray
temp = tempfile.mkdtemp(prefix="blray")
init = {k: v for k, v in init.items() if k != "runtime_env"}
ray.init(**init, _temp_dir=temp, include_dashboard=False, num_cpus=1)
me = psutil.Process()
hosts = set()
for p in [me, *me.children(recursive=True)]:
    try:
        hosts |= {c.laddr.ip for c in p.net_connections(kind="inet") if c.status == psutil.CONN_LISTEN}
    except psutil.Error:
        pass
ray.shutdown()
shutil.rmtree(temp, ignore_errors=True)
print(json.dumps(sorted(hosts)))
"""


@pytest.mark.slow
def test_a_ray_instance_the_sweep_starts_listens_on_loopback_only(tmp_path: Path) -> None:
    """The launcher's ray.init arguments, as the sweep resolves them, on a real local Ray instance (~6 s)."""
    pytest.importorskip("ray")
    pytest.importorskip("psutil")
    env = {k: v for k, v in os.environ.items() if k not in ("RAY_ADDRESS", CLUSTER_ENV)}
    env |= {"RAY_USAGE_STATS_ENABLED": "0", "PYTHONPATH": str(CONF_DIR.parent)}
    proc = subprocess.run([sys.executable, "-c", RAY_PROBE], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    hosts = json.loads(proc.stdout.strip().splitlines()[-1])
    assert hosts and all(h in ("127.0.0.1", "::ffff:127.0.0.1", "::1") for h in hosts), hosts
