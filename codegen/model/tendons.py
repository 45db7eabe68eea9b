"""Fixed tendons: lengths that are linear combinations of joint coordinates.

Fixed tendons: a length that is a linear combination of joint coordinates, with a spring, a damper, limits and
actuators on it (MuJoCo's fixed tendons).

    L = sum_i c_i q_i,   Ldot = sum_i c_i u_i                (q_i: scalar coordinates of revolute, prismatic,
                                                              cylindrical, universal or planar joints)
    F = -k (L - L0) - d Ldot + F_limit                       (L0: the spring's rest length; default L at q0)
    tau_i += c_i F

F_limit is the joint limits' compliant one-sided spring-damper (templates/shared/limits.pyx.j2) on L, with the
stiffness and damping of MuJoCo's solref for the tendon's effective mass 1 / (c^T M^-1 c) at the initial state.
An actuator on a tendon acts on L and Ldot (times its gear) and applies its force through the c_i.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import List, Optional

import numpy as np

from .checks import ModelError, _num, _short, _solref, _vec
from .layout import Layout

TENDON_KEYS = {"name", "joints", "stiffness", "damping", "length0", "limits", "limit_solref"}
# numbers per tendon in the parameter vector before its coefficients c_i: stiffness k, damping d, rest length L0,
# the limits lower, upper and their spring-damper klim, clim (set at run time: Plan.tendon_limit_gains)
TENDON_PARAMS = Layout(("k", 1), ("d", 1), ("L0", 1), ("lower", 1), ("upper", 1), ("klim", 1), ("clim", 1))
NPT = TENDON_PARAMS.size


@dataclass
class TendonJoint:
    """One joint of a tendon and its coefficient."""

    joint: str
    coef: float
    dof: int = 0


@dataclass
class Tendon:
    """A fixed tendon: a linear combination of joint coordinates with a spring, a damper and limits."""

    name: str
    joints: List[TendonJoint]
    stiffness: float = 0.0
    damping: float = 0.0
    length0: Optional[float] = None          # None: the length at the initial state
    limits: Optional[np.ndarray] = None      # [lower, upper]
    limit_solref: Optional[np.ndarray] = None


def validate_tendons(model, scalar_joints) -> None:
    """Check every tendon; normalise in place.

    (joints, coefficients, numbers, limits); normalise in place. scalar_joints: the joint
    types with scalar coordinates."""
    src = model.source
    joints = {j.name: j for j in model.joints}
    for i, t in enumerate(model.tendons):
        f = f"tendons[{t.name if isinstance(t, Tendon) and isinstance(t.name, str) else i}]"
        if not isinstance(t, Tendon):
            raise ModelError(f"expected a Tendon, got {_short(t)}", src, f)
        if not isinstance(t.joints, list) or not t.joints:
            raise ModelError("a tendon needs at least one joint coordinate", src, f + ".joints")
        seen = set()
        for k, tj in enumerate(t.joints):
            fk = f"{f}.joints[{k}]"
            j = joints.get(tj.joint) if isinstance(tj.joint, str) else None
            if j is None:
                raise ModelError(f"joint {_short(tj.joint)} does not exist", src, fk + ".joint")
            if j.type not in scalar_joints:
                raise ModelError(f"a {j.type} joint has no scalar coordinate for a fixed tendon", src, fk + ".joint")
            tj.dof = _num(tj.dof, src, fk + ".dof", integer=True)
            if not (0 <= tj.dof < j.nv):
                raise ModelError(f"dof {tj.dof} out of range for a {j.type} joint", src, fk + ".dof")
            if (tj.joint, tj.dof) in seen:
                raise ModelError(f"joint {tj.joint!r} coordinate {tj.dof} appears twice", src, fk)
            seen.add((tj.joint, tj.dof))
            tj.coef = _num(tj.coef, src, fk + ".coef")
        t.stiffness = _num(t.stiffness, src, f + ".stiffness", nonneg=True, what="stiffness")
        t.damping = _num(t.damping, src, f + ".damping", nonneg=True, what="damping")
        if t.length0 is not None:
            t.length0 = _num(t.length0, src, f + ".length0")
        if t.limits is not None:
            t.limits = _vec(t.limits, 2, src, f + ".limits")
            if not t.limits[0] < t.limits[1]:
                raise ModelError(f"lower must be below upper, got {_short(t.limits.tolist())}", src, f + ".limits")
            t.limit_solref = _solref(t.limit_solref, src, f + ".limit_solref")
        elif t.limit_solref is not None:
            raise ModelError("limit_solref without limits", src, f + ".limit_solref")


def tendon_from_dict(d: dict, source: str, fld: str, name) -> Tendon:
    """One entry of a file's ``tendons:`` list."""
    for k in ("name", "joints"):
        if k not in d:
            raise ModelError("missing", source, f"{fld}.{k}")
    js = d["joints"]
    if not isinstance(js, list):
        raise ModelError(f"expected a list of {{joint, coef}}, got {_short(js)}", source, fld + ".joints")
    out = []
    for k, e in enumerate(js):
        fk = f"{fld}.joints[{k}]"
        if not isinstance(e, dict) or "joint" not in e or "coef" not in e or set(e) - {"joint", "coef", "dof"}:
            raise ModelError(f"expected a mapping with joint, coef (and dof), got {_short(e)}", source, fk)
        out.append(TendonJoint(name(e["joint"], fk + ".joint", "joint name"), e["coef"], e.get("dof", 0)))
    return Tendon(name(d["name"], fld + ".name", "tendon name"), out, d.get("stiffness", 0.0), d.get("damping", 0.0),
                  d.get("length0"), d.get("limits"), d.get("limit_solref"))


def tendon_dict(t: Tendon) -> dict:
    """The model-file mapping of a tendon."""
    d = {"name": t.name, "joints": [{"joint": tj.joint, "coef": float(tj.coef), **({"dof": int(tj.dof)} if tj.dof
                                                                                  else {})} for tj in t.joints]}
    for k in ("stiffness", "damping", "length0"):
        v = getattr(t, k)
        if v:
            d[k] = float(v)
    if t.limits is not None:
        d["limits"], d["limit_solref"] = [float(x) for x in t.limits], [float(x) for x in t.limit_solref]
    return d
