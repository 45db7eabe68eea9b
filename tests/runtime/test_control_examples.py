"""The control examples on the cart-pole (examples/cartpole.yaml), in quick mode: discrete LQR compiled into the
integrator (examples/lqr_cartpole.py: set_feedback, linearize(dt)) and an iLQR swing-up on the step Jacobians of
rollout(sensitivities=True) (examples/ilqr_swingup.py)."""
import importlib.util
import math

import numpy as np
import pytest

import codegen
from support.systems import EXAMPLES, get_system

pytestmark = pytest.mark.build          # every test here compiles or loads a kernel (tests/conftest.py)


def load_example(name):
    spec = importlib.util.spec_from_file_location(f"example_{name}", EXAMPLES / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def cartpole():
    return get_system(codegen.load_model(EXAMPLES / "cartpole.yaml"), derivatives=True)


@pytest.fixture(scope="module")
def lqr():
    return load_example("lqr_cartpole")


@pytest.fixture(scope="module")
def ilqr():
    return load_example("ilqr_swingup")


def test_cartpole_model_upright_is_unstable(cartpole):
    """q = (x_cart, theta), theta = 0 upright: an equilibrium, open-loop unstable (one |eig| > 1 of the step)."""
    assert (cartpole.nq, cartpole.nv) == (2, 2)
    np.testing.assert_allclose(cartpole.forward_dynamics(np.zeros(2), np.zeros(2)), 0.0, atol=1e-14)
    Ad, _ = cartpole.linearize(np.zeros(2), np.zeros(2), dt=0.01)
    lam = np.abs(np.linalg.eigvals(Ad))
    assert lam.max() > 1.05 and np.isclose(lam.min(), math.exp(-0.01 * math.sqrt(33.634)), rtol=1e-3)
    # a push to +x tips the pole to theta > 0 (the pole's column of B is a consequence of the cart force)
    assert cartpole.forward_dynamics(np.zeros(2), np.zeros(2), np.array([1.0, 0.0]))[1] > 0


def test_lqr_returns_to_upright_within_the_predicted_settling_time(cartpole, lqr, tmp_path):
    r = lqr.run(quick=True, out=tmp_path, system=cartpole, verbose=False)
    assert np.abs(r["eig_open"]).max() > 1.0
    assert np.abs(r["eig_design"]).max() < 1.0 and np.abs(r["eig_compiled"]).max() < 1.0
    np.testing.assert_array_equal(r["K"][1], 0.0)                  # the pin is not actuated
    t, X, ts = r["t"], r["X"], r["ts_pred"]
    assert t[-1] >= 1.5 * ts
    late = t >= 1.5 * ts
    assert np.abs(X[late, 1]).max() < 1e-3                         # pole angle [rad]
    assert np.abs(X[late, 0]).max() < 1e-2                         # cart position [m]
    assert r["ts_meas"] <= 1.5 * ts
    # the linear prediction of the compiled closed loop (linearize with the feedback set) and of the design
    # model Ad - Bd K (force held over the step) follow the nonlinear run from 0.2 rad
    assert r["err_compiled"].max() < 0.05
    assert r["err_design"].max() < 0.1
    assert abs(r["ts_linear"] - r["ts_meas"]) < 0.1 * r["ts_meas"]
    # the force at the samples is the compiled law: the accelerations of the run are the model's with it
    k = int(np.searchsorted(t, 0.5))                               # accelerations of a few m/s^2, rad/s^2
    q, u, udot = X[k, :2], X[k, 2:], np.gradient(X[:, 2:], t, axis=0)[k]
    assert np.abs(cartpole.forward_dynamics(q, u) - udot).max() > 1.0
    np.testing.assert_allclose(cartpole.forward_dynamics(q, u, np.array([r["force"][k], 0.0])), udot,
                               rtol=0, atol=5e-3)
    assert (tmp_path / "lqr_cartpole.png").stat().st_size > 10_000 and r["gif"] is None
    # the example removes its gain again: a cart velocity alone accelerates nothing
    np.testing.assert_array_equal(cartpole.forward_dynamics(np.zeros(2), np.array([0.1, 0.0])), 0.0)
    # rollout runs the same compiled feedback: the same numbers as simulate
    cartpole.set_feedback(r["K"])
    try:
        q, u = cartpole.rollout(X[None, 0, :2], X[None, 0, 2:], len(t) - 1, t[1] - t[0], None, threads=1)
    finally:
        cartpole.set_feedback(None)
    np.testing.assert_allclose(np.concatenate([q[0], u[0]], axis=1), X, rtol=0, atol=1e-12)


def test_lqr_linear_prediction_is_exact_to_second_order(cartpole, lqr, tmp_path):
    """From 0.02 rad the linearised compiled closed loop matches to 1e-3 of each coordinate's range (its error
    falls as theta0^2); the zero-order-hold design model stays a few per cent off at any amplitude, as the
    compiled feedback acts at every RK4 stage."""
    small = lqr.run(quick=True, out=tmp_path, theta0=0.02, system=cartpole, verbose=False)
    large = lqr.run(quick=True, out=tmp_path, theta0=0.2, system=cartpole, verbose=False)
    assert small["err_compiled"].max() < 1e-3
    assert 50 < large["err_compiled"].max() / small["err_compiled"].max() < 200
    assert small["err_design"].max() < 0.1


def test_ilqr_swings_the_pole_up(cartpole, ilqr, tmp_path):
    sol = ilqr.run(quick=True, out=tmp_path, system=cartpole, verbose=False)
    c = sol["costs"]
    assert sol["iterations"] >= 20
    assert np.all(np.diff(c) <= 0)                                  # every accepted iterate lowers the cost
    assert c[-1] < 1e-2 * c[0]
    X, F = sol["X"], sol["F"]
    assert X[0, 1] == pytest.approx(math.pi) and X[:, 1].max() > 3.0
    err = X[-1] - sol["x_goal"]
    assert abs(err[1]) < 1e-3 and abs(err[0]) < 1e-2 and np.abs(err[2:]).max() < 1e-2
    # the force sequence on its own (open loop, one compiled rollout) reproduces the trajectory
    tau = np.zeros((1, len(F), 2))
    tau[0, :, 0] = F
    q, u = cartpole.rollout(X[None, 0, :2], X[None, 0, 2:], len(F), sol["dt"], tau)
    np.testing.assert_allclose(np.concatenate([q[0], u[0]], axis=1), X, rtol=0, atol=1e-12)
    assert (tmp_path / "ilqr_swingup.png").stat().st_size > 10_000


def test_examples_command_lines(lqr, ilqr, tmp_path):
    assert lqr.main(["--quick", "--out", str(tmp_path)]) == 0
    assert ilqr.main(["--quick", "--iterations", "5", "--out", str(tmp_path)]) == 0
    assert {p.name for p in tmp_path.iterdir()} == {"lqr_cartpole.png", "ilqr_swingup.png"}


def test_mjcf_inverted_pendulum_is_balanced_by_its_own_motor(tmp_path):
    """examples/mjcf_inverted_pendulum.py: gymnasium's file as it ships (motor, gear 100, ctrlrange [-3, 3],
    damping, limits); LQR on the motor through linearize and actuator_jacobian, run with a ctrl callable."""
    pytest.importorskip("gymnasium")
    out = load_example("mjcf_inverted_pendulum").run(quick=True, out=tmp_path, verbose=False)
    k, theta, c = out["k"], out["theta"], out["ctrl"]
    assert k.shape == (1, 4) and abs(theta[0] - 0.15) < 1e-12
    assert abs(theta[-1]) < 0.02 and np.all(np.abs(c) <= 3.0)           # balanced; ctrlrange held in compiled code
    assert (tmp_path / "mjcf_inverted_pendulum.png").exists()
