"""Flexible planar beams at run time (family rancf, [HW]).

The O(n) recursion or the dense reference of the same
Omega and Gamma per call, the rk4 stability estimate and HHT-alpha for stiff models, and the beam results (node
positions, element curves, elastic and gravity energies)."""
from __future__ import annotations

import math
import warnings

import numpy as np

from ...algorithms.rancf.plan import METHODS   # beam models: the O(n) recursion, or the dense Cholesky of Omega
from ..animate import beam_geometry
from ..integrate import RK4_LIMIT
from ..result import Result
from ..system import System, refused


def _rigid_only(name):
    return refused(name, f"{name} is defined for rigid-body models; this is a flexible-beam model")


class BeamSystem(System):
    """Flexible beams bound to the rancf module (see System for the shared API)."""

    kind = "beams"
    beams = True
    set_hook = _rigid_only("set_hook")
    inverse_dynamics = _rigid_only("inverse_dynamics")
    forward_dynamics_batch = _rigid_only("forward_dynamics_batch")
    rollout = _rigid_only("rollout")
    qdot = _rigid_only("qdot")
    joint_wrenches = _rigid_only("joint_wrenches")
    body_poses = _rigid_only("body_poses")
    set_feedback = refused("set_feedback", "set_feedback: rigid-body trees of the recursive, dense, mstmm and cfa "
                                           "algorithms only")

    def _resolve_algorithm(self, algorithm):
        if algorithm in (None, "recursive"):
            algorithm = "rancf"
        if algorithm not in METHODS:
            from ...compiler import BuildError
            raise BuildError(f"beam models take algorithm 'rancf' (O(n), [HW eqs 44-55]) or 'dense' (Cholesky "
                             f"reference), not '{algorithm}'")
        return algorithm, "rancf"

    def _setup(self):
        self.kernel.set_method(METHODS.index(self.algorithm))
        self.node_names = list(self.plan.node_names)
        self.body_names = list(self.plan.beam_order)

    def _describe(self):
        return f"{len(self.body_names)} beams, {self.plan.nbar} elements"

    def _no_derivatives(self):
        return "derivatives are defined for rigid-body trees; this is a flexible-beam model"

    def set_algorithm(self, algorithm: str):
        """Switch between the O(n) recursion ('rancf') and the dense reference ('dense').

        Parameters
        ----------
        algorithm : str
            ``rancf`` or ``dense``.

        Raises
        ------
        ValueError
            Another name.
        """
        if algorithm not in METHODS:
            raise ValueError(f"set_algorithm: beam models only, one of {METHODS}")
        self.algorithm = algorithm
        self.kernel.set_method(METHODS.index(algorithm))

    # ---------------------------------------------------------------- kernels
    def forward_dynamics(self, q, u, tau=None, t: float = 0.0, algorithm=None) -> np.ndarray:
        """Forward dynamics of the beams: betadot from Omega betadot = Q - Gamma ([HW eq 40]).

        Q = tau (default 0); the `algorithm` argument
        ('rancf' or 'dense') overrides the system's for this call.

        Parameters
        ----------
        q : array_like, shape (nq,)
            The beams' coordinates (positions [m] and slopes).
        u : array_like, shape (nv,)
            Their rates.
        tau : array_like, shape (nv,), optional
            Generalized forces Q (default zero).
        t : float, optional
            Time [s] (unused: beam models have no time functions).
        algorithm : str, optional
            ``rancf`` or ``dense`` for this call.

        Returns
        -------
        numpy.ndarray, shape (nv,)
            betadot.

        Raises
        ------
        ValueError
            q or u has the wrong length, or an unknown algorithm.
        """
        q, u = self._qu(q, u)
        meth = METHODS.index(algorithm or self.algorithm)
        return self.kernel.forward_dynamics(q, u, None if tau is None else np.ascontiguousarray(tau, float), meth)

    def mass_matrix(self, q) -> np.ndarray:
        """Dense Omega = C^T Phi^T M_E Phi C ([HW eq 41]).

        Parameters
        ----------
        q : array_like, shape (nq,)
            The beams' coordinates.

        Returns
        -------
        numpy.ndarray, shape (nv, nv)
            Omega.
        """
        q, _ = self._qu(q, np.zeros(self.nv))
        return self.kernel.omega_gamma(q, np.zeros(self.nv))[0]

    def energy(self, q, u):
        """(kinetic, elastic, gravity potential) at one state.

        Parameters
        ----------
        q : array_like, shape (nq,)
            The beams' coordinates.
        u : array_like, shape (nv,)
            Their rates.

        Returns
        -------
        kinetic, elastic, gravity : float
            Energies [J].
        """
        q, u = self._qu(q, u)
        _, en, _ = self.kernel.outputs_at(np.concatenate([q, u])[None, :])
        return tuple(float(x) for x in en[0])

    def omega_gamma(self, q, u):
        """The dense Omega and Gamma of the beams at one state ([HW eq 41]).

        Parameters
        ----------
        q : array_like, shape (nq,)
            Nodal coordinates of the elements (positions [m] and slopes).
        u : array_like, shape (nv,)
            Their rates.

        Returns
        -------
        Omega : numpy.ndarray, shape (nv, nv)
            The mass matrix of the recursive coordinates.
        Gamma : numpy.ndarray, shape (nv,)
            The velocity and force terms, with Omega betadot = Q - Gamma.

        Raises
        ------
        ValueError
            q or u has the wrong length.
        """
        q, u = self._qu(q, u)
        return self.kernel.omega_gamma(q, u)

    def element_coordinates(self, q) -> np.ndarray:
        """The nodal coordinates e of every element at state q.

        Parameters
        ----------
        q : array_like, shape (nq,)
            The beams' coordinates.

        Returns
        -------
        numpy.ndarray, shape (N_bar, 8)
            Per element e = [r_A, r'_A, r_B, r'_B] (positions in m, slopes dimensionless).

        Raises
        ------
        ValueError
            q has the wrong length.
        """
        q, _ = self._qu(q, np.zeros(self.nv))
        return self.kernel.element_coordinates(q)

    def node_positions(self, q) -> np.ndarray:
        """The world positions of the beam nodes at state q.

        Parameters
        ----------
        q : array_like, shape (nq,)
            The beams' coordinates.

        Returns
        -------
        numpy.ndarray, shape (n_nodes, 2)
            Node positions [m], in the order of Result.node_names.

        Raises
        ------
        ValueError
            q has the wrong length.
        """
        q, _ = self._qu(q, np.zeros(self.nv))
        pos, _, _ = self.kernel.outputs_at(np.concatenate([q, np.zeros(self.nv)])[None, :])
        return pos[0]

    def curve(self, q, npts: int = 11) -> np.ndarray:
        """Points along every element (N_bar x npts x 2), r = S(xi) e ([HW eqs 2-3]).

        Parameters
        ----------
        q : array_like, shape (nq,)
            The beams' coordinates.
        npts : int, optional
            Points per element.

        Returns
        -------
        numpy.ndarray, shape (N_bar, npts, 2)
            Positions [m].
        """
        q, _ = self._qu(q, np.zeros(self.nv))
        return self.kernel.element_points(q, npts)

    # ---------------------------------------------------------------- stiffness
    def omega_max(self) -> float:
        """Estimated highest natural frequency [rad/s] at the initial state.

        The largest generalized eigenvalue
        of (K_T, M_E) over the elements (tangent stiffness from the compiled elastic forces, consistent mass M_E
        ([HW eq 4]) from the plan).  An element bound: the assembled system's highest frequency is at most this
        (for M3: 6.5 (2 / l_e) sqrt(E / rho) here against 4.8 assembled).

        Returns
        -------
        float
            omega_max [rad/s].
        """
        cached = getattr(self, "_omega_cache", None)
        if cached is not None and cached[0] is self.plan:
            return cached[1]
        q0, _ = self.model.initial_state()
        _, K = self.kernel.elastic(np.ascontiguousarray(q0, float), 1)
        p = self.plan.params()
        nbar = K.shape[0]
        M = np.stack([self.plan.element_numbers(p, s)["M"].reshape(8, 8) for s in range(nbar)])
        lam = np.linalg.eigvals(np.linalg.solve(M, K)).real.max()
        om = float(math.sqrt(max(lam, 0.0)))
        self._omega_cache = (self.plan, om)
        return om

    def stable_step(self):
        """Largest stable rk4 step [s]: RK4_LIMIT / omega_max (inf for a model without elastic modes).

        Returns
        -------
        float
            The step [s].
        """
        om = self.omega_max()
        return math.inf if om == 0 else RK4_LIMIT / om

    def unstable_rk4_hint(self, h, stable):
        """The hint of a run that diverged with rk4 at step h.

        Parameters
        ----------
        h : float
            The step [s] that diverged.
        stable : float or None
            The estimated stable rk4 step [s], if known.

        Returns
        -------
        str
            What to do instead (hht, a smaller step).
        """
        est = f"; the estimated stable rk4 step is {stable:.2g} s" if stable else ""
        return (f"the model is too stiff for rk4 at h = {h:g} s{est}: use --integrator hht, or a smaller --dt "
                "or more --substeps")

    # ---------------------------------------------------------------- runs
    def _choose_integrator(self, run):
        if run.h > run.stable:
            return "hht", (f"hht chosen: rk4 at h = {run.h:g} s would be unstable (estimated stable rk4 step "
                           f"{run.stable:.2g} s)")
        return "rk4", f"rk4 (default); estimated stable rk4 step {run.stable:.2g} s"

    def _integrate(self, x, ts, run, other=None):
        acc = None

        def hht(t0, x, m):                    # m samples of HHT-alpha (the state x is updated in place)
            nonlocal acc
            if acc is None:
                acc = self.kernel.forward_dynamics(x[:self.nq].copy(), x[self.nq:].copy(), None, 0)
            out = self.kernel.integrate_hht(t0, x, acc, run.h, m, run.substeps, run.alpha, run.newton_tol,
                                            run.max_newton)
            run.nfact += self.kernel.hht_nfact
            return out

        return super()._integrate(x, ts, run, other=hht)

    def _finish_run(self, meta, run, stats, fail):
        if run.integrator == "hht":
            if stats[3] and not fail:
                warnings.warn(f"HHT: {int(stats[3])} of {int(stats[1])} steps stopped at {run.max_newton} Newton "
                              f"iterations without reaching newton_tol = {run.newton_tol:g}", RuntimeWarning)
            meta.update(hht_alpha=run.alpha, newton_iterations=int(stats[2]), newton_not_converged=int(stats[3]),
                        newton_factorizations=run.nfact)
        return fail

    def _result(self, X, ts, meta, run) -> Result:
        """Beam results: centroids, orientations, energies and the beam arrays.

        Beam results: body (beam) centroids and planar orientations, energies, and the extra arrays
        node_names, node_pos (nt x n_nodes x 2), energy_elastic, energy_gravity (gravity and constant loads:
        -F_E . e), snapshot_index, snapshot_curve (9 instants x 11 points per element x 2, r = S(xi) e, [HW eqs
        2-3])."""
        q, u = X[:, :self.nq].copy(), X[:, self.nq:].copy()
        pos, en, com = self.kernel.outputs_at(X)
        ang = np.zeros((len(ts), len(self.body_names)))
        nel = {bm.name: bm.elements for bm in self.model.beams}
        for b, name in enumerate(self.plan.beam_order):
            n0 = self.plan.node0[name]
            d = pos[:, n0 + nel[name]] - pos[:, n0]
            ang[:, b] = np.arctan2(d[:, 1], d[:, 0])
        quat = np.zeros((len(ts), len(self.body_names), 4))
        quat[..., 0], quat[..., 3] = np.cos(ang / 2), np.sin(ang / 2)
        com3 = np.concatenate([com, np.zeros(com.shape[:2] + (1,))], axis=2)
        snap = np.unique(np.linspace(0, len(ts) - 1, 9).astype(int))
        extra = {"node_names": np.array(self.node_names), "node_pos": pos, "energy_elastic": en[:, 1].copy(),
                 "energy_gravity": en[:, 2].copy(), "snapshot_index": snap,
                 "snapshot_curve": np.array([self.kernel.element_points(X[k, :self.nq].copy(), 11).reshape(-1, 2)
                                             for k in snap])}
        extra.update(beam_geometry(self, q=X[:, :self.nq]))        # element_coords, element_length (animate)
        return Result(ts, q, u, list(self.coord_names), list(self.velocity_names), list(self.body_names), com3, quat,
                      en[:, 0].copy(), en[:, 1] + en[:, 2], meta, extra)
