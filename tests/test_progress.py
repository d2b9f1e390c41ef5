"""Long phases of one run show progress on the log; short ones stay silent."""

from __future__ import annotations

import logging

import numpy as np
import pytest

from pipeline.sweep import progress
from pipeline.data import Stream


def test_a_long_stream_reports_its_progress(monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    monkeypatch.setattr(progress, "EVERY", 0.0)  # as if each chunk took longer than the interval
    data = Stream(gamma=0.1, rho=1.0, n=1000, d=3, chunk=250).generate(np.random.default_rng(0))
    with caplog.at_level(logging.INFO, logger="boundlab"):
        X, _ = data.materialise()
    lines = [r.getMessage() for r in caplog.records if r.getMessage().startswith("[progress]")]
    assert len(lines) == 4 and X.shape == (1000, 3)
    assert "25% (250 of 1000 examples)" in lines[1] and "75% (750 of 1000 examples)" in lines[3]


def test_a_short_phase_logs_nothing(caplog: pytest.LogCaptureFixture) -> None:
    data = Stream(gamma=0.1, rho=1.0, n=1000, d=3, chunk=250).generate(np.random.default_rng(0))
    with caplog.at_level(logging.INFO, logger="boundlab"):
        data.materialise()
    assert not [r for r in caplog.records if r.getMessage().startswith("[progress]")]
