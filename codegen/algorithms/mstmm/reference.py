"""Plain numpy and mpmath references for the MSTMM tests.

Plain numpy reference of the Riccati MSTMM (new version) for the planar balance pendulum, models.md M1,
the classical transfer matrix product against the Riccati recursion on planar chains, and an mpmath
high-precision forward-dynamics reference for the spatial kernels.

Source: Rui X., Bestle D., Wang G. et al., "A new version of the Riccati transfer matrix method for
multibody systems consisting of chain and branch bodies", Multibody Syst. Dyn. 49, 337-354 (2020)
(seed /work/shared/seeds/004_0233cf066626872d.txt); equation numbers are the paper's.  The symbolic
counterpart (and the reading notes on the garbled formulas) is codegen/symbolic/mstmm.py; this file
is self-contained (numpy only) so that it can serve as an independent reference.

Model M1 (Fig. 2 of the paper): four thin rods, mass m, length 2a, end inertia Jz = 4 m a^2 / 3.
Rod 7 (the balance) is pinned to ground at its centre; rod 1 hangs from its end I1, rod 5 from its
end I2 and rod 3 from the lower end of rod 5.  theta_i are absolute angles: the vector from the lower
(input) end of rod i to its centre is a (cos theta_i, sin theta_i); for rod 7 it is the vector from
I1 to the centre.  Gravity g along -y.

Planar state [RBW eq 35] z = [x'', y'', Omega'_z, m_z, q_x, q_y, 1].  Sign convention (Sect. 2.1): at an
input point the element feels the force +q and the moment -m, at an output point -q and +m.  So q at
a connection point is the force that the tip-side element exerts on the root-side element.

Algorithm (Algorithm A per subchain, then steps B3-B4 of Algorithm B):
    A1  element transfer matrices U_i: rods ([RBW eqs 4-5] reduced by [RBW eq 35] = [RBW eq 36]), hinge 4 ([RBW eq 10] reduced,
        [RBW eq 44]), body 7 with two inputs ([RBW eq 8] reduced, [RBW eq 49]), multi-hinge 8 ([RBW eqs 12-13], [RBW eq 52]);
    A2  free tips: z_a = [m_z, q_x, q_y] = 0, z_b = [x'', y'', Omega'_z]  ->  S_1 = O, e_1 = 0 [RBW eq 34];
    A3  per element [RBW eq 20] partition, P_i, q_i [RBW eq 24], S_{i+1}, e_{i+1} [RBW eqs 29, 30];
    B3  the subchain tips z_{1,O}, z_{5,O} = U_tip [z_b; 1] [RBW eqs 42, 48] are combined with the main
        transfer equation of body 7 / multi-hinge 8 [RBW eqs 51-53] and the geometric equations ([RBW eqs 14-15],
        54) into 9 linear equations for [z_b(1,O), z_b(5,O), Omega'_z7, q_x7, q_y7] [RBW eqs 56-60];
    A5/B4 backward recursion [RBW eq 33] along each subchain gives every intermediate state.

CORRECTION (why the closure is not literally [RBW eq 59]).  The angular-acceleration row of the smooth hinge
matrix [RBW eq 10] is the moment row of the OUTBOARD body set to zero: hinge 4 enforces m = 0 at the
output of body 5 and the multi-hinge 8 enforces m = 0 at the output of body 7.  Nothing enforces
m = 0 at the output of the tip bodies 1 and 3 (i.e. at hinge 4 and at the input I1 of hinge 8), and
the root condition m_z7,O = 0 is enforced twice: row 4 of [RBW eq 57] is identically 0 = 0 and so is the
moment row of the geometric [RBW eq 54] (m_{5,O} = 0 already holds for any z_b(5,O)).  The 9 x 9
system of [RBW eq 59] is therefore singular (``m1_closure(..., literal=True)`` builds it; the tests check
its rank).  The two trivial rows are replaced by the two missing conditions
    m_{1,O} = 0   and   m_{3,O} = 0,
each carried from the subchain tip to the subchain root as one extra Riccati row c z_b + d = 0 with
the backward map of [RBW eq 25] (c <- c P_i, d <- d + c P_i q_i), i.e. in O(n) like the recursion itself.
This is ``hinge="paper"`` (the paper's element matrices, unchanged).

The paper's hinge step also has a spurious singular value: det(T21 S + T22) = D = 2 + 3 cos(theta3 -
theta5) (the denominator of [RBW eq 46]) vanishes at |theta3 - theta5| = arccos(-2/3) = 131.8 deg, where the
mechanism is perfectly regular (over the reference run of models.md, 0..2 s from rest, D stays >= 2.88).
``hinge="articulated"`` replaces the hinge step by the condensation that enforces the zero moment AT
the hinge: with z_a = S z_b + e at the hinge input, m_z = 0 gives Omega'_I = -(S[0,:2] r'' + e[0]) / S[0,2]
(S[0,2] is the articulated rotational inertia of the tip side about the hinge, > 0), i.e. [RBW eq 25] with
    P~ = [[1, 0, 0], [0, 1, 0], [-S00/S02, -S01/S02, 0]],  P~q~ = [0, 0, -e0/S02],
and [RBW eqs 29-30] with T11 = I, T12 = O (the hinge passes m and q).  Then the subchain roots carry the
conditions m_{1,O} = m_{5,O} = 0 in their own Riccati rows and no extra row is needed.  Both variants
give the same result (checked against a Lagrange derivation in tests/algorithms/mstmm/test_mstmm_ref.py).

Planar chains (``chain_classical`` / ``chain_riccati``, the n-link chain of codegen.models.chain): the
classical transfer matrix method multiplies all element matrices [RBW eqs 18-19] and solves the boundary
conditions once; the product's entries grow about 4x per rod, so its accuracy is lost after about 25
rods (tests/algorithms/mstmm/test_mstmm_accuracy.py).  The Riccati recursion with the same matrices stays at round-off
with the articulated hinge step; with the paper's hinge [RBW eq 10] the moment condition of the first hinge
must be carried back from the tip through every P_i, and that carried row grows like the product (lost
after about 150 rods) -- the reason why the generated kernels (templates/mstmm.pyx.j2) use the
articulated hinge step.

``aba_reference``: forward dynamics of revolute / ball-joint trees in mpmath (30 digits by default), an
articulated-body algorithm independent of both generated kernels, to measure the true error of the
double-precision solvers on the ill-conditioned M5 (tests/algorithms/mstmm/test_mstmm_accuracy.py, benchmarks/bench_mstmm.py).

The spatial kernel's algorithm, with the articulated hinge step generalised to every joint type and to free
joints (floating bases), is in numpy in spatial.py (``riccati_tree``).
"""
from __future__ import annotations

from typing import Dict, List, Mapping, Sequence, Tuple

import numpy as np

# planar state indices [RBW eq 35] and the Riccati split of the example [RBW eq 37]
XDD, YDD, WD, MZ, QX, QY, ONE = range(7)
A_IDX = [MZ, QX, QY]          # z_a: known at a free tip
B_IDX = [XDD, YDD, WD]        # z_b: unknown at a free tip
RODS = (1, 3, 5, 7)


# ------------------------------------------------------------------ A1: element transfer matrices

def body_U(m: float, J_I: float, r_IC, r_IO, w: float, f_C, m_C: float = 0.0, r_I1Ik=()) -> np.ndarray:
    """Planar rigid body transfer matrix, [RBW eqs 4-5] (and [RBW eqs 8-9] for extra inputs) reduced by [RBW eq 35].

    m, J_I: mass and moment of inertia about the input point I (about z); r_IC, r_IO: input point ->
    mass centre / output point (2-vectors, inertial frame); w: angular velocity Omega_z; f_C, m_C:
    external force (2-vector) and moment at C; r_I1Ik: positions of extra inputs I2.. relative to I1.
    Returns 7 x (7 + 3 len(r_I1Ik)); columns [x'', y'', Omega', (m_z, q_x, q_y) per input, 1].
    """
    r_IC, r_IO, f_C = (np.asarray(v, float) for v in (r_IC, r_IO, f_C))
    # the planar parts of [RBW eq 5] (x, y rows for vectors, the z column/row of the tilde matrices)
    E1 = np.array([-r_IO[1], r_IO[0]])                    # -r~_IO [:, z]       (Omega' x r_IO)
    E2 = -w * w * r_IO                                    # Omega~ Omega~ r_IO
    E3 = -m * np.eye(2)
    E4 = m * np.array([r_IC[1], -r_IC[0]])                # m r~_IC [:, z]
    E5 = f_C + m * w * w * r_IC                           # f_C - m Omega~ Omega~ r_IC
    E6 = np.array([-r_IO[1], r_IO[0]])                    # r~_IO [z, :]
    E7 = m * np.array([-r_IC[1], r_IC[0]])                # m r~_IC [z, :]
    E8 = J_I                                              # A J' A^T [z, z]
    E9 = -m_C - (r_IC[0] * f_C[1] - r_IC[1] * f_C[0])     # -m_C - r~_IC f_C (gyroscopic term 0 in plane)
    L = len(r_I1Ik) + 1
    U = np.zeros((7, 4 + 3 * L))
    one = 3 + 3 * L
    U[0:2, 0:2] = np.eye(2); U[0:2, 2] = E1; U[0:2, one] = E2
    U[2, 2] = 1.0
    U[3, 0:2] = E6 @ E3 + E7; U[3, 2] = E6 @ E4 + E8; U[3, 3] = 1.0; U[3, 4:6] = E6
    U[3, one] = E6 @ E5 + E9
    U[4:6, 0:2] = E3; U[4:6, 2] = E4; U[4:6, 4:6] = np.eye(2); U[4:6, one] = E5
    for k, r in enumerate(r_I1Ik, start=1):               # [RBW eq 8]: extra inputs, E_Ik = -r~_{I1 Ik} [RBW eq 9]
        r = np.asarray(r, float)
        c = 3 + 3 * k
        U[3, c] = 1.0
        U[3, c + 1:c + 3] = E6 + np.array([r[1], -r[0]])
        U[4:6, c + 1:c + 3] = np.eye(2)
    U[6, one] = 1.0
    return U


def hinge_U(U_out: np.ndarray) -> np.ndarray:
    """Smooth planar revolute hinge, [RBW eq 10] reduced [RBW eq 44], from the outboard body's matrix U_out."""
    u = U_out[3]                                        # third block row (moment row): u31, u32, u33, u34, u35
    U = np.eye(7)
    U[2, :] = -np.array([u[0], u[1], 0.0, u[3], u[4], u[5], u[6]]) / u[2]
    return U


def multi_hinge_Uhat(U_body7: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
    """Uhat_{j,I1}, Uhat_{j,I2} ([RBW eqs 12-13] reduced, [RBW eq 52]) from the 7 x 10 matrix of the MISO body."""
    u = U_body7[3]                                      # u31 (2), u32, u33, u34 (2), u35, u36 (2), u37
    U1, U2 = np.zeros((10, 7)), np.zeros((10, 7))
    for i in (0, 1, 3, 4, 5):
        U1[i, i] = 1.0
    U1[9, 6] = 1.0
    U1[2, [0, 1, 3, 4, 5, 6]] = -np.array([u[0], u[1], u[3], u[4], u[5], u[9]]) / u[2]
    U2[6, 3] = U2[7, 4] = U2[8, 5] = 1.0
    U2[2, [3, 4, 5]] = -np.array([u[6], u[7], u[8]]) / u[2]
    return U1, U2


def H_geometric(r_I1I2, w: float) -> Tuple[np.ndarray, np.ndarray]:
    """H_{r'',m} (3 x 7) and H_{O1,I2} (3 x 10) of [RBW eqs 14-17] (reduced, [RBW eq 55]); moment rows: m_{I2} = 0."""
    r = np.asarray(r_I1I2, float)
    H_rm = np.zeros((3, 7)); H_rm[0, 0] = H_rm[1, 1] = H_rm[2, 3] = 1.0
    H = np.zeros((3, 10))
    H[0, 0] = H[1, 1] = 1.0
    H[0:2, 2] = [-r[1], r[0]]                           # E_{1,I2} = -r~_{O1 I2}
    H[0:2, 9] = -w * w * r                              # E_{2,I2} = Omega~ Omega~ r_{O1 I2}
    return H_rm, H


# ------------------------------------------------------------------ A2-A3, A5: Riccati recursion

def riccati_forward(elements: Sequence[Tuple[str, np.ndarray]], hinge: str = "paper"):
    """Steps A2-A3 along one subchain that starts at a free tip.

    elements: [(kind, U)] in transfer order, kind "body" or "hinge".  Returns (S, e, c, d, steps):
    z_a = S z_b + e at the subchain root [RBW eq 32], the moment condition c z_b + d = 0 still to be imposed
    at the root (see module notes), and per element (S_i, e_i, P_i, P_i q_i) for the backward pass.
    """
    S, e = np.zeros((3, 3)), np.zeros(3)                # [RBW eq 34]
    c = d = None
    steps = []
    for kind, U in elements:
        if kind == "hinge" and hinge == "articulated":
            # condensed hinge step: m_z = 0 at the hinge input fixes Omega'_I (module notes)
            P = np.eye(3); P[2] = [-S[0, 0] / S[0, 2], -S[0, 1] / S[0, 2], 0.0]
            Pq = np.array([0.0, 0.0, -e[0] / S[0, 2]])
            S_next, e_next = S @ P, S @ Pq + e          # [RBW eqs 29-30] with T11 = I, T12 = O
        else:
            T11, T12 = U[np.ix_(A_IDX, A_IDX)], U[np.ix_(A_IDX, B_IDX)]          # [RBW eq 20]
            T21, T22 = U[np.ix_(B_IDX, A_IDX)], U[np.ix_(B_IDX, B_IDX)]
            fa, fb = U[A_IDX, ONE], U[B_IDX, ONE]
            P = np.linalg.inv(T21 @ S + T22)                                      # [RBW eq 24]
            q = -(T21 @ e + fb)
            Pq = P @ q
            S_next = (T11 @ S + T12) @ P                                          # [RBW eq 29]
            e_next = T11 @ e + fa + S_next @ q                                    # [RBW eq 30]
        steps.append((S, e, P, Pq))
        if c is None:
            if kind != "body":
                raise ValueError("a subchain must start with its tip body")
            c, d = S_next[0].copy(), e_next[0]          # m_z at the tip body's output = c z_b + d
        else:
            c, d = c @ P, d + c @ Pq                    # carried back through [RBW eq 25]
        S, e = S_next, e_next
    if hinge == "articulated":
        c, d = S[0].copy(), e[0]                        # the root's own moment row
    return S, e, c, d, steps


def riccati_backward(steps, z_bO: np.ndarray) -> List[np.ndarray]:
    """Step A5, [RBW eq 33]: full states [z_O of the last element, ..., z_I of the first element]."""
    out = []
    z_b = np.asarray(z_bO, float)
    for S, e, P, Pq in reversed(steps):
        z_b = P @ z_b + Pq                               # [RBW eq 25]
        z = np.zeros(7); z[B_IDX] = z_b; z[A_IDX] = S @ z_b + e; z[ONE] = 1.0   # [RBW eq 21]
        out.append(z)
    return out


def tip_state(S, e, z_b) -> np.ndarray:
    """[RBW eq 42] / 48: z_O = U_tip [z_b; 1]."""
    z = np.zeros(7); z[B_IDX] = z_b; z[A_IDX] = S @ z_b + e; z[ONE] = 1.0
    return z


def _U_tip(S, e, cols, n) -> Tuple[np.ndarray, np.ndarray]:
    """Affine form z = G x + h of [RBW eq 42] with z_b = x[cols] (x: the n unknowns of [RBW eq 60])."""
    G, h = np.zeros((7, n)), np.zeros(7)
    for k, col in enumerate(cols):
        G[B_IDX[k], col] = 1.0
        G[A_IDX, col] = S[:, k]
    h[A_IDX] = e
    h[ONE] = 1.0
    return G, h


# ------------------------------------------------------------------ model M1

def _as_dict(v) -> Dict[int, float]:
    if isinstance(v, Mapping):
        return {i: float(v[i]) for i in RODS}
    return dict(zip(RODS, (float(x) for x in v)))


def m1_elements(theta, thetad, m: float = 1.0, a: float = 0.5, g: float = 9.81):
    """Step A1 for M1: rods 1, 3, 5 [RBW eq 36], hinge 4 [RBW eq 44], body 7 [RBW eq 49], multi-hinge 8 [RBW eq 52], H [RBW eq 55]."""
    th, w = _as_dict(theta), _as_dict(thetad)
    Jz = 4.0 * m * a * a / 3.0
    fC = np.array([0.0, -m * g])

    def rvec(i, scale=1.0):
        return scale * a * np.array([np.cos(th[i]), np.sin(th[i])])
    U = {i: body_U(m, Jz, rvec(i), rvec(i, 2.0), w[i], fC) for i in (1, 3, 5)}
    U[4] = hinge_U(U[5])
    U[7] = body_U(m, Jz, rvec(7), rvec(7), w[7], fC, r_I1Ik=[rvec(7, 2.0)])
    U[8] = multi_hinge_Uhat(U[7])
    H = H_geometric(rvec(7, 2.0), w[7])
    return U, H


def m1_closure(U, H, chain1, chain2, literal: bool = False) -> Tuple[np.ndarray, np.ndarray]:
    """Step B3: the linear system A x = b for x = [z_b(1,O), z_b(5,O), Omega'_z7, q_x7, q_y7] [RBW eq 60].

    Rows: main transfer equation ([RBW eq 53] = rows of [RBW eq 57]) for x''_7 = y''_7 = 0, Omega'_7, q_x7, q_y7;
    geometric equation [RBW eq 54] for x'', y'' of input I2; then either the two carried moment conditions
    (default) or, with literal=True, the two rows the paper uses instead (row 4 of [RBW eq 57], m_z7 = 0, and
    the moment row of [RBW eq 54]), which makes the system singular (module notes).
    """
    n = 9
    (S1, e1, c1, d1), (S2, e2, c2, d2) = chain1, chain2
    G1, h1 = _U_tip(S1, e1, [0, 1, 2], n)               # z_{1,O}, [RBW eq 42]
    G5, h5 = _U_tip(S2, e2, [3, 4, 5], n)               # z_{5,O}, [RBW eq 48]
    U1hat, U2hat = U[8]
    G8, h8 = U1hat @ G1 + U2hat @ G5, U1hat @ h1 + U2hat @ h5        # [RBW eq 51]
    G7, h7 = U[7] @ G8, U[7] @ h8                                    # [RBW eq 53]
    # the unknown root state z_{7,O} = [0, 0, Omega'_7, 0, q_x7, q_y7, 1] (pinned: x'' = y'' = m_z = 0)
    Gu, hu = np.zeros((7, n)), np.zeros(7)
    Gu[WD, 6] = Gu[QX, 7] = Gu[QY, 8] = 1.0
    hu[ONE] = 1.0
    H_rm, H_O1I2 = H
    Gg, hg = H_O1I2 @ G8 - H_rm @ G5, H_O1I2 @ h8 - H_rm @ h5       # [RBW eq 54]
    main_rows = [XDD, YDD, WD, MZ, QX, QY] if literal else [XDD, YDD, WD, QX, QY]
    A = [G7[main_rows] - Gu[main_rows]]
    b = [-(h7[main_rows] - hu[main_rows])]
    geo_rows = [0, 1, 2] if literal else [0, 1]
    A.append(Gg[geo_rows]); b.append(-hg[geo_rows])
    if not literal:
        r1, r2 = np.zeros(n), np.zeros(n)
        r1[0:3], r2[3:6] = c1, c2
        A.append(np.vstack([r1, r2])); b.append(-np.array([d1, d2]))
    return np.vstack(A), np.concatenate(b)


def m1_solve(theta, thetad, m: float = 1.0, a: float = 0.5, g: float = 9.81, hinge: str = "paper") -> dict:
    """Riccati MSTMM for M1 at one state.

    theta, thetad: absolute angles / rates of rods (1, 3, 5, 7), as a sequence in that order or a dict.
    hinge: "paper" ([RBW eq 10] hinge + carried moment conditions) or "articulated" (see module notes).
    Returns {"thetadd": {1, 3, 5, 7 -> angular acceleration},
             "states":  {point -> planar state z [RBW eq 35]} for the points
                        "1,I" (free end of rod 1), "1,O" (= input I1 of hinge 8), "3,I" (free end of rod 3),
                        "3,O" (= input of hinge 4), "5,I" (= output of hinge 4), "5,O" (= input I2 of hinge 8),
                        "7,O" (pivot of rod 7),
             "forces":  {point -> (m_z, q_x, q_y)} at the same points}.
    """
    U, H = m1_elements(theta, thetad, m, a, g)
    S1, e1, c1, d1, steps1 = riccati_forward([("body", U[1])], hinge)                       # chain 1
    S2, e2, c2, d2, steps2 = riccati_forward([("body", U[3]), ("hinge", U[4]), ("body", U[5])], hinge)
    A, b = m1_closure(U, H, (S1, e1, c1, d1), (S2, e2, c2, d2))
    x = np.linalg.solve(A, b)                                                                 # [RBW eq 59]
    z1O, z5O = tip_state(S1, e1, x[0:3]), tip_state(S2, e2, x[3:6])
    back1 = riccati_backward(steps1, x[0:3])            # [z_{1,I}]
    back2 = riccati_backward(steps2, x[3:6])            # [z_{5,I}, z_{4,I} = z_{3,O}, z_{3,I}]
    z7O = np.array([0.0, 0.0, x[6], 0.0, x[7], x[8], 1.0])
    states = {"1,I": back1[0], "1,O": z1O, "3,I": back2[2], "3,O": back2[1], "5,I": back2[0],
              "5,O": z5O, "7,O": z7O}
    thetadd = {1: z1O[WD], 3: back2[2][WD], 5: z5O[WD], 7: x[6]}
    forces = {k: z[[MZ, QX, QY]] for k, z in states.items()}
    return {"thetadd": thetadd, "states": states, "forces": forces}


def m1_thetadd(theta, thetad, **kw) -> np.ndarray:
    """Angular accelerations of rods (1, 3, 5, 7) as an array."""
    r = m1_solve(theta, thetad, **kw)["thetadd"]
    return np.array([r[i] for i in RODS])


# ------------------------------------------------------------------ planar chain: classical TMM vs Riccati

def chain_elements(phi, phid, m: float = 1.0, a: float = 0.5, g: float = 9.81) -> List[np.ndarray]:
    """Step A1 for the planar n-link chain of thin rods: the body matrices.

    Step A1 for the planar n-link chain of thin rods (codegen.models.chain): body matrices ([RBW eqs 4-5]
    reduced by [RBW eq 35] = [RBW eq 36]), root link first.

    phi, phid: absolute angle / rate of each link, root first; the link points from its inboard joint
    (its output O, towards the ground) to its outboard end (its input I, towards the free tip).  In the
    seed's convention theta = phi + pi (vector from the input end to the centre = a (cos th, sin th)).
    """
    Jz = 4.0 * m * a * a / 3.0
    fC = np.array([0.0, -m * g])
    out = []
    for p, w in zip(phi, phid):
        r = a * np.array([np.cos(p + np.pi), np.sin(p + np.pi)])
        out.append(body_U(m, Jz, r, 2.0 * r, float(w), fC))
    return out


def chain_classical(phi, phid, m: float = 1.0, a: float = 0.5, g: float = 9.81) -> dict:
    """The classical (non-Riccati) transfer matrix method for the chain.

    The overall transfer matrix as
    the product of all element matrices [RBW eqs 18-19], tip -> root,
    z_{root} = U_1 H_1 U_2 H_2 ... H_{n-1} U_n z_{tip},   H_k = [RBW eq 10] hinge built from U_k,
    with the free tip z_tip = [x'', y'', Omega', 0, 0, 0, 1] (3 unknowns) and the three conditions
    x'' = y'' = 0 at the ground pin (rows 1, 2 of the product) and m = 0 at the first hinge from the tip
    (the moment row of U_n; the hinge matrices of [RBW eq 10] enforce m = 0 one body further towards the root,
    so the root moment holds identically, see the module notes).  The states then follow by forward
    transfer [RBW eq 3].  Returns {"phidd": absolute angular accelerations (root first), "cond": condition
    number of the 3 x 3 boundary system, "growth": max |entry| of the overall transfer matrix}.
    Entries of the product grow geometrically with n; with them the round-off of the boundary solve."""
    U = chain_elements(phi, phid, m, a, g)
    n = len(U)
    hinges = [hinge_U(U[k]) for k in range(n - 1)]        # hinge between link k+1 and link k [RBW eq 10]
    T = U[n - 1].copy()
    for k in range(n - 2, -1, -1):                         # [RBW eq 19]: U_{1-n} = U_n ... U_1 (transfer order)
        T = U[k] @ hinges[k] @ T
    mrow = U[n - 1][MZ]
    A = np.vstack([T[[XDD, YDD]][:, B_IDX], mrow[B_IDX]])  # [RBW eq 18] with the boundary conditions
    b = -np.array([T[XDD, ONE], T[YDD, ONE], mrow[ONE]])
    with np.errstate(all="ignore"):
        try:
            x = np.linalg.solve(A, b)
        except np.linalg.LinAlgError:
            x = np.full(3, np.nan)
        z = np.zeros(7); z[B_IDX] = x; z[ONE] = 1.0
        phidd = np.empty(n)
        z = U[n - 1] @ z; phidd[n - 1] = z[WD]
        for k in range(n - 2, -1, -1):                     # forward transfer, [RBW eq 3]
            z = U[k] @ (hinges[k] @ z); phidd[k] = z[WD]
        cond = np.linalg.cond(A) if np.all(np.isfinite(A)) else np.inf
    return {"phidd": phidd, "cond": float(cond), "growth": float(np.abs(T).max())}


def chain_riccati(phi, phid, m: float = 1.0, a: float = 0.5, g: float = 9.81, hinge: str = "articulated") -> dict:
    """Algorithm A (steps A1-A5, [RBW eqs 20-34]) for the same chain, with the same element matrices.

    Tip: S_1 = O, e_1 = 0 [RBW eq 34]; forward [RBW eqs 24, 29, 30] through U_n, H_{n-1}, U_{n-1}, ..., U_1;
    root (A4): pinned, x'' = y'' = 0 known, Omega' unknown, fixed by the root moment condition (hinge
    "articulated": the root's own Riccati row m = S z_b + e = 0; hinge "paper": the carried condition
    c z_b + d = 0 of the first hinge, see the module notes); backward [RBW eq 33] (A5) for every state.
    Returns {"phidd": absolute angular accelerations (root first), "states": {k: z at the input of
    link k}, "root": z at the ground pin}."""
    U = chain_elements(phi, phid, m, a, g)
    n = len(U)
    els = [("body", U[n - 1])]
    for k in range(n - 2, -1, -1):
        els += [("hinge", hinge_U(U[k])), ("body", U[k])]
    S, e, c, d, steps = riccati_forward(els, hinge)
    row, off = (S[0], e[0]) if hinge == "articulated" else (c, d)
    zb = np.array([0.0, 0.0, -off / row[2]])               # A4: x'' = y'' = 0, m = 0 at the pin
    back = riccati_backward(steps, zb)                      # [RBW eq 33]: inputs of body 0, hinge, body 1, ...
    states = {k: back[2 * k] for k in range(n)}
    return {"phidd": np.array([states[k][WD] for k in range(n)]), "states": states,
            "root": tip_state(S, e, zb)}


# ------------------------------------------------------------------ high-precision reference (spatial)

def aba_reference(model, q, u, tau=None, dps: int = 30) -> np.ndarray:
    """Forward dynamics in mpmath arithmetic: Featherstone's articulated-body algorithm.

    Forward dynamics in mpmath arithmetic (``dps`` digits): Featherstone's articulated-body algorithm,
    independent of both generated kernels, for trees of revolute and ball (spherical) joints under
    gravity plus generalized forces tau (no other force elements).  Rounded to float at the end, so it
    serves as the exact answer for the double-precision kernels on ill-conditioned systems such as M5
    (axial inertia 1e-4 of the transverse: cond(M) up to 1e14 at N = 999).

    Frames and numbers are the plan's (codegen.algorithms.tree_plan: body frame = canonical child joint frame, parent
    joint frame at (s, C) in the parent's body frame, centroid rho and central inertia J' in the body
    frame); the quaternion is renormalised in mpmath.  The articulated inertia handed to the parent is
    symmetrised: without that, its round-off antisymmetric part doubles at every ball-jointed thin rod
    (at 40 digits the answer is lost after about 150 rods of M5).
    """
    import mpmath as mpm
    from ..tree_plan import Plan, body_numbers
    bad = sorted({j.type for j in model.joints} - {"revolute", "spherical"})
    if bad or model.springs or model.point_springs or model.joint_forces or model.tau_hook is not None:
        raise ValueError("aba_reference: revolute/spherical joints, gravity and tau only")
    ctx = mpm.MPContext()
    ctx.dps = dps
    mpf, zero, one = ctx.mpf, ctx.mpf(0), ctx.mpf(1)
    plan = Plan(model)
    p = plan.params()

    def arr(x, shape=None):
        a = np.array([mpf(float(v)) for v in np.asarray(x, float).ravel()], dtype=object)
        return a.reshape(shape) if shape else a

    def zeros(*shape):
        z = np.empty(shape, dtype=object)
        z[...] = zero
        return z

    def sk(v):
        return np.array([[zero, -v[2], v[1]], [v[2], zero, -v[0]], [-v[1], v[0], zero]], dtype=object)

    def crm(v):                                   # spatial motion cross product, (angular; linear)
        X = zeros(6, 6)
        X[:3, :3] = X[3:, 3:] = sk(v[:3])
        X[3:, :3] = sk(v[3:])
        return X

    nb = plan.nb
    X, S, I = [], [], []
    for k in range(nb):
        bn = body_numbers(p, k)
        s, C, mass = arr(bn["s"]), arr(bn["C"], (3, 3)), mpf(float(bn["m"]))
        rho, J = arr(bn["rho"]), arr(bn["J"], (3, 3))
        qk = [mpf(float(v)) for v in q[plan.iq[k]:plan.iq[k] + model.joints[k].nq]]
        if plan.types[k] == "revolute":
            c, sn = ctx.cos(qk[0]), ctx.sin(qk[0])
            R = np.array([[c, -sn, zero], [sn, c, zero], [zero, zero, one]], dtype=object)
            Sk = zeros(6, 1); Sk[2, 0] = one
        else:
            nrm = ctx.sqrt(sum(v * v for v in qk))
            w, x, y, z = (v / nrm for v in qk)
            R = np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
                          [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
                          [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)]], dtype=object)
            Sk = zeros(6, 3); Sk[0, 0] = Sk[1, 1] = Sk[2, 2] = one
        Et = C.dot(R).T                           # child axes <- parent axes
        Xk = zeros(6, 6)
        Xk[:3, :3] = Xk[3:, 3:] = Et
        Xk[3:, :3] = -Et.dot(sk(s))
        cr = sk(rho)
        Ik = zeros(6, 6)
        Ik[:3, :3] = J + mass * cr.dot(cr.T)
        Ik[:3, 3:], Ik[3:, :3] = mass * cr, mass * cr.T
        for i in range(3):
            Ik[3 + i, 3 + i] = mass
        X.append(Xk); S.append(Sk); I.append(Ik)
    uu = [mpf(float(v)) for v in u]
    tt = [mpf(float(v)) for v in (np.zeros(len(u)) if tau is None else tau)]
    a0 = np.concatenate([zeros(3), -arr(p[0:3])])        # base acceleration -g (gravity)
    v, c, IA, pA = [None] * nb, [None] * nb, [None] * nb, [None] * nb
    for k in range(nb):                                   # pass 1: velocities, bias terms
        iv, n = plan.iv[k], S[k].shape[1]
        vJ = S[k].dot(np.array(uu[iv:iv + n], dtype=object))
        par = plan.parent[k]
        v[k] = (X[k].dot(v[par]) if par >= 0 else zeros(6)) + vJ
        c[k] = crm(v[k]).dot(vJ)
        IA[k] = I[k].copy()
        pA[k] = -crm(v[k]).T.dot(I[k].dot(v[k]))
    Uk, Dinv, uk = [None] * nb, [None] * nb, [None] * nb
    for k in range(nb - 1, -1, -1):                       # pass 2: articulated inertias, tip -> root
        iv, n = plan.iv[k], S[k].shape[1]
        Uk[k] = IA[k].dot(S[k])
        Dinv[k] = np.array((ctx.matrix(S[k].T.dot(Uk[k]).tolist()) ** -1).tolist(), dtype=object)
        uk[k] = np.array(tt[iv:iv + n], dtype=object) - S[k].T.dot(pA[k])
        par = plan.parent[k]
        if par >= 0:
            Ia = IA[k] - Uk[k].dot(Dinv[k]).dot(Uk[k].T)
            Ia = (Ia + Ia.T) / 2
            pa = pA[k] + Ia.dot(c[k]) + Uk[k].dot(Dinv[k].dot(uk[k]))
            IA[par] = IA[par] + X[k].T.dot(Ia).dot(X[k])
            pA[par] = pA[par] + X[k].T.dot(pa)
    acc, ud = [None] * nb, np.zeros(len(u))
    for k in range(nb):                                   # pass 3: accelerations, root -> tip
        par = plan.parent[k]
        ap = X[k].dot(acc[par] if par >= 0 else a0) + c[k]
        x = Dinv[k].dot(uk[k] - Uk[k].T.dot(ap))
        acc[k] = ap + S[k].dot(x)
        ud[plan.iv[k]:plan.iv[k] + len(x)] = [float(xi) for xi in x]
    return ud
