"""Model M3 acceptance runs and the seed's figures (Hu & Wang 2016, section 2, Figs. 7-11).

    python examples/flexible_pendulum_figures.py                  # 4 s, dt = 1e-3: ~3 s (+ ~15 s first build)
    python examples/flexible_pendulum_figures.py --out-dir results/m3 --t-end 4

Case A (examples/flexible_pendulum_stiff.yaml, E = 210 GPa): implicit HHT-alpha (alpha = -0.05) at dt = 1e-3,
against the rigid 5-link pendulum of the same rods (m = 15.6 kg, L = 5 m thin rods, the recursive rigid
solver, dopri5 at rtol 1e-11).  Normalised tip error delta = |Delta X| / L, |Delta Y| / L with L = 25 m
(Hu & Wang eq 58; the seed reaches < 0.6 %).
Case B (examples/flexible_pendulum.yaml, E = 21 MPa): RK4 at dt = 1e-3 for 4 s (the seed's settings); total
energy (kinetic + elastic + gravity) conservation (seed: 1e-4 relative, 0.1 J on 1e4 J).

Writes into --out-dir (default results/flexible_pendulum; every file atomically):
    fig7_caseA_tip.png        tip coordinates, RANCF vs rigid pendulum        (seed Fig. 7)
    fig8_caseA_tip_error.png  normalised tip error in %                       (seed Fig. 8)
    fig9_caseB_tip.png        case B tip displacement                         (seed Fig. 9)
    fig10_caseB_snapshots.png configurations at t = 0.5, 1.0, ..., 4.0 s, 11 points per element (seed Fig. 10)
    fig11_caseB_energy.png    kinetic, elastic, potential and total energy    (seed Fig. 11)
    caseA.npz, caseB.npz      full results (node_names, node_pos, energy_elastic, ...)
    summary.json              the acceptance figures
Exit status 0 when both acceptance criteria hold (case A < 0.6 % of L, case B drift <= 1e-4), else 1.
"""
from __future__ import annotations

import argparse
import json
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

import codegen  # noqa: E402
from codegen import models  # noqa: E402
from codegen.runtime import atomic_write as _atomic_write  # noqa: E402

L_CHAR = 25.0                      # characteristic length of eq 58: 5 beams x 5 m
SEED_A = 0.006                     # seed: normalised tip error below 0.6 %
SEED_B = 1e-4                      # seed: relative energy fluctuation 0.01 %


def rigid_tip(t_end: float, dt: float):
    """Tip of the rigid 5-link pendulum of thin rods with the beams' mass and length (foundation solver)."""
    rig = codegen.build(models.chain(5, m=15.6, L=5.0), "recursive", ref_point="joint")
    rr = rig.simulate(t_end, dt, integrator="dopri5", rtol=1e-11, atol=1e-12)
    ang = 2 * np.arctan2(rr.body_quat[:, 4, 3], rr.body_quat[:, 4, 0])
    return rr.t, rr.body_com[:, 4, :2] + 2.5 * np.column_stack([np.cos(ang), np.sin(ang)])


def case_a(t_end: float, dt: float):
    s = codegen.build(codegen.load_model(os.path.join(HERE, "flexible_pendulum_stiff.yaml")), "rancf")
    res = s.simulate(t_end, dt, integrator="hht", alpha=-0.05)
    t_r, tip_r = rigid_tip(t_end, dt)
    assert np.allclose(t_r, res.t)
    err = (res.node("tip") - tip_r) / L_CHAR                  # eq 58 (signed)
    return res, tip_r, err


def case_b(t_end: float, dt: float):
    s = codegen.build(codegen.load_model(os.path.join(HERE, "flexible_pendulum.yaml")), "rancf")
    res = s.simulate(t_end, dt, integrator="rk4")
    return s, res


def _save(fig, path):
    _atomic_write(path, lambda fh: fig.savefig(fh, dpi=120, format="png"))
    return path


def figures(out: str, res_a, tip_r, err, sys_b, res_b):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    written = []
    tip_a = res_a.node("tip")

    fig, ax = plt.subplots(figsize=(7, 4.2))                  # Fig. 7
    ax.plot(res_a.t, tip_r[:, 0], "k-", lw=3, alpha=0.35, label="x, rigid 5-link pendulum")
    ax.plot(res_a.t, tip_r[:, 1], "b-", lw=3, alpha=0.35, label="y, rigid 5-link pendulum")
    ax.plot(res_a.t, tip_a[:, 0], "k--", lw=1, label="x, RANCF")
    ax.plot(res_a.t, tip_a[:, 1], "b--", lw=1, label="y, RANCF")
    ax.set_xlabel("t [s]")
    ax.set_ylabel("tip position [m]")
    ax.set_title("Case A (E = 210 GPa): tip of the pendulum (cf. seed Fig. 7)", fontsize=10)
    ax.legend(fontsize=8)
    fig.tight_layout()
    written.append(_save(fig, os.path.join(out, "fig7_caseA_tip.png")))
    plt.close(fig)

    fig, ax = plt.subplots(figsize=(7, 4.2))                  # Fig. 8
    ax.plot(res_a.t, 100 * err[:, 0], label=r"$\delta_X = \Delta X / L$")
    ax.plot(res_a.t, 100 * err[:, 1], label=r"$\delta_Y = \Delta Y / L$")
    ax.set_xlabel("t [s]")
    ax.set_ylabel("normalised error [%]")
    ax.set_title(f"Case A: tip error vs the rigid pendulum, L = 25 m (eq 58); max {100 * np.abs(err).max():.3f} % "
                 f"(seed < 0.6 %)", fontsize=10)
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    written.append(_save(fig, os.path.join(out, "fig8_caseA_tip_error.png")))
    plt.close(fig)

    tip_b = res_b.node("tip")                                 # Fig. 9
    fig, ax = plt.subplots(figsize=(7, 4.2))
    ax.plot(res_b.t, tip_b[:, 0] - tip_b[0, 0], label=r"$\Delta x$ (from $x_0$ = 25 m)")
    ax.plot(res_b.t, tip_b[:, 1] - tip_b[0, 1], label=r"$\Delta y$")
    ax.set_xlabel("t [s]")
    ax.set_ylabel("tip displacement [m]")
    ax.set_title("Case B (E = 21 MPa): tip displacement, RK4 dt = 1e-3 (cf. seed Fig. 9)", fontsize=10)
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    written.append(_save(fig, os.path.join(out, "fig9_caseB_tip.png")))
    plt.close(fig)

    times = [k * 0.5 for k in range(1, 9) if k * 0.5 <= res_b.t[-1] + 1e-9]   # Fig. 10
    if times:
        ncol = min(4, len(times))
        nrow = (len(times) + ncol - 1) // ncol
        fig, axes = plt.subplots(nrow, ncol, figsize=(3.4 * ncol, 3.2 * nrow), squeeze=False)
        for ax, tk in zip(axes.ravel(), times):
            k = int(np.argmin(np.abs(res_b.t - tk)))
            pts = sys_b.curve(res_b.q[k], 11)                 # r = S(xi) e at 11 points per element (eqs 2-3)
            for el in pts:
                ax.plot(el[:, 0], el[:, 1], "-", color="C0", lw=1.2)
            P = res_b.node_pos[k]
            ax.plot(P[:, 0], P[:, 1], ".", color="k", ms=3)
            ax.plot([0], [0], "k^", ms=6)
            ax.set_xlim(-27, 27)
            ax.set_ylim(-30, 5)
            ax.set_aspect("equal")
            ax.set_title(f"t = {res_b.t[k]:.1f} s", fontsize=9)
            ax.tick_params(labelsize=7)
        for ax in axes.ravel()[len(times):]:
            ax.axis("off")
        fig.suptitle("Case B (E = 21 MPa): configurations, 11 points per element (cf. seed Fig. 10)", fontsize=10)
        fig.tight_layout()
        written.append(_save(fig, os.path.join(out, "fig10_caseB_snapshots.png")))
        plt.close(fig)

    T, U, V = res_b.energy_kinetic, res_b.extra["energy_elastic"], res_b.extra["energy_gravity"]   # Fig. 11
    tot = T + U + V
    fig, (a1, a2) = plt.subplots(2, 1, figsize=(7, 6), sharex=True, gridspec_kw={"height_ratios": [2, 1]})
    a1.plot(res_b.t, T, label="kinetic")
    a1.plot(res_b.t, U, label="elastic (eq 6)")
    a1.plot(res_b.t, V, label="potential (gravity)")
    a1.plot(res_b.t, tot, "k--", label="total")
    a1.set_ylabel("energy [J]")
    a1.legend(fontsize=8)
    a1.set_title("Case B (E = 21 MPa): energies, RK4 dt = 1e-3 (cf. seed Fig. 11)", fontsize=10)
    a2.plot(res_b.t, tot - tot[0], "k-")
    a2.set_ylabel(r"$E - E_0$ [J]")
    a2.set_xlabel("t [s]")
    scale = max(np.abs(T).max(), np.abs(V).max())
    a2.set_title(f"max |E - E0| = {np.abs(tot - tot[0]).max():.2e} J = {np.abs(tot - tot[0]).max() / scale:.1e} of "
                 f"max(T, |V|) = {scale:.3g} J", fontsize=9)
    a2.grid(alpha=0.3)
    fig.tight_layout()
    written.append(_save(fig, os.path.join(out, "fig11_caseB_energy.png")))
    plt.close(fig)
    return written


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out-dir", default=os.path.join("results", "flexible_pendulum"))
    ap.add_argument("--t-end", type=float, default=4.0, help="horizon of both cases [s] (seed: 4)")
    ap.add_argument("--dt", type=float, default=1e-3, help="step and sample interval (seed: 1e-3)")
    a = ap.parse_args(argv)
    if not (a.t_end > 0 and a.dt > 0):
        print("flexible_pendulum_figures: error: --t-end and --dt must be positive", file=sys.stderr)
        return 2
    os.makedirs(a.out_dir, exist_ok=True)
    res_a, tip_r, err = case_a(a.t_end, a.dt)
    sys_b, res_b = case_b(a.t_end, a.dt)
    T, U, V = res_b.energy_kinetic, res_b.extra["energy_elastic"], res_b.extra["energy_gravity"]
    tot = T + U + V
    scale = max(np.abs(T).max(), np.abs(V).max())
    drift_abs = float(np.abs(tot - tot[0]).max())
    summary = {
        "t_end_s": a.t_end, "dt_s": a.dt,
        "case_A": {"integrator": "hht", "alpha": -0.05,
                   "tip_error_max_over_L": {"x": float(np.abs(err[:, 0]).max()), "y": float(np.abs(err[:, 1]).max())},
                   "tip_error_max_at_t": float(res_a.t[int(np.abs(err).max(axis=1).argmax())]),
                   "newton_iterations_per_step": res_a.meta["newton_iterations"] / max(res_a.meta["steps"], 1),
                   "newton_not_converged": res_a.meta["newton_not_converged"],
                   "wall_time_s": res_a.meta["wall_time_s"],
                   "energy_drift_rel": float(np.abs(res_a.energy_total - res_a.energy_total[0]).max() /
                                             np.abs(res_a.energy_kinetic).max())},
        "case_B": {"integrator": "rk4", "energy_drift_abs_J": drift_abs,
                   "energy_scale_J": float(scale), "energy_drift_rel": drift_abs / scale,
                   "max_kinetic_J": float(T.max()), "max_elastic_J": float(U.max()),
                   "wall_time_s": res_b.meta["wall_time_s"]},
    }
    ok_a = bool(max(summary["case_A"]["tip_error_max_over_L"].values()) < SEED_A)
    ok_b = bool(summary["case_B"]["energy_drift_rel"] <= SEED_B)
    summary["pass"] = {"case_A_below_0.6_percent": ok_a, "case_B_drift_below_1e-4": ok_b}
    files = figures(a.out_dir, res_a, tip_r, err, sys_b, res_b)
    files.append(res_a.save(os.path.join(a.out_dir, "caseA.npz")))
    files.append(res_b.save(os.path.join(a.out_dir, "caseB.npz")))
    path = os.path.join(a.out_dir, "summary.json")
    _atomic_write(path, lambda fh: fh.write(json.dumps(summary, indent=1).encode()))
    files.append(path)
    ea = summary["case_A"]["tip_error_max_over_L"]
    print(f"case A (E = 210 GPa, HHT dt = {a.dt:g}, {a.t_end:g} s): max tip error / L = {100 * ea['x']:.4f} % (x), "
          f"{100 * ea['y']:.4f} % (y)  [seed < 0.6 %] {'ok' if ok_a else 'FAILED'}")
    print(f"case B (E = 21 MPa, RK4 dt = {a.dt:g}, {a.t_end:g} s): max |E - E0| = {drift_abs:.3e} J = "
          f"{summary['case_B']['energy_drift_rel']:.2e} of {scale:.4g} J  [seed 1e-4] {'ok' if ok_b else 'FAILED'}")
    for f in files:
        print("  " + f)
    return 0 if ok_a and ok_b else 1


if __name__ == "__main__":
    sys.exit(main())
