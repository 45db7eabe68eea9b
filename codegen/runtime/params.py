"""Model parameters addressed by path, for sweeps: ``bodies.link1.mass``, ``joints.j1.q0``, ``gravity.1``, ...

A path names a number of the model the way the model file does: a collection (``bodies``, ``joints``,
``forces``; beam models ``beams``, ``loads``), an element by name, its field, and an index into a vector
field. ``gravity`` (and ``gravity.<i>``) is the one top-level field. Numbers only: the topology (joint types,
parents, force kinds, beam elements) is fixed by the build, and a path that would change it is refused.
"""
from __future__ import annotations

import copy
import math
from typing import Dict, List, Sequence, Tuple

import numpy as np

from ..model import Beam, BeamModel, ModelError, beam_model_from_dict, validate

# fields a path may address, per collection (rigid models / beam models)
FIELDS = {
    "bodies": ("mass", "com", "inertia"),
    "joints": ("q0", "u0", "axis", "axis2", "parent_frame.pos", "child_frame.pos"),
    "forces": ("stiffness", "damping", "q_ref", "length", "point_a", "point_b", "value.constant",
               "value.sine.amplitude|frequency|phase|offset", "value.step.t0|before|after"),
    "beams": ("length", "E", "A", "I", "rho", "angle"),
    "beam joints": ("at", "axis", "q0"),
    "loads": ("s", "force"),
}
_FUNCTION = {("constant", None): "value", ("sine", "amplitude"): "amplitude", ("sine", "frequency"): "frequency",
             ("sine", "phase"): "phase", ("sine", "offset"): "offset", ("step", "t0"): "t0",
             ("step", "before"): "value_before", ("step", "after"): "value"}
_INERTIA = {"ixx": (0, 0), "iyy": (1, 1), "izz": (2, 2), "ixy": (0, 1), "ixz": (0, 2), "iyz": (1, 2)}
_POSITIVE_BEAM = {"length", "E", "A", "I", "rho"}


class ParamError(ValueError):
    """A bad parameter path or value: the message names the path."""


def _collection(model, root: str, path: str):
    beams = isinstance(model, BeamModel)
    if root == "bodies":
        return model.beams if beams else model.bodies
    if root == "beams" and beams:
        return model.beams
    if root == "joints":
        return model.joints
    if root == "forces" and not beams:
        return list(model.springs) + list(model.point_springs) + list(model.joint_forces)
    if root == "loads" and beams:
        return model.loads
    roots = ("gravity", "bodies", "beams", "joints", "loads") if beams else ("gravity", "bodies", "joints", "forces")
    raise ParamError(f"{path}: {root!r} is not a part of this {'beam ' if beams else ''}model; a path starts with one of "
                     f"{', '.join(roots)}")


def _fields_text(model, root):
    key = "beam joints" if root == "joints" and isinstance(model, BeamModel) else root
    return ", ".join(FIELDS.get(key, ()))


def _index(path, parts, shape):
    """Integer indices from the rest of the path, within ``shape``."""
    if len(parts) != len(shape):
        raise ParamError(f"{path}: a vector of {shape[0]} numbers needs an index, e.g. {path}.0"
                         if len(parts) < len(shape) else f"{path}: too many indices for a field of shape {shape}")
    idx = []
    for p, n in zip(parts, shape):
        if not p.isdigit() or int(p) >= n:
            raise ParamError(f"{path}: index {p!r} outside 0 .. {n - 1}")
        idx.append(int(p))
    return tuple(idx)


def _target(model, path: str):
    """(object, attribute, index or None, setter kind) addressed by the path."""
    parts = path.split(".")
    if not path or any(p == "" for p in parts):
        raise ParamError(f"{path!r}: empty path or empty part; e.g. bodies.link1.mass")
    if parts[0] == "gravity":
        g = np.asarray(model.gravity)
        idx = _index(path, parts[1:], g.shape) if len(parts) > 1 else None
        if idx is None and g.size > 1:
            raise ParamError(f"{path}: gravity has {g.size} components: use gravity.0 .. gravity.{g.size - 1}")
        return model, "gravity", idx
    items = _collection(model, parts[0], path)
    if len(parts) < 3:
        raise ParamError(f"{path}: expected {parts[0]}.<name>.<field> (fields: {_fields_text(model, parts[0])})")
    found = [x for x in items if x.name == parts[1]]
    if not found:
        names = [x.name for x in items]
        raise ParamError(f"{path}: no {parts[0][:-1] if parts[0] != 'bodies' else 'body'} named {parts[1]!r} "
                         + (f"(there are: {', '.join(names[:12])}{' ...' if len(names) > 12 else ''})" if names
                          else f"(the model has no {parts[0]})"))
    obj, field, rest = found[0], parts[2], parts[3:]
    if field == "value" and hasattr(obj, "function"):              # joint_force value: {sine: {amplitude: ..}}
        fn = obj.function
        kind = rest[0] if rest else None
        sub = rest[1] if len(rest) > 1 else None
        if kind != fn.kind or (kind, sub) not in _FUNCTION or len(rest) > (1 if kind == "constant" else 2):
            allowed = [f"value.{k}" + (f".{s}" if s else "") for (k, s) in _FUNCTION if k == fn.kind]
            raise ParamError(f"{path}: force {obj.name} is a {fn.kind} function; its numbers are "
                             f"{', '.join(f'forces.{obj.name}.{a}' for a in allowed) or 'not swept (table)'}")
        return fn, _FUNCTION[(kind, sub)], None
    if field in ("parent_frame", "child_frame") and rest[:1] == ["pos"]:
        return getattr(obj, field), "pos", _index(path, rest[1:], (3,))
    if field == "inertia" and hasattr(obj, "inertia"):
        if len(rest) == 1 and rest[0] in _INERTIA:
            return obj, "inertia", _INERTIA[rest[0]]
        if len(rest) == 1 and rest[0] in ("0", "1", "2"):
            return obj, "inertia", (int(rest[0]), int(rest[0]))   # a principal moment, as in the file
        raise ParamError(f"{path}: address one inertia entry: inertia.ixx|iyy|izz|ixy|ixz|iyz (or inertia.0 .. 2)")
    key = "beam joints" if parts[0] == "joints" and isinstance(model, BeamModel) else parts[0]
    allowed = [f.split(".")[0] for f in FIELDS.get(key, ())]
    if field not in allowed or not hasattr(obj, field) or getattr(obj, field) is None:
        raise ParamError(f"{path}: {obj.name} has no number {field!r} to sweep (fields: {_fields_text(model, parts[0])})")
    cur = getattr(obj, field)
    if np.ndim(cur) == 0:
        if rest:
            raise ParamError(f"{path}: {field} is a single number; drop {'.'.join(rest)!r}")
        return obj, field, None
    shape = np.shape(cur)
    if not rest and int(np.prod(shape)) == 1:
        return obj, field, (0,) * len(shape)                       # a one-coordinate joint: q0, stiffness, ...
    return obj, field, _index(path, rest, shape)


def check_path(model, path: str) -> None:
    """ParamError naming the path unless it addresses one number of the model."""
    _target(model, path)


def set_param(model, path: str, value) -> None:
    """Set one number of the model (in place)."""
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise ParamError(f"{path}: expected a number, got {value!r}") from None
    if not math.isfinite(v):
        raise ParamError(f"{path}: expected a finite number, got {value!r}")
    assign(_target(model, path), path, v)


def assign(target, path: str, v: float) -> None:
    """Set the number ``v`` (finite) at a resolved target (obj, field, idx) of ``_target``.

    Set_param without
    resolving the path again (the sweeps' fast path resolves each path once)."""
    obj, field, idx = target
    if isinstance(obj, Beam) and field in _POSITIVE_BEAM and v <= 0:
        raise ParamError(f"{path}: must be positive, got {v:g}")
    if idx is None:
        setattr(obj, field, v)
        return
    arr = np.array(getattr(obj, field), dtype=float)
    arr[idx] = v
    if field == "inertia" and idx[0] != idx[1]:
        arr[idx[::-1]] = v                                         # keep the inertia symmetric
    setattr(obj, field, arr)


def _beam_dict(m: BeamModel) -> dict:
    """The mapping of a beam model (as its file gives it), for beam_model_from_dict's checks."""
    return {"name": m.name, "gravity": np.asarray(m.gravity, float).tolist(),
            "beams": [{"name": b.name, "length": b.length, "elements": b.elements, "E": b.E, "A": b.A, "I": b.I,
                       "rho": b.rho, "angle": b.angle} for b in m.beams],
            "joints": [dict({"name": j.name, "type": j.type, "parent": j.parent, "child": j.child},
                            **({"at": np.asarray(j.at, float).tolist()} if j.parent == "ground" else {}),
                            **({"axis": np.asarray(j.axis, float).tolist(), "q0": j.q0} if j.type == "translational"
                               else {})) for j in m.joints],
            "loads": [{"name": ld.name, "beam": ld.beam, "s": ld.s, "force": np.asarray(ld.force, float).tolist()}
                      for ld in m.loads]}


def with_params(model, names: Sequence[str], values: Sequence[float]):
    """A validated copy of the model with the numbers set; ModelError or ParamError naming the path."""
    m = copy.deepcopy(model)
    for n, v in zip(names, values):
        set_param(m, n, v)
    try:
        if isinstance(m, BeamModel):                 # the checks of a beam model file, on the new numbers
            m2 = beam_model_from_dict(_beam_dict(m), source=m.source)
            m2.simulation = m.simulation
            return m2
        validate(m)
    except ModelError as e:
        what = ", ".join(f"{n} = {v:g}" for n, v in zip(names, values))
        raise ParamError(f"{what}: {e}") from None
    return m


def parse_values(text: str, path: str = "") -> List[float]:
    """'START:STOP:COUNT' (COUNT values, ends included), 'v1,v2,...' or one value."""
    label = f"--set {path}={text}" if path else text

    def num(s):
        try:
            x = float(s)
        except ValueError:
            raise ParamError(f"{label}: {s.strip()!r} is not a number") from None
        if not math.isfinite(x):
            raise ParamError(f"{label}: {s.strip()!r} is not a finite number")
        return x

    if ":" in text:
        parts = text.split(":")
        if len(parts) != 3:
            raise ParamError(f"{label}: a range is START:STOP:COUNT")
        a, b = num(parts[0]), num(parts[1])
        try:
            n = int(parts[2])
        except ValueError:
            raise ParamError(f"{label}: COUNT {parts[2]!r} must be a whole number") from None
        if n < 1 or (n == 1 and a != b):
            raise ParamError(f"{label}: COUNT must be at least 2 (1 only when START = STOP), got {n}")
        if n > MAX_RUNS:
            raise ParamError(f"{label}: COUNT {n:,} is above the limit of {MAX_RUNS:,} runs of a sweep")
        return np.linspace(a, b, n).tolist()
    vals = [num(s) for s in text.split(",")]
    if not vals:
        raise ParamError(f"{label}: no values")
    return vals


def parse_set(spec: str) -> Tuple[str, List[float]]:
    """'PATH=VALUES' of the command line."""
    path, eq, text = spec.partition("=")
    if not eq or not path.strip() or not text.strip():
        raise ParamError(f"--set {spec}: expected PATH=START:STOP:COUNT or PATH=v1,v2,... "
                         f"(e.g. bodies.link1.mass=1:2:11)")
    return path.strip(), parse_values(text.strip(), path.strip())


def checked_rows(params, values, every_up_to: int = 1000):
    """The combinations checked before a sweep starts.

    All of them up to `every_up_to` runs; beyond, every value
    of each parameter (the others at their first value) and the corners of the grid (a run that still fails
    its model checks is reported by the sweep, with the others kept)."""
    import itertools
    if len(values) <= every_up_to:
        return values
    axes = [np.asarray(v, float) for v in params.values()]
    first = [a[0] for a in axes]
    rows = [first[:i] + [x] + first[i + 1:] for i, a in enumerate(axes) for x in np.unique(a)]
    if len(axes) <= 10:
        rows += [list(c) for c in itertools.product(*[(a.min(), a.max()) for a in axes])]
    return rows


MAX_RUNS = 1_000_000          # runs of one sweep (a grid is checked before it is made)


def grid(params) -> Tuple[List[str], np.ndarray]:
    """The runs of a sweep: (names, values runs x n_params).

    A dict path -> values makes the full grid (itertools.product order,
    the last path varying fastest); a list of dicts gives the runs one by one. At most MAX_RUNS runs."""
    if isinstance(params, dict):
        names = list(params)
        axes = [np.atleast_1d(np.asarray(params[n], dtype=float)) for n in names]
        for n, a in zip(names, axes):
            if a.ndim != 1 or a.size == 0:
                raise ParamError(f"{n}: expected a non-empty list of numbers")
        runs = math.prod(a.size for a in axes)
        if runs > MAX_RUNS:
            raise ParamError(f"{' x '.join(f'{a.size:,}' for a in axes)} = {runs:,} runs: above the limit of "
                             f"{MAX_RUNS:,} runs of a sweep")
        mesh = np.meshgrid(*axes, indexing="ij")
        return names, np.stack([g.reshape(-1) for g in mesh], axis=1) if names else np.zeros((1, 0))
    runs: List[Dict] = list(params)
    if not runs:
        raise ParamError("no runs: params is an empty list")
    if len(runs) > MAX_RUNS:
        raise ParamError(f"{len(runs):,} runs: above the limit of {MAX_RUNS:,} runs of a sweep")
    names = list(runs[0])
    for k, r in enumerate(runs):
        if list(r) != names:
            raise ParamError(f"run {k}: parameters {sorted(r)} differ from run 0's {sorted(names)}")
    return names, np.array([[float(r[n]) for n in names] for r in runs], dtype=float).reshape(len(runs), len(names))
