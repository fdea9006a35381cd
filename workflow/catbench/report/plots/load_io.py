"""What a row cost each load (load_io, load_curve tables): device KiB read and written, and the
server's and the client's CPU µs, per inserted row, as the Insert Benchmark draws them; and under
them the 2017 study's iostat view of the one-file-at-a-time protocol: the device's MB/s and
requests/s as the table outgrows the pool, beside its load rate."""

from __future__ import annotations

from pathlib import Path

from ..findings import ONE_FILE_AT_A_TIME
from .style import _empty, _legend_from, _median_repetition, _name, _num, _order, _save, _si, colours

ORDER = 1.5   # beside the speed-ups: why they are what they are
TABLES = ('load_io', 'load_curve')   # draw()'s arguments, in order
# the iostat view's panels: (column of a read, of a write, axis label, title)
OVER_LOAD = (("rows_per_s", None, "rows/s (log)", "load rate"),
             ("read_MBps", "write_MBps", "MB/s on the device", "device throughput"),
             ("read_iops", "write_iops", "requests/s on the device", "device requests"))


def _label(r: dict) -> str:
    return f"{r['target']} {r['variant']}: {_name(r)}"


def _bars(rs: list, a, b, col: dict) -> None:
    """Per load: KiB read and written a row (log; whiskers over the repetitions' smallest to
    largest written), and CPU µs a row of the server and the client."""
    for i, r in enumerate(rs):
        rd, wr = _num(r.get("read_kb_per_row")), _num(r.get("write_kb_per_row"))
        if wr is not None:
            a.barh(i + 0.2, wr, 0.4, color=col["written"], label="written a row")
            lo, hi = _num(r.get("write_kb_per_row_min")), _num(r.get("write_kb_per_row_max"))
            if lo is not None and hi is not None and hi > lo:
                a.errorbar(wr, i + 0.2, xerr=[[wr - lo], [hi - wr]], color="black", capsize=2, lw=1)
        if rd is not None:
            a.barh(i - 0.2, max(rd, 1e-4), 0.4, color=col["read"], label="read a row")
        srv, cli = _num(r.get("server_cpu_us_per_row")), _num(r.get("client_cpu_us_per_row"))
        if srv is not None:
            b.barh(i + 0.2, srv, 0.4, color=col["server"], label="server CPU")
        if cli is not None:
            b.barh(i - 0.2, cli, 0.4, color=col["client"], label="client CPU")
        b.text(max(srv or 0, cli or 0) * 1.02, i, f" n={r['n']}", va="center", fontsize=7)
    a.set_xscale("log")
    a.set_yticks(range(len(rs)), [_label(r) for r in rs])
    a.invert_yaxis()
    a.set_xlabel("KiB a row on the target's device (log)")
    a.set_title("device bytes per inserted row")
    b.set_xlabel("CPU µs a row")
    b.set_title("CPU per inserted row")


def _over_load(curve: list, axes) -> bool:
    """The one-file-at-a-time protocol on InnoDB, one colour per target (its median repetition):
    per window of files, the rate and the device's reads (dotted) and writes (solid)."""
    pts = [r for r in curve if r["strategy"] == ONE_FILE_AT_A_TIME and r["engine"] == "innodb"
           and _num(r.get("table_over_pool")) is not None and _num(r.get("rows_per_s"))]
    on_disk = {(r["target"], r["variant"]) for r in pts if _num(r.get("write_MBps")) is not None}
    col = colours(r["target"] for r in pts)
    for tg, var in _order(k for k in ((r["target"], r["variant"]) for r in pts) if k in on_disk):
        line = _median_repetition([r for r in pts if (r["target"], r["variant"]) == (tg, var)])
        xs = [p["table_over_pool"] for p in line]
        for ax, (rd, wr, _, _) in zip(axes, OVER_LOAD):
            ax.plot(xs, [p[rd] for p in line], ":" if wr else "-", color=col[tg], lw=2,
                    label=f"{tg} {var}: " + ("read" if wr else "rows/s"))
            if wr:
                ax.plot(xs, [p[wr] for p in line], "-", color=col[tg], lw=2, label=f"{tg} {var}: written")
    for ax, (_, _, unit, title) in zip(axes, OVER_LOAD):
        ax.axvline(1.0, color="grey", ls=":", lw=1.5)
        ax.set_xlim(left=0)
        ax.set_xlabel("table size / buffer pool (x)")
        ax.set_ylabel(unit)
        ax.set_title(f"{ONE_FILE_AT_A_TIME}: {title}", fontsize=10)
        ax.yaxis.set_major_formatter(_si)
    axes[0].set_yscale("log")
    return bool(on_disk)


def draw(plt, io: list, curve: list, path: Path) -> bool:
    """Top: horizontal bars per load (KiB a row, CPU µs a row). Bottom, where a disk target ran
    the one-file-at-a-time protocol: its rate, device MB/s and requests/s per window of files."""
    rs = [r for r in io if _num(r.get("write_kb_per_row")) is not None or _num(r.get("server_cpu_us_per_row"))]
    if not rs:
        _empty(plt, path, "load I/O or CPU figures")
        return False
    rs = sorted(rs, key=lambda r: (r["target"], r["variant"], -(_num(r.get("write_kb_per_row")) or 0)))
    fig = plt.figure(figsize=(11, 4.6 + 0.32 * len(rs)), layout="constrained")
    top, bottom = fig.subfigures(2, 1, height_ratios=[1.2 + 0.32 * len(rs), 3.4])
    a, b = top.subplots(1, 2, sharey=True)
    _bars(rs, a, b, colours(["read", "written", "server", "client"]))
    low = bottom.subplots(1, 3)
    if not _over_load(curve, low):
        for ax in low:
            ax.axis("off")
        low[1].text(0.5, 0.5, f"no device figures over a `{ONE_FILE_AT_A_TIME}` load on a disk in this run",
                    ha="center", va="center", transform=low[1].transAxes)
    handles, labels = _legend_from([a, b, *low])
    _save(plt, fig, path, handles, labels)
    return True
