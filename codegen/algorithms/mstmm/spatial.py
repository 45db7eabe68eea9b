"""Plain numpy reference of the spatial Riccati MSTMM on trees, every hinge type incl. free joints.

Source: Rui X., Bestle D., Wang G. et al., "A new version of the Riccati transfer matrix method for
multibody systems consisting of chain and branch bodies", Multibody Syst. Dyn. 49, 337-354 (2020)
(seed shared/seeds/004_0233cf066626872d.txt); equation numbers are the paper's.  This is the algorithm of
the generated kernel (templates/mstmm/mstmm.pyx.j2) written with 6 x 6 numpy matrices and no
specialisation, so that the kernel's joint-type shortcuts (ball, free) can be checked against it.

State of a connection point [RBW eq 1], world frame: z = [r'', Omega', m, q]; Riccati split [RBW eq 20]
z_a = [m; q] (known at a free end), z_b = [r''; Omega'] (unknown there).  The parent exerts the force -q
and the moment +m (about the joint point) on the child (sign convention of Sect. 2.1).

Per body j, tip -> root (A2-A3 / B2-B3):
    body    Newton-Euler of body j about its joint point O ([RBW eqs 4-5] written at O, T21 = O):
            [m; q]_O = S [r''_O; Omega'_j] + e
    inputs  every child c: its relation at c's joint, carried to O by the geometric equation [RBW eq 14] and
            the force transfer (T11, the E6 + E_Ik columns of [RBW eq 8]): S += T11 S_c X, e += T11 (S_c b + e_c)
    hinge   the condensation of joint j AT the hinge ("articulated" variant, reference.py module notes),
            generalised here to any joint with a translational part (the paper has smooth ball and
            revolute hinges only; what follows is our derivation):
              relative kinematics  z_b = z_b' + H udot + c,  z_b' = [r''_P; Omega'_p], H = [H_v; H_w] (6 x n,
                                   world), r''_P the acceleration of the PARENT's point that coincides with O,
                                   c = [A_p c_v + 2 Omega_p x v_rel; A_p c_w + Omega_p x omega_rel]
              hinge condition      Y^T [m; q] = tau_j with Y = [H_w; -H_v]: the power of the joint wrench
                                   (-q, m) on the relative twist H udot is tau_j^T udot (H^T [F; M] = tau)
            so with D = Y^T S H (the articulated inertia of the subtree in the joint's coordinates):
              udot = g0 - G z_b',  G = D^-1 Y^T S,  g0 = D^-1 (tau_j - Y^T (e + S c))          ([RBW eq 25] of the hinge)
              S' = S - S H G,  e' = e + S c + S H g0                                         [RBW eqs 29-30]
            For a revolute or ball hinge (H_v = 0, v_rel = 0) this is the existing articulated step.
            A FREE joint (n = 6, H invertible) gives S' = S - S H (Y^T S H)^-1 Y^T S = O exactly and
            Y^T e' = tau: it transmits the wrench of its generalized force only (zero without external
            loads), and its parent sees the subtree as a free tip of the paper (S_1 = O, e_1 = 0, [RBW eq 34])
            loaded by that wrench.  At the ROOT (z_b' = 0: the ground, A4) the free hinge is the paper's
            free output boundary: m = q = 0 known, S z_b + e = 0 solved for z_b = [r''; Omega'] (A4, text
            before [RBW eq 34]), here as udot = g0.
Root -> tip (A5 / B4, [RBW eqs 25, 33]): z_b' from the parent by [RBW eq 14], udot = g0 - G z_b', z_b = z_b' + H udot + c,
and the joint's internal forces [m; q] = S' z_b' + e'.

``riccati_tree`` covers gravity and generalized forces tau (no other force elements); it uses the plan's
numbers (codegen.algorithms.tree_plan) and the sympy joint models (codegen.symbolic.joints), evaluated
in numpy, not the generated kernel's code.
"""
from __future__ import annotations

from functools import lru_cache
from typing import Dict

import numpy as np


def _sk(v) -> np.ndarray:
    return np.array([[0.0, -v[2], v[1]], [v[2], 0.0, -v[0]], [-v[1], v[0], 0.0]])


@lru_cache(maxsize=None)
def _joint_functions(jtype: str):
    """numpy functions (q, u) -> R, d, S_v, S_w, c_v, c_w of the sympy joint model (parent joint frame)."""
    import sympy as sp
    from ...symbolic.joints import joint_model
    jm = joint_model(jtype)
    args = [list(jm.q), list(jm.u)]
    fs = [sp.lambdify(args, M, "numpy") for M in (jm.R, jm.d, jm.S_v, jm.S_w, jm.c_v, jm.c_w)]
    shapes = [(3, 3), (3,), (3, jm.nv), (3, jm.nv), (3,), (3,)]

    def f(q, u):
        return [np.array(fn(list(q), list(u)), float).reshape(s) for fn, s in zip(fs, shapes)]
    return f


def riccati_tree(model, q, u, tau=None) -> Dict[str, np.ndarray]:
    """Forward dynamics and joint states of a rigid tree by the spatial Riccati MSTMM (module notes).

    Returns {"udot": (nv,), "z": (nb, 12) states [r''_O, Omega'_j, m, q] per joint (body order, world),
    "S": [S' per joint] (6 x 6, the Riccati coefficients after each hinge), "A": (nb, 3, 3) world
    orientation of each body's reference frame}.
    """
    from ..tree_plan import Plan, body_numbers
    if model.springs or model.point_springs or model.joint_forces or model.tau_hook is not None:
        raise ValueError("riccati_tree: gravity and tau only")
    plan = Plan(model)
    p = plan.params()
    nb, g = plan.nb, p[0:3]
    q, u = np.asarray(q, float), np.asarray(u, float)
    tau = np.zeros(plan.nv) if tau is None else np.asarray(tau, float)
    A, r, w, H, c, par = [None] * nb, [None] * nb, [None] * nb, [None] * nb, [None] * nb, plan.parent
    body = []
    for j, jt in enumerate(model.joints):                  # kinematics, root -> tip [KY eqs 9-21]
        bn = body_numbers(p, j)
        s, C, mass, rho, J = bn["s"], bn["C"], bn["m"], bn["rho"], bn["J"]
        iq, iv, n = plan.iq[j], plan.iv[j], jt.nv
        R, d, Sv, Sw, cv, cw = _joint_functions(jt.type)(q[iq:iq + jt.nq], u[iv:iv + n])
        i = par[j]
        Ai, ri, wi = (np.eye(3), np.zeros(3), np.zeros(3)) if i < 0 else (A[i], r[i], w[i])
        Ap = Ai @ C
        A[j] = Ap @ R
        r[j] = ri + Ai @ s + Ap @ d
        H[j] = np.vstack([Ap @ Sv, Ap @ Sw])
        rel = H[j] @ u[iv:iv + n]                           # [v_rel; omega_rel] (n = 0: zeros)
        v_rel, w_rel = rel[:3], rel[3:]
        w[j] = wi + w_rel
        c[j] = np.concatenate([Ap @ cv + 2 * np.cross(wi, v_rel), Ap @ cw + np.cross(wi, w_rel)])
        body.append((mass, A[j] @ rho, A[j] @ J @ A[j].T))
    kids = [[] for _ in range(nb)]
    for j in range(nb):
        if par[j] >= 0:
            kids[par[j]].append(j)
    S_, e_, G_, g0_ = [None] * nb, [None] * nb, [None] * nb, [None] * nb
    for j in range(nb - 1, -1, -1):                         # A2-A3 / B2-B3, tips -> root
        m, dC, Jc = body[j]
        J_O = Jc + m * (dC @ dC * np.eye(3) - np.outer(dC, dC))
        S = np.zeros((6, 6))                                # [RBW eqs 4-5] at O: rows [m; q], columns [r''; Omega']
        S[0:3, 0:3], S[0:3, 3:6] = m * _sk(dC), J_O
        S[3:6, 0:3], S[3:6, 3:6] = -m * np.eye(3), m * _sk(dC)
        fC = m * g
        e = np.concatenate([np.cross(w[j], J_O @ w[j]) - np.cross(dC, fC),
                            fC - m * np.cross(w[j], np.cross(w[j], dC))])
        for k in kids[j]:                                   # inputs: [RBW eq 14] and the force transfer of [RBW eq 8]
            D = r[k] - r[j]
            X = np.eye(6); X[0:3, 3:6] = -_sk(D)            # r''_P(k) = r''_O - D~ Omega'_j + b
            b = np.concatenate([np.cross(w[j], np.cross(w[j], D)), np.zeros(3)])
            T11 = np.eye(6); T11[0:3, 3:6] = -_sk(D)        # m_O += m_k - D x q_k, q_O += q_k
            S = S + T11 @ S_[k] @ X
            e = e + T11 @ (S_[k] @ b + e_[k])
        n, iv = model.joints[j].nv, plan.iv[j]              # hinge condensation (module notes)
        Hj = H[j]
        Y = np.vstack([Hj[3:6], -Hj[0:3]])
        x = e + S @ c[j]
        if n:
            Dm = Y.T @ S @ Hj
            G_[j] = np.linalg.solve(Dm, Y.T @ S)
            g0_[j] = np.linalg.solve(Dm, tau[iv:iv + n] - Y.T @ x)
            S_[j], e_[j] = S - S @ Hj @ G_[j], x + S @ Hj @ g0_[j]
        else:
            G_[j], g0_[j] = np.zeros((0, 6)), np.zeros(0)
            S_[j], e_[j] = S, x
    udot, z, zb = np.zeros(plan.nv), np.zeros((nb, 12)), [None] * nb
    for j in range(nb):                                     # A4 (ground: z_b' = 0), A5 / B4 [RBW eqs 25, 33]
        i = par[j]
        if i < 0:
            zp = np.zeros(6)
        else:
            D = r[j] - r[i]
            zp = np.concatenate([zb[i][0:3] + np.cross(zb[i][3:6], D) + np.cross(w[i], np.cross(w[i], D)),
                                 zb[i][3:6]])
        iv, n = plan.iv[j], model.joints[j].nv
        ud = g0_[j] - G_[j] @ zp
        udot[iv:iv + n] = ud
        zb[j] = zp + H[j] @ ud + c[j]
        z[j, 0:6], z[j, 6:12] = zb[j], S_[j] @ zp + e_[j]
    return {"udot": udot, "z": z, "S": S_, "A": np.array(A)}
