"""Actuators and controls (codegen/model/actuators.py, templates/shared/actuators.pyx.j2) against MuJoCo itself, on
tests/model/mjcf/actuated_arm.xml: a motor with gear and control range, a position servo with force range, a
velocity servo, a general affine actuator and a motor on a fixed tendon (with its own spring and damper), on a
slide-and-hinge arm with armature, damping and a spring.

* mj_forward's qacc (contacts and constraints off) at random states and random controls, in and beyond
  ctrlrange, so that the clamps act: 1e-9 relative;
* MuJoCo's rollout (RK4, the same step) of 1 s with random controls held over each step: 1e-6;
* rollout(ctrl=) equals simulate(ctrl=) with the same controls bit for bit; a table, a callable and the file's
  own ctrl functions drive simulate in compiled code; the energy balance counts the actuators' work;
* derivatives with actuators against central differences;
* a position servo (YAML) reaches its target; bad actuator fields and unmodelled MuJoCo actuators exit 2;
* gymnasium's ant.xml as it ships; connect and weld equality constraints as cut joints against the KKT oracle."""
import os

import mujoco
import numpy as np
import pytest
import yaml

import codegen
from codegen.cli import main
from support.systems import get_system, rel_err

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "mjcf")
ARM = os.path.join(HERE, "actuated_arm.xml")


@pytest.fixture(scope="module")
def arm():
    m = codegen.load_model(ARM)
    mj = mujoco.MjModel.from_xml_path(ARM)
    mj.opt.disableflags |= int(mujoco.mjtDisableBit.mjDSBL_CONTACT) | int(mujoco.mjtDisableBit.mjDSBL_CONSTRAINT)
    return m, mj, get_system(m, derivatives=True)      # one build: the derivative passes are a superset


def random_ctrl(mj, rng, n=None):
    """Controls over 1.5x each actuator's ctrlrange (or [-3, 3]), so that the clamp acts sometimes."""
    lo = np.where(mj.actuator_ctrllimited, mj.actuator_ctrlrange[:, 0] * 1.5, -3.0)
    hi = np.where(mj.actuator_ctrllimited, mj.actuator_ctrlrange[:, 1] * 1.5, 3.0)
    return rng.uniform(lo, hi, size=(mj.nu,) if n is None else (n, mj.nu))


@pytest.mark.build
def test_imported_in_mujocos_order(arm, capsys):
    m, mj, _ = arm
    assert main(["check", ARM]) == 0                                       # `mbgen check` lists the robot physics
    out = capsys.readouterr().out
    assert "armature on 4 joint(s)" in out and "tendon coupler: L = 1 shoulder + -0.5 elbow" in out
    assert "actuator 4 coupler_motor: general on tendon coupler, gear 2, ctrlrange [-1.0, 1.0]" in out
    assert [a.name for a in m.actuators] == ["push", "shoulder_servo", "elbow_speed", "wrist_affine", "coupler_motor"]
    (t,) = m.tendons
    assert [(tj.joint, tj.coef) for tj in t.joints] == [("shoulder", 1.0), ("elbow", -0.5)]
    assert (t.stiffness, t.damping, t.length0) == (5.0, 0.3, 0.2) and m.actuators[4].tendon == "coupler"
    servo = m.actuators[1]
    assert servo.affine()[0].tolist() == [40, 0, 0] and servo.affine()[1].tolist() == [0, -40, -2]
    assert servo.forcerange.tolist() == [-8, 8] and servo.ctrlrange is None
    assert m.actuators[0].gear == 25 and m.actuators[0].ctrlrange.tolist() == [-1, 1]


@pytest.mark.build
def test_accelerations_match_mj_forward(arm):
    m, mj, s = arm
    d = mujoco.MjData(mj)
    rng = np.random.default_rng(1)
    clamped = 0
    for _ in range(20):
        q = rng.uniform(-1, 1, m.nq)
        u = rng.normal(size=m.nv)
        c = random_ctrl(mj, rng)
        tau = rng.normal(size=m.nv)
        d.qpos[:], d.qvel[:], d.ctrl[:], d.qfrc_applied[:] = q, u, c, tau
        mujoco.mj_forward(mj, d)
        assert rel_err(s.forward_dynamics(q, u, tau, ctrl=c), d.qacc) < 1e-9
        assert rel_err(s.kernel.actuator_forces_at(np.r_[q, u][None], [0.0])[0][0], d.actuator_force) < 1e-12
        clamped += np.any(np.abs(d.actuator_force[1]) == 8) + np.any(np.abs(c[[0, 3]]) > [1, 2])
    assert clamped >= 5                                      # the ranges were exercised
    # the documented positional order (q, u, tau, t, ctrl) is the bound method's; out only by keyword
    want = s.forward_dynamics(q, u, None, 0.0, ctrl=c)
    assert np.array_equal(s.forward_dynamics(q, u, None, 0.0, c), want)
    assert np.array_equal(s.inverse_dynamics(q, u, want, 0.0, c), s.inverse_dynamics(q, u, want, ctrl=c))
    with pytest.raises(TypeError):
        s.forward_dynamics(q, u, None, 0.0, c, np.empty(m.nv))
    # without ctrl: each actuator's ctrl function of the file (MJCF: 0)
    d.ctrl[:] = 0
    mujoco.mj_forward(mj, d)
    assert rel_err(s.forward_dynamics(d.qpos, d.qvel, d.qfrc_applied), d.qacc) < 1e-9


@pytest.mark.build
def test_rollout_matches_mujoco_rollout_and_simulate(arm):
    from mujoco import rollout
    m, mj, s = arm
    dt, n = 0.002, 500
    mj.opt.integrator = mujoco.mjtIntegrator.mjINT_RK4
    mj.opt.timestep = dt
    rng = np.random.default_rng(2)
    q0, u0 = m.initial_state()
    C = np.repeat(random_ctrl(mj, rng, 10), n // 10, axis=0)[None]      # piecewise constant, 1 x n x nu
    spec = mujoco.mjtState.mjSTATE_FULLPHYSICS
    d = mujoco.MjData(mj)
    d.qpos[:], d.qvel[:] = q0, u0
    x0 = np.empty(mujoco.mj_stateSize(mj, spec))
    mujoco.mj_getState(mj, d, x0, spec)
    st, _ = rollout.rollout(mj, d, x0[None], C)
    qs, us = s.rollout(q0[None], u0[None], n, dt, ctrl=C, integrator="rk4")
    assert np.abs(qs[0, 1:] - st[0, :, 1:1 + m.nq]).max() < 1e-6
    assert np.abs(us[0, 1:] - st[0, :, 1 + m.nq:1 + m.nq + m.nv]).max() < 1e-6
    # the same controls through simulate (held constant: one value per run) and rollout: bit for bit
    c = C[0, 0]
    res = s.simulate(0.2, dt, ctrl=c, integrator="rk4")
    qs, us = s.rollout(q0[None], u0[None], 100, dt, ctrl=np.tile(c, (1, 100, 1)), integrator="rk4")
    assert np.array_equal(res.q, qs[0]) and np.array_equal(res.u, us[0])
    # a table of constant rows and a callable give the same run; the results name the actuators
    for ctrl in ((np.array([0.0, 1.0]), np.tile(c, (2, 1))), lambda t, q, u: c):
        r2 = s.simulate(0.2, dt, ctrl=ctrl, integrator="rk4")
        assert np.array_equal(r2.q, res.q)
    assert res.extra["actuator_names"].tolist() == [a.name for a in m.actuators]
    assert res.extra["ctrl"].shape == res.extra["actuator_force"].shape == (len(res.t), len(m.actuators))
    assert np.all(np.abs(res.extra["ctrl"][:, 0]) <= 1)                 # after ctrlrange
    assert res.meta["energy"]["value"] < 1e-4          # the actuators' work is counted (left out: 7e-2)


@pytest.mark.build
def test_derivatives_with_actuators(arm):
    """The actuators' partials (position and velocity servos, the affine gain and bias) in the analytical
    derivatives: central differences of forward_dynamics with the same controls."""
    m, mj, s = arm
    rng = np.random.default_rng(3)
    q, u = rng.uniform(-0.5, 0.5, m.nq), rng.normal(size=m.nv)
    c = np.array([0.3, 0.2, -0.4, 0.5, 0.6])                              # inside every range
    Aq, Au, Mi = s.forward_dynamics_derivatives(q, u, ctrl=c)
    h = 1e-6
    for k in range(m.nv):
        e = np.eye(m.nv)[k] * h
        fq = (s.forward_dynamics(q + e, u, ctrl=c) - s.forward_dynamics(q - e, u, ctrl=c)) / (2 * h)
        fu = (s.forward_dynamics(q, u + e, ctrl=c) - s.forward_dynamics(q, u - e, ctrl=c)) / (2 * h)
        assert np.abs(Aq[:, k] - fq).max() < 1e-6 * max(1, np.abs(fq).max()), k
        assert np.abs(Au[:, k] - fu).max() < 1e-6 * max(1, np.abs(fu).max()), k
    Bc = Mi @ s.actuator_jacobian(q, u, ctrl=c)                            # dudot/dctrl
    for a in range(len(c)):
        e = np.eye(len(c))[a] * h
        fc = (s.forward_dynamics(q, u, ctrl=c + e) - s.forward_dynamics(q, u, ctrl=c - e)) / (2 * h)
        assert np.abs(Bc[:, a] - fc).max() < 1e-6 * max(1, np.abs(fc).max()), a
    c[0] = 2.0                                                             # beyond ctrlrange: no effect at the margin
    assert not np.any(s.actuator_jacobian(q, u, ctrl=c)[:, 0])


SERVO = {
    "name": "servo", "gravity": [0, 0, 0],
    "bodies": [{"name": "link", "mass": 1.0, "com": [0.3, 0, 0], "inertia": [0.001, 0.01, 0.01]}],
    "joints": [{"name": "hinge", "type": "revolute", "parent": "ground", "child": "link", "axis": [0, 0, 1],
                "armature": 0.01}],
    "actuators": [{"name": "servo", "type": "position", "joint": "hinge", "kp": 20.0, "kv": 2.0,
                   "ctrl": {"step": {"t0": 0.1, "before": 0.0, "after": 0.8}}}],
}


@pytest.mark.build
def test_position_servo_reaches_its_target(tmp_path):
    """A position actuator whose ctrl is a step in the model file: a compiled PD law; no Python per step."""
    f = tmp_path / "servo.yaml"
    f.write_text(yaml.safe_dump(SERVO))
    m = codegen.load_model(f)
    res = get_system(m).simulate(4.0, 0.01)
    assert abs(res.q[-1, 0] - 0.8) < 1e-3 and abs(res.u[-1, 0]) < 1e-3
    assert res.extra["ctrl"][0, 0] == 0.0 and res.extra["ctrl"][-1, 0] == 0.8
    assert codegen.model_from_dict(m.to_dict()).actuators[0].ctrl.kind == "step"      # round trip


@pytest.mark.parametrize("change, words", [
    ({"kp": -1.0}, "actuators[servo].kp"),
    ({"ctrlrange": [1.0, -1.0]}, "low <= high"),
    ({"joint": "elbow"}, "joint 'elbow' does not exist"),
    ({"gear": 0}, "gear must be non-zero"),
    ({"type": "velocity"}, "a velocity actuator takes no kp"),
    ({"type": "thruster"}, "unknown actuator type"),
])
def test_bad_actuator_fields_exit_2(tmp_path, capsys, change, words):
    d = yaml.safe_load(yaml.safe_dump(SERVO))
    d["actuators"][0].update(change)
    f = tmp_path / "bad.yaml"
    f.write_text(yaml.safe_dump(d))
    assert main(["check", str(f)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"mbgen: error: {f}: ") and words in err and "Traceback" not in err, err


@pytest.mark.parametrize("actuator, words", [
    ('<general joint="h" dyntype="muscle"/>', "activation dynamics muscle"),
    ('<general joint="h" dyntype="user"/>', "activation dynamics user"),
    ('<general joint="h" dyntype="filter" dynprm="0.1" actearly="true"/>', "actearly"),
    ('<motor joint="b"/>', "only hinge and slide joints"),
])
def test_unmodelled_mujoco_actuators_are_refused_by_name(tmp_path, capsys, actuator, words):
    p = tmp_path / "m.xml"
    p.write_text('<mujoco><worldbody><body name="a"><joint name="h" type="hinge"/><geom size="0.1" contype="0" '
                 'conaffinity="0"/><body name="c"><joint name="b" type="ball"/><geom size="0.1" contype="0" '
                 f'conaffinity="0"/></body></body></worldbody><actuator>{actuator}</actuator></mujoco>')
    assert main(["check", str(p)]) == 2
    err = capsys.readouterr().err
    assert "actuator" in err and words in err and "Traceback" not in err, err


@pytest.mark.build
def test_gymnasium_ant_matches_mj_forward():
    """A real robot file as it ships: gymnasium's ant (free base, armature on every hinge, 8 motors with gear and
    ctrlrange, limited hips and ankles), loaded with its contacts ignored; random states inside the limits and
    random controls: mj_forward's qacc (docs/robots-mujoco.md: every gymnasium model)."""
    gym = pytest.importorskip("gymnasium")
    path = os.path.join(os.path.dirname(gym.__file__), "envs", "mujoco", "assets", "ant.xml")
    with pytest.warns(codegen.model.robotfiles.ModelWarning, match="contacts"):
        m = codegen.load_model(path, ignore_contacts=True)
    assert len(m.actuators) == 8 and np.count_nonzero(m.armature) == 8 and m.joints[0].type == "free"
    mj = mujoco.MjModel.from_xml_path(path)
    mj.opt.disableflags |= int(mujoco.mjtDisableBit.mjDSBL_CONTACT) | int(mujoco.mjtDisableBit.mjDSBL_CONSTRAINT)
    d = mujoco.MjData(mj)
    s = get_system(m)
    rng = np.random.default_rng(5)
    for _ in range(10):
        q = np.array(mj.qpos0)
        q[3:7] = rng.normal(size=4)
        q[3:7] /= np.linalg.norm(q[3:7])
        lo, hi = mj.jnt_range[1:, 0], mj.jnt_range[1:, 1]
        q[7:] = rng.uniform(lo + 0.05 * (hi - lo), hi - 0.05 * (hi - lo))          # no limit active
        u, c = rng.normal(size=mj.nv), rng.uniform(-1, 1, size=mj.nu)
        d.qpos[:], d.qvel[:], d.ctrl[:] = q, u, c
        mujoco.mj_forward(mj, d)
        assert rel_err(s.forward_dynamics(q, u, ctrl=c), d.qacc) < 1e-9


@pytest.mark.build
def test_connect_constraint_closes_a_loop_as_a_cut_joint():
    """An MJCF connect equality constraint becomes a spherical cut joint (the anchor in each body's frame, MuJoCo's
    eq_data); the recursive family's constrained accelerations equal the KKT oracle built from the model dict along
    a simulated run, and the loop stays closed."""
    from support.kkt import KKT
    m = codegen.load_model(os.path.join(HERE, "four_bar_connect.xml"))
    (cut,) = m.cuts
    assert (cut.name, cut.type, cut.parent, cut.child) == ("close", "spherical", "coupler", "rocker")
    assert np.allclose(cut.parent_frame.pos, [0, 0, 1]) and np.allclose(cut.child_frame.pos, [-0.8, 0, 1])
    s = get_system(m)
    res = s.simulate(1.0, 0.01, integrator="rk4")
    assert res.meta["constraint_violation_max"]["position"] < 1e-5
    kkt = KKT(m.to_dict())
    for k in (0, 50, 100):
        ud_ref, _ = kkt.forward(res.q[k], res.u[k], baumgarte=(s.kernel.alpha, s.kernel.beta))   # as the run
        assert rel_err(s.forward_dynamics(res.q[k], res.u[k]), ud_ref) < 1e-6, k


@pytest.mark.build
def test_weld_constraint_is_a_fixed_cut_joint():
    """A weld (body1's frame at relpose, body2's at the anchor: MuJoCo's eq_data) becomes a fixed cut joint: a free
    box welded to a pendulum's tip moves with it, as the KKT oracle says, the weld held to round-off."""
    from support.kkt import KKT
    m = codegen.load_model(os.path.join(HERE, "welded_box.xml"))
    (cut,) = m.cuts
    assert (cut.type, cut.parent, cut.child) == ("fixed", "arm", "box")
    s = get_system(m)
    res = s.simulate(0.5, 0.01, integrator="rk4")
    assert res.meta["constraint_violation_max"]["position"] < 1e-5 and np.ptp(res.q[:, 0]) > 0.5
    kkt = KKT(m.to_dict())
    for k in (0, 25, 50):
        ud_ref, _ = kkt.forward(res.q[k], res.u[k], baumgarte=(s.kernel.alpha, s.kernel.beta))
        assert rel_err(s.forward_dynamics(res.q[k], res.u[k]), ud_ref) < 1e-6, k


def test_other_equality_constraints_are_refused_by_name(tmp_path, capsys):
    """Joint and fixed-tendon equalities are couplings (tests/model/test_couplings.py); site-based ones are refused."""
    p = tmp_path / "coupled.xml"
    p.write_text(open(os.path.join(HERE, "four_bar_connect.xml")).read().replace(
        '<connect name="close" body1="coupler" body2="rocker" anchor="0 0 1"/>',
        '<joint name="gear" joint1="j1" joint2="j3" polycoef="0 2 0 0 0"/>'))
    assert main(["check", str(p)]) == 0
    assert [c.name for c in codegen.load_model(str(p)).couplings] == ["gear"]
    p.write_text(open(os.path.join(HERE, "four_bar_connect.xml")).read().replace(
        '<connect name="close" body1="coupler" body2="rocker" anchor="0 0 1"/>',
        '<connect name="pin" site1="s1" site2="s2"/>').replace(
        '</body>', '<site name="s1"/><site name="s2" pos="0.1 0 0"/></body>', 1))
    assert main(["check", str(p)]) == 2
    err = capsys.readouterr().err
    assert "the connect equality constraint 'pin'" in err and "Traceback" not in err
