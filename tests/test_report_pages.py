"""The report's pages as a reader meets them (docs/report.md): the answer first, one figure per claim (the one
that answers it, with a sentence for a caption, enlarging on click), every other figure on the experiment's own
page, the experiments in the docs' order, and nothing linked outside report/."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from helpers import tiny_results
from pipeline.outputs import report
from pipeline.dvc_stage import EXPERIMENTS

# two experiments of the main job, by name, over the same tiny sweep: the report must order them as the docs do
FIRST, SECOND = EXPERIMENTS[0], EXPERIMENTS[1]
SPEC = ("name: {name}\nquestion: Does it hold?\n"
        "claims:\n  - {{bound: hinge_all_rounds, guarantee: D, claim: mistakes <= the hinge bound}}\n"
        "compare: {{quantity: mistakes, by: seed}}\n")


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    ws = tmp_path_factory.mktemp("report_pages")
    (ws / "experiments").mkdir()
    tiny_results(ws / "results" / SECOND, SECOND, figures=True)
    shutil.copytree(ws / "results" / SECOND, ws / "results" / FIRST)
    for name in (FIRST, SECOND):
        (ws / "experiments" / f"{name}.yaml").write_text(SPEC.format(name=name))
    report.build(None, ws / "results", ws / "experiments", ws / "report", track=False)
    return ws


def _links(page: str) -> list[str]:
    return re.findall(r"(?:src|href)='([^']*)'", page)


def _first_view_images(page: str) -> list[str]:
    """The images a browser loads with the page: not the enlarged ones, which load only on a click."""
    return re.findall(r"title='enlarge'><img alt='[^']*' src='([^']*)'", page)


def test_the_first_view_shows_one_figure_per_claim_and_the_comparison(built: Path) -> None:
    page = (built / "report" / "index.html").read_text()
    sweep = sorted(p.stem for p in (built / "results" / FIRST).glob("*.png"))
    assert {"hinge_all_rounds_measured_vs_bound", "novikoff_measured_vs_bound"} <= set(sweep)  # unclaimed ones exist
    shown = [Path(src).stem for src in _first_view_images(page)]
    # per experiment: its claim's figure and its comparison, nothing of the bounds it does not claim
    assert shown == ["hinge_all_rounds_measured_vs_bound", f"{FIRST}_mistakes_by_seed",
                     "hinge_all_rounds_measured_vs_bound", f"{SECOND}_mistakes_by_seed"]
    assert page.index(f"id='{FIRST}'") < page.index(f"id='{SECOND}'")  # the docs' order, not the alphabet's
    assert f"<a href='experiments/{FIRST}.html'>All {len(sweep) + 1} figures of {FIRST}</a>" in page


def test_every_figure_is_on_its_experiments_page_with_a_caption(built: Path) -> None:
    page = (built / "report" / "experiments" / f"{FIRST}.html").read_text()
    sweep = sorted(p.stem for p in (built / "results" / FIRST).glob("*.png"))
    shown = sorted(Path(src).stem for src in _first_view_images(page))
    assert shown == sorted([*sweep, f"{FIRST}_mistakes_by_seed"])
    # the claimed bound first, the others after, said to be unclaimed
    assert page.index("hinge_all_rounds (claimed)") < page.index("novikoff (measured, not claimed)")
    captions = re.findall(r"<figcaption>(.*?) <a href=", page)
    assert len(captions) == len(shown) and not any(c.strip() in shown for c in captions)  # sentences, not file names
    assert any("a point above the diagonal y = x would be a violation" in c for c in captions)
    assert "href='../index.html#" in page


def test_figures_enlarge_on_click(built: Path) -> None:
    page = (built / "report" / "index.html").read_text()
    targets = re.findall(r"<a href='#([^']+)' title='enlarge'>", page)
    assert targets
    for target in targets:
        box = re.search(rf"<a class='lightbox' id='{re.escape(target)}' href='#_' title='close'><img [^>]*src='([^']+)' "
                        r"loading='lazy'>", page)
        assert box, target
        assert box.group(1).endswith(".png")  # the figure at its full 150 dpi (the vector one is the sweep's)


def test_the_report_links_only_to_its_own_files(built: Path) -> None:
    root = (built / "report").resolve()
    pages = [root / "index.html", *sorted((root / "experiments").glob("*.html"))]
    assert len(pages) == 3
    for page in pages:
        for link in _links(page.read_text()):
            if link.startswith("#"):
                continue
            assert not re.match(r"[a-z]+:", link) and not link.startswith("/"), (page.name, link)
            target = (page.parent / link.split("#")[0]).resolve()
            assert target.is_relative_to(root) and target.exists(), (page.name, link)
    summary = (root / "summary.md").read_text()
    for link in re.findall(r"\]\(([^)]+)\)", summary):
        assert (root / link).resolve().is_relative_to(root) and (root / link).exists(), link


def test_a_report_without_an_experiment_drops_its_page_and_figures(built: Path, tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    shutil.copytree(built, ws)
    (ws / "experiments" / f"{SECOND}.yaml").unlink()
    report.build(None, ws / "results", ws / "experiments", ws / "report", track=False)
    assert not (ws / "report" / "experiments" / f"{SECOND}.html").exists()
    assert not (ws / "report" / "figures" / SECOND).exists()
    assert not (ws / "report" / "figures" / f"{SECOND}_mistakes_by_seed.png").exists()
    assert (ws / "report" / "figures" / FIRST / "hinge_all_rounds_measured_vs_bound.png").exists()


def test_a_figure_of_many_panels_spans_the_page(tmp_path) -> None:  # noqa: ANN001
    """A PNG wider than the page's columns (several panels, 12 in or more at 150 dpi) is shown across the page,
    where its labels are read at their size; a one-panel figure stays in the grid."""
    import matplotlib.pyplot as plt
    import numpy as np

    from pipeline.outputs import report

    for name, width in (("wide", 2400), ("narrow", 900)):
        plt.imsave(tmp_path / f"{name}.png", np.zeros((300, width)))
    html_wide = report._figure(tmp_path / "wide.png", "w", lambda p: p.name)
    html_narrow = report._figure(tmp_path / "narrow.png", "n", lambda p: p.name)
    assert html_wide.startswith("<figure class='wide'>") and html_narrow.startswith("<figure>")
    assert ".figs figure.wide { grid-column: 1 / -1; }" in report.CSS


def test_the_report_publishes_palette_pngs_and_no_svg(built: Path) -> None:
    """The report's figures are its own PNGs as palette images (a third of the bytes of the sweep's; the main
    job's report: 6 MB, 27 MB with every PNG and SVG as drawn); the SVGs stay with the sweeps (results/NAME/)."""
    from PIL import Image

    figures = built / "report" / "figures"
    pngs = sorted(figures.rglob("*.png"))
    assert pngs and not list(figures.rglob("*.svg"))
    for png in pngs:
        with Image.open(png) as image:
            assert image.mode == "P", png
    sweep = next((built / "results" / FIRST).glob("*_measured_vs_bound.png"))
    assert (figures / FIRST / sweep.name).stat().st_size < sweep.stat().st_size
    assert sweep.with_suffix(".svg").exists()
