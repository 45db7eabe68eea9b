"""RANCF benchmarks and the seed's figures (Hu & Wang 2016, section 2; model M3 of models.md).

    python benchmarks/bench_rancf.py dof        # time per forward-dynamics call and per RK4 step vs DOF
    python benchmarks/bench_rancf.py stability  # largest stable RK4 step for case A (E = 210 GPa)
    python benchmarks/bench_rancf.py figures    # Fig. 9-11 analogues: case A tip path vs the rigid
                                                # 5-link pendulum, its normalised error, case B energies
    python benchmarks/bench_rancf.py all

Outputs go to results/ (PNG + JSON).  ``dof`` builds one kernel per element count (about 30 s each when
the cache is cold; two builds run in parallel).
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from concurrent.futures import ProcessPoolExecutor

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

import codegen  # noqa: E402
from codegen import flexible  # noqa: E402

OUT = os.path.join(ROOT, "results")
N_ELEM = (1, 2, 5, 10, 20, 50, 100)
DENSE_MAX_N = 450


def _build(ne):
    m = flexible.pendulum(5, ne)
    flexible.build_module(m)
    return ne


def bench_dof():
    with ProcessPoolExecutor(max_workers=2) as ex:       # warm the cache
        list(ex.map(_build, N_ELEM))
    rows = []
    for ne in N_ELEM:
        m = flexible.pendulum(5, ne)
        s = codegen.build(m, "rancf")
        q0, u0 = m.initial_state()
        rng = np.random.default_rng(0)
        q = q0 + 1e-3 * rng.normal(size=s.nq)
        u = rng.normal(size=s.nq)
        reps = max(20, int(2e5 / s.nq))
        t_rec = min(s.kernel.time_forward_dynamics(q, u, reps, 0) for _ in range(3))
        t_den = s.kernel.time_forward_dynamics(q, u, max(2, int(2e6 / s.nq**2)), 1) if s.nq <= DENSE_MAX_N else None
        x = np.concatenate([q0, u0])
        nsteps = max(10, int(2e4 / s.nq))
        t0 = time.perf_counter()
        s.kernel.integrate_rk4(0.0, x, 1e-5, nsteps, 1)
        t_rk4 = (time.perf_counter() - t0) / nsteps
        err = None
        if t_den is not None:
            a, b = s.forward_dynamics(q, u, algorithm="rancf"), s.forward_dynamics(q, u, algorithm="dense")
            err = float(np.abs(a - b).max() / np.abs(b).max())
        rows.append({"elements_per_beam": ne, "N_bar": 5 * ne, "dof": s.nq, "fd_recursive_s": t_rec,
                     "fd_dense_s": t_den, "rk4_step_s": t_rk4, "recursive_vs_dense_rel": err})
        print(f"n = {s.nq:5d}  recursion {t_rec * 1e6:9.1f} us  dense "
              f"{'-' if t_den is None else f'{t_den * 1e6:10.1f} us'}  RK4 step {t_rk4 * 1e6:9.1f} us  "
              f"rel diff {err if err is None else f'{err:.1e}'}", flush=True)
    os.makedirs(OUT, exist_ok=True)
    with open(os.path.join(OUT, "bench_rancf_dof.json"), "w") as fh:
        json.dump(rows, fh, indent=1)
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    n = np.array([r["dof"] for r in rows])
    fig, ax = plt.subplots(figsize=(6.5, 4.5))
    ax.loglog(n, [r["fd_recursive_s"] for r in rows], "o-", label="RANCF recursion (eqs 44-55)")
    dn = [(r["dof"], r["fd_dense_s"]) for r in rows if r["fd_dense_s"]]
    ax.loglog(*zip(*dn), "s-", label="dense Omega + Cholesky (eq 41)")
    ax.loglog(n, [r["rk4_step_s"] for r in rows], "^--", label="RK4 step (4 x recursion)")
    ax.loglog(n, rows[-1]["fd_recursive_s"] * n / n[-1], "k:", lw=0.8, label="O(n)")
    ax.set_xlabel("degrees of freedom n")
    ax.set_ylabel("CPU time per call [s]")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    ax.set_title("M3 chain of 5 beams, elements per beam varied")
    fig.tight_layout()
    fig.savefig(os.path.join(OUT, "rancf_dof_time.png"), dpi=120)
    print("wrote results/rancf_dof_time.png, results/bench_rancf_dof.json")


def stability(t_end=0.2):
    s = codegen.build(codegen.load_model(os.path.join(ROOT, "examples", "flexible_pendulum_stiff.yaml")), "rancf")
    out = []
    for h in (2e-5, 4e-5, 5e-5, 5.5e-5, 6e-5, 8e-5, 1e-4):
        sub = int(round(1e-3 / h))
        with np.errstate(all="ignore"):
            r = s.simulate(t_end, 1e-3, integrator="rk4", substeps=sub)
        tot = r.energy_total
        ok = bool(np.isfinite(tot).all() and np.abs(tot - tot[0]).max() < 1e-3 * r.energy_kinetic.max())
        out.append({"h": 1e-3 / sub, "stable": ok, "wall_s": r.meta["wall_time_s"]})
        print(f"case A, RK4 h = {1e-3 / sub:.3g} s: {'stable' if ok else 'UNSTABLE'} ({r.meta['wall_time_s']:.2f} s wall "
              f"for {t_end} s)")
    os.makedirs(OUT, exist_ok=True)
    with open(os.path.join(OUT, "bench_rancf_stability.json"), "w") as fh:
        json.dump(out, fh, indent=1)


def figures(t_a=2.0, t_b=4.0):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from codegen import models
    os.makedirs(OUT, exist_ok=True)
    sa = codegen.build(codegen.load_model(os.path.join(ROOT, "examples", "flexible_pendulum_stiff.yaml")), "rancf")
    ra = sa.simulate(t_a, 1e-3, integrator="hht", alpha=-0.05)
    rig = codegen.build(models.chain(5, m=15.6, L=5.0), "recursive")
    rr = rig.simulate(t_a, 1e-3, integrator="dopri5", rtol=1e-10, atol=1e-12)
    ang = 2 * np.arctan2(rr.body_quat[:, 4, 3], rr.body_quat[:, 4, 0])
    tip_r = rr.body_com[:, 4, :2] + 2.5 * np.column_stack([np.cos(ang), np.sin(ang)])
    tip_f = ra.node("tip")
    fig, ax = plt.subplots(figsize=(6, 5))
    ax.plot(tip_r[:, 0], tip_r[:, 1], "k-", lw=2.5, alpha=0.4, label="rigid 5-link pendulum (recursive)")
    ax.plot(tip_f[:, 0], tip_f[:, 1], "r--", label="RANCF, E = 210 GPa (HHT, dt = 1e-3)")
    ax.set_aspect("equal")
    ax.set_xlabel("x [m]")
    ax.set_ylabel("y [m]")
    ax.legend(fontsize=8)
    ax.set_title(f"Fig. 9 analogue: tip path, 0..{t_a:g} s")
    fig.tight_layout()
    fig.savefig(os.path.join(OUT, "rancf_fig9_tip_path.png"), dpi=120)
    plt.close(fig)
    err = (tip_f - tip_r) / 25.0
    fig, ax = plt.subplots(figsize=(6.5, 4))
    ax.plot(ra.t, np.abs(err[:, 0]) * 100, label="|dx| / L")
    ax.plot(ra.t, np.abs(err[:, 1]) * 100, label="|dy| / L")
    ax.set_xlabel("t [s]")
    ax.set_ylabel("error [%]")
    ax.set_title(f"Fig. 10 analogue: max {100 * np.abs(err).max():.2e} % (seed: < 0.6 %)")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(os.path.join(OUT, "rancf_fig10_tip_error.png"), dpi=120)
    plt.close(fig)
    sb = codegen.build(codegen.load_model(os.path.join(ROOT, "examples", "flexible_pendulum.yaml")), "rancf")
    rb = sb.simulate(t_b, 1e-3, integrator="rk4")
    T, U, V = rb.energy_kinetic, rb.extra["energy_elastic"], rb.extra["energy_gravity"]
    tot = T + U + V
    fig, (a1, a2) = plt.subplots(2, 1, figsize=(6.5, 6), sharex=True)
    a1.plot(rb.t, T, label="kinetic")
    a1.plot(rb.t, U, label="elastic")
    a1.plot(rb.t, V, label="gravity")
    a1.plot(rb.t, tot, "k--", label="total")
    a1.set_ylabel("J")
    a1.legend(fontsize=8)
    a1.set_title("Fig. 11 analogue: case B (E = 21 MPa), RK4 dt = 1e-3")
    a2.plot(rb.t, (tot - tot[0]) / T.max())
    a2.set_ylabel("(E - E0) / max T")
    a2.set_xlabel("t [s]")
    fig.tight_layout()
    fig.savefig(os.path.join(OUT, "rancf_fig11_energy.png"), dpi=120)
    plt.close(fig)
    rb.plot(os.path.join(OUT, "rancf_case_B.png"))
    summary = {"case_A_tip_error_max_over_L": np.abs(err).max(axis=0).tolist(), "case_A_horizon_s": t_a,
               "case_A_hht_wall_s": ra.meta["wall_time_s"],
               "case_B_energy_drift_rel_maxT": float(np.abs(tot - tot[0]).max() / T.max()),
               "case_B_max_kinetic_J": float(T.max()), "case_B_rk4_wall_s": rb.meta["wall_time_s"], "case_B_t_end": t_b}
    with open(os.path.join(OUT, "rancf_figures.json"), "w") as fh:
        json.dump(summary, fh, indent=1)
    print(json.dumps(summary, indent=1))


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("what", choices=["dof", "stability", "figures", "all"])
    a = ap.parse_args()
    if a.what in ("figures", "all"):
        figures()
    if a.what in ("stability", "all"):
        stability()
    if a.what in ("dof", "all"):
        bench_dof()
