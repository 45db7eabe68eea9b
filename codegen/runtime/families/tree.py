"""Rigid-body trees at run time (families recursive, dense, mstmm, cfa).

The lean compiled entry points, the
batched and threaded calls, joint wrenches, robot physics (limits, friction, tendons, actuators) in the run's
inputs and results, and the power of the non-conservative forces for the energy balance."""
from __future__ import annotations

import contextlib
import warnings
from typing import Optional

import numpy as np

from ...algorithms.tree_plan import FRICTION_PARAMS, canonical_rotation
from ..animate import JOINT_GEOMETRY_KEYS, joint_geometry
from ..kinematics import Kinematics
from ..integrate import FIXED_STEPS
from ..result import Result
from ..system import System, refused


class TreeSystem(Kinematics, System):
    """A rigid-body tree bound to its compiled kernel (see System for the shared API)."""

    kind = "tree"
    integrator_note = " (hht: flexible-beam models only)"
    lean = ("forward_dynamics", "inverse_dynamics")     # methods replaced per instance by the compiled entry points
    set_algorithm = refused("set_algorithm", "set_algorithm: beam models only, one of ('rancf', 'dense')")
    omega_gamma = refused("omega_gamma", "omega_gamma is defined for flexible-beam models; this is a rigid-body model")

    def _setup(self):
        self.kernel.set_hook(self.model.tau_hook)
        self.body_names = self.plan.body_names
        self.act_names = [a.name for a in self.model.actuators if a.stateful]
        self.na = len(self.act_names)
        self._K = None                      # canonical joint rotations (joint wrenches), on first use
        for name in self.lean:              # the lean path: no Python frame per call
            setattr(self, name, getattr(self.kernel, name))

    def _params(self) -> np.ndarray:
        """The plan's parameter vector with the joint limits' gains.

        The plan's parameter vector with the joint limits' stiffness and damping, which scale with each limited
        coordinate's diagonal mass-matrix entry at the initial state (from this kernel's RNEA)."""
        p = self.plan.params()
        tendons = any(t.data["limited"] for t in self.plan.tendons)
        if self.plan.limits or tendons or self.plan.frictions:
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
            if self._friction_vs is not None:       # set_friction_velocity: the stated v_s
                for term in self.plan.frictions:
                    FRICTION_PARAMS.view(p, "vs", term.index)[:] = self._friction_vs
            if tendons:                      # M^-1 c from two forward dynamics at rest
                a0 = k.forward_dynamics(q0, z, None, 0.0)
                self.plan.tendon_limit_gains(p, lambda c: k.forward_dynamics(q0, z, c, 0.0) - a0)
            k.set_params(p)
        return p

    _friction_vs = None                 # Coulomb friction's stated v_s (set_friction_velocity), None: F T / m

    def set_friction_velocity(self, v_s: Optional[float] = None):
        """The regularising velocity v_s of Coulomb friction, f = -F tanh(u / v_s), on every coordinate with friction.

        None (the default): v_s = F T / m (T = 0.02 s, m the coordinate's M_ii at the initial state), a slope at
        rest that explicit steps (rk4, dopri5) take; a joint under a load below F then creeps at
        v_s atanh(load / F). A small v_s (1e-5; Drake's stiction tolerance is 1e-4) makes it hold: the friction is
        then stiff, a job for ``integrator="rosenbrock"`` or ``"implicitfast"``, which take its slope F / v_s
        implicitly (docs/guide/integrators.md). Every call (forward_dynamics, derivatives, runs) uses it.

        Parameters
        ----------
        v_s : float or None, optional
            The velocity [rad/s, m/s], > 0; None: the default.

        Raises
        ------
        ValueError
            The model has no joint friction, or v_s is not a positive finite number.
        """
        if not self.plan.frictions:
            raise ValueError("set_friction_velocity: the model has no Coulomb joint friction")
        if v_s is not None and not (isinstance(v_s, (int, float, np.floating)) and 0 < v_s < np.inf):
            raise ValueError(f"set_friction_velocity: v_s must be a positive velocity [rad/s, m/s], got {v_s!r}")
        self._friction_vs = None if v_s is None else float(v_s)
        p = self._params()
        for k in self._kernels():
            k.set_params(p)

    def _numbers_changed(self):
        self._K = None
        self._ftab = None                   # frames: placements from the joints' frames
        for k in self._kernels():
            k.set_hook(self.model.tau_hook)

    def set_act(self, act=None):
        """The activations the single-state calls use (forward_dynamics, inverse_dynamics, joint_wrenches, ...).

        Actuators with activation dynamics (``dynamics:`` integrator, filter, filterexact) apply gain times their
        activation act, a state of their own that runs integrate with q and u (from 0, or rollout's act0); a call
        at one state reads the values set here, as MuJoCo's mj_forward reads data.act.

        Parameters
        ----------
        act : array_like, shape (na,), optional
            One activation per actuator with activation dynamics, in the model's order (``act_names``); None:
            zeros.

        Raises
        ------
        ValueError
            Wrong length or not finite.
        """
        self.kernel.set_act(act)
        self.act = None if act is None else np.array(act, float).reshape(-1)
        if self._dkernel is not None and self._dkernel is not self.kernel:
            self._dkernel.set_act(act)

    def act_rates(self, q, u, t: float = 0.0, ctrl=None) -> np.ndarray:
        """dact/dt of the activation states at (q, u, t) with the activations of set_act.

        Parameters
        ----------
        q : array_like, shape (nq,)
            Generalized coordinates.
        u : array_like, shape (nv,)
            Generalized velocities.
        t : float, optional
            Time [s] of the controls' time functions.
        ctrl : array_like, shape (nu,), optional
            The actuators' controls (None: the model file's ctrl functions).

        Returns
        -------
        numpy.ndarray, shape (na,)
            integrator: the control; filter, filterexact: (control - act) / timeconst [1/s]; 0 at an actrange
            bound it would leave.
        """
        return self.kernel.act_rates(q, u, t, ctrl)

    def set_hook(self, hook):
        """hook(t, q, u) -> extra generalized forces (nv); runs with the GIL, so it costs speed.

        Parameters
        ----------
        hook : callable or None
            ``hook(t, q, u)`` returning an array of shape (nv,) [N, N m]; None removes it.
        """
        self.model.tau_hook = hook
        for k in self._kernels():
            k.set_hook(hook)

    # ---------------------------------------------------------------- kernels
    def forward_dynamics(self, q, u, tau=None, t: float = 0.0, ctrl=None, *, out=None) -> np.ndarray:
        """Forward dynamics: udot = M^-1 (tau + applied - bias).

        Applied forces of the model evaluated at time t; ctrl: the actuators'
        controls (one per actuator, in the model's order; None: each actuator's ctrl function of the model file).
        (Replaced per instance by the compiled entry point, which checks sizes and types.)

        Parameters
        ----------
        q : array_like, shape (nq,)
            Generalized coordinates (rad for rotations, m for translations; quaternions w, x, y, z).
        u : array_like, shape (nv,)
            Generalized velocities (rad/s, m/s).
        tau : array_like, shape (nv,), optional
            Generalized forces [N, N m] added to the model's (default zero).
        t : float, optional
            Time [s] at which the model's time functions and controls are evaluated (default 0).
        ctrl : array_like, shape (nu,), optional
            The actuators' controls, one per actuator in the model's order; None: each actuator's ctrl function
            of the model file.
        out : numpy.ndarray, shape (nv,), optional
            Keyword only: float64, C-contiguous, receives udot (nothing is allocated).

        Returns
        -------
        numpy.ndarray, shape (nv,)
            udot [rad/s^2, m/s^2] (``out`` when given).

        Raises
        ------
        ValueError
            An array has the wrong size.
        """
        return self.kernel.forward_dynamics(q, u, tau, t, ctrl, out=out)

    def inverse_dynamics(self, q, u, udot, t: float = 0.0, ctrl=None, *, out=None) -> np.ndarray:
        """tau with forward_dynamics(q, u, tau, t, ctrl=ctrl) == udot (recursive Newton-Euler).

        Parameters
        ----------
        q : array_like, shape (nq,)
            Generalized coordinates (rad for rotations, m for translations; quaternions w, x, y, z).
        u : array_like, shape (nv,)
            Generalized velocities (rad/s, m/s).
        udot : array_like, shape (nv,)
            Generalized accelerations [rad/s^2, m/s^2].
        t : float, optional
            Time [s] at which the model's time functions and controls are evaluated (default 0).
        ctrl : array_like, shape (nu,), optional
            The actuators' controls, one per actuator in the model's order; None: each actuator's ctrl function
            of the model file.
        out : numpy.ndarray, shape (nv,), optional
            Keyword only: float64, C-contiguous, receives tau (nothing is allocated).

        Returns
        -------
        numpy.ndarray, shape (nv,)
            tau [N, N m], the generalized forces beyond the model's own (``out`` when given).

        Raises
        ------
        ValueError
            An array has the wrong size.
        """
        q, u = self._qu(q, u)
        return self.kernel.inverse_dynamics(q, u, np.ascontiguousarray(udot, dtype=float).reshape(-1), t, ctrl, out=out)

    def forward_dynamics_batch(self, Q, U, TAU=None, out=None, threads=None, t: float = 0.0,
                               simd: bool = True) -> np.ndarray:
        """Forward dynamics of B states at once, threaded without the GIL, several states per pass.

        udot for B states: Q (B x nq), U (B x nv), TAU (B x nv, added to the model's forces, optional), into
        `out` (B x nv) if given. Runs on `threads` threads (default: every usable core) without the GIL, each
        with its own workspace; the result does not depend on the number of threads. With the recursive family,
        a model the C export carries (rigid tree; joint spring-dampers, joint forces, armature) runs
        ``self.lanes`` states per pass of the recursion, one per vector lane (docs/benchmarks.md, SIMD across
        states): the single calls' numbers to round-off, in about 0.3 of their time per state.

        Parameters
        ----------
        Q : array_like, shape (B, nq)
            Coordinates [rad, m], one state per row.
        U : array_like, shape (B, nv)
            Velocities [rad/s, m/s].
        TAU : array_like, shape (B, nv), optional
            Generalized forces [N, N m] added to the model's.
        out : numpy.ndarray, shape (B, nv), optional
            Array to write into.
        threads : int, optional
            Number of threads (default: every usable core).
        t : float, optional
            Time [s] (default 0).
        simd : bool, optional
            Several states per pass where the module has lanes (default); False: one per pass, bitwise the
            single calls' numbers.

        Returns
        -------
        numpy.ndarray, shape (B, nv)
            udot [rad/s^2, m/s^2] per state.

        Raises
        ------
        ValueError
            An array has the wrong shape.
        """
        return self.kernel.forward_dynamics_batch(Q, U, TAU, t, out, threads, simd)

    def inverse_dynamics_batch(self, Q, U, UD, out=None, threads=None, t: float = 0.0,
                               simd: bool = True) -> np.ndarray:
        """Inverse dynamics (RNEA) of B states at once, threaded without the GIL, several states per pass.

        tau for B states such that forward_dynamics(Q[b], U[b], tau[b], t) == UD[b], into `out` (B x nv) if given;
        threads and lanes as forward_dynamics_batch.

        Parameters
        ----------
        Q : array_like, shape (B, nq)
            Coordinates [rad, m], one state per row.
        U : array_like, shape (B, nv)
            Velocities [rad/s, m/s].
        UD : array_like, shape (B, nv)
            Accelerations [rad/s^2, m/s^2].
        out : numpy.ndarray, shape (B, nv), optional
            Array to write into.
        threads : int, optional
            Number of threads (default: every usable core).
        t : float, optional
            Time [s] (default 0).
        simd : bool, optional
            Several states per pass where the module has lanes (default); False: one per pass, bitwise the
            single calls' numbers.

        Returns
        -------
        numpy.ndarray, shape (B, nv)
            tau [N, N m] per state.

        Raises
        ------
        ValueError
            An array has the wrong shape.
        """
        return self.kernel.inverse_dynamics_batch(Q, U, UD, t, out, threads, simd)

    def rollout(self, q0, u0, nsteps: int, dt: Optional[float] = None, tau=None, integrator: Optional[str] = None,
                threads=None,
                sensitivities: bool = False, ctrl=None, act0=None, return_act: bool = False, simd: bool = True):
        """B rollouts of nsteps fixed steps of size dt, all in compiled code.

        B rollouts of nsteps fixed steps of size dt, all in compiled code on `threads` threads (default: every
        usable core). q0 (B x nq), u0 (B x nv); tau (B x nsteps x nv) adds to the model's own forces, held over
        each step (None: the model's forces only); ctrl (B x nsteps x nu): the actuators' controls, held over each
        step as MuJoCo's rollout takes them (None: the model file's ctrl functions). Returns (q, u): B x
        (nsteps + 1) x nq and x nv, row 0 the
        initial state; the same numbers as simulate(..., integrator=...) from each initial state (rk4: to
        round-off in lanes, bitwise with simd=False; euler, implicitfast, implicit: one rollout per pass). A rollout
        whose state stops being finite has NaN rows from there on (a RuntimeWarning names it).
        sensitivities=True: returns (q, u, A, B) with the Jacobians of every step in tangent coordinates,
        A (B x nsteps x nt x nt), B (B x nsteps x nt x nv), nt = 2nv (+ na with activation dynamics: x = (q, u,
        act)): x_{s+1} = A_s x_s + B_s dtau_s (see linearize).

        Parameters
        ----------
        q0 : array_like, shape (B, nq)
            Initial coordinates [rad, m], one rollout per row.
        u0 : array_like, shape (B, nv)
            Initial velocities [rad/s, m/s].
        nsteps : int
            Number of steps.
        dt : float, optional
            Step [s]; default the model file's (dt / substeps of its ``simulation:``; an MJCF file's timestep).
        tau : array_like, shape (B, nsteps, nv), optional
            Generalized forces [N, N m] added to the model's, held over each step.
        integrator : str, optional
            ``rk4``, ``euler``, ``implicitfast`` or ``implicit`` (MuJoCo's single steps); default the model
            file's when it is one of these (an MJCF file's), else ``rk4`` (with sensitivities: ``rk4``, the
            only one with step Jacobians yet).
        threads : int, optional
            Number of threads (default: every usable core).
        sensitivities : bool, optional
            Also return the step Jacobians A and B.
        ctrl : array_like, shape (B, nsteps, nu), optional
            The actuators' controls, held over each step.
        act0 : array_like, shape (B, na), optional
            Initial activations of the actuators with activation dynamics (default zeros).
        return_act : bool, optional
            Also return the activations, shape (B, nsteps + 1, na), after q and u.
        simd : bool, optional
            Several rollouts per pass where the module has lanes (default; see forward_dynamics_batch); False: one
            per pass, bitwise the numbers of simulate().

        Returns
        -------
        q : numpy.ndarray, shape (B, nsteps + 1, nq)
            Coordinates, row 0 the initial state.
        u : numpy.ndarray, shape (B, nsteps + 1, nv)
            Velocities.
        A : numpy.ndarray, shape (B, nsteps, nt, nt)
            With sensitivities=True: the state Jacobian of every step (nt = 2 nv + na).
        B : numpy.ndarray, shape (B, nsteps, nt, nv)
            With sensitivities=True: the input Jacobian of every step.
        act : numpy.ndarray, shape (B, nsteps + 1, na)
            With return_act=True: the activations, last.

        Raises
        ------
        ValueError
            nsteps is not an integer, an array has the wrong shape, or sensitivities with ctrl or another integrator.
        """
        if isinstance(nsteps, bool) or not isinstance(nsteps, (int, np.integer)):
            raise ValueError(f"nsteps: expected an integer >= 0, got {nsteps!r}")
        file = self.model.simulation or {}
        if dt is None:
            if "dt" not in file:
                raise ValueError("rollout: dt: required (the model file sets no simulation dt)")
            dt = file["dt"] / file.get("substeps", 1)
        if integrator is None:              # the file's (sensitivities: rk4, the one with step Jacobians)
            integrator = file.get("integrator") if file.get("integrator") in FIXED_STEPS and not sensitivities else "rk4"
        if sensitivities:
            if ctrl is not None:
                raise ValueError("rollout: sensitivities with ctrl are not derived yet (use tau)")
            if integrator != "rk4":
                raise ValueError(f"rollout: integrator '{integrator}' not supported (rk4)")
        acts = np.empty((len(np.atleast_2d(q0)), int(nsteps) + 1, self.na)) if return_act and self.na else None
        if (act0 is not None or return_act) and not self.na:
            raise ValueError("rollout: act0, return_act: the model has no actuators with activation dynamics")
        if sensitivities:
            q, u, A, B, fail = self._derivative_kernel("rollout(sensitivities=True)").rollout_sensitivities(
                q0, u0, int(nsteps), float(dt), tau, threads, 0.0, act0, acts)
        else:
            q, u, fail = self._run_kernel(integrator).rollout(q0, u0, int(nsteps), float(dt), tau, integrator,
                                                              threads, 0.0, ctrl, act0, acts, simd)
        bad = np.flatnonzero(np.isfinite(fail))
        if bad.size:
            warnings.warn(f"rollout: {bad.size} of {len(fail)} rollouts diverged (first: rollout {bad[0]} at "
                          f"t = {fail[bad[0]]:.6g}); their rows from there on are NaN", RuntimeWarning, stacklevel=2)
        out = (q, u, A, B) if sensitivities else (q, u)
        return out + (acts,) if return_act else out

    _mm_rows = None                     # mass_matrix's batch rows (Q, U = 0, UD = [0; I])

    def mass_matrix(self, q) -> np.ndarray:
        """Joint-space mass matrix (dense algorithm: CRBA; otherwise column by column from RNEA).

        Parameters
        ----------
        q : array_like, shape (nq,)
            Generalized coordinates (rad for rotations, m for translations; quaternions w, x, y, z).

        Returns
        -------
        numpy.ndarray, shape (nv, nv)
            The symmetric mass matrix M(q) [kg, kg m, kg m^2].
        """
        q = np.ascontiguousarray(q, dtype=float).reshape(-1)
        if hasattr(self.kernel, "mass_matrix"):
            return self.kernel.mass_matrix(q)
        if self.kind == "tree":         # the engine's CRBA on the tree kinematics (armature included)
            return self.kernel.tree_mass_matrix(q)
        return self._mass_matrix_by_rnea(q)

    def _mass_matrix_by_rnea(self, q) -> np.ndarray:
        """M column by column from inverse dynamics (any kernel that has it): tau(e_k) - tau(0) at u = 0."""
        n = self.nv                     # column by column: one compiled batch of RNEAs, udot = 0 and e_k
        if self._mm_rows is None or self._mm_rows[0].shape != (n + 1, self.nq):
            self._mm_rows = (np.empty((n + 1, self.nq)), np.zeros((n + 1, n)), np.vstack([np.zeros(n), np.eye(n)]))
        Q, U, UD = self._mm_rows
        Q[:] = q
        hook, self.model.tau_hook = self.model.tau_hook, None
        self.kernel.set_hook(None)
        try:
            tau = self.kernel.inverse_dynamics_batch(Q, U, UD, 0.0, None, 1, False)
        finally:
            self.set_hook(hook)
        M = (tau[1:] - tau[0]).T
        return 0.5 * (M + M.T)

    def qdot(self, q, u) -> np.ndarray:
        """The coordinate rates qdot = G(q) u (quaternion rates for spherical and free joints).

        Parameters
        ----------
        q : array_like, shape (nq,)
            Generalized coordinates (rad for rotations, m for translations; quaternions w, x, y, z).
        u : array_like, shape (nv,)
            Generalized velocities (rad/s, m/s).

        Returns
        -------
        numpy.ndarray, shape (nq,)
            dq/dt.

        Raises
        ------
        ValueError
            q or u has the wrong length.
        """
        q, u = self._qu(q, u)
        return self.kernel.qdot_of(q, u)

    def energy(self, q, u):
        """(kinetic, potential) at one state; potential includes gravity and springs.

        Parameters
        ----------
        q : array_like, shape (nq,)
            Generalized coordinates (rad for rotations, m for translations; quaternions w, x, y, z).
        u : array_like, shape (nv,)
            Generalized velocities (rad/s, m/s).

        Returns
        -------
        kinetic, potential : float
            Energies [J].

        Raises
        ------
        ValueError
            q or u has the wrong length.
        """
        q, u = self._qu(q, u)
        _, _, en = self.kernel.outputs_at(np.concatenate([q, u, np.zeros(self.na)])[None, :])
        return float(en[0, 0]), float(en[0, 1])

    def joint_wrenches(self, q, u, tau=None, t: float = 0.0) -> np.ndarray:
        """The spatial force transmitted through every joint, (n_joints, 6).

        (n_joints, 6): for each joint, the spatial force transmitted through it from its parent to its child
        (the whole subtree), as (fx, fy, fz, mx, my, mz) with the moment about the joint point, components in
        the joint's frame on the child side (the model's child_frame: axes attached to the child body), the
        convention of pinocchio's data.f for a model built from the same file.  A free joint is a joint too
        (its row is ~0 without external loads on its body).  Every rigid algorithm gives them: cfa directly
        (its constraint forces), recursive and dense by an inverse-dynamics pass after forward dynamics,
        mstmm from its state vectors.

        Parameters
        ----------
        q : array_like, shape (nq,)
            Generalized coordinates (rad for rotations, m for translations; quaternions w, x, y, z).
        u : array_like, shape (nv,)
            Generalized velocities (rad/s, m/s).
        tau : array_like, shape (nv,), optional
            Generalized forces [N, N m] added to the model's.
        t : float, optional
            Time [s] at which the model's time functions and controls are evaluated (default 0).

        Returns
        -------
        numpy.ndarray, shape (n_joints, 6)
            Force [N] and moment [N m] per joint.

        Raises
        ------
        ValueError
            q, u or tau has the wrong length.
        """
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
        """The MSTMM state vector at every joint (algorithm 'mstmm' only).

        Algorithm 'mstmm' only: the MSTMM state vector z = [r'', Omega', m, q] ([RBW eq 1]) at every
        joint, world frame, rows in body order: {"acc": r'' of the joint point, "alpha": Omega' of the
        child body, "moment": m, "force": q} (nb x 3 each; the parent exerts -q and +m on the child).

        Parameters
        ----------
        q : array_like, shape (nq,)
            Generalized coordinates (rad for rotations, m for translations; quaternions w, x, y, z).
        u : array_like, shape (nv,)
            Generalized velocities (rad/s, m/s).
        tau : array_like, shape (nv,), optional
            Generalized forces [N, N m] added to the model's.
        t : float, optional
            Time [s] at which the model's time functions and controls are evaluated (default 0).

        Returns
        -------
        dict
            ``acc`` [m/s^2], ``alpha`` [rad/s^2], ``moment`` [N m], ``force`` [N]: arrays of shape (nb, 3).

        Raises
        ------
        ValueError
            The system was not built with algorithm 'mstmm'.
        """
        if not hasattr(self.kernel, "mstmm_states"):
            raise ValueError("connection states come from the mstmm kernels: build with algorithm='mstmm'")
        q, u = self._qu(q, u)
        z = self.kernel.mstmm_states(q, u, tau, t)
        return {"acc": z[:, 0:3], "alpha": z[:, 3:6], "moment": z[:, 6:9], "force": z[:, 9:12]}

    def body_poses(self, q):
        """World centroid (nb x 3) and orientation quaternion w, x, y, z (nb x 4) of every body.

        Parameters
        ----------
        q : array_like, shape (nq,)
            Generalized coordinates (rad for rotations, m for translations; quaternions w, x, y, z).

        Returns
        -------
        com : numpy.ndarray, shape (nb, 3)
            Centroids [m].
        quat : numpy.ndarray, shape (nb, 4)
            Orientations as unit quaternions (w, x, y, z).
        """
        q, _ = self._qu(q, np.zeros(self.nv))
        com, quat, _ = self.kernel.outputs_at(np.concatenate([q, np.zeros(self.nv + self.na)])[None, :])
        return com[0], quat[0]

    # ---------------------------------------------------------------- runs
    @contextlib.contextmanager
    def _inputs(self, ctrl, limits):
        if ctrl is not None and not self.model.actuators:
            raise ValueError("ctrl: the model has no actuators")
        if self.model.actuators:
            self.kernel.set_ctrl(ctrl)
        was = bool(self.kernel.limits_on)
        self.kernel.set_limits(bool(limits))
        self._run_inputs = (ctrl, bool(limits))
        try:
            yield
        finally:
            self._run_inputs = None
            for k in self._kernels():
                k.set_limits(was)

    def _run_kernel(self, integrator: str):
        """The kernel of a run: implicit, rosenbrock the derivative kernel (with the run's inputs), else the own."""
        if integrator not in ("implicit", "rosenbrock"):
            return self.kernel
        k = self._derivative_kernel("integrator implicit")
        if self._run_inputs is not None:
            ctrl, limits = self._run_inputs
            if self.model.actuators:
                k.set_ctrl(ctrl)
            k.set_limits(limits)
        return k

    _run_inputs = None                  # (ctrl, limits) of the run under way (_inputs)

    def _integrate(self, x, ts, run, other=None):
        if run.integrator in FIXED_STEPS and self.kernel.IN_LOOP_OUTPUTS:     # outputs inside the compiled loop
            run.outputs = np.full((len(ts), 7 * self.plan.nb + 2), np.nan)
        return super()._integrate(x, ts, run, other)

    def _outputs(self, X, run):
        """(com, quat, energies) at the rows of X: from the compiled run when it made them, else computed."""
        if run.outputs is None or not len(X):
            return self.kernel.outputs_at(X)
        nb, O = self.plan.nb, run.outputs[:len(X)]
        O[0] = np.concatenate([a[0].ravel() for a in self.kernel.outputs_at(X[:1])])   # the start state
        return O[:, :3 * nb].reshape(-1, nb, 3), O[:, 3 * nb:7 * nb].reshape(-1, nb, 4), O[:, 7 * nb:]

    def _check_run(self, run, check_energy):
        if run.frames is not None:
            run.frames = list(self._frames(run.frames)[1])      # a bad frame is refused before the run
            if not run.frames:
                raise ValueError("frames: name at least one frame (s.frames lists them)")
        return super()._check_run(run, check_energy)

    def _result(self, X, ts, meta, run) -> Result:
        q, u = X[:, :self.nq].copy(), X[:, self.nq:self.nq + self.nv].copy()
        com, quat, en = self._outputs(X, run)
        com, quat = com[:, :len(self.body_names)], quat[:, :len(self.body_names)]     # (grcr: phantoms last)
        res = Result(ts, q, u, list(self.coord_names), list(self.velocity_names), list(self.body_names), com, quat,
                     en[:, 0].copy(), en[:, 1].copy(), meta)
        res.extra.defer(JOINT_GEOMETRY_KEYS, lambda: joint_geometry(self.model, self.body_names, com, quat))   # animate
        plan, model = self.plan, self.model
        if plan.limits:
            res.extra.update(limit_names=np.array([t.data["name"] for t in plan.limits]),
                             limit_force=self.kernel.limit_forces_at(X))
            meta["limits"] = {"enforced": bool(self.kernel.limits_on),
                              "active_samples": int(np.count_nonzero(res.extra["limit_force"].any(axis=1)))}
        if plan.frictions:
            res.extra.update(friction_names=np.array([t.data["name"] for t in plan.frictions]),
                             friction_force=self.kernel.friction_forces_at(X))
        if model.tendons:
            L, Ld, F = self.kernel.tendon_states_at(X)
            res.extra.update(tendon_names=np.array([t.name for t in model.tendons]), tendon_length=L,
                             tendon_velocity=Ld, tendon_force=F)
        if model.actuators:
            F, C = self.kernel.actuator_forces_at(X, ts)
            res.extra.update(actuator_names=np.array([a.name for a in model.actuators]), ctrl=C, actuator_force=F)
            if self.na:                     # the activation states
                res.extra.update(act_names=np.array(self.act_names), act=X[:, self.nq + self.nv:].copy())
        if run.joint_wrench:
            res.extra.update(joint_wrench=self._in_joint_frames(self.kernel.joint_wrench_at(X, ts)),
                             joint_names=np.array(plan.joint_names))
        if run.frames is not None:
            res.extra.update(self.frame_trajectories(X, run.frames))
        if len(ts):
            self._loop_outputs(res, X, ts)
        return res

    def _loop_outputs(self, res, X, ts):
        """Closed loops: their result extras and meta (trees have none)."""

    # ---------------------------------------------------------------- energy
    def conservative(self) -> bool:
        """Whether the model has no non-conservative forces.

        Returns
        -------
        bool
            False when it has dampers, joint forces, actuators, friction, a feedback or a force hook.
        """
        m = self.model
        return not (any(np.any(sp.damping) for sp in m.springs) or m.joint_forces or m.actuators or self.plan.frictions
                    or any(ps.damping for ps in m.point_springs) or self.feedback is not None
                    or m.tau_hook is not None)

    def applied_power(self, res, joint_forces_only: bool = False):
        """Power [W] of the non-conservative applied forces at the samples of a result.

        Power of the non-conservative applied forces at the samples (W), or None when it is not known (a
        force hook).  Joint dampers: -c u^2; joint forces: f(t) u; actuators: gear f u; joint limits and
        friction: f u; tendons: their damping and limit forces times Ldot; the compiled feedback; point dampers:
        -c (dL/dt)^2 with dL/dt from the sampled spring length (second-order differences).  Springs and gravity
        are in the potential.  joint_forces_only: the joint forces' part alone.

        Parameters
        ----------
        res : Result
            A result of this system.
        joint_forces_only : bool, optional
            Only the joint forces' part.

        Returns
        -------
        numpy.ndarray or None
            Power [W] at every sample, shape (nt,), or None when it is not known.
        """
        m, plan = self.model, self.plan
        P = np.zeros(len(res.t))
        if m.tau_hook is not None:
            return None
        off = {j.name: o for j, o in zip(m.joints, m.q_offsets())}
        for s in ([] if joint_forces_only else m.springs):
            iv = off[s.joint][1]
            for k, c in enumerate(np.atleast_1d(s.damping)):
                P -= c * res.u[:, iv + k] ** 2
        for f in m.joint_forces:
            iv = off[f.joint][1] + f.dof
            P += np.array([f.function(t) for t in res.t]) * res.u[:, iv]
        extra = getattr(res, "extra", {})
        if "actuator_force" in extra:            # actuators: gear f u (on a tendon: gear f Ldot)
            for a, f in zip(m.actuators, extra["actuator_force"].T):
                v = extra["tendon_velocity"][:, [t.name for t in m.tendons].index(a.tendon)] if a.tendon is not None \
                    else res.u[:, off[a.joint][1] + a.dof]
                P += a.gear * f * v
        if "tendon_force" in extra:              # tendons: their damping and limits (F + k (L - L0)) Ldot
            p = plan.params()
            for t, term in enumerate(plan.tendons):
                k, L0 = p[term.index], p[term.index + 2]
                P += (extra["tendon_force"][:, t] + k * (extra["tendon_length"][:, t] - L0)) * extra["tendon_velocity"][:, t]
        if "friction_force" in extra:            # Coulomb friction: f u
            P += np.einsum("sl,sl->s", extra["friction_force"], res.u[:, [t.data["iv"] for t in plan.frictions]])
        if "limit_force" in extra:               # joint limits: f u (spring and damper, one-sided)
            P += np.einsum("sl,sl->s", extra["limit_force"], res.u[:, [t.data["iv"] for t in plan.limits]])
        if self.feedback is not None:            # the compiled state feedback (set_feedback): tau_ref - K (x - x_ref)
            K, xr, tr = self.feedback
            X = np.hstack([res.q, res.u])
            P += np.einsum("sa,sa->s", tr - (X - xr) @ K.T, res.u)
        if not joint_forces_only and any(p.damping for p in m.point_springs):
            if len(res.t) < 3:
                return None
            P -= _point_damper_power(m, res)
        return P


def _point_damper_power(m, res):
    """sum c (dL/dt)^2 of the point-to-point dampers, dL/dt from the sampled spring lengths."""
    bi = {b: i for i, b in enumerate(res.body_names)}

    def world(body, pt):
        if body == "ground":
            return np.broadcast_to(pt, (len(res.t), 3))
        i = bi[body]
        w, x, y, z = res.body_quat[:, i].T
        R = np.stack([np.stack([1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)], -1),
                      np.stack([2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)], -1),
                      np.stack([2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)], -1)], -2)
        return res.body_com[:, i] + R @ (pt - m.body(body).com)

    P = np.zeros(len(res.t))
    for p in m.point_springs:
        if p.damping:
            L = np.linalg.norm(world(p.body_b, p.point_b) - world(p.body_a, p.point_a), axis=1)
            P += p.damping * np.gradient(L, res.t, edge_order=2) ** 2
    return P
