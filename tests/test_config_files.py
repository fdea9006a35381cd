"""Config files read one strict way (core/infra/config/yamlfile.py): a key given twice, an alias bomb, a
base that is a device, not UTF-8 or not a config at all: each refused in one line naming
the file (and the lines), quickly, with no content of a foreign file echoed. And where configs
live: config/ holds the presets a user starts from, each check's config sits beside its page in
docs/results/configs/, and every path the Makefile and the docs name there exists."""

from __future__ import annotations

import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from catbench.core.infra.config import ConfigError, layered, load, read_file

REPO = Path(__file__).resolve().parent.parent

# 9^8 = 43 million "fio" values in under 400 bytes; a walk over it would never end.
BOMB = "".join(f"{n}: &{n} [{', '.join([f'*{p}'] * 9)}]\n" for p, n in zip("abcdefg", "bcdefgh"))
BOMB = "a: &a [fio, fio, fio, fio, fio, fio, fio, fio, fio]\n" + BOMB + "stages: [" + ", ".join(["*h"] * 9) + "]\n"


def _dry_run(cfg: Path):
    return subprocess.run([sys.executable, "-m", "snakemake", "-n", "--cores", "1", "--configfile", str(cfg)],
                          cwd=REPO, capture_output=True, text=True, timeout=300)


@pytest.mark.slow
def test_a_key_given_twice_is_refused_naming_both_lines(tmp_path):
    cfg = tmp_path / "dup.yaml"
    cfg.write_text("base: tests/configs/tiny.yaml\nload:\n  repetitions: 3\n  variants: [bigint]\n"
                   "load:\n  repetitions: 2\n")
    with pytest.raises(ConfigError, match=r"dup.yaml line 5: key 'load' is given twice \(lines 2 and 5\)"):
        load(cfg)
    p = _dry_run(cfg)
    assert p.returncode != 0 and "key 'load' is given twice (lines 2 and 5)" in p.stdout + p.stderr


@pytest.mark.slow
def test_an_alias_bomb_is_refused_before_anything_walks_it(tmp_path):
    cfg = tmp_path / "bomb.yaml"
    cfg.write_text("base: tests/configs/tiny.yaml\n" + BOMB)
    assert len(cfg.read_bytes()) < 600
    t = time.monotonic()
    with pytest.raises(ConfigError, match=r"bomb.yaml: stands for more than 1,000,000 values"):
        load(cfg)
    assert time.monotonic() - t < 5
    p = _dry_run(cfg)   # Snakemake's own loader keeps the aliases shared: the run refuses it too
    assert p.returncode != 0 and "stands for more than 1,000,000 values" in p.stdout + p.stderr


@pytest.mark.parametrize("base, says", [
    ("/dev/zero", "is not a regular file"),
    ("/nonexistent/c.yaml", "does not exist"),
])
def test_a_base_that_is_no_file_is_refused_at_once(base, says):
    t = time.monotonic()
    with pytest.raises(ConfigError, match=rf"config key 'base': {base} {says}"):
        layered({"base": base}, REPO)
    assert time.monotonic() - t < 5


def test_a_base_that_is_not_utf8_or_too_large_is_refused_naming_it(tmp_path):
    bad = tmp_path / "latin1.yaml"
    bad.write_bytes("run: caf\xe9\n".encode("latin-1"))
    with pytest.raises(ConfigError, match=r"config key 'base': .*latin1\.yaml .*UTF-8"):
        layered({"base": str(bad)}, REPO)
    big = tmp_path / "big.yaml"
    with open(big, "wb") as f:
        f.truncate(17 * 2**20)
    with pytest.raises(ConfigError, match=r"big\.yaml has 17,825,792 bytes, .*16,777,216"):      # its size, the bound
        layered({"base": str(big)}, REPO)


def test_a_base_that_is_not_a_config_is_named_and_its_lines_are_not_echoed(tmp_path):
    secret = tmp_path / "shadow"
    secret.write_text("root:$6$secrethash:20228:0:99999:7:::\ndaemon:*:20228:0:99999:7:::\n")
    with pytest.raises(ConfigError) as e:
        layered({"base": str(secret)}, REPO)
    assert "is not a catbench config" in str(e.value) and "secrethash" not in str(e.value)


def test_a_single_misspelt_key_is_still_named_as_unknown(tmp_path):
    cfg = tmp_path / "typo.yaml"
    cfg.write_text("base: null\nstagse: [fio]\n")
    with pytest.raises(ConfigError, match=r"config key 'stagse': unknown key"):
        load(cfg)


@pytest.mark.slow
def test_a_cli_config_that_is_missing_bad_json_or_a_list_is_one_line(tmp_path):
    (tmp_path / "list.yaml").write_text("- fio\n- load_index\n")
    for given, says in (("/nonexistent.yaml", "does not exist"), ("{bad json", "not a JSON object"),
                        (str(tmp_path / "list.yaml"), "is not a catbench config")):
        p = subprocess.run([sys.executable, "-m", "catbench", "compare", "results/a", "results/b",
                            "--config", given], cwd=REPO, capture_output=True, text=True, timeout=60)
        assert p.returncode == 1 and "Traceback" not in p.stderr, p.stderr
        assert "catbench compare: error: --config: " in p.stderr and says in p.stderr, p.stderr


# -- where configs live ------------------------------------------------------------------

PRESETS_MAX = 15
CHECKS = REPO / "docs" / "results" / "configs"
# A config path as the Makefile and the docs name it; names are lowercase, so a placeholder
# (`config/C.yaml`, `config/x.yaml`) or a make variable (`$(FAR)`) is not taken for one. A `*`
# is a glob that must match at least one file.
NAMED = re.compile(r"(?<![\w./-])((?:config|docs/results/configs)/[a-z0-9*][a-z0-9*.-]*\.yaml)")


def named_config_paths() -> list[tuple[str, str]]:
    """(where, path) for every config path the Makefile and the Markdown pages name (README.md,
    ARCHITECTURE.md, docs/ with its results pages, config/README.md, the models' pages)."""
    files = [REPO / "Makefile", REPO / "README.md", REPO / "ARCHITECTURE.md", REPO / "config" / "README.md",
             *sorted((REPO / "docs").rglob("*.md")), *sorted((REPO / "workflow").rglob("*.md"))]
    return [(f"{f.relative_to(REPO)}:{n}", m) for f in files
            for n, line in enumerate(f.read_text().split("\n"), 1) for m in NAMED.findall(line)]


def test_config_holds_only_the_presets_a_user_starts_from():
    presets = sorted(p.name for p in (REPO / "config").glob("*.y*ml"))
    assert "config.yaml" in presets and len(presets) <= PRESETS_MAX, \
        f"config/ holds {len(presets)} configs, more than {PRESETS_MAX} presets: " \
        "a check's config goes beside its page in docs/results/configs/"


def test_every_config_path_the_makefile_and_the_docs_name_exists():
    named = named_config_paths()
    assert any(p.startswith("docs/results/configs/") for _, p in named), "the pattern finds nothing"
    missing = [f"{where}: {p}" for where, p in named if not list(REPO.glob(p))]
    assert not missing, "config paths named that do not exist:\n" + "\n".join(missing)


def test_named_config_paths_pattern():
    text = "make far-check FAR=docs/results/configs/far-x.yaml `config/C.yaml` $(FAR) myconfig/a.yaml\n" \
           "(docs/results/configs/lsm-*.yaml) tests/configs/tiny.yaml config/a.yaml."
    assert NAMED.findall(text) == ["docs/results/configs/far-x.yaml", "docs/results/configs/lsm-*.yaml",
                                  "config/a.yaml"]


@pytest.mark.parametrize("path", sorted([*(REPO / "config").glob("*.yaml"), *CHECKS.glob("*.yaml")]),
                         ids=lambda p: str(p.relative_to(REPO)))
def test_every_preset_and_check_config_reads_over_its_base(path):
    """A config that names another as its base still finds it where it now lives."""
    assert layered(read_file(path, "config file"), REPO)["run"]
