"""Every key of the schema fed its type's edge values through the config's validation:
each is accepted (and the run's sizes then computed) or refused with an error naming a
config key — never a traceback, never slowly."""

from __future__ import annotations

import math
import time

import pytest

from catbench.core.infra.config import ConfigError, estimated_rows, load_schema, n_groups, validate

EDGES = ["", " ", "x\n", "x\r", "x\x00", "\tx", "a" * 1_000_000, math.nan, math.inf, -math.inf,
         2**63, -(2**63), 2**64, -1, 0, 1e308, True, [], {}, None]


def _leaves(schema: dict, path: tuple):
    props = schema.get("properties")
    if not props:
        yield path
        return
    for name, sub in props.items():
        yield from _leaves(sub, (*path, name))


# a target's own keys sit under a name the user chooses (additionalProperties)
KEYS = [*_leaves(load_schema(), ()), ("targets", "disk", "path"), ("targets", "disk", "tmpdir"),
        ("targets", "disk", "node"), ("server", "settings", "innodb_buffer_pool_size")]


def _with(key: tuple, value) -> dict:
    cfg: dict = {"run": "x"}
    d = cfg
    for k in key[:-1]:
        d = d.setdefault(k, {})
    if key[0] == "targets":
        d.setdefault("path", "/var/tmp/catbench-property")
    d[key[-1]] = value
    return cfg


@pytest.mark.parametrize("key", KEYS, ids=[".".join(k) for k in KEYS])
def test_every_key_takes_or_names_its_edge_values(key):
    assert len(KEYS) > 140
    for value in EDGES:
        t = time.monotonic()
        try:
            cfg = validate(_with(key, value))
            estimated_rows(cfg), n_groups(cfg)
        except ConfigError as e:
            assert "config key" in str(e), (key, repr(value)[:40], str(e)[:300])
        assert time.monotonic() - t < 5, (key, repr(value)[:40])


def test_a_key_name_with_a_line_break_is_named():
    with pytest.raises(ConfigError, match=r"config key 'server.settings.networking\\n'|line break"):
        validate({"run": "x", "server": {"settings": {"networking\n": 1}}})
