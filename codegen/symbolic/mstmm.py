"""Riccati transfer matrix method, new version (Riccati MSTMM): the symbolic layer.

Source: Rui X., Bestle D., Wang G., Zhang J., Rui X., He B., "A new version of the Riccati transfer
matrix method for multibody systems consisting of chain and branch bodies", Multibody Syst. Dyn. 49,
337-354 (2020) (seed text /work/shared/seeds/004_0233cf066626872d.txt).  Equation numbers below are
the paper's; every function carries a ``# Rui et al. 2020, eq N`` comment.

Contents (sympy only):

    STATE_NAMES, state_vector           state vector z = [r'', Omega', m, q, 1]            eqs 1-2
    E_blocks, U_body                    SISO rigid body transfer matrix U_i, blocks E1..E9  eqs 3-5
    extended_state_names, E_Ij,
    U_body_multi                        multi-input (MISO) body                             eqs 6-9
    u3_blocks, U_ball_hinge,
    U_revolute_planar, U_fixed_hinge    smooth hinges                                       eq 10
    Uhat_I1, Uhat_Ik, H_rm, H_O1Ik      multi-hinge subsystem (main + geometric eqs)        eqs 11-17
    PLANAR_INDEX, planar_reduce         planar reduction of the state                       eq 35
    BOUNDARY, boundary                  fixed / pinned / free boundaries                    eq 34, Sect. 5.1
    riccati_partition, riccati_step,
    riccati_backward, riccati_initial   Riccati recursion                                   eqs 20-34
    example_*                           demonstration example (balance pendulum, models.md M1) eqs 36-55
    m5_ball_hinge, m5_body11            spatial eq 10 and eqs 6-17 for the rods of M5 (Sect. 5.2)

plus the ``INSPECT`` table used by ``mbgen inspect``.

Conventions (Sect. 2.1 of the paper).  All vectors are in the inertial frame oxyz.  At an INPUT
point of an element, the force q acts ON the element in the +axis direction and the moment m about
the NEGATIVE axes, i.e. the element feels (+q, -m); at an OUTPUT point the convention is inverted
(the element feels -q, +m).  With this convention the state of a connection point is continuous:
q at a connection is the force the tip-side element exerts on the root-side element.  E7..E9 of
eq 5 are exactly Euler's equation about the input point I written with this convention.

Reading notes on the seed text (an HTML conversion; several displays are lost or damaged):

* Eq 6 (extended input state of a multi-input body, "figureb") is missing.  Reconstructed from the
  block-row labels 1, 2, 3, 4, ..., 2k+1, 2k+2, ..., 2L+2, 2L+3 of eqs 12-13 and from eq 58 as
      z_{I1-IL} = [r''_{I1}; Omega'_{I1}; m_{I1}; q_{I1}; m_{I2}; q_{I2}; ...; m_{IL}; q_{IL}; 1]
  (2L+3 blocks; m_{Ik} is block 2k+1, q_{Ik} block 2k+2).
* Eq 8 (the extended body matrix, "figurec") is missing.  Reconstructed from Newton/Euler about I1
  with the sign convention above: every extra input I_k adds the columns
      m-row: [ I3 , E6 + E_Ik ],   q-row: [ O3 , I3 ],   other rows zero,
  with E_Ik = -r~_{I1 Ik} (eq 9).  It reduces to eq 4 when the middle columns are removed (as the
  paper says), and it reproduces the paper's printed u_{3,5} = [1], u_{3,6} = [a s7, -a c7] of body 7
  (text before eq 52), which the tests check.
* Eqs 12-13 (Uhat_{j,I1}, Uhat_{j,Ik}) are flattened to one line in the text; the block structure,
  incl. the zero last entry of Uhat_{j,Ik}, is read from the row labels; minus signs are lost
  in the conversion and restored from eq 10 (every u-block enters as -u_{3,2}^{-1} u_{3,m}).
* Eq 16 (H_{r'',m}, H_{O1,Ik}, "figured") is missing.  Reconstructed from eqs 14, 15, 17 and the
  sentence "the moments at input (and output) ends of smooth hinges vanish": H_{r'',m} picks
  [r''; m] out of a standard state (1); H_{O1,Ik} = [[I3, E_{1,Ik}, O, ..., O, E_{2,Ik}], [O ... O]]
  (the moment rows are zero, so eq 15 states m_{j,Ik} = 0).
* Eq 36 (reduced rod matrix), 37, 42, 44, 49, 55 ("figuref".."figurek") are missing; they are all
  derived here from the general elements (``example_*``), nothing is typed in.
* The example does not state A_I; for the planar rods it is the rotation R_z(theta_i) (body axis xi
  along the rod, so J'_I = diag{0, Jz, Jz} puts Jz = 4 m a^2/3 about the z axis through the end I).
* Eq 46 prints S3[0, 2] = 4 m a^2 / D; the derivation gives 4 m a^2 / (3 D) (= S2[0, 2] / D, and it
  is the only value consistent with the paper's own eq 47, whose first row carries 2 m a = (4 m a^2/3)
  * 3/(2a)).  Eq 46 prints S3[0, 1] = -3 m a (c3^2 c5 + s3 c3 c5 - 2 c5) / D; the derivation gives
  -3 m a (c3^2 c5 + s3 c3 s5 - 2 c5) / D (the printed middle term is dimensionally fine but wrong;
  check: c3 * D = 2 c3 + 3 c3^2 c5 + 3 s3 c3 s5).  Both are treated as typos.
* Eq 47 prints "c_c s5" where c3 s5 is meant (garbled subscript).
* Eq 52 (Uhat_8) as converted reads "3ma2 3s72ma 3c72ma" in row 3, i.e. denominators m a^2, 2 m a,
  2 m a; the paper's own u_{3,2} = [m a^2/3], u_{3,4} = [-a s7, a c7] (printed right above it) give
  -u_{3,2}^{-1} u_{3,4} = [3 s7/(m a), -3 c7/(m a)] (a force at the rod end, lever arm a, about the
  centre with inertia m a^2/3).  We follow the u-blocks; the "2" is taken as a typo.
* Eq 62 prints P_1 = T22^{-1} with the entries of T22 itself ([1 0 -2as1; 0 1 2ac1; 0 0 1]); the
  inverse has +2as1 / -2ac1.  ``riccati_backward`` uses the inverse (eq 24).

A remark on the smooth-hinge relation (eq 10): its angular-acceleration row is the third block row
of the OUTBOARD body set to zero, i.e. it enforces m = 0 at the outboard body's OUTPUT (the next
hinge), not at the hinge itself.  Consequences (shown numerically in tests/test_mstmm_ref.py, see
codegen/mstmm_ref.py): along a chain every hinge enforces the moment condition one body further
toward the root, the moment at the output of the chain's tip body is never enforced and the root
moment condition is enforced twice (row 4 of eq 57 is identically 0 = 0); and the hinge step of the
recursion has the spurious singular value  det(T21 S + T22) = 0, here D = 2 + 3 cos(theta3 - theta5)
= 0 (eq 46's denominator), which is not a singularity of the mechanism.  Spatially, u_{3,2} of a rod
with J'_I = diag{0, Jz, Jz} is singular (no axial inertia); this is why models.md M5 gives the rods a
small axial inertia.
"""
from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass
from functools import lru_cache
from typing import Dict, List, Sequence, Tuple

import sympy as sp

# ================================================================== state vector (eqs 1-2)

# Rui et al. 2020, eq 1-2: z = [r''^T, Omega'^T, m^T, q^T, 1]^T  (1-based paper numbering in comments)
STATE_NAMES: Tuple[str, ...] = (
    "xdd", "ydd", "zdd",                      # 1-3   absolute translational acceleration r''
    "Omegad_x", "Omegad_y", "Omegad_z",       # 4-6   absolute angular acceleration Omega'
    "m_x", "m_y", "m_z",                      # 7-9   internal moment m
    "q_x", "q_y", "q_z",                      # 10-12 internal force q
    "1",                                      # 13    the artificial "1"
)


def state_vector(tag: str = "") -> sp.Matrix:
    # Rui et al. 2020, eq 1: symbolic state vector, last entry the number 1
    return sp.Matrix([sp.Symbol(n + tag, real=True) for n in STATE_NAMES[:-1]] + [1])


def extended_state_names(L: int) -> Tuple[str, ...]:
    # Rui et al. 2020, eq 6 (reconstructed, see module notes): [r'', Omega', m_I1, q_I1, ..., m_IL, q_IL, 1]
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
    planar: r'' -> x, y;  Omega' -> z;  m -> z;  q -> x, y, eq 35).
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
    """Layout of the standard state (L = 1, eq 1 / eq 35) or of the extended state (eq 6)."""
    return _layout(L, planar)


SPATIAL = layout(1, False)
PLANAR = layout(1, True)

# Rui et al. 2020, eq 35: planar state [x'', y'', Omega'_z, m_z, q_x, q_y, 1] = entries
# 1, 2, 6, 9, 10, 11, 13 of eq 1 (1-based) = 0, 1, 5, 8, 9, 10, 12 (0-based)
PLANAR_INDEX: Tuple[int, ...] = (0, 1, 5, 8, 9, 10, 12)
PLANAR_NAMES: Tuple[str, ...] = tuple(STATE_NAMES[i] for i in PLANAR_INDEX)


def planar_index(L: int = 1) -> Tuple[int, ...]:
    # Rui et al. 2020, eq 35 applied to the extended state (6): keep x, y, Omega_z and every (m_z, q_x, q_y)
    full, pl = layout(L, False), []
    pl += [full.r[0], full.r[1], full.w[2]]
    for k in range(L):
        pl += [full.m[k][2], full.q[k][0], full.q[k][1]]
    return tuple(pl + [full.one])


def planar_reduce(M: sp.Matrix, L_rows: int = 1, L_cols: int = 1) -> sp.Matrix:
    # Rui et al. 2020, eq 35: keep rows/cols 1, 2, 6, 9, 10, 11, 13 (1-based) of a transfer matrix
    return M.extract(list(planar_index(L_rows)), list(planar_index(L_cols)))


# ================================================================== rigid bodies (eqs 3-9)

def tilde(v) -> sp.Matrix:
    """Skew-symmetric (cross-product) matrix: tilde(a) * b = a x b."""
    v = sp.Matrix(v)
    return sp.Matrix([[0, -v[2], v[1]], [v[2], 0, -v[0]], [-v[1], v[0], 0]])


def E_blocks(m, r_IC, r_IO, Omega_I, A_I, J_I, f_C, m_C) -> "OrderedDict[str, sp.Matrix]":
    # Rui et al. 2020, eq 5: the blocks E1..E9 of U_i.
    #   m: mass; r_IC, r_IO: input point -> mass centre / output point (inertial frame);
    #   Omega_I: absolute angular velocity (inertial frame); A_I: body-fixed frame I xi eta zeta -> oxyz;
    #   J_I: inertia tensor J'_I about I in the body frame; f_C, m_C: external force / moment at C.
    r_IC, r_IO, Om = sp.Matrix(r_IC), sp.Matrix(r_IO), sp.Matrix(Omega_I)
    A_I, J_I, f_C, m_C = sp.Matrix(A_I), sp.Matrix(J_I), sp.Matrix(f_C), sp.Matrix(m_C)
    I3 = sp.eye(3)
    w_I = A_I.T * Om                                    # omega_I = A_I^T Omega_I (text after eq 5)
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
    # Rui et al. 2020, eq 4: z_{i,O} = U_i z_{i,I} (eq 3), 13 x 13
    return U_body_multi(E, [])


def E_Ij(r_I1Ij) -> sp.Matrix:
    # Rui et al. 2020, eq 9: E_{Ij} = -r~_{I1 Ij}
    return -tilde(r_I1Ij)


def U_body_multi(E, r_I1Ik: Sequence) -> sp.Matrix:
    # Rui et al. 2020, eqs 7-8 (eq 8 reconstructed, see module notes): z_{i,O} = U_{i,I1-IL} z_{i,I1-IL};
    # r_I1Ik = [r_{I1 I2}, ..., r_{I1 IL}] (empty list: the SISO matrix of eq 4).
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
    # extra inputs I_k (eq 8): moment m_Ik and force q_Ik (acting at r_{I1 Ik})
    for k, r in enumerate(r_I1Ik, start=1):
        put(rows.m[0], cols.m[k], I3); put(rows.m[0], cols.q[k], E6 + E_Ij(r))
        put(rows.q[0], cols.q[k], I3)
    U[rows.one, cols.one] = 1
    return U


def u3_blocks(U: sp.Matrix, rows: Layout = SPATIAL, cols: Layout = SPATIAL) -> Dict[int, sp.Matrix]:
    # Rui et al. 2020, text after eq 10 and eqs 12-13: the blocks u_{3,1}, u_{3,2}, ... of the third
    # block row (the moment row) of an outboard body matrix: u_{3,1} <- r'', u_{3,2} <- Omega',
    # u_{3,2k+1} <- m_Ik, u_{3,2k+2} <- q_Ik, u_{3,2L+3} <- "1".
    mr = list(rows.m[0])
    u = {1: U.extract(mr, list(cols.r)), 2: U.extract(mr, list(cols.w))}
    for k in range(len(cols.m)):
        u[2 * k + 3] = U.extract(mr, list(cols.m[k]))
        u[2 * k + 4] = U.extract(mr, list(cols.q[k]))
    u[2 * len(cols.m) + 3] = U.extract(mr, [cols.one])
    return u


# ================================================================== hinges (eq 10)

def U_ball_hinge(u: Dict[int, sp.Matrix], lay: Layout = SPATIAL) -> sp.Matrix:
    # Rui et al. 2020, eq 10: smooth ball-and-socket hinge; u = u3_blocks(U of the OUTBOARD body).
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
    # Rui et al. 2020, eq 10 in the reduced form of eq 35 (used as eq 44 for hinge 4): a smooth planar
    # revolute hinge (axis z); u = u3_blocks(planar_reduce(U of the outboard body), PLANAR, PLANAR)
    return U_ball_hinge(u, PLANAR)


def U_fixed_hinge(lay: Layout = SPATIAL) -> sp.Matrix:
    # Rui et al. 2020, eqs 1-3 (state continuity): a fixed (welded) hinge of zero size transfers the
    # whole state unchanged, z_O = z_I, U = identity.
    return sp.eye(lay.n)


# ================================================================== multi-hinge subsystem (eqs 11-17)

def Uhat_I1(u: Dict[int, sp.Matrix], L: int, planar: bool = False) -> sp.Matrix:
    # Rui et al. 2020, eq 12: Uhat_{j,I1} ((2L+3) x 5 blocks); u from u3_blocks of the MISO body (eq 8)
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
    # Rui et al. 2020, eq 13 (k = 2..L): m_Ik, q_Ik go to blocks 2k+1, 2k+2 of z_{j,O} and into
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
    # Rui et al. 2020, eq 11: z_{j,O} = sum_k Uhat_{j,Ik} z_{j,Ik}
    return sum((U * z for U, z in zip(Uhats, z_inputs)), sp.zeros(Uhats[0].rows, 1))


def r_dd_Ik(r_dd_O1, Omegad_O1, Omega_O1, r_O1Ik) -> sp.Matrix:
    # Rui et al. 2020, eq 14: r''_Ik = r''_O1 - r~_{O1 Ik} Omega'_O1 + Omega~_O1 Omega~_O1 r_{O1 Ik}
    return sp.Matrix(r_dd_O1) + E1_Ik(r_O1Ik) * sp.Matrix(Omegad_O1) + E2_Ik(r_O1Ik, Omega_O1)


def E1_Ik(r_O1Ik) -> sp.Matrix:
    # Rui et al. 2020, eq 17: E_{1,Ik} = -r~_{O1 Ik}
    return -tilde(r_O1Ik)


def E2_Ik(r_O1Ik, Omega_O1) -> sp.Matrix:
    # Rui et al. 2020, eq 17: E_{2,Ik} = Omega~_{O1} Omega~_{O1} r_{O1 Ik}
    return tilde(Omega_O1) * tilde(Omega_O1) * sp.Matrix(r_O1Ik)


def H_rm(planar: bool = False) -> sp.Matrix:
    # Rui et al. 2020, eq 16 (reconstructed): H_{r'',m} extracts [r''; m] from a standard state (1)
    std = layout(1, planar)
    rows = std.r + std.m[0]
    H = sp.zeros(len(rows), std.n)
    for a, j in enumerate(rows):
        H[a, j] = 1
    return H


def H_O1Ik(r_O1Ik, Omega_O1, L: int, k: int, planar: bool = False) -> sp.Matrix:
    # Rui et al. 2020, eqs 14-17 (eq 16 reconstructed): H_{r'',m} z_{j,Ik} = H_{O1,Ik} z_{j,O} with
    # r''_Ik = r''_O1 + E_{1,Ik} Omega'_O1 + E_{2,Ik} (eq 14) and m_{j,Ik} = 0 (zero moment rows).
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
    # Rui et al. 2020, eq 15 as a residual: H_{r'',m} z_{j,Ik} - H_{O1,Ik} z_{j,O}  (= 0)
    return H_rm(planar) * sp.Matrix(z_jIk) - H_O1Ik(r_O1Ik, Omega_O1, L, k, planar) * sp.Matrix(z_jO)


# ================================================================== boundaries (Sect. 4 and 5.1)

# Rui et al. 2020, Sect. 4 (text before eq 34) and Sect. 5.1: which state blocks of a boundary are
# known to be zero (they form z_a) and which are unknown (z_b):
#   free   (tip, eq before 38):       m = q = 0          unknown r'', Omega'
#   fixed  (clamped):                 r'' = Omega' = 0   unknown m, q
#   pinned (smooth ball / revolute to ground, body 7 output, text after eq 58): r'' = m = 0,
#                                     unknown Omega', q
BOUNDARY: Dict[str, Tuple[Tuple[str, ...], Tuple[str, ...]]] = {
    "free": (("m", "q"), ("r", "w")),
    "fixed": (("r", "w"), ("m", "q")),
    "pinned": (("r", "m"), ("w", "q")),
}


def boundary(kind: str, planar: bool = False) -> Tuple[List[int], List[int]]:
    # Rui et al. 2020, eq 34 and Sect. 5.1: (indices of z_a = known zeros, indices of z_b = unknowns)
    lay = layout(1, planar)
    blocks = {"r": lay.r, "w": lay.w, "m": lay.m[0], "q": lay.q[0]}
    known, unknown = BOUNDARY[kind]
    return ([i for b in known for i in blocks[b]], [i for b in unknown for i in blocks[b]])


def boundary_names(kind: str, planar: bool = False) -> Tuple[List[str], List[str]]:
    names = PLANAR_NAMES if planar else STATE_NAMES
    a, b = boundary(kind, planar)
    return [names[i] for i in a], [names[i] for i in b]


# ================================================================== Riccati recursion (eqs 20-34)

def riccati_partition(U: sp.Matrix, a: Sequence[int], b: Sequence[int]) -> "OrderedDict[str, sp.Matrix]":
    # Rui et al. 2020, eq 20: [z_a; z_b]_O = [[T11, T12], [T21, T22]] [z_a; z_b]_I + [f_a; f_b]
    one = U.cols - 1
    a, b = list(a), list(b)
    return OrderedDict([
        ("T11", U.extract(a, a)), ("T12", U.extract(a, b)),
        ("T21", U.extract(b, a)), ("T22", U.extract(b, b)),
        ("f_a", U.extract(a, [one])), ("f_b", U.extract(b, [one])),
    ])


def riccati_rearranged(U: sp.Matrix, a: Sequence[int], b: Sequence[int]) -> sp.Matrix:
    # Rui et al. 2020, eqs 20 / 37: U with rows and columns reordered to [z_a; z_b; 1]
    p = list(a) + list(b) + [U.cols - 1]
    return U.extract(p, p)


def riccati_initial(na: int, nb: int) -> Tuple[sp.Matrix, sp.Matrix]:
    # Rui et al. 2020, eq 34: z_a1,I = 0 at a tip boundary -> S_1 = O, e_1 = 0
    return sp.zeros(na, nb), sp.zeros(na, 1)


def riccati_P_q(S, e, T21, T22, f_b, simplify=None) -> Tuple[sp.Matrix, sp.Matrix]:
    # Rui et al. 2020, eq 24: P_i = (T21 S_i + T22)^{-1},  q_i = -(T21 e_i + f_b)
    M = T21 * S + T22
    if simplify is not None:
        M = M.applyfunc(simplify)
    P = M.inv()
    q = -(T21 * e + f_b)
    return P, q


def riccati_step(S, e, T11, T12, T21, T22, f_a, f_b, simplify=None) -> "OrderedDict[str, sp.Matrix]":
    # Rui et al. 2020, eqs 24, 29, 30:
    #   S_{i+1} = (T11 S_i + T12) P_i,   e_{i+1} = T11 e_i + f_a + S_{i+1} q_i
    # so that z_{a i,O} = S_{i+1} z_{b i,O} + e_{i+1} (eq 31)
    P, q = riccati_P_q(S, e, T21, T22, f_b, simplify)
    S_next = (T11 * S + T12) * P
    e_next = T11 * e + f_a + S_next * q
    if simplify is not None:
        P, q, S_next, e_next = (X.applyfunc(simplify) for X in (P, q, S_next, e_next))
    return OrderedDict([("P", P), ("q", q), ("S_next", S_next), ("e_next", e_next)])


def riccati_backward(P, q, S, e, z_bO) -> Tuple[sp.Matrix, sp.Matrix]:
    # Rui et al. 2020, eq 33 (eqs 25 and 21): z_{b i,I} = P_i z_{b i,O} + P_i q_i,  z_{a i,I} = S_i z_{b i,I} + e_i
    z_bI = P * z_bO + P * q
    return z_bI, S * z_bI + e


def U_tip(S, e) -> sp.Matrix:
    # Rui et al. 2020, eqs 42 / 48: z_O = [[I, O], [S, e], [O, 1]] [z_b; 1]_O  (z_a below z_b)
    nb, na = S.cols, S.rows
    U = sp.zeros(nb + na + 1, nb + 1)
    U[:nb, :nb] = sp.eye(nb)
    U[nb:nb + na, :nb] = S
    U[nb:nb + na, nb] = e
    U[nb + na, nb] = 1
    return U


# ================================================================== demonstration example (Sect. 5.1, M1)

m, a, g = sp.symbols("m a g", positive=True)       # rod mass, half length (2a = L), gravity
THETA = {i: sp.Symbol(f"theta{i}", real=True) for i in (1, 3, 5, 7)}      # absolute rod angles
THETAD = {i: sp.Symbol(f"thetad{i}", real=True) for i in (1, 3, 5, 7)}    # their rates
Jz = 4 * m * a**2 / 3                                # rod end moment of inertia (Sect. 5.1)

# planar Riccati split used in the example (eq 37): z_a = [m_z, q_x, q_y], z_b = [x'', y'', Omega'_z]
EX_A = [3, 4, 5]
EX_B = [0, 1, 2]


def _c(i):
    return sp.cos(THETA[i])


def _s(i):
    return sp.sin(THETA[i])


def _Rz(t):
    return sp.Matrix([[sp.cos(t), -sp.sin(t), 0], [sp.sin(t), sp.cos(t), 0], [0, 0, 1]])


def _simp(x):
    # small expressions (element matrices, first Riccati step): rational + Pythagorean simplification
    return sp.factor(sp.trigsimp(sp.cancel(x)))


def _simp_rational(x):
    # later Riccati steps: rational simplification only (fast; keeps the paper's c_i, s_i product form)
    return sp.factor(sp.cancel(x))


def _S(M):
    return M.applyfunc(_simp)


def example_rod_E(i: int, r_IO_factor=2) -> "OrderedDict[str, sp.Matrix]":
    # Rui et al. 2020, eq 5 with the data of Sect. 5.1 (Fig. 2c/d): r_IC = [a c_i, a s_i, 0],
    # r_IO = 2 r_IC (rods 1, 3, 5) or r_IO = r_IC (body 7), Omega_I = [0, 0, thetad_i],
    # f_C = m g [0, -1, 0], m_C = 0, J'_I = diag{0, Jz, Jz}, A_I = R_z(theta_i)
    r_IC = sp.Matrix([a * _c(i), a * _s(i), 0])
    return E_blocks(m, r_IC, r_IO_factor * r_IC, [0, 0, THETAD[i]], _Rz(THETA[i]),
                    sp.diag(0, Jz, Jz), [0, -m * g, 0], [0, 0, 0])


@lru_cache(maxsize=None)
def example_U_rod(i: int) -> sp.Matrix:
    # Rui et al. 2020, eq 36 (the display is missing in the text): eq 4 of rod i in {1, 3, 5}, reduced by eq 35
    return _S(planar_reduce(U_body(example_rod_E(i))))


@lru_cache(maxsize=None)
def example_body1_T() -> "OrderedDict[str, sp.Matrix]":
    # Rui et al. 2020, eqs 37-38: body 1 rearranged as eq 20 with z_a = [m_z, q_x, q_y], z_b = [x'', y'', Omega'_z]
    return riccati_partition(example_U_rod(1), EX_A, EX_B)


@lru_cache(maxsize=None)
def example_S2_e2(i: int = 1) -> Tuple[sp.Matrix, sp.Matrix]:
    # Rui et al. 2020, eqs 39-40: first Riccati step over the free-tip rod i (S_1 = O, e_1 = 0, eq 34)
    T = riccati_partition(example_U_rod(i), EX_A, EX_B)
    S1, e1 = riccati_initial(3, 3)
    st = riccati_step(S1, e1, *T.values(), simplify=_simp)
    return st["S_next"], st["e_next"]


@lru_cache(maxsize=None)
def example_hinge4_U() -> sp.Matrix:
    # Rui et al. 2020, eq 44 (display missing): reduced eq 10 with the u-blocks of the outboard body 5
    return _S(U_revolute_planar(u3_blocks(example_U_rod(5), PLANAR, PLANAR)))


@lru_cache(maxsize=None)
def example_hinge4_T() -> "OrderedDict[str, sp.Matrix]":
    # Rui et al. 2020, eq 45: hinge 4 rearranged as eq 20 (same split as eq 37)
    return riccati_partition(example_hinge4_U(), EX_A, EX_B)


@lru_cache(maxsize=None)
def example_S3_e3() -> "OrderedDict[str, sp.Expr]":
    # Rui et al. 2020, eqs 46-47: Riccati step over hinge 4, starting from S2, e2 of body 3 (eqs 39-40, i = 3).
    # Returns S3, e3 and D = det(T21 S2 + T22) = 1 / det(P), the common denominator of eq 46.
    S2, e2 = example_S2_e2(3)
    T = example_hinge4_T()
    st = riccati_step(S2, e2, *T.values(), simplify=_simp_rational)
    D = _simp_rational((T["T21"] * S2 + T["T22"]).det())
    return OrderedDict([("S3", st["S_next"]), ("e3", st["e_next"]), ("D", D), ("P", st["P"])])


@lru_cache(maxsize=None)
def example_U7() -> sp.Matrix:
    # Rui et al. 2020, eq 49 (display missing): body 7 with r_IO = r_IC = [a c7, a s7, 0] and the second input
    # I2 at r_{I1 I2} = 2 r_IC (eqs 8-9), reduced by eq 35 to 7 x 10
    E = example_rod_E(7, r_IO_factor=1)
    r12 = 2 * sp.Matrix([a * _c(7), a * _s(7), 0])
    return _S(planar_reduce(U_body_multi(E, [r12]), 1, 2))


def example_u3_body7() -> Dict[int, sp.Matrix]:
    # Rui et al. 2020, text before eq 52: u_{3,1} .. u_{3,7} from the moment row of eq 49
    return u3_blocks(example_U7(), PLANAR, layout(2, True))


def example_u3_body5() -> Dict[int, sp.Matrix]:
    # Rui et al. 2020, text before eq 44: u_{3,1} .. u_{3,5} from the moment row of eq 36, i = 5
    return u3_blocks(example_U_rod(5), PLANAR, PLANAR)


@lru_cache(maxsize=None)
def example_Uhat8() -> Tuple[sp.Matrix, sp.Matrix]:
    # Rui et al. 2020, eq 52: Uhat_{8,I1}, Uhat_{8,I2} (eqs 12-13, reduced form, 10 x 7)
    u = example_u3_body7()
    return _S(Uhat_I1(u, 2, planar=True)), _S(Uhat_Ik(u, 2, 2, planar=True))


@lru_cache(maxsize=None)
def example_H8() -> Tuple[sp.Matrix, sp.Matrix]:
    # Rui et al. 2020, eqs 54-55 (display missing): H_{r'',m} (3 x 7) and H_{O1,I2} (3 x 10) of multi-hinge 8,
    # r_{O1 I2} = r_{I1 I2} = 2 [a c7, a s7, 0], Omega_O1 = [0, 0, thetad7]
    r12 = 2 * sp.Matrix([a * _c(7), a * _s(7), 0])
    return H_rm(planar=True), _S(H_O1Ik(r12, [0, 0, THETAD[7]], 2, 2, planar=True))


# ================================================================== spatial elements of M5 (Sect. 5.2)

# models.md M5 at t = 0, written with A_I = I: a thin rod of mass m and length 2a along the x axis, input
# end I at the origin, J'_I = diag{J_a, Jz, Jz} about I (J_a: the small axial inertia that makes
# u_{3,2} regular, see test_spatial_rod_u32_needs_axial_inertia), f_C = m g [0, -1, 0] (gravity -y),
# angular velocity Omega = [Omega_x, Omega_y, Omega_z].
J_a = sp.Symbol("J_a", positive=True)
OMEGA = sp.Matrix(sp.symbols("Omega_x Omega_y Omega_z", real=True))


def m5_rod_E(r_IO_factor=2) -> "OrderedDict[str, sp.Matrix]":
    # Rui et al. 2020, eq 5 for the M5 rod: r_IC = [a, 0, 0], r_IO = r_IO_factor r_IC
    r_IC = sp.Matrix([a, 0, 0])
    return E_blocks(m, r_IC, r_IO_factor * r_IC, OMEGA, sp.eye(3), sp.diag(J_a, Jz, Jz),
                    [0, -m * g, 0], [0, 0, 0])


@lru_cache(maxsize=None)
def m5_ball_hinge() -> "OrderedDict[str, sp.Matrix]":
    # Rui et al. 2020, eq 10: the smooth ball hinge whose outboard body is an M5 rod (eq 4, 13 x 13)
    U = U_body(m5_rod_E())
    u = u3_blocks(U)
    out = OrderedDict((f"u_3,{k}", _S(v)) for k, v in u.items())
    out["U_rod"] = _S(U)
    out["U_hinge"] = _S(U_ball_hinge(u))
    return out


@lru_cache(maxsize=None)
def m5_body11() -> "OrderedDict[str, sp.Matrix]":
    # Rui et al. 2020, eqs 6-9 and 11-17 for the multi-input body 11 of M5 (Fig. 1): input I1 at its -x end
    # (origin), I2 at its +x end (r_{I1 I2} = [2a, 0, 0], eq 9), output O at its centre (r_IO = r_IC)
    E = m5_rod_E(r_IO_factor=1)
    r12 = sp.Matrix([2 * a, 0, 0])
    U = U_body_multi(E, [r12])                                        # eq 8, 13 x 19
    u = u3_blocks(U, SPATIAL, layout(2, False))
    return OrderedDict([("E_I2", E_Ij(r12)), ("U", _S(U)),
                        ("Uhat_I1", _S(Uhat_I1(u, 2))), ("Uhat_I2", _S(Uhat_Ik(u, 2, 2))),   # eqs 12-13
                        ("H_rm", H_rm()), ("H_O1I2", _S(H_O1Ik(r12, OMEGA, 2, 2)))])          # eqs 16-17


# ================================================================== INSPECT table (mbgen inspect)

def _names_matrix(kind):
    za, zb = boundary_names(kind, planar=True)
    return sp.Matrix([[sp.Symbol(n) for n in za], [sp.Symbol(n) for n in zb]])


def _inspect_state():
    return OrderedDict([
        ("z (eq 1)", state_vector()),
        ("z planar (eq 35)", sp.Matrix([sp.Symbol(n) for n in PLANAR_NAMES[:-1]] + [1])),
        ("eq 35 rows/cols (1-based)", sp.Matrix([[i + 1 for i in PLANAR_INDEX]])),
        ("z_{I1-I2} (eq 6, reconstructed)", sp.Matrix([sp.Symbol(n) for n in extended_state_names(2)[:-1]] + [1])),
        ("boundary free: [z_a; z_b]", _names_matrix("free")),
        ("boundary fixed: [z_a; z_b]", _names_matrix("fixed")),
        ("boundary pinned: [z_a; z_b]", _names_matrix("pinned")),
    ])


def _generic_body_symbols():
    # display only: the body frame is taken parallel to oxyz at this instant (A_I = I) to keep the
    # printout short; E_blocks itself takes any A_I
    mm = sp.Symbol("m", positive=True)
    rIC = sp.Matrix(sp.symbols("r_ICx r_ICy r_ICz", real=True))
    rIO = sp.Matrix(sp.symbols("r_IOx r_IOy r_IOz", real=True))
    Om = sp.Matrix(sp.symbols("Omega_x Omega_y Omega_z", real=True))
    A = sp.eye(3)
    J = sp.Matrix(3, 3, lambda i, j: sp.Symbol(f"J_{min(i, j) + 1}{max(i, j) + 1}", real=True))
    fC = sp.Matrix(sp.symbols("f_Cx f_Cy f_Cz", real=True))
    mC = sp.Matrix(sp.symbols("m_Cx m_Cy m_Cz", real=True))
    return mm, rIC, rIO, Om, A, J, fC, mC


def _inspect_body():
    E = E_blocks(*_generic_body_symbols())
    out = OrderedDict((f"{k} (eq 5, A_I = I)", v) for k, v in E.items())
    out["U_i (eq 4, A_I = I)"] = U_body(E)
    out["U_i rod 1, reduced (eq 36)"] = example_U_rod(1)
    return out


def _inspect_ball_hinge():
    h = m5_ball_hinge()
    out = OrderedDict()
    for k in range(1, 6):
        out[f"u_3,{k} (outboard M5 rod, A_I = I)"] = h[f"u_3,{k}"]
    out["U_j smooth ball hinge, spatial (eq 10)"] = h["U_hinge"]
    u = u3_blocks(example_U_rod(5), PLANAR, PLANAR)
    for k, v in u.items():
        out[f"u_3,{k} (body 5 of M1, reduced)"] = v
    out["U_4 planar revolute hinge (eqs 10, 44)"] = example_hinge4_U()
    out["U fixed hinge, planar (identity)"] = U_fixed_hinge(PLANAR)
    return out


def _inspect_multi_body():
    b = m5_body11()
    return OrderedDict([("E_I2 = -r~_{I1 I2} (eq 9), M5 body 11", b["E_I2"]),
                        ("z_{I1-I2} (eq 6, reconstructed)",
                         sp.Matrix([sp.Symbol(n) for n in extended_state_names(2)[:-1]] + [1])),
                        ("U_{11,I1-I2} (eqs 7-8), M5 body 11, A_I = I", b["U"])])


def _inspect_multi_hinge_spatial():
    b = m5_body11()
    return OrderedDict([("Uhat_{j,I1} (eq 12), M5 body 11", b["Uhat_I1"]),
                        ("Uhat_{j,I2} (eq 13), M5 body 11", b["Uhat_I2"]),
                        ("H_{r'',m} (eq 16)", b["H_rm"]),
                        ("H_{O1,I2} (eqs 14-17), M5 body 11", b["H_O1I2"])])


def _inspect_multi_hinge():
    out = OrderedDict()
    out["U_{7,I1-I2} (eqs 8, 49)"] = example_U7()
    for k, v in example_u3_body7().items():
        out[f"u_3,{k} (body 7)"] = v
    U1, U2 = example_Uhat8()
    out["Uhat_{8,I1} (eqs 12, 52)"] = U1
    out["Uhat_{8,I2} (eqs 13, 52)"] = U2
    H1, H2 = example_H8()
    out["H_{r'',m} (eq 16)"] = H1
    out["H_{O1,I2} (eqs 16-17, 55)"] = H2
    return out


def _inspect_planar_state():
    return OrderedDict([
        ("z planar (eq 35)", sp.Matrix([sp.Symbol(n) for n in PLANAR_NAMES[:-1]] + [1])),
        ("kept rows/cols of eq 1 (1-based)", sp.Matrix([[i + 1 for i in PLANAR_INDEX]])),
        ("kept entries of eq 6, L = 2 (1-based)", sp.Matrix([[i + 1 for i in planar_index(2)]])),
    ])


def _inspect_riccati():
    S, e = sp.MatrixSymbol("S_i", 3, 3), sp.MatrixSymbol("e_i", 3, 1)
    T11, T12, T21, T22 = (sp.MatrixSymbol(n, 3, 3) for n in ("T11", "T12", "T21", "T22"))
    fa, fb = sp.MatrixSymbol("f_a", 3, 1), sp.MatrixSymbol("f_b", 3, 1)
    P = sp.Inverse(T21 * S + T22)
    q = -(T21 * e + fb)
    S1 = (T11 * S + T12) * P
    return OrderedDict([("P_i (eq 24)", P), ("q_i (eq 24)", q), ("S_{i+1} (eq 29)", S1),
                        ("e_{i+1} (eq 30)", T11 * e + fa + S1 * q)])


def _inspect_example():
    out = OrderedDict()
    for k, v in example_body1_T().items():
        out[f"{k} body 1 (eq 38)"] = v
    S2, e2 = example_S2_e2(1)
    out["S2 (eq 39)"], out["e2 (eq 40)"] = S2, e2
    for k, v in example_hinge4_T().items():
        out[f"{k} hinge 4 (eq 45)"] = v
    r = example_S3_e3()
    out["D, denominator of S3 (eq 46)"] = r["D"]
    out["S3 (eq 46)"], out["e3 (eq 47)"] = r["S3"], r["e3"]
    return out


INSPECT = {
    "mstmm-body": _inspect_body,
    "mstmm-ball-hinge": _inspect_ball_hinge,
    "mstmm-multi-hinge": _inspect_multi_hinge,
    "mstmm-multi-body": _inspect_multi_body,
    "mstmm-multi-hinge-spatial": _inspect_multi_hinge_spatial,
    "mstmm-planar-state": _inspect_planar_state,
    "mstmm-state": _inspect_state,
    "mstmm-riccati": _inspect_riccati,
    "mstmm-example": _inspect_example,
}
