#!/usr/bin/env python
"""RANCF benchmark: degrees of freedom against CPU time (Hu & Wang 2016, Fig. 12), model M3 of models.md.

The seed varies the number of beams of the M3 pendulum (5 elements each, n = 4 N_bar + 2 N = 22 N, eq 56):
N = 5, 10, ..., 40 gives its DOF points 110, 220, ..., 880.  This script measures, for those and for larger
chains up to at least 100,000 DOF (N = 4546: n = 100,012),

  * forward dynamics per call in compiled code (``kernel.time_forward_dynamics``): the O(n) recursion with the
    matrix processing (tau, upsilon, P, Psi; eqs 44-46) reused while Omega is constant (revolute joints), and
    with it redone in every call, as the paper's algorithm counts it ("refactor");
  * an explicit RK4 step (case B numbers, dt = 1e-3) and an implicit HHT-alpha step (case A numbers,
    E = 210 GPa, dt = 1e-3, Newton with the O(n) factorisation of Omega + beta h^2 K);
  * the dense reference beside it (Omega and Gamma assembled, Cholesky; eq 41) up to --dense-max-dof;
  * a linear fit t = a + b n with its R^2 over the seed's points and over all points, the log-log slope,
    and the cost per DOF per step;
  * Exudyn's ANCFCable2D (optional: ``pip install exudyn``) on the same pendulum: tip path against ours for
    case A and case B over 4 s, and its time per implicit step for the same sizes.

    python benchmarks/bench_rancf.py               # full run: ~2-3 min on 2 cores (14 kernels to build)
    python benchmarks/bench_rancf.py --quick       # 110, 220, 440, 880, 11,000, 100,012 DOF, short batches: ~35 s
    python benchmarks/bench_rancf.py --max-dof 1000000 --no-exudyn

Writes (atomically) into --out-dir (default benchmarks/results/): rancf.json (every number), rancf.md (tables),
rancf_dof_time.png (the seed's range, linear axes, fit: Fig. 12) and rancf_dof_time_loglog.png (all sizes).
Exit status 2 with ``VERIFICATION FAILED`` if the recursion and the dense solve disagree (> 1e-9 relative) or a
result is not finite.  The seed's figures of the two cases (Figs. 7-11) come from
examples/flexible_pendulum_figures.py.
"""
from __future__ import annotations

import argparse
import datetime as _dt
import json
import os
import platform
import sys
import time
import warnings
from concurrent.futures import ProcessPoolExecutor

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)

import codegen  # noqa: E402
from codegen.compiler import build_module  # noqa: E402
from codegen.model import beams as flexible  # noqa: E402
from codegen.runtime import atomic_write as _atomic_write  # noqa: E402

N_ELEM = 5                                          # elements per beam (seed)
SEED_BEAMS = (5, 10, 15, 20, 25, 30, 35, 40)        # n = 110 ... 880 (seed Fig. 12)
LARGE_BEAMS = (100, 250, 500, 1000, 2000, 4546)     # n = 2,200 ... 100,012
QUICK_BEAMS = (5, 10, 20, 40, 500, 4546)
E_B, E_A = 21e6, 210e9
CHECK_TOL = 1e-9


def log(*a):
    print(*a, flush=True)


def dof(nb: int) -> int:
    return nb * (4 * N_ELEM + 2)                    # eq 56: n = 4 N_bar + 2 N


def machine_info() -> dict:
    cpu = "unknown"
    try:
        with open("/proc/cpuinfo") as fh:
            cpu = next(line.split(":", 1)[1].strip() for line in fh if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    from codegen.runtime.integrate import versions as _versions
    return {"cpu": cpu, "cores": os.cpu_count(), "platform": platform.platform(), "versions": _versions(),
            "loadavg_start": list(os.getloadavg())}


def _build(nb: int):
    build_module(flexible.pendulum(nb, N_ELEM, E=E_B), "rancf")
    return nb


def median_batches(fn, repeats: int, target_s: float):
    """Median (and min) seconds per call of fn(k) -> total seconds for k calls, k chosen for ~target_s."""
    one = max(fn(1), 1e-7)
    k = max(1, int(target_s / one))
    vals = [fn(k) / k for _ in range(repeats)]
    return float(np.median(vals)), float(np.min(vals)), k


def fit_line(n, t):
    n, t = np.asarray(n, float), np.asarray(t, float)
    b, a = np.polyfit(n, t, 1)
    r2 = 1.0 - np.sum((t - (a + b * n)) ** 2) / np.sum((t - t.mean()) ** 2)
    slope = np.polyfit(np.log(n), np.log(t), 1)[0] if len(n) > 1 else float("nan")
    return {"intercept_s": float(a), "slope_s_per_dof": float(b), "r2": float(r2), "loglog_exponent": float(slope)}


# ---------------------------------------------------------------------------------------------- ours
def measure(nb: int, repeats: int, target: float, dense_max: int) -> dict:
    m = flexible.pendulum(nb, N_ELEM, E=E_B)
    s = codegen.build(m, "rancf")
    n = s.nq
    q0, u0 = m.initial_state()
    rng = np.random.default_rng(nb)
    q = q0 + 1e-3 * rng.normal(size=n)
    u = rng.normal(size=n)
    row = {"beams": nb, "elements": nb * N_ELEM, "dof": n, "build_key": s.build_info["key"],
           "cache_hit": s.build_info["hit"], "generate_s": s.build_info["generate_s"],
           "compile_s": s.build_info["compile_s"]}
    k = s.kernel
    row["fd_s"], row["fd_min_s"], _ = median_batches(
        lambda r: k.time_forward_dynamics(q, u, r, 0) * r, repeats, target)
    row["fd_refactor_s"], row["fd_refactor_min_s"], _ = median_batches(
        lambda r: k.time_forward_dynamics(q, u, r, 0, True) * r, repeats, target)
    x0 = np.concatenate([q0, u0])

    def rk4(r):
        x = x0.copy()
        t0 = time.perf_counter()
        k.run_rk4(0.0, x, 1e-3, r, 1)
        return time.perf_counter() - t0
    row["rk4_step_s"], row["rk4_step_min_s"], _ = median_batches(rk4, repeats, target)
    if not np.isfinite(s.forward_dynamics(q, u)).all():
        raise SystemExit(f"VERIFICATION FAILED: non-finite forward dynamics at n = {n}")
    # implicit HHT-alpha on case A (E = 210 GPa), same topology: same compiled module
    s.update_model(flexible.pendulum(nb, N_ELEM, E=E_A))
    acc0 = s.forward_dynamics(q0, u0)
    nit = [0, 0]

    def hht(r):
        x, a = x0.copy(), acc0.copy()
        t0 = time.perf_counter()
        _, st = k.integrate_hht(0.0, x, a, 1e-3, r, 1, -0.05, 1e-6, 20)
        dt_ = time.perf_counter() - t0
        nit[0] += st[0]
        nit[1] += st[1]
        if not np.isfinite(x).all():
            raise SystemExit(f"VERIFICATION FAILED: HHT state not finite at n = {n}")
        return dt_
    row["hht_step_s"], row["hht_step_min_s"], _ = median_batches(hht, max(1, repeats // 2), target)
    row["hht_newton_per_step"] = nit[0] / max(nit[1], 1)
    s.update_model(m)
    row["rk4_ns_per_dof"] = 1e9 * row["rk4_step_s"] / n
    row["fd_ns_per_dof"] = 1e9 * row["fd_s"] / n
    row["fd_dense_s"] = row["recursive_vs_dense_rel"] = None
    if n <= dense_max:
        row["fd_dense_s"], _, _ = median_batches(lambda r: k.time_forward_dynamics(q, u, r, 1) * r,
                                                 max(1, repeats // 2), target)
        a, b = s.forward_dynamics(q, u, algorithm="rancf"), s.forward_dynamics(q, u, algorithm="dense")
        row["recursive_vs_dense_rel"] = float(np.abs(a - b).max() / np.abs(b).max())
        if not row["recursive_vs_dense_rel"] <= CHECK_TOL:
            raise SystemExit(f"VERIFICATION FAILED: recursion vs dense {row['recursive_vs_dense_rel']:.2e} at n = {n}")
    return row


# ---------------------------------------------------------------------------------------------- Exudyn
def exudyn_model(nb: int, E: float, A=4e-4, I=2e-6, rho=7800.0, Lb=5.0, g=9.81, ne: int = N_ELEM):
    """The M3 pendulum with Exudyn's ANCFCable2D: one node chain per beam, the ground pin as fixed position
    coordinates of the first node, each planar revolute joint as 2 coordinate constraints (x, y) between the
    tip node of beam k and the first node of beam k+1 (independent slopes)."""
    import exudyn as exu
    from exudyn import itemInterface as ii
    from exudyn.beams import GenerateStraightLineANCFCable2D
    SC = exu.SystemContainer()
    mbs = SC.AddSystem()
    cable = ii.Cable2D(physicsMassPerLength=rho * A, physicsBendingStiffness=E * I, physicsAxialStiffness=E * A,
                       useReducedOrderIntegration=0)
    nodes = []
    for k in range(nb):
        res = GenerateStraightLineANCFCable2D(mbs, [k * Lb, 0, 0], [(k + 1) * Lb, 0, 0], ne, cable,
                                              massProportionalLoad=[0, -g, 0],
                                              fixedConstraintsNode0=[1, 1, 0, 0] if k == 0 else [0, 0, 0, 0])
        nodes.append(res[0])
    for k in range(nb - 1):
        for c in range(2):
            ma = mbs.AddMarker(ii.MarkerNodeCoordinate(nodeNumber=nodes[k][-1], coordinate=c))
            mb = mbs.AddMarker(ii.MarkerNodeCoordinate(nodeNumber=nodes[k + 1][0], coordinate=c))
            mbs.AddObject(ii.CoordinateConstraint(markerNumbers=[ma, mb]))
    sensor = mbs.AddSensor(ii.SensorNode(nodeNumber=nodes[-1][-1], storeInternal=True,
                                         outputVariableType=exu.OutputVariableType.Position))
    mbs.Assemble()
    return SC, mbs, sensor


def exudyn_run(nb: int, E: float, h: float, t_end: float, rho_inf: float = 0.9, sample: float = 1e-3,
               ne: int = N_ELEM):
    import exudyn as exu
    SC, mbs, sensor = exudyn_model(nb, E, ne=ne)
    ss = exu.SimulationSettings()
    ti = ss.timeIntegration
    ti.numberOfSteps = int(round(t_end / h))
    ti.endTime = t_end
    ti.verboseMode = 0
    ti.newton.useModifiedNewton = True
    ti.generalizedAlpha.spectralRadius = rho_inf
    ss.solutionSettings.writeSolutionToFile = False
    ss.solutionSettings.sensorsWritePeriod = sample
    ss.displayStatistics = False
    ss.linearSolverType = exu.LinearSolverType.EigenSparse
    ss.parallel.numberOfThreads = 1
    t0 = time.perf_counter()
    ok = mbs.SolveDynamic(ss)               # generalised-alpha, index-3 DAE, Newton, sparse LU
    wall = time.perf_counter() - t0
    d = mbs.GetSensorStoredData(sensor)
    return {"ok": bool(ok), "wall_s": wall, "t": d[:, 0], "tip": d[:, 1:3], "n_ode2": mbs.systemData.ODE2Size(),
            "n_ae": mbs.systemData.AEsize()}


def exudyn_accuracy(t_end: float) -> dict:
    """Tip path of Exudyn (generalised-alpha, dt = 1e-3 and 2.5e-4) against ours, cases A and B."""
    from codegen import models
    out = {}
    rig = codegen.build(models.chain(5, m=15.6, L=5.0), "recursive")
    rr = rig.simulate(t_end, 1e-3, integrator="dopri5", rtol=1e-11, atol=1e-12)
    ang = 2 * np.arctan2(rr.body_quat[:, 4, 3], rr.body_quat[:, 4, 0])
    tip_rigid = rr.body_com[:, 4, :2] + 2.5 * np.column_stack([np.cos(ang), np.sin(ang)])
    for case, E, yaml, kw in (("A", E_A, "flexible_pendulum_stiff.yaml", {"integrator": "hht", "alpha": -0.05}),
                              ("B", E_B, "flexible_pendulum.yaml", {"integrator": "rk4"})):
        s = codegen.build(codegen.load_model(os.path.join(ROOT, "examples", yaml)), "rancf")
        ours = s.simulate(t_end, 1e-3, **kw)
        tip = ours.node("tip")
        rows = {"ours_integrator": kw["integrator"], "ours_vs_rigid_max_over_L": float(np.abs(tip - tip_rigid).max() / 25)}
        for h in (1e-3, 2.5e-4):
            ex = exudyn_run(5, E, h, t_end)
            if not ex["ok"] or ex["t"][-1] < t_end - 1e-9:
                rows[f"exudyn_h{h:g}"] = {"ok": False}
                continue
            # Exudyn's sensor samples on its own clock: interpolate onto ours (both sample every 1e-3)
            ex["tip"] = np.column_stack([np.interp(ours.t, ex["t"], ex["tip"][:, c]) for c in range(2)])
            rows[f"exudyn_h{h:g}"] = {
                "ok": True, "wall_s": ex["wall_s"],
                "vs_ours_max_over_L": float(np.abs(ex["tip"] - tip).max() / 25),
                "vs_rigid_max_over_L": float(np.abs(ex["tip"] - tip_rigid).max() / 25),
                "tip_end_exudyn": ex["tip"][-1].tolist(), "tip_end_ours": tip[-1].tolist()}
        out[f"case_{case}"] = rows
        log(f"  exudyn case {case}: " + json.dumps(rows))
    return out


def exudyn_refinement(t_end: float, meshes=(5, 10, 20)) -> list:
    """Case B with 5, 10, 20 elements per beam, ours (dopri5, rtol 1e-10) and Exudyn (dt 2.5e-4 / 1e-4): both
    element formulations converge to the same beam, so their difference shrinks with the mesh."""
    rows, base = [], None
    for ne in meshes:
        s = codegen.build(flexible.pendulum(5, ne, E=E_B), "rancf")
        r = s.simulate(t_end, 1e-3, integrator="dopri5", rtol=1e-10, atol=1e-10)
        ex = exudyn_run(5, E_B, 2.5e-4 if ne <= 10 else 1e-4, t_end, ne=ne)
        if not ex["ok"]:
            rows.append({"elements_per_beam": ne, "ok": False})
            continue
        tip_e = np.column_stack([np.interp(r.t, ex["t"], ex["tip"][:, c]) for c in range(2)])
        tip = r.node("tip")
        row = {"elements_per_beam": ne, "ok": True, "ours_vs_exudyn_max_over_L": float(np.abs(tip - tip_e).max() / 25)}
        if base is None:
            base = (tip, tip_e)
        else:
            row["ours_vs_ours_5_max_over_L"] = float(np.abs(tip - base[0]).max() / 25)
            row["exudyn_vs_exudyn_5_max_over_L"] = float(np.abs(tip_e - base[1]).max() / 25)
        rows.append(row)
        log(f"  refinement {ne} elements per beam: " + json.dumps(row))
    return rows


def exudyn_timing(nb: int, steps: int) -> dict:
    """Seconds per generalised-alpha step (case B numbers, dt = 1e-3): (wall(3 k) - wall(k)) / 2 k removes
    the set-up (initial accelerations, first factorisation)."""
    h = 1e-3
    r1 = exudyn_run(nb, E_B, h, steps * h, sample=steps * h)
    r3 = exudyn_run(nb, E_B, h, 3 * steps * h, sample=steps * h)
    per = (r3["wall_s"] - r1["wall_s"]) / (2 * steps)
    return {"exudyn_step_s": per if per > 0 else r3["wall_s"] / (3 * steps), "exudyn_n_ode2": r1["n_ode2"],
            "exudyn_n_ae": r1["n_ae"], "exudyn_ok": r1["ok"] and r3["ok"]}


# ---------------------------------------------------------------------------------------------- report
DIFFERENCES = """\
Both codes use the same element kinematics: Shabana's planar two-node element, nodal coordinates
[r, r'] per node, cubic Hermite shape functions (eq 3), the same constant mass matrix (eq 4), gravity as
consistent nodal forces (eq 9).  They differ in
- **strain measures**: here (Hu & Wang eqs 5-6) the axial strain u_l' and the curvature u_t'' are taken in
  the element frame rotated by the chord angle alpha and are linear in e for a fixed alpha (small strain
  relative to the chord, integrated in closed form); Exudyn's ANCFCable2D (Gerstmayr & Irschik) uses the
  exact axial strain |r'| - 1 and the material curvature (r' x r'') . e_z / |r'|^2, integrated by Gauss
  rules (orders 9 and 5).  The chord-frame measures are accurate while an element turns little relative
  to its chord, so for large deformation the Hu & Wang element needs a finer mesh: at E = 210 GPa (case A)
  both give the rigid motion; at E = 21 MPa (case B) with 5 elements per beam the two tips part by about
  1.6 % of L late in the run, and the gap closes as the mesh is refined (table above), ours moving more
  between meshes than Exudyn's;
- **joints**: here the planar revolute joints and the ground pin are eliminated (independent coordinates,
  eqs 17-19, 22-23: an ODE, no constraint drift); Exudyn keeps separate nodes and adds 2 algebraic
  coordinate constraints per joint (an index-3 DAE, Lagrange multipliers);
- **solver**: here an explicit RK4 step costs 4 O(n) recursions (eqs 44-55) and HHT-alpha a few Newton
  iterations with the same O(n) factorisation; Exudyn's generalised-alpha step is implicit (modified Newton,
  sparse LU of the DAE Jacobian).
"""


def report(doc: dict) -> str:
    rows = doc["rows"]
    L = [f"# RANCF benchmark (M3 pendulum, {N_ELEM} elements per beam)", "",
         f"{doc['date']}, `{doc['command']}`", "",
         f"Machine: {doc['machine']['cpu']}, {doc['machine']['cores']} cores (shared); load average at start "
         f"{', '.join(f'{x:.2f}' for x in doc['machine']['loadavg_start'])}, at end "
         f"{', '.join(f'{x:.2f}' for x in doc.get('loadavg_end', []))}.", "",
         "Times per call or per step in compiled code, median over batches. `fd`: forward dynamics by the O(n) "
         "recursion (eqs 44-55) reusing the matrix processing (Omega is constant for revolute joints); `fd refactor`: "
         "with tau, upsilon, P, Psi (eqs 44-46) redone in every call as the paper counts it; `RK4 step`: case B, dt = "
         "1e-3; `HHT step`: case A (E = 210 GPa), dt = 1e-3, Newton iterations per step beside it; `dense`: Omega and "
         "Gamma assembled and solved by Cholesky (eq 41).", "",
         "| DOF n | beams | fd [us] | fd refactor [us] | RK4 step [us] | RK4 ns/DOF/step | HHT step [us] (Newton/step) "
         "| dense fd [us] | rec. vs dense | Exudyn step [us] |",
         "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        ex = r.get("exudyn_step_s")
        dense = "-" if r["fd_dense_s"] is None else f"{1e6 * r['fd_dense_s']:.0f}"
        diff = "-" if r["recursive_vs_dense_rel"] is None else f"{r['recursive_vs_dense_rel']:.1e}"
        exu = "-" if ex is None else f"{1e6 * ex:.0f}"
        L.append(f"| {r['dof']:,} | {r['beams']} | {1e6 * r['fd_s']:.1f} | {1e6 * r['fd_refactor_s']:.1f} | "
                 f"{1e6 * r['rk4_step_s']:.1f} | {r['rk4_ns_per_dof']:.0f} | {1e6 * r['hht_step_s']:.1f} "
                 f"({r['hht_newton_per_step']:.2f}) | {dense} | {diff} | {exu} |")
    L += ["", "Linear fits t = a + b n (R^2), and the log-log exponent (1 = linear):", "",
          "| quantity | range | a [us] | b [ns/DOF] | R^2 | exponent |", "|---|---|---:|---:|---:|---:|"]
    for key, f in doc["fits"].items():
        L.append(f"| {key} | {f['range']} | {1e6 * f['intercept_s']:.2f} | {1e9 * f['slope_s_per_dof']:.2f} | "
                 f"{f['r2']:.5f} | {f['loglog_exponent']:.3f} |")
    if doc.get("exudyn_accuracy"):
        L += ["", "Exudyn ANCFCable2D on the same pendulum (generalised-alpha, spectral radius 0.9), tip over "
              f"{doc['exudyn_t_end']:g} s, max |difference| / L (L = 25 m):", "",
              "| case | ours vs rigid | Exudyn dt 1e-3 vs ours | Exudyn dt 2.5e-4 vs ours | Exudyn dt 2.5e-4 vs rigid |",
              "|---|---:|---:|---:|---:|"]
        for case, r in doc["exudyn_accuracy"].items():
            def g(h, k):
                v = r.get(f"exudyn_h{h}", {})
                return f"{100 * v[k]:.3f} %" if v.get("ok") else "failed"
            L.append(f"| {case} ({r['ours_integrator']}) | {100 * r['ours_vs_rigid_max_over_L']:.3f} % | "
                     f"{g('0.001', 'vs_ours_max_over_L')} | {g('0.00025', 'vs_ours_max_over_L')} | "
                     f"{g('0.00025', 'vs_rigid_max_over_L')} |")
    if doc.get("exudyn_refinement"):
        L += ["", "Case B with finer meshes (ours dopri5 rtol 1e-10; Exudyn dt 2.5e-4, 1e-4 for 20 elements), max tip "
              "|difference| / L over 4 s:", "",
              "| elements per beam | ours vs Exudyn | ours vs ours (5 el.) | Exudyn vs Exudyn (5 el.) |",
              "|---:|---:|---:|---:|"]
        for r in doc["exudyn_refinement"]:
            if not r["ok"]:
                L.append(f"| {r['elements_per_beam']} | failed | | |")
                continue
            f = lambda k: f"{100 * r[k]:.2f} %" if k in r else "-"
            L.append(f"| {r['elements_per_beam']} | {f('ours_vs_exudyn_max_over_L')} | {f('ours_vs_ours_5_max_over_L')} | "
                     f"{f('exudyn_vs_exudyn_5_max_over_L')} |")
    elif doc.get("exudyn_note"):
        L += ["", f"Exudyn: {doc['exudyn_note']}"]
    L += ["", "Differences between the two element formulations:", "", DIFFERENCES]
    if doc.get("stability"):
        L += ["Largest stable RK4 step (1 s runs, energy drift < 1e-3 of max T):", ""]
        for case, v in doc["stability"].items():
            L.append(f"- case {case}: stable at h = {v['largest_stable_h']:g} s, unstable at "
                     f"{v['smallest_unstable_h'] if v['smallest_unstable_h'] else '-'}")
        L.append("")
    return "\n".join(L) + "\n"


def plots(doc: dict, out: str):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    rows = doc["rows"]
    seed = [r for r in rows if r["dof"] <= 880]
    paths = []
    if len(seed) >= 2:
        n = np.array([r["dof"] for r in seed], float)
        fig, ax = plt.subplots(figsize=(6.5, 4.5))
        for key, lab, mk in (("rk4_step_s", "RK4 step", "o"), ("fd_refactor_s", "forward dynamics, refactor", "s"),
                             ("fd_s", "forward dynamics", "^")):
            t = np.array([r[key] for r in seed]) * 1e6
            f = fit_line(n, t)
            ax.plot(n, t, mk, label=f"{lab}: R$^2$ = {f['r2']:.4f}")
            ax.plot(n, f["intercept_s"] + f["slope_s_per_dof"] * n, "k:", lw=0.8)
        ax.set_xlabel("DOF n")
        ax.set_ylabel("CPU time [us]")
        ax.set_title("RANCF, M3 chains of 5-element beams (cf. seed Fig. 12)", fontsize=10)
        ax.legend(fontsize=8)
        ax.grid(alpha=0.3)
        fig.tight_layout()
        p = os.path.join(out, "rancf_dof_time.png")
        _atomic_write(p, lambda fh: fig.savefig(fh, dpi=120, format="png"))
        paths.append(p)
        plt.close(fig)
    n = np.array([r["dof"] for r in rows], float)
    fig, ax = plt.subplots(figsize=(7, 5))
    ax.loglog(n, [r["rk4_step_s"] for r in rows], "o-", label="RANCF RK4 step (case B)")
    ax.loglog(n, [r["hht_step_s"] for r in rows], "v-", label="RANCF HHT step (case A)")
    ax.loglog(n, [r["fd_refactor_s"] for r in rows], "s-", label="RANCF forward dynamics, refactor")
    ax.loglog(n, [r["fd_s"] for r in rows], "^-", label="RANCF forward dynamics")
    d = [(r["dof"], r["fd_dense_s"]) for r in rows if r["fd_dense_s"]]
    if d:
        ax.loglog(*zip(*d), "D-", label="dense Omega + Cholesky")
    e = [(r["dof"], r["exudyn_step_s"]) for r in rows if r.get("exudyn_step_s")]
    if e:
        ax.loglog(*zip(*e), "x-", label="Exudyn ANCFCable2D gen.-alpha step")
    ax.loglog(n, rows[-1]["rk4_step_s"] * n / n[-1], "k:", lw=0.8, label="O(n)")
    ax.set_xlabel("DOF n")
    ax.set_ylabel("CPU time [s]")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7)
    ax.set_title("DOF against time per call / step (one core)", fontsize=10)
    fig.tight_layout()
    p = os.path.join(out, "rancf_dof_time_loglog.png")
    _atomic_write(p, lambda fh: fig.savefig(fh, dpi=120, format="png"))
    paths.append(p)
    plt.close(fig)
    return paths


def stability() -> dict:
    out = {}
    for case, yaml, hs in (("A", "flexible_pendulum_stiff.yaml", (4e-5, 5e-5, 5.5e-5, 6e-5, 8e-5, 1e-4)),
                           ("B", "flexible_pendulum.yaml", (1e-3, 2e-3, 5e-3, 1e-2))):
        s = codegen.build(codegen.load_model(os.path.join(ROOT, "examples", yaml)), "rancf")
        best, worst = None, None
        for h in hs:
            with np.errstate(all="ignore"):
                r = s.simulate(1.0, h, integrator="rk4", keep_partial=True)     # diverged: meta["partial"]
            tot = r.energy_total
            ok = bool(not r.meta.get("partial") and np.isfinite(tot).all()
                      and np.abs(tot - tot[0]).max() < 1e-3 * np.nanmax(r.energy_kinetic))
            if ok:
                best = h
            elif worst is None:
                worst = h
        out[case] = {"largest_stable_h": best, "smallest_unstable_h": worst}
        log(f"  RK4 stability case {case}: stable up to h = {best}, unstable at {worst}")
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="fewer sizes, shorter batches, Exudyn timing to 880 DOF")
    ap.add_argument("--max-dof", type=int, default=100_012, help="largest DOF (default 100,012 = 4546 beams)")
    ap.add_argument("--dense-max-dof", type=int, default=880, help="dense reference up to this DOF")
    ap.add_argument("--exudyn-max-dof", type=int, default=None, help="Exudyn timing up to this DOF (default: "
                    "--max-dof; --quick: 880)")
    ap.add_argument("--no-exudyn", action="store_true")
    ap.add_argument("--repeats", type=int, default=None, help="timing batches (default 5; --quick 3)")
    ap.add_argument("--out-dir", default=os.path.join(HERE, "results"))
    a = ap.parse_args(argv)
    repeats = a.repeats or (3 if a.quick else 5)
    target = 0.02 if a.quick else 0.06
    beams = [nb for nb in (QUICK_BEAMS if a.quick else SEED_BEAMS + LARGE_BEAMS) if dof(nb) <= a.max_dof]
    if a.max_dof > dof(beams[-1]) and a.max_dof > 100_012:
        nb_max = a.max_dof // dof(1)
        beams += [nb for nb in (10_000, 20_000, 45_454) if nb < nb_max] + [nb_max]
    ex_max = a.exudyn_max_dof if a.exudyn_max_dof is not None else (880 if a.quick else a.max_dof)
    os.makedirs(a.out_dir, exist_ok=True)
    doc = {"date": _dt.datetime.now().isoformat(timespec="seconds"), "command": " ".join(["python",
           "benchmarks/bench_rancf.py"] + (argv if argv is not None else sys.argv[1:])), "machine": machine_info(),
           "elements_per_beam": N_ELEM, "rows": []}
    log(f"building {len(beams)} kernels (two at a time) ...")
    t0 = time.perf_counter()
    with ProcessPoolExecutor(max_workers=2) as ex:
        list(ex.map(_build, beams))
    doc["build_all_s"] = time.perf_counter() - t0
    have_exu = False
    if not a.no_exudyn:
        try:
            import exudyn  # noqa: F401
            have_exu = True
            doc["exudyn_version"] = exudyn.__version__
        except ImportError:
            doc["exudyn_note"] = "not installed (pip install exudyn); skipped"
    else:
        doc["exudyn_note"] = "skipped (--no-exudyn)"
    warnings.simplefilter("ignore", DeprecationWarning)      # Exudyn's renamed settings
    for nb in beams:
        r = measure(nb, repeats, target, a.dense_max_dof)
        if have_exu and r["dof"] <= ex_max:
            r.update(exudyn_timing(nb, 10 if r["dof"] > 20_000 else 40))
        doc["rows"].append(r)
        log(f"n = {r['dof']:7d}: fd {1e6 * r['fd_s']:9.1f} us, refactor {1e6 * r['fd_refactor_s']:9.1f} us, RK4 step "
            f"{1e6 * r['rk4_step_s']:10.1f} us ({r['rk4_ns_per_dof']:.0f} ns/DOF), HHT step {1e6 * r['hht_step_s']:10.1f} us"
            + (f", dense {1e6 * r['fd_dense_s']:.0f} us (rel diff {r['recursive_vs_dense_rel']:.1e})" if r['fd_dense_s'] else "")
            + (f", Exudyn step {1e6 * r['exudyn_step_s']:.0f} us" if r.get("exudyn_step_s") else ""))
    fits = {}
    for key, lab in (("rk4_step_s", "RK4 step"), ("fd_refactor_s", "fd refactor"), ("fd_s", "fd"),
                     ("hht_step_s", "HHT step"), ("exudyn_step_s", "Exudyn step"), ("fd_dense_s", "dense fd")):
        for rng, sel in (("seed 110-880", lambda r: r["dof"] <= 880), ("all", lambda r: True)):
            pts = [(r["dof"], r[key]) for r in doc["rows"] if sel(r) and r.get(key)]
            if len(pts) >= 3 and not (rng == "all" and len(pts) == len([p for p in pts if p[0] <= 880])):
                f = fit_line(*zip(*pts))
                f["range"] = f"{rng} ({len(pts)} sizes, n <= {max(p[0] for p in pts):,})"
                fits[f"{lab}, {rng}"] = f
    doc["fits"] = fits
    if have_exu:
        doc["exudyn_t_end"] = 4.0
        log("Exudyn accuracy runs (cases A and B, 4 s) ...")
        doc["exudyn_accuracy"] = exudyn_accuracy(4.0)
        if not a.quick:
            log("Exudyn mesh refinement, case B ...")
            doc["exudyn_refinement"] = exudyn_refinement(4.0)
    doc["stability"] = stability()
    doc["loadavg_end"] = list(os.getloadavg())
    paths = plots(doc, a.out_dir)
    jp, mp = os.path.join(a.out_dir, "rancf.json"), os.path.join(a.out_dir, "rancf.md")
    _atomic_write(jp, lambda fh: fh.write(json.dumps(doc, indent=1).encode()))
    md = report(doc)
    _atomic_write(mp, lambda fh: fh.write(md.encode()))
    log("\n" + md)
    for p in [jp, mp] + paths:
        log("wrote " + p)
    return 0


if __name__ == "__main__":
    sys.exit(main())
