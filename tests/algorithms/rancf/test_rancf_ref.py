"""Checks of the dense numpy RANCF reference for model M3 (codegen/algorithms/rancf/reference.py), Hu & Wang 2016.

What is checked:
* operator structure: n = 4 N_bar + 2 N = 110 coordinates (eq 56), (eps_Phi)^2 = 0 (eq 30) so
  Phi = (I - eps_Phi)^-1 = I + eps_Phi (eq 33), Omega symmetric positive definite and block
  tridiagonal (eq 44);
* the numpy element (Gauss quadrature, paper's eq 7 structure) agrees with the independent sympy
  derivation of codegen/symbolic/ancf.py: mass matrix (eq 4), energy and elastic force;
* the initial state is M3's straight horizontal chain (tip at (25, 0)) with zero elastic energy;
* the O(n) recursive solution (eqs 44-55) equals the dense solve of Omega betadot = -Gamma;
* case B (E = 21 MPa): 0.2 s with solve_ivp (DOP853, tight tolerances) conserves kinetic + elastic +
  gravity energy to 1e-6 relative, and the nodes shared by adjacent elements stay shared.
"""
import numpy as np
import pytest
import sympy as sp

from codegen.algorithms.rancf import reference as rancf_ref
from codegen.algorithms.rancf.reference import FlexiblePendulum


@pytest.fixture(scope="module")
def m3():
    return FlexiblePendulum(n_beams=5, n_elem=5, L_beam=5.0, E=21e6, A=4e-4, I=2e-6, rho=7800.0)


def random_state(model, rng, amp=0.05):
    y = model.initial_state()
    y[:model.n] += amp * rng.normal(size=model.n)
    y[model.n:] = rng.normal(size=model.n)
    return y


def test_operator_structure(m3):
    assert m3.n == 4 * m3.N_bar + 2 * m3.n_beams == 110
    assert np.count_nonzero(m3.eps_Phi @ m3.eps_Phi) == 0
    np.testing.assert_allclose(m3.Phi, np.eye(8 * m3.N_bar) + m3.eps_Phi, atol=1e-14)
    Om = m3.Omega
    np.testing.assert_allclose(Om, Om.T, atol=1e-14 * np.abs(Om).max())
    assert np.linalg.eigvalsh(Om).min() > 0
    # block tridiagonal in the element blocks of beta
    for s in range(m3.N_bar):
        for r in range(m3.N_bar):
            blk = Om[m3.off[s]:m3.off[s + 1], m3.off[r]:m3.off[r + 1]]
            if abs(s - r) > 1:
                assert not blk.any()


def test_plan_parameters_equal_the_symbolic_derivation_bit_for_bit():
    """The plan's closed-form M_E (eq 4) and F_EG (eq 9), which spare a cached build sympy, are the floats that
    lambdify of codegen/symbolic/ancf.py's matrices gives (as the plan computed them before)."""
    from codegen.algorithms.rancf.plan import element_gravity, element_mass
    from codegen.symbolic import ancf
    M = sp.lambdify((ancf.rho, ancf.A, ancf.l), ancf.mass_matrix(), "numpy")
    G = sp.lambdify((ancf.rho, ancf.A, ancf.l, ancf.gx, ancf.gy), ancf.gravity_force(), "numpy")
    rng = np.random.default_rng(3)
    cases = [(7800.0, 4e-4, 1.0, 0.0, -9.81)] + [(rng.uniform(1, 1e4), rng.uniform(1e-6, 1), rng.uniform(1e-3, 10),
                                                 *rng.normal(0, 10, 2)) for _ in range(50)]
    for rho, A, l, gx, gy in cases:
        assert np.array_equal(element_mass(rho, A, l), np.asarray(M(rho, A, l), float))
        assert np.array_equal(element_gravity(rho, A, l, gx, gy), np.asarray(G(rho, A, l, gx, gy), float).reshape(8))


def test_chord_frame_element_code_equals_the_symbolic_gradient_and_energy():
    """The kernel's elastic force and strain energy (rancf.plan.chord_frame_force: eq 6 in the chord frame) are
    the symbolic gradient (eq 7) and energy of codegen/symbolic/ancf.py (evaluated in 40-digit arithmetic: in
    doubles its expanded form loses digits to cancellation), up to rounding."""
    import math

    import mpmath
    from codegen.algorithms.rancf.plan import chord_frame_force
    from codegen.symbolic import ancf
    args = [list(ancf.e), ancf.E, ancf.A, ancf.I, ancf.l]
    F_mp = sp.lambdify(args, list(ancf.explicit(ancf.elastic_force())), "mpmath")
    U_mp = sp.lambdify(args, ancf.explicit(ancf.strain_energy()), "mpmath")

    def exact(f, e, prm):
        with mpmath.workdps(40):
            out = f([mpmath.mpf(x) for x in e], *map(mpmath.mpf, prm))
            return np.array([float(x) for x in out]) if isinstance(out, list) else float(out)

    def run(code, e, *prm):
        env = dict(zip(("EE", "AA", "II", "ll"), prm), e=e, sqrt=math.sqrt, F=[0.0] * 8)
        for target, expr in code:
            if target.startswith("F["):
                env["F"][int(target[2:-1])] = eval(expr, env)
            else:
                env[target] = eval(expr, env)
        return env
    rng = np.random.default_rng(5)
    for _ in range(60):
        l_, ang = rng.uniform(0.1, 5.0), rng.uniform(-np.pi, np.pi)
        e0 = np.array([*rng.normal(size=2), np.cos(ang), np.sin(ang), 0, 0, np.cos(ang), np.sin(ang)])
        e0[4:6] = e0[0:2] + l_ * e0[2:4]
        e = list(e0 + rng.normal(size=8) * rng.choice([1e-3, 1e-2, 1e-1]))
        prm = (rng.uniform(1e6, 2e11), rng.uniform(1e-5, 1e-2), rng.uniform(1e-10, 1e-5), l_)
        F, F_ref = np.array(run(chord_frame_force(), e, *prm)["F"]), exact(F_mp, e, prm)
        np.testing.assert_allclose(F, F_ref, rtol=0, atol=1e-10 * np.abs(F_ref).max())
        assert run(chord_frame_force(True), e, *prm)["U"] == pytest.approx(exact(U_mp, e, prm), rel=1e-10)


def test_element_matches_symbolic_derivation(m3):
    from codegen.symbolic import ancf
    E_, A_, I_, rho_, l_ = 21e6, 4e-4, 2e-6, 7800.0, m3.l
    par = {ancf.E: E_, ancf.A: A_, ancf.I: I_, ancf.rho: rho_, ancf.l: l_}
    M_sym = np.array(ancf.mass_matrix().subs(par), float)
    np.testing.assert_allclose(m3.mats["M"], M_sym, rtol=1e-13, atol=1e-13 * np.abs(M_sym).max())
    # printed eq 4 entries (spot checks), times rho A l
    m = rho_ * A_ * l_
    assert m3.mats["M"][0, 0] == pytest.approx(13 / 35 * m, rel=1e-14)
    assert m3.mats["M"][2, 6] == pytest.approx(-l_**2 / 140 * m, rel=1e-14)

    args = [list(ancf.e), ancf.alpha, ancf.d]
    F_sym = sp.lambdify(args, list(ancf.elastic_force().subs(par)), "math")
    U_sym = sp.lambdify(args, ancf.strain_energy().subs(par), "math")
    rng = np.random.default_rng(0)
    ee = m3.element_coordinates(random_state(m3, rng, 0.1)[:m3.n])
    U, F = rancf_ref.elastic_energy_and_force(ee, m3.mats)
    for k in range(0, m3.N_bar, 4):
        x = ee[k]
        chord = (np.arctan2(x[5] - x[1], x[4] - x[0]), np.hypot(x[4] - x[0], x[5] - x[1]))
        Fk = np.array(F_sym(list(x), *chord))
        np.testing.assert_allclose(F[k], Fk, rtol=0, atol=1e-9 * np.abs(Fk).max())
        assert U[k] == pytest.approx(U_sym(list(x), *chord), rel=1e-9, abs=1e-9)


def test_initial_state_is_straight_horizontal_chain(m3):
    y0 = m3.initial_state()
    q = y0[:m3.n]
    ee = m3.element_coordinates(q)
    np.testing.assert_allclose(ee[0, 0:2], [0, 0])
    np.testing.assert_allclose(m3.tip(q), [25.0, 0.0], atol=1e-14)
    np.testing.assert_allclose(ee[:, [1, 5]], 0, atol=1e-14)      # all on y = 0
    np.testing.assert_allclose(ee[:, [2, 6]], 1, atol=1e-14)      # slopes (1, 0)
    T, U, V = m3.energies(y0)
    assert T == 0 and abs(U) < 1e-9 and abs(V) < 1e-12
    _, F = rancf_ref.elastic_energy_and_force(ee, m3.mats)
    assert np.abs(F).max() < 1e-9


def test_recursive_equals_dense(m3):
    rng = np.random.default_rng(1)
    for _ in range(3):
        y = random_state(m3, rng)
        q, beta = y[:m3.n], y[m3.n:]
        a_dense = m3.accel_dense(q, beta)
        a_rec = m3.accel_recursive(q, beta)
        np.testing.assert_allclose(a_rec, a_dense, rtol=0, atol=1e-9 * np.abs(a_dense).max())
        # and the dense solution satisfies Omega betadot + Gamma = 0 (eq 40 with Q = 0)
        res = m3.Omega @ a_dense + m3.Gamma(q, beta)
        assert np.abs(res).max() < 1e-9 * np.abs(m3.Gamma(q, beta)).max()


def test_energy_conservation_case_B(m3):
    t_eval = np.linspace(0.0, 0.2, 41)
    sol = m3.simulate(0.2, rtol=1e-10, atol=1e-10, method="DOP853", t_eval=t_eval)
    assert sol.success
    E = np.array([m3.energies(y) for y in sol.y.T])            # columns: kinetic, elastic, gravity
    total = E.sum(axis=1)
    scale = np.abs(E).max()                                      # energy exchanged during the run
    assert E[-1, 0] > 50.0                                       # the chain really falls (~150 J)
    assert E[:, 1].max() > 1e-3                                  # ... and deforms
    assert np.abs(total - total[0]).max() <= 1e-6 * scale

    # nodes shared between consecutive elements stay shared (full node inside a beam, position at
    # a joint), by construction of e = Phi C q
    ee = m3.element_coordinates(sol.y[:m3.n, -1])
    for s in range(1, m3.N_bar):
        if m3.first[s]:
            np.testing.assert_array_equal(ee[s, 0:2], ee[s - 1, 4:6])
        else:
            np.testing.assert_array_equal(ee[s, 0:4], ee[s - 1, 4:8])
    np.testing.assert_array_equal(ee[0, 0:2], [0.0, 0.0])
