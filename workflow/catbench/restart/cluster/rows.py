"""From what one node restart left behind (client times, the joiner's and donor's log
events, the workload's own log) to rows: phase rows (``ROW_KEYS``) and load-window rows
(``LOAD_KEYS``), the columns of the report's ``cluster_restart`` table, plus the detail.

Clocks: ``client`` = this process's ``time.time()`` (stop/kill call, process exit, the new
process first seen, first correct answer); ``log-observed`` = when a line appeared in a
node's error log (polled every 2 ms). Every ``process_start_to_*`` phase counts from the
new server process (not from the ``--wsrep-recover`` pass of a crash).
"""

from __future__ import annotations

from .. import errorlog
from ..phases import diff
from . import galera_log, stream

ROW_KEYS = ("target", "kind", "repetition", "node", "phase", "seconds", "clock", "transfer", "transfer_bytes",
            "transfer_MBps", "donor", "acked_inserts", "acked_lost", "checksums_equal")
LOAD_KEYS = ("target", "kind", "repetition", "window", "window_s", "node", "role", "lookups_ok", "lookups_failed",
             "lookups_per_s", "lookup_p50_ms", "lookup_p99_ms", "insert_rows", "inserts_per_s",
             "insert_max_latency_s", "insert_failures")
WINDOWS = ("before", "during", "transfer", "after")
BYTES_NOTE = ("SST: bytes of the joiner's data files (tablespaces and system tables; redo log, gcache "
              "excluded) when 'SST received' was logged; IST: write sets received (joiner log) x mean "
              "write-set bytes on the insert node over the restart (wsrep_replicated_bytes / "
              "wsrep_replicated); MB/s = bytes / the transfer's own phase (sst_receive, ist_apply); "
              "sst_stream: mariabackup's estimate of its data files (donor log 'To transfer') plus the redo it "
              "copied (the donor's mariabackup.backup.log) over the donor's streaming time; sst_prepare: that redo; "
              "sst_copy: bytes the joiner's .sst folder grew by during the stream over the seconds it grew "
              "(sampled every 10 ms)")


def _row(run, obs, phase, seconds, clock, **kw) -> dict:
    out = dict.fromkeys(ROW_KEYS)
    out.update(target=run.cluster.target, kind=obs["kind"], repetition=obs["repetition"], node=obs["node"],
               phase=phase, seconds=None if seconds is None else round(float(seconds), 6), clock=clock,
               donor=obs.get("donor"))
    out.update(kw)
    return out


def _mean_writeset_bytes(samples) -> float | None:
    pts = [(int(s["wsrep_replicated"]), int(s["wsrep_replicated_bytes"])) for _, s in samples
           if s.get("wsrep_replicated") is not None and s.get("wsrep_replicated_bytes") is not None]
    if len(pts) < 2 or pts[-1][0] <= pts[0][0]:
        return None
    return (pts[-1][1] - pts[0][1]) / (pts[-1][0] - pts[0][0])


def _rate(nbytes, seconds):
    return nbytes / 1e6 / seconds if nbytes is not None and seconds else None


def transfer(obs: dict) -> dict:
    """Which transfer the node got (IST/SST), its times on the joiner's and donor's logs,
    bytes and rate."""
    ev, dv = obs["start_events"], obs["donor_events"]
    s = {n: galera_log.seen(ev, n) for n in ("primary", "joiner", "sst_received", "sst_prepare", "engine_ready",
                                             "joined", "synced")}
    s["ist_start"] = galera_log.seen(ev, "ist_start", last=True) or galera_log.seen(ev, "ist_events", last=True)
    s["ist_received"] = galera_log.seen(ev, "ist_received", last=True)
    kind = galera_log.transfer_kind(ev)
    s["end"] = max([t for t in (s["sst_received"], s["ist_received"]) if t is not None], default=None)
    writesets = galera_log.ist_writesets(ev)
    ws_bytes = _mean_writeset_bytes(obs["status_samples"])
    ist_bytes = int(writesets * ws_bytes) if writesets is not None and ws_bytes is not None else None
    sst_s = diff(s["joiner"], s["sst_received"]) if kind == "SST" else None
    ist_s = diff(s["ist_start"], s["ist_received"])
    d = {n: galera_log.seen(dv, n) for n in ("donor_start", "sst_sleep", "sst_stream", "sst_donor_done",
                                             "donor_synced")}
    parts = obs.get("sst_state_parts") if kind == "SST" else None
    sst_bytes = sum(parts.values()) if parts else None
    est, redo = galera_log.sst_estimate(dv), obs.get("sst_redo_bytes") if kind == "SST" else None
    return {"kind": kind, "times": s, "donor_times": d, "ist_writesets": writesets,
            "mean_writeset_bytes": ws_bytes, "ist_bytes": ist_bytes, "ist_s": ist_s,
            "ist_MBps": _rate(ist_bytes, ist_s), "sst_bytes": sst_bytes, "sst_s": sst_s,
            "sst_MBps": _rate(sst_bytes, sst_s), "sst_estimate_bytes": est, "sst_redo_bytes": redo,
            "sst_stream_bytes": est + redo if est is not None and redo is not None else None,
            # the joiner's files by part once the SST arrived, and the node's before the index was loaded
            "sst_parts": parts,
            "fresh_parts": obs.get("fresh_state_parts") if kind == "SST" else None,
            "sst_copy": stream.copy_rate(obs.get("sst_staging") or [], d["sst_stream"], d["sst_donor_done"]),
            "bytes": sst_bytes if kind == "SST" else ist_bytes,
            "MBps": _rate(sst_bytes, sst_s) if kind == "SST" else _rate(ist_bytes, ist_s),
            "bytes_note": BYTES_NOTE}


def _recover_phases(obs) -> list[tuple]:
    rec = obs.get("recover")
    if not rec:
        return []
    ev = rec["events"]
    rs = errorlog.first(ev, "recovery_start")
    end = errorlog.first(ev, "engine_ready")
    return [("wsrep_recover", rec["seconds"], "client"),
            ("innodb_crash_recovery", diff(rs.seen if rs else None, end.seen if end else rec["t_end"]),
             "log-observed")]


def phase_rows(run, obs: dict, tr: dict) -> list[dict]:
    t0, s, d = obs["t_spawn"], tr["times"], tr["donor_times"]
    crash = obs["kind"] == "node-crash"
    phases = [("kill" if crash else "shutdown", diff(obs["t_down"], obs["t_exit"]), "client")]
    if "wipe_s" in obs:
        phases.append(("wipe_datadir", obs["wipe_s"], "client"))
    phases += _recover_phases(obs)
    phases += [("node_down", diff(obs["t_down"], t0), "client")]
    phases += [(f"process_start_to_{n}", diff(t0, s[k]), "log-observed") for n, k in (
        ("primary", "primary"), ("transfer_start", "joiner"), ("engine_ready", "engine_ready"),
        ("transfer_end", "end"), ("joined", "joined"), ("synced", "synced"))]
    phases += [("process_start_to_first_answer", diff(t0, obs["t_answer"]), "client"),
               ("down_to_synced", diff(obs["t_down"], s["synced"]), "log-observed"),
               ("down_to_first_answer", diff(obs["t_down"], obs["t_answer"]), "client")]
    rows = [_row(run, obs, p, sec, clock) for p, sec, clock in phases]
    xfer = dict(transfer=tr["kind"])
    rows.append(_row(run, obs, "state_transfer", diff(s["joiner"], s["end"]), "log-observed",
                     transfer_bytes=tr["bytes"], transfer_MBps=tr["MBps"], **xfer))
    if tr["kind"] == "SST":
        rows.append(_row(run, obs, "sst_receive", tr["sst_s"], "log-observed", transfer_bytes=tr["sst_bytes"],
                         transfer_MBps=tr["sst_MBps"], **xfer))
        for p, a, b in (("sst_donor_sleep", d["sst_sleep"], d["sst_stream"]),
                        ("sst_stream", d["sst_stream"], d["sst_donor_done"]),
                        ("sst_prepare", s["sst_prepare"], s["sst_received"])):
            if a is not None:
                # what each part moves: the data files and the redo streamed, the redo prepared
                n = {"sst_stream": tr["sst_stream_bytes"] or tr["sst_estimate_bytes"],
                     "sst_prepare": tr["sst_redo_bytes"]}.get(p)
                moved = dict(transfer_bytes=n, transfer_MBps=_rate(n, diff(a, b))) if n is not None else {}
                rows.append(_row(run, obs, p, diff(a, b), "log-observed", **xfer, **moved))
    if tr["ist_s"] is not None:
        rows.append(_row(run, obs, "ist_apply", tr["ist_s"], "log-observed", transfer="IST",
                         transfer_bytes=tr["ist_bytes"], transfer_MBps=tr["ist_MBps"]))
    return rows


def windows(obs: dict, tr: dict, before_s: float) -> dict[str, tuple[float, float]]:
    synced = tr["times"]["synced"] or obs["t_synced_status"]
    out = {"before": (obs["t_down"] - before_s, obs["t_down"]), "during": (obs["t_down"], synced),
           "after": (synced, obs["t_end"])}
    if tr["times"]["joiner"] and tr["times"]["end"]:
        out["transfer"] = (tr["times"]["joiner"], tr["times"]["end"])
    return out


def load_rows(run, obs: dict, tr: dict, wl) -> list[dict]:
    rows = []
    for window, (a, b) in windows(obs, tr, run.spec.load.before_s).items():
        for node in run.cluster.nodes:
            roles = [r for r, name in (("insert", run.insert_node.name), ("restarted", obs["node"]),
                                       ("donor", obs.get("donor"))) if name == node.name] or ["other"]
            out = dict.fromkeys(LOAD_KEYS)
            out.update(target=run.cluster.target, kind=obs["kind"], repetition=obs["repetition"], window=window,
                       window_s=round(b - a, 6), node=node.name, role="+".join(roles))
            out.update(wl.lookup_window(node.name, a, b))
            if node is run.insert_node:
                out.update(wl.insert_window(a, b))
            rows.append(out)
    return rows


def _flow_control_s(samples) -> float | None:
    vals = [int(s["wsrep_flow_control_paused_ns"]) for _, s in samples if s.get("wsrep_flow_control_paused_ns")]
    return (vals[-1] - vals[0]) / 1e9 if len(vals) > 1 else None


def build(run, obs: dict, wl) -> tuple[list[dict], list[dict], dict]:
    obs["start_events"] = errorlog.last_start(obs["joiner_events"])
    tr = transfer(obs)
    rows = phase_rows(run, obs, tr)
    lrows = load_rows(run, obs, tr, wl)
    t0 = obs["t_spawn"]
    rel = (lambda t: None if t is None else round(t - t0, 6))
    detail = {
        "repetition": obs["repetition"], "node": obs["node"], "donor": obs.get("donor"),
        "transfer": {k: v for k, v in tr.items() if k not in ("times", "donor_times")},
        "times_from_process_start_s": {k: rel(v) for k, v in tr["times"].items()},
        "donor_times_from_process_start_s": {k: rel(v) for k, v in tr["donor_times"].items()},
        "down_at_s": rel(obs["t_down"]), "exit_at_s": rel(obs["t_exit"]), "start_call_at_s": rel(obs["t_call"]),
        "first_connect_at_s": rel(obs["t_connect"]), "first_answer_at_s": rel(obs["t_answer"]),
        "probe_key": obs.get("probe_key"), "probe_errors": obs.get("probe_errors"),
        "recovered_position": obs.get("recovered_position"),
        "recover_events": [e.as_dict(t0) for e in (obs.get("recover") or {}).get("events", [])],
        "events": [e.as_dict(t0) for e in obs["start_events"]],
        "donor_events": [e.as_dict(t0) for e in obs["donor_events"]],
        "flow_control_paused_s": _flow_control_s(obs["status_samples"]),
        "lookup_errors": wl.lookup_errors, "insert_errors": wl.insert_errors[:20],
        "acked_inserts": len(wl.acked), "in_doubt_inserts": len(wl.in_doubt),
        "wrong_answers": obs.get("wrong_answers", []),
        "listeners": [{"address": a, "port": port, "process": name} for a, port, name in obs["listeners"]],
    }
    return rows, lrows, detail
