"""Model description: bodies, joints, force elements; YAML loading and validation.

A model is a tree of rigid bodies connected by joints to a parent (another body or ``ground``).
Everything a kernel needs as *numbers* (masses, placements, spring constants) stays an input of
the compiled module; everything that shapes the *code* (parent array, joint types, force element
kinds) is the model's topology, see :meth:`Model.topology_key`.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable, Dict, List, Optional

import numpy as np

from .joint_types import JOINT_TYPES, QUATERNION_JOINTS, SCALAR_JOINTS, JointType, names_where  # noqa: F401

GROUND = "ground"

FORCE_FUNCTIONS = ("constant", "sine", "step", "table")


from .checks import (LIMIT_SOLREF, LIMITS, ModelError, _check_count, _check_inertias, _check_rotations,  # noqa: F401
                     _mat3, _name, _normalised, _num, _numlist, _physical, _seq, _short, _solref, _too_many, _unit,
                     _vec, limits_text)
from .actuators import actuator_dict, validate_actuators  # noqa: E402
from .tendons import tendon_dict, validate_tendons  # noqa: E402
from .couplings import coupling_dict, validate_couplings  # noqa: E402
from .rotations import frame_to_axis, quat_to_rot, rot_axis_angle, rot_rpy, rot_to_quat  # noqa: F401,E402
from .massprops import check_mass_matrix  # noqa: E402


# ---------------------------------------------------------------- model objects

@dataclass
class Body:
    """A rigid body.

    Parameters
    ----------
    name : str
        Unique body name.
    mass : float
        Mass [kg] (0 for a massless helper body between joints).
    com : array_like, shape (3,), optional
        Centre of mass [m] in the body frame (default the origin).
    inertia : array_like, shape (3, 3), optional
        Inertia tensor [kg m^2] about the centre of mass, in the body frame (default the identity).
    """

    name: str
    mass: float
    com: np.ndarray = field(default_factory=lambda: np.zeros(3))       # in the body frame
    inertia: np.ndarray = field(default_factory=lambda: np.eye(3))      # about the com, body frame


@dataclass
class Placement:
    """A frame placed in another: position and rotation.

    Parameters
    ----------
    pos : array_like, shape (3,), optional
        Origin of the frame [m] in the enclosing frame (default zero).
    rot : array_like, shape (3, 3), optional
        Rotation matrix whose columns are the frame's axes in the enclosing frame (default the identity).
    """

    pos: np.ndarray = field(default_factory=lambda: np.zeros(3))
    rot: np.ndarray = field(default_factory=lambda: np.eye(3))


@dataclass
class Joint:
    """A joint between a parent (a body or ``ground``) and a child body.

    Parameters
    ----------
    name : str
        Unique joint name.
    type : str
        Joint type: a key of codegen.model.joint_types.JOINT_TYPES (revolute, prismatic, spherical, free, ...).
    parent, child : str
        Names of the parent body (or ``ground``) and of the child body.
    parent_frame, child_frame : Placement, optional
        The joint frame in the parent's and in the child's body frame (default: the body frames).
    axis : array_like, shape (3,), optional
        Revolute, prismatic or cylindrical axis, planar normal, universal joint's first axis (joint frame).
    axis2 : array_like, shape (3,), optional
        Universal joint's second axis (joint frame, at zero angles).
    q0 : array_like, shape (nq,), optional
        Initial coordinates [rad, m] (default: the joint type's zero pose).
    u0 : array_like, shape (nv,), optional
        Initial velocities [rad/s, m/s] (default zero).
    armature : array_like, shape (nv,), optional
        Rotor inertia per velocity coordinate [kg m^2 or kg], added to the mass matrix's diagonal.
    limits : array_like, shape (nv, 2), optional
        Lower and upper limit of each coordinate [rad, m] (scalar joints).
    limit_solref : array_like, shape (2,), optional
        The limits' time constant [s] and damping ratio (default 0.02, 1).
    friction : array_like, shape (nv,), optional
        Coulomb friction force per coordinate [N m or N] (scalar joints), regularised.
    """

    name: str
    type: str
    parent: str
    child: str
    parent_frame: Placement = field(default_factory=Placement)   # joint frame in the parent body frame
    child_frame: Placement = field(default_factory=Placement)    # joint frame in the child body frame
    axis: Optional[np.ndarray] = None      # revolute/prismatic/cylindrical axis, planar normal, universal 1st
    axis2: Optional[np.ndarray] = None     # universal 2nd axis (joint frame, at zero angles)
    q0: Optional[np.ndarray] = None
    u0: Optional[np.ndarray] = None
    armature: Optional[np.ndarray] = None  # rotor inertia per velocity coordinate (nv), added to M's diagonal
    limits: Optional[np.ndarray] = None    # nv x 2: lower, upper limit of each coordinate (scalar joints)
    limit_solref: Optional[np.ndarray] = None   # the limits' time constant [s] and damping ratio (default 0.02, 1)
    friction: Optional[np.ndarray] = None  # Coulomb friction force per coordinate (scalar joints), regularised

    @property
    def nq(self) -> int:
        """Number of coordinates of the joint's type.

        Returns
        -------
        int
            The joint's entries of q.
        """
        return JOINT_TYPES[self.type].nq

    @property
    def nv(self) -> int:
        """Number of velocity coordinates of the joint's type.

        Returns
        -------
        int
            The joint's entries of u.
        """
        return JOINT_TYPES[self.type].nv


@dataclass
class TimeFunction:
    """f(t) from a small closed set, evaluated inside compiled code.

    Parameters
    ----------
    kind : str, optional
        ``constant``, ``sine``, ``step`` or ``table`` (default constant).
    value : float, optional
        Constant: the value; step: the value after t0.
    amplitude, frequency, phase, offset : float, optional
        Sine: ``offset + amplitude sin(2 pi frequency t + phase)``, frequency in Hz, phase in rad.
    t0 : float, optional
        Step: the time [s] of the step.
    value_before : float, optional
        Step: the value before t0.
    t, y : array_like, shape (n,), optional
        Table: sample times [s] (increasing) and values, interpolated linearly and held constant outside.
    """

    kind: str = "constant"           # constant | sine | step | table
    value: float = 0.0               # constant; step: value after t0
    amplitude: float = 0.0           # sine: offset + amplitude*sin(2 pi f t + phase)
    frequency: float = 0.0
    phase: float = 0.0
    offset: float = 0.0
    t0: float = 0.0                  # step: value_before for t < t0, value after
    value_before: float = 0.0
    t: Optional[np.ndarray] = None   # table: linear interpolation, held constant outside
    y: Optional[np.ndarray] = None

    def __call__(self, t: float) -> float:
        """The function's value at time t [s]."""
        if self.kind == "constant":
            return self.value
        if self.kind == "sine":
            return self.offset + self.amplitude * math.sin(2 * math.pi * self.frequency * t + self.phase)
        if self.kind == "step":
            return self.value_before if t < self.t0 else self.value
        return float(np.interp(t, self.t, self.y))


@dataclass
class JointSpringDamper:
    """A linear spring-damper on the coordinates of one scalar joint.

    The generalized force is ``-stiffness (q - q_ref) - damping u`` per coordinate.

    Parameters
    ----------
    name : str
        Unique force element name.
    joint : str
        The joint it acts on (scalar joints only).
    stiffness : array_like, shape (nv,)
        Stiffness per coordinate [N m/rad or N/m].
    damping : array_like, shape (nv,)
        Damping per coordinate [N m s/rad or N s/m].
    q_ref : array_like, shape (nv,)
        Rest coordinates [rad or m].
    """

    name: str
    joint: str
    stiffness: np.ndarray            # per coordinate of the joint (scalar joints only)
    damping: np.ndarray
    q_ref: np.ndarray


@dataclass
class PointSpringDamper:
    """A spring-damper between two points of two bodies (or a body and ground).

    Parameters
    ----------
    name : str
        Unique force element name.
    body_a : str
        First body, or ``ground``.
    point_a : array_like, shape (3,)
        Attachment point [m] in body_a's frame (world frame for ground).
    body_b : str
        Second body.
    point_b : array_like, shape (3,)
        Attachment point [m] in body_b's frame.
    stiffness : float
        Stiffness [N/m].
    damping : float
        Damping [N s/m] along the line of the points.
    length : float
        Free length [m].
    """

    name: str
    body_a: str                      # body name or ground
    point_a: np.ndarray              # in body_a frame (world if ground)
    body_b: str
    point_b: np.ndarray
    stiffness: float
    damping: float
    length: float                    # free length


@dataclass
class JointForce:
    """A prescribed generalized force on one velocity coordinate of a joint.

    Parameters
    ----------
    name : str
        Unique force element name.
    joint : str
        The joint it acts on.
    dof : int
        Index into the joint's velocity coordinates.
    function : TimeFunction
        The force [N or N m] as a function of time.
    """

    name: str
    joint: str
    dof: int                         # index into the joint's velocity coordinates
    function: TimeFunction


@dataclass
class Model:
    """A rigid-body tree: bodies, joints, force elements, and what closes or drives it.

    Built from a file by load_model, from a mapping by model_from_dict, or directly; validated on
    construction (ModelError names the field).

    Parameters
    ----------
    name : str
        Model name.
    bodies : list of Body
        The bodies.
    joints : list of Joint
        The tree's joints, each connecting a parent (a body or ``ground``) to a child body.
    gravity : array_like, shape (3,), optional
        Gravitational acceleration [m/s^2] (default (0, -9.81, 0)).
    springs : list of JointSpringDamper, optional
        Joint spring-dampers.
    point_springs : list of PointSpringDamper, optional
        Point-to-point spring-dampers.
    joint_forces : list of JointForce, optional
        Prescribed joint forces.
    source : str, optional
        Where the model came from (a file name), for messages.
    tau_hook : callable, optional
        Python API only: ``hook(t, q, u)`` returns extra generalized forces, shape (nv,) [N, N m].
    simulation : dict, optional
        The file's validated ``simulation:`` defaults.
    cuts : list of Joint, optional
        Loop-closing (cut) joints, the file's ``loops:`` section.
    actuators : list, optional
        codegen.model.actuators.Actuator, in control order.
    tendons : list, optional
        codegen.model.tendons.Tendon (fixed tendons).
    couplings : list, optional
        codegen.model.couplings.Coupling (equality constraints).
    allow_nonphysical_inertia : bool, optional
        Warn about inertias that break the triangle inequality instead of refusing them.

    Raises
    ------
    ModelError
        A field is invalid; the message names the file and the field.
    """

    name: str
    bodies: List[Body]
    joints: List[Joint]
    gravity: np.ndarray = field(default_factory=lambda: np.array([0.0, -9.81, 0.0]))
    springs: List[JointSpringDamper] = field(default_factory=list)
    point_springs: List[PointSpringDamper] = field(default_factory=list)
    joint_forces: List[JointForce] = field(default_factory=list)
    source: str = "<model>"
    tau_hook: Optional[Callable] = None   # Python API only: tau_extra = hook(t, q, u)
    simulation: dict = field(default_factory=dict)   # the file's validated `simulation:` defaults (model/simulation.py)
    cuts: List[Joint] = field(default_factory=list)  # loop-closing (cut) joints, the file's `loops:` section
    actuators: list = field(default_factory=list)    # codegen.model.actuators.Actuator, in control order
    tendons: list = field(default_factory=list)      # codegen.model.tendons.Tendon (fixed tendons)
    couplings: list = field(default_factory=list)    # codegen.model.couplings.Coupling (equality rows)
    allow_nonphysical_inertia: bool = False          # inertias that break the triangle inequality: warn, not refuse

    def __post_init__(self):
        validate(self)

    # -- derived facts -------------------------------------------------
    def body(self, name: str) -> Body:
        """The body named `name`.

        Parameters
        ----------
        name : str
            A body name.

        Returns
        -------
        Body
            The body.

        Raises
        ------
        KeyError
            No body has that name.
        """
        return self._bodies[name]

    @property
    def nq(self) -> int:
        """Number of generalized coordinates (the joints' nq summed).

        Returns
        -------
        int
            The length of q.
        """
        return sum(j.nq for j in self.joints)

    @property
    def nv(self) -> int:
        """Number of generalized velocities (the joints' nv summed).

        Returns
        -------
        int
            The length of u.
        """
        return sum(j.nv for j in self.joints)

    @property
    def coord_names(self) -> List[str]:
        """Names of the generalized coordinates, ``JOINT.COORDINATE`` in the order of q.

        Returns
        -------
        list of str
            nq names.
        """
        return [f"{j.name}.{c}" for j in self.joints for c in JOINT_TYPES[j.type].coordinates]

    @property
    def velocity_names(self) -> List[str]:
        """Names of the generalized velocities, ``JOINT.VELOCITY`` in the order of u.

        Returns
        -------
        list of str
            nv names.
        """
        return [f"{j.name}.{c}" for j in self.joints for c in JOINT_TYPES[j.type].velocities]

    @property
    def armature(self) -> np.ndarray:
        """Rotor inertia per velocity coordinate (zeros where a joint has none).

        Returns
        -------
        numpy.ndarray, shape (nv,)
            Rotor inertia [kg m^2 or kg] per velocity coordinate.
        """
        return np.concatenate([j.armature if j.armature is not None else np.zeros(j.nv) for j in self.joints] +
                              [np.zeros(0)])

    def q_offsets(self):
        """Where each joint's coordinates and velocities start in q and u.

        Returns
        -------
        list of tuple of int
            (offset in q, offset in u) per joint, in the order of ``joints``.
        """
        iq, iv, out = 0, 0, []
        for j in self.joints:
            out.append((iq, iv))
            iq += j.nq
            iv += j.nv
        return out

    def initial_state(self):
        """The initial state: each joint's q0 and u0, or its zero pose at rest.

        Returns
        -------
        q0 : numpy.ndarray, shape (nq,)
            Initial coordinates [rad, m].
        u0 : numpy.ndarray, shape (nv,)
            Initial velocities [rad/s, m/s].
        """
        q, u = [], []
        for j in self.joints:
            q.extend(j.q0 if j.q0 is not None else default_q(j.type))
            u.extend(j.u0 if j.u0 is not None else np.zeros(j.nv))
        return np.array(q, float), np.array(u, float)

    def topology_key(self) -> dict:
        """What shapes the generated code: the tree and joint types, the force element kinds.

        Returns
        -------
        dict
            JSON-serialisable facts of the topology; part of the build key.
        """
        return {
            "joints": [[j.type, j.parent, j.child] for j in self.joints],
            "loops": [[c.type, c.parent, c.child] for c in self.cuts],
            "springs": [s.joint for s in self.springs],
            "point_springs": [[p.body_a, p.body_b] for p in self.point_springs],
            "joint_forces": [[f.joint, f.dof, f.function.kind,
                              0 if f.function.t is None else len(f.function.t)] for f in self.joint_forces],
            "actuators": [[a.joint, a.tendon, a.dof, a.ctrl.kind, 0 if a.ctrl.t is None else len(a.ctrl.t), a.dynamics]
                          for a in self.actuators],
            "tendons": [[[tj.joint, tj.dof] for tj in t.joints] + [t.limits is not None] for t in self.tendons],
            "limits": [j.name for j in self.joints if j.limits is not None],
            "friction": [j.name for j in self.joints if j.friction is not None],
            **({"couplings": [[[[j, d] for j, d, _ in side] for side in c.sides(self)] for c in self.couplings]}
               if self.couplings else {}),
        }

    def to_dict(self) -> dict:
        """Round-trippable plain description (as in the YAML format)."""
        return model_dict(self)


# ---------------------------------------------------------------- plain description (YAML export, to_dict)

def _f(x):
    return [_f(v) for v in x] if isinstance(x, (list, tuple, np.ndarray)) else float(x)


def _armature(j: Joint, src, fld, what="armature") -> Optional[np.ndarray]:
    """A joint's armature (or friction), or None when all are zero.

    A joint's armature (or friction): one number for every velocity coordinate, or one per coordinate; >= 0;
    None when all are zero (the kernels then carry zeros)."""
    if not j.nv:
        raise ModelError(f"a {j.type} joint has no velocity coordinate to carry {what}", src, fld)
    a = getattr(j, what)
    if isinstance(a, (int, float, np.floating, np.integer)) and not isinstance(a, bool):
        a = [a] * j.nv
    a = _vec(a, j.nv, src, fld)
    if np.any(a < 0):
        raise ModelError(f"{what} must be >= 0, got {_short(a.tolist())}", src, fld)
    return a if np.any(a) else None


def _limits(j: Joint, src, f) -> None:
    """A joint's limits: [lower, upper] per coordinate.

    (one pair for a one-coordinate joint), lower < upper;
    limit_solref: time constant > 0 and damping ratio > 0."""
    if not JOINT_TYPES[j.type].scalar:
        raise ModelError(f"a {j.type} joint takes no limits (limits bound scalar coordinates: "
                         f"{', '.join(names_where('scalar'))})", src, f + ".limits")
    if j.limits is None:
        raise ModelError("limit_solref without limits", src, f + ".limit_solref")
    v = j.limits
    if j.nv == 1 and isinstance(v, (list, tuple, np.ndarray)) and len(v) == 2 and not isinstance(v[0], (list, tuple,
                                                                                                    np.ndarray)):
        v = [v]
    seq = _seq(v)
    if seq is None or len(seq) != j.nv:
        raise ModelError(f"expected {j.nv} pair(s) [lower, upper], got {_short(j.limits)}", src, f + ".limits")
    lim = np.array([_vec(x, 2, src, f"{f}.limits[{k}]") for k, x in enumerate(seq)])
    bad = np.flatnonzero(lim[:, 0] >= lim[:, 1])
    if bad.size:
        raise ModelError(f"lower must be below upper, got {_short(lim[bad[0]].tolist())}", src, f"{f}.limits")
    j.limits = lim
    j.limit_solref = _solref(j.limit_solref, src, f + ".limit_solref")


def model_dict(model: Model) -> dict:
    """Everything of a Model as the YAML schema (README "Model files"): loads back to the same model."""
    def frame(p):
        out = {"pos": _f(p.pos)}
        if not np.array_equal(p.rot, np.eye(3)):
            out["matrix"] = _f(p.rot)
        return out

    d = {"name": model.name, "gravity": _f(model.gravity),
         "bodies": [{"name": b.name, "mass": float(b.mass), "com": _f(b.com), "inertia": _f(b.inertia)}
                    for b in model.bodies], "joints": []}
    if model.allow_nonphysical_inertia:
        d["allow_nonphysical_inertia"] = True
    cut_ids = {id(c) for c in model.cuts}
    for j in model.joints + model.cuts:
        e = {"name": j.name, "type": j.type, "parent": j.parent, "child": j.child,
             "parent_frame": frame(j.parent_frame), "child_frame": frame(j.child_frame)}
        for k in ("axis", "axis2", "q0", "u0", "armature", "limits", "limit_solref", "friction"):
            if getattr(j, k) is not None:
                e[k] = _f(getattr(j, k))
        d.setdefault("loops" if id(j) in cut_ids else "joints", []).append(e)
    forces = []
    for s in model.springs:
        forces.append({"name": s.name, "type": "joint_spring_damper", "joint": s.joint, "stiffness": _f(s.stiffness),
                       "damping": _f(s.damping), "q_ref": _f(s.q_ref)})
    for p in model.point_springs:
        forces.append({"name": p.name, "type": "point_spring_damper", "body_a": p.body_a, "point_a": _f(p.point_a),
                       "body_b": p.body_b, "point_b": _f(p.point_b), "stiffness": float(p.stiffness),
                       "damping": float(p.damping), "length": float(p.length)})
    for fe in model.joint_forces:
        forces.append({"name": fe.name, "type": "joint_force", "joint": fe.joint, "dof": int(fe.dof),
                       "value": function_dict(fe.function)})
    if forces:
        d["forces"] = forces
    if model.tendons:
        d["tendons"] = [tendon_dict(t) for t in model.tendons]
    if model.actuators:
        d["actuators"] = [actuator_dict(a, function_dict) for a in model.actuators]
    if model.couplings:
        d["couplings"] = [coupling_dict(c) for c in model.couplings]
    if model.simulation:
        d["simulation"] = dict(model.simulation)
    return d


def function_dict(fn: TimeFunction) -> dict:
    """The file form of a time function (a joint force's value, an actuator's ctrl)."""
    return {"constant": lambda: {"constant": float(fn.value)},
            "sine": lambda: {"sine": {"amplitude": float(fn.amplitude), "frequency": float(fn.frequency),
                                      "phase": float(fn.phase), "offset": float(fn.offset)}},
            "step": lambda: {"step": {"t0": float(fn.t0), "before": float(fn.value_before), "after": float(fn.value)}},
            "table": lambda: {"table": {"t": _f(fn.t), "value": _f(fn.y)}}}[fn.kind]()


def default_q(jtype: str) -> np.ndarray:
    """The zero pose of a joint type: zero coordinates, identity quaternion."""
    jt = JOINT_TYPES[jtype]
    q = np.zeros(jt.nq)
    if jt.quaternion is not None:
        q[jt.quaternion] = 1.0
    return q


def validate(model: Model) -> None:
    """Check a model; raise ModelError naming the source and the field. Normalises vectors in place."""
    src = model.source
    names = {}
    model.name = _name(model.name, src, "name", "model name")
    model.gravity = _vec(model.gravity, 3, src, "gravity")
    _check_count(model.bodies, "bodies", "bodies", src, "bodies")
    _check_count(model.joints, "joints", "bodies", src, "joints")
    for k in ("springs", "point_springs", "joint_forces"):
        _check_count(getattr(model, k), "force elements", "forces", src, "forces")
    nforces = len(model.springs) + len(model.point_springs) + len(model.joint_forces)
    if nforces > LIMITS["forces"]:
        raise _too_many(nforces, "force elements", "forces", src, "forces")
    if not model.bodies:
        raise ModelError("a model needs at least one body", src, "bodies")
    for i, b in enumerate(model.bodies):
        f = f"bodies[{i}]"
        if not isinstance(b, Body):
            raise ModelError(f"expected a Body, got {_short(b)}", src, f)
        if not isinstance(b.name, str) or not b.name:
            raise ModelError("missing name", src, f + ".name")
        _name(b.name, src, f + ".name", "body name")
        if b.name == GROUND:
            raise ModelError(f"'{GROUND}' is reserved", src, f + ".name")
        if b.name in names:
            raise ModelError(f"duplicate name {b.name!r}", src, f + ".name")
        names[b.name] = "body"
        f = f"bodies[{b.name}]"
        b.mass = _num(b.mass, src, f + ".mass", nonneg=True, what="mass")   # 0: massless (checked below)
        b.com = _vec(b.com, 3, src, f + ".com")
        b.inertia = _mat3(b.inertia, src, f + ".inertia")
        for what, v in (("mass", b.mass), ("com", b.com), ("inertia", b.inertia)):
            _physical(v, src, f"{f}.{what}")
    odd = _check_inertias([b.inertia for b in model.bodies], src, [f"bodies[{b.name}].inertia" for b in model.bodies],
                          triangle=not model.allow_nonphysical_inertia)
    if odd:                                  # robot files: loaded as pinocchio does, with a warning naming the bodies
        import warnings
        from .robotfiles import ModelWarning
        warnings.warn(f"{src}: the inertias of {', '.join(f[7:-9] for f in odd[:5])}{' ...' if len(odd) > 5 else ''} "
                      "violate the triangle inequality (a + b >= c of the principal moments): no rigid body has "
                      "them; loaded as they are", ModelWarning, stacklevel=3)
    model._bodies = {b.name: b for b in model.bodies}

    children, rots, rot_fields = {}, [], []
    for i, j in enumerate(model.joints):
        f = f"joints[{i}]"
        if not isinstance(j, Joint):
            raise ModelError(f"expected a Joint, got {_short(j)}", src, f)
        if not isinstance(j.name, str) or not j.name:
            raise ModelError("missing name", src, f + ".name")
        _name(j.name, src, f + ".name", "joint name")
        if j.name in names:
            raise ModelError(f"duplicate name {j.name!r}", src, f + ".name")
        names[j.name] = "joint"
        f = f"joints[{j.name}]"
        if not isinstance(j.type, str) or j.type not in JOINT_TYPES:
            raise ModelError(f"unknown joint type {_short(j.type)} (known: {', '.join(JOINT_TYPES)})", src, f + ".type")
        if not isinstance(j.parent, str) or (j.parent != GROUND and j.parent not in model._bodies):
            raise ModelError(f"parent {_short(j.parent)} is not a body (nor '{GROUND}')", src, f + ".parent")
        if not isinstance(j.child, str) or j.child not in model._bodies:
            raise ModelError(f"child {_short(j.child)} is not a body", src, f + ".child")
        if j.child == j.parent:
            raise ModelError("a body cannot be joined to itself", src, f + ".child")
        if j.child in children:
            raise ModelError(f"body {j.child!r} already has parent joint {children[j.child].name!r} "
                             "(a tree gives each body one parent joint)", src, f + ".child")
        children[j.child] = j
        _check_joint_frames(j, src, f, rots, rot_fields)
        if j.q0 is not None:
            j.q0 = _vec(j.q0, j.nq, src, f + ".q0")
            o = JOINT_TYPES[j.type].quaternion
            if o is not None:
                j.q0[o:o + 4] = _normalised(j.q0[o:o + 4], src, f + ".q0", "quaternion part of q0 must be non-zero")
        if j.u0 is not None:
            j.u0 = _vec(j.u0, j.nv, src, f + ".u0")
        if j.armature is not None:
            j.armature = _armature(j, src, f + ".armature")
        if j.limits is not None or j.limit_solref is not None:
            _limits(j, src, f)
        if j.friction is not None:
            if not JOINT_TYPES[j.type].scalar:
                raise ModelError(f"a {j.type} joint takes no friction (Coulomb friction acts on scalar coordinates)",
                                 src, f + ".friction")
            j.friction = _armature(j, src, f + ".friction", "friction")

    _check_rotations(rots, src, rot_fields)
    for b in model.bodies:
        if b.name not in children:
            raise ModelError(f"body {b.name!r} has no parent joint: every body must be connected "
                             f"to '{GROUND}' through joints", src, f"bodies[{b.name}]")
    # every body must reach ground without a cycle (each body walked once: O(n))
    grounded = {GROUND}
    for b in model.bodies:
        path, seen, cur = [], set(), b.name
        while cur not in grounded:
            if cur in seen:
                raise ModelError(f"joints form a cycle through body {cur!r} (the joints must form a tree; "
                                 "close a loop with a cut joint in the `loops:` section)", src, f"joints[{children[cur].name}].parent")
            seen.add(cur)
            path.append(cur)
            cur = children[cur].parent
        grounded.update(path)
    order_joints(model)
    check_mass_matrix(model)         # massless bodies and point masses: the mass matrix must stay regular
    _check_cuts(model, names)

    joints = {j.name: j for j in model.joints}

    def force_name(x, i, kind):
        if not isinstance(x, kind):
            raise ModelError(f"expected a {kind.__name__}, got {_short(x)}", src, f"forces[{i}]")
        return _name(x.name, src, f"forces[{i}].name", "force name")

    def force_joint(x, f):
        j = joints.get(x.joint) if isinstance(x.joint, str) else None
        if j is None:
            raise ModelError(f"joint {_short(x.joint)} does not exist", src, f + ".joint")
        return j

    for i, s in enumerate(model.springs):
        f = f"forces[{force_name(s, i, JointSpringDamper)}]"
        j = force_joint(s, f)
        if not JOINT_TYPES[j.type].scalar:
            raise ModelError(f"a joint spring-damper needs a joint with scalar coordinates, not {j.type}",
                             src, f + ".joint")
        for k in ("stiffness", "damping", "q_ref"):
            v = getattr(s, k)
            seq = _seq(v)
            if seq is None:
                v = np.full(j.nv, _num(v, src, f"{f}.{k}"))
            elif len(seq) == 1 and j.nv > 1:
                v = np.full(j.nv, _num(seq[0], src, f"{f}.{k}[0]"))
            setattr(s, k, _vec(v, j.nv, src, f"{f}.{k}"))
        if np.any(s.stiffness < 0) or np.any(s.damping < 0):
            raise ModelError("stiffness and damping must be non-negative", src, f)
    for i, p in enumerate(model.point_springs):
        f = f"forces[{force_name(p, i, PointSpringDamper)}]"
        for side in ("body_a", "body_b"):
            nm = getattr(p, side)
            if not isinstance(nm, str) or (nm != GROUND and nm not in model._bodies):
                raise ModelError(f"{_short(nm)} is not a body (nor '{GROUND}')", src, f"{f}.{side}")
        if p.body_a == p.body_b:
            raise ModelError("both ends on the same body", src, f + ".body_b")
        p.point_a = _vec(p.point_a, 3, src, f + ".point_a")
        p.point_b = _vec(p.point_b, 3, src, f + ".point_b")
        for k in ("stiffness", "damping", "length"):
            setattr(p, k, _num(getattr(p, k), src, f"{f}.{k}", nonneg=True, what=k))
    for i, fe in enumerate(model.joint_forces):
        f = f"forces[{force_name(fe, i, JointForce)}]"
        j = force_joint(fe, f)
        fe.dof = _num(fe.dof, src, f + ".dof", integer=True)
        if not (0 <= fe.dof < j.nv):
            raise ModelError(f"dof {fe.dof} out of range for a {j.type} joint ({j.nv} velocities)", src, f + ".dof")
        _check_function(fe.function, src, f, "value")
    fnames = [x.name for x in (*model.springs, *model.point_springs, *model.joint_forces)]
    for nm in fnames:
        if nm in names:
            raise ModelError(f"duplicate name {nm!r}", src, f"forces[{nm}].name")
        names[nm] = "force"
    if model.tendons:
        _check_count(model.tendons, "tendons", "forces", src, "tendons")
        validate_tendons(model, SCALAR_JOINTS)
        for t in model.tendons:
            if t.name in names:
                raise ModelError(f"duplicate name {t.name!r}", src, f"tendons[{t.name}].name")
            names[t.name] = "tendon"
    if model.actuators:
        _check_count(model.actuators, "actuators", "forces", src, "actuators")
        validate_actuators(model, lambda fn, f: _check_function(fn, src, f, "ctrl"), SCALAR_JOINTS,
                           lambda: TimeFunction("constant", value=0.0))
        for a in model.actuators:
            if a.name in names:
                raise ModelError(f"duplicate name {a.name!r}", src, f"actuators[{a.name}].name")
            names[a.name] = "actuator"
    if model.couplings:
        validate_couplings(model, SCALAR_JOINTS, names)


def _check_function(fn, src, f, key) -> None:
    """Check a TimeFunction of element f at f.key.

    A TimeFunction (a joint force's value, an actuator's ctrl) of element f at f.key: numbers finite, tables
    increasing (table faults named at f.table)."""
    if not isinstance(fn, TimeFunction):
        raise ModelError(f"expected a TimeFunction, got {_short(fn)}", src, f"{f}.{key}")
    if not isinstance(fn.kind, str) or fn.kind not in FORCE_FUNCTIONS:
        raise ModelError(f"unknown function {_short(fn.kind)} (known: {', '.join(FORCE_FUNCTIONS)})", src, f)
    fv = f"{f}.{key}.{fn.kind}"
    for k in ("value", "amplitude", "frequency", "phase", "offset", "t0", "value_before"):
        setattr(fn, k, _num(getattr(fn, k), src, f"{fv}.{k}"))
    if fn.kind == "table":
        if fn.t is None or fn.y is None:
            raise ModelError("table needs t and value lists of equal length >= 2", src, f + ".table")
        fn.t = _numlist(fn.t, src, fv + ".t")
        fn.y = _numlist(fn.y, src, fv + ".value")
        if fn.t.shape != fn.y.shape or len(fn.t) < 2:
            raise ModelError("table needs t and value lists of equal length >= 2", src, f + ".table")
        if np.any(np.diff(fn.t) <= 0):
            raise ModelError("table t must be strictly increasing", src, f + ".table.t")


def _check_joint_frames(j: Joint, src: str, f: str, rots: list, rot_fields: list) -> None:
    """Placements and axes of a tree or cut joint (normalised in place); rotations collected for one check."""
    for side in ("parent_frame", "child_frame"):
        p = getattr(j, side)
        if not isinstance(p, Placement):
            raise ModelError(f"expected a Placement, got {_short(p)}", src, f"{f}.{side}")
        p.pos = _vec(p.pos, 3, src, f"{f}.{side}.pos")
        _physical(p.pos, src, f"{f}.{side}.pos")
        p.rot = _mat3(p.rot, src, f"{f}.{side}.rot")
        rots.append(p.rot)
        rot_fields.append(f"{f}.{side}")
    jt = JOINT_TYPES[j.type]
    if jt.needs_axis:
        j.axis = _unit(_vec(j.axis if j.axis is not None else [0, 0, 1], 3, src, f + ".axis"), src, f + ".axis")
    elif j.axis is not None:
        raise ModelError(f"a {j.type} joint takes no axis", src, f + ".axis")
    if jt.needs_axis2:
        if j.axis2 is None:
            j.axis2 = np.array([1.0, 0, 0]) if abs(j.axis[0]) < 0.9 else np.array([0, 1.0, 0])
            j.axis2 = np.cross(j.axis, np.cross(j.axis2, j.axis))
        j.axis2 = _unit(_vec(j.axis2, 3, src, f + ".axis2"), src, f + ".axis2")
        if abs(j.axis @ j.axis2) > 1e-9:
            raise ModelError(f"{j.type} joint axes must be perpendicular", src, f + ".axis2")
    elif j.axis2 is not None:
        raise ModelError(f"a {j.type} joint takes no axis2", src, f + ".axis2")


def _check_cuts(model: Model, names: dict) -> None:
    """The `loops:` section: cut joints between two bodies of the tree (or a body and ground)."""
    src = model.source
    rots, rot_fields = [], []
    if len(model.cuts) > LIMITS["bodies"]:
        raise _too_many(len(model.cuts), "loop-closing joints", "bodies", src, "loops")
    for i, c in enumerate(model.cuts):
        f = f"loops[{i}]"
        if not isinstance(c, Joint):
            raise ModelError(f"expected a Joint, got {_short(c)}", src, f)
        _name(c.name, src, f + ".name", "joint name")
        if c.name in names:
            raise ModelError(f"duplicate name {c.name!r}", src, f + ".name")
        names[c.name] = "cut joint"
        f = f"loops[{c.name}]"
        if not isinstance(c.type, str) or c.type not in JOINT_TYPES or not JOINT_TYPES[c.type].loop_closing:
            raise ModelError(f"a loop-closing joint is one of {', '.join(names_where('loop_closing'))}, "
                             f"not {_short(c.type)} (a free joint closes nothing)", src, f + ".type")
        for side in ("parent", "child"):
            b = getattr(c, side)
            if not isinstance(b, str) or (b not in model._bodies and not (side == "parent" and b == GROUND)):
                raise ModelError(f"{side} {_short(b)} is not a body of the tree" +
                                 (f" (nor '{GROUND}')" if side == "parent" else ""), src, f"{f}.{side}")
        if c.parent == c.child:
            raise ModelError("a loop-closing joint needs two different bodies", src, f + ".child")
        for k in ("armature", "limits", "friction"):
            if getattr(c, k) is not None:
                raise ModelError(f"a loop-closing joint has no coordinates to carry {k}", src, f"{f}.{k}")
        if c.q0 is not None or c.u0 is not None:
            raise ModelError("a loop-closing joint has no coordinates of its own (it adds constraints; its "
                             "coordinate follows from the tree's)", src, f + (".q0" if c.q0 is not None else ".u0"))
        _check_joint_frames(c, src, f, rots, rot_fields)
    _check_rotations(rots, src, rot_fields)


def order_joints(model: Model) -> None:
    """Reorder joints (and bodies) so every parent precedes its children, keeping file order otherwise."""
    kids: Dict[str, List[Joint]] = {}
    for j in model.joints:
        kids.setdefault(j.parent, []).append(j)
    order: List[Joint] = []
    stack = list(reversed(kids.get(GROUND, [])))
    while stack:                       # depth first: chains stay contiguous
        j = stack.pop()
        order.append(j)
        stack.extend(reversed(kids.get(j.child, [])))
    model.joints = order
    model.bodies = [model._bodies[j.child] for j in order]
