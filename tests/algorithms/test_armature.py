"""Armature (rotor inertia per velocity coordinate, ``armature:`` on a joint, MuJoCo's ``armature``) in every family
that models it: recursive at each reference point (D = b^T U + I_a in the joint projection), dense (diag(I_a) added
to the CRBA matrix), mstmm (D = Y^T W + I_a in the hinge condensation, scalar joints), the RNEA (tau += I_a udot),
the energy (T += 1/2 I_a u^2); the derivatives in tests/algorithms/test_derivatives.py; the families that do not model it refuse it by name.

Armature is a number of the parameter vector, not of the topology: the kernels here are the other tests' kernels,
updated with update_model. MuJoCo's own dof_armature is checked in tests/model/test_mjcf.py (mj_forward)."""
import copy

import numpy as np
import pytest

import codegen
from codegen.algorithms import BuildError
from codegen.models import JOINT_MIX, random_state, random_tree
from support.systems import get_system, rel_err

REF_POINTS = ("centroid", "joint", "origin")


def with_armature(model, seed, types=None):
    """A copy of model with random armature on every joint with velocities (of the given types)."""
    m = copy.deepcopy(model)
    rng = np.random.default_rng(seed)
    for j in m.joints:
        if j.nv and (types is None or j.type in types):
            j.armature = rng.uniform(0.05, 0.8, j.nv)
    m.__post_init__()
    return m


@pytest.fixture(scope="module")
def tree():
    """The recursive tests' fixed-base tree: every joint type (tests/algorithms/recursive/test_recursive.py)."""
    m = random_tree(14, seed=1, forces=True)
    assert {j.type for j in m.joints} >= set(JOINT_MIX)
    return m


@pytest.mark.build
def test_dense_mass_matrix_gains_the_diagonal_and_references_agree(tree):
    arm = with_armature(tree, 1)
    dense = get_system(tree, "dense")
    rng = np.random.default_rng(2)
    q, u = random_state(tree, rng)
    M0 = dense.mass_matrix(q)
    dense.update_model(arm)
    M = dense.mass_matrix(q)
    assert np.abs(M - M0 - np.diag(arm.armature)).max() < 1e-12 * np.abs(M).max()
    assert np.abs(get_system(arm, ref_point="origin").mass_matrix(q) - M).max() < 1e-11 * np.abs(M).max()
    for trial in range(3):
        q, u = random_state(arm, rng)
        tau = rng.normal(size=arm.nv)
        ref = get_system(arm, "dense").forward_dynamics(q, u, tau, 0.1)
        # M udot = tau + tau_forces - C with the armature on the diagonal: the bare model's bias, solved by numpy
        bare = get_system(tree, "dense")
        c = bare.inverse_dynamics(q, u, np.zeros(tree.nv), 0.1)
        want = np.linalg.solve(bare.mass_matrix(q) + np.diag(arm.armature), tau - c)
        assert rel_err(ref, want) < 1e-11, trial
        for rp in REF_POINTS:
            s = get_system(arm, ref_point=rp)
            assert rel_err(s.forward_dynamics(q, u, tau, 0.1), ref) < 1e-10, (rp, trial)
            assert rel_err(s.inverse_dynamics(q, u, ref, 0.1), tau) < 1e-9, (rp, trial)


@pytest.mark.build
def test_energy_counts_the_rotors(tree):
    arm = with_armature(tree, 3)
    s = get_system(arm, ref_point="joint")
    q, u = random_state(arm, np.random.default_rng(4))
    T, V = s.energy(q, u)
    s.update_model(tree)
    T0, V0 = s.energy(q, u)
    assert T - T0 == pytest.approx(0.5 * np.sum(arm.armature * u * u), rel=1e-12) and V == pytest.approx(V0, rel=1e-14)
    # the kinetic energy is 1/2 u^T M u with the armature's M
    s.update_model(arm)
    assert T == pytest.approx(0.5 * u @ get_system(arm, "dense").mass_matrix(q) @ u, rel=1e-11)


@pytest.mark.build
def test_mstmm_on_scalar_joints_matches_recursive_and_dense():
    """mstmm's hinge condensation with the armature on revolute, prismatic, cylindrical, universal and planar
    joints: accelerations and joint wrenches as the recursive and dense families (spherical and free joints are
    refused: their hinge passes no moment, resp. nothing, which armature would change)."""
    base = random_tree(14, seed=7, types=JOINT_MIX + ("free", "revolute", "spherical"), floating=True)
    m = with_armature(base, 5, types=("revolute", "prismatic", "cylindrical", "universal", "planar"))
    mst, rec, den = get_system(m, "mstmm"), get_system(m, "recursive", ref_point="joint"), get_system(m, "dense")
    rng = np.random.default_rng(6)
    for trial in range(3):
        q, u = random_state(m, rng)
        tau = rng.normal(size=m.nv)
        ud = mst.forward_dynamics(q, u, tau)
        assert rel_err(ud, den.forward_dynamics(q, u, tau)) < 1e-10, trial
        assert rel_err(ud, rec.forward_dynamics(q, u, tau)) < 1e-10, trial
        assert rel_err(mst.kernel.joint_wrench(q, u, tau), den.kernel.joint_wrench(q, u, tau)) < 1e-9, trial


@pytest.mark.parametrize("algorithm, types, words", [
    ("mstmm", ("spherical",), "does not model armature on spherical joints"),
    ("cfa", ("revolute",), "algorithm 'cfa' does not model armature on revolute joints"),
])
def test_families_without_it_refuse_by_name(algorithm, types, words):
    m = with_armature(random_tree(5, seed=2, types=("revolute", "spherical")), 1, types=types)
    with pytest.raises(BuildError, match=words) as e:
        codegen.build(m, algorithm)
    assert "use recursive or dense" in str(e.value)
