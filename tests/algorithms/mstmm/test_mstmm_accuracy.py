"""Accuracy of the Riccati MSTMM on long chains and on M5 (Rui et al. 2020, Sects. 3-4 and 5.2).

* The classical transfer matrix method (the overall transfer matrix as the product of all element
  matrices, eqs 18-19) loses accuracy geometrically with the chain length; the Riccati recursion with
  the same element matrices (Algorithm A, eqs 20-34) and the generated kernel stay at round-off.
* M5 at N = 999 (examples/branch_system.yaml, 500 bodies, 1500 DOF) against an mpmath (30 digit)
  articulated-body reference: the system is ill-conditioned (cond(M) 1e11-1e14: axial inertia 1e-4 of
  the transverse), yet the mstmm kernel and the recursive solver (centroid) both stay near 1e-11.
"""
import numpy as np
import pytest

import codegen
from codegen.algorithms.mstmm import reference as R
from codegen.models import chain, random_state
from support.systems import get_system, rel_err
from test_mstmm_kernel import _centroid_accelerations


def _chain_state(n, seed):
    """Hanging chain, relative angles perturbed by U(-0.3, 0.3), rates N(0, 1)."""
    rng = np.random.default_rng(seed)
    q = rng.uniform(-0.3, 0.3, n)
    q[0] -= np.pi / 2
    return q, rng.normal(size=n)


def _absolute(x):
    return np.cumsum(x)                  # chain coordinates are relative angles


def test_classical_product_loses_accuracy_riccati_does_not():
    err = {}
    for n in (5, 10, 20, 30, 200):
        model = chain(n)
        q, u = _chain_state(n, seed=n)
        truth = _absolute(R.aba_reference(model, q, u))
        phi, phid = _absolute(q), _absolute(u)
        cl = R.chain_classical(phi, phid)
        err[n] = (rel_err(cl["phidd"], truth) if np.all(np.isfinite(cl["phidd"])) else np.inf, cl["growth"],
                  rel_err(R.chain_riccati(phi, phid)["phidd"], truth),
                  rel_err(R.chain_riccati(phi, phid, hinge="paper")["phidd"], truth))
    # classical (eqs 18-19): exact for short chains, the product grows about 4x per body and takes the
    # accuracy with it (measured: 5e-14, 7e-11, 1e-6, 0.9 at n = 5, 10, 20, 30; 1e96 at n = 200)
    assert err[5][0] < 1e-11 and err[10][0] < 1e-8
    assert err[20][1] > 1e4 * err[10][1] and err[200][1] > 1e80
    assert err[20][0] > 1e-9 and not err[30][0] < 1e-3 and not err[200][0] < 1
    # Riccati with the same element matrices: round-off at every length (A1-A5, articulated hinge step)
    for n, (_, _, ric, _) in err.items():
        assert ric < 1e-12, (n, ric)
    # the paper's literal hinge (eq 10, moment condition one body further, carried back from the tip)
    # needs the tip condition carried through every P_i: it degrades like a product (1e4 at n = 200)
    assert err[20][3] < 1e-10 and not err[200][3] < 1e-3


@pytest.mark.build
def test_generated_kernel_on_a_200_link_chain():
    """The generated mstmm kernel (Algorithm A on a chain) against the 30-digit reference: round-off (the recursive
    family meets the same reference on the 999-body tree below)."""
    model = chain(200)
    mst = get_system(model, "mstmm")
    for seed in (1, 2):
        q, u = _chain_state(200, seed)
        assert rel_err(mst.forward_dynamics(q, u), R.aba_reference(model, q, u)) < 1e-12


@pytest.fixture(scope="module")
def m5_999():
    m = codegen.load_model("examples/branch_system.yaml")
    assert (len(m.bodies), m.nv) == (500, 1500)
    assert sorted(b.name for b in m.bodies) == sorted(f"body{k}" for k in range(1, 1000, 2))
    return m


@pytest.mark.build
def test_m5_n999_against_high_precision_reference(m5_999):
    m = m5_999
    mst, rec = get_system(m, "mstmm"), get_system(m)           # recursive: default reference point
    q, u = m.initial_state()
    a, b = mst.forward_dynamics(q, u), rec.forward_dynamics(q, u)
    assert rel_err(a, b) < 1e-9 and rel_err(a, R.aba_reference(m, q, u)) < 1e-12
    rng = np.random.default_rng(7)
    for trial in range(2):
        q, u = random_state(m, rng)
        truth = R.aba_reference(m, q, u)
        a, b = mst.forward_dynamics(q, u), rec.forward_dynamics(q, u)
        e_mst, e_rec = rel_err(a, truth), rel_err(b, truth)
        assert e_mst < 1e-10, (trial, e_mst)               # measured 2e-12 .. 5e-12
        # the recursive solver keeps its articulated inertias exactly symmetric: measured 2e-12 .. 5e-12
        # (5e-10 .. 1e-8 before it did, the round-off growing with the depth of the tree)
        assert e_rec < 1e-10, (trial, e_rec)
        assert rel_err(a, b) < 1e-10, (trial, rel_err(a, b))
    # ceiling hinge of M5 at t = 0: total weight plus inertia forces (momentum balance of all 500 rods)
    q, u = m.initial_state()
    ud = mst.forward_dynamics(q, u)
    ac = _centroid_accelerations(mst, q, u, ud)
    st = mst.kernel.mstmm_states(q, u)
    F, M = -st[:, 9:12], st[:, 6:9]                    # the parent exerts -q and +m (world frame)
    want = np.sum(np.array([b.mass for b in m.bodies])[:, None] * (ac - m.gravity), axis=0)
    i_ceiling = mst.body_names.index("body999")
    assert np.allclose(F[i_ceiling], want, rtol=0, atol=1e-6 * np.abs(want).max())
    assert abs(F[i_ceiling][1] - 500 * 9.81) < 0.5 * 500 * 9.81 and np.abs(M).max() < 1e-9 * np.abs(want).max()
