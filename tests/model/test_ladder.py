"""The closed-loop families of the model library: ``ladder(k)`` (k planar rectangular loops sharing rails and
rungs, k + 2 degrees of freedom) and ``loop_chain(k)`` (k four-bars in series coupled through bodies only, k
degrees of freedom).

Checked against the independent dense KKT oracle (tests/support/kkt.py, pinocchio built from the model dict):
exact closure at q0, the degrees of freedom (rank of the oracle's constraint Jacobian), the recursive cut-joint
kernel's forward dynamics at random consistent states (k = 1, 2, 3: six kernel builds in all, at the origin
reference point as in benchmarks/bench_grcr.py), and the spanning-tree property a loop-by-loop reduction
needs: every cut's parent is an ancestor of its child in the tree (or ground).
"""
import numpy as np
import pytest
import yaml

import codegen
from codegen import models
from support.kkt import KKT
from support.systems import get_system, rel_err

FAMILIES = {"ladder": (models.ladder, lambda k: k + 2), "loop_chain": (models.loop_chain, lambda k: k)}
BUILT_K = (3,)           # (k = 1, 2: the first loops of k = 3, no structure it lacks; single loops: test_loops.py)


def _kkt(model):
    return KKT(model.to_dict())


def consistent_state(k: KKT, q0, rng, scale=0.25, tol=1e-13):
    """A random state on the constraint manifold near q0: q0 + noise pulled back by Gauss-Newton steps on the
    oracle's full residual (central-difference Jacobian, minimum-norm steps); u random, projected on the null
    space of the oracle's constraint Jacobian."""
    q = q0 + rng.normal(scale=scale, size=q0.size)
    h = 1e-7
    for _ in range(30):
        r = k.constraint(q)
        if np.abs(r).max() < tol:
            break
        J = np.column_stack([(k.constraint(q + h * e) - k.constraint(q - h * e)) / (2 * h) for e in np.eye(q.size)])
        q = q + np.linalg.lstsq(J, -r, rcond=1e-10)[0]
    assert k.max_violation(q) < tol, k.max_violation(q)
    u = k.project_velocity(q, rng.normal(size=k.nv))
    assert k.velocity_violation(q, u) < 1e-12
    return q, u


def ancestors(model, body):
    """The tree path from body up to ground (body excluded, ground included)."""
    parent = {j.child: j.parent for j in model.joints}
    out = []
    while body != "ground":
        body = parent[body]
        out.append(body)
    return out


# ---------------------------------------------------------------------------------------------- model level
@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("k", [1, 2, 3, 10, 40])
def test_exactly_closed_at_rest_and_dof(family, k):
    """q0 closes every cut to round-off, u0 = 0; nv - rank(J) is k + 2 (ladder) or k (loop chain), equal to the
    planar count 3 (moving bodies) - 2 (revolute joints, tree and cut), every joint a revolute about z; the
    constraint Jacobian is well conditioned (the oracle raises on dependent rows) and keeps 2 rows per cut."""
    make, dof = FAMILIES[family]
    m = make(k)
    kk = _kkt(m)
    q0, u0 = kk.initial_state()
    assert kk.max_violation(q0) < 1e-12 and not np.any(u0)
    J = kk.jacobian(q0)
    assert kk.rows_per_cut(q0) == [2] * k and J.shape == (2 * k, m.nv)
    s = np.linalg.svd(J, compute_uv=False)
    assert s[-1] > 0.01 * s[0]                                 # far from a singular configuration
    assert m.nv - np.linalg.matrix_rank(J) == dof(k)
    joints = m.joints + m.cuts
    assert all(j.type == "revolute" and np.allclose(j.axis, [0, 0, 1]) for j in joints)
    assert 3 * len(m.bodies) - 2 * len(joints) == dof(k)
    assert len(m.cuts) == k
    # not at an equilibrium: released from rest, it moves
    assert np.abs(kk.forward(q0, u0)[0]).max() > 1.0


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("k", [1, 2, 3, 4, 5, 6, 7, 25])
def test_every_cut_parent_is_an_ancestor_of_its_child(family, k):
    """The spanning tree a recursive coordinate reduction needs: loop c is the tree path from the cut's parent
    down to its child (plus the cut); ground counts as everyone's ancestor. Every body is in the tree once."""
    m = FAMILIES[family][0](k)
    for c in m.cuts:
        up = ancestors(m, c.child)
        assert c.parent == "ground" or c.parent in up, (c.name, c.parent, c.child, up)
        path = [c.child] + up[:up.index(c.parent)]             # the loop's bodies below the cut's parent
        assert len(path) >= 3                                  # a genuine four-bar-like loop (3 moving links at least)
    assert sorted(j.child for j in m.joints) == sorted(b.name for b in m.bodies)


def test_ladder_layout():
    """The documented serpentine tree of ladder(4): the loops alternate sides."""
    m = models.ladder(4)
    tree = {j.name: (j.parent, j.child) for j in m.joints}
    assert tree["pivotL"] == ("ground", "L0") and tree["hR1"] == ("R1", "R0")
    assert tree["rung2R"] == ("R2", "rung2") and tree["rung2L"] == ("rung2", "L2")
    assert tree["rung3L"] == ("L3", "rung3") and tree["rung3R"] == ("rung3", "R3")
    assert [(c.name, c.parent, c.child) for c in m.cuts] == [
        ("cut1", "ground", "R0"), ("cut2", "L1", "L2"), ("cut3", "R2", "R3"), ("cut4", "L3", "L4")]
    assert len(m.bodies) == 3 * 4 + 2


@pytest.mark.parametrize("family", FAMILIES)
def test_loads_back_from_a_model_file(family, tmp_path):
    """to_dict -> YAML file -> load_model: the same model (topology, numbers, simulation defaults)."""
    m = FAMILIES[family][0](3)
    path = tmp_path / f"{family}.yaml"
    path.write_text(yaml.safe_dump(m.to_dict()))
    m2 = codegen.load_model(str(path))
    assert m2.topology_key() == m.topology_key() and m2.simulation == m.simulation
    q, _ = m.initial_state()
    q2, _ = m2.initial_state()
    assert np.array_equal(q, q2)
    assert _kkt(m2).max_violation(q2) < 1e-12


def test_arguments_are_checked():
    for make in (models.ladder, models.loop_chain):
        for bad in (0, -1, 1.5):
            with pytest.raises(ValueError):
                make(bad)


# ---------------------------------------------------------------------------------------------- against the oracle
@pytest.mark.build
@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("k", BUILT_K)
def test_recursive_forward_dynamics_matches_kkt(family, k):
    """The recursive cut-joint kernel (origin reference point) against the dense KKT solution: at q0 (at rest)
    and at three random consistent states, 1e-9 relative; the kernel's own closure residual at q0 is round-off."""
    m = FAMILIES[family][0](k)
    s = get_system(m, "recursive", ref_point="origin")
    kk = _kkt(m)
    q0, u0 = m.initial_state()
    assert np.abs(s.kernel.loop_residual(q0, u0)).max() < 1e-12
    assert rel_err(s.forward_dynamics(q0, u0), kk.forward(q0, u0)[0]) < 1e-9
    rng = np.random.default_rng(100 * k + len(family))
    for _ in range(3):
        q, u = consistent_state(kk, q0, rng)
        assert np.abs(s.kernel.loop_residual(q, u)).max() < 1e-11
        assert rel_err(s.forward_dynamics(q, u), kk.forward(q, u)[0]) < 1e-9


@pytest.mark.build
@pytest.mark.parametrize("family", FAMILIES)
def test_simulates_with_the_recursive_method(family):
    """The model's own simulation defaults (RK4, dt 1 ms, 1 s) on k = 3: energy kept, loops kept closed."""
    m = FAMILIES[family][0](3)
    s = get_system(m, "recursive", ref_point="origin")
    sim = m.simulation
    r = s.simulate(sim["t_end"], sim["dt"], integrator=sim["integrator"], check_energy=sim["check_energy"])
    assert r.meta["energy_check"]["passed"], r.meta["energy"]
    assert r.meta["constraint_violation_max"]["position"] < 1e-8
    assert np.ptp(r.q, axis=0).max() > 0.1                    # it moves
