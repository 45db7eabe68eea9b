"""MuJoCo's single-step integrators (euler, implicitfast, implicit; the engine's implicit_steps) and rk4 against
``mj_step`` itself, built from the same MJCF files (contacts and constraints off in MuJoCo, limits off in ours):

* 1,000 steps from a random state with random controls held: every state after every step equals MuJoCo's to
  1e-9 relative, on tests/model/mjcf/actuated_arm.xml (armature, joint dampers and a spring, a position servo with
  kv and a force range, a velocity servo, an affine actuator, a tendon motor with the tendon's own damper),
  examples/activation_arm.xml (filter, integrator and filterexact activations: MuJoCo's exact filter update) and
  gymnasium's ant as it ships (a free base with children, armature, motors), and a free body alone, whose
  implicitfast step MuJoCo takes with its gyroscopic partials (mjd_freeMhat);
* an MJCF file's timestep and integrator are the defaults of simulate, rollout and ``mbgen simulate`` (meta says
  so), overridable; rollout equals simulate;
* a stiff file (damping / inertia = 2.5e5 1/s, as TIAGo's wrist): rk4 diverges at 1 ms, implicitfast runs at 1 ms
  and 10 ms, first-order close to a dopri5 run at 1e-12.
"""
import os

import mujoco
import numpy as np
import pytest

import codegen
from codegen.cli import main
from support.systems import EXAMPLES, get_system

HERE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "model", "mjcf")
MJ_NAMES = {"euler": "mjINT_EULER", "implicitfast": "mjINT_IMPLICITFAST", "implicit": "mjINT_IMPLICIT",
            "rk4": "mjINT_RK4"}


def mj_steps(mj, integrator, q0, u0, ctrl, n):
    """MuJoCo's states (q, u, act) after each of n mj_step calls of `integrator`, the controls held."""
    mj.opt.integrator = int(getattr(mujoco.mjtIntegrator, MJ_NAMES[integrator]))
    d = mujoco.MjData(mj)
    d.qpos[:], d.qvel[:], d.ctrl[:] = q0, u0, ctrl
    out = [np.concatenate([d.qpos, d.qvel, d.act])]
    for _ in range(n):
        mujoco.mj_step(mj, d)
        out.append(np.concatenate([d.qpos, d.qvel, d.act]))
    return np.array(out)


def ours(s, integrator, q0, u0, ctrl, n, h):
    res = s.simulate(n * h, dt=h, integrator=integrator, q0=q0, u0=u0, ctrl=ctrl if len(ctrl) else None,
                     limits=False)
    act = res.extra["act"] if s.na else np.zeros((len(res.t), 0))
    return np.hstack([res.q, res.u, act]), res


def mujoco_of(path):
    mj = mujoco.MjModel.from_xml_path(path)
    mj.opt.disableflags |= int(mujoco.mjtDisableBit.mjDSBL_CONTACT) | int(mujoco.mjtDisableBit.mjDSBL_CONSTRAINT)
    return mj


def assert_steps_equal(s, mj, integrator, q0, u0, ctrl, n=1000, tol=1e-9):
    X, res = ours(s, integrator, q0, u0, ctrl, n, mj.opt.timestep)
    R = mj_steps(mj, integrator, q0, u0, ctrl, n)
    err = np.abs(X - R).max(axis=1) / np.maximum(1.0, np.abs(R).max(axis=1))
    assert err.max() < tol, (integrator, int(np.argmax(err)), err.max())
    assert res.meta["integrator"] == integrator and res.meta["steps"] == n
    return res


@pytest.fixture(scope="module")
def arm():
    m = codegen.load_model(os.path.join(HERE, "actuated_arm.xml"))
    return get_system(m, derivatives=True), mujoco_of(os.path.join(HERE, "actuated_arm.xml"))


@pytest.mark.build
@pytest.mark.parametrize("integrator", ["euler", "implicitfast", "implicit", "rk4"])
def test_actuated_arm_steps_equal_mj_step(arm, integrator):
    s, mj = arm
    rng = np.random.default_rng(1)
    q0 = np.array(mj.qpos0) + rng.uniform(-0.3, 0.3, mj.nq)
    u0, c = rng.normal(size=mj.nv), rng.uniform(-0.8, 0.8, mj.nu)
    res = assert_steps_equal(s, mj, integrator, q0, u0, c)
    en = res.meta["energy"]             # the work of the dampers and actuators, by the step's own quadrature
    assert en["value"] < (1e-5 if integrator == "rk4" else 5e-2), en


@pytest.mark.build
@pytest.mark.parametrize("integrator", ["euler", "implicitfast", "implicit"])
def test_activations_follow_mujocos_update(integrator):
    """filter and integrator: act += h dact/dt; filterexact: act += dact/dt tau (1 - exp(-h / tau)); clamped."""
    path = str(EXAMPLES / "activation_arm.xml")
    s, mj = get_system(codegen.load_model(path), derivatives=True), mujoco_of(path)
    rng = np.random.default_rng(2)
    c = rng.uniform(-1.5, 1.5, mj.nu)
    assert_steps_equal(s, mj, integrator, np.array(mj.qpos0) + 0.2, rng.normal(size=mj.nv), c)


@pytest.mark.build
@pytest.mark.parametrize("integrator", ["euler", "implicitfast", "implicit"])
def test_gymnasium_ant_steps_equal_mj_step(integrator):
    """A free base with children, quaternion position update q exp(h w / 2) as mj_integratePos."""
    gym = pytest.importorskip("gymnasium")
    path = os.path.join(os.path.dirname(gym.__file__), "envs", "mujoco", "assets", "ant.xml")
    with pytest.warns(codegen.model.robotfiles.ModelWarning, match="contacts"):
        m = codegen.load_model(path, ignore_contacts=True)
    s, mj = get_system(m, derivatives=integrator == "implicit"), mujoco_of(path)
    rng = np.random.default_rng(3)
    q0 = np.array(mj.qpos0)
    q0[3:7] = rng.normal(size=4)
    q0[3:7] /= np.linalg.norm(q0[3:7])
    # 200 steps (2 s): without its contacts and limits the ant's legs wind up, and first-order steps then gain energy
    assert_steps_equal(s, mj, integrator, q0, 0.3 * rng.normal(size=mj.nv), rng.uniform(-0.3, 0.3, mj.nu), n=200)


@pytest.mark.build
@pytest.mark.parametrize("integrator", ["implicitfast", "euler"])
def test_a_lone_free_body_takes_its_gyroscopic_partials(tmp_path, integrator):
    """implicitfast solves a standalone free body's 6 x 6 block with the bias forces' velocity partials (a
    tumbling box about its intermediate axis, far from its centroid's origin), beside a damped pendulum."""
    p = tmp_path / "lone.xml"
    p.write_text("""<mujoco><option timestep="0.005"/><worldbody>
      <body name="pend" pos="0 0 1"><joint name="hinge" type="hinge" axis="0 1 0" damping="0.4"/>
        <geom type="capsule" fromto="0 0 0 0.4 0 0" size="0.03" contype="0" conaffinity="0"/></body>
      <body name="box" pos="1 0 1"><freejoint/>
        <geom type="box" size="0.05 0.2 0.1" pos="0.1 0.05 0" contype="0" conaffinity="0"/></body>
      </worldbody></mujoco>""")
    s, mj = get_system(codegen.load_model(str(p))), mujoco_of(str(p))
    q0 = np.array(mj.qpos0)
    u0 = np.array([1.0, 0.5, 0.0, -0.2, 0.3, 8.0, 0.1])
    assert_steps_equal(s, mj, integrator, q0, u0, np.zeros(0))


@pytest.mark.build
def test_the_mjcf_files_timestep_and_integrator_are_the_defaults(arm, tmp_path, capsys):
    s, mj = arm
    assert s.model.simulation == {"dt": 0.002, "integrator": "euler"}      # MuJoCo's default integrator
    res = s.simulate(0.02)
    assert (res.meta["integrator"], res.meta["dt"], len(res.t)) == ("euler", 0.002, 11)
    assert res.meta["integrator_choice"] == "euler (the model file's)"
    R = mj_steps(mj, "euler", mj.qpos0, np.zeros(mj.nv), np.zeros(mj.nu), 10)
    assert np.abs(np.hstack([res.q, res.u]) - R).max() < 1e-12
    q, u = s.rollout(np.array([mj.qpos0]), np.zeros((1, mj.nv)), 10)       # the file's step and integrator
    assert np.array_equal(q[0], res.q) and np.array_equal(u[0], res.u)
    assert s.simulate(0.02, dt=0.001, integrator="rk4").meta["integrator"] == "rk4"     # overridable
    out = tmp_path / "arm.npz"
    assert main(["simulate", os.path.join(HERE, "actuated_arm.xml"), "--t-end", "0.02", "--quiet", "--out",
                 str(out), "--cache-dir", str(s.build_info["cache_dir"])]) == 0
    with np.load(out, allow_pickle=True) as z:
        meta = z["meta"].item() if z["meta"].dtype == object else __import__("json").loads(str(z["meta"]))
    assert meta["integrator"] == "euler" and meta["dt"] == 0.002


@pytest.mark.build
def test_a_stiff_wrist_runs_at_a_millisecond():
    """damping / inertia = 2.5e5 1/s: rk4 diverges at 1 ms; implicitfast runs at 1 ms and 10 ms, within its first
    order of a dopri5 run at 1e-12 (which takes ~80,000 steps for 2 s)."""
    s = get_system(codegen.load_model(os.path.join(HERE, "stiff_wrist.xml")), derivatives=True)   # one build
    q0, u0 = np.array([0.5, 0.0]), np.array([0.0, 3.0])
    ref = s.simulate(2.0, dt=1e-3, integrator="dopri5", q0=q0, u0=u0, rtol=1e-12, atol=1e-12)
    with pytest.raises(codegen.SimulationDiverged, match="rk4"):
        s.simulate(2.0, dt=1e-3, integrator="rk4", q0=q0, u0=u0)
    for h, tol in ((1e-3, 5e-3), (1e-2, 5e-2)):
        r = s.simulate(2.0, dt=h, q0=q0, u0=u0)                            # the file's implicitfast
        k = int(round(h / 1e-3))
        assert r.meta["integrator"] == "implicitfast"
        assert np.abs(r.q - ref.q[::k]).max() < tol
    err = [np.abs(s.simulate(2.0, dt=h, q0=q0, u0=u0).q[-1] - ref.q[-1]).max() for h in (4e-3, 2e-3)]
    assert 1.5 < err[0] / err[1] < 2.5                                     # first order


def test_mjcf_integrators_map_to_ours(tmp_path):
    """Without a build: every MuJoCo integrator we have maps by name; Euler with eulerdamp disabled and one we do
    not have are named in a warning and leave the default; the model file's simulation section takes the steps for
    rigid models only."""
    base = ('<mujoco><option timestep="0.004" integrator="{}">{}</option><worldbody><body><joint type="hinge"/>'
            '<geom size="0.1" contype="0" conaffinity="0"/></body></worldbody></mujoco>')
    for theirs, name in (("Euler", "euler"), ("RK4", "rk4"), ("implicit", "implicit"),
                         ("implicitfast", "implicitfast")):
        p = tmp_path / f"{name}.xml"
        p.write_text(base.format(theirs, ""))
        assert codegen.load_model(str(p)).simulation == {"dt": 0.004, "integrator": name}
    p = tmp_path / "nodamp.xml"
    p.write_text(base.format("Euler", '<flag eulerdamp="disable"/>'))
    with pytest.warns(codegen.model.robotfiles.ModelWarning, match="eulerdamp"):
        assert codegen.load_model(str(p)).simulation == {"dt": 0.004}
    from codegen.model.core import ModelError
    from codegen.model.simulation import parse_simulation
    assert parse_simulation({"integrator": "implicitfast"}, "m.yaml", beams=False) == {"integrator": "implicitfast"}
    with pytest.raises(ModelError, match="rigid-body models"):
        parse_simulation({"integrator": "euler"}, "m.yaml", beams=True)


@pytest.mark.build
@pytest.mark.parametrize("integrator", ["euler", "implicitfast"])
def test_closed_loops_take_the_steps_with_their_constraint_forces(integrator):
    """A four-bar closed by an MJCF connect (a spherical cut joint): the cut joint's constraint forces are part of
    F = M udot (as MuJoCo's qfrc_constraint), Baumgarte keeps the loop closed at each step's end; implicit needs the
    loop's partials and is refused by name."""
    s = get_system(codegen.load_model(os.path.join(HERE, "four_bar_connect.xml")))
    ref = s.simulate(1.0, 0.002, integrator="dopri5", rtol=1e-10, atol=1e-12)
    res = s.simulate(1.0, 0.002, integrator=integrator)
    assert res.meta["constraint_violation_max"]["position"] < 5e-3         # Baumgarte under a first-order step
    assert np.abs(res.q - ref.q).max() < 0.05                              # first order at 2 ms
    res = s.simulate(1.0, 0.002, integrator=integrator, projection=True)  # back onto the loop after each step
    assert res.meta["constraint_violation_max"]["position"] < 1e-9
    with pytest.raises(ValueError, match="closed loops"):
        s.simulate(0.1, 0.002, integrator="implicit")


@pytest.mark.build
@pytest.mark.parametrize("algorithm", ["dense", "mstmm"])
def test_every_rigid_family_takes_the_steps(algorithm):
    """The engine's steps reach any family's forward dynamics and the engine's CRBA (the dense solve)."""
    s = get_system(codegen.load_model(os.path.join(HERE, "actuated_arm.xml")), algorithm)
    mj = mujoco_of(os.path.join(HERE, "actuated_arm.xml"))
    assert {"euler", "implicitfast", "implicit", "rosenbrock"} <= set(s.integrators)
    rng = np.random.default_rng(4)
    q0, u0, c = np.array(mj.qpos0) + 0.2, rng.normal(size=mj.nv), rng.uniform(-0.5, 0.5, mj.nu)
    for integrator in ("euler", "implicitfast"):
        assert_steps_equal(s, mj, integrator, q0, u0, c, n=300)
