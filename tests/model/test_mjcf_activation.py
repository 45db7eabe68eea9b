"""Activation dynamics of actuators (MuJoCo's dyntype integrator, filter, filterexact; codegen/model/actuators.py):
the state is x = (q, u, act). Against MuJoCo itself on examples/activation_arm.xml (a filter on a hinge, an
integrator with an affine bias and an activation range, a filterexact on a fixed tendon, a plain motor):

* mj_forward's qacc and act_dot at random states, activations and controls (contacts and constraints off): 1e-12;
* MuJoCo's RK4 rollout of 1 s with random controls held over each step, q, u and act: 1e-6 (filterexact at rest:
  MuJoCo's RK4 applies the exponential update to the averaged rate, ours integrates the ODE); rollout(ctrl=)
  equals simulate(ctrl=) bit for bit, act0 starts the activations, the results name them;
* the activation stays in actrange; the energy balance counts the actuators' work;
* derivatives at fixed activations against central differences, linearize and rollout sensitivities with the act
  rows against differences of the dynamics and of rollout; the YAML
  form round-trips; bad fields exit 2 (unmodelled dynamics and actearly: test_mjcf_actuators.py)."""
import os
import re

import mujoco
import numpy as np
import pytest
import yaml

import codegen
from codegen.cli import main
from support.systems import EXAMPLES, get_system, rel_err

ARM = str(EXAMPLES / "activation_arm.xml")


@pytest.fixture(scope="module")
def arm():
    m = codegen.load_model(ARM)
    mj = mujoco.MjModel.from_xml_path(ARM)
    mj.opt.disableflags |= int(mujoco.mjtDisableBit.mjDSBL_CONTACT) | int(mujoco.mjtDisableBit.mjDSBL_CONSTRAINT)
    return m, mj, get_system(m, derivatives=True)      # one module: the derivative tests use it too


@pytest.mark.build
def test_imported_with_their_dynamics(arm, capsys):
    m, mj, s = arm
    assert [(a.name, a.dynamics, a.timeconst) for a in m.actuators] == [
        ("shoulder_filter", "filter", 0.05), ("elbow_integrator", "integrator", 0.0),
        ("coupler_exact", "filterexact", 0.1), ("wrist_motor", "none", 0.0)]
    assert m.actuators[1].actrange.tolist() == [-0.5, 0.8] and m.actuators[0].actrange is None
    assert s.na == mj.na == 3 and s.act_names == ["shoulder_filter", "elbow_integrator", "coupler_exact"]
    assert main(["check", ARM]) == 0
    out = capsys.readouterr().out
    assert "actuator 0 shoulder_filter: general on shoulder, gear 1, ctrlrange [-1.0, 1.0], activation filter 0.05 s" \
        in out and "activation integrator in [-0.5, 0.8]" in out and "wrist_motor: general on wrist, gear 2\n" in out


@pytest.mark.build
def test_accelerations_and_activation_rates_match_mj_forward(arm):
    m, mj, s = arm
    d = mujoco.MjData(mj)
    rng = np.random.default_rng(3)
    try:
        for _ in range(12):
            q, u = rng.uniform(-1, 1, m.nq), rng.normal(size=m.nv)
            c, act = rng.uniform(-1.5, 1.5, mj.nu), rng.uniform(-0.45, 0.75, mj.na)    # act inside actrange
            d.qpos[:], d.qvel[:], d.ctrl[:], d.act[:] = q, u, c, act
            mujoco.mj_forward(mj, d)
            s.set_act(act)
            assert rel_err(s.forward_dynamics(q, u, None, ctrl=c), d.qacc) < 1e-12
            assert rel_err(s.act_rates(q, u, ctrl=c), d.act_dot) < 1e-12
            f, _ = s.kernel.actuator_forces_at(np.r_[q, u, act][None], [0.0])
            assert rel_err(f[0], d.actuator_force) < 1e-12
    finally:
        s.set_act(None)
    with pytest.raises(ValueError, match="expected 3 finite activations"):
        s.set_act([0.0, np.nan, 0.0])


@pytest.mark.build
def test_rollout_matches_mujoco_and_simulate(arm):
    from mujoco import rollout
    m, mj, s = arm
    dt, n = 0.002, 500
    mjr = mujoco.MjModel.from_xml_path(ARM)
    mjr.opt.disableflags = mj.opt.disableflags
    mjr.opt.integrator, mjr.opt.timestep = mujoco.mjtIntegrator.mjINT_RK4, dt
    rng = np.random.default_rng(4)
    q0, u0 = m.initial_state()
    # filterexact left at rest: MuJoCo applies its exponential update to the RK4-averaged rate, a first-order
    # scheme in h / timeconst (6e-5 after one step here); ours integrates the ODE (checked against the exponential
    # in test_activation_stays_in_its_range), and both agree with MuJoCo's act_dot at every state above
    a0 = np.array([0.1, -0.2, 0.0])
    C = np.repeat(rng.uniform(-0.3, 0.3, (10, mj.nu)), n // 10, axis=0)[None]   # the integrator stays in actrange
    C[..., 2] = 0.0
    spec = mujoco.mjtState.mjSTATE_FULLPHYSICS
    d = mujoco.MjData(mjr)
    d.qpos[:], d.qvel[:], d.act[:] = q0, u0, a0
    x0 = np.empty(mujoco.mj_stateSize(mjr, spec))
    mujoco.mj_getState(mjr, d, x0, spec)
    st, _ = rollout.rollout(mjr, d, x0[None], C)
    qs, us, acts = s.rollout(q0[None], u0[None], n, dt, ctrl=C, act0=a0[None], return_act=True, integrator="rk4")
    nq, nv = m.nq, m.nv
    assert np.abs(qs[0, 1:] - st[0, :, 1:1 + nq]).max() < 1e-6
    assert np.abs(us[0, 1:] - st[0, :, 1 + nq:1 + nq + nv]).max() < 1e-6
    assert np.abs(acts[0, 1:] - st[0, :, 1 + nq + nv:1 + nq + nv + mj.na]).max() < 1e-6
    assert np.array_equal(acts[0, 0], a0)
    # simulate and rollout take the same steps (activations from 0): bit for bit; the results name them
    c = C[0, 0]
    res = s.simulate(0.2, dt, ctrl=c, integrator="rk4")
    qs, us, acts = s.rollout(q0[None], u0[None], 100, dt, ctrl=np.tile(c, (1, 100, 1)), return_act=True,
                              integrator="rk4")
    assert np.array_equal(res.q, qs[0]) and np.array_equal(res.u, us[0]) and np.array_equal(res.extra["act"], acts[0])
    assert res.extra["act_names"].tolist() == s.act_names and res.extra["act"].shape == (len(res.t), 3)
    assert res.meta["energy"]["value"] < 1e-6          # the actuators' work is counted
    with pytest.raises(ValueError, match="act0"):
        s.rollout(q0[None], u0[None], 3, dt, act0=np.zeros((2, 3)))


@pytest.mark.build
def test_activation_stays_in_its_range(arm):
    """The integrator's activation under a control that drives it out of [-0.5, 0.8]: it stops at 0.8 (dopri5 and
    rk4), and filters relax to their controls with their time constants."""
    m, mj, s = arm
    for integrator in ("rk4", "dopri5"):
        res = s.simulate(2.0, 0.002, integrator=integrator, ctrl=np.array([0.5, 1.0, -0.4, 0.0]))
        act = res.extra["act"]
        assert act[:, 1].max() <= 0.8 + 1e-9 and act[-1, 1] == pytest.approx(0.8, abs=1e-9)
        assert act[-1, 0] == pytest.approx(0.5 * (1 - np.exp(-2.0 / 0.05)), rel=1e-6)
        assert act[-1, 2] == pytest.approx(-0.4 * (1 - np.exp(-2.0 / 0.1)), rel=1e-6)
        k = np.searchsorted(res.t, 0.4)
        assert act[k, 0] == pytest.approx(0.5 * (1 - np.exp(-res.t[k] / 0.05)), rel=1e-6)


@pytest.mark.build
def test_derivatives_at_fixed_activations_and_refusals(arm):
    """forward_dynamics_derivatives at the activations of set_act against central differences (the actuators'
    gain times act, their bias in L and V)."""
    m, mj, s = arm
    rng = np.random.default_rng(6)
    q, u = rng.uniform(-1, 1, m.nq), rng.normal(size=m.nv)
    c = np.array([0.4, -0.3, 0.2, 0.5])
    s.set_act([0.3, -0.2, 0.1])
    try:
        dq, du, Minv = s.forward_dynamics_derivatives(q, u, None, 0.0, ctrl=c)
        h = 1e-6
        for k in range(m.nv):
            e = np.eye(m.nv)[k] * h
            fd_q = (s.forward_dynamics(q + e, u, ctrl=c) - s.forward_dynamics(q - e, u, ctrl=c)) / (2 * h)
            fd_u = (s.forward_dynamics(q, u + e, ctrl=c) - s.forward_dynamics(q, u - e, ctrl=c)) / (2 * h)
            assert rel_err(dq[:, k], fd_q) < 1e-6 and rel_err(du[:, k], fd_u) < 1e-6, k
    finally:
        s.set_act(None)


@pytest.mark.build
def test_linearize_and_sensitivities_carry_the_activations(arm):
    """x = (q, u, act): the continuous A against central differences of (u, udot, dact/dt) (the arm's hinges: the
    tangent coordinates are the coordinates), the RK4 step's against differences of rollout, and rollout's
    sensitivities along 20 steps against differences of the whole rollout; activation_jacobian's columns."""
    m, mj, s = arm
    nv, na = m.nv, s.na
    rng = np.random.default_rng(9)
    q, u, act = rng.uniform(-0.5, 0.5, m.nq), rng.normal(size=nv), np.array([0.3, -0.2, 0.1])

    def f(x):
        s.set_act(x[2 * nv:])
        return np.concatenate([x[nv:2 * nv], s.forward_dynamics(x[:nv], x[nv:2 * nv]),
                               s.act_rates(x[:nv], x[nv:2 * nv])])
    x0 = np.concatenate([q, u, act])
    s.set_act(act)
    try:
        A, B = s.linearize(q, u)
        T, D, C = s.activation_jacobian(q, u)
        h = 1e-6
        Afd = np.column_stack([(f(x0 + h * e) - f(x0 - h * e)) / (2 * h) for e in np.eye(x0.size)])
        assert A.shape == (2 * nv + na, 2 * nv + na) and B.shape == (2 * nv + na, nv)
        assert rel_err(A, Afd) < 1e-6 and np.all(D == [-20.0, 0.0, -10.0]) and C[1, 1] == 1.0
        assert np.abs(A[2 * nv:, :2 * nv]).max() == 0 and np.abs(T).max() > 0.1
        s.set_act(act)
        Ad, Bd = s.linearize(q, u, dt=1e-3)
    finally:
        s.set_act(None)

    def step(x, n=1, dt=1e-3):
        qs, us, acts = s.rollout(x[None, :nv], x[None, nv:2 * nv], n, dt, act0=x[None, 2 * nv:], return_act=True,
                                  integrator="rk4")
        return np.concatenate([qs[0, -1], us[0, -1], acts[0, -1]])
    h = 1e-6
    Afd = np.column_stack([(step(x0 + h * e) - step(x0 - h * e)) / (2 * h) for e in np.eye(x0.size)])
    assert rel_err(Ad, Afd) < 1e-6
    qs, us, As, Bs, acts = s.rollout(q[None], u[None], 20, 1e-3, sensitivities=True, act0=act[None], return_act=True)
    assert As.shape == (1, 20, 2 * nv + na, 2 * nv + na) and rel_err(As[0, 0], Ad) < 1e-12
    P = np.eye(x0.size)
    for k in range(20):
        P = As[0, k] @ P
    Pfd = np.column_stack([(step(x0 + h * e, 20) - step(x0 - h * e, 20)) / (2 * h) for e in np.eye(x0.size)])
    assert rel_err(P, Pfd) < 1e-6 and rel_err(acts[0, -1], step(x0, 20)[2 * nv:]) < 1e-15


@pytest.mark.build
def test_yaml_form_round_trips(arm, tmp_path):
    m, _, _ = arm
    d = m.to_dict()
    acts = d["actuators"]
    assert acts[0]["dynamics"] == "filter" and acts[0]["timeconst"] == 0.05 and acts[1]["actrange"] == [-0.5, 0.8]
    assert "dynamics" not in acts[3]
    m2 = codegen.model_from_dict(yaml.safe_load(yaml.safe_dump(d)))
    assert [(a.dynamics, a.timeconst) for a in m2.actuators] == [(a.dynamics, a.timeconst) for a in m.actuators]
    assert m2.topology_key() == m.topology_key()


@pytest.mark.parametrize("change, field, words", [
    ({"dynamics": "muscle"}, "dynamics", "unknown activation dynamics"),
    ({"dynamics": "filter"}, "timeconst", "needs a time constant > 0"),
    ({"timeconst": 0.1}, "dynamics", "belong to an actuator with activation dynamics"),
    ({"dynamics": "integrator", "actrange": [1.0, -1.0]}, "actrange", "low <= high"),
    ({"dynamics": "filter", "timeconst": -1.0}, "timeconst", "timeconst"),
])
def test_bad_activation_fields_exit_2(tmp_path, capsys, change, field, words):
    with open(EXAMPLES / "cartpole.yaml") as f:
        d = yaml.safe_load(f)
    d["actuators"] = [dict({"name": "push", "joint": d["joints"][0]["name"]}, **change)]
    p = tmp_path / "bad.yaml"
    p.write_text(yaml.safe_dump(d))
    assert main(["check", str(p)]) == 2
    err = capsys.readouterr().err
    assert re.search(rf"actuators\[(0|push)\]\.{field}: ", err) and words in err and "Traceback" not in err, err
