"""Flexible-beam systems (family rancf): the compiled RANCF kernel, simulate() with rk4, dopri5 or the
implicit HHT-alpha method, and results with node paths and beam shapes."""
from __future__ import annotations

import os
from typing import Optional

import numpy as np

from ..algorithms.rancf import METHODS, BeamPlan
from ..compiler import BuildError, build_module
from ..model import BeamModel
from .integrate import integrate_chunks, start_state, versions
from .result import Result, atomic_write

ALGORITHMS = METHODS
INTEGRATORS = ("rk4", "dopri5", "hht")


class BeamSystem:
    """A beam model bound to its compiled rancf kernel.

    algorithm 'rancf': the O(n) recursion (eqs 44-55); 'dense': the dense Cholesky solve of the same
    Omega and Gamma (eq 41), a reference (both live in the same compiled module).
    """

    def __init__(self, model: BeamModel, algorithm: str = "rancf", cache_dir=None, progress: bool = False):
        if algorithm in (None, "recursive"):
            algorithm = "rancf"
        if algorithm not in ALGORITHMS:
            raise BuildError(f"beam models take algorithm 'rancf' (O(n), eqs 44-55) or 'dense' (Cholesky "
                             f"reference), not '{algorithm}'")
        self.model, self.algorithm = model, algorithm
        self.plan = BeamPlan(model)
        self.module, self.build_info = build_module(model, "rancf", cache_dir, progress)
        self.kernel = self.module.Kernel()
        self.kernel.set_params(self.plan.params())
        self.kernel.set_method(1 if algorithm == "dense" else 0)
        self.nq = self.nv = self.plan.n
        self.coord_names, self.velocity_names = model.coord_names, model.velocity_names
        self.node_names = list(self.plan.node_names)
        self.body_names = list(self.plan.beam_order)
        self.options = {}

    def __repr__(self):
        return (f"<BeamSystem {self.model.name}: {len(self.body_names)} beams, {self.plan.nbar} elements, "
                f"n={self.nq}, {self.algorithm} [{self.build_info['key']}]>")

    def update_model(self, model: BeamModel):
        if model.topology_key() != self.model.topology_key():
            raise ValueError("topology differs: build a new system for this model")
        self.model, self.plan = model, BeamPlan(model)
        self.kernel.set_params(self.plan.params())

    def set_algorithm(self, algorithm: str):
        if algorithm not in ALGORITHMS:
            raise ValueError(f"algorithm must be one of {ALGORITHMS}")
        self.algorithm = algorithm
        self.kernel.set_method(1 if algorithm == "dense" else 0)

    def _qu(self, q, u):
        q = np.ascontiguousarray(q, dtype=float).reshape(-1)
        u = np.ascontiguousarray(u, dtype=float).reshape(-1)
        if q.size != self.nq or u.size != self.nv:
            raise ValueError(f"expected q and u of length {self.nq}")
        return q, u

    def initial_state(self):
        return self.model.initial_state()

    def forward_dynamics(self, q, u, tau=None, t: float = 0.0, algorithm: Optional[str] = None) -> np.ndarray:
        """betadot from Omega betadot = Q - Gamma (eq 40); Q = tau (generalised forces of beta), default 0."""
        q, u = self._qu(q, u)
        meth = {"rancf": 0, "dense": 1}[algorithm or self.algorithm]
        return self.kernel.forward_dynamics(q, u, None if tau is None else np.ascontiguousarray(tau, float), meth)

    def mass_matrix(self, q) -> np.ndarray:
        """Dense Omega = C^T Phi^T M_E Phi C (eq 41)."""
        q, _ = self._qu(q, np.zeros(self.nv))
        return self.kernel.omega_gamma(q, np.zeros(self.nv))[0]

    def omega_gamma(self, q, u):
        q, u = self._qu(q, u)
        return self.kernel.omega_gamma(q, u)

    def element_coordinates(self, q) -> np.ndarray:
        q, _ = self._qu(q, np.zeros(self.nv))
        return self.kernel.element_coordinates(q)

    def energy(self, q, u):
        """(kinetic, elastic, gravity potential)."""
        q, u = self._qu(q, u)
        _, en, _ = self.kernel.outputs_at(np.concatenate([q, u])[None, :])
        return tuple(float(x) for x in en[0])

    def node_positions(self, q) -> np.ndarray:
        q, _ = self._qu(q, np.zeros(self.nv))
        pos, _, _ = self.kernel.outputs_at(np.concatenate([q, np.zeros(self.nv)])[None, :])
        return pos[0]

    def curve(self, q, npts: int = 11) -> np.ndarray:
        """Points along every element (N_bar x npts x 2), r = S(xi) e (eqs 2-3)."""
        q, _ = self._qu(q, np.zeros(self.nv))
        return self.kernel.element_points(q, npts)

    def simulate(self, t_end: float, dt: float, integrator: str = "rk4", q0=None, u0=None, rtol: float = 1e-8,
                 atol: float = 1e-10, h_max: Optional[float] = None, substeps: int = 1, progress: bool = False,
                 alpha: float = -0.05, newton_tol: float = 1e-6, max_newton: int = 20) -> "BeamResult":
        """Integrate from the straight initial configuration (or q0, u0) to t_end, sampling every dt.

        rk4: fixed steps dt/substeps; dopri5: adaptive (rtol, atol, h_max), dense output at the samples;
        hht: implicit HHT-alpha (alpha in [-1/3, 0], modified Newton iterations with the analytical elastic
        Jacobian, the iteration matrix Omega + beta h^2 (1+alpha) K factored by the same O(n) recursion and
        reused across iterations and steps until the convergence slows), fixed step dt/substeps.
        """
        if integrator not in INTEGRATORS:
            raise ValueError(f"integrator '{integrator}' not one of {', '.join(INTEGRATORS)}")
        if integrator == "hht" and not (-1.0 / 3.0 <= alpha <= 0.0):
            raise ValueError("HHT alpha must lie in [-1/3, 0]")
        x, ts = start_state(self, t_end, dt, q0, u0)
        acc, nfact = None, 0

        def hht(t0, x, m):                    # m samples of HHT-alpha (the state x is updated in place)
            nonlocal acc, nfact
            if acc is None:
                acc = self.kernel.forward_dynamics(x[:self.nq].copy(), x[self.nq:].copy(), None, 0)
            out = self.kernel.integrate_hht(t0, x, acc, dt / substeps, m, substeps, alpha, newton_tol, max_newton)
            nfact += self.kernel.hht_nfact
            return out

        X, stats, wall = integrate_chunks(self.kernel, x, ts, integrator, substeps, rtol, atol, h_max,
                                          f"simulate {self.model.name}", progress, other=hht)
        if integrator == "hht" and stats[3]:
            import warnings
            warnings.warn(f"HHT: {int(stats[3])} of {int(stats[1])} steps stopped at {max_newton} Newton iterations "
                          f"without reaching newton_tol = {newton_tol:g}", RuntimeWarning)
        pos, en, com = self.kernel.outputs_at(X)
        meta = {"model": self.model.source, "model_name": self.model.name, "algorithm": self.algorithm,
                "options": {}, "integrator": integrator, "dt": dt, "t_end": t_end, "substeps": substeps,
                "rtol": rtol if integrator == "dopri5" else None, "atol": atol if integrator == "dopri5" else None,
                "hht_alpha": alpha if integrator == "hht" else None,
                "wall_time_s": wall, "rhs_evaluations": int(stats[0]), "steps": int(stats[1]),
                "rejected_steps": int(stats[2]) if integrator == "dopri5" else 0,
                "newton_iterations": int(stats[2]) if integrator == "hht" else None,
                "newton_not_converged": int(stats[3]) if integrator == "hht" else None,
                "newton_factorizations": nfact if integrator == "hht" else None,
                "build_key": self.build_info["key"], "versions": versions()}
        ang = np.zeros((len(ts), len(self.body_names)))
        nel = {bm.name: bm.elements for bm in self.model.beams}
        for b, name in enumerate(self.plan.beam_order):
            n0 = self.plan.node0[name]
            ne = nel[name]
            d = pos[:, n0 + ne] - pos[:, n0]
            ang[:, b] = np.arctan2(d[:, 1], d[:, 0])
        quat = np.zeros((len(ts), len(self.body_names), 4))
        quat[..., 0], quat[..., 3] = np.cos(ang / 2), np.sin(ang / 2)
        com3 = np.concatenate([com, np.zeros(com.shape[:2] + (1,))], axis=2)
        snap = np.unique(np.linspace(0, len(ts) - 1, 9).astype(int))
        extra = {"node_names": np.array(self.node_names), "node_pos": pos, "energy_elastic": en[:, 1].copy(),
                 "energy_gravity": en[:, 2].copy(), "snapshot_index": snap,
                 # r = S(xi) e at 11 points per element (eqs 2-3), at 9 instants: (9, N_bar * 11, 2)
                 "snapshot_curve": np.array([self.kernel.element_points(X[k, :self.nq].copy(), 11).reshape(-1, 2)
                                             for k in snap])}
        return BeamResult(ts, X[:, :self.nq].copy(), X[:, self.nq:].copy(), list(self.coord_names),
                          list(self.velocity_names), list(self.body_names), com3, quat, en[:, 0].copy(),
                          en[:, 1] + en[:, 2], meta, extra)


class BeamResult(Result):
    """Result of a beam simulation: energy_potential = elastic + gravity (and constant loads); extra arrays
    node_names, node_pos (nt x n_nodes x 2), energy_elastic, energy_gravity (gravity and loads: -F_E . e),
    snapshot_index, snapshot_curve (9 instants x 11 points per element x 2)."""

    @property
    def node_names(self):
        return [str(s) for s in self.extra["node_names"]]

    @property
    def node_pos(self):
        return self.extra["node_pos"]

    def node(self, name: str) -> np.ndarray:
        return self.node_pos[:, self.node_names.index(name)]

    def plot(self, path) -> str:
        """PNG: node paths with configuration snapshots (left), tip coordinates and energies (right)."""
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        P = self.node_pos
        fig = plt.figure(figsize=(12, 7))
        a0 = fig.add_subplot(1, 2, 1)
        if "snapshot_curve" in self.extra:          # 11 points per element
            npe = 11
            for k, c in zip(self.extra["snapshot_index"], self.extra["snapshot_curve"]):
                col = plt.cm.viridis(k / max(len(self.t) - 1, 1))
                for el in c.reshape(-1, npe, 2):
                    a0.plot(el[:, 0], el[:, 1], "-", color=col, lw=1)
                a0.plot(P[k, :, 0], P[k, :, 1], ".", color=col, ms=3)
        else:
            for k in np.linspace(0, len(self.t) - 1, 9).astype(int):
                a0.plot(P[k, :, 0], P[k, :, 1], "-", color=plt.cm.viridis(k / max(len(self.t) - 1, 1)), lw=1)
        tip = self.node("tip") if "tip" in self.node_names else P[:, -1]
        a0.plot(tip[:, 0], tip[:, 1], "k--", lw=0.8, label="tip path")
        a0.set_aspect("equal")
        a0.set_xlabel("x [m]")
        a0.set_ylabel("y [m]")
        a0.legend(fontsize=8)
        a0.set_title("beams at 9 instants (11 points per element; dots: nodes)", fontsize=9)
        a1 = fig.add_subplot(2, 2, 2)
        a1.plot(self.t, tip[:, 0], label="tip x")
        a1.plot(self.t, tip[:, 1], label="tip y")
        a1.set_ylabel("m")
        a1.legend(fontsize=8)
        a2 = fig.add_subplot(2, 2, 4, sharex=a1)
        Ue = self.extra["energy_elastic"]
        Vg = self.extra["energy_gravity"]
        tot = self.energy_total
        a2.plot(self.t, self.energy_kinetic, label="kinetic")
        a2.plot(self.t, Ue, label="elastic")
        a2.plot(self.t, Vg, label="gravity")
        a2.plot(self.t, tot, "k--", label="total")
        scale = max(np.abs(self.energy_kinetic).max(), np.abs(Vg).max(), 1e-300)
        a2.set_title(f"max |E - E0| / max(T, |V|) = {np.abs(tot - tot[0]).max() / scale:.2e}", fontsize=9)
        a2.set_xlabel("t [s]")
        a2.set_ylabel("J")
        a2.legend(fontsize=8)
        fig.suptitle(f"{self.meta.get('model_name', '')}: {self.meta.get('algorithm')}, {self.meta.get('integrator')}")
        fig.tight_layout()
        path = os.fspath(path)
        atomic_write(path, lambda fh: fig.savefig(fh, dpi=110, format="png"))
        plt.close(fig)
        return path


def build(model: BeamModel, algorithm: str = "rancf", cache_dir=None, progress: bool = False, **options) -> BeamSystem:
    bad = {k: v for k, v in options.items() if v is not None}
    if bad:
        raise BuildError(f"beam models take no options {sorted(bad)}")
    return BeamSystem(model, algorithm, cache_dir=cache_dir, progress=progress)
