"""Generated RANCF kernels (templates/rancf.pyx.j2, codegen/flexible.py), Hu & Wang 2016, model M3.

Two compiled topologies (about 30 s each when the cache is cold, then cached in generated/):
* M3, 5 beams x 5 elements in a chain (elimination in the paper's order, eq 46), with case A and
  case B numbers loaded into the same module;
* a branched tree with every element kind: ground pin, ground clamp, ground slider, planar revolute,
  fixed and translational (eqs 20-21) joints between beams (elimination leaves first; state-dependent
  Phi, C and acceleration remainders c).

Checked: the O(n) recursion (eqs 44-55) equals the dense Cholesky solve of the same Omega, Gamma (eq 41)
to 1e-10 on random numbers and states; Omega and Gamma equal J^T M J and J^T (M Jdot u + F_EK - F_E)
with J = de/dq by finite differences (an independent Lagrange check that covers the translational
joint); the kernel equals codegen/rancf_ref.py; element force and Jacobian (sympy C code) against the
numpy reference and finite differences; energy conservation (case B, 0.5 s, RK4 dt = 1e-3) and with the
translational joints; the implicit HHT-alpha method; case A against the rigid 5-link pendulum; NPZ
contents; bad input.
"""
import os
import subprocess
import sys

import numpy as np
import pytest
import scipy.linalg as sl

import codegen
from codegen import flexible
from codegen.model import ModelError
from codegen.rancf_ref import FlexiblePendulum, elastic_energy_and_force

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
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
    p, nb, npe = system.plan.params(), system.plan.nbar, flexible.NPE
    M = sl.block_diag(*[p[2 + npe * k:2 + npe * k + 64].reshape(8, 8) for k in range(nb)])
    FE = np.concatenate([p[2 + npe * k + 68:2 + npe * k + 76] for k in range(nb)])
    F = system.kernel.elastic(q).ravel()
    return J.T @ M @ J, J.T @ (M @ Jdu + F - FE)


# ---------------------------------------------------------------- recursion vs dense

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

def test_case_B_energy_conservation_and_npz(sys_b, tmp_path):
    res = sys_b.simulate(0.5, 1e-3, integrator="rk4")
    T, U, V = res.energy_kinetic, res.extra["energy_elastic"], res.extra["energy_gravity"]
    tot = T + U + V
    np.testing.assert_allclose(res.energy_total, tot, rtol=0, atol=1e-12 * np.abs(V).max())
    assert T[-1] > 500.0 and U.max() > 1.0              # falls and deforms
    drift = np.abs(tot - tot[0]).max() / np.abs(T).max()
    assert drift < 1e-4, drift
    path = res.save(tmp_path / "b.npz")
    with np.load(path) as z:
        names = list(z["node_names"])
        assert len(names) == 30 and names[-1] == "tip" and names[0] == "b1.n0"
        assert z["node_pos"].shape == (501, 30, 2)
        assert z["energy_elastic"].shape == (501,)
        np.testing.assert_allclose(z["node_pos"][0, -1], [25.0, 0.0], atol=1e-14)
        np.testing.assert_array_equal(z["node_pos"], res.node_pos)
    back = codegen.load_result(path)
    np.testing.assert_array_equal(back.extra["energy_elastic"], U)
    assert res.plot(tmp_path / "b.png").endswith(".png")
    assert os.path.getsize(tmp_path / "b.png") > 10000


@pytest.mark.parametrize("which", ["tree", "slider-chain"])
def test_translational_joints_conserve_energy(which, sys_mixed, sys_slider):
    s, gname = (sys_mixed, "b3.gamma") if which == "tree" else (sys_slider, "s3.gamma")
    res = s.simulate(0.3, 1e-3, integrator="dopri5", rtol=1e-10, atol=1e-10)
    tot = res.energy_total
    assert np.abs(res.energy_kinetic).max() > 1.0
    assert np.abs(tot - tot[0]).max() < 1e-8 * np.abs(res.energy_kinetic).max()
    assert np.ptp(res.coord(gname)) > 1e-3                # the slider really slides


def test_hht_matches_explicit_case_B(sys_b):
    ref = sys_b.simulate(0.3, 1e-3, integrator="dopri5", rtol=1e-10, atol=1e-10)
    r = sys_b.simulate(0.3, 1e-3, integrator="hht", alpha=-0.05)
    assert np.abs(r.node("tip") - ref.node("tip")).max() < 1e-4
    tot = r.energy_total
    assert np.abs(tot - tot[0]).max() < 1e-5 * np.abs(r.energy_kinetic).max()
    assert r.meta["newton_not_converged"] == 0


def test_case_A_follows_rigid_pendulum(sys_b):
    """Case A (E = 210 GPa) with the implicit method at dt = 1e-3 vs the rigid 5-link chain of thin rods."""
    from codegen import models
    model_a = codegen.load_model(EX_A)
    sys_b.update_model(model_a)
    try:
        r = sys_b.simulate(1.0, 1e-3, integrator="hht", alpha=-0.05)
    finally:
        sys_b.update_model(codegen.load_model(EX_B))
    rig = codegen.build(models.chain(5, m=15.6, L=5.0), "recursive")
    rr = rig.simulate(1.0, 1e-3, integrator="dopri5", rtol=1e-10, atol=1e-12)
    ang = 2 * np.arctan2(rr.body_quat[:, 4, 3], rr.body_quat[:, 4, 0])
    tip = rr.body_com[:, 4, :2] + 2.5 * np.column_stack([np.cos(ang), np.sin(ang)])
    err = np.abs(r.node("tip") - tip).max(axis=0) / 25.0
    assert (err < 0.006).all() and (err < 1e-4).all(), err


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
]


@pytest.mark.parametrize("mut, field, words", BAD, ids=[b[1] + ":" + b[2] for b in BAD])
def test_bad_input_names_the_field(mut, field, words):
    with pytest.raises(ModelError) as ei:
        flexible.beam_model_from_dict(_bad(mut), "bad.yaml")
    assert ei.value.field == field
    assert words in str(ei.value)
    assert str(ei.value).startswith(f"bad.yaml: {field}: ")


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
