"""The partition stage against a peer partitioner (make bench-partition): the rules' own
commands (as `snakemake -n -p` prints them: the map jobs, then the reduces `--cores` at
a time) alternated with the peer (Qserv's `sph-partition`, given by path) on the same
rows, on each target of the config (tmpfs, disk), with TSV chunk files only (the peer's
output) and with TSV and Parquet (the Parquet files' extra cost), in an order that turns
by one each round. Each run's previous output is deleted before it, outside the timed part. Figures are whole process trees
(user + sys CPU-s, wall s, the largest process's peak RSS), medians [min-max] and the
ratio of each run to the peer's in the same round. Without a peer: rows/s and output
bytes/s against this machine's memory-copy and write bandwidth.

    python workflow/scripts/bench_partition.py --config docs/results/configs/bench-partition.yaml \
        [--peer PATH] [--pairs 6] [--out results/bench-partition]
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
import platform
import shlex
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

import duckdb
import numpy as np
import pyarrow.parquet as pq

import catbench
from catbench.core.infra.config import load as load_config

REPORTING = Path("/sys/module/page_reporting/parameters/page_reporting_order")
FORMATS = {"tsv": "[tsv]", "tsv+parquet": "[tsv, parquet]"}
GALACTIC = "tsv, galactic sky"


def sh(cmd: list[str], **kw) -> str:
    return subprocess.run(cmd, check=True, text=True, capture_output=True, **kw).stdout


class Target:
    """One target's run: results/<run>-<target> links to a folder on that target."""

    def __init__(self, args, cfg: dict, name: str, sky: str = "uniform"):
        self.args, self.cfg, self.name, self.sky = args, cfg, name, sky
        self.run = f"{cfg['run']}-{name}" + ("" if sky == "uniform" else f"-{sky}")
        self.dir = Path(cfg["targets"][name]["path"]).expanduser() / self.run
        self.link = Path("results") / self.run

    def snakemake(self, formats: str, *extra: str) -> str:
        return sh(["snakemake", "--cores", str(self.args.cores), "--configfile", self.args.config,
                   "--config", f"run={self.run}", f"partition={{formats: {formats}}}",
                   f"catalog={{density: {{model: {self.sky}}}}}", *extra,
                   "--", "partition"])

    def prepare(self) -> None:
        self.dir.mkdir(parents=True, exist_ok=True)
        if self.link.is_symlink() or not self.link.exists():
            self.link.unlink(missing_ok=True)
            self.link.symlink_to(self.dir.resolve(), target_is_directory=True)
        print(f"{self.name}, {self.sky} sky: catalog and one partition through Snakemake in "
              f"{self.dir}", flush=True)
        self.snakemake(FORMATS["tsv"])
        self.tsv_bytes = output_bytes(self)
        self.clean_catbench()

    def commands(self, formats: str) -> tuple[list[str], list[str]]:
        """The map and the reduce commands, as the rules run them."""
        out = self.snakemake(formats, "-n", "-p", "--forcerun", "partition_map")
        cmds = [line.split("Shell command: ", 1)[1] for line in out.splitlines()
                if "Shell command: " in line and "catbench partition-" in line]
        maps = [c for c in cmds if "catbench partition-map " in c]
        reduces = [c for c in cmds if "catbench partition-reduce " in c]
        if not maps or not reduces:
            raise SystemExit(f"no partition commands in the dry run of {self.run}:\n{out[-2000:]}")
        return maps, reduces

    def catbench_script(self, formats: str) -> str:
        maps, reduces = self.commands(formats)
        lines = ["set -e", *maps]   # each map job uses every core
        for k in range(0, len(reduces), self.args.cores):
            lines += [f"( {c} ) &" for c in reduces[k:k + self.args.cores]]
            lines += ["for p in $(jobs -p); do wait $p; done"]
        return "\n".join(lines)

    def clean_catbench(self) -> None:
        for sub in ("partition/staging", "chunks"):
            shutil.rmtree(self.link / sub, ignore_errors=True)

    def peer_input(self) -> tuple[Path, list[str]]:
        """The catalog's Objects as one TSV (the peer reads text), and their columns."""
        parts = sorted((self.link / "catalog" / "Object").glob("part-*.parquet"))
        names = pq.read_schema(parts[0]).names
        path = self.dir / "peer-input" / "object.tsv"
        if not path.exists():
            path.parent.mkdir(exist_ok=True)
            files = ", ".join(f"'{p}'" for p in parts)
            duckdb.sql(f"COPY (SELECT * FROM read_parquet([{files}])) TO '{path}.tmp' "
                       f"(DELIMITER '\t', HEADER false)")
            os.replace(f"{path}.tmp", path)
        return path, names

    def peer_script(self) -> str:
        path, names = self.peer_input()
        p = self.cfg["partition"]
        cmd = [self.args.peer, f"--mr.num-workers={self.args.cores}",
               f"--part.num-stripes={p['num_stripes']}",
               f"--part.num-sub-stripes={p['num_sub_stripes_per_stripe']}",
               f"--part.overlap={p['overlap_deg']}", "--part.pos=ra_PS, decl_PS",
               "--part.chunk=chunkId", "--part.sub-chunk=subChunkId",
               *[f"--in.csv.field={n}" for n in names], "--in.csv.no-quote", "--out.csv.no-quote",
               "--out.num-nodes=1", f"--out.dir={self.dir / 'peer'}", f"--in.path={path}"]
        return shlex.join(cmd) + f" > {shlex.quote(str(self.dir / 'peer.log'))} 2>&1"

    def clean_peer(self) -> None:
        shutil.rmtree(self.dir / "peer", ignore_errors=True)


# Times ``bash -c SCRIPT`` from a small process: a child forked from this one would count
# this process's resident memory (after DuckDB, over a GB) as its own peak.
LAUNCHER = """
import json, os, sys, time
t0 = time.perf_counter()
pid = os.spawnvp(os.P_NOWAIT, "bash", ["bash", "-c", sys.argv[1]])
_, status, ru = os.wait4(pid, 0)
print(json.dumps({"exit": os.waitstatus_to_exitcode(status), "wall": time.perf_counter() - t0,
                  "cpu": ru.ru_utime + ru.ru_stime, "sys": ru.ru_stime, "rss_gib": ru.ru_maxrss / 2**20}))
"""


def timed(script: str) -> dict:
    """CPU (user + sys of the whole tree), wall and the largest process's peak RSS."""
    fig = json.loads(sh([sys.executable, "-c", LAUNCHER, script]).splitlines()[-1])
    if fig.pop("exit"):
        raise SystemExit(f"a timed run failed:\n{script[:500]}")
    return fig


def orders(n: int) -> list[list[int]]:
    """A Williams design: orders of ``n`` runs in which each run follows each other run
    equally often, so what one run leaves behind (a large deletion, dirty pages) falls on
    every other run alike, not always on the same one."""
    first = [0] + [(j + 1) // 2 if j % 2 else n - j // 2 for j in range(1, n)]
    rows = [[(x + i) % n for x in first] for i in range(n)]
    return rows if n % 2 == 0 else rows + [row[::-1] for row in rows]


def series(target: Target, peer: bool, galactic: Target | None) -> dict[str, list[dict]]:
    """Rounds of (catbench TSV, peer, catbench TSV + Parquet[, TSV of the galactic sky]) in
    the orders of :func:`orders`, after one warm-up round; then, untimed, the TSV + Parquet
    and peer outputs the mismatch check compares."""
    runs = {name: (target.catbench_script(f), target.clean_catbench) for name, f in FORMATS.items()}
    if peer:
        runs = {"tsv": runs["tsv"], "peer": (target.peer_script(), target.clean_peer),
                "tsv+parquet": runs["tsv+parquet"]}
    if galactic:
        runs[GALACTIC] = (galactic.catbench_script(FORMATS["tsv"]), galactic.clean_catbench)
    out: dict[str, list[dict]] = {name: [] for name in runs}
    names, designs = list(runs), orders(len(runs))
    for k in range(target.args.pairs + 1):
        before = None
        for name in (names[i] for i in designs[max(0, k - 1) % len(designs)]):
            script, clean = runs[name]
            clean()
            fig = {**timed(script), "after": before}
            before = name
            clean()
            if k:
                out[name].append(fig)
                print(f"{target.name} round {k} {name} (after {fig['after']}): {fig['cpu']:.2f} CPU-s "
                      f"{fig['wall']:.2f} s {fig['sys']:.2f} sys-s", flush=True)
    for name in ("tsv+parquet", "peer") if peer else ("tsv+parquet",):
        timed(runs[name][0])
    return out


def mismatches(target: Target) -> dict:
    """(file kind, objectId, chunkId, subChunkId) of every line, as multisets, both ways."""
    def lines(glob: str) -> str:
        return (f"SELECT CASE WHEN filename LIKE '%overlap%' THEN 'overlap' ELSE 'chunk' END kind, "
                f"column00 id, column23 chunk, column24 sub FROM read_csv('{glob}', delim='\t', "
                f"header=false, all_varchar=true, filename=true, quote='', escape='')")
    cat = lines(str(target.link.resolve() / "chunks" / "Object" / "chunk_*.tsv"))
    peer = lines(str(target.dir / "peer" / "chunk_*.txt"))
    q = "SELECT count(*) FROM ({} EXCEPT ALL {})"
    with duckdb.connect() as con:
        con.execute("SET enable_progress_bar = false")
        def count(sql: str) -> int:
            return con.execute(sql).fetchone()[0]
        return {"catbench_not_peer": count(q.format(cat, peer)),
                "peer_not_catbench": count(q.format(peer, cat)),
                "rows": count(f"SELECT count(*) FROM ({cat})")}


def bandwidth(folder: Path) -> dict:
    """This machine's memory copy and buffered write (into ``folder``), GB/s, best of 3."""
    a, b = np.ones(1 << 28, np.uint8), np.empty(1 << 28, np.uint8)
    copy = min(_secs(lambda: np.copyto(b, a)) for _ in range(3))
    path, block = folder / "bandwidth.tmp", a[: 8 << 20].tobytes()

    def write():
        with open(path, "wb") as f:
            for _ in range(128):
                f.write(block)
            os.fsync(f.fileno())
    try:
        w = min(_secs(write) for _ in range(3))
    finally:
        path.unlink(missing_ok=True)
    return {"memcpy_gb_s": (1 << 28) / copy / 1e9, "write_gb_s": (128 * len(block)) / w / 1e9}


def _secs(fn) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def output_bytes(target: Target) -> int:
    return sum(p.stat().st_size for p in (target.link / "chunks").rglob("chunk_*") if p.is_file())


def summary(figs: list[dict], key: str) -> str:
    v = [f[key] for f in figs]
    return f"{statistics.median(v):.2f} [{min(v):.2f}–{max(v):.2f}]"


def table(target: Target, result: dict) -> list[str]:
    head = ["| tool (n={}) | CPU-s | sys s | wall s | peak RSS GiB | M Objects/s |".format(
        target.args.pairs), "|---|---:|---:|---:|---:|---:|"]
    for name, figs in result["runs"].items():
        wall = statistics.median(f["wall"] for f in figs)
        rows = result["objects_galactic" if name == GALACTIC else "objects"]
        head.append(f"| {name} | {summary(figs, 'cpu')} | {summary(figs, 'sys')} | "
                    f"{summary(figs, 'wall')} | {summary(figs, 'rss_gib')} | {rows / wall / 1e6:.2f} |")
    pairs = [(name, "peer") for name in FORMATS if "peer" in result["runs"]]
    if GALACTIC in result["runs"]:
        pairs.append((GALACTIC, "tsv"))
    if pairs:
        head += ["", "| ratio, same round | CPU | wall |", "|---|---:|---:|"]
    for a_name, b_name in pairs:
        a_runs, b_runs = result["runs"][a_name], result["runs"][b_name]
        r = {k: [a[k] / b[k] for a, b in zip(a_runs, b_runs)] for k in ("cpu", "wall")}
        if a_name == GALACTIC:  # per row: the two skies' catalogs differ a little in rows
            r = {k: [v * result["objects"] / result["objects_galactic"] for v in r[k]] for k in r}
        head.append(f"| {a_name} ÷ {b_name}{' (per row)' if a_name == GALACTIC else ''} | " + " | ".join(
            f"**{statistics.median(v):.2f}** [{min(v):.2f}–{max(v):.2f}]" for v in r.values()) + " |")
    return head + ["", *by_predecessor(result["runs"])]


def by_predecessor(runs: dict[str, list[dict]]) -> list[str]:
    """Each tool's figures when it ran right after the TSV + Parquet run (whose output, the
    largest, was just deleted) and otherwise: the order's own effect."""
    out = ["| tool | after TSV + Parquet: n, CPU-s, sys s | otherwise: n, CPU-s, sys s |", "|---|---:|---:|"]
    for name, figs in runs.items():
        cells = []
        for group in ([f for f in figs if f.get("after") == "tsv+parquet"],
                      [f for f in figs if f.get("after") != "tsv+parquet"]):
            cells.append(f"{len(group)}, {summary(group, 'cpu')}, {summary(group, 'sys')}" if group else "0")
        out.append(f"| {name} | {cells[0]} | {cells[1]} |")
    return out


def room(target: Target) -> None:
    """Refuse a target without room for the series: the catalog's TSV about three times
    (catbench's TSV and Parquet, the peer's TSV, the peer's input)."""
    need = 3 * target.tsv_bytes
    free = shutil.disk_usage(target.dir).free
    if free < need:
        raise SystemExit(f"{target.dir}: {free / 1e9:.1f} GB free, the series needs about "
                         f"{need / 1e9:.1f} GB; free some, or leave this target out (--targets)")
    rounds = target.args.pairs + 1
    print(f"{target.name}: {objects(target):,} Objects, {rounds} rounds of 3-4 runs of ~5 s: "
          f"about {rounds * 4 * 8 / 60:.0f} min", flush=True)


def on_tmpfs(path: Path) -> bool:
    mounts = [line.split()[1:3] for line in open("/proc/mounts")]
    fs = max((m for m in mounts if str(path.resolve()).startswith(m[0].rstrip("/") + "/")),
             key=lambda m: len(m[0]), default=[None, None])[1]
    return fs == "tmpfs"


def objects(target: Target) -> int:
    return sum(pq.ParquetFile(p).metadata.num_rows
               for p in (target.link / "catalog" / "Object").glob("part-*.parquet"))


def machine() -> str:
    model = next((line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo")
                  if line.startswith("model name")), "?")
    order = REPORTING.read_text().strip() if REPORTING.exists() else "absent"
    return (f"{os.cpu_count()} CPUs ({model}), {platform.release()}, "
            f"free page reporting order {order} ({'on' if order != 'absent' and int(order) < 11 else 'off'})")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--config", default="docs/results/configs/bench-partition.yaml")
    ap.add_argument("--peer", help="a peer partitioner, e.g. Qserv's sph-partition")
    ap.add_argument("--pairs", type=int, default=6)
    ap.add_argument("--cores", type=int, default=os.cpu_count())
    ap.add_argument("--targets", nargs="+", default=["tmpfs", "disk"])
    ap.add_argument("--galactic", action="store_true",
                    help="also the galactic sky's catalog, TSV, against the uniform one's")
    ap.add_argument("--page-reporting", choices=["as-is", "off"], default="as-is",
                    help="off: turn the VM's free page reporting off for the series (root), "
                         "then back")
    ap.add_argument("--out", default="results/bench-partition")
    args = ap.parse_args()
    if args.peer and not os.access(args.peer, os.X_OK):
        raise SystemExit(f"--peer {args.peer}: not an executable file")
    cfg = load_config(args.config)
    before = REPORTING.read_text().strip() if REPORTING.exists() else None
    if args.page_reporting == "off":
        if before is None:
            raise SystemExit(f"--page-reporting off: {REPORTING} does not exist on this machine")
        REPORTING.write_text("11")
    try:
        run_all(args, cfg)
    finally:
        if before is not None and args.page_reporting == "off":
            REPORTING.write_text(before)


def run_all(args, cfg: dict) -> None:
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    report = [f"# The partition stage{' against ' + Path(args.peer).name if args.peer else ''}", "",
              f"Machine: {machine()}.", f"Command: `{shlex.join(sys.argv)}`.", ""]
    # catbench's bytecode cached, as an installed package has it (an environment with
    # PYTHONDONTWRITEBYTECODE would otherwise compile its modules in every job, ~30 ms each)
    compileall.compile_dir(Path(catbench.__file__).parent, quiet=1)
    results = {}
    for name in args.targets:
        target = Target(args, cfg, name)
        target.prepare()
        galactic = Target(args, cfg, name, "galactic") if args.galactic else None
        if galactic:
            galactic.prepare()
        try:
            room(target)
            res = {"runs": series(target, bool(args.peer), galactic), "bandwidth": bandwidth(target.dir),
                   "objects": objects(target), "objects_galactic": objects(galactic) if galactic else None}
            res["bytes"] = output_bytes(target)     # of the last run: TSV + Parquet
            if args.peer:
                res["mismatches"] = mismatches(target)
        finally:
            tidy(target, galactic)
        results[name] = res
        report += [f"## {name} ({target.dir})", "", *table(target, res), "", _limits(res), ""]
        if args.peer:
            m = res["mismatches"]
            report += [f"Mismatches of (file kind, objectId, chunkId, subChunkId) over {m['rows']:,} "
                       f"lines: {m['catbench_not_peer']} in catbench's output only, "
                       f"{m['peer_not_catbench']} in the peer's only.", ""]
    (out / "results.json").write_text(json.dumps(results, indent=1))
    (out / "partition.md").write_text("\n".join(report))
    print("\n".join(report))


def tidy(*targets: Target | None) -> None:
    """Outputs deleted, also after a failure; a tmpfs copy whole (it is memory, and its
    catalog is made again in a minute)."""
    for t in filter(None, targets):
        if on_tmpfs(t.dir):
            shutil.rmtree(t.dir, ignore_errors=True)
            t.link.unlink(missing_ok=True)
        else:
            t.clean_catbench()
            t.clean_peer()


def _limits(res: dict) -> str:
    bw, runs = res["bandwidth"], res["runs"]["tsv+parquet"]
    wall = statistics.median(f["wall"] for f in runs)
    gb = res["bytes"] / 1e9
    floor = gb / bw["write_gb_s"] + gb / bw["memcpy_gb_s"]
    return (f"TSV + Parquet: {gb:.2f} GB written at {gb / wall:.2f} GB/s; this machine copies "
            f"memory at {bw['memcpy_gb_s']:.1f} GB/s and writes to this target at "
            f"{bw['write_gb_s']:.2f} GB/s (1 GiB, 8 MiB writes, fsync): copying those bytes once "
            f"and writing them takes {floor:.2f} s, {floor / wall:.0%} of the stage's median wall.")


if __name__ == "__main__":
    main()
