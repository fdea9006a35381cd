"""Restart rungs built in memory, as read_restarts gives them: each phase beside its quantity,
per kind, at three scales."""

from __future__ import annotations

import json

from catbench.predict.restarts.runs import PhaseObservation, RungSizes

G = 2 ** 30


def rung(run: str, scale: float, multi: bool = False) -> tuple[list[PhaseObservation], RungSizes]:
    data, log = 1e8 * scale, 5e7 * scale
    s = RungSizes(run, "disk", rows=int(1e6 * scale), data_bytes=data, pool_bytes=2 * data, redo_log_bytes=log,
                  checkpoint_age=[0.7 * log] * 2, recovered_pages=[(0.7 * log, 0.5 * data / 16384, 0.8, None)] * 2,
                  batches=[(0.7 * log, multi)] * 2, dump_share=[1.0, 1.0], sst_bytes=[1.1 * data] * 2,
                  sst_redo_share=[0.1, 0.3], sst_copy_s_per_byte=[1.9e-8, 2.1e-8],
                  ist_bytes_per_down_s=[1e5, 1e5], device={"page_read_s": 1e-4, "seq_write_s_per_byte": 1e-9})
    obs = []
    for rep, e in ((0, 0.01), (1, -0.01)):
        def add(kind, phase, seconds, q=None):
            obs.append(PhaseObservation(run, "disk", kind, phase, rep, seconds * (1 + e), q))
        for kind in ("node-restart-sst", "node-restart-ist"):
            add(kind, "shutdown", 0.1)
            add(kind, "start_to_transfer", 1.5)
            add(kind, "transfer_end_to_synced", 0.05)
        redo = (0.1, 0.3)[rep] * log
        add("node-restart-sst", "sst_donor_sleep", 10.0)
        add("node-restart-sst", "sst_stream", 0.5 + 2e-8 * (1.1 * data + redo), 1.1 * data + redo)
        add("node-restart-sst", "sst_prepare", 0.1 + 1e-8 * redo, redo)
        add("node-restart-sst", "sst_rest", 0.3)
        add("node-restart-ist", "state_transfer", 0.05 + 1e-7 * 1e5 * 2 * scale, 1e5 * 2 * scale)
        add("crash-during-load", "start_to_recovery", 0.05)
        add("crash-during-load", "redo_scan", 0.01 + 4e-9 * 0.7 * log, 0.7 * log)
        add("crash-during-load", "redo_apply", 0.01 + 2e-9 * 0.5 * data, 0.5 * data)
        add("crash-during-load", "ready_to_first_answer", 0.02)
    return obs, s


def ladder(multi: bool = False):
    obs, sizes = [], {}
    for k, scale in enumerate((1, 2, 4), start=1):
        o, s = rung(f"r{k}", scale, multi)
        obs += o
        sizes[(s.run, "disk")] = s
    return obs, sizes


def write_rung(root, run: str, scale: float) -> str:
    """A rung's result files as the restart and cluster stages write them (the fields read)."""
    res = root / run
    r, c = res / "restart" / "disk", res / "cluster" / "disk"
    r.mkdir(parents=True)
    c.mkdir(parents=True)
    data_pages, log = int(6000 * scale), int(32e6 * scale)
    variables = {"innodb_buffer_pool_size": str(2 * data_pages * 16384), "innodb_log_file_size": str(log),
                 "innodb_page_size": "16384"}
    (r / "summary.json").write_text(json.dumps({"rows": int(5e5 * scale)}))
    rows, det = [], []
    for rep in range(2):
        for on in (False, True):
            rows += [{"repetition": rep, "phase": p, "seconds": s, "buffer_pool_load": on} for p, s in (
                ("shutdown", 0.03), ("process_start_to_engine_ready", 0.08),
                ("process_start_to_first_answer", 0.1), ("process_start_to_buffer_pool_loaded", 0.08 + 0.01 * scale))]
        det.append({"repetition": rep, "modes": {m: {"settle": {"seconds": 0.2 * scale, "data_pages": data_pages,
                                                                 "dirty_pages_before": data_pages // 2},
                                                      "shutdown": {"dump_pages": data_pages if m == "on" else None}}
                                                  for m in ("off", "on")}})
    (r / "clean.json").write_text(json.dumps({"server": {"variables": variables}, "rows": rows, "detail": det}))
    rows, det = [], []
    for rep in range(2):
        redo = 0.7 * log * (1 + 0.01 * rep)
        rows += [{"repetition": rep, "phase": p, "seconds": s} for p, s in (
            ("process_start_to_recovery_start", 0.05), ("redo_scan", 0.01 + redo / 3e8),
            ("redo_apply", 0.02 * scale), ("process_start_to_first_answer", 0.2 + redo / 3e8 + 0.02 * scale))]
        det.append({"repetition": rep, "files": 10, "committed_files": 8,
                    "recovery": {"redo_bytes": redo, "redo_batches": [
                        {"event": "to_recover", "numbers": [int(0.5 * data_pages)]}]}})
    (r / "crash-during-load.json").write_text(json.dumps({"server": {"variables": variables}, "rows": rows,
                                                          "detail": det}))
    for kind, tr in (("node-restart-sst", "SST"), ("node-restart-ist", "IST")):
        nbytes = 1.1 * data_pages * 16384 if tr == "SST" else 2e5 * scale
        redo = [(0.2 + 0.1 * rep) * log for rep in range(2)]      # the donor's checkpoint age as it streams
        parts = [(("sst_donor_sleep", 10.0), ("sst_stream", 0.5 + (nbytes + redo[rep]) / 2e8),
                  ("sst_prepare", 0.1 + redo[rep] / 1e8)) if tr == "SST" else () for rep in range(2)]
        xfer = [sum(s for _, s in parts[rep]) + 0.3 if tr == "SST" else 0.05 + nbytes / 5e6 for rep in range(2)]
        rows = [{"repetition": rep, "phase": p, "seconds": s} for rep in range(2) for p, s in (
            ("shutdown", 0.1), ("node_down", 2.0 * scale), ("process_start_to_transfer_start", 1.5),
            ("process_start_to_transfer_end", 1.5 + xfer[rep]), ("process_start_to_synced", 1.6 + xfer[rep]),
            *parts[rep])]
        data = data_pages * 16384     # the joiner's tables; its system tablespace grown 3x that by the load's undo
        split = {"sst_parts": {"tables": data, "system": 12e6 + 3 * data, "undo": 0, "temp": 12e6, "server": 20e6},
                 "fresh_parts": {"tables": 0, "system": 12e6, "undo": 0, "temp": 12e6, "server": 20e6}}
        # times from the restarted process's start, as the stage writes them: the node went down before it
        det = [{"repetition": rep, "down_at_s": -2.0 * scale - 0.2, "exit_at_s": -2.0 * scale - 0.1,
                "start_call_at_s": -0.004, "transfer": {"kind": tr, "bytes": nbytes, "sst_estimate_bytes": nbytes,
                                                "sst_redo_bytes": redo[rep], "sst_copy": {"MBps": 200.0},
                                                **(split if tr == "SST" else {})}}
               for rep in range(2)]
        (c / f"{kind}.json").write_text(json.dumps({"kind": kind, "gcache_size": f"{int(4 * scale)}M",
                                                    "server": {"settings": {"innodb_log_file_size": str(int(log))}},
                                                    "load_options": {"down_s": 2.0 * scale}, "rows": rows,
                                                    "detail": det}))
    return str(res)
