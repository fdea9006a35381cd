"""The report as a person sees it: opened in a real headless browser (Debian's chromium,
installed by workflow/scripts/install-system.sh), every image decodes, nothing overflows at
1280 px, the user's catalog comes first, then the answer at its scale (with its plot on the first screen), then
the findings; report/screenshot.png is saved for a look."""

import pytest
from catbench.report.html import PLOTS, make_report
from catbench.report.tables import make_tables
from support.browser import WIDTH, check_page, chromium
from support.predict import add_queries, queries_section, write_prediction
from support.runs import FAST, OVERLAPS_FAST, SLOW, make_run, write_repeated_load
from support.runs import REPORT

pytestmark = pytest.mark.skipif(chromium() is None, reason="chromium not installed (apt-get install chromium)")


@pytest.mark.slow
def test_report_in_a_real_browser(tmp_path):
    run = make_run(tmp_path)                    # every stage, single runs
    for tg, strategy, secs in (("a", "sorted", FAST), ("a", "bulk", OVERLAPS_FAST),
                               ("b", "sorted", SLOW)):
        write_repeated_load(run, tg, strategy, secs)  # and some repeated loads
    add_queries(write_prediction(run), queries_section())    # its prediction from a ladder, queries too
    make_tables(run, report=REPORT)
    index = make_report(run, report=REPORT)
    shot = index.parent / "screenshot.png"
    r = check_page(index, shot)
    assert r["images"] == len(PLOTS) and r["broken"] == []
    assert r["scrollWidth"] <= r["clientWidth"] <= WIDTH, r["wide"]
    # the user's catalog opens the page, the answer at its scale next, its plot on the first screen
    assert 0 <= r["catalogTop"] < 300 and r["catalogTop"] < r["answerTop"] < r["findingsTop"], r
    assert 0 < r["answerPlotBottom"] < 1300, r     # below the catalog's paragraph
    page = index.read_text()
    assert page.index('id="answer"') < page.index('data-name="at_scale"') < page.index('id="findings"')
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 10_000


@pytest.mark.slow
def test_a_report_without_a_prediction_says_how_to_get_one(tmp_path):
    run = make_run(tmp_path, with_optional=False)
    index = make_report(run, report=REPORT)
    r = check_page(index)
    assert r["broken"] == [] and r["answerPlotBottom"] == -1
    assert 0 <= r["catalogTop"] < r["answerTop"] < r["findingsTop"] < 900, r   # the catalog, a sentence, the findings
    page = index.read_text()
    assert "No prediction" in page and "make ladder" in page and "predict.target_rows" in page   # how to get one
