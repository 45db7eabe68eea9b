"""Riccati transfer matrix method, new version (Riccati MSTMM): the symbolic layer.

Source: Rui X., Bestle D., Wang G., Zhang J., Rui X., He B., "A new version of the Riccati transfer
matrix method for multibody systems consisting of chain and branch bodies", Multibody Syst. Dyn. 49,
337-354 (2020) (seed text /work/shared/seeds/004_0233cf066626872d.txt).  Equation numbers below are
the paper's; every function carries a ``# Rui et al. 2020, eq N`` comment.

Contents (sympy only):

    STATE_NAMES, state_vector           state vector z = [r'', Omega', m, q, 1]            [RBW eqs 1-2]
    E_blocks, U_body                    SISO rigid body transfer matrix U_i, blocks E1..E9  [RBW eqs 3-5]
    extended_state_names, E_Ij,
    U_body_multi                        multi-input (MISO) body                             [RBW eqs 6-9]
    u3_blocks, U_ball_hinge,
    U_revolute_planar, U_fixed_hinge    smooth hinges                                       [RBW eq 10]
    Uhat_I1, Uhat_Ik, H_rm, H_O1Ik      multi-hinge subsystem (main + geometric eqs)        [RBW eqs 11-17]
    PLANAR_INDEX, planar_reduce         planar reduction of the state                       [RBW eq 35]
    BOUNDARY, boundary                  fixed / pinned / free boundaries                    [RBW eq 34], Sect. 5.1
    riccati_partition, riccati_step,
    riccati_backward, riccati_initial   Riccati recursion                                   [RBW eqs 20-34]
    example_*                           demonstration example (balance pendulum, models.md M1) [RBW eqs 36-55]
    m5_ball_hinge, m5_body11            spatial [RBW eq 10] and [RBW eqs 6-17] for the rods of M5 (Sect. 5.2)

plus the ``INSPECT`` table used by ``mbgen inspect``.

Conventions (Sect. 2.1 of the paper).  All vectors are in the inertial frame oxyz.  At an INPUT
point of an element, the force q acts ON the element in the +axis direction and the moment m about
the NEGATIVE axes, i.e. the element feels (+q, -m); at an OUTPUT point the convention is inverted
(the element feels -q, +m).  With this convention the state of a connection point is continuous:
q at a connection is the force the tip-side element exerts on the root-side element.  E7..E9 of
[RBW eq 5] are exactly Euler's equation about the input point I written with this convention.

Reading notes on the seed text (an HTML conversion; several displays are lost or damaged):

* [RBW eq 6] (extended input state of a multi-input body, "figureb") is missing.  Reconstructed from the
  block-row labels 1, 2, 3, 4, ..., 2k+1, 2k+2, ..., 2L+2, 2L+3 of [RBW eqs 12-13] and from [RBW eq 58] as
      z_{I1-IL} = [r''_{I1}; Omega'_{I1}; m_{I1}; q_{I1}; m_{I2}; q_{I2}; ...; m_{IL}; q_{IL}; 1]
  (2L+3 blocks; m_{Ik} is block 2k+1, q_{Ik} block 2k+2).
* [RBW eq 8] (the extended body matrix, "figurec") is missing.  Reconstructed from Newton/Euler about I1
  with the sign convention above: every extra input I_k adds the columns
      m-row: [ I3 , E6 + E_Ik ],   q-row: [ O3 , I3 ],   other rows zero,
  with E_Ik = -r~_{I1 Ik} [RBW eq 9].  It reduces to [RBW eq 4] when the middle columns are removed (as the
  paper says), and it reproduces the paper's printed u_{3,5} = [1], u_{3,6} = [a s7, -a c7] of body 7
  (text before [RBW eq 52]), which the tests check.
* [RBW eqs 12-13] (Uhat_{j,I1}, Uhat_{j,Ik}) are flattened to one line in the text; the block structure,
  incl. the zero last entry of Uhat_{j,Ik}, is read from the row labels; minus signs are lost
  in the conversion and restored from [RBW eq 10] (every u-block enters as -u_{3,2}^{-1} u_{3,m}).
* [RBW eq 16] (H_{r'',m}, H_{O1,Ik}, "figured") is missing.  Reconstructed from [RBW eqs 14, 15, 17] and the
  sentence "the moments at input (and output) ends of smooth hinges vanish": H_{r'',m} picks
  [r''; m] out of a standard state (1); H_{O1,Ik} = [[I3, E_{1,Ik}, O, ..., O, E_{2,Ik}], [O ... O]]
  (the moment rows are zero, so [RBW eq 15] states m_{j,Ik} = 0).
* [RBW eq 36] (reduced rod matrix), 37, 42, 44, 49, 55 ("figuref".."figurek") are missing; they are all
  derived here from the general elements (``example_*``), nothing is typed in.
* The example does not state A_I; for the planar rods it is the rotation R_z(theta_i) (body axis xi
  along the rod, so J'_I = diag{0, Jz, Jz} puts Jz = 4 m a^2/3 about the z axis through the end I).
* [RBW eq 46] prints S3[0, 2] = 4 m a^2 / D; the derivation gives 4 m a^2 / (3 D) (= S2[0, 2] / D, and it
  is the only value consistent with the paper's own [RBW eq 47], whose first row carries 2 m a = (4 m a^2/3)
  * 3/(2a)).  [RBW eq 46] prints S3[0, 1] = -3 m a (c3^2 c5 + s3 c3 c5 - 2 c5) / D; the derivation gives
  -3 m a (c3^2 c5 + s3 c3 s5 - 2 c5) / D (the printed middle term is dimensionally fine but wrong;
  check: c3 * D = 2 c3 + 3 c3^2 c5 + 3 s3 c3 s5).  Both are treated as typos.
* [RBW eq 47] prints "c_c s5" where c3 s5 is meant (garbled subscript).
* [RBW eq 52] (Uhat_8) as converted reads "3ma2 3s72ma 3c72ma" in row 3, i.e. denominators m a^2, 2 m a,
  2 m a; the paper's own u_{3,2} = [m a^2/3], u_{3,4} = [-a s7, a c7] (printed right above it) give
  -u_{3,2}^{-1} u_{3,4} = [3 s7/(m a), -3 c7/(m a)] (a force at the rod end, lever arm a, about the
  centre with inertia m a^2/3).  We follow the u-blocks; the "2" is taken as a typo.
* [RBW eq 62] prints P_1 = T22^{-1} with the entries of T22 itself ([1 0 -2as1; 0 1 2ac1; 0 0 1]); the
  inverse has +2as1 / -2ac1.  ``riccati_backward`` uses the inverse [RBW eq 24].

A remark on the smooth-hinge relation [RBW eq 10]: its angular-acceleration row is the third block row
of the OUTBOARD body set to zero, i.e. it enforces m = 0 at the outboard body's OUTPUT (the next
hinge), not at the hinge itself.  Consequences (shown numerically in tests/algorithms/mstmm/test_mstmm_ref.py, see
codegen/mstmm_ref.py): along a chain every hinge enforces the moment condition one body further
toward the root, the moment at the output of the chain's tip body is never enforced and the root
moment condition is enforced twice (row 4 of [RBW eq 57] is identically 0 = 0); and the hinge step of the
recursion has the spurious singular value  det(T21 S + T22) = 0, here D = 2 + 3 cos(theta3 - theta5)
= 0 ([RBW eq 46]'s denominator), which is not a singularity of the mechanism.  Spatially, u_{3,2} of a rod
with J'_I = diag{0, Jz, Jz} is singular (no axial inertia); this is why models.md M5 gives the rods a
small axial inertia.
"""
from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass
from typing import Dict, List, Sequence, Tuple

import sympy as sp

# ================================================================== state vector [RBW eqs 1-2]

# Rui et al. 2020, [RBW eqs 1-2]: z = [r''^T, Omega'^T, m^T, q^T, 1]^T  (1-based paper numbering in comments)
STATE_NAMES: Tuple[str, ...] = (
    "xdd", "ydd", "zdd",                      # 1-3   absolute translational acceleration r''
    "Omegad_x", "Omegad_y", "Omegad_z",       # 4-6   absolute angular acceleration Omega'
    "m_x", "m_y", "m_z",                      # 7-9   internal moment m
    "q_x", "q_y", "q_z",                      # 10-12 internal force q
    "1",                                      # 13    the artificial "1"
)


def state_vector(tag: str = "") -> sp.Matrix:
    """The symbolic state vector z, its last entry 1."""
    # Rui et al. 2020, [RBW eq 1]: symbolic state vector, last entry the number 1
    return sp.Matrix([sp.Symbol(n + tag, real=True) for n in STATE_NAMES[:-1]] + [1])


def extended_state_names(L: int) -> Tuple[str, ...]:
    """The names of the extended state of a body with L inputs."""
    # Rui et al. 2020, [RBW eq 6] (reconstructed, see module notes): [r'', Omega', m_I1, q_I1, ..., m_IL, q_IL, 1]
    names = list(STATE_NAMES[:6])
    for k in range(1, L + 1):
        names += [f"m_x_I{k}", f"m_y_I{k}", f"m_z_I{k}", f"q_x_I{k}", f"q_y_I{k}", f"q_z_I{k}"]
    return tuple(names + ["1"])


# ================================================================== index layouts

@dataclass(frozen=True)
class Layout:
    """Where the blocks of a (possibly extended, possibly planar) state vector sit.

    r, w: indices of r'' and Omega';  m[k], q[k]: indices of the moment/force of input k+1
    (one entry for a standard state (1), L entries for an extended state (6));  one: index of "1".
    rsel, wsel, msel, qsel: which of the x, y, z components each block keeps (all three spatially;
    planar: r'' -> x, y;  Omega' -> z;  m -> z;  q -> x, y, [RBW eq 35]).
    """

    r: Tuple[int, ...]
    w: Tuple[int, ...]
    m: Tuple[Tuple[int, ...], ...]
    q: Tuple[Tuple[int, ...], ...]
    one: int
    n: int
    rsel: Tuple[int, ...]
    wsel: Tuple[int, ...]
    msel: Tuple[int, ...]
    qsel: Tuple[int, ...]


def _layout(L: int, planar: bool) -> Layout:
    if planar:
        rsel, wsel, msel, qsel = (0, 1), (2,), (2,), (0, 1)
    else:
        rsel = wsel = msel = qsel = (0, 1, 2)
    i = 0

    def take(k):
        nonlocal i
        out = tuple(range(i, i + k))
        i += k
        return out
    r, w = take(len(rsel)), take(len(wsel))
    m, q = [], []
    for _ in range(L):
        m.append(take(len(msel)))
        q.append(take(len(qsel)))
    one = i
    return Layout(r, w, tuple(m), tuple(q), one, one + 1, rsel, wsel, msel, qsel)


def layout(L: int = 1, planar: bool = False) -> Layout:
    """Layout of the standard state (L = 1, [RBW eq 1] / [RBW eq 35]) or of the extended state [RBW eq 6]."""
    return _layout(L, planar)


SPATIAL = layout(1, False)
PLANAR = layout(1, True)

# Rui et al. 2020, [RBW eq 35]: planar state [x'', y'', Omega'_z, m_z, q_x, q_y, 1] = entries
# 1, 2, 6, 9, 10, 11, 13 of [RBW eq 1] (1-based) = 0, 1, 5, 8, 9, 10, 12 (0-based)
PLANAR_INDEX: Tuple[int, ...] = (0, 1, 5, 8, 9, 10, 12)
PLANAR_NAMES: Tuple[str, ...] = tuple(STATE_NAMES[i] for i in PLANAR_INDEX)


def planar_index(L: int = 1) -> Tuple[int, ...]:
    """The indices of the planar entries of the extended state."""
    # Rui et al. 2020, [RBW eq 35] applied to the extended state (6): keep x, y, Omega_z and every (m_z, q_x, q_y)
    full, pl = layout(L, False), []
    pl += [full.r[0], full.r[1], full.w[2]]
    for k in range(L):
        pl += [full.m[k][2], full.q[k][0], full.q[k][1]]
    return tuple(pl + [full.one])


def planar_reduce(M: sp.Matrix, L_rows: int = 1, L_cols: int = 1) -> sp.Matrix:
    """The planar reduction of a transfer matrix."""
    # Rui et al. 2020, [RBW eq 35]: keep rows/cols 1, 2, 6, 9, 10, 11, 13 (1-based) of a transfer matrix
    return M.extract(list(planar_index(L_rows)), list(planar_index(L_cols)))


# ================================================================== rigid bodies [RBW eqs 3-9]

def tilde(v) -> sp.Matrix:
    """Skew-symmetric (cross-product) matrix: tilde(a) * b = a x b."""
    v = sp.Matrix(v)
    return sp.Matrix([[0, -v[2], v[1]], [v[2], 0, -v[0]], [-v[1], v[0], 0]])


def E_blocks(m, r_IC, r_IO, Omega_I, A_I, J_I, f_C, m_C) -> "OrderedDict[str, sp.Matrix]":
    """The blocks E1..E9 of a body's transfer matrix U_i."""
    # Rui et al. 2020, [RBW eq 5]: the blocks E1..E9 of U_i.
    #   m: mass; r_IC, r_IO: input point -> mass centre / output point (inertial frame);
    #   Omega_I: absolute angular velocity (inertial frame); A_I: body-fixed frame I xi eta zeta -> oxyz;
    #   J_I: inertia tensor J'_I about I in the body frame; f_C, m_C: external force / moment at C.
    r_IC, r_IO, Om = sp.Matrix(r_IC), sp.Matrix(r_IO), sp.Matrix(Omega_I)
    A_I, J_I, f_C, m_C = sp.Matrix(A_I), sp.Matrix(J_I), sp.Matrix(f_C), sp.Matrix(m_C)
    I3 = sp.eye(3)
    w_I = A_I.T * Om                                    # omega_I = A_I^T Omega_I (text after [RBW eq 5])
    E = OrderedDict()
    E["E1"] = -tilde(r_IO)
    E["E2"] = tilde(Om) * tilde(Om) * r_IO
    E["E3"] = -m * I3
    E["E4"] = m * tilde(r_IC)
    E["E5"] = f_C - m * tilde(Om) * tilde(Om) * r_IC
    E["E6"] = tilde(r_IO)
    E["E7"] = m * tilde(r_IC)
    E["E8"] = A_I * J_I * A_I.T
    E["E9"] = -m_C - tilde(r_IC) * f_C + A_I * tilde(w_I) * J_I * w_I
    return E


def U_body(E) -> sp.Matrix:
    """The transfer matrix U_i (13 x 13) of a body with one input."""
    # Rui et al. 2020, [RBW eq 4]: z_{i,O} = U_i z_{i,I} [RBW eq 3], 13 x 13
    return U_body_multi(E, [])


def E_Ij(r_I1Ij) -> sp.Matrix:
    """The block E_Ij of a body with several inputs."""
    # Rui et al. 2020, [RBW eq 9]: E_{Ij} = -r~_{I1 Ij}
    return -tilde(r_I1Ij)


def U_body_multi(E, r_I1Ik: Sequence) -> sp.Matrix:
    """The transfer matrix of a body with several inputs."""
    # Rui et al. 2020, [RBW eqs 7-8] ([RBW eq 8] reconstructed, see module notes): z_{i,O} = U_{i,I1-IL} z_{i,I1-IL};
    # r_I1Ik = [r_{I1 I2}, ..., r_{I1 IL}] (empty list: the SISO matrix of [RBW eq 4]).
    L = len(r_I1Ik) + 1
    rows, cols = SPATIAL, layout(L, False)
    U = sp.zeros(rows.n, cols.n)
    I3 = sp.eye(3)

    def put(R, C, B):
        for a, i in enumerate(R):
            for b, j in enumerate(C):
                U[i, j] = B[a, b]
    E1, E2, E3, E4, E5, E6, E7, E8, E9 = (E[f"E{k}"] for k in range(1, 10))
    # block row 1: r''_O = r''_I + E1 Omega'_I + E2
    put(rows.r, cols.r, I3); put(rows.r, cols.w, E1); put(rows.r, (cols.one,), E2)
    # block row 2: Omega'_O = Omega'_I
    put(rows.w, cols.w, I3)
    # block row 3: m_O = m_I + E6 q_O + E7 r''_I + E8 Omega'_I + E9  with q_O from block row 4
    put(rows.m[0], cols.r, E6 * E3 + E7); put(rows.m[0], cols.w, E6 * E4 + E8)
    put(rows.m[0], cols.m[0], I3); put(rows.m[0], cols.q[0], E6)
    put(rows.m[0], (cols.one,), E6 * E5 + E9)
    # block row 4: q_O = q_I + E3 r''_I + E4 Omega'_I + E5
    put(rows.q[0], cols.r, E3); put(rows.q[0], cols.w, E4); put(rows.q[0], cols.q[0], I3)
    put(rows.q[0], (cols.one,), E5)
    # extra inputs I_k [RBW eq 8]: moment m_Ik and force q_Ik (acting at r_{I1 Ik})
    for k, r in enumerate(r_I1Ik, start=1):
        put(rows.m[0], cols.m[k], I3); put(rows.m[0], cols.q[k], E6 + E_Ij(r))
        put(rows.q[0], cols.q[k], I3)
    U[rows.one, cols.one] = 1
    return U


def u3_blocks(U: sp.Matrix, rows: Layout = SPATIAL, cols: Layout = SPATIAL) -> Dict[int, sp.Matrix]:
    """The blocks of the moment row of an outboard body matrix."""
    # Rui et al. 2020, text after [RBW eq 10] and [RBW eqs 12-13]: the blocks u_{3,1}, u_{3,2}, ... of the third
    # block row (the moment row) of an outboard body matrix: u_{3,1} <- r'', u_{3,2} <- Omega',
    # u_{3,2k+1} <- m_Ik, u_{3,2k+2} <- q_Ik, u_{3,2L+3} <- "1".
    mr = list(rows.m[0])
    u = {1: U.extract(mr, list(cols.r)), 2: U.extract(mr, list(cols.w))}
    for k in range(len(cols.m)):
        u[2 * k + 3] = U.extract(mr, list(cols.m[k]))
        u[2 * k + 4] = U.extract(mr, list(cols.q[k]))
    u[2 * len(cols.m) + 3] = U.extract(mr, [cols.one])
    return u


# ================================================================== hinges [RBW eq 10]

def U_ball_hinge(u: Dict[int, sp.Matrix], lay: Layout = SPATIAL) -> sp.Matrix:
    """The transfer matrix of a smooth ball-and-socket hinge."""
    # Rui et al. 2020, [RBW eq 10]: smooth ball-and-socket hinge; u = u3_blocks(U of the OUTBOARD body).
    # r'', m, q pass unchanged; Omega'_O = -u32^{-1}(u31 r'' + u33 m + u34 q + u35), i.e. the moment
    # row of the outboard body set to zero (m = 0 at the outboard body's output).
    U = sp.zeros(lay.n, lay.n)
    ui = u[2].inv()
    for i in lay.r + lay.m[0] + lay.q[0]:
        U[i, i] = 1
    U[lay.one, lay.one] = 1
    for cols, blk in ((lay.r, u[1]), (lay.m[0], u[3]), (lay.q[0], u[4]), ((lay.one,), u[5])):
        B = -ui * blk
        for a, i in enumerate(lay.w):
            for b, j in enumerate(cols):
                U[i, j] = B[a, b]
    return U


def U_revolute_planar(u: Dict[int, sp.Matrix]) -> sp.Matrix:
    """The transfer matrix of a smooth planar revolute hinge."""
    # Rui et al. 2020, [RBW eq 10] in the reduced form of [RBW eq 35] (used as [RBW eq 44] for hinge 4): a smooth planar
    # revolute hinge (axis z); u = u3_blocks(planar_reduce(U of the outboard body), PLANAR, PLANAR)
    return U_ball_hinge(u, PLANAR)


def U_fixed_hinge(lay: Layout = SPATIAL) -> sp.Matrix:
    """The transfer matrix of a fixed hinge: the identity."""
    # Rui et al. 2020, [RBW eqs 1-3] (state continuity): a fixed (welded) hinge of zero size transfers the
    # whole state unchanged, z_O = z_I, U = identity.
    return sp.eye(lay.n)


# ================================================================== multi-hinge subsystem [RBW eqs 11-17]

def Uhat_I1(u: Dict[int, sp.Matrix], L: int, planar: bool = False) -> sp.Matrix:
    """The block Uhat_{j,I1} of a multi-input hinge."""
    # Rui et al. 2020, [RBW eq 12]: Uhat_{j,I1} ((2L+3) x 5 blocks); u from u3_blocks of the MISO body [RBW eq 8]
    ext, std = layout(L, planar), layout(1, planar)
    U = sp.zeros(ext.n, std.n)
    ui = u[2].inv()
    for ri, ci in zip(ext.r + ext.m[0] + ext.q[0], std.r + std.m[0] + std.q[0]):
        U[ri, ci] = 1
    U[ext.one, std.one] = 1
    for cols, blk in ((std.r, u[1]), (std.m[0], u[3]), (std.q[0], u[4]), ((std.one,), u[2 * L + 3])):
        B = -ui * blk
        for a, i in enumerate(ext.w):
            for b, j in enumerate(cols):
                U[i, j] = B[a, b]
    return U


def Uhat_Ik(u: Dict[int, sp.Matrix], L: int, k: int, planar: bool = False) -> sp.Matrix:
    """The block Uhat_{j,Ik} (k = 2..L) of a multi-input hinge."""
    # Rui et al. 2020, [RBW eq 13] (k = 2..L): m_Ik, q_Ik go to blocks 2k+1, 2k+2 of z_{j,O} and into
    # Omega'_O through -u32^{-1} u_{3,2k+1}, -u32^{-1} u_{3,2k+2}; the "1" entry is 0.
    assert 2 <= k <= L
    ext, std = layout(L, planar), layout(1, planar)
    U = sp.zeros(ext.n, std.n)
    ui = u[2].inv()
    for ri, ci in zip(ext.m[k - 1] + ext.q[k - 1], std.m[0] + std.q[0]):
        U[ri, ci] = 1
    for cols, blk in ((std.m[0], u[2 * k + 1]), (std.q[0], u[2 * k + 2])):
        B = -ui * blk
        for a, i in enumerate(ext.w):
            for b, j in enumerate(cols):
                U[i, j] = B[a, b]
    return U


def multi_hinge_output(Uhats: Sequence[sp.Matrix], z_inputs: Sequence[sp.Matrix]) -> sp.Matrix:
    """The output state of a multi-input hinge, the sum of Uhat_{j,Ik} z_{j,Ik}."""
    # Rui et al. 2020, [RBW eq 11]: z_{j,O} = sum_k Uhat_{j,Ik} z_{j,Ik}
    return sum((U * z for U, z in zip(Uhats, z_inputs)), sp.zeros(Uhats[0].rows, 1))


def r_dd_Ik(r_dd_O1, Omegad_O1, Omega_O1, r_O1Ik) -> sp.Matrix:
    """The acceleration r''_Ik of input point Ik."""
    # Rui et al. 2020, [RBW eq 14]: r''_Ik = r''_O1 - r~_{O1 Ik} Omega'_O1 + Omega~_O1 Omega~_O1 r_{O1 Ik}
    return sp.Matrix(r_dd_O1) + E1_Ik(r_O1Ik) * sp.Matrix(Omegad_O1) + E2_Ik(r_O1Ik, Omega_O1)


def E1_Ik(r_O1Ik) -> sp.Matrix:
    """The matrix E_{1,Ik}."""
    # Rui et al. 2020, [RBW eq 17]: E_{1,Ik} = -r~_{O1 Ik}
    return -tilde(r_O1Ik)


def E2_Ik(r_O1Ik, Omega_O1) -> sp.Matrix:
    """The vector E_{2,Ik}."""
    # Rui et al. 2020, [RBW eq 17]: E_{2,Ik} = Omega~_{O1} Omega~_{O1} r_{O1 Ik}
    return tilde(Omega_O1) * tilde(Omega_O1) * sp.Matrix(r_O1Ik)


def H_rm(planar: bool = False) -> sp.Matrix:
    """The matrix H_{r'',m} that extracts [r''; m] from a standard state."""
    # Rui et al. 2020, [RBW eq 16] (reconstructed): H_{r'',m} extracts [r''; m] from a standard state (1)
    std = layout(1, planar)
    rows = std.r + std.m[0]
    H = sp.zeros(len(rows), std.n)
    for a, j in enumerate(rows):
        H[a, j] = 1
    return H


def H_O1Ik(r_O1Ik, Omega_O1, L: int, k: int, planar: bool = False) -> sp.Matrix:
    """The matrix H_{O1,Ik} of the geometric equation."""
    # Rui et al. 2020, [RBW eqs 14-17] ([RBW eq 16] reconstructed): H_{r'',m} z_{j,Ik} = H_{O1,Ik} z_{j,O} with
    # r''_Ik = r''_O1 + E_{1,Ik} Omega'_O1 + E_{2,Ik} [RBW eq 14] and m_{j,Ik} = 0 (zero moment rows).
    assert 2 <= k <= L
    ext = layout(L, planar)
    E1, E2 = E1_Ik(r_O1Ik), E2_Ik(r_O1Ik, Omega_O1)
    nr, nm = len(ext.r), len(ext.msel)
    H = sp.zeros(nr + nm, ext.n)
    for a, j in enumerate(ext.r):
        H[a, j] = 1
    for a, ra in enumerate(ext.rsel):
        for b, wb in enumerate(ext.wsel):
            H[a, ext.w[b]] = E1[ra, wb]
        H[a, ext.one] = E2[ra]
    return H


def geometric_equation(z_jIk, z_jO, r_O1Ik, Omega_O1, L: int, k: int, planar: bool = False) -> sp.Matrix:
    """The geometric equation as a residual (zero when it holds)."""
    # Rui et al. 2020, [RBW eq 15] as a residual: H_{r'',m} z_{j,Ik} - H_{O1,Ik} z_{j,O}  (= 0)
    return H_rm(planar) * sp.Matrix(z_jIk) - H_O1Ik(r_O1Ik, Omega_O1, L, k, planar) * sp.Matrix(z_jO)


# ================================================================== boundaries (Sect. 4 and 5.1)

# Rui et al. 2020, Sect. 4 (text before [RBW eq 34]) and Sect. 5.1: which state blocks of a boundary are
# known to be zero (they form z_a) and which are unknown (z_b):
#   free   (tip, eq before 38):       m = q = 0          unknown r'', Omega'
#   fixed  (clamped):                 r'' = Omega' = 0   unknown m, q
#   pinned (smooth ball / revolute to ground, body 7 output, text after [RBW eq 58]): r'' = m = 0,
#                                     unknown Omega', q
BOUNDARY: Dict[str, Tuple[Tuple[str, ...], Tuple[str, ...]]] = {
    "free": (("m", "q"), ("r", "w")),
    "fixed": (("r", "w"), ("m", "q")),
    "pinned": (("r", "m"), ("w", "q")),
}


def boundary(kind: str, planar: bool = False) -> Tuple[List[int], List[int]]:
    """The indices (known zeros, unknowns) of a boundary's state."""
    # Rui et al. 2020, [RBW eq 34] and Sect. 5.1: (indices of z_a = known zeros, indices of z_b = unknowns)
    lay = layout(1, planar)
    blocks = {"r": lay.r, "w": lay.w, "m": lay.m[0], "q": lay.q[0]}
    known, unknown = BOUNDARY[kind]
    return ([i for b in known for i in blocks[b]], [i for b in unknown for i in blocks[b]])


def boundary_names(kind: str, planar: bool = False) -> Tuple[List[str], List[str]]:
    """The names (known zeros, unknowns) of a boundary's state."""
    names = PLANAR_NAMES if planar else STATE_NAMES
    a, b = boundary(kind, planar)
    return [names[i] for i in a], [names[i] for i in b]


# ================================================================== Riccati recursion [RBW eqs 20-34]

def riccati_partition(U: sp.Matrix, a: Sequence[int], b: Sequence[int]) -> "OrderedDict[str, sp.Matrix]":
    """The blocks T11, T12, T21, T22, f_a, f_b of a transfer matrix."""
    # Rui et al. 2020, [RBW eq 20]: [z_a; z_b]_O = [[T11, T12], [T21, T22]] [z_a; z_b]_I + [f_a; f_b]
    one = U.cols - 1
    a, b = list(a), list(b)
    return OrderedDict([
        ("T11", U.extract(a, a)), ("T12", U.extract(a, b)),
        ("T21", U.extract(b, a)), ("T22", U.extract(b, b)),
        ("f_a", U.extract(a, [one])), ("f_b", U.extract(b, [one])),
    ])


def riccati_rearranged(U: sp.Matrix, a: Sequence[int], b: Sequence[int]) -> sp.Matrix:
    """The transfer matrix reordered to [z_a; z_b; 1]."""
    # Rui et al. 2020, [RBW eq 20] / 37: U with rows and columns reordered to [z_a; z_b; 1]
    p = list(a) + list(b) + [U.cols - 1]
    return U.extract(p, p)


def riccati_initial(na: int, nb: int) -> Tuple[sp.Matrix, sp.Matrix]:
    """The Riccati start S_1 = O, e_1 = 0 at a tip."""
    # Rui et al. 2020, [RBW eq 34]: z_a1,I = 0 at a tip boundary -> S_1 = O, e_1 = 0
    return sp.zeros(na, nb), sp.zeros(na, 1)


def riccati_P_q(S, e, T21, T22, f_b, simplify=None) -> Tuple[sp.Matrix, sp.Matrix]:
    """The Riccati factors P_i and q_i."""
    # Rui et al. 2020, [RBW eq 24]: P_i = (T21 S_i + T22)^{-1},  q_i = -(T21 e_i + f_b)
    M = T21 * S + T22
    if simplify is not None:
        M = M.applyfunc(simplify)
    P = M.inv()
    q = -(T21 * e + f_b)
    return P, q


def riccati_step(S, e, T11, T12, T21, T22, f_a, f_b, simplify=None) -> "OrderedDict[str, sp.Matrix]":
    """One Riccati step: S_{i+1}, e_{i+1} and the factors P_i, q_i."""
    # Rui et al. 2020, [RBW eqs 24, 29, 30]:
    #   S_{i+1} = (T11 S_i + T12) P_i,   e_{i+1} = T11 e_i + f_a + S_{i+1} q_i
    # so that z_{a i,O} = S_{i+1} z_{b i,O} + e_{i+1} [RBW eq 31]
    P, q = riccati_P_q(S, e, T21, T22, f_b, simplify)
    S_next = (T11 * S + T12) * P
    e_next = T11 * e + f_a + S_next * q
    if simplify is not None:
        P, q, S_next, e_next = (X.applyfunc(simplify) for X in (P, q, S_next, e_next))
    return OrderedDict([("P", P), ("q", q), ("S_next", S_next), ("e_next", e_next)])


def riccati_backward(P, q, S, e, z_bO) -> Tuple[sp.Matrix, sp.Matrix]:
    """The backward substitution: the input state (z_b, z_a) from the output state."""
    # Rui et al. 2020, [RBW eq 33] [RBW eqs 25, 21]: z_{b i,I} = P_i z_{b i,O} + P_i q_i,  z_{a i,I} = S_i z_{b i,I} + e_i
    z_bI = P * z_bO + P * q
    return z_bI, S * z_bI + e


def U_tip(S, e) -> sp.Matrix:
    """The transfer matrix of a tip in Riccati form."""
    # Rui et al. 2020, [RBW eq 42] / 48: z_O = [[I, O], [S, e], [O, 1]] [z_b; 1]_O  (z_a below z_b)
    nb, na = S.cols, S.rows
    U = sp.zeros(nb + na + 1, nb + 1)
    U[:nb, :nb] = sp.eye(nb)
    U[nb:nb + na, :nb] = S
    U[nb:nb + na, nb] = e
    U[nb + na, nb] = 1
    return U
