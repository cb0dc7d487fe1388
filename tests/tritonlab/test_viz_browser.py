"""The HTML report in a real browser: headless Chromium (Debian's `chromium`) driven by
Playwright. Loads the report from file://, selects a program and checks that the cells the page
highlights are the ones the simulator recorded for that program; saves a screenshot (an
artifact: build/artifacts/viz_report.png). Skips where no browser or no Playwright is
installed (`.ci/run` installs chromium; playwright is a test extra)."""
import shutil
import sys
from pathlib import Path

import numpy as np
import pytest

import minitriton
from minitriton import viz

sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed "
                               "(pip install playwright; it is in tritonlab's test extra)")
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="no chromium on this machine "
                                "(apt-get install chromium; .ci/run does)")
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--no-first-run"]
ARTIFACTS = Path(__file__).resolve().parents[2] / "build" / "artifacts"

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "minitriton"))
from test_trace import add_kernel, matmul_kernel  # noqa: E402


@pytest.fixture(scope="module")
def browser():
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        yield b
        b.close()


def _matmul_report(tmp_path):
    rng = np.random.default_rng(0)
    a = rng.standard_normal((32, 48)).astype(np.float32)
    b = rng.standard_normal((48, 32)).astype(np.float32)
    c = np.zeros((32, 32), np.float32)
    with minitriton.trace() as t:
        matmul_kernel[(2, 2)](a, b, c, 32, 32, 48, BLOCK_M=16, BLOCK_N=16, BLOCK_K=16)
    return t.last, viz.html_report(t.last, tmp_path / "matmul.html")


def test_selecting_a_program_highlights_what_it_touched(browser, tmp_path):
    trace, path = _matmul_report(tmp_path)
    page = browser.new_page()
    page.goto(path.as_uri())
    assert page.locator(".cell").count() == 32 * 48 + 48 * 32 + 32 * 32  # A, B, C
    assert page.locator(".cell.hl").count() == 0  # "all programs": nothing highlighted
    for pid in [(0, 0), (1, 0), (1, 1)]:
        p = trace.linear(pid)
        page.select_option("#program", str(p))
        assert page.locator(".cell.hl").count() == len(trace.program(p).cells())
    # the slider walks the steps: at step 0 only the first A tile (16 x 16) is highlighted
    page.locator("#step").fill("0")
    assert page.locator(".cell.hl").count() == 16 * 16
    assert page.locator(".src.current").inner_text().split(None, 1)[1].startswith(
        "acc += tl.dot(tl.load(a_ptrs)")
    assert "step 0 of 6" in page.inner_text("#stepinfo")
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "viz_report.png"), full_page=True)
    page.screenshot(path=str(tmp_path / "viz_report.png"))
    assert (tmp_path / "viz_report.png").stat().st_size > 10_000


def test_hover_shows_index_value_and_programs(browser, tmp_path):
    x = np.arange(10, dtype=np.float32)
    out = np.zeros(10, np.float32)
    with minitriton.trace() as t:
        add_kernel[(3,)](x, x, out, 10, BLOCK_SIZE=4)
    path = viz.html_report(t.last, tmp_path / "add.html")
    page = browser.new_page()
    page.goto(path.as_uri())
    page.locator('.cell[data-arg="2"][data-i="9"]').hover()
    tip = page.inner_text("#tip")
    assert "out_ptr[9] (element 9) = 18" in tip and "written by 2" in tip
    page.select_option("#program", "2")
    assert page.locator(".cell.hl").count() == 6  # elements 8 and 9 of x, y and out
