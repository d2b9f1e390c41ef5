"""End to end through a shared MLflow tracking server, and what a reviewer sees of it in a real browser.

One ``mlflow server`` (SQLite backend, artifacts proxied by the server, everything in a temporary
directory, loopback only) serves the whole module; one small sweep logs to it over HTTP. The first test
reads the runs back over the REST API with plain ``urllib``; the second opens the MLflow UI of the same
server in headless Chromium (selenium + Debian's ``chromium`` and ``chromium-driver``) and checks the
runs, their metrics and the sweep's figure are there for a reviewer, saving screenshots on the way.

Screenshots go to the test's ``tmp_path``/screenshots (printed; kept by pytest for the last runs) and,
if ``BOUNDLAB_SCREENSHOTS`` names a directory, are copied there too (for CI to keep).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import struct
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from pathlib import Path
from types import SimpleNamespace
from typing import Any, Callable

import pytest

pytestmark = pytest.mark.slow

HOST = "127.0.0.1"
SERVER_START_TIMEOUT = 120.0  # s; ~10 s on a 2-core machine
UI_TIMEOUT = 60.0  # s for any one thing to appear in the browser
RUN_PAGE_TIMEOUT = 90.0  # s for a run page's header (the run's name), per load; the page is reloaded once
EXPERIMENT = "server_e2e"
QUESTION = "Does the Novikoff bound hold when every run goes through a shared server?"
GRID = {(g, s) for g in ("0.1", "0.25") for s in ("0", "1")}  # (gamma, seed) as logged params
METRICS = ("novikoff/empirical", "novikoff/theoretical", "novikoff/ratio")
FIGURE = "novikoff_measured_vs_bound.png"
INSTALL_BROWSER = ("apt-get install -y chromium chromium-driver (Debian) and pip install 'selenium>=4.20' "
                   "(in the test extra: pip install -e '.[test]')")

# loopback only: never through a proxy the environment may name
_opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))


# ------------------------------------------------------------------ the server and the sweep


def _api(base: str, path: str, payload: dict | None = None, timeout: float = 30.0) -> Any:
    """GET (no payload) or POST a JSON request to the server; the decoded JSON answer."""
    data = None if payload is None else json.dumps(payload).encode()
    req = urllib.request.Request(base + path, data=data, headers={"Content-Type": "application/json"} if data else {})
    with _opener.open(req, timeout=timeout) as resp:
        return json.loads(resp.read())


def _free_port() -> int:
    with socket.socket() as s:
        s.bind((HOST, 0))
        return s.getsockname()[1]


def _stop(proc: subprocess.Popen) -> None:
    """End the server's whole process group (its uvicorn worker too): TERM, then KILL, bounded."""
    try:
        os.killpg(proc.pid, signal.SIGTERM)
    except ProcessLookupError:
        pass
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        pass
    try:
        os.killpg(proc.pid, signal.SIGKILL)  # anything of the group still alive
    except ProcessLookupError:
        pass
    proc.wait(timeout=10)


def _tail(path: Path, chars: int = 3000) -> str:
    return path.read_text(errors="replace")[-chars:] if path.exists() else ""


def _start_server(root: Path) -> tuple[subprocess.Popen, str, Path]:
    """``mlflow server`` on a free loopback port, once ``/health`` answers (a few tries if the port was taken)."""
    exe = Path(sys.executable).parent / "mlflow"
    exe = str(exe) if exe.exists() else shutil.which("mlflow")
    assert exe, "no mlflow command next to the interpreter or on PATH"
    env = {**os.environ, "MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false"}  # no job-execution workers: a light server
    for _ in range(3):
        port = _free_port()
        log = root / f"server-{port}.log"
        with log.open("w") as out:
            proc = subprocess.Popen(
                [exe, "server", "--app-name", "boundlab", "--host", HOST, "--port", str(port), "--workers", "1",
                 "--backend-store-uri", f"sqlite:///{root / 'mlflow.db'}",
                 "--serve-artifacts", "--artifacts-destination", str(root / "artifacts")],
                cwd=root, env=env, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                start_new_session=True)
        url = f"http://{HOST}:{port}"
        deadline = time.monotonic() + SERVER_START_TIMEOUT
        while time.monotonic() < deadline and proc.poll() is None:
            try:
                _opener.open(url + "/health", timeout=2).close()
                return proc, url, log
            except OSError:
                time.sleep(0.5)
        _stop(proc)
        text = _tail(log)
        if "address already in use" not in text.lower():
            pytest.fail(f"mlflow server did not answer /health within {SERVER_START_TIMEOUT:.0f} s "
                        f"(exit code {proc.returncode}); its log:\n{text}", pytrace=False)
    pytest.fail(f"mlflow server could not get a free port in 3 tries; last log:\n{text}", pytrace=False)


@pytest.fixture(scope="module")
def tracking_server(tmp_path_factory: pytest.TempPathFactory):  # noqa: ANN201
    """A shared tracking server for the module: ``.url``, ``.root`` (its store), ``.log``, ``.start_s``."""
    root = tmp_path_factory.mktemp("tracking_server")
    started = time.perf_counter()
    proc, url, log = _start_server(root)
    try:
        yield SimpleNamespace(url=url, root=root, log=log, start_s=time.perf_counter() - started)
    finally:
        _stop(proc)


@pytest.fixture(scope="module")
def server_sweep(tracking_server: SimpleNamespace, boundlab_in_process: Callable, stats_cache: Path,  # noqa: ANN201
                 tmp_path_factory: pytest.TempPathFactory):
    """``boundlab -m`` over 2 margins x 2 seeds, tracked to the server over HTTP (the command's main in this
    process; the server is its own process)."""
    work = tmp_path_factory.mktemp("server_sweep")
    env = {**os.environ, "MLFLOW_TRACKING_URI": tracking_server.url, "BOUNDLAB_CACHE": str(stats_cache)}
    for key in ("NO_PROXY", "no_proxy"):
        env[key] = ",".join(filter(None, [env.get(key), HOST]))
    started = time.perf_counter()
    proc = boundlab_in_process("-m", "gamma=0.1,0.25", "seed=0,1", "n=200", "d=5", f"name={EXPERIMENT}",
                               f"question={QUESTION}", f"hydra.sweep.dir={work / 'sweep'}", cwd=work, env=env)
    print(f"\nmlflow server ready in {tracking_server.start_s:.1f} s; sweep through it in "
          f"{time.perf_counter() - started:.1f} s")
    return SimpleNamespace(proc=proc, sweep=work / "sweep")


def _check_sweep(server: SimpleNamespace, sweep: SimpleNamespace) -> None:
    assert sweep.proc.returncode == 0, (f"boundlab -m failed:\n{sweep.proc.stderr[-3000:]}\n"
                                        f"--- server log:\n{_tail(server.log, 2000)}")


def _logged(base: str) -> tuple[dict, dict, list[dict]]:
    """The experiment, its parent run and its child runs, read over the REST API."""
    exp = _api(base, "/api/2.0/mlflow/experiments/get-by-name?" + urllib.parse.urlencode({"experiment_name": EXPERIMENT}))
    exp = exp["experiment"]
    found = _api(base, "/api/2.0/mlflow/runs/search", {"experiment_ids": [exp["experiment_id"]], "max_results": 1000})
    assert "next_page_token" not in found, "more runs than one page: the store is not the test's own"
    runs = []
    for r in found.get("runs", []):
        data = r.get("data", {})
        runs.append({"id": r["info"]["run_id"], "name": r["info"]["run_name"], "status": r["info"]["status"],
                     "tags": {t["key"]: t["value"] for t in data.get("tags", [])},
                     "params": {p["key"]: p["value"] for p in data.get("params", [])},
                     "metrics": {m["key"]: m["value"] for m in data.get("metrics", [])}})
    parents = [r for r in runs if "mlflow.parentRunId" not in r["tags"]]
    children = [r for r in runs if "mlflow.parentRunId" in r["tags"]]
    assert len(parents) == 1 and len(children) == 4, [(r["name"], r["tags"].get("mlflow.parentRunId")) for r in runs]
    children.sort(key=lambda r: (float(r["params"]["gamma"]), int(r["params"]["seed"])))
    return exp, parents[0], children


# ------------------------------------------------------------------ test 1: REST


def test_sweep_through_a_shared_tracking_server(tracking_server: SimpleNamespace, server_sweep: SimpleNamespace) -> None:
    _check_sweep(tracking_server, server_sweep)
    base = tracking_server.url
    exp, parent, children = _logged(base)
    assert exp["artifact_location"].startswith("mlflow-artifacts:"), exp  # artifacts go through the server

    assert parent["status"] == "FINISHED" and parent["tags"]["mlflow.note.content"] == QUESTION
    assert parent["metrics"]["novikoff/violations"] == 0 and parent["metrics"]["runs"] == 4
    assert {(c["params"]["gamma"], c["params"]["seed"]) for c in children} == GRID
    for child in children:
        m = child["metrics"]
        assert child["tags"]["mlflow.parentRunId"] == parent["id"], child["name"]
        assert child["status"] == "FINISHED", child["name"]
        assert set(METRICS) <= set(m), (child["name"], sorted(m))
        assert m["novikoff/empirical"] <= m["novikoff/theoretical"]
        assert m["novikoff/ratio"] == pytest.approx(m["novikoff/empirical"] / m["novikoff/theoretical"])
        assert child["tags"]["boundlab.sweep_id"] == parent["tags"]["boundlab.sweep_id"]

    listed = _api(base, "/api/2.0/mlflow/artifacts/list?" + urllib.parse.urlencode({"run_id": parent["id"]}))
    files = {f["path"]: f for f in listed.get("files", [])}
    assert FIGURE in files and int(files[FIGURE]["file_size"]) > 10_000, sorted(files)
    # the bytes served back are the figure the sweep drew, and they live in the server's store
    query = urllib.parse.urlencode({"path": FIGURE, "run_uuid": parent["id"]})
    with _opener.open(f"{base}/get-artifact?{query}", timeout=30) as resp:
        assert resp.read() == (server_sweep.sweep / FIGURE).read_bytes()
    stored = list((tracking_server.root / "artifacts").rglob(FIGURE))
    assert len(stored) == 1 and parent["id"] in stored[0].parts, stored


# ------------------------------------------------------------------ test 2: the UI in a browser


@pytest.fixture
def browser(tmp_path: Path):  # noqa: ANN201
    """Headless Chromium driven by selenium through Debian's chromedriver (selenium-manager never runs)."""
    missing = []
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
    except ImportError:
        missing.append("the Python package selenium")
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    chromedriver = shutil.which("chromedriver")
    missing += [what for what, found in (("chromium", chromium), ("chromedriver", chromedriver)) if not found]
    if missing:
        # A browser is a system package, not a pip one: on a machine with only Python it is skipped, saying
        # how to install it; in CI (.ci/run installs it) a missing browser fails the run.
        why = f"the dashboard test needs {', '.join(missing)}: {INSTALL_BROWSER}"
        if os.environ.get("CI"):
            pytest.fail(why, pytrace=False)
        pytest.skip(why)
    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=1600,1000",
                "--no-proxy-server", "--no-first-run", "--no-default-browser-check"):
        options.add_argument(arg)
    service = Service(executable_path=chromedriver, log_output=str(tmp_path / "chromedriver.log"))
    driver = webdriver.Chrome(service=service, options=options)
    try:
        driver.set_page_load_timeout(UI_TIMEOUT)
        driver.set_script_timeout(UI_TIMEOUT)
        yield driver
    finally:
        driver.quit()


def _literal(text: str) -> str:
    """``text`` as an XPath string literal, whatever quotes it holds."""
    if "'" not in text:
        return f"'{text}'"
    if '"' not in text:
        return f'"{text}"'
    return "concat(" + ", \"'\", ".join(f"'{part}'" for part in text.split("'")) + ")"


def _text_is(text: str) -> str:
    """XPath: elements whose own text is ``text``."""
    return f"//*[normalize-space(text())={_literal(' '.join(text.split()))}]"


def _fmt(value: float) -> str:
    """A metric value as the UI prints it (JavaScript's shortest round-trip form)."""
    return str(int(value)) if float(value).is_integer() else repr(float(value))


def _png_width(data: bytes) -> int:
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    return struct.unpack(">I", data[16:20])[0]


class Page:
    """The browser, with bounded waits and screenshots for a reviewer (and for whoever debugs a failure)."""

    def __init__(self, driver: Any, base: str, shots: Path, evidence: Path) -> None:
        """``shots``: the screenshots a reviewer looks at; ``evidence``: where a failed wait leaves what the
        browser showed (a screenshot and the page source)."""
        from selenium.webdriver.common.by import By
        from selenium.webdriver.support.ui import WebDriverWait

        self.driver, self.base, self.shots, self.evidence, self.By = driver, base, shots, evidence, By
        self.wait = WebDriverWait(driver, UI_TIMEOUT, poll_frequency=0.25)
        self.saved: list[Path] = []
        self.failures = 0
        shots.mkdir(parents=True, exist_ok=True)

    def open(self, route: str) -> None:
        """Open ``route`` as a reviewer's link does: no URL parameter (the view is the experiment's, or the one
        the reviewer chose, which the browser remembers: :func:`_landing`)."""
        self.driver.get(f"{self.base}/#{route}")

    def keep_evidence(self) -> str:
        """Save a screenshot and the page source of what the browser shows now; where they are, for an
        assertion message (a browser too broken to answer is said so instead)."""
        self.failures += 1
        stem = self.evidence / f"failure_{self.failures}"
        kept = []
        try:
            self.driver.save_screenshot(str(stem.with_suffix(".png")))
            kept.append(f"screenshot {stem.with_suffix('.png')}")
        except Exception as e:  # noqa: BLE001 - the failure being reported matters more
            kept.append(f"no screenshot ({type(e).__name__}: {e})")
        try:
            stem.with_suffix(".html").write_text(f"<!-- {self.driver.current_url} -->\n{self.driver.page_source}")
            kept.append(f"page source {stem.with_suffix('.html')}")
        except Exception as e:  # noqa: BLE001
            kept.append(f"no page source ({type(e).__name__}: {e})")
        return "; ".join(kept)

    def _url(self) -> str:
        try:
            return self.driver.current_url
        except Exception:  # noqa: BLE001 - only for a message
            return "(unknown URL)"

    def visible(self, xpath: str, what: str) -> Any:
        """The first displayed element matching ``xpath``, waiting for it (``what`` names it in the error)."""
        def find(d: Any) -> Any:
            return next((e for e in d.find_elements(self.By.XPATH, xpath) if e.is_displayed()), False)

        try:
            return self.wait.until(find)
        except Exception as e:
            raise AssertionError(f"a reviewer would not see {what} within {UI_TIMEOUT:.0f} s on "
                                 f"{self._url()} ({self.keep_evidence()})") from e

    def until(self, condition: Callable[[Any], Any], what: str) -> Any:
        try:
            return self.wait.until(condition)
        except Exception as e:
            raise AssertionError(f"{what}: not within {UI_TIMEOUT:.0f} s on {self._url()} "
                                 f"({self.keep_evidence()})") from e

    def open_run(self, route: str, name: str, what: str) -> Any:
        """Open a run's page and wait until its header shows the run's ``name`` (the browser's title only
        names the run id). A page still without it after
        :data:`RUN_PAGE_TIMEOUT` is reloaded once; then the wait fails with a screenshot and the page
        source saved, their paths in the message."""
        from selenium.common.exceptions import TimeoutException
        from selenium.webdriver.support import expected_conditions as EC  # noqa: N812 - Selenium's own spelling
        from selenium.webdriver.support.ui import WebDriverWait

        text = _literal(" ".join(name.split()))
        # MLflow 3 shows the name in <h2><span data-testid="runs-header">; the h2 alone if the test id goes
        header = (self.By.XPATH, f"//*[@data-testid='runs-header'][normalize-space()={text}]"
                                 f" | //h2//*[normalize-space(text())={text}]")
        waits = []
        for attempt in ("load", "reload"):
            started = time.monotonic()
            try:
                if attempt == "load":
                    self.open(route)
                else:
                    self.driver.refresh()
                return WebDriverWait(self.driver, RUN_PAGE_TIMEOUT, poll_frequency=0.25).until(
                    EC.visibility_of_element_located(header))
            except TimeoutException:  # the page (or driver.get itself, past the page-load timeout) never came
                waits.append(f"{time.monotonic() - started:.0f} s after the {attempt}")
        raise AssertionError(f"a reviewer would not see {what} on {self._url()}: not there {' nor '.join(waits)} "
                             f"({self.keep_evidence()})")

    def close_assistant(self) -> None:
        """Close MLflow's assistant side panel if it is open: it hides a third of the page."""
        from selenium.common.exceptions import ElementClickInterceptedException, StaleElementReferenceException

        for _ in range(20):  # a panel that opens by itself on the first page is still sliding in for a moment
            try:
                for button in self.driver.find_elements(self.By.CSS_SELECTOR,
                                                        "[data-component-id='mlflow.assistant.chat_panel.close']"):
                    if button.is_displayed():
                        button.click()
                return
            except (ElementClickInterceptedException, StaleElementReferenceException):
                time.sleep(0.25)

    def shot(self, name: str) -> Path:
        path = self.shots / name
        self.driver.save_screenshot(str(path))
        self.saved.append(path)
        return path


LANDINGS = ("/runs", "/overview", "/traces")  # the tabs MLflow 3 sends a bare experiment URL to


def _landing(page: Page, eid: str, parent: dict) -> str:
    """A fresh browser opens the bare experiment URL, as a reviewer given ``#/experiments/ID`` does, and lands on
    the experiment's runs at once. MLflow 3.17 would open it on its GenAI overview (its UI takes the view from
    the browser, never from the experiment); the server runs ``--app-name boundlab`` (pipeline/dashboard.py),
    whose page sets a fresh browser's view to Model training, as docs/mlflow.md says."""
    page.driver.get(f"{page.base}/#/experiments/{eid}")
    landed = page.until(lambda d: next((t for t in LANDINGS if t in d.current_url.split("?")[0]), False),
                        "the experiment page choosing its view (runs, overview or traces)")
    page.close_assistant()
    page.shot("0_experiment_landing.png")
    assert landed == "/runs", (f"a fresh browser given the bare experiment URL landed on {landed.strip('/')}, not on the "
                               f"experiment's runs ({page.driver.current_url})")
    page.visible(_text_is(parent["name"]), f"the parent run {parent['name']!r} on the experiment's page")
    return "runs at once"


def _runs_table(page: Page, eid: str, parent: dict, children: list[dict]) -> None:
    """The experiment's runs: the parent, its children under it, and the Novikoff metrics as columns."""
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.keys import Keys

    By, d = page.By, page.driver
    page.open(f"/experiments/{eid}/runs")
    page.visible(_text_is(parent["name"]), f"the parent run {parent['name']!r} in the runs table")
    page.close_assistant()
    names_shown = lambda _: all(any(e.is_displayed() for e in d.find_elements(By.XPATH, _text_is(c["name"])))  # noqa: E731
                                for c in children)
    if not names_shown(d):  # children are folded under their parent: unfold them
        row = f"//div[@role='row'][@row-id={_literal(parent['id'])}]"
        page.visible(f"{row}//div[contains(@col-id, 'Run Name')]//button", "the button that unfolds the child runs").click()
    page.until(names_shown, f"the child runs {[c['name'] for c in children]} under the parent")

    # add the Novikoff columns, drop the empty ones (a reviewer compares measured and bound side by side)
    page.visible("//button[normalize-space()='Columns']", "the Columns selector").click()
    search = page.visible("//input[@placeholder='Search columns']", "the column search box")
    node = "//*[@role='dialog']//*[contains(@class, 'tree-treenode')][.//*[normalize-space(text())={}]]"
    for empty in ("Dataset", "Source", "Models"):  # nothing in them for these runs; absent in some versions
        for checked in d.find_elements(By.XPATH, node.format(_literal(empty)) + "//*[contains(@class, 'checkbox-checked')]"):
            checked.click()
    for metric in METRICS:
        search.send_keys(Keys.CONTROL, "a")
        search.send_keys(Keys.BACKSPACE)
        search.send_keys(metric)
        page.visible(node.format(_literal(metric)) + "//*[contains(@class, 'checkbox')]", f"{metric} in the column list").click()
    search.send_keys(Keys.ESCAPE)
    for child in children:
        for metric in METRICS:
            cell = (f"//div[@role='row'][@row-id={_literal(child['id'])}]"
                    f"//div[@col-id={_literal(f'metrics.`{metric}`')}]")
            want = _fmt(child["metrics"][metric])
            page.until(lambda _: any(e.text.strip() == want for e in d.find_elements(By.XPATH, cell)),  # noqa: B023 - waited on here
                       f"{metric} = {want} in the row of {child['name']!r}")
    # widen the name column so the children can be told apart in the screenshot (cosmetic)
    handles = d.find_elements(By.CSS_SELECTOR, ".ag-header-cell[col-id*='Run Name'] .ag-header-cell-resize")
    if handles:
        ActionChains(d).click_and_hold(handles[0]).move_by_offset(400, 0).release().perform()
    page.shot("1_runs_table.png")


def _parent_page(page: Page, eid: str, parent: dict, children: list[dict]) -> None:
    """The sweep's parent run: its name, the question as its description, its children linked."""
    page.open_run(f"/experiments/{eid}/runs/{parent['id']}", parent["name"],
                  f"the parent run's name {parent['name']!r} as the run page's title")
    page.close_assistant()
    page.visible(_text_is(QUESTION), "the sweep's question as the parent run's description")
    for child in children:
        page.visible(f"//a[starts-with(normalize-space(), {_literal(child['name'])})]",
                     f"a link to the child run {child['name']!r}")
    page.visible(_text_is("novikoff/violations"), "the sweep's novikoff/violations metric")
    page.shot("2_parent_run.png")


def _child_pages(page: Page, eid: str, parent: dict, children: list[dict]) -> None:
    """Each child run: its name, its parent, and the Novikoff metrics (measured, bound, ratio) with values."""
    for i, child in enumerate(children):
        page.open_run(f"/experiments/{eid}/runs/{child['id']}", child["name"],
                      f"the child run's name {child['name']!r} as the run page's title")
        page.close_assistant()
        page.visible(f"//a[normalize-space()={_literal(parent['name'])}]", "the link to the parent run")
        for metric in METRICS:
            row = page.visible(f"{_text_is(metric)}/ancestor::*[@role='row'][1]", f"the metric {metric} of {child['name']!r}")
            assert row.text.split() == [metric, _fmt(child["metrics"][metric])], (child["name"], row.text)
        page.driver.execute_script("arguments[0].scrollIntoView({block: 'center'})", row)
        page.shot(f"3_child_run_{i}.png")


def _figure(page: Page, eid: str, parent: dict, figure: bytes) -> None:
    """The parent run's artifacts: the comparison figure listed, and shown when clicked."""
    page.open(f"/experiments/{eid}/runs/{parent['id']}/artifacts")
    entry = page.visible(_text_is(FIGURE), f"{FIGURE} among the parent run's artifacts")
    page.close_assistant()
    entry.click()
    width = _png_width(figure)
    page.until(lambda d: any(img.is_displayed() and img.size["width"] > 200
                             and d.execute_script("return arguments[0].complete && arguments[0].naturalWidth", img) == width
                             for img in d.find_elements(page.By.TAG_NAME, "img")),
               f"the image {FIGURE} ({width} px wide) shown in the artifact preview")
    size = page.driver.get_window_size()
    page.driver.set_window_size(size["width"], size["height"] + 400)  # the whole figure in the screenshot
    time.sleep(0.5)  # let the preview lay itself out again
    page.shot("4_parent_figure.png")


def test_dashboard_shows_a_reviewer_the_sweep(tracking_server: SimpleNamespace, server_sweep: SimpleNamespace,
                                              browser: Any, tmp_path: Path) -> None:
    _check_sweep(tracking_server, server_sweep)
    exp, parent, children = _logged(tracking_server.url)
    eid = exp["experiment_id"]
    page = Page(browser, tracking_server.url, tmp_path / "screenshots", evidence=tmp_path)
    try:
        print(f"\nthe bare experiment URL opened on: {_landing(page, eid, parent)}")
        _runs_table(page, eid, parent, children)
        _parent_page(page, eid, parent, children)
        _child_pages(page, eid, parent, children)
        _figure(page, eid, parent, (server_sweep.sweep / FIGURE).read_bytes())
    except BaseException:
        try:  # what the browser showed at the end, for whoever debugs this (failed waits kept their own)
            page.shot("failure.png")
            body = browser.find_element(page.By.TAG_NAME, "body").text
            (page.shots / "failure.txt").write_text(f"{browser.current_url}\n\n{body}\n")
            (page.shots / "failure.html").write_text(browser.page_source)
        except Exception as e:  # noqa: BLE001 - the original failure matters more
            print(f"(no failure screenshot: {e})")
        raise
    finally:
        keep = os.environ.get("BOUNDLAB_SCREENSHOTS")
        if keep:
            Path(keep).mkdir(parents=True, exist_ok=True)
            for path in page.saved:
                shutil.copy2(path, Path(keep) / path.name)
        print("\nscreenshots:\n" + "\n".join(f"  {p}" for p in page.saved))


# ------------------------------------------------------------------ the report's claims table in a browser


def test_the_report_s_claims_table_sorts_and_filters_in_a_browser(tmp_path: Path, browser) -> None:  # noqa: ANN001
    """report/index.html's claims table, opened from disk (no server, nothing fetched): a click on a column's
    name sorts the rows by it (numbers as numbers, both ways), and the filter hides the rows without its words."""
    from helpers import tiny_results

    from pipeline.outputs import report

    (tmp_path / "experiments").mkdir()
    for name in ("alpha", "beta"):
        tiny_results(tmp_path / "results" / name, name)
        (tmp_path / "experiments" / f"{name}.yaml").write_text(
            f"name: {name}\nquestion: q\nclaims:\n  - bound: novikoff\n    guarantee: D\n    claim: c\n"
            "  - bound: hinge_all_rounds\n    guarantee: D\n    claim: c\n  - bound: freund_schapire\n    guarantee: D\n"
            "    claim: c\n")
    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        report.build(out_dir=tmp_path / "report", track=False)
    finally:
        os.chdir(cwd)
    browser.get((tmp_path / "report" / "index.html").as_uri())

    def rows() -> list[list[str]]:
        return browser.execute_script(
            "return Array.from(document.querySelectorAll('#claims tbody tr')).filter(r => !r.hidden)"
            ".map(r => Array.from(r.cells).map(c => c.getAttribute('data-v') ?? c.textContent.trim()));")

    assert len(rows()) == 6
    ratio = browser.execute_script("return document.querySelectorAll('#claims thead button')[5];")
    ratio.click()
    up = [float(r[5]) for r in rows()]
    assert up == sorted(up) and len(set(up)) > 1, up
    ratio.click()
    assert [float(r[5]) for r in rows()] == sorted(up, reverse=True)
    browser.execute_script("document.querySelector('#claims thead button').click();")  # experiment: as text
    assert [r[0] for r in rows()] == sorted(r[0] for r in rows())
    box = browser.find_element("id", "claims-filter")
    box.send_keys("beta hinge")
    shown = rows()
    assert len(shown) == 1 and shown[0][0] == "beta" and shown[0][1] == "hinge_all_rounds", shown
    box.clear()
    box.send_keys(" ")
    assert len(rows()) == 6
