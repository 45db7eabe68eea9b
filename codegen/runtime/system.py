"""The user-facing compiled system: a model bound to one compiled kernel module."""
from __future__ import annotations

from typing import Optional

import numpy as np

from ..algorithms import family
from ..algorithms.mstmm import joint_reactions, reaction_history
from ..compiler import build_module
from ..model import BeamModel, Model
from .integrate import integrate_chunks, start_state, versions
from .result import Result

INTEGRATORS = ("rk4", "dopri5")


class System:
    """A model bound to one compiled kernel module (topology + algorithm + options)."""

    def __init__(self, model: Model, algorithm: str = "recursive", cache_dir=None, progress: bool = False,
                 **options):
        self.model = model
        self.algorithm = algorithm
        self.module, self.build_info = build_module(model, algorithm, cache_dir=cache_dir, progress=progress,
                                                    **options)
        self.options = dict(self.module.OPTIONS)
        self.plan = family(algorithm).make_plan(model)
        self.kernel = self.module.System()
        self.kernel.set_params(self.plan.params())
        self.kernel.set_hook(model.tau_hook)
        self.nq, self.nv = model.nq, model.nv
        self.coord_names = model.coord_names
        self.velocity_names = model.velocity_names
        self.body_names = self.plan.body_names

    def __repr__(self):
        return (f"<System {self.model.name}: {len(self.body_names)} bodies, nq={self.nq}, nv={self.nv}, "
                f"{self.algorithm} {self.options} [{self.build_info['key']}]>")

    # ---------------------------------------------------------------- parameters
    def update_model(self, model: Model):
        """Load new numbers (masses, placements, spring constants) of a model with the same topology."""
        if model.topology_key() != self.model.topology_key():
            raise ValueError("topology differs: build a new System for this model")
        self.model, self.plan = model, family(self.algorithm).make_plan(model)
        self.kernel.set_params(self.plan.params())
        self.kernel.set_hook(model.tau_hook)

    def set_hook(self, hook):
        """hook(t, q, u) -> extra generalized forces (nv); runs with the GIL, so it costs speed."""
        self.model.tau_hook = hook
        self.kernel.set_hook(hook)

    # ---------------------------------------------------------------- kernels
    def _qu(self, q, u):
        q = np.ascontiguousarray(q, dtype=float).reshape(-1)
        u = np.ascontiguousarray(u, dtype=float).reshape(-1)
        if q.size != self.nq or u.size != self.nv:
            raise ValueError(f"expected q of length {self.nq} and u of length {self.nv}")
        return q, u

    def forward_dynamics(self, q, u, tau=None, t: float = 0.0) -> np.ndarray:
        """udot = M^-1 (tau + applied - bias), applied forces of the model evaluated at time t."""
        return self.kernel.forward_dynamics(q, u, tau, t)     # the kernel checks sizes and types

    def inverse_dynamics(self, q, u, udot, t: float = 0.0) -> np.ndarray:
        """tau with forward_dynamics(q, u, tau, t) == udot (recursive Newton-Euler)."""
        q, u = self._qu(q, u)
        return self.kernel.inverse_dynamics(q, u, np.ascontiguousarray(udot, dtype=float).reshape(-1), t)

    def mass_matrix(self, q) -> np.ndarray:
        """Joint-space mass matrix (dense algorithm: CRBA; otherwise column by column from RNEA)."""
        q = np.ascontiguousarray(q, dtype=float).reshape(-1)
        if hasattr(self.kernel, "mass_matrix"):
            return self.kernel.mass_matrix(q)
        u = np.zeros(self.nv)
        hook, self.model.tau_hook = self.model.tau_hook, None
        self.kernel.set_hook(None)
        try:
            bias = self.kernel.inverse_dynamics(q, u, np.zeros(self.nv), 0.0)
            M = np.column_stack([self.kernel.inverse_dynamics(q, u, e, 0.0) - bias for e in np.eye(self.nv)])
        finally:
            self.set_hook(hook)
        return 0.5 * (M + M.T)

    def qdot(self, q, u) -> np.ndarray:
        q, u = self._qu(q, u)
        return self.kernel.qdot_of(q, u)

    def energy(self, q, u):
        """(kinetic, potential) at one state; potential includes gravity and springs."""
        q, u = self._qu(q, u)
        _, _, en = self.kernel.outputs_at(np.concatenate([q, u])[None, :])
        return float(en[0, 0]), float(en[0, 1])

    def joint_reactions(self, q, u, tau=None, t: float = 0.0):
        """(F, M), nb x 3 each, world frame: force and moment (about the joint point) that the parent exerts
        on each body through its joint. Algorithm 'mstmm' only: the internal forces of its state vectors
        (Rui et al. eq 1)."""
        q, u = self._qu(q, u)
        return joint_reactions(self, q, u, tau, t)

    def connection_states(self, q, u, tau=None, t: float = 0.0) -> dict:
        """Algorithm 'mstmm' only: the MSTMM state vector z = [r'', Omega', m, q] (Rui et al. eq 1) at every
        joint, world frame, rows in body order: {"acc": r'' of the joint point, "alpha": Omega' of the
        child body, "moment": m, "force": q} (nb x 3 each; the parent exerts -q and +m on the child)."""
        if not hasattr(self.kernel, "mstmm_states"):
            raise ValueError("connection states come from the mstmm kernels: build with algorithm='mstmm'")
        q, u = self._qu(q, u)
        z = self.kernel.mstmm_states(q, u, tau, t)
        return {"acc": z[:, 0:3], "alpha": z[:, 3:6], "moment": z[:, 6:9], "force": z[:, 9:12]}

    def body_poses(self, q):
        """World centroid (nb x 3) and orientation quaternion w, x, y, z (nb x 4) of every body."""
        q, _ = self._qu(q, np.zeros(self.nv))
        com, quat, _ = self.kernel.outputs_at(np.concatenate([q, np.zeros(self.nv)])[None, :])
        return com[0], quat[0]

    def initial_state(self):
        return self.model.initial_state()

    # ---------------------------------------------------------------- simulation
    def simulate(self, t_end: float, dt: float, integrator: str = "rk4", q0=None, u0=None, rtol: float = 1e-8,
                 atol: float = 1e-10, h_max: Optional[float] = None, substeps: int = 1,
                 progress: bool = False) -> "Result":
        """Integrate from the model's initial state (or q0, u0) to t_end, sampling every dt.

        rk4 takes fixed steps of dt / substeps; dopri5 chooses its own steps (rtol, atol, h_max) and writes the
        samples by dense output. The whole loop runs in compiled code; the Python side only hands out
        chunks so that a progress bar can move.
        """
        if integrator not in INTEGRATORS:
            raise ValueError(f"integrator '{integrator}' not one of {', '.join(INTEGRATORS)}")
        x, ts = start_state(self, t_end, dt, q0, u0)
        X, stats, wall = integrate_chunks(self.kernel, x, ts, integrator, substeps, rtol, atol, h_max,
                                          f"simulate {self.model.name}", progress)
        com, quat, en = self.kernel.outputs_at(X)
        meta = {"model": self.model.source, "model_name": self.model.name, "algorithm": self.algorithm,
                "options": self.options, "integrator": integrator, "dt": dt, "t_end": t_end,
                "rtol": rtol if integrator == "dopri5" else None, "atol": atol if integrator == "dopri5" else None,
                "wall_time_s": wall, "rhs_evaluations": int(stats[0]), "steps": int(stats[1]),
                "rejected_steps": int(stats[2]), "build_key": self.build_info["key"],
                "versions": versions()}
        res = Result(ts, X[:, :self.nq].copy(), X[:, self.nq:].copy(), list(self.coord_names),
                     list(self.velocity_names), list(self.body_names), com, quat, en[:, 0].copy(),
                     en[:, 1].copy(), meta)
        if self.algorithm == "mstmm":             # NPZ: joint_force, joint_moment (nt x nb x 3)
            res.extra.update(reaction_history(self, res))
        return res


def build(model: Model, algorithm: str = "recursive", ref_point: Optional[str] = None, cache_dir=None,
          progress: bool = False, **options) -> System:
    """Generate, compile (or reuse from the cache) and load the kernels for a model."""
    if isinstance(model, BeamModel):     # flexible beams: RANCF kernels (runtime/beams.py)
        from .beams import build as build_beams
        return build_beams(model, algorithm, cache_dir=cache_dir, progress=progress, ref_point=ref_point,
                           **options)
    if ref_point is not None:
        options["ref_point"] = ref_point
    return System(model, algorithm, cache_dir=cache_dir, progress=progress, **options)
