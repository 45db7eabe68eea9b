#!/usr/bin/env python
"""Benchmark of the Riccati MSTMM kernels (algorithm "mstmm", Rui et al. 2020) against the foundation's
recursive O(n) solver, pinocchio and MuJoCo on the same models in the same run.

Models:
  * M5-like branch systems codegen.models.branch_system(N) (models.md M5: thin rods on 3-DOF ball joints,
    a 2-rod and a 3-rod subchain on the multi-input body 11, a main chain of (N - 11) / 2 rods up to the
    ceiling), N = 99 ... 66667, i.e. 150 ... 100,002 degrees of freedom (the seed's "> 100,000 DOF");
  * planar n-link chains codegen.models.chain(n) (revolute joints, Algorithm A), n = 10 ... 10,000.

Per model and solver:
  * forward dynamics per call, timed inside compiled code (System.kernel.time_forward_dynamics) for
    mstmm and recursive; pin.aba and mujoco.mj_forward through Python (their own compiled code, one
    Python call each; the Python overhead is about 1-2 us per call);
  * RK4 per step (h = 1e-3) from the model's initial state: System.simulate (the whole loop in compiled code)
    for mstmm and recursive, with a sample after every step and after every 10th (output every 10 ms), the
    median of --repeats runs (mstmm also on two threads, simulate(threads=2), output every 10th step; the
    largest |q| difference from its serial run is recorded); mujoco.mj_step with integrator RK4 (nstep steps in one call) for MuJoCo;
  * agreement at the benchmark state: max |udot - udot_mstmm| / max |udot_mstmm| of every peer, and for
    M5 up to --verify-max-nb bodies the error of mstmm and recursive against the 30-digit mpmath
    reference codegen.mstmm_ref.aba_reference;
  * per M5 size the model construction, generation and compile times of builds that were not cached.
Then a linear fit t = a + b * bodies with R^2 for mstmm and recursive (fd and RK4 step).
pinocchio's Data holds nv^3 second-order derivative tensors (about 66 bytes * nv^3), so pin.aba runs
only while that fits in --pin-max-gb; MuJoCo's mass matrix of a chain of depth d costs O(nv d^2)
to factor, so it runs up to --mujoco-max-nv.

    python benchmarks/bench_mstmm.py                 # full run (builds of 100k DOF take minutes each)
    python benchmarks/bench_mstmm.py --quick         # N = 99 999 3999, chains 10 100 1000
    python benchmarks/bench_mstmm.py --sizes 999 9999 --chains 100

Writes benchmarks/results/mstmm.json and benchmarks/results/mstmm.md (rewritten after every model).
"""
from __future__ import annotations

import argparse
import datetime as _dt
import json
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE.parent / "tests" / "support"))   # tests/support/peers.py: the pinocchio mapping

import codegen  # noqa: E402
from codegen.models import branch_system, chain  # noqa: E402
from codegen.algorithms.tree_plan import Plan, body_numbers  # noqa: E402
from bench_recursive import python_batch  # noqa: E402  (benchmarks/, the script's folder)

PIN_BYTES_PER_N3 = 66.0


def log(*a):
    print(*a, flush=True)


def rel(a, b) -> float:
    return float(np.max(np.abs(np.asarray(a) - np.asarray(b))) / max(np.max(np.abs(b)), 1e-300))


def per_call(run, target: float, batches: int) -> float:
    """Median seconds per call; run(reps) -> seconds per call; batch sizes aimed at `target` seconds."""
    est = run(1)
    reps = max(1, int(target / max(est, 1e-9)))
    return float(np.median([run(reps) for _ in range(batches)]))


def bench_state(model, seed: int):
    """Initial configuration with every quaternion / angle perturbed a little and small random rates."""
    rng = np.random.default_rng(seed)
    q, u = model.initial_state()
    q = q.copy()
    off = 0
    for j in model.joints:
        if j.type == "spherical":
            v = q[off:off + 4] + rng.normal(0, 0.05, 4)
            q[off:off + 4] = v / np.linalg.norm(v)
        else:
            q[off:off + j.nq] += rng.normal(0, 0.05, j.nq)
        off += j.nq
    return q, rng.normal(0, 0.1, model.nv)


# ------------------------------------------------------------------ MuJoCo peer (revolute / ball trees)

def tree_mujoco(model):
    """MuJoCo model (built through mujoco.MjSpec: MJCF text cannot nest thousands of bodies) of a tree of
    revolute and ball joints from the plan's canonical numbers: body frame = the canonical child joint
    frame, placed at (s, C) in its parent's frame; hinge about z / ball at the body origin; explicit
    inertial at rho with the central inertia J' (codegen.plan).  Contacts, constraints, springs and
    dampers off; RK4 integrator, timestep 1e-3."""
    import mujoco
    plan = Plan(model)
    p = plan.params()
    spec = mujoco.MjSpec()
    spec.compiler.inertiafromgeom = 0            # mjINERTIAFROMGEOM_FALSE
    spec.option.gravity = np.asarray(model.gravity, float)
    spec.option.integrator = mujoco.mjtIntegrator.mjINT_RK4
    spec.option.timestep = 1e-3
    for bit in ("CONTACT", "CONSTRAINT", "SPRING", "DAMPER"):
        spec.option.disableflags |= int(getattr(mujoco.mjtDisableBit, "mjDSBL_" + bit))
    bodies = []
    for k in range(plan.nb):
        b = body_numbers(p, k)
        s, C, mass = b["s"], b["C"], float(b["m"])
        rho, J = b["rho"], b["J"]
        qC = np.empty(4)
        mujoco.mju_mat2Quat(qC, np.ascontiguousarray(C, float).ravel())
        parent = spec.worldbody if plan.parent[k] < 0 else bodies[plan.parent[k]]
        b = parent.add_body(name=f"b{k}", pos=s, quat=qC)
        b.explicitinertial = True
        b.mass, b.ipos = mass, rho
        b.fullinertia = [J[0, 0], J[1, 1], J[2, 2], J[0, 1], J[0, 2], J[1, 2]]
        jt = {"revolute": mujoco.mjtJoint.mjJNT_HINGE, "spherical": mujoco.mjtJoint.mjJNT_BALL}[plan.types[k]]
        b.add_joint(name=f"j{k}", type=jt, axis=[0, 0, 1], pos=[0, 0, 0])
        bodies.append(b)
    return spec.compile()


# ------------------------------------------------------------------ one model

def run_model(model, label, args, verify_ref: bool):
    row = {"model": label, "bodies": len(model.bodies), "dof": model.nv}
    systems, builds = {}, {}
    for alg in ("mstmm", "recursive"):
        t0 = time.perf_counter()
        s = codegen.build(model, alg, cache_dir=args.cache_dir)
        info = s.build_info
        builds[alg] = {"wall_s": time.perf_counter() - t0, "hit": info["hit"],
                       "generate_s": info.get("generate_s"), "compile_s": info.get("compile_s")}
        systems[alg] = s
    row["builds"] = builds
    q, u = bench_state(model, args.seed + len(model.bodies))
    acc = {alg: s.forward_dynamics(q, u) for alg, s in systems.items()}
    row["rel_recursive_vs_mstmm"] = rel(acc["recursive"], acc["mstmm"])
    ref = None
    if verify_ref:
        from codegen.algorithms.mstmm.reference import aba_reference
        t0 = time.perf_counter()
        ref = aba_reference(model, q, u)
        row["ref_s"] = time.perf_counter() - t0
        row["err_vs_reference"] = {alg: rel(a, ref) for alg, a in acc.items()}
    # forward dynamics, compiled loops
    fd = {alg: per_call(lambda r, s=s: s.kernel.time_forward_dynamics(q, u, r), args.batch_time, args.repeats)
          for alg, s in systems.items()}
    # RK4 at h = 1e-3: whole simulations in compiled code from the model's initial state (released from rest,
    # as in the seed; the perturbed benchmark state spins the long M5 chains up until RK4 at 1e-3 s diverges),
    # wall time per step, the median of --repeats runs interleaved between the solvers: with a sample (body
    # poses, energies) after every step, and after every 10th step (output every 10 ms, substeps=10)
    # (mstmm also on two threads, simulate(threads=2), output every 10 ms: its states against the serial run's)
    runs = {alg: ([], [], []) for alg in systems}
    threads_diff = 0.0
    for _ in range(args.repeats):
        for alg, s in systems.items():
            steps = int(max(10, min(2000, args.rk4_time / (4 * fd[alg]))))
            todo = [(s.simulate(steps * 1e-3, 1e-3, "rk4"), runs[alg][0]),
                    (s.simulate(steps // 10 * 1e-2, 1e-2, "rk4", substeps=10), runs[alg][1])]
            if getattr(s.kernel, "STEP_THREADS", 1) == 2:
                todo.append((s.simulate(steps // 10 * 1e-2, 1e-2, "rk4", substeps=10, threads=2), runs[alg][2]))
                threads_diff = max(threads_diff, float(np.abs(todo[2][0].q - todo[1][0].q).max()))
            for res, acc in todo:
                if not np.all(np.isfinite(res.q[-1])):
                    raise RuntimeError(f"{label}: {alg} RK4 run produced non-finite states")
                acc.append(res.meta["wall_time_s"] / res.meta["steps"])         # steps of h = 1e-3
    row["fd_s"] = fd
    row["rk4_step_s"] = {alg: float(np.median(r[0])) for alg, r in runs.items()}
    row["rk4_step_out10_s"] = {alg: float(np.median(r[1])) for alg, r in runs.items()}
    row["rk4_step_out10_2threads_s"] = {alg: float(np.median(r[2])) for alg, r in runs.items() if r[2]}
    row["threads_max_abs_q_diff"] = threads_diff
    # pinocchio
    need = PIN_BYTES_PER_N3 * model.nv ** 3
    if args.no_pin:
        row["pin"] = {"skipped": "--no-pin"}
    elif need > args.pin_max_gb * 2 ** 30:
        row["pin"] = {"skipped": f"Data would need ~{need / 2 ** 30:.3g} GB (> {args.pin_max_gb} GB)"}
    else:
        import pinocchio as pin
        from peers import PinPeer
        peer = PinPeer(model)
        pq, tau0 = peer.q(q), np.zeros(model.nv)
        a = np.array(pin.aba(peer.model, peer.data, pq, u, tau0))
        if ref is not None:
            row["err_vs_reference"]["pin"] = rel(a, ref)
        row["pin"] = {"rel_vs_mstmm": rel(a, acc["mstmm"]),
                      "fd_s": per_call(python_batch(lambda: pin.aba(peer.model, peer.data, pq, u, tau0)),
                                       args.batch_time, args.repeats)}
        del peer
    # MuJoCo
    if args.no_mujoco:
        row["mujoco"] = {"skipped": "--no-mujoco"}
    elif model.nv > args.mujoco_max_nv:
        row["mujoco"] = {"skipped": f"nv > {args.mujoco_max_nv} (dense factor of a deep tree)"}
    else:
        try:
            import mujoco
        except ImportError:
            row["mujoco"] = {"skipped": "mujoco not installed"}
        else:
            mm = tree_mujoco(model)
            md = mujoco.MjData(mm)
            md.qpos[:], md.qvel[:] = q, u
            mujoco.mj_forward(mm, md)
            r = {"rel_vs_mstmm": rel(md.qacc, acc["mstmm"])}
            if ref is not None:
                row["err_vs_reference"]["mujoco"] = rel(md.qacc, ref)

            def fwd():
                mujoco.mj_forward(mm, md)
            r["fd_s"] = per_call(python_batch(fwd), args.batch_time, args.repeats)

            q0, u0 = model.initial_state()

            def step_run(reps):
                md.qpos[:], md.qvel[:], md.time = q0, u0, 0.0
                t0 = time.perf_counter()
                mujoco.mj_step(mm, md, reps)
                return (time.perf_counter() - t0) / reps
            r["rk4_step_s"] = per_call(step_run, args.batch_time, args.repeats)
            row["mujoco"] = r
    return row


# ------------------------------------------------------------------ fits and tables

def linfit(x, y):
    x, y = np.asarray(x, float), np.asarray(y, float)
    b, a = np.polyfit(x, y, 1)
    r2 = 1 - np.sum((y - (a + b * x)) ** 2) / np.sum((y - y.mean()) ** 2)
    return {"a_s": float(a), "b_s_per_body": float(b), "r2": float(r2)}


def us(x):
    return "-" if x is None else f"{1e6 * x:.1f}" if x < 1e-2 else f"{1e3 * x:.2f} ms"


def peer_cell(r, key):
    return f"({r['skipped']})" if "skipped" in r else us(r.get(key))


def tables(out):
    L = []
    for sect, title in (("branch", "M5-like branch systems (ball joints)"), ("chain", "planar chains (revolute)")):
        rows = out[sect]
        if not rows:
            continue
        L += [f"### {title}", "",
              "| model | bodies | DOF | fd mstmm [us] | fd recursive [us] | mstmm/rec | pin.aba [us] | mj_forward [us] "
              "| RK4 step mstmm [us] | RK4 step recursive [us] | mj_step RK4 [us] "
              "| RK4 step, output every 10th: mstmm [us] | recursive [us] | the same, mstmm on 2 threads [us] |",
              "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
        for r in rows:
            L.append(f"| {r['model']} | {r['bodies']} | {r['dof']} | {us(r['fd_s']['mstmm'])} | "
                     f"{us(r['fd_s']['recursive'])} | {r['fd_s']['mstmm'] / r['fd_s']['recursive']:.2f} | "
                     f"{peer_cell(r['pin'], 'fd_s')} | {peer_cell(r['mujoco'], 'fd_s')} | "
                     f"{us(r['rk4_step_s']['mstmm'])} | {us(r['rk4_step_s']['recursive'])} | "
                     f"{peer_cell(r['mujoco'], 'rk4_step_s')} | "
                     f"{us(r['rk4_step_out10_s']['mstmm'])} | {us(r['rk4_step_out10_s']['recursive'])} | "
                     f"{us(r.get('rk4_step_out10_2threads_s', {}).get('mstmm'))} |")
        L += ["", "Agreement at the benchmark state (max |udot - udot_mstmm| / max |udot_mstmm|; error against the "
              "30-digit reference where computed):", "",
              "| model | recursive vs mstmm | pin vs mstmm | MuJoCo vs mstmm | error: mstmm | recursive | pin.aba | MuJoCo |",
              "|---|---|---|---|---|---|---|---|"]
        for r in rows:
            ref = r.get("err_vs_reference", {})
            L.append(f"| {r['model']} | {r['rel_recursive_vs_mstmm']:.1e} | "
                     f"{r['pin'].get('rel_vs_mstmm', float('nan')):.1e} | {r['mujoco'].get('rel_vs_mstmm', float('nan')):.1e} | " +
                     " | ".join(f"{ref.get(k, float('nan')):.1e}" for k in ("mstmm", "recursive", "pin", "mujoco")) + " |")
        L += ["", "mstmm on two threads against one, the same runs (largest |q| difference of the samples): " +
              ", ".join(f"{r['model']} {r.get('threads_max_abs_q_diff', float('nan')):.1e}" for r in rows)]
        fits = out["fits"].get(sect, {})
        if fits:
            L += ["", "Linear fit t = a + b * bodies:", "", "| quantity | a [us] | b [us/body] | R^2 |", "|---|---|---|---|"]
            for k, fv in fits.items():
                L.append(f"| {k} | {1e6 * fv['a_s']:.2f} | {1e6 * fv['b_s_per_body']:.4f} | {fv['r2']:.6f} |")
        L.append("")
    bl = [r for r in out["branch"] if not all(b["hit"] for b in r["builds"].values())]
    if bl:
        L += ["Builds (not cached) of the branch systems: model construction, generate + compile:", "",
              "| model | DOF | model [s] | mstmm gen/compile [s] | recursive gen/compile [s] |", "|---|---|---|---|---|"]
        for r in bl:
            b = r["builds"]
            cell = {k: "cached" if v["hit"] else f"{v['generate_s']:.2f} / {v['compile_s']:.1f}" for k, v in b.items()}
            L.append(f"| {r['model']} | {r['dof']} | {r.get('model_s', 0):.1f} | {cell['mstmm']} | {cell['recursive']} |")
        L.append("")
    return "\n".join(L)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="*", default=None, help="M5 N values (odd, >= 13)")
    ap.add_argument("--chains", type=int, nargs="*", default=None, help="chain lengths")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--batch-time", type=float, default=0.1)
    ap.add_argument("--rk4-time", type=float, default=0.5, help="seconds of RK4 per timed run (approx.)")
    ap.add_argument("--verify-max-nb", type=int, default=2000, help="mpmath reference up to this many bodies")
    ap.add_argument("--pin-max-gb", type=float, default=4.0)
    ap.add_argument("--mujoco-max-nv", type=int, default=1500)
    ap.add_argument("--no-pin", action="store_true")
    ap.add_argument("--no-mujoco", action="store_true")
    ap.add_argument("--cache-dir", default=None)
    ap.add_argument("--seed", type=int, default=2020)
    ap.add_argument("--out-dir", default=str(HERE / "results"))
    args = ap.parse_args(argv)
    if args.sizes is None:
        args.sizes = [99, 999, 3999] if args.quick else [99, 199, 333, 999, 3999, 9999, 33333, 66667]
    if args.chains is None:
        args.chains = [10, 100, 1000] if args.quick else [10, 100, 1000, 10000]
    if args.quick:
        args.repeats, args.batch_time, args.rk4_time = 3, 0.03, 0.1
    os.makedirs(args.out_dir, exist_ok=True)
    out = {"date": _dt.datetime.now().isoformat(timespec="seconds"), "command": " ".join(sys.argv),
           "machine": {"platform": platform.platform(), "python": platform.python_version(),
                       "processor": platform.processor(), "cpus": os.cpu_count()},
           "branch": [], "chain": [], "fits": {}}

    def write():
        for sect in ("branch", "chain"):
            rows = out[sect]
            if len(rows) >= 2:
                x = [r["bodies"] for r in rows]
                out["fits"][sect] = {f"{q} {alg}": linfit(x, [r[key][alg] for r in rows])
                                     for q, key in (("fd", "fd_s"), ("RK4 step", "rk4_step_s"))
                                     for alg in ("mstmm", "recursive")}
        with open(os.path.join(args.out_dir, "mstmm.json"), "w") as fh:
            json.dump(out, fh, indent=1)
        md = (f"# Riccati MSTMM benchmark\n\n{out['date']}, `{out['command']}`, {out['machine']['platform']}, "
              f"{out['machine']['cpus']} CPUs\n\n" + tables(out))
        with open(os.path.join(args.out_dir, "mstmm.md"), "w") as fh:
            fh.write(md)
        return md

    for N in args.sizes:
        t0 = time.perf_counter()
        model = branch_system(N)
        model_s = time.perf_counter() - t0
        row = run_model(model, f"M5 N={N}", args, verify_ref=len(model.bodies) <= args.verify_max_nb)
        row["model_s"] = model_s
        out["branch"].append(row)
        log(f"M5 N={N}: {row['dof']} DOF, fd mstmm {us(row['fd_s']['mstmm'])} us, recursive "
            f"{us(row['fd_s']['recursive'])} us; rel diff {row['rel_recursive_vs_mstmm']:.1e}; "
            f"ref {row.get('err_vs_reference', '-')}; pin {row['pin']}; mujoco {row['mujoco']}")
        write()
    for n in args.chains:
        row = run_model(chain(n), f"chain {n}", args, verify_ref=n <= args.verify_max_nb)
        out["chain"].append(row)
        log(f"chain {n}: fd mstmm {us(row['fd_s']['mstmm'])} us, recursive {us(row['fd_s']['recursive'])} us; "
            f"pin {row['pin']}; mujoco {row['mujoco']}")
        write()
    log("\n" + write())


if __name__ == "__main__":
    main()
