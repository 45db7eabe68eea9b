"""Model M4 (space robot) with the constraint force algorithm: the seed's Figs. 8-12 (Liu, Hu & Zhang 2016, 4.1).

    python examples/space_robot_figures.py                       # 10 s, dt = 0.002, RK4 (+ builds the first time)
    python examples/space_robot_figures.py --out /tmp/m4 --t-end 0.5

Simulates examples/space_robot.yaml (= codegen.models.space_robot()) with cfa (serial form) and with the recursive
O(n) method, both RK4 with the same step, joint wrenches sampled (System.simulate(..., joint_wrench=True)).
Base attitude: ZYX (yaw-pitch-roll, intrinsic) Euler angles of the base quaternion q[3:7] = (w, x, y, z),
R = Rz(yaw) Ry(pitch) Rx(roll), body frame to world.

Writes into --out (default results/space_robot; every file atomically):
    fig8_base_attitude.png      roll, pitch, yaw of the base (cfa)                            (seed Fig. 8)
    fig9_arm1_angles.png        arm1_j1 ... arm1_j6 (cfa)                                      (seed Fig. 9)
    fig10_L11_wrench.png        force and moment at joint arm1_j1 (base -> L11), child frame  (seed Fig. 10)
    fig11_attitude_diff.png     |cfa - recursive| of the attitude angles, log scale           (seed Fig. 11)
    fig12_arm1_diff.png         |cfa - recursive| of the arm-1 angles, log scale               (seed Fig. 12)
    space_robot_cfa.npz         the cfa result (joint_wrench, joint_names included)
    summary.txt                 max differences (up to 4 s, whole run), momentum drift, run times
The momenta are computed from the sampled body poses by central differences (np.gradient, O(dt^2)), so their
drift is bounded below by that differencing error; the initial momenta are zero (the robot starts at rest).
"""
from __future__ import annotations

import argparse
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

import codegen
from codegen.runtime import atomic_write

ARM1 = [f"arm1_j{k}.angle" for k in range(1, 7)]
ATT = ("roll", "pitch", "yaw")


def zyx_angles(quat):
    """(nt, 4) quaternions w, x, y, z -> (nt, 3) roll, pitch, yaw [rad], R = Rz(yaw) Ry(pitch) Rx(roll)."""
    w, x, y, z = (quat / np.linalg.norm(quat, axis=1, keepdims=True)).T
    roll = np.arctan2(2 * (w * x + y * z), 1 - 2 * (x * x + y * y))
    pitch = np.arcsin(np.clip(2 * (w * y - z * x), -1.0, 1.0))
    yaw = np.arctan2(2 * (w * z + x * y), 1 - 2 * (y * y + z * z))
    return np.unwrap(np.column_stack([roll, pitch, yaw]), axis=0)


def quat_matrix(qt):
    """(..., 4) unit quaternions w, x, y, z -> (..., 3, 3) rotation matrices."""
    w, x, y, z = np.moveaxis(qt / np.linalg.norm(qt, axis=-1, keepdims=True), -1, 0)
    return np.stack([np.stack([1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)], -1),
                     np.stack([2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)], -1),
                     np.stack([2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)], -1)], -2)


def momenta(model, res):
    """World linear momentum sum m_i v_ci and angular momentum about the world origin
    sum (r_ci x m_i v_ci + R_i I_i R_i^T w_i), (nt, 3) each, from central differences of the sampled poses."""
    m = np.array([b.mass for b in model.bodies])
    I_b = np.array([np.diag(b.inertia) if np.ndim(b.inertia) == 1 else np.asarray(b.inertia) for b in model.bodies])
    r, qt = res.body_com, res.body_quat.copy()
    flip = np.sign(np.einsum("tbk,tbk->tb", qt[1:], qt[:-1]))           # q and -q are one rotation: make the
    qt[1:] *= np.cumprod(np.where(flip < 0, -1.0, 1.0), axis=0)[..., None]  # samples continuous before differencing
    v = np.gradient(r, res.t, axis=0, edge_order=2)
    qd = np.gradient(qt, res.t, axis=0, edge_order=2)
    # world angular velocity: w = 2 vec(qdot (x) conj(q))
    w0, wv = qt[..., :1], -qt[..., 1:]
    d0, dv = qd[..., :1], qd[..., 1:]
    omega = 2 * (d0 * wv + w0 * dv + np.cross(dv, wv))
    R = quat_matrix(qt)
    I_w = R @ I_b[None] @ np.swapaxes(R, -1, -2)
    p = (m[None, :, None] * v).sum(1)
    h = (np.cross(r, m[None, :, None] * v) + np.einsum("tbij,tbj->tbi", I_w, omega)).sum(1)
    return p, h


def save_fig(fig, path):
    atomic_write(path, lambda fh: fig.savefig(fh, format="png", dpi=120))


def main(argv=None):
    ap = argparse.ArgumentParser(description="M4 space robot: the seed's Figs. 8-12 (cfa vs recursive)")
    ap.add_argument("--out", default=os.path.join("results", "space_robot"), help="output folder")
    ap.add_argument("--t-end", type=float, default=10.0, help="simulated time [s] (seed: 10)")
    ap.add_argument("--dt", type=float, default=0.002, help="RK4 step and sample interval [s] (seed: 0.002)")
    a = ap.parse_args(argv)
    if not a.t_end > 0 or not a.dt > 0 or a.dt > a.t_end:
        ap.error(f"need 0 < --dt <= --t-end, got --dt {a.dt} --t-end {a.t_end}")
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    model = codegen.load_model(os.path.join(HERE, "space_robot.yaml"))
    runs = {}
    for label, alg, opt in (("cfa", "cfa", {"form": "serial"}), ("recursive", "recursive", {})):
        s = codegen.build(model, alg, **opt)
        runs[label] = s.simulate(a.t_end, a.dt, integrator="rk4", joint_wrench=True)
    rc, rr = runs["cfa"], runs["recursive"]
    t = rc.t
    att = {k: zyx_angles(r.q[:, 3:7]) for k, r in runs.items()}
    arm = {k: np.column_stack([r.coord(n) for n in ARM1]) for k, r in runs.items()}
    jn = [str(x) for x in rc.extra["joint_names"]]
    W = rc.extra["joint_wrench"][:, jn.index("arm1_j1")]
    W_rec = rr.extra["joint_wrench"][:, jn.index("arm1_j1")]
    d_att, d_arm = att["cfa"] - att["recursive"], arm["cfa"] - arm["recursive"]
    os.makedirs(a.out, exist_ok=True)

    def series(fname, y, labels, title, ylabel, log=False):
        fig, ax = plt.subplots(figsize=(8, 4.5))
        for k, lab in enumerate(labels):
            yk = np.maximum(np.abs(y[:, k]), 1e-20) if log else y[:, k]
            ax.plot(t, yk, label=lab)
        if log:
            ax.set_yscale("log")
        ax.set(xlabel="t [s]", ylabel=ylabel, title=title)
        ax.grid(True, alpha=0.3)
        ax.legend(ncol=3, fontsize=8)
        fig.tight_layout()
        save_fig(fig, os.path.join(a.out, fname))
        plt.close(fig)

    series("fig8_base_attitude.png", np.degrees(att["cfa"]), ATT,
           "M4 base attitude, ZYX Euler angles (cfa serial)", "angle [deg]")
    series("fig9_arm1_angles.png", np.degrees(arm["cfa"]), ARM1, "M4 arm-1 joint angles (cfa serial)", "angle [deg]")
    fig, (a1, a2) = plt.subplots(2, 1, figsize=(8, 6.5), sharex=True)
    for k, c in enumerate("xyz"):
        a1.plot(t, W[:, k], label=f"f{c}")
        a2.plot(t, W[:, 3 + k], label=f"m{c}")
    a1.set(ylabel="force [N]", title="Constraint force and moment at joint arm1_j1 (base -> L11), "
           "L11's joint frame (cfa serial)")
    a2.set(xlabel="t [s]", ylabel="moment about the joint [N m]")
    for ax in (a1, a2):
        ax.grid(True, alpha=0.3)
        ax.legend(ncol=3, fontsize=8)
    fig.tight_layout()
    save_fig(fig, os.path.join(a.out, "fig10_L11_wrench.png"))
    plt.close(fig)
    series("fig11_attitude_diff.png", d_att, ATT, "|cfa - recursive|, base attitude angles", "|difference| [rad]", True)
    series("fig12_arm1_diff.png", d_arm, ARM1, "|cfa - recursive|, arm-1 joint angles", "|difference| [rad]", True)
    rc.save(os.path.join(a.out, "space_robot_cfa.npz"))

    early = t <= 4.0 + 1e-9
    p, h = momenta(model, rc)
    lines = [f"M4 space robot, RK4, dt = {a.dt} s, t_end = {a.t_end} s; cfa (serial form) vs recursive",
             "attitude: ZYX Euler angles (roll, pitch, yaw) of the base quaternion, R = Rz(yaw) Ry(pitch) Rx(roll)",
             f"max |cfa - recursive| attitude angles, t <= 4 s: {np.abs(d_att[early]).max():.3e} rad",
             f"max |cfa - recursive| attitude angles, whole run:  {np.abs(d_att).max():.3e} rad",
             f"max |cfa - recursive| arm-1 angles, t <= 4 s:      {np.abs(d_arm[early]).max():.3e} rad",
             f"max |cfa - recursive| arm-1 angles, whole run:     {np.abs(d_arm).max():.3e} rad",
             (f"max |cfa - recursive| arm1_j1 wrench, whole run:   {np.abs(W - W_rec).max():.3e} "
             f"(max |wrench| {np.abs(W).max():.3e})"),
             "range of the attitude angles [deg]: " + ", ".join(
                 f"{n} {np.degrees(att['cfa'][:, k]).min():.3f} .. {np.degrees(att['cfa'][:, k]).max():.3f}"
                 for k, n in enumerate(ATT)),
             (f"linear momentum drift (cfa, central differences of the poses): max |p(t) - p(0)| = "
             f"{np.abs(p - p[0]).max():.3e} kg m/s (scale sum m|v|: "
             f"{(np.array([b.mass for b in model.bodies]) * np.linalg.norm(np.gradient(rc.body_com, t, axis=0), axis=2)).sum(1).max():.3e})"),
             (f"angular momentum drift about the world origin: max |h(t) - h(0)| = {np.abs(h - h[0]).max():.3e} kg m^2/s"
             " (differencing error O(dt^2) included)"),
             f"compiled-loop wall time: cfa {rc.meta['wall_time_s']:.3f} s, recursive {rr.meta['wall_time_s']:.3f} s"]
    text = "\n".join(lines) + "\n"
    atomic_write(os.path.join(a.out, "summary.txt"), lambda fh: fh.write(text.encode()))
    print(text + f"figures and summary in {a.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
