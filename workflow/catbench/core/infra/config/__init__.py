"""Load and validate the run configuration against workflow/schemas/config.schema.yaml,
plus the checks a JSON schema cannot express (cross-field limits). Every error names
the config key."""

from __future__ import annotations

import copy
import functools
import logging
import math
import re
from pathlib import Path

import jsonschema
import yaml

from ...sky.copies import catalog_objects
from ..resources import SCHEMA_PATH, repo_dir
from ..settings import ServerError, validate_settings
from ..sizes import parse_size
from . import registries, yamlfile
from .errors import ConfigError
from .footprint import check_footprint
from .owner import foreign_owner, user_name


log = logging.getLogger(__name__)


def _key(path) -> str:
    return ".".join(str(p) for p in path) or "(top level)"


def _fill_defaults(schema: dict, data: dict):
    for name, sub in schema.get("properties", {}).items():
        if name not in data:
            if "default" in sub:
                data[name] = copy.deepcopy(sub["default"])
            elif sub.get("type") == "object" and "properties" in sub:
                data[name] = {}
        if isinstance(data.get(name), dict) and sub.get("type") == "object":
            _fill_defaults(sub, data[name])


@functools.cache
def load_schema() -> dict:
    """The schema, read once per process (half of a validation's time before): callers only
    read it. libyaml's loader: our own file, so its error marks do not matter."""
    with open(SCHEMA_PATH) as f:
        return registries.expand(yaml.load(f, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader)))


def typed_overrides(config: dict, given: dict) -> dict:
    """``config`` with the sections given on Snakemake's command line typed as YAML: its
    ``--config load='{repetitions: 3}'`` reads the inner values as strings ('3'), which the
    schema then refuses. Top-level values (``--config run=x``) are typed by Snakemake itself."""
    out = copy.deepcopy(config)

    def typed(value):
        if isinstance(value, dict):
            return {k: typed(v) for k, v in value.items()}
        if isinstance(value, list):
            return [typed(v) for v in value]
        if isinstance(value, str):
            try:
                return yaml.safe_load(value) if value.strip() else value
            except yaml.YAMLError:
                return value
        return value

    def put(into: dict, over: dict):
        for k, v in over.items():
            if isinstance(v, dict) and isinstance(into.get(k), dict):
                put(into[k], v)
            else:
                into[k] = typed(v)

    put(out, {k: v for k, v in (given or {}).items() if isinstance(v, dict)})
    return out


# Keys a layered config replaces whole when it gives them: its targets are its disks alone,
# its stages the stages it runs.
REPLACED_WHOLE = ("targets", "stages")


def merge_over(base: dict, over: dict, top: bool = True) -> dict:
    """``over`` merged over ``base``: mappings key by key, anything else (and, at the top,
    REPLACED_WHOLE) replaced by ``over``'s value."""
    out = copy.deepcopy(base)
    for k, v in over.items():
        if isinstance(v, dict) and isinstance(out.get(k), dict) and not (top and k in REPLACED_WHOLE):
            out[k] = merge_over(out[k], v, top=False)
        else:
            out[k] = copy.deepcopy(v)
    return out


def layered(config: dict, root: Path, _seen: tuple = ()) -> dict:
    """``config`` over its ``base`` (the schema's default when it names none; a path relative
    to ``root``, the workflow directory), itself over its own base; ``base: null`` ends the
    chain. The result keeps ``config``'s ``base``. ConfigError names the key."""
    config = dict(config or {})
    name = config["base"] if "base" in config else load_schema()["properties"]["base"]["default"]
    config["base"] = name
    if name is None:
        return config
    if not isinstance(name, str) or not name:
        raise ConfigError(f"config key 'base': {name!r} is not a path to a config file (or null)")
    try:
        path = (Path(root) / Path(name).expanduser()).resolve()
    except (OSError, RuntimeError) as e:     # a name too long, a symlink loop
        raise ConfigError(f"config key 'base': {name[:80]!r} is not a path catbench can read "
                          f"({getattr(e, 'strerror', None) or e}); give a config file, or null") from None
    if path in _seen:
        raise ConfigError(f"config key 'base': {name} is its own base (a loop of base keys)")
    under = read_file(path, "config key 'base'")
    return {**merge_over(layered(under, root, (*_seen, path)), config), "base": name}


_NAME = re.compile(r"[a-z][a-z0-9_]*")


def read_file(path, what: str) -> dict:
    """A config file, strictly (core/infra/config/yamlfile.py): a mapping some of whose keys are config
    keys, else one line saying it is not a catbench config (its content never echoed)."""
    try:
        cfg = yamlfile.read(path, what)
    except yamlfile.YamlFileError as e:
        raise ConfigError(str(e)) from None
    cfg = {} if cfg is None else cfg
    known = load_schema()["properties"]
    # A file whose top level holds no config key and a key no config could have (/etc/passwd
    # lines) is refused whole, so its lines are not echoed as "unknown key" errors.
    if not isinstance(cfg, dict) or (not any(k in known for k in cfg if isinstance(k, str))
                                     and not all(isinstance(k, str) and _NAME.fullmatch(k) for k in cfg)):
        raise ConfigError(f"{what}: {path} is not a catbench config (no config key at its top level); "
                          "give a config file such as config/config.yaml")
    return cfg


def _check_size(value, where: str):
    """An alias bomb refused before anything walks it (Snakemake's own loader keeps
    aliases shared, so a config from the command line may hold one too)."""
    try:
        yamlfile.check_size(value, where)
    except yamlfile.YamlFileError as e:
        raise ConfigError(str(e)) from None


def _check_values(value, path: list) -> None:
    """Refuse what every bound and pattern lets through: NaN and ±infinity pass every
    minimum and maximum (a comparison with NaN is false), and a pattern ending in ``$``
    matches before a trailing newline, which then splits a rule's shell command."""
    if isinstance(value, dict):
        for k, v in value.items():
            if isinstance(k, str) and any(c in k for c in "\n\r\0"):
                raise ConfigError(f"config key '{_key([*path, k])}': the name holds a line break or a NUL; "
                                  f"give it on one line")
            _check_values(v, [*path, k])
    elif isinstance(value, list):
        for i, v in enumerate(value):
            _check_values(v, [*path, i])
    elif isinstance(value, float) and not math.isfinite(value):
        raise ConfigError(f"config key '{_key(path)}': {value} is not a finite number")
    elif isinstance(value, str) and any(c in value for c in "\n\r\0"):
        raise ConfigError(f"config key '{_key(path)}': {value!r} holds a line break or a NUL; give it on one line")


def validate(config: dict, whole: bool = True, resolve=None) -> dict:
    """A validated copy of ``config`` with defaults filled in; raises ConfigError.
    ``whole`` False: the sections a job was given (its rule's JSON); checks across stages
    then apply only if ``stages`` is among them (the run's own validation did them).
    ``resolve``: given the schema-valid config, returns it with what only the user's files
    say (catalog.patch.file's rows and extent: prepare/own/patch.py), before the checks
    that depend on it."""
    schema = load_schema()
    across_stages = whole or "stages" in config
    _check_size(config, "the configuration")
    _check_values(config, [])
    cfg = copy.deepcopy(dict(config))
    if isinstance(cfg, dict):
        _fill_defaults(schema, cfg)
    errors = sorted(jsonschema.Draft202012Validator(schema).iter_errors(cfg),
                    key=lambda e: list(e.absolute_path))
    if errors:
        lines = []
        for e in errors:
            if e.validator == "additionalProperties":
                extra = sorted(set(e.instance) - set(e.schema.get("properties", {})))
                for k in extra:
                    lines.append(f"config key '{_key(list(e.absolute_path) + [k])}': unknown "
                                 f"key (allowed here: {', '.join(e.schema['properties'])})")
            else:
                lines.append(f"config key '{_key(e.absolute_path)}': {_message(e)}")
        raise ConfigError("invalid configuration:\n  " + "\n  ".join(lines))
    if resolve is not None:
        cfg = resolve(cfg)
    _check_semantics(cfg, across_stages)
    return cfg


def _check_semantics(cfg: dict, across_stages: bool = True):
    cat, part = cfg["catalog"], cfg["partition"]
    sky = cat["sky"]
    if sky["ra_max_deg"] <= sky["ra_min_deg"]:
        raise ConfigError("config key 'catalog.sky.ra_max_deg': must be greater than "
                          f"catalog.sky.ra_min_deg ({sky['ra_min_deg']}): the sky region is empty")
    if sky["dec_max_deg"] <= sky["dec_min_deg"]:
        raise ConfigError("config key 'catalog.sky.dec_max_deg': must be greater than "
                          f"catalog.sky.dec_min_deg ({sky['dec_min_deg']}): the sky region is empty")
    if cat["id_layout"] == "source" and not cat["patch"]["file"]["paths"]:
        raise ConfigError("config key 'catalog.id_layout': source keeps the ids of your own patch, "
                          "catalog.patch.file, which names no file")
    height = cat["patch"]["dec_height_deg"]
    if sky["dec_max_deg"] - sky["dec_min_deg"] < height:
        raise ConfigError(f"config key 'catalog.sky': the dec range {sky['dec_min_deg']}.."
                          f"{sky['dec_max_deg']} is lower than one patch "
                          f"(catalog.patch.dec_height_deg = {height}): no copy fits")
    # The queries stage loads the chunk tables into MySQL from TSV and runs DuckDB over
    # Parquet (whose schema also gives the tables' DDL and the drawn parameters).
    missing = [f for f in ("tsv", "parquet") if f not in part["formats"]]
    if missing and across_stages and "queries" in cfg["stages"]:
        raise ConfigError(f"config key 'partition.formats': {part['formats']} lacks "
                          f"{' and '.join(missing)}, which the queries stage needs (MySQL "
                          f"loads chunk tables from TSV, DuckDB reads Parquet); add it, or "
                          f"remove queries from 'stages'")
    _check_targets(cfg)
    _check_memory(cfg["server"])
    if cfg["server"].get("ram") and cfg["server"].get("page_cache"):
        raise ConfigError("config keys 'server.ram' and 'server.page_cache': give one (the RAM of the server and "
                          "its page cache, or its page cache beside whatever the server itself holds)")
    if (cfg["server"].get("page_cache") and "lsdb" in cfg["queries"]["engines"]
            and cfg["queries"]["lsdb"]["cluster"] == "slurm"):
        raise ConfigError("config keys 'server.page_cache' and 'queries.lsdb.cluster': the page cache is held in the "
                          "query job's memory cgroup, which a SLURMCluster's worker jobs are not in; set the cluster "
                          "to local, or server.page_cache to null")
    for section in ("cluster", "queries"):
        unknown = [t for t in cfg[section]["targets"] or [] if t not in cfg["targets"]]
        if unknown:
            raise ConfigError(f"config key '{section}.targets': {', '.join(map(repr, unknown))} not in "
                              f"targets ({', '.join(cfg['targets'])})")
    for key in ("server.settings", "restart.settings", "cluster.settings", "load.settings"):
        section, _, name = key.partition(".")
        try:
            validate_settings(cfg[section][name], key)
        except ServerError as exc:
            raise ConfigError(str(exc)) from None
    check_footprint(cfg)


# Paths and names that reach shell commands (the rules' `--path {params.path}`), my.cnf
# lines and sbatch arguments: plain path characters only, no whitespace, quotes, `;`, `$`,
# backquotes or newlines (which would split a command or inject a server option).
_SAFE_PATH = re.compile(r"[A-Za-z0-9_./+,@%=~:-]+")
_SAFE_NODE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")


MAX_PATH = 1024     # a socket path must stay under 108 bytes anyway; this only keeps errors readable


def _check_plain(key: str, value, pattern=_SAFE_PATH, what="a path"):
    if value is not None and len(str(value)) > MAX_PATH:
        raise ConfigError(f"config key '{key}': {str(value)[:40]!r}… has {len(str(value)):,} characters, "
                          f"more than {what} catbench takes ({MAX_PATH})")
    if value is not None and not pattern.fullmatch(str(value)):
        raise ConfigError(f"config key '{key}': {str(value)!r} is not {what} catbench can use "
                          f"safely (allowed: letters, digits and _ . / + , @ % = ~ : -; no spaces, "
                          f"quotes, ';', '$' or newlines)")


# The least memory a key may give: a private MariaDB server with a 6 MiB pool holds ~100 MiB of
# its own (48 MiB was OOM-killed at its start); a page cache hold under 1 MiB holds nothing.
LEAST_MEMORY = {"ram": (128 * 2 ** 20, "a private server holds ~100 MiB of its own at start"),
                "page_cache": (2 ** 20, "the least a ladder gives a rung")}


def _check_memory(server: dict) -> None:
    """server.ram and server.page_cache: null for no limit, else at least their least (0K
    would otherwise read as no limit, and 1K fail as the server starts)."""
    for key, (least, why) in LEAST_MEMORY.items():
        value = server.get(key)
        if value is not None and parse_size(value) < least:
            raise ConfigError(f"config key 'server.{key}': {value} is under {least // 2 ** 20} MiB ({why}); "
                              f"give at least {least // 2 ** 20}M, or null for no limit")


def _check_targets(cfg: dict):
    _check_plain("server.binary", (cfg.get("server") or {}).get("binary"))
    seen = {}
    for name, t in cfg["targets"].items():
        _check_plain(f"targets.{name}.path", t["path"])
        _check_plain(f"targets.{name}.tmpdir", t.get("tmpdir"))
        _check_plain(f"targets.{name}.node", t.get("node"), _SAFE_NODE, "a host name")
        p = Path(t["path"]).expanduser().resolve()
        foreign = None if t.get("other_owner") else foreign_owner(Path(t["path"]).expanduser())
        if foreign:
            raise ConfigError(f"config key 'targets.{name}.path': {foreign[0]} belongs to "
                              f"{user_name(foreign[1])}, not to you: files planted there (a symlink) "
                              f"could make a job write elsewhere. Use a folder you own, or set "
                              f"targets.{name}.other_owner: true if that user is trusted")
        if p.exists() and not p.is_dir():
            raise ConfigError(f"config key 'targets.{name}.path': {p} is a file, not a directory")
        for other, q in seen.items():
            if p == q or q in p.parents or p in q.parents:
                raise ConfigError(f"config key 'targets.{name}.path': {p} is the same directory "
                                  f"as (or nested in) targets.{other}.path ({q}); each target "
                                  "needs its own directory")
        seen[name] = p


def defaults(section: str) -> dict:
    """The schema's defaults of one config section: the one place a knob's default lives
    (functions, flags and dataclasses take their values from here or from the config)."""
    sub = load_schema()["properties"][section]
    out = copy.deepcopy(sub.get("default", {}))
    _fill_defaults(sub, out)
    return out


def section(name: str, given: dict | None = None) -> dict:
    """Config section ``name``: the schema's defaults with ``given`` (a whole or partial
    section, e.g. from a job's --config JSON or a test) over them."""
    out = defaults(name)
    for k, v in (given or {}).items():
        out[k] = {**out[k], **v} if isinstance(out.get(k), dict) and isinstance(v, dict) else v
    return out


def check_section(name: str, value: dict):
    """One config section (e.g. from a job's --config JSON) against its schema; the error
    names every bad key."""
    schema = load_schema()["properties"][name]
    _check_size(value, f"config key '{name}'")
    _check_values(value, [name])
    errors = sorted(jsonschema.Draft202012Validator(schema).iter_errors(value),
                    key=lambda e: list(e.absolute_path))
    if errors:
        raise ConfigError("invalid configuration:\n  " + "\n  ".join(
            f"config key '{'.'.join([name, *map(str, e.absolute_path)])}': {_message(e)}" for e in errors))


def load(path, overrides: dict | None = None, resolve=None) -> dict:
    """A config file as the workflow reads it: over its ``base``, then validated."""
    cfg = read_file(path, "config file")
    cfg.update(overrides or {})
    return validate(layered(cfg, repo_dir()), resolve=resolve)


# -- derived sizes, used by the rules to lay out the DAG -------------------------------

def estimated_rows(cfg: dict) -> int:
    cat = cfg["catalog"]
    return int(catalog_objects(cat) * (1 + cat["sources_per_object"]))


def estimated_objects(cfg: dict) -> int:
    """Objects of the catalog; with index.source: file, the rows of the user's files."""
    if cfg.get("index", {}).get("source") == "file":
        from ..sources import total_rows   # here: sources loads pyarrow, which validating never needs
        return total_rows(cfg["index"]["file"])
    return catalog_objects(cfg["catalog"])


# What YAML 1.1 (PyYAML, Snakemake's reader) takes for a float: a number without a dot and with an
# exponent (1e-9) it reads as text
_TEXT_NUMBER = re.compile(r"[-+]?[0-9]+(\.[0-9]*)?[eE][-+]?[0-9]+")


def _message(e) -> str:
    """The schema's words for an error; for a number YAML read as text, why and the cure."""
    wants = e.schema.get("type") if e.validator == "type" else None
    wants = wants if isinstance(wants, list) else [wants]
    if isinstance(e.instance, str) and {"number", "integer"} & set(wants) and _TEXT_NUMBER.fullmatch(e.instance):
        return (f"{e.instance!r} is read as text: YAML takes a number in this form only with a dot and a sign "
                f"in its exponent (write e.g. {float(e.instance):.1e})")
    return e.message


def target_dir(cfg: dict, name: str) -> Path:
    """Where a run keeps its files on a target: <path>/<run>, so runs don't collide."""
    return Path(cfg["targets"][name]["path"]).expanduser() / cfg["run"]


def stage_targets(cfg: dict, section: str) -> list[str]:
    """Targets a stage runs on: ``<section>.targets`` (cluster, queries), or every target."""
    return list(cfg[section]["targets"] or cfg["targets"])


def ladder_targets(cfg: dict) -> list[str]:
    """Targets the predict stage's rungs load on: predict.in_run.targets, or the run's first
    (one target keeps the stage cheap)."""
    return list(cfg["predict"]["in_run"]["targets"] or list(cfg["targets"])[:1])


def n_groups(cfg: dict) -> int:
    """Reduce jobs of the partition stage: each holds at most max_rows_per_group rows, and
    there are at least jobs.cpus of them, so a small catalog's one-thread reduces use every
    core side by side (faster than one reduce on threads: prepare/partition.md)."""
    return max(cfg["jobs"]["cpus"], math.ceil(estimated_rows(cfg) / cfg["partition"]["max_rows_per_group"]))
