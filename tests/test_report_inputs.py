"""The report's inputs as an adversary writes them: names that are paths or unknown are refused in one line, and
free text (questions, claims) reaches summary.md inert (issue 31, class 14)."""

from __future__ import annotations

from pathlib import Path

import pytest

from pipeline import report


@pytest.mark.parametrize("name", ["../x", "nope", "/etc/passwd", "perceptron_margin/../perceptron_tight"])
def test_a_report_of_an_unknown_or_path_name_is_one_line_exit_2(name: str, capsys: pytest.CaptureFixture,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(Path(__file__).resolve().parents[1])
    assert report.main([name]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "unknown experiment" in err and "not a path" in err


def test_free_text_is_inert_markdown() -> None:
    text = report._md("a <script>x</script> [click](javascript:alert(1)) <javascript:alert(2)> | `c`")
    assert "<" not in text and ">" not in text and "[click](" not in text and " | " not in text
    assert "\\[click\\]" in text and "\\|" in text and "\\`c\\`" in text
