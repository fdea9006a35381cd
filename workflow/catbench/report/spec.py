"""How the final tables, the summary, the report and ``catbench compare`` judge differences:
the config's ``report`` section, validated with the schema's defaults filled in at the
command line (cli/report.py ``report_spec``)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ReportSpec:
    confidence: float           # level of every interval
    alpha: float                # the t-test's level, before Holm's correction
    practical_threshold: float  # a smaller relative difference is "within noise"
    between_run_cv: float       # between-run spread compare assumes without a measured floor
