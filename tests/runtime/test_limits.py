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
    return m, get_system(m)


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
