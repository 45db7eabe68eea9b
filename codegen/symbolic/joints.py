"""Joint models derived with sympy, one per joint type, in canonical form.

Every joint is written in its *joint frame* on the parent side (the user's axis is turned onto z by
the plan, see ``codegen.algorithms.tree_plan``), so the derived expressions carry no axis parameters:

    child joint frame = parent joint frame * (R(q), d(q))         [KY eqs 9, 12]

From R(q), d(q) and the kinematic map qdot = G(q) u the derivation gives
    S_w  = d(vee(Rdot R^T))/du      relative angular velocity map     [KY eq 16], B^w'
    S_v  = d(ddot)/du               relative linear velocity map      [KY eq 16], B^v'
    c_w  = (dS_w/dt) u,  c_v = (dS_v/dt) u   velocity-product terms   (the Bdot q terms of [KY eq 27])
    H    = [S_v; S_w]  joint projection (motion subspace), W its orthogonal complement [LHZ eq 5]
all in the parent joint frame, plus the child-frame motion subspace S_c and its product term c_J used
by the dense (composite rigid body + Newton-Euler) reference. Quaternion joints use the body-frame
angular velocity u = omega (no singular angles); for them S_w = R(q) (Rdot u = R [u]x u = 0).
"""
from __future__ import annotations

import random
from dataclasses import dataclass
from functools import lru_cache
from typing import Callable, Dict, List, Tuple

import sympy as sp

from ..model import JOINT_TYPES
from .persist import persistent


def skew(v):
    """The skew-symmetric matrix of a 3-vector."""
    return sp.Matrix([[0, -v[2], v[1]], [v[2], 0, -v[0]], [-v[1], v[0], 0]])


def vee(S):
    """The 3-vector of a skew-symmetric matrix."""
    return sp.Matrix([S[2, 1], S[0, 2], S[1, 0]])


def Rz(t):
    """The rotation about z by t."""
    c, s = sp.cos(t), sp.sin(t)
    return sp.Matrix([[c, -s, 0], [s, c, 0], [0, 0, 1]])


def Rx(t):
    """The rotation about x by t."""
    c, s = sp.cos(t), sp.sin(t)
    return sp.Matrix([[1, 0, 0], [0, c, -s], [0, s, c]])


def quat_R(w, x, y, z):
    """Rotation of a unit quaternion in homogeneous form (exact for |q| = 1, smooth elsewhere)."""
    return sp.Matrix([
        [w * w + x * x - y * y - z * z, 2 * (x * y - w * z), 2 * (x * z + w * y)],
        [2 * (x * y + w * z), w * w - x * x + y * y - z * z, 2 * (y * z - w * x)],
        [2 * (x * z - w * y), 2 * (y * z + w * x), w * w - x * x - y * y + z * z]])


def quat_R_normalised(w, x, y, z):
    """The rotation of the quaternion q / |q|: exact at any q != 0.

    The kinematics of every family and of the derivative and C kernels read it, so a quaternion that is not unit
    (an RK4 stage's, before the step's renormalisation) is the same rotation for all of them (as MuJoCo's
    kinematics normalises); the homogeneous form alone scales by |q|^2 and the world-frame (R omega) and child-frame
    (omega) forms of the joint's motion subspace would disagree by |q|^2 - 1."""
    return quat_R(w, x, y, z) / (w * w + x * x + y * y + z * z)


def quat_rate(w, x, y, z, wx, wy, wz):
    """qdot = 1/2 q (x) (0, omega_body)."""
    return sp.Matrix([
        (-x * wx - y * wy - z * wz) / 2,
        (w * wx + y * wz - z * wy) / 2,
        (w * wy + z * wx - x * wz) / 2,
        (w * wz + x * wy - y * wx) / 2])


@dataclass(frozen=True)
class JointModel:
    """The sympy model of one joint type: coordinates, rotation, offset and velocity maps."""

    type: str
    q: Tuple[sp.Symbol, ...]
    u: Tuple[sp.Symbol, ...]
    R: sp.Matrix          # 3x3, child joint frame in parent joint frame
    d: sp.Matrix          # 3, origin of the child joint frame in the parent joint frame
    qdot: sp.Matrix       # nq
    S_w: sp.Matrix        # 3 x nv
    S_v: sp.Matrix        # 3 x nv
    c_w: sp.Matrix        # 3
    c_v: sp.Matrix        # 3
    H: sp.Matrix          # 6 x nv  (linear; angular), parent joint frame
    W: sp.Matrix          # 6 x (6 - nv), H^T W = 0
    S_c: sp.Matrix        # 6 x nv, motion subspace in the child joint frame
    c_J: sp.Matrix        # 6, (dS_c/dt) u in the child joint frame

    @property
    def nq(self):
        """The number of coordinates."""
        return len(self.q)

    @property
    def nv(self):
        """The number of velocity coordinates."""
        return len(self.u)

    def elements(self) -> Dict[str, sp.Basic]:
        """The joint's symbolic elements by name."""
        return {"q": sp.Matrix(self.q), "u": sp.Matrix(self.u), "R": self.R, "d": self.d, "qdot": self.qdot,
                "S_w": self.S_w, "S_v": self.S_v, "c_w": self.c_w, "c_v": self.c_v,
                "H": self.H, "W": self.W, "S_c": self.S_c, "c_J": self.c_J}


def _rate(expr: sp.Matrix, q, qdot) -> sp.Matrix:
    """Time derivative of expr(q) along qdot."""
    if not q:
        return sp.zeros(*expr.shape)
    out = sp.zeros(*expr.shape)
    for qk, qdk in zip(q, qdot):
        out += expr.diff(qk) * qdk
    return sp.simplify(out)


def _complement(S: sp.Matrix) -> sp.Matrix:
    """Orthogonal complement of the span of the 3-vector columns of S (canonical joints only)."""
    S = sp.Matrix.hstack(*[S[:, c] for c in range(S.shape[1]) if any(e != 0 for e in S[:, c])]) \
        if S.shape[1] else S
    k = S.shape[1]
    if k == 0:
        return sp.eye(3)
    if k == 1:
        a = S[:, 0]
        if a == sp.Matrix([0, 0, 1]):
            return sp.Matrix([[1, 0], [0, 1], [0, 0]])
        raise ValueError("canonical single axis must be z")
    if k == 2:
        return sp.simplify(S[:, 0].cross(S[:, 1]))
    return sp.zeros(3, 0)


def _z3():
    return sp.zeros(3, 1)


# joint type -> q -> (R(q), d(q)): the child joint frame in the parent joint frame, canonical (axis along z; a
# universal joint's second axis along x; a planar joint moves in the xy plane), [KY eqs 9, 12]. One
# entry per codegen.model.JOINT_TYPES; the velocity maps S, the complements W and the rest follow in _build.
KINEMATICS: Dict[str, Callable[[tuple], Tuple[sp.Matrix, sp.Matrix]]] = {
    "revolute": lambda q: (Rz(q[0]), _z3()),
    "prismatic": lambda q: (sp.eye(3), sp.Matrix([0, 0, q[0]])),
    "cylindrical": lambda q: (Rz(q[0]), sp.Matrix([0, 0, q[1]])),
    "universal": lambda q: (Rz(q[0]) * Rx(q[1]), _z3()),
    "spherical": lambda q: (quat_R_normalised(*q), _z3()),
    "planar": lambda q: (Rz(q[2]), sp.Matrix([q[0], q[1], 0])),
    "free": lambda q: (quat_R_normalised(*q[3:7]), sp.Matrix(q[:3])),
    "fixed": lambda q: (sp.eye(3), _z3()),
}


def _qdot(jt, q, u) -> sp.Matrix:
    """qdot = G(q) u of a joint.

    The velocities themselves, except a unit quaternion's rate from the body rate at the same
    offset (JointType.quaternion)."""
    if not jt.nv:
        return sp.zeros(0, 1)
    o = jt.quaternion
    if o is None:
        return sp.Matrix(u)
    return sp.Matrix([*u[:o], *quat_rate(*q[o:o + 4], *u[o:o + 3]), *u[o + 3:]])


def _build(jtype: str) -> JointModel:
    jt = JOINT_TYPES[jtype]
    nq, nv = jt.nq, jt.nv
    q = sp.symbols(f"q[0:{nq}]", real=True) if nq else ()
    u = sp.symbols(f"u[0:{nv}]", real=True) if nv else ()
    Z3 = sp.zeros(3, 1)
    R, d = KINEMATICS[jtype](q)
    qdot = _qdot(jt, q, u)
    quat_w = None if jt.quaternion is None else R * sp.Matrix(u[jt.quaternion:jt.quaternion + 3])
    um = sp.Matrix(u)
    if quat_w is None:   # [KY eq 16]: B^w' = d(vee(Rdot R^T))/d(qdot)
        w = sp.simplify(vee(_rate(R, q, qdot) * R.T))
    else:                # quaternion: omega_parent = R omega_body, R the rotation of q / |q|
        w = quat_w
    v = _rate(d, q, qdot)
    S_w = w.jacobian(um) if nv else sp.zeros(3, 0)
    S_v = v.jacobian(um) if nv else sp.zeros(3, 0)
    c_w = sp.simplify(sp.expand(_rate(S_w * um, q, qdot))) if nv else Z3
    c_v = sp.simplify(sp.expand(_rate(S_v * um, q, qdot))) if nv else Z3
    H = sp.Matrix.vstack(S_v, S_w)
    Wv, Ww = _complement(S_v), _complement(S_w)
    W = sp.diag(Wv, Ww) if (Wv.shape[1] or Ww.shape[1]) else sp.zeros(6, 0)
    if W.shape[0] != 6:     # diag of a 3x0 block drops rows; rebuild explicitly
        W = sp.Matrix.vstack(sp.Matrix.hstack(Wv, sp.zeros(3, Ww.shape[1])),
                             sp.Matrix.hstack(sp.zeros(3, Wv.shape[1]), Ww))
    # child-frame motion subspace (linear; angular at the child origin) and its product term
    Rt = R.T
    if quat_w is None:
        S_wc = Rt * S_w
    else:   # quaternion joints: R^T R = I (R of q / |q|), the angular block is the body rate itself
        o = jt.quaternion
        S_wc = sp.Matrix.hstack(sp.zeros(3, o), sp.eye(3), sp.zeros(3, nv - o - 3))
    S_c = sp.simplify(sp.Matrix.vstack(Rt * S_v, S_wc)) if nv else sp.zeros(6, 0)
    c_J = sp.simplify(sp.expand(_rate(S_c * um, q, qdot))) if nv else sp.zeros(6, 1)
    return JointModel(jtype, tuple(q), tuple(u), R, d, qdot, S_w, S_v, c_w, c_v, H, W, S_c, c_J)


@lru_cache(maxsize=None)
def joint_model(jtype: str) -> JointModel:
    """The symbolic model of a joint type, derived once per process."""
    return _build(jtype)


# ------------------------------------------------------------------ C code for the kernels

@persistent
def column_carriers(jtype: str, spatial: bool = False) -> Tuple[int, ...]:
    """Per velocity column c of a joint, the columns whose motion carries it (a bit mask).

    The parent-frame columns H = [S_v; S_w] of a joint (S_v the child origin's velocity) change with its
    coordinates as vectors fixed in a body between parent and child: dH_c/dt = (sum over k in mask_c of S_w,k u_k)
    x H_c (both halves), the mask empty for a revolute, prismatic or planar joint, the first axis for a universal
    joint's second, every column for a quaternion's body rates: the engine's Jacobian rates (dJ/dt). spatial: the
    columns as spatial motions at the parent joint's origin, S_c = (S_w,c; S_v,c + d x S_w,c), whose rates are
    sum over k in mask_c of u_k (S_k x S_c) (motion cross product): a translation carries the rotations about
    the moving origin too (the engine's velocity derivatives, velocity_bases). Each mask is the smallest that
    holds, checked at random states (a joint type no mask fits is refused)."""
    jm = joint_model(jtype)
    if not jm.nv:
        return ()
    rng = random.Random(7)
    q, u = jm.q, jm.u
    if spatial:
        H = sp.Matrix.vstack(jm.S_w, jm.S_v + sp.Matrix.hstack(*[jm.d.cross(jm.S_w[:, c]) for c in range(jm.nv)]))
    else:
        H = sp.Matrix.vstack(jm.S_v, jm.S_w)
    Hd = sum((H.diff(qk) * qdk for qk, qdk in zip(q, jm.qdot)), sp.zeros(6, jm.nv))   # dH/dt, unsimplified
    pts = []
    for _ in range(3):
        qv = [rng.uniform(-1.5, 1.5) for _ in q]
        if JOINT_TYPES[jtype].quaternion is not None:
            o = JOINT_TYPES[jtype].quaternion
            nq = sum(x * x for x in qv[o:o + 4]) ** 0.5
            qv[o:o + 4] = [x / nq for x in qv[o:o + 4]]
        uv = [rng.uniform(-1.5, 1.5) for _ in u]
        at = dict(zip(q + u, qv + uv))
        Hn, Hdn = H.subs(at).evalf(), Hd.subs(at).evalf()
        pts.append((Hn, Hdn, uv))

    def rate(Hn, uv, c, mask):
        if spatial:                                     # sum u_k (S_k x S_c): (w_k x w_c; w_k x v_c + v_k x w_c)
            out = sp.zeros(6, 1)
            for k in range(jm.nv):
                if mask >> k & 1:
                    wk, vk, wc, vc = Hn[:3, k], Hn[3:, k], Hn[:3, c], Hn[3:, c]
                    out += uv[k] * sp.Matrix.vstack(wk.cross(wc), wk.cross(vc) + vk.cross(wc))
            return out
        om = sum((Hn[3:, k] * uv[k] for k in range(jm.nv) if mask >> k & 1), sp.zeros(3, 1))
        return sp.Matrix.vstack(om.cross(Hn[:3, c]), om.cross(Hn[3:, c]))

    def fits(c, mask):
        return all(max(abs(float(e)) for e in (Hdn[:, c] - rate(Hn, uv, c, mask))) <= 1e-9 for Hn, Hdn, uv in pts)

    out = []
    for c in range(jm.nv):
        masks = sorted(range(1 << jm.nv), key=lambda m: (bin(m).count("1"), m))
        m = next((m for m in masks if fits(c, m)), None)
        if m is None:
            raise NotImplementedError(f"joint type {jtype!r}: column {c} is not carried by its own axes")
        out.append(m)
    return tuple(out)


def _printer():
    from sympy.printing.c import C99CodePrinter

    class P(C99CodePrinter):
        def _print_Pow(self, expr):     # small integer powers as products (no pow() calls)
            b, e = expr.as_base_exp()
            if e.is_Integer and 1 < e <= 4:
                s = self.parenthesize(b, 100)
                return "*".join([s] * int(e))
            return super()._print_Pow(expr)

    return P()


def c_assignments(outputs: List[Tuple[str, sp.Matrix]], prefix: str = "x") -> Tuple[List[str], List[str]]:
    """CSE over several matrices; returns (temporaries, assignment lines) as Cython-compatible C text.

    Matrices are stored column-major: out[rows*col + row]. Entries that are identically zero are
    written too, so callers need not clear their buffers.
    """
    p = _printer()
    flat, targets = [], []
    for name, M in outputs:
        for c in range(M.shape[1]):
            for r in range(M.shape[0]):
                flat.append(M[r, c])
                targets.append(f"{name}[{M.shape[0] * c + r}]")
    reps, red = sp.cse(flat, symbols=sp.numbered_symbols(prefix), optimizations="basic")
    temps = [f"{p.doprint(s)} = {p.doprint(e)}" for s, e in reps]
    lines = [f"{t} = {p.doprint(e)}" for t, e in zip(targets, red)]
    return temps, lines


@persistent
def jcalc_code(jtype: str) -> dict:
    """Per-type code blocks for the templates: jcalc (parent-frame), jcalc_child, qdot (kept between processes)."""
    jm = joint_model(jtype)
    blocks = {}
    blocks["jcalc"] = c_assignments([("R", jm.R.T), ("d", jm.d), ("Sv", jm.S_v), ("Sw", jm.S_w),
                                     ("cv", jm.c_v), ("cw", jm.c_w)])   # R.T column-major = R row-major
    blocks["jchild"] = c_assignments([("Sc", jm.S_c), ("cJ", jm.c_J)])
    blocks["qdot"] = c_assignments([("qd", jm.qdot)]) if jm.nq else ([], [])
    blocks["pose"] = c_assignments([("R", jm.R.T), ("d", jm.d)])
    return blocks
