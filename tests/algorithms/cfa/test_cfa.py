"""The constraint force algorithm (Liu, Hu & Zhang 2016): both forms against the recursive solver on trees that
exercise every part of the serial form (long chains with several odd-even rounds, a node with many children,
nested nodes, free and fixed bases, every joint type); joint wrenches against pinocchio's data.f; the numpy
reference of the general form against pinocchio built from the same model file; the M4 space robot."""
import copy

import numpy as np
import pytest

import codegen
from codegen.algorithms.cfa import reference
from codegen.algorithms.cfa.plan import EDGE_PARENT, EDGE_PATH, EDGE_SIBLING, cfa_plan
from codegen.algorithms.tree_plan import Plan
from codegen.model.library import random_tree
from support import peers_from_file as pf
from support.systems import EXAMPLES, get_system, rel_err

TYPES = ["revolute", "prismatic", "cylindrical", "universal", "spherical", "planar", "fixed"]


def _tree(floating: bool):
    """Root (free or revolute) with a node of three children: a 9-body chain (4 odd-even rounds) that ends in
    a nested node with two 3-body chains, a 2-body chain, and a leaf; every joint type along the way."""
    parents, types = [-1], ["free" if floating else "revolute"]
    add = lambda p, t: (parents.append(p), types.append(t), len(parents) - 1)[2]   # noqa: E731
    prev = 0
    for k in range(9):
        prev = add(prev, TYPES[k % len(TYPES)] if k != 4 else "revolute")
    for branch in range(2):
        p = prev
        for k in range(3):
            p = add(p, TYPES[(k + 3 * branch + 2) % len(TYPES)])
    p = add(0, "universal")
    add(p, "spherical")
    add(0, "prismatic")
    return pf.tree_dict("cfa_float" if floating else "cfa_fixed", parents, types, seed=7 + floating,
                        gravity=(0.3, -9.81, 0.5))


MODELS = {"fixed": _tree(False), "floating": _tree(True)}


def _system(d, algorithm, **options):
    return get_system(codegen.model_from_dict(copy.deepcopy(d), source=d["name"] + ".yaml"), algorithm, **options)


def test_serial_plan_covers_every_case():
    c = cfa_plan(Plan(codegen.model_from_dict(copy.deepcopy(MODELS["floating"]), source="x.yaml")))
    lengths = sorted(len(p["bodies"]) for p in c["paths"])
    assert c["K"] >= 3 and max(lengths) >= 7                     # several odd-even rounds
    assert any(p["top"] >= 0 and p["bot"] >= 0 for p in c["paths"])   # a chain between two nodes
    assert len(c["special"]) >= 6 and c["NSN"] > 0
    for base in ("fixed", "floating"):                  # the node system's blocks: every kind of coupling, no fill
        c = cfa_plan(Plan(codegen.model_from_dict(copy.deepcopy(MODELS[base]), source="x.yaml")))
        assert set(c["E_KIND"]) == {EDGE_PARENT, EDGE_SIBLING, EDGE_PATH} and c["NFILL"] == 0


def test_node_system_is_eliminated_without_fill_on_random_trees():
    """Deepest special first, a special's later neighbours are already a clique: O(n) blocks on random trees."""
    for n, seed in ((50, 1), (300, 2), (1000, 1)):
        c = cfa_plan(Plan(random_tree(n, seed, ("revolute", "spherical", "universal"))))
        assert c["NFILL"] == 0 and c["NE"] < 3 * len(c["special"]) and c["NPAIR"] < 8 * len(c["special"])


@pytest.mark.build
@pytest.mark.parametrize("base,algorithm,options", [
    ("fixed", "cfa", {"form": "serial"}), ("fixed", "cfa", {"form": "general"}), ("floating", "cfa", {"form": "serial"}),
    ("floating", "cfa", {"form": "general"}), ("floating", "recursive", {"ref_point": "joint"})])
def test_joint_wrenches_vs_pinocchio(base, algorithm, options):
    """Accelerations against pinocchio's ABA, joint wrenches against data.f[i] of its RNEA at the kernel's
    acceleration, in pinocchio's joint frame (built from the model dict, not from our plan); CFA on both bases in
    both forms, the recursive family beside it."""
    d = MODELS[base]
    s = _system(d, algorithm, **options)
    peer = pf.DictPeer(d, s.model.coord_names, s.body_names)
    rng = np.random.default_rng(5)
    for _ in range(5):
        q, u = pf.random_state(d, s.model.coord_names, rng)
        tau = rng.normal(scale=2.0, size=s.nv)
        ud = s.forward_dynamics(q, u, tau)
        assert rel_err(ud, peer.aba(q, u, tau)) < 1e-9
        ref = peer.joint_wrenches(q, u, ud)
        ok = ~np.isnan(ref[:, 0])
        # CFA takes the wrenches from the solve of A F_S = -B F_T (eq 27): on this 16-body tree with six-row
        # fixed joints its round-off reaches ~1e-9, the RNEA pass of the other families stays below
        assert rel_err(s.joint_wrenches(q, u, tau)[ok], ref[ok]) < (3e-9 if algorithm == "cfa" else 1e-9)
    if algorithm == "cfa":
        assert s.kernel.constraint_forces(q, u, tau).shape == (cfa_plan(s.plan)["NS"],)


@pytest.mark.build
def test_joint_wrench_frames_can_fail():
    """The comparison is sharp: the same wrenches left in the canonical (K-rotated) frame differ."""
    d = MODELS["fixed"]
    s = _system(d, "cfa", form="serial")
    peer = pf.DictPeer(d, s.model.coord_names, s.body_names)
    q, u = pf.random_state(d, s.model.coord_names, np.random.default_rng(2))
    ref = peer.joint_wrenches(q, u, s.forward_dynamics(q, u))
    ok = ~np.isnan(ref[:, 0])
    assert rel_err(s.kernel.joint_wrench(q, u)[ok], ref[ok]) > 1e-3


@pytest.mark.build
def test_reference_general_form_vs_pinocchio():
    """The paper's global matrices (eqs 10-29) filled from pinocchio (placements liMi, inertias, motion subspaces,
    bias forces of RNEA at zero acceleration) give pinocchio's ABA accelerations and RNEA joint forces."""
    import pinocchio as pin
    d = MODELS["floating"]
    s = _system(d, "recursive", ref_point="joint")
    peer = pf.DictPeer(d, s.model.coord_names, s.body_names)
    pm, data = peer.model, peer.data
    rng = np.random.default_rng(3)
    q, _ = pf.random_state(d, s.model.coord_names, rng)
    qp, vp, tp = peer.q_pin(q), rng.normal(size=pm.nv), rng.normal(size=pm.nv)
    pin.forwardKinematics(pm, data, qp, vp)
    pin.computeJointJacobians(pm, data, qp)
    b = pin.rnea(pm, data, qp, vp, np.zeros(pm.nv))
    ids = range(1, pm.njoints)
    parent = [pm.parents[i] - 1 for i in ids]
    X = [data.liMi[i].inverse().action for i in ids]                  # parent -> child motion transform
    I = [pm.inertias[i].matrix() for i in ids]
    H = [data.oMi[i].inverse().action @ data.J[:, pm.joints[i].idx_v:pm.joints[i].idx_v + pm.joints[i].nv]
         for i in ids]                                                # motion subspace in the joint frame
    F_T = np.concatenate([(tp - b)[pm.joints[i].idx_v:pm.joints[i].idx_v + pm.joints[i].nv] for i in ids])
    Qdot, F_S, F = reference.general_form(parent, X, I, H, F_T)
    order = np.concatenate([np.arange(pm.joints[i].idx_v, pm.joints[i].idx_v + pm.joints[i].nv) for i in ids])
    ud_pin = pin.aba(pm, data, qp, vp, tp)
    assert rel_err(Qdot, ud_pin[order]) < 1e-10
    pin.rnea(pm, data, qp, vp, ud_pin)
    F_pin = np.array([data.f[i].vector for i in ids])
    pin.rnea(pm, data, qp, vp, np.zeros(pm.nv))
    F_bias = np.array([data.f[i].vector for i in ids])
    assert rel_err(F + F_bias, F_pin) < 1e-9                         # eq 22 plus the bias: the joint forces
    assert F_S.size == sum(6 - pm.joints[i].nv for i in ids)


# ---------------------------------------------------------------- M4 space robot

def _space_robot():
    return codegen.load_model(str(EXAMPLES / "space_robot.yaml"))


@pytest.mark.build
def test_space_robot_cfa_recursive_and_momentum():
    """M4 (the seed's Figs 8-12): CFA and recursive runs agree up to 4 s (the wrist tumbles later); linear and
    angular momentum (zero at rest, no gravity, internal torques only) stay zero over the whole 10 s."""
    m = _space_robot()
    s = get_system(m, "cfa", form="serial")
    a = s.simulate(4.0, 0.002, integrator="rk4", joint_wrench=True)
    b = get_system(m, "recursive").simulate(4.0, 0.002, integrator="rk4", joint_wrench=True)
    assert np.max(np.abs(a.q - b.q)) < 1e-9
    W = a.extra["joint_wrench"]
    assert rel_err(W, b.extra["joint_wrench"]) < 1e-8
    assert list(a.extra["joint_names"][:2]) == ["base_free", "arm1_j1"]
    assert np.max(np.abs(W[:, 0])) < 1e-8 * np.max(np.abs(W))       # nothing acts on the free base's joint
    assert np.max(np.abs(a.q[-1, 7:] - a.q[0, 7:])) > 0.1            # while the arms move
    masses = np.array([bd.mass for bd in m.bodies])
    com = np.einsum("b,tbk->tk", masses, a.body_com) / masses.sum()
    assert np.max(np.abs(com - com[0])) < 1e-9                       # the system's centre of mass stays
    c = s.simulate(10.0, 0.01, integrator="dopri5", rtol=1e-10, atol=1e-12)
    scale = max(np.max(np.abs(np.diag(s.mass_matrix(c.q[k])) * c.u[k])) for k in range(0, len(c.t), 100))
    for k in range(0, len(c.t), 50):      # spatial momentum of the whole system = the base rows of M(q) u
        assert np.max(np.abs((s.mass_matrix(c.q[k]) @ c.u[k])[:6])) < 1e-9 * scale


@pytest.mark.build
def test_space_robot_dopri5_vs_pinocchio():
    """M4 with dopri5 (rtol 1e-10) over 0..4 s against pinocchio's ABA integrated by scipy (DOP853)."""
    from scipy.integrate import solve_ivp
    import pinocchio as pin
    m = _space_robot()
    s = get_system(m, "cfa", form="serial")
    res = s.simulate(4.0, 0.5, integrator="dopri5", rtol=1e-10, atol=1e-12)
    d = yaml_dict()
    peer = pf.DictPeer(d, s.model.coord_names, s.body_names)
    pm, data = peer.model, peer.data
    taus = [(pm.joints[peer.jid[f["joint"]]].idx_v, f["value"]["sine"]) for f in d["forces"]]

    def rhs(t, x):
        q, v = x[:pm.nq], x[pm.nq:]
        tau = np.zeros(pm.nv)
        for iv, sn in taus:
            tau[iv] += sn["amplitude"] * np.sin(2 * np.pi * sn["frequency"] * t)
        return np.concatenate([_qdot(pm, q, v), pin.aba(pm, data, q, v, tau)])

    x0 = np.concatenate([peer.q_pin(res.q[0]), np.zeros(pm.nv)])
    sol = solve_ivp(rhs, (0, 4.0), x0, method="DOP853", rtol=1e-11, atol=1e-12, t_eval=res.t)
    q_ours = np.array([peer.q_pin(q) for q in res.q])
    assert np.max(np.abs(sol.y[:pm.nq].T[:, 7:] - q_ours[:, 7:])) < 1e-6     # arm joint angles
    assert np.max(np.abs(sol.y[:3].T - q_ours[:, :3])) < 1e-6               # base position


def _qdot(pm, q, v):
    """Time derivative of pinocchio's configuration (free flyer: position rate in the world, quaternion rate)."""
    import pinocchio as pin
    dq = np.zeros(pm.nq)
    R = pin.Quaternion(q[6], q[3], q[4], q[5]).toRotationMatrix()
    dq[:3] = R @ v[:3]
    x, y, z, w = q[3:7]
    wx, wy, wz = v[3:6]
    dq[3:7] = 0.5 * np.array([w * wx + y * wz - z * wy, w * wy + z * wx - x * wz, w * wz + x * wy - y * wx,
                              -x * wx - y * wy - z * wz])
    dq[7:] = v[6:]
    return dq


def yaml_dict():
    import yaml
    return yaml.safe_load(open(EXAMPLES / "space_robot.yaml"))


@pytest.mark.build
def test_cli_joint_wrench(tmp_path, capsys):
    """mbgen simulate M4 --algorithm cfa --joint-wrench: NPZ keys joint_wrench (nt x n_joints x 6) and
    joint_names; the summary reports the work of the joint torques beside the energy change."""
    from codegen.cli import main
    out = tmp_path / "m4.npz"
    assert main(["simulate", str(EXAMPLES / "space_robot.yaml"), "--algorithm", "cfa", "--joint-wrench",
                 "--t-end", "0.2", "--dt", "0.01", "--quiet", "--out", str(out)]) == 0
    z = np.load(out)
    assert z["joint_wrench"].shape == (21, 13, 6) and list(z["joint_names"][:2]) == ["base_free", "arm1_j1"]
    line = capsys.readouterr().out
    assert "work of the applied forces" in line and "1.00e+00" not in line
    assert main(["simulate", str(EXAMPLES / "space_robot.yaml"), "--algorithm", "dense", "--form", "serial",
                 "--t-end", "0.2", "--quiet", "--out", str(out)]) == 2
    assert "--form applies to --algorithm cfa" in capsys.readouterr().err
    assert main(["simulate", str(EXAMPLES / "flexible_pendulum.yaml"), "--joint-wrench", "--t-end", "0.2",
                 "--quiet", "--out", str(tmp_path / "beam.npz")]) == 2          # refused before any build
    assert "rigid-body models" in capsys.readouterr().err and not (tmp_path / "beam.npz").exists()


@pytest.mark.build
def test_space_robot_figures_script(tmp_path):
    """examples/space_robot_figures.py (the seed's Figs 8-12) on a short horizon: figures and summary written."""
    import subprocess
    import sys
    out = tmp_path / "m4"
    r = subprocess.run([sys.executable, str(EXAMPLES / "space_robot_figures.py"), "--t-end", "0.1", "--dt", "0.01",
                        "--out", str(out)], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    pngs = sorted(p.name for p in out.glob("*.png"))
    assert len(pngs) >= 4 and (out / "summary.txt").exists(), pngs
