"""What a user reads when something fails: the job's own first error line on the console
with its log path, an interruption called an interruption, values printed plainly."""

import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from catbench.core.infra.metrics import failed_jobs
from catbench.prepare.chunker import Chunker, CoordinateError

REPO = Path(__file__).resolve().parent.parent
CATBENCH = REPO / ".venv" / "bin" / "catbench"


def test_failed_jobs_name_the_first_error_line_and_the_log(tmp_path):
    job_log = tmp_path / "disk-char28-one-file-at-a-time.log"
    job_log.write_text("2026 INFO catbench: loading\n2026 ERROR catbench: boom\n"
                       "catbench load-index: error: target disk: the disk is full\n")
    snakemake_log = (f"Error in rule load_index_run:\n    jobid: 7\n    input: x\n"
                     f"    log: {job_log} (check log file(s) for error details)\n"
                     f"    shell:\n        catbench load-index --config '{{...600 characters...}}'\n")
    [line] = failed_jobs(snakemake_log)
    # the rule, the log's first error line as written, and the log's path
    assert line.startswith("load_index_run ") and str(job_log) in line
    assert "catbench load-index: error: target disk: the disk is full" in line and "boom" not in line
    assert failed_jobs("nothing failed") == []
    # under Slurm Snakemake lists the job's Slurm log after the rule's own
    slurm_log = snakemake_log.replace(" (check", f", {tmp_path / 'slurm_logs' / '12.log'} (check")
    assert failed_jobs(slurm_log) == [line]


def test_nan_coordinates_are_printed_as_numbers():
    with pytest.raises(CoordinateError) as err:
        Chunker(85, 12).locate(np.array([1.0, np.nan]), np.array([0.0, 0.0]))
    assert "ra=nan" in str(err.value) and "np.float64" not in str(err.value)


def test_interrupt_is_reported_as_such(tmp_path):
    # Ctrl-C used to come out as "2055 Lost connection": the server got the signal too
    p = subprocess.Popen([sys.executable, "-c", (
        "import time, sys\n"
        "from catbench.cli.common import guarded, on_signal\n"
        "import signal\n"
        "signal.signal(signal.SIGTERM, on_signal)\n"
        "def cmd(a):\n"
        "    try:\n"
        "        time.sleep(30)\n"
        "    except SystemExit:\n"
        "        raise OSError('2055: Lost connection to MySQL server')\n"
        "sys.exit(guarded(cmd, (OSError,), 'load-index')(None))\n")],
        stderr=subprocess.PIPE, text=True)
    time.sleep(1.5)
    p.send_signal(signal.SIGTERM)
    _, err = p.communicate(timeout=30)
    assert p.returncode == 128 + signal.SIGTERM
    assert "catbench load-index: interrupted by SIGTERM" in err and "error:" not in err.splitlines()[-1]
