"""Per-body kinematics and Newton-Euler kernels, specialised at compile time to each body's structure.

A body's *pattern* is what its numbers look like, not the numbers themselves: whether its parent is ground,
whether the canonical parent joint frame C_j is the identity (joint axis along the parent frame's own axis,
no placement rotation), which components of the joint offset s_j are non-zero. The pattern is part of the
build key (``codegen.symbolic.pattern.Pattern``, ``codegen.algorithms.tree_plan.Plan.code_pattern``), like pinocchio's RX/RY/RZ joint types: sympy
drops every term that is structurally zero and prints the rest after CSE, so a planar chain's revolute
joint about z multiplies by cos/sin only, and a body on ground does no parent products at all. A general
value keeps the general path (C read from the parameters).

Kernels (``static inline void NAME(...)`` C functions, printed by ``articulated.kernel_lines`` and
``codegen.compiler.c_emit``):

    kin_<kind>    world kinematics of body j from its parent's [KY eqs 9-21]: A_j = A_i C_j R_j [KY eq 9],
                  r_j = r_i + A_i s'_j + A_i C_j d'_j [KY eqs 11-14], centroid [KY eq 14], joint columns H = A_i C_j [S_v; S_w]
                  [KY eq 15], relative velocity [KY eqs 17-18], omega [KY eq 19], joint point and centroid velocities
                  [KY eqs 20-21], product terms [A_i C_j c_v; A_i C_j c_w] [KY eq 27]
    rnea_<kind>   forward pass of the recursive Newton-Euler algorithm in body coordinates (Featherstone 2008,
                  Table 5.1): X = (E, rr), V_j = X V_i + S u, A_j = X A_i + S ud + c_J + V_j x vJ,
                  F_j = I A_j + V_j x* I V_j
    rnea_back_<kind>  backward pass: tau_j = S^T F_j, F_i += X^T F_j
    pose_<kind>   X = (E, rr) alone (composite rigid body algorithm of the dense method)

Spatial vectors are (linear; angular) about the body reference frame origin. The spatial inertia is read
from the per-body derived numbers ``ib`` (``inertia_numbers``): m, h = m rho, I_O (upper triangle of the
inertia about the origin, xx xy xz yy yz zz), so I x = (m x_l + x_a x h ; h x x_l + I_O x_a).
"""
from __future__ import annotations

from functools import lru_cache
from typing import Tuple

import sympy as sp

from .articulated import Arg, Kernel, KernelCode, arr
from .joints import joint_model
from .layout import BODY_PARAMS as PB
from .pattern import Pattern
from .persist import persistent

NIB = 10          # derived inertia numbers per body: m, h (3), I_O (6)


def _K(name, equation, doc, args) -> Kernel:
    """A kernel reduced by plain sympy.cse (no factoring pass: 3x faster here, no more operations)."""
    return Kernel(name, equation, doc, args, optimizations=None)


def _C(p: Pattern) -> sp.Matrix:
    return sp.eye(3) if p.ident else sp.Matrix(3, 3, lambda a, b: sp.Symbol(f"pb[{PB.C.off + 3 * a + b}]"))


def _s(p: Pattern) -> sp.Matrix:
    return sp.Matrix([sp.Symbol(f"pb[{PB.s.off + k}]") if p.off[k] else 0 for k in range(3)])


def _lets_mat(k: Kernel, name: str, M: sp.Matrix) -> sp.Matrix:
    """Named locals for the non-trivial entries of M (numbers and plain symbols stay inline)."""
    out = sp.zeros(*M.shape)
    for a in range(M.shape[0]):
        for b in range(M.shape[1]):
            e = M[a, b]
            out[a, b] = e if (e.is_Number or e.is_Symbol) else k.let(f"{name}{a}{b}", e)
    return out


def kin_kernel(p: Pattern, columns: bool = True) -> Kernel:
    """The kinematics kernel of a body pattern.

    Without columns, it writes no joint columns H, product terms cw or relative velocities rel (for a family that
    derives them from A and w: ``body_axes_ball``)."""
    jm = joint_model(p.type)
    args = [] if p.root else [Arg("Ai", 9, "in"), Arg("ri", 3, "in"), Arg("wi", 3, "in"), Arg("vri", 3, "in")]
    args += [Arg("q", max(jm.nq, 1), "in"), Arg("u", max(jm.nv, 1), "in"), Arg("pb", PB.rho.end, "in"),
             Arg("A", 9, "out"), Arg("r", 3, "out"), Arg("rc", 3, "out"), Arg("w", 3, "out"), Arg("vr", 3, "out"),
             Arg("vc", 3, "out")]
    if columns:
        args += [Arg("H", 6 * max(jm.nv, 1), "out"), Arg("cw", 6, "out"), Arg("rel", 6, "out")]
    k = _K(f"kin_{p.name}", "[KY eqs 9-21, 27]",
               f"World kinematics of a {p.type} body ({'ground' if p.root else 'body'} parent, "
               f"C_j {'= I' if p.ident else 'general'}, s_j components {p.name.split('_')[-1][2:]})"
               + ("." if columns else ": A, r, rc, w, vr, vc only."), tuple(args))
    Z = sp.zeros(3, 1)
    Ai = sp.eye(3) if p.root else sp.Matrix(3, 3, list(arr("Ai", 9)))
    ri, wi, vri = (Z, Z, Z) if p.root else (arr("ri", 3), arr("wi", 3), arr("vri", 3))
    Ap = _lets_mat(k, "ap", Ai * _C(p))                                  # A_i C_j
    A = _lets_mat(k, "aa", Ap * jm.R)                                    # [KY eq 9]
    sd = _lets_mat(k, "sd", Ai * _s(p) + Ap * jm.d)                      # [KY eqs 11-13]: s_j + d_j, world
    rho = _lets_mat(k, "ro", A * sp.Matrix([sp.Symbol(f"pb[{PB.rho.off + c}]") for c in range(3)]))   # [KY eq 11]
    um = sp.Matrix(jm.u) if jm.nv else sp.zeros(0, 1)
    H = sp.Matrix.vstack(Ap * jm.S_v, Ap * jm.S_w) if jm.nv else sp.zeros(6, 0)      # [KY eq 15]
    H = _lets_mat(k, "h", H) if jm.nv else H
    rel = H * um if jm.nv else sp.zeros(6, 1)                            # [KY eqs 17-18]
    rel = _lets_mat(k, "rl", rel)
    w = wi + rel[3:, 0]                                                  # [KY eq 19]
    vr = vri + wi.cross(sd) + rel[:3, 0]                                 # [KY eqs 20-21]
    vr = _lets_mat(k, "vj", vr)
    k.out("A", list(A))                                                  # row major
    k.out("r", list(ri + sd))                                            # [KY eq 14]
    k.out("rc", list(ri + sd + rho))
    k.out("w", list(w))
    k.out("vr", list(vr))
    k.out("vc", list(vr + w.cross(rho)))                                 # [KY eq 21]
    if not columns:
        return k
    if jm.nv:
        k.out("H", [H[a, c] for c in range(jm.nv) for a in range(6)])   # 6 x n, column major
    k.out("cw", list(Ap * jm.c_v) + list(Ap * jm.c_w))
    k.out("rel", list(rel))
    return k


def _X(k: Kernel, p: Pattern):
    """E = (C R)^T (parent -> child coordinates) and rr = s + C d (child origin, parent coordinates)."""
    jm = joint_model(p.type)
    CR = _C(p) * jm.R
    E = _lets_mat(k, "e", CR.T)
    rr = _lets_mat(k, "rr", _s(p) + _C(p) * jm.d)
    return E, rr


def _inertia_times(x: sp.Matrix) -> sp.Matrix:
    """I x with I from ib: (m x_l + x_a x h ; h x x_l + I_O x_a)."""
    ib = arr("ib", NIB)
    m, h = ib[0], sp.Matrix(ib[1:4])
    I_O = sp.Matrix([[ib[4], ib[5], ib[6]], [ib[5], ib[7], ib[8]], [ib[6], ib[8], ib[9]]])
    xl, xa = x[:3, 0], x[3:, 0]
    return sp.Matrix.vstack(m * xl + xa.cross(h), h.cross(xl) + I_O * xa)


def rnea_kernel(p: Pattern) -> Kernel:
    """The forward pass kernel of the recursive Newton-Euler algorithm of a body pattern."""
    jm = joint_model(p.type)
    args = [Arg("g", 3, "in")] if p.root else [Arg("Vi", 6, "in"), Arg("Ai", 6, "in")]
    args += [Arg("q", max(jm.nq, 1), "in"), Arg("u", max(jm.nv, 1), "in"), Arg("ud", max(jm.nv, 1), "in"),
             Arg("pb", PB.rho.end, "in"), Arg("ib", NIB, "in"), Arg("V", 6, "out"), Arg("Acc", 6, "out"),
             Arg("F", 6, "out"), Arg("X", 12, "out")]
    k = _K(f"rnea_{p.name}", "Featherstone (2008) Table 5.1, forward pass",
               f"RNEA forward pass of a {p.type} body in body coordinates (linear; angular): X = (E, rr), "
               "V = X V_i + S u, A = X A_i + S ud + c_J + V x vJ, F = I A + V x* I V; ground parent: V_i = 0, "
               "A_i = -gravity.", tuple(args))
    E, rr = _X(k, p)
    if p.root:
        Vi, Ai = sp.zeros(6, 1), sp.Matrix.vstack(-arr("g", 3), sp.zeros(3, 1))
    else:
        Vi, Ai = arr("Vi", 6), arr("Ai", 6)

    def xmotion(v):       # X v = (E (v_l + v_a x rr) ; E v_a)   (v_a x rr = -(rr x v_a))
        return sp.Matrix.vstack(E * (v[:3, 0] + v[3:, 0].cross(rr)), E * v[3:, 0])

    um = sp.Matrix(jm.u) if jm.nv else sp.zeros(0, 1)
    udm = sp.Matrix([sp.Symbol(f"ud[{c}]") for c in range(jm.nv)]) if jm.nv else sp.zeros(0, 1)
    vJ = jm.S_c * um if jm.nv else sp.zeros(6, 1)
    V = _lets_mat(k, "v", xmotion(Vi) + vJ)
    cross_m = sp.Matrix.vstack(V[3:, 0].cross(vJ[:3, 0]) + V[:3, 0].cross(vJ[3:, 0]), V[3:, 0].cross(vJ[3:, 0]))
    Acc = xmotion(Ai) + (jm.S_c * udm if jm.nv else sp.zeros(6, 1)) + jm.c_J + cross_m
    Acc = _lets_mat(k, "a", Acc)
    h = _lets_mat(k, "hv", _inertia_times(V))
    F = _inertia_times(Acc) + sp.Matrix.vstack(V[3:, 0].cross(h[:3, 0]),
                                               V[3:, 0].cross(h[3:, 0]) + V[:3, 0].cross(h[:3, 0]))
    k.out("V", list(V))
    k.out("Acc", list(Acc))
    k.out("F", list(F))
    k.out("X", list(E) + list(rr))
    return k


def rnea_back_kernel(p: Pattern) -> Kernel:
    """The backward pass kernel of the recursive Newton-Euler algorithm of a body pattern."""
    jm = joint_model(p.type)
    args = [Arg("q", max(jm.nq, 1), "in"), Arg("F", 6, "in"), Arg("X", 12, "in"), Arg("tau", max(jm.nv, 1), "out")]
    if not p.root:
        args.append(Arg("Fp", 6, "inout"))
    k = _K(f"rnea_back_{p.name}", "Featherstone (2008) Table 5.1, backward pass",
               f"tau = S^T F for a {p.type} body; parent: F_i += X^T F = (E^T f ; E^T n + rr x E^T f).", tuple(args))
    F = arr("F", 6)
    if jm.nv:
        k.out("tau", list(jm.S_c.T * F))
    if not p.root:
        # the stored X entries, with the pattern's structural zeros and ones in place of reads
        scratch = Kernel("x", "", "", ())
        E0, rr0 = _X(scratch, p)
        env = dict(scratch.lets)
        ent = [e.xreplace(env) for e in list(E0) + list(rr0)]
        Xs = [e if e.is_Number else sp.Symbol(f"X[{c}]") for c, e in enumerate(ent)]
        E, rr = sp.Matrix(3, 3, Xs[:9]), sp.Matrix(Xs[9:])
        f = sp.Matrix([k.let(f"f{c}", e) for c, e in enumerate(E.T * F[:3, 0])])
        k.out("Fp", list(f) + list(E.T * F[3:, 0] + rr.cross(f)), "+=")
    return k


def pose_kernel(p: Pattern) -> Kernel:
    """The kernel of the parent -> child transform of a body pattern."""
    jm = joint_model(p.type)
    k = _K(f"pose_{p.name}", "[RBDA eq 2.24]",
               f"Parent -> child transform of a {p.type} body: E = (C R)^T, rr = s + C d.",
               (Arg("q", max(jm.nq, 1), "in"), Arg("pb", PB.rho.end, "in"), Arg("X", 12, "out")))
    E, rr = _X(k, p)
    k.out("X", list(E) + list(rr))
    return k


def body_axes_ball(jtype: str) -> bool:
    """Whether a joint type is a ball with its rates in the child's axes: S_v = 0, S_w = R(q), c_v = c_w = 0.

    Then its world joint columns are H = [0; A_j] (A_j = A_i C_j R [KY eqs 9, 15]), its product terms vanish
    [KY eq 27] and its relative angular velocity is w_j - w_i [KY eq 19]: a family can read A and w instead."""
    jm = joint_model(jtype)
    return (jm.nv == 3 and jm.S_v.is_zero_matrix and (jm.S_w - jm.R).is_zero_matrix
            and jm.c_v.is_zero_matrix and jm.c_w.is_zero_matrix)


@lru_cache(maxsize=None)
def body_kernels(patterns: Tuple[Pattern, ...], which: Tuple[str, ...] = ("kin", "rnea", "rnea_back", "pose"),
                 lean: frozenset = frozenset()) -> Tuple[KernelCode, ...]:
    """The kernels for the patterns in use, printed (derived once per process).

    The kin kernels of the joint types in lean without joint columns (kin_kernel)."""
    return tuple(_code(w, p, w == "kin" and p.type in lean) for p in patterns for w in which)


@persistent
def _code(which: str, p: Pattern, lean: bool) -> KernelCode:
    """One printed kernel (kept between processes); lean: the kin kernel without joint columns."""
    k = kin_kernel(p, False) if lean else {"kin": kin_kernel, "rnea": rnea_kernel, "rnea_back": rnea_back_kernel,
                                           "pose": pose_kernel}[which](p)
    return KernelCode(k.name, k.equation, k.doc, k.params(), tuple(k.lines))


def inertia_numbers(m: float, rho, J):
    """ib of one body: m, h = m rho, I_O = J + m (|rho|^2 I - rho rho^T) (upper triangle xx xy xz yy yz zz)."""
    import numpy as np
    rho = np.asarray(rho, float)
    I_O = np.asarray(J, float).reshape(3, 3) + m * (rho @ rho * np.eye(3) - np.outer(rho, rho))
    return np.concatenate([[m], m * rho, I_O[np.triu_indices(3)]])
