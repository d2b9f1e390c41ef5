"""Inputs as an adversary or a hurried user writes them (issue 31, classes 14 and 18): report names that are paths or
unknown are refused in one line, free text reaches summary.md inert, an unknown learner or scale is named. And what
goes wrong around the report: results that cannot be read, a disk that fills while it is written, a tracking store
that does not answer. Each is one line on stderr, and the previous report survives whole with no temporary file."""

from __future__ import annotations

import errno
import http.server
import os
import shutil
import socket
import time
from pathlib import Path
from typing import Callable, Iterator

import pytest

from helpers import serving, tiny_results
from pipeline.outputs import report

NAME = "tiny"
SPEC = ("name: tiny\nquestion: {question}\n"
        "claims:\n  - {{bound: hinge_all_rounds, guarantee: D, claim: mistakes <= the hinge bound}}\n"
        "compare: {{quantity: mistakes, by: seed}}\n")


def _results(dest: Path) -> None:
    tiny_results(dest, NAME)


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A workspace as `dvc repro` leaves it, made once: experiments/tiny.yaml (a claim, and a comparison so that
    the report draws a figure of its own), results/tiny of two runs, and a first report."""
    ws = tmp_path_factory.mktemp("report_ws") / "ws"
    (ws / "experiments").mkdir(parents=True)
    (ws / "experiments" / f"{NAME}.yaml").write_text(SPEC.format(question="The first question?"))
    _results(ws / "results" / NAME)
    report.build(None, ws / "results", ws / "experiments", ws / "report", track=False)
    assert (ws / "report" / "figures" / f"{NAME}_mistakes_by_seed.png").exists()
    return ws


def _files(root: Path) -> dict[str, bytes]:
    """Every file under ``root``, hidden ones too (a leftover temporary file counts), by relative path."""
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.fixture
def ws(template: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A copy of the workspace, the current directory, whose experiment now asks another question: a new report's
    index.html and summary.md differ from the previous ones, so a page replaced before a failure would show."""
    ws = tmp_path / "ws"
    shutil.copytree(template, ws, symlinks=True)
    (ws / "experiments" / f"{NAME}.yaml").write_text(SPEC.format(question="The second question?"))
    monkeypatch.chdir(ws)
    return ws


def _one_line(capsys: pytest.CaptureFixture) -> str:
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("boundlab: report: error: "), err
    return err


# --- results that cannot be read: one line naming the file, exit 2, the previous report whole ----------------

def _truncate(path: Path) -> None:
    path.write_bytes(path.read_bytes()[: len(path.read_bytes()) // 2])


BROKEN_RESULTS: dict[str, tuple[Callable[[Path], None], str]] = {
    "metrics.json cut short": (lambda d: _truncate(d / "metrics.json"), "results/tiny/metrics.json: not valid JSON"),
    "metrics.json not JSON": (lambda d: (d / "metrics.json").write_text("<html>proxy error</html>"),
                              "results/tiny/metrics.json: not valid JSON"),
    "metrics.json a list": (lambda d: (d / "metrics.json").write_text("[1, 2]\n"),
                            "results/tiny/metrics.json: holds a JSON list, not a sweep's summary"),
    "metrics.json empty": (lambda d: (d / "metrics.json").write_text(""), "results/tiny/metrics.json: not valid JSON"),
    "results.parquet cut short": (lambda d: _truncate(d / "results.parquet"),
                                  "results/tiny/results.parquet: not a whole Parquet table"),
    "results.parquet missing": (lambda d: (d / "results.parquet").unlink(),
                                "metrics.json counts 2 runs but results.parquet is missing"),
}


@pytest.mark.parametrize("case", list(BROKEN_RESULTS))
def test_unreadable_results_are_one_line_naming_the_file_and_keep_the_previous_report(
        case: str, ws: Path, capsys: pytest.CaptureFixture) -> None:
    breaks, fragment = BROKEN_RESULTS[case]
    breaks(ws / "results" / NAME)
    before = _files(ws)
    assert report.main([]) == 2
    err = _one_line(capsys)
    assert fragment in err and "the sweep did not finish: run the same command to resume it (dvc repro tiny)" in err
    assert "the previous report is unchanged" in err
    assert _files(ws) == before  # the previous report whole, nothing staged left behind


@pytest.mark.parametrize("argv", [["--help"], ["-h"], [NAME, "--help"]])
def test_help_says_what_the_report_is_and_writes_nothing(argv: list[str], ws: Path, capsys: pytest.CaptureFixture) -> None:
    before = _files(ws)
    assert report.main(argv) == 0
    out = capsys.readouterr().out
    assert out.startswith("usage: python -m pipeline.outputs.report [NAME ...]") and "Exit codes: 0" in out
    assert _files(ws) == before


def test_a_named_experiment_without_its_summary_is_one_line(ws: Path, capsys: pytest.CaptureFixture) -> None:
    """results.parquet but no metrics.json (a publication cut short): a report naming it says what is missing."""
    (ws / "results" / NAME / "metrics.json").unlink()
    before = _files(ws)
    assert report.main([NAME]) == 2
    assert "tiny: no results/tiny/metrics.json; run its sweep first (dvc repro tiny)" in _one_line(capsys)
    assert _files(ws) == before


# --- a disk that fills while the report is written: the previous report whole, no temporary file ------------

def _enospc(path: Path) -> OSError:
    return OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))


def _failing_page(name: str) -> Callable[[Path, str], None]:
    """The staged writer, except that the page ``name`` is written half and then the disk is full."""
    write = report._write_staged

    def writer(path: Path, text: str) -> None:
        if path.name != name:
            return write(path, text)
        path.write_text(text[: len(text) // 2])
        raise _enospc(path)

    return writer


def _failing_figure(fig, directory: Path, stem: str) -> list[Path]:  # noqa: ANN001
    """plots.save when the disk fills half-way through the comparison figure's PNG."""
    directory.mkdir(parents=True, exist_ok=True)
    (directory / f"{stem}.png").write_bytes(b"\x89PNG\r\n\x1a\n" + b"\0" * 100)
    raise _enospc(directory / f"{stem}.png")


@pytest.mark.parametrize("target", ["index.html", "summary.md", "verdicts.json", "provenance.json", "figure"])
def test_a_full_disk_mid_write_keeps_the_previous_report_whole(target: str, ws: Path, capsys: pytest.CaptureFixture,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    if target == "figure":
        from pipeline.outputs import plots

        monkeypatch.setattr(plots, "save", _failing_figure)
    else:
        monkeypatch.setattr(report, "_write_staged", _failing_page(target))
    before = _files(ws)
    assert report.main([]) == 1
    err = _one_line(capsys)
    assert "the report could not be written (No space left on device); the previous report is unchanged" in err
    assert ".staging" not in err  # the reader is not told of a file it never sees
    assert _files(ws) == before
    assert "The first question?" in (ws / "report" / "index.html").read_text()


def test_the_new_report_replaces_the_previous_one_whole(ws: Path, capsys: pytest.CaptureFixture,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """The staged report, moved into place: the same files as before (no temporary one), the pages new, and the
    links to the figure the report drew pointing at report/figures, not at where it was staged."""
    monkeypatch.setattr(report, "_track", lambda *a, **k: None)
    before = _files(ws)
    assert report.main([]) == 0, capsys.readouterr().err
    after = _files(ws)
    assert after.keys() == before.keys()
    changed = {k for k in after if after[k] != before[k]}
    pages = {"report/index.html", "report/summary.md", "report/experiments/tiny.html"}  # the question is on each
    assert pages <= changed <= pages | {"report/provenance.json"}  # its time, to the second
    page, summary = (ws / "report" / "index.html").read_text(), (ws / "report" / "summary.md").read_text()
    assert "The second question?" in page and "The second question?" in summary
    assert "href='figures/tiny_mistakes_by_seed.png'" in page
    assert "(figures/tiny_mistakes_by_seed.png)" in summary and "staging" not in page + summary


# --- a tracking store that cannot be reached: the report written, one line, exit 3, in seconds -------------

def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class _Unavailable(http.server.BaseHTTPRequestHandler):
    """A server whose health check answers and whose API does not (503): MLflow retries such answers."""

    def do_GET(self) -> None:
        self.send_response(200 if self.path == "/health" else 503)
        self.end_headers()

    do_POST = do_GET  # noqa: N815 - the name http.server dispatches to

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def unavailable_server() -> Iterator[str]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Unavailable)
    with serving(server):
        yield f"http://127.0.0.1:{server.server_address[1]}"


@pytest.mark.parametrize("store", ["closed port", "closed port, a password in the URI",
                                   pytest.param("server answers 503", marks=pytest.mark.slow)])
def test_a_store_that_cannot_be_reached_is_one_line_and_the_report_is_written(
        store: str, ws: Path, capsys: pytest.CaptureFixture, monkeypatch: pytest.MonkeyPatch,
        request: pytest.FixtureRequest) -> None:
    """Exit 3, one line saying the report is written but not logged, in seconds: not MLflow's minutes of retries
    and its traceback. A password in the URI is not shown."""
    if store.startswith("closed port"):
        uri = f"http://{'me:s3cret@' if 'password' in store else ''}127.0.0.1:{_closed_port()}"
    else:
        uri = request.getfixturevalue("unavailable_server")
    monkeypatch.setenv("MLFLOW_TRACKING_URI", uri)
    from pipeline import tracking

    for key in tracking.HTTP_DEFAULTS:  # MLflow's own defaults: minutes of retries, unless boundlab bounds them
        monkeypatch.delenv(key, raising=False)
    started = time.monotonic()
    assert report.main([]) == 3
    assert time.monotonic() - started < 60
    err = _one_line(capsys)
    assert f"not logged to MLflow: tracking store {uri.replace(':s3cret@', ':***@')}: " in err
    assert "the report is written" in err and "s3cret" not in err
    assert ("503" if store.endswith("503") else "Connection refused") in err
    assert "The second question?" in (ws / "report" / "index.html").read_text()
    assert not list((ws / "report").glob(".staging*"))


def test_a_store_failing_mid_way_is_one_line_and_ends_the_report_run_failed(ws: Path, capsys: pytest.CaptureFixture,
                                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """The store passes its check, then refuses the upload: one line, and the run it opened is ended FAILED
    rather than left RUNNING."""
    from pipeline import tracking

    ended: list[tuple[str, str]] = []

    def refused(*args: object, **kwargs: object) -> None:
        raise RuntimeError("injected: the artifact store\nrefused the upload")

    monkeypatch.setattr(tracking.runs, "start_parent", lambda *a, **k: "0" * 32)
    monkeypatch.setattr(tracking.runs, "finish_parent", refused)
    monkeypatch.setattr(tracking.runs, "end_run", lambda uri, run_id, status: ended.append((run_id, status)))
    assert report.main([]) == 3
    err = _one_line(capsys)
    assert "not logged to MLflow: " in err and "RuntimeError: injected: the artifact store refused the upload" in err
    assert ended == [("0" * 32, "FAILED")]
    assert "The second question?" in (ws / "report" / "index.html").read_text()


# --- names ------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["../x", "nope", "/etc/passwd", "perceptron_margin/../perceptron_tight"])
def test_a_report_of_an_unknown_or_path_name_is_one_line_exit_2(name: str, capsys: pytest.CaptureFixture,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(Path(__file__).resolve().parents[1])
    assert report.main([name]) == 2
    err = _one_line(capsys)
    assert "unknown experiment" in err and "not a path" in err


def test_an_unknown_name_leaves_the_previous_report(ws: Path, capsys: pytest.CaptureFixture) -> None:
    before = _files(ws)
    assert report.main([NAME, "nope"]) == 2
    assert "'nope': unknown experiment (a name of experiments/, not a path); choose from tiny" in _one_line(capsys)
    assert _files(ws) == before


def test_free_text_is_inert_markdown() -> None:
    text = report._md("a <script>x</script> [click](javascript:alert(1)) <javascript:alert(2)> | `c`")
    assert "<" not in text and ">" not in text and "[click](" not in text and " | " not in text
    assert "\\[click\\]" in text and "\\|" in text and "\\`c\\`" in text


def test_an_unknown_learner_name_for_the_adapter_is_a_clear_error() -> None:
    from pipeline.estimators import estimator
    from pipeline.params import ParamError

    with pytest.raises(ParamError, match="learner='nope': must be one of .*perceptron"):
        estimator("nope")


def test_an_unknown_scale_names_the_grids(one_line_error) -> None:  # noqa: ANN001
    err = one_line_error(["-m", "experiment=perceptron_tight", "scale=huge"])
    assert "scale=huge: the experiment has no grid 'huge'" in err


def test_the_command_ends_with_its_summary_and_where_the_report_is(ws: Path, capsys: pytest.CaptureFixture,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """What a terminal shows of the main job: a short line per claim, then the counts and the page to open, last
    (dvc repro prints only its own two lines after it)."""
    monkeypatch.setattr(report, "_track", lambda *a, **k: None)
    assert report.main([]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[-1] == ("boundlab report: 1 experiment, 1 claim: 1 hold, 0 inconclusive, 0 failing; "
                         "open report/index.html (summary.md beside it)")
    assert lines[:-1] == ["  tiny/hinge_all_rounds (D): holds 2/2 max 0.375"]
