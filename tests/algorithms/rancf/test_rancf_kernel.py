"""Generated RANCF kernels (templates/rancf/rancf.pyx.j2, codegen/algorithms/rancf, codegen/model/beams.py), Hu & Wang 2016, model M3.

Two compiled topologies (about 30 s each when the cache is cold, then cached in generated/):
* M3, 5 beams x 5 elements in a chain (elimination in the paper's order, eq 46), with case A and
  case B numbers loaded into the same module;
* a branched tree with every element kind: ground pin, ground clamp, ground slider, planar revolute,
  fixed and translational (eqs 20-21) joints between beams (elimination leaves first; state-dependent
  Phi, C and acceleration remainders c).

Checked: the O(n) recursion (eqs 44-55) equals the dense Cholesky solve of the same Omega, Gamma (eq 41)
to 1e-10 on random numbers and states; Omega and Gamma equal J^T M J and J^T (M Jdot u + F_EK - F_E)
with J = de/dq by finite differences (an independent Lagrange check that covers the translational
joint); the kernel equals codegen/algorithms/rancf/reference.py; element force and Jacobian (sympy C code) against the
numpy reference and finite differences; energy conservation (case B, the seed's 4 s at RK4 dt = 1e-3) and
with the translational joints; the implicit HHT-alpha method (and its Newton stop at the round-off floor);
case A against the rigid 5-link pendulum over 4 s (eq 58); NPZ contents; the figures script
(examples/flexible_pendulum_figures.py, 1 s); bad input (messages naming file and field, CLI exit status 2).
"""
import os
import subprocess
import sys

import numpy as np
import pytest
import scipy.linalg as sl

import codegen
from codegen.algorithms.rancf import NPE
from codegen.model import beams as flexible
from codegen.model import ModelError
from codegen.algorithms.rancf.reference import FlexiblePendulum, elastic_energy_and_force
from support.systems import ROOT

ROOT = str(ROOT)
EX_B = os.path.join(ROOT, "examples", "flexible_pendulum.yaml")
EX_A = os.path.join(ROOT, "examples", "flexible_pendulum_stiff.yaml")

MIXED = {
    "name": "rancf_mixed_tree", "gravity": [0.5, -9.81],
    "beams": [
        {"name": "b1", "length": 2.0, "elements": 3, "E": 2e7, "A": 4e-4, "I": 2e-6, "rho": 7800, "angle": -0.3},
        {"name": "b2", "length": 1.5, "elements": 2, "E": 3e7, "A": 3e-4, "I": 1e-6, "rho": 2700, "angle": 0.4},
        {"name": "b3", "length": 1.0, "elements": 2, "E": 1e7, "A": 5e-4, "I": 3e-6, "rho": 7800, "angle": -0.3},
        {"name": "b4", "length": 1.0, "elements": 1, "E": 2e7, "A": 4e-4, "I": 2e-6, "rho": 7800, "angle": 0.4},
        {"name": "b5", "length": 2.0, "elements": 2, "E": 2e7, "A": 4e-4, "I": 2e-6, "rho": 7800, "angle": 0.3},
        {"name": "b6", "length": 1.0, "elements": 1, "E": 2e7, "A": 4e-4, "I": 2e-6, "rho": 7800, "angle": 1.0},
        {"name": "b7", "length": 1.0, "elements": 2, "E": 2e7, "A": 4e-4, "I": 2e-6, "rho": 7800, "angle": -1.0},
    ],
    "joints": [
        {"name": "pin", "type": "revolute", "parent": "ground", "child": "b1", "at": [0.0, 0.0]},
        {"name": "r12", "type": "revolute", "parent": "b1", "child": "b2"},
        {"name": "t13", "type": "translational", "parent": "b1", "child": "b3", "axis": [0.6, 0.8], "q0": 0.1},
        {"name": "f24", "type": "fixed", "parent": "b2", "child": "b4"},
        {"name": "clamp", "type": "fixed", "parent": "ground", "child": "b5", "at": [3.0, 1.0]},
        {"name": "slider", "type": "translational", "parent": "ground", "child": "b6", "axis": [1.0, 0.2],
         "at": [-2.0, 0.5]},
        {"name": "r67", "type": "revolute", "parent": "b6", "child": "b7"},
    ]}


# a chain with state-dependent operators: paper's elimination order (eq 46) with translational joints
SLIDER_CHAIN = {
    "name": "rancf_slider_chain", "gravity": [0.0, -9.81],
    "beams": [
        {"name": "s1", "length": 1.0, "elements": 2, "E": 5e6, "A": 4e-4, "I": 2e-6, "rho": 7800, "angle": 0.2},
        {"name": "s2", "length": 1.2, "elements": 2, "E": 5e6, "A": 4e-4, "I": 2e-6, "rho": 7800, "angle": -0.7},
        {"name": "s3", "length": 0.8, "elements": 1, "E": 5e6, "A": 4e-4, "I": 2e-6, "rho": 7800, "angle": -0.7},
    ],
    "joints": [
        {"name": "g", "type": "translational", "parent": "ground", "child": "s1", "axis": [1, 0], "at": [0, 0]},
        {"name": "r", "type": "revolute", "parent": "s1", "child": "s2"},
        {"name": "t", "type": "translational", "parent": "s2", "child": "s3", "axis": [0, 1], "q0": -0.05},
    ]}


def rel(a, b):
    return float(np.abs(np.asarray(a) - np.asarray(b)).max() / max(np.abs(b).max(), 1e-300))


@pytest.fixture(scope="module")
def sys_b():
    return codegen.build(codegen.load_model(EX_B), "rancf")


@pytest.fixture(scope="module")
def sys_mixed():
    return codegen.build(flexible.beam_model_from_dict(MIXED, "<mixed>"), "rancf")


@pytest.fixture(scope="module")
def sys_slider():
    return codegen.build(flexible.beam_model_from_dict(SLIDER_CHAIN, "<slider chain>"), "rancf")


def randomised(d, rng):
    """Same topology, random numbers (lengths, materials, gravity)."""
    import copy
    d = copy.deepcopy(d)
    for b in d["beams"]:
        b["length"] *= rng.uniform(0.5, 2.0)
        for k in ("E", "A", "I", "rho"):
            b[k] *= rng.uniform(0.3, 3.0)
    d["gravity"] = [rng.uniform(-3, 3), rng.uniform(-12, -5)]
    return flexible.beam_model_from_dict(d, "<random>")


def lagrange_reference(system, q, u):
    """Omega = J^T M J, Gamma = J^T (M Jdot u + F_EK - F_E) with J = de/dq by central differences."""
    n = system.nq
    E = lambda x: system.element_coordinates(x).ravel()
    h = 1e-6
    J = np.column_stack([(E(q + h * ei) - E(q - h * ei)) / (2 * h) for ei in np.eye(n)])
    hh = 1e-4
    Jdu = (E(q + hh * u) - 2 * E(q) + E(q - hh * u)) / hh**2
    p, nb, npe = system.plan.params(), system.plan.nbar, NPE
    M = sl.block_diag(*[p[2 + npe * k:2 + npe * k + 64].reshape(8, 8) for k in range(nb)])
    FE = np.concatenate([p[2 + npe * k + 68:2 + npe * k + 76] for k in range(nb)])
    F = system.kernel.elastic(q).ravel()
    return J.T @ M @ J, J.T @ (M @ Jdu + F - FE)


# ---------------------------------------------------------------- recursion vs dense

@pytest.mark.build
@pytest.mark.parametrize("which", ["chain", "tree", "slider-chain"])
def test_recursion_equals_dense(which, sys_b, sys_mixed, sys_slider):
    s = {"chain": sys_b, "tree": sys_mixed, "slider-chain": sys_slider}[which]
    base = s.model
    if which == "tree":
        d = MIXED
    elif which == "slider-chain":
        d = SLIDER_CHAIN
    else:
        import yaml
        with open(EX_B) as fh:
            d = yaml.safe_load(fh)
    assert s.plan.is_chain == (which != "tree")
    rng = np.random.default_rng(11)
    worst = 0.0
    try:
        for trial in range(4):
            s.update_model(randomised(d, rng))
            q0, _ = s.model.initial_state()
            q = q0 + 0.05 * rng.normal(size=s.nq)
            u = rng.normal(size=s.nq)
            tau = rng.normal(size=s.nq) if trial % 2 else None
            a_rec = s.forward_dynamics(q, u, tau, algorithm="rancf")
            a_den = s.forward_dynamics(q, u, tau, algorithm="dense")
            worst = max(worst, rel(a_rec, a_den))
            # and it solves Omega betadot = Q - Gamma
            Om, Ga = s.omega_gamma(q, u)
            res = Om @ a_rec + Ga - (0 if tau is None else tau)
            assert np.abs(res).max() <= 1e-9 * np.abs(Ga).max()
    finally:
        s.update_model(base)
    assert worst < 1e-10, worst


@pytest.mark.build
@pytest.mark.parametrize("which", ["chain", "tree", "slider-chain"])
def test_omega_gamma_equal_lagrange_finite_differences(which, sys_b, sys_mixed, sys_slider):
    s = {"chain": sys_b, "tree": sys_mixed, "slider-chain": sys_slider}[which]
    rng = np.random.default_rng(5)
    q0, _ = s.model.initial_state()
    q = q0 + 0.03 * rng.normal(size=s.nq)
    u = rng.normal(size=s.nq)
    Om_fd, Ga_fd = lagrange_reference(s, q, u)
    Om, Ga = s.omega_gamma(q, u)
    assert rel(Om, Om_fd) < 1e-8
    assert rel(Ga, Ga_fd) < 1e-7


def _random_tree(rng, nbeams):
    beams, joints = [], []
    for k in range(nbeams):
        beams.append({"name": f"b{k}", "length": 1.0, "elements": int(rng.integers(1, 4)), "E": 1e7, "A": 1e-4,
                      "I": 1e-6, "rho": 1000.0, "angle": 0.0})
        par = "ground" if k == 0 or rng.random() < 0.15 else f"b{int(rng.integers(0, k))}"
        t = str(rng.choice(["revolute", "fixed", "translational"]))
        j = {"name": f"j{k}", "type": t, "parent": par, "child": f"b{k}"}
        if t == "translational":
            j["axis"] = [1.0, 0.5]
        joints.append(j)
    return {"beams": beams, "joints": joints}


def test_elimination_plan_has_no_fill_in_on_random_trees():
    """Each element's later neighbours in the elimination order are exactly its succ (eq 46 stays block-sparse):
    the condition under which the P / Psi recursion equals the dense factorisation, for any tree."""
    rng = np.random.default_rng(7)
    for trial in range(200):
        p = flexible.beam_model_from_dict(_random_tree(rng, int(rng.integers(1, 9))), "<random tree>").plan
        pos = np.empty(p.nbar, int)
        pos[p.eord] = np.arange(p.nbar)
        assert sorted(p.eord) == list(range(p.nbar))
        nbrs = [set() for _ in range(p.nbar)]
        for s, par in enumerate(p.par):
            if par >= 0:
                nbrs[s].add(par)
                nbrs[par].add(s)
            assert par < s                                   # topological order (kinematics)
        for s in range(p.nbar):
            later = {j for j in nbrs[s] if pos[j] > pos[s]}
            assert later == ({p.succ[s]} if p.succ[s] >= 0 else set())
            if p.succ[s] >= 0:
                assert (p.par[p.succ[s]] == s) == bool(p.sdir[s])
        assert p.n == sum(4 if k in (flexible.K_INT, flexible.K_GCLAMP) else 6 for k in p.kind)


@pytest.mark.build
def test_tree_structure_and_initial_configuration(sys_mixed):
    p = sys_mixed.plan
    kinds = {flexible.KIND_NAMES[k] for k in p.kind}
    assert kinds == set(flexible.KIND_NAMES)
    q0, u0 = sys_mixed.initial_state()
    pos = dict(zip(sys_mixed.node_names, sys_mixed.node_positions(q0)))
    np.testing.assert_allclose(pos["b1.n0"], [0, 0], atol=1e-15)
    np.testing.assert_allclose(pos["b3.n0"], pos["b1.n3"] + 0.1 * np.array([0.6, 0.8]), atol=1e-14)
    np.testing.assert_allclose(pos["b2.n0"], pos["b1.n3"], atol=1e-15)
    np.testing.assert_allclose(pos["b5.n0"], [3, 1], atol=1e-15)
    np.testing.assert_allclose(pos["b6.n0"], [-2, 0.5], atol=1e-15)
    assert sys_mixed.node_names[-1] == "tip"
    T, U, V = sys_mixed.energy(q0, u0)
    assert T == 0 and abs(U) < 1e-8


# ---------------------------------------------------------------- kernel vs numpy reference

@pytest.mark.build
def test_kernel_equals_numpy_reference(sys_b):
    ref = FlexiblePendulum(n_beams=5, n_elem=5, L_beam=5.0, E=21e6, A=4e-4, I=2e-6, rho=7800.0)
    q0, u0 = sys_b.initial_state()
    np.testing.assert_array_equal(q0, ref.initial_state()[:ref.n])
    rng = np.random.default_rng(2)
    for _ in range(3):
        q = q0 + 0.05 * rng.normal(size=ref.n)
        u = rng.normal(size=ref.n)
        np.testing.assert_allclose(sys_b.element_coordinates(q), ref.element_coordinates(q), atol=1e-14)
        assert rel(sys_b.forward_dynamics(q, u), ref.accel_dense(q, u)) < 1e-10
        assert rel(sys_b.forward_dynamics(q, u), ref.accel_recursive(q, u)) < 1e-10
        Om, Ga = sys_b.omega_gamma(q, u)
        assert rel(Om, ref.Omega) < 1e-13
        assert rel(Ga, ref.Gamma(q, u)) < 1e-10
        np.testing.assert_allclose(sys_b.energy(q, u), ref.energies(np.concatenate([q, u])), rtol=1e-9, atol=1e-9)
        U, F = elastic_energy_and_force(ref.element_coordinates(q), ref.mats)
        assert rel(sys_b.kernel.elastic(q), F) < 1e-10


@pytest.mark.build
def test_element_jacobian_is_derivative_of_force(sys_b):
    rng = np.random.default_rng(4)
    q0, _ = sys_b.initial_state()
    q = q0 + 0.05 * rng.normal(size=sys_b.nq)
    F, K = sys_b.kernel.elastic(q, 1)
    np.testing.assert_allclose(np.transpose(K, (0, 2, 1)), K, rtol=0, atol=1e-9 * np.abs(K).max())
    e = sys_b.element_coordinates(q)
    # d F / d e by central differences, element by element, through the kernel (perturb q = node coordinates)
    s = 7                                  # an interior element: e_B = q block
    o = sys_b.plan.off[s]
    h = 1e-6
    for k in range(4):
        dq = np.zeros(sys_b.nq)
        dq[o + k] = h
        dF = (sys_b.kernel.elastic(q + dq)[s] - sys_b.kernel.elastic(q - dq)[s]) / (2 * h)
        np.testing.assert_allclose(dF, K[s][:, 4 + k], rtol=0, atol=1e-6 * np.abs(K[s]).max())
    assert e.shape == (25, 8)


# ---------------------------------------------------------------- simulation

@pytest.mark.build
def test_case_B_energy_conservation_and_npz(sys_b, tmp_path):
    """Case B as in the seed: E = 21 MPa, RK4 at dt = 1e-3 over 4 s (0.1 s of compute): energy conserved."""
    res = sys_b.simulate(4.0, 1e-3, integrator="rk4")
    T, U, V = res.energy_kinetic, res.extra["energy_elastic"], res.extra["energy_gravity"]
    tot = T + U + V
    np.testing.assert_allclose(res.energy_total, tot, rtol=0, atol=1e-12 * np.abs(V).max())
    assert T.max() > 8000.0 and U.max() > 3000.0 and V.min() < -1e4     # the seed's 1e4 J level, large deformation
    scale = max(np.abs(T).max(), np.abs(V).max())
    drift = np.abs(tot - tot[0]).max() / scale
    assert drift < 1e-6, drift                                           # seed: 1e-4; measured 4e-8
    path = res.save(tmp_path / "b.npz")
    with np.load(path) as z:
        names = list(z["node_names"])
        assert len(names) == 30 and names[-1] == "tip" and names[0] == "b1.n0"
        assert z["node_pos"].shape == (4001, 30, 2)
        assert z["energy_elastic"].shape == (4001,)
        np.testing.assert_allclose(z["node_pos"][0, -1], [25.0, 0.0], atol=1e-14)
        np.testing.assert_array_equal(z["node_pos"], res.node_pos)
        np.testing.assert_array_equal(z["snapshot_index"], np.arange(9) * 500)     # t = 0, 0.5, ..., 4 s
        assert z["snapshot_curve"].shape == (9, 25 * 11, 2)                      # 11 points per element
        # the last of the 11 points of each element is its node B: beam k has nodes 6k .. 6k + 5
        tips_b = [k for k in range(30) if k % 6 != 0]
        np.testing.assert_allclose(z["snapshot_curve"][4, 10::11], z["node_pos"][2000, tips_b], atol=1e-12)
    np.testing.assert_allclose(np.linalg.norm(res.node("b1.n0"), axis=1), 0, atol=1e-14)   # the ground pin holds
    back = codegen.load_result(path)
    np.testing.assert_array_equal(back.extra["energy_elastic"], U)
    assert res.plot(tmp_path / "b.png").endswith(".png")
    assert os.path.getsize(tmp_path / "b.png") > 10000


@pytest.mark.build
@pytest.mark.parametrize("which", ["tree", "slider-chain"])
def test_translational_joints_conserve_energy(which, sys_mixed, sys_slider):
    s, gname = (sys_mixed, "b3.gamma") if which == "tree" else (sys_slider, "s3.gamma")
    res = s.simulate(0.3, 1e-3, integrator="dopri5", rtol=1e-10, atol=1e-10)
    tot = res.energy_total
    assert np.abs(res.energy_kinetic).max() > 1.0
    assert np.abs(tot - tot[0]).max() < 1e-8 * np.abs(res.energy_kinetic).max()
    assert np.ptp(res.coord(gname)) > 1e-3                # the slider really slides


@pytest.mark.build
def test_hht_matches_explicit_case_B(sys_b):
    ref = sys_b.simulate(0.3, 1e-3, integrator="dopri5", rtol=1e-10, atol=1e-10)
    r = sys_b.simulate(0.3, 1e-3, integrator="hht", alpha=-0.05)
    assert np.abs(r.node("tip") - ref.node("tip")).max() < 1e-4
    tot = r.energy_total
    assert np.abs(tot - tot[0]).max() < 1e-5 * np.abs(r.energy_kinetic).max()
    assert r.meta["newton_not_converged"] == 0


@pytest.mark.build
def test_case_A_follows_rigid_pendulum(sys_b):
    """Case A (E = 210 GPa), implicit HHT at dt = 1e-3 over the seed's 4 s, against the rigid 5-link chain of
    thin rods (the foundation's solver): normalised tip error of eq 58, seed < 0.6 %, aim 0.1 % (measured 0.017 %)."""
    from codegen import models
    model_a = codegen.load_model(EX_A)
    sys_b.update_model(model_a)
    try:
        r = sys_b.simulate(4.0, 1e-3, integrator="hht", alpha=-0.05)
    finally:
        sys_b.update_model(codegen.load_model(EX_B))
    rig = codegen.build(models.chain(5, m=15.6, L=5.0), "recursive", ref_point="joint")   # (chain5's shared kernel)
    rr = rig.simulate(4.0, 1e-3, integrator="dopri5", rtol=1e-10, atol=1e-12)
    ang = 2 * np.arctan2(rr.body_quat[:, 4, 3], rr.body_quat[:, 4, 0])
    tip = rr.body_com[:, 4, :2] + 2.5 * np.column_stack([np.cos(ang), np.sin(ang)])
    err = np.abs(r.node("tip") - tip).max(axis=0) / 25.0
    assert (err < 0.006).all() and (err < 1e-3).all(), err
    assert np.ptp(tip[:, 0]) > 40                          # the pendulum swings through (x from 25 to -23 m)
    assert r.meta["newton_not_converged"] == 0
    tot = r.energy_total
    assert np.abs(tot - tot[0]).max() < 1e-4 * np.abs(r.energy_kinetic).max()


@pytest.mark.build
def test_hht_newton_reaches_round_off_floor_with_small_steps(sys_b):
    """Stiff case A with HHT at h = 1e-4: the Newton corrections hit the round-off floor of the elastic forces
    (differences of EA |e| / l); the iteration must recognise it instead of running to max_newton."""
    import warnings
    sys_b.update_model(codegen.load_model(EX_A))
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", RuntimeWarning)
            r = sys_b.simulate(1.0, 1e-3, integrator="hht", substeps=10)
    finally:
        sys_b.update_model(codegen.load_model(EX_B))
    assert r.meta["newton_not_converged"] == 0
    assert r.meta["newton_iterations"] / r.meta["steps"] < 4


@pytest.mark.build
def test_paper_timing_mode_keeps_results(sys_b):
    """time_forward_dynamics(refactor=True) redoes eqs 44-46 every call (the benchmark's paper mode)."""
    rng = np.random.default_rng(9)
    q0, _ = sys_b.initial_state()
    q, u = q0 + 0.01 * rng.normal(size=sys_b.nq), rng.normal(size=sys_b.nq)
    a0 = sys_b.forward_dynamics(q, u)
    assert sys_b.kernel.time_forward_dynamics(q, u, 3, 0, True) > 0
    np.testing.assert_array_equal(sys_b.forward_dynamics(q, u), a0)


@pytest.mark.build
def test_figures_script(tmp_path):
    """examples/flexible_pendulum_figures.py on a short horizon: figures, NPZ and the summary are written."""
    import importlib.util
    import json
    spec = importlib.util.spec_from_file_location("m3_figures", os.path.join(ROOT, "examples",
                                                                             "flexible_pendulum_figures.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    out = tmp_path / "figs"
    assert mod.main(["--out-dir", str(out), "--t-end", "1.0"]) == 0
    for f in ("fig7_caseA_tip.png", "fig8_caseA_tip_error.png", "fig9_caseB_tip.png", "fig10_caseB_snapshots.png",
              "fig11_caseB_energy.png", "caseA.npz", "caseB.npz"):
        assert os.path.getsize(out / f) > 5000, f
    summ = json.loads((out / "summary.json").read_text())
    assert summ["pass"] == {"case_A_below_0.6_percent": True, "case_B_drift_below_1e-4": True}
    assert summ["case_A"]["tip_error_max_over_L"]["x"] < 1e-3
    with np.load(out / "caseB.npz") as z:
        assert z["node_pos"].shape == (1001, 30, 2) and "energy_elastic" in z.files
    assert mod.main(["--out-dir", str(out), "--t-end", "-1"]) == 2
    assert not [p for p in os.listdir(out) if p.startswith(".tmp")]      # atomic writes leave no temporaries


def _with_loads(loads, gravity=(0.0, 0.0)):
    import copy
    d = copy.deepcopy(MIXED)
    d["gravity"] = list(gravity)
    d["loads"] = loads
    return flexible.beam_model_from_dict(d, "<loads>")


def _clamped_axial_fe(P, L, EA, ne):
    """Tip displacement of a bar under an axial tip force P, discretised like the element's axial part:
    U = 1/2 EA int u'^2 ds (eq 6 for a straight beam), cubic Hermite u (eq 3), and u(0) = u'(0) = 0 because
    the ground clamp fixes the whole slope vector r'(0)."""
    l = L / ne
    xg, wg = np.polynomial.legendre.leggauss(3)
    K = np.zeros((2 * ne + 2, 2 * ne + 2))
    for x, w in zip(0.5 * (xg + 1), 0.5 * wg):
        dN = np.array([(-6 * x + 6 * x**2) / l, 1 - 4 * x + 3 * x**2, (6 * x - 6 * x**2) / l, 3 * x**2 - 2 * x])
        for e in range(ne):
            K[2 * e:2 * e + 4, 2 * e:2 * e + 4] += EA * l * w * np.outer(dN, dN)
    f = np.zeros(2 * ne + 2)
    f[-2] = P
    return np.linalg.solve(K[2:, 2:], f[2:])[-2]


@pytest.mark.build
def test_point_loads_cantilever_statics(sys_mixed):
    """Constant loads (eq 8, F_E = S^T F) on the ground-clamped beam b5 of the mixed tree (L = 2, EI = 40,
    EA = 8000, two elements): static tip deflection P L^3 / 3EI, slope P L^2 / 2EI, and under a mid-span load
    (Euler-Bernoulli; cubic Hermite elements are exact for nodal loads), to the geometric nonlinearity; the
    elongation under an axial load equals the 1D Hermite FE value of the clamped bar."""
    from scipy.optimize import fsolve
    a = 0.3
    t, nrm = np.array([np.cos(a), np.sin(a)]), np.array([-np.sin(a), np.cos(a)])
    L, EI, EA = 2.0, 2e7 * 2e-6, 2e7 * 4e-4
    p = sys_mixed.plan
    idx = np.arange(p.off[p.first_el["b5"]], p.off[p.last_el["b5"] + 1])       # b5's coordinates
    try:
        for force, s_at in ((0.06 * nrm, 2.0), (8.0 * t, 2.0), (0.06 * nrm, 1.0)):
            sys_mixed.update_model(_with_loads([{"name": "P", "beam": "b5", "s": s_at, "force": list(force)}]))
            q0, u0 = sys_mixed.initial_state()

            def gam(x):
                q = q0.copy()
                q[idx] = x
                return sys_mixed.omega_gamma(q, u0)[1][idx]
            x = fsolve(gam, q0[idx], xtol=1e-13)
            assert np.abs(gam(x)).max() < 1e-9
            q = q0.copy()
            q[idx] = x
            pos = dict(zip(sys_mixed.node_names, sys_mixed.node_positions(q)))
            tip0 = np.array([3.0, 1.0]) + L * t
            d = pos["b5.n2"] - tip0
            if force @ t > 0:          # axial: the clamp fixes r' = t, so u'(0) = 0: 1D Hermite FE solution
                assert d @ t == pytest.approx(_clamped_axial_fe(8.0, L, EA, 2), rel=1e-6)
                assert 8.0 * L / EA * 0.9 < d @ t < 8.0 * L / EA      # stiffer than N L / EA (the clamp)
                assert abs(d @ nrm) < 1e-9
            elif s_at == 2.0:          # transverse tip load
                assert d @ nrm == pytest.approx(0.06 * L**3 / (3 * EI), rel=1e-3)
                slope = q[idx][-2:]    # r' at the tip node
                assert np.arctan2(slope @ nrm, slope @ t) == pytest.approx(0.06 * L**2 / (2 * EI), rel=1e-3)
            else:                      # load at mid-span (a node): tip deflection P a^2 (3L - a) / 6EI, a = L/2
                assert d @ nrm == pytest.approx(0.06 * 1.0 * (3 * L - 1.0) / (6 * EI), rel=1e-3)
    finally:
        sys_mixed.update_model(flexible.beam_model_from_dict(MIXED, "<mixed>"))


@pytest.mark.build
def test_point_loads_conserve_energy(sys_mixed):
    """Loads are constant forces: their potential -F_E . e is in energy_gravity, and the total is conserved."""
    try:
        sys_mixed.update_model(_with_loads([{"beam": "b7", "force": [3.0, 2.0]}, {"beam": "b2", "s": 0.4,
                                                                                  "force": [-5.0, 1.0]}],
                                           gravity=(0.5, -9.81)))
        res = sys_mixed.simulate(0.3, 1e-3, integrator="dopri5", rtol=1e-10, atol=1e-10)
    finally:
        sys_mixed.update_model(flexible.beam_model_from_dict(MIXED, "<mixed>"))
    tot = res.energy_total
    assert np.abs(tot - tot[0]).max() < 1e-8 * np.abs(res.energy_kinetic).max()
    ref = sys_mixed.simulate(0.3, 1e-3, integrator="dopri5", rtol=1e-10, atol=1e-10)
    assert np.abs(res.node("tip") - ref.node("tip")).max() > 1e-3          # the loads act


# ---------------------------------------------------------------- bad input

def _bad(mut):
    import copy
    d = copy.deepcopy(MIXED)
    mut(d)
    return d


BAD = [
    (lambda d: d["beams"][0].update(E=-1.0), "beams[0].E", "positive"),
    (lambda d: d["beams"][1].update(A=0), "beams[1].A", "positive"),
    (lambda d: d["beams"][2].update(I=-2e-6), "beams[2].I", "positive"),
    (lambda d: d["beams"][3].update(rho=0.0), "beams[3].rho", "positive"),
    (lambda d: d["beams"][0].update(elements=0), "beams[0].elements", "positive"),
    (lambda d: d["beams"][0].update(elements=2.5), "beams[0].elements", "integer"),
    (lambda d: d["beams"][0].update(length="long"), "beams[0].length", "number"),
    (lambda d: d["joints"][1].update(parent="b2"), "joints[1].parent", "itself"),
    (lambda d: d["joints"][2].pop("axis"), "joints[2].axis", "axis"),
    (lambda d: d["joints"][5].update(axis=[0, 0]), "joints[5].axis", "non-zero"),
    (lambda d: d["joints"][1].update(type="hinge"), "joints[1].type", "unknown joint type"),
    (lambda d: d["joints"][1].update(child="nope"), "joints[1].child", "unknown beam"),
    (lambda d: d["joints"][3].update(child="b1"), "joints[3].child", "already"),
    (lambda d: d["beams"][3].update(angle=0.0), "beams[3].angle", "locks the slope"),
    (lambda d: d["beams"][0].update(colour="red"), "beams[0]", "unknown keys"),
    (lambda d: d.update(gravity=[0, -9.81, 1]), "gravity", "z component"),
    (lambda d: d["joints"][0].update(parent="b4", at=None) or d["joints"][0].pop("at"), "joints[0].parent",
     "loop"),
    (lambda d: d.update(loads=[{"beam": "b9", "force": [0, 1]}]), "loads[0].beam", "unknown beam"),
    (lambda d: d.update(loads=[{"beam": "b1", "s": 2.5, "force": [0, 1]}]), "loads[0].s", "on the beam"),
    (lambda d: d.update(loads=[{"beam": "b1", "force": [0]}]), "loads[0].force", "2 numbers"),
    (lambda d: d.update(loads=[{"beam": "b1"}]), "loads[0].force", "missing"),
]


def test_yaml_exponent_strings_are_numbers():
    """PyYAML reads 4e-4 and 21e6 (no dot) as strings; they are accepted as numbers, words are not."""
    import copy
    d = copy.deepcopy(MIXED)
    d["beams"][0].update(E="21e6", A="4e-4")
    b = flexible.beam_model_from_dict(d, "ok.yaml").beams[0]
    assert (b.E, b.A) == (21e6, 4e-4)
    d["beams"][0].update(I="2e-6x")
    with pytest.raises(ModelError) as ei:
        flexible.beam_model_from_dict(d, "bad.yaml")
    assert str(ei.value).startswith("bad.yaml: beams[0].I: expected a number")
    d["beams"][0].update(I="-2e-6")
    with pytest.raises(ModelError, match="positive"):
        flexible.beam_model_from_dict(d, "bad.yaml")


@pytest.mark.parametrize("mut, field, words", BAD, ids=[b[1] + ":" + b[2] for b in BAD])
def test_bad_input_names_the_field(mut, field, words):
    with pytest.raises(ModelError) as ei:
        flexible.beam_model_from_dict(_bad(mut), "bad.yaml")
    assert ei.value.field == field
    assert words in str(ei.value)
    assert str(ei.value).startswith(f"bad.yaml: {field}: ")


CLI_BAD = [   # the bad-input cases, on the shipped example file: (text replaced, replacement, field)
    ("E: 21.0e+6", "E: 0", "beams[0].E"),
    ("A: 4.0e-4", "A: -4e-4", "beams[0].A"),
    ("I: 2.0e-6", "I: 0.0", "beams[0].I"),
    ("rho: 7800.0", "rho: -7800.0", "beams[0].rho"),
    ("elements: 5", "elements: 0", "beams[0].elements"),
    ("parent: b1, child: b2", "parent: b2, child: b2", "joints[1].parent"),
    ("{name: j3, type: revolute,", "{name: j3, type: translational,", "joints[2].axis"),
]


@pytest.mark.parametrize("old, new, field", CLI_BAD, ids=[c[2] for c in CLI_BAD])
@pytest.mark.parametrize("cmd", ["check", "simulate"])
def test_cli_bad_input_one_line_exit_2(cmd, old, new, field, tmp_path, capsys):
    from codegen import cli
    text = open(EX_B).read()
    assert old in text
    bad = tmp_path / "bad.yaml"
    bad.write_text(text.replace(old, new, 1))
    args = [cmd, str(bad)] + (["--quiet", "--out", str(tmp_path / "x.npz")] if cmd == "simulate" else [])
    assert cli.main(args) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and err.startswith(f"mbgen: error: {bad}: {field}: "), err
    assert not (tmp_path / "x.npz").exists()


def test_cli_bad_file_exits_2(tmp_path):
    text = open(EX_B).read().replace("E: 21.0e+6, A: 4.0e-4, I: 2.0e-6, rho: 7800.0}\n  - {name: b2",
                                     "E: -21.0e+6, A: 4.0e-4, I: 2.0e-6, rho: 7800.0}\n  - {name: b2", 1)
    bad = tmp_path / "bad.yaml"
    bad.write_text(text)
    out = subprocess.run([sys.executable, "-m", "codegen.cli", "check", str(bad)], capture_output=True, text=True)
    assert out.returncode == 2
    assert "beams[0].E" in out.stderr and "positive" in out.stderr
    ok = subprocess.run([sys.executable, "-m", "codegen.cli", "check", EX_B], capture_output=True, text=True)
    assert ok.returncode == 0 and "n = 110" in ok.stdout


@pytest.mark.build
@pytest.mark.parametrize("which", ["tree", "slider-chain"])
def test_hht_with_translational_joints_matches_dopri5(which, sys_mixed, sys_slider):
    """The HHT residual has its own path for state-dependent operators (translational joints)."""
    s = sys_mixed if which == "tree" else sys_slider
    ref = s.simulate(0.2, 1e-3, integrator="dopri5", rtol=1e-10, atol=1e-10)
    r = s.simulate(0.2, 1e-3, integrator="hht", alpha=-0.05, substeps=4)
    scale = np.abs(ref.q).max()                         # the motion is 5-12 % of it in 0.2 s
    assert np.abs(r.q - ref.q).max() < 5e-5 * scale     # measured 9e-6, 1.5e-5 (second order in h)
    assert r.meta["newton_not_converged"] == 0
