"""A rigid-body tree Model -> our YAML, URDF or MJCF text (``mbgen export MODEL --format yaml|urdf|mjcf``).

YAML keeps everything (frames as exact matrices, numbers as repr floats: the file loads back to the same
model). URDF and MJCF put each body's frame at its joint frame (the child side, where both formats want it),
so every joint's coordinates are the same numbers after loading the file back (``load_model``):

* URDF: revolute -> continuous (no limits), prismatic (limits +-1e9), free -> floating, planar (normal = axis),
  fixed; the root link ``world`` is ground. URDF has no spherical, universal or cylindrical joint: refused.
  Gravity, force elements and the initial state have no place in URDF: left out with a ModelWarning (URDF's
  readers assume gravity (0, 0, -9.81)).
* MJCF: revolute -> hinge, prismatic -> slide, spherical -> ball, free -> freejoint (a top-level body whose
  joint frame is the world frame), fixed -> a body without joints; cylindrical (hinge + slide), universal (two
  hinges) and planar (two slides and a hinge) become several joints in one body ``JOINT.DOF``, which MuJoCo
  applies one after the other, as ours. Joint spring-dampers -> stiffness, springref and damping; contacts
  are disabled. Point springs and joint forces are left out with a ModelWarning; the initial state is not
  written (MuJoCo starts at its reference configuration, our zero).
"""
from __future__ import annotations

import math
import warnings
import xml.etree.ElementTree as ET
from typing import Dict, List, Tuple

import numpy as np

from .checks import ModelError
from .core import GROUND, Model, model_dict
from .joint_types import JOINT_TYPES, or_list
from .robotfiles import ModelWarning, unique_name
from .rotations import rot_to_quat

FORMATS = ("yaml", "urdf", "mjcf")


def export_model(model, fmt: str) -> str:
    """The model as text in ``fmt`` (yaml, urdf, mjcf)."""
    if fmt not in FORMATS:
        raise ModelError(f"unknown export format {fmt!r} (known: {', '.join(FORMATS)})", model.source)
    if not isinstance(model, Model):
        raise ModelError("export handles rigid-body tree models (this is a flexible-beam model)", model.source)
    if model.cuts and fmt != "yaml":
        raise ModelError(f"{fmt.upper()} export handles trees; this model closes loops with cut joints "
                         f"({', '.join(c.name for c in model.cuts)}): export to yaml", model.source, "loops")
    return {"yaml": to_yaml, "urdf": to_urdf, "mjcf": to_mjcf}[fmt](model)


# ---------------------------------------------------------------- YAML (our format, complete)

def to_yaml(model: Model) -> str:
    """The model as our YAML format."""
    import yaml
    return (f"# {model.name}: exported by mbgen from {model.source}\n"
            + yaml.safe_dump(model_dict(model), sort_keys=False, default_flow_style=None, width=120))


# ---------------------------------------------------------------- bodies in their joint frames

def _in_joint_frames(model: Model):
    """Per joint its frames and the child's mass properties in joint frames.

    Per joint: (parent-side joint frame in the parent's joint frame (pos, rot), child mass, com and inertia in
    its joint frame). The child body frame of every joint becomes its (child-side) joint frame."""
    cf = {j.child: j.child_frame for j in model.joints}
    out = []
    for j in model.joints:
        pf = j.parent_frame
        if j.parent == GROUND:
            pos, rot = pf.pos, pf.rot
        else:
            c = cf[j.parent]
            pos, rot = c.rot.T @ (pf.pos - c.pos), c.rot.T @ pf.rot
        b = model.body(j.child)
        C = j.child_frame
        out.append((j, pos, rot, b.mass, C.rot.T @ (b.com - C.pos), C.rot.T @ b.inertia @ C.rot))
    return out


def _num(x) -> str:
    return " ".join(repr(float(v)) for v in np.atleast_1d(x))


def _rpy(R) -> List[float]:
    """Fixed-axis roll, pitch, yaw of R = Rz(yaw) Ry(pitch) Rx(roll) (URDF)."""
    pitch = math.atan2(-R[2, 0], math.hypot(R[0, 0], R[1, 0]))
    if math.hypot(R[0, 0], R[1, 0]) < 1e-12:                # gimbal lock: roll = 0
        return [0.0, pitch, math.atan2(-R[0, 1], R[1, 1])]
    return [math.atan2(R[2, 1], R[2, 2]), pitch, math.atan2(R[1, 0], R[0, 0])]


def _text(root) -> str:
    ET.indent(root, "  ")
    return ET.tostring(root, encoding="unicode") + "\n"


def _left_out(model: Model, fmt: str, what: List[str]):
    if what:
        warnings.warn(f"{model.source}: {fmt} has no place for {'; '.join(what)}: left out", ModelWarning,
                      stacklevel=3)


# ---------------------------------------------------------------- URDF

URDF_TYPES = {t.name: t.urdf for t in JOINT_TYPES.values() if t.urdf}      # ours -> the URDF type written


URDF_INERTIA = {"ixx": (0, 0), "ixy": (0, 1), "ixz": (0, 2), "iyy": (1, 1), "iyz": (1, 2), "izz": (2, 2)}


def to_urdf(model: Model) -> str:
    """The model as a URDF document; ModelError for joints URDF cannot express."""
    bad = [f"{j.name!r} ({j.type})" for j in model.joints if j.type not in URDF_TYPES]
    if bad:
        none = or_list(t for t in JOINT_TYPES if t not in URDF_TYPES)
        raise ModelError(f"URDF has no {none} joints: {', '.join(bad)}; export to "
                         "mjcf or yaml instead", model.source)
    lost = []
    if not np.allclose(model.gravity, [0, 0, -9.81], rtol=0, atol=1e-12):
        lost.append(f"gravity {model.gravity.tolist()} (URDF readers take (0, 0, -9.81))")
    n_forces = len(model.springs) + len(model.point_springs) + len(model.joint_forces)
    if n_forces:
        lost.append(f"{n_forces} force elements")
    if any(j.q0 is not None or j.u0 is not None for j in model.joints):
        lost.append("the initial state")
    _left_out(model, "URDF", lost)
    world = unique_name("world", {**{b.name: 1 for b in model.bodies}, **{j.name: 1 for j in model.joints}})
    robot = ET.Element("robot", name=model.name)
    ET.SubElement(robot, "link", name=world)
    for j, pos, rot, m, com, J in _in_joint_frames(model):
        link = ET.SubElement(robot, "link", name=j.child)
        inertial = ET.SubElement(link, "inertial")
        ET.SubElement(inertial, "origin", xyz=_num(com), rpy="0 0 0")
        ET.SubElement(inertial, "mass", value=repr(float(m)))
        ET.SubElement(inertial, "inertia", **{k: repr(float(J[a, b])) for k, (a, b) in URDF_INERTIA.items()})
        joint = ET.SubElement(robot, "joint", name=j.name, type=URDF_TYPES[j.type])
        ET.SubElement(joint, "origin", xyz=_num(pos), rpy=_num(_rpy(rot)))
        ET.SubElement(joint, "parent", link=world if j.parent == GROUND else j.parent)
        ET.SubElement(joint, "child", link=j.child)
        if j.axis is not None:
            ET.SubElement(joint, "axis", xyz=_num(j.axis))
        if URDF_TYPES[j.type] == "prismatic":           # URDF requires the limits of a prismatic joint
            ET.SubElement(joint, "limit", lower="-1e9", upper="1e9", effort="0", velocity="0")
    return f"<!-- {model.name}: exported by mbgen -->\n" + _text(robot)


# ---------------------------------------------------------------- MJCF

def minimal_rotation(axis) -> np.ndarray:
    """The minimal rotation K with K e_z = axis.

    The in-plane axes x, y of a planar joint are K's first columns
    (codegen.algorithms.tree_plan.canonical_rotation; tests/model/test_export.py checks they agree)."""
    a = np.asarray(axis, float) / np.linalg.norm(axis)
    c = a[2]
    if c > 1 - 1e-15:
        return np.eye(3)
    if c < -1 + 1e-15:
        return np.diag([1.0, -1.0, -1.0])
    k = np.cross([0.0, 0.0, 1.0], a)
    k /= np.linalg.norm(k)
    Kx = np.array([[0, -k[2], k[1]], [k[2], 0, -k[0]], [-k[1], k[0], 0]])
    ang = math.acos(max(-1.0, min(1.0, c)))
    return np.eye(3) + math.sin(ang) * Kx + (1 - math.cos(ang)) * Kx @ Kx


def _mj_axis(j, source):
    """The axis of a MuJoCo joint written for joint j (JointType.mjcf).

    None, j's axis or axis2, or an in-plane
    axis of a planar joint (the first two columns of the minimal rotation onto its normal)."""
    if source in (None, "axis", "axis2"):
        return None if source is None else getattr(j, source)
    return minimal_rotation(j.axis)[:, {"plane_x": 0, "plane_y": 1}[source]]


def _mj_free(jtype: str) -> bool:
    """Whether the joint type is MuJoCo's free joint.

    Is the joint type MuJoCo's free joint (written as <freejoint>, on a top-level body)?"""
    return JOINT_TYPES[jtype].mjcf == (("free", None),)


def _mj_joints(j) -> List[Tuple[str, str, np.ndarray, int]]:
    """The MuJoCo joints of one of ours, in the order applied.

    (name, MuJoCo type, axis, our dof index) of the MuJoCo joints of one of ours, applied in this order
    (JointType.mjcf): one keeps the joint's name, several are named JOINT.COORDINATE."""
    if _mj_free(j.type):
        return []
    parts, coords = JOINT_TYPES[j.type].mjcf, JOINT_TYPES[j.type].coordinates
    return [(j.name if len(parts) == 1 else f"{j.name}.{coords[k]}", mjtype, _mj_axis(j, source), k)
            for k, (mjtype, source) in enumerate(parts)]


def to_mjcf(model: Model) -> str:
    """The model as an MJCF document; ModelError for what MJCF cannot express."""
    for j in model.joints:
        if _mj_free(j.type) and (j.parent != GROUND or not np.array_equal(j.parent_frame.pos, np.zeros(3))
                                 or not np.array_equal(j.parent_frame.rot, np.eye(3))):
            raise ModelError(f"joint {j.name!r}: an MJCF free joint moves a top-level body whose pose is measured "
                             "in the world, so its parent must be ground and its parent_frame the identity",
                             model.source)
    lost = []
    if model.point_springs:
        lost.append(f"{len(model.point_springs)} point spring-dampers")
    if model.joint_forces:
        lost.append(f"{len(model.joint_forces)} joint forces")
    if any(j.q0 is not None or j.u0 is not None for j in model.joints):
        lost.append("the initial state")
    _left_out(model, "MJCF", lost)
    springs: Dict[str, object] = {s.joint: s for s in model.springs}
    root = ET.Element("mujoco", model=model.name)
    ET.SubElement(root, "compiler", angle="radian", inertiafromgeom="false", autolimits="true")
    option = ET.SubElement(root, "option", gravity=_num(model.gravity))
    ET.SubElement(option, "flag", contact="disable")
    world = ET.SubElement(root, "worldbody")
    element = {GROUND: world}
    for j, pos, rot, m, com, J in _in_joint_frames(model):
        body = ET.SubElement(element[j.parent], "body", name=j.child, pos=_num(pos), quat=_num(rot_to_quat(rot)))
        element[j.child] = body
        if _mj_free(j.type):
            ET.SubElement(body, "freejoint", name=j.name)
        s = springs.get(j.name)
        for name, mjtype, axis, k in _mj_joints(j):
            attrs = {"name": name, "type": mjtype, "pos": "0 0 0"}
            if axis is not None:
                attrs["axis"] = _num(axis)
            if s is not None and (s.stiffness[k] or s.damping[k]):
                attrs.update(stiffness=repr(float(s.stiffness[k])), springref=repr(float(s.q_ref[k])),
                             damping=repr(float(s.damping[k])))
            ET.SubElement(body, "joint", **attrs)
        ET.SubElement(body, "inertial", pos=_num(com), mass=repr(float(m)),
                      fullinertia=_num([J[0, 0], J[1, 1], J[2, 2], J[0, 1], J[0, 2], J[1, 2]]))
    return f"<!-- {model.name}: exported by mbgen -->\n" + _text(root)
