"""Before `make run`: tell a stale Snakemake lock (left by a killed run: no Snakemake process
of this checkout is alive) from a live one. Stale: unlock and go on, saying so. Live: stop,
naming the process (unlocking under a running Snakemake would let two runs write one folder)."""

import subprocess
import sys
from pathlib import Path

import psutil

HERE = Path.cwd().resolve()


def running_here() -> list[psutil.Process]:
    out = []
    for p in psutil.process_iter(["pid", "cmdline", "cwd"]):
        try:
            cmd = " ".join(p.info["cmdline"] or [])
            if "snakemake" in cmd and p.info["cwd"] and Path(p.info["cwd"]).resolve() == HERE \
                    and p.pid != psutil.Process().pid and "stale_lock" not in cmd:
                out.append(p)
        except (psutil.Error, OSError):
            continue
    return out


def main() -> int:
    locks = HERE / ".snakemake" / "locks"
    if not locks.is_dir() or not any(locks.iterdir()):
        return 0
    live = running_here()
    if live:
        print(f"make run: Snakemake is already running in {HERE} (pid {live[0].pid}: "
              f"{' '.join(live[0].info['cmdline'])[:120]}); wait for it or stop it. Do not --unlock "
              f"while it runs.", file=sys.stderr)
        return 1
    print(f"make run: removing a stale Snakemake lock in {HERE} (no Snakemake of this checkout is "
          f"running: an earlier run was killed)", file=sys.stderr)
    return subprocess.run(["snakemake", "--unlock", *sys.argv[1:]], capture_output=True).returncode


if __name__ == "__main__":
    sys.exit(main())
