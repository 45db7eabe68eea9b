"""Peer checks that do not share the project's plan: pinocchio models built straight from the model dict.

``tests/support/peers.py`` builds its pinocchio peer from ``Plan.params()`` / ``Plan.body_frames()``, so a mistake
in the plan (say the inertia rotated as R J R^T instead of R^T J R) would be in both sides of every
comparison. Here the reference comes from the dict the model is made of (``tests/support/peers_from_file.py``:
numpy/scipy parse the placements, pinocchio composes the SE3s and transports the inertias), and only the
public API of codegen is used (``model_from_dict``, ``build`` through ``conftest.get_system``, System
methods, ``coord_names`` / ``body_names``).

* ``test_dynamics_vs_pinocchio``: forward dynamics (ABA), inverse dynamics (RNEA), mass matrix (CRBA),
  body poses (forward kinematics) on three trees with tilted axes, rotated parent and child frames (rpy,
  matrix, quat, axis_angle), full inertias and com offsets: fixed base with every scalar joint type, a
  spherical joint and a fixed body with a child; floating base; a revolute/spherical tree for mstmm.
  Algorithms recursive (ref point centroid, joint, origin), dense, mstmm (also on the floating base).
* ``test_single_body_closed_form``: one body on a tilted revolute axis away from its com, by hand.
* ``test_mstmm_joint_wrenches_vs_pinocchio``: ``joint_wrenches`` of mstmm (from its state vectors) against
  pinocchio's RNEA internal forces data.f, fixed and floating base.
* ``test_force_elements_vs_jacobian``: point spring-dampers (body-body, body-ground), joint
  spring-dampers (universal, cylindrical, planar, prismatic, revolute) and a joint force, as generalized
  forces inverse_dynamics(without) - inverse_dynamics(with), against J^T F with a finite-difference J.
* ``test_*_can_fail``: the same comparisons with deliberately broken references must fail.
"""
from __future__ import annotations

import copy

import numpy as np
import pytest

pytestmark = pytest.mark.build          # every test here compiles or loads a kernel (tests/conftest.py)

pin = pytest.importorskip("pinocchio")

from support import peers_from_file as pf  # noqa: E402
from support.systems import get_system  # noqa: E402

import codegen  # noqa: E402

TOL = 1e-9
FORCE_TOL = 1e-6
N_STATES = 4

# ---------------------------------------------------------------- models (dicts)

_FORCES_FIXED = (
    {"name": "ps_bb", "type": "point_spring_damper", "body_a": "b4", "point_a": [0.1, -0.2, 0.15],
     "body_b": "b6", "point_b": [-0.05, 0.3, 0.1], "stiffness": 37.0, "damping": 2.5, "length": 0.3},
    {"name": "ps_gb", "type": "point_spring_damper", "body_a": "ground", "point_a": [0.5, 0.4, -0.3],
     "body_b": "b7", "point_b": [0.2, 0.1, -0.1], "stiffness": 21.0, "damping": 1.5, "length": 0.2},
    {"name": "js_u", "type": "joint_spring_damper", "joint": "j1", "stiffness": [3.0, 5.0],
     "damping": [0.4, 0.7], "q_ref": [0.2, -0.3]},
    {"name": "js_c", "type": "joint_spring_damper", "joint": "j4", "stiffness": [2.0, 11.0],
     "damping": [0.3, 0.9], "q_ref": [-0.1, 0.05]},
    {"name": "js_p", "type": "joint_spring_damper", "joint": "j7", "stiffness": [4.0, 6.0, 1.5],
     "damping": [0.2, 0.5, 0.1], "q_ref": [0.1, -0.2, 0.3]},
    {"name": "js_r", "type": "joint_spring_damper", "joint": "j0", "stiffness": 2.5, "damping": 0.35,
     "q_ref": 0.4},
    {"name": "jf", "type": "joint_force", "joint": "j1", "dof": 1, "value": {"constant": 1.7}},
)
_FORCES_FLOATING = (
    {"name": "ps_gb", "type": "point_spring_damper", "body_a": "ground", "point_a": [0.3, -0.4, 0.8],
     "body_b": "b3", "point_b": [0.1, 0.2, -0.1], "stiffness": 15.0, "damping": 1.2, "length": 0.5},
    {"name": "ps_bb", "type": "point_spring_damper", "body_a": "b1", "point_a": [0.2, 0.0, -0.1],
     "body_b": "b5", "point_b": [0.0, -0.15, 0.25], "stiffness": 25.0, "damping": 0.8, "length": 0.1},
    {"name": "js_u", "type": "joint_spring_damper", "joint": "j3", "stiffness": [3.0, 1.0],
     "damping": [0.5, 0.2], "q_ref": [0.3, 0.1]},
    {"name": "js_pr", "type": "joint_spring_damper", "joint": "j5", "stiffness": 8.0, "damping": 0.6,
     "q_ref": -0.1},
)
_FORCES_MSTMM = (
    {"name": "ps_bb", "type": "point_spring_damper", "body_a": "b2", "point_a": [0.1, 0.1, 0.0],
     "body_b": "b5", "point_b": [-0.2, 0.0, 0.1], "stiffness": 30.0, "damping": 1.0, "length": 0.25},
    {"name": "js_0", "type": "joint_spring_damper", "joint": "j0", "stiffness": 4.0, "damping": 0.3,
     "q_ref": -0.2},
    {"name": "js_3", "type": "joint_spring_damper", "joint": "j3", "stiffness": 2.0, "damping": 0.6,
     "q_ref": 0.5},
)

MODELS = {
    # body 0 has three children, the fixed body b5 has a child; every scalar joint type plus spherical
    "fixed": pf.tree_dict("indep_fixed", [-1, 0, 0, 0, 1, 2, 5, 3],
                          ["revolute", "universal", "spherical", "prismatic", "cylindrical", "fixed",
                           "revolute", "planar"], seed=101, forces=_FORCES_FIXED),
    "floating": pf.tree_dict("indep_floating", [-1, 0, 0, 2, 0, 4],
                             ["free", "spherical", "revolute", "universal", "revolute", "prismatic"],
                             seed=202, gravity=(-0.7, 9.81, 1.3), forces=_FORCES_FLOATING),
    "mstmm": pf.tree_dict("indep_mstmm", [-1, 0, 1, 0, 3, 3],
                          ["revolute", "spherical", "revolute", "revolute", "spherical", "revolute"],
                          seed=303, gravity=(1.1, -3.0, -9.0), forces=_FORCES_MSTMM),
}

# (model, algorithm, options): 3 + 3 + 1 builds here, 2 for the single body. Every reference point meets the peer on
# one of the trees (they agree with each other to round-off on every joint type: tests/algorithms/recursive/
# test_recursive.py; the floating humanoid at the centroid meets pinocchio: tests/peers/test_peers.py)
ALGS = {"fixed": [("recursive", {"ref_point": "centroid"}), ("recursive", {"ref_point": "origin"}), ("dense", {})],
        "floating": [("recursive", {"ref_point": "joint"}), ("dense", {}), ("mstmm", {})]}
CASES = [(m, a, o) for m in ("fixed", "floating") for a, o in ALGS[m]] + [("mstmm", "mstmm", {})]


def _id(case):
    m, a, o = case
    return f"{m}-{a}" + (f"-{o['ref_point']}" if o else "")


def system_for(d, algorithm, options):
    return get_system(codegen.model_from_dict(copy.deepcopy(d), source=d["name"] + ".yaml"), algorithm, **options)


def rel_err(a, b) -> float:
    a, b = np.asarray(a, float), np.asarray(b, float)
    return float(np.max(np.abs(a - b)) / max(np.max(np.abs(b)), 1e-300))


def quat_to_matrix(qs):
    return np.array([pf.quat_wxyz_to_matrix(x) for x in qs])


def _compare_all(s, peer, d, seed):
    """Worst relative errors (fd, id, M, com, rot) over N_STATES random states."""
    rng = np.random.default_rng(seed)
    worst = dict.fromkeys(("fd", "id", "M", "com", "rot"), 0.0)
    for _ in range(N_STATES):
        q, u = pf.random_state(d, s.model.coord_names, rng)
        tau, udot = rng.normal(scale=3.0, size=s.nv), rng.normal(scale=3.0, size=s.nv)
        worst["fd"] = max(worst["fd"], rel_err(s.forward_dynamics(q, u, tau), peer.aba(q, u, tau)))
        worst["id"] = max(worst["id"], rel_err(s.inverse_dynamics(q, u, udot), peer.rnea(q, u, udot)))
        worst["M"] = max(worst["M"], rel_err(s.mass_matrix(q), peer.crba(q)))
        com, quat = s.body_poses(q)
        com_ref, rot_ref = peer.body_poses(q)
        worst["com"] = max(worst["com"], rel_err(com, com_ref))
        worst["rot"] = max(worst["rot"], float(np.max(np.abs(quat_to_matrix(quat) - rot_ref))))
    return worst


# ---------------------------------------------------------------- 1. dynamics vs pinocchio

@pytest.mark.parametrize("case", CASES, ids=_id)
def test_dynamics_vs_pinocchio(case):
    name, algorithm, options = case
    d = pf.without_forces(MODELS[name])
    s = system_for(d, algorithm, options)
    assert s.nq == sum(pf.NQ_NV[j["type"]][0] for j in d["joints"])
    peer = pf.DictPeer(d, s.model.coord_names, s.body_names)
    worst = _compare_all(s, peer, d, seed=7)
    bad = {k: v for k, v in worst.items() if not v < TOL}
    assert not bad, f"{_id(case)}: relative errors vs pinocchio from the dict: {worst}"


# ---------------------------------------------------------------- 2. one body by hand

def _rot_axis(a, angle):
    K = pf.skew(a)
    return np.eye(3) + np.sin(angle) * K + (1 - np.cos(angle)) * K @ K


SINGLE = {
    "name": "indep_single", "gravity": [0.8, -2.5, -9.81],
    "bodies": [{"name": "rock", "mass": 2.3, "com": [0.31, -0.17, 0.42],
                "inertia": [0.09, 0.13, 0.07, 0.021, -0.012, 0.017]}],       # ixx iyy izz ixy ixz iyz
    "joints": [{"name": "hinge", "type": "revolute", "parent": "ground", "child": "rock",
                "axis": list(np.array([1.0, 2.0, 3.0]) / np.sqrt(14.0)),
                "parent_frame": {"pos": [0.2, -0.4, 1.1], "rpy": [0.4, -0.7, 1.9]},
                "child_frame": {"pos": [-0.15, 0.25, 0.05],
                                "matrix": _rot_axis(np.array([2.0, -1.0, 2.0]) / 3.0, 0.8).tolist()}}],
}


def _single_by_hand(d, q, u, tau, wrong_inertia=False):
    """(qdd, com_world, R_body, I_axis, gravity torque) of the single-body model, in closed form."""
    b, j = d["bodies"][0], d["joints"][0]
    g = np.asarray(d["gravity"], float)
    m, c = b["mass"], np.asarray(b["com"], float)
    xx, yy, zz, xy, xz, yz = b["inertia"]
    J = np.array([[xx, xy, xz], [xy, yy, yz], [xz, yz, zz]])
    p0, r, pi, ya = np.asarray(j["parent_frame"]["pos"]), *j["parent_frame"]["rpy"]
    Rp = _rot_axis([0, 0, 1], ya) @ _rot_axis([0, 1, 0], pi) @ _rot_axis([1, 0, 0], r)
    a = np.asarray(j["axis"], float)
    cpos, Rc = np.asarray(j["child_frame"]["pos"]), np.asarray(j["child_frame"]["matrix"])
    Rj = Rp @ _rot_axis(a, q)                         # joint frame in the world
    Rb = Rj @ Rc.T                                    # body frame: joint frame * inverse(child frame)
    origin = p0 - Rb @ cpos
    com = origin + Rb @ c
    rvec = com - p0                                   # from the point on the axis to the com
    aw = Rp @ a
    Jw = J if wrong_inertia else Rb @ J @ Rb.T
    I_axis = aw @ (Jw + m * (rvec @ rvec * np.eye(3) - np.outer(rvec, rvec))) @ aw
    tg = aw @ np.cross(rvec, m * g)
    return (tg + tau) / I_axis, com, Rb, I_axis, tg


@pytest.mark.parametrize("algorithm,options", [("recursive", {"ref_point": "joint"}), ("mstmm", {})],
                         ids=["recursive-joint", "mstmm"])
def test_single_body_closed_form(algorithm, options):
    s = system_for(SINGLE, algorithm, options)
    rng = np.random.default_rng(5)
    for _ in range(4):
        q, u, tau = rng.uniform(-3, 3), rng.normal(scale=2.0), rng.normal()
        qdd, com, Rb, I_axis, tg = _single_by_hand(SINGLE, q, u, tau)
        assert rel_err(s.forward_dynamics([q], [u], [tau]), [qdd]) < TOL
        assert rel_err(s.inverse_dynamics([q], [u], [0.7]), [I_axis * 0.7 - tg]) < TOL
        assert rel_err(s.mass_matrix([q]), [[I_axis]]) < TOL
        c, quat = s.body_poses([q])
        assert rel_err(c[0], com) < TOL
        assert np.max(np.abs(pf.quat_wxyz_to_matrix(quat[0]) - Rb)) < TOL
        assert rel_err(s.energy([q], [u])[0], 0.5 * I_axis * u * u) < TOL
        # the hand formula is sharp: the inertia left in the body frame gives another answer
        assert rel_err(s.forward_dynamics([q], [u], [tau]), [_single_by_hand(SINGLE, q, u, tau, True)[0]]) > 1e-4


# ---------------------------------------------------------------- 3. joint wrenches (mstmm)

@pytest.mark.parametrize("name", ["mstmm", "floating"])
def test_mstmm_joint_wrenches_vs_pinocchio(name):
    """System.joint_wrenches of mstmm (the internal forces of its state vectors, rotated into each joint's
    child-side frame) against pinocchio's data.f of RNEA at the kernel's acceleration (pinocchio's joint frame);
    the floating model's free base and prismatic and universal joints included."""
    d = pf.without_forces(MODELS[name])
    s = system_for(d, "mstmm", {})
    peer = pf.DictPeer(d, s.model.coord_names, s.body_names)
    rng = np.random.default_rng(9)
    worst = 0.0
    for _ in range(N_STATES):
        q, u = pf.random_state(d, s.model.coord_names, rng)
        tau = rng.normal(size=s.nv)
        udot = s.forward_dynamics(q, u, tau)
        assert rel_err(udot, peer.aba(q, u, tau)) < TOL
        ref = peer.joint_wrenches(q, u, udot)
        assert not np.isnan(ref).any()                   # no fixed joints in these two models
        worst = max(worst, rel_err(s.joint_wrenches(q, u, tau), ref))
        # sanity of the reference: RNEA at the kernel's acceleration gives back the applied tau
        assert rel_err(peer.rnea(q, u, udot), tau) < 1e-9
    assert worst < TOL, f"{name}: mstmm joint wrenches vs pinocchio RNEA data.f: rel err {worst:.3e}"


# ---------------------------------------------------------------- 4. force elements vs J^T F

def _applied_by_hand(d, peer, q, u):
    """Generalized force of the dict's force elements, in numpy: J^T F for the point springs (central
    difference J of the attachment points), -k (q - q_ref) - c u for joint springs, e_dof * value."""
    layout = peer.offsets                      # joint name -> (our iq, our iv, nv)
    Q = np.zeros(peer.nv)
    for f in d["forces"]:
        if f["type"] == "point_spring_damper":
            Ja = peer.point_jacobian(q, f["body_a"], f["point_a"])
            Jb = peer.point_jacobian(q, f["body_b"], f["point_b"])
            pa = peer.point_world(q, f["body_a"], f["point_a"])
            pb = peer.point_world(q, f["body_b"], f["point_b"])
            dvec = pb - pa
            ln = np.linalg.norm(dvec)
            e = dvec / ln
            ldot = e @ ((Jb - Ja) @ u)
            T = f["stiffness"] * (ln - f["length"]) + f["damping"] * ldot     # tension
            Q += Ja.T @ (T * e) + Jb.T @ (-T * e)
        elif f["type"] == "joint_spring_damper":
            iq, iv, nv = layout[f["joint"]]
            k, c, qr = (np.broadcast_to(np.asarray(f[x], float), (nv,)) for x in ("stiffness", "damping", "q_ref"))
            Q[iv:iv + nv] += -k * (q[iq:iq + nv] - qr) - c * u[iv:iv + nv]
        elif f["type"] == "joint_force":
            Q[layout[f["joint"]][1] + f["dof"]] += f["value"]["constant"]
    return Q


@pytest.mark.parametrize("case", CASES, ids=_id)
def test_force_elements_vs_jacobian(case):
    name, algorithm, options = case
    d = MODELS[name]
    s_off = system_for(pf.without_forces(d), algorithm, options)       # the same System, numbers switched
    peer = pf.DictPeer(d, s_off.model.coord_names, s_off.body_names)
    rng = np.random.default_rng(11)
    worst = 0.0
    for _ in range(N_STATES):
        q, u = pf.random_state(d, peer.coord_names, rng)
        udot = rng.normal(size=peer.nv)
        id_off = system_for(pf.without_forces(d), algorithm, options).inverse_dynamics(q, u, udot)
        s_on = system_for(d, algorithm, options)
        Q_kernel = id_off - s_on.inverse_dynamics(q, u, udot)
        Q_kernel_fd = s_on.mass_matrix(q) @ (s_on.forward_dynamics(q, u) -
                                             system_for(pf.without_forces(d), algorithm, options).forward_dynamics(q, u))
        Q_ref = _applied_by_hand(d, peer, q, u)
        worst = max(worst, rel_err(Q_kernel, Q_ref), rel_err(Q_kernel_fd, Q_ref))
    assert worst < FORCE_TOL, f"{_id(case)}: generalized forces of the force elements vs J^T F: rel err {worst:.3e}"


# ---------------------------------------------------------------- 5. the checks can fail

@pytest.mark.parametrize("name,mutations", [
    ("fixed", ("parent_rot_T", "child_rot_T", "inertia_RJRt")),
    ("floating", ("parent_rot_T", "child_rot_T", "inertia_RJRt", "free_vel")),
    ("mstmm", ("parent_rot_T", "child_rot_T", "inertia_RJRt")),
])
def test_pinocchio_comparison_can_fail(name, mutations):
    """The peer with one deliberate mistake (rotation transposed, inertia rotated R J R^T, free-joint
    velocity not converted) must disagree with our kernels where the correct peer agrees."""
    algorithm, options = ("mstmm", {}) if name == "mstmm" else ("recursive", {"ref_point": "origin"})
    d = pf.without_forces(MODELS[name])
    s = system_for(d, algorithm, options)
    good = _compare_all(s, pf.DictPeer(d, s.model.coord_names, s.body_names), d, seed=3)
    assert max(good.values()) < TOL, good
    for mut in mutations:
        bad = _compare_all(s, pf.DictPeer(d, s.model.coord_names, s.body_names, mutate=mut), d, seed=3)
        assert max(bad["fd"], bad["id"], bad["M"]) > 1e-4, f"{name}: mutation {mut} not detected: {bad}"


def test_reactions_and_forces_can_fail():
    """Joint wrenches: the same wrenches left in the canonical (K-rotated) frame, or with the moment taken about
    the body's centroid, must be seen; force elements: a wrong damping sign or point in the wrong frame must be
    seen."""
    d = pf.without_forces(MODELS["mstmm"])
    s = system_for(d, "mstmm", {})
    peer = pf.DictPeer(d, s.model.coord_names, s.body_names)
    rng = np.random.default_rng(13)
    q, u = pf.random_state(d, s.model.coord_names, rng)
    ref = peer.joint_wrenches(q, u, s.forward_dynamics(q, u))
    W = s.joint_wrenches(q, u)
    assert rel_err(W, ref) < TOL
    assert rel_err(s.kernel.joint_wrench(q, u), ref) > 1e-3              # canonical frame, not the joint frame
    pin.forwardKinematics(peer.model, peer.data, peer.q_pin(q))
    arm = []                                                               # joint point -> centroid, joint frame
    for n in s.body_names:
        Mj = peer.data.oMi[peer.jid[peer.by_child[n]["name"]]]
        arm.append(Mj.actInv(peer.body_frame(q, n, update=False).act(peer.com[n])))
    about_com = W.copy()
    about_com[:, 3:] -= np.cross(np.array(arm), W[:, :3])
    assert rel_err(about_com, ref) > 1e-3

    dd = MODELS["fixed"]
    s_on = system_for(dd, "recursive", {"ref_point": "origin"})
    peer = pf.DictPeer(dd, s_on.model.coord_names, s_on.body_names)
    q, u = pf.random_state(dd, peer.coord_names, rng)
    udot = rng.normal(size=peer.nv)
    Q_kernel = -s_on.inverse_dynamics(q, u, udot)
    Q_kernel += system_for(pf.without_forces(dd), "recursive", {"ref_point": "origin"}).inverse_dynamics(q, u, udot)
    assert rel_err(Q_kernel, _applied_by_hand(dd, peer, q, u)) < FORCE_TOL
    wrong = copy.deepcopy(dd)
    for f in wrong["forces"]:
        if f["type"] == "point_spring_damper":
            f["damping"] = -f["damping"]
    assert rel_err(Q_kernel, _applied_by_hand(wrong, peer, q, u)) > 1e-4
    wrong = copy.deepcopy(dd)
    wrong["forces"][0]["point_b"] = list(np.asarray(wrong["forces"][0]["point_b"]) + [0.01, 0, 0])
    assert rel_err(Q_kernel, _applied_by_hand(wrong, peer, q, u)) > 1e-4


# ---------------------------------------------------------------- 5. frames, Jacobians, centre of mass, centroidal

@pytest.mark.parametrize("case", CASES + [("floating", "cfa", {})], ids=_id)
def test_kinematics_vs_pinocchio(case):
    """Every body frame's placement, velocity, spatial and classical acceleration and Jacobian in the three
    references, the centre of mass (position, velocity, acceleration, Jacobian) and the centroidal momentum
    matrix, momentum, rate and inertia against pinocchio (frames at the dict's body frames), on every joint type
    and family, with a frame declared on a body (add_frame) at a placement of its own."""
    from support.kinematics import compare
    name, algorithm, options = case
    d = pf.without_forces(MODELS[name])
    s = system_for(d, algorithm, options)
    peer = pf.DictPeer(d, s.model.coord_names, s.body_names)
    frames = dict(peer.body_frame_ids())
    assert set(frames) <= set(s.frames)
    rng = np.random.default_rng(21)
    body = s.body_names[-1]
    pl = pin.SE3(pf.rotation({"rpy": [0.3, -1.1, 2.0]}), np.array([0.2, -0.35, 0.15]))
    if "tool" not in s.frames:
        s.add_frame("tool", body, pl.translation, pl.rotation)
    frames["tool"] = peer.model.addFrame(pin.Frame("tool", peer.support[body], peer.body_pl[body] * pl,
                                                   pin.FrameType.OP_FRAME))
    peer.data = peer.model.createData()
    states = [(*pf.random_state(d, s.model.coord_names, rng), rng.normal(scale=2.0, size=s.nv)) for _ in range(4)]
    worst = compare(s, peer, frames, states)
    bad = {k: v for k, v in worst.items() if not v < TOL}
    assert not bad and len(worst) == (31 if "free" in {t for t, *_ in peer.layout} else 36), \
        f"{_id(case)}: errors vs pinocchio: {bad}"


@pytest.mark.parametrize("name", ["fixed", "floating"])
def test_kinematics_rates_by_differences(name):
    """dJ/dt of every frame in each reference and dA_G/dt equal central differences of our own J and A_G along
    the motion (q +- h qdot(q, u)), on every joint type (the planar and universal joints, whose columns pinocchio
    rates differently, included); and J udot + dJ/dt u is the frame's acceleration (spatial in local and world,
    classical in local_world_aligned), A_G udot + dA_G/dt u the momentum's rate."""
    d = pf.without_forces(MODELS[name])
    s = system_for(d, "recursive", {})
    rng = np.random.default_rng(8)
    q, u = pf.random_state(d, s.model.coord_names, rng)
    ud = rng.normal(size=s.nv)
    h = 1e-6
    qp, qm = q + h * s.qdot(q, u), q - h * s.qdot(q, u)
    acc = {"local": s.frame_acceleration, "world": s.frame_acceleration,
           "local_world_aligned": s.frame_classical_acceleration}
    for f in s.frames:
        for ref in ("local", "world", "local_world_aligned"):
            Jd = s.frame_jacobian_dot(q, u, f, ref)
            fd = (s.frame_jacobian(qp, f, ref) - s.frame_jacobian(qm, f, ref)) / (2 * h)
            assert np.max(np.abs(Jd - fd)) < 1e-6 * max(1.0, np.max(np.abs(fd))), (f, ref)
            assert rel_err(s.frame_jacobian(q, f, ref) @ ud + Jd @ u, acc[ref](q, u, ud, f, ref)) < TOL, (f, ref)
    c = s.centroidal(q, u, ud)
    fd = (s.centroidal(qp, u).A_G - s.centroidal(qm, u).A_G) / (2 * h)
    assert np.max(np.abs(c.A_G_dot - fd)) < 1e-6 * max(1.0, np.max(np.abs(fd)))
    assert rel_err(c.A_G @ ud + c.A_G_dot @ u, c.h_G_dot) < TOL
    assert np.abs(c.A_G_dot).max() > 0.1                  # a moving state: the check can fail


@pytest.mark.parametrize("name", ["fixed", "floating"])
def test_kinematics_derivatives_by_differences(name):
    """d(frame velocity)/dq of every frame in each reference, the derivatives of two frames' spatial and classical
    accelerations with respect to q and u, those of dh_G/dt, d(centre of mass velocity)/dq and dh_G/dq equal central
    differences of our own velocities along each tangent coordinate (peer.perturb: a quaternion rotated in its
    body's frame), on every joint type; the u derivatives are the Jacobians."""
    d = pf.without_forces(MODELS[name])
    s = system_for(d, "recursive", {})
    peer = pf.DictPeer(d, s.model.coord_names, s.body_names)
    q, u = pf.random_state(d, s.model.coord_names, np.random.default_rng(2))
    h = 1e-6

    def fd(f):
        return np.column_stack([(f(peer.perturb(q, k, h)) - f(peer.perturb(q, k, -h))) / (2 * h) for k in range(s.nv)])

    for f in s.frames:
        for ref in ("local", "world", "local_world_aligned"):
            dq, du = s.frame_velocity_derivatives(q, u, f, ref)
            want = fd(lambda x: s.frame_velocity(x, u, f, ref))
            assert np.max(np.abs(dq - want)) < 1e-6 * max(1.0, np.max(np.abs(want))), (f, ref)
            assert rel_err(du, s.frame_jacobian(q, f, ref)) < TOL
    ud = np.random.default_rng(3).normal(size=s.nv)
    E = np.eye(s.nv)
    for f in (s.frames[-1], s.frames[len(s.frames) // 2]):
        for classical, acc in ((False, s.frame_acceleration), (True, s.frame_classical_acceleration)):
            for ref in ("local", "world", "local_world_aligned"):
                dq, du, dud = s.frame_acceleration_derivatives(q, u, ud, f, ref, classical)
                want = fd(lambda x: acc(x, u, ud, f, ref))
                assert np.max(np.abs(dq - want)) < 1e-6 * max(1.0, np.max(np.abs(want))), (f, ref, classical)
                want = np.column_stack([(acc(q, u + h * e, ud, f, ref) - acc(q, u - h * e, ud, f, ref)) / (2 * h)
                                        for e in E])
                assert np.max(np.abs(du - want)) < 1e-6 * max(1.0, np.max(np.abs(want))), (f, ref, classical)
                assert rel_err(dud, s.frame_jacobian(q, f, ref)) < TOL
    dq, du, dud = s.centroidal_rate_derivatives(q, u, ud)
    want = fd(lambda x: s.centroidal(x, u, ud).h_G_dot)
    assert np.max(np.abs(dq - want)) < 1e-6 * max(1.0, np.max(np.abs(want))) and np.abs(want).max() > 0.1
    want = np.column_stack([(s.centroidal(q, u + h * e, ud).h_G_dot - s.centroidal(q, u - h * e, ud).h_G_dot)
                            / (2 * h) for e in E])
    assert np.max(np.abs(du - want)) < 1e-6 * max(1.0, np.max(np.abs(want)))
    assert rel_err(dud, s.centroidal(q, u).A_G) < TOL
    dq, du = s.com_velocity_derivatives(q, u)
    want = fd(lambda x: s.center_of_mass(x, u).velocity)
    assert np.max(np.abs(dq - want)) < 1e-6 * max(1.0, np.max(np.abs(want))) and np.abs(want).max() > 0.1
    assert rel_err(du, s.com_jacobian(q)) < TOL
    dq, du = s.centroidal_derivatives(q, u)
    want = fd(lambda x: s.centroidal(x, u).h_G)
    assert np.max(np.abs(dq - want)) < 1e-6 * max(1.0, np.max(np.abs(want))) and np.abs(want).max() > 0.1
    assert rel_err(du, s.centroidal(q, u).A_G) < TOL


def test_kinematics_batches_equal_the_single_state_calls():
    """The *_batch forms (one compiled loop over the rows) equal the single-state calls row by row, for one frame
    and a list of them; bad shapes are refused by name."""
    d = pf.without_forces(MODELS["floating"])
    s = system_for(d, "recursive", {})
    rng = np.random.default_rng(12)
    Q, U = map(np.array, zip(*[pf.random_state(d, s.model.coord_names, rng) for _ in range(5)]))
    names = s.frames[1:4]
    R, p = s.frame_placement_batch(Q, names)
    V = s.frame_velocity_batch(Q, U, names, "world")
    G, Gv = s.center_of_mass_batch(Q, U)
    for k in range(len(Q)):
        for i, f in enumerate(names):
            R1, p1 = s.frame_placement(Q[k], f)
            assert rel_err(R[k, i], R1) < TOL and rel_err(p[k, i], p1) < TOL
            assert rel_err(V[k, i], s.frame_velocity(Q[k], U[k], f, "world")) < TOL
        assert rel_err(s.frame_jacobian_batch(Q, names[2], "local")[k], s.frame_jacobian(Q[k], names[2], "local")) < TOL
        c = s.center_of_mass(Q[k], U[k])
        assert rel_err(G[k], c.position) < TOL and rel_err(Gv[k], c.velocity) < TOL
    assert s.frame_placement_batch(Q, names[0])[1].shape == (len(Q), 3)
    assert s.center_of_mass_batch(Q)[1] is None
    with pytest.raises(ValueError, match="Q: expected rows of"):
        s.frame_placement_batch(Q[:, :-1], names[0])
    with pytest.raises(ValueError, match="Q, U"):
        s.frame_velocity_batch(Q, U[:2], names[0])


def test_mass_matrix_by_the_engines_crba_equals_rnea_columns():
    """The engine's CRBA on the tree kinematics (mass_matrix of every tree kernel without its own, compute_all_terms)
    equals M built column by column from the model's own inverse dynamics, on every joint type, fixed and floating,
    and on MJCF files whose joints carry armature (on the diagonal)."""
    from support.systems import ROOT, get_system
    systems = [system_for(pf.without_forces(MODELS[n]), "recursive", {}) for n in ("fixed", "floating")]
    for f in ("actuated_arm.xml", "free_tree.xml"):
        systems.append(get_system(codegen.load_model(str(ROOT / "tests" / "model" / "mjcf" / f))))
    assert any(np.any(s.model.armature) for s in systems)
    rng = np.random.default_rng(5)
    for s in systems:
        q = s.model.initial_state()[0] + rng.normal(scale=0.5, size=s.nq)
        M = s.mass_matrix(q)
        assert rel_err(M, s._mass_matrix_by_rnea(q)) < TOL and rel_err(M, s.kernel.tree_mass_matrix(q)) == 0.0


def test_kinematics_point_jacobian_and_input_checks():
    """The point form of frame_jacobian equals the Jacobian of a frame placed at that point; the linear rows of
    the local_world_aligned Jacobian are the placement's derivative (central differences along each
    velocity); bad frames, references and lengths are refused by name."""
    d = pf.without_forces(MODELS["fixed"])
    s = system_for(d, "recursive", {"ref_point": "centroid"})
    peer = pf.DictPeer(d, s.model.coord_names, s.body_names)
    rng = np.random.default_rng(4)
    q, u = pf.random_state(d, s.model.coord_names, rng)
    body, point = s.body_names[3], np.array([0.1, -0.2, 0.3])
    if "probe" not in s.frames:
        s.add_frame("probe", body, point)
    for ref in ("local", "world", "local_world_aligned"):
        assert rel_err(s.frame_jacobian(q, body, ref, point=point)[3:], s.frame_jacobian(q, "probe", ref)[3:]) < TOL
    J = s.frame_jacobian(q, "probe", "local_world_aligned")
    h = 1e-6
    for k in range(s.nv):
        dp = (s.frame_placement(peer.perturb(q, k, h), "probe")[1]
              - s.frame_placement(peer.perturb(q, k, -h), "probe")[1]) / (2 * h)
        assert np.max(np.abs(dp - J[3:, k])) < 1e-6, k
    assert rel_err(J @ u, s.frame_velocity(q, u, "probe", "local_world_aligned")) < TOL
    with pytest.raises(ValueError, match="no frame 'nope'"):
        s.frame_placement(q, "nope")
    with pytest.raises(ValueError, match="reference 'body'"):
        s.frame_velocity(q, u, body, "body")
    with pytest.raises(ValueError, match="u: expected"):
        s.frame_velocity(q, u[:-1], body)
    with pytest.raises(IndexError):
        s.frame_jacobian(q, len(s.frames))
    with pytest.raises(ValueError, match="not a new frame name"):
        s.add_frame("probe", body)
    with pytest.raises(ValueError, match="rotation matrix"):
        s.add_frame("bad", body, rot=2 * np.eye(3))
    mass, com = s.subtree_mass(q)
    roots = [k for k in range(len(mass)) if s.plan.parent[k] == -1]
    c = s.center_of_mass(q)
    assert rel_err(mass[roots].sum(), c.mass) < TOL and rel_err(mass[roots] @ com[roots] / c.mass, c.position) < TOL
