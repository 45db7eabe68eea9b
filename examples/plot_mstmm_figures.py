"""The figures of the Riccati MSTMM seed (Rui et al. 2020) from the generated mstmm kernels.

    python examples/plot_mstmm_figures.py                    # both figures, M5 with N = 999, 2 s each
    python examples/plot_mstmm_figures.py --fig 4 --n 1999 --t-end 5
    python examples/plot_mstmm_figures.py --out-dir /tmp/figs

Fig. 3 (models.md M1, the balance pendulum): the absolute angles theta_1, theta_3, theta_5, theta_7 of the
four rods (seed convention: theta_i is the angle of the vector from the rod's lower end to its centre;
hanging = pi/2), RK4 with dt = 1e-3 over 0..2 s, as in the seed.  Fig. 4 (models.md M5, the branch system,
N = 999: 500 bodies, 1500 DOF): the rotation about the z axis of bodies 1, 11 and N from their initial
orientation.  The seed compares with ADAMS (stars); here the stars are the foundation's recursive O(n)
solver, integrated with the same RK4 steps, and the largest difference is printed and written into the
figure.  Writes, in --out-dir (default results/):
    mstmm_fig3_m1.png, mstmm_m1.npz          (the NPZ carries the joint wrenches: joint_wrench, joint_names)
    mstmm_fig4_m5_N{N}.png, mstmm_m5_N{N}.npz
"""
import argparse
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))          # run from a checkout without installing

import codegen  # noqa: E402
from codegen.models import branch_system  # noqa: E402


def _plt():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


def m1_angles(res):
    """Seed angles (theta_1, theta_3, theta_5, theta_7) from the relative revolute coordinates of
    codegen.models.balance_pendulum: th7 = q7, th1 = q7 + q1, th5 = q7 + q5, th3 = q7 + q5 + q3."""
    q = {n.split(".")[0]: res.coord(n) for n in res.coord_names}
    th7 = q["pin7"]
    return {1: th7 + q["hinge1"], 3: th7 + q["hinge5"] + q["hinge3"], 5: th7 + q["hinge5"], 7: th7}


def z_rotation(res, body):
    """Rotation angle about z of a body from its initial orientation (unwrapped), and the largest tilt
    of its z axis (0 for motion in the x-y plane)."""
    k = res.body_names.index(body)
    w, x, y, z = res.body_quat[:, k].T
    R = np.empty((len(w), 3, 3))
    R[:, 0, 0], R[:, 0, 1], R[:, 0, 2] = 1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)
    R[:, 1, 0], R[:, 1, 1], R[:, 1, 2] = 2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)
    R[:, 2, 0], R[:, 2, 1], R[:, 2, 2] = 2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)
    Rrel = R @ R[0].T
    ang = np.unwrap(np.arctan2(Rrel[:, 1, 0], Rrel[:, 0, 0]))
    tilt = float(np.max(np.abs(Rrel[:, 2, :2])))
    return ang, tilt


def _run(model, t_end, dt):
    bar = sys.stderr.isatty()
    mst = codegen.build(model, "mstmm", progress=bar)
    rec = codegen.build(model, "recursive", ref_point="origin", progress=bar)
    a = mst.simulate(t_end, dt, "rk4", progress=bar, joint_wrench=True)     # wrenches from the MSTMM states
    b = rec.simulate(t_end, dt, "rk4", progress=bar)
    return mst, a, b


def fig3(out_dir, t_end=2.0, dt=1e-3):
    model = codegen.load_model(os.path.join(HERE, "balance_pendulum.yaml"))
    mst, a, b = _run(model, t_end, dt)
    npz = a.save(os.path.join(out_dir, "mstmm_m1.npz"))
    ta, tb = m1_angles(a), m1_angles(b)
    diff = max(float(np.max(np.abs(ta[i] - tb[i]))) for i in ta)
    plt = _plt()
    fig, ax = plt.subplots(figsize=(7.5, 4.8))
    every = max(1, len(a.t) // 40)
    for i, col in zip((1, 3, 5, 7), ("C0", "C1", "C2", "C3")):
        ax.plot(a.t, ta[i], color=col, lw=1.4, label=fr"$\theta_{i}$ (mstmm)")
        ax.plot(b.t[::every], tb[i][::every], "*", color=col, ms=6)
    ax.plot([], [], "k*", label="recursive O(n) solver")
    ax.set_xlabel("t [s]")
    ax.set_ylabel("absolute angle [rad]")
    ax.set_title(f"M1 balance pendulum, RK4 dt = {dt:g} s (cf. Rui et al. 2020, Fig. 3)\n"
                 f"max |theta_mstmm - theta_recursive| = {diff:.1e} rad", fontsize=9)
    ax.legend(fontsize=8, ncol=3)
    fig.tight_layout()
    png = os.path.join(out_dir, "mstmm_fig3_m1.png")
    fig.savefig(png, dpi=120)
    plt.close(fig)
    F = a.extra["joint_wrench"][:, a.body_names.index("body7"), :3]     # in the joint frame: |F| is the same
    print(f"Fig. 3: {png}\n  M1, {len(a.t) - 1} RK4 steps: mstmm {a.meta['wall_time_s']:.3f} s, recursive "
          f"{b.meta['wall_time_s']:.3f} s; max angle difference {diff:.2e} rad\n"
          f"  theta(2 s) = " + ", ".join(f"th{i} {ta[i][-1]:+.6f}" for i in (1, 3, 5, 7)) +
          f"\n  pivot reaction of body 7: |F| in [{np.linalg.norm(F, axis=1).min():.3f}, "
          f"{np.linalg.norm(F, axis=1).max():.3f}] N\n  results (with joint_wrench): {npz}")
    return diff


def fig4(out_dir, N=999, t_end=2.0, dt=1e-3):
    if N == 999 and os.path.exists(os.path.join(HERE, "branch_system.yaml")):
        model = codegen.load_model(os.path.join(HERE, "branch_system.yaml"))
    else:
        model = branch_system(N)
    mst, a, b = _run(model, t_end, dt)
    npz = a.save(os.path.join(out_dir, f"mstmm_m5_N{N}.npz"))
    names = ["body1", "body11", f"body{N}"]
    rows = []
    plt = _plt()
    fig, (ax, ax2) = plt.subplots(2, 1, figsize=(7.5, 7.5), gridspec_kw={"height_ratios": [3, 2]})
    every = max(1, len(a.t) // 40)
    diff = 0.0
    for name, col in zip(names, ("C0", "C1", "C2")):
        ra, tilt = z_rotation(a, name)
        rb, _ = z_rotation(b, name)
        d = float(np.max(np.abs(ra - rb)))
        diff = max(diff, d)
        rows.append(f"  {name}: rotation about z at {t_end:g} s {ra[-1]:+.6e} rad, range [{ra.min():+.3e}, "
                    f"{ra.max():+.3e}], out-of-plane tilt {tilt:.1e}, |mstmm - recursive| {d:.1e}")
        ax.plot(a.t, ra, color=col, lw=1.4, label=f"{name} (mstmm)")
        ax.plot(b.t[::every], rb[::every], "*", color=col, ms=6)
    ax.plot([], [], "k*", label="recursive O(n) solver")
    ax.set_xlabel("t [s]")
    ax.set_ylabel("rotation about z [rad]")
    ax.set_title(f"M5 branch system N = {N}: {len(model.bodies)} bodies, {model.nv} DOF, RK4 dt = {dt:g} s "
                 f"(cf. Rui et al. 2020, Fig. 4)\nmax |mstmm - recursive| = {diff:.1e} rad", fontsize=9)
    ax.legend(fontsize=8)
    # how far up the main chain the motion has travelled: max |rotation about z| of every body
    nums = sorted(int(n[4:]) for n in a.body_names)
    peak = np.array([np.max(np.abs(z_rotation(a, f"body{k}")[0])) for k in nums])
    ax2.semilogy(nums, np.maximum(peak, 1e-300), ".", ms=3)
    ax2.set_ylim(1e-18, 10)
    ax2.set_xlabel("body number (1 ... 9: subchains, 11: multi-input body, 13 ... N: up to the ceiling)")
    ax2.set_ylabel(f"max |rotation about z|\nover 0..{t_end:g} s [rad]")
    fig.tight_layout()
    png = os.path.join(out_dir, f"mstmm_fig4_m5_N{N}.png")
    fig.savefig(png, dpi=120)
    plt.close(fig)
    steps = len(a.t) - 1
    print(f"Fig. 4: {png}\n  M5 N = {N} ({model.nv} DOF), {steps} RK4 steps: mstmm {a.meta['wall_time_s']:.2f} s "
          f"({1e3 * a.meta['wall_time_s'] / steps:.3f} ms/step), recursive {b.meta['wall_time_s']:.2f} s "
          f"({1e3 * b.meta['wall_time_s'] / steps:.3f} ms/step)\n" + "\n".join(rows) +
          f"\n  bodies that rotated by more than 1e-12 rad: up to body{max(k for k, v in zip(nums, peak) if v > 1e-12)}"
          f"\n  results: {npz}")
    return diff


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--fig", choices=["3", "4", "all"], default="all")
    ap.add_argument("--n", type=int, default=999, help="M5: last (odd) body number N >= 13 (default 999)")
    ap.add_argument("--t-end", type=float, default=2.0)
    ap.add_argument("--dt", type=float, default=1e-3)
    ap.add_argument("--out-dir", default="results")
    a = ap.parse_args(argv)
    os.makedirs(a.out_dir, exist_ok=True)
    if a.fig in ("3", "all"):
        fig3(a.out_dir, a.t_end, a.dt)
    if a.fig in ("4", "all"):
        fig4(a.out_dir, a.n, a.t_end, a.dt)
    return 0


if __name__ == "__main__":
    sys.exit(main())
