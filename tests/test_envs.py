"""Every conda env a rule uses has what the rule runs: Python with the pinned packages
and the catbench package (``--use-conda`` runs `catbench <cmd>` inside it)."""

from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parent.parent


def _pins() -> set[str]:
    return {ln.strip() for ln in (REPO / "requirements.txt").read_text().splitlines()
            if ln.strip() and not ln.startswith("#")}


@pytest.mark.parametrize("env", sorted(p.name for p in (REPO / "envs").glob("*.yaml")))
def test_env_runs_catbench_with_the_pinned_packages(env):
    doc = yaml.safe_load((REPO / "envs" / env).read_text())
    deps = doc["dependencies"]
    pip = next(d["pip"] for d in deps if isinstance(d, dict) and "pip" in d)
    assert any(str(d).startswith("python=") for d in deps)
    assert "-e ../" in pip, f"{env} lacks the catbench package"
    assert _pins() <= set(pip), f"{env} pins differ from requirements.txt: {_pins() - set(pip)}"


def test_rules_name_only_existing_envs():
    smk = "\n".join(p.read_text() for p in (REPO / "workflow" / "rules").glob("*.smk"))
    for name in ("python", "fio", "server"):
        assert f'envs/{name}.yaml' in smk
        assert (REPO / "envs" / f"{name}.yaml").exists()


def test_every_multithreaded_rule_takes_its_threads_from_the_config():
    # a job whose threads came from the submitting host's cpu_count() may never start on
    # smaller compute nodes: every threads: is job_threads("<its rule>") (core/infra/jobs/requests.py,
    # jobs.cpus), and no rule file reads the host's CPU count
    import re
    smk = "\n".join(p.read_text() for p in (REPO / "workflow" / "rules").glob("*.smk"))
    threaded = {m.group(1): m.group(2) for m in
                re.finditer(r"^rule (\w+):(?:\n(?!rule ).*)*?\n    threads: (.*)", smk, re.M)}
    assert threaded, "no rule declares threads: the check would prove nothing"
    assert {r: t for r, t in threaded.items() if t != f'job_threads("{r}")'} == {}
    assert "cpu_count" not in smk and "MEASURE_THREADS" not in smk
    profile = yaml.safe_load((REPO / "workflow" / "profiles" / "slurm" / "config.yaml").read_text())
    assert "set-threads" not in profile  # one place: the config (a site may still add overrides)
