"""Frames, Jacobians, the centre of mass and centroidal momentum of a rigid tree.

The maths is the engine's, compiled once for every model (codegen/compiler/engine_kinematics.pxi) from what the
model's own kinematics pass leaves; this mixin of the tree runtime names the frames, checks the input and shapes
the output. Conventions (docs/guide/kinematics.md):

* 6-vectors are (angular; linear), as MuJoCo's ``mj_objectVelocity`` and Orin and Goswami's h_G = (k_G; l_G);
  pinocchio's Motion and Force are (linear; angular).
* ``reference``: ``"local"`` (the frame's axes, at its origin), ``"world"`` (world axes, at the world origin:
  spatial vectors) or ``"local_world_aligned"`` (world axes, at the frame's origin), as pinocchio's LOCAL, WORLD
  and LOCAL_WORLD_ALIGNED.
* ``frame_acceleration`` is the spatial acceleration (the time derivative of the spatial velocity, pinocchio's
  ``getFrameAcceleration``); ``frame_classical_acceleration`` is the acceleration of the body point at the
  reference point (``getFrameClassicalAcceleration``): at a frame's origin (local, local_world_aligned) the
  second derivative of its position.
"""
from __future__ import annotations

from typing import NamedTuple, Optional

import numpy as np

from ..algorithms.codes import Reference

REFERENCES = {"local": Reference.LOCAL, "world": Reference.WORLD,
              "local_world_aligned": Reference.LOCAL_WORLD_ALIGNED}
_REF = {k: int(v) for k, v in REFERENCES.items()}
_VELOCITY, _SPATIAL, _CLASSICAL = 0, 1, 2          # engine's frame_motion(what=...)


class CenterOfMass(NamedTuple):
    """The centre of mass of the whole tree, world frame."""

    position: np.ndarray                 # (3,) [m]
    velocity: np.ndarray                 # (3,) [m/s] (0 without u)
    acceleration: np.ndarray             # (3,) [m/s^2] (0 without udot; without u as well: at rest)
    mass: float                          # total mass [kg]


class Centroidal(NamedTuple):
    """Centroidal dynamics (Orin, Goswami and Lee 2013): momentum about the centre of mass G, world axes."""

    A_G: np.ndarray                      # (6, nv): centroidal momentum matrix, h_G = A_G u
    h_G: np.ndarray                      # (6,): (angular k_G [N m s]; linear l [N s])
    I_G: np.ndarray                      # (6, 6): centroidal composite inertia, angular block first
    h_G_dot: Optional[np.ndarray]        # (6,): dh_G/dt at udot (udot None: 0, so h_G_dot = A_G_dot u); None in
                                         # compute_all_terms
    com: np.ndarray                      # (3,): G [m]
    mass: float                          # [kg]
    A_G_dot: Optional[np.ndarray]        # (6, nv): dA_G/dt along u, h_G_dot = A_G udot + A_G_dot u (None: as above)


class AllTerms(NamedTuple):
    """compute_all_terms: the quantities a whole-body controller reads each step, from one state."""

    M: np.ndarray                        # (nv, nv) mass matrix
    nle: np.ndarray                      # (nv,) nonlinear effects: inverse_dynamics(q, u, 0) (C u + g - applied)
    J: np.ndarray                        # (nf, 6, nv) every frame's Jacobian, in `reference`
    com: CenterOfMass
    J_com: np.ndarray                    # (3, nv)
    centroidal: Centroidal


_com, _centroidal = CenterOfMass._make, Centroidal._make       # records from the engine's tuples (no __new__ call)


def _rows(a, n: int, name: str) -> np.ndarray:
    a = np.ascontiguousarray(a, dtype=float)
    if a.ndim == 1 and a.size == n:
        a = a.reshape(1, n)
    if a.ndim != 2 or a.shape[1] != n:
        raise ValueError(f"{name}: expected rows of {n} values, got shape {a.shape}")
    return a


class Kinematics:
    """Frames and whole-body quantities of a rigid tree (mixed into its runtime class)."""

    # ---------------------------------------------------------------- frames
    def _frame_table(self):
        """The frame table (names, index), given to the kernel as (body, X).

        Every body's frame, then the robot file's link frames (merged by fixed joints), then those of add_frame;
        X in each body's reference frame (the kernel's)."""
        if getattr(self, "_ftab", None) is not None:
            return self._ftab
        nb = len(self.body_names)
        G = [g for _, _, g in self.plan.body_frames()[:nb]]      # (gp, gr): reference frame in the body frame
        body_index = {n: k for k, n in enumerate(self.body_names)}
        names, body, X = [], [], []

        def add(name, on, pos, rot):
            pos, rot = np.asarray(pos, float).reshape(3), np.asarray(rot, float).reshape(3, 3)
            if on == "ground":
                b, R, p = -1, rot, pos
            else:
                b = body_index[on]
                gp, gr = G[b]
                R, p = gr.T @ rot, gr.T @ (pos - gp)
            names.append(name)
            body.append(b)
            X.append(np.concatenate([R.ravel(), p]))

        for n in self.body_names:
            add(n, n, np.zeros(3), np.eye(3))
        for n, (on, pos, rot) in (getattr(self.model, "frames", None) or {}).items():
            if n not in body_index and (on == "ground" or on in body_index):
                add(n, on, pos, rot)
        for n, (on, pos, rot) in getattr(self, "_user_frames", {}).items():
            if n in names:
                raise ValueError(f"add_frame: a frame named {n!r} exists")
            add(n, on, pos, rot)
        self.kernel.set_frames(np.array(body, dtype=np.int_), np.array(X, float).reshape(-1, 12))
        self._ftab = (names, {n: k for k, n in enumerate(names)})
        self._fids = {**self._ftab[1], **{k: k for k in range(len(names))}}     # the calls' fast path
        return self._ftab

    @property
    def frames(self) -> list:
        """The frames' names, in index order.

        Every body, the robot file's links (URDF links merged into their body by fixed joints), then those of
        add_frame."""
        return list(self._frame_table()[0])

    def add_frame(self, name: str, body: str, pos=None, rot=None) -> int:
        """Declare a frame fixed on a body (or 'ground'): its origin `pos` and rotation `rot` in the body frame.

        Parameters
        ----------
        name : str
            A name no other frame has.
        body : str
            The body (``body_names``) or ``"ground"``.
        pos : array_like, shape (3,), optional
            Origin in the body frame [m] (default 0).
        rot : array_like, shape (3, 3), optional
            Rotation frame -> body frame (default identity); must be orthonormal.

        Returns
        -------
        int
            The frame's index.
        """
        names = self._frame_table()[0]
        if not isinstance(name, str) or not name or name in names:
            raise ValueError(f"add_frame: {name!r} is not a new frame name")
        if body != "ground" and body not in self.body_names:
            raise ValueError(f"add_frame: no body {body!r} (bodies: {', '.join(self.body_names)}, or 'ground')")
        pos = np.zeros(3) if pos is None else np.asarray(pos, float).reshape(3)
        rot = np.eye(3) if rot is None else np.asarray(rot, float).reshape(3, 3)
        if not (np.isfinite(pos).all() and np.isfinite(rot).all()) or np.abs(rot.T @ rot - np.eye(3)).max() > 1e-9 \
                or np.linalg.det(rot) < 0:
            raise ValueError(f"add_frame {name!r}: pos must be finite and rot a rotation matrix")
        self._user_frames = {**getattr(self, "_user_frames", {}), name: (body, pos, rot)}
        self._ftab = self._fids = None
        return self._frame_table()[1][name]

    _fids: Optional[dict] = None        # frame name or index -> index (_frame_table)

    def _f(self, frame) -> int:
        """The index of a frame (a dict lookup; _frame explains a bad one)."""
        try:
            return self._fids[frame]
        except (KeyError, TypeError):
            return self._frame(frame)

    @staticmethod
    def _ref(reference) -> int:
        try:
            return _REF[reference]
        except (KeyError, TypeError):
            return Kinematics._reference(reference)

    def _frame(self, frame) -> int:
        names, index = self._frame_table()
        if isinstance(frame, (int, np.integer)) and not isinstance(frame, bool):
            if not 0 <= frame < len(names):
                raise IndexError(f"frame {frame}: the model has {len(names)} frames")
            return int(frame)
        if frame not in index:
            near = [n for n in names if str(frame).lower() in n.lower()][:8]
            raise ValueError(f"no frame {frame!r}" + (f" (did you mean {', '.join(map(repr, near))}?)" if near else
                                                     f" ({len(names)} frames: s.frames lists them)"))
        return index[frame]

    @staticmethod
    def _reference(reference) -> int:
        try:
            return int(REFERENCES[reference])
        except (KeyError, TypeError):
            raise ValueError(f"reference {reference!r}: one of {', '.join(map(repr, REFERENCES))}") from None

    # ---------------------------------------------------------------- frame kinematics
    def frame_placement(self, q, frame):
        """World rotation R (frame -> world) and origin p of a frame.

        Parameters
        ----------
        q : array_like, shape (nq,)
            Generalized coordinates.
        frame : str or int
            A name of ``frames`` or its index.

        Returns
        -------
        R : numpy.ndarray, shape (3, 3)
        p : numpy.ndarray, shape (3,) [m]
        """
        return self.kernel.frame_placement(q, self._f(frame))


    def frame_velocity(self, q, u, frame, reference: str = "local") -> np.ndarray:
        """The frame's spatial velocity (angular; linear) in `reference` (module docstring).

        Returns
        -------
        numpy.ndarray, shape (6,)
            Angular [rad/s], then linear [m/s] velocity of the reference point.
        """
        return self.kernel.frame_motion(q, u, None, self._f(frame), self._ref(reference), _VELOCITY)

    def frame_acceleration(self, q, u, udot, frame, reference: str = "local") -> np.ndarray:
        """The frame's spatial acceleration (angular; linear), d/dt of its spatial velocity, in `reference`.

        Not the second derivative of a point's position: see frame_classical_acceleration. With udot = 0 it is
        dJ/dt u, the Jacobian's drift term, without forming dJ/dt.

        Returns
        -------
        numpy.ndarray, shape (6,)
            [rad/s^2], [m/s^2].
        """
        return self.kernel.frame_motion(q, u, udot, self._f(frame), self._ref(reference), _SPATIAL)

    def frame_classical_acceleration(self, q, u, udot, frame, reference: str = "local") -> np.ndarray:
        """Angular and classical acceleration of the body point at the reference point.

        The classical acceleration is the second time derivative of that point's position; the reference point
        is the frame's origin for "local" and "local_world_aligned", the world origin for "world".

        Returns
        -------
        numpy.ndarray, shape (6,)
            [rad/s^2], [m/s^2].
        """
        return self.kernel.frame_motion(q, u, udot, self._f(frame), self._ref(reference), _CLASSICAL)

    def frame_jacobian(self, q, frame, reference: str = "local", point=None, out=None) -> np.ndarray:
        """J with frame_velocity(q, u, frame, reference) = J u: the frame's Jacobian (6 x nv, angular rows first).

        Parameters
        ----------
        point : array_like, shape (3,), optional
            The Jacobian of this point instead (frame axes, from the frame's origin; a point of a body: its body
            frame and the point in body coordinates), its linear rows the point's velocity.
        out : numpy.ndarray, shape (6, nv), optional
            Written in place (C-contiguous float64) and returned.
        """
        return self.kernel.frame_jacobian(q, self._f(frame), self._ref(reference), point, out)

    def frame_jacobian_dot(self, q, u, frame, reference: str = "local", point=None, out=None) -> np.ndarray:
        """dJ/dt along u of frame_jacobian(q, frame, reference, point) (6 x nv).

        The time derivative of the Jacobian in that reference, so that with udot the frame's spatial
        acceleration (frame_acceleration; "local_world_aligned": the classical acceleration of its origin,
        frame_classical_acceleration) is J udot + dJ/dt u. Computing dJ/dt u this way costs a matrix; the
        accelerations at udot = 0 give it directly."""
        return self.kernel.frame_jacobian_dot(q, u, self._f(frame), self._ref(reference), point, out)

    # ---------------------------------------------------------------- derivatives
    def frame_velocity_derivatives(self, q, u, frame, reference: str = "local"):
        """The derivatives of frame_velocity(q, u, frame, reference) with respect to q and u.

        Returns
        -------
        dv_dq : numpy.ndarray, shape (6, nv)
            In tangent coordinates, as the dynamics derivatives: column k moves q along velocity k (a quaternion
            rotated in its body's frame), pinocchio's getFrameVelocityDerivatives in our velocities.
        dv_du : numpy.ndarray, shape (6, nv)
            The frame's Jacobian in that reference.
        """
        f, r = self._f(frame), self._ref(reference)
        return self.kernel.frame_velocity_dq(q, u, f, r), self.kernel.frame_jacobian(q, f, r, None, None)

    def frame_acceleration_derivatives(self, q, u, udot, frame, reference: str = "local", classical: bool = False):
        """The derivatives of frame_acceleration (classical: frame_classical_acceleration) at (q, u, udot).

        Returns
        -------
        da_dq, da_du, da_dudot : numpy.ndarray, shape (6, nv) each
            In tangent coordinates; da_dudot is the frame's Jacobian (pinocchio's getFrameAccelerationDerivatives
            in our velocities).
        """
        f, r = self._f(frame), self._ref(reference)
        dq, du = self.kernel.frame_acceleration_derivatives(q, u, udot, f, r, bool(classical))
        return dq, du, self.kernel.frame_jacobian(q, f, r, None, None)

    def com_velocity_derivatives(self, q, u):
        """The derivatives of the centre of mass velocity: (dv_G/dq (3 x nv, tangent coordinates), J_com)."""
        return self.kernel.com_velocity_dq(q, u), self.kernel.com_jacobian(q)

    def centroidal_derivatives(self, q, u):
        """The derivatives of the centroidal momentum h_G = A_G u: (dh_G/dq (6 x nv, tangent coordinates), A_G).

        pinocchio's computeCentroidalDynamicsDerivatives' dh_dq, about the moving centre of mass."""
        return self.kernel.centroidal_dq(q, u), self.kernel.centroidal(q, u, None)[0]

    def centroidal_rate_derivatives(self, q, u, udot):
        """The derivatives of the centroidal momentum's rate dh_G/dt at (q, u, udot).

        Returns
        -------
        dhd_dq, dhd_du, dhd_dudot : numpy.ndarray, shape (6, nv) each
            Tangent coordinates; dhd_dudot is A_G (pinocchio's computeCentroidalDynamicsDerivatives dhdot_dq,
            dhdot_dv, dhdot_da in our velocities); the centre of mass acceleration's are the linear rows over the
            mass.
        """
        dq, du = self.kernel.centroidal_rate_derivatives(q, u, udot)
        return dq, du, self.kernel.centroidal(q, u, None)[0]

    # ---------------------------------------------------------------- batches: one compiled loop over states
    def _frames(self, frames):
        one = isinstance(frames, (str, int, np.integer))
        idx = np.array([self._frame(f) for f in ([frames] if one else list(frames))], dtype=np.int_)
        return one, idx

    def frame_placement_batch(self, Q, frames):
        """frame_placement at every row of Q (m x nq), for one frame or a list of them.

        Returns
        -------
        R : numpy.ndarray, shape (m, 3, 3), or (m, k, 3, 3) for a list of k frames
        p : numpy.ndarray, shape (m, 3), or (m, k, 3)
        """
        Q = _rows(Q, self.nq, "Q")
        one, idx = self._frames(frames)
        pose = np.empty((len(Q), len(idx), 12))
        self.kernel.frames_at(Q, idx, 0, pose, None)
        R, p = pose[..., :9].reshape(len(Q), len(idx), 3, 3), pose[..., 9:]
        return (R[:, 0], p[:, 0]) if one else (R, p)

    def frame_velocity_batch(self, Q, U, frames, reference: str = "local") -> np.ndarray:
        """frame_velocity at every row of Q (m x nq) and U (m x nv): (m, 6), or (m, k, 6) for a list of frames."""
        Q, U = _rows(Q, self.nq, "Q"), _rows(U, self.nv, "U")
        if len(U) != len(Q):
            raise ValueError(f"Q, U: {len(Q)} and {len(U)} rows")
        one, idx = self._frames(frames)
        pose, vel = np.empty((len(Q), len(idx), 12)), np.empty((len(Q), len(idx), 6))
        self.kernel.frames_at(np.hstack([Q, U]), idx, self._reference(reference), pose, vel)
        return vel[:, 0] if one else vel

    def frame_jacobian_batch(self, Q, frame, reference: str = "local") -> np.ndarray:
        """frame_jacobian at every row of Q (m x nq): (m, 6, nv)."""
        Q = _rows(Q, self.nq, "Q")
        out = np.empty((len(Q), 6, self.nv))
        self.kernel.frame_jacobians_at(Q, self._frame(frame), self._reference(reference), out)
        return out

    def center_of_mass_batch(self, Q, U=None):
        """The centre of mass at every row of Q (m x nq), and its velocity with U (m x nv).

        Returns
        -------
        position : numpy.ndarray, shape (m, 3)
        velocity : numpy.ndarray, shape (m, 3), or None without U
        """
        Q = _rows(Q, self.nq, "Q")
        X = Q if U is None else np.hstack([Q, _rows(U, self.nv, "U")])
        if len(X) != len(Q):
            raise ValueError("Q, U: not as many rows")
        out = np.empty((len(Q), 6))
        self.kernel.com_at(X, U is not None, out)
        return out[:, :3], (None if U is None else out[:, 3:])

    def frame_trajectories(self, X, frames) -> dict:
        """Result extras of simulate(frames=...) from its states X (rows q, u, ...).

        frame_names (k,), frame_position (nt, k, 3), frame_rotation (nt, k, 3, 3) (frame -> world) and
        frame_velocity (nt, k, 6: angular, then the origin's linear velocity, world axes: "local_world_aligned")."""
        X = np.ascontiguousarray(X, dtype=float)
        _, idx = self._frames(frames)
        if not len(idx):
            raise ValueError("frames: name at least one frame (s.frames lists them)")
        pose, vel = np.empty((len(X), len(idx), 12)), np.empty((len(X), len(idx), 6))
        self.kernel.frames_at(X, idx, int(Reference.LOCAL_WORLD_ALIGNED), pose, vel)
        names = self._frame_table()[0]
        return {"frame_names": np.array([names[i] for i in idx]), "frame_position": pose[..., 9:].copy(),
                "frame_rotation": pose[..., :9].reshape(len(X), len(idx), 3, 3), "frame_velocity": vel}

    # ---------------------------------------------------------------- whole body
    def center_of_mass(self, q, u=None, udot=None) -> CenterOfMass:
        """The centre of mass, its velocity and acceleration (world frame) and the total mass."""
        return _com(self.kernel.center_of_mass(q, u, udot))

    def com_jacobian(self, q, out=None) -> np.ndarray:
        """J_com (3 x nv): the centre of mass velocity is J_com u (into `out` when given)."""
        return self.kernel.com_jacobian(q, out)

    def centroidal(self, q, u, udot=None) -> Centroidal:
        """The centroidal momentum matrix A_G, its rate, the momentum h_G = A_G u, inertia I_G and rate dh_G/dt.

        Returns
        -------
        Centroidal
            With udot None, h_G_dot = A_G_dot u (pinocchio's ccrba, dccrba and
            computeCentroidalMomentumTimeVariation in one call).
        """
        A, Ad, h, hd, I, G, M = self.kernel.centroidal(q, u, udot)
        return _centroidal((A, h, I, hd, G, M, Ad))

    def subtree_mass(self, q):
        """Per body, the mass [kg] and centre of mass [m] of the subtree it carries (MuJoCo's subtree_com).

        Returns
        -------
        mass : numpy.ndarray, shape (nb,)
        com : numpy.ndarray, shape (nb, 3)
        """
        out = self.kernel.subtree_mass(q)
        nb = len(self.body_names)
        return out[:nb, 0].copy(), out[:nb, 1:].copy()

    def compute_all_terms(self, q, u, reference: str = "local") -> AllTerms:
        """Everything a whole-body controller reads each step at (q, u) (AllTerms).

        M, the nonlinear effects, every frame's Jacobian, the centre of mass and its Jacobian, and the centroidal
        quantities (pinocchio's computeAllTerms; TSID reads these each control step): M (the engine's CRBA), the
        frames and whole-body terms from one kinematics pass, the nonlinear effects from the model's RNEA. As computeAllTerms, no rates: the centroidal record's h_G_dot and A_G_dot
        are None (centroidal() has them)."""
        Mq, J, G, V, Jc, AG, h, I, M = self.kernel.all_terms(q, u, self._ref(reference))
        return AllTerms(Mq, self.inverse_dynamics(q, u, np.zeros(self.nv), 0.0), J, CenterOfMass(G, V, np.zeros(3), M),
                        Jc, Centroidal(AG, h, I, None, G, M, None))
