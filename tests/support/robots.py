"""Robot files as peers: the robots of the example-robot-data package, and pinocchio models built straight from
the same URDF file (``pin.buildModelFromUrdf``, urdfdom's parser), mapped onto our coordinates by joint name.

Nothing here uses our plan or kernels: the peer reads the file itself. Conventions (pinocchio -> ours):

* revolute, prismatic: the same scalar; continuous (pinocchio RUB joints, nq 2): q = (cos a, sin a), v = rate;
* spherical (Spherical): q (qx, qy, qz, qw) against our (qw, qx, qy, qz); v = body angular velocity, as ours;
* free joint (FreeFlyer, ``root_joint`` or a URDF floating joint): q = (x, y, z, qx, qy, qz, qw) against our
  (x, y, z, qw, qx, qy, qz); v = (linear velocity in the *body* frame, angular in the body frame) against our
  (linear in the parent frame, angular in the body frame): v = T u, T = blockdiag(R^T, 1), and
  dv/dt = T du/dt + (-omega x v_lin, 0);
* mimic joints are independent joints (pinocchio's default, ``mimic=False``; load ours with mimic='independent').
"""
from __future__ import annotations

import importlib.metadata
import os
from pathlib import Path

import numpy as np


def robot_files(kinds=(".urdf",)):
    """Every robot file of the installed example-robot-data package: {name: path}, name the file's stem (made
    unique with its folder). Found through the distribution's file list (the package has no Python module)."""
    dist = importlib.metadata.distribution("example-robot-data")
    out = {}
    for f in dist.files or ():
        f = str(f)
        if "/robots/" in f and f.endswith(kinds):
            path = Path(dist.locate_file(f))
            name = path.stem
            if name in out:
                name = f"{path.parent.parent.name}/{name}"
            out[name] = str(path)
    return dict(sorted(out.items()))


def robots_dir() -> str:
    return str(importlib.metadata.distribution("example-robot-data").locate_file(
        "cmeel.prefix/share/example-robot-data/robots"))


def quat_to_rot(qw) -> np.ndarray:
    w, x, y, z = np.asarray(qw, float) / np.linalg.norm(qw)
    return np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
                     [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
                     [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)]])


def _pin_inertia(pin, m, com, J):
    """pin.Inertia without pinocchio's positivity check (files may give -5e-20 for a point mass)."""
    inertia = pin.Inertia.Zero()
    inertia.mass, inertia.lever, inertia.inertia = float(m), np.asarray(com, float), np.asarray(J, float)
    return inertia


class _Mapped:
    """A pinocchio model plus the map of our coordinates onto its own (joints matched by name)."""

    def _map(self, joints):
        pm = self.model
        self.data = pm.createData()
        self.layout, iq, iv = [], 0, 0
        for name, jt in joints:
            if jt == "fixed":
                continue
            jid = pm.getJointId(name)
            assert jid < pm.njoints, f"pinocchio has no joint {name!r}"
            jm = pm.joints[jid]
            nq, nv = {"revolute": (1, 1), "prismatic": (1, 1), "spherical": (4, 3), "free": (7, 6)}[jt]
            assert jm.nv == nv, (name, jm.shortname())
            kind = "continuous" if jt == "revolute" and jm.nq == 2 else jt
            self.layout.append((kind, iq, iv, jm.idx_q, jm.idx_v))
            iq, iv = iq + nq, iv + nv
        assert (iv, len(self.layout)) == (pm.nv, pm.njoints - 1), "joints differ from pinocchio's"
        self.nq, self.nv = iq, iv
        self.same_order = all(pv == v for _, _, v, _, pv in self.layout)     # pinocchio's velocity order is ours

    def q_pin(self, q):
        out = np.zeros(self.model.nq)
        for kind, iq, _, pq, _ in self.layout:
            if kind == "continuous":
                out[pq:pq + 2] = np.cos(q[iq]), np.sin(q[iq])
            elif kind in ("free", "spherical"):
                o = 3 if kind == "free" else 0
                out[pq:pq + o] = q[iq:iq + o]
                quat = np.asarray(q[iq + o:iq + o + 4], float)
                out[pq + o:pq + o + 4] = np.roll(quat / np.linalg.norm(quat), -1)
            else:
                out[pq] = q[iq]
        return out

    def T(self, q):
        """v_pin = T u."""
        T = np.zeros((self.nv, self.nv))
        for kind, iq, iv, _, pv in self.layout:
            n = {"free": 6, "spherical": 3}.get(kind, 1)
            T[pv:pv + n, iv:iv + n] = np.eye(n)
            if kind == "free":
                T[pv:pv + 3, iv:iv + 3] = quat_to_rot(q[iq + 3:iq + 7]).T
        return T

    def Tdot(self, q, u):
        """dT/dt along u (the free flyer's block R^T: -[w_body x] R^T), so that c = Tdot u."""
        Td = np.zeros((self.nv, self.nv))
        for kind, iq, iv, _, pv in self.layout:
            if kind == "free":
                w = u[iv + 3:iv + 6]
                W = np.array([[0, -w[2], w[1]], [w[2], 0, -w[0]], [-w[1], w[0], 0]])
                Td[pv:pv + 3, iv:iv + 3] = -W @ quat_to_rot(q[iq + 3:iq + 7]).T
        return Td

    def dTu(self, q, u):
        """d(T u)/dq at fixed u, our tangent coordinates (the free flyer's R^T u_lin under its body rotations)."""
        C = np.zeros((self.nv, self.nv))
        for kind, iq, iv, _, pv in self.layout:
            if kind == "free":
                w = quat_to_rot(q[iq + 3:iq + 7]).T @ u[iv:iv + 3]
                for i in range(3):
                    C[pv:pv + 3, iv + 3 + i] = -np.cross(np.eye(3)[i], w)
        return C

    def c(self, q, u):
        """dv_pin/dt = T du/dt + c."""
        c, v = np.zeros(self.nv), self.T(q) @ u
        for kind, _, _, _, pv in self.layout:
            if kind == "free":
                c[pv:pv + 3] = -np.cross(v[pv + 3:pv + 6], v[pv:pv + 3])
        return c

    def aba(self, q, u, tau):
        T = self.T(q)
        a = self.pin.aba(self.model, self.data, self.q_pin(q), T @ u, np.linalg.solve(T.T, tau))
        return np.linalg.solve(T, np.asarray(a) - self.c(q, u))

    def rnea(self, q, u, udot):
        T = self.T(q)
        return T.T @ np.asarray(self.pin.rnea(self.model, self.data, self.q_pin(q), T @ u, T @ udot + self.c(q, u)))

    def crba(self, q):
        M = np.asarray(self.pin.crba(self.model, self.data, self.q_pin(q)))
        M = np.triu(M) + np.triu(M, 1).T
        T = self.T(q)
        return T.T @ M @ T


class UrdfPeer(_Mapped):
    """pinocchio's model of a URDF file (urdfdom's parser, ``buildModelFromUrdf``) in our coordinates."""

    def __init__(self, path, floating_base: bool, joints):
        """``joints``: [(name, type)] of our model in our order (model.joints)."""
        import pinocchio as pin
        self.pin = pin
        path = os.fspath(path)
        self.model = (pin.buildModelFromUrdf(path, pin.JointModelFreeFlyer()) if floating_base
                      else pin.buildModelFromUrdf(path))
        self._map(joints)


class ModelPeer(_Mapped):
    """pinocchio's model of one of our Model objects, built from its joints and bodies as they are (placements,
    axes, inertias), not through our plan: revolute -> RevoluteUnaligned(axis), prismatic ->
    PrismaticUnaligned(axis), spherical -> Spherical, free -> FreeFlyer; fixed joints append the child's inertia to the supporting joint;
    armature -> pinocchio's ``model.armature``."""

    def __init__(self, model):
        import pinocchio as pin
        self.pin = pin
        pm = pin.Model()
        pm.gravity = pin.Motion(np.asarray(model.gravity, float), np.zeros(3))
        support, body_pl = {}, {}
        for j in model.joints:
            if j.parent == "ground":
                sup, pl = 0, pin.SE3.Identity()
            else:
                sup, pl = support[j.parent], body_pl[j.parent]
            joint_pl = pl * pin.SE3(j.parent_frame.rot, j.parent_frame.pos)
            child_inv = pin.SE3(j.child_frame.rot, j.child_frame.pos).inverse()
            if j.type == "fixed":
                support[j.child], body_pl[j.child] = sup, joint_pl * child_inv
            else:
                jm = {"revolute": lambda: pin.JointModelRevoluteUnaligned(j.axis),
                      "prismatic": lambda: pin.JointModelPrismaticUnaligned(j.axis),
                      "spherical": pin.JointModelSpherical, "free": pin.JointModelFreeFlyer}[j.type]()
                support[j.child] = pm.addJoint(sup, jm, joint_pl, j.name)
                body_pl[j.child] = child_inv
            b = model.body(j.child)
            pm.appendBodyToJoint(support[j.child], _pin_inertia(pin, b.mass, b.com, b.inertia), body_pl[j.child])
        self.model = pm
        self._map([(j.name, j.type) for j in model.joints])
        for (_, _, iv, _, pv), j in zip(self.layout, [j for j in model.joints if j.type != "fixed"]):
            if j.armature is not None:                  # pinocchio's model.armature, in its velocity order
                assert j.type != "free" or np.ptp(j.armature[:3]) == 0, "free joint: isotropic linear armature only"
                pm.armature[pv:pv + j.nv] = j.armature


def random_states(model, n, seed=0, u_scale=1.0):
    """n (q, u, tau) in our layout: angles in [-pi, pi], displacements in [-0.3, 0.3] m, free positions in
    [-1, 1] m, random unit quaternions, u and tau normal."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        q, u = [], []
        for j in model.joints:
            if j.type == "revolute":
                q.append(rng.uniform(-np.pi, np.pi))
            elif j.type == "prismatic":
                q.append(rng.uniform(-0.3, 0.3))
            elif j.type in ("free", "spherical"):
                qq = rng.normal(size=4)
                q.extend(list(rng.uniform(-1, 1, 3 * (j.type == "free"))) + list(qq / np.linalg.norm(qq)))
            elif j.type != "fixed":
                raise ValueError(f"random_states: joint type {j.type}")
            u.extend(rng.normal(scale=u_scale, size=j.nv))
        out.append((np.array(q), np.array(u), rng.normal(size=len(u))))
    return out


def rel_err(a, b) -> float:
    a, b = np.asarray(a, float), np.asarray(b, float)
    return float(np.max(np.abs(a - b)) / max(np.max(np.abs(b)), 1e-300))


# ---------------------------------------------------------------- parallel builds of robot-file models

def load(path, floating=False):
    """A robot file as our model, as pinocchio's ABA sees it: mimic joints as independent joints if the file has any
    (pinocchio's default), its joint limits and <dynamics damping friction> left out (pinocchio's ABA has none of
    them; their import: tests/model/test_urdf.py)."""
    import codegen
    from codegen.model import ModelError
    try:
        m = codegen.load_model(path, floating_base=floating, mimic="refuse")     # mimic joints: below
    except ModelError as e:
        if "mimics joint" not in str(e):
            raise
        m = codegen.load_model(path, floating_base=floating, mimic="independent")
    for j in m.joints:
        j.limits = j.limit_solref = j.friction = None
    m.springs = []
    return m


def prebuild_files(jobs, workers=2):
    """Compile the kernels of ``jobs`` [(path, floating, algorithm, options)] that are not cached yet, in up to
    ``workers`` subprocesses (the callers' own builds then hit the cache; failures are left to them)."""
    import json
    import subprocess
    import sys
    from codegen.compiler import build_key, default_cache_dir, resolve_options
    cache = default_cache_dir()
    todo = []
    for path, floating, algorithm, options in jobs:
        key = build_key(load(path, floating), algorithm, resolve_options(algorithm, **options))
        if not any((cache / key).glob(f"mbgen_{algorithm}_{key}*.so")):
            todo.append([str(path), floating, algorithm, options])
    if not todo:
        return 0
    here = os.path.dirname(os.path.abspath(__file__))
    script = ("import json, sys; sys.path.insert(0, sys.argv[1]); import codegen, robots\n"
              "for path, floating, alg, opts in json.loads(sys.argv[2]):\n"
              "    try:\n"
              "        codegen.build(robots.load(path, floating), algorithm=alg, **opts)\n"
              "    except Exception as e:\n"
              "        print('prebuild failed:', path, alg, opts, e, file=sys.stderr)\n")
    workers = max(1, min(workers, len(todo)))
    procs = [subprocess.Popen([sys.executable, "-c", script, here, json.dumps(todo[w::workers])])
             for w in range(workers)]
    for p in procs:
        p.wait()
    return len(todo)
