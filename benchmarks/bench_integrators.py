#!/usr/bin/env python
"""One step of MuJoCo's integrators, ours against MuJoCo's ``mj_step`` on the same MJCF files (issue 44).

For each model (gymnasium's files as they ship: the 7-DOF pusher arm, the ant, the humanoid) the script loads the
file with ``codegen.load_model(..., ignore_contacts=True)`` and builds the recursive kernel (with its derivative
kernel for ``implicit``), builds MuJoCo from the same file with contacts and constraints disabled (ours: limits
off, ``set_limits(False)``), checks 100 steps of each integrator against ``mj_step`` (1e-9 relative, the state
after every step), then times N steps in one compiled loop on both sides, interleaved round robin (medians of the
calling thread's CPU time per step):

  ours      kernel.run_steps(method, t, x, h, 1, N)      N steps of euler, implicitfast, implicit or rk4
  MuJoCo    mujoco.mj_step(model, data, nstep=N)         the same integrator (model.opt.integrator), same h

Writes results/integrators.{json,md}.

    python benchmarks/bench_integrators.py
    python benchmarks/bench_integrators.py --quick
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
import warnings
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

import codegen  # noqa: E402
from bench_calls import _us, run_lines  # noqa: E402
from bench_recursive import interleaved, machine_info  # noqa: E402
from codegen.runtime.integrate import FIXED_STEPS  # noqa: E402

TOL = 1e-9
METHODS = ("euler", "implicitfast", "implicit", "rk4")
MJ = {"euler": "mjINT_EULER", "implicitfast": "mjINT_IMPLICITFAST", "implicit": "mjINT_IMPLICIT", "rk4": "mjINT_RK4"}


def log(*a):
    print(*a, flush=True)


def models(quick: bool):
    import gymnasium
    assets = Path(gymnasium.__file__).parent / "envs" / "mujoco" / "assets"
    names = ("pusher", "humanoid") if quick else ("pusher", "ant", "humanoid")
    return [(n, str(assets / f"{n}.xml")) for n in names]


def bench_model(name, path, args, cfg) -> dict:
    import mujoco
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = codegen.load_model(path, ignore_contacts=True)
    s = codegen.build(m, "recursive", cache_dir=args.cache_dir, derivatives=True)
    k = s.derivative_kernel
    k.set_limits(False)
    mj = mujoco.MjModel.from_xml_path(path)
    mj.opt.disableflags |= int(mujoco.mjtDisableBit.mjDSBL_CONTACT) | int(mujoco.mjtDisableBit.mjDSBL_CONSTRAINT)
    h = float(mj.opt.timestep)
    rng = np.random.default_rng(args.seed)
    q0 = np.array(mj.qpos0)
    u0 = 0.1 * rng.normal(size=mj.nv)
    c = rng.uniform(-0.2, 0.2, mj.nu)
    if mj.nu:
        k.set_ctrl(c)
    worst, runners = {}, {}
    for meth in METHODS:
        mj.opt.integrator = int(getattr(mujoco.mjtIntegrator, MJ[meth]))
        d = mujoco.MjData(mj)
        d.qpos[:], d.qvel[:], d.ctrl[:] = q0, u0, c
        x = np.concatenate([q0, u0, np.zeros(s.na)])
        X, _ = k.run_steps(FIXED_STEPS[meth], 0.0, x, h, 100, 1)
        R = []
        for _ in range(100):
            mujoco.mj_step(mj, d)
            R.append(np.concatenate([d.qpos, d.qvel, d.act]))
        R = np.array(R)
        worst[meth] = float((np.abs(X - R).max(axis=1) / np.maximum(1, np.abs(R).max(axis=1))).max())
        if not (worst[meth] <= TOL or (meth == "rk4" and worst[meth] <= 1e-6)):
            raise RuntimeError(f"VERIFICATION FAILED: {name} {meth}: {worst[meth]:.2e}")
        N = cfg["steps"]
        xs = np.concatenate([q0, u0, np.zeros(s.na)])

        def ours(reps, meth=meth, xs=xs):
            t0 = time.thread_time()
            for _ in range(reps):
                x = xs.copy()
                k.run_steps(FIXED_STEPS[meth], 0.0, x, h, 1, N)
            return (time.thread_time() - t0) / (reps * N)

        mm = mujoco.MjModel.from_xml_path(path)
        mm.opt.disableflags = mj.opt.disableflags
        mm.opt.integrator = mj.opt.integrator
        dd = mujoco.MjData(mm)

        def theirs(reps, mm=mm, dd=dd):
            t0 = time.thread_time()
            for _ in range(reps):
                mujoco.mj_resetData(mm, dd)
                dd.qpos[:], dd.qvel[:], dd.ctrl[:] = q0, u0, c
                mujoco.mj_step(mm, dd, nstep=N)
            return (time.thread_time() - t0) / (reps * N)

        est = max(ours(1), theirs(1)) * N
        runners[f"{meth} ours"] = (ours, est)
        runners[f"{meth} mujoco"] = (theirs, est)
    t = interleaved(runners, cfg["batch_time"], args.repeats)
    row = {"model": name, "nq": s.nq, "nv": s.nv, "nu": len(m.actuators), "timestep": h, "check": worst,
           "times": t, "ratios": {x: t[f"{x} ours"]["median"] / t[f"{x} mujoco"]["median"] for x in METHODS}}
    log(f"  {name}: nv {s.nv}; checked against mj_step, worst " + ", ".join(f"{x} {v:.1e}" for x, v in worst.items()))
    log(f"  {name}: ours / mujoco per step: " + ", ".join(f"{x} {v:.2f}" for x, v in row["ratios"].items()))
    return row


def markdown(doc) -> str:
    L = ["# One step of MuJoCo's integrators, ours against MuJoCo's mj_step", "", *run_lines(doc),
         f"- MuJoCo {doc['mujoco']}",
         f"- {doc['config']['repeats']} batches of ~{doc['config']['batch_time']} s per runner, interleaved round "
         f"robin; each call {doc['config']['steps']} steps in one compiled loop (ours: kernel.run_steps; MuJoCo: "
         "mj_step(nstep=N)); medians in µs of the calling thread's CPU time per step. Contacts and constraints off "
         "in MuJoCo, limits off in ours; every integrator checked against mj_step over 100 steps before timing "
         f"(state after every step, {TOL:g} relative; rk4 with a free joint 1e-6: the quaternion stages differ, "
         "docs/guide/integrators.md). Ratio: ours / MuJoCo (< 1: ours faster).", ""]
    for r in doc["rows"]:
        t = r["times"]
        L += [f"## {r['model']} (nq {r['nq']}, nv {r['nv']}, {r['nu']} actuators, timestep {r['timestep']:g} s)", "",
              "| integrator | ours | MuJoCo | ours / MuJoCo | checked to |", "|---|---:|---:|---:|---:|"]
        for x, ratio in r["ratios"].items():
            L.append(f"| {x} | {_us(t[f'{x} ours']['median'])} | {_us(t[f'{x} mujoco']['median'])} | {ratio:.2f} "
                     f"| {r['check'][x]:.0e} |")
        L.append("")
    return "\n".join(L)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="two models, short batches")
    ap.add_argument("--repeats", type=int, default=None)
    ap.add_argument("--seed", type=int, default=44)
    ap.add_argument("--cache-dir", default=None)
    ap.add_argument("--out-dir", default=str(HERE / "results"))
    ap.add_argument("--out-name", default="integrators")
    args = ap.parse_args(argv)
    args.repeats = args.repeats or (5 if args.quick else 11)
    cfg = {"batch_time": 0.01 if args.quick else 0.03, "steps": 100}
    doc = {"command": "python " + " ".join([os.path.relpath(__file__, os.getcwd())] + (sys.argv[1:] if argv is None
                                                                                         else argv)),
           "machine": machine_info(), "config": {**cfg, "repeats": args.repeats, "seed": args.seed}, "rows": []}
    import mujoco
    doc["mujoco"] = mujoco.__version__
    out = Path(args.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    for name, path in models(args.quick):
        doc["rows"].append(bench_model(name, path, args, cfg))
    doc["loadavg_end"] = list(os.getloadavg())
    (out / f"{args.out_name}.json").write_text(json.dumps(doc, indent=1))
    (out / f"{args.out_name}.md").write_text(markdown(doc))
    log(f"wrote {out / args.out_name}.md")
    return 0


if __name__ == "__main__":
    sys.exit(main())
