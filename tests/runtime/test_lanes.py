"""SIMD across states (issue 24): forward_dynamics_batch, inverse_dynamics_batch and rollout run System.lanes
states per pass (templates/c/lanes.c.j2). Against the single calls on the C export's models (every joint type, fixed
and floating base, joint spring-dampers, sine/step/table joint forces, the three reference points): to round-off,
any batch size (partial groups), any thread count; simd=False is bitwise the single calls."""
import os
import subprocess
import sys

import numpy as np
import pytest

from codegen.models import chain, random_state
from support.c_export import CASES
from support.systems import get_system, rel_err

pytestmark = pytest.mark.build          # every test here compiles or loads a kernel (tests/conftest.py)


def states(s, B, seed):
    """B random states (unit quaternions) and forces."""
    rng = np.random.default_rng(seed)
    Q = np.array([random_state(s.model, rng)[0] for _ in range(B)])
    return Q, rng.normal(0, 1.0, (B, s.nv)), rng.normal(0, 2.0, (B, s.nv))


@pytest.fixture(scope="module", params=sorted(CASES))
def lane_sys(request):
    return get_system(CASES[request.param](), "recursive", lanes=True, ref_point=request.param)


def test_the_c_export_models_have_lanes(lane_sys):
    assert lane_sys.lanes in (2, 4)


@pytest.mark.parametrize("B", [1, 3, 9])
def test_batch_in_lanes_matches_single_calls(lane_sys, B):
    s = lane_sys
    Q, U, TAU = states(s, B, B)
    ref = np.array([s.forward_dynamics(Q[b], U[b], TAU[b], 0.7) for b in range(B)])
    got = s.forward_dynamics_batch(Q, U, TAU, t=0.7, threads=1)
    assert rel_err(got, ref) < 1e-12
    if B % s.lanes == 1:                                            # a row alone: one state per pass
        assert np.array_equal(got[-1], ref[-1])
    assert np.array_equal(s.forward_dynamics_batch(Q, U, TAU, t=0.7, threads=2), got)     # threads: same numbers
    assert np.array_equal(s.forward_dynamics_batch(Q, U, TAU, t=0.7, threads=1, simd=False), ref)
    assert rel_err(s.forward_dynamics_batch(Q, U, t=0.7, threads=1),
                   [s.forward_dynamics(Q[b], U[b], None, 0.7) for b in range(B)]) < 1e-12


@pytest.mark.parametrize("B", [1, 6])
def test_inverse_batch_in_lanes_matches_single_calls(lane_sys, B):
    """The RNEA in lanes against inverse_dynamics, and the round trip through the forward batch."""
    s = lane_sys
    Q, U, A = states(s, B, 20 + B)
    ref = np.array([s.inverse_dynamics(Q[b], U[b], A[b], t=0.3) for b in range(B)])
    got = s.inverse_dynamics_batch(Q, U, A, t=0.3, threads=1)
    assert rel_err(got, ref) < 1e-12
    assert np.array_equal(s.inverse_dynamics_batch(Q, U, A, t=0.3, threads=2), got)
    assert np.array_equal(s.inverse_dynamics_batch(Q, U, A, t=0.3, threads=1, simd=False), ref)
    assert rel_err(s.forward_dynamics_batch(Q, U, got, t=0.3), A) < 1e-9


def test_rollout_in_lanes_matches_simulate(lane_sys):
    """RK4 in lanes (quaternions renormalised lane by lane) against the single-state loop, with forces per step."""
    s = lane_sys
    Q, U, _ = states(s, 5, 11)
    tau = np.random.default_rng(12).normal(0, 1, (5, 40, s.nv))
    q1, u1 = s.rollout(Q, U, 40, 1e-3, tau=tau, threads=1)
    q0, u0 = s.rollout(Q, U, 40, 1e-3, tau=tau, threads=1, simd=False)
    assert rel_err(q1, q0) < 1e-11 and rel_err(u1, u0) < 1e-11
    q2, u2 = s.rollout(Q, U, 40, 1e-3, tau=tau, threads=2)
    assert np.array_equal(q2, q1) and np.array_equal(u2, u1)
    res = s.simulate(0.04, 1e-3, "rk4", q0=Q[3], u0=U[3])
    assert np.array_equal(res.q, s.rollout(Q[3:4], U[3:4], 40, 1e-3, simd=False)[0][0])
    assert rel_err(s.rollout(Q[3:4], U[3:4], 40, 1e-3)[0][0], res.q) < 1e-11


def test_a_diverging_lane_stops_alone(lane_sys):
    """One rollout of a pass diverges: its rows from the first non-finite state are NaN and it is named; the
    others in its pass go on unharmed."""
    s = lane_sys
    Q, U, _ = states(s, 3, 13)
    U[1] *= 1e300
    with pytest.warns(RuntimeWarning, match="1 of 3 rollouts diverged .*rollout 1"):
        qs, us = s.rollout(Q, U, 5, 1e-3, threads=1)
    q0, _ = s.rollout(Q[[0, 2]], U[[0, 2]], 5, 1e-3, threads=1)
    assert np.array_equal(qs[[0, 2]], q0) and np.all(np.isfinite(q0))
    assert np.all(np.isnan(qs[1, 1:]))


def test_new_numbers_reach_the_lanes():
    """update_model's numbers (same topology) reach every lane before the next batch."""
    s = get_system(CASES["origin"](), lanes=True, ref_point="origin")
    Q, U, _ = states(s, 4, 14)
    heavy = CASES["origin"]()
    for b in heavy.bodies:
        b.mass *= 2.5
    try:
        before = s.forward_dynamics_batch(Q, U, threads=1)
        s.update_model(heavy)
        ref = np.array([s.forward_dynamics(Q[b], U[b]) for b in range(4)])
        assert rel_err(s.forward_dynamics_batch(Q, U, threads=1), ref) < 1e-12 and rel_err(ref, before) > 1e-3
    finally:
        s.update_model(CASES["origin"]())
    assert rel_err(s.forward_dynamics_batch(Q, U, threads=1), [s.forward_dynamics(Q[b], U[b]) for b in range(4)]) < 1e-12


def test_what_the_lanes_lack_runs_one_state_per_pass():
    """A force hook and a state feedback law are not in the lanes: those batches run one state per pass."""
    s = get_system(chain(3), lanes=True, ref_point="origin")      # (set_feedback: no quaternion joints)
    Q, U, _ = states(s, 5, 15)
    K = np.random.default_rng(16).normal(0, 1, (s.nv, 2 * s.nv))
    for on, off in ((lambda: s.set_hook(lambda t, q, u: -0.5 * u), lambda: s.set_hook(None)),
                    (lambda: s.set_feedback(K), lambda: s.set_feedback(None))):
        try:
            on()
            ref = [s.forward_dynamics(Q[b], U[b]) for b in range(5)]
            assert np.array_equal(s.forward_dynamics_batch(Q, U, threads=1), ref)
            q1, _ = s.rollout(Q, U, 3, 1e-3, threads=1)
            assert np.array_equal(q1, s.rollout(Q, U, 3, 1e-3, threads=1, simd=False)[0])
        finally:
            off()


def test_a_portable_build_has_two_lanes_and_libm_sin_cos():
    """MBGEN_NATIVE=0 builds for the compiler's default target (SSE2, no AVX): 2 lanes, sin and cos lane by lane
    through libm (no vector math library): the same numbers to round-off."""
    code = ("import numpy as np, codegen; from codegen.models import chain; s = codegen.build(chain(3), ref_point='origin');"
            "rng = np.random.default_rng(1); Q, U = rng.normal(0, 1, (5, 3)), rng.normal(0, 1, (5, 3));"
            "ref = np.array([s.forward_dynamics(Q[b], U[b]) for b in range(5)]);"
            "print(s.lanes, np.max(np.abs(s.forward_dynamics_batch(Q, U, threads=1) - ref)) / np.max(np.abs(ref)))")
    out = subprocess.run([sys.executable, "-c", code], env=dict(os.environ, MBGEN_NATIVE="0", MBGEN_LANES="1"), capture_output=True,
                         text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    lanes, err = out.stdout.split()
    assert lanes == "2" and float(err) < 1e-12
