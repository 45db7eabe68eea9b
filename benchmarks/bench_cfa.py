#!/usr/bin/env python
"""The seed's Table 1 (Liu, Hu & Zhang 2016, section 4.2) in one run, extended to longer chains and trees.

Methods: dense (CRBA + Cholesky, O(n^3); the seed's "Kane" column is a coupled O(n^3) method as well),
recursive (O(n), Kang & Yoon 2003; the seed's ref. [30]), cfa general (the constraint force system A F_S = Xdot
assembled and solved by LDL^T, O(N_S^3) in the constraint count, seed eqs 28-29) and cfa serial (odd-even
elimination along the chains, seed section 3, eqs 39-44, and the node system by block elimination along the tree,
deepest special first, without fill: codegen.algorithms.cfa.plan.node_elimination).

Models: M4 (codegen.models.space_robot(), 13 bodies; simulated over --m4-t-end = 10 s as in Table 1),
planar chains codegen.models.chain(n) and revolute trees codegen.models.random_tree(n, seed, ("revolute",)).

Per model and method, in interleaved rounds (every method once per round, medians over --repeats rounds):
  * CPU time per simulation: System.simulate(t_end, dt, "rk4") from the model's initial state, the whole loop in
    compiled code; the time is result.meta["wall_time_s"] (wall clock of the compiled loop, one thread).  A
    method whose run would exceed --max-run-s (estimated from its forward-dynamics time) runs a shorter horizon
    and the time is scaled to the full horizon (marked "*");
  * forward dynamics per call: System.kernel.time_forward_dynamics(q, u, repeats) (timed inside compiled code).
Checked before timing: udot of every method against recursive at a random state (relative to max(1, |udot|)),
and the cfa joint wrenches against recursive's.  Fits: log-log slope of time against n per method and family.
The machine is shared (2 cores, other agents): times are medians of interleaved rounds and still noisy.

    python benchmarks/bench_cfa.py                          # full: n = 7 ... 1000 (builds take ~15-25 s each)
    python benchmarks/bench_cfa.py --sizes 7 20 50 --trees 7 20 --repeats 3
Writes benchmarks/results/cfa.json and cfa.md (rewritten after every model).
"""
from __future__ import annotations

import argparse
import datetime as _dt
import json
import os
import platform
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import codegen

METHODS = (("dense", "dense", {}), ("recursive", "recursive", {}),
           ("cfa general", "cfa", {"form": "general"}), ("cfa serial", "cfa", {"form": "serial"}))


def args_():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--sizes", type=int, nargs="*", default=[7, 20, 50, 100, 200, 500, 1000], help="chain lengths")
    p.add_argument("--trees", type=int, nargs="*", default=[7, 20, 50, 100, 200, 500, 1000], help="tree sizes")
    p.add_argument("--tree-seed", type=int, default=1)
    p.add_argument("--t-end", type=float, default=1.0, help="simulated time per run for chains and trees [s]")
    p.add_argument("--m4-t-end", type=float, default=10.0, help="simulated time per M4 run (seed: 10 s)")
    p.add_argument("--dt", type=float, default=0.002)
    p.add_argument("--repeats", type=int, default=5, help="interleaved rounds; medians reported")
    p.add_argument("--general-max", type=int, default=200, help="largest n for cfa general (O(N_S^3))")
    p.add_argument("--dense-max", type=int, default=1000, help="largest n for dense")
    p.add_argument("--max-run-s", type=float, default=3.0, help="longer runs are shortened and scaled")
    p.add_argument("--max-build-s", type=float, default=240.0,
                   help="after a build slower than this, skip that method for larger n")
    p.add_argument("--out-dir", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "results"))
    return p.parse_args()


def fd_batch(s, q, u, target=0.02):
    """Seconds per forward-dynamics call in compiled code, with a batch of ~target seconds."""
    t1 = s.kernel.time_forward_dynamics(q, u, 1)
    return s.kernel.time_forward_dynamics(q, u, max(1, min(100000, int(target / max(t1, 1e-7)))))


def measure(label, model, t_end, a, skip, doc):
    """Build every method, verify against recursive, time in interleaved rounds; returns the row dict."""
    row = {"model": label, "nb": len(model.bodies), "nv": None, "t_end": t_end, "methods": {}, "notes": []}
    systems = {}
    n = len(model.bodies)
    for name, alg, opt in METHODS:
        if name in skip:
            row["notes"].append(f"{name}: skipped ({skip[name]})")
            continue
        if name == "cfa general" and n > a.general_max and label != "M4":
            row["notes"].append(f"cfa general: skipped, n > --general-max {a.general_max} (O(N_S^3))")
            continue
        if name == "dense" and n > a.dense_max:
            row["notes"].append(f"dense: skipped, n > --dense-max {a.dense_max}")
            continue
        t0 = time.perf_counter()
        systems[name] = s = codegen.build(model, alg, **opt)
        bt = time.perf_counter() - t0
        row["methods"][name] = {"build_s": bt, "cached": bool(s.build_info.get("cached", False))}
        if bt > a.max_build_s:
            skip[name] = f"build at n = {n} took {bt:.0f} s > --max-build-s"
        print(f"  {label}: built {name} in {bt:.1f} s", flush=True)
    ref = systems["recursive"]
    row["nv"] = ref.nv
    rng = np.random.default_rng(n)
    q, u = model.initial_state()
    q = np.asarray(q, float).copy()
    q += rng.normal(0, 0.1, q.size) * (np.arange(q.size) >= (7 if label == "M4" else 0))
    u = rng.normal(0, 0.5, ref.nv)
    ud_ref = ref.forward_dynamics(q, u)
    W_ref = ref.joint_wrenches(q, u)
    scale, wscale = max(1.0, np.abs(ud_ref).max()), max(1.0, np.abs(W_ref).max())
    for name, s in systems.items():
        m = row["methods"][name]
        m["udot_err"] = float(np.abs(s.forward_dynamics(q, u) - ud_ref).max() / scale)
        m["wrench_err"] = float(np.abs(s.joint_wrenches(q, u) - W_ref).max() / wscale)
        if not np.isfinite(m["udot_err"]) or m["udot_err"] > 1e-6:
            doc["failures"].append(f"{label} {name}: udot differs from recursive by {m['udot_err']:.2e}")
    # horizon per method: full unless the estimate (4 fd per RK4 step) exceeds --max-run-s
    steps = round(t_end / a.dt)
    for name, s in systems.items():
        m = row["methods"][name]
        m["fd_first_s"] = fd_batch(s, q, u, 0.005)
        est = 4 * steps * m["fd_first_s"]
        m["run_steps"] = steps if est <= a.max_run_s else max(1, int(steps * a.max_run_s / est))
        m["scaled"] = m["run_steps"] < steps
        m["fd_s"], m["sim_s"] = [], []
    for _ in range(a.repeats):                                       # interleaved rounds
        for name, s in systems.items():
            m = row["methods"][name]
            m["fd_s"].append(fd_batch(s, q, u))
            r = s.simulate(m["run_steps"] * a.dt, a.dt, integrator="rk4")
            if not np.all(np.isfinite(r.q[-1])):
                doc["failures"].append(f"{label} {name}: non-finite state after RK4")
            m["sim_s"].append(r.meta["wall_time_s"] * steps / m["run_steps"])
    for name, m in row["methods"].items():
        m["fd_median_s"], m["sim_median_s"] = float(np.median(m["fd_s"])), float(np.median(m["sim_s"]))
        m["fd_min_s"], m["sim_min_s"] = float(np.min(m["fd_s"])), float(np.min(m["sim_s"]))
    return row


def fits(rows, family):
    """log-log slope of time against n per method (all sizes, and sizes >= 100)."""
    out = {}
    for name, *_ in METHODS:
        for key in ("sim_median_s", "fd_median_s"):
            pts = [(r["nb"], r["methods"][name][key]) for r in rows
                   if r["model"].startswith(family) and name in r["methods"]]
            res = {}
            for tag, sel in (("all", pts), ("n>=100", [p for p in pts if p[0] >= 100])):
                if len(sel) >= 2:
                    x, y = np.log([p[0] for p in sel]), np.log([p[1] for p in sel])
                    res[tag] = float(np.polyfit(x, y, 1)[0])
            out[f"{name}|{key}"] = res
    return out


def fmt_t(v):
    return f"{v * 1e3:.3g} ms" if v < 1 else f"{v:.3g} s"


def write(doc, out_dir):
    os.makedirs(out_dir, exist_ok=True)
    names = [m[0] for m in METHODS]
    L = ["# CFA benchmark (Liu, Hu & Zhang 2016, Table 1, extended)", "",
         f"{doc['date']}; {doc['machine']}; command `{doc['command']}`.",
         (f"Load average at start {doc['load_start']}, at end {doc.get('load_end')}. The machine is shared "
         "(2 cores, other agents' jobs): every number is the median of interleaved rounds (each method once per "
         f"round, {doc['repeats']} rounds) and single cells may still be off by tens of percent."), "",
         (f"RK4 at dt = {doc['dt']}: M4 over {doc['m4_t_end']} s (as in the seed's Table 1), chains and trees over "
         f"{doc['t_end']} s; time of the compiled simulation loop (`result.meta['wall_time_s']`). `*`: run over a "
         "shorter horizon and scaled (the full run would exceed --max-run-s). `fd`: one forward-dynamics call, "
         "timed in compiled code. cfa general is O(N_S^3) in the constraint count: capped at "
         f"n <= {doc['general_max']}."), "",
         "| model | n bodies | nv | " + " | ".join(f"{k} sim" for k in names) + " | "
         + " | ".join(f"{k} fd [us]" for k in names) + " | max udot err | max wrench err |",
         "|---" * (5 + 2 * len(names)) + "|"]
    for r in doc["rows"]:
        ms = r["methods"]
        sim = [(fmt_t(ms[k]["sim_median_s"]) + ("*" if ms[k]["scaled"] else "")) if k in ms else "-" for k in names]
        fd = [f"{ms[k]['fd_median_s'] * 1e6:.3g}" if k in ms else "-" for k in names]
        ue = max(m["udot_err"] for m in ms.values())
        we = max(m["wrench_err"] for m in ms.values())
        L.append(f"| {r['model']} | {r['nb']} | {r['nv']} | " + " | ".join(sim) + " | " + " | ".join(fd)
                 + f" | {ue:.1e} | {we:.1e} |")
    L += ["", ("Errors: max |x - x_recursive| / max(1, |x_recursive|) at a random state over all methods, for udot and "
          "for the joint wrenches (System.joint_wrenches)."), "",
          "## Growth of the cost with the number of bodies (log-log slope of time against n)", "",
          "| family | method | sim, all n | sim, n >= 100 | fd, all n | fd, n >= 100 |", "|---|---|---|---|---|---|"]
    for fam, f in doc["fits"].items():
        for k in names:
            s, d = f.get(f"{k}|sim_median_s", {}), f.get(f"{k}|fd_median_s", {})
            cells = [f"{x[t]:.2f}" if t in x else "-" for x in (s, d) for t in ("all", "n>=100")]
            L.append(f"| {fam} | {k} | " + " | ".join(cells) + " |")
    notes = [f"{r['model']}: {x}" for r in doc["rows"] for x in r["notes"]] + doc["notes"]
    L += ["", "## Notes", ""] + [f"- {x}" for x in notes + [f"FAILURE: {x}" for x in doc["failures"]]]
    with open(os.path.join(out_dir, "cfa.md"), "w") as fh:
        fh.write("\n".join(L) + "\n")
    with open(os.path.join(out_dir, "cfa.json"), "w") as fh:
        json.dump(doc, fh, indent=1)
    return "\n".join(L)


def main():
    a = args_()
    doc = {"date": _dt.datetime.now().isoformat(timespec="seconds"), "command": " ".join(sys.argv),
           "machine": f"{platform.processor() or platform.machine()}, {os.cpu_count()} cpus, {platform.platform()}",
           "load_start": [round(x, 2) for x in os.getloadavg()], "dt": a.dt, "t_end": a.t_end,
           "m4_t_end": a.m4_t_end, "repeats": a.repeats, "general_max": a.general_max, "rows": [], "fits": {},
           "notes": [], "failures": []}
    jobs = [("M4", codegen.models.space_robot, a.m4_t_end)]
    jobs += [(f"chain {n}", (lambda n=n: codegen.models.chain(n)), a.t_end) for n in a.sizes]
    jobs += [(f"tree {n}", (lambda n=n: codegen.models.random_tree(n, a.tree_seed, types=("revolute",))), a.t_end)
             for n in a.trees]
    skip = {"chain": {}, "tree": {}, "M4": {}}
    for label, make, t_end in jobs:
        print(f"{label} ...", flush=True)
        doc["rows"].append(measure(label, make(), t_end, a, skip[label.split()[0]], doc))
        doc["fits"] = {fam: fits(doc["rows"], fam) for fam in ("chain", "tree")}
        doc["load_end"] = [round(x, 2) for x in os.getloadavg()]
        write(doc, a.out_dir)
    print(write(doc, a.out_dir))
    if doc["failures"]:
        print("VERIFICATION FAILED: " + "; ".join(doc["failures"]), file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
