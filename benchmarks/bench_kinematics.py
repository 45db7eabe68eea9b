#!/usr/bin/env python
"""Frames, Jacobians, centre of mass and centroidal terms per call from Python against pinocchio (issue 45).

For each robot (example-robot-data URDF files: the Panda arm with a fixed base, the Unitree G1 humanoid with a
free base; and a 50-link chain written as URDF) the script loads the file with ``codegen.load_model`` and builds
the recursive kernel, builds pinocchio's model from the same file (``pin.buildModelFromUrdf``; tests/support/robots
``UrdfPeer`` maps the coordinates), checks every quantity of tests/support/kinematics ``compare`` against pinocchio
at random states (1e-9), then times, through Python, with the batches of every runner interleaved round robin
(medians of the calling thread's CPU time per call), each quantity for the robot's last link:

  ours                                          pinocchio (what its user calls for the same numbers)
  frame_placement(q, f)                         forwardKinematics(q) + updateFramePlacement(f)
  frame_velocity(q, u, f)                       forwardKinematics(q, v) + getFrameVelocity(f, LOCAL)
  frame_classical_acceleration(q, u, ud, f, "local_world_aligned")
                                                forwardKinematics(q, v, a) + getFrameClassicalAcceleration(f, LWA)
  frame_jacobian(q, f, "local_world_aligned")   computeFrameJacobian(q, f, LWA)
  frame_jacobian_dot(q, u, f, ...)              computeJointJacobiansTimeVariation(q, v) + getFrameJacobianTimeVariation
  center_of_mass(q)                             centerOfMass(q)
  com_jacobian(q)                               jacobianCenterOfMass(q)
  centroidal(q, u)  (A_G, its rate, h_G, I_G)   dccrba(q, v)  (Ag, dAg, hg, Ig)
  mass_matrix(q)                                crba(q)
  compute_all_terms(q, u)                       computeAllTerms(q, v)

pinocchio's calls include reading the numbers ours return (``oMf.rotation`` and ``.translation``, ``.vector`` of a
Motion, ``data.Ag``, ``data.hg``, ``data.Ig`` after dccrba, the fields of computeAllTerms), as its user does;
and our batches per row (frame_placement_batch, frame_jacobian_batch, center_of_mass_batch over 1000 rows: one
compiled loop). pinocchio's own compiled loops (C++) are not timed here: this machine has pinocchio's Python
package, and its per-call numbers include its boost.python call (about 1 µs), as ours include Cython's.
Writes results/kinematics.{json,md}.

    python benchmarks/bench_kinematics.py
    python benchmarks/bench_kinematics.py --quick
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "tests"))

import codegen  # noqa: E402
from bench_calls import _us, python_batch, run_lines  # noqa: E402
from bench_recursive import estimate, interleaved, machine_info  # noqa: E402

TOL = 1e-9
ROWS = 1000


def log(*a):
    print(*a, flush=True)


def _se3(M):
    return M.rotation, M.translation


def chain_urdf(n: int) -> str:
    """A chain of n rods (1 kg, 0.5 m, revolute joints about alternating axes) as a URDF file."""
    links = ['<link name="base"/>']
    joints = []
    for k in range(n):
        links.append(f'<link name="l{k}"><inertial><origin xyz="0.25 0 0"/><mass value="1"/>'
                     f'<inertia ixx="0.001" iyy="0.02" izz="0.02" ixy="0" ixz="0" iyz="0"/></inertial></link>')
        axis = ("0 0 1", "0 1 0", "1 0 0")[k % 3]
        joints.append(f'<joint name="j{k}" type="continuous"><parent link="{"base" if k == 0 else f"l{k - 1}"}"/>'
                      f'<child link="l{k}"/><origin xyz="{0 if k == 0 else 0.5} 0 0"/><axis xyz="{axis}"/></joint>')
    path = os.path.join(tempfile.gettempdir(), f"mbgen_bench_chain{n}.urdf")
    Path(path).write_text(f'<robot name="chain{n}">' + "".join(links + joints) + "</robot>")
    return path


def robots(quick: bool):
    from support.robots import robot_files
    files = robot_files()
    out = [("panda", files["panda"], False), ("g1 (floating)", files["g1_29dof_rev_1_0"], True)]
    if not quick:
        out.append(("chain(50)", chain_urdf(50), False))
    return out


def bench_robot(name, path, floating, args, cfg) -> dict:
    import pinocchio as pin
    from support.kinematics import compare
    from support.robots import UrdfPeer, load, random_states
    m = load(path, floating)
    s = codegen.build(m, "recursive", cache_dir=args.cache_dir)
    peer = UrdfPeer(path, floating, [(j.name, j.type) for j in m.joints])
    pm, pd = peer.model, peer.data
    states = [(q, u, tau) for q, u, tau in random_states(m, 3, seed=args.seed)]
    links = [x for x in s.frames if x in m.frames and pm.existFrame(x)]
    depth = [np.count_nonzero(np.abs(s.frame_jacobian(states[0][0], x)).sum(axis=0)) for x in links]
    f = links[int(np.argmax(depth))]                    # a frame on the deepest body (the end effector, the tip)
    fid = pm.getFrameId(f)
    worst = compare(s, peer, {f: fid}, states)
    bad = {k: v for k, v in worst.items() if not v <= TOL}
    if bad:
        raise RuntimeError(f"VERIFICATION FAILED: {name}: {bad}")
    log(f"  {name}: nq {s.nq}, nv {s.nv}, {len(s.frames)} frames; {len(worst)} quantities checked against "
        f"pinocchio, worst {max(worst.values()):.1e}; timing frame {f!r}")
    q, u, _ = states[0]
    ud = np.random.default_rng(args.seed).normal(size=s.nv)
    T = peer.T(q)
    qp, v, a = peer.q_pin(q), T @ u, T @ ud + peer.c(q, u)
    LWA = pin.LOCAL_WORLD_ALIGNED
    pairs = {
        "frame placement": (lambda: s.frame_placement(q, f),
                            lambda: _se3(pin.forwardKinematics(pm, pd, qp) or pin.updateFramePlacement(pm, pd, fid))),
        "frame velocity": (lambda: s.frame_velocity(q, u, f),
                           lambda: (pin.forwardKinematics(pm, pd, qp, v),
                                    pin.getFrameVelocity(pm, pd, fid, pin.LOCAL).vector)),
        "classical acceleration": (
            lambda: s.frame_classical_acceleration(q, u, ud, f, "local_world_aligned"),
            lambda: (pin.forwardKinematics(pm, pd, qp, v, a),
                     pin.getFrameClassicalAcceleration(pm, pd, fid, LWA).vector)),
        "frame jacobian": (lambda: s.frame_jacobian(q, f, "local_world_aligned"),
                           lambda: pin.computeFrameJacobian(pm, pd, qp, fid, LWA)),
        "jacobian rate": (lambda: s.frame_jacobian_dot(q, u, f, "local_world_aligned"),
                          lambda: (pin.computeJointJacobiansTimeVariation(pm, pd, qp, v),
                                   pin.getFrameJacobianTimeVariation(pm, pd, fid, LWA))),
        "centre of mass": (lambda: s.center_of_mass(q), lambda: pin.centerOfMass(pm, pd, qp)),
        "com jacobian": (lambda: s.com_jacobian(q), lambda: pin.jacobianCenterOfMass(pm, pd, qp)),
        "centroidal (A_G, rate, h_G, I_G)": (lambda: s.centroidal(q, u),
                                             lambda: (pin.dccrba(pm, pd, qp, v), pd.Ag, pd.hg.vector, pd.Ig.matrix())),
        "mass matrix": (lambda: s.mass_matrix(q), lambda: pin.crba(pm, pd, qp)),
        "compute_all_terms": (lambda: s.compute_all_terms(q, u),
                              lambda: (pin.computeAllTerms(pm, pd, qp, v), pd.M, pd.nle, pd.J, pd.com[0], pd.vcom[0],
                                       pd.Jcom, pd.Ag, pd.hg.vector, pd.Ig.matrix())),
    }
    runners = {}
    for k, (ours, theirs) in pairs.items():
        runners[f"{k} ours"] = (python_batch(ours), estimate(ours, cfg["estimate_time"]))
        runners[f"{k} pin"] = (python_batch(theirs), estimate(theirs, cfg["estimate_time"]))
    rng = np.random.default_rng(args.seed + 1)
    Q = np.array([random_states(m, 1, seed=int(x))[0][0] for x in rng.integers(0, 1 << 30, 16)])
    Q = np.ascontiguousarray(np.tile(Q, (ROWS // 16 + 1, 1))[:ROWS])
    batches = {"frame_placement_batch": lambda: s.frame_placement_batch(Q, f),
               "frame_jacobian_batch": lambda: s.frame_jacobian_batch(Q, f, "local_world_aligned"),
               "center_of_mass_batch": lambda: s.center_of_mass_batch(Q)}
    for k, fn in batches.items():
        runners[f"{k} per row"] = (python_batch(fn), estimate(fn, cfg["estimate_time"]))
    t = interleaved(runners, cfg["batch_time"], args.repeats)
    for k in batches:
        for x in ("median", "min"):
            t[f"{k} per row"][x] /= ROWS
    row = {"robot": name, "nq": s.nq, "nv": s.nv, "frames": len(s.frames), "frame": f, "check": worst,
           "times": t, "ratios": {k: t[f"{k} ours"]["median"] / t[f"{k} pin"]["median"] for k in pairs}}
    return row


def markdown(doc) -> str:
    L = ["# Kinematics, centre of mass and centroidal terms per call from Python, ours against pinocchio", "",
         *run_lines(doc),
         f"- {doc['config']['repeats']} batches of ~{doc['config']['batch_time']} s per runner, interleaved round "
         "robin; medians in µs of the calling thread's CPU time per call. Every quantity checked against "
         f"pinocchio to {TOL:g} before timing (tests/support/kinematics.py). Ratio: ours / pinocchio (< 1: ours "
         "faster). The pinocchio column is what its user calls for the same numbers (see the script's docstring).",
         ""]
    for r in doc["rows"]:
        t = r["times"]
        L += [f"## {r['robot']} (nq {r['nq']}, nv {r['nv']}, {r['frames']} frames; frame `{r['frame']}`)", "",
              "| quantity | ours | pinocchio | ours / pinocchio |", "|---|---:|---:|---:|"]
        for k, ratio in r["ratios"].items():
            L.append(f"| {k} | {_us(t[f'{k} ours']['median'])} | {_us(t[f'{k} pin']['median'])} | {ratio:.2f} |")
        L += ["", "| batch (1000 rows, one compiled loop) | µs per row |", "|---|---:|"]
        for k in ("frame_placement_batch", "frame_jacobian_batch", "center_of_mass_batch"):
            L.append(f"| {k} | {_us(t[f'{k} per row']['median'])} |")
        L.append("")
    return "\n".join(L)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="the two robots, short batches")
    ap.add_argument("--repeats", type=int, default=None)
    ap.add_argument("--seed", type=int, default=45)
    ap.add_argument("--cache-dir", default=None)
    ap.add_argument("--out-dir", default=str(HERE / "results"))
    ap.add_argument("--out-name", default="kinematics")
    args = ap.parse_args(argv)
    args.repeats = args.repeats or (5 if args.quick else 11)
    cfg = {"batch_time": 0.01 if args.quick else 0.03, "estimate_time": 0.005 if args.quick else 0.02}
    doc = {"command": "python " + " ".join([os.path.relpath(__file__, os.getcwd())] + (sys.argv[1:] if argv is None
                                                                                         else argv)),
           "machine": machine_info(), "config": {**cfg, "repeats": args.repeats, "seed": args.seed}, "rows": []}
    out = Path(args.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    for name, path, floating in robots(args.quick):
        t0 = time.perf_counter()
        doc["rows"].append(bench_robot(name, path, floating, args, cfg))
        log(f"  {name}: " + ", ".join(f"{k} {v:.2f}" for k, v in doc["rows"][-1]["ratios"].items())
            + f"  ({time.perf_counter() - t0:.0f} s)")
        (out / f"{args.out_name}.json").write_text(json.dumps(doc, indent=1))
        (out / f"{args.out_name}.md").write_text(markdown(doc))
    log(markdown(doc))
    return 0


if __name__ == "__main__":
    sys.exit(main())
