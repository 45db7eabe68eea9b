"""Generated Riccati MSTMM kernels (algorithm "mstmm", Rui et al. 2020, Algorithms A and B) against the
recursive solver, the numpy reference of the paper's example (codegen/algorithms/mstmm/reference.py) and momentum
balance; joint wrenches from the state vectors (free joints and other hinge types: test_mstmm_free.py)."""
import numpy as np
import pytest

import codegen
from codegen.algorithms.mstmm import reference as mstmm_ref
from codegen.compiler import generated_source
from codegen.model.rotations import quat_to_rot
from codegen.models import branch_system, random_state, random_tree
from support.systems import EXAMPLES, get_system, rel_err


@pytest.fixture(scope="module")
def m1():
    return codegen.load_model("examples/balance_pendulum.yaml")


@pytest.fixture(scope="module")
def m5():
    return branch_system(21)


@pytest.mark.build
def test_m1_accelerations_match_recursive(m1):
    mst, rec = get_system(m1, "mstmm"), get_system(m1, ref_point="origin")
    rng = np.random.default_rng(1)
    q, u = m1.initial_state()
    assert rel_err(mst.forward_dynamics(q, u), rec.forward_dynamics(q, u)) < 1e-9
    for trial in range(8):
        q, u = random_state(m1, rng)
        tau = rng.normal(size=m1.nv) if trial % 2 else None
        ref = rec.forward_dynamics(q, u, tau)
        assert rel_err(mst.forward_dynamics(q, u, tau), ref) < 1e-9, trial


@pytest.mark.build
def test_m1_matches_numpy_reference_of_the_paper(m1):
    """Absolute angular accelerations and the MSTMM states (m_z, q_x, q_y) at the pivot of body 7 and at
    the upper end of body 1 agree with codegen/mstmm_ref.py (the paper's Sect. 5.1 in numpy)."""
    mst = get_system(m1, "mstmm")
    rng = np.random.default_rng(2)
    for _ in range(4):
        q, u = random_state(m1, rng)
        q7, q1, q5, q3 = q
        th = [q7 + q1, q7 + q5 + q3, q7 + q5, q7]                       # rods 1, 3, 5, 7
        thd = [u[0] + u[1], u[0] + u[2] + u[3], u[0] + u[2], u[0]]
        ref = mstmm_ref.m1_solve(th, thd, hinge="articulated")
        ud = mst.forward_dynamics(q, u)
        mine = np.array([ud[0] + ud[1], ud[0] + ud[2] + ud[3], ud[0] + ud[2], ud[0]])
        want = np.array([ref["thetadd"][i] for i in (1, 3, 5, 7)])
        assert rel_err(mine, want) < 1e-10
        st = mst.kernel.mstmm_states(q, u)
        for row, point in ((0, "7,O"), (1, "1,O")):
            got = st[row, [8, 9, 10]]                                   # m_z, q_x, q_y
            assert np.allclose(got, ref["forces"][point], rtol=0, atol=1e-10 * max(1, np.abs(got).max())), point
            assert np.allclose(st[row, [0, 1, 5]], ref["states"][point][:3], atol=1e-10 * np.abs(want).max())


@pytest.mark.build
def test_m1_rk4_run_matches_recursive(m1):
    """2 s of RK4 at dt = 1e-3 from the seed's initial state: same trajectory to 1e-8 rad."""
    mst, rec = get_system(m1, "mstmm"), get_system(m1, ref_point="origin")
    ra = mst.simulate(2.0, 1e-3, "rk4")
    rb = rec.simulate(2.0, 1e-3, "rk4")
    assert np.max(np.abs(rb.q)) > 0.5                                   # it does move
    assert np.max(np.abs(ra.q - rb.q)) < 1e-8
    assert np.max(np.abs(ra.u - rb.u)) < 1e-7


def _centroid_accelerations(sys_, q, u, ud, h=2e-4):
    """World centroid accelerations by central second differences along q(t +- h) (independent of the
    kernel's acceleration formulas): q(t +- h) = q +- h qd + h^2/2 qdd, qdd by differencing qdot."""
    qd = sys_.qdot(q, u)
    eps = 1e-6
    qdd = (sys_.qdot(q + eps * qd, u + eps * ud) - sys_.qdot(q - eps * qd, u - eps * ud)) / (2 * eps)
    com = [sys_.body_poses(q + s * h * qd + 0.5 * (s * h) ** 2 * qdd)[0] for s in (-1.0, 0.0, 1.0)]
    return (com[0] - 2 * com[1] + com[2]) / (h * h)


def _subtrees(model):
    idx = {j.child: k for k, j in enumerate(model.joints)}
    parent = [idx.get(j.parent, -1) for j in model.joints]
    sub = [[k] for k in range(len(parent))]
    for k in range(len(parent) - 1, -1, -1):
        if parent[k] >= 0:
            sub[parent[k]] += sub[k]
    return sub


@pytest.mark.build
@pytest.mark.parametrize("which", ["m1", "m5"])
def test_joint_forces_momentum_balance(which, m1, m5):
    """Every joint's reaction equals the momentum balance of the subtree it carries:
    F_j = sum_k m_k (a_ck - g) (for the ceiling hinge: total weight plus inertia forces), and smooth
    hinges transmit no moment about their free axes (revolute: M_z = 0, ball: M = 0)."""
    model = m1 if which == "m1" else m5
    mst = get_system(model, "mstmm")
    masses = np.array([b.mass for b in model.bodies])
    g = model.gravity
    sub = _subtrees(model)
    rng = np.random.default_rng(3)
    states = [model.initial_state()] + [random_state(model, rng) for _ in range(3)]
    for q, u in states:
        ud = mst.forward_dynamics(q, u)
        ac = _centroid_accelerations(mst, q, u, ud)
        st = mst.kernel.mstmm_states(q, u)
        F, M = -st[:, 9:12], st[:, 6:9]                  # the parent exerts -q and +m (Sect. 2.1)
        want = np.array([np.sum(masses[s, None] * (ac[s] - g), axis=0) for s in sub])
        scale = np.abs(want).max()
        assert np.max(np.abs(F - want)) < 1e-5 * scale
        assert np.allclose(F[0], np.sum(masses[:, None] * (ac - g), axis=0), atol=1e-5 * scale)
        if which == "m1":
            assert np.max(np.abs(M[:, 2])) < 1e-10 * scale
        else:
            assert np.max(np.abs(M)) < 1e-10 * scale
    # at rest in the initial configuration of M5 the ceiling carries the weight plus the inertia forces
    q, u = model.initial_state()
    assert -mst.kernel.mstmm_states(q, u)[0, 10] > 0


@pytest.mark.build
def test_m5_ball_joints_match_recursive(m5):
    mst, rec = get_system(m5, "mstmm"), get_system(m5, ref_point="origin")
    rng = np.random.default_rng(4)
    for trial in range(8):
        q, u = random_state(m5, rng)
        tau = rng.normal(size=m5.nv) if trial % 2 else None
        assert rel_err(mst.forward_dynamics(q, u, tau), rec.forward_dynamics(q, u, tau)) < 1e-9, trial


@pytest.mark.build
def test_random_revolute_ball_tree_with_force_elements():
    """A random tree of revolute (arbitrary spatial axes) and ball joints with several junctions, joint
    springs, joint forces and point springs: the same accelerations as the recursive solver, and the same joint
    wrenches as its RNEA pass (mstmm takes them from its state vectors)."""
    m = random_tree(24, seed=3, types=("revolute", "spherical"), forces=True)
    kids = {}
    for j in m.joints:
        kids[j.parent] = kids.get(j.parent, 0) + 1
    assert max(kids.values()) >= 3
    mst, rec = get_system(m, "mstmm"), get_system(m, ref_point="centroid")
    rng = np.random.default_rng(6)
    for trial in range(5):
        q, u = random_state(m, rng)
        tau = rng.normal(size=m.nv)
        t = float(rng.uniform(0, 0.3))
        assert rel_err(mst.forward_dynamics(q, u, tau, t), rec.forward_dynamics(q, u, tau, t)) < 1e-9, trial
        assert rel_err(mst.joint_wrenches(q, u, tau, t), rec.joint_wrenches(q, u, tau, t)) < 1e-9, trial


def test_generated_structure_is_linear_and_checked():
    """Step B1 is planned in Python: one loop per run of chain bodies, explicit code per junction only; only
    the hinge and input code of the model's joint types is generated, the workspace sized by the largest."""
    src = {n: generated_source(branch_system(n), "mstmm") for n in (21, 999)}
    for s in src.values():
        serial, pre = s.split("cdef void sweep(")[1].split("cdef void sweep_pre(")       # sweep_pre: threads=2
        assert serial.count("self.mst_body(") == 6    # loops: tip 5, chain 7..9, tip 1, chain 3, 13..N; junction 11
        assert pre.split("cdef inline void mst_internal")[0].count("self.mst_body(") == 6 and "mb_publish" in pre
        assert "multi-input body body11" in s
    sweep = {n: s.split("cdef void fd(")[1].split("cdef void mst_states")[0] for n, s in src.items()}
    assert sweep[999].count("\n") == sweep[21].count("\n")   # the tables grow with N, the code does not
    assert "def mst_input_free" not in src[21] and "def mst_hinge_prismatic" not in src[21]
    assert "work layout (75 per body" in src[21]                # S 36, e 6, G 18, g0 3, c 6, zb 6
    assert "work layout (61 per body" in generated_source(codegen.models.chain(3), "mstmm")    # revolute: n = 1


@pytest.mark.build
def test_joint_wrenches_in_the_npz(m1, tmp_path):
    """simulate(joint_wrench=True) stores the wrenches of every sample (one compiled call, joint_wrench_at) in the
    NPZ, equal to System.joint_wrenches at the sample; the ground pin's force equals the total weight plus the
    inertia forces, taken from the NPZ's own centroid trajectory (second differences, independent of the MSTMM
    states); the smooth hinges transmit no moment about their axes."""
    from codegen import load_result
    mst = get_system(m1, "mstmm")
    res = mst.simulate(0.3, 1e-3, "rk4", joint_wrench=True)
    back = load_result(res.save(tmp_path / "m1.npz"))
    W = back.extra["joint_wrench"]
    assert W.shape == (len(res.t), 4, 6) and list(back.extra["joint_names"]) == [j.name for j in m1.joints]
    assert np.array_equal(W[100], mst.joint_wrenches(res.q[100], res.u[100], t=res.t[100]))
    dt = res.t[1] - res.t[0]
    ac = (back.body_com[2:] - 2 * back.body_com[1:-1] + back.body_com[:-2]) / dt**2      # nt-2 x nb x 3
    masses = np.array([m1.body(n).mass for n in back.body_names])
    want = np.einsum("b,tbk->tk", masses, ac - m1.gravity)
    pin = back.body_names.index("body7")           # its joint frame has the body's axes (child_frame: no rotation)
    R = np.array([quat_to_rot(x) for x in back.body_quat[1:-1, pin]])
    F = np.einsum("tab,tb->ta", R, W[1:-1, pin, :3])
    assert np.max(np.abs(F - want)) < 1e-5 * np.abs(want).max()       # measured 3e-7
    assert np.max(np.abs(W[:, :, 5])) < 1e-10 * np.abs(want).max()     # M_z = 0: smooth revolute hinges (axis z)


@pytest.mark.build
def test_figures_script(tmp_path):
    """examples/plot_mstmm_figures.py (Figs. 3 and 4 of the seed) on a short horizon and a small M5."""
    import importlib.util
    import os
    spec = importlib.util.spec_from_file_location(
        "mstmm_figures", str(EXAMPLES / "plot_mstmm_figures.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    assert mod.fig3(str(tmp_path), t_end=0.5) < 1e-12          # max angle difference mstmm vs recursive
    assert mod.fig4(str(tmp_path), N=21, t_end=0.3) < 1e-12
    for f in ("mstmm_fig3_m1.png", "mstmm_m1.npz", "mstmm_fig4_m5_N21.png", "mstmm_m5_N21.npz"):
        assert os.path.getsize(tmp_path / f) > 5000, f
    with np.load(tmp_path / "mstmm_m1.npz") as z:
        assert z["joint_wrench"].shape == (501, 4, 6)


@pytest.mark.build
def test_connection_states_are_accelerations_and_forces(m1, rng):
    """System.connection_states (the state vectors z of eq 1): the angular accelerations are the sums of
    the recursive solver's joint accelerations along the path, the ground pin's point does not move, and
    hinge 1's point (end I1 of body 7) has the rigid-body acceleration of body 7 there."""
    mst, rec = get_system(m1, "mstmm"), get_system(m1)
    q, u = random_state(m1, rng)
    ud = rec.forward_dynamics(q, u)
    z = mst.connection_states(q, u)
    names, iv = mst.body_names, {c: k for k, c in enumerate(m1.velocity_names)}
    a = {n: ud[iv[f"{j}.rate"]] for n, j in (("7", "pin7"), ("1", "hinge1"), ("5", "hinge5"), ("3", "hinge3"))}
    want = {"body7": a["7"], "body1": a["7"] + a["1"], "body5": a["7"] + a["5"], "body3": a["7"] + a["5"] + a["3"]}
    for body, alpha in want.items():
        assert np.allclose(z["alpha"][names.index(body)], [0, 0, alpha], rtol=0, atol=1e-12 * np.abs(ud).max())
    assert np.allclose(z["acc"][names.index("body7")], 0, atol=1e-12)
    th, w = q[m1.coord_names.index("pin7.angle")], u[iv["pin7.rate"]]
    p = -0.5 * np.array([np.cos(th), np.sin(th)])
    acc = a["7"] * np.array([-p[1], p[0]]) - w ** 2 * p
    assert np.allclose(z["acc"][names.index("body1")][:2], acc, rtol=0, atol=1e-12 * np.abs(acc).max())
    W = mst.kernel.joint_wrench(q, u)             # the same states, in each body's reference frame
    _, quat = mst.body_poses(q)
    R = np.array([quat_to_rot(x) for x in quat])      # M1: reference frame = body frame (axes z)
    assert np.allclose(np.einsum("jab,jb->ja", R, W[:, :3]), -z["force"], rtol=0, atol=1e-12 * np.abs(z["force"]).max())
    assert np.allclose(np.einsum("jab,jb->ja", R, W[:, 3:]), z["moment"], rtol=0, atol=1e-12 * np.abs(z["force"]).max())
    with pytest.raises(ValueError, match="mstmm"):
        rec.connection_states(q, u)
