"""The report's PNG plots (matplotlib, Agg), each answering one question, all from the final
tables: one function per plot, each always writes its file (a figure saying "no ... in this
run" when a stage is absent) and says whether it had data.

Conventions: the Okabe-Ito colour-blind-safe palette, one colour per target (the same in
every plot), legends outside the axes (below them), units on every axis, intervals as
whiskers (the report.confidence interval of the typical value, or of the speed-up ratio).
"""

from __future__ import annotations

from pathlib import Path

from .findings import ONE_FILE_AT_A_TIME, PREDICTION_BAND

PLOTS = ("collapse", "speedup", "restart_timeline", "query_latency", "fio", "cluster_restart", "chunk_sky",
         "prediction")
# Okabe & Ito (2008): distinguishable with every common colour-vision deficiency.
PALETTE = ("#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#F0E442", "#000000")
DPI = 100


def _plt():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    plt.rcParams.update({"font.size": 10, "axes.titlesize": 11, "axes.grid": True, "grid.alpha": 0.3,
                         "axes.spines.top": False, "axes.spines.right": False})
    return plt


def _order(values) -> list:
    return list(dict.fromkeys(values))


def colours(names) -> dict:
    """A fixed colour per name (targets first-seen order), cycling the palette."""
    return {n: PALETTE[i % len(PALETTE)] for i, n in enumerate(sorted(_order(names)))}


def _empty(plt, path: Path, what: str) -> None:
    fig, ax = plt.subplots(figsize=(6, 1.5))
    ax.axis("off")
    ax.text(0.5, 0.5, f"No {what} in this run", ha="center", va="center", fontsize=12)
    fig.savefig(path, dpi=DPI)
    plt.close(fig)


def _save(plt, fig, path: Path, handles=None, labels=None, ncol=None) -> None:
    if handles:
        fig.legend(handles, labels, loc="outside lower center", ncol=ncol or min(len(labels), 4),
                   frameon=False)
    fig.savefig(path, dpi=DPI)
    plt.close(fig)


def _legend_from(axes) -> tuple[list, list]:
    seen = {}
    for ax in axes:
        for h, lab in zip(*ax.get_legend_handles_labels()):
            seen.setdefault(lab, h)
    return list(seen.values()), list(seen)


def _num(v):
    return None if v is None or v != v else float(v)


def _bool(v):
    return v if v is None or isinstance(v, bool) else str(v).lower() == "true"


def _query_order(q: str) -> tuple:
    cls = q.rstrip("0123456789")
    return ({"LV": 0, "HV": 1, "SHV": 2}.get(cls, 3), q)


def _si(v: float, _pos=None) -> str:
    """Axis labels without exponents: 950, 1.5k, 540k, 1.2M."""
    for div, suffix in ((1e6, "M"), (1e3, "k")):
        if abs(v) >= div:
            return f"{v / div:.3g}{suffix}"
    return f"{v:.3g}"


# ---------------------------------------------------------------- 1. collapse curve
def _median_repetition(rows: list) -> list:
    """The points of the repetition whose load took the median time (a representative curve)."""
    reps = {}
    for r in rows:
        reps.setdefault(r["repetition"], []).append(r)
    ranked = sorted(reps, key=lambda k: max(p["elapsed_s"] or 0 for p in reps[k]))
    return sorted(reps[ranked[(len(ranked) - 1) // 2]], key=lambda p: p["files_done"])


def _engine(r: dict) -> str:
    return r.get("engine") or "innodb"


def _name(r: dict) -> str:
    """A load's label: its strategy, with its engine when not InnoDB (the 2017 study's)."""
    return r["strategy"] if _engine(r) == "innodb" else f"{r['strategy']} ({_engine(r)})"


def _best(loads: list) -> dict:
    best = {}
    for r in sorted((r for r in loads if r.get("seconds") and r["strategy"] != ONE_FILE_AT_A_TIME),
                    key=lambda r: r["seconds"]):
        best.setdefault((r["target"], r["variant"]), r)
    return best


# line and marker of each engine's `one-file-at-a-time` curve
ENGINE_STYLE = {"innodb": ("-", "."), "rocksdb": ("-.", "^"), "myisam": (":", "s")}


def plot_collapse(plt, curve: list, loads: list, collapse: list, path: Path) -> bool:
    """Load rate against table size / buffer pool: the one-file-at-a-time protocol (solid, per
    input file, smoothed; on another engine dash-dotted or dotted, against its cache)
    against the fastest strategy's end-to-end mean rate (dashed; sorting and index building
    included), one colour per target, log rate."""
    pts = [r for r in curve if _num(r.get("table_over_pool")) is not None and _num(r.get("rows_per_s"))
           and r["strategy"] == ONE_FILE_AT_A_TIME]
    if not pts:
        _empty(plt, path, f"load curves of the `{ONE_FILE_AT_A_TIME}` protocol")
        return False
    variants, col, best = _order(r["variant"] for r in pts), colours(r["target"] for r in loads), _best(loads)
    fig, axes = plt.subplots(1, len(variants), figsize=(11, 4.6), squeeze=False, layout="constrained")
    for ax, var in zip(axes[0], variants):
        for tg, eng in _order((r["target"], _engine(r)) for r in pts if r["variant"] == var):
            line = _median_repetition([r for r in pts if (r["target"], r["variant"], _engine(r)) == (tg, var, eng)])
            xs = [p["table_over_pool"] for p in line]
            innodb = eng == "innodb"
            style, mark = ENGINE_STYLE.get(eng, ("-.", "^"))
            ax.plot(xs, [p["rows_per_s"] for p in line], style, color=col[tg], lw=2,
                    marker=mark, ms=4 if innodb else 3,
                    label=f"{tg}: {ONE_FILE_AT_A_TIME}" if innodb else f"{tg}: {ONE_FILE_AT_A_TIME} ({eng})")
            b = best.get((tg, var))
            if innodb and b is not None and _num(b.get("rows_per_s")):
                ax.plot([0, max(xs)], [b["rows_per_s"]] * 2, "--", color=col[tg], lw=2,
                        label=f"{tg}: {_name(b)} (fastest; end-to-end mean)")
            half = next((c for c in collapse if (c["target"], c["variant"], c["strategy"], _engine(c)) ==
                         (tg, var, ONE_FILE_AT_A_TIME, eng) and _num(c.get("half_table_over_pool"))), None)
            if half:
                ax.plot([half["half_table_over_pool"]], [0.5 * half["initial_rows_per_s"]], "X" if innodb else "P",
                        ms=10, color=col[tg], markeredgecolor="black",
                        label=f"{tg}: fell below half its initial rate" + ("" if innodb else f" ({eng})"))
        ax.axvline(1.0, color="grey", ls=":", lw=1.5)
        ax.text(1.02, 0.02, "table = buffer pool (cache)", transform=ax.get_xaxis_transform(), va="bottom",
                fontsize=9, color="dimgrey")
        ax.set_yscale("log")
        ax.set_xlim(left=0)
        pred = next((c for c in collapse if c["variant"] == var and _num(c.get("predicted_working_set_over_pool"))), None)
        ax.set_title(f"{var} table: load rate as the index outgrows the buffer pool" + (
            f"\n{pred.get('id_layout')} ids, {pred.get('arrival_order')} order: predicted working set "
            f"{_num(pred['predicted_working_set_over_pool']):.2g}x the pool" if pred else ""))
        ax.set_xlabel("table size / buffer pool (x)")
        ax.set_ylabel("load rate (rows/s, log scale)")
    handles, labels = _legend_from(axes[0])
    _save(plt, fig, path, handles, labels, ncol=2)
    return True


# ---------------------------------------------------------------- 2. speed-up
def plot_speedup(plt, loads: list, path: Path) -> bool:
    """Speed-up over the one-file-at-a-time protocol per strategy x target, with interval whiskers."""
    rs = [r for r in loads if r["strategy"] != ONE_FILE_AT_A_TIME and _num(r.get("speedup_vs_one_file_at_a_time"))]
    if not rs:
        _empty(plt, path, f"speed-ups over the `{ONE_FILE_AT_A_TIME}` protocol (no such load)")
        return False
    variants, col = _order(r["variant"] for r in rs), colours(r["target"] for r in loads)
    fig, axes = plt.subplots(1, len(variants), figsize=(11, 4.4), squeeze=False, layout="constrained")
    for ax, var in zip(axes[0], variants):
        vr = [r for r in rs if r["variant"] == var]
        strategies = sorted(_order(_name(r) for r in vr),
                            key=lambda s: -max(r["speedup_vs_one_file_at_a_time"] for r in vr if _name(r) == s))
        targets = sorted(_order(r["target"] for r in vr))
        width = 0.8 / len(targets)
        for j, tg in enumerate(targets):
            for i, s in enumerate(strategies):
                r = next((r for r in vr if (r["target"], _name(r)) == (tg, s)), None)
                if r is None:
                    continue
                x, y = i + (j - (len(targets) - 1) / 2) * width, r["speedup_vs_one_file_at_a_time"]
                lo, hi = _num(r.get("speedup_ci_low")), _num(r.get("speedup_ci_high"))
                ax.bar(x, y, width * 0.9, color=col[tg], label=tg, hatch=None if lo else "//",
                       edgecolor="white" if lo else "black")
                if lo is not None and hi is not None:
                    ax.errorbar(x, y, yerr=[[y - lo], [hi - y]], color="black", capsize=3, lw=1)
                n = f"n={r['n']}" if r.get("n") else ""
                ax.text(x, max(y, hi or y) * 1.12, f"{y:.1f}x\n{n}", ha="center", va="bottom", fontsize=8)
        ax.axhline(1.0, color="grey", ls=":", lw=1.5)
        ax.set_yscale("log")
        ax.set_ylim(bottom=min(0.5, min(r["speedup_vs_one_file_at_a_time"] for r in vr) / 2),
                    top=max(r.get("speedup_ci_high") or r["speedup_vs_one_file_at_a_time"] for r in vr) * 4)
        ax.set_xticks(range(len(strategies)), strategies)
        ax.set_title(f"{var} table: speed-up over `{ONE_FILE_AT_A_TIME}` (1x"
                     + (", same engine)" if len({_engine(r) for r in vr}) > 1 else ")"))
        ax.set_xlabel("loading strategy")
        ax.set_ylabel("speed-up (x, log scale)")
    handles, labels = _legend_from(axes[0])
    _save(plt, fig, path, handles, [f"target {lab}" for lab in labels])
    return True


# ---------------------------------------------------------------- 3. restart timeline
# (segment phase, label) in time order from process start; crash starts split the engine
# start into recovery phases. Milestones are the running sums at these phases' ends.
CLEAN_SEGMENTS = (("process_start_to_engine_ready", "engine start"),
                  ("engine_ready_to_accepting", "engine ready → accepting"),
                  ("accepting_to_first_answer", "accepting → first answer"),
                  ("first_answer_to_warm", "first answer → warm"))
CRASH_SEGMENTS = (("process_start_to_recovery_start", "start → recovery"), ("redo_scan", "redo scan"),
                  ("redo_apply", "redo apply"))
MILESTONES = (("engine ready", "^"), ("accepting", "o"), ("first answer", "D"), ("warm", "*"))


def timeline_segments(phases: dict) -> tuple[list, dict]:
    """([(label, start_s, seconds)], {milestone: s}) of one restart from its median phase
    seconds ({phase: seconds}); segments never overlap."""
    segs, t = [], 0.0
    if "redo_scan" in phases:
        for p, label in CRASH_SEGMENTS:
            s = phases.get(p) or 0.0
            segs.append((label, t, s))
            t += s
        rest = max((phases.get("process_start_to_engine_ready") or 0.0) - t, 0.0)
        segs.append(("rest of engine start", t, rest))
        t += rest
    else:
        s = phases.get("process_start_to_engine_ready") or 0.0
        segs.append(("engine start", t, s))
        t += s
    marks = {"engine ready": t}
    for (p, label), mark in zip(CLEAN_SEGMENTS[1:], ("accepting", "first answer", "warm")):
        if p in phases and phases[p] is not None:
            segs.append((label, t, phases[p]))
            t += phases[p]
            marks[mark] = t
    return segs, marks


def plot_restart(plt, restart: list, path: Path) -> bool:
    """Each restart as a timeline of non-overlapping phases from process start (medians),
    milestones as markers."""
    if not restart:
        _empty(plt, path, "restart results")
        return False
    rows = _order((r["target"], r["kind"], _bool(r.get("buffer_pool_load"))) for r in restart)
    labels = [lab for _, lab in CRASH_SEGMENTS] + ["rest of engine start"] + [lab for _, lab in CLEAN_SEGMENTS]
    seg_col = {lab: PALETTE[i % len(PALETTE)] for i, lab in enumerate(_order(labels))}
    fig, ax = plt.subplots(figsize=(11, 0.55 * len(rows) + 2.2), layout="constrained")
    names = []
    for y, (tg, kind, bp) in enumerate(rows):
        phases = {r["phase"]: _num(r.get("seconds")) for r in restart
                  if (r["target"], r["kind"], _bool(r.get("buffer_pool_load"))) == (tg, kind, bp)}
        segs, marks = timeline_segments(phases)
        for label, start, width in segs:
            if width > 0:
                ax.barh(y, width, left=start, height=0.6, color=seg_col[label], label=label)
        for (m, marker), col in zip(MILESTONES, ("black",) * 4):
            if m in marks:
                ax.plot(marks[m], y, marker, color=col, ms=7, mfc="white", label=f"milestone: {m}")
        n = max((r.get("n") or 0) for r in restart if (r["target"], r["kind"]) == (tg, kind))
        dump = f" · pool dump {'on' if bp else 'off'}" if kind == "clean" and bp is not None else ""
        names.append(f"{tg} · {kind}{dump} (n={n})")
    ax.set_yticks(range(len(rows)), names)
    ax.invert_yaxis()
    ax.set_xlim(left=0)
    ax.set_xlabel("seconds since the server process started (median of each phase)")
    ax.set_title("Restart: from process start to engine ready, accepting connections, first answer, warm")
    handles, labs = _legend_from([ax])
    _save(plt, fig, path, handles, labs, ncol=4)
    return True


# ---------------------------------------------------------------- 4. query latency
def plot_queries(plt, queries: list, path: Path) -> bool:
    """Median latency per query (log), cold and warm side by side, engines/targets as
    series, whiskers = interval of the typical value."""
    rs = [r for r in queries if r["cache"] in ("cold", "warm") and _num(r.get("p50_s"))]
    if not rs:
        _empty(plt, path, "query results")
        return False
    caches = [c for c in ("cold", "warm") if any(r["cache"] == c for r in rs)]
    series = sorted(_order(f"{r['target']}/{r['engine']}" for r in rs))
    col = colours(series)
    qs = sorted(_order(r["query"] for r in rs), key=_query_order)
    fig, axes = plt.subplots(1, len(caches), figsize=(11, 4.4), squeeze=False, sharey=True,
                             layout="constrained")
    for ax, cache in zip(axes[0], caches):
        for j, s in enumerate(series):
            xs, ys, lo, hi = [], [], [], []
            for i, q in enumerate(qs):
                r = next((r for r in rs if (r["query"], r["cache"], f"{r['target']}/{r['engine']}") ==
                          (q, cache, s)), None)
                if r is None:
                    continue
                y = r["p50_s"]
                xs.append(i + (j - (len(series) - 1) / 2) * 0.8 / len(series))
                ys.append(y)
                lo.append(y - (_num(r.get("ci_low_s")) or y))
                hi.append((_num(r.get("ci_high_s")) or y) - y)
            ax.errorbar(xs, ys, yerr=[lo, hi], fmt="o", color=col[s], capsize=2, ms=5, label=s)
        ax.set_yscale("log")
        ax.set_xticks(range(len(qs)), qs)
        ax.set_title(f"{cache} cache")
        ax.set_xlabel("query")
        ax.set_ylabel("latency (s, log scale)")
    handles, labels = _legend_from(axes[0])
    _save(plt, fig, path, handles, labels)
    return True


# ---------------------------------------------------------------- 5. fio
def plot_fio(plt, storage: list, path: Path) -> bool:
    """fio per target: sequential MB/s and random IOPS (medians, labelled), whiskers =
    interval of the typical value."""
    if not storage:
        _empty(plt, path, "fio results")
        return False
    col = colours(r["target"] for r in storage)
    targets = sorted(_order(r["target"] for r in storage))
    fig, axes = plt.subplots(1, 2, figsize=(11, 4), layout="constrained")
    for ax, (prefix, figure, unit) in zip(axes, (("seq", "MBps", "MB/s"), ("rand", "iops", "IOPS"))):
        tests = [t for t in _order(r["test"] for r in storage) if t.startswith(prefix)]
        width = 0.8 / max(len(targets), 1)
        for j, tg in enumerate(targets):
            for i, test in enumerate(tests):
                r = next((r for r in storage if (r["target"], r["test"]) == (tg, test)), None)
                if r is None or _num(r.get(figure)) is None:
                    continue
                x, y = i + (j - (len(targets) - 1) / 2) * width, r[figure]
                ax.bar(x, y, width * 0.9, color=col[tg], label=f"target {tg}")
                lo, hi = _num(r.get(f"{figure}_ci_low")), _num(r.get(f"{figure}_ci_high"))
                if lo is not None and hi is not None:
                    ax.errorbar(x, y, yerr=[[y - lo], [hi - y]], color="black", capsize=3, lw=1)
                ax.text(x, max(y, hi or y) * 1.02, _si(y), ha="center", va="bottom", fontsize=8)
        ax.yaxis.set_major_formatter(_si)
        ax.set_ylim(top=ax.get_ylim()[1] * 1.08)
        ax.set_xticks(range(len(tests)), tests)
        ax.set_xlabel("fio test" + (" (1 MiB blocks)" if prefix == "seq" else " (4 KiB blocks)"))
        ax.set_ylabel(unit)
        ax.set_title("sequential throughput" if prefix == "seq" else "random operations per second")
    handles, labels = _legend_from(axes)
    _save(plt, fig, path, handles, labels)
    return True


# ---------------------------------------------------------------- 6. cluster node restart
CLUSTER_WINDOWS = ("before", "during", "after")


def _cluster_row(rows: list, key: tuple, phase: str) -> dict:
    return next((r for r in rows if (r["target"], r["kind"], r["phase"]) == (*key, phase)), {})


def _cluster_back(ax, rows: list, keys: list) -> None:
    """Left: down -> new process -> first correct answer, stacked, whisker on the whole."""
    for y, key in enumerate(keys):
        down = _num(_cluster_row(rows, key, "node_down").get("seconds")) or 0.0
        back = _num(_cluster_row(rows, key, "process_start_to_first_answer").get("seconds")) or 0.0
        ax.barh(y, down, height=0.6, color=PALETTE[5], label="down (until its new process started)")
        ax.barh(y, back, left=down, height=0.6, color=PALETTE[0], label="new process → first correct answer")
        total = _cluster_row(rows, key, "down_to_first_answer")
        tot, lo, hi = (_num(total.get(c)) for c in ("seconds", "seconds_ci_low", "seconds_ci_high"))
        if tot is not None and lo is not None and hi is not None:
            ax.errorbar(tot, y, xerr=[[tot - lo], [hi - tot]], color="black", capsize=3, lw=1)
        lost = max((int(r.get("acked_lost") or 0) for r in rows if (r["target"], r["kind"]) == key), default=0)
        ax.text(max(tot or 0, hi or 0, down + back) * 1.02, y, f"{down + back:.1f} s" + (
            f"  LOST {lost:,} acked inserts" if lost else ""), va="center", fontsize=8,
            color="#D55E00" if lost else "black", fontweight="bold" if lost else "normal")
    ax.set_xlim(right=ax.get_xlim()[1] * 1.25)
    ax.set_xlabel("seconds from the node going down")
    ax.set_title("node back to its first correct answer")


def _cluster_inserts(ax, load: list, keys: list) -> None:
    """Right: inserts/s on the insert node before / during / after, whiskers = interval, cut at
    1.5x the fastest bar (an n=2 interval can span 100x the rates and hide every bar)."""
    width, top = 0.8 / len(CLUSTER_WINDOWS), 0.0
    for y, key in enumerate(keys):
        for j, w in enumerate(CLUSTER_WINDOWS):
            r = next((x for x in load if (x["target"], x["kind"], x["window"]) == (*key, w)
                      and "insert" in str(x.get("role") or "").split("+")), {})
            v = _num(r.get("inserts_per_s"))
            if v is None:
                continue
            yy, top = y + (j - 1) * width, max(top, v)
            ax.barh(yy, v, height=width * 0.9, color=PALETTE[(1, 3, 2)[j]], label=f"{w} the restart"
                    if w != "during" else "during (node down until Synced)")
            lo, hi = _num(r.get("inserts_per_s_ci_low")), _num(r.get("inserts_per_s_ci_high"))
            if lo is not None and hi is not None:
                ax.errorbar(v, yy, xerr=[[v - lo], [hi - v]], color="black", capsize=2, lw=1)
    ax.xaxis.set_major_formatter(_si)
    ax.set(xlim=(0, 1.5 * top or None), xlabel="inserts per second (rows/s)", title="inserts on the insert node")


def plot_cluster(plt, rows: list, load: list, path: Path) -> bool:
    """Galera node restarts: how long until the node answers again (left), and the insert
    rate before, during and after (right), per target and kind."""
    if not rows:
        _empty(plt, path, "cluster restart results")
        return False
    keys = _order((r["target"], r["kind"]) for r in rows)
    fig, axes = plt.subplots(1, 2, figsize=(11, 0.7 * len(keys) + 2.4), layout="constrained", sharey=True)
    _cluster_back(axes[0], rows, keys)
    _cluster_inserts(axes[1], load, keys)
    names = []
    for key in keys:
        xfer = _cluster_row(rows, key, "state_transfer").get("transfer")
        n = max((r.get("n") or 0) for r in rows if (r["target"], r["kind"]) == key)
        names.append(f"{key[0]} · {key[1]}" + (f" ({xfer})" if xfer else "") + f" (n={n})")
    axes[0].set_yticks(range(len(keys)), names)
    axes[0].invert_yaxis()
    handles, labels = _legend_from(axes)
    _save(plt, fig, path, handles, labels, ncol=3)
    return True


# ---------------------------------------------------------------- 7. chunk rows on the sky
def plot_chunk_sky(plt, chunks: list, path: Path) -> bool:
    """Objects per chunk at each chunk's centre (log colour scale), and their distribution:
    where the crowded chunks are and how far they are from the median one."""
    rows = [r for r in chunks if _num(r.get("object_rows")) and _num(r.get("ra_centre")) is not None]
    if not rows:
        _empty(plt, path, "chunk rows")
        return False
    from matplotlib.colors import LogNorm
    objects = [r["object_rows"] for r in rows]
    median = sorted(objects)[len(objects) // 2]
    fig, (sky, hist) = plt.subplots(1, 2, figsize=(11, 4), layout="constrained",
                                    gridspec_kw={"width_ratios": [2, 1]})
    dots = sky.scatter([r["ra_centre"] for r in rows], [r["dec_centre"] for r in rows], c=objects,
                       norm=LogNorm(vmin=min(objects), vmax=max(objects)), cmap="viridis", s=18, marker="s")
    fig.colorbar(dots, ax=sky, label="Objects in the chunk (log scale)")
    sky.invert_xaxis()   # east to the left, as the sky is drawn
    sky.set_xlabel("ra of the chunk's centre (deg)")
    sky.set_ylabel("dec (deg)")
    sky.set_title(f"{len(rows)} chunks: the largest holds {max(objects) / median:.1f}x the median's Objects")
    hist.hist([v / median for v in objects], bins=30, color="#4c72b0")
    hist.set_xlabel("Objects ÷ the median chunk's")
    hist.set_ylabel("chunks")
    hist.set_title("distribution")
    _save(plt, fig, path)
    return True


# ---------------------------------------------------------------- 8. scale prediction
ENGINE_MARKER = {"innodb": "o", "rocksdb": "^", "myisam": "s"}


def plot_prediction(plt, validation: list, path: Path) -> bool:
    """Each ladder's largest rung predicted from its smaller ones: predicted ÷ measured per
    load (log scale) against the band the model is trusted within; a marker per engine, a
    colour per target; a load its time limit stopped is compared in rows (hollow)."""
    pts = [(r, u, _num(r.get(f"predicted_{u}")) / _num(r.get(f"measured_{u}"))) for r in validation
           for u in ["rows" if r.get("compared") == "rows" else "seconds"]
           if (_num(r.get(f"measured_{u}")) or 0) > 0 and (_num(r.get(f"predicted_{u}")) or 0) > 0]
    if not pts:
        _empty(plt, path, "scale prediction (predict/prediction.json with a validated ladder)")
        return False
    col, (lo, hi) = colours(p[0]["target"] for p in pts), PREDICTION_BAND
    fig, ax = plt.subplots(figsize=(8, 1.6 + 0.45 * len(pts)), layout="constrained")
    ax.axvspan(lo, hi, color="grey", alpha=0.15, label=f"within [{lo}, {hi}]")
    ax.axvline(1.0, color="grey", lw=1)
    for i, (r, unit, ratio) in enumerate(pts):
        eng = _engine(r)
        ax.plot(ratio, i, ENGINE_MARKER.get(eng, "D"), ms=9, mew=2, color=col[r["target"]],
                mfc="white" if unit == "rows" else col[r["target"]],
                label=f"{r['target']} · {eng}" + (" (rows by its time limit)" if unit == "rows" else " (seconds)"))
        ax.annotate(f"{ratio:.2f}", (ratio, i), xytext=(8, -3), textcoords="offset points", fontsize=8)
    ax.set_yticks(range(len(pts)), [f"{_engine(r)} {r['strategy']}" for r, _, _ in pts])
    ax.set(xscale="log", xlim=(min(0.4, min(p[2] for p in pts) / 1.3), max(2.5, max(p[2] for p in pts) * 1.3)),
           ylim=(-0.7, len(pts) - 0.3))
    ax.set_xticks(t := [0.5, lo, 1, hi, 2], [f"{v:g}" for v in t], minor=False), ax.minorticks_off()
    ax.set_xlabel("predicted ÷ measured (median of the repetitions)")
    rows = sorted({r.get("rung_rows") for r, _, _ in pts if r.get("rung_rows")})
    ax.set_title("Each ladder's largest rung predicted from its smaller ones"
                 + (f" ({', '.join(f'{n:,}' for n in rows)} rows)" if rows else ""))
    handles, labels = _legend_from([ax])
    _save(plt, fig, path, handles, labels, ncol=2)
    return True


def draw_all(tables: dict, out: Path) -> dict:
    """Every plot of :data:`PLOTS` into ``out``/<name>.png: {name: drawn with data}."""
    plt = _plt()
    return {
        "collapse": plot_collapse(plt, tables["load_curve"], tables["load_time"], tables["load_collapse"],
                                  out / "collapse.png"),
        "speedup": plot_speedup(plt, tables["load_time"], out / "speedup.png"),
        "restart_timeline": plot_restart(plt, tables["restart"], out / "restart_timeline.png"),
        "query_latency": plot_queries(plt, tables["queries"], out / "query_latency.png"),
        "fio": plot_fio(plt, tables["storage"], out / "fio.png"),
        "cluster_restart": plot_cluster(plt, tables["cluster_restart"], tables["cluster_load"],
                                        out / "cluster_restart.png"),
        "chunk_sky": plot_chunk_sky(plt, tables["chunks"], out / "chunk_sky.png"),
        "prediction": plot_prediction(plt, tables.get("prediction_validation", []), out / "prediction.png"),
    }
