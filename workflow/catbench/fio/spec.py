"""A fio job's knobs, read once from the validated config (its ``fio`` section, the schema's
defaults filled in at the CLI): the tests read this, never the config."""

from __future__ import annotations

from dataclasses import dataclass

from ..core.infra.jobs.repeat import Repeats

# Order matters: seq-write lays out the file the other tests reuse.
TESTS = ("seq-write", "seq-read", "rand-read", "rand-write", "page-read", "page-write", "cache-read")


@dataclass(frozen=True)
class FioSpec:
    """A fio job's knobs (config ``fio``): the test file's ``size``, seconds per test, the
    random tests' parallel jobs, which ``tests``, and their repetitions (``repeats``)."""
    size: str | int
    runtime_s: float
    numjobs: int
    tests: tuple = TESTS
    repeats: Repeats = Repeats(1, 1, 0.0, None)

    @classmethod
    def of(cls, cfg: dict, tests=None) -> FioSpec:
        """From a validated config's ``fio``; ``tests``: a subset of TESTS (None: all)."""
        fio = cfg["fio"]
        return cls(fio["size"], float(fio["runtime_s"]), int(fio["numjobs"]), tuple(tests or TESTS),
                   Repeats.of(fio))
