"""Restart rungs built in memory, as read_restarts gives them: each phase beside its quantity,
per kind, at three scales."""

from __future__ import annotations

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
