"""Model M6 (chassis-fixed quarter car, double wishbone closed by two spherical cut joints): the motion behind
Kang & Yoon's Table 5 at the three analysis reference points.

    python examples/quarter_car_figures.py                       # 0..2 s, RK4, dt = 1e-3 (+ builds the first time)
    python examples/quarter_car_figures.py --out /tmp/m6 --ref-points origin

Simulates examples/quarter_car.yaml with the recursive method at each analysis reference point (centroid,
joint, origin; System.simulate, RK4, Baumgarte's default stabilisation) from the design configuration, at
rest, the wheel spinning at +10 rad/s. The pre-tensioned strut lifts the wheel: models.md (M6) expects a rise
of about 81 mm that settles about 69 mm above the design height.

Writes into --out (default results/quarter_car; every file atomically):
    wheel_height.png        wheel centre height above design (body_com of wheel, z - 0.15), every reference point
                            overlaid, and the running max of their difference from the first (log)
    strut_cut_forces.png    strut length (chassis point to LCA point) and the cut joint forces |f| per cut
                            (force part of result.extra["cut_joint_wrench"], side i on side j)
    quarter_car_<ref>.npz   the results
    summary.txt             max rise, final height, differences between the reference points, drift, energy
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

REF_POINTS = ("centroid", "joint", "origin")
DESIGN_Z = 0.15            # wheel centre W = (0, 0.75, 0.15) at the design configuration


def save_fig(fig, path):
    atomic_write(path, lambda fh: fig.savefig(fh, format="png", dpi=120))


def quat_matrix(qt):
    """(..., 4) unit quaternions w, x, y, z -> (..., 3, 3) rotation matrices (body frame to world)."""
    w, x, y, z = np.moveaxis(qt / np.linalg.norm(qt, axis=-1, keepdims=True), -1, 0)
    return np.stack([np.stack([1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)], -1),
                     np.stack([2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)], -1),
                     np.stack([2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)], -1)], -2)


def world_point(model, res, body, pt):
    """(nt, 3) world position of the point pt (body frame) of body ('ground': fixed)."""
    pt = np.asarray(pt, float)
    if body == "ground":
        return np.broadcast_to(pt, (len(res.t), 3))
    i = res.body_names.index(body)
    R = quat_matrix(res.body_quat[:, i])
    return res.body_com[:, i] + R @ (pt - np.asarray(model.body(body).com, float))


def main(argv=None):
    ap = argparse.ArgumentParser(description="M6 quarter car: wheel height, strut and cut joint forces at the "
                                             "three analysis reference points")
    ap.add_argument("--out", default=os.path.join("results", "quarter_car"), help="output folder")
    ap.add_argument("--t-end", type=float, default=2.0, help="simulated time [s] (models.md: 2)")
    ap.add_argument("--dt", type=float, default=1e-3, help="RK4 step and sample interval [s]")
    ap.add_argument("--ref-points", nargs="+", choices=REF_POINTS, default=list(REF_POINTS))
    a = ap.parse_args(argv)
    if not a.t_end > 0 or not a.dt > 0 or a.dt > a.t_end:
        ap.error(f"need 0 < --dt <= --t-end, got --dt {a.dt} --t-end {a.t_end}")
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    model = codegen.load_model(os.path.join(HERE, "quarter_car.yaml"))
    runs = {}
    for p in a.ref_points:
        s = codegen.build(model, "recursive", ref_point=p)
        runs[p] = s.simulate(a.t_end, a.dt, integrator="rk4")
    first = runs[a.ref_points[0]]
    t = first.t
    iw = first.body_names.index("wheel")
    height = {p: r.body_com[:, iw, 2] - DESIGN_Z for p, r in runs.items()}
    strut = model.point_springs[0]
    length = {p: np.linalg.norm(world_point(model, r, strut.body_b, strut.point_b)
                                - world_point(model, r, strut.body_a, strut.point_a), axis=1) for p, r in runs.items()}
    cuts = [str(n) for n in first.extra["cut_joint_names"]]
    fcut = {p: np.linalg.norm(r.extra["cut_joint_wrench"][..., :3], axis=2) for p, r in runs.items()}
    diff = {p: np.abs(height[p] - height[a.ref_points[0]]) for p in a.ref_points[1:]}
    os.makedirs(a.out, exist_ok=True)

    styles = {"centroid": dict(lw=2.4, alpha=0.6), "joint": dict(lw=1.4, ls="--"), "origin": dict(lw=1.0, ls=":")}
    fig, (a1, a2) = plt.subplots(2, 1, figsize=(8, 6.5), sharex=True, gridspec_kw={"height_ratios": [2, 1]})
    for p in a.ref_points:
        a1.plot(t, 1e3 * height[p], label=p, **styles[p])
    a1.axhline(81, color="gray", lw=0.6, ls="--")
    a1.axhline(69, color="gray", lw=0.6, ls="-.")
    a1.set(ylabel="wheel centre z - 0.15 [mm]",
           title=f"M6 quarter car: wheel centre above design (RK4, dt = {a.dt:g} s; grey: 81, 69 mm)")
    a1.legend(title="reference point", fontsize=8)
    for p, d in diff.items():
        a2.semilogy(t, np.maximum(1e3 * np.maximum.accumulate(d), 1e-16), label=f"|{p} - {a.ref_points[0]}|",
                    **styles[p])
    a2.set(xlabel="t [s]", ylabel="running max [mm]",
           title="Difference of the wheel height between the reference points (running max; round-off)")
    if diff:
        a2.legend(fontsize=8)
    for ax in (a1, a2):
        ax.grid(True, alpha=0.3)
    fig.tight_layout()
    save_fig(fig, os.path.join(a.out, "wheel_height.png"))
    plt.close(fig)

    fig, (a1, a2) = plt.subplots(2, 1, figsize=(8, 6.5), sharex=True)
    for p in a.ref_points:
        a1.plot(t, 1e3 * length[p], label=p, **styles[p])
    a1.axhline(1e3 * strut.length, color="gray", lw=0.6, ls="--")
    a1.set(ylabel="strut length [mm]", title=f"Strut {strut.name} (free length {1e3 * strut.length:g} mm, grey)")
    a1.legend(title="reference point", fontsize=8)
    for c, n in enumerate(cuts):
        for p in a.ref_points:
            a2.plot(t, fcut[p][:, c], color=f"C{c}", label=f"{n} ({p})", **styles[p])
    a2.set(xlabel="t [s]", ylabel="|f| [N]", title="Cut joint forces (force part of cut_joint_wrench)")
    a2.legend(fontsize=7, ncol=2)
    for ax in (a1, a2):
        ax.grid(True, alpha=0.3)
    fig.tight_layout()
    save_fig(fig, os.path.join(a.out, "strut_cut_forces.png"))
    plt.close(fig)
    for p, r in runs.items():
        r.save(os.path.join(a.out, f"quarter_car_{p}.npz"))

    h0 = height[a.ref_points[0]]
    k = int(np.argmax(h0))
    lines = [f"M6 quarter car, recursive, RK4, dt = {a.dt:g} s, t_end = {a.t_end:g} s, reference points "
             f"{', '.join(a.ref_points)}, Baumgarte {first.meta['baumgarte']:g} 1/s",
             f"wheel centre height above design: max rise {1e3 * h0.max():.2f} mm at t = {t[k]:.3f} s, final "
             f"{1e3 * h0[-1]:.2f} mm (models.md: about 81 mm, about 69 mm)",
             f"strut length {1e3 * length[a.ref_points[0]].min():.2f} .. {1e3 * length[a.ref_points[0]].max():.2f} mm "
             f"(free length {1e3 * strut.length:g} mm), final {1e3 * length[a.ref_points[0]][-1]:.2f} mm",
             "cut joint forces |f|: " + "; ".join(
                 f"{n} {fcut[a.ref_points[0]][:, c].min():.1f} .. {fcut[a.ref_points[0]][:, c].max():.1f} N, final "
                 f"{fcut[a.ref_points[0]][-1, c]:.1f} N" for c, n in enumerate(cuts))]
    for p in a.ref_points[1:]:
        lines.append(f"{p} vs {a.ref_points[0]}: max |height difference| {diff[p].max():.3e} m, max |q difference| "
                     f"{np.abs(runs[p].q - first.q).max():.3e}, max |cut force difference| "
                     f"{np.abs(fcut[p] - fcut[a.ref_points[0]]).max():.3e} N")
    for p, r in runs.items():
        cvm, en = r.meta["constraint_violation_max"], r.meta["energy"]
        lines.append(f"{p}: max drift |Phi| {cvm['position']:.3e}, |Phi'| {cvm['velocity']:.3e}; energy error "
                     f"{en['value']:.3e} (damper work {en['work']:.4g} J); compiled-loop wall time "
                     f"{r.meta['wall_time_s']:.3f} s")
    text = "\n".join(lines) + "\n"
    atomic_write(os.path.join(a.out, "summary.txt"), lambda fh: fh.write(text.encode()))
    print(text + f"figures and summary in {a.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
