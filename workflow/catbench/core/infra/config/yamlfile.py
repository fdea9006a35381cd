"""Config files read one strict way: a regular UTF-8 file of bounded size, YAML whose
mappings repeat no key (the last would silently win) and whose aliases do not expand past
a bound (a few hundred bytes of nested aliases can stand for billions of values)."""

from __future__ import annotations

import json
from pathlib import Path

import yaml

MAX_BYTES = 16 * 2**20       # a config is a few KiB; the largest in the tests ~1 MiB
MAX_VALUES = 1_000_000       # values a config stands for once its aliases are expanded


class YamlFileError(ValueError):
    pass


class _StrictLoader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):
    """The safe loader, refusing a mapping that gives one key twice (naming both lines)."""

    def construct_mapping(self, node, deep=False):
        if isinstance(node, yaml.MappingNode):
            seen = {}
            for key_node, _ in node.value:
                if key_node.tag == "tag:yaml.org,2002:merge":
                    continue
                key = self.construct_object(key_node, deep=True)
                if not isinstance(key, (str, int, float, bool)):
                    continue        # an unhashable key: the safe loader's own error
                line = key_node.start_mark.line + 1
                if key in seen:
                    raise yaml.constructor.ConstructorError(
                        None, None, f"key {key!r} is given twice (lines {seen[key]} and {line}); "
                        "the second would silently replace the first: keep one", key_node.start_mark)
                seen[key] = line
        return super().construct_mapping(node, deep)


def regular_file(path, what: str, max_bytes: int = MAX_BYTES, kind: str = "a config file") -> Path:
    """``path``, checked to be a regular file of at most ``max_bytes`` before anything opens it
    (a device, a FIFO or a directory never ends or is a file); ``what`` (e.g. "--sealed")
    begins every error, which names the file. For files a library reads itself (Parquet, CSV)."""
    p = Path(path)
    try:
        if not p.exists():
            raise YamlFileError(f"{what}: {p} does not exist; give {kind}")
        if not p.is_file():
            raise YamlFileError(f"{what}: {p} is not a regular file; give {kind}")
        if p.stat().st_size > max_bytes:
            raise YamlFileError(f"{what}: {p} has {p.stat().st_size:,} bytes, more than a config's "
                                f"{max_bytes:,}; is it {kind}?" if kind.endswith("config file") else
                                f"{what}: {p} has {p.stat().st_size:,} bytes, more than {max_bytes:,}; is it {kind}?")
    except OSError as e:
        raise YamlFileError(f"{what}: cannot read {p} ({e.strerror}); give {kind}") from None
    return p


def read_bytes(path, what: str, max_bytes: int = MAX_BYTES, kind: str = "a config file") -> bytes:
    """The bytes of ``path``, a :func:`regular_file` of at most ``max_bytes``."""
    p = regular_file(path, what, max_bytes, kind)
    try:
        with open(p, "rb") as f:
            data = f.read(max_bytes + 1)
    except OSError as e:
        raise YamlFileError(f"{what}: cannot read {p} ({e.strerror}); give {kind}") from None
    if len(data) > max_bytes:
        raise YamlFileError(f"{what}: {p} grew past {max_bytes:,} bytes while read; is it {kind}?")
    return data


RESULT_BYTES = 256 * 2**20   # a result file a run wrote: the largest summaries are a few MiB


def read_with(read, path, what: str, kind: str, max_bytes: int = RESULT_BYTES):
    """``read(path)`` for a file a library opens itself (Parquet, CSV), once it passed
    :func:`regular_file`; the library's errors (OSError, ValueError) as one naming the file."""
    p = regular_file(path, what, max_bytes, kind)
    try:
        return read(p)
    except (OSError, ValueError) as e:
        raise YamlFileError(f"{what}: {p} is not {kind} ({e})") from None


def read_json(path, what: str, kind: str, max_bytes: int = RESULT_BYTES, missing_ok: bool = False):
    """The JSON value of ``path`` through :func:`read_bytes` (a regular file of bounded size);
    None for a missing file when ``missing_ok``. Errors begin with ``what`` and name the file."""
    p = Path(path)
    if missing_ok and not p.exists() and not p.is_symlink():
        return None
    data = read_bytes(p, what, max_bytes, kind)
    try:
        return json.loads(data)
    except (ValueError, RecursionError) as e:
        why = "nested too deeply" if isinstance(e, RecursionError) else str(e)
        raise YamlFileError(f"{what}: {p} is not {kind} (not JSON: {why})") from None


def read(path, what: str, kind: str = "a YAML config file"):
    """The YAML value of file ``path``; ``what`` (e.g. "config key 'base'") begins every
    error, which names the file and, for YAML errors, the line (never its text)."""
    return parse(read_bytes(path, what, kind=kind), f"{what}: {path}")


def parse(data: bytes | str, where: str):
    """YAML text (bytes must be UTF-8) strictly parsed; ``where`` begins every error."""
    if isinstance(data, bytes):
        try:
            data = data.decode("utf-8")
        except UnicodeDecodeError as e:
            raise YamlFileError(f"{where} is not UTF-8 text (byte {e.start}); not a catbench config") from None
    try:
        value = yaml.load(data, Loader=_StrictLoader)
    except yaml.MarkedYAMLError as e:
        mark = e.problem_mark or e.context_mark
        at = f" line {mark.line + 1}" if mark else ""
        # The problem alone: the snippet YAML adds would echo a file that may not be a config.
        problem = e.problem or e.context
        if not isinstance(e, yaml.constructor.ConstructorError):
            problem = f"not valid YAML ({problem})"
        raise YamlFileError(f"{where}{at}: {problem}") from None
    except (yaml.YAMLError, RecursionError) as e:
        raise YamlFileError(f"{where}: not valid YAML ({type(e).__name__})") from None
    check_size(value, where)
    return value


def check_size(value, where: str, limit: int = MAX_VALUES) -> int:
    """The number of values ``value`` stands for with its shared parts (YAML aliases) counted
    each time they are used; refused over ``limit`` or when it holds itself. Linear in the
    distinct parts, so an alias bomb is refused before anything walks it."""
    sizes: dict[int, int] = {}
    open_ids: set[int] = set()

    def size(v) -> int:
        if not isinstance(v, (dict, list)):
            return 1
        i = id(v)
        if i in open_ids:
            raise YamlFileError(f"{where}: a value holds itself (a recursive YAML alias)")
        if i not in sizes:
            open_ids.add(i)
            items = list(v.values()) + list(v) if isinstance(v, dict) else v
            n = 1
            for x in items:
                n += size(x)
                if n > limit:
                    raise YamlFileError(f"{where}: stands for more than {limit:,} values once its "
                                        "aliases are expanded; write the config out plainly")
            open_ids.discard(i)
            sizes[i] = n
        return sizes[i]

    try:
        return size(value)
    except RecursionError:
        raise YamlFileError(f"{where}: nested too deeply to be a config") from None
