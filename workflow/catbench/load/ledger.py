"""Loads that survive hours: the ledger of committed files, the resume state, and the
time limit (strategies marked ``resumable`` in the registry).

Each input file is loaded in one transaction together with its row in the ledger table
(``secondary_index.catbench_ledger``, ``resources/sql/index/ledger_*.sql``), so after any
interruption (the job SIGKILLed, Snakemake interrupted, the server crashed, a reboot) the
ledger names exactly the files whose rows are in the table. A failed job keeps its
server's data and ``resume.json`` beside it (which load it was, the repetition in
progress, the finished repetitions' results); the re-run of the same load finds them and
continues with the first file not in the ledger, so at most the file in flight is loaded
again. A re-run with another input, variant, strategy, options or settings starts afresh.

The files loaded before the interruption keep their measured durations; their clock is
moved to end where the resumed load starts, so rates and the rate curve cover loading
time only (the downtime is recorded as ``resumed_after_s``, not counted).
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from types import SimpleNamespace

from ..core.index.input import FileInfo, scan_files
from ..core.infra.resources import read_sql
from ..core.server.loaddata import LoadError
from .job import Outcome, Repetition, trace_row


STATE = "resume.json"


def load_key(files: list[Path], variant: str, strategy: str, table: str, options: dict, settings: dict) -> str:
    """What makes two loads the same load: input (paths and sizes), schema, strategy, knobs."""
    doc = {"files": [[str(f), f.stat().st_size] for f in files], "variant": variant, "strategy": strategy,
           "table": table, "options": options, "settings": settings}
    return hashlib.sha256(json.dumps(doc, sort_keys=True, default=str).encode()).hexdigest()


class ResumeState:
    """``<server dir>/resume.json``: the load's key, the repetition in progress and the
    finished repetitions (written atomically after each change)."""

    def __init__(self, path: Path, key: str, repetition: int = 0, in_progress: bool = False,
                 completed: list | None = None):
        self.path, self.key = Path(path), key
        self.repetition, self.in_progress = repetition, in_progress
        self.completed = completed or []

    @classmethod
    def find(cls, server_dir: Path, key: str) -> "ResumeState | None":
        """The interrupted state of this same load, or None (absent, unreadable, another load)."""
        path = Path(server_dir) / STATE
        try:
            doc = json.loads(path.read_text())
        except (OSError, ValueError):
            return None
        if doc.get("key") != key or not (Path(server_dir) / "data").is_dir():
            return None
        return cls(path, key, doc["repetition"], doc["in_progress"], doc["completed"])

    def save(self):
        tmp = self.path.with_name(f".{STATE}.tmp")
        tmp.write_text(json.dumps({"key": self.key, "repetition": self.repetition, "in_progress": self.in_progress,
                                   "completed": self.completed}, default=str))
        os.replace(tmp, self.path)

    def begin(self, rep: int):
        self.repetition, self.in_progress = rep, True
        self.save()

    def finish(self, run: Repetition):
        self.completed.append(repetition_doc(run))
        self.repetition, self.in_progress = run.rep + 1, False
        self.save()

    def resuming(self, rep: int) -> bool:
        return self.in_progress and self.repetition == rep


def repetition_doc(run: Repetition) -> dict:
    o = run.outcome
    return {"rep": run.rep, "figures": run.figures, "t0": run.t0, "t1": run.t1, "samples": run.sampler.rows,
            "trace": o.trace, "phases": o.phases, "timings": o.timings, "extra": o.extra,
            "infos": [[str(i.path), i.rows, i.bytes, i.checksum] for i in o.infos]}


def repetition_from_doc(doc: dict) -> Repetition:
    infos = [FileInfo(Path(p), r, b, c) for p, r, b, c in doc["infos"]]
    outcome = Outcome(doc["trace"], infos, doc["phases"], doc["timings"], doc["extra"])
    return Repetition(doc["rep"], doc["figures"], outcome, SimpleNamespace(rows=doc["samples"]), doc["t0"], doc["t1"])


class Ledger:
    """The committed files of one table and repetition."""

    def __init__(self, database: str, table: str, rep: int, files: list[Path]):
        self.database, self.table, self.rep = database, table, rep
        self.seq = {str(f): i for i, f in enumerate(files)}

    def _sql(self, name: str) -> str:
        return read_sql("index", f"ledger_{name}.sql").format(database=self.database)

    def create(self, conn):
        conn.cursor().execute(self._sql("table"))

    def clear(self, conn):
        conn.cursor().execute(self._sql("clear"), (self.table,))

    def record(self, cur, info: FileInfo, start: float, end: float):
        path = str(info.path)
        cur.execute(self._sql("insert"), (self.table, self.rep, self.seq[path], path, info.rows, info.bytes,
                                           info.checksum, start, end))

    def committed(self, conn, variant) -> tuple[list[dict], list[FileInfo]]:
        """(trace rows, FileInfos) of the files already in the table; LoadError when the
        ledger names a file that is no longer the input's (the load cannot be resumed). The
        committed files are read again: a file changed in place (same size) would otherwise
        end the load with the table's checksum of the old rows reported as the input's."""
        cur = conn.cursor()
        cur.execute(self._sql("select"), (self.table, self.rep))
        trace, infos = [], []
        for seq, path, rows, nbytes, checksum, start, end in cur.fetchall():
            if self.seq.get(path) != seq or Path(path).stat().st_size != nbytes:
                raise LoadError(f"cannot resume {self.database}.{self.table}: input file {path} changed since "
                                f"the interrupted load; remove the server directory to start afresh")
            infos.append(FileInfo(Path(path), int(rows), int(nbytes), int(checksum)))
            trace.append(trace_row(path, int(rows), int(nbytes), start, end))
        for was, now in zip(infos, scan_files([i.path for i in infos], variant)):
            if (was.rows, was.checksum) != (now.rows, now.checksum):
                raise LoadError(f"cannot resume {self.database}.{self.table}: input file {was.path} changed since "
                                f"it was loaded (the ledger has {was.rows} rows with checksum {was.checksum}, the "
                                f"file now {now.rows} with {now.checksum}); remove the server directory "
                                f"to start afresh")
        return trace, infos
