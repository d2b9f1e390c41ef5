"""pipeline.data.certify: a corrupt or edited statistics cache entry is never used. Truncations, wrong types,
missing or extra fields, NaN, inconsistent certificates: each is ignored with a warning, recomputed and
repaired; a consistent entry (a non-separable one too) is read back silently."""

from __future__ import annotations

import json
import math
import tempfile
import warnings
from pathlib import Path

import numpy as np
import pytest
from helpers import cache_files as _cache_files
from helpers import separable_sample as _separable

from pipeline.data.certify import certify_sample


def _corruptions(entry: dict) -> list[tuple[str, str]]:
    """(name, file text): truncations, wrong types, inconsistent certificates, NaN, R = 0, wrong shape."""
    text = json.dumps(entry)
    out = [(f"truncated-{k}", text[:k]) for k in (0, 1, len(text) // 3, len(text) // 2, len(text) - 1)]
    out += [("not-json", "\x00\xff garbage"), ("a-list", "[1, 2, 3]"), ("null", "null")]
    wrong = {"m": "30", "d": 3.5, "R": "1.0", "gamma_lo": None, "gamma_hi": [0.1], "separable": "true", "gap": True}
    out += [(f"type-{k}", json.dumps(entry | {k: v})) for k, v in wrong.items()]
    out += [(f"missing-{k}", json.dumps({j: v for j, v in entry.items() if j != k})) for k in entry]
    out += [("extra-field", json.dumps(entry | {"w": 1.0}))]
    out += [(f"nan-{k}", json.dumps(entry | {k: math.nan})) for k in ("R", "gamma_lo", "gamma_hi")]
    out += [(f"inf-{k}", json.dumps(entry | {k: math.inf})) for k in ("R", "gamma_lo", "gamma_hi")]
    lo, hi, R = entry["gamma_lo"], entry["gamma_hi"], entry["R"]
    out += [("inverted", json.dumps(entry | {"gamma_lo": hi * 2, "gamma_hi": hi})),
            ("above-R", json.dumps(entry | {"gamma_lo": lo, "gamma_hi": R * 2, "gap": (R * 2 - lo) / (R * 2)})),
            ("R-zero", json.dumps(entry | {"R": 0.0})), ("R-larger", json.dumps(entry | {"R": R * 1.5})),
            ("m-wrong", json.dumps(entry | {"m": entry["m"] + 1})), ("d-wrong", json.dumps(entry | {"d": 99})),
            ("separable-flag", json.dumps(entry | {"separable": False})),
            ("gap-edited", json.dumps(entry | {"gap": 0.0 if entry["gap"] else 0.5})),
            ("negative-hi", json.dumps(entry | {"gamma_lo": -1.0, "gamma_hi": -0.5, "separable": False}))]
    return out


_X, _Y = _separable()
_CLEAN = certify_sample(_X, _Y, cache_dir=Path(tempfile.mkdtemp()))
CORRUPTIONS = _corruptions(_CLEAN.as_dict())


def test_the_corruption_table_is_broad() -> None:
    assert len(CORRUPTIONS) >= 35


@pytest.mark.parametrize(("name", "text"), CORRUPTIONS, ids=[n for n, _ in CORRUPTIONS])
def test_a_corrupt_cache_entry_is_recomputed_with_a_warning(name: str, text: str, tmp_path: Path) -> None:
    certify_sample(_X, _Y, cache_dir=tmp_path)
    (path,) = _cache_files(tmp_path)
    path.write_bytes(text.encode("utf-8", errors="surrogatepass") if name != "not-json" else b"\x00\xff garbage")
    with pytest.warns(RuntimeWarning, match="ignored and recomputed"):
        stats = certify_sample(_X, _Y, cache_dir=tmp_path)
    assert stats == _CLEAN
    assert json.loads(path.read_text()) == json.loads(json.dumps(_CLEAN.as_dict()))  # the entry is repaired
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a repaired entry is read back silently
        assert certify_sample(_X, _Y, cache_dir=tmp_path) == _CLEAN


def test_a_consistent_non_separable_entry_is_used(tmp_path: Path) -> None:
    X = np.array([[1.0, 0.0], [1.0, 0.0]])
    y = np.array([1.0, -1.0])
    first = certify_sample(X, y, cache_dir=tmp_path)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        again = certify_sample(X, y, cache_dir=tmp_path)
    assert not first.separable and not again.separable and again.R == first.R
