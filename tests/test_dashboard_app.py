"""pipeline/dashboard.py: MLflow's app with a page that opens a fresh browser on an experiment's runs.

The browser itself is driven in tests/test_dashboard.py (a bare experiment URL lands on the runs); these check
the page and that the key the script sets is the one the installed MLflow's UI reads, so that an MLflow
release that renames it fails here, not silently in a reviewer's browser."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from pipeline import dashboard


def test_the_script_comes_first_in_the_head_and_sets_only_an_unset_choice() -> None:
    page = dashboard.page("<!doctype html><html><head><meta charset='utf-8'><script src='main.js'></script></head></html>")
    assert page.index(dashboard.SCRIPT) < page.index("main.js")
    assert page.startswith("<!doctype html><html><head>" + dashboard.SCRIPT)
    assert f"getItem('{dashboard.STORAGE_KEY}')===null" in dashboard.SCRIPT  # a user's own choice is kept
    assert dashboard.page("no head here") == "no head here"


def _ui_bundle() -> str:
    import mlflow

    js = Path(mlflow.__file__).parent / "server" / "js" / "build" / "static" / "js"
    if not js.is_dir():
        pytest.skip("this MLflow has no built UI (a source installation)")
    return "\n".join(p.read_text(errors="replace") for p in js.glob("main.*.js"))


def test_the_key_is_the_one_mlflows_ui_reads_for_its_view() -> None:
    bundle = _ui_bundle()
    name, version = re.fullmatch(r"(.+)_v(\d+)", dashboard.STORAGE_KEY).groups()
    assert re.search(rf'key:"{re.escape(name)}",version:{version}\b', bundle), (
        f"the installed MLflow's UI no longer stores its GenAI / Model training choice as {dashboard.STORAGE_KEY}")
    assert f'MACHINE_LEARNING="{dashboard.VIEW}"' in bundle


@pytest.mark.parametrize("server", ["uvicorn", "gunicorn"])
def test_the_app_serves_mlflows_page_with_the_script(server: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("_MLFLOW_SGI_NAME", server)
    app = dashboard.create_app()
    flask_app = dashboard._flask()
    assert (app is flask_app) == (server != "uvicorn")
    response = flask_app.test_client().get("/")
    text = response.get_data(as_text=True)
    if "index.html) not found" in text:
        pytest.skip("this MLflow has no built UI (a source installation)")
    assert response.status_code == 200 and text.count(dashboard.SCRIPT) == 1
    assert text.index(dashboard.SCRIPT) < text.index("<script defer")
    # the API is MLflow's, untouched
    assert flask_app.test_client().get("/health").status_code == 200


def test_mlflow_offers_the_app() -> None:
    from importlib.metadata import entry_points

    apps = {e.name: e.value for e in entry_points(group="mlflow.app")}
    assert apps.get("boundlab") == "pipeline.dashboard:create_app"
