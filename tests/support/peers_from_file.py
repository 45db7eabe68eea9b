"""A pinocchio peer built straight from a model *dict* (the input of ``codegen.model_from_dict``).

Nothing here imports codegen: placements, joint axes and inertias are parsed from the dict with numpy /
scipy, and pinocchio does its own frame algebra (``SE3`` composition, ``Inertia`` transport), so a
mistake in the project's plan (placement composition, inertia rotation, axis frames) is not copied into
the reference.

Mapping (from README.md):

* joint frame on the parent side = ``parent_frame`` placement in the parent body frame (world for
  ``ground``); the child body frame sits at joint frame * inverse(``child_frame``) (``child_frame`` is the
  joint frame in the child body frame);
* revolute -> ``JointModelRevoluteUnaligned(axis)``, prismatic -> ``JointModelPrismaticUnaligned(axis)``,
  cylindrical -> composite (revolute, prismatic) about/along ``axis``, universal -> composite
  (revolute about ``axis``, revolute about ``axis2``), planar (normal ``axis`` = z only) -> composite
  (PX, PY, RZ), spherical -> ``JointModelSpherical`` (q w,x,y,z -> x,y,z,w; u = body angular velocity,
  as pinocchio's v), free -> ``JointModelFreeFlyer``: ours u = (linear velocity in the parent joint frame,
  body angular velocity), pinocchio v = (linear velocity in the *child* joint frame, body angular
  velocity), so v = T(q) u with T = blockdiag(R^T, I) and dv/dt = T udot + (-omega x v_lin, 0);
* fixed joints: the child's inertia is appended to the supporting pinocchio joint at the composed
  placement (ABA has no fixed joints).

``mutate`` deliberately breaks the peer (to show a comparison can fail): ``parent_rot_T`` and
``child_rot_T`` transpose the placement rotations, ``inertia_RJRt`` rotates each inertia the wrong way
round, ``free_vel`` drops the free-joint velocity conversion.
"""
from __future__ import annotations

import numpy as np
import pinocchio as pin
from scipy.spatial.transform import Rotation

NQ_NV = {"revolute": (1, 1), "prismatic": (1, 1), "cylindrical": (2, 2), "universal": (2, 2),
         "planar": (3, 3), "spherical": (4, 3), "free": (7, 6), "fixed": (0, 0)}
QUAT_AT = {"spherical": 0, "free": 3}


# ---------------------------------------------------------------- parsing (numpy / scipy only)

def rotation(frame: dict) -> np.ndarray:
    if frame is None:
        return np.eye(3)
    if "rpy" in frame:                          # URDF fixed-axis roll, pitch, yaw: Rz(y) Ry(p) Rx(r)
        return Rotation.from_euler("xyz", frame["rpy"]).as_matrix()
    if "quat" in frame:                         # w, x, y, z
        w, x, y, z = frame["quat"]
        return Rotation.from_quat([x, y, z, w]).as_matrix()
    if "axis_angle" in frame:
        a = np.asarray(frame["axis_angle"][:3], float)
        return Rotation.from_rotvec(a / np.linalg.norm(a) * frame["axis_angle"][3]).as_matrix()
    if "matrix" in frame:
        return np.asarray(frame["matrix"], float)
    return np.eye(3)


def placement(frame: dict) -> pin.SE3:
    pos = np.zeros(3) if frame is None else np.asarray(frame.get("pos", [0, 0, 0]), float)
    return pin.SE3(rotation(frame), pos)


def inertia_matrix(value) -> np.ndarray:
    v = np.asarray(value, float)
    if v.shape == (3, 3):
        return v
    if v.shape == (3,):
        return np.diag(v)
    if v.shape == (6,):                         # ixx iyy izz ixy ixz iyz
        xx, yy, zz, xy, xz, yz = v
        return np.array([[xx, xy, xz], [xy, yy, yz], [xz, yz, zz]])
    raise ValueError(f"inertia {value!r}")


def unit(v) -> np.ndarray:
    v = np.asarray(v, float)
    return v / np.linalg.norm(v)


def quat_wxyz_to_matrix(qw) -> np.ndarray:
    w, x, y, z = qw
    return Rotation.from_quat([x, y, z, w]).as_matrix()


def skew(w) -> np.ndarray:
    return np.array([[0, -w[2], w[1]], [w[2], 0, -w[0]], [-w[1], w[0], 0]])


# ---------------------------------------------------------------- the peer

def _composite(*parts):
    jc = pin.JointModelComposite()
    for p in parts:
        jc.addJoint(p)
    return jc


def _joint_model(j: dict):
    t = j["type"]
    a = unit(j.get("axis", [0, 0, 1])) if t not in ("spherical", "free", "fixed") else None
    if t == "revolute":
        return pin.JointModelRevoluteUnaligned(a)
    if t == "prismatic":
        return pin.JointModelPrismaticUnaligned(a)
    if t == "cylindrical":
        return _composite(pin.JointModelRevoluteUnaligned(a), pin.JointModelPrismaticUnaligned(a))
    if t == "universal":
        return _composite(pin.JointModelRevoluteUnaligned(a), pin.JointModelRevoluteUnaligned(unit(j["axis2"])))
    if t == "planar":
        assert np.allclose(a, [0, 0, 1]), "peer: planar joints with normal z only (in-plane axes unspecified otherwise)"
        return _composite(pin.JointModelPX(), pin.JointModelPY(), pin.JointModelRZ())
    if t == "spherical":
        return pin.JointModelSpherical()
    if t == "free":
        return pin.JointModelFreeFlyer()
    raise ValueError(t)


class DictPeer:
    """pinocchio model of a model dict. ``coord_names`` (our q order, names ``joint.dof``) and ``body_names``
    (our body order) come from the built model/system; all maps between the two layouts go by name."""

    def __init__(self, d: dict, coord_names, body_names, mutate=None):
        self.d, self.mutate = d, mutate
        bodies = {b["name"]: b for b in d["bodies"]}
        joints = {j["name"]: j for j in d["joints"]}
        by_child = {j["child"]: j for j in d["joints"]}
        kids = {}
        for j in d["joints"]:
            kids.setdefault(j["parent"], []).append(j)
        pm = pin.Model()
        pm.gravity = pin.Motion(np.asarray(d.get("gravity", [0, -9.81, 0]), float), np.zeros(3))
        # depth first (pinocchio's CRBA needs every subtree's velocities contiguous), children taken in
        # reverse dict order, so our joint order generally differs: the maps below go by name
        self.support, self.body_pl, self.jid = {}, {}, {}
        stack = list(kids.get("ground", []))
        while stack:
            j = stack.pop()
            stack.extend(kids.get(j["child"], []))
            if j["parent"] == "ground":
                sup, par_pl = 0, pin.SE3.Identity()
            else:
                sup, par_pl = self.support[j["parent"]], self.body_pl[j["parent"]]
            pf, cf = placement(j.get("parent_frame")), placement(j.get("child_frame"))
            if mutate == "parent_rot_T":
                pf = pin.SE3(pf.rotation.T, pf.translation)
            if mutate == "child_rot_T":
                cf = pin.SE3(cf.rotation.T, cf.translation)
            b = bodies[j["child"]]
            J = inertia_matrix(b.get("inertia", np.eye(3)))
            if mutate == "inertia_RJRt":          # joint-frame inertia R J R^T instead of R^T J R
                Rc = cf.rotation
                J = Rc @ Rc @ J @ Rc.T @ Rc.T
            inertia = pin.Inertia(float(b["mass"]), np.asarray(b.get("com", [0, 0, 0]), float), J)
            joint_pl = par_pl * pf                 # joint frame in the supporting joint's frame
            if j["type"] == "fixed":
                self.support[j["child"]] = sup
                self.body_pl[j["child"]] = joint_pl * cf.inverse()
            else:
                jid = pm.addJoint(sup, _joint_model(j), joint_pl, j["name"])
                self.jid[j["name"]] = jid
                self.support[j["child"]] = jid
                self.body_pl[j["child"]] = cf.inverse()
            pm.appendBodyToJoint(self.support[j["child"]], inertia, self.body_pl[j["child"]])
        self.model, self.data = pm, pm.createData()
        # our layout: joint order of coord_names, offsets from the joint types
        order = []
        for c in coord_names:
            jn = c.rsplit(".", 1)[0]
            if jn not in order:
                order.append(jn)
        assert sorted(order) == sorted(n for n, j in joints.items() if j["type"] != "fixed")
        self.coord_names = list(coord_names)
        self.layout, self.offsets, iq, iv = [], {}, 0, 0       # (type, our iq, our iv, pin iq, pin iv)
        for jn in order:
            t = joints[jn]["type"]
            jid = self.jid[jn]
            self.layout.append((t, iq, iv, pm.idx_qs[jid], pm.idx_vs[jid]))
            self.offsets[jn] = (iq, iv, NQ_NV[t][1])
            iq += NQ_NV[t][0]
            iv += NQ_NV[t][1]
        self.nq, self.nv = iq, iv
        assert (pm.nq, pm.nv) == (self.nq, self.nv)
        self.body_names = list(body_names)
        assert sorted(self.body_names) == sorted(bodies)
        self.com = {n: np.asarray(b.get("com", [0, 0, 0]), float) for n, b in bodies.items()}
        self.by_child = by_child

    # ------------------------------------------------------------ state conversions
    def q_pin(self, q) -> np.ndarray:
        out = np.zeros(self.nq)
        for t, iq, _, pq, _ in self.layout:
            n = NQ_NV[t][0]
            x = np.array(q[iq:iq + n], float)
            if t in QUAT_AT:
                o = QUAT_AT[t]
                x[o:o + 4] = np.roll(x[o:o + 4], -1) / np.linalg.norm(x[o:o + 4])
            out[pq:pq + n] = x
        return out

    def T(self, q) -> np.ndarray:
        """v_pin = T u (u ours)."""
        T = np.zeros((self.nv, self.nv))
        for t, iq, iv, _, pv in self.layout:
            n = NQ_NV[t][1]
            T[pv:pv + n, iv:iv + n] = np.eye(n)
            if t == "free" and self.mutate != "free_vel":
                T[pv:pv + 3, iv:iv + 3] = quat_wxyz_to_matrix(q[iq + 3:iq + 7]).T
        return T

    def Tdot(self, q, u) -> np.ndarray:
        """dT/dt along u (a free joint's block R^T: -[w_body x] R^T), so that c = Tdot u."""
        Td = np.zeros((self.nv, self.nv))
        for t, iq, iv, _, pv in self.layout:
            if t == "free" and self.mutate != "free_vel":
                w = u[iv + 3:iv + 6]
                W = np.array([[0, -w[2], w[1]], [w[2], 0, -w[0]], [-w[1], w[0], 0]])
                Td[pv:pv + 3, iv:iv + 3] = -W @ quat_wxyz_to_matrix(q[iq + 3:iq + 7]).T
        return Td

    def dTu(self, q, u) -> np.ndarray:
        """d(T u)/dq at fixed u, our tangent coordinates (a free joint's R^T u_lin under its body rotations)."""
        C = np.zeros((self.nv, self.nv))
        for t, iq, iv, _, pv in self.layout:
            if t == "free" and self.mutate != "free_vel":
                w = quat_wxyz_to_matrix(q[iq + 3:iq + 7]).T @ u[iv:iv + 3]
                for i in range(3):
                    C[pv:pv + 3, iv + 3 + i] = -np.cross(np.eye(3)[i], w)
        return C

    def c(self, q, u) -> np.ndarray:
        """dv_pin/dt = T udot + c(q, u)."""
        c = np.zeros(self.nv)
        v = self.T(q) @ u
        for t, iq, iv, _, pv in self.layout:
            if t == "free" and self.mutate != "free_vel":
                c[pv:pv + 3] = -np.cross(v[pv + 3:pv + 6], v[pv:pv + 3])
        return c

    # ------------------------------------------------------------ dynamics in our coordinates
    def aba(self, q, u, tau) -> np.ndarray:
        T = self.T(q)
        a = pin.aba(self.model, self.data, self.q_pin(q), T @ u, np.linalg.solve(T.T, tau))
        return np.linalg.solve(T, np.asarray(a) - self.c(q, u))

    def rnea(self, q, u, udot) -> np.ndarray:
        T = self.T(q)
        return T.T @ np.asarray(pin.rnea(self.model, self.data, self.q_pin(q), T @ u, T @ udot + self.c(q, u)))

    def crba(self, q) -> np.ndarray:
        M = np.asarray(pin.crba(self.model, self.data, self.q_pin(q)))
        M = np.triu(M) + np.triu(M, 1).T
        T = self.T(q)
        return T.T @ M @ T

    # ------------------------------------------------------------ kinematics
    def body_frame_ids(self) -> dict:
        """pinocchio frames at our body frames (added once): {body name: frame id}."""
        if not hasattr(self, "_fids"):
            self._fids = {n: self.model.addFrame(pin.Frame(f"body:{n}", self.support[n], self.body_pl[n],
                                                           pin.FrameType.OP_FRAME)) for n in self.body_names}
            self.data = self.model.createData()
        return self._fids

    def body_frame(self, q, name, update=True) -> pin.SE3:
        if update:
            pin.forwardKinematics(self.model, self.data, self.q_pin(q))
        return self.data.oMi[self.support[name]] * self.body_pl[name]

    def body_poses(self, q):
        """World centroid (nb x 3) and body rotation (nb x 3 x 3) in our body order."""
        pin.forwardKinematics(self.model, self.data, self.q_pin(q))
        com, rot = [], []
        for n in self.body_names:
            M = self.body_frame(q, n, update=False)
            com.append(M.act(self.com[n]))
            rot.append(M.rotation)
        return np.array(com), np.array(rot)

    def point_world(self, q, body, point) -> np.ndarray:
        if body == "ground":
            return np.asarray(point, float)
        return self.body_frame(q, body).act(np.asarray(point, float))

    def perturb(self, q, k, eps) -> np.ndarray:
        """q moved by eps along our velocity coordinate k (tangent space: quaternions rotated in the body
        frame, free translation in the parent frame)."""
        q = np.array(q, float)
        for t, iq, iv, _, _ in self.layout:
            n = NQ_NV[t][1]
            if not iv <= k < iv + n:
                continue
            i = k - iv
            if t in ("spherical", "free") and i >= n - 3:
                o = iq + QUAT_AT[t]
                w, x, y, z = q[o:o + 4]
                R = Rotation.from_quat([x, y, z, w]) * Rotation.from_rotvec(eps * np.eye(3)[i - (n - 3)])
                x, y, z, w = R.as_quat()
                q[o:o + 4] = [w, x, y, z]
            else:
                q[iq + i] += eps
            return q
        raise IndexError(k)

    def point_jacobian(self, q, body, point, h=1e-6) -> np.ndarray:
        """3 x nv central finite-difference Jacobian of a point's world position wrt our velocities."""
        return np.column_stack([(self.point_world(self.perturb(q, k, h), body, point)
                                 - self.point_world(self.perturb(q, k, -h), body, point)) / (2 * h)
                                for k in range(self.nv)])

    def joint_reactions(self, q, u, udot):
        """RNEA internal forces data.f[i] (parent -> subtree through joint i, joint frame, about the joint
        origin) in the world frame, rows in our body order (bodies on non-fixed joints only)."""
        self.rnea(q, u, udot)
        pin.forwardKinematics(self.model, self.data, self.q_pin(q))     # oMi (RNEA leaves it alone)
        F, M = [], []
        for n in self.body_names:
            jid = self.jid[self.by_child[n]["name"]]
            R = self.data.oMi[jid].rotation
            f = self.data.f[jid]
            F.append(R @ f.linear)
            M.append(R @ f.angular)
        return np.array(F), np.array(M)

    def joint_wrenches(self, q, u, udot):
        """data.f[i] as (f, n) in pinocchio's joint frame (the joint's child-side frame), rows in our joint
        order; joints pinocchio merges (fixed) are NaN rows."""
        self.rnea(q, u, udot)
        out = np.full((len(self.body_names), 6), np.nan)
        for k, n in enumerate(self.body_names):
            jid = self.jid.get(self.by_child[n]["name"])
            if jid is not None:
                f = self.data.f[jid]
                out[k] = np.concatenate([f.linear, f.angular])
        return out


# ---------------------------------------------------------------- model dicts

def random_inertia(rng, scale=1.0) -> np.ndarray:
    """SPD, triangle inequality, full off-diagonals: R diag(s2+s3, s1+s3, s1+s2) R^T."""
    s = rng.uniform(0.2, 1.0, 3) * scale
    R = Rotation.random(random_state=rng).as_matrix()
    return R @ np.diag([s[1] + s[2], s[0] + s[2], s[0] + s[1]]) @ R.T


def random_frame(rng, kind: str, scale=0.3) -> dict:
    f = {"pos": list(rng.normal(scale=scale, size=3))}
    R = Rotation.random(random_state=rng)
    if kind == "rpy":
        f["rpy"] = list(rng.uniform(-1.2, 1.2, 3))
    elif kind == "matrix":
        f["matrix"] = R.as_matrix().tolist()
    elif kind == "quat":
        x, y, z, w = R.as_quat()
        f["quat"] = [w, x, y, z]
    elif kind == "axis_angle":
        f["axis_angle"] = list(unit(rng.normal(size=3))) + [float(rng.uniform(-3, 3))]
    return f


def tree_dict(name, parents, types, seed, gravity=(0.4, -1.5, -9.81), forces=()):
    """Model dict for the tree ``parents[k]`` (index of body k's parent, -1 = ground; any order with
    parents first), joint ``types[k]``; numbers random from ``seed``: tilted unit axes, parent and child
    frames cycling through rpy / matrix / quat / axis_angle, full inertias, com offsets. Bodies and joints
    are listed in reverse order (the loader sorts them)."""
    rng = np.random.default_rng(seed)
    kinds = ("rpy", "matrix", "quat", "axis_angle")
    bodies, joints = [], []
    for k, (p, t) in enumerate(zip(parents, types)):
        bodies.append({"name": f"b{k}", "mass": float(rng.uniform(0.5, 3.0)),
                       "com": list(rng.normal(scale=0.2, size=3)),
                       "inertia": random_inertia(rng, 0.1).tolist()})
        j = {"name": f"j{k}", "type": t, "parent": "ground" if p < 0 else f"b{p}", "child": f"b{k}",
             "parent_frame": random_frame(rng, kinds[k % 4]), "child_frame": random_frame(rng, kinds[(k + 1) % 4])}
        if t in ("revolute", "prismatic", "cylindrical", "universal"):
            a = unit(rng.normal(size=3))
            j["axis"] = list(a)
            if t == "universal":
                j["axis2"] = list(unit(np.cross(a, rng.normal(size=3))))
        elif t == "planar":
            j["axis"] = [0, 0, 1]
        joints.append(j)
    return {"name": name, "gravity": list(gravity), "bodies": bodies[::-1], "joints": joints[::-1],
            "forces": [dict(f) for f in forces]}


def without_forces(d: dict) -> dict:
    """Same topology, every force element switched off (zero constants)."""
    out = dict(d)
    out["forces"] = []
    for f in d.get("forces", []):
        f = dict(f)
        if f["type"] == "joint_force":
            f["value"] = {"constant": 0.0}
        else:
            f["stiffness"], f["damping"] = 0.0, 0.0
        out["forces"].append(f)
    return out


def random_state(d: dict, coord_names, rng, u_scale=1.0):
    """(q, u) in our layout for the joint order of coord_names."""
    joints = {j["name"]: j for j in d["joints"]}
    order = []
    for c in coord_names:
        jn = c.rsplit(".", 1)[0]
        if jn not in order:
            order.append(jn)
    q, u = [], []
    for jn in order:
        t = joints[jn]["type"]
        nq, nv = NQ_NV[t]
        x = list(rng.uniform(-1.5, 1.5, nq))
        if t in QUAT_AT:
            o = QUAT_AT[t]
            x[o:o + 4] = list(unit(rng.normal(size=4)))
        q += x
        u += list(rng.normal(scale=u_scale, size=nv))
    return np.array(q), np.array(u)
