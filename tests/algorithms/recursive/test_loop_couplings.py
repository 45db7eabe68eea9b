"""Couplings (the `couplings:` section: L1 = p(L2) between scalar coordinates, codegen.model.couplings) in the
recursive family (rows of its O(n) loop solve) and in grcr (multipliers over its coordinate-reduced solve), each
against an independent dense KKT solve and against each other over a run.

The oracle is tests/support/kkt.py's: the spanning tree in pinocchio from the model dict (M, h), the cut joint's
rows from pinocchio's frame Jacobians; the coupling rows are written out here in numpy (J = a - p'(L2) b,
gamma = p''(L2) (b.u)^2), and [[M, J^T], [J, 0]] is solved densely. One model (a planar four-bar closed by a cut
joint plus a spatial arm coupled to its crank: linear, quartic and constant couplings) built once for the module.
"""
import numpy as np
import pytest

import codegen
from codegen.algorithms import BuildError
from codegen.model import ModelError
from support.kkt import KKT, four_bar_dict
from support.systems import get_system, rel_err

P = np.polynomial.polynomial
LIN = [0.2, 0.5]                                   # a1 = 0.2 + 0.5 r1
QUART = [0.1, -0.6, 0.4, 0.3, -0.2]                # a2 = p(a1)
SLIDE = [0.15]                                     # s3 = 0.15


def coupled_dict():
    d = four_bar_dict()
    th1 = d["joints"][0]["q0"]
    a1 = P.polyval(th1, LIN)
    a2 = P.polyval(a1, QUART)
    d["name"] = "coupled_four_bar"
    d["gravity"] = [0.0, -9.81, 0.3]
    d["bodies"] += [{"name": "arm1", "mass": 1.2, "com": [0.3, 0.05, 0], "inertia": [0.02, 0.03, 0.04]},
                    {"name": "arm2", "mass": 0.8, "com": [0.2, 0, 0.05], "inertia": [0.01, 0.02, 0.02]},
                    {"name": "slider", "mass": 0.4, "com": [0.05, 0, 0], "inertia": [0.002, 0.003, 0.002]}]
    d["joints"] += [{"name": "a1", "type": "revolute", "parent": "ground", "child": "arm1", "axis": [1, 0, 0],
                     "parent_frame": {"pos": [0, 0, 1]}, "q0": a1},
                    {"name": "a2", "type": "revolute", "parent": "arm1", "child": "arm2", "axis": [0, 1, 0],
                     "parent_frame": {"pos": [0.6, 0, 0]}, "q0": a2},
                    {"name": "s3", "type": "prismatic", "parent": "arm2", "child": "slider", "axis": [1, 0, 0],
                     "parent_frame": {"pos": [0.4, 0, 0]}, "q0": SLIDE[0]}]
    d["couplings"] = [{"name": "lin", "joint": "a1", "joint2": "r1", "multiplier": LIN[1], "offset": LIN[0]},
                      {"name": "quart", "joint": "a2", "joint2": "a1", "polycoef": QUART},
                      {"name": "const", "joint": "s3", "polycoef": SLIDE}]
    return d


def coupling_rows(k: KKT, d, q, u):
    """(J, gamma, phi) of the dict's couplings (joints only) in k's layout."""
    sl = k.joint_slices()
    J, g, phi = [], [], []
    for c in d["couplings"]:
        poly = c.get("polycoef") or [c.get("offset", 0.0), c.get("multiplier", 1.0)]
        a = np.zeros(k.nv)
        a[sl[c["joint"]][1].start] = 1.0
        L1 = q[sl[c["joint"]][0].start]
        b = np.zeros(k.nv)
        if "joint2" in c:
            b[sl[c["joint2"]][1].start] = 1.0
        L2 = b @ q if "joint2" not in c else q[sl[c["joint2"]][0].start]
        J.append(a - P.polyval(L2, P.polyder(poly)) * b)
        g.append(P.polyval(L2, P.polyder(poly, 2)) * (b @ u) ** 2)
        phi.append(L1 - P.polyval(L2, poly))
    return np.array(J), np.array(g), np.array(phi)


def oracle(k: KKT, d, q, u):
    """(udot, multipliers of the coupling rows): the dense KKT solve with the cut's and the couplings' rows."""
    M, h, Q = k.mass_matrix(q), k.bias(q, u), k.generalized_forces(q, u, 0.0)
    Jc, gc, _ = coupling_rows(k, d, q, u)
    J = np.vstack([k.jacobian(q), Jc])
    g = np.concatenate([k.gamma(q, u), gc])
    m = J.shape[0]
    x = np.linalg.solve(np.block([[M, J.T], [J, np.zeros((m, m))]]), np.concatenate([Q - h, g]))
    return x[:k.nv], -x[k.nv:][-len(gc):]


@pytest.fixture(scope="module")
def case():
    d = coupled_dict()
    m = codegen.model_from_dict(d)
    return d, m, get_system(m, "recursive", ref_point="centroid"), KKT(d)


@pytest.mark.build
def test_rows_and_initial_state(case):
    d, m, s, k = case
    assert s.plan.nm_cut == 2 and s.plan.nm == 5 and [c.name for c in s.plan.couplings] == ["lin", "quart", "const"]
    q, u = m.initial_state()
    assert np.abs(s.kernel.loop_residual(q, u)).max() < 1e-14
    assert np.abs(coupling_rows(k, d, q, u)[2]).max() < 1e-14
    assert any("coupling quart" in r for r in s.plan.roadmap())


def consistent(k, d, q, u):
    """u projected onto the velocities that keep the cut and the couplings (the null space of their rows)."""
    J = np.vstack([k.jacobian(q), coupling_rows(k, d, q, u)[0]])
    N = np.linalg.svd(J)[2][J.shape[0]:].T
    return N @ (N.T @ u)


@pytest.mark.build
def test_forward_dynamics_match_kkt(case):
    """At the initial state with random velocities that keep the constraints (off them the cut's rows and the
    oracle's are different functions; tests/algorithms/recursive/test_loops.py)."""
    d, m, s, k = case
    rng = np.random.default_rng(7)
    q, _ = m.initial_state()
    s.kernel.alpha = s.kernel.beta = 0.0
    for trial in range(3):
        u = consistent(k, d, q, 2 * rng.normal(size=q.size))
        ud_ref, lam_ref = oracle(k, d, q, u)
        assert rel_err(s.forward_dynamics(q, u), ud_ref) < 1e-10
        X = np.concatenate([q, u])[None]
        from codegen.runtime.families.loops import loop_outputs
        out = loop_outputs(s, X, np.zeros(1))
        assert rel_err(out["coupling_force"][0], lam_ref) < 1e-9
        assert list(out["coupling_names"]) == ["lin", "quart", "const"]


@pytest.mark.build
def test_simulation_keeps_the_couplings_and_the_energy(case):
    """RK4 with the default Baumgarte stabilisation: every coupling and the cut hold, energy is conserved (no
    dampers: the constraint forces do no work); the coupled coordinates follow p along the run."""
    d, m, s, k = case
    q0, _ = m.initial_state()
    u0 = consistent(k, d, q0, np.full(k.nv, 2.0))       # the crank turns, the coupled joints follow
    r = s.simulate(1.0, 1e-3, u0=u0)
    assert r.meta["constraint_violation_max"]["position"] < 1e-7
    assert r.meta["energy"]["value"] < 1e-7
    sl = k.joint_slices()
    r1, a1, a2 = (r.q[:, sl[n][0].start] for n in ("r1", "a1", "a2"))
    assert np.abs(a1 - P.polyval(r1, LIN)).max() < 1e-7 and np.abs(a2 - P.polyval(a1, QUART)).max() < 1e-7
    assert np.abs(r.q[:, sl["s3"][0].start] - SLIDE[0]).max() < 1e-7
    assert r.extra["constraint_violation"].shape[1:] == (4, 2)      # the cut, then the three couplings


@pytest.mark.build
def test_projection_keeps_the_couplings(case):
    d, m, s, k = case
    r = s.simulate(0.3, 5e-3, projection=True)
    assert r.meta["constraint_violation_max"]["position"] < 1e-10


@pytest.mark.build
def test_violated_start_names_the_coupling(case):
    d, m, s, k = case
    q, u = m.initial_state()
    q = q.copy()
    q[k.joint_slices()["a2"][0].start] += 0.01
    with pytest.raises(ModelError, match=r"couplings\[quart\].*coupling"):
        s.simulate(0.1, 1e-2, q0=q)


def test_other_families_refuse_couplings_by_name():
    m = codegen.model_from_dict({k: v for k, v in coupled_dict().items() if k != "loops"})
    for alg in ("dense", "mstmm", "cfa"):
        with pytest.raises(BuildError, match="couplings.*lin, quart, const.*use recursive or grcr"):
            codegen.System(m, algorithm=alg)
    with pytest.raises(BuildError, match="'grcr' solves closed loops.*no `loops:`"):
        codegen.System(m, algorithm="grcr")


# ------------------------------------------------------------------ grcr: the same model, its own state
@pytest.fixture(scope="module")
def grcr(case):
    """grcr's system on the coupled four-bar; its state has the cut coordinate r4 after the tree's (last of q, u)."""
    d, m, _, k = case
    return get_system(m, "grcr")


def grcr_state(s, k, d, u_tree):
    """grcr's state at the initial configuration with tree speeds u_tree (consistent), the cut's speed solved."""
    x = np.concatenate(s.initial_state())
    x[s.nq:s.nq + k.nv] = u_tree
    return s.kernel.project_state(x)


@pytest.mark.build
def test_grcr_forward_dynamics_and_forces_match_kkt(case, grcr):
    d, m, _, k = case
    rng = np.random.default_rng(8)
    s = grcr
    assert [c.name for c in s.plan.couplings] == ["lin", "quart", "const"]
    assert any("coupling quart" in r for r in s.plan.roadmap())
    for trial in range(3):
        x = grcr_state(s, k, d, consistent(k, d, s.initial_state()[0][:k.nv], 2 * rng.normal(size=k.nv)))
        q, u = x[:s.nq], x[s.nq:]
        ud_ref, lam_ref = oracle(k, d, q[:k.nv], u[:k.nv])
        s.kernel.alpha = s.kernel.beta = 0.0
        assert rel_err(s.forward_dynamics(q, u)[:k.nv], ud_ref) < 1e-10
        lam, viol = s.kernel.coupling_history(x[None], np.zeros(1))
        assert rel_err(lam[0], lam_ref) < 1e-9 and np.abs(viol).max() < 1e-13


@pytest.mark.build
def test_grcr_run_keeps_the_couplings_as_recursive_does(case, grcr):
    """1 s of RK4 with the default Baumgarte rate (as recursive's): the couplings hold, energy is conserved, and
    the run and the coupling forces agree with the recursive family's (another algorithm) to the drift's order."""
    d, m, s_rec, k = case
    q0 = m.initial_state()[0]
    u0 = consistent(k, d, q0, np.full(k.nv, 2.0))
    r = grcr.simulate(1.0, 1e-3, u0=grcr_state(grcr, k, d, u0)[grcr.nq:])
    ref = s_rec.simulate(1.0, 1e-3, u0=u0)
    assert r.meta["baumgarte"] == 100.0 and r.meta["energy"]["value"] < 1e-9
    cv = r.extra["constraint_violation"]
    assert cv.shape[1:] == (4, 2) and cv[..., 0].max() < 1e-8          # the loop, then the three couplings
    assert list(r.extra["coupling_names"]) == ["lin", "quart", "const"]
    assert np.abs(r.q[:, :k.nv] - ref.q).max() < 1e-7
    assert rel_err(r.extra["coupling_force"], ref.extra["coupling_force"]) < 1e-6


@pytest.mark.build
def test_grcr_refuses_a_violated_start_and_projection(case, grcr):
    d, m, _, k = case
    q = grcr.initial_state()[0].copy()
    q[k.joint_slices()["a2"][0].start] += 0.01
    with pytest.raises(ModelError, match=r"couplings\[quart\].*violated at the given start state"):
        grcr.simulate(0.1, 1e-2, q0=q)
    with pytest.raises(ValueError, match=r"projection: not an option of this model \(closed loops of algorithm grcr.*algorithm recursive"):
        grcr.simulate(0.1, 1e-2, projection=True)
    assert grcr.simulate(0.02, 1e-2, baumgarte=5.0).meta["baumgarte"] == 5.0
    with pytest.raises(ValueError, match="switching 'gcl' .* lin, quart, const"):
        grcr.simulate(0.02, 1e-2, switching="gcl")
