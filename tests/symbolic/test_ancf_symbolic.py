"""Checks of the symbolic Shabana planar beam (codegen/symbolic/ancf.py) against Hu & Wang 2016.

What is checked:
* shape functions interpolate the nodal coordinates in the order [r_A; r'_A; r_B; r'_B] (eqs 1-3);
* the mass matrix equals the matrix printed as eq 4 (typed in below) times rho A l, exactly;
* the strain energy (eq 6) equals the paper's quadratic form with A_ij, B_ij, A_i, and the printed
  structure of eq 7 (as reconstructed) equals the symbolic gradient exactly;
* F_EK is the gradient of U (central finite differences of the explicit U(e) at random e);
* dF_EK/de is symmetric and matches finite differences of F_EK;
* a rigid motion (translation + rotation of the straight undeformed beam) has U = 0, F_EK = 0, and
  the Jacobian there annihilates the three rigid velocity modes;
* F_EG (eq 9) sums to the element weight, reduces to the printed eq 9, and is minus the gradient of
  the gravity potential; F_E (eq 8) puts a point force on the right node;
* the generated C assignments, executed with Python's math module, agree with sympy's lambdify to
  1e-12 and use only the inputs e[0..7], E, A, I, l, sqrt and pow;
* the INSPECT table returns ordered dicts of sympy objects.
"""
import ast
import math
from collections import OrderedDict

import numpy as np
import pytest
import sympy as sp

from codegen.symbolic import ancf

e = ancf.e
PARAMS = (ancf.E, ancf.A, ancf.I, ancf.l)


# ------------------------------------------------------------------ helpers (numeric evaluation)

@pytest.fixture(scope="module")
def num():
    """Numeric functions of (e, E, A, I, l): U from the explicit formula, F and J through alpha, d."""
    args_x = [list(e), *PARAMS]
    args_a = [list(e), ancf.alpha, ancf.d, *PARAMS]
    U_x = sp.lambdify(args_x, ancf.explicit(ancf.strain_energy()), "math")
    F_a = sp.lambdify(args_a, list(ancf.elastic_force()), "math")
    J_a = sp.lambdify(args_a, ancf.elastic_jacobian().tolist(), "math")

    def chord(x):
        return math.atan2(x[5] - x[1], x[4] - x[0]), math.hypot(x[4] - x[0], x[5] - x[1])

    def U(x, p):
        return float(U_x(list(x), *p))

    def F(x, p):
        return np.array(F_a(list(x), *chord(x), *p), float).ravel()

    def J(x, p):
        return np.array(J_a(list(x), *chord(x), *p), float)

    return U, F, J


def deformed_configs(rng, n=4):
    """Random, clearly deformed element configurations (chord ~ 1, arbitrary orientation)."""
    out = []
    for _ in range(n):
        th = rng.uniform(-np.pi, np.pi)
        t = np.array([np.cos(th), np.sin(th)])
        rA = rng.normal(size=2)
        rB = rA + rng.uniform(0.8, 1.3) * t + 0.2 * rng.normal(size=2)
        sA = 1.1 * t + 0.4 * rng.normal(size=2)
        sB = 0.9 * t + 0.4 * rng.normal(size=2)
        out.append(np.concatenate([rA, sA, rB, sB]))
    return out


P_NUM = (3.0, 0.7, 0.2, 1.1)   # E, A, I, l: O(1) values so both energy terms matter


# ------------------------------------------------------------------ eqs 1-4

def test_shape_functions_interpolate_nodal_coordinates():
    S = ancf.shape_matrix()
    r = S * e
    rs = ancf.d_ds(r)
    assert sp.simplify(r.subs(ancf.xi, 0) - e[0:2, 0]) == sp.zeros(2, 1)
    assert sp.simplify(rs.subs(ancf.xi, 0) - e[2:4, 0]) == sp.zeros(2, 1)
    assert sp.simplify(r.subs(ancf.xi, 1) - e[4:6, 0]) == sp.zeros(2, 1)
    assert sp.simplify(rs.subs(ancf.xi, 1) - e[6:8, 0]) == sp.zeros(2, 1)


def test_mass_matrix_equals_printed_eq4():
    l, R = ancf.l, sp.Rational
    # eq 4 as printed (upper triangle of 2x2 blocks, each a multiple of I_2), times rho A l
    blocks = [
        [R(13, 35), R(11, 210) * l, R(9, 70), -R(13, 420) * l],
        [None, l**2 / 105, R(13, 420) * l, -l**2 / 140],
        [None, None, R(13, 35), -R(11, 210) * l],
        [None, None, None, l**2 / 105],
    ]
    printed = sp.zeros(8, 8)
    for i in range(4):
        for j in range(i, 4):
            for k in range(2):
                printed[2 * i + k, 2 * j + k] = blocks[i][j]
                printed[2 * j + k, 2 * i + k] = blocks[i][j]
    expected = ancf.rho * ancf.A * l * printed
    M = ancf.mass_matrix()
    assert M.shape == (8, 8)
    assert (M - expected).applyfunc(sp.expand) == sp.zeros(8, 8)
    # total mass: a rigid translation t has kinetic energy 1/2 m |t|^2
    tx = sp.Matrix([1, 0, 0, 0, 1, 0, 0, 0])
    assert sp.simplify((tx.T * M * tx)[0, 0] - ancf.rho * ancf.A * l) == 0


# ------------------------------------------------------------------ eqs 5-7

def test_strain_energy_is_paper_quadratic_form():
    P = ancf.paper_matrices()
    c, s = sp.cos(ancf.alpha), sp.sin(ancf.alpha)
    K = c**2 * (P["A11"] + P["B22"]) + s**2 * (P["A22"] + P["B11"]) + c * s * (P["A12"] + P["A21"] - P["B12"] - P["B21"])
    U_form = (e.T * K * e)[0, 0] / 2 - ((c * P["A1"] + s * P["A2"]) * e)[0, 0] + ancf.E * ancf.A * ancf.l / 2
    assert sp.expand(ancf.strain_energy() - U_form) == 0


def test_eq7_structure_equals_symbolic_gradient():
    diff = (ancf.elastic_force_eq7() - ancf.elastic_force()).applyfunc(sp.expand)
    assert diff == sp.zeros(8, 1)


def test_elastic_force_is_gradient_of_energy(num):
    U, F, _ = num
    rng = np.random.default_rng(7)
    h = 1e-6
    for x in deformed_configs(rng):
        f = F(x, P_NUM)
        fd = np.array([(U(x + h * dk, P_NUM) - U(x - h * dk, P_NUM)) / (2 * h) for dk in np.eye(8)])
        assert np.linalg.norm(f) > 1e-2          # a genuinely loaded configuration
        np.testing.assert_allclose(f, fd, rtol=0, atol=1e-7 * max(1.0, np.abs(f).max()))


def test_jacobian_symmetric_and_matches_finite_differences(num):
    _, F, J = num
    rng = np.random.default_rng(11)
    h = 1e-6
    for x in deformed_configs(rng):
        K = J(x, P_NUM)
        scale = max(1.0, np.abs(K).max())
        np.testing.assert_allclose(K, K.T, rtol=0, atol=1e-12 * scale)
        fd = np.column_stack([(F(x + h * dk, P_NUM) - F(x - h * dk, P_NUM)) / (2 * h) for dk in np.eye(8)])
        np.testing.assert_allclose(K, fd, rtol=0, atol=1e-6 * scale)


def test_rigid_motion_has_zero_energy_and_force_symbolic():
    # straight undeformed beam at position p with direction (c, s), c^2 + s^2 = 1: its chord has
    # length l and angle alpha with cos(alpha) = c, sin(alpha) = s
    px, py, c, s = sp.symbols("p_x p_y c s", real=True)
    p, t = sp.Matrix([px, py]), sp.Matrix([c, s])
    er = sp.Matrix.vstack(p, t, p + ancf.l * t, t)
    sub = {e[k]: er[k] for k in range(8)}
    sub.update({ancf.d: ancf.l, sp.cos(ancf.alpha): c, sp.sin(ancf.alpha): s})

    def on_unit_circle(x):          # reduce modulo c^2 + s^2 - 1
        return sp.expand(sp.rem(sp.expand(x.xreplace(sub)), s**2 + c**2 - 1, s))

    assert on_unit_circle(ancf.strain_energy()) == 0
    assert [on_unit_circle(f) for f in ancf.elastic_force()] == [0] * 8
    # a bent configuration (slope at B turned, chord unchanged) is not stress free (not vacuous)
    sub[e[7]] = er[7] + sp.Symbol("delta")
    assert on_unit_circle(ancf.strain_energy()) != 0


def test_rigid_motion_has_zero_energy_and_force_numeric(num):
    U, F, J = num
    rng = np.random.default_rng(3)
    l = P_NUM[3]
    for _ in range(5):
        p, th = rng.normal(size=2), rng.uniform(-np.pi, np.pi)
        t, n = np.array([np.cos(th), np.sin(th)]), np.array([-np.sin(th), np.cos(th)])
        x = np.concatenate([p, t, p + l * t, t])
        assert abs(U(x, P_NUM)) < 1e-12
        np.testing.assert_allclose(F(x, P_NUM), 0, atol=1e-12)
        # rigid velocity modes (translations, rotation) are in the null space of the tangent stiffness
        K = J(x, P_NUM)
        modes = [np.r_[1, 0, 0, 0, 1, 0, 0, 0], np.r_[0, 1, 0, 0, 0, 1, 0, 0], np.concatenate([0 * p, n, l * n, n])]
        for m in modes:
            np.testing.assert_allclose(K @ m, 0, atol=1e-10 * np.abs(K).max())
        # ... and a stretch is not: the force is not trivially zero
        x2 = x.copy()
        x2[4:6] += 0.01 * t
        assert np.linalg.norm(F(x2, P_NUM)) > 1e-3


# ------------------------------------------------------------------ eqs 8-9

def test_gravity_force_sums_to_weight_and_matches_eq9():
    G = ancf.gravity_force()
    m = ancf.rho * ancf.A * ancf.l
    assert sp.simplify(G[0] + G[4] - m * ancf.gx) == 0
    assert sp.simplify(G[1] + G[5] - m * ancf.gy) == 0
    # printed eq 9: m g [0, 1/2, 0, l/12, 0, 1/2, 0, -l/12] with g the y component
    l, R = ancf.l, sp.Rational
    printed = m * ancf.gy * sp.Matrix([0, R(1, 2), 0, l / 12, 0, R(1, 2), 0, -l / 12])
    assert (G.subs(ancf.gx, 0) - printed).applyfunc(sp.expand) == sp.zeros(8, 1)
    # F_EG is minus the gradient of the gravity potential, and its virtual work in a rigid
    # translation dr is m g . dr
    V = ancf.gravity_potential()
    assert (sp.Matrix([sp.diff(V, v) for v in e]) + G).applyfunc(sp.expand) == sp.zeros(8, 1)
    dr = sp.Matrix(sp.symbols("dx dy"))
    de = sp.Matrix([dr[0], dr[1], 0, 0, dr[0], dr[1], 0, 0])
    assert sp.expand((G.T * de)[0, 0] - m * (ancf.gx * dr[0] + ancf.gy * dr[1])) == 0


def test_external_point_force():
    Fx, Fy = sp.symbols("F_x F_y")
    at_A = ancf.external_force([Fx, Fy], 0)
    at_B = ancf.external_force([Fx, Fy], 1)
    assert at_A == sp.Matrix([Fx, Fy, 0, 0, 0, 0, 0, 0])
    assert at_B == sp.Matrix([0, 0, 0, 0, Fx, Fy, 0, 0])
    # anywhere: the resultant is F (shape functions of the positions sum to 1)
    Fe = ancf.external_force([Fx, Fy])
    assert sp.expand(Fe[0] + Fe[4] - Fx) == 0 and sp.expand(Fe[1] + Fe[5] - Fy) == 0


# ------------------------------------------------------------------ code generation

def run_c_assignments(assigns, x, p, names=("E", "A", "I", "l")):
    """Execute the C assignments with Python's math: the expressions are also Python syntax."""
    ns = {"sqrt": math.sqrt, "pow": math.pow, "e": list(map(float, x)), "F": [0.0] * 8, "J": [0.0] * 64}
    ns.update(dict(zip(names, map(float, p))))
    code = "\n".join(f"{t} = {x_}" for t, x_ in assigns)
    exec(compile(code, "<ancf C code>", "exec"), {"__builtins__": {}}, ns)
    return np.array(ns["F"]), np.array(ns["J"]).reshape(8, 8)


def test_c_code_matches_lambdify(num):
    _, F, J = num
    assigns = ancf.c_assignments()
    # only the documented inputs, the locals it defines, and sqrt/pow appear
    defined = {"e", "E", "A", "I", "l", "sqrt", "pow", "F", "J"}
    for target, expr in assigns:
        tree = ast.parse(expr, mode="eval")
        names = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
        assert names <= defined, (target, names - defined)
        assert "?" not in expr and "M_" not in expr
        if "[" not in target:
            defined.add(target)
    assert len([t for t, _ in assigns if t.startswith("F[")]) == 8
    assert len([t for t, _ in assigns if t.startswith("J[")]) == 64

    rng = np.random.default_rng(5)
    for x in deformed_configs(rng, 3):
        p = tuple(rng.uniform(0.3, 3.0, size=4))
        Fc, Jc = run_c_assignments(assigns, x, p)
        Fl, Jl = F(x, p), J(x, p)
        assert np.abs(Fc - Fl).max() <= 1e-12 * max(1.0, np.abs(Fl).max())
        assert np.abs(Jc - Jl).max() <= 1e-12 * max(1.0, np.abs(Jl).max())


def test_c_code_force_only_and_renamed_parameters(num):
    _, F, _ = num
    assigns = ancf.c_assignments(("F_EK",), params=("E_mod", "area", "I_area", "l_el"))
    assert not any(t.startswith("J[") for t, _ in assigns)
    x = deformed_configs(np.random.default_rng(2), 1)[0]
    Fc, _ = run_c_assignments(assigns, x, P_NUM, names=("E_mod", "area", "I_area", "l_el"))
    assert np.abs(Fc - F(x, P_NUM)).max() <= 1e-12 * max(1.0, np.abs(Fc).max())
    src = ancf.cython_function()
    assert "nogil" in src and "cdef double" in src and "J[63] =" in src
    with pytest.raises(ValueError):
        ancf.c_assignments(("K_E",))


# ------------------------------------------------------------------ inspection table

def test_inspect_table():
    for name in ("shabana-beam", "shabana-beam-elastic", "shabana-beam-gravity"):
        assert name in ancf.INSPECT
        table = ancf.INSPECT[name]()
        assert isinstance(table, OrderedDict) and table
        for label, val in table.items():
            assert isinstance(label, str)
            assert isinstance(val, (sp.Basic, sp.MatrixBase)), label
    beam = ancf.INSPECT["shabana-beam"]()
    for key in ("S", "M_E", "U", "F_EK", "F_EG"):
        assert any(label.split()[0] == key for label in beam), key
    assert "frac{13 A l \\rho}{35}" in sp.latex(ancf.mass_matrix())
