"""The stiff, error-controlled ``rosenbrock`` integrator (ROS2 of Verwer et al. 1999 with the exact tangent
Jacobian; engine.pyx ``rosenbrock``):

* one step of a linear spring-damper joint is the method's stability function, x1 = R(hA) x0 with
  R(z) = (1 + (1 - 2 gamma) z) / (1 - gamma z)^2, gamma = 1 + 1/sqrt(2) (L-stable: R(-inf) = 0), for steps from
  h |lambda| = 0.01 to 1e4;
* on a floating base with a ball joint (quaternions stepped on the exponential map in tangent coordinates) the
  global error against dopri5 at 1e-13 follows the tolerance (second order: 100x the steps for 1e-4 of the error),
  within 20 tol;
* the stiff wrist (damping / inertia = 2.5e5 1/s): at the accuracy of dopri5 at rtol 1e-3 (which the stiffness holds
  to ~80,000 steps for 2 s) it takes under a tenth of the steps; the samples are its dense output.
"""
import os

import numpy as np
import pytest

import codegen
from support.systems import get_system

MJCF = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "model", "mjcf")
GAMMA = 1.0 + 1.0 / np.sqrt(2.0)


def stability(Z):
    """R(Z) of ROS2 for a matrix argument Z = h A."""
    n = len(Z)
    inv = np.linalg.inv(np.eye(n) - GAMMA * Z)
    return (np.eye(n) + (1 - 2 * GAMMA) * Z) @ inv @ inv


@pytest.mark.build
def test_one_step_is_the_stability_function(tmp_path):
    k, c, I = 400.0, 3.0, 0.05                 # q'' = -(k q + c q') / I: eigenvalues -30 +- 87i
    p = tmp_path / "spring.xml"
    p.write_text(f"""<mujoco><option gravity="0 0 0"/><worldbody><body>
      <joint name="j" type="hinge" axis="0 0 1" stiffness="{k}" damping="{c}"/>
      <inertial pos="0 0 0" mass="1" diaginertia="{I} {I} {I}"/></body></worldbody></mujoco>""")
    s = get_system(codegen.load_model(str(p)), derivatives=True)
    kern = s.derivative_kernel
    A = np.array([[0.0, 1.0], [-k / I, -c / I]])
    x0 = np.array([0.3, -2.0])
    for h in (1e-4, 1e-3, 1e-2, 0.1, 10.0):
        x = x0.copy()
        X, t, _, stats, nok = kern.run_rosenbrock(0.0, x, h, np.array([h]), 1e3, 1e3, h)
        assert nok == 1 and t == h and stats[1] == 1 and stats[2] == 0
        assert np.allclose(X[0], stability(h * A) @ x0, rtol=1e-12, atol=1e-14), h
    assert abs(stability(np.array([[-1e8]]))[0, 0]) < 1e-7                  # L-stable


@pytest.mark.build
def test_floating_base_error_follows_the_tolerance(tmp_path):
    p = tmp_path / "floating.xml"
    p.write_text("""<mujoco><option timestep="0.002"/><worldbody>
      <body name="torso" pos="0 0 1"><freejoint/><geom type="box" size="0.1 0.15 0.2" contype="0" conaffinity="0"/>
        <body name="arm" pos="0.1 0.2 0"><joint name="sh" type="ball"/>
          <geom type="capsule" fromto="0 0 0 0.3 0.1 0" size="0.04" contype="0" conaffinity="0"/>
          <body name="fore" pos="0.3 0.1 0"><joint name="el" type="hinge" axis="0 0 1" damping="1.5"/>
            <geom type="capsule" fromto="0 0 0 0.2 0 0.1" size="0.03" contype="0" conaffinity="0"/></body></body>
      </body></worldbody></mujoco>""")
    s = get_system(codegen.load_model(str(p)), derivatives=True)
    u0 = np.random.default_rng(0).normal(size=s.nv)
    ref = s.simulate(1.0, dt=1e-2, integrator="dopri5", u0=u0, rtol=1e-13, atol=1e-13)
    errs, steps = [], []
    for tol in (1e-4, 1e-6, 1e-8):
        r = s.simulate(1.0, dt=1e-2, integrator="rosenbrock", u0=u0, rtol=tol, atol=tol)
        assert r.meta["integrator"] == "rosenbrock" and r.meta["rtol"] == tol
        errs.append(np.abs(np.hstack([r.q, r.u]) - np.hstack([ref.q, ref.u])).max())
        steps.append(r.meta["steps"])
        assert errs[-1] < 20 * tol, (tol, errs[-1])
        assert np.allclose(np.linalg.norm(r.q[:, 3:7], axis=1), 1.0, atol=1e-12)
    assert 50 < errs[0] / errs[1] < 200 and 50 < errs[1] / errs[2] < 200     # the error follows the tolerance
    assert 7 < steps[1] / steps[0] < 14 and 7 < steps[2] / steps[1] < 14       # second order: 10x the steps


@pytest.mark.build
def test_the_stiff_wrist_takes_a_tenth_of_dopri5s_steps():
    s = get_system(codegen.load_model(os.path.join(MJCF, "stiff_wrist.xml")), derivatives=True)
    q0, u0 = np.array([0.5, 0.0]), np.array([0.0, 3.0])
    ref = s.simulate(2.0, dt=1e-2, integrator="dopri5", q0=q0, u0=u0, rtol=1e-12, atol=1e-12)
    d = s.simulate(2.0, dt=1e-2, integrator="dopri5", q0=q0, u0=u0, rtol=1e-3, atol=1e-3)
    r = s.simulate(2.0, dt=1e-2, integrator="rosenbrock", q0=q0, u0=u0, rtol=1e-5, atol=1e-5)
    err_d = np.abs(np.hstack([d.q, d.u]) - np.hstack([ref.q, ref.u])).max()
    err_r = np.abs(np.hstack([r.q, r.u]) - np.hstack([ref.q, ref.u])).max()
    assert err_r < err_d and r.meta["steps"] < d.meta["steps"] / 10, (err_r, err_d, r.meta["steps"], d.meta["steps"])


@pytest.mark.build
def test_tiago_as_it_ships_at_a_millisecond_and_by_rosenbrock():
    """example-robot-data's TIAGo (its wrist: damping / inertia = 2.5e5 1/s, rk4 stable below 1.1e-5 s): implicitfast
    at 1 ms stays within 1 % of the motion of an implicitfast run at 0.1 ms over 2 s; rosenbrock at rtol 1e-5 is as
    accurate as dopri5 at rtol 1e-5 against dopri5 at 1e-8, in under a tenth of its steps."""
    import importlib.metadata
    import warnings
    robots = importlib.metadata.distribution("example-robot-data").locate_file(
        "cmeel.prefix/share/example-robot-data/robots")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")                 # its transmissions (left out, named)
        m = codegen.load_model(os.path.join(str(robots), "tiago_description/robots/tiago_no_hand.urdf"))
    s = get_system(m, derivatives=True)
    fine = s.simulate(2.0, dt=1e-2, integrator="implicitfast", substeps=100)
    span = np.ptp(fine.q, axis=0).max()
    ms = s.simulate(2.0, dt=1e-3, integrator="implicitfast")
    assert span > 1.0 and np.abs(ms.q[::10] - fine.q).max() < 0.01 * span
    ref = s.simulate(2.0, dt=1e-2, integrator="dopri5", rtol=1e-8, atol=1e-10)
    d = s.simulate(2.0, dt=1e-2, integrator="dopri5", rtol=1e-5, atol=1e-7)
    r = s.simulate(2.0, dt=1e-2, integrator="rosenbrock", rtol=1e-5, atol=1e-7)
    err_d, err_r = np.abs(d.q - ref.q).max(), np.abs(r.q - ref.q).max()
    assert err_r < 1e-3 * span and r.meta["steps"] < d.meta["steps"] / 10, (err_r, err_d, r.meta["steps"],
                                                                           d.meta["steps"])
