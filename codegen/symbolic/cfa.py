"""Elements of the constraint force algorithm (Liu, Hu & Zhang 2016, seed 001), derived with sympy.

The paper orders spatial vectors angular first, F = [n; f], Vdot = [omegadot; vdot]:
    P-hat(p) = [[U, p~], [0, U]]                 shift matrix of a position vector p       [LHZ eqs 1-2]
               (P-hat F carries a force at the far point of p to the near one; P-hat^T carries an
               acceleration the other way: P-hat_{j,o} F_o is the child force at O_j, Vdot_o = P-hat^T Vdot_j)
    I_C = diag(J_C, m U)                         mass matrix about the centroid           [LHZ eq 3]
    I_O = S-hat I_C S-hat^T                      mass matrix about the joint point O_j    (below [LHZ eq 3])
    H_j, W_j with H^T H = U, W^T W = U, W^T H = 0, H^T W = 0   projection matrices       (below [LHZ eq 1])
    F_j = H_j F_Tj + W_j F_Sj                    joint force split                        [LHZ eq 5]

The generated kernels use the project's order [linear; angular] (f; n), i.e. PERM F_paper; every
quantity is taken in the body's reference frame (the canonical child joint frame, origin at the joint
point O_j), so H_j = S_c (the child-frame motion subspace of codegen.symbolic.joints) and W_j is an
orthonormal basis of its complement, chosen constant in the child frame wherever the span allows.
"""
from __future__ import annotations

from collections import OrderedDict
from functools import lru_cache

import sympy as sp

from .joints import c_assignments, joint_model, skew
from .spatial import block, sym3, vec

PERM = sp.Matrix(sp.BlockMatrix([[sp.zeros(3), sp.eye(3)], [sp.eye(3), sp.zeros(3)]]))   # [n; f] <-> [f; n]


def shift_matrix(p) -> sp.Matrix:
    """P-hat of a position vector [LHZ eqs 1-2], paper order [n; f]."""
    return block(sp.eye(3), skew(p), sp.zeros(3), sp.eye(3))


def mass_matrix_centroid(m, J) -> sp.Matrix:
    """I_C [LHZ eq 3], paper order."""
    return block(J, sp.zeros(3), sp.zeros(3), m * sp.eye(3))


def mass_matrix_joint(m, J, s) -> sp.Matrix:
    """I_O = S-hat I_C S-hat^T: the mass matrix about the joint point, centroid at s (below [LHZ eq 3])."""
    S = shift_matrix(s)
    return sp.expand(S * mass_matrix_centroid(m, J) * S.T)


def _complement3(cols: sp.Matrix) -> sp.Matrix:
    """Orthonormal basis (3 x k) of the complement of the span of orthonormal 3-vector columns."""
    cols = [cols[:, c] for c in range(cols.shape[1]) if any(sp.simplify(e) != 0 for e in cols[:, c])]
    if not cols:
        return sp.eye(3)
    if len(cols) == 3:
        return sp.zeros(3, 0)
    if len(cols) == 2:
        return sp.simplify(cols[0].cross(cols[1]))
    a = sp.simplify(cols[0])
    if a == sp.Matrix([0, 0, 1]):
        return sp.Matrix([[1, 0], [0, 1], [0, 0]])
    raise ValueError("single child-frame axis must be z")


@lru_cache(maxsize=None)
def projection_matrices(jtype: str):
    """(H_j, W_j) of a joint type in its child frame, kernel order [linear; angular] (6 x n, 6 x (6 - n)).

    Every joint column of the library is purely linear or purely angular, so W_j = diag(W_v, W_w) with W_v,
    W_w the complements of the linear and angular spans ([LHZ eq 5]; a free joint has W_j = 6 x 0, a
    fixed one W_j = U, the paper's 'no constraint' and 'full constraint' limits)."""
    jm = joint_model(jtype)
    H = jm.S_c
    Wv, Ww = _complement3(H[:3, :]), _complement3(H[3:, :])
    W = sp.Matrix.vstack(sp.Matrix.hstack(Wv, sp.zeros(3, Ww.shape[1])),
                         sp.Matrix.hstack(sp.zeros(3, Wv.shape[1]), Ww))
    return H, W


def orthogonality(jtype: str):
    """The four orthogonality products stated below [LHZ eq 1], simplified.

    (H^T H - U, W^T W - U, W^T H, H^T W).
    Quaternion joints: exact for a unit quaternion (checked numerically in the tests)."""
    H, W = projection_matrices(jtype)
    return (sp.simplify(H.T * H - sp.eye(H.shape[1])), sp.simplify(W.T * W - sp.eye(W.shape[1])),
            sp.simplify(W.T * H), sp.simplify(H.T * W))


@lru_cache(maxsize=None)
def cfa_code(jtype: str) -> dict:
    """Kernel helper of one joint type: W_j in the child frame, 6 x (6 - n) column major."""
    _, W = projection_matrices(jtype)
    return {"W": c_assignments([("Wc", W)]) if W.shape[1] else ([], [])}


def cfa_elements() -> "OrderedDict[str, sp.Basic]":
    """What `mbgen inspect cfa` prints: the paper's matrices and each joint type's H_j, W_j."""
    from ..model import JOINT_TYPES
    p, s, m, J = vec("p"), vec("s"), sp.Symbol("m", positive=True), sym3("J_C")
    out = OrderedDict()
    out["P-hat(p)  ([LHZ eqs 1-2], order [n; f])"] = shift_matrix(p)
    out["I_C  [LHZ eq 3]"] = mass_matrix_centroid(m, J)
    out["I_O = S-hat I_C S-hat^T  (below [LHZ eq 3], centroid at s)"] = mass_matrix_joint(m, J, s)
    for t in JOINT_TYPES:
        H, W = projection_matrices(t)
        out[f"H_j {t}  (child frame, [linear; angular])"] = H
        out[f"W_j {t}  ([LHZ eq 5] complement, H^T W = 0)"] = W
    return out
