"""pipeline.data.stream: the streamed margin sample never builds a d x d matrix when d exceeds a chunk, and keeps
its certified margin and radius."""

from __future__ import annotations


import numpy as np
from helpers import peak_bytes as _peak

from pipeline.data.stream import Stream


def test_the_stream_never_builds_d_by_d_when_d_exceeds_a_chunk() -> None:
    d = 20_000

    def read() -> None:
        data = Stream(gamma=0.1, rho=1.0, n=12, d=d, chunk=6).generate(np.random.default_rng(0))
        X, y = data.materialise()
        assert abs(data.stats.gamma_lo - 0.1) < 1e-9 and abs(data.stats.R - 1.0) < 1e-9
        assert (y * (X @ data.directions["w*"])).min() >= 0.1 - 1e-12

    Stream(gamma=0.1, rho=1.0, n=12, d=50, chunk=6).generate(np.random.default_rng(0)).materialise()  # compile first
    assert _peak(read) < d * d * 8 / 100
