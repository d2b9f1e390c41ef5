"""One seam to Hydra's private internals: pipeline/sweep/hydra_seam.py is the only module of the package or of the
sweeper plug-in that imports ``hydra._internal`` or the joblib launcher's private ``_core`` module (read from
the source with ``ast``, every import statement, at module level or inside a function), and its compose-once
cache has one definition of a plain override, for the pre-flight and the launcher alike."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hydra import compose, initialize_config_dir
from hydra.errors import ConfigCompositionException

from pipeline.paths import CONF_DIR
from pipeline.sweep.schemas import register

ROOT = Path(__file__).resolve().parents[1]
SEAM = Path("pipeline") / "sweep" / "hydra_seam.py"
PRIVATE = ("hydra._internal", "hydra_plugins.hydra_joblib_launcher._core")


def _private_imports(source: str, filename: str) -> list[str]:
    """The private Hydra modules an ``import``/``from ... import`` of ``source`` names."""
    found = []
    for node in ast.walk(ast.parse(source, filename=filename)):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and not node.level:
            names = [node.module or ""] + [f"{node.module}.{a.name}" for a in node.names]
        else:
            continue
        found += [n for n in names if any(n == p or n.startswith(p + ".") for p in PRIVATE)]
    return sorted(set(found))


def _offenders() -> dict[str, list[str]]:
    files = sorted([*(ROOT / "pipeline").rglob("*.py"), *(ROOT / "hydra_plugins").rglob("*.py")])
    assert any(f.relative_to(ROOT) == SEAM for f in files)
    out = {}
    for f in files:
        rel = f.relative_to(ROOT)
        if rel != SEAM and (bad := _private_imports(f.read_text(), str(rel))):
            out[str(rel)] = bad
    return out


def test_only_the_seam_imports_hydras_private_modules() -> None:
    assert _offenders() == {}, "import these through pipeline.sweep.hydra_seam"


def test_the_seam_binds_no_private_name_when_imported() -> None:
    """Hydra's plugin scan executes hydra._internal.core_plugins again: a private class bound at import time
    would not be the one Hydra's code refers to afterwards (the seam looks each up when it is used)."""
    tree = ast.parse((ROOT / SEAM).read_text())
    top = [n for n in tree.body if isinstance(n, (ast.Import, ast.ImportFrom))]
    assert _private_imports(ast.unparse(ast.Module(body=top, type_ignores=[])), str(SEAM)) == []


def test_the_check_sees_every_form_of_import() -> None:
    for line in ("from hydra._internal.utils import get_args_parser",
                 "import hydra._internal.config_loader_impl",
                 "def f():\n    from hydra._internal import utils",
                 "from hydra_plugins.hydra_joblib_launcher import _core",
                 "from hydra_plugins.hydra_joblib_launcher._core import execute_job"):
        assert _private_imports(line, "x.py"), line
    assert _private_imports("from hydra.core.plugins import Plugins\nimport hydra", "x.py") == []
    assert _private_imports((ROOT / SEAM).read_text(), str(SEAM))  # the seam itself does import them


@pytest.fixture(scope="module")
def composer():  # noqa: ANN201
    from pipeline.sweep.hydra_seam import Composer

    register()
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base=None):
        yield Composer()


@pytest.mark.parametrize(("job", "plain"), [
    (["seed=1", "gamma=0.2"], ["seed=1", "gamma=0.2"]),
    (["algorithm=pegasos", "T=50", "+extra=1", "seed=2"], ["T=50", "+extra=1", "seed=2"]),  # an addition is plain
    (["algorithm=pegasos", "T=50", "++extra=1", "seed=2"], ["seed=2"]),  # after the forced addition only
    (["seed=1", "~seed"], []),  # a plain override before a deletion: Hydra's order kept
    (["hydra.job.name=x", "seed=3", "algorithm.lam=0.5", "x={a: 1}"], []),  # a dict value is a config override
    (["seed=4", "hydra.job.name=x", "+hydra.foo=1"], ["seed=4"]),  # hydra.* never touches a plain key
    (["hydra.sweep.subdir=pack-2", "seed=5"], ["seed=5"]),  # the pre-flight's configs have no hydra node to set
])
def test_one_definition_of_a_plain_override(composer, job: list[str], plain: list[str]) -> None:  # noqa: ANN001
    from pipeline.sweep.hydra_seam import parse_overrides

    ours, structural = composer.cache.split(parse_overrides(job))
    assert [o.input_line for o in ours] == plain
    assert sorted(structural + plain) == sorted(job)


def test_the_preflight_refuses_what_hydra_refuses(composer) -> None:  # noqa: ANN001
    with pytest.raises(ConfigCompositionException) as theirs:
        compose("config", overrides=["extra=2", "+extra=1"])
    with pytest.raises(ConfigCompositionException) as ours:
        composer(["extra=2", "+extra=1"])
    assert str(ours.value) == str(theirs.value)


_KEYS = ["seed", "n", "a.b", "algorithm.lam", "x_1.y2", "_k", "null", "true", "inf", "nan", "seed.0x"]
_KEY = r"[A-Za-z_][A-Za-z0-9_]{0,6}(\.[A-Za-z_][A-Za-z0-9_]{0,4}){0,2}"


@settings(max_examples=300, deadline=None)
@given(key=st.sampled_from(_KEYS) | st.from_regex(_KEY, fullmatch=True),
       value=st.integers(0, 10**30) | st.sampled_from(["007", "1_000", "+4", "-3", "00", "0x1F", "1e3", "12a"]))
def test_a_key_int_line_is_parsed_as_hydra_parses_it(key: str, value: object) -> None:
    """The seam's short cut for ``key=N`` lines gives Hydra's own parse, field for field (the value and its type,
    the line's text); a line outside the short cut (a sign, an underscore, a leading zero) is Hydra's too, and
    so is a refusal."""
    from hypothesis import assume

    from pipeline.sweep import hydra_seam

    line = f"{key}={value}"
    try:
        expected = hydra_seam.parser().parse_overrides([line])[0]
    except Exception as e:  # noqa: BLE001 - Hydra's refusal is the expected outcome
        with pytest.raises(type(e)):
            hydra_seam._override.__wrapped__(line)
        return
    assume(expected is not None)
    got = hydra_seam._override.__wrapped__(line)  # not the process's cache: this line's own parse
    assert got == expected and type(got._value) is type(expected._value)


def test_a_sweeps_packs_share_one_composer_in_a_process(composer) -> None:  # noqa: ANN001
    """A forked worker runs many packs of one sweep: their members' configs come from one cache (two
    compositions a pack before); another sweep, or another Hydra loader, gets a new one."""
    from pipeline.sweep import hydra_seam

    first = hydra_seam.sweep_composer('{"sweep_id": "a"}')
    assert hydra_seam.sweep_composer('{"sweep_id": "a"}') is first
    assert hydra_seam.sweep_composer('{"sweep_id": "b"}') is not first
    assert first(["seed=3", "gamma=0.2"]).seed == 3


def test_a_sweeps_packs_share_their_families_of_seeds_in_a_process(composer, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: ANN001
    """pack._sweep_seeded: a setting's family is built in full once per worker and sweep, not in each pack; another
    sweep's composer, or more than FAMILIES families (a grid of distinct settings), starts afresh."""
    from pipeline.job.config import build
    from pipeline.sweep import hydra_seam, pack

    compose = hydra_seam.sweep_composer('{"sweep_id": "families"}')
    seeded = pack._sweep_seeded(compose)
    full = []

    def built(seed: int) -> object:
        return seeded.build([f"seed={seed}", "n=60"], lambda o: (full.append(o), (cfg := compose(o), build(cfg)))[1])[1]

    first_pack = [built(s) for s in range(4)]
    assert pack._sweep_seeded(compose) is seeded
    second_pack = [built(s) for s in range(4, 8)]
    assert len(full) == 2 and [j.seed for j in first_pack + second_pack] == list(range(8))  # two full builds in all
    assert pack._sweep_seeded(hydra_seam.sweep_composer('{"sweep_id": "other"}')) is not seeded
    monkeypatch.setattr(pack, "FAMILIES", 0)
    again = pack._sweep_seeded(compose)
    again.build(["seed=0", "n=70"], lambda o: (cfg := compose(o), build(cfg)))
    assert pack._sweep_seeded(compose) is not again


def test_the_preflight_composes_once_whatever_hydra_key_the_line_sets(composer, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: ANN001
    """The launcher treats a pack's ``hydra.sweep.subdir`` as a plain value; the pre-flight's configs have no
    ``hydra`` node to set it in, so there it stays part of the cache's key: a command line that sets it composes
    once, not once a job (each falling back to Hydra's whole composition)."""
    import hydra

    from pipeline.sweep.hydra_seam import Composer

    calls: list[list[str]] = []
    real = hydra.compose
    monkeypatch.setattr(hydra, "compose",
                        lambda name, overrides: calls.append(list(overrides)) or real(name, overrides=overrides))
    fresh = Composer()
    for s in range(20):
        assert fresh(["hydra.sweep.subdir=mine", f"seed={s}"]).seed == s
    assert len(calls) == 1
