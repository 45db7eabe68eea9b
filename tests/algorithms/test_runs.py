"""Generated passes over the bodies (codegen.algorithms.tree_plan.runs): one loop per run of a kind, or, when the
kinds alternate along the tree more than MAX_RUNS times, one loop that dispatches on each body's code, so the
generated code does not grow with the body count. The dispatching kernels must agree with the dense formulation."""
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import codegen
from codegen.algorithms.tree_plan import MAX_RUNS, Plan, runs
from codegen.model import Placement
from codegen.models import random_state, random_tree
from support.peers_from_file import DictPeer
from support.systems import get_system, rel_err


@given(st.lists(st.sampled_from("abcd"), min_size=1, max_size=80), st.integers(1, 30))
def test_runs_cover_every_body_with_its_kind(kinds, cap):
    out, code = runs(kinds, cap)
    assert out[0].start == 0 and out[-1].stop == len(kinds) and len(out) <= cap
    assert all(a.stop == b.start for a, b in zip(out, out[1:]))
    for r in out:
        table = dict(r.kinds)
        for j in range(r.start, r.stop):
            assert table[code[j]] == kinds[j]                  # the body's code names its kind in its run
    assert len(set(code)) == len(set(kinds)) and code[0] == 0


def alternating_tree(n: int, seed: int):
    """random_tree(n) with every other body's joint along z in an unrotated parent frame offset along x (and every
    planar joint about z): its joint types and compile-time patterns (C_j = I, offsets) both alternate along it."""
    m = random_tree(n, seed=seed)
    for j in m.joints[1::2]:
        j.parent_frame = Placement(np.array([0.3, 0.0, 0.0]), np.eye(3))
        if j.axis is not None:
            j.axis = np.array([0.0, 0.0, 1.0])
        if j.axis2 is not None:
            j.axis2 = np.array([1.0, 0.0, 0.0])
    for j in m.joints:
        if j.type == "planar":                   # the pinocchio peer takes planar joints about their frame's z
            j.axis = np.array([0.0, 0.0, 1.0])
    return codegen.model_from_dict(m.to_dict())


@pytest.mark.build
def test_alternating_kinds_dispatch_and_agree_with_dense():
    """A 60-body tree whose joint types and patterns change at most bodies: every pass is one dispatching loop, and
    dense (which dispatches too), recursive (origin), cfa and mstmm give pinocchio's accelerations (built
    from the model dict, not from our plan); inverse dynamics inverts them."""
    m = alternating_tree(60, seed=5)
    plan = Plan(m)
    pats, _ = runs(plan.patterns())
    assert len(plan.segments) == 1 and len(plan.segments[0].kinds) >= 5
    assert len(pats) == 1 and len(pats[0].kinds) > 2
    assert len(runs(plan.types, cap=10 ** 6)[0]) > MAX_RUNS                  # it does alternate
    dense = get_system(m, "dense")
    pin_peer = DictPeer(m.to_dict(), dense.model.coord_names, dense.body_names)   # pinocchio, from the model dict
    others = [get_system(m, "recursive", ref_point="origin")]          # reference points: test_recursive.py
    others += [get_system(m, "cfa"), get_system(m, "mstmm")]
    rng = np.random.default_rng(2)
    for _ in range(3):
        q, u = random_state(m, rng)
        tau = rng.normal(size=m.nv)
        ref = dense.forward_dynamics(q, u, tau, 0.1)
        assert np.max(np.abs(ref)) > 1e-3
        assert rel_err(ref, pin_peer.aba(q, u, tau)) < 1e-9
        for s in others:
            assert rel_err(s.forward_dynamics(q, u, tau, 0.1), ref) < 1e-9, s.algorithm
        assert rel_err(others[0].inverse_dynamics(q, u, ref, 0.1), tau) < 1e-9
