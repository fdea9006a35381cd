"""How the report judges differences, read once from the validated config (its ``report``
section, the schema's defaults filled in at the CLI): the tables, the summary, the report and
``catbench compare`` read this, never the config; and the one error a report's inputs raise."""

from __future__ import annotations

from dataclasses import dataclass


class MetricsError(Exception):
    """A metrics file is missing, unreadable or has the wrong shape (message names the file)."""


@dataclass(frozen=True)
class ReportSpec:
    """How the final tables, the summary, the report and ``catbench compare`` judge differences
    (report/stats.py: the rule)."""
    confidence: float           # level of every interval
    alpha: float                # the t-test's level, before Holm's correction
    practical_threshold: float  # a smaller relative difference is "within noise"
    between_run_cv: float       # between-run spread compare assumes without a measured floor

    @classmethod
    def of(cls, cfg: dict) -> ReportSpec:
        """From a validated config's ``report``."""
        r = cfg["report"]
        return cls(float(r["confidence"]), float(r["alpha"]), float(r["practical_threshold"]),
                   float(r["between_run_cv"]))
