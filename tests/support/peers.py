"""Peer models for cross-checking the generated kernels: the same multibody system as a pinocchio Model
(any of our joint types, fixed or floating base) and a planar hinge chain as MuJoCo MJCF.

Only the plan's canonical numbers are used (``Plan.body_frames`` and ``Plan.params``), so the mapping
exercises the same placements and inertias the compiled kernels receive:

* body k's *reference frame* is its canonical child joint frame; its parent-side joint frame sits at
  (s, C) in the parent's reference frame (world for a ground parent) -> pinocchio ``jointPlacement``
  SE3(C, s), body inertia Inertia(m, rho, J') in the joint frame;
* canonical joint motions map onto pinocchio joints (composites keep our q and u exactly):
  revolute RZ, prismatic PZ, cylindrical RZ+PZ, universal RZ+RX, planar PX+PY+RZ, spherical
  Spherical (quaternion order w,x,y,z -> x,y,z,w), free Translation+Spherical (translation rate in the
  parent frame, body angular rate);
* fixed joints have no pinocchio counterpart in ABA: the body's inertia is appended to the supporting
  joint at the composed placement, and its children are placed relative to that joint.
"""
from __future__ import annotations

import numpy as np

from codegen.algorithms.tree_plan import Plan, body_numbers


def _pin():
    import pinocchio as pin
    return pin


def _joint_model(jtype: str):
    pin = _pin()

    def composite(*parts):
        jc = pin.JointModelComposite()
        for p in parts:
            jc.addJoint(p)
        return jc

    if jtype == "revolute":
        return pin.JointModelRZ()
    if jtype == "prismatic":
        return pin.JointModelPZ()
    if jtype == "cylindrical":
        return composite(pin.JointModelRZ(), pin.JointModelPZ())
    if jtype == "universal":
        return composite(pin.JointModelRZ(), pin.JointModelRX())
    if jtype == "planar":
        return composite(pin.JointModelPX(), pin.JointModelPY(), pin.JointModelRZ())
    if jtype == "spherical":
        return pin.JointModelSpherical()
    if jtype == "free":
        return composite(pin.JointModelTranslation(), pin.JointModelSpherical())
    raise ValueError(f"no pinocchio joint for '{jtype}'")


class PinPeer:
    """A pinocchio model of one of our models plus the maps between the two conventions.

    Attributes: ``model`` (pinocchio Model), ``support[k]`` (pinocchio joint id carrying our body k) and
    ``placement[k]`` (SE3 of body k's reference frame in that joint's frame), ``kout[k]`` (user body
    frame orientation relative to the reference frame: R_user = R_ref @ kout[k]).
    """

    def __init__(self, model, mass_scale=None):
        pin = _pin()
        plan = Plan(model)
        p = plan.params()
        pm = pin.Model()
        pm.gravity = pin.Motion(np.asarray(model.gravity, float), np.zeros(3))
        self.support, self.placement, self.kout, self.rho, self.quat_slices = [], [], [], [], []
        iq = 0
        for k, j in enumerate(model.joints):
            b = body_numbers(p, k)
            s, C = b["s"], b["C"]
            mass = b["m"] * (1.0 if mass_scale is None else mass_scale.get(k, 1.0))
            rho, Jc = b["rho"], b["J"]
            self.kout.append(b["Kout"])
            self.rho.append(rho.copy())
            par = plan.parent[k]
            if par < 0:
                parent_joint, parent_pl = 0, pin.SE3.Identity()
            else:
                parent_joint, parent_pl = self.support[par], self.placement[par]
            joint_pl = parent_pl * pin.SE3(C, s)          # canonical parent joint frame in parent_joint
            inertia = pin.Inertia(mass, rho, Jc)
            if j.type == "fixed":
                pm.appendBodyToJoint(parent_joint, inertia, joint_pl)
                self.support.append(parent_joint)
                self.placement.append(joint_pl)
            else:
                jid = pm.addJoint(parent_joint, _joint_model(j.type), joint_pl, j.name)
                pm.appendBodyToJoint(jid, inertia, pin.SE3.Identity())
                self.support.append(jid)
                self.placement.append(pin.SE3.Identity())
                assert pm.idx_qs[jid] == iq and pm.idx_vs[jid] == plan.iv[k], "coordinate order differs"
                if j.type == "spherical":
                    self.quat_slices.append(iq)
                elif j.type == "free":
                    self.quat_slices.append(iq + 3)
            iq += j.nq
        assert pm.nq == model.nq and pm.nv == model.nv
        self.model = pm
        self.data = pm.createData()
        self.nb = len(model.joints)

    # ------------------------------------------------------------ conventions
    def q(self, q) -> np.ndarray:
        """Our q -> pinocchio q: quaternions (w, x, y, z) -> (x, y, z, w)."""
        out = np.array(q, float, copy=True)
        for o in self.quat_slices:
            out[o:o + 4] = np.roll(out[o:o + 4], -1)
        return out

    # ------------------------------------------------------------ algorithms
    def aba(self, q, u, tau) -> np.ndarray:
        return np.array(_pin().aba(self.model, self.data, self.q(q), np.asarray(u, float),
                                   np.asarray(tau, float)))

    def rnea(self, q, u, udot) -> np.ndarray:
        return np.array(_pin().rnea(self.model, self.data, self.q(q), np.asarray(u, float),
                                    np.asarray(udot, float)))

    def crba(self, q) -> np.ndarray:
        M = np.array(_pin().crba(self.model, self.data, self.q(q)))
        return np.triu(M) + np.triu(M, 1).T           # pinocchio fills the upper triangle

    def body_poses(self, q):
        """World centroid (nb x 3) and user-body-frame rotation matrices (nb x 3 x 3)."""
        pin = _pin()
        pin.forwardKinematics(self.model, self.data, self.q(q))
        com, rot = np.zeros((self.nb, 3)), np.zeros((self.nb, 3, 3))
        for k in range(self.nb):
            oMb = self.data.oMi[self.support[k]] * self.placement[k]
            com[k] = oMb.act(self.rho[k])
            rot[k] = oMb.rotation @ self.kout[k]
        return com, rot


def to_pinocchio(model, mass_scale=None):
    """(pinocchio Model, q_map): q_map converts our q to pinocchio's. ``mass_scale`` {body index: factor}
    perturbs masses (for checking that the comparisons can fail)."""
    peer = PinPeer(model, mass_scale)
    return peer.model, peer.q


def rel_err(a, b) -> float:
    """max |a - b| / max |b| (b is the reference)."""
    a, b = np.asarray(a, float), np.asarray(b, float)
    return float(np.max(np.abs(a - b)) / max(np.max(np.abs(b)), 1e-300))


# ---------------------------------------------------------------- MuJoCo

def chain_mjcf(n: int, m: float = 1.0, L: float = 1.0, gravity=(0.0, -9.81, 0.0)) -> str:
    """MJCF of ``codegen.models.chain(n, m, L)``: thin rods on hinges about z, link frames at the rod centres.

    Body k sits at (L, 0, 0) in body k-1 (at (L/2, 0, 0) in the world for k = 1), its hinge at
    (-L/2, 0, 0) in its own frame, so qpos = 0 is the straight chain along +x with the same relative
    angles as ours (a MuJoCo hinge rotates the child about the axis through its anchor, right-handed,
    qpos measured from the reference configuration). Contacts, constraints, damping and armature are
    off, so mj_forward's qacc is the unconstrained M^-1 (qfrc_applied - bias).
    """
    from codegen.models import AXIAL
    inertia = f"{AXIAL * m * L * L!r} {m * L * L / 12!r} {m * L * L / 12!r}"
    g = " ".join(repr(float(x)) for x in gravity)
    body = ""
    for k in range(n, 0, -1):
        pos = f"{L / 2!r} 0 0" if k == 1 else f"{L!r} 0 0"
        body = (f'<body name="link{k}" pos="{pos}">'
                f'<joint name="j{k}" type="hinge" axis="0 0 1" pos="{-L / 2!r} 0 0" damping="0" armature="0" '
                f'stiffness="0" limited="false"/>'
                f'<inertial pos="0 0 0" mass="{m!r}" diaginertia="{inertia}"/>{body}</body>')
    return (f'<mujoco model="chain{n}"><compiler angle="radian" inertiafromgeom="false"/>'
            f'<option gravity="{g}"><flag contact="disable" constraint="disable" spring="disable" damper="disable"/></option>'
            f'<worldbody>{body}</worldbody></mujoco>')


# ---------------------------------------------------------------- models and parallel builds

def make_model(spec):
    """('random_tree', n, seed, floating) | ('humanoid',) | ('arm7',) | ('chain', n) -> a fresh Model."""
    from codegen import models
    kind, *args = spec
    if kind == "random_tree":
        n, seed, floating = args
        return models.random_tree(n, seed, floating=floating)
    if kind == "chain":
        return models.chain(*args)
    return getattr(models, kind)()


def _missing(jobs):
    from codegen.compiler import build_key, default_cache_dir, resolve_options
    cache = default_cache_dir()
    out = []
    for spec, algorithm, ref_point in jobs:
        opts = resolve_options(algorithm, **({} if ref_point is None else {"ref_point": ref_point}))
        key = build_key(make_model(spec), algorithm, opts)
        if not any((cache / key).glob(f"mbgen_{algorithm}_{key}*.so")):
            out.append((list(spec), algorithm, ref_point))
    return out


def prebuild(jobs, workers=None):
    """Compile the kernels of ``jobs`` [(model spec, algorithm, ref_point)] that are not cached yet, spread over
    ``workers`` subprocesses (default: the CPU count, at most 4). Failures are left to the caller's own
    ``codegen.build``, which raises with the compiler's message; this only saves wall time."""
    import json
    import os
    import subprocess
    import sys
    if os.environ.get("PYTEST_XDIST_WORKER"):
        return 0          # under xdist the other workers keep the cores busy: build in-process, with warm sympy caches
    todo = _missing(jobs)
    if not todo:
        return 0
    workers = max(1, min(len(todo), workers or min(4, os.cpu_count() or 1)))
    here = os.path.dirname(os.path.abspath(__file__))
    script = ("import json, sys; sys.path.insert(0, sys.argv[1]); import codegen, peers\n"
              "for spec, alg, ref in json.loads(sys.argv[2]):\n"
              "    try:\n"
              "        codegen.build(peers.make_model(spec), algorithm=alg, ref_point=ref)\n"
              "    except Exception as e:\n"
              "        print('prebuild failed:', spec, alg, ref, e, file=sys.stderr)\n")
    procs = [subprocess.Popen([sys.executable, "-c", script, here, json.dumps(todo[w::workers])])
             for w in range(workers)]
    for p in procs:
        p.wait()
    return len(todo)
