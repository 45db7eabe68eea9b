"""The user-facing compiled system and its simulation results."""
from __future__ import annotations

import json
import math
import os
import tempfile
import time
from typing import Optional

import numpy as np

from . import __version__
from .build import build_module
from .model import Model
from .plan import Plan

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
        self.plan = Plan(model)
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
        self.model, self.plan = model, Plan(model)
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
        from .mstmm import joint_reactions
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
                "versions": _versions()}
        res = Result(ts, X[:, :self.nq].copy(), X[:, self.nq:].copy(), list(self.coord_names),
                     list(self.velocity_names), list(self.body_names), com, quat, en[:, 0].copy(),
                     en[:, 1].copy(), meta)
        if self.algorithm == "mstmm":             # NPZ: joint_force, joint_moment (nt x nb x 3)
            from .mstmm import attach_reactions
            attach_reactions(self, res)
        return res


def start_state(system, t_end, dt, q0=None, u0=None):
    """Initial state x = (q, u) of a simulation (the model's, unless q0 / u0 are given) and the sample
    times 0, dt, ..., t_end."""
    if not (dt > 0 and t_end > 0 and math.isfinite(dt) and math.isfinite(t_end)):
        raise ValueError("t_end and dt must be positive")
    qi, ui = system.model.initial_state()
    q, u = system._qu(qi if q0 is None else np.asarray(q0, float), ui if u0 is None else np.asarray(u0, float))
    return np.concatenate([q, u]), np.arange(int(round(t_end / dt)) + 1) * dt


def integrate_chunks(kernel, x, ts, integrator, substeps, rtol, atol, h_max, label, progress, other=None):
    """Run a compiled integrator from state x over the sample times ts (ts[0] = 0) in about 100 chunks, so
    that a progress bar can move; every step runs inside the kernel. Returns (X, stats, wall seconds):
    X the state at each sample, stats [rhs evaluations, steps, rejected steps or Newton iterations, ...].
    ``other(t0, x, m) -> (states, stats)`` integrates m samples for an integrator besides rk4 and dopri5."""
    from tqdm import tqdm
    ns, dt, t_end = len(ts) - 1, ts[1] - ts[0], ts[-1]
    X = np.empty((ns + 1, len(x)))
    X[0] = x
    chunk = max(1, ns // 100)
    stats = np.zeros(4, dtype=np.int64)
    h = min(dt, 1e-3) if h_max is None else min(dt, h_max)
    t = 0.0
    wall = time.perf_counter()
    with tqdm(total=ns, desc=label, unit="sample", disable=not progress, leave=False) as bar:
        k = 0
        while k < ns:
            m = min(chunk, ns - k)
            if integrator == "rk4":
                X[k + 1:k + 1 + m] = kernel.integrate_rk4(ts[k], x, dt / substeps, m, substeps)
                stats[0] += 4 * m * substeps
                stats[1] += m * substeps
            elif integrator == "dopri5":
                out, t, h, st = kernel.integrate_dopri5(t, x, h, ts[k + 1:k + 1 + m], rtol, atol,
                                                        h_max if h_max else t_end)
                X[k + 1:k + 1 + m] = out
                stats[:3] += np.asarray(st)
            else:
                out, st = other(ts[k], x, m)
                X[k + 1:k + 1 + m] = out
                stats += np.asarray(st)
            k += m
            bar.update(m)
    return X, stats, time.perf_counter() - wall


def _versions():
    import Cython
    import sympy
    import platform
    return {"mbgen": __version__, "numpy": np.__version__, "sympy": sympy.__version__,
            "cython": Cython.__version__, "python": platform.python_version()}


class Result:
    """Sampled trajectory with body poses and energies; save() writes NPZ, save_csv() CSV, plot() PNG."""

    def __init__(self, t, q, u, coord_names, velocity_names, body_names, body_com, body_quat, energy_kinetic,
                 energy_potential, meta, extra=None):
        self.t, self.q, self.u = t, q, u
        self.coord_names, self.velocity_names, self.body_names = coord_names, velocity_names, body_names
        self.body_com, self.body_quat = body_com, body_quat
        self.energy_kinetic, self.energy_potential = energy_kinetic, energy_potential
        self.meta = meta
        self.extra = extra or {}

    @property
    def energy_total(self):
        return self.energy_kinetic + self.energy_potential

    def coord(self, name: str) -> np.ndarray:
        return self.q[:, self.coord_names.index(name)]

    def arrays(self) -> dict:
        d = {"t": self.t, "q": self.q, "u": self.u, "coord_names": np.array(self.coord_names),
             "velocity_names": np.array(self.velocity_names), "body_names": np.array(self.body_names),
             "body_com": self.body_com, "body_quat": self.body_quat, "energy_kinetic": self.energy_kinetic,
             "energy_potential": self.energy_potential, "meta": np.array(json.dumps(self.meta))}
        d.update(self.extra)
        return d

    def save(self, path) -> str:
        """Write the NPZ atomically (temporary file in the same folder, then rename)."""
        path = os.fspath(path)
        if not path.endswith(".npz"):
            path += ".npz"
        _atomic_write(path, lambda fh: np.savez_compressed(fh, **self.arrays()))
        return path

    def save_csv(self, path) -> str:
        """t, q, u, energies as columns with a header row."""
        path = os.fspath(path)
        cols = ["t"] + [f"q:{n}" for n in self.coord_names] + [f"u:{n}" for n in self.velocity_names] + \
            ["energy_kinetic", "energy_potential"]
        data = np.column_stack([self.t, self.q, self.u, self.energy_kinetic, self.energy_potential])
        _atomic_write(path, lambda fh: np.savetxt(fh, data, delimiter=",", header=",".join(cols), comments=""))
        return path

    def plot(self, path) -> str:
        """PNG: coordinates against time (top) and energies (bottom)."""
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        fig, (a1, a2) = plt.subplots(2, 1, figsize=(9, 7), sharex=True)
        nshow = min(len(self.coord_names), 12)
        for k in range(nshow):
            a1.plot(self.t, self.q[:, k], label=self.coord_names[k])
        a1.set_ylabel("coordinates")
        a1.legend(fontsize=7, ncol=3, loc="best")
        if nshow < len(self.coord_names):
            a1.set_title(f"first {nshow} of {len(self.coord_names)} coordinates", fontsize=9)
        e0 = self.energy_total[0]
        a2.plot(self.t, self.energy_kinetic, label="kinetic")
        a2.plot(self.t, self.energy_potential, label="potential")
        a2.plot(self.t, self.energy_total, "k--", label="total")
        a2.set_xlabel("t [s]")
        a2.set_ylabel("energy [J]")
        drift = np.max(np.abs(self.energy_total - e0)) / max(abs(e0), np.max(np.abs(self.energy_kinetic)), 1e-300)
        a2.set_title(f"max relative drift of the total: {drift:.2e}", fontsize=9)
        a2.legend(fontsize=8)
        fig.suptitle(f"{self.meta.get('model_name', '')}: {self.meta.get('algorithm')} "
                     f"{self.meta.get('options', '')}, {self.meta.get('integrator')}")
        fig.tight_layout()
        path = os.fspath(path)
        _atomic_write(path, lambda fh: fig.savefig(fh, dpi=110, format="png"))
        plt.close(fig)
        return path


def load_result(path) -> Result:
    with np.load(path, allow_pickle=False) as z:
        d = {k: z[k] for k in z.files}
    keys = {"t", "q", "u", "coord_names", "velocity_names", "body_names", "body_com", "body_quat",
            "energy_kinetic", "energy_potential", "meta"}
    return Result(d["t"], d["q"], d["u"], list(d["coord_names"]), list(d["velocity_names"]),
                  list(d["body_names"]), d["body_com"], d["body_quat"], d["energy_kinetic"],
                  d["energy_potential"], json.loads(str(d["meta"])), {k: v for k, v in d.items() if k not in keys})


def _atomic_write(path: str, writer):
    folder = os.path.dirname(os.path.abspath(path))
    os.makedirs(folder, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".tmp.", suffix=os.path.splitext(path)[1], dir=folder)
    try:
        with os.fdopen(fd, "wb") as fh:
            writer(fh)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def build(model: Model, algorithm: str = "recursive", ref_point: Optional[str] = None, cache_dir=None,
          progress: bool = False, **options) -> System:
    """Generate, compile (or reuse from the cache) and load the kernels for a model."""
    from .flexible import BeamModel
    if isinstance(model, BeamModel):     # flexible beams: RANCF kernels (codegen/flexible.py)
        from .flexible import build as build_beams
        return build_beams(model, algorithm, cache_dir=cache_dir, progress=progress, ref_point=ref_point,
                           **options)
    if ref_point is not None:
        options["ref_point"] = ref_point
    return System(model, algorithm, cache_dir=cache_dir, progress=progress, **options)
