"""Kang & Yoon's fully recursive O(n) formulation against the dense O(n^3) reference and RNEA."""
import numpy as np
import pytest

import codegen
from codegen.model import JOINT_TYPES
from codegen.models import JOINT_MIX, random_state, random_tree
from support.systems import get_system, rel_err

pytestmark = pytest.mark.build          # every test here compiles or loads a kernel (tests/conftest.py)

REF_POINTS = ("centroid", "joint", "origin")
TREES = {
    "fixed": lambda: random_tree(14, seed=1, forces=True),
    # the mixed floating tree of the mstmm and derivative tests (free base, every joint type, free joints inside):
    # its kernels are built there too
    "floating": lambda: random_tree(14, seed=7, types=JOINT_MIX + ("free", "revolute", "spherical"), floating=True),
}


@pytest.mark.parametrize("tree", list(TREES))
def test_reference_points_agree_with_dense(tree):
    """All three analysis reference points give the dense method's accelerations (1e-10 relative)."""
    m = TREES[tree]()
    assert {j.type for j in m.joints} >= {"revolute", "prismatic", "cylindrical", "universal", "spherical",
                                          "planar", "fixed"}
    dense = get_system(m, "dense")
    rec = {rp: get_system(m, ref_point=rp) for rp in REF_POINTS}
    rng = np.random.default_rng(7)
    for trial in range(6):
        q, u = random_state(m, rng)
        tau = rng.normal(size=m.nv)
        t = float(rng.uniform(0, 0.3))
        ref = dense.forward_dynamics(q, u, tau, t)
        assert np.all(np.isfinite(ref)) and np.max(np.abs(ref)) > 1e-3
        for rp, s in rec.items():
            assert rel_err(s.forward_dynamics(q, u, tau, t), ref) < 1e-10, (tree, rp, trial)


def test_non_unit_quaternions_are_one_rotation_for_every_family():
    """An RK4 stage's quaternions are not unit: every family reads q / |q| (codegen.symbolic.joints
    quat_R_normalised), so all give the accelerations at the normalised state (were 2e-3 apart at |q|^2 = 1.002)."""
    m = TREES["floating"]()
    dense = get_system(m, "dense")
    others = [get_system(m, ref_point=rp) for rp in REF_POINTS] + [get_system(m, "mstmm")]
    quats = [dense.plan.iq[b] + JOINT_TYPES[t].quaternion for b, t in enumerate(dense.plan.types)
             if JOINT_TYPES[t].quaternion is not None]
    rng = np.random.default_rng(3)
    q, u = random_state(m, rng)
    tau = rng.normal(size=m.nv)
    scaled = q.copy()
    for k, o in enumerate(quats):
        scaled[o:o + 4] *= 1.0 + (-1) ** k * 2e-3
    ref = dense.forward_dynamics(q, u, tau)
    assert len(quats) >= 3 and rel_err(dense.forward_dynamics(scaled, u, tau), ref) < 1e-12
    for s in others:
        assert rel_err(s.forward_dynamics(scaled, u, tau), ref) < 1e-10, s.algorithm


@pytest.mark.parametrize("tree", list(TREES))
def test_round_trip_forward_inverse(tree):
    """forward_dynamics(inverse_dynamics(udot)) == udot and back, for every algorithm."""
    m = TREES[tree]()
    rng = np.random.default_rng(11)
    for alg, opts in [("dense", {})] + [("recursive", {"ref_point": rp}) for rp in REF_POINTS]:
        s = get_system(m, alg, **opts)
        for _ in range(3):
            q, u = random_state(m, rng)
            udot = rng.normal(size=m.nv)
            tau = s.inverse_dynamics(q, u, udot, 0.1)
            assert rel_err(s.forward_dynamics(q, u, tau, 0.1), udot) < 1e-10
            tau2 = rng.normal(size=m.nv)
            assert rel_err(s.inverse_dynamics(q, u, s.forward_dynamics(q, u, tau2, 0.1), 0.1), tau2) < 1e-9


def test_mass_matrix_crba_equals_rnea_columns():
    m = TREES["floating"]()
    rng = np.random.default_rng(3)
    q, _ = random_state(m, rng)
    H = get_system(m, "dense").mass_matrix(q)
    H2 = get_system(m, ref_point="origin").mass_matrix(q)
    assert rel_err(H, H2) < 1e-11
    assert np.allclose(H, H.T, atol=1e-12 * np.abs(H).max())
    assert np.linalg.eigvalsh(H).min() > 0


def test_numbers_change_without_rebuild():
    """Masses and placements are kernel inputs: a new model with the same topology reuses the build."""
    m1 = random_tree(14, seed=1, forces=True)
    s = get_system(m1, ref_point="origin")
    m2 = random_tree(14, seed=1, forces=True)
    for b in m2.bodies:
        b.mass *= 1.7
    assert codegen.build(m2, ref_point="origin").build_info["key"] == s.build_info["key"]
    q, u = random_state(m1, np.random.default_rng(0))
    a1 = s.forward_dynamics(q, u)
    s.update_model(m2)
    a2 = s.forward_dynamics(q, u)
    assert rel_err(a2, get_system(m2, "dense").forward_dynamics(q, u)) < 1e-10
    assert rel_err(a1, a2) > 1e-6
    s.update_model(m1)


def test_applied_forces_match_python_evaluation():
    """Joint springs and time functions (sine, step, table) act as the Python TimeFunction says: the kernel with them
    equals the same kernel with their numbers zeroed (the same topology: no second build), driven by the
    generalized forces the Python side computes."""
    m = random_tree(14, seed=1, forces=True)
    bare = random_tree(14, seed=1, forces=True)
    for sp in bare.springs:
        sp.stiffness, sp.damping = 0.0 * np.asarray(sp.stiffness), 0.0 * np.asarray(sp.damping)
    for f in bare.joint_forces:
        fn = f.function
        fn.value = fn.amplitude = fn.offset = fn.value_before = 0.0
        if fn.y is not None:
            fn.y = 0.0 * np.asarray(fn.y)
    rng = np.random.default_rng(5)
    q, u = random_state(m, rng)
    offs = dict(zip([j.name for j in m.joints], m.q_offsets()))
    try:
        for t in (0.0, 0.04, 0.06, 0.15, 0.5):
            tau = np.zeros(m.nv)
            for sp in m.springs:
                iq, iv = offs[sp.joint]
                n = len(sp.stiffness)
                tau[iv:iv + n] -= sp.stiffness * (q[iq:iq + n] - sp.q_ref) + sp.damping * u[iv:iv + n]
            for f in m.joint_forces:
                tau[offs[f.joint][1] + f.dof] += f.function(t)
            assert np.max(np.abs(tau)) > 0.1
            a = get_system(m, ref_point="centroid").forward_dynamics(q, u, None, t)
            sb = get_system(bare, ref_point="centroid")
            assert rel_err(a, sb.forward_dynamics(q, u, tau, t)) < 1e-10
            assert rel_err(a, sb.forward_dynamics(q, u, None, t)) > 1e-3          # the zeroed numbers did arrive
    finally:
        get_system(m, ref_point="centroid")                                       # the shared kernel's own numbers


def test_python_hook_adds_generalized_forces():
    m = codegen.models.balance_pendulum()
    s = get_system(m, ref_point="origin")
    q, u = m.initial_state()
    extra = np.array([0.3, -0.2, 0.1, 0.05])
    a_direct = s.forward_dynamics(q, u, extra, 0.0)
    s.set_hook(lambda t, q_, u_: extra)
    try:
        assert rel_err(s.forward_dynamics(q, u, None, 0.0), a_direct) < 1e-14
        s.set_hook(lambda t, q_, u_: 1 / 0)
        with pytest.raises(RuntimeError, match="force hook failed"):
            s.forward_dynamics(q, u)
    finally:
        s.set_hook(None)


def test_body_poses_and_quaternion_joint_kinematics():
    """body_quat is the user body frame; a spherical joint's quaternion maps straight through."""
    m = codegen.models.humanoid()
    s = get_system(m, ref_point="centroid")
    q, u = m.initial_state()
    com, quat = s.body_poses(q)
    assert np.allclose(np.linalg.norm(quat, axis=1), 1, atol=1e-14)
    torso = m.bodies[0]
    assert np.allclose(com[0], q[:3] + codegen.model.quat_to_rot(q[3:7]) @ torso.com, atol=1e-14)
    qt = q.copy()
    qt[3:7] = [np.cos(0.35), 0, np.sin(0.35), 0]      # base rotated 0.7 rad about y
    _, quat = s.body_poses(qt)
    assert np.allclose(quat[0], qt[3:7], atol=1e-14)
