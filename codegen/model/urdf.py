"""URDF robot files -> Model.

Yourdfpy reads the file; lxml checks it first for messages that name the element
and its line.

Mapping (the same as pinocchio's ``buildModelFromUrdf``, so results can be compared coordinate by coordinate):

* joints: revolute and continuous -> ``revolute`` (one angle; pinocchio stores a continuous joint as cos, sin),
  prismatic -> ``prismatic``, floating -> ``free``, planar -> ``planar`` (normal = the URDF axis), fixed joints
  are merged: the child link's inertia is lumped into the body it is fixed to (parallel axis theorem) and the
  frames below it are composed. The joint frame is the child link frame; its pose in the parent link frame is the
  joint's ``<origin>``; the axis is given in it (default x).
* coordinate order: depth first from the root link, the joints below a link taken in the order of their names
  (urdfdom keeps them in a sorted map; that is the order pinocchio reports). Joint names are kept; a body is named
  after its link (``LINK_link`` if a joint has the link's name).
* base: fixed by default (the root link and the links fixed to it are ``ground``; their inertia does not enter
  the dynamics); ``floating_base=True`` adds a free joint ``root_joint`` (pinocchio's name) from ground to the
  root link. Gravity is (0, 0, -9.81), pinocchio's default.
* mimic joints (``<mimic joint multiplier offset>``): by default (``mimic="couple"``) a coupling q = multiplier
  q_other + offset (codegen.model.couplings: a hard constraint row; the mimic joint's q0 is set to offset so the
  zero pose satisfies it), as pinocchio 3's ``mimic=True``; ``mimic="independent"`` keeps them as independent joints
  (pinocchio's ``mimic=False``); ``mimic="refuse"`` refuses the file, naming the joint.
* ``<limit lower upper>`` of revolute and prismatic joints (when lower < upper) -> the joint's limits (a compliant
  spring-damper, MuJoCo's default time constant 0.02 s and damping ratio 1: templates/shared/limits.pyx.j2);
  ``<dynamics damping>`` -> a joint damper; ``<dynamics friction>`` -> the joint's Coulomb friction (regularised:
  templates/shared/friction.pyx.j2).
* ``<transmission>``: an effort-driven SimpleTransmission on one joint -> a motor actuator (gear: its
  mechanicalReduction); other transmissions are left out with a ModelWarning naming them.
* ignored: effort, velocity, collisions, sensors. Box, cylinder and sphere visuals (and mesh file names) are kept in
  ``model.visuals`` {body: [{type, size, pos, rot, ...}]}, in the body frame, for drawing only.
"""
from __future__ import annotations

import io
import math
import os
import warnings
from typing import Dict, List, Tuple

import numpy as np

from .checks import ModelError, _name
from .core import GROUND, Body, Joint, JointSpringDamper, Model, Placement
from .joint_types import JOINT_TYPES
from .massprops import lumped, moved
from .robotfiles import ModelWarning, parse_xml, read_limited, require, unique_name, xml_version_1

JOINT_MAP = {u: t.name for t in JOINT_TYPES.values() for u in (*t.urdf_aliases, t.urdf) if u}   # URDF -> ours
ROOT_JOINT = "root_joint"
MIMIC = ("couple", "independent", "refuse")


def load_urdf(path, floating_base: bool = False, mimic: str = "couple") -> Model:
    """A validated Model from a URDF file (see the module docstring for the mapping)."""
    path = os.fspath(path)
    if mimic not in MIMIC:
        raise ModelError(f"mimic must be one of {MIMIC}, got {mimic!r}", path)
    data = xml_version_1(read_limited(path))
    root = parse_xml(data, path, "URDF")
    lines = _precheck(root, path)
    yourdfpy = require("yourdfpy", path)
    try:
        urdf = yourdfpy.URDF.load(io.BytesIO(data), build_scene_graph=False, load_meshes=False,
                                  build_collision_scene_graph=False, load_collision_meshes=False)
    except Exception as e:                      # yourdfpy raises KeyError, ValueError, IndexError, ...
        raise ModelError(f"not a valid URDF: {type(e).__name__}: {' '.join(str(e).split())[:200]}", path) from None
    return model_from_urdf(urdf.robot, path, lines, floating_base=bool(floating_base), mimic=mimic,
                           transmissions=_read_transmissions(root))


# ---------------------------------------------------------------- the file, element by element

def _where(lines, kind, name) -> str:
    n = lines.get((kind, name))
    return f"{kind} {name!r}" + (f" (line {n})" if n else "")


def _floats(el, attr, n, path, where, default=None) -> List[float]:
    """n finite numbers from a space-separated attribute."""
    text = el.get(attr)
    if text is None:
        if default is None:
            raise ModelError(f"{where}: <{el.tag}> needs the attribute {attr!r} (line {el.sourceline})", path)
        return list(default)
    try:
        vals = [float(x) for x in text.replace(",", " ").split()]
    except ValueError:
        vals = []
    if len(vals) != n or not all(math.isfinite(v) for v in vals):
        raise ModelError(f"{where}: <{el.tag} {attr}=...> must be {n} finite number{'s' * (n > 1)}, got "
                         f"{text[:60]!r} (line {el.sourceline})", path)
    return vals


def _origin(el, path, where):
    o = el.find("origin")
    if o is not None:
        _floats(o, "xyz", 3, path, where, (0, 0, 0))
        _floats(o, "rpy", 3, path, where, (0, 0, 0))


def _precheck(root, path) -> Dict[Tuple[str, str], int]:
    """Check the structure pinocchio's parser (urdfdom) requires.

    The structure pinocchio's parser (urdfdom) requires, checked with the element's line in the message:
    names, joint types, parent/child links, numbers. Returns {(kind, name): line}."""
    if root.tag != "robot":
        raise ModelError(f"the root element is <{root.tag}>: a URDF file has <robot>", path)
    if not root.get("name"):
        raise ModelError(f"the <robot> element needs a name attribute (line {root.sourceline})", path)
    lines: Dict[Tuple[str, str], int] = {}
    for kind in ("link", "joint"):
        for el in root.findall(kind):
            name = el.get("name")
            if not name:
                raise ModelError(f"a <{kind}> without a name (line {el.sourceline})", path)
            if (kind, name) in lines:
                raise ModelError(f"two {kind}s named {name!r} (lines {lines[(kind, name)]} and {el.sourceline})",
                                 path)
            lines[(kind, name)] = el.sourceline
            where = _where(lines, kind, name)
            _origin(el, path, where)
            if kind == "link":
                inertial = el.find("inertial")
                if inertial is None:
                    continue
                _origin(inertial, path, where + " <inertial>")
                mass, inertia = inertial.find("mass"), inertial.find("inertia")
                if mass is None or inertia is None:
                    raise ModelError(f"{where}: <inertial> needs <mass> and <inertia> (line {inertial.sourceline})",
                                     path)
                m = _floats(mass, "value", 1, path, where)[0]
                if m < 0:
                    raise ModelError(f"{where}: mass must be non-negative, got {m:g} (line {mass.sourceline})", path)
                for a in ("ixx", "ixy", "ixz", "iyy", "iyz", "izz"):
                    _floats(inertia, a, 1, path, where)
                continue
            jt = el.get("type")
            if jt not in JOINT_MAP:
                raise ModelError(f"{where}: unknown joint type {jt!r} (URDF types: {', '.join(JOINT_MAP)})", path)
            for side in ("parent", "child"):
                s = el.find(side)
                if s is None or not s.get("link"):
                    raise ModelError(f"{where}: needs <{side} link=\"...\"/>", path)
            axis = el.find("axis")
            if axis is not None:
                a = _floats(axis, "xyz", 3, path, where, (1, 0, 0))
                if jt != "fixed" and not any(a):
                    raise ModelError(f"{where}: the axis must be non-zero (line {axis.sourceline})", path)
    return lines


# ---------------------------------------------------------------- the tree -> Model

def _T(origin) -> Tuple[np.ndarray, np.ndarray]:
    if origin is None:
        return np.zeros(3), np.eye(3)
    o = np.asarray(origin, float)
    return o[:3, 3].copy(), o[:3, :3].copy()


def _compose(a, b):
    return a[0] + a[1] @ b[0], a[1] @ b[1]


def _visuals(link, pose) -> List[dict]:
    out = []
    for v in link.visuals or ():
        g = v.geometry
        if g is None:
            continue
        pos, rot = _compose(pose, _T(v.origin))
        if g.box is not None:
            item = {"type": "box", "size": [float(x) for x in g.box.size]}
        elif g.cylinder is not None:
            item = {"type": "cylinder", "size": [float(g.cylinder.radius), float(g.cylinder.length)]}
        elif g.sphere is not None:
            item = {"type": "sphere", "size": [float(g.sphere.radius)]}
        elif g.mesh is not None:
            item = {"type": "mesh", "filename": g.mesh.filename,
                    "scale": None if g.mesh.scale is None else np.atleast_1d(g.mesh.scale).tolist()}
        else:
            continue
        item.update(pos=pos.tolist(), rot=rot.tolist(), link=link.name)
        out.append(item)
    return out


def model_from_urdf(robot, path: str, lines=None, floating_base: bool = False, mimic: str = "couple",
                    transmissions=()) -> Model:
    """A Model from a parsed yourdfpy ``Robot`` (fixed joints merged, pinocchio's coordinate order)."""
    lines = lines or {}
    links = {lk.name: lk for lk in robot.links}
    kids: Dict[str, list] = {}
    parent_joint: Dict[str, object] = {}
    for j in robot.joints:
        where = _where(lines, "joint", j.name)
        for side in ("parent", "child"):
            if getattr(j, side) not in links:
                raise ModelError(f"{where}: its {side} link {getattr(j, side)!r} does not exist", path)
        if j.child in parent_joint:
            raise ModelError(f"{where}: link {j.child!r} already has the parent joint {parent_joint[j.child].name!r} "
                             "(a URDF is a tree)", path)
        parent_joint[j.child] = j
        kids.setdefault(j.parent, []).append(j)
    roots = [n for n in links if n not in parent_joint]
    if len(roots) != 1:
        raise ModelError("no root link: the joints form a cycle" if not roots else
                         f"{len(roots)} root links ({', '.join(map(repr, roots[:5]))}): a URDF is one tree", path)
    root = roots[0]

    # names: joints keep theirs; bodies take their link's unless a joint (or 'ground') has it
    taken = {GROUND: 1, **{j.name: 1 for j in robot.joints}}
    root_joint = unique_name(ROOT_JOINT, {**taken, **links}) if floating_base else None
    if root_joint:
        taken[root_joint] = 1
    body_name = {}
    for n in links:
        body_name[n] = unique_name(n if n not in taken else f"{n}_link", taken)
        taken[body_name[n]] = 1
    _name(robot.name, path, "robot.name", "robot name", printable=True)
    for n in (*(j.name for j in robot.joints), *links):
        _name(n, path, f"link[{n}]" if n in links else f"joint[{n}]", "name", printable=True)

    anchor: Dict[str, Tuple[str, Tuple[np.ndarray, np.ndarray]]] = {}
    members: Dict[str, List[str]] = {}
    joints: List[Joint] = []
    springs = []
    identity = (np.zeros(3), np.eye(3))
    if floating_base:
        anchor[root] = (body_name[root], identity)
        joints.append(Joint(root_joint, "free", GROUND, body_name[root]))
    else:
        anchor[root] = (GROUND, identity)
    members.setdefault(anchor[root][0], []).append(root)
    stack = [(None, root)]
    seen = 0
    mimics = []
    while stack:           # depth first over the joints, those below a link by name (urdfdom's map order)
        j, link = stack.pop()
        seen += 1
        stack.extend((jj, jj.child) for jj in sorted(kids.get(link, []), key=lambda jj: jj.name, reverse=True))
        if j is None:
            continue
        body, pose = anchor[j.parent]
        frame = _compose(pose, _T(j.origin))
        if j.type == "fixed":
            anchor[link] = (body, frame)
            members.setdefault(body, []).append(link)
            continue
        if j.mimic is not None and mimic == "refuse":
            raise ModelError(f"{_where(lines, 'joint', j.name)} mimics joint {j.mimic.joint!r}: coupled joints "
                             "are refused on request (mimic='refuse'). mimic='couple' (the default) couples "
                             "them, mimic='independent' (--mimic independent) keeps it as an "
                             "independent joint, as pinocchio does by default", path)
        jt = JOINT_MAP[j.type]
        nv, scalar = JOINT_TYPES[jt].nv, JOINT_TYPES[jt].scalar
        axis = np.asarray(j.axis if j.axis is not None else [1.0, 0, 0], float) if JOINT_TYPES[jt].needs_axis else None
        lim = j.limit if j.type in ("revolute", "prismatic") else None
        lim = [[lim.lower, lim.upper]] if lim is not None and lim.lower is not None and lim.upper is not None \
            and lim.lower < lim.upper else None
        dyn = j.dynamics
        joints.append(Joint(j.name, jt, body, body_name[link], Placement(frame[0], frame[1]), Placement(),
                            axis=axis, limits=lim, friction=[float(dyn.friction)] * nv
                            if dyn is not None and dyn.friction and scalar else None))
        if j.mimic is not None and mimic == "couple":
            mimics.append(j)
        if dyn is not None and dyn.damping and scalar:
            taken[unique_name(f"{j.name}.damping", taken)] = 1
            springs.append(JointSpringDamper(list(taken)[-1], j.name, [0.0] * nv, [float(dyn.damping)] * nv,
                                             [0.0] * nv))

        anchor[link] = (body_name[link], identity)
        members.setdefault(body_name[link], []).append(link)
    if seen != len(links):
        raise ModelError(f"{len(links) - seen} links are not connected to the root link {root!r} "
                         "(the joints form a cycle)", path)
    if not joints:
        raise ModelError("no movable joints: with a fixed base nothing moves (load it with floating_base=True, "
                         "--floating-base)", path)

    bodies, visuals = [], {}
    for j in joints:
        parts = []
        for ln in members[j.child]:
            inertial = links[ln].inertial
            if inertial is None or not inertial.mass and not np.any(inertial.inertia):
                continue
            pos, rot = _compose(anchor[ln][1], _T(inertial.origin))
            J = np.asarray(inertial.inertia, float)
            parts.append(moved(float(inertial.mass or 0.0), np.zeros(3), J, pos, rot))   # inertial frame -> body
        m, c, J = lumped(parts)
        bodies.append(Body(j.child, m, c, J))
    for body, lks in members.items():
        items = [v for ln in lks for v in _visuals(links[ln], anchor[ln][1])]
        if items:
            visuals[body] = items
    actuators = _transmissions(transmissions, joints, path, taken)
    couplings = _mimic_couplings(mimics, joints, lines, path, taken)
    try:
        model = Model(robot.name, bodies, joints, gravity=np.array([0.0, 0.0, -9.81]), source=path, springs=springs,
                      allow_nonphysical_inertia=True, actuators=actuators, couplings=couplings)
    except ModelError as e:
        raise _with_links(e, members, body_name) from None
    model.visuals = visuals
    model.frames = {ln: (anchor[ln][0], anchor[ln][1][0].tolist(), anchor[ln][1][1].tolist()) for ln in anchor}
    return model


def _mimic_couplings(mimics, joints, lines, path, taken) -> list:
    """Couplings from the URDF's <mimic> elements.

    <mimic joint multiplier offset> -> couplings q = multiplier q_other + offset (named JOINT.mimic); the mimic
    joints' q0 follow from their leaders' (zero unless they mimic too), so the zero pose satisfies them."""
    from .couplings import Coupling
    by_name = {j.name: j for j in joints}
    out, rule = [], {}
    for j in mimics:
        other = j.mimic.joint
        if other not in by_name:
            raise ModelError(f"{_where(lines, 'joint', j.name)} mimics joint {other!r}, which is not a moving joint "
                             "of the file (fixed joints are merged)", path)
        m = 1.0 if j.mimic.multiplier is None else float(j.mimic.multiplier)
        o = 0.0 if j.mimic.offset is None else float(j.mimic.offset)
        if not (math.isfinite(m) and math.isfinite(o)):
            raise ModelError(f"{_where(lines, 'joint', j.name)}: <mimic> multiplier and offset must be finite", path)
        name = unique_name(f"{j.name}.mimic", taken)
        taken[name] = 1
        out.append(Coupling(name, j.name, other, [o, m]))
        rule[j.name] = (other, m, o)
    q0 = {}

    def value(n, depth=0):                  # q0 of a joint through its chain of leaders (a cycle: left at 0)
        if n not in rule or depth > len(rule):
            return 0.0
        if n not in q0:
            other, m, o = rule[n]
            q0[n] = m * value(other, depth + 1) + o
        return q0[n]
    for n in rule:
        v = value(n)
        if v and by_name[n].nq == 1:
            by_name[n].q0 = [v]
    return out


def _read_transmissions(root) -> list:
    """The <transmission> elements of the file.

    (name, type, [(joint, [interfaces])], [mechanicalReduction]) of each <transmission> (lxml: yourdfpy leaves
    the list empty for the ros_control form)."""
    out = []
    for tr in root.iter("transmission"):
        typ = tr.get("type") or (tr.findtext("type") or "").strip()
        joints = [(j.get("name"), [(h.text or "").strip() for h in j.iter("hardwareInterface")])
                  for j in tr.findall("joint")]
        reds = []
        for a in tr.findall("actuator"):
            try:
                reds.append(float((a.findtext("mechanicalReduction") or "").strip()))
            except ValueError:
                pass
        out.append((tr.get("name") or "", typ, joints, reds))
    return out


def _transmissions(transmissions, joints, path, taken) -> list:
    """ros_control transmissions as motors.

    ros_control transmissions: a SimpleTransmission with an effort interface on one moving joint is a motor
    (ctrl: the actuator's effort, gear: its mechanicalReduction), in the file's order. Other transmissions (position
    or velocity interfaces, whose controller gains are not in the file; differential ones) are left out with a
    warning naming them."""
    from .actuators import Actuator
    moving = {j.name for j in joints if JOINT_TYPES[j.type].scalar and j.nv == 1}     # one coordinate to drive
    out, left = [], []
    for tname, typ, tjoints, reds in transmissions:
        ifaces = [i for _, fs in tjoints for i in fs]
        if typ.endswith("SimpleTransmission") and len(tjoints) == 1 and tjoints[0][0] in moving and ifaces \
                and all(i.endswith("EffortJointInterface") for i in ifaces) and all(math.isfinite(r) for r in reds) \
                and (not reds or reds[0] != 0):
            name = unique_name(tname or f"transmission{len(out)}", taken)
            taken[name] = 1
            out.append(Actuator(name, tjoints[0][0], "motor", gear=reds[0] if reds else 1.0))
        else:
            left.append(tname)
    if left:
        warnings.warn(f"{path}: {len(left)} transmissions ({', '.join(left[:3])}{' ...' if len(left) > 3 else ''}) "
                      "are not effort-driven SimpleTransmissions on one joint (their controllers are not in the "
                      "file): left out", ModelWarning, stacklevel=4)
    return out


def _with_links(e: ModelError, members, body_name) -> ModelError:
    """A validation error of a lumped body names the links it is made of."""
    for body, lks in members.items():
        if body != GROUND and f"[{body}]" in e.field and len(lks) > 1:
            return ModelError(f"{e.message} (body {body!r} lumps the links {', '.join(map(repr, lks))}, joined by "
                              "fixed joints)", e.source, e.field)
    return e
