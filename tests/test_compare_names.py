"""`catbench compare` keeps names as names: a target called `t` is not the boolean true, and
is not joined with a target called `true` in the other run."""

from __future__ import annotations

from catbench.report.compare import compare
from support.runs import REPORT


def _run(root, target):
    d = root / "tables"
    d.mkdir(parents=True)
    (d / "storage.csv").write_text("target,test,n,MBps,MBps_min,MBps_max,MBps_ci_low,MBps_ci_high\n"
                                   f"{target},seq-read,3,100,99,101,98,102\n")
    return root


def test_a_target_named_t_is_not_joined_with_one_named_true(tmp_path):
    a, b = _run(tmp_path / "a", "t"), _run(tmp_path / "b", "true")
    rows = compare(a, b, REPORT)
    keys = {r["key"]: r["note"] for r in rows if r["table"] == "storage"}
    assert keys == {"target=t, test=seq-read": "only in A", "target=true, test=seq-read": "only in B"}


def test_the_same_name_in_both_runs_is_compared(tmp_path):
    a, b = _run(tmp_path / "a", "1"), _run(tmp_path / "b", "1")
    rows = [r for r in compare(a, b, REPORT) if r["table"] == "storage" and r["column"] == "MBps"]
    assert [r["key"] for r in rows] == ["target=1, test=seq-read"]
