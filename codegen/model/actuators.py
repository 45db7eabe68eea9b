"""Actuators: controls that drive joint coordinates, in the kinds MuJoCo users know.

Every kind is MuJoCo's affine actuator with a joint or fixed-tendon transmission:

    L = gear q_d,   V = gear u_d                       (length and velocity of the transmission, MuJoCo's
                                                        actuator_length / actuator_velocity; on a fixed
                                                        tendon: gear times its length and velocity)
    c = clamp(ctrl, ctrlrange)                         (ctrlrange absent: not clamped)
    f = (g0 + g1 L + g2 V) w + b0 + b1 L + b2 V        (gainprm[0:3], biasprm[0:3]; w = c without activation
                                                        dynamics, else w = act, the actuator's activation state)
    f = clamp(f, forcerange)                           (forcerange absent: not clamped)
    tau_d += gear f                                    (the generalized force on coordinate d of the joint)

    motor:    g = (1, 0, 0),   b = (0, 0, 0)
    position: g = (kp, 0, 0),  b = (0, -kp, -kv)       (kv optional, default 0)
    velocity: g = (kv, 0, 0),  b = (0, 0, -kv)
    general:  g, b given

Activation dynamics (MuJoCo's ``dyntype``, optional): the actuator has one more state, its activation act,
integrated with q and u by every integrator (the state is x = (q, u, act), act = 0 at the start unless given):

    integrator:             dact/dt = c
    filter, filterexact:    dact/dt = (c - act) / timeconst        (MuJoCo's dynprm[0]. filterexact is the same
                                                                    equation: MuJoCo applies an exponential update
                                                                    to the step's (averaged) rate, which is exact
                                                                    for its Euler step and first order in
                                                                    h / timeconst under its RK4; our integrators
                                                                    integrate the ODE to their own order)
    actrange [lo, hi]:      act stays in it: dact/dt = 0 where it would leave, w = clamp(act, lo, hi)

The control of each actuator is an input of the compiled module (``ctrl=`` of forward_dynamics, simulate and
rollout, in the order of the file's ``actuators:`` list); without one, the actuator's own ``ctrl`` function of
the file (a constant, sine, step or table of time, default 0) drives it inside compiled code, so a position
actuator with a ``ctrl`` table is a compiled PD law tracking that reference.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Optional

import numpy as np

from .checks import ModelError, _num, _short, _vec
from .layout import Layout

ACTUATOR_KINDS = ("motor", "position", "velocity", "general")
# activation dynamics (MuJoCo's mjtDyn names, its order): none, or one state per actuator
DYNAMICS = ("none", "integrator", "filter", "filterexact")
# where the compiled module takes the controls from (its CTRL_* codes): each actuator's ctrl function of the file,
# given values, a table over time, a Python callable
CTRL_SOURCES = (("file", 0), ("values", 1), ("table", 2), ("callable", 3))
# numbers per actuator in the parameter vector (its ctrl function's follow): gear, gain g0..g2, bias b0..b2, ctrl
# range, force range, filter time constant, activation range (+-inf: no limit)
ACTUATOR_PARAMS = Layout(("gear", 1), ("gain", 3), ("bias", 3), ("ctrlrange", 2), ("forcerange", 2), ("timeconst", 1),
                         ("actrange", 2))
NPA = ACTUATOR_PARAMS.size


@dataclass
class Actuator:
    """An actuator on a joint coordinate or a tendon: its kind, gains, gear and ranges."""

    name: str
    joint: str
    kind: str = "motor"                  # motor | position | velocity | general
    dof: int = 0                         # velocity coordinate of the joint (scalar-coordinate joints)
    gear: float = 1.0
    kp: float = 0.0                      # position
    kv: float = 0.0                      # position (optional), velocity
    gain: Optional[np.ndarray] = None    # general: g0, g1, g2
    bias: Optional[np.ndarray] = None    # general: b0, b1, b2
    ctrlrange: Optional[np.ndarray] = None
    forcerange: Optional[np.ndarray] = None
    ctrl: object = None                  # TimeFunction: the file's control signal (default constant 0)
    tendon: Optional[str] = None         # a fixed tendon instead of a joint (joint None): L = gear tendon length
    dynamics: str = "none"               # activation dynamics: none | integrator | filter | filterexact
    timeconst: float = 0.0               # filter, filterexact: dact/dt = (c - act) / timeconst [s]
    actrange: Optional[np.ndarray] = None  # the activation stays in [lo, hi] (default: not limited)

    @property
    def stateful(self) -> bool:
        """Whether the actuator has an activation state (activation dynamics other than none)."""
        return self.dynamics != "none"

    def affine(self):
        """(gain, bias): the three coefficients of each, every kind in the general form."""
        if self.kind == "motor":
            return np.array([1.0, 0, 0]), np.zeros(3)
        if self.kind == "position":
            return np.array([self.kp, 0, 0]), np.array([0.0, -self.kp, -self.kv])
        if self.kind == "velocity":
            return np.array([self.kv, 0, 0]), np.array([0.0, 0, -self.kv])
        return np.asarray(self.gain, float), np.asarray(self.bias, float)

    def params(self) -> np.ndarray:
        """The NPA numbers of the compiled module, laid out by ACTUATOR_PARAMS (+-inf: no limit)."""
        out, L = np.zeros(NPA), ACTUATOR_PARAMS
        g, b = self.affine()
        L.view(out, "gear")[:] = self.gear
        L.view(out, "gain")[:], L.view(out, "bias")[:] = g, b
        for name in ("ctrlrange", "forcerange", "actrange"):
            r = getattr(self, name)
            L.view(out, name)[:] = r if r is not None else (-math.inf, math.inf)
        L.view(out, "timeconst")[:] = self.timeconst
        return out


def validate_actuators(model, check_function, scalar_joints, zero) -> None:
    """Check every actuator of a model; normalise numbers in place.

    Check_function(fn, field): validates a TimeFunction; scalar_joints: the joint types with scalar coordinates;
    zero(): the default ctrl function (codegen.model.core passes all three)."""
    src = model.source
    joints = {j.name: j for j in model.joints}
    for i, a in enumerate(model.actuators):
        f = f"actuators[{a.name if isinstance(a, Actuator) and isinstance(a.name, str) else i}]"
        if not isinstance(a, Actuator):
            raise ModelError(f"expected an Actuator, got {_short(a)}", src, f)
        if not isinstance(a.kind, str) or a.kind not in ACTUATOR_KINDS:
            raise ModelError(f"unknown actuator type {_short(a.kind)} (known: {', '.join(ACTUATOR_KINDS)})", src,
                             f + ".type")
        if (a.joint is None) == (a.tendon is None):
            raise ModelError("an actuator drives either a joint or a tendon", src, f)
        if a.tendon is not None:
            if a.tendon not in {t.name for t in getattr(model, "tendons", [])}:
                raise ModelError(f"tendon {_short(a.tendon)} does not exist", src, f + ".tendon")
        else:
            j = joints.get(a.joint) if isinstance(a.joint, str) else None
            if j is None:
                raise ModelError(f"joint {_short(a.joint)} does not exist", src, f + ".joint")
            if j.type not in scalar_joints:
                raise ModelError(f"a {j.type} joint has no scalar coordinates to actuate (actuators drive revolute, "
                                 "prismatic, cylindrical, universal and planar coordinates)", src, f + ".joint")
            a.dof = _num(a.dof, src, f + ".dof", integer=True)
            if not (0 <= a.dof < j.nv):
                raise ModelError(f"dof {a.dof} out of range for a {j.type} joint ({j.nv} velocities)", src,
                                 f + ".dof")
        a.gear = _num(a.gear, src, f + ".gear")
        if a.gear == 0:
            raise ModelError("gear must be non-zero", src, f + ".gear")
        a.kp = _num(a.kp, src, f + ".kp", nonneg=True, what="kp")
        a.kv = _num(a.kv, src, f + ".kv", nonneg=True, what="kv")
        if a.kind == "general":
            a.gain = _vec(a.gain if a.gain is not None else [1.0, 0, 0], 3, src, f + ".gain")
            a.bias = _vec(a.bias if a.bias is not None else [0.0, 0, 0], 3, src, f + ".bias")
        if not isinstance(a.dynamics, str) or a.dynamics not in DYNAMICS:
            raise ModelError(f"unknown activation dynamics {_short(a.dynamics)} (known: {', '.join(DYNAMICS)})",
                             src, f + ".dynamics")
        a.timeconst = _num(a.timeconst, src, f + ".timeconst", nonneg=True, what="timeconst")
        if a.dynamics in ("filter", "filterexact") and not a.timeconst > 0:
            raise ModelError(f"a {a.dynamics} actuator needs a time constant > 0 (dact/dt = (ctrl - act) / timeconst)",
                             src, f + ".timeconst")
        if a.dynamics == "none" and (a.timeconst or a.actrange is not None):
            raise ModelError("timeconst and actrange belong to an actuator with activation dynamics (dynamics: "
                             "integrator, filter or filterexact)", src, f + ".dynamics")
        for k in ("ctrlrange", "forcerange", "actrange"):
            r = getattr(a, k)
            if r is not None:
                r = _vec(r, 2, src, f"{f}.{k}")
                if not r[0] <= r[1]:
                    raise ModelError(f"{k} must be [low, high] with low <= high, got {_short(r.tolist())}", src,
                                     f"{f}.{k}")
                setattr(a, k, r)
        if a.ctrl is None:
            a.ctrl = zero()
        check_function(a.ctrl, f + ".ctrl")


def actuator_dict(a: Actuator, function_dict) -> dict:
    """The file form of an actuator (codegen.model.core.model_dict; function_dict: a TimeFunction's file form)."""
    d = {"name": a.name, "type": a.kind, **({"tendon": a.tendon} if a.tendon is not None else {"joint": a.joint})}
    if a.dof:
        d["dof"] = int(a.dof)
    if a.gear != 1.0:
        d["gear"] = float(a.gear)
    if a.kind == "position":
        d["kp"] = float(a.kp)
        if a.kv:
            d["kv"] = float(a.kv)
    elif a.kind == "velocity":
        d["kv"] = float(a.kv)
    elif a.kind == "general":
        d["gain"], d["bias"] = [float(x) for x in a.gain], [float(x) for x in a.bias]
    if a.stateful:
        d["dynamics"] = a.dynamics
        if a.timeconst:
            d["timeconst"] = float(a.timeconst)
    for k in ("ctrlrange", "forcerange", "actrange"):
        if getattr(a, k) is not None:
            d[k] = [float(x) for x in getattr(a, k)]
    if a.ctrl is not None and not (a.ctrl.kind == "constant" and a.ctrl.value == 0):
        d["ctrl"] = function_dict(a.ctrl)
    return d


ACTUATOR_KEYS = {"name", "type", "joint", "tendon", "dof", "gear", "kp", "kv", "gain", "bias", "ctrlrange", "forcerange", "ctrl",
                 "dynamics", "timeconst", "actrange"}
_KIND_KEYS = {"motor": set(), "position": {"kp", "kv"}, "velocity": {"kv"}, "general": {"gain", "bias"}}


def actuator_from_dict(d: dict, source: str, fld: str, name, time_function) -> Actuator:
    """One entry of a file's ``actuators:`` list (keys checked against its type)."""
    kind = d.get("type", "motor")
    if not isinstance(kind, str) or kind not in ACTUATOR_KINDS:
        raise ModelError(f"unknown actuator type {_short(kind)} (known: {', '.join(ACTUATOR_KINDS)})", source,
                         fld + ".type")
    extra = sorted(set(d) & (set().union(*_KIND_KEYS.values()) - _KIND_KEYS[kind]))
    if extra:
        raise ModelError(f"a {kind} actuator takes no {', '.join(extra)}", source, fld)
    if kind == "position" and "kp" not in d:
        raise ModelError("missing (a position actuator needs its gain kp)", source, fld + ".kp")
    if kind == "velocity" and "kv" not in d:
        raise ModelError("missing (a velocity actuator needs its gain kv)", source, fld + ".kv")
    if "name" not in d:
        raise ModelError("missing", source, f"{fld}.name")
    if ("joint" in d) == ("tendon" in d):
        raise ModelError("an actuator drives either a joint or a tendon (one of the two keys)", source, fld)
    tendon = name(d["tendon"], fld + ".tendon", "tendon name") if "tendon" in d else None
    return Actuator(name(d["name"], fld + ".name", "actuator name"),
                    None if tendon else name(d["joint"], fld + ".joint", "joint name"),
                    kind, d.get("dof", 0), d.get("gear", 1.0), d.get("kp", 0.0), d.get("kv", 0.0), d.get("gain"),
                    d.get("bias"), d.get("ctrlrange"), d.get("forcerange"),
                    time_function(d["ctrl"], source, fld + ".ctrl") if "ctrl" in d else None, tendon,
                    d.get("dynamics", "none"), d.get("timeconst", 0.0), d.get("actrange"))


__all__ = ["ACTUATOR_KINDS", "ACTUATOR_PARAMS", "ACTUATOR_KEYS", "CTRL_SOURCES", "DYNAMICS", "NPA", "Actuator", "actuator_dict", "actuator_from_dict",
           "validate_actuators"]
