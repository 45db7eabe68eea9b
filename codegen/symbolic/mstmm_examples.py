"""The Riccati MSTMM seed's printed examples, symbolically.

The balance pendulum M1 (Sect. 5.1, [RBW eqs 35-49]),
the spatial elements of M5 (Sect. 5.2), and the `mbgen inspect` entries of the transfer-matrix elements.

The general elements (state vectors, body and hinge transfer matrices, the Riccati recursion) are in
codegen/symbolic/mstmm.py; the tests reproduce the matrices the paper prints from the functions here.
"""
from __future__ import annotations

from collections import OrderedDict
from functools import lru_cache
from typing import Dict, Tuple

import sympy as sp

from .mstmm import (E_Ij, E_blocks, H_O1Ik, H_rm, PLANAR, PLANAR_INDEX, PLANAR_NAMES, SPATIAL, U_ball_hinge,
                    U_body, U_body_multi, U_fixed_hinge, U_revolute_planar, Uhat_I1, Uhat_Ik, boundary_names,
                    extended_state_names, layout, planar_index, planar_reduce, riccati_initial,
                    riccati_partition, riccati_step, state_vector, u3_blocks)


# ================================================================== demonstration example (Sect. 5.1, M1)

m, a, g = sp.symbols("m a g", positive=True)       # rod mass, half length (2a = L), gravity
THETA = {i: sp.Symbol(f"theta{i}", real=True) for i in (1, 3, 5, 7)}      # absolute rod angles
THETAD = {i: sp.Symbol(f"thetad{i}", real=True) for i in (1, 3, 5, 7)}    # their rates
Jz = 4 * m * a**2 / 3                                # rod end moment of inertia (Sect. 5.1)

# planar Riccati split used in the example [RBW eq 37]: z_a = [m_z, q_x, q_y], z_b = [x'', y'', Omega'_z]
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
    """The blocks E1..E9 of rod i of the balance pendulum M1 (the data of Sect. 5.1)."""
    # Rui et al. 2020, [RBW eq 5] with the data of Sect. 5.1 (Fig. 2c/d): r_IC = [a c_i, a s_i, 0],
    # r_IO = 2 r_IC (rods 1, 3, 5) or r_IO = r_IC (body 7), Omega_I = [0, 0, thetad_i],
    # f_C = m g [0, -1, 0], m_C = 0, J'_I = diag{0, Jz, Jz}, A_I = R_z(theta_i)
    r_IC = sp.Matrix([a * _c(i), a * _s(i), 0])
    return E_blocks(m, r_IC, r_IO_factor * r_IC, [0, 0, THETAD[i]], _Rz(THETA[i]),
                    sp.diag(0, Jz, Jz), [0, -m * g, 0], [0, 0, 0])


@lru_cache(maxsize=None)
def example_U_rod(i: int) -> sp.Matrix:
    """The reduced transfer matrix of rod i of M1."""
    # Rui et al. 2020, [RBW eq 36] (the display is missing in the text): [RBW eq 4] of rod i in {1, 3, 5}, reduced by [RBW eq 35]
    return _S(planar_reduce(U_body(example_rod_E(i))))


@lru_cache(maxsize=None)
def example_body1_T() -> "OrderedDict[str, sp.Matrix]":
    """Body 1 of M1 rearranged into the Riccati blocks."""
    # Rui et al. 2020, [RBW eqs 37-38]: body 1 rearranged as [RBW eq 20] with z_a = [m_z, q_x, q_y], z_b = [x'', y'', Omega'_z]
    return riccati_partition(example_U_rod(1), EX_A, EX_B)


@lru_cache(maxsize=None)
def example_S2_e2(i: int = 1) -> Tuple[sp.Matrix, sp.Matrix]:
    """The first Riccati step over the free-tip rod i of M1: S2, e2."""
    # Rui et al. 2020, [RBW eqs 39-40]: first Riccati step over the free-tip rod i (S_1 = O, e_1 = 0, [RBW eq 34])
    T = riccati_partition(example_U_rod(i), EX_A, EX_B)
    S1, e1 = riccati_initial(3, 3)
    st = riccati_step(S1, e1, *T.values(), simplify=_simp)
    return st["S_next"], st["e_next"]


@lru_cache(maxsize=None)
def example_hinge4_U() -> sp.Matrix:
    """The reduced transfer matrix of hinge 4 of M1."""
    # Rui et al. 2020, [RBW eq 44] (display missing): reduced [RBW eq 10] with the u-blocks of the outboard body 5
    return _S(U_revolute_planar(u3_blocks(example_U_rod(5), PLANAR, PLANAR)))


@lru_cache(maxsize=None)
def example_hinge4_T() -> "OrderedDict[str, sp.Matrix]":
    """Hinge 4 of M1 rearranged into the Riccati blocks."""
    # Rui et al. 2020, [RBW eq 45]: hinge 4 rearranged as [RBW eq 20] (same split as [RBW eq 37])
    return riccati_partition(example_hinge4_U(), EX_A, EX_B)


@lru_cache(maxsize=None)
def example_S3_e3() -> "OrderedDict[str, sp.Expr]":
    """The Riccati step over hinge 4 of M1: S3, e3 and their common denominator D."""
    # Rui et al. 2020, [RBW eqs 46-47]: Riccati step over hinge 4, starting from S2, e2 of body 3 ([RBW eqs 39-40], i = 3).
    # Returns S3, e3 and D = det(T21 S2 + T22) = 1 / det(P), the common denominator of [RBW eq 46].
    S2, e2 = example_S2_e2(3)
    T = example_hinge4_T()
    st = riccati_step(S2, e2, *T.values(), simplify=_simp_rational)
    D = _simp_rational((T["T21"] * S2 + T["T22"]).det())
    return OrderedDict([("S3", st["S_next"]), ("e3", st["e_next"]), ("D", D), ("P", st["P"])])


@lru_cache(maxsize=None)
def example_U7() -> sp.Matrix:
    """The reduced transfer matrix (7 x 10) of body 7 of M1, which has two inputs."""
    # Rui et al. 2020, [RBW eq 49] (display missing): body 7 with r_IO = r_IC = [a c7, a s7, 0] and the second input
    # I2 at r_{I1 I2} = 2 r_IC [RBW eqs 8-9], reduced by [RBW eq 35] to 7 x 10
    E = example_rod_E(7, r_IO_factor=1)
    r12 = 2 * sp.Matrix([a * _c(7), a * _s(7), 0])
    return _S(planar_reduce(U_body_multi(E, [r12]), 1, 2))


def example_u3_body7() -> Dict[int, sp.Matrix]:
    """The blocks of the moment row of body 7 of M1."""
    # Rui et al. 2020, text before [RBW eq 52]: u_{3,1} .. u_{3,7} from the moment row of [RBW eq 49]
    return u3_blocks(example_U7(), PLANAR, layout(2, True))


def example_u3_body5() -> Dict[int, sp.Matrix]:
    """The blocks of the moment row of body 5 of M1."""
    # Rui et al. 2020, text before [RBW eq 44]: u_{3,1} .. u_{3,5} from the moment row of [RBW eq 36], i = 5
    return u3_blocks(example_U_rod(5), PLANAR, PLANAR)


@lru_cache(maxsize=None)
def example_Uhat8() -> Tuple[sp.Matrix, sp.Matrix]:
    """The blocks Uhat_{8,I1}, Uhat_{8,I2} of multi-hinge 8 of M1."""
    # Rui et al. 2020, [RBW eq 52]: Uhat_{8,I1}, Uhat_{8,I2} ([RBW eqs 12-13], reduced form, 10 x 7)
    u = example_u3_body7()
    return _S(Uhat_I1(u, 2, planar=True)), _S(Uhat_Ik(u, 2, 2, planar=True))


@lru_cache(maxsize=None)
def example_H8() -> Tuple[sp.Matrix, sp.Matrix]:
    """The matrices H_{r'',m} and H_{O1,I2} of multi-hinge 8 of M1."""
    # Rui et al. 2020, [RBW eqs 54-55] (display missing): H_{r'',m} (3 x 7) and H_{O1,I2} (3 x 10) of multi-hinge 8,
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
    """The blocks E1..E9 of a rod of the branch system M5."""
    # Rui et al. 2020, [RBW eq 5] for the M5 rod: r_IC = [a, 0, 0], r_IO = r_IO_factor r_IC
    r_IC = sp.Matrix([a, 0, 0])
    return E_blocks(m, r_IC, r_IO_factor * r_IC, OMEGA, sp.eye(3), sp.diag(J_a, Jz, Jz),
                    [0, -m * g, 0], [0, 0, 0])


@lru_cache(maxsize=None)
def m5_ball_hinge() -> "OrderedDict[str, sp.Matrix]":
    """The smooth ball hinge whose outboard body is a rod of M5."""
    # Rui et al. 2020, [RBW eq 10]: the smooth ball hinge whose outboard body is an M5 rod ([RBW eqs 4, 13] x 13)
    U = U_body(m5_rod_E())
    u = u3_blocks(U)
    out = OrderedDict((f"u_3,{k}", _S(v)) for k, v in u.items())
    out["U_rod"] = _S(U)
    out["U_hinge"] = _S(U_ball_hinge(u))
    return out


@lru_cache(maxsize=None)
def m5_body11() -> "OrderedDict[str, sp.Matrix]":
    """The matrices of the multi-input body 11 of M5."""
    # Rui et al. 2020, [RBW eqs 6-9, 11-17] for the multi-input body 11 of M5 (Fig. 1): input I1 at its -x end
    # (origin), I2 at its +x end (r_{I1 I2} = [2a, 0, 0], [RBW eq 9]), output O at its centre (r_IO = r_IC)
    E = m5_rod_E(r_IO_factor=1)
    r12 = sp.Matrix([2 * a, 0, 0])
    U = U_body_multi(E, [r12])                                        # [RBW eqs 8, 13] x 19
    u = u3_blocks(U, SPATIAL, layout(2, False))
    return OrderedDict([("E_I2", E_Ij(r12)), ("U", _S(U)),
                        ("Uhat_I1", _S(Uhat_I1(u, 2))), ("Uhat_I2", _S(Uhat_Ik(u, 2, 2))),   # [RBW eqs 12-13]
                        ("H_rm", H_rm()), ("H_O1I2", _S(H_O1Ik(r12, OMEGA, 2, 2)))])          # [RBW eqs 16-17]


# ================================================================== INSPECT table (mbgen inspect)

def _names_matrix(kind):
    za, zb = boundary_names(kind, planar=True)
    return sp.Matrix([[sp.Symbol(n) for n in za], [sp.Symbol(n) for n in zb]])


def _inspect_state():
    return OrderedDict([
        ("z [RBW eq 1]", state_vector()),
        ("z planar [RBW eq 35]", sp.Matrix([sp.Symbol(n) for n in PLANAR_NAMES[:-1]] + [1])),
        ("[RBW eq 35] rows/cols (1-based)", sp.Matrix([[i + 1 for i in PLANAR_INDEX]])),
        ("z_{I1-I2} ([RBW eq 6], reconstructed)", sp.Matrix([sp.Symbol(n) for n in extended_state_names(2)[:-1]] + [1])),
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
    out = OrderedDict((f"{k} ([RBW eq 5], A_I = I)", v) for k, v in E.items())
    out["U_i ([RBW eq 4], A_I = I)"] = U_body(E)
    out["U_i rod 1, reduced [RBW eq 36]"] = example_U_rod(1)
    return out


def _inspect_ball_hinge():
    h = m5_ball_hinge()
    out = OrderedDict()
    for k in range(1, 6):
        out[f"u_3,{k} (outboard M5 rod, A_I = I)"] = h[f"u_3,{k}"]
    out["U_j smooth ball hinge, spatial [RBW eq 10]"] = h["U_hinge"]
    u = u3_blocks(example_U_rod(5), PLANAR, PLANAR)
    for k, v in u.items():
        out[f"u_3,{k} (body 5 of M1, reduced)"] = v
    out["U_4 planar revolute hinge [RBW eqs 10, 44]"] = example_hinge4_U()
    out["U fixed hinge, planar (identity)"] = U_fixed_hinge(PLANAR)
    return out


def _inspect_multi_body():
    b = m5_body11()
    return OrderedDict([("E_I2 = -r~_{I1 I2} [RBW eq 9], M5 body 11", b["E_I2"]),
                        ("z_{I1-I2} ([RBW eq 6], reconstructed)",
                         sp.Matrix([sp.Symbol(n) for n in extended_state_names(2)[:-1]] + [1])),
                        ("U_{11,I1-I2} [RBW eqs 7-8], M5 body 11, A_I = I", b["U"])])


def _inspect_multi_hinge_spatial():
    b = m5_body11()
    return OrderedDict([("Uhat_{j,I1} [RBW eq 12], M5 body 11", b["Uhat_I1"]),
                        ("Uhat_{j,I2} [RBW eq 13], M5 body 11", b["Uhat_I2"]),
                        ("H_{r'',m} [RBW eq 16]", b["H_rm"]),
                        ("H_{O1,I2} [RBW eqs 14-17], M5 body 11", b["H_O1I2"])])


def _inspect_multi_hinge():
    out = OrderedDict()
    out["U_{7,I1-I2} [RBW eqs 8, 49]"] = example_U7()
    for k, v in example_u3_body7().items():
        out[f"u_3,{k} (body 7)"] = v
    U1, U2 = example_Uhat8()
    out["Uhat_{8,I1} [RBW eqs 12, 52]"] = U1
    out["Uhat_{8,I2} [RBW eqs 13, 52]"] = U2
    H1, H2 = example_H8()
    out["H_{r'',m} [RBW eq 16]"] = H1
    out["H_{O1,I2} [RBW eqs 16-17, 55]"] = H2
    return out


def _inspect_planar_state():
    return OrderedDict([
        ("z planar [RBW eq 35]", sp.Matrix([sp.Symbol(n) for n in PLANAR_NAMES[:-1]] + [1])),
        ("kept rows/cols of [RBW eq 1] (1-based)", sp.Matrix([[i + 1 for i in PLANAR_INDEX]])),
        ("kept entries of [RBW eq 6], L = 2 (1-based)", sp.Matrix([[i + 1 for i in planar_index(2)]])),
    ])


def _inspect_riccati():
    S, e = sp.MatrixSymbol("S_i", 3, 3), sp.MatrixSymbol("e_i", 3, 1)
    T11, T12, T21, T22 = (sp.MatrixSymbol(n, 3, 3) for n in ("T11", "T12", "T21", "T22"))
    fa, fb = sp.MatrixSymbol("f_a", 3, 1), sp.MatrixSymbol("f_b", 3, 1)
    P = sp.Inverse(T21 * S + T22)
    q = -(T21 * e + fb)
    S1 = (T11 * S + T12) * P
    return OrderedDict([("P_i [RBW eq 24]", P), ("q_i [RBW eq 24]", q), ("S_{i+1} [RBW eq 29]", S1),
                        ("e_{i+1} [RBW eq 30]", T11 * e + fa + S1 * q)])


def _inspect_example():
    out = OrderedDict()
    for k, v in example_body1_T().items():
        out[f"{k} body 1 [RBW eq 38]"] = v
    S2, e2 = example_S2_e2(1)
    out["S2 [RBW eq 39]"], out["e2 [RBW eq 40]"] = S2, e2
    for k, v in example_hinge4_T().items():
        out[f"{k} hinge 4 [RBW eq 45]"] = v
    r = example_S3_e3()
    out["D, denominator of S3 [RBW eq 46]"] = r["D"]
    out["S3 [RBW eq 46]"], out["e3 [RBW eq 47]"] = r["S3"], r["e3"]
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
