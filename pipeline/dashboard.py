"""MLflow's own UI, opening a boundlab experiment on its runs: ``mlflow ui --app-name boundlab`` (docs/mlflow.md).

MLflow 3.17's UI does not take an experiment page's view from the experiment: it reads the browser's choice
between "GenAI" and "Model training" (its local storage ``mlflow.workflowType_v1``, or a link's
``?workflowType=``), and a browser that never chose opens every experiment on the GenAI overview, where a
sweep's runs are not. The experiment tag ``mlflow.experimentKind`` that boundlab sets is read only by the
versions before the switch, and by no version for the landing view.

This app is MLflow's tracking server unchanged but for its one HTML page: before MLflow's script runs, the
page sets the browser's choice to "Model training" if the browser has none, so a fresh browser given the bare
experiment URL lands on its runs. A choice the user made (the switch at the top left) is kept. It is
registered as the entry point ``mlflow.app: boundlab``, which ``mlflow ui`` and ``mlflow server`` accept as
``--app-name boundlab`` (not together with ``basic-auth``, which is another app).
"""

from __future__ import annotations

import os
from typing import Any

STORAGE_KEY = "mlflow.workflowType_v1"  # MLflow's useLocalStorage key "mlflow.workflowType", version 1
VIEW = "machine_learning"  # the "Model training" view: the experiment's runs
SCRIPT = (f"<script>try{{if(window.localStorage.getItem('{STORAGE_KEY}')===null)"
          f"window.localStorage.setItem('{STORAGE_KEY}',JSON.stringify('{VIEW}'))}}catch(e){{}}</script>")


def page(index_html: str) -> str:
    """MLflow's page with :data:`SCRIPT` first in its head, so it runs before MLflow's own scripts read the
    choice; a page without a head is returned unchanged (the UI then opens as MLflow's does)."""
    at = index_html.find("<head>")
    if at < 0:
        return index_html
    at += len("<head>")
    return index_html[:at] + SCRIPT + index_html[at:]


def _flask() -> Any:
    """MLflow's Flask app with its page served through :func:`page`."""
    from flask import Response
    from mlflow.server import app as flask_app

    serve = flask_app.view_functions["serve"]
    if getattr(serve, "boundlab", False):
        return flask_app

    def serve_page() -> Any:
        index = os.path.join(flask_app.static_folder or "", "index.html")
        if not os.path.exists(index):
            return serve()  # MLflow's own message for a source installation without the built UI
        with open(index, encoding="utf-8") as f:
            response = Response(page(f.read()), mimetype="text/html")
        response.headers["Cache-Control"] = "no-cache"  # as MLflow's page: its scripts' names change per release
        return response

    serve_page.boundlab = True  # type: ignore[attr-defined]
    flask_app.view_functions["serve"] = serve_page
    return flask_app


def create_app() -> Any:
    """The app ``mlflow server --app-name boundlab`` runs: MLflow's FastAPI app around its Flask app under uvicorn
    (the default), the Flask app itself under gunicorn or waitress, as MLflow's own ``basic-auth`` app does."""
    from mlflow.environment_variables import _MLFLOW_SGI_NAME  # set by `mlflow server` for the server it starts

    flask_app = _flask()
    if _MLFLOW_SGI_NAME.get() == "uvicorn":
        from mlflow.server.fastapi_app import create_fastapi_app

        return create_fastapi_app(flask_app)
    return flask_app
