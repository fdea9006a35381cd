"""The server options a config may pass (server.settings and the other stages' settings):
their names and values checked, the reserved ones refused, before any job and again when a
server renders its my.cnf."""

from __future__ import annotations

import re
from functools import cache

from .resources import resource

_SETTING_NAME = re.compile(r"[a-z0-9_-]+")
# No '/' and (checked apart) no '..': a value can then name a file only inside the server's
# own directory on the target, its working directory, whatever the option (path_options.yaml).
# a word, a size, or an option list such as rocksdb_default_cf_options' name=value;… (no '/':
# a path in it, e.g. cf_paths, would put the server's files outside the target)
_SETTING_VALUE = re.compile(r"[A-Za-z0-9_.:+,=;-]+")
# Options that would open the private server to others or load code (the options that name
# files are in resources/server/path_options.yaml). Names are compared after normalising
# them as the server does (see option_name).
_RESERVED = {
    "user", "defaults_group_suffix",
    # networking
    "port", "bind_address", "networking", "extra_port", "admin_address", "admin_port",
    "named_pipe", "shared_memory", "proxy_protocol_networks", "port_open_timeout",
    # authentication and loading of code or data
    "grant_tables", "local_infile", "init_connect", "init_slave", "default_authentication_plugin",
    "plugin_load", "plugin_load_add", "plugin_maturity", "symbolic_links",
}
# whole families: TLS, the X protocol, Galera, replication sources
_RESERVED_PREFIXES = ("ssl", "tls_", "mysqlx", "wsrep", "master_", "replicate_", "federated")


@cache
def path_options() -> dict:
    """resources/server/path_options.yaml: the options that name a file or directory
    (``refused``, ``confined``) and the ones that only look so (``not_paths``)."""
    import yaml
    doc = yaml.safe_load(resource("server", "path_options.yaml").read_text())
    return {"refused": set(doc["refused"]), "confined": set(doc["confined"]), "not_paths": dict(doc["not_paths"])}


# option modifiers the server strips from a name (my_getopt)
_MODIFIERS = ("loose_", "maximum_", "skip_", "enable_", "disable_")
class ServerError(RuntimeError):
    """The private server could not be initialised, started or stopped."""


def option_name(key: str) -> str:
    """``key`` as the server reads it: '-' and '_' alike, modifiers (loose-, maximum-,
    skip-, enable-, disable-) stripped, in any combination."""
    name = key.replace("-", "_").lower()
    while True:
        for m in _MODIFIERS:
            if name.startswith(m) and len(name) > len(m):
                name = name[len(m):]
                break
        else:
            return name


def is_reserved(key: str) -> bool:
    """True if ``key`` names (or, as the server accepts unique prefixes of option names,
    abbreviates) a reserved option."""
    name = option_name(key)
    if name.startswith(_RESERVED_PREFIXES):
        return True
    return any(r == name or (len(name) >= 3 and r.startswith(name)) for r in _RESERVED | path_options()["refused"])


_SIZE_VALUE = re.compile(r"[0-9]+(\.[0-9]+)?[KMGTkmgt]?")


def validate_settings(settings: dict | None, key_prefix: str = "server.settings") -> dict[str, str]:
    """Check the names and values of server options from the config and render the values
    as option strings; errors name the config key (``key_prefix``.<name>)."""
    out: dict[str, str] = {}
    for key, value in (settings or {}).items():
        where = f"config key '{key_prefix}.{key}'"
        if not isinstance(key, str) or not _SETTING_NAME.fullmatch(key):
            raise ServerError(f"{where}: {key!r} is not a plain option name "
                              f"(lower-case letters, digits, '_' or '-')")
        if is_reserved(key):
            raise ServerError(f"{where}: option {option_name(key)!r} is managed by catbench or would "
                              f"open the private server to others or reach outside its directory on the "
                              f"target (networking, authentication, paths, plugins; "
                              f"resources/server/path_options.yaml); set the target path / server.tcp "
                              f"in the config instead")
        if isinstance(value, bool):
            text = "1" if value else "0"
        elif isinstance(value, (int, float)):
            text = str(value)
        elif isinstance(value, str) and _SETTING_VALUE.fullmatch(value) and ".." not in value:
            text = value
        else:
            raise ServerError(f"{where}: {value!r} is not a number, a boolean or a simple word "
                              f"such as 1G, O_DIRECT or a name=value;… list (no '/' or '..': a file the server writes stays "
                              f"in its own directory on the target)")
        # sizes are checked here: the server would only fail inside the job
        if option_name(key).endswith("_size") and not _SIZE_VALUE.fullmatch(text):
            raise ServerError(f"{where}: {text!r} is not a size (a number with an optional K, M, G "
                              f"or T, e.g. 256M)")
        out[key] = text
    return out
