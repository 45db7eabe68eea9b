"""mstmm on floating bases, free joints deeper in the tree and every other joint type (the hinge condensation
derived in codegen/algorithms/mstmm/spatial.py), and its joint wrenches (kernel.joint_wrench from the state
vectors): against the recursive and dense families (whose wrenches come from an RNEA pass), the numpy
spatial reference, closed forms for the free joint, and the M4 space robot (examples/space_robot.yaml)."""
import numpy as np
import pytest

import codegen
from codegen.algorithms.mstmm.spatial import riccati_tree
from codegen.compiler import generated_source
from codegen.models import JOINT_MIX, random_state, random_tree
from codegen.symbolic.body_kernels import body_axes_ball
from support.systems import EXAMPLES, get_system, rel_err

TOL = 1e-10          # accelerations
WTOL = 1e-9          # joint wrenches


@pytest.fixture(scope="module")
def mixed():
    """Free base; every joint type; body 10 is on a free joint and carries two more free-jointed bodies
    (a junction whose inputs are free joints, mst_input_free), a revolute tip hangs from body 1."""
    m = random_tree(14, seed=7, types=JOINT_MIX + ("free", "revolute", "spherical"), floating=True)
    types = [j.type for j in m.joints]
    assert set(types) == set(JOINT_MIX) | {"free"} and types[10:13] == ["free"] * 3
    ch = [j.child for j in m.joints]
    assert [j.parent for j in m.joints[10:13]] == [ch[1], ch[10], ch[10]]
    return m


def _world(st):
    """(F, M) world frame from the MSTMM states: the parent exerts -q and +m (Sect. 2.1)."""
    return -st[:, 9:12], st[:, 6:9]


@pytest.mark.build
def test_mixed_tree_matches_recursive_dense_and_numpy_reference(mixed):
    mst, rec, den = (get_system(mixed, "mstmm"), get_system(mixed, "recursive", ref_point="joint"),
                     get_system(mixed, "dense"))
    rng = np.random.default_rng(8)
    free = [k for k, j in enumerate(mixed.joints) if j.type == "free"]
    for trial in range(4):
        q, u = random_state(mixed, rng)
        tau = rng.normal(size=mixed.nv) if trial % 2 else None
        ud = mst.forward_dynamics(q, u, tau)
        assert rel_err(ud, rec.forward_dynamics(q, u, tau)) < TOL, trial
        assert rel_err(ud, den.forward_dynamics(q, u, tau)) < TOL, trial
        W = mst.kernel.joint_wrench(q, u, tau)
        assert rel_err(W, den.kernel.joint_wrench(q, u, tau)) < WTOL, trial
        assert rel_err(W, rec.kernel.joint_wrench(q, u, tau)) < WTOL, trial
        # the numpy reference of the kernel's algorithm: accelerations, every state z = [r'', Omega', m, q]
        ref = riccati_tree(mixed, q, u, tau)
        assert rel_err(ud, ref["udot"]) < TOL
        st = mst.kernel.mstmm_states(q, u, tau)
        assert rel_err(st, ref["z"]) < TOL
        # a free hinge passes nothing but its joint force: S' = O (the kernel sets it exactly)
        scale = max(np.abs(ref["S"][k]).max() for k in range(len(mixed.joints)) if k not in free)
        assert max(np.abs(ref["S"][k]).max() for k in free) < 1e-13 * scale
        if tau is None:
            assert np.abs(W[free]).max() < 1e-12 * np.abs(W).max()


@pytest.mark.build
def test_free_joint_wrench_is_its_joint_force(mixed):
    """Closed form: a free joint with generalized force tau = (f in the parent joint frame, n in the body frame)
    transmits exactly that wrench, i.e. (R^T f, n) in the child's frame (R: the joint rotation)."""
    mst = get_system(mixed, "mstmm")
    rng = np.random.default_rng(9)
    q, u = random_state(mixed, rng)
    tau = rng.normal(size=mixed.nv)
    W = mst.joint_wrenches(q, u, tau)
    offs = mixed.q_offsets()
    for k, j in enumerate(mixed.joints):
        if j.type != "free":
            continue
        (iq, iv) = offs[k]
        w, x, y, z = q[iq + 3:iq + 7]
        R = np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
                      [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
                      [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)]])
        want = np.concatenate([R.T @ tau[iv:iv + 3], tau[iv + 3:iv + 6]])
        assert np.allclose(W[k], want, rtol=0, atol=1e-12 * np.abs(tau).max()), j.name


def test_generated_code_for_free_joints(mixed):
    """The free joint's hinge leaves S' = O as the workspace's calloc made it (no S - W G, no stores), its parents
    read only its e (mst_input_free); the ball's hinge stores only the S_qa block of S'."""
    src = generated_source(mixed, "mstmm")
    hinge = src.split("cdef inline void mst_hinge_free(")[1].split("cdef inline void mst_hinge_")[0]
    assert "Sh[" not in hinge and "memset(Sh" not in hinge and "s -= W" not in hinge
    ball = src.split("cdef inline void mst_hinge_spherical(")[1].split("cdef inline void mst_")[0]
    assert "memset(Sh" not in ball and ball.count("Sh[6 * (3 + ") == 2     # S_qa = S - W G: its lower half, mirrored
    assert "self.mst_input_free(10, 11, S, e)" in src and "self.mst_input_free(10, 12, S, e)" in src
    sweep = src.split("cdef void fd(")[1].split("cdef inline void mst_internal")[0]
    assert "self.mst_hinge_free(" in sweep and "self.mst_back_free(j, ud)" in sweep


def test_ball_hinges_read_A_and_omega(mixed):
    """A ball (rates in body axes) has H = [0; A_j], no product terms and omega_rel = Omega_j - Omega_i: its hinge
    reads A and Omega, and the kinematics pass writes no Hw, cw6 or rel for it (the other joint types do).  The
    physics of the shortcut is checked against dense by the tests of this file and test_mstmm_kernel."""
    assert body_axes_ball("spherical")
    assert not any(body_axes_ball(t) for t in ("revolute", "free", "universal", "planar", "fixed"))
    src = generated_source(mixed, "mstmm")
    kin = src.split("cdef void kin_range(")[1].split("cdef void poses(")[0]
    calls = {c.split("(")[0]: c for c in kin.replace("\n", " ").split(" kin_")[1:]}
    assert calls and all(("self.Hw" in c) == (not k.startswith("spherical_")) for k, c in calls.items())
    ball = src.split("static inline void kin_spherical_")[1].split("static inline void ")[0]
    assert "H[" not in ball and "rel[" not in ball and "cw[" not in ball
    for fn in ("mst_hinge_spherical", "mst_back_spherical", "mst_bias_spherical"):
        body = src.split(f"cdef inline void {fn}(")[1].split("cdef inline void ")[0].split("cdef void ")[0]
        assert "self.Hw" not in body and "self.rel" not in body and "self.cw6" not in body, fn
    assert "self.Hw + 36 * j" in src.split("cdef inline void mst_hinge_revolute(")[1]


@pytest.mark.build
def test_floating_revolute_ball_tree_with_force_elements():
    """The brief's case: random_tree(..., ("revolute", "spherical"), floating=True) with joint springs, point
    springs (one on the free base) and time-dependent joint forces, against dense."""
    m = random_tree(16, seed=21, types=("revolute", "spherical"), floating=True, forces=True)
    assert m.joints[0].type == "free" and m.point_springs and m.joint_forces
    mst, den = get_system(m, "mstmm"), get_system(m, "dense")
    rng = np.random.default_rng(10)
    for trial in range(4):
        q, u = random_state(m, rng)
        tau = rng.normal(size=m.nv) if trial % 2 else None
        t = float(rng.uniform(0, 0.3))
        assert rel_err(mst.forward_dynamics(q, u, tau, t), den.forward_dynamics(q, u, tau, t)) < TOL, trial
        assert rel_err(mst.joint_wrenches(q, u, tau, t), den.joint_wrenches(q, u, tau, t)) < WTOL, trial
    # the whole-run interface: one compiled call over the samples, the model's own forces at each time
    X = np.array([np.concatenate(random_state(m, rng)) for _ in range(5)])
    ts = np.linspace(0.0, 0.2, 5)
    Wr = mst.kernel.joint_wrench_at(X, ts)
    for k in range(5):
        assert np.array_equal(Wr[k], mst.kernel.joint_wrench(X[k, :m.nq], X[k, m.nq:], None, ts[k]))
    assert rel_err(Wr, den.kernel.joint_wrench_at(X, ts)) < WTOL


@pytest.fixture(scope="module")
def space_robot():
    return codegen.load_model(str(EXAMPLES / "space_robot.yaml"))


@pytest.mark.build
def test_space_robot(space_robot):
    """M4 (free base, two 6R arms, no gravity, sinusoidal torques): accelerations and wrenches against recursive
    at random states; a 2 s RK4 run with the joint wrenches of every sample against recursive; the
    free base transmits nothing; the arm-1 shoulder's wrench balances the momentum of its subtree."""
    m = space_robot
    assert m.joints[0].type == "free" and np.all(m.gravity == 0)
    mst, rec = get_system(m, "mstmm"), get_system(m, "recursive")
    rng = np.random.default_rng(12)
    for trial in range(3):
        q, u = random_state(m, rng)
        t = float(rng.uniform(0, 10))
        ud = mst.forward_dynamics(q, u, None, t)
        assert rel_err(ud, rec.forward_dynamics(q, u, None, t)) < TOL
        W = mst.joint_wrenches(q, u, None, t)
        assert rel_err(W, rec.joint_wrenches(q, u, None, t)) < WTOL
        assert np.abs(W[0]).max() < 1e-12 * np.abs(W).max()
    a = mst.simulate(2.0, 0.002, "rk4", joint_wrench=True)
    b = rec.simulate(2.0, 0.002, "rk4", joint_wrench=True)
    assert np.max(np.abs(a.q - b.q)) < 1e-10 and np.max(np.abs(a.q[-1, 7:])) > 0.05
    Wa, Wb = a.extra["joint_wrench"], b.extra["joint_wrench"]
    assert Wa.shape == (len(a.t), len(m.joints), 6) and rel_err(Wa, Wb) < WTOL
    assert np.abs(Wa[:, 0]).max() < 1e-12 * np.abs(Wa).max()
    # shoulder arm1_j1: the force it transmits is the rate of linear momentum of the arm (second differences
    # of the NPZ's centroid trajectory, independent of both solvers); joint frame = base frame axes there
    k = a.body_names.index("L11")
    arm = [a.body_names.index(f"L1{i}") for i in range(1, 7)]
    mass = np.array([m.body(a.body_names[i]).mass for i in arm])
    dt = a.t[1] - a.t[0]
    c = a.body_com[:, arm]
    p_dd = np.einsum("b,tbk->tk", mass, (c[2:] - 2 * c[1:-1] + c[:-2]) / dt ** 2)
    R = np.array([_quat_matrix(x) for x in a.body_quat[1:-1, k]])         # L11's frame = its joint frame
    F_world = np.einsum("tab,tb->ta", R, Wa[1:-1, k, :3])
    assert np.max(np.abs(F_world - p_dd)) < 1e-4 * np.abs(p_dd).max()


def _quat_matrix(qw):
    w, x, y, z = qw
    return np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
                     [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
                     [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)]])
