"""Derivatives, linearisation and rollout sensitivities of a System (rigid trees).

The Python side of the compiled
derivative kernels (templates/shared/derivatives.pyx.j2, Carpentier & Mansard 2018)."""
from __future__ import annotations

from typing import Optional

import numpy as np

from . import linearize as lin


class Derivatives:
    """Mixin of System: analytical derivatives of the forward and inverse dynamics (nv x nv, row major).

    Convention: q-derivatives are taken in the tangent space of each joint (nv numbers per state): the coordinate
    change for scalar joints; for spherical and free joints the local angular perturbation q (x) exp(delta / 2)
    (pinocchio's convention); the free joint's translation along the parent axes, as its velocity u[0:3].
    Available for every rigid-tree family; refused for beams, grcr, closed loops (cut joints) and a Python force
    hook, naming what is missing.
    """

    feedback = None         # (K, x_ref, tau_ref) of the compiled state feedback (set_feedback), or None

    def _no_derivatives(self):
        """Why this system has no derivatives (the family classes say), or None."""
        return None

    def _derivative_kernel(self, what: str):
        why = self._no_derivatives()
        if why:
            raise ValueError(f"{what}: {why}")
        return self.derivative_kernel

    @property
    def derivative_kernel(self):
        """The compiled kernel with the derivatives.

        The system's own when built with derivatives=True, else the same
        model and options built once more with them on first use (cached like every build), with this system's
        numbers, hook and feedback.

        Returns
        -------
        object
            The compiled kernel object.

        Raises
        ------
        ValueError
            The system has no derivatives (beams, grcr, closed loops, point spring-dampers, a force hook).
        """
        if self._dkernel is None:
            from ..compiler import build_module
            mod, _ = build_module(self.model, self.family.name, derivatives=True, **self._build_args, **self.options)
            k = getattr(mod, self.family.kernel_class)()
            k.set_params(self._params())
            k.set_hook(self.model.tau_hook)
            if self.feedback is not None:
                k.set_feedback(*self.feedback)
            if self.act is not None:
                k.set_act(self.act)                 # the activations of set_act
            self._dkernel = k
        return self._dkernel

    def inverse_dynamics_derivatives(self, q, u, udot, out=None, t: float = 0.0, ctrl=None):
        """Derivatives of the inverse dynamics: (dtau/dq, dtau/du, M).

        (dtau/dq, dtau/du, M), each nv x nv, of tau = inverse_dynamics(q, u, udot, t, ctrl); dtau/dudot = M. q in
        the tangent space (class docstring). ``out``: a tuple of three nv x nv float64 arrays to write into.

        Parameters
        ----------
        q : array_like, shape (nq,)
            Generalized coordinates (rad for rotations, m for translations; quaternions w, x, y, z).
        u : array_like, shape (nv,)
            Generalized velocities (rad/s, m/s).
        udot : array_like, shape (nv,)
            Generalized accelerations [rad/s^2, m/s^2].
        out : tuple of three numpy.ndarray, optional
            Arrays of shape (nv, nv), float64, to write into.
        t : float, optional
            Time [s] at which the model's time functions and controls are evaluated (default 0).
        ctrl : array_like, shape (nu,), optional
            The actuators' controls, one per actuator in the model's order; None: each actuator's ctrl function
            of the model file.

        Returns
        -------
        dtau_dq, dtau_du, M : numpy.ndarray, shape (nv, nv)
            The partial derivatives of tau [N, N m] and the mass matrix.

        Raises
        ------
        ValueError
            The system has no derivatives, or an array has the wrong size.
        """
        return self._derivative_kernel("inverse_dynamics_derivatives").inverse_dynamics_derivatives(q, u, udot, out,
                                                                                                     t, ctrl)

    def forward_dynamics_derivatives(self, q, u, tau=None, t: float = 0.0, out=None, ctrl=None):
        """Derivatives of the forward dynamics: (dudot/dq, dudot/du, M^-1).

        (dudot/dq, dudot/du, M^-1), each nv x nv, of udot = forward_dynamics(q, u, tau, t, ctrl=ctrl); dudot/dtau
        = M^-1, dudot/dctrl = M^-1 actuator_jacobian(q, u, t, ctrl). The model's force elements and actuators are
        included (joint spring-dampers, time functions, position and velocity servos). ``out``: three arrays.

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
        out : tuple of three numpy.ndarray, optional
            Arrays of shape (nv, nv), float64, to write into.
        ctrl : array_like, shape (nu,), optional
            The actuators' controls, one per actuator in the model's order; None: each actuator's ctrl function
            of the model file.

        Returns
        -------
        dudot_dq, dudot_du, Minv : numpy.ndarray, shape (nv, nv)
            The partial derivatives of udot [rad/s^2, m/s^2] and the inverse mass matrix.

        Raises
        ------
        ValueError
            The system has no derivatives, or an array has the wrong size.
        """
        return self._derivative_kernel("forward_dynamics_derivatives").forward_dynamics_derivatives(q, u, tau, t, out,
                                                                                                     ctrl)

    def activation_jacobian(self, q, u, t: float = 0.0, ctrl=None):
        """The activation dynamics' Jacobians at (q, u, t), the activations of set_act and the controls ctrl.

        Parameters
        ----------
        q : array_like, shape (nq,)
            Generalized coordinates (rad for rotations, m for translations; quaternions w, x, y, z).
        u : array_like, shape (nv,)
            Generalized velocities (rad/s, m/s).
        t : float, optional
            Time [s] (default 0).
        ctrl : array_like, shape (nu,), optional
            The actuators' controls; None: each actuator's ctrl function of the model file.

        Returns
        -------
        dtau_dact : numpy.ndarray, shape (nv, na)
            gear times the gain of each actuator with activation dynamics (0 where its force is clamped or its
            activation outside actrange); d udot / d act = M^-1 dtau_dact.
        dadot_dact : numpy.ndarray, shape (na,)
            The diagonal of d(dact/dt)/dact: -1 / timeconst (filter, filterexact), 0 (integrator).
        dadot_dctrl : numpy.ndarray, shape (na, nu)
            d(dact/dt)/dctrl: 1 / timeconst or 1 (0 where the control is clamped or the activation held at its range).

        Raises
        ------
        ValueError
            The model has no activation dynamics.
        """
        if not self.na:
            raise ValueError("activation_jacobian: the model has no actuators with activation dynamics")
        return self.kernel.activation_jacobian(q, u, t, ctrl)

    def actuator_jacobian(self, q, u, t: float = 0.0, ctrl=None):
        """The actuators' Jacobian dtau/dctrl (nv x nu).

        gear df/dctrl on each actuated coordinate (0 where the control or the force is
        clamped); dudot/dctrl = M^-1 dtau/dctrl (forward_dynamics_derivatives' third matrix).

        Parameters
        ----------
        q : array_like, shape (nq,)
            Generalized coordinates (rad for rotations, m for translations; quaternions w, x, y, z).
        u : array_like, shape (nv,)
            Generalized velocities (rad/s, m/s).
        t : float, optional
            Time [s] at which the model's time functions and controls are evaluated (default 0).
        ctrl : array_like, shape (nu,), optional
            The actuators' controls, one per actuator in the model's order; None: each actuator's ctrl function
            of the model file.

        Returns
        -------
        numpy.ndarray, shape (nv, nu)
            dtau/dctrl [N or N m per control unit].

        Raises
        ------
        ValueError
            The model has no actuators.
        """
        if not getattr(self.model, "actuators", None):
            raise ValueError("actuator_jacobian: the model has no actuators")
        return self.kernel.actuator_jacobian(q, u, t, ctrl)

    def forward_dynamics_derivatives_batch(self, Q, U, TAU=None, out=None, threads=None, t: float = 0.0):
        """forward_dynamics_derivatives of B states at once, threaded.

        forward_dynamics_derivatives of B states (rows of Q, U, TAU), three B x nv x nv arrays, on `threads`
        threads without the GIL (default: every usable core); a row whose mass matrix is singular is NaN.

        Parameters
        ----------
        Q : array_like, shape (B, nq)
            Coordinates [rad, m], one state per row.
        U : array_like, shape (B, nv)
            Velocities [rad/s, m/s].
        TAU : array_like, shape (B, nv), optional
            Generalized forces [N, N m] added to the model's.
        out : tuple of three numpy.ndarray, optional
            Arrays of shape (B, nv, nv) to write into.
        threads : int, optional
            Number of threads (default: every usable core).
        t : float, optional
            Time [s] (default 0).

        Returns
        -------
        dudot_dq, dudot_du, Minv : numpy.ndarray, shape (B, nv, nv)
            As forward_dynamics_derivatives, per state.

        Raises
        ------
        ValueError
            The system has no derivatives, or an array has the wrong shape.
        """
        k = self._derivative_kernel("forward_dynamics_derivatives_batch")
        return k.forward_dynamics_derivatives_batch(Q, U, TAU, t, out, threads)

    def inverse_dynamics_derivatives_batch(self, Q, U, UDOT, out=None, threads=None):
        """inverse_dynamics_derivatives of B states, three B x nv x nv arrays, threaded as the forward batch.

        Parameters
        ----------
        Q : array_like, shape (B, nq)
            Coordinates [rad, m], one state per row.
        U : array_like, shape (B, nv)
            Velocities [rad/s, m/s].
        UDOT : array_like, shape (B, nv)
            Accelerations [rad/s^2, m/s^2].
        out : tuple of three numpy.ndarray, optional
            Arrays of shape (B, nv, nv) to write into.
        threads : int, optional
            Number of threads (default: every usable core).

        Returns
        -------
        dtau_dq, dtau_du, M : numpy.ndarray, shape (B, nv, nv)
            As inverse_dynamics_derivatives, per state.

        Raises
        ------
        ValueError
            The system has no derivatives, or an array has the wrong shape.
        """
        k = self._derivative_kernel("inverse_dynamics_derivatives_batch")
        return k.inverse_dynamics_derivatives_batch(Q, U, UDOT, out, threads)

    def linearize(self, q, u, tau=None, dt: Optional[float] = None, integrator: str = "rk4", t: float = 0.0):
        """(A, B) of the dynamics at (q, u, tau) in tangent coordinates x = (dq, du) (2 nv), input tau (nv).

        With activation dynamics the state is x = (dq, du, dact) (2 nv + na), at the activations of set_act. The
        actuators' controls are the model file's ctrl functions (their columns: actuator_jacobian, and
        activation_jacobian's d(dact/dt)/dctrl). dt None: continuous time, x' = A x + B dtau. dt > 0: the Jacobians of one compiled RK4 step of size dt
        from (q, u) with tau held over the step (the step `rollout` and `simulate(integrator="rk4")` take):
        x1 = A x0 + B dtau. See codegen.runtime.linearize for the chain rule and its accuracy with quaternions.

        Parameters
        ----------
        q : array_like, shape (nq,)
            Generalized coordinates (rad for rotations, m for translations; quaternions w, x, y, z).
        u : array_like, shape (nv,)
            Generalized velocities (rad/s, m/s).
        tau : array_like, shape (nv,), optional
            Generalized forces [N, N m] added to the model's (default zero).
        dt : float, optional
            None: continuous time; else the step [s] of the discrete map.
        integrator : str, optional
            The discrete map's integrator (rk4 only).
        t : float, optional
            Time [s] (default 0).

        Returns
        -------
        A : numpy.ndarray, shape (nt, nt)
            State Jacobian (nt = 2 nv, or 2 nv + na with activation dynamics).
        B : numpy.ndarray, shape (nt, nv)
            Input Jacobian (per N or N m of tau).

        Raises
        ------
        ValueError
            The system has no derivatives, a bad integrator or dt, or q, u of the wrong length.
        FloatingPointError
            The RK4 step from this state is not finite.
        """
        k = self._derivative_kernel("linearize")
        q, u = self._qu(q, u)
        T = None if tau is None else np.ascontiguousarray(tau, float).reshape(1, self.nv)
        act = None if not self.na else (np.zeros((1, self.na)) if self.act is None else self.act[None])
        if getattr(self.model, "actuators", None):
            k.set_ctrl(None)                        # the file's ctrl functions, as the step of rollout without ctrl
        if dt is None:
            A, B = lin.continuous(k, self.model, q[None], u[None], T, t, threads=1)
            if self.na:
                A, B = lin.with_activations(k, A[0], B[0], q, u, t)
                A, B = A[None], B[None]
        else:
            if integrator != "rk4":
                raise ValueError(f"linearize: integrator '{integrator}' has no step Jacobian (rk4)")
            if not (dt > 0 and np.isfinite(dt)):
                raise ValueError(f"linearize: dt must be a positive finite step, got {dt}")
            _, _, A, B, fail = k.rollout_sensitivities(q[None], u[None], 1, float(dt),
                                                       None if T is None else T[None], 1, t, act)
            if np.isfinite(fail[0]):
                raise FloatingPointError(f"linearize: the RK4 step from this state is not finite (t = {fail[0]:.6g})")
            A, B = A[:, 0], B[:, 0]
        return A[0], B[0]

    def set_feedback(self, K=None, x_ref=None, tau_ref=None):
        """Compile a linear state feedback into the model's forces.

        A linear state feedback compiled into the model's forces, tau += tau_ref - K (x - x_ref), x = (q, u):
        evaluated inside the compiled integrators (simulate, rollout) with no Python per step, and part of the
        derivatives and linearize. K (nv x 2nv), x_ref (nq + nv, default 0), tau_ref (nv, default 0); K None removes
        it. Models with spherical or free joints are refused (no plain difference of quaternions).

        Parameters
        ----------
        K : array_like, shape (nv, 2 nv), optional
            The gain [N or N m per unit of q and u]; None removes the feedback.
        x_ref : array_like, shape (nq + nv,), optional
            The reference state (default zero).
        tau_ref : array_like, shape (nv,), optional
            The feedforward force [N, N m] (default zero).

        Raises
        ------
        ValueError
            An array has the wrong size, or the model has spherical or free joints.
        """
        self.kernel.set_feedback(K, x_ref, tau_ref)
        if self._dkernel is not None and self._dkernel is not self.kernel:
            self._dkernel.set_feedback(K, x_ref, tau_ref)
        nv = self.nv
        self.feedback = None if K is None else (
            np.array(K, float).reshape(nv, 2 * nv),
            np.zeros(self.nq + nv) if x_ref is None else np.array(x_ref, float).reshape(-1),
            np.zeros(nv) if tau_ref is None else np.array(tau_ref, float).reshape(-1))
