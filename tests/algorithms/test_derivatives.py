"""Analytical derivatives of the dynamics (templates/shared/derivatives.pyx.j2, Carpentier & Mansard 2018): against
pinocchio's computeRNEADerivatives / computeABADerivatives built from the model dict, against central differences
of our own kernels in the tangent space (fixed and floating base, every joint type, springs, time functions, a
compiled state feedback), across every rigid family, batched, and refused by name where they are not derived."""
import numpy as np
import pinocchio as pin
import pytest

import codegen
from codegen.models import JOINT_MIX, chain, random_state, random_tree
from support import c_export
from support.peers_from_file import DictPeer
from support.systems import EXAMPLES, get_system, rel_err
from support.tangent import central_jacobian, minus, pin_v_order, plus

TOL_FD = 1e-6           # against central differences (h = 1e-6)
TOL_PIN = 1e-9          # against pinocchio



def dsys(model, algorithm="recursive", **options):
    """get_system with derivatives=True: one module with the derivative kernels, not a plain one and then a second."""
    return get_system(model, algorithm, derivatives=True, **options)

def fd_forward(s, q, u, tau, t=0.0):
    m = s.model
    Aq = central_jacobian(lambda e: s.forward_dynamics(plus(m, q, e), u, tau, t), s.nv)
    Au = central_jacobian(lambda e: s.forward_dynamics(q, u + e, tau, t), s.nv)
    return Aq, Au


def fd_inverse(s, q, u, ud):
    m = s.model
    return (central_jacobian(lambda e: s.inverse_dynamics(plus(m, q, e), u, ud), s.nv),
            central_jacobian(lambda e: s.inverse_dynamics(q, u + e, ud), s.nv))


def test_tangent_plus_minus_round_trip():
    m = random_tree(6, seed=3, types=("spherical", "revolute", "planar"), floating=True)
    rng = np.random.default_rng(0)
    q, _ = random_state(m, rng)
    dv = rng.normal(scale=0.3, size=m.nv)
    assert np.allclose(minus(m, plus(m, q, dv), q), dv, atol=1e-12)


def pin_reference(m, s, q, u, tau, ud):
    """pinocchio's analytical derivatives (model built from the model dict, fixed base), in our joint order."""
    peer = DictPeer(m.to_dict(), s.model.coord_names, s.body_names)
    P = pin_v_order(peer)
    pm, pd = peer.model, peer.data
    qp, up, tp, ap = peer.q_pin(q), np.empty(m.nv), np.empty(m.nv), np.empty(m.nv)
    up[P], tp[P], ap[P] = u, tau, ud
    sym = lambda M: (np.triu(M) + np.triu(M, 1).T)[np.ix_(P, P)]       # noqa: E731  (pinocchio fills the upper part)
    pin.computeRNEADerivatives(pm, pd, qp, up, ap)
    ref_id = [np.asarray(pd.dtau_dq)[np.ix_(P, P)], np.asarray(pd.dtau_dv)[np.ix_(P, P)],
              sym(np.asarray(pin.crba(pm, pd, qp)))]
    pin.computeABADerivatives(pm, pd, qp, up, tp)
    ref_fd = [np.asarray(pd.ddq_dq)[np.ix_(P, P)], np.asarray(pd.ddq_dv)[np.ix_(P, P)], sym(np.asarray(pd.Minv))]
    return ref_id, ref_fd


@pytest.mark.build
def test_matches_pinocchio():
    """A tree of pinocchio's native joint types (revolute, prismatic, spherical and fixed; fixed base, so v_pin = u):
    dtau/dq, dtau/du, M and dudot/dq, dudot/du, M^-1 equal pinocchio's computeRNEADerivatives /
    computeABADerivatives to 1e-9. (pinocchio 4.1's analytical derivatives are wrong for its composite joints, our
    universal and planar joints: on the 60-body tree below they differ from pinocchio's own finite differences by
    O(100) while ours agree with them to 1e-7; so the composite-joint trees are checked against differences.)"""
    m = random_tree(12, seed=31, types=("revolute", "prismatic", "spherical", "fixed", "revolute", "spherical"))
    s = dsys(m, "recursive", ref_point="origin")
    rng = np.random.default_rng(4)
    for _ in range(2):
        q, u = random_state(m, rng)
        tau, ud = rng.normal(size=m.nv), rng.normal(size=m.nv)
        ref_id, ref_fd = pin_reference(m, s, q, u, tau, ud)
        for a, b in zip(s.inverse_dynamics_derivatives(q, u, ud), ref_id):
            assert rel_err(a, b) < TOL_PIN
        for a, b in zip(s.forward_dynamics_derivatives(q, u, tau), ref_fd):
            assert rel_err(a, b) < TOL_PIN


@pytest.fixture(scope="module")
def floating():
    """Free base, every joint type, three free joints inside the tree (the mstmm tests' model)."""
    return random_tree(14, seed=7, types=JOINT_MIX + ("free", "revolute", "spherical"), floating=True)


@pytest.mark.build
@pytest.mark.parametrize("alg,opts", [("recursive", {"ref_point": "joint"}), ("mstmm", {})])
def test_floating_base_matches_central_differences(floating, alg, opts):
    s = dsys(floating, alg, **opts)
    rng = np.random.default_rng(9)
    q, u = random_state(floating, rng)
    tau, ud = rng.normal(size=s.nv), rng.normal(size=s.nv)
    Aq, Au, Mi = s.forward_dynamics_derivatives(q, u, tau)
    Fq, Fu = fd_forward(s, q, u, tau)
    assert rel_err(Aq, Fq) < TOL_FD and rel_err(Au, Fu) < TOL_FD
    assert rel_err(Mi, np.linalg.inv(s.mass_matrix(q))) < 1e-10
    Dq, Dv, M = s.inverse_dynamics_derivatives(q, u, ud)
    Gq, Gu = fd_inverse(s, q, u, ud)
    assert rel_err(Dq, Gq) < TOL_FD and rel_err(Dv, Gu) < TOL_FD and rel_err(M, s.mass_matrix(q)) < 1e-12


@pytest.fixture(scope="module")
def sprung():
    """random_tree(14, seed=1, forces=True) without its point springs (support.c_export.sprung: the C export's tests
    share its kernels; the export refuses point springs; test_point_springs_are_differentiated has them): joint
    spring-dampers, sine/step/table joint forces."""
    return c_export.sprung()


@pytest.mark.build
def test_families_and_solvers_agree(sprung):
    """dense and recursive (centroid) give the same derivatives to round-off (every family shares the derivative
    passes of templates/shared; only their forward dynamics differ; mstmm and the joint point are above), and the
    articulated solve of large models gives what the dense tail gives."""
    den, rec = dsys(sprung, "dense"), dsys(sprung, "recursive", ref_point="centroid")
    rng = np.random.default_rng(4)
    q, u = random_state(sprung, rng)
    tau, ud = rng.normal(size=sprung.nv), rng.normal(size=sprung.nv)
    ref_id = den.inverse_dynamics_derivatives(q, u, ud)
    ref_fd = den.forward_dynamics_derivatives(q, u, tau, 0.1)
    for a, b in zip(rec.inverse_dynamics_derivatives(q, u, ud), ref_id):
        assert rel_err(a, b) < 1e-12
    for a, b in zip(rec.forward_dynamics_derivatives(q, u, tau, 0.1), ref_fd):
        assert rel_err(a, b) < 1e-10
    k = den.derivative_kernel                   # nv = 22: the dense tail; the articulated solve gives the same
    k.set_derivative_method(1)
    try:
        for a, b in zip(den.forward_dynamics_derivatives(q, u, tau, 0.1), ref_fd):
            assert rel_err(a, b) < 1e-10
    finally:
        k.set_derivative_method(0)
    with pytest.raises(ValueError, match="derivative method"):
        k.set_derivative_method(2)


@pytest.mark.build
def test_force_elements_are_differentiated(sprung):
    s = dsys(sprung, "recursive", ref_point="centroid")
    assert sprung.springs and sprung.joint_forces
    rng = np.random.default_rng(5)
    q, u = random_state(sprung, rng)
    tau = rng.normal(size=s.nv)
    Aq, Au, _ = s.forward_dynamics_derivatives(q, u, tau, t=0.07)
    Fq, Fu = fd_forward(s, q, u, tau, 0.07)
    assert rel_err(Aq, Fq) < TOL_FD and rel_err(Au, Fu) < TOL_FD


@pytest.mark.build
def test_armature_is_differentiated(sprung):
    """With armature on every joint (the same kernels: armature is a number): central differences, M^-1 times the
    dense family's M (CRBA + diag), both M^-1 products (dense tail and articulated solve) and the families agree."""
    arm = codegen.model_from_dict(sprung.to_dict())
    rng = np.random.default_rng(12)
    for j in arm.joints:
        if j.nv:
            j.armature = rng.uniform(0.05, 0.8, j.nv)
    arm = codegen.model_from_dict(arm.to_dict())             # through the file format: armature survives export
    assert np.count_nonzero(arm.armature) == arm.nv
    den, rec = dsys(arm, "dense"), dsys(arm, "recursive", ref_point="centroid")
    q, u = random_state(arm, rng)
    tau, ud = rng.normal(size=arm.nv), rng.normal(size=arm.nv)
    Aq, Au, Mi = rec.forward_dynamics_derivatives(q, u, tau, 0.1)
    Fq, Fu = fd_forward(rec, q, u, tau, 0.1)
    assert rel_err(Aq, Fq) < TOL_FD and rel_err(Au, Fu) < TOL_FD
    M = den.mass_matrix(q)
    assert np.abs(Mi @ M - np.eye(arm.nv)).max() < 1e-10
    assert rel_err(rec.inverse_dynamics_derivatives(q, u, ud)[2], M) < 1e-12
    for a, b in zip(den.forward_dynamics_derivatives(q, u, tau, 0.1), (Aq, Au, Mi)):
        assert rel_err(a, b) < 1e-10
    k = rec.derivative_kernel
    k.set_derivative_method(1)                  # the articulated solve: D = S^T U + armature
    try:
        for a, b in zip(rec.forward_dynamics_derivatives(q, u, tau, 0.1), (Aq, Au, Mi)):
            assert rel_err(a, b) < 1e-10
    finally:
        k.set_derivative_method(0)


@pytest.mark.build
def test_batch_equals_single_calls(sprung):
    s = dsys(sprung, "recursive", ref_point="centroid")
    rng = np.random.default_rng(6)
    Q, U = map(np.array, zip(*[random_state(sprung, rng) for _ in range(5)]))
    T = rng.normal(size=U.shape)
    fb = s.forward_dynamics_derivatives_batch(Q, U, T, threads=2, t=0.2)
    ib = s.inverse_dynamics_derivatives_batch(Q, U, T, threads=2)
    for b in range(5):
        for x, y in zip(fb, s.forward_dynamics_derivatives(Q[b], U[b], T[b], 0.2)):
            assert np.array_equal(x[b], y)
        for x, y in zip(ib, s.inverse_dynamics_derivatives(Q[b], U[b], T[b])):
            assert np.array_equal(x[b], y)
    out = tuple(np.zeros((s.nv, s.nv)) for _ in range(3))
    assert s.forward_dynamics_derivatives(Q[0], U[0], T[0], 0.2, out=out) is out
    assert np.array_equal(out[0], fb[0][0])
    with pytest.raises(ValueError, match="out must be a tuple of three"):
        s.forward_dynamics_derivatives(Q[0], U[0], out=(np.zeros(3),))


@pytest.mark.build
def test_linearize_and_rk4_step_against_rollout(floating):
    """Continuous A, B against central differences; the RK4 step Jacobians against central differences of one
    compiled rollout step (tangent coordinates at both ends), quaternion joints included."""
    s = dsys(floating, "recursive", ref_point="joint")
    m, nv = floating, s.nv
    rng = np.random.default_rng(12)
    q, u = random_state(m, rng)
    tau = rng.normal(size=nv)
    A, B = s.linearize(q, u, tau)
    Fq, Fu = fd_forward(s, q, u, tau)
    assert rel_err(A[nv:], np.hstack([Fq, Fu])) < TOL_FD and np.array_equal(A[:nv, nv:], np.eye(nv))
    assert rel_err(B[nv:], np.linalg.inv(s.mass_matrix(q))) < 1e-10
    h = 5e-3

    def step(qq, uu, tt):
        Q, U = s.rollout(qq[None], uu[None], 1, h, tt[None, None])
        return Q[0, 1], U[0, 1]

    q1, u1 = step(q, u, tau)
    Ad, Bd = s.linearize(q, u, tau, dt=h)
    F = central_jacobian(lambda e: np.r_[minus(m, step(plus(m, q, e[:nv]), u + e[nv:], tau)[0], q1),
                                         step(plus(m, q, e[:nv]), u + e[nv:], tau)[1] - u1], 2 * nv)
    G = central_jacobian(lambda e: np.r_[minus(m, step(q, u, tau + e)[0], q1), step(q, u, tau + e)[1] - u1], nv)
    assert rel_err(Ad, F) < 1e-6 and rel_err(Bd, G) < 1e-5


@pytest.mark.build
def test_rollout_sensitivities_over_100_steps():
    """The product of the 100 step Jacobians equals central differences of the whole rollout's final state with
    respect to the initial state; one step's input columns, those with respect to that step's tau."""
    s = dsys(chain(5), ref_point="joint")
    rng = np.random.default_rng(13)
    q0, u0 = rng.normal(size=5), rng.normal(size=5)
    n, h = 100, 2e-3
    tau = rng.normal(size=(1, n, 5))
    q, u, A, B = s.rollout(q0[None], u0[None], n, h, tau, sensitivities=True)
    assert A.shape == (1, n, 10, 10) and B.shape == (1, n, 10, 5)
    P = np.eye(10)
    for k in range(n):
        P = A[0, k] @ P

    def final(x0, tt=tau):
        Q, U = s.rollout(x0[None, :5], x0[None, 5:], n, h, tt)
        return np.r_[Q[0, -1], U[0, -1]]

    x0 = np.r_[q0, u0]
    assert rel_err(P, central_jacobian(lambda e: final(x0 + e), 10)) < 1e-6
    k = 37
    Pk = np.eye(10)
    for j in range(k + 1, n):
        Pk = A[0, j] @ Pk

    def with_tau(e):
        t2 = tau.copy()
        t2[0, k] += e
        return final(x0, t2)

    assert rel_err(Pk @ B[0, k], central_jacobian(with_tau, 5)) < 1e-6


@pytest.mark.build
def test_feedback_is_compiled_and_differentiated():
    s = dsys(chain(5), ref_point="joint")
    rng = np.random.default_rng(14)
    K, xr = rng.normal(size=(5, 10)), rng.normal(size=10)
    q, u = rng.normal(size=5), rng.normal(size=5)
    free = s.forward_dynamics(q, u)
    s.set_feedback(K, xr)
    try:
        fb = s.forward_dynamics(q, u)
        assert rel_err(fb, free + np.linalg.solve(s.mass_matrix(q), -K @ (np.r_[q, u] - xr))) < 1e-10
        A, _ = s.linearize(q, u)
        Fq, Fu = fd_forward(s, q, u, None)
        assert rel_err(A[5:], np.hstack([Fq, Fu])) < TOL_FD
        Q, U = s.rollout(q[None], u[None], 10, 1e-3)        # the workers and the rollout see the gain
        assert np.isfinite(Q).all()
    finally:
        s.set_feedback(None)
    assert np.array_equal(s.forward_dynamics(q, u), free)
    with pytest.raises(ValueError, match="K"):
        s.set_feedback(np.zeros((2, 2)))


@pytest.mark.build
@pytest.mark.parametrize("base", ["fixed", "floating"])
def test_point_springs_are_differentiated(base):
    """test_recursive's tree (every joint type, two point-to-point spring-dampers, one to the ground) and the
    floating tree of test_mstmm_free (free base, spherical joints, point springs): forward and inverse derivatives
    against central differences of the dynamics in the tangent space."""
    m = random_tree(14, seed=1, forces=True) if base == "fixed" else \
        random_tree(16, seed=21, types=("revolute", "spherical"), floating=True, forces=True)
    s = dsys(m, "dense")                   # the dense kernels of those tests
    assert len(m.point_springs) >= 2
    rng = np.random.default_rng(12)
    for _ in range(2):
        q, u = random_state(m, rng)
        tau, ud = rng.normal(size=s.nv), rng.normal(size=s.nv)
        Aq, Au, _ = s.forward_dynamics_derivatives(q, u, tau, 0.2)
        Fq, Fu = fd_forward(s, q, u, tau, 0.2)
        assert rel_err(Aq, Fq) < TOL_FD and rel_err(Au, Fu) < TOL_FD
        Dq, Dv, _ = s.inverse_dynamics_derivatives(q, u, ud)
        Gq, Gu = fd_inverse(s, q, u, ud)
        assert rel_err(Dq, Gq) < TOL_FD and rel_err(Dv, Gu) < TOL_FD
        k = s.derivative_kernel                 # the articulated solve (models above 56 velocities) reads the
        k.set_derivative_method(1)              # springs' loads too: it gives what the dense tail gives
        try:
            for a, b in zip(s.forward_dynamics_derivatives(q, u, tau, 0.2), (Aq, Au)):
                assert rel_err(a, b) < 1e-10
        finally:
            k.set_derivative_method(0)


@pytest.mark.build
def test_refused_by_name():
    five = codegen.load_model(str(EXAMPLES / "five_bar.yaml"))
    s = get_system(five)
    with pytest.raises(ValueError, match="closed loops \\(cut joints"):
        s.linearize(*five.initial_state())
    beam = get_system(codegen.load_model(str(EXAMPLES / "flexible_pendulum.yaml")))
    with pytest.raises(ValueError, match="flexible-beam"):
        beam.forward_dynamics_derivatives(*beam.model.initial_state())
    c = dsys(chain(5), ref_point="joint")
    c.set_hook(lambda t, q, u: np.zeros(5))
    try:
        with pytest.raises(ValueError, match="hook"):
            c.forward_dynamics_derivatives(np.zeros(5), np.zeros(5))
    finally:
        c.set_hook(None)




def test_ancestor_runs_of_a_tree():
    """The entries' DOF ranges (codegen.algorithms.tree_plan.ancestor_runs) on a hand tree in preorder: body 0
    (free, 6 DOFs) with a chain 1-2 (1 DOF each) and a branch 3 (a ball, 3 DOFs) whose child 4 has 1 DOF. Walking
    up from each body by runs visits exactly its ancestors' DOFs; each subtree's DOFs are one range; a parent array
    out of preorder (a restructured plan) is refused by name."""
    from codegen.algorithms.tree_plan import ancestor_runs
    parent, nvj = [-1, 0, 1, 0, 3], [6, 1, 1, 3, 1]
    iv = [0, 6, 7, 8, 11]
    r = ancestor_runs(parent, iv, nvj, 12)
    assert r["deriv_refusal"] == ""
    for j in range(5):
        seen, i, c1 = [], j, iv[j]
        while True:
            seen += range(r["drun0"][i], c1)
            i = r["drunp"][i]
            if i < 0:
                break
            c1 = iv[i] + nvj[i]
        anc, a = [], parent[j]
        while a >= 0:
            anc += range(iv[a], iv[a] + nvj[a])
            a = parent[a]
        assert sorted(seen) == sorted(anc), j
    assert r["dsubv"] == [12, 8, 8, 12, 12]
    assert r["drun0"][2] == 0 and r["drunp"][2] == -1        # 0-1-2: one run of consecutive DOFs
    assert r["drun0"][4] == 8 and r["drunp"][4] == 0         # 3-4 a run (DOFs 8..11), then body 0's
    bad = ancestor_runs([-1, 0, 0, 1], [0, 1, 2, 3], [1, 1, 1, 1], 4)   # body 3's parent 1, after body 2 (not preorder)
    assert "preorder" in bad["deriv_refusal"]



@pytest.mark.build
def test_factored_tail_of_a_serial_chain():
    """On a serial chain the factored tail (M^-1 by mb_chain_minv, the products by mb_factored) gives what the dense
    tail gives: a free base and every joint type (column groups of several DOFs), spring-dampers, joint forces, point
    springs (partials off the diagonal), and on chain(5) a state feedback gain (a full matrix of partials)."""
    d = random_tree(9, seed=5, types=JOINT_MIX + ("spherical", "planar"), floating=True, forces=True).to_dict()
    for k, j in enumerate(d["joints"]):                     # re-hang every body on the one before it
        j["parent"] = "ground" if k == 0 else d["joints"][k - 1]["child"]
    m = codegen.model_from_dict(d)
    assert m.point_springs and m.springs and m.joints[0].type == "free" and len({t.type for t in m.joints}) >= 5
    rng = np.random.default_rng(15)
    c5 = dsys(chain(5), ref_point="joint")
    for s, K in ((dsys(m, "recursive", ref_point="centroid"), None), (c5, rng.normal(size=(5, 10)))):
        k = s.derivative_kernel
        q, u = random_state(s.model, rng)
        tau = rng.normal(size=s.model.nv)
        if K is not None:
            s.set_feedback(K, np.r_[q, u])
        try:
            k.set_derivative_method(0)
            ref = s.forward_dynamics_derivatives(q, u, tau, 0.1)
            k.set_derivative_method(2)
            for a, b in zip(s.forward_dynamics_derivatives(q, u, tau, 0.1), ref):
                assert rel_err(a, b) < 1e-12
        finally:
            k.set_derivative_method(0)
            s.set_feedback(None)
