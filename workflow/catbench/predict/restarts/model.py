"""A node's restart at the user's size from the rungs' phases (predict/restarts/model.md): each
phase's seconds fitted against the quantity that drives it (a + b·q), that quantity taken to
the user's data, pool, redo log, downtime and gcache, the kind's total with its interval, the
phase that dominates and what bounds it; refused, naming the rung needed, in a regime no rung
ran (recovery in several batches), and IST answered as SST past the gcache."""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, replace

import numpy as np

from ...core.infra.sizes import duration, human
from .age import age_spread, age_told, batch_refusal, checkpoint_age, held_band, max_checkpoint_age
from .fit import PhaseFit, fit, interval, rate_fit
from .lookup import lookup_factor
from .memory import memory_phases, release_excess
from .runs import PhaseObservation, RungSizes, on_large_pages

# kind -> its phases in order; the total is their sum (a clean restart: the shutdown, the start
# and the pool's load from its dump or the first answer; a crash: the start, the redo scan and
# apply, the first answer; a Galera node: shutdown to synced, less the time it was kept down).
# The clean kind flushes its dirty pages before it shuts down, at the page cleaners' pace
# (innodb_io_capacity), not at a shutdown's: that flush is recorded, not counted.
KINDS = {
    "clean/dump-on": ("shutdown", "start_to_engine_ready", "buffer_pool_load"),
    "clean/dump-off": ("shutdown", "start_to_engine_ready", "engine_ready_to_first_answer"),
    "crash-during-load": ("start_to_recovery", "redo_scan", "redo_apply", "ready_to_first_answer"),
    "node-restart-sst": ("shutdown", "start_to_transfer", "sst_donor_sleep", "sst_stream", "sst_prepare", "sst_rest",
                         "transfer_end_to_synced"),
    "node-restart-ist": ("shutdown", "start_to_transfer", "state_transfer", "transfer_end_to_synced"),
}


@dataclass(frozen=True)
class Driver:
    """What drives a phase: its words, the kind of work a byte of it is (``seq``: bytes read or
    written in order; ``page``: random pages; ``thread``: one thread's parsing; ``memory``: the
    pool mapped), and whether its quantity is bytes (else a byte × log2 count)."""
    words: str
    work: str
    in_bytes: bool = True


DRIVERS = {
    "start_to_engine_ready": Driver("buffer pool", "memory"),
    "buffer_pool_load": Driver("pages in the dump", "page"),
    "redo_scan": Driver("redo since the checkpoint × log2 of the pages it touches", "thread", False),
    "redo_apply": Driver("redo since the checkpoint × log2 of the pages it touches", "page", False),
    "sst_stream": Driver("bytes an SST streams (data files and the redo since the donor's checkpoint)", "seq"),
    "sst_prepare": Driver("redo the joiner's prepare applies", "thread"),
    ("node-restart-ist", "state_transfer"): Driver("write sets missed", "thread"),
}


def driver(kind: str, phase: str, *, large_pages: bool) -> Driver | None:
    """What drives ``phase``; the start grows with the pool only where the pool is on large pages,
    which MariaDB backs as it starts (on 4 KiB pages it maps the pool and touches it as used: a
    fresh server started in 0.11-0.17 s at pools of 20 MiB to 1.5 GiB)."""
    if phase == "start_to_engine_ready" and not large_pages:
        return None
    return DRIVERS.get((kind, phase)) or DRIVERS.get(phase)


@dataclass(frozen=True)
class UserNode:
    """The user's node: data it holds, pool, redo log, checkpoint age at the crash (None: the
    rungs' share of the log), write sets a second (None: the rungs'), downtime, gcache, and
    a device's figures (None: the rungs' own fio)."""
    data: float
    pool: float
    redo_log: float
    checkpoint_age: float | None = None
    write_rate: float | None = None
    downtime_s: float | None = None
    gcache: float | None = None
    device: dict | None = None
    at_rest: bool = True        # not mid-load (the benchmark's own node is: its load's undo streams too)


def _median(xs, default=None):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else default


@dataclass(frozen=True)
class Shares:
    """The rungs' ratios the user's quantities follow (medians over every rung)."""
    checkpoint_age: float | None     # redo since the checkpoint at a kill ÷ the redo log
    age_range: tuple[float, float] | None   # its least and most over the rungs' kills
    redo_per_touch: float | None     # redo bytes a page touch costs (from pages recovered, below)
    crash_share: float | None        # the input committed at a kill
    dump: float | None               # pages in the dump ÷ min(pool, data)
    # an SST's files: the tables a byte of data, what a datadir at rest holds beside them, and what
    # the benchmark's own load grew the system and undo tablespaces by (None: not split); the last
    # follows the load's largest transaction (a file's rows), not the data: bytes, not a share
    sst: tuple[float, float, float] | None
    sst_redo: float | None           # redo an SST's backup copied ÷ the redo log
    sst_redo_range: tuple[float, float] | None
    copy_per_byte: list              # seconds a byte while an SST's stream copied (each repetition's)
    ist_per_down_s: float | None     # write-set bytes missed a second down
    moved: dict                      # phase -> bytes a unit of its quantity moved in the rungs (1: bytes)
    single_batch_up_to: float        # the largest checkpoint age ÷ pool a rung recovered in one batch
    multi_batch_from: float          # the least one a rung needed several batches for (inf: none did)
    page: int
    redo_rate: float | None = None   # the rungs' loads' redo bytes a second up to their kills

    @classmethod
    def of(cls, sizes: list[RungSizes]) -> Shares:
        age = [a / s.redo_log_bytes for s in sizes if s.redo_log_bytes for a in s.checkpoint_age]
        touch, share = [], []
        for s in sizes:
            for redo, pages, sh, _lsn in s.recovered_pages:
                share.append(sh)
                n = sh * (s.data_bytes or 0) / s.page_bytes
                if n and pages < 0.95 * n:   # random keys: R = N (1 - exp(-A / (r N)))
                    touch.append(redo / (n * -math.log(1 - pages / n)))
        split = [(t / s.data_bytes, rest, grown) for s in sizes if s.data_bytes for t, rest, grown in s.sst_split]
        sst = tuple(_median(x) for x in zip(*split)) if split else None
        redo = [x for s in sizes for x in s.sst_redo_share]
        return cls(_median(age), (min(age), max(age)) if age else None, _median(touch), _median(share),
                   _median([x for s in sizes for x in s.dump_share]),
                   sst, _median(redo), (min(redo), max(redo)) if redo else None,
                   [x for s in sizes for x in s.sst_copy_s_per_byte], _median([x for s in sizes for x in s.ist_bytes_per_down_s]),
                   _rung_moved(sizes),
                   max([a / s.pool_bytes for s in sizes if s.pool_bytes for a, multi in s.batches if not multi],
                       default=0.0),
                   min([a / s.pool_bytes for s in sizes if s.pool_bytes for a, multi in s.batches if multi],
                       default=math.inf),
                   sizes[0].page_bytes if sizes else 16384, _median([x for s in sizes for x in s.redo_rate]))

    def recovered(self, age: float, data_at_crash: float) -> float:
        """Pages (bytes) a recovery applies: the random keys' touches of the redo spread over
        the data's pages, at most every page (where no rung tells the cost of a touch)."""
        if not self.redo_per_touch:
            return data_at_crash
        n = data_at_crash / self.page
        return self.page * n * (1 - math.exp(-age / (self.redo_per_touch * n)))


def _rung_moved(sizes: list[RungSizes]) -> dict:
    """Bytes a unit of the redo phases' quantity (redo × log2 pages) moved in the rungs: redo
    read by the scan, pages applied by the apply; what their bound is judged a byte of."""
    kills = [(redo, pages, s.page_bytes) for s in sizes for redo, pages, _sh, _lsn in s.recovered_pages if pages > 1]
    return {"redo_scan": _median([1 / math.log2(n) for _r, n, _p in kills], 1.0),
            "redo_apply": _median([n * pg / (r * math.log2(n)) for r, n, pg in kills], 1.0)}


def data_of(rows: int, rungs: list[tuple[int, float]]) -> float | None:
    """The data ``rows`` hold: the rungs' pages as a fixed part (system and undo pages) plus a
    part a row, fitted over them (their bytes a row where they do not grow with the rows)."""
    if not rungs:
        return None
    if len({r for r, _ in rungs}) >= 2:
        per_row, fixed = np.polyfit([r for r, _ in rungs], [b for _, b in rungs], 1)
        if per_row > 0:
            return float(max(0.0, fixed) + per_row * rows)
    return rows * statistics.median(b / r for r, b in rungs)


def recovery_bytes(at: UserNode, sh: Shares) -> tuple[float, float]:
    """(redo since the checkpoint, bytes of pages recovered) of a crash at the user's node."""
    age = checkpoint_age(at, sh)
    return age, sh.recovered(age, at.data * (sh.crash_share or 1.0))


def sst_files(at: UserNode, sh: Shares) -> tuple[float, str]:
    """The files an SST of ``at`` streams, and how they were told. A node at rest (``--data``, the
    bytes on the user's disk) streams its tables and what any datadir holds beside them; the
    undo and system tablespace the benchmark's own load grew are the rungs', not the user's, and
    are added only for the benchmark's own node (mid-load: the config's target)."""
    if sh.sst is None:
        return at.data, "the data alone: the rungs recorded no split of their files; run them again"
    tables, rest, grown = sh.sst
    if at.at_rest:
        return tables * at.data + rest, (f"the tables and {human(rest)} beside them; not the {human(grown)} of "
                                         f"undo the rungs' own load left, which a node at rest does not hold")
    return tables * at.data + rest + grown, (f"the tables, {human(rest)} beside them and the {human(grown)} of "
                                             f"undo a node mid-load holds, as in the rungs")


def quantities(at: UserNode, sh: Shares, kind: str) -> tuple[dict, dict, list[str]]:
    """Each phase's driving quantity at the user's node, the bytes it moves a unit of it (1 where
    the quantity is bytes), and the regime's words."""
    held = min(at.pool, at.data)
    out = {"start_to_engine_ready": at.pool,
           # a dump lists pages the pool held: never more than the pool (the rungs' share of their
           # resident data pages passes 1 where small pools hold few)
           "buffer_pool_load": min((sh.dump or 1.0) * held, at.pool)}
    words: list[str] = []
    moved: dict = {}
    if kind == "crash-during-load":
        age, pages = recovery_bytes(at, sh)
        work = age * math.log2(max(2.0, pages / sh.page))
        out.update(redo_scan=work, redo_apply=work)
        if work:   # bytes read, pages applied a unit
            moved.update(redo_scan=age / work, redo_apply=pages / work)
        words.append(f"checkpoint age {human(age)} at the kill ({age_told(at, sh)}), {human(pages)} of pages "
                     f"to recover")
    if kind == "node-restart-sst":   # the data files, what a datadir holds beside them, and the redo
        files, said = sst_files(at, sh)
        redo = checkpoint_age(at, sh, 1.0 if sh.sst_redo is None else sh.sst_redo)
        out.update(sst_stream=files + redo, sst_prepare=redo)
        told = "given" if at.checkpoint_age is not None else (
            "the whole redo log: no rung's backup said" if sh.sst_redo is None
            else f"{sh.sst_redo:.2f} of the redo log, as in the rungs")
        words.append(f"{human(files)} of data files ({said}) and {human(redo)} of redo since the donor's "
                     f"checkpoint ({told}) streamed; the joiner's prepare applies that redo")
    if kind == "node-restart-ist":
        rate = at.write_rate if at.write_rate is not None else sh.ist_per_down_s
        out["state_transfer"] = (rate or 0.0) * (at.downtime_s or 0.0)
    return out, moved, words


def bound(f: PhaseFit, drv: Driver | None, dev: dict, page: int, moved: float = 1.0) -> str:
    """What bounds a phase on the rungs' target: the device where a byte (a page) costs at most
    twice the device's own time for it (fio's sequential write, its 16 KiB random read at
    queue depth 1; reads issued together cost less than that), the CPU or one thread where it
    costs more, or nothing that grows (a fixed cost). ``moved``: bytes a unit of its quantity."""
    if drv is None or not f.per_unit:
        return "fixed"
    per_byte = f.per_unit / moved
    if drv.work == "page" and dev.get("page_read_s"):
        if per_byte * page < 0.05 * dev["page_read_s"]:
            return "CPU (pages cached)"
        return "device (random pages)" if per_byte * page <= 2 * dev["page_read_s"] else "CPU"
    if drv.work in ("seq", "thread") and dev.get("seq_write_s_per_byte"):
        if per_byte <= 2 * dev["seq_write_s_per_byte"]:
            return "device (sequential)"
        return "one thread" if drv.work == "thread" else "CPU"
    return {"memory": "memory", "thread": "one thread"}.get(drv.work, "CPU")


def on_device(f: PhaseFit, how: str, devices: tuple[dict, dict | None], moved: float = 1.0) -> PhaseFit:
    """The fit with its per-byte cost on another device (--device): a device-bound phase's cost
    × the devices' ratio; a CPU-bound one's at least the other device's sequential cost."""
    here, there = devices
    b = f.per_unit
    if not there or not b:
        return f

    def per(x: float) -> PhaseFit:
        return replace(f, b=x) if f.b else replace(f, b_point=x)
    if how == "device (random pages)" and here.get("page_read_s") and there.get("page_read_s"):
        return per(b * there["page_read_s"] / here["page_read_s"])
    seq_here, seq_there = here.get("seq_write_s_per_byte"), there.get("seq_write_s_per_byte")
    if how == "device (sequential)" and seq_here and seq_there:
        return per(b * seq_there / seq_here)
    if how in ("CPU", "one thread") and seq_there:
        return per(max(b, seq_there * moved))
    return f


def predict_kind(kind: str, obs: list[PhaseObservation], sizes: list[RungSizes], at: UserNode, confidence: float,
                 floor: float) -> dict:
    """One kind's phases and total at ``at``: seconds, interval, the dominant phase, what bounds
    each; ``refused`` where the rungs do not reach the user's regime."""
    sh = Shares.of(sizes)
    here = _median_device(sizes)
    q, moved, words = quantities(at, sh, kind)
    out = {"kind": kind, "rungs": sorted({o.run for o in obs}), "regime": words, "confidence": confidence}
    refused = batch_refusal(kind, at, sh)
    if refused:
        return {**out, "refused": refused}
    mem = memory_phases(sizes, *recovery_bytes(at, sh), at.pool, out) if kind == "crash-during-load" else {}
    if "shutdown" in KINDS[kind] and (freed := release_excess(sizes, min(at.pool, at.data))):
        mem["shutdown"] = freed[:3]
        out["regime"] = [*out["regime"], freed[3]]
    look = lookup_factor(sizes, recovery_bytes(at, sh)[1] / sh.page) if kind == "crash-during-load" else None
    if look:
        out["regime"] = [*out["regime"], look[3]]
    phases, total, down, up = [], 0.0, 0.0, 0.0
    for phase in KINDS[kind]:
        pts = [(o.quantity, o.seconds) for o in obs if o.phase == phase]
        if len(pts) < 2:
            return {**out, "refused": f"phase {phase}: {len(pts)} repetition(s) in the rungs, 2 or more needed"}
        drv = driver(kind, phase, large_pages=on_large_pages(sizes))
        try:
            f = (rate_fit(pts, sh.copy_per_byte) if phase == "sst_stream" and sh.copy_per_byte and
                 all(q is not None for q, _ in pts) else fit(pts if drv else [(None, y) for _, y in pts], confidence))
        except ValueError as exc:
            return {**out, "refused": f"phase {phase} ({drv.words}): {exc}"}
        if f.left_out:
            out["regime"] = [*out["regime"], f"{phase}: fitted on {f.n} of {f.n + f.left_out} repetitions (the "
                                             f"others' logs gave no quantity: {drv.words})"]
        how = bound(f, drv, here, sh.page, sh.moved.get(phase, 1.0))   # as the rungs ran it
        f = on_device(f, how, (here, at.device), moved.get(phase, 1.0))
        qq = q.get(phase) if drv else None
        sec, low, high = interval(f, qq, confidence, floor)
        if drv and drv.work == "seq" and qq:     # bytes written in order: no faster than the device writes
            low = max(low, qq * ((at.device or here).get("seq_write_s_per_byte") or 0.0))
        if phase == "redo_scan" and look:   # the same lookups, each past the cache at the user's map
            grow = f.per_unit * (qq or 0.0)
            sec, low, high = sec + grow * (look[0] - 1), low + grow * (look[1] - 1), high + grow * (look[2] - 1)
            how = "CPU cache (page map)" if grow * (look[0] - 1) > sec / 2 else how
        add = mem.get(phase, (0.0, 0.0, 0.0))
        sec, low, high = sec + add[0], low + add[1], high + add[2]
        reach = qq / f.q_max if qq and f.q_max else None
        # growth the rungs cannot exclude is not assumed away: a user plans by its upper bound
        plan = high if drv and f.b_high and qq else sec
        if plan - sec > sec:
            out["regime"] = [*out["regime"], f"{phase}: the rungs do not tell its growth with the {drv.words} "
                                             f"(up to +{duration(high - sec)} at your size): planned at that "
                                             f"bound; larger rungs would tell it"]
        phases.append({"phase": phase, "driver": drv.words if drv else None, "quantity_bytes": qq,
                       "quantity_in_bytes": bool(drv and drv.in_bytes),
                       "past_rungs": reach, "seconds": sec, "ci_low": low, "ci_high": high, "plan_s": plan,
                       "a_s": f.a, "b_s_per_byte": f.per_unit, "n": f.n, "memory_s": add[0],
                       "bound": (("memory (release)" if phase == "shutdown" else "memory (first touch)")
                                 if add[0] > sec / 2 else how), "note": f.note})
        total += sec
        down += (sec - low) ** 2
        up += (high - sec) ** 2
    dom = max(phases, key=lambda p: p["seconds"])
    got = {**out, "phases": phases, "total_s": total, "total_ci_low": max(0.0, total - math.sqrt(down)),
           "total_ci_high": total + math.sqrt(up), "dominant": dom["phase"], "dominant_bound": dom["bound"],
           # every phase at its plan figure (a sum, not the interval's root-sum-square); said where it adds a tenth
           "plan_s": planned if (planned := sum(ph["plan_s"] for ph in phases)) > 1.1 * total else None}
    held = held_band(at.redo_log, at.pool, sh.page, sh.redo_rate)
    ages = {"crash-during-load": (held, "a load at the flush-ahead marks holds") if held
            else (sh.age_range, "the rungs' kills left"),
            "node-restart-sst": (sh.sst_redo_range, "the rungs' donors' backups copied")}.get(kind)
    if ages and ages[0] and at.checkpoint_age is None:
        age_spread(got, [predict_kind(kind, obs, sizes, replace(
            at, checkpoint_age=min(x * at.redo_log, max_checkpoint_age(at.redo_log, sh.page))), confidence, floor)
            for x in (*ages[0], 1.0)], ages[0], ages[1])
    return got


def _median_device(sizes: list[RungSizes]) -> dict:
    keys = {k for s in sizes for k in s.device}
    return {k: _median([s.device.get(k) for s in sizes]) for k in keys}


def predict_all(obs: list[PhaseObservation], sizes: dict, at: UserNode, confidence: float, floor: float) -> list[dict]:
    """Every (target, kind) the rungs ran, at ``at``; IST past the gcache answered by SST."""
    out = []
    targets = sorted({o.target for o in obs})
    for target in targets:
        rungs = [s for (run, t), s in sizes.items() if t == target]
        for kind in KINDS:
            mine = [o for o in obs if o.target == target and o.kind == kind]
            if not mine:
                continue
            p = predict_kind(kind, mine, rungs, at, confidence, floor)
            missed = quantities(at, Shares.of(rungs), kind)[0].get("state_transfer") \
                if kind == "node-restart-ist" else None
            if missed and at.gcache and missed > at.gcache:
                sst = [o for o in obs if o.target == target and o.kind == "node-restart-sst"]
                words = (f"{human(missed)} of write sets missed outgrow the donor's {human(at.gcache)} gcache: "
                         f"the node rejoins by SST")
                p = ({**predict_kind("node-restart-sst", sst, rungs, at, confidence, floor), "kind": kind,
                      "transfer": "SST"} if sst else {**p, "refused": words + "; no rung ran an SST"})
                p["regime"] = [*p.get("regime", []), words]
            elif kind == "node-restart-ist":
                p["transfer"] = "IST"
                p["regime"] = [*p.get("regime", []), f"{human(missed or 0)} of write sets missed, within the "
                                                      f"{human(at.gcache or 0)} gcache: IST"]
            out.append({"key": {"target": target, "kind": kind}, **p})
    return out


def measured(obs: list[PhaseObservation]) -> dict:
    """A run's own restarts: per (target, kind) its totals (median over repetitions) and each
    phase's median."""
    out: dict = {}
    for (target, kind) in sorted({(o.target, o.kind) for o in obs}):
        mine = [o for o in obs if o.target == target and o.kind == kind]
        reps = sorted({o.rep for o in mine})
        totals = [sum(o.seconds for o in mine if o.rep == r and o.phase in KINDS[kind]) for r in reps]
        phases = {ph: _median([o.seconds for o in mine if o.phase == ph]) for ph in KINDS[kind]}
        quantity = {ph: _median([o.quantity for o in mine if o.phase == ph]) for ph in KINDS[kind]}
        out[f"{target}/{kind}"] = {"total_s": _median(totals), "totals": totals, "n": len(totals),
                                   "phases": phases, "quantities": quantity}
    return out


def _phase_score(p: dict, m: dict, phase: str) -> dict:
    """One phase, predicted ÷ measured and inside its interval or not; a phase the prediction
    has no figure for scores as a miss (ratio 0)."""
    pred = next((x for x in p["phases"] if x["phase"] == phase), None)
    md = m["phases"].get(phase)
    if pred is None:
        return {"predicted_s": None, "measured_s": md, "ratio": 0.0, "inside": False}
    return {"predicted_s": pred["seconds"], "measured_s": md, "ratio": pred["seconds"] / md if md else None,
            "inside": md is not None and pred["ci_low"] <= md <= pred["ci_high"],
            "quantity_predicted": pred.get("quantity_bytes")}


def score(predictions: list[dict], seen: dict) -> list[dict]:
    """Each predicted kind against the measured run: predicted ÷ measured of the total, of the
    phase the prediction called dominant and of the one that took longest when measured, each
    inside its interval or not. Two dominant phases that differ are a miss (``dominant_agrees``):
    a phase that took most of the time must be scored, not only the one the model expected."""
    out = []
    for p in predictions:
        name = f"{p['key']['target']}/{p['key']['kind']}"
        m = seen.get(name)
        if m is None or "refused" in p or not m["total_s"]:
            continue
        dom = _phase_score(p, m, p["dominant"])
        measured_dom = max((ph for ph, v in m["phases"].items() if v is not None), key=m["phases"].get,
                           default=p["dominant"])
        mdom = _phase_score(p, m, measured_dom)
        out.append({"key": p["key"], "total_predicted_s": p["total_s"], "total_measured_s": m["total_s"],
                    "total_ratio": p["total_s"] / m["total_s"], "n": m["n"],
                    "total_inside": p["total_ci_low"] <= m["total_s"] <= p["total_ci_high"],
                    "plan_s": p.get("plan_s"), "plan_covers": (p.get("plan_s") or p["total_s"]) >= m["total_s"],
                    "dominant": p["dominant"], "dominant_predicted_s": dom["predicted_s"],
                    "dominant_measured_s": dom["measured_s"], "dominant_ratio": dom["ratio"],
                    "dominant_inside": dom["inside"],
                    "quantity_predicted": dom.get("quantity_predicted"),
                    "quantity_measured": m["quantities"].get(p["dominant"]),
                    "measured_dominant": measured_dom, "measured_dominant_predicted_s": mdom["predicted_s"],
                    "measured_dominant_measured_s": mdom["measured_s"], "measured_dominant_ratio": mdom["ratio"],
                    "measured_dominant_inside": mdom["inside"], "dominant_agrees": measured_dom == p["dominant"]})
    return out
