"""Model files: YAML (safe loader) or JSON -> validated Model (rigid tree) or BeamModel (flexible beams).

Model files are untrusted input. Reading is bounded before any work starts (LIMITS in core.py): the file
size, then, on the stream of parse events and before anything is composed or constructed, the nesting
depth and the number of YAML nodes with aliases expanded (an alias bomb of a few hundred bytes is refused
at once). Every failure is a ModelError naming the file and, past the YAML level, the field.
"""
from __future__ import annotations

import json
import os

import numpy as np

from .beams import beam_model_from_dict
from .actuators import ACTUATOR_KEYS, actuator_from_dict
from .tendons import TENDON_KEYS, tendon_from_dict
from .couplings import COUPLING_KEYS, coupling_from_dict
from .checks import _check_keys
from .core import (FORCE_FUNCTIONS, GROUND, LIMITS, Body, Joint, JointForce, JointSpringDamper, Model, ModelError,
                   Placement, PointSpringDamper, TimeFunction, _check_count, _mat3, _name, _normalised, _num,
                   _numlist, _short, _unit, _vec, limits_text)
from .robotfiles import file_kind, read_limited, root_tag
from .rotations import quat_to_rot, rot_axis_angle, rot_rpy
from .schema import check_schema
from .simulation import parse_simulation


def _placement(d, source, fld) -> Placement:
    if d is None:
        return Placement()
    if not isinstance(d, dict):
        raise ModelError("expected a mapping with pos and one of rpy/quat/matrix/axis_angle", source, fld)
    _check_keys(d, {"pos", "rpy", "quat", "matrix", "axis_angle"}, source, fld)
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
            qv = _normalised(_vec(d[k], 4, source, f"{fld}.quat"), source, f"{fld}.quat",
                             "quaternion must be non-zero")
            R = quat_to_rot(qv)
        elif k == "axis_angle":
            v = _vec(d[k], 4, source, f"{fld}.axis_angle")
            R = rot_axis_angle(_unit(v[:3], source, f"{fld}.axis_angle"), v[3])
        else:
            R = _mat3(d[k], source, f"{fld}.matrix")
    return Placement(pos, R)


_FUNCTION_KEYS = {"sine": {"amplitude", "frequency", "phase", "offset"}, "step": {"t0", "before", "after"},
                  "table": {"t", "value"}}


def _time_function(d, source, fld) -> TimeFunction:
    if not isinstance(d, dict):              # a number: constant
        return TimeFunction("constant", value=_num(d, source, fld))
    if len(set(d) & set(FORCE_FUNCTIONS)) != 1 or len(d) != 1:
        raise ModelError(f"expected one of {FORCE_FUNCTIONS} (a mapping with one key) or a number, got {_short(d)}",
                         source, fld)
    kind = next(iter(d))
    v = d[kind]
    f = f"{fld}.{kind}"
    if kind == "constant":
        return TimeFunction(kind, value=_num(v, source, f))
    _check_keys(v, _FUNCTION_KEYS[kind], source, f)
    if kind == "sine":
        p = {k: _num(v.get(k, 0.0), source, f"{f}.{k}") for k in _FUNCTION_KEYS["sine"]}
        return TimeFunction(kind, **p)
    if kind == "step":
        if "after" not in v:
            raise ModelError("missing", source, f"{f}.after")
        return TimeFunction(kind, t0=_num(v.get("t0", 0.0), source, f"{f}.t0"),
                            value_before=_num(v.get("before", 0.0), source, f"{f}.before"),
                            value=_num(v["after"], source, f"{f}.after"))
    for k in ("t", "value"):
        if k not in v:
            raise ModelError("missing", source, f"{f}.{k}")
    return TimeFunction(kind, t=_numlist(v["t"], source, f"{f}.t", 2), y=_numlist(v["value"], source, f"{f}.value", 2))


_TOP_KEYS = {"name", "gravity", "bodies", "joints", "loops", "forces", "tendons", "actuators", "simulation",
             "allow_nonphysical_inertia", "couplings", "frames"}   # 'simulation': read elsewhere
_BODY_KEYS = {"name", "mass", "com", "inertia"}
_JOINT_KEYS = {"name", "type", "parent", "child", "parent_frame", "child_frame", "axis", "axis2", "q0", "u0",
               "armature", "limits", "limit_solref", "friction"}
_CUT_KEYS = _JOINT_KEYS - {"q0", "u0", "armature", "limits", "limit_solref", "friction"}
_FORCE_KEYS = {"joint_spring_damper": {"name", "type", "joint", "stiffness", "damping", "q_ref"},
               "point_spring_damper": {"name", "type", "body_a", "point_a", "body_b", "point_b", "stiffness",
                                       "damping", "length"},
               "joint_force": {"name", "type", "joint", "dof", "value"}}


def _require(d, keys, source, fld):
    for k in keys:
        if k not in d:
            raise ModelError("missing", source, f"{fld}.{k}")


def model_from_dict(d: dict, source: str = "<model>", strict_names: bool = False) -> Model:
    """Validate a rigid-model mapping (the YAML top level) and build the Model.

    ``strict_names`` (model files): names are printable text (no control or line-break characters) of at most
    LIMITS['name_length'] characters. The Python API accepts any non-empty string: user strings reach
    generated source only through the comment filter.

    Parameters
    ----------
    d : dict
        The mapping of a model file (``name``, ``bodies``, ``joints``, ``forces``, ``loops``, ...).
    source : str, optional
        Where the mapping came from, for messages.
    strict_names : bool, optional
        Apply the model files' rules to names.

    Returns
    -------
    Model
        The validated model.

    Raises
    ------
    ModelError
        A field is missing or invalid; the message names the source and the field.
    """
    source = str(source)
    _check_keys(d, _TOP_KEYS, source, "<top level>")

    def nm(v, fld, what="name"):
        return _name(v, source, fld, what, printable=strict_names)

    for k in ("bodies", "joints"):
        if k not in d:
            raise ModelError("missing", source, k)
        if not isinstance(d[k], list):
            raise ModelError(f"expected a list, got {_short(d[k])}", source, k)
        _check_count(d[k], k, "bodies", source, k)
    forces = d.get("forces")
    forces = [] if forces is None else forces
    if not isinstance(forces, list):
        raise ModelError(f"expected a list, got {_short(forces)}", source, "forces")
    _check_count(forces, "force elements", "forces", source, "forces")
    name = nm(d["name"], "name", "model name") if "name" in d else \
        (os.path.splitext(os.path.basename(source))[0] or "model")[:LIMITS["name_length"]]
    loops = d.get("loops")
    loops = [] if loops is None else loops
    if not isinstance(loops, list):
        raise ModelError(f"expected a list, got {_short(loops)}", source, "loops")
    bodies, joints, cuts = [], [], []
    for i, b in enumerate(d["bodies"]):
        f = f"bodies[{i}]"
        _check_keys(b, _BODY_KEYS, source, f)
        _require(b, ("name", "mass"), source, f)
        bodies.append(Body(nm(b["name"], f + ".name", "body name"), b["mass"], b.get("com", [0, 0, 0]),
                           b.get("inertia", [[1, 0, 0], [0, 1, 0], [0, 0, 1]])))
    for i, j in enumerate(d["joints"] + loops):
        cut = i >= len(d["joints"])
        f = f"loops[{i - len(d['joints'])}]" if cut else f"joints[{i}]"
        _check_keys(j, _CUT_KEYS if cut else _JOINT_KEYS, source, f)
        _require(j, ("name", "type", "parent", "child"), source, f)
        jt = Joint(nm(j["name"], f + ".name", "joint name"), _name(j["type"], source, f + ".type", "joint type"),
                   nm(j["parent"], f + ".parent", "parent name"), nm(j["child"], f + ".child", "child name"),
                   _placement(j.get("parent_frame"), source, f + ".parent_frame"),
                   _placement(j.get("child_frame"), source, f + ".child_frame"),
                   axis=j.get("axis"), axis2=j.get("axis2"), q0=j.get("q0"), u0=j.get("u0"),
                   armature=j.get("armature"), limits=j.get("limits"), limit_solref=j.get("limit_solref"),
                   friction=j.get("friction"))
        if jt.q0 is not None and not isinstance(jt.q0, list):
            jt.q0 = [jt.q0]
        if jt.u0 is not None and not isinstance(jt.u0, list):
            jt.u0 = [jt.u0]
        (cuts if cut else joints).append(jt)
    springs, psprings, jforces = [], [], []
    for i, fd in enumerate(forces):
        f = f"forces[{i}]"
        if not isinstance(fd, dict) or "type" not in fd or "name" not in fd:
            raise ModelError("each force needs a name and a type", source, f)
        t = fd["type"]
        if not isinstance(t, str) or t not in _FORCE_KEYS:
            raise ModelError(f"unknown force type {_short(t)} (known: joint_spring_damper, "
                             "point_spring_damper, joint_force)", source, f + ".type")
        _check_keys(fd, _FORCE_KEYS[t], source, f)
        fname = nm(fd["name"], f + ".name", "force name")
        if t == "joint_spring_damper":
            _require(fd, ("joint",), source, f)
            springs.append(JointSpringDamper(fname, nm(fd["joint"], f + ".joint", "joint name"),
                                             fd.get("stiffness", 0.0), fd.get("damping", 0.0), fd.get("q_ref", 0.0)))
        elif t == "point_spring_damper":
            _require(fd, ("body_a", "body_b"), source, f)
            psprings.append(PointSpringDamper(fname, nm(fd["body_a"], f + ".body_a", "body name"),
                                              fd.get("point_a", [0, 0, 0]),
                                              nm(fd["body_b"], f + ".body_b", "body name"),
                                              fd.get("point_b", [0, 0, 0]),
                                              _num(fd.get("stiffness", 0.0), source, f + ".stiffness"),
                                              _num(fd.get("damping", 0.0), source, f + ".damping"),
                                              _num(fd.get("length", 0.0), source, f + ".length")))
        else:
            _require(fd, ("joint",), source, f)
            jforces.append(JointForce(fname, nm(fd["joint"], f + ".joint", "joint name"),
                                      _num(fd.get("dof", 0), source, f + ".dof", integer=True),
                                      _time_function(fd.get("value", 0.0), source, f + ".value")))
    tendons = []
    for i, td in enumerate(_section(d, "tendons", source)):
        f = f"tendons[{i}]"
        if not isinstance(td, dict):
            raise ModelError(f"expected a mapping, got {_short(td)}", source, f)
        _check_keys(td, TENDON_KEYS, source, f)
        tendons.append(tendon_from_dict(td, source, f, nm))
    acts = d.get("actuators")
    acts = [] if acts is None else acts
    if not isinstance(acts, list):
        raise ModelError(f"expected a list, got {_short(acts)}", source, "actuators")
    _check_count(acts, "actuators", "forces", source, "actuators")
    actuators = []
    for i, ad in enumerate(acts):
        f = f"actuators[{i}]"
        if not isinstance(ad, dict):
            raise ModelError(f"expected a mapping, got {_short(ad)}", source, f)
        _check_keys(ad, ACTUATOR_KEYS, source, f)
        actuators.append(actuator_from_dict(ad, source, f, nm, _time_function))
    couplings = []
    for i, cd in enumerate(_section(d, "couplings", source)):
        f = f"couplings[{i}]"
        if not isinstance(cd, dict):
            raise ModelError(f"expected a mapping, got {_short(cd)}", source, f)
        _check_keys(cd, COUPLING_KEYS, source, f)
        couplings.append(coupling_from_dict(cd, source, f, nm))
    model = Model(name, bodies, joints, gravity=d.get("gravity", [0.0, -9.81, 0.0]), springs=springs,
                  point_springs=psprings, joint_forces=jforces, source=source,
                  simulation=parse_simulation(d.get("simulation"), source, beams=False), cuts=cuts,
                  actuators=actuators, tendons=tendons, couplings=couplings,
                  allow_nonphysical_inertia=d.get("allow_nonphysical_inertia", False) is True)
    model.frames = _frames(d, model, source, nm)
    return model


def _frames(d, model, source, nm) -> dict:
    """The file's `frames:` section: name -> (body, pos, rotation) in the body frame (codegen.runtime.kinematics)."""
    out = {}
    bodies = {b.name for b in model.bodies}
    for i, fd in enumerate(_section(d, "frames", source)):
        f = f"frames[{i}]"
        if not isinstance(fd, dict):
            raise ModelError(f"expected a mapping, got {_short(fd)}", source, f)
        _check_keys(fd, {"name", "body", "pos", "rpy", "quat", "matrix", "axis_angle"}, source, f)
        _require(fd, ("name", "body"), source, f)
        name, body = nm(fd["name"], f + ".name", "frame name"), nm(fd["body"], f + ".body", "body name")
        if name in out or name in bodies:
            raise ModelError(f"frame name {name!r} is taken (by {'a frame' if name in out else 'a body'})", source,
                             f + ".name")
        if body != GROUND and body not in bodies:
            raise ModelError(f"no body {body!r} (bodies: {', '.join(sorted(bodies)[:8])}{' ...' if len(bodies) > 8 else ''}"
                             ", or ground)", source, f + ".body")
        pl = _placement({k: v for k, v in fd.items() if k not in ("name", "body")}, source, f)
        out[name] = (body, pl.pos.tolist(), pl.rot.tolist())
    return out


def _section(d, key, source) -> list:
    """An optional list section of the file (None or absent: empty), at most LIMITS['forces'] entries."""
    v = d.get(key)
    v = [] if v is None else v
    if not isinstance(v, list):
        raise ModelError(f"expected a list, got {_short(v)}", source, key)
    _check_count(v, key, "forces", source, key)
    return v


# ---------------------------------------------------------------- reading a file

class _TooBig(Exception):
    pass


class _Duplicate(Exception):
    pass


def _node_path(stack) -> str:
    """The field path of the node being read (bodies[0].mass) from the open collections."""
    out = ""
    for level in stack:
        if level[2] is None:                    # a sequence: the index of the item being read
            out += f"[{level[3]}]"
        elif level[4] is not None:
            out += ("." if out else "") + str(level[4])
    return out


def _yaml_loader():
    """libyaml's safe loader where available (3-4x faster), else PyYAML's own."""
    import yaml
    return getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def _check_yaml_size(text: str, Loader) -> None:
    """Refuse a YAML document too deep, too large or with aliases that expand too far.

    Stream the parse events (nothing is composed or constructed) and refuse, as early as possible, a
    document nested deeper than LIMITS['yaml_depth'], with more than LIMITS['yaml_nodes'] nodes, or whose
    expanded size (an alias counts as the whole node it refers to) exceeds LIMITS['yaml_nodes'] (an alias
    bomb), or with an alias used inside its own anchor (a recursive structure); and a mapping with the same key
    twice (YAML and JSON loaders keep the last one silently), naming the key and both lines."""
    import yaml
    limit, max_depth = LIMITS["yaml_nodes"], LIMITS["yaml_depth"]
    scalar, alias = yaml.ScalarEvent, yaml.AliasEvent
    starts, ends = (yaml.SequenceStartEvent, yaml.MappingStartEvent), (yaml.SequenceEndEvent, yaml.MappingEndEvent)
    # an open collection: [expanded size, anchor, {key: line} (mappings) or None, items read, current key]
    stack, sizes, open_anchors, made = [], {}, set(), 0

    def item_done(ev=None):                # a node of the innermost collection is complete
        if not stack:
            return
        top = stack[-1]
        if top[2] is not None and top[3] % 2 == 0:           # a mapping's key
            key = ev.value if ev is not None else None
            top[4] = key
            if key is not None and key != "<<":
                at = (ev.start_mark.line + 1, ev.start_mark.column + 1)
                if key in top[2]:
                    (l0, c0), where = top[2][key], _node_path(stack)
                    pos = f"lines {l0} and {at[0]}" if l0 != at[0] else f"line {l0}, columns {c0} and {at[1]}"
                    raise _Duplicate(f"duplicate key {str(key)[:60]!r} at {where} ({pos}): YAML and JSON keep only "
                                     f"the last one; remove one of them")
                top[2][key] = at
        top[3] += 1

    for ev in yaml.parse(text, Loader=Loader):
        t = type(ev)
        if t is scalar:
            made += 1
            if ev.anchor is not None:
                sizes[ev.anchor] = 1
            if stack:
                stack[-1][0] += 1
            item_done(ev)
        elif t in starts:
            made += 1
            if len(stack) >= max_depth:
                raise _TooBig(f"nested too deeply (more than {max_depth} levels)")
            stack.append([1, ev.anchor, {} if t is yaml.MappingStartEvent else None, 0, None])
            if ev.anchor is not None:
                open_anchors.add(ev.anchor)
        elif t in ends:
            size, anchor = stack.pop()[:2]
            if anchor is not None:
                sizes[anchor] = size
                open_anchors.discard(anchor)
            if stack:
                stack[-1][0] += size
            item_done()
        elif t is alias:
            if ev.anchor in open_anchors:
                raise _TooBig(f"alias *{str(ev.anchor)[:40]} is used inside its own anchor (a recursive structure)")
            if stack:
                stack[-1][0] += sizes.get(ev.anchor, 1)      # an undefined alias: the loader reports it
            item_done()
        else:
            continue
        if made > limit:
            raise _TooBig(f"too many YAML nodes (more than {limit:,})")
        if stack and stack[-1][0] > limit:
            raise _TooBig(f"too many YAML nodes after alias expansion (more than {limit:,}: an alias bomb?)")


def _yaml_message(e) -> str:
    """One line from a PyYAML error: the problem and where."""
    problem = getattr(e, "problem", None)
    mark = getattr(e, "problem_mark", None) or getattr(e, "context_mark", None)
    if problem is None:
        text = " ".join(str(e).split())
    else:
        ctx = getattr(e, "context", None)
        text = (f"{ctx}: " if ctx else "") + " ".join(str(problem).split())
    if mark is not None:
        text += f" (line {mark.line + 1}, column {mark.column + 1})"
    return text[:300]


def read_model_file(path) -> dict:
    """The top-level mapping of a model file, read within the limits; ModelError naming the file else."""
    import yaml
    path = os.fspath(path)
    data = read_limited(path, "empty file: expected a mapping with bodies and joints (or beams and joints)")
    try:
        if data.startswith((b"\xff\xfe", b"\xfe\xff")):
            text = data.decode("utf-16")
        else:
            text = data.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        raise ModelError(f"not UTF-8 text (invalid byte at offset {e.start}): a model file is YAML or JSON",
                         path) from None
    Loader = _yaml_loader()
    try:
        _check_yaml_size(text, Loader)   # bounds first: nothing is built from the document before this passes
        d = yaml.load(text, Loader=Loader)
    except _TooBig as e:
        raise ModelError(f"{e} ({limits_text()})", path) from None
    except _Duplicate as e:
        raise ModelError(str(e), path) from None
    except yaml.YAMLError as e:
        if "maximum nesting depth" in str(getattr(e, "problem", "")):   # libyaml >= 0.2.6 scans ahead to its own cap
            raise ModelError(f"nested too deeply ({limits_text()})", path) from None
        raise ModelError(f"not valid YAML: {_yaml_message(e)}", path) from None
    except RecursionError:
        raise ModelError(f"nested too deeply ({limits_text()})", path) from None
    except (ValueError, TypeError, OverflowError, MemoryError) as e:   # e.g. a timestamp 2020-13-45
        text = "an integer with too many digits" if "integer string conversion" in str(e) else str(e)
        raise ModelError(f"not valid YAML: {' '.join(text.split())[:200]}", path) from None
    if d is None:
        raise ModelError("empty file: expected a mapping with bodies and joints (or beams and joints)", path)
    if not isinstance(d, dict):
        raise ModelError(f"top level must be a mapping with bodies and joints, got {_short(d)}", path)
    return d


def load_model(path: str, floating_base: bool = False, **import_options) -> Model:
    """Load and validate a model file: YAML or JSON (our format), URDF or MJCF.

    Load and validate a model file: YAML or JSON (our format), URDF (``.urdf`` or an XML file with <robot>;
    codegen/model/urdf.py) or MJCF (``.mjcf`` or an XML file with <mujoco>; codegen/model/mjcf.py).
    ``floating_base`` and ``import_options`` (URDF: ``mimic``; MJCF: ``ignore_contacts``, ``ignore_actuators``)
    apply to robot files only.

    Parameters
    ----------
    path : str or os.PathLike
        The model file.
    floating_base : bool, optional
        Robot files: mount the root body on a free joint instead of fixing it to the ground.
    **import_options
        Robot files: URDF ``mimic``; MJCF ``ignore_contacts``, ``ignore_actuators``.

    Returns
    -------
    Model or codegen.model.beams.BeamModel
        The validated model (a BeamModel for a file with ``beams``).

    Raises
    ------
    ModelError
        The file cannot be read or a field is invalid (the message names the file and the field), or robot-file
        options were given for a YAML or JSON model.
    """
    path = os.fspath(path)
    kind = file_kind(path)
    if kind == "urdf":
        from .urdf import load_urdf
        return load_urdf(path, floating_base=floating_base, **import_options)
    if kind == "mjcf":
        from .mjcf import load_mjcf
        return load_mjcf(path, floating_base=floating_base, **import_options)
    if kind == "xml":
        raise ModelError(f"an XML file whose root element is <{root_tag(read_limited(path)[:1 << 16])}>: mbgen reads "
                         "URDF (<robot>) and MJCF (<mujoco>) files, and its own YAML or JSON format", path)
    given = ["floating_base"] * bool(floating_base) + [k for k, v in import_options.items() if v]
    if given:
        raise ModelError(f"{', '.join(given)}: only for robot files (URDF, MJCF); a YAML model states its own joints",
                         path)
    d = read_model_file(path)
    check_schema(d, path)                    # structure (model/schema.py), before the semantic checks
    try:
        if "beams" in d:                     # flexible beams (codegen/model/beams.py), the rancf algorithm
            return beam_model_from_dict(d, source=path, strict_names=True)
        return model_from_dict(d, source=path, strict_names=True)
    except RecursionError:
        raise ModelError(f"nested too deeply ({limits_text()})", path) from None


def dumps_json(model: Model) -> str:
    """The model as JSON (its to_dict)."""
    return json.dumps(model.to_dict(), indent=1)
