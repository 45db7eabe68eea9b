"""codegen/mstmm_ref.py (numpy Riccati MSTMM, Algorithm A + B3/B4, model M1) against an independent
sympy Lagrange derivation of M1's equations of motion (four thin rods, m = 1 kg, L = 2a = 1 m,
g = 9.81 m/s^2, models.md), and the internal forces against Newton's law for each rod evaluated
with the Lagrange accelerations.  Tolerance 1e-10 (absolute, SI units).
"""
import numpy as np
import pytest
import sympy as sp

from codegen.algorithms.mstmm import reference as R

M_ROD, A_HALF, G = 1.0, 0.5, 9.81


# ------------------------------------------------------------------ independent Lagrange model of M1

def build_lagrange():
    """M1 by Lagrange's equations (sympy), returns solve(theta, thetad) -> (thetadd, point accelerations,
    centre accelerations); independent of the MSTMM code."""
    th = sp.symbols("th1 th3 th5 th7", real=True)
    w = sp.symbols("w1 w3 w5 w7", real=True)
    wd = sp.symbols("wd1 wd3 wd5 wd7", real=True)
    m, a, g = sp.Integer(1), sp.Rational(1, 2), sp.Rational(981, 100)
    t1, t3, t5, t7 = th

    def u(t):
        return sp.Matrix([sp.cos(t), sp.sin(t)])
    # geometry of models.md M1 (theta_i: lower end -> centre of rod i is a u(theta_i); rod 7: I1 -> centre)
    I1, I2 = -a * u(t7), a * u(t7)
    low5 = I2 - 2 * a * u(t5)
    centres = {1: I1 - a * u(t1), 3: low5 - a * u(t3), 5: I2 - a * u(t5), 7: sp.zeros(2, 1)}
    points = {"1,I": I1 - 2 * a * u(t1), "1,O": I1, "3,I": low5 - 2 * a * u(t3), "3,O": low5,
              "5,I": low5, "5,O": I2, "7,O": sp.zeros(2, 1)}
    qd = sp.Matrix(w)
    T = V = 0
    for i, k in zip((1, 3, 5, 7), range(4)):
        v = centres[i].jacobian(th) * qd
        T += m * v.dot(v) / 2 + (m * (2 * a)**2 / 12) * w[k]**2 / 2      # thin rod, I_C = m L^2 / 12
        V += m * g * centres[i][1]
    Lg = T - V
    Mass = sp.hessian(T, w)
    dL_dw = sp.Matrix([sp.diff(Lg, x) for x in w])
    rhs = sp.Matrix([sp.diff(Lg, x) for x in th]) - dL_dw.jacobian(th) * qd
    f_M = sp.lambdify((th, w), Mass, "numpy")
    f_rhs = sp.lambdify((th, w), rhs, "numpy")

    def acc_of(p):      # second time derivative of a point, given theta, thetad, thetadd
        J = p.jacobian(th)
        return J * sp.Matrix(wd) + (J * qd).jacobian(th) * qd
    f_pt = {k: sp.lambdify((th, w, wd), acc_of(p), "numpy") for k, p in points.items()}
    f_c = {i: sp.lambdify((th, w, wd), acc_of(p), "numpy") for i, p in centres.items()}

    def solve(theta, thetad):
        thdd = np.linalg.solve(np.array(f_M(theta, thetad), float), np.array(f_rhs(theta, thetad), float).ravel())
        pts = {k: np.array(f(theta, thetad, thdd), float).ravel() for k, f in f_pt.items()}
        cen = {i: np.array(f(theta, thetad, thdd), float).ravel() for i, f in f_c.items()}
        return thdd, pts, cen
    return solve


@pytest.fixture(scope="module")
def lagrange():
    return build_lagrange()


def newton_forces(cen):
    """Internal forces q at the connection points (MSTMM sign convention: q at a connection is the force
    the tip-side element exerts on the root-side element; an element feels +q at its input, -q at its
    output) from Newton's law m a_C = sum of forces, rod by rod from the free tips."""
    gvec = np.array([0.0, -M_ROD * G])
    q = {"1,I": np.zeros(2), "3,I": np.zeros(2)}
    q["1,O"] = q["1,I"] + gvec - M_ROD * cen[1]        # rod 1: m a = q_I - q_O + m g
    q["3,O"] = q["3,I"] + gvec - M_ROD * cen[3]
    q["5,I"] = q["3,O"]
    q["5,O"] = q["5,I"] + gvec - M_ROD * cen[5]
    q["7,O"] = q["1,O"] + q["5,O"] + gvec - M_ROD * cen[7]   # rod 7: inputs I1, I2; output at the pivot
    return q


ROD_OF_POINT = {"1,I": 1, "1,O": 1, "3,I": 3, "3,O": 3, "5,I": 5, "5,O": 5, "7,O": 7}


def random_states(n, seed=2020, min_D=0.3):
    rng = np.random.default_rng(seed)
    out = [(np.array([np.pi / 2, np.pi / 2, np.pi / 2, 0.0]), np.zeros(4))]     # models.md initial state
    while len(out) < n:
        th = rng.uniform(-np.pi, np.pi, 4)
        if 2 + 3 * np.cos(th[1] - th[2]) < min_D:       # keep away from the paper hinge's spurious singularity
            continue
        out.append((th, rng.uniform(-3.0, 3.0, 4)))
    return out


STATES = random_states(6)


# ------------------------------------------------------------------ tests

@pytest.mark.parametrize("hinge", ["paper", "articulated"])
def test_angular_accelerations_match_lagrange(lagrange, hinge):
    for th, w in STATES:
        thdd_ref, _, _ = lagrange(th, w)
        got = R.m1_thetadd(th, w, m=M_ROD, a=A_HALF, g=G, hinge=hinge)
        np.testing.assert_allclose(got, thdd_ref, rtol=0, atol=1e-10, err_msg=f"{hinge} at {th}, {w}")


@pytest.mark.parametrize("hinge", ["paper", "articulated"])
def test_states_at_every_connection_point(lagrange, hinge):
    for th, w in STATES:
        thdd_ref, pts, cen = lagrange(th, w)
        q_ref = newton_forces(cen)
        states = R.m1_solve(th, w, m=M_ROD, a=A_HALF, g=G, hinge=hinge)["states"]
        assert set(states) == set(pts)
        for k, z in states.items():
            rod = ROD_OF_POINT[k]
            np.testing.assert_allclose(z[[R.XDD, R.YDD]], pts[k], rtol=0, atol=1e-10, err_msg=f"r'' at {k}")
            assert abs(z[R.WD] - thdd_ref[(1, 3, 5, 7).index(rod)]) < 1e-10, f"Omega' at {k}"
            assert abs(z[R.MZ]) < 1e-10, f"moment at smooth joint / free end {k}"
            np.testing.assert_allclose(z[[R.QX, R.QY]], q_ref[k], rtol=0, atol=1e-10, err_msg=f"q at {k}")
            assert z[R.ONE] == 1.0


def test_initial_state_values():
    # t = 0 of models.md: rods 1, 3, 5 hanging, 7 horizontal, at rest -> only the balance accelerates
    r = R.m1_solve([np.pi / 2] * 3 + [0.0], np.zeros(4))
    assert abs(r["thetadd"][1]) < 1e-12 and abs(r["thetadd"][3]) < 1e-12 and abs(r["thetadd"][5]) < 1e-12
    assert r["thetadd"][7] < 0          # the heavier side (rods 5 + 3, at I2 = +x) goes down


def test_literal_paper_closure_is_singular():
    # eq 59 as printed uses row 4 of eq 57 (m_z7 = 0) and the moment row of eq 54; both are identically
    # 0 = 0 with the eq 10 / eq 12-13 hinge matrices, so the 9 x 9 system is rank deficient; the
    # replacement rows (carried moment conditions m_{1,O} = m_{3,O} = 0) make it regular
    th, w = STATES[1]
    U, H = R.m1_elements(th, w)
    ch1 = R.riccati_forward([("body", U[1])])[:4]
    ch2 = R.riccati_forward([("body", U[3]), ("hinge", U[4]), ("body", U[5])])[:4]
    A_lit, _ = R.m1_closure(U, H, ch1, ch2, literal=True)
    A_fix, _ = R.m1_closure(U, H, ch1, ch2)
    assert A_lit.shape == A_fix.shape == (9, 9)
    sv_lit, sv_fix = np.linalg.svd(A_lit, compute_uv=False), np.linalg.svd(A_fix, compute_uv=False)
    assert sv_lit[-1] < 1e-12 * sv_lit[0] and sv_lit[-2] < 1e-12 * sv_lit[0]     # two null directions
    assert sv_fix[-1] > 1e-6 * sv_fix[0]


def test_articulated_hinge_at_the_spurious_singularity(lagrange):
    # D = 2 + 3 cos(theta3 - theta5) = 0 (eq 46's denominator): P of the paper's hinge step does not
    # exist there, while the mechanism is regular and the articulated hinge step is exact
    th = np.array([0.3, 1.0 + np.arccos(-2.0 / 3.0), 1.0, -0.4])
    w = np.array([0.5, -1.0, 2.0, 0.7])
    U, _ = R.m1_elements(th, w)
    S2 = R.riccati_forward([("body", U[3])])[0]
    T21, T22 = U[4][np.ix_(R.B_IDX, R.A_IDX)], U[4][np.ix_(R.B_IDX, R.B_IDX)]
    assert abs(np.linalg.det(T21 @ S2 + T22)) < 1e-12
    thdd_ref, _, _ = lagrange(th, w)
    np.testing.assert_allclose(R.m1_thetadd(th, w, hinge="articulated"), thdd_ref, rtol=0, atol=1e-10)


def test_numpy_matrices_match_symbolic_layer():
    # the numpy element matrices equal the sympy ones of codegen/symbolic/mstmm.py (eqs 36, 44, 49, 52, 55)
    from types import SimpleNamespace
    from codegen.symbolic import mstmm, mstmm_examples
    S = SimpleNamespace(**{**vars(mstmm), **vars(mstmm_examples)})
    th, w = STATES[2]
    U, H = R.m1_elements(th, w, m=M_ROD, a=A_HALF, g=G)
    subs = {S.m: M_ROD, S.a: A_HALF, S.g: G}
    for k, i in enumerate((1, 3, 5, 7)):
        subs[S.THETA[i]], subs[S.THETAD[i]] = th[k], w[k]

    def num(Mx):
        return np.array(Mx.subs(subs).evalf(), float)
    np.testing.assert_allclose(U[1], num(S.example_U_rod(1)), atol=1e-12)
    np.testing.assert_allclose(U[4], num(S.example_hinge4_U()), atol=1e-12)
    np.testing.assert_allclose(U[7], num(S.example_U7()), atol=1e-12)
    U1, U2 = S.example_Uhat8()
    np.testing.assert_allclose(U[8][0], num(U1), atol=1e-12)
    np.testing.assert_allclose(U[8][1], num(U2), atol=1e-12)
    Hrm, HO1 = S.example_H8()
    np.testing.assert_allclose(H[0], num(Hrm), atol=1e-12)
    np.testing.assert_allclose(H[1], num(HO1), atol=1e-12)
