"""The sympy layer: joint models (Kang & Yoon eq 16, H and W of Liu et al.) and reference points (eqs 4-8, 36)."""
import numpy as np
import pytest
import sympy as sp

from codegen.model import JOINT_TYPES
from codegen.symbolic import spatial
from codegen.symbolic.joints import joint_model, skew


def _num(jm, q, u):
    sub = dict(zip(jm.q, q)) | dict(zip(jm.u, u))
    return {k: np.array(v.subs(sub).evalf(), dtype=float) for k, v in jm.elements().items() if k not in ("q", "u")}


@pytest.mark.parametrize("jtype", [t for t in JOINT_TYPES])
def test_joint_model_consistency(jtype):
    """H^T W = 0 with [H W] full rank; S_w equals vee(Rdot R^T) (eq 16) and S_v = d(d)/dt along qdot,
    checked by finite differences at a random state; c_w, c_v are the time derivatives of S u."""
    jm = joint_model(jtype)
    rng = np.random.default_rng(1)
    nq, nv = JOINT_TYPES[jtype].nq, JOINT_TYPES[jtype].nv
    q = rng.normal(size=nq)
    if jtype in ("spherical", "free"):
        o = 0 if jtype == "spherical" else 3
        q[o:o + 4] /= np.linalg.norm(q[o:o + 4])
    u = rng.normal(size=nv)
    n = _num(jm, q, u)
    HW = np.hstack([n["H"], n["W"]]) if nv < 6 else n["H"]
    assert HW.shape == (6, 6) and abs(np.linalg.det(HW)) > 1e-6
    if nv < 6:
        assert np.allclose(n["H"].T @ n["W"], 0, atol=1e-12)
    h = 1e-6
    qd = n["qdot"].ravel() if nq else np.zeros(0)
    nP, nM = _num(jm, q + h * qd, u), _num(jm, q - h * qd, u)
    Rdot = (nP["R"] - nM["R"]) / (2 * h)
    w = np.array([Rdot @ n["R"].T][0])
    assert np.allclose(np.array([w[2, 1], w[0, 2], w[1, 0]]), n["S_w"] @ u if nv else 0, atol=1e-7)
    assert np.allclose((nP["d"] - nM["d"]).ravel() / (2 * h), n["S_v"] @ u if nv else 0, atol=1e-7)
    if nv:
        assert np.allclose((nP["S_w"] - nM["S_w"]) @ u / (2 * h), n["c_w"].ravel(), atol=1e-6)
        assert np.allclose((nP["S_v"] - nM["S_v"]) @ u / (2 * h), n["c_v"].ravel(), atol=1e-6)
        # child-frame motion subspace = parent-frame one rotated by R^T
        Rt = n["R"].T
        assert np.allclose(n["S_c"], np.vstack([Rt @ n["S_v"], Rt @ n["S_w"]]), atol=1e-12)


def test_revolute_is_canonical_z():
    jm = joint_model("revolute")
    assert jm.H == sp.Matrix([0, 0, 0, 0, 0, 1])
    assert jm.W.shape == (6, 5) and jm.c_w == sp.zeros(3, 1)


def test_origin_reference_point_reproduces_eq36():
    """M^P = T^T M^c T at the instant global origin is Kang & Yoon eq (36); Q^P is eq (36)'s force
    (reconstructed: the printed 'F + m r omega' is garbled; the derivation gives F - m omega x rdot^c)."""
    el = spatial.reference_point("origin")
    m = sp.Symbol("m", positive=True)
    J = spatial.sym3("J")
    rc, w, F, tau, rcd = (spatial.vec(n) for n in ("r^c", "omega", "F", "tau", "rdot^c"))
    R = skew(rc)
    M36 = spatial.block(m * sp.eye(3), -m * R, m * R, J - m * R * R)
    assert sp.simplify(el["M^P = T^T M^c T  [KY eq 8]"] - M36) == sp.zeros(6)
    Fp = F - m * w.cross(rcd)
    Q36 = sp.Matrix.vstack(Fp, tau - skew(w) * J * w + rc.cross(Fp))
    assert sp.simplify(el["Q^P = T^T (Q^c - M^c Tdot Y^P)  [KY eq 8]"] - Q36) == sp.zeros(6, 1)
    assert el["B_j1  [KY eqs 25, 33]"] == sp.eye(6)          # eq (33): B1 is the identity at the origin


def test_centroid_reference_point_is_eq3_and_eq25():
    el = spatial.reference_point("centroid")
    assert el["M^P = T^T M^c T  [KY eq 8]"] == el["M^c  [KY eq 3]"]
    rho, Bw, Bv = spatial.vec("rho"), spatial.vec("B^w"), spatial.vec("B^v")
    assert sp.simplify(el["B_j2 column  [KY eqs 25, 33]"] - sp.Matrix.vstack(Bv - skew(rho) * Bw, Bw)) == sp.zeros(6, 1)


def test_inspect_cli_prints_every_element(capsys):
    from codegen.cli import main
    assert main(["inspect", "list"]) == 0
    listing = capsys.readouterr().out
    for name in ("joint revolute", "joint free", "reference-point origin", "spatial"):
        assert name in listing
    assert main(["inspect", "reference-point", "origin", "--format", "latex"]) == 0
    assert "\\left[\\begin{matrix}" in capsys.readouterr().out
    assert main(["inspect", "joint", "spherical"]) == 0
    out = capsys.readouterr().out
    assert "S_w =" in out and "W =" in out
