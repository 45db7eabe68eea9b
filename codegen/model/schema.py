"""The model file format as a JSON Schema (draft 2020-12).

One definition for the structural checks of model files,
for editors (``mbgen schema``; the YAML language server) and for docs/model-format.md (``mbgen schema --markdown``).

``check_schema(doc, source)`` validates a model file's top-level mapping with the jsonschema library before the
loader builds the model: types, required and unknown keys, list lengths, joint and force kinds, the input limits.
A failure is a ModelError naming the file, the field path (``joints[1].parent_frame.pos``) and what was
expected. Value ranges (mass >= 0, E > 0, ...) are in the schema for editors but left to the semantic checks
(checks.py, core.validate, beams.py), which word them with the element's name; so are cross-references (parents,
children, joints of forces) and the tree.

Numbers: JSON numbers, or strings that read as decimal numbers (YAML 1.1, which PyYAML follows, reads 4e-4
without a dot as a string; the loader accepts it).
"""
from __future__ import annotations

import json
from functools import lru_cache

from .checks import LIMITS, ModelError, _short, limits_text
from .core import FORCE_FUNCTIONS
from .joint_types import JOINT_TYPES, names_where, or_list
from .schema_fast import RANGE_KEYWORDS, _accepts, _decide
from .simulation import INTEGRATORS

NUMERIC_STRING = r"^\s*[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?\s*$"
INTEGER_STRING = r"^\s*[-+]?\d+(\.0*)?\s*$"
BEAM_JOINT_TYPES = ("revolute", "fixed", "translational", "pin", "planar_revolute", "clamp", "prismatic",
                    "planar_translational", "slider")


# a number, or a string that reads as one ("pattern" applies to strings only); inlined, not a $ref: the schema is
# checked on every file, and jsonschema resolves references slowly
NUMBER = {"type": ["number", "string"], "pattern": NUMERIC_STRING, "x-expected": "a number"}


def _number(description=None, **ranges):
    s = dict(NUMBER, **ranges)
    if ranges:
        s["x-expected"] = "a number " + ", ".join(
            {"minimum": ">= {:g}", "exclusiveMinimum": "> {:g}", "maximum": "<= {:g}", "exclusiveMaximum": "< {:g}"}[k]
            .format(v)
            for k, v in ranges.items())
    if description:
        s["description"] = description
    return s


def _integer(description, **ranges):
    s = _number(description, **ranges)
    s.update(type=["integer", "string"], pattern=INTEGER_STRING, **{"x-expected": s["x-expected"].replace(
        "a number", "an integer")})
    return s


def _vector(n, description=None, number=None):
    s = {"type": "array", "items": number or NUMBER, "minItems": n, "maxItems": n,
         "x-expected": f"a list of {n} numbers"}
    if description:
        s["description"] = description
    return s


MATRIX3 = {"type": "array", "minItems": 3, "maxItems": 3, "items": _vector(3),
           "x-expected": "a 3x3 matrix (3 rows of 3 numbers)"}


def _numbers(description, limit="table_points", min_items=0):
    return {"type": "array", "items": NUMBER, "minItems": min_items,
            "maxItems": LIMITS[limit], "x-limit": [limit, "points"],
            "x-expected": f"a list of at least {min_items} numbers" if min_items else "a list of numbers",
            "description": description}


def _name(description):
    return {"type": "string", "minLength": 1, "maxLength": LIMITS["name_length"], "x-limit": ["name_length", "name"],
            "x-expected": "a name (a non-empty string)", "description": description}


def _mapping(description, properties, required=(), nullable=False):
    s = {"type": ["object", "null"] if nullable else "object", "properties": properties, "additionalProperties": False,
         "x-expected": "a mapping" + (f" with {', '.join(required)}" if required else "") + (" (or null)" if nullable else ""),
         "description": description}
    if required:
        s["required"] = list(required)
    return s


def _list(description, items, limit, what, nullable=False):
    return {"type": ["array", "null"] if nullable else "array", "items": items, "maxItems": LIMITS[limit],
            "x-limit": [limit, what], "x-expected": f"a list of {what}" + (" (or null)" if nullable else ""),
            "description": description}


def _coords(n, what):
    """q0 / u0 of a joint with n coordinates: a list of n numbers (one number when n is 1), or null."""
    if n == 1:
        return {"anyOf": [NUMBER, _vector(1), {"type": "null"}],
                "x-expected": "a number or a list of 1 number", "description": what}
    return {"anyOf": [_vector(n), {"type": "null"}], "x-expected": f"a list of {n} numbers", "description": what}


def _joint_kinds():
    """if type == T then q0 has nq numbers and u0 nv numbers (JOINT_TYPES)."""
    return [{"if": {"properties": {"type": {"const": t}}, "required": ["type"]},
             "then": {"properties": {"q0": _coords(nq, f"{t}: {nq} coordinates"),
                                     "u0": _coords(nv, f"{t}: {nv} velocities")}}}
            for t, nq, nv in ((t.name, t.nq, t.nv) for t in JOINT_TYPES.values()) if nq]


def _frame(description):
    return _mapping(description + "; pos plus at most one rotation (rpy, quat, matrix or axis_angle)", {
        "pos": _vector(3, "position in the body frame [m]"),
        "rpy": _vector(3, "roll, pitch, yaw [rad]"),
        "quat": _vector(4, "quaternion w x y z (normalised on reading)"),
        "matrix": dict(MATRIX3, description="3x3 rotation matrix, proper orthonormal"),
        "axis_angle": _vector(4, "unit axis x y z and angle [rad]"),
    }, nullable=True)


def _frame_entry():
    return _mapping("a frame fixed on a body: its origin pos and at most one rotation (rpy, quat, matrix or "
                    "axis_angle) in the body frame", {
                        "name": _name("frame name (unique among the frames and bodies)"),
                        "body": _name("the body it is fixed on, or ground"),
                        **_frame("")["properties"]}, required=("name", "body"))


def _time_function():
    step = _mapping("value_before before t0, after from t0", {
        "t0": _number("switching time [s]"), "before": _number("value before t0"),
        "after": _number("value from t0 on")}, required=("after",))
    table = _mapping("linear interpolation, held constant outside", {
        "t": _numbers("times [s], increasing", min_items=2), "value": _numbers("values at t", min_items=2)},
        required=("t", "value"))
    sine = _mapping("offset + amplitude sin(2 pi frequency t + phase)", {
        "amplitude": _number(), "frequency": _number("[Hz]"), "phase": _number("[rad]"), "offset": _number()})
    return {"description": "a number (constant) or a mapping with one of " + ", ".join(FORCE_FUNCTIONS),
            "x-expected": f"one of {FORCE_FUNCTIONS} (a mapping with one key) or a number",
            "if": {"type": "object"},
            "then": {"type": "object", "minProperties": 1, "maxProperties": 1,
                     "propertyNames": {"enum": list(FORCE_FUNCTIONS)},
                     "properties": {"constant": _number(), "sine": sine, "step": step, "table": table}},
            "else": NUMBER}


def _forces():
    name = _name("force name (unique among bodies, joints and forces)")
    per_coord = {"anyOf": [NUMBER, {"type": "array", "items": NUMBER}],
                 "x-expected": "a number or a list of numbers (one per coordinate)"}
    kinds = {
        "joint_spring_damper": {"name": name, "type": {"const": "joint_spring_damper"},
                                "joint": _name("the joint (scalar coordinates)"),
                                "stiffness": dict(per_coord, description="[N/m or N m/rad] per coordinate"),
                                "damping": dict(per_coord, description="[N s/m or N m s/rad] per coordinate"),
                                "q_ref": dict(per_coord, description="rest position per coordinate")},
        "point_spring_damper": {"name": name, "type": {"const": "point_spring_damper"},
                                "body_a": _name("a body or ground"), "point_a": _vector(3, "in body_a's frame [m]"),
                                "body_b": _name("a body or ground"), "point_b": _vector(3, "in body_b's frame [m]"),
                                "stiffness": _number("[N/m]", minimum=0), "damping": _number("[N s/m]", minimum=0),
                                "length": _number("free length [m]", minimum=0)},
        "joint_force": {"name": name, "type": {"const": "joint_force"}, "joint": _name("the joint"),
                        "dof": _integer("index of the joint's velocity coordinate", minimum=0),
                        "value": _time_function()},
    }
    needs = {"joint_spring_damper": ["joint"], "point_spring_damper": ["body_a", "body_b"], "joint_force": ["joint"]}
    return {"type": "object", "required": ["name", "type"], "x-expected": "a mapping with name and type",
            "description": "a force element: " + ", ".join(kinds),
            "properties": {"name": name, "type": {"enum": list(kinds), "x-unknown": "force type",
                                                  "x-expected": f"a force type (one of {', '.join(kinds)})"}},
            "allOf": [{"if": {"properties": {"type": {"const": k}}, "required": ["type"]},
                       "then": {"properties": p, "additionalProperties": False, "required": needs[k]}}
                      for k, p in kinds.items()]}


def _actuators():
    rng = {"type": "array", "items": NUMBER, "minItems": 2, "maxItems": 2, "x-expected": "a list [low, high]"}
    coef = _vector(3)
    return _mapping("an actuator: force gear f on one coordinate of a joint, f = (g0 + g1 L + g2 V) ctrl + b0 + b1 L + "
                    "b2 V with L = gear q, V = gear u (MuJoCo's affine actuator with a joint transmission)", {
                        "name": _name("actuator name (unique)"),
                        "type": {"enum": ["motor", "position", "velocity", "general"], "x-unknown": "actuator type",
                                 "x-expected": "one of motor, position, velocity, general",
                                 "description": "motor: f = ctrl; position: f = kp (ctrl - L) - kv V; velocity: "
                                                "f = kv (ctrl - V); general: gain and bias (default motor)"},
                        "joint": _name(f"the joint ({or_list(names_where('scalar'))})"),
                        "tendon": _name("a fixed tendon instead of a joint: L = gear times its length"),
                        "dof": _integer("index of the joint's velocity coordinate (default 0)", minimum=0),
                        "gear": _number("transmission ratio: L = gear q, tau = gear f (default 1)"),
                        "kp": _number("position: stiffness [N/m or N m/rad]", minimum=0),
                        "kv": _number("position (optional), velocity: damping gain", minimum=0),
                        "gain": dict(coef, description="general: g0 g1 g2 (default 1 0 0)"),
                        "bias": dict(coef, description="general: b0 b1 b2 (default 0 0 0)"),
                        "ctrlrange": dict(rng, description="the control is clamped to it (default: not clamped)"),
                        "forcerange": dict(rng, description="f is clamped to it (default: not clamped)"),
                        "dynamics": {"enum": ["none", "integrator", "filter", "filterexact"],
                                     "x-unknown": "activation dynamics",
                                     "x-expected": "one of none, integrator, filter, filterexact",
                                     "description": "activation dynamics (MuJoCo's dyntype): the actuator gets a state "
                                                    "act, f uses act instead of ctrl; integrator: dact/dt = ctrl; "
                                                    "filter, filterexact: dact/dt = (ctrl - act) / timeconst "
                                                    "(default none)"},
                        "timeconst": _number("filter, filterexact: time constant [s] (MuJoCo's dynprm[0])",
                                             minimum=0),
                        "actrange": dict(rng, description="the activation stays in it (default: not limited)"),
                        "ctrl": dict(_time_function(), description="the control when none is given at run time "
                                     "(ctrl= of simulate, rollout, forward_dynamics): a number or a function of "
                                     "time, in compiled code (default 0)"),
                    }, required=("name",))


def _tendons():
    coef = _mapping("one coordinate of the tendon", {
        "joint": _name("the joint (scalar coordinates)"), "coef": _number("L += coef q"),
        "dof": _integer("index of the joint's coordinate (default 0)", minimum=0)}, required=("joint", "coef"))
    return _mapping("a fixed tendon: length L = sum of coef q over its joints, tau += coef F (MuJoCo's fixed tendon)", {
        "name": _name("tendon name (unique)"),
        "joints": {"type": "array", "items": coef, "minItems": 1, "x-expected": "a list of {joint, coef}",
                   "description": "the coordinates and their coefficients"},
        "stiffness": _number("spring: F = -stiffness (L - length0)", minimum=0),
        "damping": _number("damper: F = -damping dL/dt", minimum=0),
        "length0": _number("the spring's rest length (default: L at the initial state)"),
        "limits": _vector(2, "[lower, upper] of L, a compliant limit as the joints' (see limit_solref)"),
        "limit_solref": _vector(2, "time constant and damping ratio of the limit (default 0.02 1)"),
    }, required=("name", "joints"))


def _couplings():
    return _mapping("a coupling: a hard equality constraint L1 = c0 + c1 L2 + ... + c4 L2^4 between two scalar "
                    "coordinates (L: a joint coordinate or a fixed tendon's length; MuJoCo's joint and tendon "
                    "equality, URDF's mimic), one constraint row solved like the cut joints' (Lagrange multipliers, "
                    "Baumgarte's stabilisation); the initial state must satisfy it", {
                        "name": _name("coupling name (unique)"),
                        "joint": _name(f"the coupled joint, L1 ({or_list(names_where('scalar'))})"),
                        "dof": _integer("index of joint's coordinate (default 0)", minimum=0),
                        "tendon": _name("a fixed tendon instead of joint: L1 = its length"),
                        "joint2": _name("the joint it follows, L2 (none: L1 = c0)"),
                        "dof2": _integer("index of joint2's coordinate (default 0)", minimum=0),
                        "tendon2": _name("a fixed tendon instead of joint2: L2 = its length"),
                        "polycoef": {"type": "array", "items": NUMBER, "minItems": 1, "maxItems": 5,
                                     "x-expected": "a list of 1 to 5 numbers",
                                     "description": "c0 .. c4 (missing ones 0; default 0 1: L1 = L2)"},
                        "multiplier": _number("instead of polycoef: L1 = multiplier L2 + offset (default 1)"),
                        "offset": _number("instead of polycoef (default 0)"),
                    }, required=("name",))


def _simulation():
    return _mapping("how the model is meant to be run; each key optional, the command line overrides it", {
        "integrator": {"enum": list(INTEGRATORS), "x-expected": "one of " + ", ".join(INTEGRATORS),
                       "description": "euler, implicitfast, implicit (MuJoCo's single steps): rigid-body models; "
                                      "hht: flexible-beam models only"},
        "dt": _number("sample interval (and the fixed step) [s]", exclusiveMinimum=0),
        "t_end": _number("end time [s]", exclusiveMinimum=0),
        "substeps": _integer("fixed steps per sample", minimum=1),
        "rtol": _number("dopri5 relative tolerance", minimum=1e-14),
        "atol": _number("dopri5 absolute tolerance", exclusiveMinimum=0),
        "hht_alpha": _number("HHT alpha", minimum=-1 / 3, maximum=0),
        "check_energy": {"anyOf": [NUMBER, {"type": "null"}, {"const": False}],
                         "x-expected": "a positive tolerance, null or false",
                         "description": "fail the run (exit 4) above this relative energy error; null: off"},
    }, nullable=True)


def _rigid():
    body = _mapping("a rigid body", {
        "name": _name("body name (unique; not 'ground')"),
        "mass": _number("[kg]; 0 for a massless link", minimum=0),
        "com": _vector(3, "centre of mass in the body frame [m] (default 0 0 0)"),
        "inertia": {"anyOf": [_vector(3), _vector(6), MATRIX3],
                    "x-expected": "a 3x3 matrix (or 3 principal / 6 unique entries)",
                    "description": "about the centre of mass, body frame [kg m^2]: 3x3, 3 principal moments, or "
                                   "ixx iyy izz ixy ixz iyz (default identity)"},
    }, required=("name", "mass"))
    joint = _mapping("a joint: parent (a body or ground) to child", {
        "name": _name("joint name (unique)"),
        "type": {"enum": list(JOINT_TYPES), "x-unknown": "joint type", "description": "see the table below",
                 "x-expected": f"a joint type (one of {', '.join(JOINT_TYPES)})"},
        "parent": _name("a body or ground"), "child": _name("a body"),
        "parent_frame": _frame("joint frame in the parent body frame"),
        "child_frame": _frame("joint frame in the child body frame"),
        "axis": {"anyOf": [_vector(3), {"type": "null"}], "x-expected": "a list of 3 numbers",
                 "description": "joint axis in the joint frame (revolute, prismatic, cylindrical, universal; planar: "
                                "the plane's normal); default 0 0 1"},
        "axis2": {"anyOf": [_vector(3), {"type": "null"}], "x-expected": "a list of 3 numbers",
                  "description": "universal: second axis, perpendicular to axis"},
        "q0": {"description": "initial coordinates (see the joint table)"},
        "u0": {"description": "initial velocities"},
        "armature": {"anyOf": [_number(minimum=0), {"type": "array", "items": _number(minimum=0), "minItems": 1,
                                                     "maxItems": 6}],
                     "x-expected": "a number >= 0 or a list of one per velocity coordinate",
                     "description": "rotor inertia [kg m^2, or kg for a slide] added to the mass matrix's diagonal "
                                    "at each velocity coordinate of the joint (MuJoCo's armature): one number "
                                    "for all, or one per coordinate (default 0)"},
        "limits": {"anyOf": [_vector(2), {"type": "array", "items": _vector(2), "minItems": 1, "maxItems": 3}],
                   "x-expected": "[lower, upper], or one such pair per coordinate",
                   "description": "joint limits of a scalar joint's coordinates [rad or m], enforced by a compliant "
                                  "one-sided spring-damper (see limit_solref)"},
        "friction": {"anyOf": [_number(minimum=0), {"type": "array", "items": _number(minimum=0), "minItems": 1,
                                                     "maxItems": 3}],
                     "x-expected": "a number >= 0 or a list of one per coordinate",
                     "description": "Coulomb friction force [N m or N] of a scalar joint's coordinates: f = -F tanh(u / "
                                    "v_s), v_s = F T / m (T = 0.02 s, m: the coordinate's inertia at q0)"},
        "limit_solref": {"anyOf": [_vector(2)], "x-expected": "[time constant, damping ratio]",
                         "description": "the limits' stiffness and damping as MuJoCo's solref: k = m / (T zeta)^2, "
                                        "c = 2 m / T with m the coordinate's inertia at q0 (default 0.02 1)"},
    }, required=("name", "type", "parent", "child"))
    cut = _mapping("a loop-closing (cut) joint between two bodies of the tree (parent: a body or ground); the "
                   "same fields as a joint, no coordinates of its own", {
                       k: v for k, v in joint["properties"].items() if k not in ("q0", "u0", "armature", "limits",
                                                                                 "limit_solref", "friction")},
                   required=("name", "type", "parent", "child"))
    cut["properties"]["type"] = dict(joint["properties"]["type"], enum=list(names_where("loop_closing")))
    joint["allOf"] = _joint_kinds()
    return _mapping("a tree of rigid bodies", {
        "name": _name("model name (default: the file name)"),
        "gravity": _vector(3, "[m/s^2] (default 0 -9.81 0)"),
        "bodies": _list("the rigid bodies", body, "bodies", "bodies"),
        "joints": _list("one joint per body; together a tree rooted at ground", joint, "bodies", "joints"),
        "loops": _list("loop-closing (cut) joints: each adds the constraints of its joint type between two bodies "
                       "of the tree", cut, "bodies", "loop-closing joints", nullable=True),
        "forces": _list("force elements", _forces(), "forces", "force elements", nullable=True),
        "tendons": _list("fixed tendons", _tendons(), "forces", "tendons", nullable=True),
        "actuators": _list("actuators, in control order (the ctrl vector's)", _actuators(), "forces", "actuators",
                           nullable=True),
        "couplings": _list("couplings: equality constraints between coordinates", _couplings(), "forces",
                           "couplings", nullable=True),
        "frames": _list("named frames fixed on bodies (end effectors, sensors, feet) for the kinematics: "
                        "s.frame_placement, s.frame_jacobian, ... (docs/guide/kinematics.md)", _frame_entry(),
                        "bodies", "frames", nullable=True),
        "simulation": {"$ref": "#/$defs/simulation", "description": "simulation settings (below)"},
        "allow_nonphysical_inertia": {"type": "boolean", "x-expected": "true or false",
                                      "description": "true: inertias that break the triangle inequality load with a "
                                                     "warning (robot files always do); default false: refused"},
    }, required=("bodies", "joints"))


def _beams():
    beam = _mapping("a planar ANCF beam of equal elements", {
        "name": _name("beam name (unique; not 'ground')"), "length": _number("[m]", exclusiveMinimum=0),
        "elements": _integer("number of elements", minimum=1), "E": _number("Young's modulus [Pa]", exclusiveMinimum=0),
        "A": _number("cross-section area [m^2]", exclusiveMinimum=0),
        "I": _number("second moment of area [m^4]", exclusiveMinimum=0),
        "rho": _number("density [kg/m^3]", exclusiveMinimum=0),
        "angle": _number("initial direction [rad] (default: initial.angle)"),
    }, required=("name", "length", "elements", "E", "A", "I", "rho"))
    vec2 = {"type": "array", "items": NUMBER, "minItems": 2, "maxItems": 3,
            "x-expected": "a list of 2 numbers"}
    joint = _mapping("the inboard joint of a beam (at the parent's tip, or at a ground point)", {
        "name": _name("joint name (default jointK)"),
        "type": {"enum": list(BEAM_JOINT_TYPES), "x-unknown": "joint type",
                 "description": "revolute (alias pin, planar_revolute): shared position; fixed (clamp): shared "
                                "position and slope; translational (prismatic, slider, planar_translational)",
                 "x-expected": f"a joint type (one of {', '.join(BEAM_JOINT_TYPES)})"},
        "parent": _name("a beam or ground"), "child": _name("a beam"),
        "at": dict(vec2, description="ground point [m] (parent ground only)"),
        "axis": dict(vec2, description="translational: sliding direction (world)"),
        "q0": _number("translational: initial slide [m]"),
    }, required=("type", "parent", "child"))
    load = _mapping("a constant force on a beam", {
        "name": _name("load name"), "beam": _name("the beam"), "s": _number("arc length from the beam's first node [m]"),
        "force": dict(vec2, description="[N], world frame")}, required=("beam", "force"))
    return _mapping("planar flexible beams (rancf)", {
        "name": _name("model name (default: the file name)"),
        "gravity": dict(vec2, description="[m/s^2] (default 0 -9.81); 3 components with z = 0 accepted"),
        "initial": _mapping("initial configuration: straight beams at rest", {
            "angle": _number("default direction of every beam [rad]"),
            "at_rest": {"const": True, "x-expected": "true"}}, nullable=True),
        "beams": _list("the beams", beam, "bodies", "beams"),
        "joints": _list("one inboard joint per beam; a tree rooted at ground", joint, "bodies", "joints"),
        "loads": _list("constant forces", load, "forces", "loads", nullable=True),
        "simulation": {"$ref": "#/$defs/simulation", "description": "simulation settings (below)"},
    }, required=("beams", "joints"))


@lru_cache(maxsize=1)
def model_schema() -> dict:
    """The JSON Schema of model files (YAML or JSON): a rigid-body tree, or flexible beams when ``beams`` is given."""
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "mbgen model file",
        "description": "A multibody model for mbgen: a tree of rigid bodies (bodies, joints, forces) or planar "
                       "flexible beams (beams, joints, loads), with optional simulation settings. SI units.",
        "type": "object", "x-expected": "a mapping",
        "if": {"required": ["beams"]},
        "then": {"$ref": "#/$defs/beam_model"},
        "else": {"$ref": "#/$defs/rigid_model"},
        "$defs": {
            "simulation": _simulation(),
            "rigid_model": _rigid(),
            "beam_model": _beams(),
        },
    }


def schema_json() -> str:
    """The JSON Schema of model files as text."""
    return json.dumps(model_schema(), indent=1) + "\n"


# ---------------------------------------------------------------- validation with messages of the model layer

def _field(path) -> str:
    out = ""
    for p in path:
        out += f"[{p}]" if isinstance(p, int) else (f".{p}" if out else str(p))
    return out or "<top level>"


def _order(doc, path):
    """Document order of a path (list positions, mapping key positions): the first fault in the file first."""
    key, cur = [], doc
    for p in path:
        if isinstance(cur, dict):
            keys = list(cur)
            key.append(keys.index(p) if p in cur else len(keys))
            cur = cur.get(p)
        elif isinstance(cur, list) and isinstance(p, int) and p < len(cur):
            key.append(p)
            cur = cur[p]
        else:
            key.append(0)
    return key


def _leaf(err):
    """The most telling error of the alternatives of anyOf / oneOf.

    For anyOf / oneOf: the most telling error of the alternatives (deeper than the value itself, from the
    alternative with the fewest faults), or None when the value itself is the wrong kind."""
    if err.validator not in ("anyOf", "oneOf") or not err.context:
        return None
    groups = {}
    for e in err.context:
        groups.setdefault(e.schema_path[0], []).append(e)
    best = min(groups.values(), key=lambda es: (len(es), -max(len(e.relative_path) for e in es)))
    deep = [e for e in best if len(e.relative_path) > 0]
    if not deep:
        return None
    e = min(deep, key=lambda e: list(e.relative_path))
    return _leaf(e) or e


def _at(doc, path):
    for p in path:
        doc = doc[p]
    return doc


def _message(err, doc):
    """(field path, message) of a jsonschema error, worded as the model layer words its errors."""
    leaf = _leaf(err)
    if leaf is not None:
        err = leaf
    path, s, v = list(err.absolute_path), err.schema, err.instance
    if err.validator == "required":
        missing = [k for k in err.validator_value if not isinstance(v, dict) or k not in v]
        return _field(path + missing[:1]), "missing"
    if err.validator == "additionalProperties":
        allowed = sorted(s.get("properties", {}))
        unknown = sorted((k for k in v if k not in allowed), key=lambda k: (not isinstance(k, str), str(k)))
        return _field(path), f"unknown keys {_short(unknown)} (allowed: {allowed})"
    if err.validator in ("maxItems", "maxLength") and "x-limit" in s:
        key, what = s["x-limit"]
        if key == "name_length":
            return _field(path), f"a name is at most {LIMITS[key]} characters, got {len(v):,} ({limits_text()})"
        return _field(path), f"{len(v):,} {what} exceed the limit of {LIMITS[key]:,} ({limits_text()})"
    if "propertyNames" in err.schema_path or err.validator in ("minProperties", "maxProperties"):
        return _field(path), f"expected one of {FORCE_FUNCTIONS} (a mapping with one key) or a number, got " \
                             f"{_short(_at(doc, path))}"
    if err.validator == "enum" and "x-unknown" in s and isinstance(v, str):
        return _field(path), f"unknown {s['x-unknown']} {_short(v)} (known: {', '.join(s['enum'])})"
    return _field(path), f"expected {s.get('x-expected') or err.message}, got {_short(v)}"


@lru_cache(maxsize=1)
def _validator():
    """The draft 2020-12 validator that skips what _decide() settles.

    Draft 2020-12 whose "properties", "items" and "if" skip what _decide() settles (jsonschema spends ~15 us on
    each value it descends into, and a model file is mostly numbers); everything else is validated in full."""
    from jsonschema import Draft202012Validator, validators
    base = Draft202012Validator.VALIDATORS

    def properties(validator, props, instance, schema):
        if not validator.is_type(instance, "object"):
            return
        for p, sub in props.items():
            if p in instance and _decide(sub, instance[p]) is not True:
                yield from validator.descend(instance[p], sub, path=p, schema_path=p)

    def items(validator, sub, instance, schema):
        if validator.is_type(instance, "array") and all(_decide(sub, x) is True for x in instance):
            return
        yield from base["items"](validator, sub, instance, schema)

    def if_(validator, if_schema, instance, schema):
        ok = _decide(if_schema, instance)
        if ok is None:
            ok = validator.evolve(schema=if_schema).is_valid(instance)
        branch = "then" if ok else "else"
        if branch in schema:
            yield from validator.descend(instance, schema[branch], schema_path=branch)

    schema = model_schema()        # a valid draft 2020-12 schema: tests/model/test_schema.py checks it against the
    # metaschema (0.2 s here, on every start-up, for a schema that the code builds)
    Fast = validators.extend(Draft202012Validator, {"properties": properties, "items": items, "if": if_})
    return Fast(schema)


def _over_limits(doc) -> bool:
    """Lists above the input limits: the loader refuses them with their own message before any item is read."""
    for key, limit in (("bodies", "bodies"), ("beams", "bodies"), ("joints", "bodies"), ("forces", "forces"),
                       ("loads", "forces")):
        v = doc.get(key)
        if isinstance(v, list) and len(v) > LIMITS[limit]:
            return True
    return False


def check_schema(doc, source: str) -> None:
    """Check the structure of a model file's top-level mapping.

    ModelError (file, field path, what was expected) for the first structural fault of a model file's
    top-level mapping, in document order; value ranges and cross-references are checked later."""
    if not isinstance(doc, dict) or _over_limits(doc):
        return
    schema = model_schema()
    if _accepts(schema, doc, schema) is True:       # valid: jsonschema would report nothing (not imported)
        return
    errors = [e for e in _validator().iter_errors(doc) if e.validator not in RANGE_KEYWORDS]
    if not errors:
        return
    first = min(errors, key=lambda e: (_order(doc, list(e.absolute_path)), e.validator == "additionalProperties"))
    field, message = _message(first, doc)
    raise ModelError(message, source, field)
