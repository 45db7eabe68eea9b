"""Closed-loop (cut joint) oracle: dense KKT forward dynamics of a model dict with a ``loops:`` section.

Nothing here imports codegen. The spanning tree is ``DictPeer`` (pinocchio built straight from the dict); the
cut joints are pinocchio operational frames added at the two cut frames, and the constraint rows, the
acceleration right-hand side and the KKT solve are written out here with numpy.

Conventions
-----------
* Our layout: joints in depth-first order (parents first, file order otherwise, as the loader orders them),
  q / u per joint as in ``NQ_NV``; the cut joints add no coordinates.
* Cut ``c`` (an entry of ``loops:``, same fields as a joint): side i = parent side, cut frame
  ``F_i = (parent body frame) * parent_frame`` (world placement ``parent_frame`` for ``ground``); side j = child
  side, ``F_j = (child body frame) * child_frame``. ``M_rel = F_i^-1 F_j`` must be a motion of the joint type,
  with ``axis`` (and ``axis2``) in F_i, as for a tree joint (``F_j = F_i * joint_motion(q)``).
* Relative twist, in F_j coordinates (pinocchio order: linear, angular):
  ``V_rel = V_j - Ad(F_j^-1 F_i) V_i = J_rel(q) u`` with V_i, V_j the LOCAL frame twists, and
  ``J_rel = (J_j - Ad(F_j^-1 F_i) J_i) T(q)`` (T(q): pinocchio v = T u, the free-joint conversion).
* Constraint subspace W (6 x k, orthonormal columns, F_j coordinates) = orthogonal complement of the joint's
  motion subspace S in F_j coordinates:

    =========== ======================== ====================================================
    type        S (motion)               W (constrained), k
    =========== ======================== ====================================================
    revolute    (0, a)                   3 translations, rotations _|_ a                   5
    prismatic   (a, 0)                   translations _|_ a, 3 rotations                   5
    cylindrical (a, 0), (0, a)           translations _|_ a, rotations _|_ a              4
    universal   (0, R^T a), (0, a2)      3 translations, rotation about n ~ R^T a x a2    4
    spherical   3 rotations              3 translations                                   3
    planar      translations _|_ n, (0,n) translation along n, rotations _|_ n           3
    fixed       none                     all                                              6
    =========== ======================== ====================================================

  (R = rotation of M_rel; for every type but universal, S and W are constant in F_j coordinates, equal to
  their F_i expressions: a joint motion leaves its own axis fixed.)  The full rows of a cut are
  ``W^T J_rel`` (``jacobian_full``).
* Position residual (``constraint``): ``W^T log6(M_rel)`` (log6 = (v, w), the twist whose exponential is
  M_rel: zero on the joint's motion set, because S is a subalgebra for those types); universal:
  ``(log6(M_rel).linear, -(a . R a2 - a . a2) / |R^T a x a2|)``, whose derivative is the n row (sign and
  scale), so Baumgarte terms built from it are consistent with ``jacobian_full``.
* Acceleration right-hand side (``gamma``): ``-(d/dt J) u`` at udot = 0 in OUR coordinates (pinocchio
  a = c(q, u), the free-joint term, not a = 0):
  ``d/dt V_rel = A_j - Ad A_i + V_j x (Ad V_i)`` (A the LOCAL spatial frame accelerations), plus
  ``(dW/dt)^T V_rel`` for universal cuts (``d/dt R^T a = (R^T a) x w_rel``).
* Planar reduction: per cut, the SVD of its full rows ``W^T J_rel = U S V^T``; singular values below
  ``rank_rtol * max(1, |J_i|_2, |J_j|_2)`` are dropped and the cut keeps the rows ``P^T W^T J_rel``,
  ``P = U[:, :r]`` (an orthonormal basis of that cut's row space). The kept rows of all cuts together must have
  full row rank (smallest / largest singular value >= ``rank_rtol``), else ``np.linalg.LinAlgError``; the
  right-hand side of a dropped direction must vanish too (it does for planar loops).
* KKT: ``[[M, J^T], [J, 0]] [udot; -lam] = [Q - h; gamma]``: ``M udot + h = Q + J^T lam`` with M, h in our
  coordinates (``DictPeer.crba``, ``DictPeer.rnea`` at udot = 0: gravity included), Q = ``tau`` plus the dict's
  force elements at time t (``forces=True``: joint_spring_damper, point_spring_damper, joint_force).
* Cut wrench: ``f_j = W P lam`` (6: fx fy fz mx my mz), the spatial force exerted BY side i ON side j through
  the cut, components in F_j, moment about the origin of F_j: pinocchio's ``data.f`` convention for a tree
  joint (parent -> child, child-side joint frame). Its generalized force is ``J_rel^T f_j``
  (= ``J_j^T f_j`` on side j plus the reaction ``-Ad(F_j^-1 F_i)^T f_j`` on side i). Components along dropped
  (planar-reduced) directions are zero by construction: for a planar loop the out-of-plane part of a cut wrench
  is statically indeterminate and this oracle reports it as 0.

API (q, u in our layout): ``KKT(d, rank_rtol=1e-8)``; ``initial_state()``; ``constraint(q)``, ``max_violation(q)``,
``velocity_violation(q, u)``; ``relative_jacobians(q)``, ``jacobian_full(q)``, ``jacobian(q)`` (reduced, checked),
``rows_per_cut(q)``; ``gamma_full(q, u)``, ``gamma(q, u)``; ``forward(q, u, tau=None, t=0, forces=True,
baumgarte=None, return_lam=False) -> (udot, wrenches)``; ``tree_joint_wrenches(q, u, tau=None, t=0)``;
``external_forces(q, u, wrenches)`` (pinocchio fext); ``generalized_forces(q, u, t)``; ``energy(q, u)``;
``project_velocity(q, u)``; ``qdot``, ``integrate``, ``normalized``. Self-test: ``python tests/support/kkt.py``.
"""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pinocchio as pin
from scipy.spatial.transform import Rotation

try:
    from support.peers_from_file import NQ_NV, QUAT_AT, DictPeer, placement, unit
except ImportError:                                       # run as a script: python tests/support/kkt.py
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from support.peers_from_file import NQ_NV, QUAT_AT, DictPeer, placement, unit

COORDS = {"revolute": (["angle"], ["rate"]), "prismatic": (["disp"], ["vel"]),
          "cylindrical": (["angle", "disp"], ["rate", "vel"]), "universal": (["angle1", "angle2"], ["rate1", "rate2"]),
          "spherical": (["qw", "qx", "qy", "qz"], ["wx", "wy", "wz"]),
          "planar": (["x", "y", "theta"], ["vx", "vy", "rate"]),
          "free": (["x", "y", "z", "qw", "qx", "qy", "qz"], ["vx", "vy", "vz", "wx", "wy", "wz"]),
          "fixed": ([], [])}
CUT_TYPES = ("revolute", "prismatic", "cylindrical", "universal", "spherical", "planar", "fixed")
N_CONSTRAINTS = {"revolute": 5, "prismatic": 5, "cylindrical": 4, "universal": 4, "spherical": 3, "planar": 3,
                 "fixed": 6}


# ---------------------------------------------------------------- helpers (no codegen)

def tree_order(d: dict) -> list:
    """The dict's tree joints in our order: depth first from ground, parents first, file order otherwise."""
    kids = {}
    for j in d["joints"]:
        kids.setdefault(j["parent"], []).append(j)
    order, stack = [], list(reversed(kids.get("ground", [])))
    while stack:
        j = stack.pop()
        order.append(j)
        stack.extend(reversed(kids.get(j["child"], [])))
    assert len(order) == len(d["joints"]), "the joints do not form a tree rooted at ground"
    return order


def coord_names(d: dict) -> list:
    return [f"{j['name']}.{c}" for j in tree_order(d) for c in COORDS[j["type"]][0]]


def velocity_names(d: dict) -> list:
    return [f"{j['name']}.{c}" for j in tree_order(d) for c in COORDS[j["type"]][1]]


def body_names(d: dict) -> list:
    return [j["child"] for j in tree_order(d)]


def default_q(t: str) -> np.ndarray:
    q = np.zeros(NQ_NV[t][0])
    if t in QUAT_AT:
        q[QUAT_AT[t]] = 1.0
    return q


def perp_basis(a) -> np.ndarray:
    """3 x 2, orthonormal columns spanning the plane normal to unit a (a fixed, smooth-enough choice)."""
    a = unit(a)
    e = np.eye(3)[int(np.argmin(np.abs(a)))]
    b1 = unit(np.cross(a, e))
    return np.column_stack([b1, np.cross(a, b1)])


def cut_axes(c: dict):
    """(axis, axis2) of a cut entry, normalised, with the loader's defaults (axis z; universal axis2 from x)."""
    t = c["type"]
    a = unit(c.get("axis", [0, 0, 1])) if t not in ("spherical", "fixed", "free") else None
    a2 = None
    if t == "universal":
        if c.get("axis2") is None:
            a2 = np.array([1.0, 0, 0]) if abs(a[0]) < 0.9 else np.array([0, 1.0, 0])
            a2 = np.cross(a, np.cross(a2, a))
        a2 = unit(c["axis2"]) if c.get("axis2") is not None else unit(a2)
    return a, a2


def joint_motion(t: str, a=None, a2=None, x=()) -> pin.SE3:
    """Relative placement F_i^-1 F_j of a joint of type t (axis a, a2 in F_i) at joint coordinates x (angles
    and displacements; spherical: a rotation vector; planar: (x, y, theta) in perp_basis(a))."""
    x = np.asarray(x, float)
    R = lambda v, th: Rotation.from_rotvec(unit(v) * th).as_matrix()      # noqa: E731
    if t == "revolute":
        return pin.SE3(R(a, x[0]), np.zeros(3))
    if t == "prismatic":
        return pin.SE3(np.eye(3), a * x[0])
    if t == "cylindrical":
        return pin.SE3(R(a, x[0]), a * x[1])
    if t == "universal":
        return pin.SE3(R(a, x[0]) @ R(a2, x[1]), np.zeros(3))
    if t == "spherical":
        return pin.SE3(Rotation.from_rotvec(x).as_matrix(), np.zeros(3))
    if t == "planar":
        B = perp_basis(a)
        return pin.SE3(R(a, x[2]), B @ x[:2])
    if t == "fixed":
        return pin.SE3.Identity()
    raise ValueError(t)


def _w_rot(vectors) -> np.ndarray:
    return np.vstack([np.zeros((3, len(vectors))), np.column_stack(vectors)])


def _w_lin(vectors) -> np.ndarray:
    return np.vstack([np.column_stack(vectors), np.zeros((3, len(vectors)))])


class Cut:
    """One loop-closing joint: its frames (pinocchio frame ids) and constraint subspace."""

    def __init__(self, c: dict, peer: DictPeer):
        self.d, self.name, self.type = c, c["name"], c["type"]
        if self.type not in CUT_TYPES:
            raise ValueError(f"cut {self.name!r}: type {self.type!r} cannot be a cut joint")
        self.parent, self.child = c["parent"], c["child"]
        if self.child == "ground":
            raise ValueError(f"cut {self.name!r}: the child side must be a body")
        self.a, self.a2 = cut_axes(c)
        pm = peer.model
        pf, cf = placement(c.get("parent_frame")), placement(c.get("child_frame"))
        if self.parent == "ground":
            ji, pli = 0, pf
        else:
            ji, pli = peer.support[self.parent], peer.body_pl[self.parent] * pf
        jj, plj = peer.support[self.child], peer.body_pl[self.child] * cf
        self.fi = pm.addFrame(pin.Frame(f"cut_{self.name}_i", ji, pli, pin.FrameType.OP_FRAME))
        self.fj = pm.addFrame(pin.Frame(f"cut_{self.name}_j", jj, plj, pin.FrameType.OP_FRAME))
        self.k = N_CONSTRAINTS[self.type]
        t, a = self.type, self.a
        self.W0 = None                                   # constant W (all but universal)
        if t == "revolute":
            self.W0 = np.hstack([_w_lin(list(np.eye(3))), _w_rot(list(perp_basis(a).T))])
        elif t == "prismatic":
            self.W0 = np.hstack([_w_lin(list(perp_basis(a).T)), _w_rot(list(np.eye(3)))])
        elif t == "cylindrical":
            self.W0 = np.hstack([_w_lin(list(perp_basis(a).T)), _w_rot(list(perp_basis(a).T))])
        elif t == "spherical":
            self.W0 = _w_lin(list(np.eye(3)))
        elif t == "planar":
            self.W0 = np.hstack([_w_lin([a]), _w_rot(list(perp_basis(a).T))])
        elif t == "fixed":
            self.W0 = np.eye(6)

    def _n(self, R):
        m = np.cross(R.T @ self.a, self.a2)
        return m, np.linalg.norm(m)

    def W(self, Mrel: pin.SE3) -> np.ndarray:
        if self.W0 is not None:
            return self.W0
        m, nm = self._n(Mrel.rotation)
        if nm < 1e-9:
            raise np.linalg.LinAlgError(f"cut {self.name!r}: universal joint at its singular (gimbal) configuration")
        return np.hstack([_w_lin(list(np.eye(3))), _w_rot([m / nm])])

    def residual(self, Mrel: pin.SE3) -> np.ndarray:
        xi = pin.log6(Mrel).vector
        if self.W0 is not None:
            return self.W0.T @ xi
        R = Mrel.rotation
        _, nm = self._n(R)
        return np.concatenate([xi[:3], [-(self.a @ R @ self.a2 - self.a @ self.a2) / nm]])

    def Wdot_T_V(self, Mrel: pin.SE3, Vrel: np.ndarray) -> np.ndarray:
        """(dW/dt)^T V_rel (zero but for universal)."""
        if self.W0 is not None:
            return np.zeros(self.k)
        R = Mrel.rotation
        r = R.T @ self.a
        w = Vrel[3:]
        m, nm = self._n(R)
        n = m / nm
        mdot = np.cross(np.cross(r, w), self.a2)
        ndot = (mdot - n * (n @ mdot)) / nm
        return np.concatenate([np.zeros(3), [ndot @ w]])


# ---------------------------------------------------------------- the oracle

class KKT:
    """Dense KKT oracle of a model dict with cut joints (``d["loops"]``, possibly empty)."""

    def __init__(self, d: dict, rank_rtol: float = 1e-8):
        self.d = d
        self.rank_rtol = rank_rtol
        self.order = tree_order(d)
        self.coord_names, self.velocity_names, self.body_names = coord_names(d), velocity_names(d), body_names(d)
        self.peer = DictPeer(d, self.coord_names, self.body_names)
        self.nq, self.nv = self.peer.nq, self.peer.nv
        self.cuts = [Cut(c, self.peer) for c in d.get("loops") or []]
        names = [c.name for c in self.cuts]
        assert len(set(names)) == len(names), "duplicate cut names"
        # force elements: frames at the point-spring ends
        self.point_springs = []
        for f in d.get("forces") or []:
            if f["type"] == "point_spring_damper":
                ends = []
                for b, p in ((f["body_a"], f.get("point_a", [0, 0, 0])), (f["body_b"], f.get("point_b", [0, 0, 0]))):
                    pl = pin.SE3(np.eye(3), np.asarray(p, float))
                    jid = 0 if b == "ground" else self.peer.support[b]
                    if b != "ground":
                        pl = self.peer.body_pl[b] * pl
                    ends.append(self.peer.model.addFrame(pin.Frame(f"ps_{f['name']}_{len(ends)}", jid, pl,
                                                                   pin.FrameType.OP_FRAME)))
                self.point_springs.append((f, ends))
        self.model = self.peer.model
        self.data = self.peer.data = self.model.createData()
        self.gravity = np.asarray(d.get("gravity", [0, -9.81, 0]), float)

    # ------------------------------------------------------------ states
    def initial_state(self):
        """(q0, u0) of the dict (``q0`` / ``u0`` of the joints; defaults zero / identity quaternions)."""
        q, u = [], []
        for j in self.order:
            t = j["type"]
            q0, u0 = j.get("q0"), j.get("u0")
            q.extend(np.atleast_1d(q0).astype(float) if q0 is not None else default_q(t))
            u.extend(np.atleast_1d(u0).astype(float) if u0 is not None else np.zeros(NQ_NV[t][1]))
        return np.array(q, float), np.array(u, float)

    def joint_slices(self):
        """{joint name: (q slice, u slice)} in our layout (fixed joints: empty slices)."""
        out, iq, iv = {}, 0, 0
        for j in self.order:
            nq, nv = NQ_NV[j["type"]]
            out[j["name"]] = (slice(iq, iq + nq), slice(iv, iv + nv))
            iq, iv = iq + nq, iv + nv
        return out

    def integrate(self, q, u, h):
        """q after time h at constant u (our coordinates): scalars q += h u, quaternions Q exp(h w) (body
        angular velocity), free translation += h * (parent-frame) velocity."""
        q = np.array(q, float)
        iq, iv = 0, 0
        for j in self.order:
            t = j["type"]
            nq, nv = NQ_NV[t]
            if t in QUAT_AT:
                o = iq + QUAT_AT[t]
                w = u[iv + nv - 3:iv + nv]
                q[iq:o] += h * u[iv:iv + nv - 3]
                qw, qx, qy, qz = q[o:o + 4]
                x, y, z, w4 = (Rotation.from_quat([qx, qy, qz, qw]) * Rotation.from_rotvec(h * w)).as_quat()
                q[o:o + 4] = [w4, x, y, z]
            else:
                q[iq:iq + nq] += h * u[iv:iv + nv]
            iq, iv = iq + nq, iv + nv
        return q

    # ------------------------------------------------------------ kinematics of the cuts
    def _kin(self, q, u=None):
        qp = self.peer.q_pin(q)
        if u is None:
            pin.forwardKinematics(self.model, self.data, qp)
        else:
            T = self.peer.T(q)
            pin.forwardKinematics(self.model, self.data, qp, T @ u, self.peer.c(q, u))
        pin.updateFramePlacements(self.model, self.data)
        return qp

    def _fj(self, fid, ref) -> np.ndarray:
        return np.asarray(pin.getFrameJacobian(self.model, self.data, fid, ref)).reshape(6, self.model.nv)

    def relative_placements(self, q, update=True):
        """[F_i^-1 F_j] per cut."""
        if update:
            self._kin(q)
        of = self.data.oMf
        return [of[c.fi].inverse() * of[c.fj] for c in self.cuts]

    def cut_frames(self, q):
        """[(F_i, F_j)] world placements per cut."""
        self._kin(q)
        return [(pin.SE3(self.data.oMf[c.fi]), pin.SE3(self.data.oMf[c.fj])) for c in self.cuts]

    def constraint(self, q) -> np.ndarray:
        """Position residual, all cuts concatenated (full rows, no planar reduction)."""
        Ms = self.relative_placements(q)
        return np.concatenate([c.residual(M) for c, M in zip(self.cuts, Ms)]) if self.cuts else np.zeros(0)

    def max_violation(self, q) -> float:
        r = self.constraint(q)
        return float(np.max(np.abs(r))) if r.size else 0.0

    def relative_jacobians(self, q):
        """[(J_rel (6 x nv, F_j coordinates, our u), M_rel, scale)] per cut; scale = max(1, |J_i|, |J_j|)."""
        qp = self._kin(q)
        pin.computeJointJacobians(self.model, self.data, qp)
        T = self.peer.T(q)
        out = []
        for c in self.cuts:
            Ji = self._fj(c.fi, pin.LOCAL)
            Jj = self._fj(c.fj, pin.LOCAL)
            Mrel = self.data.oMf[c.fi].inverse() * self.data.oMf[c.fj]
            Ad = Mrel.inverse().action                     # Ad(F_j^-1 F_i)
            scale = max(1.0, np.linalg.norm(Ji @ T, 2), np.linalg.norm(Jj @ T, 2))
            out.append(((Jj - Ad @ Ji) @ T, Mrel, scale))
        return out

    def jacobian_full(self, q):
        """[W^T J_rel (k_c x nv)] per cut (unreduced)."""
        return [c.W(M).T @ J for c, (J, M, _) in zip(self.cuts, self.relative_jacobians(q))]

    def velocity_violation(self, q, u) -> float:
        if not self.cuts:
            return 0.0
        return float(np.max(np.abs(np.concatenate([J @ u for J in self.jacobian_full(q)]))))

    def reduction(self, q):
        """Per cut (P_c (k_c x r_c), dropped basis U2 (k_c x (k_c - r_c)), W_c, J_full_c)."""
        out = []
        for c, (J, M, scale) in zip(self.cuts, self.relative_jacobians(q)):
            W = c.W(M)
            Jc = W.T @ J
            U, s, _ = np.linalg.svd(Jc, full_matrices=True)
            r = int(np.sum(s > self.rank_rtol * scale))
            out.append((U[:, :r], U[:, r:], W, Jc))
        return out

    def jacobian(self, q, check=True, red=None) -> np.ndarray:
        """The reduced constraint Jacobian (m x nv): per cut, an orthonormal basis of its row space. With check,
        raise np.linalg.LinAlgError when the rows of all cuts together are rank-deficient."""
        red = self.reduction(q) if red is None else red
        J = np.vstack([P.T @ Jc for P, _, _, Jc in red]) if red else np.zeros((0, self.nv))
        if check and J.shape[0]:
            s = np.linalg.svd(J, compute_uv=False)
            if J.shape[0] > self.nv or s[-1] < self.rank_rtol * max(1.0, s[0]):
                raise np.linalg.LinAlgError(
                    f"constraint Jacobian rank-deficient across cuts: {J.shape[0]} rows, nv = {self.nv}, "
                    f"singular values {s[0]:.3g} .. {s[-1]:.3g}")
        return J

    def rows_per_cut(self, q):
        """Number of independent rows each cut keeps at q (after the planar reduction)."""
        return [P.shape[1] for P, _, _, _ in self.reduction(q)]

    def gamma_full(self, q, u):
        """[-(d/dt (W^T J_rel)) u] per cut (unreduced), at udot = 0 in our coordinates."""
        self._kin(q, u)
        out = []
        for c in self.cuts:
            Vi = pin.getFrameVelocity(self.model, self.data, c.fi, pin.LOCAL)
            Vj = pin.getFrameVelocity(self.model, self.data, c.fj, pin.LOCAL)
            Ai = pin.getFrameAcceleration(self.model, self.data, c.fi, pin.LOCAL)
            Aj = pin.getFrameAcceleration(self.model, self.data, c.fj, pin.LOCAL)
            Mrel = self.data.oMf[c.fi].inverse() * self.data.oMf[c.fj]
            X = Mrel.inverse()                              # F_j^-1 F_i
            AdVi = X.act(Vi)
            Vrel = (Vj - AdVi).vector
            drift = (Aj - X.act(Ai) + Vj.cross(AdVi)).vector
            out.append(-(c.W(Mrel).T @ drift + c.Wdot_T_V(Mrel, Vrel)))
        return out

    def gamma(self, q, u, red=None, check=True) -> np.ndarray:
        """Reduced right-hand side P^T gamma_full (the rows of ``jacobian``)."""
        red = self.reduction(q) if red is None else red
        g = self.gamma_full(q, u)
        out = []
        for c, (P, U2, _, Jc), gc in zip(self.cuts, red, g):
            if check and U2.shape[1]:
                lost = np.abs(U2.T @ gc).max()
                if lost > 1e-7 * max(1.0, np.abs(gc).max()):
                    raise np.linalg.LinAlgError(f"cut {c.name!r}: a dropped constraint direction has "
                                                f"right-hand side {lost:.3g} (singular configuration)")
            out.append(P.T @ gc)
        return np.concatenate(out) if out else np.zeros(0)

    # ------------------------------------------------------------ forces and dynamics
    def point_spring_state(self, q, u):
        """[(force element, L, Ldot, e (unit a->b, world), J_a, J_b (3 x nv world point Jacobians, our u))]."""
        qp = self._kin(q)
        pin.computeJointJacobians(self.model, self.data, qp)
        T = self.peer.T(q)
        out = []
        for f, (fa, fb) in self.point_springs:
            pa, pb = self.data.oMf[fa].translation, self.data.oMf[fb].translation
            Ja = self._fj(fa, pin.LOCAL_WORLD_ALIGNED)[:3] @ T
            Jb = self._fj(fb, pin.LOCAL_WORLD_ALIGNED)[:3] @ T
            dvec = pb - pa
            L = np.linalg.norm(dvec)
            e = dvec / L
            out.append((f, L, e @ ((Jb - Ja) @ u), e, Ja, Jb))
        return out

    def generalized_forces(self, q, u, t=0.0) -> np.ndarray:
        """Q of the dict's force elements (our coordinates): joint springs -k (q - q_ref) - c u per coordinate,
        point springs tension k (L - L0) + c Ldot pulling the two points together, joint forces f(t)."""
        Q = np.zeros(self.nv)
        sl = self.joint_slices()
        for f in self.d.get("forces") or []:
            if f["type"] == "joint_spring_damper":
                sq, su = sl[f["joint"]]
                k = np.broadcast_to(np.asarray(f.get("stiffness", 0.0), float), (su.stop - su.start,))
                c = np.broadcast_to(np.asarray(f.get("damping", 0.0), float), (su.stop - su.start,))
                r = np.broadcast_to(np.asarray(f.get("q_ref", 0.0), float), (su.stop - su.start,))
                Q[su] += -k * (q[sq] - r) - c * u[su]
            elif f["type"] == "joint_force":
                Q[sl[f["joint"]][1].start + int(f.get("dof", 0))] += time_function(f.get("value", 0.0), t)
        for f, L, Ldot, e, Ja, Jb in self.point_spring_state(q, u):
            tension = f.get("stiffness", 0.0) * (L - f.get("length", 0.0)) + f.get("damping", 0.0) * Ldot
            Q += -tension * (e @ (Jb - Ja))
        return Q

    def mass_matrix(self, q) -> np.ndarray:
        return self.peer.crba(q)

    def bias(self, q, u) -> np.ndarray:
        """h(q, u): Coriolis, centrifugal and gravity (M udot + h = Q)."""
        return self.peer.rnea(q, u, np.zeros(self.nv))

    def forward(self, q, u, tau=None, t=0.0, forces=True, baumgarte=None, return_lam=False):
        """(udot, wrenches (n_cuts x 6)) from the dense KKT system (``return_lam``: also the multipliers of the
        reduced rows, ``M udot + h = Q + J^T lam``). ``tau``: extra generalized forces (our
        coordinates), added to the dict's force elements at time t when ``forces``. ``baumgarte=(alpha, beta)``
        replaces gamma by gamma - 2 alpha J u - beta^2 phi (phi = P^T constraint; for integration tests)."""
        q, u = np.asarray(q, float), np.asarray(u, float)
        Q = np.zeros(self.nv) if tau is None else np.array(tau, float)
        if forces:
            Q = Q + self.generalized_forces(q, u, t)
        M, h = self.mass_matrix(q), self.bias(q, u)
        if not self.cuts:
            udot = np.linalg.solve(M, Q - h)
            return (udot, np.zeros((0, 6)), np.zeros(0)) if return_lam else (udot, np.zeros((0, 6)))
        red = self.reduction(q)
        J = self.jacobian(q, red=red)
        g = self.gamma(q, u, red=red)
        if baumgarte is not None:
            al, be = baumgarte
            Ms = self.relative_placements(q)
            phi = np.concatenate([P.T @ c.residual(Mr) for c, Mr, (P, _, _, _) in zip(self.cuts, Ms, red)])
            g = g - 2 * al * (J @ u) - be ** 2 * phi
        m = J.shape[0]
        K = np.block([[M, J.T], [J, np.zeros((m, m))]])
        x = np.linalg.solve(K, np.concatenate([Q - h, g]))
        udot, lam = x[:self.nv], -x[self.nv:]
        wrenches, i = [], 0
        for P, _, W, _ in red:
            r = P.shape[1]
            wrenches.append(W @ (P @ lam[i:i + r]))
            i += r
        return (udot, np.array(wrenches), lam) if return_lam else (udot, np.array(wrenches))

    def tree_joint_wrenches(self, q, u, tau=None, t=0.0):
        """Wrenches of the TREE joints of the closed-loop system (pinocchio data.f: parent -> child subtree,
        child-side joint frame, (f, m)), rows in our body order (fixed joints NaN), from an RNEA pass at the KKT
        accelerations with the cut wrenches and point-spring forces applied as external forces."""
        udot, wr = self.forward(q, u, tau, t)
        fext = self.external_forces(q, u, wr)
        T = self.peer.T(q)
        pin.rnea(self.model, self.data, self.peer.q_pin(q), T @ u, T @ udot + self.peer.c(q, u), fext)
        out = np.full((len(self.body_names), 6), np.nan)
        for k, n in enumerate(self.body_names):
            jid = self.peer.jid.get(self.peer.by_child[n]["name"])
            if jid is not None:
                f = self.data.f[jid]
                out[k] = np.concatenate([f.linear, f.angular])
        return out

    def external_forces(self, q, u, wrenches, springs=True):
        """pinocchio fext (per joint, joint-local frame) of the cut wrenches (+ point springs)."""
        self._kin(q)
        fext = pin.StdVec_Force()
        for _ in range(self.model.njoints):
            fext.append(pin.Force.Zero())
        for c, w in zip(self.cuts, wrenches):
            fj = pin.Force(np.asarray(w, float))
            Mrel = self.data.oMf[c.fi].inverse() * self.data.oMf[c.fj]
            fi = Mrel.act(fj)                               # f_j in F_i coordinates (about F_i's origin)
            for fid, f in ((c.fj, fj), (c.fi, -fi)):
                fr = self.model.frames[fid]
                if fr.parentJoint:
                    fext[fr.parentJoint] = fext[fr.parentJoint] + fr.placement.act(f)
        if springs:
            for (f, L, Ldot, e, _, _), (_, ends) in zip(self.point_spring_state(q, u), self.point_springs):
                tension = f.get("stiffness", 0.0) * (L - f.get("length", 0.0)) + f.get("damping", 0.0) * Ldot
                for fid, sgn in zip(ends, (1, -1)):
                    fr = self.model.frames[fid]
                    if fr.parentJoint:                      # world force sgn * tension * e at the point
                        R = self.data.oMi[fr.parentJoint].rotation
                        F = pin.Force(R.T @ (sgn * tension * e), np.zeros(3))
                        arm = pin.SE3(np.eye(3), fr.placement.translation)
                        fext[fr.parentJoint] = fext[fr.parentJoint] + arm.act(F)
        return fext

    def energy(self, q, u) -> float:
        """Kinetic + gravity potential + spring potentials (point and joint springs)."""
        E = 0.5 * u @ self.mass_matrix(q) @ u
        com, _ = self.peer.body_poses(q)
        masses = {b["name"]: float(b["mass"]) for b in self.d["bodies"]}
        E -= sum(masses[n] * (self.gravity @ com[k]) for k, n in enumerate(self.body_names))
        sl = self.joint_slices()
        for f in self.d.get("forces") or []:
            if f["type"] == "joint_spring_damper":
                sq, _ = sl[f["joint"]]
                k = np.asarray(f.get("stiffness", 0.0), float)
                E += 0.5 * np.sum(k * (q[sq] - np.asarray(f.get("q_ref", 0.0), float)) ** 2)
        for f, L, _, _, _, _ in self.point_spring_state(q, u):
            E += 0.5 * f.get("stiffness", 0.0) * (L - f.get("length", 0.0)) ** 2
        return float(E)

    def project_velocity(self, q, u) -> np.ndarray:
        """u projected (orthogonally, in the Euclidean metric of u) onto the null space of the (reduced)
        constraint Jacobian at q; raises like ``jacobian`` when the rows are dependent."""
        u = np.array(u, float)
        if not self.cuts:
            return u
        J = self.jacobian(q)
        return u - J.T @ np.linalg.solve(J @ J.T, J @ u)

    def qdot(self, q, u) -> np.ndarray:
        """dq/dt (our coordinates): scalars u, quaternions 1/2 Q (0, w) (body angular velocity), free
        translation the parent-frame velocity."""
        out = np.zeros(self.nq)
        iq, iv = 0, 0
        for j in self.order:
            t = j["type"]
            nq, nv = NQ_NV[t]
            if t in QUAT_AT:
                o = iq + QUAT_AT[t]
                out[iq:o] = u[iv:iv + nv - 3]
                w0, x, y, z = q[o:o + 4]
                wx, wy, wz = u[iv + nv - 3:iv + nv]
                out[o:o + 4] = 0.5 * np.array([-x * wx - y * wy - z * wz, w0 * wx + y * wz - z * wy,
                                               w0 * wy + z * wx - x * wz, w0 * wz + x * wy - y * wx])
            else:
                out[iq:iq + nq] = u[iv:iv + nv]
            iq, iv = iq + nq, iv + nv
        return out

    def normalized(self, q) -> np.ndarray:
        """q with its quaternions normalised."""
        q = np.array(q, float)
        iq = 0
        for j in self.order:
            t = j["type"]
            if t in QUAT_AT:
                o = iq + QUAT_AT[t]
                q[o:o + 4] /= np.linalg.norm(q[o:o + 4])
            iq += NQ_NV[t][0]
        return q


def time_function(v, t) -> float:
    if not isinstance(v, dict):
        return float(v)
    kind, p = next(iter(v.items()))
    if kind == "constant":
        return float(p)
    if kind == "sine":
        return p.get("offset", 0.0) + p.get("amplitude", 0.0) * np.sin(
            2 * np.pi * p.get("frequency", 0.0) * t + p.get("phase", 0.0))
    if kind == "step":
        return p.get("before", 0.0) if t < p.get("t0", 0.0) else p["after"]
    return float(np.interp(t, p["t"], p["value"]))


# ---------------------------------------------------------------- self-test

def fd_relative_jacobian(k: KKT, q, h=1e-6):
    """[6 x nv] per cut by central differences of log6(M_rel(q)^-1 M_rel(q + h e_k)) (``DictPeer.perturb``:
    tangent steps in our velocity coordinates), independent of T(q) and the frame Jacobians."""
    M0 = k.relative_placements(q)
    cols = [[] for _ in k.cuts]
    for i in range(k.nv):
        Mp = k.relative_placements(k.peer.perturb(q, i, h))
        Mm = k.relative_placements(k.peer.perturb(q, i, -h))
        for c in range(len(k.cuts)):
            cols[c].append((pin.log6(M0[c].inverse() * Mp[c]).vector
                            - pin.log6(M0[c].inverse() * Mm[c]).vector) / (2 * h))
    return [np.column_stack(x) for x in cols]


def fd_gamma(k: KKT, q, u, h=1e-5):
    """[-(d/dt J_full) u] per cut by central differences along the constant-u motion."""
    Jp = k.jacobian_full(k.integrate(q, u, h))
    Jm = k.jacobian_full(k.integrate(q, u, -h))
    return [-(a - b) @ u / (2 * h) for a, b in zip(Jp, Jm)]


def check_derivatives(k: KKT, q, u, tol_J=1e-7, tol_g=1e-6):
    """Max relative errors of J_rel and gamma_full against finite differences."""
    eJ, eg = 0.0, 0.0
    for (J, _, _), Jfd in zip(k.relative_jacobians(q), fd_relative_jacobian(k, q)):
        eJ = max(eJ, np.abs(J - Jfd).max() / max(1.0, np.abs(J).max()))
    for g, gfd in zip(k.gamma_full(q, u), fd_gamma(k, q, u)):
        eg = max(eg, np.abs(g - gfd).max() / max(1.0, np.abs(g).max()))
    assert eJ < tol_J and eg < tol_g, (eJ, eg)
    return eJ, eg


def _selftest(verbose=True):
    from scipy.integrate import solve_ivp
    from support.peers_from_file import random_frame, tree_dict
    rng = np.random.default_rng(7)
    say = print if verbose else (lambda *a: None)

    # 1. J and gamma against finite differences, every cut type, arbitrary (inconsistent) states, a tree with
    #    every joint type including free and fixed joints (cut frames need not close for these checks)
    parents = [-1, 0, 1, 2, -1, 4, 5, 0]
    types = ["revolute", "spherical", "universal", "cylindrical", "free", "prismatic", "fixed", "revolute"]
    worst = [0.0, 0.0]
    for s, ct in enumerate(CUT_TYPES):
        d = tree_dict("fd", parents, types, seed=100 + s)
        loops = []
        for n, (pa, ch) in enumerate([("b3", "b6"), ("ground", "b7"), ("b1", "b5")]):
            c = {"name": f"c{n}", "type": ct, "parent": pa, "child": ch,
                 "parent_frame": random_frame(rng, "quat"), "child_frame": random_frame(rng, "rpy")}
            if ct not in ("spherical", "fixed"):
                c["axis"] = list(unit(rng.normal(size=3)))
            if ct == "universal":
                c["axis2"] = list(unit(np.cross(c["axis"], rng.normal(size=3))))
            loops.append(c)
        d["loops"] = loops
        k = KKT(d)
        q, u = random_state_for(k, rng)
        eJ, eg = check_derivatives(k, q, u)
        worst = [max(worst[0], eJ), max(worst[1], eg)]
    say(f"J_rel vs FD (7 cut types x 3 cuts, free/fixed/spherical tree): max rel err {worst[0]:.1e}; "
        f"gamma vs FD: {worst[1]:.1e}")

    # 2. wrench sign / frame: a tree joint replaced by a free joint + a cut of the same type and frames must give
    #    the same accelerations, and the cut wrench must equal pinocchio's data.f of the replaced joint (fixed:
    #    the tree joint is a revolute held at q = 0, u = 0, udot = 0; its data.f then is the fixed joint's wrench)
    for s, ct in enumerate(("revolute", "spherical", "universal", "cylindrical", "prismatic", "fixed")):
        tt = "revolute" if ct == "fixed" else ct
        d = tree_dict("eq", [-1, 0, 1], ["spherical", tt, "revolute"], seed=200 + s)
        d["forces"] = [{"name": "ps", "type": "point_spring_damper", "body_a": "b2", "point_a": [0.1, 0.2, 0.3],
                        "body_b": "ground", "point_b": [0.5, -0.2, 0.1], "stiffness": 30.0, "damping": 2.0,
                        "length": 0.3},
                       {"name": "js", "type": "joint_spring_damper", "joint": "j2", "stiffness": 5.0, "damping": 0.3,
                        "q_ref": 0.2}]
        k0 = KKT(d)
        q0, u0 = random_state_for(k0, rng)
        jn = {j["child"]: j for j in d["joints"]}["b1"]
        s0 = k0.joint_slices()
        tau = rng.normal(size=k0.nv)
        tau[s0[jn["name"]][1]] = 0.0                   # the cut has no coordinate to take a joint torque
        if ct == "fixed":
            q0[s0[jn["name"]][0]], u0[s0[jn["name"]][1]] = 0.0, 0.0
            dfix = dict(d, joints=[dict(j, type="fixed") if j is jn else j for j in d["joints"]])
            for j in dfix["joints"]:
                if j["type"] == "fixed":
                    j.pop("axis", None), j.pop("axis2", None)
            kf = KKT(dfix)
            sf = kf.joint_slices()
            qf, uf, tf = (np.zeros(kf.nq), np.zeros(kf.nv), np.zeros(kf.nv))
            for n in sf:
                qf[sf[n][0]], uf[sf[n][1]], tf[sf[n][1]] = q0[s0[n][0]], u0[s0[n][1]], tau[s0[n][1]]
            udf = kf.forward(qf, uf, tf)[0]
            udot0 = np.zeros(k0.nv)
            for n in sf:
                if n != jn["name"]:
                    udot0[s0[n][1]] = udf[sf[n][1]]
        else:
            udot0 = k0.forward(q0, u0, tau)[0]         # no cuts: M^-1 (Q - h)
            assert np.allclose(udot0, k0.peer.aba(q0, u0, tau + k0.generalized_forces(q0, u0)), atol=1e-10)
        # data.f of the replaced joint, with the point spring as an external force on b2
        T = k0.peer.T(q0)
        pin.rnea(k0.model, k0.data, k0.peer.q_pin(q0), T @ u0, T @ udot0 + k0.peer.c(q0, u0),
                 k0.external_forces(q0, u0, []))
        f = k0.data.f[k0.peer.jid[jn["name"]]]
        wr0 = np.concatenate([f.linear, f.angular])
        f = k0.data.f[k0.peer.jid["j2"]]
        wr0_b2 = np.concatenate([f.linear, f.angular])
        # the same system with b1 on a free joint and the replaced joint as a cut (b0 -> b1)
        d1 = dict(d)
        d1["joints"] = [j for j in d["joints"] if j["child"] != "b1"] + [
            {"name": "jfree", "type": "free", "parent": "ground", "child": "b1"}]
        cut = {x: jn[x] for x in ("parent", "child", "parent_frame", "child_frame", "axis", "axis2") if x in jn}
        d1["loops"] = [dict(cut, name="cut", type=ct)]
        if ct == "fixed":
            d1["loops"][0].pop("axis", None)
            d1["loops"][0].pop("axis2", None)
        k1 = KKT(d1)
        # map the state: b1's body frame pose and velocity
        k0._kin(q0, u0)
        B = k0.peer.body_frame(q0, "b1", update=False)
        Vb = k0.peer.body_pl["b1"].actInv(k0.data.v[k0.peer.support["b1"]])    # body twist of b1's frame
        x, y, z, w = Rotation.from_matrix(B.rotation).as_quat()
        s1 = k1.joint_slices()
        q1, u1, tau1 = np.zeros(k1.nq), np.zeros(k1.nv), np.zeros(k1.nv)
        for n in s1:
            if n == "jfree":
                q1[s1[n][0]] = [*B.translation, w, x, y, z]
                u1[s1[n][1]] = [*(B.rotation @ Vb.linear), *Vb.angular]
            else:
                q1[s1[n][0]], u1[s1[n][1]], tau1[s1[n][1]] = q0[s0[n][0]], u0[s0[n][1]], tau[s0[n][1]]
        assert k1.max_violation(q1) < 1e-12 and k1.velocity_violation(q1, u1) < 1e-12, \
            (k1.constraint(q1), k1.velocity_violation(q1, u1))
        udot1, wr1 = k1.forward(q1, u1, tau1)
        e_u = max(np.abs(udot1[s1[n][1]] - udot0[s0[n][1]]).max() for n in s1 if n != "jfree")
        e_w = np.abs(wr1[0] - wr0).max() / max(1.0, np.abs(wr0).max())
        # tree joints of the loop model: RNEA with the cut wrench as external force: the free joint carries
        # nothing, j2's wrench is the tree's, and the joint torques balance the applied joint forces
        tw = k1.tree_joint_wrenches(q1, u1, tau1)
        e_t = max(np.abs(tw[k1.body_names.index("b1")]).max(),
                  np.abs(tw[k1.body_names.index("b2")] - wr0_b2).max() / max(1.0, np.abs(wr0_b2).max()))
        assert e_u < 1e-9 and e_w < 1e-9 and e_t < 1e-9, (ct, e_u, e_w, e_t)
        say(f"cut {ct:11s} == tree joint: udot err {e_u:.1e}, cut wrench vs pinocchio data.f rel err {e_w:.1e}, "
            f"tree wrenches {e_t:.1e}")

    # 3. a cut repeating another one (a four-bar closed twice at the same pin) is refused; a cut that duplicates a
    #    tree joint keeps no rows (all identically zero) and changes nothing
    d = four_bar_dict()
    d["loops"] = d["loops"] + [dict(d["loops"][0], name="r4_again")]
    k = KKT(d)
    try:
        k.forward(*k.initial_state())
        raise AssertionError("a redundant cut was accepted")
    except np.linalg.LinAlgError as e:
        say(f"redundant cut refused: {str(e)[:90]}...")
    d = tree_dict("red", [-1, 0], ["revolute", "spherical"], seed=3)
    j = {j["child"]: j for j in d["joints"]}["b0"]
    d["loops"] = [{"name": "dup", "type": "revolute", "parent": "ground", "child": "b0", "axis": j["axis"],
                   "parent_frame": j["parent_frame"], "child_frame": j["child_frame"]}]
    k = KKT(d)
    q, u = random_state_for(k, rng)
    assert k.rows_per_cut(q) == [0] and np.allclose(k.forward(q, u)[0], k.peer.aba(q, u, np.zeros(k.nv)))

    # 4. energy: a planar four-bar (three revolute tree joints + a revolute cut to ground), integrated
    d = four_bar_dict()
    k = KKT(d)
    q0, u0 = k.initial_state()
    u0 = k.project_velocity(q0, np.array([2.0, 0.0, 0.0]))
    assert k.max_violation(q0) < 1e-12 and k.rows_per_cut(q0) == [2]
    E0 = k.energy(q0, u0)
    res = {}
    for label, bg in (("plain", None), ("baumgarte", (5.0, 5.0))):
        sol = solve_ivp(lambda t, x: np.concatenate([x[3:], k.forward(x[:3], x[3:], baumgarte=bg)[0]]),
                        (0, 3.0), np.concatenate([q0, u0]), method="DOP853", rtol=1e-11, atol=1e-11,
                        t_eval=np.linspace(0, 3, 31))
        E = [k.energy(x[:3], x[3:]) for x in sol.y.T]
        viol = max(k.max_violation(x[:3]) for x in sol.y.T)
        res[label] = (np.abs(np.array(E) - E0).max() / abs(E0), viol)
        assert res[label][0] < 1e-6 and viol < 1e-8, (label, res[label])
    say(f"four-bar 3 s, DOP853: energy drift rel {res['plain'][0]:.1e} (plain), {res['baumgarte'][0]:.1e} "
        f"(Baumgarte); max position violation {res['plain'][1]:.1e} / {res['baumgarte'][1]:.1e}")
    return True


def four_bar_dict(L=(0.8, 1.8, 1.5), ground=2.0, theta=1.2):
    """Planar four-bar: ground -R- crank -R- coupler -R- rocker, rocker's tip closed to ground point (ground, 0)
    by a revolute cut about z. Thin rods (axial inertia tiny), gravity -y. Closed at q0 by construction. The
    default lengths make a Grashof crank-rocker (0.8 + 2.0 < 1.8 + 1.5): the crank turns fully and the constraint
    Jacobian never loses rank."""
    L1, L2, L3 = L
    A, D = np.array([0.0, 0.0]), np.array([ground, 0.0])
    B = A + L1 * np.array([np.cos(theta), np.sin(theta)])
    r = np.linalg.norm(D - B)
    # C: circle intersection |C - B| = L2, |C - D| = L3 (upper branch)
    a = (L2 ** 2 - L3 ** 2 + r ** 2) / (2 * r)
    hgt = np.sqrt(L2 ** 2 - a ** 2)
    e = (D - B) / r
    C = B + a * e + hgt * np.array([-e[1], e[0]])
    ang = lambda v: float(np.arctan2(v[1], v[0]))          # noqa: E731
    th1, th2, th3 = ang(B - A), ang(C - B), ang(D - C)

    def rod(n, Ln, m=1.0):
        return {"name": n, "mass": m, "com": [Ln / 2, 0, 0],
                "inertia": [1e-3 * m * Ln ** 2 / 12, m * Ln ** 2 / 12, m * Ln ** 2 / 12]}
    return {"name": "four_bar", "gravity": [0, -9.81, 0],
            "bodies": [rod("crank", L1), rod("coupler", L2), rod("rocker", L3)],
            "joints": [{"name": "r1", "type": "revolute", "parent": "ground", "child": "crank", "axis": [0, 0, 1],
                        "q0": th1},
                       {"name": "r2", "type": "revolute", "parent": "crank", "child": "coupler", "axis": [0, 0, 1],
                        "parent_frame": {"pos": [L1, 0, 0]}, "q0": th2 - th1},
                       {"name": "r3", "type": "revolute", "parent": "coupler", "child": "rocker", "axis": [0, 0, 1],
                        "parent_frame": {"pos": [L2, 0, 0]}, "q0": th3 - th2}],
            "loops": [{"name": "r4", "type": "revolute", "parent": "ground", "child": "rocker", "axis": [0, 0, 1],
                       "parent_frame": {"pos": [ground, 0, 0]}, "child_frame": {"pos": [L3, 0, 0]}}],
            "forces": []}


def random_state_for(k: KKT, rng, u_scale=1.0):
    """Random (q, u) in k's layout (quaternions normalised)."""
    from support.peers_from_file import random_state
    return random_state({"joints": k.order}, [f"{j['name']}.q" for j in k.order], rng, u_scale)


if __name__ == "__main__":
    _selftest()
    print("kkt self-test passed")
