"""What the findings' sentences share: the yardstick's name, the prediction band, and the
helpers that read a final table's row into a figure or a label."""

from __future__ import annotations

from ..stats import Figure, verdict

from ..wording import fmt, interval_text, p_text, versus

# the 2017 storage study's protocol, every other strategy's yardstick
ONE_FILE_AT_A_TIME = "one-file-at-a-time"
# predicted ÷ measured within this band: the scale model held on this machine (predict/)


def _order(values) -> list:
    return list(dict.fromkeys(values))


def _mb(b) -> str:
    return "–" if b is None else fmt(b / 1e6, "MB")


def _secs(r: dict) -> Figure:
    return Figure.from_row(r, "seconds")


def _label(r: dict) -> str:
    """A load's name in a sentence: its strategy, and its engine when not InnoDB (the 2017 study's)."""
    return f"`{r['strategy']}`" + ("" if r['engine'] == "innodb" else f" on {r['engine']}")


def _is_one_file_at_a_time(r: dict) -> bool:
    return r["strategy"] == ONE_FILE_AT_A_TIME and r["engine"] == "innodb"


def _stopped(r: dict) -> bool:
    """A load stopped at load.time_limit_s: its seconds are the limit, not a finish."""
    return bool(r.get("stopped"))   # typed by the table's schema, as in summary.py


def _rate(r: dict) -> Figure:
    """rows/s of each repetition (the same rows over each one's seconds)."""
    return _secs(r).scaled(r["rows"]) if r.get("rows") else Figure.from_row(r, "rows_per_s")


def _stopped_text(r: dict, total: int | None) -> str:
    """'was stopped at its 600 s limit after 68.7 M of 101 M rows (68%), 114,239 rows/s until then'."""
    part = f" of {fmt(total / 1e6, 'M')} rows ({fmt(100 * r['rows'] / total, '%')})" if total else " rows"
    return (f"was stopped at its {fmt(r.get('time_limit_s'), 's')} time limit after {fmt(r['rows'] / 1e6, 'M')}"
            f"{part}, {interval_text(_rate(r), 'rows/s')} until then")


def _input_rows(loads: list, tg: str, var: str) -> int | None:
    """The input's rows: what a finished load of the same target and variant loaded."""
    return max((r["rows"] for r in loads if (r["target"], r["variant"]) == (tg, var) and r.get("rows")
                and not _stopped(r)), default=None)


# ---------------------------------------------------------------- loading
def _speedup_text(best: dict, seq: dict, thr: dict) -> str:
    """The speed-up clause: the ratio with its own interval when the rule calls it real."""
    v = verdict(_secs(best), _secs(seq), **thr)
    name = f"the `{ONE_FILE_AT_A_TIME}` protocol"
    if v.kind != "better":
        return versus(name, v, unit="s")
    ci = f" [{fmt(v.lo)}–{fmt(v.hi)}]" if v.lo is not None and v.hi is not None else ""
    return f"**{fmt(v.ratio, 'x')}**{ci} faster than {name} ({p_text(v)}), {interval_text(_secs(seq), 's')}"


def _server_bound(r: dict) -> str:
    """Whether the server's own CPU bounds the load: then a faster disk or client cannot
    speed it up on this host, only more (or faster) cores for the server."""
    bound, us = r.get("server_bound_rows_per_s"), r.get("server_cpu_us_per_row")
    if not bound or not us or not r.get("rows_per_s"):
        return ""
    share = r["rows_per_s"] / bound
    what = "bound by the server's CPU" if share >= 0.5 else "not bound by the server's CPU"
    return (f" Its server spent {fmt(us, 'µs')} of CPU a row, which alone allows {fmt(bound, 'rows/s')} on "
            f"this host's cores: at {fmt(100 * share, '%')} of that, the load is {what}.")


def _runner_up(rs: list, v) -> str:
    if v is None:
        return ""
    if v.kind == "better":
        return f" Next: {_label(rs[1])}, {interval_text(v.b, 's')}, {fmt(v.ratio, 'x')} slower."
    return f" It is {versus(_label(rs[1]), v, unit='s')}."


def lead(name: str, v, bold: bool = False, only: str = "the only one measured") -> str:
    """'X is fastest' only when the rule says X beats the runner-up (verdict ``v``); 'X has
    the lowest median' otherwise, and 'X (the only one measured)' without a runner-up."""
    if v is None:
        return f"{name} ({only})"
    if v.kind == "better":
        return f"**{name} is fastest**" if bold else f"{name} is fastest"
    return f"{name} has the lowest median"


