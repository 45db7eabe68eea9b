"""Every MJCF model of gymnasium's MuJoCo environments (and dm_control's suite when installed) against MuJoCo itself.

Each file is loaded with ``codegen.load_model(path, ignore_contacts=True)`` (armature, joint damping and springs,
actuators and joint limits come from the file), compiled (recursive kernel) and compared with ``mj_forward``'s
qacc with contacts and constraints disabled, at random states with every limited joint inside its range (no limit
active) and random controls inside each ctrlrange: the largest relative error max |ours - MuJoCo| / max |MuJoCo|.
A file that does not load gets the refusal message instead. Writes docs/robots-mujoco.md.

    python benchmarks/mujoco_models.py [--states 20] [--out docs/robots-mujoco.md] [--dm-control-suite DIR]
"""
from __future__ import annotations

import argparse
import datetime
import glob
import os
import platform
import sys
import warnings

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

import codegen                      # noqa: E402
from codegen.model import ModelError  # noqa: E402

TOL = 1e-8


def model_files(extra=()):
    """(package, path) of every MJCF model found: gymnasium's assets, dm_control's suite (installed, or a folder given
    with --dm-control-suite, e.g. from `pip download dm_control --no-deps`: the package pins its own MuJoCo)."""
    out = [("dm_control", p) for d in extra for p in sorted(glob.glob(os.path.join(d, "*.xml")))]
    try:
        import gymnasium
        out += [("gymnasium", p) for p in sorted(glob.glob(os.path.join(os.path.dirname(gymnasium.__file__), "envs",
                                                                        "mujoco", "assets", "*.xml")))]
    except ImportError:
        pass
    try:
        import dm_control
        suite = os.path.join(os.path.dirname(dm_control.__file__), "suite")
        out += [("dm_control", p) for p in sorted(glob.glob(os.path.join(suite, "*.xml")))]
    except ImportError:
        pass
    return out


def random_inputs(mj, rng):
    """A state with every limited hinge and slide inside its range, free quaternions normalised, and controls
    inside each ctrlrange."""
    q = np.array(mj.qpos0, float)
    for j in range(mj.njnt):
        a, t = mj.jnt_qposadr[j], mj.jnt_type[j]
        if t in (2, 3):
            lo, hi = mj.jnt_range[j] if mj.jnt_limited[j] else (-1.0, 1.0)
            q[a] = rng.uniform(lo + 0.05 * (hi - lo), hi - 0.05 * (hi - lo))
        elif t in (0, 1):
            o = 3 if t == 0 else 0
            quat = rng.normal(size=4)
            q[a + o:a + o + 4] = quat / np.linalg.norm(quat)
    lo = np.where(mj.actuator_ctrllimited, mj.actuator_ctrlrange[:, 0], -1.0)
    hi = np.where(mj.actuator_ctrllimited, mj.actuator_ctrlrange[:, 1], 1.0)
    return q, rng.normal(size=mj.nv), rng.uniform(lo, hi)


def check(path, states, seed=0):
    import mujoco
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = codegen.load_model(path, ignore_contacts=True)
    friction = [j.name for j in m.joints if j.friction is not None]
    for j in m.joints:                   # MuJoCo's frictionloss is a constraint: off in the comparison, off here
        j.friction = None
    ncuts, m.cuts = len(m.cuts) + len(m.couplings), []      # so are its equality constraints (connect, weld,
    m.couplings = []                                       # joint and tendon couplings)
    s = codegen.build(m)
    mj = mujoco.MjModel.from_xml_path(path)
    mj.opt.disableflags |= int(mujoco.mjtDisableBit.mjDSBL_CONTACT) | int(mujoco.mjtDisableBit.mjDSBL_CONSTRAINT)
    d = mujoco.MjData(mj)
    rng = np.random.default_rng(seed)
    worst = 0.0
    for _ in range(states):
        q, u, c = random_inputs(mj, rng)
        act = rng.uniform(-1, 1, mj.na)                    # activation states (MuJoCo's act), if any
        d.qpos[:], d.qvel[:], d.ctrl[:], d.act[:] = q, u, c, act
        mujoco.mj_forward(mj, d)
        if s.na:
            s.set_act(act)
        a = s.forward_dynamics(q, u, ctrl=c if m.actuators else None)
        worst = max(worst, float(np.max(np.abs(a - d.qacc)) / max(np.max(np.abs(d.qacc)), 1e-300)))
        if s.na:
            worst = max(worst, float(np.max(np.abs(s.act_rates(q, u, ctrl=c) - d.act_dot))
                                     / max(np.max(np.abs(d.act_dot)), 1e-300)))
    return m, worst, friction, ncuts


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--states", type=int, default=20)
    ap.add_argument("--out", default=os.path.join(os.path.dirname(HERE), "docs", "robots-mujoco.md"))
    ap.add_argument("--dm-control-suite", nargs="*", default=[], metavar="DIR",
                    help="folders of dm_control suite XML files (dm_control/suite of an unpacked wheel)")
    args = ap.parse_args(argv)
    import mujoco
    rows, ok = [], 0
    files = model_files(args.dm_control_suite)
    for pkg, path in files:
        name = os.path.splitext(os.path.basename(path))[0]
        try:
            m, err, friction, ncuts = check(path, args.states)
            status = "ok" if err < TOL else "DIFFERS"
            ok += err < TOL
            extra = [f"{len(m.actuators)} actuators"] if m.actuators else []
            extra += ["armature"] if np.any(m.armature) else []
            extra += [f"{sum(j.limits is not None for j in m.joints)} limited joints"] if any(
                j.limits is not None for j in m.joints) else []
            extra += [f"{len(m.tendons)} fixed tendons"] if m.tendons else []
            extra += [f"{ncuts} equality constraints (not compared)"] if ncuts else []
            extra += [f"{sum(a.stateful for a in m.actuators)} activation states"] if any(
                a.stateful for a in m.actuators) else []
            extra += [f"friction loss on {len(friction)} joints (a constraint in MuJoCo: not compared)"] if friction \
                else []
            rows.append(f"| {pkg} | {name} | {len(m.bodies)} | {m.nq} | {m.nv} | {err:.1e} | {status} | "
                        f"{', '.join(extra)} |")
        except ModelError as e:
            why = str(e).split("cannot be simulated as it is: ")[-1].replace("|", "/")
            rows.append(f"| {pkg} | {name} | | | | | refused | {why} |")
        print(rows[-1], flush=True)
    head = [
        "# MJCF models of gymnasium and dm_control against MuJoCo",
        "",
        "Generated by `python benchmarks/mujoco_models.py` (do not edit by hand). Every MJCF file of the installed "
        "packages is loaded with `codegen.load_model(path, ignore_contacts=True)` (armature, joint damping and "
        "springs, actuators and joint limits from the file), compiled (recursive kernel) and compared with MuJoCo "
        f"{mujoco.__version__}'s `mj_forward` qacc, contacts and constraints disabled, at {args.states} random "
        "states (every limited joint inside its range: no limit active), random controls inside each "
        "ctrlrange and random activations: the largest relative error of the accelerations and of the activation "
        f"rates (act_dot), tolerance {TOL:g}. Friction loss and "
        "equality constraints (connect, weld, joint and tendon couplings) are constraints of MuJoCo's solver, "
        "disabled in the comparison: left out on our side "
        "too (their own checks: tests/runtime/test_limits.py, tests/model/test_mjcf_actuators.py). Refusals name "
        "what is not modelled.",
        "",
        f"Run of {datetime.date.today()} on {platform.machine()} (Python {platform.python_version()}): "
        f"{len(files)} files, {ok} agree.",
        "",
        "| package | model | bodies | nq | nv | max rel err | status | notes |",
        "|---|---|---:|---:|---:|---:|---|---|",
    ]
    with open(args.out, "w") as fh:
        fh.write("\n".join(head + rows) + "\n")
    print(f"wrote {args.out}: {ok} of {len(files)} agree")
    return 0 if ok == sum(r.split("|")[7].strip() != "refused" for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
