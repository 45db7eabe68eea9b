#!/usr/bin/env python
"""Whole simulations in compiled code against MuJoCo's C rollout, in one run with interleaved rounds (issue 14).

  * one trajectory: 1 s of RK4 at dt = 1e-3 (1000 steps, 4 forward dynamics each) of chain(n), n = 20, 100:
    ours ``System.rollout`` (1 rollout, 1 thread) against ``mujoco.rollout.rollout`` with one MjData
    (integrator RK4, contacts, constraints, springs and dampers off: the same dynamics);
  * batches: 64 rollouts of chain(20), 1 s of RK4 each, on 1 and 2 threads: ours ``System.rollout(threads=k)``
    against ``mujoco.rollout.rollout`` with k MjData (its own thread pool);
  * M5 (codegen.models.branch_system(999), 1,500 DOF): 1 s of RK4 at dt = 1e-3 with ``recursive``
    (``System.simulate``), wall time;
  * ``System.simulate`` of the same trajectory against the bare loop (``rollout``): what a Result costs on top.

Every timing is the median of interleaved rounds (ours and MuJoCo alternate). The final states of ours and
MuJoCo are compared (same model, same integrator: they agree to round-off) before timing.

    python benchmarks/bench_rollout.py               # full: 7 rounds
    python benchmarks/bench_rollout.py --quick       # 3 rounds, no M5

Writes results/rollout.{json,md}.
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
from codegen.models import branch_system, chain  # noqa: E402
from bench_recursive import machine_info  # noqa: E402
from bench_mstmm import tree_mujoco  # noqa: E402

DT, NSTEPS = 1e-3, 1000


def log(*a):
    print(*a, flush=True)


def rounds(runners: dict, n: int, clock=time.perf_counter) -> dict:
    """runners: name -> f() (one whole run); n interleaved rounds; name -> {median, min, all} seconds of `clock`
    (wall: time.perf_counter; CPU of the whole process: time.process_time)."""
    per = {k: [] for k in runners}
    for _ in range(n):
        for k, f in runners.items():
            t0 = clock()
            f()
            per[k].append(clock() - t0)
    return {k: {"median": float(np.median(v)), "min": float(np.min(v)), "all": v} for k, v in per.items()}


def mujoco_setup(model, B, nthreads):
    import mujoco
    from mujoco import rollout
    mm = tree_mujoco(model)
    datas = [mujoco.MjData(mm) for _ in range(nthreads)]
    spec = mujoco.mjtState.mjSTATE_FULLPHYSICS
    nstate = mujoco.mj_stateSize(mm, spec)
    return mm, datas, rollout, spec, nstate


def mj_initial(mm, spec, nstate, Q, U):
    import mujoco
    d = mujoco.MjData(mm)
    out = np.empty((len(Q), nstate))
    for b in range(len(Q)):
        d.qpos[:], d.qvel[:], d.time = Q[b], U[b], 0.0
        mujoco.mj_getState(mm, d, out[b], spec)
    return out


def single(n, args) -> dict:
    m = chain(n)
    s = codegen.build(m, ref_point=args.ref_point, cache_dir=args.cache_dir)
    q0, u0 = m.initial_state()
    Q, U = q0[None, :], u0[None, :]
    mm, datas, rollout, spec, nstate = mujoco_setup(m, 1, 1)
    x0 = mj_initial(mm, spec, nstate, Q, U)
    qs, us = s.rollout(Q, U, NSTEPS, DT, threads=1)
    st, _ = rollout.rollout(mm, datas, x0, nstep=NSTEPS)
    mq = st[0, -1, 1:1 + m.nq]
    diff = float(np.max(np.abs(qs[0, -1] - mq)))
    log(f"  chain({n}): final q ours vs MuJoCo max |diff| {diff:.2e} rad")
    out = np.empty((1, NSTEPS, nstate))
    res = s.simulate(NSTEPS * DT, DT, "rk4")
    assert np.array_equal(res.q[-1], qs[0, -1])                    # the same steps as the bare loop
    t = rounds({"ours": lambda: s.rollout(Q, U, NSTEPS, DT, threads=1),
                "mujoco": lambda: rollout.rollout(mm, datas, x0, nstep=NSTEPS, state=out),
                "simulate": lambda: s.simulate(NSTEPS * DT, DT, "rk4")},
               args.rounds, time.process_time)
    return {"n": n, "final_q_diff": diff, "times": t, "ratio": t["ours"]["median"] / t["mujoco"]["median"],
            "simulate_ratio": t["simulate"]["median"] / t["ours"]["median"]}


def batch(n, B, threads, args) -> dict:
    m = chain(n)
    s = codegen.build(m, ref_point=args.ref_point, cache_dir=args.cache_dir)
    rng = np.random.default_rng(args.seed)
    q0, u0 = m.initial_state()
    Q = q0 + rng.normal(0, 0.1, (B, m.nq))
    U = rng.normal(0, 0.5, (B, m.nv))
    row = {"n": n, "B": B, "threads": threads, "times": {}}
    runners = {}
    for k in threads:
        mm, datas, rollout, spec, nstate = mujoco_setup(m, B, k)
        x0 = mj_initial(mm, spec, nstate, Q, U)
        out = np.empty((B, NSTEPS, nstate))
        if k == threads[0]:
            qs, _ = s.rollout(Q, U, NSTEPS, DT, threads=k)
            st, _ = rollout.rollout(mm, datas, x0, nstep=NSTEPS)
            row["final_q_diff"] = float(np.max(np.abs(qs[:, -1] - st[:, -1, 1:1 + m.nq])))
            log(f"  {B} rollouts of chain({n}): final q ours vs MuJoCo max |diff| {row['final_q_diff']:.2e} rad")
        runners[f"ours {k} threads"] = (lambda k=k: s.rollout(Q, U, NSTEPS, DT, threads=k))
        runners[f"mujoco {k} threads"] = (lambda mm=mm, datas=datas, x0=x0, out=out, rollout=rollout:
                                          rollout.rollout(mm, datas, x0, nstep=NSTEPS, state=out,
                                                          persistent_pool=True))
    row["times"] = rounds(runners, args.rounds)
    row["cpu"] = rounds(runners, max(3, args.rounds // 2), time.process_time)
    row["ratios"] = {k: row["times"][f"ours {k} threads"]["median"] / row["times"][f"mujoco {k} threads"]["median"]
                     for k in threads}
    return row


def m5(args) -> dict:
    m = branch_system(999)
    out = {"dof": m.nv}
    for ref in ("centroid", "joint", "origin"):
        s = codegen.build(m, ref_point=ref, cache_dir=args.cache_dir)
        walls, cpus = [], []
        for _ in range(args.m5_runs):
            c0 = time.process_time()
            res = s.simulate(1.0, DT, "rk4")
            cpus.append(time.process_time() - c0)
            walls.append(res.meta["wall_time_s"])
        out[ref] = {"wall_s": float(np.median(walls)), "cpu_s": float(np.median(cpus)), "all": walls, "cpu": cpus}
        log(f"  M5 {ref}: 1 s of RK4 in {np.median(walls):.2f} s wall, {np.median(cpus):.2f} s CPU "
            f"(median of {len(walls)})")
    return out


def _ms(x):
    return f"{1e3 * x:.1f}"


def markdown(doc) -> str:
    mi = doc["machine"]
    L = ["# Rollouts in compiled code against MuJoCo's C rollout", "",
         f"- command: `{doc['command']}`",
         f"- date: {mi['date']}; machine: {mi['cpu']}, {mi['cores']} cores; load average at start "
         f"{', '.join(f'{x:.2f}' for x in mi['loadavg_start'])}"
         + (f", at end {', '.join(f'{x:.2f}' for x in doc['loadavg_end'])}" if doc.get("loadavg_end") else ""),
         f"- versions: python {mi['python']}, numpy {mi['numpy']}, Cython {mi['cython']}, MuJoCo {doc['mujoco']}, "
         f"mbgen {mi['mbgen']}; {mi['compiler']}; OpenMP in our kernels: {doc['openmp']}",
         f"- RK4 at dt = {DT:g}, {NSTEPS} steps (1 s); ours: recursive, reference point {doc['config']['ref_point']}; "
         f"MuJoCo: the same tree built with MjSpec (bench_mstmm.tree_mujoco), integrator RK4, contacts, "
         f"constraints, springs and dampers disabled; medians of {doc['config']['rounds']} interleaved rounds", ""]
    if doc.get("single"):
        L += ["## One trajectory, 1 s of RK4 [ms of process CPU time]", "",
              "ours: `System.rollout` (the bare compiled loop); simulate: `System.simulate(1, 1e-3, 'rk4')`, the same "
              "steps plus everything a Result holds (body poses and energies at every sample, the energy balance, "
              "the divergence checks; the joint geometry is made on first use).", "",
              "| n | ours | MuJoCo | ours / MuJoCo | simulate | simulate / ours | final q diff [rad] |",
              "|---:|---:|---:|---:|---:|---:|---:|"]
        for r in doc["single"]:
            L.append(f"| {r['n']} | {_ms(r['times']['ours']['median'])} | {_ms(r['times']['mujoco']['median'])} | "
                     f"{r['ratio']:.2f} | {_ms(r['times']['simulate']['median'])} | {r['simulate_ratio']:.2f} | "
                     f"{r['final_q_diff']:.1e} |")
        L.append("")
    if doc.get("batch"):
        r = doc["batch"]
        L += [f"## {r['B']} rollouts of chain({r['n']}), 1 s of RK4 each [ms]", "",
              "| threads | ours, wall | MuJoCo, wall | ours / MuJoCo (wall) | ours, CPU | MuJoCo, CPU | ours / MuJoCo (CPU) |",
              "|---:|---:|---:|---:|---:|---:|---:|"]
        for k in r["threads"]:
            o, m = f"ours {k} threads", f"mujoco {k} threads"
            L.append(f"| {k} | {_ms(r['times'][o]['median'])} | {_ms(r['times'][m]['median'])} | {r['ratios'][k]:.2f} | "
                     f"{_ms(r['cpu'][o]['median'])} | {_ms(r['cpu'][m]['median'])} | "
                     f"{r['cpu'][o]['median'] / r['cpu'][m]['median']:.2f} |")
        L += ["", f"Final q, ours vs MuJoCo: max |diff| {r['final_q_diff']:.1e} rad.", ""]
    if doc.get("m5"):
        r = doc["m5"]
        L += [f"## M5 (branch_system(999), {r['dof']} DOF), 1 s of RK4 at dt = 1e-3, recursive", "",
              "| reference point | wall [s] | process CPU [s] |", "|---|---:|---:|"]
        L += [f"| {ref} | {r[ref]['wall_s']:.2f} | {r[ref]['cpu_s']:.2f} |" for ref in ("centroid", "joint", "origin")]
        L.append("")
    return "\n".join(L)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[20, 100])
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--ref-point", default="origin", choices=("centroid", "joint", "origin"))
    ap.add_argument("--rounds", type=int, default=None)
    ap.add_argument("--m5-runs", type=int, default=3)
    ap.add_argument("--no-m5", action="store_true")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--seed", type=int, default=12345)
    ap.add_argument("--cache-dir", default=None)
    ap.add_argument("--out-dir", default=str(HERE / "results"))
    args = ap.parse_args(argv)
    args.rounds = args.rounds or (3 if args.quick else 7)
    import mujoco
    probe = codegen.build(chain(2), ref_point=args.ref_point, cache_dir=args.cache_dir)
    doc = {"command": "python " + " ".join([os.path.relpath(__file__, os.getcwd())] + (sys.argv[1:] if argv is None
                                                                                         else argv)),
           "machine": machine_info(), "mujoco": mujoco.__version__, "openmp": bool(probe.module.OPENMP),
           "config": {"rounds": args.rounds, "ref_point": args.ref_point, "seed": args.seed}}
    out = Path(args.out_dir)
    out.mkdir(parents=True, exist_ok=True)

    def save():
        doc["loadavg_end"] = list(os.getloadavg())
        (out / "rollout.json").write_text(json.dumps(doc, indent=1))
        (out / "rollout.md").write_text(markdown(doc))

    doc["single"] = []
    for n in args.sizes:
        doc["single"].append(single(n, args))
        r = doc["single"][-1]
        log(f"chain({n}) 1 s RK4: ours {_ms(r['times']['ours']['median'])} ms, MuJoCo "
            f"{_ms(r['times']['mujoco']['median'])} ms, ratio {r['ratio']:.2f}; simulate "
            f"{_ms(r['times']['simulate']['median'])} ms, {r['simulate_ratio']:.2f}x the bare loop")
        save()
    doc["batch"] = batch(20, args.batch, args.threads, args)
    log("batch: " + ", ".join(f"{k} threads ratio {v:.2f}" for k, v in doc["batch"]["ratios"].items()))
    save()
    if not (args.no_m5 or args.quick):
        doc["m5"] = m5(args)
        save()
    log(markdown(doc))
    return 0


if __name__ == "__main__":
    sys.exit(main())
