"""Analytical derivatives of rigid-tree dynamics (Carpentier & Mansard 2018).

Analytical derivatives of rigid-tree dynamics: the world-frame recursions of Carpentier & Mansard (2018),
"Analytical derivatives of rigid body dynamics algorithms" (RSS), as sympy kernels printed as Cython.

Citation key ``[CM]``: [CM eq 9] the world-frame Newton-Euler terms, [CM eqs 10-12] the partial derivatives of
joint velocities and accelerations, [CM eq 13] the inertia variation, [CM Alg. 1] the O(n d) pass pair. The
derivatives are taken in the tangent space of each joint: a perturbation delta of joint k moves its child by the
twist S_k delta (S_k the joint's world motion subspace), so for spherical and free joints the angular part is the
local (body-frame) rotation q (x) exp(delta / 2), as pinocchio's convention; the free joint's translation is
along the parent axes, as its velocity u[0:3].

Everything is world frame, spatial vectors (linear; angular) about the world origin; a spatial inertia is stored in
the 10 numbers Y = (m, h = m c, I_O upper: xx xy xz yy yz zz), Y x = (m x_l + x_w x h ; h x x_l + I_O x_w).

Joint columns attached to different frames. Carpentier & Mansard take every column of a joint fixed in its child.
Our universal, planar and free joints are not (their first columns are fixed in the parent or an intermediate
frame), so each joint type is split into *groups* of columns, each group a sub-joint whose columns are fixed in the
frame after it (``GROUPS``; universal = revolute z, then revolute x'; planar = translations x, y, then rotation z;
free = translations, then body rates). A group g sees the velocity vb_g and acceleration ab_g of the frame before
it; DOF d is an ancestor of DOF c when d's group comes first in the same joint or d's joint is an ancestor of c's.

Kernels (one C function each, templates/shared/kernels.j2):

    dworld      world pose and inertia of body j: A_j = A_i E^T, p_j = p_i + A_i rr (E, rr from the RNEA's local
                transform), Y_j about the world origin                                      [CM eq 9]
    dcolumn     world joint column S = (A s_v + p x A s_w ; A s_w) of a child-frame column (s_v; s_w)
    dcol_terms  dV/dq = vb x S, dA/du = (vb + va) x S                                   [CM eqs 10-11]
    dacc_term   dA/dq = ab x S + vb x dV/dq                                              [CM eq 12]
    dvelocity   the inertia variation B x = Y (x x v) + v x* (Y x) + x x* h, h = Y v            [CM eq 13]
    dforce      f = Y a + v x* (Y v), a with gravity                                         [CM eq 9]
    dinertia    the 6x6 matrix of Y (start of the articulated inertia)                       [RBDA 7.3]
    dforce_col  composite partials of DOF d: dF/dq = S x* f^C + Y^C dA/dq + B^C dV/dq, dF/du = Y^C dA/du + B^C S,
                dF/dud = Y^C S, and the row factor B^C^T S                                  [CM Alg. 1]
    dcomposite_col  F = Y^C S: M's entries S_c . F before the forward derivatives' solve     [RBDA 6.2]
    mcross      motion cross product c = a x b

The entries (DOF c a descendant of, or in the same group as, DOF d; otherwise the transposed case):
    dtau_c/dq_d = (Y^C S_c) . dA/dq_d + (B^C^T S_c) . dV/dq_d      dtau_d/dq_c = S_d . dF/dq_c (d before c)
    dtau_c/du_d = (Y^C S_c) . dA/du_d + (B^C^T S_c) . S_d          dtau_d/du_c = S_d . dF/du_c
    M_cd        = (Y^C S_c) . S_d                                   M_dc       = S_d . dF/dud_c
"""
from __future__ import annotations

from typing import Dict, Tuple

import sympy as sp

from .articulated import Arg, Kernel, KernelCode, arr
from .joints import joint_model, skew
from .layout import BODY_PARAMS as PB
from .persist import persistent

# Sub-joint groups of each joint type: DOF ranges [start, stop) whose columns are fixed in the frame after them
# (one entry per codegen.model.JOINT_TYPES; tests/model/test_joint_types.py checks the coverage).
GROUPS: Dict[str, Tuple[Tuple[int, int], ...]] = {
    "revolute": ((0, 1),), "prismatic": ((0, 1),), "cylindrical": ((0, 2),), "universal": ((0, 1), (1, 2)),
    "spherical": ((0, 3),), "planar": ((0, 2), (2, 3)), "free": ((0, 3), (3, 6)), "fixed": (),
}

NY = 10           # inertia numbers: m, h (3), I_O upper (6)
_UP = ((0, 0), (0, 1), (0, 2), (1, 1), (1, 2), (2, 2))


def group_ends(jtype: str) -> Tuple[int, ...]:
    """Per DOF of the joint type, the end of its group (the first DOF of the next group)."""
    return tuple(b for a, b in GROUPS[jtype] for _ in range(a, b))


def group_starts(jtype: str) -> Tuple[int, ...]:
    """For each velocity coordinate of a joint type, the start of its column group."""
    return tuple(a for a, b in GROUPS[jtype] for _ in range(a, b))


# ---------------------------------------------------------------------------------------------- spatial algebra
def mcross(a: sp.Matrix, b: sp.Matrix) -> sp.Matrix:
    """Motion cross product a x b of (linear; angular) vectors: (a_w x b_l + a_l x b_w ; a_w x b_w)."""
    al, aw, bl, bw = a[:3, 0], a[3:, 0], b[:3, 0], b[3:, 0]
    return sp.Matrix.vstack(aw.cross(bl) + al.cross(bw), aw.cross(bw))


def fcross(v: sp.Matrix, f: sp.Matrix) -> sp.Matrix:
    """Force cross product v x* f of a motion v and a force (f; n): (v_w x f ; v_w x n + v_l x f)."""
    vl, vw, ff, nn = v[:3, 0], v[3:, 0], f[:3, 0], f[3:, 0]
    return sp.Matrix.vstack(vw.cross(ff), vw.cross(nn) + vl.cross(ff))


def inertia_matrix(Y) -> sp.Matrix:
    """6x6 matrix of the 10 inertia numbers Y."""
    m, h = Y[0], sp.Matrix(Y[1:4])
    Io = sp.Matrix(3, 3, lambda a, b: Y[4 + _UP.index((min(a, b), max(a, b)))])
    return sp.Matrix.vstack(sp.Matrix.hstack(m * sp.eye(3), -skew(h)), sp.Matrix.hstack(skew(h), Io))


def inertia_apply(Y, x: sp.Matrix) -> sp.Matrix:
    """Y x = (m x_l + x_w x h ; h x x_l + I_O x_w)."""
    return inertia_matrix(Y) * x


# ---------------------------------------------------------------------------------------------- kernels
def _Kr(name, equation, doc, args) -> Kernel:
    return Kernel(name, equation, doc, args, optimizations=None, tree_sums=True)


def dworld() -> Kernel:
    """The kernel of a body's world pose and inertia."""
    k = _Kr("dworld", "[CM eq 9]",
            "World pose and inertia of body j from its parent's pose (Ai, pi) and the local transform X = (E, rr) "
            "(E = (C R)^T, rr in parent coordinates): A = Ai E^T, p = pi + Ai rr, Y about the world origin from "
            f"m = pb[{PB.m.off}], rho = pb[{PB.rho.off}:{PB.rho.end}], J' = pb[{PB.J.off}:{PB.J.end}] "
            "(body reference frame).",
            (Arg("Ai", 9, "in"), Arg("pi", 3, "in"), Arg("X", 12, "in"), Arg("pb", PB.J.end, "in"),
             Arg("A", 9, "out"), Arg("p", 3, "out"), Arg("Y", NY, "out")))
    Ai = sp.Matrix(3, 3, list(arr("Ai", 9)))
    X = arr("X", 12)
    E = sp.Matrix(3, 3, list(X[:9]))
    A = sp.Matrix(3, 3, [k.let(f"a{a}{b}", e) for (a, b), e in
                         zip([(a, b) for a in range(3) for b in range(3)], list(Ai * E.T))])
    p = k.lets_vec("pp", list(arr("pi", 3) + Ai * sp.Matrix(X[9:12])))
    m = sp.Symbol(f"pb[{PB.m.off}]")
    rho = sp.Matrix([sp.Symbol(f"pb[{PB.rho.off + c}]") for c in range(3)])
    J = sp.Matrix(3, 3, [sp.Symbol(f"pb[{PB.J.off + c}]") for c in range(9)])
    c = k.lets_vec("cc", list(p + A * rho))                             # world centroid
    Jw = A * J * A.T                                                    # central inertia, world
    Io = Jw - m * skew(c) * skew(c)                                     # about the origin (parallel axes)
    k.out("A", [A[a, b] for a in range(3) for b in range(3)])
    k.out("p", list(p))
    k.out("Y", [m] + list(m * c) + [Io[a, b] for a, b in _UP])
    return k


def dcolumn() -> Kernel:
    """The kernel of a world joint column."""
    k = _Kr("dcolumn", "[CM eq 9]",
            "World joint column about the origin of a child-frame column Sc = (s_v; s_w) of body (A, p): "
            "S = (A s_v + p x A s_w ; A s_w).",
            (Arg("A", 9, "in"), Arg("p", 3, "in"), Arg("Sc", 6, "in"), Arg("S", 6, "out")))
    A = sp.Matrix(3, 3, list(arr("A", 9)))
    Sc = arr("Sc", 6)
    w = k.lets_vec("w", list(A * Sc[3:, 0]))
    k.out("S", list(A * Sc[:3, 0] + arr("p", 3).cross(w)) + list(w))
    return k


def dcol_terms() -> Kernel:
    """The kernel of the velocity partials of a column."""
    k = _Kr("dcol_terms", "[CM eqs 10-11]",
            "Velocity partials of the frames after DOF d with respect to q_d and u_d (vb: velocity of the frame "
            "before d's group; va: after it): dVq = vb x S, dAv = (vb + va) x S.",
            (Arg("vb", 6, "in"), Arg("va", 6, "in"), Arg("S", 6, "in"), Arg("dVq", 6, "out"), Arg("dAv", 6, "out")))
    vb, va, S = arr("vb", 6), arr("va", 6), arr("S", 6)
    k.out("dVq", list(mcross(vb, S)))
    k.out("dAv", list(mcross(vb + va, S)))
    return k


def dacc_term() -> Kernel:
    """The kernel of the acceleration partial of a column."""
    k = _Kr("dacc_term", "[CM eq 12]",
            "Acceleration partial of the frames after DOF d with respect to q_d (ab: acceleration of the frame before "
            "d's group, gravity and ud in it): dAq = ab x S + vb x dVq.",
            (Arg("vb", 6, "in"), Arg("ab", 6, "in"), Arg("S", 6, "in"), Arg("dVq", 6, "in"), Arg("dAq", 6, "out")))
    k.out("dAq", list(mcross(arr("ab", 6), arr("S", 6)) + mcross(arr("vb", 6), arr("dVq", 6))))
    return k


def dvelocity() -> Kernel:
    """The kernel of a body's velocity terms."""
    k = _Kr("dvelocity", "[CM eq 13]",
            "Velocity terms of body j in the world frame: h = Y v and the inertia variation B (6x6, row major): "
            "B x = Y (x x v) + v x* (Y x) + x x* h.",
            (Arg("Y", NY, "in"), Arg("v", 6, "in"), Arg("B", 36, "out")))
    Y, v = arr("Y", NY), arr("v", 6)
    h = k.lets_vec("h", list(inertia_apply(Y, v)))
    x = sp.Matrix(sp.symbols("x0:6"))
    Bx = inertia_apply(Y, mcross(x, v)) + fcross(v, inertia_apply(Y, x)) + fcross(x, h)
    B = Bx.jacobian(x)
    k.out("B", [B[r, c] for r in range(6) for c in range(6)])
    return k


def dforce() -> Kernel:
    """The kernel of a body's Newton-Euler force."""
    k = _Kr("dforce", "[CM eq 9]", "Newton-Euler force of body j in the world frame: f = Y a + v x* (Y v), a with "
            "gravity (the base accelerates at -g).",
            (Arg("Y", NY, "in"), Arg("v", 6, "in"), Arg("a", 6, "in"), Arg("f", 6, "out")))
    Y, v, a = arr("Y", NY), arr("v", 6), arr("a", 6)
    h = k.lets_vec("h", list(inertia_apply(Y, v)))
    k.out("f", list(inertia_apply(Y, a) + fcross(v, h)))
    return k


def dinertia() -> Kernel:
    """The kernel of a body's 6 x 6 inertia matrix."""
    k = _Kr("dinertia", "[RBDA 7.3]", "The 6x6 matrix (row major) of the 10 inertia numbers Y: the articulated "
            "inertia of a body before its children are added (Featherstone's ABA in world coordinates).",
            (Arg("Y", NY, "in"), Arg("I", 36, "out")))
    Im = inertia_matrix(arr("Y", NY))
    k.out("I", [Im[r, c] for r in range(6) for c in range(6)])
    return k


def dforce_col() -> Kernel:
    """The kernel of the composite partials of a column."""
    k = _Kr("dforce_col", "[CM Alg. 1]",
            "Composite partials of DOF d at its body's composite (Yc, Bc, fc): dFq = S x* fc + Yc dAq + Bc dVq, "
            "dFv = Yc dAv + Bc S, dFa = Yc S, and the row factor BtS = Bc^T S.",
            (Arg("Yc", NY, "in"), Arg("Bc", 36, "in"), Arg("fc", 6, "in"), Arg("S", 6, "in"), Arg("dVq", 6, "in"),
             Arg("dAq", 6, "in"), Arg("dAv", 6, "in"), Arg("dFq", 6, "out"), Arg("dFv", 6, "out"),
             Arg("dFa", 6, "out"), Arg("BtS", 6, "out")))
    Y, S = arr("Yc", NY), arr("S", 6)
    B = sp.Matrix(6, 6, list(arr("Bc", 36)))
    k.out("dFq", list(fcross(S, arr("fc", 6)) + inertia_apply(Y, arr("dAq", 6)) + B * arr("dVq", 6)))
    k.out("dFv", list(inertia_apply(Y, arr("dAv", 6)) + B * S))
    k.out("dFa", list(inertia_apply(Y, S)))
    k.out("BtS", list(B.T * S))
    return k


def dcomposite_col() -> Kernel:
    """The kernel of a composite's momentum per unit rate of a column."""
    k = _Kr("dcomposite_col", "[RBDA 6.2]",
            "The composite rigid body algorithm's force of DOF d in the world frame: F = Yc S (the momentum of the "
            "composite Yc per unit rate of the column S); M[c, d] = S_c^T F for c a DOF of d's body or of its "
            "ancestors.",
            (Arg("Yc", NY, "in"), Arg("S", 6, "in"), Arg("F", 6, "out")))
    k.out("F", list(inertia_apply(arr("Yc", NY), arr("S", 6))))
    return k


def mcross_kernel() -> Kernel:
    """The kernel of the motion cross product."""
    k = _Kr("mcross", "[CM eq 10]", "Motion cross product c = a x b (linear; angular).",
            (Arg("a", 6, "in"), Arg("b", 6, "in"), Arg("c", 6, "out")))
    k.out("c", list(mcross(arr("a", 6), arr("b", 6))))
    return k


def derivative_kernel_objects() -> Tuple[Kernel, ...]:
    """The sympy kernels of the derivative passes (for the tests: ``Kernel.evaluate``)."""
    return (dworld(), dcolumn(), dcol_terms(), dacc_term(), dvelocity(), dforce(), dinertia(), dforce_col(),
            dcomposite_col(), mcross_kernel())


@persistent
def derivative_kernels() -> Tuple[KernelCode, ...]:
    """The printed kernels of the derivative passes (templates/shared/derivatives.pyx.j2), kept between processes."""
    return tuple(KernelCode(k.name, k.equation, k.doc, k.params(), tuple(k.lines)) for k in derivative_kernel_objects())


# ---------------------------------------------------------------------------------------------- mbgen inspect
def elements(jtype: str) -> Dict[str, sp.Basic]:
    """The symbolic building blocks of the derivatives for one joint type.

    Its child-frame columns S_c, the
    groups of columns fixed in one frame, and the column terms dV/dq, dA/dq, dA/du [CM eqs 10-12] of its first
    column with symbolic frame velocity vb, acceleration ab."""
    jm = joint_model(jtype)
    out: Dict[str, sp.Basic] = {"S_c": jm.S_c, "groups": sp.Matrix([list(g) for g in GROUPS[jtype]])
                                if GROUPS[jtype] else sp.zeros(0, 2)}
    if jm.nv:
        vb, ab, S = (sp.Matrix(sp.symbols(f"{n}0:6", real=True)) for n in ("vb", "ab", "S"))
        dV = mcross(vb, S)
        out.update({"dV/dq": dV, "dA/dq": mcross(ab, S) + mcross(vb, dV),
                    "dA/du (va = vb + S u)": mcross(2 * vb + S * sp.Symbol("u"), S)})
    return out

