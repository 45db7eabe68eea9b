#!/usr/bin/env python
"""Start-up of the command line for a cached model: `mbgen simulate examples/balance_pendulum.yaml --quiet`.

Runs the command once to fill the cache (not timed), then --runs times, and reports per run the wall time and
the CPU time of the child process (user + system, from resource.getrusage), medians; the CPU figure is what the
start-up costs when the machine is shared. Also the import time of `codegen.cli` and the slowest modules it
imports (python -X importtime). Writes results/startup.{json,md}.

    python benchmarks/bench_startup.py --runs 5
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

from bench_recursive import machine_info  # noqa: E402


def run(cmd):
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    subprocess.run(cmd, cwd=ROOT, check=True, capture_output=True)
    wall = time.perf_counter() - t0
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)


def git_commit() -> str:
    try:
        out = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True,
                             timeout=20).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=ROOT,
                               capture_output=True, text=True, timeout=20).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return (out or "unknown") + (" (tracked files modified)" if dirty else "")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--model", default="examples/balance_pendulum.yaml")
    ap.add_argument("--out-dir", default=str(HERE / "results"))
    args = ap.parse_args(argv)
    machine = machine_info()
    out_npz = Path(tempfile.mkdtemp(prefix="mbgen-startup-")) / "m.npz"
    cmd = [sys.executable, "-m", "codegen.cli", "simulate", args.model, "--quiet", "--out", str(out_npz)]
    run(cmd)                                              # fills the cache
    walls, cpus = zip(*[run(cmd) for _ in range(args.runs)])
    imp = subprocess.run([sys.executable, "-X", "importtime", "-c", "import codegen.cli"], cwd=ROOT,
                         capture_output=True, text=True).stderr.splitlines()
    rows = []
    for line in imp:
        parts = line.split("|")
        if len(parts) == 3 and parts[1].strip().isdigit():
            rows.append((int(parts[1]), parts[2].rstrip()))
    total = max((c for c, _ in rows), default=0)
    top = sorted(((c, n.strip()) for c, n in rows if n.strip().count(".") == 0), reverse=True)[:8]
    med = lambda v: sorted(v)[len(v) // 2]  # noqa: E731
    doc = {"command": "python " + " ".join([os.path.relpath(__file__, os.getcwd())] + (sys.argv[1:] if argv is None
                                                                                         else argv)),
           "machine": machine, "commit": git_commit(), "cli": " ".join(cmd[1:]), "wall_s": list(walls), "cpu_s": list(cpus),
           "wall_median_s": med(walls), "cpu_median_s": med(cpus), "import_cli_s": total / 1e6,
           "top_level_imports_s": [[n, c / 1e6] for c, n in top], "loadavg_end": list(os.getloadavg()),
           "pythondontwritebytecode": bool(os.environ.get("PYTHONDONTWRITEBYTECODE"))}
    L = ["# Command-line start-up for a cached model", "", f"- command: `{doc['command']}`",
         f"- date {doc['machine']['date']}; commit {doc['commit']}; load average at start "
         f"{', '.join(f'{x:.2f}' for x in doc['machine']['loadavg_start'])}, at end "
         f"{', '.join(f'{x:.2f}' for x in doc['loadavg_end'])}",
         f"- timed: `mbgen simulate {args.model} --quiet` (warm cache), {args.runs} runs"
         + ("; PYTHONDONTWRITEBYTECODE was set, so the package's own modules were compiled on every start (an "
            "installed package has its .pyc)" if doc["pythondontwritebytecode"] else ""), "",
         "| wall, median [s] | CPU (user + system), median [s] | `import codegen.cli` [s] |", "|---:|---:|---:|",
         f"| {doc['wall_median_s']:.2f} | {doc['cpu_median_s']:.2f} | {doc['import_cli_s']:.2f} |", "",
         "Slowest top-level imports of `codegen.cli` (cumulative, s): "
         + ", ".join(f"{n} {c:.2f}" for n, c in doc["top_level_imports_s"]), ""]
    out = Path(args.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    (out / "startup.json").write_text(json.dumps(doc, indent=1))
    (out / "startup.md").write_text("\n".join(L))
    print("\n".join(L))
    return 0


if __name__ == "__main__":
    sys.exit(main())
