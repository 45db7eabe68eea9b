"""Joint limits (templates/shared/limits.pyx.j2): a compliant one-sided spring-damper per limited coordinate with
MuJoCo's solref time constant T and damping ratio zeta, k = m / (T zeta)^2, c = 2 m / T (m: the coordinate's M_ii
at the initial state). Its physics, not a peer's numbers: a pendulum released against a limit stops there with a
penetration below the critically damped bound, its mechanical energy never grows, the limit never pulls; the
derivatives see the active limit; limits=False turns them off; files and importers carry them."""
import numpy as np
import pytest
import yaml

import codegen
from codegen.cli import main
from support.systems import get_system

PEND = {"name": "limited_pendulum", "gravity": [0, -9.81, 0],
        "bodies": [{"name": "rod", "mass": 1.0, "com": [0.5, 0, 0], "inertia": [0.001, 0.0833, 0.0833]}],
        "joints": [{"name": "pin", "type": "revolute", "parent": "ground", "child": "rod", "axis": [0, 0, 1],
                    "limits": [-1.0, 0.5], "q0": 0.0}]}


@pytest.fixture(scope="module")
def pend():
    m = codegen.model_from_dict(PEND)
    return m, get_system(m, derivatives=True)          # one build: the derivative passes are a superset


@pytest.mark.build
def test_released_against_a_limit_it_stops_there(pend):
    m, s = pend
    res = s.simulate(3.0, 0.001)
    T = 0.02                                           # the default time constant (damping ratio 1)
    m_eff = 1.0 * 0.5 ** 2 + 0.0833                    # M_ii at q0: m l^2 + J
    k = m_eff / T ** 2
    v_hit = np.sqrt(2 * 9.81 * 0.5 * np.sin(1.0) / m_eff)          # speed at the limit (energy)
    static = 9.81 * 0.5 * np.cos(1.0) / k                           # gravity's torque over k
    bound = v_hit * T / np.e + static                  # critically damped: x_max = v T / e, plus the static part
    pen = -1.0 - res.q[:, 0].min()
    assert 0 < pen < 1.05 * bound, (pen, bound)
    assert abs(res.q[-1, 0] - (-1.0 - static)) < 1e-4 and abs(res.u[-1, 0]) < 1e-4     # at rest on the limit
    E = res.energy_kinetic + res.energy_potential
    assert E.max() <= E[0] + 1e-9                      # the limit never adds energy
    f = res.extra["limit_force"][:, 0]
    assert res.extra["limit_names"].tolist() == ["pin.angle"] and np.all(f >= 0)     # pushes up, never pulls
    assert np.all(f[res.q[:, 0] > -1.0] == 0) and res.meta["limits"]["active_samples"] > 2000
    # limits=False: the pendulum swings through
    free = s.simulate(1.0, 0.001, limits=False)
    assert free.q[:, 0].min() < -1.5 and not free.extra["limit_force"].any()
    assert free.meta["limits"] == {"enforced": False, "active_samples": 0}


@pytest.mark.build
def test_derivatives_see_the_active_limit(pend):
    m, s = pend
    q, u = np.array([-1.01]), np.array([-0.3])         # inside the lower limit, moving in: active
    Aq, Au, _ = s.forward_dynamics_derivatives(q, u)
    h = 1e-7
    fq = (s.forward_dynamics(q + h, u) - s.forward_dynamics(q - h, u)) / (2 * h)
    fu = (s.forward_dynamics(q, u + h) - s.forward_dynamics(q, u - h)) / (2 * h)
    assert abs(Aq[0, 0] - fq[0]) < 1e-5 * abs(fq[0]) and abs(Au[0, 0] - fu[0]) < 1e-5 * abs(fu[0])
    assert Aq[0, 0] < -100                             # the limit's stiffness dominates


def test_limits_in_files_and_refused_where_they_do_not_fit(tmp_path, capsys):
    m = codegen.model_from_dict(dict(PEND, joints=[dict(PEND["joints"][0], limit_solref=[0.05, 0.7])]))
    assert m.joints[0].limits.tolist() == [[-1.0, 0.5]] and m.joints[0].limit_solref.tolist() == [0.05, 0.7]
    back = codegen.model_from_dict(m.to_dict())
    assert back.joints[0].limits.tolist() == [[-1.0, 0.5]] and back.joints[0].limit_solref.tolist() == [0.05, 0.7]
    for change, words in [({"limits": [0.5, -1.0]}, "lower must be below upper"),
                          ({"limits": [[0, 1], [0, 1]]}, "expected 1 pair(s)"),
                          ({"limit_solref": [0.0, 1.0]}, "must be > 0"),
                          ({"type": "spherical", "q0": None, "axis": None}, "a spherical joint takes no limits")]:
        d = yaml.safe_load(yaml.safe_dump(PEND))
        d["joints"][0].update(change)
        f = tmp_path / "bad.yaml"
        f.write_text(yaml.safe_dump(d))
        assert main(["check", str(f)]) == 2
        err = capsys.readouterr().err
        assert words in err and "joints[pin]" in err and "Traceback" not in err, err


def test_mjcf_ranges_become_limits(tmp_path):
    p = tmp_path / "m.xml"
    p.write_text('<mujoco><compiler angle="radian"/><worldbody><body name="a"><joint name="h" type="hinge" '
                 'range="-0.5 0.7" limited="true" solreflimit="0.04 0.9"/><geom size="0.1" contype="0" conaffinity="0"/>'
                 '<body name="b" pos="0.3 0 0"><joint name="s" type="slide"/><geom size="0.1" contype="0" '
                 'conaffinity="0"/></body></body></worldbody></mujoco>')
    m = codegen.load_model(p)
    h, sl = m.joints
    assert h.limits.tolist() == [[-0.5, 0.7]] and np.allclose(h.limit_solref, [0.04, 0.9])
    assert sl.limits is None


@pytest.mark.build
def test_a_tendon_limit_holds_two_joints_together():
    """A fixed tendon L = q2 - q1 with limits [-0.3, 0.3] on a double pendulum dropped from rest: L stays within its
    range up to the compliant limit's penetration, the limit pushes only while L is past it, the energy never grows,
    and the tendon's length and force are in the results."""
    d = {"name": "tendon_pendulum", "gravity": [0, -9.81, 0],
         "bodies": [{"name": "a", "mass": 1.0, "com": [0.5, 0, 0], "inertia": [0.001, 0.08, 0.08]},
                    {"name": "b", "mass": 1.0, "com": [0.5, 0, 0], "inertia": [0.001, 0.08, 0.08]}],
         "joints": [{"name": "j1", "type": "revolute", "parent": "ground", "child": "a", "q0": 0.0},
                    {"name": "j2", "type": "revolute", "parent": "a", "child": "b", "parent_frame": {"pos": [1, 0, 0]},
                     "q0": 0.0}],
         "tendons": [{"name": "bend", "joints": [{"joint": "j1", "coef": -1}, {"joint": "j2", "coef": 1}],
                      "limits": [-0.3, 0.3]}]}
    m = codegen.model_from_dict(d)
    s = get_system(m)
    res = s.simulate(2.0, 0.001)
    L = res.extra["tendon_length"][:, 0]
    assert np.allclose(L, res.q[:, 1] - res.q[:, 0])
    # held near the range: the compliant limit's time constant acts on the tendon's effective mass at q0
    # (1 / (c^T M^-1 c) = 0.04 kg m^2, k = 102 N m), the whipping pendulum presses on with gravity: 0.2 rad past it
    assert 0.3 < L.max() < 0.45 and -0.55 < L.min() < -0.3
    F = res.extra["tendon_force"][:, 0]
    assert np.all(F[np.abs(L) < 0.3] == 0)                               # no stiffness, no damping: only the limit
    E = res.energy_kinetic + res.energy_potential
    assert E.max() <= E[0] + 1e-9
    free = s.simulate(2.0, 0.001, limits=False)
    assert np.abs(free.extra["tendon_length"][:, 0]).max() > 3.0          # without limits it folds up


FRICTION = {"name": "friction_slider", "gravity": [0, 0, 0],
            "bodies": [{"name": "block", "mass": 2.0, "inertia": [0.01, 0.01, 0.01]}],
            "joints": [{"name": "slide", "type": "prismatic", "parent": "ground", "child": "block", "axis": [1, 0, 0],
                        "friction": 3.0}],
            "forces": [{"name": "push", "type": "joint_force", "joint": "slide", "value": 1.5}]}


@pytest.mark.build
@pytest.mark.parametrize("load", [1.5, 6.0])
def test_coulomb_friction_sticks_below_and_slides_above_its_force(load):
    """A 2 kg block with Coulomb friction F = 3 N under a constant push: below F it creeps at most at the stated
    regularisation speed v_s atanh(load / F) (v_s = F T / m = 0.03 m/s); above F it accelerates at
    (load - F) / m once sliding; the friction force never exceeds F and the energy balance holds."""
    d = yaml.safe_load(yaml.safe_dump(FRICTION))
    d["forces"][0]["value"] = load
    m = codegen.model_from_dict(d)
    s = get_system(m, derivatives=True)
    res = s.simulate(2.0, 0.001)
    f = res.extra["friction_force"][:, 0]
    assert res.extra["friction_names"].tolist() == ["slide.vel"] and np.all(np.abs(f) <= 3.0)
    v_s = 3.0 * 0.02 / 2.0
    if load < 3.0:
        creep = v_s * np.arctanh(load / 3.0)
        assert abs(res.u[-1, 0] - creep) < 1e-6 and res.q[-1, 0] < 2.0 * creep     # "stuck": 3 cm in 2 s
    else:
        a = np.gradient(res.u[:, 0], res.t)[-500:]
        assert np.allclose(a, (load - 3.0) / 2.0, rtol=1e-6)
    assert res.meta["energy"]["value"] < 1e-5
    q, u = np.array([0.1]), np.array([0.02])                   # inside the regularisation: the slope counts
    _, Au, _ = s.forward_dynamics_derivatives(q, u)
    h = 1e-7
    fu = (s.forward_dynamics(q, u + h) - s.forward_dynamics(q, u - h)) / (2 * h)
    assert abs(Au[0, 0] - fu[0]) < 1e-6 * abs(fu[0]) and Au[0, 0] < -10


ROD = {"name": "friction_rod", "gravity": [0, 0, -9.81],
       "bodies": [{"name": "rod", "mass": 1.0, "com": [0.5, 0, 0], "inertia": [1e-4, 1 / 12, 1 / 12]}],
       "joints": [{"name": "pivot", "type": "revolute", "parent": "ground", "child": "rod", "axis": [0, 1, 0],
                   "friction": 6.0}]}


@pytest.mark.build
@pytest.mark.parametrize("integrator", ["rosenbrock", "implicitfast"])
def test_friction_that_sticks_under_an_implicit_step(integrator):
    """A 1 kg, 1 m rod held horizontal by friction F = 6 N m against its gravity torque 4.9 N m: with the default
    v_s = F T / m it turns 0.38 rad in 1 s; with set_friction_velocity(1e-5) and an implicit step (its slope
    F / v_s = 6e5 N m s taken implicitly) it moves less than 1e-4 rad; with F = 2 N m it accelerates at
    (4.905 - 2) / I, I = 1/3 kg m^2, to 1 %."""
    s = get_system(codegen.model_from_dict(ROD), derivatives=True)
    try:
        assert abs(s.simulate(1.0, 1e-3, integrator="rk4").q[-1, 0]) > 0.3           # the explicit default creeps
        s.set_friction_velocity(1e-5)
        kw = {"rtol": 1e-6, "atol": 1e-8} if integrator == "rosenbrock" else {}
        res = s.simulate(1.0, 1e-3, integrator=integrator, **kw)
        assert abs(res.q[-1, 0]) < 1e-4 and np.all(np.abs(res.extra["friction_force"]) <= 6.0)
        with pytest.raises(ValueError, match="positive velocity"):
            s.set_friction_velocity(-1.0)
    finally:
        s.set_friction_velocity(None)
    d = yaml.safe_load(yaml.safe_dump(ROD))
    d["joints"][0]["friction"] = 2.0
    s2 = get_system(codegen.model_from_dict(d), derivatives=True)
    try:
        s2.set_friction_velocity(1e-5)
        res = s2.simulate(0.1, 1e-3, integrator=integrator, **({"rtol": 1e-8, "atol": 1e-10}
                                                                if integrator == "rosenbrock" else {}))
        a = (res.u[-1, 0] - res.u[50, 0]) / (res.t[-1] - res.t[50])          # sliding (the angle stays < 0.05 rad)
        assert abs(a - (0.5 * 9.81 - 2.0) * 3.0) < 0.01 * (0.5 * 9.81 - 2.0) * 3.0, a
    finally:
        s2.set_friction_velocity(None)
