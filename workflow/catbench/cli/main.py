"""``catbench`` command line: one sub-command per workflow step. The Snakemake rules
call these; they work the same by hand (``catbench --help``).

Each module of this package but ``main`` and ``common`` is a family of sub-commands: it
lists them in ``COMMANDS`` and adds them in ``add_subcommands(subparsers)``, each with a
``func`` (called with the parsed args, returns the exit code). A new family is a new module."""

from __future__ import annotations

import argparse
import ast
import importlib
import logging
import re
import signal
import sys
import threading
from functools import cache
from pathlib import Path

from ..core.infra.addrspace import limit_note
from ..core.infra.metrics import setup_logging
from .common import interrupted, on_signal

log = logging.getLogger("catbench")
NOT_FAMILIES = ("main", "common", "predict_node")   # helpers a family imports
_COMMANDS = re.compile(r"^COMMANDS = (\([^)]*\))", re.M)


@cache
def families() -> dict[str, tuple[str, ...]]:
    """family module -> its commands, read from each module's ``COMMANDS`` without importing
    it: only the family of the command that runs is imported, so a catalog or partition job
    skips the MySQL, DuckDB and plotting imports (0.6 s of each job's start-up)."""
    out = {}
    for path in sorted(Path(__file__).parent.glob("*.py")):
        if path.stem in NOT_FAMILIES or path.stem.startswith("_"):
            continue
        # the line alone, not the module's syntax tree (parsing all eight was 9 ms a job)
        found = _COMMANDS.search(path.read_text())
        if found:
            out[path.stem] = tuple(ast.literal_eval(found.group(1)))
    return out


def _families(argv) -> list[str]:
    """Modules to import for this command line: its own family, all for --help or an unknown command."""
    command = next((w for w in argv if not w.startswith("-")), None)
    named = [m for m, commands in families().items() if command in commands]
    return named or list(families())


def main(argv=None):
    if threading.current_thread() is threading.main_thread():
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, on_signal)
    setup_logging()
    argv = argv if argv is not None else sys.argv[1:]
    from ..core.server.memory import sweep
    sweep()     # a SIGKILLed command's memory cgroups: nothing else would ever remove them
    try:
        return _main(argv)
    except (MemoryError, ImportError) as exc:
        note = limit_note()     # under ulimit -v: the limit, not a traceback far from it
        if not note:
            raise
        command = next((w for w in argv if not w.startswith("-")), "")
        print(f"catbench {command}: error: {type(exc).__name__}: {exc}{note}", file=sys.stderr)
        return 1


def _main(argv) -> int:
    ap = argparse.ArgumentParser(prog="catbench", description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    for module in _families(argv):
        importlib.import_module(f".{module}", __package__).add_subcommands(sub)
    logging.getLogger("mysql.connector").setLevel(logging.WARNING)
    a = ap.parse_args(argv)
    try:
        return a.func(a)
    except KeyboardInterrupt:       # Ctrl-C: the clean-up ran (finally blocks); one line, no traceback
        return interrupted(a.cmd)


if __name__ == "__main__":
    sys.exit(main())
