"""Plain numpy reference of the recursive ANCF (RANCF) of Hu & Wang 2016, dense form, for model M3.

Model M3 (shared/specs/models.md): a planar flexible pendulum of ``n_beams`` beams in a chain,
each split into ``n_elem`` Shabana planar two-node beam elements; beam 1 is pinned to the ground
(position fixed, slope free), beam k+1 is pinned to the tip of beam k (shared position, independent
slopes).  At t = 0 straight and horizontal along +x, at rest; gravity -y.

Paper: Hu Jingchen, Wang Tianshu, "A recursive absolute nodal coordinate formulation with O(n)
algorithm complexity", Chinese J. Theor. Appl. Mech. 48(5):1172-1183, 2016.  Equation numbers are
the paper's.  This module is self-contained (numpy only; scipy only in ``simulate``); it does not use
the sympy derivation in codegen/symbolic/ancf.py, so the two can check each other.

Element (section 1.1): nodal coordinates e = [r_A; r'_A; r_B; r'_B] (8 numbers, the order of eqs
3, 4, 9, 12), mass matrix M_E [HW eq 4], elastic force F_EK [HW eq 7] written with the matrices
A_ij, B_ij, A_i (reconstructed, see codegen/symbolic/ancf.py), gravity F_EG [HW eq 9].

Kinematics (section 1.2), element s = k_i (beam k, element i), global index s in the order of [HW eq 42]:
    V_E{s} = Phi{s, s-1} V_E{s-1} + C{s} beta{s}                                  [HW eqs 13, 22]
    inside a beam:  Phi = [[0, I4], [0, 0]],  C = [0; I4],  beta = V_N{k_(i+1)}    [HW eq 14]
    first element of a beam (planar revolute joint, or the ground pin):
                    Phi = [[0, chi], [0, 0]], chi = diag(I2, 0_2)                  [HW eqs 19, 23]
                    C = [[eps, 0], [0, I4]],  eps = [0_2; I2],  beta = [eta; V_N{k_2}],
                    eta = slope rate (x'dot, y'dot) of the beam's first node       [HW eqs 17-19, 23]
    (the ground pin is the revolute joint to a fixed "beam 0": no Phi block).
Stacked [HW eqs 26-36]:  V_E = eps_Phi V_E + C beta  =>  V_E = (I - eps_Phi)^-1 C beta = Phi C beta,
with (eps_Phi)^2 = 0 [HW eq 30], so Phi = I + eps_Phi [HW eq 33].  For revolute joints Phi and C are
constant, so the acceleration remainders vanish, c = Phidot V_E + Cdot beta = 0 ([HW eqs 16, 25]; only the
translational joint of [HW eqs 20-21] gives c != 0), and positions follow from the same map:
    e_all = Phi C q + e_0,   qdot = beta,
q = the independent nodal coordinates (per beam: the first node's slope, then all coordinates of
nodes 2..n_elem+1), e_0 = the ground pin position in element 1.  Number of coordinates
n = 4 N_bar + 2 N [HW eq 56]: 110 for 5 beams x 5 elements, as in the paper's first DOF point.

Dynamics [HW eqs 37-41]:  Omega betadot + Gamma = Q with
    Omega = C^T Phi^T M_E Phi C,   Gamma = C^T Phi^T (M_E Phi c + F_EK - F_E),
Q = generalised applied forces of beta (zero here: no joint torques).  ``accel_dense`` assembles the
dense Gamma every call and applies Omega^-1 (Omega is constant for revolute joints, so it is
assembled and inverted once); ``accel_recursive`` is the O(n) block-tridiagonal solution of
[HW eqs 44-55] and must agree with it.

Reconstructions (the seed text is garbled in places):
* [HW eq 44] prints Omega = C^T Phi^T M_E C; it is C^T Phi^T M_E Phi C ([HW eq 41]; the printed tau and upsilon
  of [HW eq 45] are those of the latter).
* [HW eqs 49, 55] print Phi where Psi is meant: Omega^-1 = Psi^T P^-1 Psi [HW eq 47], so
  betadot = Psi^T P^-1 Psi gamma, forward sweep eps_s = Psi_{s,s-1} eps_{s-1} + gamma_s, backward
  sweep betadot_s = Psi_{s+1,s}^T betadot_{s+1} + P_s^-1 eps_s; [HW eq 49] also prints M_E Psi c for
  M_E Phi c (irrelevant here, c = 0).
* [HW eq 27] labels the junction block Phi{(k+1)_1, k_[k]+1}; it sits at block (row (k+1)_1, column k_[k])
  and is the Phi{(k+1)_1, k_[k]} of [HW eq 22].
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, Optional, Tuple

import numpy as np

# ------------------------------------------------------------------ element (section 1.1)

_XG, _WG = np.polynomial.legendre.leggauss(6)      # exact for polynomials up to degree 11
_XG, _WG = 0.5 * (_XG + 1.0), 0.5 * _WG             # mapped to xi in [0, 1]


def shape_functions(xi: float, l: float) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
    """N(xi), dN/ds, d2N/ds2 of [HW eq 3] (4 Hermite functions each), s = l xi."""
    N = np.array([1 - 3 * xi**2 + 2 * xi**3, l * (xi - 2 * xi**2 + xi**3), 3 * xi**2 - 2 * xi**3, l * (xi**3 - xi**2)])
    dN = np.array([-6 * xi + 6 * xi**2, l * (1 - 4 * xi + 3 * xi**2), 6 * xi - 6 * xi**2, l * (3 * xi**2 - 2 * xi)]) / l
    d2N = np.array([-6 + 12 * xi, l * (-4 + 6 * xi), 6 - 12 * xi, l * (6 * xi - 2)]) / l**2
    return N, dN, d2N


def shape_rows(N: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
    """The two rows S_1 (x) and S_2 (y) of S = [N1 I2, N2 I2, N3 I2, N4 I2] [HW eq 3]."""
    S1, S2 = np.zeros(8), np.zeros(8)
    S1[0::2] = N
    S2[1::2] = N
    return S1, S2


@dataclass(frozen=True)
class BeamElement:
    """Constant matrices of one Shabana planar beam element [HW eqs 4, 7, 9], by Gauss quadrature."""

    l: float
    E: float
    A: float
    I: float
    rho: float

    def matrices(self) -> Dict[str, np.ndarray]:
        """The element's mass matrix and the auxiliary matrices of its elastic force."""
        l, EA, EI = self.l, self.E * self.A, self.E * self.I
        M = np.zeros((8, 8))
        A_ = {k: np.zeros((8, 8)) for k in ("11", "12", "21", "22")}
        B_ = {k: np.zeros((8, 8)) for k in ("11", "12", "21", "22")}
        a1, a2, Sint = np.zeros(8), np.zeros(8), np.zeros((8, 2))
        for x, w in zip(_XG, _WG):
            N, dN, d2N = shape_functions(x, l)
            S = np.vstack(shape_rows(N))
            D = D1, D2 = shape_rows(dN)          # S_1', S_2'
            DD = shape_rows(d2N)                 # S_1'', S_2''
            ds = w * l
            M += self.rho * self.A * ds * S.T @ S                        # [HW eq 4]
            for i in range(2):
                for j in range(2):
                    A_[f"{i + 1}{j + 1}"] += EA * ds * np.outer(D[i], D[j])    # A_ij [HW eq 7]
                    B_[f"{i + 1}{j + 1}"] += EI * ds * np.outer(DD[i], DD[j])  # B_ij [HW eq 7]
            a1 += EA * ds * D1                                            # A_1 [HW eq 7]
            a2 += EA * ds * D2                                            # A_2 [HW eq 7]
            Sint += ds * S.T                                              # int S^T ds [HW eq 9]
        return {
            "M": M,
            "K1": A_["11"] + B_["22"],                                    # multiplies cos^2(alpha)
            "K2": A_["22"] + B_["11"],                                    # multiplies sin^2(alpha)
            "K3": A_["12"] + A_["21"] - B_["12"] - B_["21"],              # multiplies sin*cos
            "a1": a1, "a2": a2, "Sint": Sint,
            "U0": 0.5 * EA * l,
        }


def elastic_energy_and_force(ee: np.ndarray, mats: Dict[str, np.ndarray]) -> Tuple[np.ndarray, np.ndarray]:
    """U [HW eq 6] and F_EK = dU/de [HW eq 7] for a stack of elements ee (n, 8).

        U = 1/2 [c^2 e.K1 e + s^2 e.K2 e + c s e.K3 e] - (c A1 + s A2) e + E A l / 2
    with c = cos(alpha), s = sin(alpha) of the chord r_B - r_A; F = dU/de|alpha + dU/dalpha dalpha/de.
    """
    dx, dy = ee[:, 4] - ee[:, 0], ee[:, 5] - ee[:, 1]
    d = np.hypot(dx, dy)
    c, s = dx / d, dy / d
    k1, k2, k3 = ee @ mats["K1"], ee @ mats["K2"], ee @ mats["K3"]      # K symmetric
    q1, q2, q3 = (k1 * ee).sum(1), (k2 * ee).sum(1), (k3 * ee).sum(1)
    p1, p2 = ee @ mats["a1"], ee @ mats["a2"]
    U = 0.5 * (c * c * q1 + s * s * q2 + c * s * q3) - c * p1 - s * p2 + mats["U0"]
    dU_de = (c * c)[:, None] * k1 + (s * s)[:, None] * k2 + (c * s)[:, None] * k3 \
        - c[:, None] * mats["a1"] - s[:, None] * mats["a2"]
    dU_dalpha = c * s * (q2 - q1) + 0.5 * (c * c - s * s) * q3 + s * p1 - c * p2
    grad_alpha = np.zeros_like(ee)
    grad_alpha[:, 0], grad_alpha[:, 1], grad_alpha[:, 4], grad_alpha[:, 5] = s / d, -c / d, -s / d, c / d
    return U, dU_de + dU_dalpha[:, None] * grad_alpha


def gravity_force(m: float, l: float, g) -> np.ndarray:
    """F_EG = int rho A S^T g ds ([HW eq 9], any direction g)."""
    gx, gy = g
    return m * np.array([gx / 2, gy / 2, gx * l / 12, gy * l / 12, gx / 2, gy / 2, -gx * l / 12, -gy * l / 12])


# ------------------------------------------------------------------ the chain (sections 1.2-1.3)

def _mv(M: np.ndarray, x: np.ndarray) -> np.ndarray:
    """Matrix-vector product without BLAS (np.einsum's own loop).

    The matrices here are ~200 x 200: big enough for OpenBLAS to use threads, which on a busy
    machine made each product ~100x slower; the plain loop is fast and predictable.
    """
    return np.einsum("ij,j->i", M, x)


I4 = np.eye(4)
PHI_BEAM = np.block([[np.zeros((4, 4)), I4], [np.zeros((4, 4)), np.zeros((4, 4))]])      # [HW eq 14]
CHI_REV = np.diag([1.0, 1.0, 0.0, 0.0])                                                # [HW eq 19]
PHI_JOINT = np.block([[np.zeros((4, 4)), CHI_REV], [np.zeros((4, 4)), np.zeros((4, 4))]])  # [HW eq 23]
C_BEAM = np.vstack([np.zeros((4, 4)), I4])                                             # [HW eq 14]
EPS_REV = np.vstack([np.zeros((2, 2)), np.eye(2)])                                     # [HW eq 19]
C_JOINT = np.block([[EPS_REV, np.zeros((4, 4))], [np.zeros((4, 2)), I4]])               # [HW eq 23]


class FlexiblePendulum:
    """Model M3: n_beams beams x n_elem elements, ground pin, planar revolute joints (dense RANCF)."""

    def __init__(self, n_beams: int = 5, n_elem: int = 5, L_beam: float = 5.0, E: float = 21e6,
                 A: float = 4e-4, I: float = 2e-6, rho: float = 7800.0, g=(0.0, -9.81), origin=(0.0, 0.0)):
        self.n_beams, self.n_elem, self.L_beam = n_beams, n_elem, L_beam
        self.g, self.origin = np.asarray(g, float), np.asarray(origin, float)
        self.l = L_beam / n_elem
        self.mats = BeamElement(self.l, E, A, I, rho).matrices()
        self.m_el = rho * A * self.l
        Nb = self.N_bar = n_beams * n_elem                      # number of elements, index s [HW eq 42]

        # per element: first of its beam?  number of generalised speeds (6 or 4)
        self.first = np.array([s % n_elem == 0 for s in range(Nb)])
        self.nbeta = np.where(self.first, 6, 4)
        self.off = np.concatenate([[0], np.cumsum(self.nbeta)])
        self.n = int(self.off[-1])                              # = 4 N_bar + 2 N  [HW eq 56]

        # element operators: Phi{s, s-1} (None for the ground-pinned element) and C{s}
        self.Phi_ss = [None if s == 0 else (PHI_JOINT if self.first[s] else PHI_BEAM) for s in range(Nb)]
        self.C_s = [C_JOINT if self.first[s] else C_BEAM for s in range(Nb)]

        # dense stacked operators [HW eqs 26-27, 31-35]
        self.eps_Phi = np.zeros((8 * Nb, 8 * Nb))
        for s in range(1, Nb):
            self.eps_Phi[8 * s:8 * s + 8, 8 * (s - 1):8 * s] = self.Phi_ss[s]
        self.Phi = np.linalg.inv(np.eye(8 * Nb) - self.eps_Phi)       # [HW eq 33]
        self.C = np.zeros((8 * Nb, self.n))
        for s in range(Nb):
            self.C[8 * s:8 * s + 8, self.off[s]:self.off[s + 1]] = self.C_s[s]
        self.ME = np.kron(np.eye(Nb), self.mats["M"])               # block diag of [HW eq 4]
        self.PhiC = self.Phi @ self.C                              # V_E = Phi C beta [HW eq 36]
        self.Omega = self.PhiC.T @ self.ME @ self.PhiC             # [HW eq 41] (constant here)
        # Omega is constant for revolute joints, so its inverse [HW eq 47] is formed once
        self.Omega_inv = np.linalg.inv(self.Omega)
        self.PhiC_T, self.MPhi = np.ascontiguousarray(self.PhiC.T), self.ME @ self.Phi
        self.e0 = np.zeros(8 * Nb)
        self.e0[0:2] = self.origin                                 # ground pin position
        self.FE = np.tile(gravity_force(self.m_el, self.l, self.g), Nb)   # F_E = F_EG [HW eqs 8-9]
        self._recursive_setup()

    # ---------------------------------------------------------------- coordinates

    def initial_state(self, angle: float = 0.0) -> np.ndarray:
        """Straight chain from the origin along (cos angle, sin angle), at rest: y = [q, beta]."""
        t = np.array([np.cos(angle), np.sin(angle)])
        q = np.zeros(self.n)
        for s in range(self.N_bar):
            k, i = divmod(s, self.n_elem)
            x_tip = self.origin + (k * self.L_beam + (i + 1) * self.l) * t   # node i+2 of beam k+1
            blk = q[self.off[s]:self.off[s + 1]]
            if self.first[s]:
                blk[0:2] = t                                       # eta: slope of the first node
                blk[2:4], blk[4:6] = x_tip, t
            else:
                blk[0:2], blk[2:4] = x_tip, t
        return np.concatenate([q, np.zeros(self.n)])

    def element_coordinates(self, q: np.ndarray) -> np.ndarray:
        """e of every element, shape (N_bar, 8): e_all = Phi C q + e_0 (integral of [HW eq 36])."""
        return (_mv(self.PhiC, q) + self.e0).reshape(self.N_bar, 8)

    def tip(self, q: np.ndarray) -> np.ndarray:
        """The tip position (x, y) of the last element at coordinates q."""
        return self.element_coordinates(q)[-1, 4:6]

    # ---------------------------------------------------------------- dynamics, dense [HW eqs 36-41]

    def c_term(self, q, beta) -> np.ndarray:
        """The velocity-product term c of the constraints: zero for revolute joints and the ground pin."""
        # [HW eqs 16, 25]: c = Phidot V_E + Cdot beta = 0 for revolute joints and the ground pin
        return np.zeros(8 * self.N_bar)

    def Gamma(self, q, beta) -> np.ndarray:
        """Gamma = C^T Phi^T (M_E Phi c + F_EK - F_E) [HW eq 41]."""
        _, FEK = elastic_energy_and_force(self.element_coordinates(q), self.mats)
        return _mv(self.PhiC_T, _mv(self.MPhi, self.c_term(q, beta)) + FEK.ravel() - self.FE)

    def accel_dense(self, q, beta, Q: Optional[np.ndarray] = None) -> np.ndarray:
        """betadot = Omega^-1 (Q - Gamma) [HW eq 40] with the dense Omega and Gamma of [HW eq 41]."""
        rhs = -self.Gamma(q, beta) if Q is None else Q - self.Gamma(q, beta)
        return _mv(self.Omega_inv, rhs)

    # ---------------------------------------------------------------- dynamics, recursive [HW eqs 44-55]

    def _recursive_setup(self):
        """tau, upsilon [HW eq 45], P and Psi [HW eq 46]; constant for revolute joints, so computed once."""
        Nb, M = self.N_bar, self.mats["M"]
        self.P_inv, self.Psi = [None] * Nb, [None] * Nb
        P_prev_inv = None
        for s in range(Nb):
            C, tau = self.C_s[s], self.C_s[s].T @ M @ self.C_s[s]
            if s + 1 < Nb:
                Ph = self.Phi_ss[s + 1]
                tau = tau + C.T @ Ph.T @ M @ Ph @ C
            if s == 0:
                P = tau
            else:
                ups = self.C_s[s].T @ M @ self.Phi_ss[s] @ self.C_s[s - 1]      # upsilon_{s,s-1}
                P = tau - ups @ P_prev_inv @ ups.T
                self.Psi[s] = -ups @ P_prev_inv                                 # Psi_{s,s-1}
            P_prev_inv = self.P_inv[s] = np.linalg.inv(P)

    def accel_recursive(self, q, beta, Q: Optional[np.ndarray] = None) -> np.ndarray:
        """O(n) solution of Omega betadot = Q - Gamma by [HW eqs 52, 55] (Psi for the printed Phi)."""
        Nb, M = self.N_bar, self.mats["M"]
        _, FEK = elastic_energy_and_force(self.element_coordinates(q), self.mats)
        FE = self.FE.reshape(Nb, 8)
        c = self.c_term(q, beta).reshape(Nb, 8)
        Q = np.zeros(self.n) if Q is None else Q
        # algorithm 1 [HW eq 52]
        kappa = [M @ (c[s] + (self.Phi_ss[s] @ c[s - 1] if s else 0.0)) + FEK[s] - FE[s] for s in range(Nb)]
        gamma = [None] * Nb
        for s in reversed(range(Nb)):
            k = kappa[s] + (self.Phi_ss[s + 1].T @ kappa[s + 1] if s + 1 < Nb else 0.0)
            gamma[s] = Q[self.off[s]:self.off[s + 1]] - self.C_s[s].T @ k
        # algorithm 2 [HW eq 55]
        eps = [None] * Nb
        for s in range(Nb):
            eps[s] = gamma[s] + (self.Psi[s] @ eps[s - 1] if s else 0.0)
        bd = [None] * Nb
        for s in reversed(range(Nb)):
            bd[s] = self.P_inv[s] @ eps[s] + (self.Psi[s + 1].T @ bd[s + 1] if s + 1 < Nb else 0.0)
        return np.concatenate(bd)

    # ---------------------------------------------------------------- state space, energy

    def rhs(self, t, y, recursive: bool = False) -> np.ndarray:
        """The state derivative (beta, betadot) at state y = (q, beta), dense or recursive."""
        q, beta = y[:self.n], y[self.n:]
        acc = self.accel_recursive(q, beta) if recursive else self.accel_dense(q, beta)
        return np.concatenate([beta, acc])

    def energies(self, y) -> Tuple[float, float, float]:
        """(kinetic, elastic, gravity potential); V_G = -sum F_EG . e (zero on the line y = 0 for g = -y)."""
        q, beta = y[:self.n], y[self.n:]
        ee = self.element_coordinates(q)
        T = 0.5 * beta @ _mv(self.Omega, beta)
        U, _ = elastic_energy_and_force(ee, self.mats)
        return float(T), float(U.sum()), float(-self.FE @ ee.ravel())

    def simulate(self, t_end: float, y0=None, rtol: float = 1e-10, atol: float = 1e-10,
                 method: str = "DOP853", t_eval=None, recursive: bool = False):
        """Integrate with scipy's solve_ivp; returns its solution object."""
        from scipy.integrate import solve_ivp
        y0 = self.initial_state() if y0 is None else y0
        return solve_ivp(lambda t, y: self.rhs(t, y, recursive), (0.0, t_end), y0, method=method,
                         rtol=rtol, atol=atol, t_eval=t_eval)
