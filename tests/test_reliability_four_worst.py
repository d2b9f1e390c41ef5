"""Issue 50 ("Reliability, round four") class 8, hangs, crashes and tracebacks, in the exact worst case and the
Perceptron's adversaries (pipeline/data/worst_case.py, pipeline/solvers/perceptron_worst.py,
pipeline/learners/adaptive.py, pipeline/learners/orderings.py; docs/bounds.md section 1, "The exact worst case"):

- every worst case the docs promise (up to 5,000 rows) is built, certified and attained: 201 to 5,000 mistakes
  failed with a ValueError (the SDP's size limit applied to the tie instance, which has no SDP), and so did
  ``ordering=exact`` on samples whose class allows that many;
- every upper end reported is at or above the exact value (checked in rational arithmetic): the closed form's
  rho / sqrt(M* + 1) was rounded to nearest (one float low for 2,498 of the values above 63), the SDPs' dual bound
  rested on an unproven eigenvalue, and the refusal quoted a smallest margin it refused itself;
- a long search says its cost up front and shows progress, refuses in one line naming ``algorithm.ordering`` when
  out of reach (the adaptive adversary at a tiny margin ran for hours silently), and Ctrl-C and SIGTERM stop it,
  and the largest worst case's construction, within seconds.
"""

from __future__ import annotations

import json
import math
import queue
import re
import signal
import subprocess
import sys
import textwrap
import threading
import time
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
from helpers import boundlab_command, fault_env
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pipeline.data import MarginBinary
from pipeline.data.worst_case import MAX_ROWS, WorstCase, closed_form_upper, smallest_gamma
from pipeline.learners.perceptron import Perceptron
from pipeline.params import ParamError
from pipeline.solvers import perceptron_worst as pw

ROOT = Path(__file__).resolve().parents[1]


def _exact_floor(rho: float, gamma: float) -> int:
    return int(Fraction(rho) ** 2 // Fraction(gamma) ** 2)


def _gamma_for(M: int, rho: float) -> float:
    """A float margin whose class's worst case is exactly M (checked exactly)."""
    gamma = rho / math.sqrt(M + 0.5)
    assert _exact_floor(rho, gamma) == M
    return gamma


def _at_or_above_exact_sqrt(upper: float, square: Fraction) -> bool:
    """upper >= sqrt(square) exactly, and the float below it is not: the tightest upper end."""
    return Fraction(upper) ** 2 >= square > Fraction(math.nextafter(upper, 0.0)) ** 2


# --- sizes: 201 to 5,000 mistakes -------------------------------------------------------------------------------


@pytest.mark.parametrize(("M", "rho", "label"), [(201, 1.0, 1), (500, 2.5, -1), (2000, 0.3, 1),
                                                  pytest.param(MAX_ROWS, 1.0, 1, marks=pytest.mark.long)])
def test_every_worst_case_the_docs_promise_is_built_certified_and_attained(M: int, rho: float, label: int) -> None:
    """Past the SDPs' 63 mistakes, up to the 5,000 rows the docs promise: the instance has M* = floor((rho/gamma)^2)
    rows, its certified radius and margin are in the class, the project's Perceptron makes exactly M* mistakes on it
    (under the tie rule its first label is for), and the certificate's upper end is rho / sqrt(M* + 1) rounded
    upwards, at most gamma. Before the fix every size from 201 up raised ValueError ("M: an integer in [1, 200]")."""
    gamma = _gamma_for(M, rho)
    ds = WorstCase(gamma=gamma, rho=rho, label=label).generate(np.random.default_rng(0))
    assert ds.X.shape == (M, M) and ds.extra["worst_case"] == M and ds.extra["certified_by"] == "closed_form"
    assert rho <= ds.stats.R <= rho * (1 + 1e-12) and ds.stats.gamma_lo >= gamma  # R: certify's padded upper end
    learner = Perceptron(tie="negative" if label == 1 else "positive")
    learner.learn_stream(ds.X, ds.y)
    assert learner.mistakes_ == M
    upper = ds.extra["certificate_upper"]
    assert _at_or_above_exact_sqrt(upper, Fraction(rho) ** 2 / (M + 1)) and upper <= gamma
    assert ds.extra["certificate_gap"] == 0.0


@pytest.mark.parametrize("M", [201, 1000, MAX_ROWS])
def test_the_tie_instance_and_its_exact_certificate_take_any_size(M: int) -> None:
    """No SDP, so no SDP's size limit: the instance x_t = R e_t of any size, certified exactly over its non-zeros
    (margin R / sqrt(M) rounded downwards, radius R, every later score exactly 0)."""
    inst = pw.tie_instance(M, 3.0, "positive")
    assert inst.X.shape == (M, M) and inst.radius == 3.0 and inst.slack == 0.0
    assert Fraction(inst.margin) ** 2 <= Fraction(9, M) < Fraction(math.nextafter(inst.margin, 9.0)) ** 2
    with pytest.raises(ValueError, match="M: an integer in"):
        pw.max_margin(M)  # the SDP keeps its own limit


def _run(*overrides: str):  # noqa: ANN202
    from hydra import compose, initialize_config_dir

    from pipeline.job.config import build
    from pipeline.paths import CONF_DIR
    from pipeline.job.run import run
    from pipeline.sweep.schemas import register

    register()
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base=None):
        result = run(build(compose("config", overrides=list(overrides))))
    rows = result.table[result.table["bound"] == "novikoff"]
    assert len(rows) == 1
    return rows.iloc[0].to_dict()


def test_the_issues_example_dataset_worst_case_gamma_0_07_runs() -> None:
    """dataset=worst_case gamma=0.07: 204 mistakes, the bound attained, the certificate in the row."""
    row = _run("dataset=worst_case", "gamma=0.07")
    assert row["empirical"] == row["worst_case"] == row["theoretical"] == 204 and row["holds"]
    assert row["certified_by"] == "closed_form" and Fraction(row["certificate_upper"]) ** 2 * 205 >= 1


@pytest.mark.parametrize("gamma", [0.07, 0.03])
def test_the_exact_ordering_presents_worst_instances_past_200_mistakes(gamma: float) -> None:
    """ordering=exact on a sample whose certified class allows 204 or 1,111 mistakes: the run makes exactly M*."""
    row = _run("algorithm.ordering=exact", f"gamma={gamma}", "n=50", "d=5")
    assert row["presented"] == "worst_case" and row["empirical"] == row["worst_case"] > 200 and row["holds"]
    assert row["worst_case"] == _exact_floor(row["R"], row["gamma_lo"])


# --- upper ends rounded outwards --------------------------------------------------------------------------------


@settings(max_examples=300, deadline=None)
@given(M=st.integers(2, 10**7), rho=st.floats(1e-3, 1e3, allow_nan=False, allow_infinity=False))
def test_the_closed_forms_upper_end_is_never_below_the_exact_value(M: int, rho: float) -> None:
    """rho / sqrt(M) as reported is at or above its exact value, and the tightest such float."""
    assert _at_or_above_exact_sqrt(closed_form_upper(rho, M), Fraction(rho) ** 2 / M)


@settings(max_examples=300, deadline=None)
@given(p=st.integers(-(10**40), 10**40), q=st.integers(1, 10**40))
def test_rationals_are_rounded_to_the_float_on_the_asked_side(p: int, q: int) -> None:
    v = Fraction(p, q)
    up, down = pw.float_up(v), pw.float_down(v)
    assert Fraction(up) >= v > Fraction(math.nextafter(up, -math.inf))
    assert Fraction(down) <= v < Fraction(math.nextafter(down, math.inf))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(M=st.integers(1, 8), R=st.floats(0.1, 10.0), seed=st.integers(0, 2**32 - 1))
def test_a_dual_bound_is_never_below_the_proven_optimum(M: int, R: float, seed: int) -> None:
    """Any dual point dual_bound accepts bounds the SDP's optimum R / sqrt(M) from above (weak duality), exactly:
    random dual points, made PSD by a diagonal shift, never report a value below it."""
    rng = np.random.default_rng(seed)
    nu, lam, mu, sigma = rng.random(), rng.random(M), rng.random(M) + 1e-3, rng.random(max(M - 1, 0))
    S = pw.dual_matrix(M, nu, lam, mu, sigma)
    shift = max(0.0, -float(np.linalg.eigvalsh(S)[0])) * (1 + rng.random()) + 1e-9
    upper = pw.dual_bound(M, R, 0.0, pw.dual_matrix(M, nu + shift, lam + shift, mu, sigma))
    if math.isfinite(upper):
        assert Fraction(upper) ** 2 * M >= Fraction(R) ** 2


def test_the_sdps_reported_upper_ends_are_never_below_the_exact_values() -> None:
    """Up to 63 mistakes the upper ends come from the SDPs: each probe's dual bound is at or above the proven
    optimum 1 / sqrt(M) exactly, and a dataset's certificate_upper at or above rho / sqrt(M* + 1) exactly."""
    for M in range(1, 13):
        assert Fraction(pw.probe(M).upper) ** 2 * M >= 1, M
    for rho, gamma in ((2.5, 0.9), (1.0, 0.3), (0.7, 0.2)):
        ds = WorstCase(gamma=gamma, rho=rho).generate(np.random.default_rng(0))
        M = ds.extra["worst_case"]
        assert ds.extra["certified_by"] == "sdp" and M == _exact_floor(rho, gamma) <= 63
        assert Fraction(ds.extra["certificate_upper"]) ** 2 * (M + 1) >= Fraction(rho) ** 2
        assert ds.extra["certificate_gap"] >= 0


@settings(max_examples=40, deadline=None)
@given(rho=st.floats(1e-3, 1e3, allow_nan=False, allow_infinity=False))
def test_the_refusal_quotes_a_smallest_margin_it_accepts(rho: float) -> None:
    """A margin too small is refused naming gamma and quoting a smallest margin of 4 digits: that one is accepted,
    and the 4-digit value below it is not."""
    g = smallest_gamma(rho)
    with pytest.raises(ParamError, match=r"gamma=.*at most 5000") as refused:
        WorstCase(gamma=g * 0.9, rho=rho).check()
    quoted = float(re.search(r">= (\S+) at rho", str(refused.value)).group(1))
    assert quoted == g and _exact_floor(rho, quoted) <= MAX_ROWS
    digits, exponent = f"{g:.3e}".split("e")
    below = float(f"{int(digits.replace('.', '')) - 1}e{int(exponent) - 3}")
    assert _exact_floor(rho, below) > MAX_ROWS


# --- estimates, progress and refusals of long searches ------------------------------------------------------------


def _sample(gamma: float, n: int = 200, d: int = 5, seed: int = 0):  # noqa: ANN202
    return MarginBinary(gamma=gamma, rho=1.0, n=n, d=d).generate(np.random.default_rng(seed))


def _bound(ds) -> int:  # noqa: ANN001
    return int((ds.stats.R / ds.stats.gamma_lo) ** 2)


def test_an_accepted_search_says_its_estimate_before_the_first_rollout_then_its_progress(monkeypatch, caplog) -> None:  # noqa: ANN001
    """With the quiet threshold at 0 every estimate is said: the upper one from Novikoff's bound before any
    rollout, the one from greedy's length after it, then progress lines in rollouts; the play is the same as
    without the estimates (the timing prefix draws from its own generator)."""
    import pipeline.learners.adaptive as adaptive
    import pipeline.sweep.progress as progress

    ds = _sample(0.05)
    B = _bound(ds)
    quiet = adaptive.adaptive(ds.X, ds.y, budget=4, rng=1, bound=B, max_updates=2 * B + 2)
    calls = []
    rollout = adaptive._rollout
    monkeypatch.setattr(adaptive, "_rollout", lambda *a, **k: calls.append(k.get("steps")) or rollout(*a, **k))
    monkeypatch.setattr(progress, "EVERY", 0.0)
    with caplog.at_level("INFO", logger="boundlab"):
        said = adaptive.adaptive(ds.X, ds.y, budget=4, rng=1, bound=B, max_updates=2 * B + 2)
    lines = [r.getMessage() for r in caplog.records]
    assert lines[0].startswith("[estimate] the adaptive adversary") and f"up to {B:,} updates" in lines[0]
    assert "greedy's" in lines[1] and any(re.search(r"\[progress\] the adaptive adversary: .* rollouts", x) for x in lines)
    assert said.value == quiet.value and np.array_equal(said.sequence, quiet.sequence)
    assert calls[0] is not None and calls.count(None) == 5  # timed prefixes first, then greedy and 4 rollouts


@pytest.mark.parametrize("stage", ["before greedy", "after greedy"])
def test_a_search_out_of_reach_is_refused_in_one_line_naming_the_option(monkeypatch, stage: str) -> None:  # noqa: ANN001
    """Out of reach by the upper estimate (greedy alone could take long): refused before any rollout; by the
    estimate from greedy's length: refused after greedy, before the other rollouts."""
    import pipeline.learners.adaptive as adaptive
    import pipeline.learners.orderings as orderings

    ds = _sample(0.05)
    monkeypatch.setattr(orderings, "MAX_SECONDS", 1e-9)
    monkeypatch.setattr(adaptive, "GREEDY_SECONDS", 0.0 if stage == "before greedy" else math.inf)
    played = []
    rollout = adaptive._rollout
    monkeypatch.setattr(adaptive, "_rollout", lambda *a, **k: played.append(k.get("steps")) or rollout(*a, **k))
    with pytest.raises(ParamError) as refused:
        Perceptron(ordering="adaptive").run(ds, np.random.default_rng(0))
    text = str(refused.value)
    assert text.startswith("algorithm.ordering='adaptive': must be given, random or adversarial") and "\n" not in text
    assert "(R/gamma_lo)^2 <=" in text and ("Novikoff's bound" if stage == "before greedy" else "greedy's") in text
    assert played.count(None) == (0 if stage == "before greedy" else 1)


@pytest.mark.parametrize("learner", ["perceptron", "batch_perceptron", "halving"])
def test_the_adversarial_ordering_is_timed_estimated_and_refused_when_out_of_reach(monkeypatch, learner: str) -> None:  # noqa: ANN001
    """The permutation adversary (403 runs of the learner): its first runs timed, the search refused before the
    rest when the estimate passes the limit, naming algorithm.ordering; otherwise progress in runs."""
    import pipeline.learners.orderings as orderings
    import pipeline.sweep.progress as progress
    from pipeline.learners.halving import Halving
    from pipeline.learners.perceptron import BatchPerceptron

    runs = []
    evaluate = orderings._Timed.__call__

    def counted(self, order):  # noqa: ANN001, ANN202
        runs.append(1)
        return evaluate(self, order)

    monkeypatch.setattr(orderings._Timed, "__call__", counted)
    if learner == "halving":
        from pipeline.data.finite import FiniteClass

        ds = FiniteClass(cls="thresholds", size=16, n=40).generate(np.random.default_rng(0))
        make = lambda: Halving(ordering="adversarial")  # noqa: E731
    else:
        ds = _sample(0.1, n=60)
        make = (lambda: Perceptron(ordering="adversarial")) if learner == "perceptron" else \
            (lambda: BatchPerceptron(ordering="adversarial"))
    monkeypatch.setattr(orderings, "MAX_SECONDS", 0.0)
    with pytest.raises(ParamError, match=r"^algorithm\.ordering='adversarial': must be given or random here.*403 runs"):
        make().run(ds, np.random.default_rng(0))
    assert 1 <= len(runs) <= 2
    monkeypatch.setattr(orderings, "MAX_SECONDS", 3600.0)
    monkeypatch.setattr(progress, "EVERY", 0.0)
    lines = []
    monkeypatch.setattr(progress.log, "info", lambda msg, *a: lines.append(msg % a if a else msg))
    make().run(ds, np.random.default_rng(0))
    assert any(x.startswith("[estimate] the adversarial ordering: its 403 runs") for x in lines)
    assert any(x.startswith("[progress] the adversarial ordering: 100% (403 of 403 runs)") for x in lines)


def test_the_worst_cases_construction_says_its_estimate(monkeypatch, caplog) -> None:  # noqa: ANN001
    import pipeline.sweep.progress as progress
    from pipeline.data import worst_case

    monkeypatch.setattr(progress, "EVERY", 0.0)
    monkeypatch.setattr(worst_case, "_BUILT", {})  # built afresh: an instance another test built is served silently
    with caplog.at_level("INFO", logger="boundlab"):
        WorstCase(gamma=0.07, rho=1.0).generate(np.random.default_rng(0))
        WorstCase(gamma=0.3, rho=1.0).generate(np.random.default_rng(0))
    lines = [r.getMessage() for r in caplog.records if r.getMessage().startswith("[estimate]")]
    assert "M* = 204 by the closed form, its 204 x 204 instance certified" in lines[0]
    assert "M* = 11 by 3 margin SDPs of up to 13 x 13" in lines[1]


# --- in another process: the command's one line, and Ctrl-C / SIGTERM -----------------------------------------------

CHILD = textwrap.dedent("""
    import json, logging, signal, sys, time
    import numpy as np
    from pipeline.sweep import interrupts
    from pipeline.data import MarginBinary
    from pipeline.data.worst_case import WorstCase
    from pipeline.learners.perceptron import Perceptron
    from pipeline.params import ParamError
    import pipeline.sweep.progress as progress

    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(message)s")
    progress.EVERY = 0.5
    signal.signal(signal.SIGTERM, interrupts.Handler())  # what the command's stop guard does for SIGTERM
    # Ctrl-C as a terminal delivers it, whatever this process inherited from the test runner (a worker process may
    # pass on SIGINT ignored or blocked: then the search would never see it, as one started with `&` in a script)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT, signal.SIGTERM})
    what = sys.argv[1]
    if what == "refuse":
        out = []
        for gamma, n, d in ((1e-4, 500, 10), (3e-4, 2000, 20), (2e-5, 100, 3)):
            ds = MarginBinary(gamma=gamma, rho=1.0, n=n, d=d).generate(np.random.default_rng(0))
            start = time.monotonic()
            try:
                Perceptron(ordering="adaptive").run(ds, np.random.default_rng(0))
                out.append(["ran", time.monotonic() - start])
            except ParamError as e:
                out.append([str(e), time.monotonic() - start])
        print(json.dumps(out))
    elif what == "adaptive":
        ds = MarginBinary(gamma=0.002, rho=1.0, n=500, d=10).generate(np.random.default_rng(0))
        Perceptron(ordering="adaptive").run(ds, np.random.default_rng(0))
    else:
        WorstCase(gamma=1.0 / 5000.5 ** 0.5, rho=1.0).generate(np.random.default_rng(0))
""")


def _child(what: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", CHILD, what], cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


@pytest.mark.slow
def test_the_adaptive_adversary_at_tiny_margins_refuses_at_once_instead_of_running_for_hours() -> None:
    """gamma 1e-4, 3e-4 and 2e-5 on samples of 500 x 10, 2000 x 20 and 100 x 3: each refused in one line naming
    algorithm.ordering and the margins that fit, within seconds of the run's start (hours to days of work)."""
    proc = _child("refuse")
    try:
        out, err = proc.communicate(timeout=300)
    finally:
        proc.kill()  # a search that hangs must not outlive its test
    assert proc.returncode == 0, err[-3000:]
    for text, seconds in json.loads(out.splitlines()[-1]):
        assert text.startswith("algorithm.ordering='adaptive': must be given, random or adversarial"), text
        assert "(R/gamma_lo)^2 <=" in text and "more than the 1 h a search may take" in text
        assert seconds < 10, (text, seconds)


@pytest.mark.slow
def test_the_command_refuses_the_adaptive_ordering_at_a_tiny_margin_in_one_line(tmp_path: Path) -> None:
    """The issue's example end to end: boundlab algorithm.ordering=adaptive at gamma 1e-4 ends with exit 2 and one
    line naming the option, no traceback."""
    _, env = fault_env(tmp_path)
    proc = subprocess.run([*boundlab_command(), "algorithm.ordering=adaptive", "gamma=0.0001", "n=500", "d=10"],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 2, proc.stderr[-3000:]
    errors = [x for x in proc.stderr.splitlines() if x.startswith("boundlab: error:")]
    assert len(errors) == 1 and "algorithm.ordering='adaptive'" in errors[0] and "Traceback" not in proc.stderr


@pytest.mark.slow
@pytest.mark.parametrize(("what", "sig", "started"), [("adaptive", signal.SIGINT, "[progress] the adaptive adversary"),
                                                      ("adaptive", signal.SIGTERM, "[progress] the adaptive adversary"),
                                                      ("worst_case", signal.SIGINT, "[estimate] dataset worst_case")])
def test_ctrl_c_and_sigterm_stop_a_long_search_or_construction_within_seconds(what: str, sig: int, started: str) -> None:
    """A search of minutes (the adaptive adversary at gamma 0.002) and the 5,000-row worst case: the signal sent
    once its estimate or progress is said stops it within seconds, as an interrupt (KeyboardInterrupt)."""
    proc = _child(what)
    try:
        lines: queue.Queue[str] = queue.Queue()
        threading.Thread(target=lambda: [lines.put(x) for x in proc.stderr], daemon=True).start()
        deadline, seen = time.monotonic() + 120, []
        while not any(x.startswith(started) for x in seen):
            assert time.monotonic() < deadline and proc.poll() is None, "".join(seen)[-3000:]
            try:
                seen.append(lines.get(timeout=1.0))
            except queue.Empty:
                pass
        time.sleep(1.5 if what == "worst_case" else 0.0)  # the construction is then inside its certificate
        sent = time.monotonic()
        proc.send_signal(sig)
        proc.wait(timeout=60)
        stopped = time.monotonic() - sent
    finally:
        proc.kill()  # a search that does not stop must not outlive its test
    time.sleep(0.2)
    while not lines.empty():
        seen.append(lines.get())
    assert proc.returncode != 0 and "KeyboardInterrupt" in "".join(seen), "".join(seen)[-3000:]
    assert stopped < 10, stopped
