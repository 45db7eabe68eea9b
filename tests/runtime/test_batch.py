"""The lean and batched entry points: out= without allocation, forward_dynamics_batch and rollout on threads
(issue 14). Results must equal the per-call ones exactly (simd=False; in lanes to round-off: tests/runtime/
test_lanes.py), whatever the number of threads."""
import numpy as np
import pytest

from codegen.models import chain, humanoid
from support.systems import get_system, rel_err

pytestmark = pytest.mark.build          # every test here compiles or loads a kernel (tests/conftest.py)


@pytest.fixture(scope="module")
def chain_sys():
    return get_system(chain(5), ref_point="joint")


@pytest.fixture(scope="module")
def floating():
    return get_system(humanoid(), "dense")


def states(s, B, seed):
    rng = np.random.default_rng(seed)
    q0, u0 = s.model.initial_state()
    Q = q0 + rng.normal(0, 0.2, (B, s.nq))
    U = rng.normal(0, 1.0, (B, s.nv))
    return Q, U


def test_out_is_filled_in_place_and_matches(chain_sys):
    s = chain_sys
    Q, U = states(s, 1, 1)
    ref = s.forward_dynamics(list(Q[0]), list(U[0]))             # lists: converted once
    out = np.full(s.nv, np.nan)
    assert s.forward_dynamics(Q[0], U[0], out=out) is out
    assert np.array_equal(out, ref)
    tau = s.inverse_dynamics(Q[0], U[0], ref, out=np.empty(s.nv))
    assert np.max(np.abs(tau)) < 1e-9 * max(1.0, np.max(np.abs(ref)))     # forces of the model only: tau = 0


def test_bad_arguments_name_the_argument(chain_sys):
    s = chain_sys
    q, u = s.model.initial_state()
    with pytest.raises(ValueError, match="u: expected 5 values"):
        s.forward_dynamics(q, u[:3])
    with pytest.raises(ValueError, match="out: expected a writable C-contiguous float64 array of 5"):
        s.forward_dynamics(q, u, out=np.zeros(5, dtype=np.float32))
    with pytest.raises(ValueError, match="out"):
        s.forward_dynamics(q, u, out=np.zeros(10)[::2])
    with pytest.raises(ValueError, match="udot"):
        s.inverse_dynamics(q, u, np.zeros(4))
    with pytest.raises(ValueError, match=r"U: expected an array of shape \(3, 5\)"):
        s.forward_dynamics_batch(np.zeros((3, 5)), np.zeros((2, 5)))
    with pytest.raises(ValueError, match="Q: expected an array of shape"):
        s.forward_dynamics_batch(np.zeros(5), np.zeros(5))
    with pytest.raises(ValueError, match="threads"):
        s.forward_dynamics_batch(np.zeros((3, 5)), np.zeros((3, 5)), threads=0)
    with pytest.raises(ValueError, match=r"UD: expected an array of shape \(3, 5\)"):
        s.inverse_dynamics_batch(np.zeros((3, 5)), np.zeros((3, 5)), np.zeros((3, 4)))
    with pytest.raises(ValueError, match=r"tau: expected an array of shape \(2, 4, 5\)"):
        s.rollout(np.zeros((2, 5)), np.zeros((2, 5)), 4, 1e-3, tau=np.zeros((2, 3, 5)))
    with pytest.raises(ValueError, match="integrator"):
        s.rollout(np.zeros((2, 5)), np.zeros((2, 5)), 4, 1e-3, integrator="verlet")
    with pytest.raises(ValueError, match="dt"):
        s.rollout(np.zeros((2, 5)), np.zeros((2, 5)), 4, -1.0)


@pytest.mark.parametrize("which", ["chain", "floating"])
def test_batch_equals_per_call_for_any_thread_count(which, chain_sys, floating):
    s = chain_sys if which == "chain" else floating
    Q, U = states(s, 37, 2)
    TAU = np.random.default_rng(3).normal(0, 1, (37, s.nv))
    ref = np.array([s.forward_dynamics(Q[b], U[b], TAU[b], 0.25) for b in range(37)])
    for threads in (1, 2, 3):
        assert np.array_equal(s.forward_dynamics_batch(Q, U, TAU, t=0.25, threads=threads, simd=False), ref)
    out = np.empty((37, s.nv))
    assert s.forward_dynamics_batch(Q, U, TAU, out=out, t=0.25, simd=False) is out and np.array_equal(out, ref)
    assert s.forward_dynamics_batch(Q, U, TAU, out=out, t=0.25) is out and rel_err(out, ref) < 1e-12
    assert s.forward_dynamics_batch(Q[:0], U[:0]).shape == (0, s.nv)
    tref = np.array([s.inverse_dynamics(Q[b], U[b], ref[b], t=0.25) for b in range(37)])
    for threads in (1, 3):
        assert np.array_equal(s.inverse_dynamics_batch(Q, U, ref, t=0.25, threads=threads, simd=False), tref)
    assert np.max(np.abs(s.inverse_dynamics_batch(Q, U, ref, t=0.25) - TAU)) < 1e-8 * max(1.0, np.max(np.abs(ref)))


def test_rollout_equals_simulate_and_threads_agree(chain_sys):
    s = chain_sys
    Q, U = states(s, 5, 4)
    qs, us = s.rollout(Q, U, 200, 1e-3, threads=1, simd=False)
    assert qs.shape == (5, 201, s.nq) and us.shape == (5, 201, s.nv)
    for b in (0, 4):
        res = s.simulate(0.2, 1e-3, "rk4", q0=Q[b], u0=U[b])
        assert np.array_equal(res.q, qs[b]) and np.array_equal(res.u, us[b])
    q2, u2 = s.rollout(Q, U, 200, 1e-3, threads=2, simd=False)
    assert np.array_equal(q2, qs) and np.array_equal(u2, us)


def test_rollout_with_forces_per_step(chain_sys):
    """tau (B x nsteps x nv) adds to the model's forces, held over each step: one step equals RK4 by hand."""
    s = chain_sys
    Q, U = states(s, 3, 5)
    tau = np.random.default_rng(6).normal(0, 1, (3, 2, s.nv))
    qs, us = s.rollout(Q, U, 2, 1e-3, tau=tau, threads=2)
    h = 1e-3
    for b in range(3):
        x = np.concatenate([Q[b], U[b]])
        for k in range(2):
            def f(x, k=k):
                return np.concatenate([s.qdot(x[:s.nq], x[s.nq:]),
                                       s.forward_dynamics(x[:s.nq], x[s.nq:], tau[b, k])])
            k1 = f(x)
            k2 = f(x + 0.5 * h * k1)
            k3 = f(x + 0.5 * h * k2)
            k4 = f(x + h * k3)
            x = x + h / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
            assert np.max(np.abs(np.concatenate([qs[b, k + 1], us[b, k + 1]]) - x)) < 1e-13


def test_diverged_rollout_is_nan_and_named(chain_sys):
    s = chain_sys
    Q, U = states(s, 2, 7)
    U[1, 0] = np.inf
    with pytest.warns(RuntimeWarning, match="rollout 1"):
        qs, us = s.rollout(Q, U, 3, 1e-3, threads=2)
    assert np.all(np.isfinite(qs[0])) and np.all(np.isnan(qs[1, 1:]))


def test_hook_runs_in_batches_and_its_error_surfaces(chain_sys):
    s = chain_sys
    Q, U = states(s, 4, 8)
    try:
        s.set_hook(lambda t, q, u: -0.5 * u)
        ref = np.array([s.forward_dynamics(Q[b], U[b]) for b in range(4)])
        assert np.array_equal(s.forward_dynamics_batch(Q, U, threads=2), ref)
        s.set_hook(lambda t, q, u: 1 / 0)
        with pytest.raises(RuntimeError, match="force hook failed"):
            s.forward_dynamics_batch(Q, U, threads=2)
        with pytest.raises(RuntimeError, match="force hook failed"):
            s.forward_dynamics(Q[0], U[0])
    finally:
        s.set_hook(None)


def test_structure_is_part_of_the_build_key(chain_sys):
    """Zero offsets and unrotated joint frames are compiled in: numbers that change them need a new build."""
    from codegen.compiler.cache import build_key
    s = chain_sys
    m = chain(5)
    m.joints[2].parent_frame.pos[1] = 0.1                 # an offset off the x axis: another pattern
    assert build_key(m, "recursive", {"ref_point": "joint"}) != build_key(chain(5), "recursive", {"ref_point": "joint"})
    with pytest.raises(ValueError, match="specialised"):
        s.update_model(m)
    m2 = chain(5, m=2.0, L=1.5)                           # other numbers, same structure: no rebuild needed
    s.update_model(m2)
    s.update_model(chain(5))
