"""Couplings from robot files and model files (codegen.model.couplings): MJCF joint and fixed-tendon equality
constraints against MuJoCo, URDF mimic joints against pinocchio's mimic model, and bad input.

MuJoCo's equality constraints are soft: (A + R) f = a_ref - a0 with R = (1 - d) / d diag(A) (d: solimp's
impedance). At states that satisfy the constraints (Phi = Phi' = 0, so a_ref = 0 and Baumgarte's terms vanish on
both sides) its qacc is a smooth function of e = (1 - d) / d; three solves (d = 0.999, 0.9995, 0.9999) extrapolated
to e = 0 give the hard constraint's qacc. MuJoCo's constraint acceleration omits the J' u term (its reference
acceleration is -b J v - k r), which our rows carry (gamma = p''(L2) (b.u)^2): at states where the nonlinear
couplings' L2 moves, MuJoCo's extrapolated qacc plus M^-1 J^T (J M^-1 J^T)^-1 gamma (M from mj_fullM, J and gamma
written out here from MuJoCo's definition of the equalities) equals ours.
"""
import os

import numpy as np
import pytest

import codegen
from codegen.cli import main
from codegen.model import ModelError
from support.systems import get_system, rel_err

HERE = os.path.dirname(os.path.abspath(__file__))
MJCF = os.path.join(HERE, "mjcf", "joint_coupling.xml")
URDF = os.path.join(HERE, "urdf", "mimic_gripper.urdf")
P = np.polynomial.polynomial
C = [0, 0.8, 0.3, -0.2, 0.1]          # the file's joint equality h2 = p(h1 - 0.2) (ref of h1: 0.2)
CT = [0, 1.5, 0.2]                    # tendon equality t45 = p(t1 - 0.14) (t1 = 0.7 h1, at qpos0 0.14)


@pytest.fixture(scope="module")
def mjcf():
    mujoco = pytest.importorskip("mujoco")
    m = codegen.load_model(MJCF)
    mj = mujoco.MjModel.from_xml_path(MJCF)
    mj.opt.tolerance, mj.opt.iterations = 0.0, 200
    return m, get_system(m, "recursive"), mj, mujoco


def _manifold_state(rng, moving=True):
    """(q, u) on MuJoCo's constraints (its reference form), written out from the file's numbers."""
    h1, h5 = 0.2 + 0.5 * rng.normal(), rng.normal()
    u1, u5 = (rng.normal() if moving else 0.0), rng.normal()
    x, y = h1 - 0.2, 0.7 * h1 - 0.14
    q = np.array([h1, P.polyval(x, C), 0.05, P.polyval(y, CT) - 0.5 * h5, h5])
    u = np.array([u1, P.polyval(x, P.polyder(C)) * u1, 0.0, P.polyval(y, P.polyder(CT)) * 0.7 * u1 - 0.5 * u5, u5])
    return q, u


def _mujoco_hard(mj, mujoco, q, u):
    """MuJoCo's qacc extrapolated to a hard constraint (module docstring), and its mass matrix."""
    d = mujoco.MjData(mj)
    ds = (0.999, 0.9995, 0.9999)
    e = [(1 - x) / x for x in ds]
    acc = []
    for x in ds:
        mj.eq_solimp[:, 0] = mj.eq_solimp[:, 1] = x
        d.qpos[:], d.qvel[:] = q, u
        mujoco.mj_forward(mj, d)
        acc.append(d.qacc.copy())
    w = [np.prod([e[j] / (e[j] - e[i]) for j in range(3) if j != i]) for i in range(3)]
    M = np.zeros((mj.nv, mj.nv))
    try:
        mujoco.mj_fullM(mj, d, M)                           # MuJoCo >= 3.3
    except TypeError:
        mujoco.mj_fullM(mj, M, d.qM)
    return sum(wi * a for wi, a in zip(w, acc)), M


@pytest.mark.build
def test_mjcf_imports_joint_and_tendon_equalities(mjcf):
    m, s, mj, _ = mjcf
    assert [(c.name, c.joint, c.joint2, c.tendon, c.tendon2) for c in m.couplings] == [
        ("poly", "h2", "h1", None, None), ("slide_fixed", "s3", None, None, None), ("tendons", None, None, "t45", "t1")]
    q0, _ = m.initial_state()
    assert q0[2] == pytest.approx(0.05)                    # c0 != 0: the coupled slide starts on its constraint
    for c in m.couplings:                                  # ours y = p(x) is MuJoCo's y - y0 = p(x - x0)
        assert abs(c.residual(m, q0)) < 1e-15


@pytest.mark.build
def test_mjcf_matches_mujoco_stiff(mjcf):
    """Where the nonlinear couplings' L2 is at rest: MuJoCo's extrapolated qacc equals ours."""
    m, s, mj, mujoco = mjcf
    rng = np.random.default_rng(1)
    for _ in range(3):
        q, u = _manifold_state(rng, moving=False)
        assert np.abs(s.kernel.loop_residual(q, u)).max() < 1e-12
        ref, _ = _mujoco_hard(mj, mujoco, q, u)
        assert rel_err(s.forward_dynamics(q, u), ref) < 1e-7


@pytest.mark.build
def test_mjcf_matches_mujoco_plus_the_rate_term(mjcf):
    m, s, mj, mujoco = mjcf
    rng = np.random.default_rng(2)
    for _ in range(2):
        q, u = _manifold_state(rng)
        ref, M = _mujoco_hard(mj, mujoco, q, u)
        x, y = q[0] - 0.2, 0.7 * q[0] - 0.14
        J = np.zeros((3, 5))
        J[0, [1, 0]] = 1, -P.polyval(x, P.polyder(C))
        J[1, 2] = 1
        J[2, [3, 4, 0]] = 1, 0.5, -0.7 * P.polyval(y, P.polyder(CT))
        g = np.array([P.polyval(x, P.polyder(C, 2)) * u[0] ** 2, 0, P.polyval(y, P.polyder(CT, 2)) * (0.7 * u[0]) ** 2])
        Mi = np.linalg.inv(M)
        ours = s.forward_dynamics(q, u)
        assert rel_err(ours, ref) > 1e-4                  # MuJoCo leaves out J' u ...
        assert rel_err(ours, ref + Mi @ J.T @ np.linalg.solve(J @ Mi @ J.T, g)) < 1e-7     # ... and only that


@pytest.mark.build
def test_mjcf_run_keeps_the_couplings(mjcf):
    m, s, _, _ = mjcf
    r = s.simulate(0.5, 2e-3, integrator="rk4")
    assert r.meta["constraint_violation_max"]["position"] < 1e-6 and r.meta["energy"]["value"] < 1e-6
    assert list(r.extra["coupling_names"]) == ["poly", "slide_fixed", "tendons"]


@pytest.fixture(scope="module")
def urdf():
    pytest.importorskip("yourdfpy")
    m = codegen.load_model(URDF)
    return m, get_system(m, "recursive")


@pytest.mark.build
def test_urdf_mimic_couples_by_default(urdf):
    m, _ = urdf
    assert [(c.name, c.joint, c.joint2, list(c.polycoef[:2])) for c in m.couplings] == [
        ("right_finger.mimic", "right_finger", "left_finger", [0.01, -1.0]),
        ("thumb_joint.mimic", "thumb_joint", "wrist", [0.0, 0.5])]
    assert m.initial_state()[0].tolist() == [0.0, 0.0, 0.01, 0.0]        # the offset: q0 satisfies the coupling
    assert not codegen.load_model(URDF, mimic="independent").couplings
    with pytest.raises(ModelError, match="right_finger.*mimics joint 'left_finger'.*mimic='refuse'"):
        codegen.load_model(URDF, mimic="refuse")


@pytest.mark.build
def test_urdf_mimic_matches_pinocchio(urdf):
    """pinocchio 3's mimic model (mimic=True: the mimic joints have no coordinates of their own): its reduced
    accelerations M^-1 (-h) equal ours, and the mimic joints follow multiplier times theirs."""
    pin = pytest.importorskip("pinocchio")
    if not hasattr(pin, "JointModelMimic"):
        pytest.skip("pinocchio without mimic joints")
    m, s = urdf
    pm = pin.buildModelFromUrdf(URDF, mimic=True)
    pd = pm.createData()
    rng = np.random.default_rng(3)
    for _ in range(3):
        qr, vr = rng.normal(size=2) * [0.5, 0.02], rng.normal(size=2)
        q = np.array([qr[0], qr[1], 0.01 - qr[1], 0.5 * qr[0]])
        u = np.array([vr[0], vr[1], -vr[1], 0.5 * vr[0]])
        ref = np.linalg.solve(pin.crba(pm, pd, qr), -pin.rnea(pm, pd, qr, vr, np.zeros(2)))
        ud = s.forward_dynamics(q, u)
        assert rel_err(ud[:2], ref) < 1e-9
        assert abs(ud[2] + ud[1]) < 1e-12 and abs(ud[3] - 0.5 * ud[0]) < 1e-12


BASE = """name: bad_coupling
gravity: [0, 0, -9.81]
bodies:
  - {name: a, mass: 1}
  - {name: b, mass: 1}
joints:
  - {name: j1, type: revolute, parent: ground, child: a, axis: [0, 1, 0]}
  - {name: j2, type: spherical, parent: a, child: b}
couplings:
"""


@pytest.mark.parametrize("entry, field, words", [
    ("{name: c, joint: nope, joint2: j1}", "couplings[c].joint", "does not exist"),
    ("{name: c, joint: j1, joint2: j2}", "couplings[c].joint2", "spherical joint has no scalar coordinate"),
    ("{name: c, joint: j1, polycoef: []}", "couplings[0].polycoef", "list of 1 to 5"),
    ("{name: c, joint: j1, joint2: j1}", "couplings[c].joint2", "coupled to itself"),
    ("{name: c, joint: j1, polycoef: [0, 1]}", "couplings[c].polycoef", "need a second coordinate"),
    ("{name: c, joint: j1, tendon2: t}", "couplings[c].tendon2", "tendon 't' does not exist"),
    ("{name: c, joint: j1, joint2: j1, polycoef: [0, 1], multiplier: 2}", "couplings[0]", "not both"),
])
def test_bad_couplings_exit_2_naming_file_and_field(tmp_path, capsys, entry, field, words):
    path = tmp_path / "bad.yaml"
    path.write_text(BASE + f"  - {entry}\n")
    assert main(["check", str(path)]) == 2
    err = capsys.readouterr().err
    assert str(path) in err and field in err and words in err, err


def test_model_file_couplings_round_trip(tmp_path):
    text = BASE.replace("spherical, parent: a, child: b", "prismatic, parent: a, child: b, axis: [1, 0, 0], q0: 0.1")
    path = tmp_path / "ok.yaml"
    path.write_text(text + "  - {name: c, joint: j2, joint2: j1, multiplier: 2, offset: 0.1}\n")
    m = codegen.load_model(str(path))
    assert m.couplings[0].polycoef.tolist() == [0.1, 2.0, 0.0, 0.0, 0.0]
    assert codegen.model_from_dict(m.to_dict()).to_dict() == m.to_dict()
