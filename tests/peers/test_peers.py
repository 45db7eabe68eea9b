"""Cross-checks of the compiled kernels against independent implementations.

* pinocchio (ABA, RNEA, CRBA, forward kinematics) on random trees mixing every joint type, fixed and
  floating base, and on the humanoid and arm7 models, for ref_point origin and centroid (PAIRS);
* MuJoCo (mj_forward qacc) on the planar 5-link rod chain.

The peer models are built from the plan's own numbers (``tests/support/peers.py``), so agreement to 1e-9 means
kernels, parameter layout and joint conventions agree. ``test_*_can_fail`` show that the comparison
detects a 1 % mass change and a wrong quaternion convention.

Cold run outside xdist: the 6 kernels are compiled up front in parallel subprocesses (see ``peers.prebuild``);
with a warm ``generated/`` cache the module takes a few seconds.
"""
from __future__ import annotations


import numpy as np
import pytest

pin = pytest.importorskip("pinocchio")

from support import peers  # noqa: E402

import codegen  # noqa: E402
from codegen.model import quat_to_rot  # noqa: E402

TOL = 1e-9
N_STATES = 4

# name -> model spec understood by peers.make_model
CASES = {
    "fixed_s3": ("random_tree", 10, 3, False),
    "floating_s3": ("random_tree", 10, 3, True),
    "humanoid": ("humanoid",),
    "arm7": ("arm7",),
}
DENSE_CASES = ("humanoid",)     # dense on random fixed and floating trees: test_peers_independent.py (fd, id, M)
ARM7_DAMPING = 0.5          # codegen.models.arm7: joint dampers c = 0.5 on every joint, no stiffness


# (case, reference point) pairs: one point per tree, the centroid on the floating humanoid and arm7, the origin on the
# random trees (each of ten bodies mixes every joint type; the reference points agree with each other and with dense
# to round-off on every joint type: tests/algorithms/recursive/test_recursive.py); kernels other tests build too
PAIRS = [("fixed_s3", "origin"), ("floating_s3", "origin"), ("humanoid", "centroid"), ("arm7", "centroid")]


def _jobs():
    jobs = [(CASES[c], "recursive", r) for c, r in PAIRS]
    jobs += [(CASES[c], "dense", None) for c in DENSE_CASES]
    jobs.append((("chain", 5), "recursive", "joint"))
    return jobs


@pytest.fixture(scope="module")
def systems():
    """Lazily built Systems keyed by (case, algorithm, ref_point); missing kernels compiled in parallel first."""
    peers.prebuild(_jobs())
    cache = {}

    def get(case, algorithm="recursive", ref_point=None):
        key = (case, algorithm, ref_point)
        if key not in cache:
            cache[key] = codegen.build(peers.make_model(CASES[case]), algorithm=algorithm, ref_point=ref_point)
        return cache[key]
    return get


@pytest.fixture(scope="module")
def pin_peers():
    cache = {}

    def get(case):
        if case not in cache:
            cache[case] = peers.PinPeer(peers.make_model(CASES[case]))
        return cache[case]
    return get


def _states(model, seed, zero_u=False):
    rng = np.random.default_rng(seed)
    for _ in range(N_STATES):
        q, u = codegen.models.random_state(model, rng)
        if zero_u:
            u = np.zeros_like(u)
        yield q, u, rng.normal(scale=3.0, size=model.nv), rng.normal(scale=3.0, size=model.nv)


def _applied(case, u):
    """Generalized applied force of the model's force elements (only arm7's dampers here)."""
    return -ARM7_DAMPING * np.asarray(u) if case == "arm7" else np.zeros(len(u))


# ---------------------------------------------------------------- pinocchio

def test_models_cover_all_joint_types():
    types = {j.type for c in CASES.values() for j in peers.make_model(c).joints}
    assert types == set(codegen.model.JOINT_TYPES)
    # a fixed body with children exercises the composed placements of the merge
    m = peers.make_model(CASES["fixed_s3"])
    assert any(j.type == "fixed" and any(k.parent == j.child for k in m.joints) for j in m.joints)


@pytest.mark.build
@pytest.mark.parametrize("case, ref_point", PAIRS)
def test_forward_dynamics_vs_aba(systems, pin_peers, case, ref_point):
    s, peer = systems(case, "recursive", ref_point), pin_peers(case)
    worst = 0.0
    for zero_u in ((False, True) if case == "arm7" else (False,)):
        for q, u, tau, _ in _states(s.model, 11, zero_u):
            ours = s.forward_dynamics(q, u, tau)
            ref = peer.aba(q, u, tau + _applied(case, u))
            worst = max(worst, peers.rel_err(ours, ref))
    assert worst < TOL, f"{case}/{ref_point}: forward dynamics vs pinocchio ABA, rel err {worst:.3e}"


@pytest.mark.build
@pytest.mark.parametrize("case, ref_point", PAIRS)
def test_inverse_dynamics_vs_rnea(systems, pin_peers, case, ref_point):
    s, peer = systems(case, "recursive", ref_point), pin_peers(case)
    worst_id = worst_m = 0.0
    for q, u, _, udot in _states(s.model, 12):
        ours = s.inverse_dynamics(q, u, udot)
        ref = peer.rnea(q, u, udot) - _applied(case, u)
        worst_id = max(worst_id, peers.rel_err(ours, ref))
        worst_m = max(worst_m, peers.rel_err(s.mass_matrix(q), peer.crba(q)))   # RNEA columns
    assert worst_id < TOL, f"{case}/{ref_point}: inverse dynamics vs pinocchio RNEA, rel err {worst_id:.3e}"
    assert worst_m < TOL, f"{case}/{ref_point}: mass matrix from RNEA columns vs CRBA, rel err {worst_m:.3e}"


@pytest.mark.build
@pytest.mark.parametrize("case", DENSE_CASES)
def test_dense_vs_crba_and_aba(systems, pin_peers, case):
    s, peer = systems(case, "dense"), pin_peers(case)
    worst_m = worst_fd = 0.0
    for q, u, tau, _ in _states(s.model, 13):
        worst_m = max(worst_m, peers.rel_err(s.mass_matrix(q), peer.crba(q)))
        worst_fd = max(worst_fd, peers.rel_err(s.forward_dynamics(q, u, tau), peer.aba(q, u, tau + _applied(case, u))))
    assert worst_m < TOL, f"{case}: dense mass matrix vs pinocchio CRBA, rel err {worst_m:.3e}"
    assert worst_fd < TOL, f"{case}: dense forward dynamics vs pinocchio ABA, rel err {worst_fd:.3e}"


@pytest.mark.build
@pytest.mark.parametrize("case, ref_point", PAIRS)
def test_body_poses_vs_forward_kinematics(systems, pin_peers, case, ref_point):
    s, peer = systems(case, "recursive", ref_point), pin_peers(case)
    for q, _, _, _ in _states(s.model, 14):
        com, quat = s.body_poses(q)
        com_ref, rot_ref = peer.body_poses(q)
        assert peers.rel_err(com, com_ref) < TOL, f"{case}/{ref_point}: body centroids"
        assert np.allclose(np.linalg.norm(quat, axis=1), 1.0, rtol=0, atol=1e-12)
        rot = np.array([quat_to_rot(x) for x in quat])
        assert np.max(np.abs(rot - rot_ref)) < TOL, f"{case}/{ref_point}: user body frame orientations"


@pytest.mark.build
def test_pinocchio_comparison_can_fail(systems):
    """A 1 % mass change of one body, or pinocchio's quaternion order taken as ours, must be detected."""
    for case, body in (("fixed_s3", 4), ("floating_s3", 0), ("humanoid", 2)):
        s = systems(case, "recursive", dict(PAIRS)[case])
        good = peers.PinPeer(s.model)
        heavy = peers.PinPeer(s.model, mass_scale={body: 1.01})
        q, u, tau, _ = next(_states(s.model, 15))
        ours = s.forward_dynamics(q, u, tau)
        assert peers.rel_err(ours, good.aba(q, u, tau)) < TOL
        assert peers.rel_err(ours, heavy.aba(q, u, tau)) > 1e-5, f"{case}: mass change of body {body} not seen"
        if good.quat_slices:
            wrong = np.array(pin.aba(good.model, good.data, np.asarray(q, float), u, tau))   # no (w,x,y,z) map
            assert peers.rel_err(ours, wrong) > 1e-3, f"{case}: quaternion convention not seen"


def test_to_pinocchio_interface():
    m = peers.make_model(CASES["floating_s3"])
    pm, q_map = peers.to_pinocchio(m)
    assert (pm.nq, pm.nv) == (m.nq, m.nv)
    q, _ = m.initial_state()
    qp = q_map(q)
    assert np.allclose(qp[3:7], np.roll(q[3:7], -1))            # free joint: (w, x, y, z) -> (x, y, z, w)
    assert np.allclose(pin.normalize(pm, qp), qp)               # a valid pinocchio configuration


# ---------------------------------------------------------------- MuJoCo

def _mujoco_qacc(mj, mm, q, u, tau):
    d = mj.MjData(mm)
    d.qpos[:], d.qvel[:], d.qfrc_applied[:] = q, u, tau
    mj.mj_forward(mm, d)
    return np.array(d.qacc), np.array(d.xipos[1:])


@pytest.mark.build
def test_chain_vs_mujoco(systems):
    """MuJoCo hinges: qpos is the relative angle from the MJCF reference pose (straight along +x), about the
    joint axis through the anchor, right-handed: the same q and u as ours, no sign or offset mapping."""
    mj = pytest.importorskip("mujoco")
    n = 5
    model = codegen.models.chain(n)
    s = codegen.build(model, algorithm="recursive", ref_point="joint")
    mm = mj.MjModel.from_xml_string(peers.chain_mjcf(n))
    heavy = mj.MjModel.from_xml_string(peers.chain_mjcf(n, m=1.01))
    assert mm.nq == mm.nv == n and not np.any(mm.dof_damping) and not np.any(mm.dof_armature)
    rng = np.random.default_rng(16)
    worst = 0.0
    for _ in range(N_STATES):
        q, u = rng.uniform(-np.pi, np.pi, n), rng.normal(scale=2.0, size=n)
        tau = rng.normal(scale=5.0, size=n)
        ours = s.forward_dynamics(q, u, tau)
        qacc, xipos = _mujoco_qacc(mj, mm, q, u, tau)
        worst = max(worst, peers.rel_err(ours, qacc))
        assert peers.rel_err(s.body_poses(q)[0], xipos) < 1e-12
        assert peers.rel_err(ours, _mujoco_qacc(mj, heavy, q, u, tau)[0]) > 1e-5   # the check can fail
    assert worst < 1e-8, f"chain{n}: forward dynamics vs MuJoCo qacc, rel err {worst:.3e}"
