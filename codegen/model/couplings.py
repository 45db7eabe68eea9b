"""Couplings: hard equality constraints between scalar coordinates.

Couplings: hard equality constraints between scalar coordinates (MuJoCo's joint and tendon equality constraints,
URDF's ``<mimic>``), the model's ``couplings:`` section.

    L1 = p(L2) = c0 + c1 L2 + c2 L2^2 + c3 L2^3 + c4 L2^4

L1 and L2 are each one coordinate of a scalar joint (``joint``, ``dof``; ``joint2``, ``dof2``) or a fixed tendon's
length (``tendon``, ``tendon2``: L = sum coef q); without a second side, L1 = c0. ``multiplier`` m and
``offset`` o are the linear form (URDF mimic): L1 = m L2 + o. Each coupling is one constraint row

    Phi = L1 - p(L2),   J = a - p'(L2) b  (a, b: the coordinates' coefficients of L1 and L2),
    gamma = p''(L2) (b . u)^2             (Phi'' = J udot - gamma)

solved with the cut joints' rows by Lagrange multipliers with Baumgarte's stabilisation (codegen.symbolic.loops
``coupling_kernel``, templates/recursive/loops.pyx.j2). The initial state must satisfy it (checked when a
system is made, as a cut joint's closure; the robot file importers set the coupled coordinate's q0 so it does).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import List, Optional, Tuple

import numpy as np

from .checks import ModelError, _num, _short

COUPLING_KEYS = {"name", "joint", "dof", "tendon", "joint2", "dof2", "tendon2", "polycoef", "multiplier", "offset"}
NPOLY = 5             # c0 .. c4


@dataclass
class Coupling:
    """A hard equality constraint between two scalar coordinates or tendon lengths."""

    name: str
    joint: Optional[str] = None        # side 1: a joint coordinate ...
    joint2: Optional[str] = None       # side 2 (optional)
    polycoef: Optional[np.ndarray] = None   # c0 .. c4 (padded with zeros)
    dof: int = 0
    dof2: int = 0
    tendon: Optional[str] = None       # ... or a fixed tendon's length
    tendon2: Optional[str] = None

    def sides(self, model) -> Tuple[List[Tuple[str, int, float]], List[Tuple[str, int, float]]]:
        """(terms of L1, terms of L2): (joint, dof, coef) each."""
        tendons = {t.name: t for t in model.tendons}

        def terms(joint, dof, tendon):
            if tendon is not None:
                return [(tj.joint, tj.dof, float(tj.coef)) for tj in tendons[tendon].joints]
            return [] if joint is None else [(joint, dof, 1.0)]
        return terms(self.joint, self.dof, self.tendon), terms(self.joint2, self.dof2, self.tendon2)

    def residual(self, model, q) -> float:
        """Phi = L1 - p(L2) at q (the model's coordinate vector)."""
        off = {j.name: iq for j, (iq, _) in zip(model.joints, model.q_offsets())}
        s1, s2 = self.sides(model)
        L1 = sum(c * q[off[j] + d] for j, d, c in s1)
        L2 = sum(c * q[off[j] + d] for j, d, c in s2)
        return float(L1 - np.polynomial.polynomial.polyval(L2, self.polycoef))


def shifted(polycoef, r1: float, r2: float) -> np.ndarray:
    """The coefficients of x -> r1 + p(x - r2) (MuJoCo's equalities hold relative to qpos0: L1 - r1 = p(L2 - r2))."""
    P = np.polynomial.Polynomial(np.asarray(polycoef, float))(np.polynomial.Polynomial([-r2, 1.0]))
    c = np.zeros(NPOLY)
    c[:len(P.coef)] = P.coef
    c[0] += r1
    return c


def coupling_from_dict(d: dict, source, fld, name) -> Coupling:
    """A coupling from its file mapping (keys checked by the caller)."""
    for k in ("name",):
        if k not in d:
            raise ModelError("missing", source, f"{fld}.{k}")
    has_poly, has_lin = "polycoef" in d, ("multiplier" in d or "offset" in d)
    if has_poly and has_lin:
        raise ModelError("give polycoef or multiplier/offset, not both", source, fld)
    if has_lin:
        second = d.get("joint2") is not None or d.get("tendon2") is not None
        poly = [d.get("offset", 0.0)] + ([d.get("multiplier", 1.0)] if second or "multiplier" in d else [])
    else:
        poly = d.get("polycoef", [0.0, 1.0])
    return Coupling(name(d["name"], fld + ".name", "coupling name"),
                    None if d.get("joint") is None else name(d["joint"], fld + ".joint", "joint name"),
                    None if d.get("joint2") is None else name(d["joint2"], fld + ".joint2", "joint name"),
                    poly, d.get("dof", 0), d.get("dof2", 0),
                    None if d.get("tendon") is None else name(d["tendon"], fld + ".tendon", "tendon name"),
                    None if d.get("tendon2") is None else name(d["tendon2"], fld + ".tendon2", "tendon name"))


def coupling_dict(c: Coupling) -> dict:
    """The model-file mapping of a coupling."""
    d = {"name": c.name}
    for k in ("joint", "tendon", "joint2", "tendon2"):
        if getattr(c, k) is not None:
            d[k] = getattr(c, k)
    for k in ("dof", "dof2"):
        if getattr(c, k):
            d[k] = int(getattr(c, k))
    d["polycoef"] = [float(x) for x in c.polycoef]
    return d


def validate_couplings(model, scalar_joints, names: dict) -> None:
    """Check every coupling; normalise in place.

    (its coordinates or tendons, polycoef; names: the model's names so far, unique);
    normalise in place."""
    from .checks import _check_count
    src = model.source
    _check_count(model.couplings, "couplings", "forces", src, "couplings")
    joints = {j.name: j for j in model.joints}
    tendons = {t.name for t in model.tendons}
    for i, c in enumerate(model.couplings):
        f = f"couplings[{c.name if isinstance(c, Coupling) and isinstance(c.name, str) else i}]"
        if not isinstance(c, Coupling):
            raise ModelError(f"expected a Coupling, got {_short(c)}", src, f)
        used = []
        for side, (jk, dk, tk) in enumerate((("joint", "dof", "tendon"), ("joint2", "dof2", "tendon2"))):
            jn, tn = getattr(c, jk), getattr(c, tk)
            if jn is not None and tn is not None:
                raise ModelError(f"give {jk} or {tk}, not both", src, f)
            if jn is None and tn is None:
                if side == 0:
                    raise ModelError("a coupling needs a joint (or a tendon) to constrain", src, f + ".joint")
                if getattr(c, dk):
                    raise ModelError(f"{dk} without {jk}", src, f"{f}.{dk}")
                continue
            if tn is not None:
                if not isinstance(tn, str) or tn not in tendons:
                    raise ModelError(f"tendon {_short(tn)} does not exist (couplings take fixed tendons of the "
                                     "tendons: section)", src, f"{f}.{tk}")
                used.append(("tendon", tn))
                continue
            j = joints.get(jn) if isinstance(jn, str) else None
            if j is None:
                raise ModelError(f"joint {_short(jn)} does not exist", src, f"{f}.{jk}")
            if j.type not in scalar_joints:
                raise ModelError(f"a {j.type} joint has no scalar coordinate to couple (couplings take "
                                 f"{', '.join(sorted(scalar_joints))} joints)", src, f"{f}.{jk}")
            d = _num(getattr(c, dk), src, f"{f}.{dk}", integer=True)
            if not (0 <= d < j.nv):
                raise ModelError(f"{dk} {d} out of range for a {j.type} joint ({j.nv} coordinates)", src, f"{f}.{dk}")
            setattr(c, dk, d)
            used.append((jn, d))
        if len(used) == 2 and used[0] == used[1]:
            raise ModelError("a coordinate coupled to itself", src, f + ".joint2")
        p = c.polycoef
        if isinstance(p, (int, float, np.integer, np.floating)) and not isinstance(p, bool):
            p = [p]
        if not isinstance(p, (list, tuple, np.ndarray)) or not 1 <= len(p) <= NPOLY:
            raise ModelError(f"polycoef must be 1 to {NPOLY} numbers c0 .. c4 (L1 = c0 + c1 L2 + ... + c4 L2^4), "
                             f"got {_short(p if not isinstance(p, np.ndarray) else p.tolist())}", src,
                             f + ".polycoef")
        vals = np.zeros(NPOLY)
        for k, x in enumerate(p):
            vals[k] = _num(x, src, f"{f}.polycoef[{k}]")
        if c.joint2 is None and c.tendon2 is None and np.any(vals[1:]):
            raise ModelError("without joint2 (or tendon2) a coupling holds L1 = c0: the other coefficients need "
                             "a second coordinate", src, f + ".polycoef")
        c.polycoef = vals
        if c.name in names:
            raise ModelError(f"duplicate name {c.name!r}", src, f + ".name")
        names[c.name] = "coupling"
