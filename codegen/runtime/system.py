"""The user-facing compiled system: a model (rigid tree or flexible beams) bound to one compiled kernel."""
from __future__ import annotations

import math
import warnings
from typing import Optional

import numpy as np

from ..algorithms import family
from ..algorithms.tree_plan import canonical_rotation
from ..compiler import BuildError, build_module
from ..model import BeamModel
from .integrate import (divergence, energy_balance, integrate_chunks, rk4_stable_step, runaway, start_state,
                        versions)
from .animate import beam_geometry, joint_geometry
from .derivatives import Derivatives
from . import grcr
from .loops import check_closure, dependent_rows_detail, loop_outputs
from .result import Result

BEAM_METHODS = ("rancf", "dense")   # beam models: the O(n) recursion, or the dense Cholesky of the same Omega


class System(Derivatives):
    """A model bound to one compiled kernel module (topology + algorithm + options).

    Rigid trees: algorithms recursive (ref_point centroid | joint | origin), dense, mstmm.  Flexible beams:
    the rancf module, which holds the O(n) recursion (eqs 44-55) and the dense Cholesky solve of the same
    Omega and Gamma (eq 41) as a reference: algorithm 'rancf' or 'dense' picks one (``set_algorithm``).
    """

    def __init__(self, model, algorithm: Optional[str] = None, cache_dir=None, progress: bool = False,
                 derivatives: bool = False, **options):
        self.model = model
        self.beams = isinstance(model, BeamModel)
        if self.beams:
            if algorithm in (None, "recursive"):
                algorithm = "rancf"
            if algorithm not in BEAM_METHODS:
                raise BuildError(f"beam models take algorithm 'rancf' (O(n), eqs 44-55) or 'dense' (Cholesky "
                                 f"reference), not '{algorithm}'")
        algorithm = algorithm or "recursive"
        self.algorithm = algorithm
        self.family = family("rancf" if self.beams else algorithm, model)
        self.grcr = self.family.name == "grcr"
        dependents = options.pop("dependents", None) if self.grcr else None
        self.module, self.build_info = build_module(model, self.family.name, cache_dir=cache_dir,
                                                    progress=progress, derivatives=derivatives, **options)
        self._build_args = {"cache_dir": cache_dir, "progress": progress}
        self.options = dict(self.build_info["options"])
        self.plan = self.family.make_plan(model)
        self.kernel = getattr(self.module, self.family.kernel_class)()
        self._dkernel = self.kernel if derivatives else None     # the kernel with the derivatives (on first use)
        self.kernel.set_params(self._params())
        if self.beams:
            self.kernel.set_method(BEAM_METHODS.index(algorithm))
            self.node_names = list(self.plan.node_names)
            self.body_names = list(self.plan.beam_order)
        else:
            self.kernel.set_hook(model.tau_hook)
            self.body_names = self.plan.body_names
            # the lean path: the compiled entry points themselves (no Python frame per call)
            self.forward_dynamics = self.kernel.forward_dynamics
            self.inverse_dynamics = self.kernel.inverse_dynamics
        self.nq, self.nv = model.nq, model.nv
        self.loops = bool(getattr(model, "cuts", None))
        self._K = None                      # canonical joint rotations (joint wrenches), on first use
        self.coord_names = model.coord_names
        self.velocity_names = model.velocity_names
        if self.grcr:                       # the state holds the cut coordinates; dependents chosen
            grcr.setup(self, dependents)
            for name in ("inverse_dynamics", "forward_dynamics_batch", "rollout", "joint_wrenches"):
                setattr(self, name, self._not_grcr(name))
        elif self.loops:
            check_closure(self, *model.initial_state())

    def __repr__(self):
        what = (f"{len(self.body_names)} beams, {self.plan.nbar} elements" if self.beams
                else f"{len(self.body_names)} bodies")
        return (f"<System {self.model.name}: {what}, nq={self.nq}, nv={self.nv}, "
                f"{self.algorithm} {self.options} [{self.build_info['key']}]>")

    def _not_grcr(self, name):
        def refuse(*a, **k):
            raise ValueError(f"{name} is not available for algorithm 'grcr' (its constraint forces and batched "
                             f"partitions are not implemented); use algorithm 'recursive' for this model")
        return refuse

    def set_dependents(self, dependents="auto"):
        """grcr: the dependent coordinates, 'auto' or a list of loop coordinates (see codegen.runtime.grcr)."""
        if not self.grcr:
            raise ValueError("dependent coordinates belong to algorithm 'grcr'")
        grcr.set_dependents(self, dependents)

    @property
    def dependents(self):
        """grcr: the current dependent coordinates (joint names)."""
        return grcr.dependent_names(self) if self.grcr else []

    @property
    def integrators(self):
        return self.family.integrators

    # ---------------------------------------------------------------- parameters
    def update_model(self, model):
        """Load new numbers (masses, placements, spring constants) of a model with the same topology."""
        if model.topology_key() != self.model.topology_key():
            raise ValueError("topology differs: build a new System for this model")
        plan = self.family.make_plan(model)
        if hasattr(plan, "code_pattern") and plan.code_pattern() != self.plan.code_pattern():
            raise ValueError("the compiled kernel is specialised to the old placements (which offsets are zero, "
                             "which joint frames are unrotated) and the new numbers differ there: build a new System")
        self.model, self.plan = model, plan
        self._K = None
        p = self._params()
        for k in {id(x): x for x in (self.kernel, self._dkernel) if x is not None}.values():
            k.set_params(p)
            if not self.beams:
                k.set_hook(model.tau_hook)
        if self.grcr:                       # the new numbers' initial state, ranks and dependents
            grcr.setup(self, getattr(self, "dependents_spec", "auto"))

    def _params(self) -> np.ndarray:
        """The plan's parameter vector with the joint limits' stiffness and damping, which scale with each limited
        coordinate's diagonal mass-matrix entry at the initial state (from this kernel's RNEA)."""
        p = self.plan.params()
        tendons = any(t.data["limited"] for t in getattr(self.plan, "tendons", ()))
        if getattr(self.plan, "limits", None) or tendons or getattr(self.plan, "frictions", None):
            k = self.kernel
            k.set_params(p)
            q0, _ = self.plan.model.initial_state()
            z = np.zeros(self.plan.nv)
            bias = k.inverse_dynamics(q0, z, z, 0.0)
            meff = np.zeros(self.plan.nv)
            for term in self.plan.limits + self.plan.frictions:
                iv = term.data["iv"]
                meff[iv] = k.inverse_dynamics(q0, z, np.eye(self.plan.nv)[iv], 0.0)[iv] - bias[iv]
            self.plan.limit_gains(p, meff)
            if tendons:                      # M^-1 c from two forward dynamics at rest
                a0 = k.forward_dynamics(q0, z, None, 0.0)
                self.plan.tendon_limit_gains(p, lambda c: k.forward_dynamics(q0, z, c, 0.0) - a0)
            k.set_params(p)
        return p

    def set_hook(self, hook):
        """hook(t, q, u) -> extra generalized forces (nv); runs with the GIL, so it costs speed."""
        self._rigid("set_hook")
        self.model.tau_hook = hook
        self.kernel.set_hook(hook)
        if self._dkernel is not None:
            self._dkernel.set_hook(hook)

    def set_algorithm(self, algorithm: str):
        """Beam models: switch between the O(n) recursion ('rancf') and the dense reference ('dense')."""
        if not self.beams or algorithm not in BEAM_METHODS:
            raise ValueError(f"set_algorithm: beam models only, one of {BEAM_METHODS}")
        self.algorithm = algorithm
        self.kernel.set_method(BEAM_METHODS.index(algorithm))

    def _rigid(self, what):
        if self.beams:
            raise ValueError(f"{what} is defined for rigid-body models; this is a flexible-beam model")

    def _beam(self, what):
        if not self.beams:
            raise ValueError(f"{what} is defined for flexible-beam models; this is a rigid-body model")

    # ---------------------------------------------------------------- kernels
    def _qu(self, q, u):
        q = np.ascontiguousarray(q, dtype=float).reshape(-1)
        u = np.ascontiguousarray(u, dtype=float).reshape(-1)
        if q.size != self.nq or u.size != self.nv:
            raise ValueError(f"expected q of length {self.nq} and u of length {self.nv}")
        return q, u

    def forward_dynamics(self, q, u, tau=None, t: float = 0.0, algorithm: Optional[str] = None,
                         ctrl=None) -> np.ndarray:
        """udot = M^-1 (tau + applied - bias), applied forces of the model evaluated at time t; ctrl: the actuators'
        controls (one per actuator, in the model's order; None: each actuator's ctrl function of the model file).
        Beam models: betadot from Omega betadot = Q - Gamma (Hu & Wang eq 40), Q = tau (default 0); the
        `algorithm` argument ('rancf' or 'dense') overrides the system's for this call."""
        if self.beams:
            q, u = self._qu(q, u)
            meth = BEAM_METHODS.index(algorithm or self.algorithm)
            return self.kernel.forward_dynamics(q, u, None if tau is None else np.ascontiguousarray(tau, float), meth)
        return self.kernel.forward_dynamics(q, u, tau, t, None, ctrl)     # the kernel checks sizes and types

    def inverse_dynamics(self, q, u, udot, t: float = 0.0, ctrl=None) -> np.ndarray:
        """tau with forward_dynamics(q, u, tau, t, ctrl=ctrl) == udot (recursive Newton-Euler)."""
        self._rigid("inverse_dynamics")
        q, u = self._qu(q, u)
        return self.kernel.inverse_dynamics(q, u, np.ascontiguousarray(udot, dtype=float).reshape(-1), t, None, ctrl)

    def forward_dynamics_batch(self, Q, U, TAU=None, out=None, threads=None, t: float = 0.0) -> np.ndarray:
        """udot for B states: Q (B x nq), U (B x nv), TAU (B x nv, added to the model's forces, optional), into
        `out` (B x nv) if given. Runs on `threads` threads (default: every usable core) without the GIL, each
        with its own workspace; the result does not depend on the number of threads."""
        self._rigid("forward_dynamics_batch")
        return self.kernel.forward_dynamics_batch(Q, U, TAU, t, out, threads)

    def rollout(self, q0, u0, nsteps: int, dt: float, tau=None, integrator: str = "rk4", threads=None,
                sensitivities: bool = False, ctrl=None):
        """B rollouts of nsteps fixed steps of size dt, all in compiled code on `threads` threads (default: every
        usable core). q0 (B x nq), u0 (B x nv); tau (B x nsteps x nv) adds to the model's own forces, held over
        each step (None: the model's forces only); ctrl (B x nsteps x nu): the actuators' controls, held over each
        step as MuJoCo's rollout takes them (None: the model file's ctrl functions). Returns (q, u): B x
        (nsteps + 1) x nq and x nv, row 0 the
        initial state; the same numbers as simulate(..., integrator="rk4") from each initial state. A rollout
        whose state stops being finite has NaN rows from there on (a RuntimeWarning names it).
        sensitivities=True: returns (q, u, A, B) with the Jacobians of every step in tangent coordinates,
        A (B x nsteps x 2nv x 2nv), B (B x nsteps x 2nv x nv): x_{s+1} = A_s x_s + B_s dtau_s (see linearize)."""
        self._rigid("rollout")
        if isinstance(nsteps, bool) or not isinstance(nsteps, (int, np.integer)):
            raise ValueError(f"nsteps: expected an integer >= 0, got {nsteps!r}")
        if sensitivities:
            if ctrl is not None:
                raise ValueError("rollout: sensitivities with ctrl are not derived yet (use tau)")
            if integrator != "rk4":
                raise ValueError(f"rollout: integrator '{integrator}' not supported (rk4)")
            q, u, A, B, fail = self._derivative_kernel("rollout(sensitivities=True)").rollout_sensitivities(
                q0, u0, int(nsteps), float(dt), tau, threads)
        else:
            q, u, fail = self.kernel.rollout(q0, u0, int(nsteps), float(dt), tau, integrator, threads, 0.0, ctrl)
        bad = np.flatnonzero(np.isfinite(fail))
        if bad.size:
            warnings.warn(f"rollout: {bad.size} of {len(fail)} rollouts diverged (first: rollout {bad[0]} at "
                          f"t = {fail[bad[0]]:.6g}); their rows from there on are NaN", RuntimeWarning, stacklevel=2)
        return (q, u, A, B) if sensitivities else (q, u)

    def mass_matrix(self, q) -> np.ndarray:
        """Joint-space mass matrix (dense algorithm: CRBA; otherwise column by column from RNEA)."""
        if self.beams:                       # dense Omega = C^T Phi^T M_E Phi C (Hu & Wang eq 41)
            q, _ = self._qu(q, np.zeros(self.nv))
            return self.kernel.omega_gamma(q, np.zeros(self.nv))[0]
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
        self._rigid("qdot")
        q, u = self._qu(q, u)
        return self.kernel.qdot_of(q, u)

    def energy(self, q, u):
        """(kinetic, potential) at one state; potential includes gravity and springs.  Beam models:
        (kinetic, elastic, gravity potential)."""
        q, u = self._qu(q, u)
        if self.beams:
            _, en, _ = self.kernel.outputs_at(np.concatenate([q, u])[None, :])
            return tuple(float(x) for x in en[0])
        _, _, en = self.kernel.outputs_at(np.concatenate([q, u])[None, :])
        return float(en[0, 0]), float(en[0, 1])

    def joint_wrenches(self, q, u, tau=None, t: float = 0.0) -> np.ndarray:
        """(n_joints, 6): for each joint, the spatial force transmitted through it from its parent to its child
        (the whole subtree), as (fx, fy, fz, mx, my, mz) with the moment about the joint point, components in
        the joint's frame on the child side (the model's child_frame: axes attached to the child body), the
        convention of pinocchio's data.f for a model built from the same file.  A free joint is a joint too
        (its row is ~0 without external loads on its body).  Every rigid algorithm gives them: cfa directly
        (its constraint forces), recursive and dense by an inverse-dynamics pass after forward dynamics,
        mstmm from its state vectors."""
        self._rigid("joint_wrenches")
        q, u = self._qu(q, u)
        if tau is not None:
            tau = np.ascontiguousarray(tau, dtype=float).reshape(-1)
        return self._in_joint_frames(self.kernel.joint_wrench(q, u, tau, t))

    def _in_joint_frames(self, W):
        """Kernel wrenches (body reference frame = canonical joint frame K) -> the user's joint frames."""
        if self._K is None:
            self._K = np.array([canonical_rotation(j.type, j.axis, j.axis2) for j in self.model.joints])
        out = np.empty_like(W)
        out[..., :3] = np.einsum("jab,...jb->...ja", self._K, W[..., :3])
        out[..., 3:] = np.einsum("jab,...jb->...ja", self._K, W[..., 3:])
        return out

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
        self._rigid("body_poses")
        q, _ = self._qu(q, np.zeros(self.nv))
        com, quat, _ = self.kernel.outputs_at(np.concatenate([q, np.zeros(self.nv)])[None, :])
        return com[0], quat[0]

    def initial_state(self):
        if self.grcr:                       # with the cut coordinates solved for
            return self._x0[:self.nq].copy(), self._x0[self.nq:].copy()
        return self.model.initial_state()

    # ---------------------------------------------------------------- beam models (Hu & Wang)
    def omega_gamma(self, q, u):
        self._beam("omega_gamma")
        q, u = self._qu(q, u)
        return self.kernel.omega_gamma(q, u)

    def element_coordinates(self, q) -> np.ndarray:
        q, _ = self._qu(q, np.zeros(self.nv))
        return self.kernel.element_coordinates(q)

    def node_positions(self, q) -> np.ndarray:
        q, _ = self._qu(q, np.zeros(self.nv))
        pos, _, _ = self.kernel.outputs_at(np.concatenate([q, np.zeros(self.nv)])[None, :])
        return pos[0]

    def curve(self, q, npts: int = 11) -> np.ndarray:
        """Points along every element (N_bar x npts x 2), r = S(xi) e (eqs 2-3)."""
        q, _ = self._qu(q, np.zeros(self.nv))
        return self.kernel.element_points(q, npts)

    # ---------------------------------------------------------------- simulation
    def simulate(self, t_end: float, dt: float, integrator: Optional[str] = None, q0=None, u0=None,
                 rtol: float = 1e-8, atol: float = 1e-10, h_max: Optional[float] = None, substeps: int = 1,
                 progress: bool = False, alpha: float = -0.05, newton_tol: float = 1e-6, max_newton: int = 20,
                 check_energy: Optional[float] = None, keep_partial: bool = False, joint_wrench: bool = False,
                 baumgarte: Optional[float] = None, projection: bool = False,
                 switching: Optional[str] = None, ctrl=None, limits: bool = True) -> Result:
        """Integrate from the model's initial state (or q0, u0) to t_end, sampling every dt.

        rk4 takes fixed steps of dt / substeps; dopri5 chooses its own steps (rtol, atol, h_max) and writes the
        samples by dense output; hht (beam models): implicit HHT-alpha (alpha in [-1/3, 0]), modified Newton
        iterations with the analytical elastic Jacobian, the iteration matrix Omega + beta h^2 (1+alpha) K
        factored by the same O(n) recursion and reused across iterations and steps until the convergence
        slows, fixed step dt/substeps.  The whole loop runs in compiled code; the Python side only hands out
        chunks so that a progress bar can move.

        integrator None: rk4 for rigid models; for beam models rk4 if dt / substeps is below the estimated
        stable rk4 step (``rk4_stable_step``), else hht (meta["integrator_choice"] says why).

        Every integrator watches the state in compiled code: a non-finite state (or, dopri5, a step size
        collapse) raises SimulationDiverged naming the time, the first bad coordinate and the last good state;
        with keep_partial=True the Result of the good samples is returned instead (meta["partial"] = True,
        meta["diverged_at"] = t, meta["diverged"] = the message).

        joint_wrench=True (rigid models): result.extra["joint_wrench"] (nt x n_joints x 6, see joint_wrenches)
        and result.extra["joint_names"], from one compiled pass over the samples.

        Closed loops (cut joints): the start state must close (ModelError otherwise); Baumgarte's stabilisation
        gamma - 2 b Phi' - b^2 Phi holds the drift down, b = ``baumgarte`` [1/s] (default 1 / (10 h), h the
        step; 0: off); projection=True projects the state back onto the constraint manifold after every step
        instead (Newton steps on Phi(q) = 0 to 1e-12, then the velocities onto Phi' = 0; Baumgarte then off unless
        given); result.extra gets cut_joint_wrench (nt x n_cuts x 6: the force side i exerts on side j
        through the cut, about the cut point, in side j's cut frame, like joint_wrench), cut_joint_names,
        multipliers (nt x m), constraint_violation (nt x n_cuts x 2: the largest |Phi| and |Phi'| of each cut's
        rows) and cut_q / cut_q_names (the cut joints' own coordinates); meta["constraint_violation_max"].

        grcr (``algorithm="grcr"``): the dependents are solved after every step (coordinate partitioning); when a
        loop's partition degrades, switching="acs" (default) re-selects its dependents (Sect. 4) and
        switching="gcl" restructures the loop so that three adjacent dependents close an open loop (Sect. 5,
        planar loops that share no joints; rk4), each from the last good state; result.extra
        partition_switch_t/_loop/_old/_new log the switches.

        Actuators: ctrl is None (each actuator's ctrl function of the model file, in compiled code), one value
        per actuator, a table (t, values) (values: len(t) x nu, interpolated linearly in compiled code) or a
        callable ctrl(t, q, u) -> nu values (called with the GIL at every evaluation); result.extra gets
        actuator_names, ctrl (the controls after ctrlrange) and actuator_force (after forcerange, before the gear),
        nt x nu each.

        Joint limits (the model's ``limits:``, MJCF ranges, URDF <limit>): enforced unless limits=False, as a
        compliant one-sided spring-damper (templates/shared/limits.pyx.j2); result.extra gets limit_names and
        limit_force (nt x limited coordinates, 0 where inactive), meta["limits"] = {"enforced", "active_samples"}.

        Energy: meta["energy"] = energy_balance() (relative error of E - E0 - W, W the work of dampers, joint
        forces and actuators); with check_energy = tol also meta["energy_check"] = {"tol", "value", "passed"}.
        """
        if ctrl is not None and not getattr(self.model, "actuators", None):
            raise ValueError("ctrl: the model has no actuators")
        if getattr(self.model, "actuators", None):
            self.kernel.set_ctrl(ctrl)
        limited = hasattr(self.kernel, "set_limits")       # rigid models
        was = limited and bool(self.kernel.limits_on)
        if limited:
            self.kernel.set_limits(bool(limits))
        try:
            return self._simulate(t_end, dt, integrator, q0, u0, rtol, atol, h_max, substeps, progress, alpha,
                                  newton_tol, max_newton, check_energy, keep_partial, joint_wrench, baumgarte,
                                  projection, switching)
        finally:
            if limited:
                self.kernel.set_limits(was)

    def _simulate(self, t_end, dt, integrator, q0, u0, rtol, atol, h_max, substeps, progress, alpha, newton_tol,
                  max_newton, check_energy, keep_partial, joint_wrench, baumgarte, projection, switching) -> Result:
        stable = rk4_stable_step(self) if self.beams else None
        choice = None
        if integrator is None:
            integrator = "rk4"
            if self.beams and dt / substeps > stable:
                integrator = "hht"
                choice = (f"hht chosen: rk4 at h = {dt / substeps:g} s would be unstable (estimated stable rk4 "
                          f"step {stable:.2g} s)")
            else:
                choice = "rk4 (default)" + (f"; estimated stable rk4 step {stable:.2g} s" if self.beams else "")
        if joint_wrench:
            self._rigid("joint_wrench")
        if integrator not in self.integrators:
            raise ValueError(f"integrator '{integrator}' not one of {', '.join(self.integrators)}"
                             + ("" if self.beams else " (hht: flexible-beam models only)"))
        if integrator == "hht" and not (-1.0 / 3.0 <= alpha <= 0.0):
            raise ValueError("HHT alpha must lie in [-1/3, 0]")
        if not (isinstance(substeps, (int, np.integer)) and substeps >= 1):
            raise ValueError(f"substeps must be a positive integer, got {substeps!r}")
        if integrator == "dopri5" and not (1e-14 <= rtol < math.inf and 0 < atol < math.inf):
            raise ValueError(f"dopri5 needs 1e-14 <= rtol (double precision cannot meet a tighter one) and atol > 0, "
                             f"got rtol = {rtol:g}, atol = {atol:g}")
        if check_energy is not None and not (check_energy > 0 and math.isfinite(check_energy)):
            raise ValueError(f"check_energy must be a positive tolerance, got {check_energy!r}")
        if switching not in (None, "acs", "gcl") or (switching is not None and not self.grcr):
            raise ValueError(f"switching: 'acs' or 'gcl', for algorithm grcr (got {switching!r})")
        if switching == "gcl" and (integrator != "rk4" or getattr(self, "dependents_spec", "auto") != "auto"):
            raise ValueError("switching 'gcl' runs rk4 with dependents 'auto' (it chooses windows of adjacent "
                             "dependents itself)")
        x, ts = start_state(self, t_end, dt, q0, u0)
        self.gcl_run = grcr.CoupledLoopRun(self) if switching == "gcl" else None
        if self.grcr:
            if baumgarte is not None or projection:
                raise ValueError("grcr solves the dependent coordinates from the loop constraints after every step "
                                 "(coordinate partitioning): baumgarte and projection belong to algorithm recursive")
            grcr.start(self, x)
        elif self.loops:
            if q0 is not None or u0 is not None:
                check_closure(self, x[:self.nq], x[self.nq:], "given start state")
            b = (0.0 if projection else 0.1 / (dt / substeps if integrator != "dopri5" else min(dt, h_max or dt))) \
                if baumgarte is None else float(baumgarte)
            if not (b >= 0 and math.isfinite(b)):
                raise ValueError(f"baumgarte must be a non-negative rate [1/s], got {baumgarte!r}")
            self.kernel.alpha = self.kernel.beta = b
            self.kernel.project_on, self.kernel.project_tol = int(bool(projection)), 1e-12
        elif projection:
            raise ValueError("projection: the model has no closed loops (no `loops:` section)")
        acc, nfact = None, 0

        def hht(t0, x, m):                    # m samples of HHT-alpha (the state x is updated in place)
            nonlocal acc, nfact
            if acc is None:
                acc = self.kernel.forward_dynamics(x[:self.nq].copy(), x[self.nq:].copy(), None, 0)
            out = self.kernel.integrate_hht(t0, x, acc, dt / substeps, m, substeps, alpha, newton_tol, max_newton)
            nfact += self.kernel.hht_nfact
            return out

        if self.gcl_run is not None:          # grcr restructuring its loops (GCL) instead of re-selecting (ACS)
            X, stats, wall, fail = self.gcl_run.run(x, ts, substeps, f"simulate {self.model.name}", progress)
        else:
            X, stats, wall, fail = integrate_chunks(self.kernel, x, ts, integrator, substeps, rtol, atol, h_max,
                                                    f"simulate {self.model.name}", progress, other=hht)
        if integrator == "hht" and stats[3] and not fail:
            warnings.warn(f"HHT: {int(stats[3])} of {int(stats[1])} steps stopped at {max_newton} Newton iterations "
                          f"without reaching newton_tol = {newton_tol:g}", RuntimeWarning)
        meta = {"model": self.model.source, "model_name": self.model.name, "algorithm": self.algorithm,
                "options": self.options, "integrator": integrator, "dt": dt, "t_end": t_end, "substeps": substeps,
                "rtol": rtol if integrator == "dopri5" else None, "atol": atol if integrator == "dopri5" else None,
                "wall_time_s": wall, "rhs_evaluations": int(stats[0]), "steps": int(stats[1]),
                "rejected_steps": int(stats[2]) if integrator == "dopri5" else 0,
                "build_key": self.build_info["key"], "versions": versions()}
        if choice:
            meta["integrator_choice"] = choice
        if stable is not None:
            meta["rk4_stable_step"] = stable if math.isfinite(stable) else None
        if integrator == "hht":
            meta.update(hht_alpha=alpha, newton_iterations=int(stats[2]), newton_not_converged=int(stats[3]),
                        newton_factorizations=nfact)
        if self.loops and not self.grcr:
            meta["baumgarte"], meta["projection"] = self.kernel.alpha, bool(projection)
            if fail and fail["code"] == 6:
                fail = dependent_rows_detail(self, fail)
        n = fail["sample"] if fail else len(ts)
        res = self._result(X[:n], ts[:n], meta, joint_wrench)
        fail = runaway(self, res, X[:n]) or fail   # finite states whose energy ran away: an earlier failure
        if fail:
            err = divergence(self, fail, X, ts, integrator, dt / substeps, stable)
            if not keep_partial:
                raise err
            n = fail["sample"]
            meta.update(partial=True, diverged_at=err.t, diverged=str(err))
            res = self._result(X[:n], ts[:n], meta, joint_wrench)      # (X[:n]: the joint wrenches too)
            err.partial = res
            res.divergence = err
            return res
        en = energy_balance(self, res)
        meta["energy"] = en
        if check_energy is not None:
            meta["energy_check"] = {"tol": check_energy, "value": en["value"],
                                    "passed": None if en["value"] is None else bool(en["value"] <= check_energy)}
        return res

    def _result(self, X, ts, meta, joint_wrench=False) -> Result:
        q, u = X[:, :self.nq].copy(), X[:, self.nq:].copy()
        names = (list(self.coord_names), list(self.velocity_names), list(self.body_names))
        if self.beams:
            com, quat, ekin, epot, extra = self._beam_outputs(X, ts)
            return Result(ts, q, u, *names, com, quat, ekin, epot, meta, extra)
        com, quat, en = self.kernel.outputs_at(X)
        if self.grcr:                       # the real bodies (phantoms last)
            com, quat = com[:, :len(self.body_names)], quat[:, :len(self.body_names)]
        res = Result(ts, q, u, *names, com, quat, en[:, 0].copy(), en[:, 1].copy(), meta,
                     joint_geometry(self.model, self.body_names, com, quat))       # joint_pos etc., for animate
        if getattr(self.plan, "limits", None):
            res.extra.update(limit_names=np.array([t.data["name"] for t in self.plan.limits]),
                             limit_force=self.kernel.limit_forces_at(X))
            meta["limits"] = {"enforced": bool(self.kernel.limits_on),
                              "active_samples": int(np.count_nonzero(res.extra["limit_force"].any(axis=1)))}
        if getattr(self.plan, "frictions", None):
            res.extra.update(friction_names=np.array([t.data["name"] for t in self.plan.frictions]),
                             friction_force=self.kernel.friction_forces_at(X))
        if getattr(self.model, "tendons", None):
            L, Ld, F = self.kernel.tendon_states_at(X)
            res.extra.update(tendon_names=np.array([t.name for t in self.model.tendons]), tendon_length=L,
                             tendon_velocity=Ld, tendon_force=F)
        if getattr(self.model, "actuators", None):
            F, C = self.kernel.actuator_forces_at(X, ts)
            res.extra.update(actuator_names=np.array([a.name for a in self.model.actuators]), ctrl=C,
                             actuator_force=F)
        if joint_wrench:
            res.extra.update(joint_wrench=self._in_joint_frames(self.kernel.joint_wrench_at(X, ts)),
                             joint_names=np.array(self.plan.joint_names))
        if self.grcr and len(ts):
            extra, total = grcr.outputs(self, X, ts)
            res.extra.update(extra)
            meta["partition_switches"] = int(total)
            meta["dependents"] = getattr(self, "dependents_spec", "auto")
            meta["switching"] = "gcl" if getattr(self, "gcl_run", None) is not None else "acs"
            cv = res.extra["constraint_violation"]
            meta["constraint_violation_max"] = {"position": float(cv[..., 0].max()), "velocity": float(cv[..., 1].max())}
        elif self.loops and len(ts):
            res.extra.update(loop_outputs(self, X, ts))
            cv = res.extra["constraint_violation"]
            meta["constraint_violation_max"] = {"position": float(cv[..., 0].max()), "velocity": float(cv[..., 1].max())}
        return res

    def _beam_outputs(self, X, ts):
        """Beam results: body (beam) centroids and planar orientations, energies, and the extra arrays
        node_names, node_pos (nt x n_nodes x 2), energy_elastic, energy_gravity (gravity and constant loads:
        -F_E . e), snapshot_index, snapshot_curve (9 instants x 11 points per element x 2, r = S(xi) e, eqs 2-3)."""
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
        return com3, quat, en[:, 0].copy(), en[:, 1] + en[:, 2], extra


BeamSystem = System          # one System for rigid and beam models (name kept for existing code)


def build(model, algorithm: Optional[str] = None, ref_point: Optional[str] = None, cache_dir=None,
          progress: bool = False, **options) -> System:
    """Generate, compile (or reuse from the cache) and load the kernels for a model."""
    if ref_point is not None:
        options["ref_point"] = ref_point
    return System(model, algorithm, cache_dir=cache_dir, progress=progress, **options)
