"""The sweeps' fast path: runs that change only numbers.

A run that changes only numbers (masses, lengths, stiffnesses, the initial state, ...) is made
without a copy and a full validation of the model, and without re-deriving its topology.

    numbers = FastNumbers(model, ["bodies.link1.mass", "joints.j1.q0"])
    m = numbers.apply([1.5, 0.2])        # the prototype with the numbers set and checked (ParamError as with_params)
    loader = FastLoader(system, model, names)
    loader.load([1.5, 0.2])              # as system.update_model(with_params(model, names, values))

The structure is validated once, on a prototype (a validated copy of the model). Per run only the changed
numbers are set on it (each path resolved once) and checked: exactly the checks ``validate`` makes of those
fields (range, sign, the inertia's definiteness, the mass matrix's regularity when a body may be degenerate).
A run whose numbers fail them is handed to the slow path (``with_params``), which raises the very message of a
full validation; so refused runs fail with the same words, and accepted runs hold the same numbers bit for bit.
The parameter vector comes from one plan bound to the prototype (tree_plan.Plan: its structure depends on the
topology only) and the compile-time pattern (code_pattern) is computed once, again per run only when a joint
placement changes. Paths this module does not know the checks of (joint axes, quaternion q0, beam models) take
the slow path for every run (``FastNumbers.why`` says why).
"""
from __future__ import annotations

import copy
import math
from typing import Sequence

import numpy as np

from ..model import ModelError, validate
from ..model.checks import _check_inertias, _mat3, _num, _physical, _vec
from ..model.core import Body, JointSpringDamper, Model, Placement, PointSpringDamper, TimeFunction
from ..model.joint_types import JOINT_TYPES
from ..model.massprops import check_mass_matrix, degenerate
from .params import ParamError, _target, assign, with_params

PATTERN_CHANGED = ("the compiled kernel is specialised to the old placements (which offsets are zero, which joint "
                   "frames are unrotated) and the new numbers differ there: build a new System")


class _Slow(Exception):
    """The run's numbers need the full validation (a refusal, or a warning only it gives)."""


class FastNumbers:
    """A prototype of ``model`` whose numbers at ``names`` are set and checked per run (see the module)."""

    def __init__(self, model, names: Sequence[str]):
        self.model, self.names = model, list(names)
        self.fast, self.why, self.placement = False, "", False
        if type(model) is not Model:
            self.why = "not a rigid-body model"
            return
        proto = copy.deepcopy(model)
        try:
            validate(proto)                       # (normalised as with_params normalises each run's copy)
        except ModelError as e:
            self.why = f"the model does not validate: {e}"
            return
        self.proto, self.src = proto, proto.source
        targets, checks, bodies, saved = [], {}, [], {}
        for path in self.names:
            t = _target(proto, path)              # ParamError for a bad path, as with_params
            obj, field, idx = t
            how = self._checks(path, obj, field)
            if how is None:
                return                            # self.why set: the slow path for every run
            targets.append(t)
            for kind, f, check in how:
                checks.setdefault((kind, f), check)          # (com.0 and com.2: one check of com)
            if isinstance(obj, Body) and obj not in bodies:
                bodies.append(obj)
            saved[(id(obj), field)] = (obj, field, getattr(obj, field))
        self.targets, self.checks, self.bodies, self.saved = targets, list(checks.values()), bodies, list(saved.values())
        self.base_degenerate = any(degenerate(b) for b in proto.bodies)
        self.triangle = not proto.allow_nonphysical_inertia
        self.fast = True

    def _checks(self, path, obj, field):
        """The checks validate() makes of this field (closures over the prototype's objects), or None (slow)."""
        src, root = self.src, path.split(".")[0]
        if root == "gravity":
            return []                                            # finite (set_param) is all validate asks
        if isinstance(obj, Body) and field in ("mass", "com", "inertia"):
            f = f"bodies[{obj.name}].{field}"
            if field == "mass":
                return [("mass", f, lambda: _physical(_num(obj.mass, src, f, nonneg=True, what="mass"), src, f))]
            if field == "com":
                return [("com", f, lambda: _physical(_vec(obj.com, 3, src, f), src, f))]

            def inertia():
                J = _mat3(obj.inertia, src, f)
                _physical(J, src, f)
                if _check_inertias([J], src, [f], triangle=self.triangle):
                    raise _Slow(f)                               # only validate's warning: the slow path gives it
            return [("inertia", f, inertia)]
        if root == "joints" and field in ("q0", "u0") and hasattr(obj, "type") and obj.type in JOINT_TYPES:
            if field == "q0" and JOINT_TYPES[obj.type].quaternion is not None:
                self.why = f"{path}: a quaternion part is normalised by the full validation"
                return None
            return []                                            # a list of numbers (finite): validate's _vec
        if root == "joints" and isinstance(obj, Placement) and field == "pos":
            side = path.split(".")[2]
            f = f"joints[{path.split('.')[1]}].{side}.pos"
            self.placement = True                                # the code pattern may change: checked per run
            return [("pos", f, lambda: _physical(_vec(obj.pos, 3, src, f), src, f))]
        if isinstance(obj, JointSpringDamper) and field in ("stiffness", "damping", "q_ref"):
            def spring():
                if np.any(np.asarray(obj.stiffness) < 0) or np.any(np.asarray(obj.damping) < 0):
                    raise _Slow(obj.name)
            return [("spring", obj.name, spring)]
        if isinstance(obj, PointSpringDamper) and field in ("stiffness", "damping", "length", "point_a", "point_b"):
            if field.startswith("point"):
                return []
            f = f"forces[{obj.name}].{field}"
            return [(field, f, lambda: _num(getattr(obj, field), src, f, nonneg=True, what=field))]
        if isinstance(obj, TimeFunction):
            return []                                            # validate: finite numbers (set_param)
        self.why = f"{path}: checked by the full validation only"
        return None

    def apply(self, values) -> Model:
        """The model with the numbers set.

        The prototype (changed in place: valid until the next call) when the
        fast checks pass, else the slow path's copy; ParamError exactly as ``with_params``."""
        if not self.fast:
            return with_params(self.model, self.names, values)
        vals = []
        for v in values:
            v = float(v)
            if not math.isfinite(v):
                return with_params(self.model, self.names, values)
            vals.append(v)
        for obj, field, value in self.saved:
            setattr(obj, field, value)
        try:
            for t, path, v in zip(self.targets, self.names, vals):
                assign(t, path, v)
            for check in self.checks:
                check()
            if self.base_degenerate or any(degenerate(b) for b in self.bodies):
                check_mass_matrix(self.proto)
        except (ModelError, ParamError, _Slow):
            return with_params(self.model, self.names, values)   # the full validation's words (or its copy)
        return self.proto


class FastLoader:
    """``system.update_model(with_params(model, names, values))`` for runs that change only numbers."""

    def __init__(self, system, model, names: Sequence[str]):
        from ..algorithms.tree_plan import Plan
        self.system, self.numbers = system, FastNumbers(model, names)
        self.plan, self.pattern = None, None
        if self.numbers.fast:
            plan = system.family.make_plan(self.numbers.proto)
            self.plan = plan if type(plan) is Plan else None     # other plans: made per run (they may hold numbers)
            if hasattr(system.plan, "code_pattern"):
                self.pattern = system.plan.code_pattern()       # once per topology, not twice per run

    def load(self, values) -> Model:
        """Load the numbers of one run into the system (as update_model(with_params(...)) does)."""
        m = self.numbers.apply(values)
        s = self.system
        if m is not getattr(self.numbers, "proto", None):
            s.update_model(m)                                    # the slow path's model
            return m
        plan = self.plan if self.plan is not None else s.family.make_plan(m)
        if self.numbers.placement and self.pattern is not None and plan.code_pattern() != self.pattern:
            raise ValueError(PATTERN_CHANGED)
        s.model, s.plan = m, plan
        p = s._params()
        for k in s._kernels():
            k.set_params(p)
        s._numbers_changed()
        return m


__all__ = ["FastLoader", "FastNumbers", "PATTERN_CHANGED"]
