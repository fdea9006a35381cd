"""Galera's side of a node's error log: the wsrep state changes and state-transfer lines
of MariaDB 10.4+ with galera-4 (joiner and donor), beside the InnoDB markers that
``restart.errorlog`` already knows. Lines come from an ``errorlog.LogWatcher`` (each with
the time it was seen, polled every 2 ms); the SST script's own lines (``WSREP_SST:``)
carry no leading timestamp, so the seen time is the clock of every boundary.
"""

from __future__ import annotations

import re

from .. import errorlog
from ..errorlog import Event

# name -> pattern, the first match names a line; numbers are the pattern's integer groups.
JOINER = [(n, re.compile(p)) for n, p in [
    ("primary", r"WSREP: Shifting OPEN -> PRIMARY"),
    # the joiner's local state as it asks for a transfer: an all-zero uuid (or f: 0) = full SST
    ("ist_range", r"####### IST uuid:([0-9a-f-]{36}) f: (-?\d+), l: (-?\d+)"),
    ("donor_selected", r"requested state transfer from .*Selected \d+\.\d+ \(([^)]*)\)"),
    ("joiner", r"WSREP: Shifting PRIMARY -> JOINER"),
    ("sst_proceed", r"WSREP_SST: \[INFO\] Proceeding with SST"),
    ("sst_ist_only", r"received from donor: Running IST"),
    ("sst_prepare", r"WSREP_SST: \[INFO\] Preparing the backup"),
    ("sst_received", r"WSREP: SST received"),
    ("sst_failed", r"SST failed|State transfer to .* failed|Failed to prepare for .*SST"),
    ("ist_start", r"Receiving IST: (\d+) writesets, seqnos (-?\d+)-(-?\d+)"),
    ("ist_events", r"Receiving IST\.\.\. *100\.0% \((\d+)/(\d+) events\)"),
    ("ist_received", r"WSREP: IST received: [0-9a-f-]{36}:(-?\d+)"),
    ("joined", r"WSREP: Shifting JOINER -> JOINED"),
    ("synced", r"WSREP: Shifting JOINED -> SYNCED"),
    ("recovered_position", r"WSREP: Recovered position: *[0-9a-f-]{36}:(-?\d+)"),
]]
DONOR = [(n, re.compile(p)) for n, p in [
    ("donor_start", r"WSREP: Shifting SYNCED -> DONOR/DESYNCED"),
    ("ist_sender", r"async IST sender starting to serve .* sending (-?\d+)-(-?\d+)"),
    ("sst_to_transfer", r"WSREP_SST: \[INFO\] To transfer: (\d+)"),
    ("sst_sleep", r"WSREP_SST: \[INFO\] Sleeping before data transfer"),
    ("sst_stream", r"WSREP_SST: \[INFO\] Streaming the backup to joiner"),
    ("sst_donor_done", r"SST completed on donor"),
    ("donor_joined", r"WSREP: Shifting DONOR/DESYNCED -> JOINED"),
    ("donor_synced", r"WSREP: Shifting JOINED -> SYNCED"),
]]
_PATTERNS = dict(JOINER)
_ZERO_UUID = "00000000-0000-0000-0000-000000000000"
# InnoDB markers of restart.errorlog worth keeping beside Galera's
_INNODB = ("process_start", "recovery_start", "end_of_log", "engine_ready", "ready", "shutdown_done", "error")


def classify(seen: float, line: str, markers) -> Event | None:
    for name, pat in markers:
        m = pat.search(line)
        if m:
            nums = [int(g) for g in m.groups() if g is not None and re.fullmatch(r"-?\d+", g)]
            return Event(name, line.rstrip("\n"), errorlog.line_time(line), seen, nums)
    ev = errorlog.classify(line, seen)
    return ev if ev is not None and ev.name in _INNODB else None


def scan(lines: list[tuple[float, str]], markers=JOINER) -> list[Event]:
    """Events of (seen, line) pairs, in order."""
    return [e for e in (classify(t, line, markers) for t, line in lines) if e is not None]


def seen(events: list[Event], name: str, last: bool = False) -> float | None:
    ev = errorlog.last(events, name) if last else errorlog.first(events, name)
    return ev.seen if ev else None


def donor_name(events: list[Event]) -> str | None:
    ev = errorlog.first(events, "donor_selected")
    if ev is None:
        return None
    m = _PATTERNS["donor_selected"].search(ev.line)
    return m.group(1) if m else None


def transfer_kind(events: list[Event]) -> str | None:
    """"SST" when the joiner asked with no usable state, "IST" when it had one; None when
    it needed no transfer at all."""
    ev = errorlog.first(events, "ist_range")
    if ev is None:
        return None
    m = _PATTERNS["ist_range"].search(ev.line)
    if m.group(1) == _ZERO_UUID or int(m.group(2)) <= 0:
        return "SST"
    return "IST"


def ist_writesets(events: list[Event]) -> int | None:
    """Write sets the joiner received by IST (the last IST of this start)."""
    ev = errorlog.last(events, "ist_start")
    if ev is not None:
        return ev.numbers[0]
    ev = errorlog.last(events, "ist_events")
    return ev.numbers[1] if ev is not None else None


_REDO_COPIED = re.compile(r"Redo log \(from LSN (\d+) to (\d+)\) was copied")


def backup_redo_bytes(backup_log: str) -> int | None:
    """The redo an SST's backup copied beside the data files (the donor's
    ``mariabackup.backup.log``: 'Redo log (from LSN a to b) was copied'): the donor's
    checkpoint age as it streamed, which the joiner's prepare applies."""
    m = None
    for m in _REDO_COPIED.finditer(backup_log):
        pass
    return int(m.group(2)) - int(m.group(1)) if m else None


def sst_estimate(donor_events: list[Event]) -> int | None:
    """mariabackup's own estimate of the bytes it streams (donor log 'To transfer: N')."""
    ev = errorlog.first(donor_events, "sst_to_transfer")
    return ev.numbers[0] if ev is not None else None
