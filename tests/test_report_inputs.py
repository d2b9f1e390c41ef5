"""Inputs as an adversary or a hurried user writes them (issue 31, classes 14 and 18): report names that are paths or
unknown are refused in one line, free text reaches summary.md inert, an unknown learner or scale is named."""

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


def test_an_unknown_learner_name_for_the_adapter_is_a_clear_error() -> None:
    from pipeline.estimators import estimator
    from pipeline.params import ParamError

    with pytest.raises(ParamError, match="learner='nope': must be one of .*perceptron"):
        estimator("nope")


def test_an_unknown_scale_names_the_grids(one_line_error) -> None:  # noqa: ANN001
    err = one_line_error(["-m", "experiment=perceptron_tight", "scale=huge"])
    assert "scale=huge: the experiment has no grid 'huge'" in err
