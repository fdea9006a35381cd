"""CLI sub-command of the documentation: config/README.md's key tables written from the schema
(``make config-readme``; the work is core/infra/config/readme.py)."""

from __future__ import annotations

import sys
from pathlib import Path

COMMANDS = ("config-readme",)


def cmd_config_readme(a) -> int:
    """write config/README.md's key tables from the schema (--check: only say where they differ)"""
    from ..core.infra.config import readme
    path = Path(a.readme) if a.readme else readme_path()
    text = path.read_text()
    try:
        want = readme.render(text)
    except ValueError as exc:
        print(f"catbench config-readme: error: {exc}", file=sys.stderr)
        return 1
    if a.check:
        diff = readme.first_difference(want, text)
        if diff:
            print(diff, file=sys.stderr)
        return 1 if diff else 0
    if want != text:
        path.write_text(want)
    return 0


def readme_path() -> Path:
    from ..core.infra.config.readme import readme_path as path
    return path()


def add_subcommands(sub) -> None:
    p = sub.add_parser("config-readme", help=cmd_config_readme.__doc__)
    p.add_argument("--readme", help="the README to write (default: config/README.md)")
    p.add_argument("--check", action="store_true", help="write nothing; exit 1 naming the first differing key")
    p.set_defaults(func=cmd_config_readme)
