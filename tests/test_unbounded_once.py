"""A figure its repetitions cannot bound is shown as what it is ("1.30 s, n = 2"); the reason and
the repetitions that would bound it are said once a section, not in every sentence."""

from __future__ import annotations

from catbench.core.infra.jobs.repeat import unbounded
from catbench.report.stats import Figure
from catbench.report.wording import interval_text, note_cell, unbounded_once


def _fig(values):
    return Figure.of(values)


def test_each_note_is_cut_to_its_n_and_the_cure_said_once_a_section():
    steady, wild = [1.30, 1.32], [1.0, 9.0]
    a, b = interval_text(_fig(steady), "s"), interval_text(_fig(wild), "s")
    assert unbounded(steady) in a and unbounded(wild) in b      # a figure alone still carries its note
    blocks = [("h2", "Loads"), ("p", f"disk: {a}; nvme: {b}"), ("ul", [f"one {a}"]),
              ("table", "cap", ["q", "s"], [["x", a], ["y", 1.0]]),
              ("h2", "Queries"), ("p", "nothing unbounded here, 2.0 s [1.9–2.1, n=5]")]
    out = unbounded_once(blocks)
    text = "\n".join(str(b) for b in out)
    assert "cannot bound this" not in text.replace("cannot bound one", "")
    assert out[1] == ("p", f"disk: {a.split(' (')[0]}, n = 2; nvme: {b.split(' (')[0]}, n = 2")
    cures = [b for b in out if b[0] == "p" and "have no interval" in b[1]]
    assert len(cures) == 1 and out.index(cures[0]) == 4            # once, closing the first section
    assert "(4 in this section)" in cures[0][1] and "n = 5 to " in cures[0][1]
    assert out[5:] == blocks[4:]                                   # a section with none is untouched


def test_a_note_cell_keeps_the_span_and_the_cure_and_leaves_other_cells_alone():
    assert note_cell("n = 2 cannot bound this (its interval spans 172x); n = 5 would give ±43 %") == \
        "spans 172x; n = 5 would give ±43 %"
    assert note_cell("n = 3 cannot bound this; no n up to 30 would at this spread") == "no n up to 30 would at this spread"
    assert note_cell("n = 2 cannot bound this") == "unbounded"
    assert note_cell(None) is None and note_cell("") == "" and note_cell(1.5) == 1.5
