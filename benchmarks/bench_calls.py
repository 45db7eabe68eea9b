#!/usr/bin/env python
"""Forward and inverse dynamics per call from Python against pinocchio, on n-link chains (issue 14).

For each chain(n) (codegen.models.chain: planar rods on revolute joints about z) the script builds the
recursive kernels (analysis reference points centroid, joint, origin) and times, through Python, with the
batches of every runner interleaved round robin in one process:

  * ours forward dynamics  ``s.forward_dynamics(q, u, out=buf)`` (and without ``out``: a new array per call)
  * ``pin.aba(model, data, q, v, tau)``
  * ours inverse dynamics  ``s.inverse_dynamics(q, u, a, out=buf)``
  * ``pin.rnea(model, data, q, v, a)``

Each result is checked against pinocchio (1e-9 x max(1, max |value|)) before timing. The ratio columns are
ours / pinocchio, medians over the batches (< 1: ours faster). Writes results/calls.{json,md}.

    python benchmarks/bench_calls.py                       # n = 7 20 50 100 500
    python benchmarks/bench_calls.py --quick               # n = 7 20 50, short batches
    python benchmarks/bench_calls.py --sizes 7 20 --out-name calls_before
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

import codegen  # noqa: E402
from codegen.models import chain  # noqa: E402
from bench_recursive import estimate, interleaved, machine_info, pin_chain  # noqa: E402

REF_POINTS = ("centroid", "joint", "origin")
TOL = 1e-9
PIN_BYTES_PER_N3 = 66.0


def log(*a):
    print(*a, flush=True)


def python_batch(f):
    """A batch runner: CPU seconds of this thread per call of f() over reps calls in a Python loop. The thread's
    CPU clock (not the wall clock) so that time slices lost to other processes on the shared machine do not
    count; the calls are single-threaded on both sides."""
    def run(reps):
        t0 = time.thread_time()
        for _ in range(reps):
            f()
        return (time.thread_time() - t0) / reps
    return run


def kernel_batch(s, q, u):
    """CPU seconds per call of the compiled loop kernel.time_forward_dynamics (same clock as python_batch)."""
    def run(reps):
        t0 = time.thread_time()
        s.kernel.time_forward_dynamics(q, u, reps)
        return (time.thread_time() - t0) / reps
    return run


def _supports_out(f, *args):
    try:
        f(*args, out=np.zeros(len(args[1])))
        return True
    except TypeError:
        return False


def bench_size(n: int, args, cfg) -> dict:
    m = chain(n)
    systems = {v: codegen.build(m, ref_point=v, cache_dir=args.cache_dir) for v in args.ref_points}
    rng = np.random.default_rng(args.seed + n)
    q0, u0 = m.initial_state()
    q = q0 + rng.normal(scale=0.1, size=q0.size)
    u = u0 + rng.normal(scale=1.0, size=u0.size)
    a = rng.normal(scale=1.0, size=u0.size)
    tau0 = np.zeros(n)
    row = {"n": n, "fd": {}, "id": {}, "check": {}}
    import pinocchio as pin
    pm = pin_chain(n)
    pd = pm.createData()
    a_pin = np.array(pin.aba(pm, pd, q, u, tau0))
    t_pin = np.array(pin.rnea(pm, pd, q, u, a))
    sa, st = max(1.0, float(np.max(np.abs(a_pin)))), max(1.0, float(np.max(np.abs(t_pin))))
    for v, s in systems.items():
        e_fd = float(np.max(np.abs(s.forward_dynamics(q, u) - a_pin))) / sa
        e_id = float(np.max(np.abs(s.inverse_dynamics(q, u, a) - t_pin))) / st
        row["check"][v] = {"fd_vs_pin_aba": e_fd, "id_vs_pin_rnea": e_id}
        if not (e_fd <= TOL and e_id <= TOL):
            raise RuntimeError(f"VERIFICATION FAILED: n={n} {v}: fd vs pin.aba {e_fd:.2g}, id vs pin.rnea {e_id:.2g}")
    log(f"  n={n:<4} checked against pin.aba / pin.rnea: "
        + "  ".join(f"{v} {c['fd_vs_pin_aba']:.1e}/{c['id_vs_pin_rnea']:.1e}" for v, c in row["check"].items()))
    out = np.zeros(n)
    runners = {}
    first = systems[args.ref_points[0]]
    has_out = _supports_out(first.forward_dynamics, q, u)
    row["out_keyword"] = has_out
    for v, s in systems.items():
        if has_out:
            f = lambda s=s: s.forward_dynamics(q, u, out=out)  # noqa: E731
        else:
            f = lambda s=s: s.forward_dynamics(q, u)  # noqa: E731
        runners[f"fd {v}"] = (python_batch(f), estimate(f, cfg["estimate_time"]))
    f = lambda: first.forward_dynamics(q, u)  # noqa: E731
    runners["fd new array"] = (python_batch(f), estimate(f, cfg["estimate_time"]))
    f = lambda: pin.aba(pm, pd, q, u, tau0)  # noqa: E731
    runners["pin.aba"] = (python_batch(f), estimate(f, cfg["estimate_time"]))
    if has_out:
        f = lambda: first.inverse_dynamics(q, u, a, out=out)  # noqa: E731
    else:
        f = lambda: first.inverse_dynamics(q, u, a)  # noqa: E731
    runners["id"] = (python_batch(f), estimate(f, cfg["estimate_time"]))
    f = lambda: pin.rnea(pm, pd, q, u, a)  # noqa: E731
    runners["pin.rnea"] = (python_batch(f), estimate(f, cfg["estimate_time"]))
    for v, s in systems.items():
        f = kernel_batch(s, q, u)
        runners[f"fd {v} in compiled loop"] = (f, f(10))
    t = interleaved(runners, cfg["batch_time"], args.repeats)
    row["times"] = t
    best = min(args.ref_points, key=lambda v: t[f"fd {v}"]["median"])
    row["fd_best"] = best
    row["ratios"] = {f"fd {v} / pin.aba": t[f"fd {v}"]["median"] / t["pin.aba"]["median"] for v in args.ref_points}
    row["ratios"]["fd best / pin.aba"] = t[f"fd {best}"]["median"] / t["pin.aba"]["median"]
    row["ratios"]["id / pin.rnea"] = t["id"]["median"] / t["pin.rnea"]["median"]
    return row


def _us(x):
    x *= 1e6
    return f"{x:.3g}" if x < 100 else f"{x:,.0f}"


def run_lines(doc) -> list:
    """The command, machine, load and versions lines of a per-call results page (bench_calls, bench_kinematics)."""
    mi = doc["machine"]
    return [f"- command: `{doc['command']}`",
            f"- date: {mi['date']}; machine: {mi['cpu']}, {mi['cores']} cores; load average at start "
            f"{', '.join(f'{x:.2f}' for x in mi['loadavg_start'])}"
            + (f", at end {', '.join(f'{x:.2f}' for x in doc['loadavg_end'])}" if doc.get("loadavg_end") else ""),
            f"- versions: python {mi['python']}, numpy {mi['numpy']}, Cython {mi['cython']}, "
            f"pinocchio {mi['pinocchio']}, mbgen {mi['mbgen']}; {mi['compiler']}"]


def markdown(doc) -> str:
    L = ["# Forward and inverse dynamics per call from Python, ours against pinocchio (chain(n))", "",
         *run_lines(doc),
         f"- {doc['config']['repeats']} batches of ~{doc['config']['batch_time']} s per runner, all runners "
         "interleaved round robin; medians in µs of CPU time of the calling thread per call (`time.thread_time`: "
         "the machine is shared, and time slices lost to other processes would otherwise count). Ours with "
         "`out=` (no allocation) where supported.",
         "- state: q = initial + N(0, 0.1), u = N(0, 1), udot for inverse dynamics N(0, 1) (seed + n); every "
         f"result checked against pinocchio to {TOL:g} relative before timing", ""]
    rp = doc["config"]["ref_points"]
    head = (["n"] + [f"fd {v}" for v in rp] + ["fd, new array", "pin.aba", "best fd / pin.aba", "id", "pin.rnea",
                                               "id / pin.rnea"] + [f"fd {v} in compiled loop" for v in rp])
    L += ["| " + " | ".join(head) + " |", "|" + "|".join("---:" for _ in head) + "|"]
    for r in doc["rows"]:
        t = r["times"]
        cells = ([r["n"]] + [_us(t[f"fd {v}"]["median"]) for v in rp] + [_us(t["fd new array"]["median"]),
                 _us(t["pin.aba"]["median"]), f"{r['ratios']['fd best / pin.aba']:.2f} ({r['fd_best']})",
                 _us(t["id"]["median"]), _us(t["pin.rnea"]["median"]), f"{r['ratios']['id / pin.rnea']:.2f}"]
                 + [_us(t[f"fd {v} in compiled loop"]["median"]) for v in rp])
        L.append("| " + " | ".join(str(c) for c in cells) + " |")
    L += ["", "`fd in compiled loop`: `System.kernel.time_forward_dynamics` (the kernel alone, no Python per call); "
          "pinocchio has no such loop here, so compare it with the through-Python columns only.", ""]
    return "\n".join(L)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=None)
    ap.add_argument("--ref-points", nargs="+", default=list(REF_POINTS), choices=REF_POINTS)
    ap.add_argument("--repeats", type=int, default=None)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--seed", type=int, default=12345)
    ap.add_argument("--cache-dir", default=None)
    ap.add_argument("--out-dir", default=str(HERE / "results"))
    ap.add_argument("--out-name", default="calls")
    args = ap.parse_args(argv)
    args.sizes = args.sizes or ([7, 20, 50] if args.quick else [7, 20, 50, 100, 500])
    args.repeats = args.repeats or (5 if args.quick else 11)
    cfg = {"batch_time": 0.01 if args.quick else 0.03, "estimate_time": 0.005 if args.quick else 0.02}
    doc = {"command": "python " + " ".join([os.path.relpath(__file__, os.getcwd())] + (sys.argv[1:] if argv is None
                                                                                         else argv)),
           "machine": machine_info(), "config": {**cfg, "repeats": args.repeats, "sizes": args.sizes,
                                                 "ref_points": args.ref_points, "seed": args.seed}, "rows": []}
    out = Path(args.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    for n in args.sizes:
        if PIN_BYTES_PER_N3 * n ** 3 > 0.6 * os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_AVPHYS_PAGES"):
            log(f"n={n}: skipped, pinocchio's Data would not fit in memory")
            continue
        t0 = time.perf_counter()
        doc["rows"].append(bench_size(n, args, cfg))
        r = doc["rows"][-1]
        log(f"  n={n:<4} fd best / pin.aba {r['ratios']['fd best / pin.aba']:.2f} ({r['fd_best']}), "
            f"id / pin.rnea {r['ratios']['id / pin.rnea']:.2f}  ({time.perf_counter() - t0:.0f} s)")
        doc["loadavg_end"] = list(os.getloadavg())
        (out / f"{args.out_name}.json").write_text(json.dumps(doc, indent=1))
        (out / f"{args.out_name}.md").write_text(markdown(doc))
    log(markdown(doc))
    return 0


if __name__ == "__main__":
    sys.exit(main())
