"""Values every bound and pattern of the schema lets through, refused by name: NaN and
infinity (a comparison with NaN is false), and a line break or NUL at the end of a string
(a pattern's `$` matches before a final newline, which then splits a rule's command line)."""

from __future__ import annotations

import math
import re
import time
from pathlib import Path

import pytest

from catbench.core.infra.config import ConfigError, check_section, validate
from support.preflight import check

REPO = Path(__file__).resolve().parent.parent


def _with(key: tuple, value) -> dict:
    """A config of one run with ``value`` at the nested ``key``."""
    cfg = {"run": "x"}
    d = cfg
    for k in key[:-1]:
        d = d.setdefault(k, {})
    d[key[-1]] = value
    return cfg


@pytest.mark.parametrize("key, value", [
    (("report", "alpha"), math.nan), (("run_limit_h",), math.nan), (("load", "time_limit_s"), math.inf),
    (("catalog", "patch", "ra_width_deg"), math.nan), (("catalog", "density", "max_factor"), -math.inf),
])
def test_nan_and_infinity_are_refused_naming_the_key(key, value):
    with pytest.raises(ConfigError, match=rf"config key '{'.'.join(key)}': .* is not a finite number"):
        validate(_with(key, value))


@pytest.mark.parametrize("key, value", [
    (("run",), "x\n"), (("fio", "size"), "4M\n"), (("load", "skip"), ["innodb/bulk\n"]),
    (("targets", "disk", "path"), "/var/tmp/x\r"), (("load", "settings", "networking\n"), "1"),
    (("server", "settings", "skip-grant-tables"), "1\x00"),
])
def test_a_line_break_or_nul_in_any_string_is_refused_naming_the_key(key, value):
    with pytest.raises(ConfigError, match=r"holds a line break or a NUL"):  # in a value or a name
        validate(_with(key, value))


def test_a_jobs_own_section_is_checked_the_same_way():
    with pytest.raises(ConfigError, match=r"config key 'fio.size': .*line break"):
        check_section("fio", {"size": "4M\n"})


def test_a_newline_in_a_config_file_stops_the_run_before_any_job(tmp_path):
    cfg = tmp_path / "n.yaml"
    cfg.write_text('base: tests/configs/tiny.yaml\nstages: [fio]\nfio: {size: "4M\\n"}\n')
    assert "config key 'fio.size'" in check(REPO, cfg, "fio", "--cores", "1").refusal


def _shell_lines(smk: Path):
    """The string lines of each rule's ``shell:`` block."""
    inside = False
    for line in smk.read_text().splitlines():
        text = line.strip()
        if line.startswith("    shell:"):
            inside = True
        elif inside and text.startswith('"'):
            yield text
        elif inside and not text.startswith("#"):
            inside = False


def test_every_rule_quotes_every_value_it_puts_on_a_command_line():
    """A value reaches a rule's shell command quoted (``:q``), so no path, name or size can
    split it, whatever slipped past validation; ``{threads}`` is a number, and a param
    named ``*_args`` holds whole options built with shlex.quote in the .smk file."""
    seen, loose = 0, []
    for smk in sorted((REPO / "workflow" / "rules").glob("*.smk")):
        for line in _shell_lines(smk):
            for field in re.findall(r"(?<!\{)\{([^{}]+)\}(?!\})", line):
                seen += 1
                if not (field.endswith(":q") or field == "threads" or field.endswith("_args")):
                    loose.append(f"{smk.name}: {{{field}}}")
    assert seen > 100 and not loose, loose


@pytest.mark.parametrize("name, value", [("networking\n", "1"), ("skip-grant-tables\n", "1"),
                                         ("innodb_buffer_pool_size", "1G\n")])
def test_a_server_option_checked_on_its_own_matches_whole_names_and_values(name, value):
    """--settings-json reaches the option check without the config's validation."""
    from catbench.core.infra.settings import ServerError, validate_settings
    with pytest.raises(ServerError, match="load.settings"):
        validate_settings({name: value}, "load.settings")


@pytest.mark.parametrize("objects", [18085043209519168, 1828582878044167, 9e18, 1e26, 2**63])
def test_a_patch_too_large_for_int64_ids_is_refused_before_any_arithmetic_wraps(objects):
    with pytest.raises(ConfigError, match=r"config key 'catalog.patch.objects': .* is over the 8,796,093,022,206 "):
        validate(_with(("catalog", "patch", "objects"), objects))


def test_a_catalog_whose_rows_overflow_int64_is_refused_naming_the_key():
    cfg = _with(("catalog", "patch", "objects"), 2**42)
    cfg["catalog"]["sources_per_object"] = 1000
    with pytest.raises(ConfigError, match=r"config key 'catalog.patch.objects': .* over int64's"):
        validate(cfg)


def test_sizes_are_exact_integers_at_the_largest_patch():
    from catbench.core.infra.config import estimated_objects
    from catbench.core.infra.config.footprint import MAX_PATCH_OBJECTS
    from catbench.core.sky.copies import n_copies
    cfg = _with(("catalog", "patch", "objects"), float(2**40))
    cfg["catalog"]["density"] = {"model": "uniform"}
    cfg = validate(cfg)
    assert isinstance(cfg["catalog"]["patch"]["objects"], int)
    assert estimated_objects(cfg) == 2**40 * n_copies(cfg["catalog"]) > 2**44
    assert (MAX_PATCH_OBJECTS + 1) * 2**20 + 2**20 - 1 <= 2**63 - 1


@pytest.mark.parametrize("size", [0.001, 0.05])
def test_a_tiny_patch_over_the_whole_sky_is_refused_quickly_naming_width_and_height(size):
    cfg = _with(("catalog", "patch", "ra_width_deg"), size)
    cfg["catalog"]["patch"]["dec_height_deg"] = size
    cfg["catalog"]["sky"] = {"ra_min_deg": 0, "ra_max_deg": 360, "dec_min_deg": -90, "dec_max_deg": 90}
    t = time.monotonic()
    with pytest.raises(ConfigError, match=r"'catalog.patch.ra_width_deg' and 'catalog.patch.dec_height_deg'.*places"):
        validate(cfg)
    assert time.monotonic() - t < 5


@pytest.mark.parametrize("paths,named", [
    ([], "catalog.patch.ra_width_deg"),                 # the synthetic patch: its own width and height
    (["objects.parquet"], "catalog.patch.file"),        # a file's rows: their extent is the patch
])
def test_a_patch_too_small_for_the_ids_names_the_keys_that_set_its_footprint(paths, named):
    """Two objects a hair apart make a footprint with more places on the sky than the ids have
    copies: the refusal names what the user sets (a file patch has no width or height key)."""
    from catbench.core.infra.config.footprint import check_sizes
    cat = {"patch": {"objects": 2, "ra_width_deg": 1e-6, "dec_height_deg": 1e-6,
                     "file": {"paths": paths}},
           "sky": {"ra_min_deg": 0, "ra_max_deg": 360, "dec_min_deg": -90, "dec_max_deg": 90}}
    with pytest.raises(ConfigError, match=re.escape(named)) as exc:
        check_sizes(cat)
    assert ("ra_width_deg" in str(exc.value)) == (not paths)
