"""The identities the grcr kernel's rank-one updates rest on (codegen.symbolic.grcr), exactly in sympy."""
import sympy as sp

from codegen.symbolic.grcr import elimination, joint_column, triangularisation


def _projector(cols):
    """Orthogonal projector onto the complement of span(cols) (6 x k, exact rationals)."""
    G = sp.Matrix.hstack(*cols)
    return sp.eye(6) - G * (G.T * G).inv() * G.T


def test_elimination_keeps_an_orthogonal_projector_and_kills_the_eliminated_column():
    """eq (36): R' = R - rho Q rho^T is again symmetric and idempotent, and R' s = 0 (the eliminated dependent's
    column leaves the remaining constraint equations), for R the projector left by earlier dependents."""
    a = sp.Matrix([1, 2, 0, 1, -1, 3])
    s = sp.Matrix([0, 1, 1, 2, 0, -1])
    R = _projector([a])
    e = elimination(s, R)
    Rn = e["R^k = R^{k+1} - rho Q rho^T (eqs 36, 66)"]
    assert sp.simplify(Rn - Rn.T) == sp.zeros(6) and sp.simplify(Rn * Rn - Rn) == sp.zeros(6)
    assert sp.simplify(Rn * s) == sp.zeros(6, 1) and sp.simplify(Rn * a) == sp.zeros(6, 1)
    assert sp.simplify(Rn - _projector([a, s])) == sp.zeros(6)


def test_dependents_solved_from_the_tip_solve_the_constraint():
    """eqs (27), (33), (67): u_k = -Q rho^T w_k from the tip inward gives G_D u_D = -w for a consistent w."""
    cols = [sp.Matrix([1, 0, 2, 0, 1, 1]), sp.Matrix([0, 1, 1, 1, 0, 2]), sp.Matrix([2, 1, 0, 1, 1, 0])]
    u_true = sp.Matrix([3, -2, 5])
    w = -sp.Matrix.hstack(*cols) * u_true
    R, sol = sp.eye(6), {}
    rhos, Qs = {}, {}
    for k in (2, 1, 0):
        e = elimination(cols[k], R)
        rhos[k], Qs[k] = e["rho = R^{k+1} s (eq 34)"], e["Q^k = (s^T R^{k+1} s)^-1 (eq 34)"]
        R = e["R^k = R^{k+1} - rho Q rho^T (eqs 36, 66)"]
    acc = w
    for k in (0, 1, 2):                                        # base outward (the forward pass); rho_k is
        # orthogonal to the outboard dependents' columns, so u_k sees only the inboard ones, already known
        sol[k] = sp.simplify(-Qs[k] * (rhos[k].T * acc)[0])
        acc = acc + cols[k] * sol[k]
    assert [sol[k] for k in range(3)] == list(u_true)


def test_triangularisation_removes_the_joint_direction():
    """eq (63): s^T T = 0 applied to the articulated quantities (T^T s = 0): the parent sees no force along the
    joint's free direction."""
    s = sp.Matrix([1, 0, 2, 0, 1, 1])
    I = sp.Matrix(6, 6, lambda a, b: sp.Rational(1, 1 + a + b) + (3 if a == b else 0))
    T = triangularisation(s, I)["T = U - ^0I-hat s s^T / M-hat (eq 63)"]
    assert sp.simplify(s.T * T) == sp.zeros(1, 6)


def test_joint_columns():
    r, a = sp.Matrix([1, 2, 3]), sp.Matrix([0, 0, 1])
    assert joint_column("revolute", r, a) == sp.Matrix([2, -1, 0, 0, 0, 1])
    assert joint_column("prismatic", r, a) == sp.Matrix([0, 0, 1, 0, 0, 0])
