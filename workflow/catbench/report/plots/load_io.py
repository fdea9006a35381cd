"""What a row cost each load (load_io tables): device KiB read and written, and the server's and
the client's CPU µs, per inserted row, as the Insert Benchmark draws them."""

from __future__ import annotations

from pathlib import Path

from .style import _empty, _name, _num, _save, colours

ORDER = 1.5   # beside the speed-ups: why they are what they are
TABLES = ('load_io',)   # draw()'s arguments, in order


def _label(r: dict) -> str:
    return f"{r['target']} {r['variant']}: {_name(r)}"


def draw(plt, io: list, path: Path) -> bool:
    """Horizontal bars per load: KiB read and written a row (log), whiskers over the repetitions'
    smallest to largest written; CPU µs a row, server and client."""
    rs = [r for r in io if _num(r.get("write_kb_per_row")) is not None or _num(r.get("server_cpu_us_per_row"))]
    if not rs:
        _empty(plt, path, "load I/O or CPU figures")
        return False
    rs = sorted(rs, key=lambda r: (r["target"], r["variant"], -(_num(r.get("write_kb_per_row")) or 0)))
    col = colours(["read", "written", "server", "client"])
    y = range(len(rs))
    fig, (a, b) = plt.subplots(1, 2, figsize=(11, 1.2 + 0.32 * len(rs)), sharey=True, layout="constrained")
    for i, r in enumerate(rs):
        rd, wr = _num(r.get("read_kb_per_row")), _num(r.get("write_kb_per_row"))
        if wr is not None:
            a.barh(i + 0.2, wr, 0.4, color=col["written"], label="written")
            lo, hi = _num(r.get("write_kb_per_row_min")), _num(r.get("write_kb_per_row_max"))
            if lo is not None and hi is not None and hi > lo:
                a.errorbar(wr, i + 0.2, xerr=[[wr - lo], [hi - wr]], color="black", capsize=2, lw=1)
        if rd is not None:
            a.barh(i - 0.2, max(rd, 1e-4), 0.4, color=col["read"], label="read")
        srv, cli = _num(r.get("server_cpu_us_per_row")), _num(r.get("client_cpu_us_per_row"))
        if srv is not None:
            b.barh(i + 0.2, srv, 0.4, color=col["server"], label="server CPU")
        if cli is not None:
            b.barh(i - 0.2, cli, 0.4, color=col["client"], label="client CPU")
        b.text(max(srv or 0, cli or 0) * 1.02, i, f" n={r['n']}", va="center", fontsize=7)
    a.set_xscale("log")
    a.set_yticks(list(y), [_label(r) for r in rs])
    a.invert_yaxis()
    a.set_xlabel("KiB a row on the target's device (log)")
    a.set_title("device bytes per inserted row")
    b.set_xlabel("CPU µs a row")
    b.set_title("CPU per inserted row")
    handles, labels = {}, {}
    for ax in (a, b):
        for h, lab in zip(*ax.get_legend_handles_labels()):
            handles.setdefault(lab, h)
    _save(plt, fig, path, list(handles.values()), list(handles))
    return True
