"""Model files: YAML (safe loader) or JSON -> validated Model (rigid tree) or BeamModel (flexible beams)."""
from __future__ import annotations

import json
import os

import numpy as np

from .beams import beam_model_from_dict
from .core import (FORCE_FUNCTIONS, Body, Joint, JointForce, JointSpringDamper, Model, ModelError, Placement,
                   PointSpringDamper, TimeFunction, _mat3, _unit, _vec)
from .rotations import quat_to_rot, rot_axis_angle, rot_rpy


def _placement(d, source, fld) -> Placement:
    if d is None:
        return Placement()
    if not isinstance(d, dict):
        raise ModelError("expected a mapping with pos and one of rpy/quat/matrix/axis_angle", source, fld)
    unknown = set(d) - {"pos", "rpy", "quat", "matrix", "axis_angle"}
    if unknown:
        raise ModelError(f"unknown keys {sorted(unknown)}", source, fld)
    pos = _vec(d.get("pos", [0, 0, 0]), 3, source, fld + ".pos")
    rots = [k for k in ("rpy", "quat", "matrix", "axis_angle") if k in d]
    if len(rots) > 1:
        raise ModelError(f"give one rotation, not {rots}", source, fld)
    R = np.eye(3)
    if rots:
        k = rots[0]
        if k == "rpy":
            R = rot_rpy(_vec(d[k], 3, source, f"{fld}.rpy"))
        elif k == "quat":
            qv = _vec(d[k], 4, source, f"{fld}.quat")
            if np.linalg.norm(qv) < 1e-12:
                raise ModelError("quaternion must be non-zero", source, f"{fld}.quat")
            R = quat_to_rot(qv)
        elif k == "axis_angle":
            v = _vec(d[k], 4, source, f"{fld}.axis_angle")
            R = rot_axis_angle(_unit(v[:3], source, f"{fld}.axis_angle"), v[3])
        else:
            R = _mat3(d[k], source, f"{fld}.matrix")
    return Placement(pos, R)


def _time_function(d, source, fld) -> TimeFunction:
    if isinstance(d, (int, float)):
        return TimeFunction("constant", value=float(d))
    if not isinstance(d, dict) or len(set(d) & set(FORCE_FUNCTIONS)) != 1:
        raise ModelError(f"expected one of {FORCE_FUNCTIONS}", source, fld)
    kind = next(k for k in FORCE_FUNCTIONS if k in d)
    v = d[kind]
    try:
        if kind == "constant":
            return TimeFunction(kind, value=float(v))
        if kind == "sine":
            return TimeFunction(kind, amplitude=float(v.get("amplitude", 0)), frequency=float(v.get("frequency", 0)),
                                phase=float(v.get("phase", 0)), offset=float(v.get("offset", 0)))
        if kind == "step":
            return TimeFunction(kind, t0=float(v.get("t0", 0)), value_before=float(v.get("before", 0)),
                                value=float(v["after"]))
        return TimeFunction(kind, t=np.asarray(v["t"], float), y=np.asarray(v["value"], float))
    except (KeyError, TypeError, ValueError, AttributeError) as e:
        raise ModelError(f"bad {kind} parameters: {e}", source, f"{fld}.{kind}") from None


_TOP_KEYS = {"name", "gravity", "bodies", "joints", "forces"}
_BODY_KEYS = {"name", "mass", "com", "inertia"}
_JOINT_KEYS = {"name", "type", "parent", "child", "parent_frame", "child_frame", "axis", "axis2", "q0", "u0"}


def _check_keys(d, allowed, source, fld):
    if not isinstance(d, dict):
        raise ModelError("expected a mapping", source, fld)
    unknown = set(d) - allowed
    if unknown:
        raise ModelError(f"unknown keys {sorted(unknown)} (allowed: {sorted(allowed)})", source, fld)


def model_from_dict(d: dict, source: str = "<model>") -> Model:
    _check_keys(d, _TOP_KEYS, source, "<top level>")
    for k in ("bodies", "joints"):
        if k not in d:
            raise ModelError("missing", source, k)
        if not isinstance(d[k], list):
            raise ModelError("expected a list", source, k)
    bodies, joints = [], []
    for i, b in enumerate(d["bodies"]):
        _check_keys(b, _BODY_KEYS, source, f"bodies[{i}]")
        for k in ("name", "mass"):
            if k not in b:
                raise ModelError("missing", source, f"bodies[{i}].{k}")
        bodies.append(Body(b["name"], b["mass"], b.get("com", [0, 0, 0]), b.get("inertia", [[1, 0, 0], [0, 1, 0], [0, 0, 1]])))
    for i, j in enumerate(d["joints"]):
        _check_keys(j, _JOINT_KEYS, source, f"joints[{i}]")
        for k in ("name", "type", "parent", "child"):
            if k not in j:
                raise ModelError("missing", source, f"joints[{i}].{k}")
        jt = Joint(j["name"], j["type"], j["parent"], j["child"],
                   _placement(j.get("parent_frame"), source, f"joints[{i}].parent_frame"),
                   _placement(j.get("child_frame"), source, f"joints[{i}].child_frame"),
                   axis=j.get("axis"), axis2=j.get("axis2"), q0=j.get("q0"), u0=j.get("u0"))
        if jt.q0 is not None and not isinstance(jt.q0, list):
            jt.q0 = [jt.q0]
        if jt.u0 is not None and not isinstance(jt.u0, list):
            jt.u0 = [jt.u0]
        joints.append(jt)
    springs, psprings, jforces = [], [], []
    for i, fd in enumerate(d.get("forces", []) or []):
        fld = f"forces[{i}]"
        if not isinstance(fd, dict) or "type" not in fd or "name" not in fd:
            raise ModelError("each force needs a name and a type", source, fld)
        t = fd["type"]
        try:
            if t == "joint_spring_damper":
                _check_keys(fd, {"name", "type", "joint", "stiffness", "damping", "q_ref"}, source, fld)
                springs.append(JointSpringDamper(fd["name"], fd["joint"], fd.get("stiffness", 0.0),
                                                 fd.get("damping", 0.0), fd.get("q_ref", 0.0)))
            elif t == "point_spring_damper":
                _check_keys(fd, {"name", "type", "body_a", "point_a", "body_b", "point_b", "stiffness",
                                 "damping", "length"}, source, fld)
                psprings.append(PointSpringDamper(fd["name"], fd["body_a"], fd.get("point_a", [0, 0, 0]),
                                                  fd["body_b"], fd.get("point_b", [0, 0, 0]),
                                                  fd.get("stiffness", 0.0), fd.get("damping", 0.0),
                                                  fd.get("length", 0.0)))
            elif t == "joint_force":
                _check_keys(fd, {"name", "type", "joint", "dof", "value"}, source, fld)
                jforces.append(JointForce(fd["name"], fd["joint"], int(fd.get("dof", 0)),
                                          _time_function(fd.get("value", 0.0), source, fld + ".value")))
            else:
                raise ModelError(f"unknown force type '{t}' (known: joint_spring_damper, "
                                 "point_spring_damper, joint_force)", source, fld + ".type")
        except KeyError as e:
            raise ModelError(f"missing {e}", source, fld) from None
    return Model(d.get("name", os.path.splitext(os.path.basename(source))[0]), bodies, joints,
                 gravity=d.get("gravity", [0.0, -9.81, 0.0]), springs=springs, point_springs=psprings,
                 joint_forces=jforces, source=source)


def load_model(path: str) -> Model:
    """Load and validate a YAML (or JSON) model file."""
    import yaml
    path = os.fspath(path)
    try:
        with open(path) as fh:
            text = fh.read()
    except OSError as e:
        raise ModelError(f"cannot read: {e.strerror}", path) from None
    try:
        d = yaml.safe_load(text)
    except yaml.YAMLError as e:
        raise ModelError(f"not valid YAML: {e}", path) from None
    if not isinstance(d, dict):
        raise ModelError("top level must be a mapping with bodies and joints", path)
    if "beams" in d:                     # flexible beams (codegen/model/beams.py), the rancf algorithm
        return beam_model_from_dict(d, source=path)
    return model_from_dict(d, source=path)


def dumps_json(model: Model) -> str:
    return json.dumps(model.to_dict(), indent=1)
