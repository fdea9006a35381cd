"""The 2017 study (seed 000) against catbench's prediction of it (`make seed-2017`), in three steps:

    choose PREDICTION.json OUT.json   the key orders its evidence allows, from each prediction's
                                      device reads, table and regime alone (no hours): sealed first
    compare PREDICTION.json CHOICE.json   then the hours, predicted ÷ measured on each disk
    plot PREDICTION.json SEED.csv OUT.png   the files loaded per 30 minutes on each of its three
                                      disks (the seed's tables, transcribed in the CSV) beside each
                                      prediction's, from its fitted rate curve; then the seed's input
                                      MB/s, each disk's over its median: the row rate's shape,
                                      whatever the files' sizes
    shape PREDICTION.json CHOICE.json TABLE.csv IOSTAT.csv   the chosen order's table growth (GiB/h)
                                      between the seed's `ls` stamps (the same share of the final
                                      table in the prediction), each over the first's, the
                                      server's CPU-s per GiB of table, and the device bytes written per
                                      byte of table, predicted beside measured: what the row count
                                      the seed does not give cannot move
    rungs RESULTS...                  each rung's rows/s, server CPU, redo, pages flushed, device bytes
                                      and checkpoint age a row, and a row's seconds against log2 of
                                      the rows in the table over every window (the depth's slope)
"""

import argparse
import csv
import json
from collections import defaultdict

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from catbench.predict.fitted import cache_share  # noqa: E402
from catbench.predict.ladder import page_cache_left  # noqa: E402
from catbench.predict.rate import RateCurve, cumulative_seconds, curve_of  # noqa: E402

HALF_HOUR = 1800.0
TABLE = 674 * 2**30          # `ls -alh`: 674G at the end of every run
HOURS = {"nvme": 17 + 59.05 / 60, "ssd": 20 + 38.45 / 60, "raid6": 23 + 7.30 / 60}   # h:mm.ss of the runs
TABLE_WITHIN = 0.15          # the table within 15 % of the seed's
NO_READS = 0.01              # device reads a row: iostat read 0.00 MB/s at every sample
CPU_BOUND = "server-CPU bound"
COLOURS = {"nvme": "#0072B2", "ssd": "#E69F00", "raid6": "#009E73"}


def _curve(p: dict, page_cache: float) -> RateCurve:
    """The prediction's fitted curve at the target: its page cache beside the pool (``page_cache``
    bytes, at fio's cost share) and its write floor, as `catbench predict` integrated it."""
    f = p["fit"]
    pool = p["pool_bytes"] - (f.get("pool_overhead_bytes") or 0.0)
    c = curve_of(f)
    return c.with_page_cache(pool / (pool + page_cache), cache_share(f.get("device") or {})) if page_cache else c


def predicted_files(p: dict, files: int, page_cache: float) -> tuple[np.ndarray, np.ndarray]:
    """(hours at each interval's end, files per 30 minutes) of one prediction: its rows at each
    half hour from the integral of its fitted seconds per row, over the rows per file."""
    rows = p["target_rows"]
    pool = p["pool_bytes"] - (p["fit"].get("pool_overhead_bytes") or 0.0)
    n, t = cumulative_seconds(_curve(p, page_cache), rows, p["bytes_per_row"], pool)
    t = t + (p.get("pre_s") or 0.0)
    ends = np.arange(HALF_HOUR, t[-1] + HALF_HOUR, HALF_HOUR)
    done = np.interp(ends, t, n, right=rows)
    return ends / 3600, np.diff(np.concatenate([[0.0], done])) / (rows / files)


def seed(path) -> dict:
    out = defaultdict(list)
    with open(path) as f:
        for r in csv.DictReader(f):
            out[r["disk"]].append((int(r["files"]), float(r["input_MBps"])))
    return out


def evidence(p: dict) -> dict:
    """What the seed can hold a prediction to besides its hours."""
    return {"order": p["key"]["id_layout"], "table_GiB": p["table_bytes"] / 2**30,
            "table_over_seed": p["table_bytes"] / TABLE, "device_reads_per_row": p["device_reads_per_row"],
            "pool_misses_per_row": p["pool_misses_per_row"], "server_cpu_us_per_row": p["server_cpu_us_per_row"],
            "regime": p["regime"]}


def choose(a) -> None:
    rows = [evidence(p) for p in json.loads(open(a.prediction).read())["predictions"] if not p.get("refused")]
    for r in rows:
        r["consistent"] = (abs(r["table_over_seed"] - 1) <= TABLE_WITHIN and r["device_reads_per_row"] < NO_READS
                           and r["regime"] == CPU_BOUND)
    print("| key order | table (GiB) | ÷ 674 GiB | pool misses a row | device reads a row | server CPU µs a row "
          "| regime | consistent |\n|---|---:|---:|---:|---:|---:|---|---|")
    for r in rows:
        print(f"| {r['order']} | {r['table_GiB']:,.0f} | {r['table_over_seed']:.2f} | {r['pool_misses_per_row']:.3f} "
              f"| {r['device_reads_per_row']:.3f} | {r['server_cpu_us_per_row']:.2f} | {r['regime']} "
              f"| {'yes' if r['consistent'] else 'no'} |")
    with open(a.out, "w") as f:
        json.dump({"criteria": {"table_within": TABLE_WITHIN, "device_reads_below": NO_READS, "regime": CPU_BOUND},
                   "orders": rows, "chosen": [r["order"] for r in rows if r["consistent"]]}, f, indent=1)


def compare(a) -> None:
    chosen = set(json.loads(open(a.choice).read())["chosen"])
    print("| key order | chosen | predicted (h) | interval (h) | ÷ NVMe 17.98 h | ÷ SSD 20.64 h | ÷ RAID6 23.12 h |\n"
          "|---|---|---:|---|---:|---:|---:|")
    for p in json.loads(open(a.prediction).read())["predictions"]:
        if p.get("refused"):
            print(f"| {p['key']['id_layout']} | | refused: {p['refused']} | | | | |")
            continue
        s, lo, hi = (p.get(k) for k in ("all_rows_seconds", "all_rows_seconds_ci_low", "all_rows_seconds_ci_high"))
        ratios = " | ".join(f"{s / 3600 / h:.2f}" for h in HOURS.values())
        print(f"| {p['key']['id_layout']} | {'yes' if p['key']['id_layout'] in chosen else 'no'} | {s / 3600:,.1f} "
              f"| {lo / 3600:,.1f} – {hi / 3600:,.1f} | {ratios} |")


def _page_cache(doc: dict, own: float) -> float:
    """The page cache beside the prediction's pool (InnoDB, the 2017 study's engine: no memtables)."""
    return page_cache_left(doc.get("ram_bytes") or 0, pool=doc.get("pool_bytes") or 0, memtable_bytes=0.0, own=own)


def plot(a) -> None:
    doc = json.loads(open(a.prediction).read())
    page_cache = _page_cache(doc, a.ram_own)
    chosen = set(json.loads(open(a.choice).read())["chosen"]) if a.choice else set()
    fig, (top, low) = plt.subplots(2, 1, figsize=(9, 7), sharex=True, height_ratios=(3, 2))
    for disk, vals in seed(a.seed_csv).items():
        h = (np.arange(len(vals)) + 1) * 0.5
        top.plot(h, [v[0] for v in vals], "-", color=COLOURS.get(disk), lw=2, label=f"2017, {disk}")
        mb = np.array([v[1] for v in vals])
        low.plot(h, mb / np.median(mb), "-", color=COLOURS.get(disk), lw=2, label=f"2017, {disk} (input MB/s)")
    styles = iter([":", "-.", (0, (5, 1)), (0, (1, 3))])
    for p in doc["predictions"]:
        if p.get("refused"):
            continue
        name = p["key"]["id_layout"]
        hours, per = predicted_files(p, a.files, page_cache)
        mine = name in chosen
        label = f"catbench, {name} ids: {hours[-1]:,.0f} h" + (" (chosen)" if mine else "")
        style = "--" if mine else next(styles, ":")
        top.plot(hours, per, linestyle=style, color="black", lw=2.2 if mine else 1.0, label=label)
        if mine:
            low.plot(hours, per / np.median(per), linestyle=style, color="black", lw=2.2, label=label)
    top.set_ylabel("files loaded per 30 min")
    top.set_title("The 2017 load (seed 000) and catbench's prediction of it\n"
                  "1.06 × 10^10 CHAR(28) rows, 128 GiB pool, 500 GiB RAM, one file at a time")
    top.legend(fontsize=8, ncol=2, loc="upper right")
    low.set_ylabel("row rate ÷ its median")
    low.set_xlabel("hours since the load began")
    low.axhline(1.0, color="grey", lw=0.5)
    low.legend(fontsize=8, ncol=2, loc="lower left")
    low.set_xlim(0, a.hours)
    for ax in (top, low):
        ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(a.out, dpi=110)


def _seed_intervals(path) -> list[dict]:
    """The seed's intervals between its `ls` stamps, per disk: table GiB from and to, GiB/h and
    the server's CPU-s per GiB of table."""
    rows = defaultdict(list)
    with open(path) as f:
        for r in csv.DictReader(f):
            rows[r["disk"]].append(r)
    out = []
    for disk, rs in rows.items():
        for a, b in zip(rs, rs[1:]):
            dt, dg = float(b["hours"]) - float(a["hours"]), float(b["table_GiB"]) - float(a["table_GiB"])
            cpu = (float(b["mysqld_cpu_min"]) - float(a["mysqld_cpu_min"])) * 60 if b["mysqld_cpu_min"] else None
            out.append({"disk": disk, "from": float(a["table_GiB"]), "to": float(b["table_GiB"]), "GiB_h": dg / dt,
                        "cpu_s_per_GiB": cpu / dg if cpu is not None else None})
    return out


def _predicted_hours(p: dict, page_cache: float, share: float) -> float:
    """Hours from the load's start until the predicted load has ``share`` of its rows in (the
    seed's table at a stamp over its final 674 GiB: the same point of the load, whatever the
    two tables' bytes a row)."""
    pool = p["pool_bytes"] - (p["fit"].get("pool_overhead_bytes") or 0.0)
    n, t = cumulative_seconds(_curve(p, page_cache), p["target_rows"], p["bytes_per_row"], pool)
    return (float(np.interp(share * p["target_rows"], n, t)) + (p.get("pre_s") or 0.0)) / 3600


def shape(a) -> None:
    doc = json.loads(open(a.prediction).read())
    chosen = set(json.loads(open(a.choice).read())["chosen"])
    page_cache = _page_cache(doc, a.ram_own)
    seed_iv = _seed_intervals(a.table_csv)
    with open(a.iostat_csv) as f:
        io = [r for r in csv.DictReader(f)]
    for p in doc["predictions"]:
        if p.get("refused") or p["key"]["id_layout"] not in chosen:
            continue
        cpu_row = (p.get("server_cpu_us_per_row") or 0) * 1e-6
        depth = p["fit"].get("depth_s_per_row_per_doubling") or 0.0
        print(f"{p['key']['id_layout']}: depth {depth * 1e6:.3f} µs a row per doubling, write floor "
              f"{(p['fit'].get('write_floor_s_per_row') or 0) * 1e6:.2f} µs a row")
        print("| disk | table GiB | seed GiB/h | ÷ its first | predicted GiB/h | ÷ its first | seed CPU-s per GiB "
              "| predicted CPU-s per GiB |\n|---|---|---:|---:|---:|---:|---:|---:|")
        first = {}
        final = TABLE / 2**30
        for iv in seed_iv:
            share = (iv["to"] - iv["from"]) / final
            h = (_predicted_hours(p, page_cache, iv["to"] / final)
                 - _predicted_hours(p, page_cache, iv["from"] / final))
            pred = share * p["table_bytes"] / 2**30 / h
            per_row = h * 3600 / (share * p["target_rows"])
            cpu = cpu_row * per_row / p["fit"]["a_s_per_row"] * 2**30 / p["bytes_per_row"]
            f0 = first.setdefault(iv["disk"], (iv["GiB_h"], pred))
            seed_cpu = f"{iv['cpu_s_per_GiB']:.0f}" if iv["cpu_s_per_GiB"] else "–"
            print(f"| {iv['disk']} | {iv['from']:.0f}–{iv['to']:.0f} | {iv['GiB_h']:.1f} | {iv['GiB_h'] / f0[0]:.2f} "
                  f"| {pred:.1f} | {pred / f0[1]:.2f} | {seed_cpu} | {cpu:.0f} |")
        w = p.get("writes") or {}
        per_byte = (w.get("device_write_bytes_per_row") or 0) / p["bytes_per_row"]
        print(f"\npredicted: {w.get('device_write_bytes_per_row') or 0:.0f} B written a row "
              f"({w.get('redo_bytes_per_row') or 0:.0f} B redo, {w.get('pages_flushed_per_row') or 0:.4f} pages flushed), "
              f"{per_byte:.2f} bytes written per byte of table, {w.get('device_write_MBps') or 0:.0f} MB/s at its rate")
        print("| disk | iostat samples | write MB/s median (min–max) | table MB/s (its interval) | bytes written per byte "
              "of table |\n|---|---:|---|---:|---:|")
        for disk in sorted({r["disk"] for r in io}):
            mb = np.array([float(r["write_MBps"]) for r in io if r["disk"] == disk])
            grow = np.median([iv["GiB_h"] for iv in seed_iv if iv["disk"] == disk]) * 2**30 / 1e6 / 3600
            print(f"| {disk} | {len(mb)} | {np.median(mb):.0f} ({mb.min():.0f}–{mb.max():.0f}) | {grow:.1f} "
                  f"| {np.median(mb) / grow:.2f} |")


def rungs(a) -> None:
    from catbench.predict.runs import read_runs
    for key, reps in read_runs(a.results).items():
        x = np.log2(np.concatenate([r.n_mid for r in reps]))
        y = 1 / np.concatenate([r.rate for r in reps])
        w = np.concatenate([r.weight for r in reps])
        w = w / w.mean()
        A = np.column_stack([np.ones_like(x), x - x.min()])
        coef = np.linalg.lstsq(A * np.sqrt(w)[:, None], y * np.sqrt(w), rcond=None)[0]
        res = y - A @ coef
        se = np.sqrt(np.linalg.inv((A * w[:, None]).T @ A)[1, 1] * np.sum(w * res * res) / (len(y) - 2))
        print(f"{key[-1]}: {len(y)} windows, log2 rows {x.min():.1f}-{x.max():.1f}: {coef[0] * 1e6:.3f} µs a row "
              f"{coef[1] * 1e6:+.3f} ± {se * 1e6:.3f} µs (1 s.e.) per doubling")
        for n in sorted({r.rung_rows for r in reps}):
            same = [r for r in reps if r.rung_rows == n]
            per = {k: [float(np.average(r.writes[k], weights=r.weight)) for r in same]
                   for k in ("redo_bytes", "pages_flushed", "device_write_bytes")}
            print(f"  {n:,} rows: rows/s {[round(r.rows / r.seconds) for r in same]}, server CPU µs a row "
                  f"{[round(r.server_cpu_s / r.rows * 1e6, 2) for r in same]}, redo B {[round(v, 1) for v in per['redo_bytes']]}"
                  f", pages flushed {[round(v, 4) for v in per['pages_flushed']]}, device B "
                  f"{[round(v) for v in per['device_write_bytes']]}, checkpoint age MiB "
                  f"{[round(float(np.max(r.writes['checkpoint_age_bytes'])) / 2**20, 2) for r in same]} of "
                  f"{same[0].log_bytes / 2**20:.0f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(required=True)
    c = sub.add_parser("choose")
    c.add_argument("prediction")
    c.add_argument("out")
    c.set_defaults(func=choose)
    c = sub.add_parser("compare")
    c.add_argument("prediction")
    c.add_argument("choice")
    c.set_defaults(func=compare)
    c = sub.add_parser("plot")
    c.add_argument("prediction")
    c.add_argument("seed_csv")
    c.add_argument("out")
    c.add_argument("--files", type=int, default=106000, help="the target's input files")
    c.add_argument("--choice", help="the sealed choice: its orders drawn bold, and their row rate below")
    c.add_argument("--ram-own", type=float, default=128 * 2**20, help="predict.ram_own of the config, bytes")
    c.add_argument("--hours", type=float, default=26, help="the hours shown")
    c.set_defaults(func=plot)
    c = sub.add_parser("rungs")
    c.add_argument("results", nargs="+")
    c.set_defaults(func=rungs)
    c = sub.add_parser("shape")
    c.add_argument("prediction")
    c.add_argument("choice")
    c.add_argument("table_csv")
    c.add_argument("iostat_csv")
    c.add_argument("--ram-own", type=float, default=128 * 2**20, help="predict.ram_own of the config, bytes")
    c.set_defaults(func=shape)
    a = ap.parse_args()
    a.func(a)


if __name__ == "__main__":
    main()
