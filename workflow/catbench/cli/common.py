"""Helpers shared by the sub-command families (cli/<family>.py) of the ``catbench`` command."""

from __future__ import annotations

import argparse
import json
import logging
import signal
import sys

from ..core.infra.errors import TargetError
from ..core.infra.jobs.isolation import measuring, write_record

log = logging.getLogger("catbench")
_signals: list[int] = []


def on_signal(signum, frame):
    """SIGTERM (Snakemake, Slurm, kill) and SIGINT unwind like Ctrl-C, so `finally` blocks
    remove partial outputs and stop servers; the signal is remembered, so what fails
    because of it (a server that got the same Ctrl-C: "Lost connection") is reported as
    an interruption, not as a fault of the target. A later signal (Snakemake passes on
    the SIGTERM its process group already got) must not cut that clean-up short: it is
    only noted; SIGKILL stays the way to stop at once."""
    _signals.append(signum)
    if len(_signals) > 1:
        log.warning("%s during the clean-up after %s: finishing the clean-up",
                    signal.Signals(signum).name, signal.Signals(_signals[0]).name)
        return
    if signum == signal.SIGINT:
        raise KeyboardInterrupt
    raise SystemExit(128 + signum)


def interrupted(name: str) -> int:
    """The last line of a command stopped by Ctrl-C (SIGINT) once its clean-up ran: the
    job log ends saying so, not with a traceback."""
    log.error("interrupted by SIGINT (its clean-up ran)")
    print(f"catbench {name}: interrupted by SIGINT", file=sys.stderr)
    return 128 + signal.SIGINT


def guarded(func, expected, name: str):
    """Run a sub-command; an expected error (``expected``: a tuple of exception classes)
    becomes one clear line and exit code 1, not a traceback."""
    def run(args) -> int:
        try:
            return func(args)
        except Exception as exc:
            if not isinstance(exc, expected):
                raise
            if _signals:
                what = f"interrupted by {signal.Signals(_signals[0]).name}"
                log.error("%s (what failed after it: %s)", what, exc)
                print(f"catbench {name}: {what}", file=sys.stderr)
                return 128 + _signals[0]
            log.error("%s", exc)
            print(f"catbench {name}: error: {exc}", file=sys.stderr)
            return 1
    run.__doc__ = func.__doc__
    return run


def measured(func, target_dir=lambda args: getattr(args, "path", None)):
    """A sub-command that measures a target: it runs under ``core.infra.jobs.isolation.measuring``
    (locks on the node and on ``target_dir(args)``, the target's run directory; watch for
    neighbours) and, when it succeeds, writes ``<out>/isolation.json`` saying whether it
    ran alone."""
    def run(args) -> int:
        with measuring(getattr(args, "target", None), target_dir(args)) as rec:
            code = func(args)
        if code == 0:
            write_record(rec, args.out)
        return code
    run.__doc__ = func.__doc__
    return run


def settings_arg(text: str | None) -> dict:
    """--settings-json: server options as a JSON object."""
    if not text:
        return {}
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise SystemExit(f"--settings-json is not valid JSON ({exc}); pass e.g. "
                         f"'{{\"innodb_buffer_pool_size\": \"1G\"}}'")
    if not isinstance(value, dict):
        raise SystemExit("--settings-json must be a JSON object of server options")
    return value


def config_arg(text: str | None) -> dict:
    """--config: JSON text (what a rule passes its job) or a YAML/JSON file, read strictly
    (core/infra/config/yamlfile.py); {} when not given. A bad one is one line naming it (ConfigError)."""
    from ..core.infra.config import ConfigError, read_file
    if not text:
        return {}
    if not text.lstrip().startswith("{"):
        return read_file(text, "--config")
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigError(f"--config: not a JSON object ({exc.msg} at character {exc.pos})") from None
    if not isinstance(value, dict):
        raise ConfigError("--config: not a mapping of config sections")
    return value


def out_path(path: str | None, flag: str = "--out", directory: bool = False):
    """``path`` of an output (a file, or with ``directory`` a folder) made sure of before
    any work: the folder exists or is created and takes a file; an output file is not a
    folder, an output folder not a file. None when not given; ConfigError names ``flag``."""
    import tempfile
    from pathlib import Path

    from ..core.infra.config import ConfigError
    if not path:
        return None
    p = Path(path)
    if p.exists() and p.is_dir() != directory:
        raise ConfigError(f"{flag} {p} is a {'file' if directory else 'directory'}; give the path of a "
                         f"{'directory' if directory else 'file'} to write")
    folder = p if directory else p.parent
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=folder, prefix=".catbench-write-test-"):
            pass
    except OSError as exc:
        raise ConfigError(f"{flag} {p}: cannot write in {folder} ({exc.strerror}); give another path") from None
    return p


def read_config(text: str, results=None) -> dict:
    """--config of a command: a JSON object (the sections a rule gives its job) or a path to
    a YAML/JSON file (a user's config, over its ``base`` as the workflow reads it, with the
    rows and extent of its own patch file: prepare/own/spec.py), validated with the
    schema's defaults filled in: the one place a job's defaults are applied. ``results``: the
    workflow's results folder, whose patch manifest is read (and written) as the workflow does."""
    from ..core.infra.config import load, validate
    if text.lstrip().startswith("{"):
        return validate(config_arg(text), whole=False)
    from ..prepare.own.spec import resolve
    return load(text, resolve=lambda cfg: resolve(cfg, results=results))


# What a plain command reports in one line (ConfigError is a ValueError).
_PLAIN_ERRORS = (ValueError, OSError, TargetError)


def command(sub, name: str, fn, *flags, config: bool = True):
    """Sub-command ``name`` running ``fn(args)``, which returns nothing: ``--config`` (required
    unless ``config`` is False) and ``flags``, each "--flag" or ("--flag", argparse keywords),
    required unless those say otherwise; a ValueError, OSError or TargetError is one line."""
    p = sub.add_parser(name, help=fn.__doc__)
    p.add_argument("--config", required=config, help="config as JSON text or a YAML file")
    for flag in flags:
        flag, kw = flag if isinstance(flag, tuple) else (flag, {})
        p.add_argument(flag, **({"required": True} | kw))

    def run(args) -> int:
        fn(args)
        return 0
    run.__doc__ = fn.__doc__
    p.set_defaults(func=guarded(run, _PLAIN_ERRORS, name))
    return p


_SCALARS = {"integer": int, "number": float, "string": str}


def _flag_keywords(flag: str, sub: dict) -> dict | None:
    """argparse keywords of ``--flag`` for a schema key: a number, a string, a boolean or a
    list of them, an enum's names as its choices; None for what a flag cannot give (objects)."""
    kinds = [t for t in (sub.get("type") if isinstance(sub.get("type"), list) else [sub.get("type")])
             if t not in (None, "null")]
    if kinds == ["boolean"]:
        return {"action": argparse.BooleanOptionalAction}
    if kinds == ["array"]:
        items = sub.get("items") or {}
        if "enum" in items:
            return {"nargs": "+", "choices": items["enum"]}
        return {"nargs": "+", "type": _SCALARS[items["type"]]} if items.get("type") in _SCALARS else None
    if "enum" in sub:
        return {"choices": sub["enum"]}
    return {"type": _SCALARS[kinds[0]]} if len(kinds) == 1 and kinds[0] in _SCALARS else None


def section_flags(parser, section: str, prefix: str = "", lists: bool = True, group=None) -> None:
    """A flag ``--<prefix><key>`` overriding each key of the schema's ``section`` that a command
    line can give (``lists`` False: scalars only), read from the schema: its type, choices and
    description, nothing listed here; a sub-section's keys as ``--<prefix><sub>-<key>``; added
    to ``group`` when given. :func:`overrides` collects them; a parser may take the flags of
    several sections."""
    from ..core.infra.config import load_schema
    keys = {}

    def add(props: dict, path: tuple, flag_prefix: str):
        for key, sub in props.items():
            flag = flag_prefix + key.replace("_", "-")
            if sub.get("type") == "object" and "properties" in sub:
                add(sub["properties"], (*path, key), flag + "-")
                continue
            kw = _flag_keywords(flag, sub)
            if kw is not None and (lists or "nargs" not in kw):
                about = f"config key {'.'.join((section, *path, key))}" + (
                    f": {sub['description']}" if sub.get("description") else "")
                (group or parser).add_argument(f"--{flag}", default=None, help=about.replace("%", "%%"), **kw)
                keys[flag.replace("-", "_")] = (*path, key)

    add(load_schema()["properties"][section]["properties"], (), prefix)
    parser.set_defaults(section_flags=[*(parser.get_default("section_flags") or []), (section, keys)])


def overrides(args, sections: dict) -> dict:
    """``sections`` ({name: dict}) with the flags of :func:`section_flags` given over them."""
    out = dict(sections)
    for section, keys in args.section_flags:
        for dest, path in keys.items():
            value = getattr(args, dest)
            if value is None:
                continue
            out[section] = node = dict(out.get(section) or {})
            for key in path[:-1]:
                node[key] = node = dict(node.get(key) or {})
            node[path[-1]] = value
    return out


def flagged_config(args) -> dict:
    """A stage command's config: ``--config`` (JSON text or a YAML/JSON file; none: the
    schema's defaults) with the flags of :func:`section_flags` given over it, validated with
    the schema's defaults filled in, once."""
    from ..core.infra.config import validate
    return validate(overrides(args, config_arg(args.config)), whole=False)


def stage_parser(subparsers, name: str, fn, about: str, section: str, below: str):
    """The parser of a stage that loads the index on one target and runs its ``section``:
    where (--target, --path with ``below`` under it, --input-dir, --out), --config and the
    flags of ``section`` and ``server`` over it, --seed and --keep-data."""
    p = subparsers.add_parser(name, help=about, description=fn.__doc__)
    p.add_argument("--target", required=True, help="storage target name (as in the config)")
    p.add_argument("--path", required=True, help=f"directory on the target ({below} below it)")
    p.add_argument("--input-dir", required=True, help="directory of index input TSV files (key, chunkId, subChunkId)")
    p.add_argument("--out", required=True, help=f"output directory, e.g. results/<run>/{name}/<target>")
    p.add_argument("--config", help=f"config as JSON text or a YAML file (sections {section}, server, seed); "
                                    "the flags below override single values, the schema gives the rest")
    section_flags(p, section)
    section_flags(p, "server", "server-", lists=False)
    p.add_argument("--seed", type=int, help="config key seed: kill points, lookup keys and the workload")
    p.add_argument("--keep-data", action="store_true", help="keep the server datadirs afterwards")
    return p


def stage_sections(args, section: str) -> tuple[dict, dict, int | None]:
    """(``section``, server, seed) from --config with the flags given over it (a parser of
    :func:`stage_parser`)."""
    cfg = overrides(args, config_arg(args.config))
    seed = args.seed if args.seed is not None else cfg.get("seed")
    return dict(cfg.get(section) or {}), dict(cfg.get("server") or {}), seed


def stage_config(section: str, given: dict | None, server: dict | None, seed: int | None) -> dict:
    """A stage's (whole or partial) ``section``, ``server`` and the seed, validated (ConfigError
    naming the key), the schema's defaults filled in, here at the command line, once."""
    from ..core.infra.config import validate
    return validate({section: given or {}, "server": server or {}, **({} if seed is None else {"seed": seed})},
                    whole=False)
