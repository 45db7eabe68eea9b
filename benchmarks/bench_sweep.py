"""Sweep throughput on Dask: 64 runs of model M1 (balance pendulum) on 1 and on 2 workers.

    python benchmarks/bench_sweep.py                   # processes (the default LocalCluster), t_end from the file
    python benchmarks/bench_sweep.py --threads         # worker threads of one process (the kernels drop the GIL)
    python benchmarks/bench_sweep.py --runs 64 --t-end 10 --workers 1 2

Each configuration: a fresh LocalCluster (its start-up is timed separately), then `codegen.sweep` over an
8 x 8 grid of body masses (the kernel is built once, before any timing). Prints the wall time of the sweep, the
time per run, the sum of the runs' own integration times, and the ratio to the first configuration; writes
benchmarks/results/sweep.json and sweep.md.
"""
import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np

import codegen
from codegen.runtime.sweep import connect

ROOT = Path(__file__).resolve().parent.parent


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=64, help="runs, a square grid (default: 64 = 8 x 8)")
    ap.add_argument("--t-end", type=float, default=None, help="simulated time per run [s] (default: the file's, 2)")
    ap.add_argument("--dt", type=float, default=None, help="sample interval [s] (default: the file's, 1e-3)")
    ap.add_argument("--workers", type=int, nargs="+", default=[1, 2], help="worker counts (default: 1 2)")
    ap.add_argument("--threads", action="store_true", help="threads of this process instead of worker processes")
    ap.add_argument("--out-dir", default=str(ROOT / "benchmarks" / "results"), help="where sweep.json/md go")
    a = ap.parse_args(argv)
    m = codegen.load_model(ROOT / "examples" / "balance_pendulum.yaml")
    t_end, dt = a.t_end or m.simulation["t_end"], a.dt or m.simulation["dt"]
    side = int(round(np.sqrt(a.runs)))
    params = {"bodies.body1.mass": np.linspace(0.5, 2.0, side), "bodies.body3.mass": np.linspace(0.5, 2.0, a.runs // side)}
    codegen.build(m)                                          # compiled (or found) before anything is timed
    rows = []
    for n in a.workers:
        t0 = time.perf_counter()
        client, close = connect(None, None, n, processes=not a.threads)
        startup = time.perf_counter() - t0
        try:
            client.submit(sum, [1]).result()                 # workers up and answering
            t0 = time.perf_counter()
            res = codegen.sweep(m, params, t_end=t_end, dt=dt, client=client, fields=["q"])
            wall = time.perf_counter() - t0
        finally:
            for x in close:
                x.close()
        runs = len(res["param_values"])
        assert res["ok"].all() and np.isfinite(res["q"]).all()
        rows.append({"workers": n, "runs": runs, "startup_s": startup, "sweep_s": wall, "per_run_ms": 1e3 * wall / runs,
                     "integration_sum_s": float(res["wall_time"].sum()), "kernel_loads": sum(res["meta"]["kernel_loads"].values())})
        print(f"{n} worker{'s' if n > 1 else ' '} ({'threads' if a.threads else 'processes'}): {runs} runs in "
              f"{wall:.2f} s ({1e3 * wall / runs:.1f} ms per run; integration {res['wall_time'].sum():.2f} s summed; "
              f"cluster start {startup:.2f} s; kernel loaded {rows[-1]['kernel_loads']} times)", flush=True)
    base = rows[0]["sweep_s"]
    for r in rows:
        r["ratio"] = r["sweep_s"] / base
    print("ratio of the sweep times (to the first): " + ", ".join(f"{r['workers']} workers {r['ratio']:.2f}" for r in rows)
          + f"; load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    info = {"date": time.strftime("%Y-%m-%d"), "machine": platform.processor() or platform.machine(),
            "cpus": os.cpu_count(), "load_average": os.getloadavg()[0], "python": platform.python_version(),
            "t_end": t_end, "dt": dt,
            "mode": "threads" if a.threads else "processes", "command": " ".join(sys.argv), "rows": rows}
    os.makedirs(a.out_dir, exist_ok=True)
    suffix = "_threads" if a.threads else ""
    with open(os.path.join(a.out_dir, f"sweep{suffix}.json"), "w") as fh:
        json.dump(info, fh, indent=1)
    lines = [f"Sweep of M1, {rows[0]['runs']} runs of {t_end:g} s at dt = {dt:g} (rk4), worker {info['mode']}; "
             f"{info['date']}, {info['cpus']} CPUs (load average {info['load_average']:.1f} at the end), Python "
             f"{info['python']}; `{info['command']}`", "",
             "| workers | sweep [s] | per run [ms] | integration, summed [s] | ratio | cluster start [s] |",
             "|---:|---:|---:|---:|---:|---:|"]
    lines += [f"| {r['workers']} | {r['sweep_s']:.2f} | {r['per_run_ms']:.1f} | {r['integration_sum_s']:.2f} | "
              f"{r['ratio']:.2f} | {r['startup_s']:.2f} |" for r in rows]
    Path(a.out_dir, f"sweep{suffix}.md").write_text("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
