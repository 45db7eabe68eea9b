"""Liu et al.'s symbolic elements: H_j, W_j of every joint type satisfy the conditions below eq 1; P-hat and
I_O (eqs 1-3) agree with the kernels' spatial algebra."""
import numpy as np
import pytest
import sympy as sp

from codegen.model import JOINT_TYPES
from codegen.symbolic import cfa
from codegen.symbolic.joints import joint_model


@pytest.mark.parametrize("jtype", list(JOINT_TYPES))
def test_projection_matrices_are_orthonormal_complements(jtype):
    H, W = cfa.projection_matrices(jtype)
    assert H.shape[1] + W.shape[1] == 6
    rng = np.random.default_rng(1)
    q = joint_model(jtype).q
    for _ in range(3):
        vals = rng.normal(size=len(q))
        if jtype in ("spherical", "free"):                 # unit quaternion
            o = 3 if jtype == "free" else 0
            vals[o:o + 4] /= np.linalg.norm(vals[o:o + 4])
        sub = dict(zip(q, vals))
        Hn = np.array(H.subs(sub), float).reshape(6, -1)
        Wn = np.array(W.subs(sub), float).reshape(6, -1)
        assert np.allclose(Hn.T @ Hn, np.eye(Hn.shape[1]), atol=1e-13)
        assert np.allclose(Wn.T @ Wn, np.eye(Wn.shape[1]), atol=1e-13)
        assert np.allclose(Wn.T @ Hn, 0, atol=1e-13)
    if jtype not in ("spherical", "free"):               # exactly, symbolically
        assert all(M.is_zero_matrix for M in cfa.orthogonality(jtype))


def test_shift_and_mass_matrix_about_the_joint_point():
    """I_O = S-hat I_C S-hat^T (below eq 3) is the kernels' inertia about a point (Kang & Yoon eq 36) in the
    paper's [n; f] order; P-hat^T carries an acceleration, P-hat a force, and they are power-consistent."""
    m, s, J = sp.Symbol("m"), sp.Matrix(sp.symbols("s0:3")), sp.Matrix(3, 3, sp.symbols("J0:9"))
    J = (J + J.T) / 2
    IO = cfa.mass_matrix_joint(m, J, s)
    sk = sp.Matrix([[0, -s[2], s[1]], [s[2], 0, -s[0]], [-s[1], s[0], 0]])
    # kernel order [f; n]: [[m U, -m s~], [m s~, J - m s~ s~]]
    ours = sp.Matrix(sp.BlockMatrix([[m * sp.eye(3), -m * sk], [m * sk, J - m * sk * sk]]))
    assert sp.simplify(cfa.PERM * IO * cfa.PERM - ours) == sp.zeros(6)
    p = sp.Matrix(sp.symbols("p0:3"))
    F, V = sp.Matrix(sp.symbols("F0:6")), sp.Matrix(sp.symbols("V0:6"))
    P = cfa.shift_matrix(p)
    assert sp.expand((P * F).T * V - F.T * (P.T * V)) == sp.zeros(1)
    assert P[0:3, 3:6] == sk.subs(dict(zip(s, p)))


def test_inspect_elements_list_every_joint_type():
    el = cfa.cfa_elements()
    for t in JOINT_TYPES:
        assert f"H_j {t}  (child frame, [linear; angular])" in el
