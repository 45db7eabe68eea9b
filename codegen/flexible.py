"""Flexible planar beams: the recursive ANCF (RANCF) of Hu & Wang 2016, generated per model.

Paper: Hu Jingchen, Wang Tianshu, "A recursive absolute nodal coordinate formulation with O(n)
algorithm complexity", Chinese J. Theor. Appl. Mech. 48(5):1172-1183, 2016 (seed text
shared/seeds/000_2dfa52d2e1bf2ae2.txt); equation numbers are the paper's.  Model M3 of
shared/specs/models.md.

This module holds everything on the Python side of the ``rancf`` algorithm:

* the YAML schema and its validation (``beam_model_from_dict``; errors are ``ModelError`` naming the
  field), the model objects ``Beam``, ``BeamJoint``, ``BeamModel``;
* the plan (``BeamPlan``): elements in topological order, their kind (interior element, or the first
  element of a beam and the joint that carries it), the kinematic parent element, the offsets of the
  generalised speeds beta (eqs 12-14, 17-23), and the elimination order of the O(n) solve;
* parameters (per element mass matrix M_E (eq 4), E, A, I, l, gravity forces F_EG (eq 9), joint
  data), rendering of ``templates/rancf.pyx.j2``, compilation and caching;
* ``BeamSystem``: the compiled kernel with simulate() (rk4, dopri5 from the shared integrators,
  and an implicit HHT-alpha method with the analytical elastic Jacobian), and ``BeamResult``.

Schema (SI units; see examples/flexible_pendulum.yaml):

    name: flexible_pendulum
    gravity: [0, -9.81]              # 2 (or 3 with z = 0) components; default (0, -9.81)
    initial: {angle: 0.0}            # default initial direction of every beam [rad], at rest
    beams:
      - {name: b1, length: 5, elements: 5, E: 21e6, A: 4e-4, I: 2e-6, rho: 7800, angle: 0.0}
    joints:
      - {name: pin, type: revolute, parent: ground, child: b1, at: [0, 0]}      # ground pin
      - {name: j2, type: revolute, parent: b1, child: b2}                       # at the tip of b1
      - {name: s3, type: translational, parent: b2, child: b3, axis: [1, 0], q0: 0.0}
      - {name: c, type: fixed, parent: ground, child: b4, at: [0, 0]}           # ground clamp
    loads:                           # optional constant forces, F_E = S^T F (eq 8); s = arc length from the
      - {name: p, beam: b4, s: 5, force: [0, -100]}   # beam's first node (default: its tip)

Joint types (the child's first node is attached to the parent beam's tip node, or to a ground point):
    revolute       planar revolute: shared position, independent slopes (eqs 17-19, 23);
                   with parent ground: a pin at ``at``
    fixed          shared position and slope (a continuous beam); with parent ground: a clamp at ``at``
                   along the child's initial direction.  The clamp fixes the whole slope vector
                   r' = (cos angle, sin angle), so the axial strain is zero at the clamp (the usual ANCF
                   clamp): the first element is axially stiffer (a 2-element cantilever under an axial
                   tip load stretches 16/17 of N L / EA); the effect fades with mesh refinement
    translational  planar translational joint (eqs 20-21): r_child = r_parent + p gamma,
                   r'_child = lambda r'_parent (orientation locked, slope length free);
                   p = ``axis`` is a fixed direction in the world frame, as in eqs 20-21 (p_{k+1}
                   constant); ``q0`` = initial gamma.  With parent ground the slider starts at ``at``.
Each beam is straight at t = 0 along its ``angle``; a fixed or translational child must start with its
parent's angle (its slope is tied to the parent's).  The last node of the last beam is named ``tip``.
Numbers may be written 4e-4 (YAML 1.1 reads that as a string; it is accepted).  The potential energy
reported as ``energy_gravity`` is -F_E . e summed over the elements: gravity (eq 9) plus the constant loads.
"""
from __future__ import annotations

import hashlib
import json
import math
import os
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Dict, List, Optional

import numpy as np

from .model import GROUND, ModelError

# element kinds (must match templates/rancf.pyx.j2)
K_INT, K_REV, K_TRA, K_GPIN, K_GCLAMP, K_GTRA = range(6)
KIND_NAMES = ("interior", "revolute", "translational", "ground-pin", "ground-clamp", "ground-slider")
NPE = 82           # parameters per element: M(64) E A I l F_E(8) r0(2) t0(2) axis(2)
BEAM_JOINT_TYPES = ("revolute", "fixed", "translational")
_ALIASES = {"pin": "revolute", "planar_revolute": "revolute", "clamp": "fixed", "prismatic": "translational",
            "planar_translational": "translational", "slider": "translational"}
ALGORITHMS = ("rancf", "dense")          # O(n) recursion (eqs 44-55), dense Cholesky of the same Omega
INTEGRATORS = ("rk4", "dopri5", "hht")


# ====================================================================== model

@dataclass
class Beam:
    name: str
    length: float
    elements: int
    E: float
    A: float
    I: float
    rho: float
    angle: float = 0.0

    @property
    def mass(self) -> float:
        return self.rho * self.A * self.length


@dataclass
class BeamJoint:
    name: str
    type: str                 # revolute | fixed | translational
    parent: str               # beam name or ground
    child: str
    at: np.ndarray = field(default_factory=lambda: np.zeros(2))     # ground point
    axis: Optional[np.ndarray] = None                                # translational direction p
    q0: float = 0.0                                                  # initial gamma (translational)


@dataclass
class BeamLoad:
    """A constant force on a beam at arc length s from its first node (Hu & Wang eq 8: F_E = S^T F)."""
    name: str
    beam: str
    s: float
    force: np.ndarray


@dataclass
class BeamModel:
    name: str
    beams: List[Beam]
    joints: List[BeamJoint]
    gravity: np.ndarray = field(default_factory=lambda: np.array([0.0, -9.81]))
    source: str = "<model>"
    tau_hook: None = None
    loads: List[BeamLoad] = field(default_factory=list)

    def __post_init__(self):
        self._plan = None

    # rigid-model look-alikes used by the CLI
    @property
    def bodies(self):
        return self.beams

    @property
    def plan(self) -> "BeamPlan":
        if self._plan is None:
            self._plan = BeamPlan(self)
        return self._plan

    @property
    def nq(self) -> int:
        return self.plan.n

    @property
    def nv(self) -> int:
        return self.plan.n

    @property
    def coord_names(self) -> List[str]:
        return list(self.plan.coord_names)

    @property
    def velocity_names(self) -> List[str]:
        return [f"d({c})" for c in self.plan.coord_names]

    def initial_state(self):
        q = self.plan.initial_q()
        return q, np.zeros_like(q)

    def topology_key(self) -> dict:
        """What shapes the generated code (numbers are parameters)."""
        p = self.plan
        return {"kind": p.kind.tolist(), "par": p.par.tolist(), "beam": p.beam_of.tolist(),
                "eord": p.eord.tolist(), "succ": p.succ.tolist()}

    def roadmap(self) -> List[str]:
        return self.plan.roadmap()


def _num(v, source, fld, positive=False, integer=False):
    if isinstance(v, str):
        # YAML 1.1 (PyYAML) reads exponent forms without a dot, e.g. 4e-4 or 21e6, as strings
        try:
            v = float(v.strip())
        except ValueError:
            raise ModelError(f"expected a number, got {v!r}", source, fld) from None
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise ModelError(f"expected a number, got {v!r}", source, fld)
    v = float(v)
    if not math.isfinite(v):
        raise ModelError(f"must be finite, got {v}", source, fld)
    if integer and v != int(v):
        raise ModelError(f"expected an integer, got {v}", source, fld)
    if positive and v <= 0:
        raise ModelError(f"must be positive, got {v:g}", source, fld)
    return int(v) if integer else v


def _vec2(v, source, fld, nonzero=False):
    if not isinstance(v, (list, tuple)) or len(v) not in (2, 3):
        raise ModelError(f"expected a list of 2 numbers, got {v!r}", source, fld)
    out = np.array([_num(x, source, f"{fld}[{k}]") for k, x in enumerate(v)])
    if len(out) == 3:
        if out[2] != 0:
            raise ModelError("planar model: the z component must be 0", source, fld)
        out = out[:2]
    if nonzero and np.linalg.norm(out) == 0:
        raise ModelError("must be a non-zero vector", source, fld)
    return out


def _keys(d, allowed, source, fld):
    if not isinstance(d, dict):
        raise ModelError("expected a mapping", source, fld)
    unknown = set(d) - set(allowed)
    if unknown:
        raise ModelError(f"unknown keys {sorted(unknown)} (allowed: {sorted(allowed)})", source, fld)


_TOP = {"name", "gravity", "beams", "joints", "initial", "loads"}
_BEAM = {"name", "length", "elements", "E", "A", "I", "rho", "angle"}
_JOINT = {"name", "type", "parent", "child", "at", "axis", "q0"}
_LOAD = {"name", "beam", "s", "force"}


def beam_model_from_dict(d: dict, source: str = "<model>") -> BeamModel:
    """Validate a beam-model mapping (the YAML top level) and build the BeamModel."""
    _keys(d, _TOP, source, "<top level>")
    for k in ("beams", "joints"):
        if k not in d:
            raise ModelError("missing", source, k)
        if not isinstance(d[k], list) or not d[k]:
            raise ModelError("expected a non-empty list", source, k)
    init = d.get("initial", {}) or {}
    _keys(init, {"angle", "at_rest"}, source, "initial")
    if init.get("at_rest", True) is not True:
        raise ModelError("only 'at_rest: true' is supported (straight beams at rest)", source, "initial.at_rest")
    angle0 = _num(init.get("angle", 0.0), source, "initial.angle")
    beams, names = [], {}
    for i, b in enumerate(d["beams"]):
        fld = f"beams[{i}]"
        _keys(b, _BEAM, source, fld)
        for k in ("name", "length", "elements", "E", "A", "I", "rho"):
            if k not in b:
                raise ModelError("missing", source, f"{fld}.{k}")
        name = b["name"]
        if not isinstance(name, str) or not name or name == GROUND:
            raise ModelError(f"a beam name must be a non-empty string other than '{GROUND}'", source, f"{fld}.name")
        if name in names:
            raise ModelError(f"duplicate beam name '{name}'", source, f"{fld}.name")
        names[name] = i
        ne = _num(b["elements"], source, f"{fld}.elements", positive=True, integer=True)
        vals = {k: _num(b[k], source, f"{fld}.{k}", positive=True) for k in ("length", "E", "A", "I", "rho")}
        beams.append(Beam(name, vals["length"], ne, vals["E"], vals["A"], vals["I"], vals["rho"],
                          _num(b.get("angle", angle0), source, f"{fld}.angle")))
    joints, child_of = [], {}
    for i, j in enumerate(d["joints"]):
        fld = f"joints[{i}]"
        _keys(j, _JOINT, source, fld)
        for k in ("type", "parent", "child"):
            if k not in j:
                raise ModelError("missing", source, f"{fld}.{k}")
        t = _ALIASES.get(j["type"], j["type"])
        if t not in BEAM_JOINT_TYPES:
            raise ModelError(f"unknown joint type '{j['type']}' (known: {', '.join(BEAM_JOINT_TYPES)})",
                             source, f"{fld}.type")
        par, ch = j["parent"], j["child"]
        if ch not in names:
            raise ModelError(f"unknown beam '{ch}'", source, f"{fld}.child")
        if par != GROUND and par not in names:
            raise ModelError(f"unknown beam '{par}' (or '{GROUND}')", source, f"{fld}.parent")
        if par == ch:
            raise ModelError(f"beam '{ch}' is joined to itself", source, f"{fld}.parent")
        if ch in child_of:
            raise ModelError(f"beam '{ch}' is already the child of joint {child_of[ch]} (each beam has one "
                             "inboard joint; the structure must be a tree)", source, f"{fld}.child")
        child_of[ch] = i
        axis = None
        if t == "translational":
            if "axis" not in j:
                raise ModelError("a translational joint needs an axis (its sliding direction p, eqs 20-21)",
                                 source, f"{fld}.axis")
            axis = _vec2(j["axis"], source, f"{fld}.axis", nonzero=True)
            axis = axis / np.linalg.norm(axis)
        elif "axis" in j:
            raise ModelError(f"'axis' only applies to translational joints (this is {t})", source, f"{fld}.axis")
        if "at" in j and par != GROUND:
            raise ModelError("'at' only applies to joints with the ground (a beam joint sits at the parent's "
                             "tip)", source, f"{fld}.at")
        at = _vec2(j.get("at", [0.0, 0.0]), source, f"{fld}.at")
        q0 = _num(j.get("q0", 0.0), source, f"{fld}.q0")
        if "q0" in j and t != "translational":
            raise ModelError("'q0' (initial slide) only applies to translational joints", source, f"{fld}.q0")
        joints.append(BeamJoint(j.get("name", f"joint{i + 1}"), t, par, ch, at, axis, q0))
    for b in beams:
        if b.name not in child_of:
            raise ModelError(f"beam '{b.name}' has no joint (every beam needs one inboard joint)", source,
                             f"beams[{names[b.name]}]")
    # tree check: follow parents to ground
    jby = {j.child: j for j in joints}
    rooted = {GROUND}                     # beams known to reach the ground: O(number of beams) in all
    for b in beams:
        path, cur = set(), b.name
        while cur not in rooted:
            if cur in path:
                raise ModelError(f"joints form a loop through beam '{b.name}'", source,
                                 f"joints[{child_of[b.name]}].parent")
            path.add(cur)
            cur = jby[cur].parent
        rooted |= path
    # slope-locked children start with their parent's angle
    bby = {b.name: b for b in beams}
    for i, j in enumerate(joints):
        if j.type in ("fixed", "translational") and j.parent != GROUND:
            a, c = bby[j.parent].angle, bby[j.child].angle
            if abs(math.remainder(a - c, 2 * math.pi)) > 1e-12:
                raise ModelError(f"a {j.type} joint locks the slope direction: beam '{j.child}' must start with "
                                 f"the angle of '{j.parent}' ({a:g}), got {c:g}", source, f"beams[{names[j.child]}].angle")
    g = _vec2(d.get("gravity", [0.0, -9.81]), source, "gravity")
    name = d.get("name", os.path.splitext(os.path.basename(source))[0])
    if not isinstance(name, str) or not name:
        raise ModelError("expected a non-empty string", source, "name")
    loads = []
    if not isinstance(d.get("loads", []) or [], list):
        raise ModelError("expected a list", source, "loads")
    bby = {b.name: b for b in beams}
    for i, ld in enumerate(d.get("loads", []) or []):
        fld = f"loads[{i}]"
        _keys(ld, _LOAD, source, fld)
        for k in ("beam", "force"):
            if k not in ld:
                raise ModelError("missing", source, f"{fld}.{k}")
        if not isinstance(ld["beam"], str) or ld["beam"] not in bby:
            raise ModelError(f"unknown beam '{ld['beam']}'", source, f"{fld}.beam")
        bm = bby[ld["beam"]]
        sv = _num(ld.get("s", bm.length), source, f"{fld}.s")
        if not 0.0 <= sv <= bm.length:
            raise ModelError(f"must lie on the beam, 0 <= s <= {bm.length:g}, got {sv:g}", source, f"{fld}.s")
        loads.append(BeamLoad(str(ld.get("name", f"load{i + 1}")), bm.name, sv,
                              _vec2(ld["force"], source, f"{fld}.force")))
    return BeamModel(name, beams, joints, g, source, loads=loads)


def load_beam_model(path: str) -> BeamModel:
    from .model import load_model
    m = load_model(path)
    if not isinstance(m, BeamModel):
        raise ModelError("not a beam model (no 'beams' key)", path)
    return m


def pendulum(n_beams=5, n_elem=5, L_beam=5.0, E=21e6, A=4e-4, I=2e-6, rho=7800.0, g=(0.0, -9.81),
             name=None) -> BeamModel:
    """Model M3: a chain of beams, the first pinned to the ground at (0, 0), straight along +x."""
    d = {"name": name or f"flexible_pendulum_{n_beams}x{n_elem}", "gravity": list(g),
         "beams": [{"name": f"b{k + 1}", "length": L_beam, "elements": n_elem, "E": E, "A": A, "I": I, "rho": rho}
                   for k in range(n_beams)],
         "joints": [{"name": "pin", "type": "revolute", "parent": "ground", "child": "b1", "at": [0.0, 0.0]}] +
                   [{"name": f"j{k + 1}", "type": "revolute", "parent": f"b{k}", "child": f"b{k + 1}"}
                    for k in range(1, n_beams)]}
    return beam_model_from_dict(d, source=f"<pendulum {n_beams}x{n_elem}>")


# ====================================================================== plan

class BeamPlan:
    """Elements in topological order and the structure the kernel loops over.

    Element s (beam b, local index i) has nodes A (its first) and B; e_s = [r_A, r'_A, r_B, r'_B].
    Its generalised speeds beta_s (nbeta_s = 4 or 6 numbers at offset off_s, eqs 14, 23):
        interior / fixed to a beam tip / ground clamp : beta = V_N(B)                 (4)
        revolute to a beam tip / ground pin          : beta = [r'_A dot, V_N(B)]      (6)
        translational (beam tip or ground slider)     : beta = [gamma dot, lambda dot, V_N(B)]  (6)
    and the coordinates q have the same layout (qdot = beta).  par_s = kinematic parent element
    (-1: ground).  Elimination order (eq 46): for a chain the paper's order (root first, succ(s) = the
    next element, Psi_{s+1,s} = -upsilon_{s+1,s} P_s^-1); for a branched tree children before parents
    (succ(s) = parent, no fill-in).
    """

    def __init__(self, model: BeamModel):
        self.model = model
        beams = {b.name: b for b in model.beams}
        jby = {j.child: j for j in model.joints}
        children: Dict[str, List[str]] = {}
        for j in model.joints:
            children.setdefault(j.parent, []).append(j.child)
        order, stack = [], list(reversed(children.get(GROUND, [])))
        while stack:                                      # depth first, YAML order
            b = stack.pop()
            order.append(b)
            stack.extend(reversed(children.get(b, [])))
        self.beam_order = order
        self.beam_index = {b: k for k, b in enumerate(order)}
        kind, par, beam_of, local, nbeta, first_el, last_el = [], [], [], [], [], {}, {}
        for b in order:
            bm, jt = beams[b], jby[b]
            for i in range(bm.elements):
                s = len(kind)
                if i == 0:
                    first_el[b] = s
                    if jt.parent == GROUND:
                        k = {"revolute": K_GPIN, "fixed": K_GCLAMP, "translational": K_GTRA}[jt.type]
                        p = -1
                    else:
                        k = {"revolute": K_REV, "fixed": K_INT, "translational": K_TRA}[jt.type]
                        p = last_el[jt.parent]
                else:
                    k, p = K_INT, s - 1
                kind.append(k)
                par.append(p)
                beam_of.append(self.beam_index[b])
                local.append(i)
                nbeta.append(4 if k in (K_INT, K_GCLAMP) else 6)
            last_el[b] = len(kind) - 1
        self.kind, self.par = np.array(kind), np.array(par)
        self.beam_of, self.local, self.nbeta = np.array(beam_of), np.array(local), np.array(nbeta)
        self.first_el, self.last_el = first_el, last_el
        self.nbar = len(kind)
        self.off = np.concatenate([[0], np.cumsum(self.nbeta)]).astype(int)
        self.n = int(self.off[-1])
        self.has_var = bool(np.isin(self.kind, [K_TRA]).any())
        # nodes: every beam has elements + 1 nodes; node 0 = node A of its first element
        self.node0 = {}
        names = []
        for b in order:
            self.node0[b] = len(names)
            names += [f"{b}.n{i}" for i in range(beams[b].elements + 1)]
        last_beam = model.beams[-1].name
        names[self.node0[last_beam] + beams[last_beam].elements] = "tip"
        self.node_names = names
        self.enode = np.array([self.node0[order[self.beam_of[s]]] + self.local[s] + 1 for s in range(self.nbar)])
        # elimination order
        nchild = np.bincount(self.par[self.par >= 0], minlength=self.nbar)
        self.is_chain = bool((nchild <= 1).all() and (self.par < 0).sum() == 1)
        if self.is_chain:
            self.eord = np.arange(self.nbar)
            self.succ = np.array([s + 1 if s + 1 < self.nbar else -1 for s in range(self.nbar)])
            self.sdir = np.ones(self.nbar, dtype=int)          # succ is the kinematic child
        else:
            self.eord = np.arange(self.nbar)[::-1].copy()
            self.succ = self.par.copy()
            self.sdir = np.zeros(self.nbar, dtype=int)         # succ is the kinematic parent
        # coordinate names
        cn = []
        for s in range(self.nbar):
            b = order[self.beam_of[s]]
            if self.local[s] == 0 and self.kind[s] in (K_TRA, K_GTRA):
                cn += [f"{b}.gamma", f"{b}.lambda"]
            elif self.nbeta[s] == 6:
                cn += [f"{b}.n0.x'", f"{b}.n0.y'"]
            nb = f"{b}.n{self.local[s] + 1}"
            cn += [f"{nb}.x", f"{nb}.y", f"{nb}.x'", f"{nb}.y'"]
        self.coord_names = cn

    def roadmap(self) -> List[str]:
        rows = []
        jby = {j.child: j for j in self.model.joints}
        for b in self.beam_order:
            s0, s1 = self.first_el[b], self.last_el[b]
            j = jby[b]
            rows.append(f"beam {b}: elements {s0}..{s1} ({KIND_NAMES[self.kind[s0]]} from {j.parent}), "
                        f"beta offsets {self.off[s0]}..{self.off[s1 + 1] - 1}")
        rows.append(f"{self.nbar} elements, n = {self.n} generalised coordinates (4 N_bar + 2 N, eq 56 for "
                    f"pins/revolute/translational); elimination: {'chain (eq 46)' if self.is_chain else 'tree, leaves first'}")
        return rows

    # ---------------------------------------------------------------- numbers
    def element_geometry(self):
        """Initial straight configuration: per beam start point and unit direction."""
        beams = {b.name: b for b in self.model.beams}
        jby = {j.child: j for j in self.model.joints}
        start, direc = {}, {}
        for b in self.beam_order:
            bm, j = beams[b], jby[b]
            t = np.array([math.cos(bm.angle), math.sin(bm.angle)])
            if j.parent == GROUND:
                r0 = j.at + (j.q0 * j.axis if j.type == "translational" else 0.0)
            else:
                pb = beams[j.parent]
                r0 = start[j.parent] + pb.length * direc[j.parent]
                if j.type == "translational":
                    r0 = r0 + j.q0 * j.axis
            start[b], direc[b] = r0, t
        return start, direc

    def initial_q(self) -> np.ndarray:
        beams = {b.name: b for b in self.model.beams}
        jby = {j.child: j for j in self.model.joints}
        start, direc = self.element_geometry()
        q = np.zeros(self.n)
        for s in range(self.nbar):
            b = self.beam_order[self.beam_of[s]]
            bm, o = beams[b], self.off[s]
            t = direc[b]
            l = bm.length / bm.elements
            rB = start[b] + (self.local[s] + 1) * l * t
            blk = []
            if self.local[s] == 0 and self.kind[s] in (K_TRA, K_GTRA):
                blk = [jby[b].q0, 1.0]
            elif self.nbeta[s] == 6:
                blk = list(t)
            q[o:o + self.nbeta[s]] = blk + list(rB) + list(t)
        return q

    def params(self) -> np.ndarray:
        m = self.model
        beams = {b.name: b for b in m.beams}
        jby = {j.child: j for j in m.joints}
        start, direc = self.element_geometry()
        p = np.zeros(2 + NPE * self.nbar)
        p[0:2] = m.gravity
        Mn, Gn = _mass_gravity_funcs()
        for s in range(self.nbar):
            b = self.beam_order[self.beam_of[s]]
            bm, j = beams[b], jby[b]
            l = bm.length / bm.elements
            blk = p[2 + NPE * s: 2 + NPE * (s + 1)]
            blk[0:64] = np.asarray(Mn(bm.rho, bm.A, l), float).reshape(64)          # eq 4
            blk[64:68] = (bm.E, bm.A, bm.I, l)
            blk[68:76] = np.asarray(Gn(bm.rho, bm.A, l, m.gravity[0], m.gravity[1]), float).reshape(8)  # eq 9
            if self.local[s] == 0:
                if j.parent == GROUND:
                    blk[76:78] = j.at
                blk[78:80] = direc[b]
                if j.axis is not None:
                    blk[80:82] = j.axis
        for ld in m.loads:                 # Hu & Wang eq 8: F_E = S(xi)^T F, on the element holding s
            bm = beams[ld.beam]
            l = bm.length / bm.elements
            i = min(int(ld.s / l), bm.elements - 1)
            xi = ld.s / l - i
            s = self.first_el[ld.beam] + i
            N = np.array([1 - 3 * xi**2 + 2 * xi**3, l * (xi - 2 * xi**2 + xi**3), 3 * xi**2 - 2 * xi**3,
                          l * (xi**3 - xi**2)])                                            # eq 3
            fe = p[2 + NPE * s + 68: 2 + NPE * s + 76]
            fe[0::2] += N * ld.force[0]
            fe[1::2] += N * ld.force[1]
        return p


@lru_cache(maxsize=None)
def _mass_gravity_funcs():
    import sympy as sp
    from .symbolic import ancf
    M = sp.lambdify((ancf.rho, ancf.A, ancf.l), ancf.mass_matrix(), "numpy")
    G = sp.lambdify((ancf.rho, ancf.A, ancf.l, ancf.gx, ancf.gy), ancf.gravity_force(), "numpy")
    return M, G


# ====================================================================== code generation

@lru_cache(maxsize=None)
def energy_c_assignments():
    """(target, C expr) for the element strain energy U (eq 6) -> 'U', inputs e[0..7], EE, AA, II, ll."""
    import sympy as sp
    from .symbolic import ancf
    es = sp.MatrixSymbol("e", 8, 1)
    pE, pA, pI, pl = (sp.Symbol(n, real=True) for n in ("EE", "AA", "II", "ll"))
    ca, sa, ch = (sp.Symbol(n, real=True) for n in ("cos_a", "sin_a", "chord"))
    to_c = {sp.cos(ancf.alpha): ca, sp.sin(ancf.alpha): sa, ancf.d: ch, ancf.E: pE, ancf.A: pA, ancf.I: pI,
            ancf.l: pl}
    to_c.update({ancf.e[k]: es[k, 0] for k in range(8)})
    U = ancf.strain_energy().xreplace(to_c)
    pr = ancf._CPrinter()
    out = [("chord_x", "e[4] - e[0]"), ("chord_y", "e[5] - e[1]"),
           ("chord", "sqrt(chord_x*chord_x + chord_y*chord_y)"), ("cos_a", "chord_x/chord"),
           ("sin_a", "chord_y/chord")]
    reps, red = sp.cse([U], symbols=sp.numbered_symbols("u"))
    out += [(str(a), pr.doprint(b)) for a, b in reps]
    out.append(("U", pr.doprint(red[0])))
    return tuple(out)


def _cy_body(assigns, indent="    "):
    from .symbolic.ancf import c_locals
    locs = c_locals(assigns)
    lines = []
    for i in range(0, len(locs), 12):
        lines.append(indent + "cdef double " + ", ".join(locs[i:i + 12]))
    lines += [f"{indent}{t} = {x}" for t, x in assigns]
    return "\n".join(lines)


def element_code() -> Dict[str, str]:
    from .symbolic import ancf
    prm = ("EE", "AA", "II", "ll")
    return {"force": _cy_body(ancf.c_assignments(("F_EK",), params=prm)),
            "force_jac": _cy_body(ancf.c_assignments(("F_EK", "dF_EK"), params=prm)),
            "energy": _cy_body([(t, x) for t, x in energy_c_assignments() if t != "U"]) + "\n    return " +
            energy_c_assignments()[-1][1]}


def render(plan: BeamPlan, key: str) -> str:
    from . import __version__
    from .build import template_env
    tpl = template_env().get_template("rancf.pyx.j2")
    ints = lambda a: ", ".join(str(int(x)) for x in a)
    return tpl.render(version=__version__, build_hash=key, model_name=plan.model.name, nbar=plan.nbar, n=plan.n,
                      npar=2 + NPE * plan.nbar, npe=NPE, nnode=len(plan.node_names), nbeam=len(plan.beam_order),
                      kind=ints(plan.kind), par=ints(plan.par), off=ints(plan.off[:-1]), nbeta=ints(plan.nbeta),
                      eord=ints(plan.eord), succ=ints(plan.succ), sdir=ints(plan.sdir), enode=ints(plan.enode),
                      local=ints(plan.local), beam=ints(plan.beam_of), has_var=plan.has_var,
                      kinds_used=sorted(set(int(k) for k in plan.kind)), roadmap=plan.roadmap(),
                      code=element_code(), is_chain=plan.is_chain)


def _fingerprint() -> str:
    from .build import _toolchain_fingerprint, template_dir
    h = hashlib.sha256()
    for f in [template_dir() / "rancf.pyx.j2", template_dir() / "integrators.pyx.j2", Path(__file__),
              Path(__file__).parent / "symbolic" / "ancf.py"]:
        h.update(f.name.encode())
        h.update(f.read_bytes())
    h.update(_toolchain_fingerprint().encode())
    return h.hexdigest()


def build_key(model: BeamModel) -> str:
    from . import __version__
    from .build import names_key
    payload = json.dumps({"algorithm": "rancf", "topology": model.topology_key(), "names": names_key(model),
                          "generator": __version__,
                          "sources": _fingerprint()}, sort_keys=True)
    return hashlib.sha256(payload.encode()).hexdigest()[:20]


def build_module(model: BeamModel, cache_dir=None, progress: bool = False):
    """Generate + compile (or load from the cache) the rancf kernel module of a beam model."""
    from .build import cached_module
    key = build_key(model)
    return cached_module(key, f"mbgen_rancf_{key}", f"build {model.name} [rancf]",
                         lambda: render(model.plan, key), cache_dir, progress)


def generated_source(model: BeamModel) -> str:
    return render(model.plan, build_key(model))


# ====================================================================== system

class BeamSystem:
    """A beam model bound to its compiled rancf kernel.

    algorithm 'rancf': the O(n) recursion (eqs 44-55); 'dense': the dense Cholesky solve of the same
    Omega and Gamma (eq 41), a reference (both live in the same compiled module).
    """

    def __init__(self, model: BeamModel, algorithm: str = "rancf", cache_dir=None, progress: bool = False):
        if algorithm in (None, "recursive"):
            algorithm = "rancf"
        if algorithm not in ALGORITHMS:
            from .build import BuildError
            raise BuildError(f"beam models take algorithm 'rancf' (O(n), eqs 44-55) or 'dense' (Cholesky "
                             f"reference), not '{algorithm}'")
        self.model, self.algorithm = model, algorithm
        self.plan = model.plan
        self.module, self.build_info = build_module(model, cache_dir, progress)
        self.kernel = self.module.Kernel()
        self.kernel.set_params(self.plan.params())
        self.kernel.set_method(1 if algorithm == "dense" else 0)
        self.nq = self.nv = self.plan.n
        self.coord_names, self.velocity_names = model.coord_names, model.velocity_names
        self.node_names = list(self.plan.node_names)
        self.body_names = list(self.plan.beam_order)
        self.options = {}

    def __repr__(self):
        return (f"<BeamSystem {self.model.name}: {len(self.body_names)} beams, {self.plan.nbar} elements, "
                f"n={self.nq}, {self.algorithm} [{self.build_info['key']}]>")

    def update_model(self, model: BeamModel):
        if model.topology_key() != self.model.topology_key():
            raise ValueError("topology differs: build a new system for this model")
        self.model, self.plan = model, model.plan
        self.kernel.set_params(self.plan.params())

    def set_algorithm(self, algorithm: str):
        if algorithm not in ALGORITHMS:
            raise ValueError(f"algorithm must be one of {ALGORITHMS}")
        self.algorithm = algorithm
        self.kernel.set_method(1 if algorithm == "dense" else 0)

    def _qu(self, q, u):
        q = np.ascontiguousarray(q, dtype=float).reshape(-1)
        u = np.ascontiguousarray(u, dtype=float).reshape(-1)
        if q.size != self.nq or u.size != self.nv:
            raise ValueError(f"expected q and u of length {self.nq}")
        return q, u

    def initial_state(self):
        return self.model.initial_state()

    def forward_dynamics(self, q, u, tau=None, t: float = 0.0, algorithm: Optional[str] = None) -> np.ndarray:
        """betadot from Omega betadot = Q - Gamma (eq 40); Q = tau (generalised forces of beta), default 0."""
        q, u = self._qu(q, u)
        meth = {"rancf": 0, "dense": 1}[algorithm or self.algorithm]
        return self.kernel.forward_dynamics(q, u, None if tau is None else np.ascontiguousarray(tau, float), meth)

    def mass_matrix(self, q) -> np.ndarray:
        """Dense Omega = C^T Phi^T M_E Phi C (eq 41)."""
        q, _ = self._qu(q, np.zeros(self.nv))
        return self.kernel.omega_gamma(q, np.zeros(self.nv))[0]

    def omega_gamma(self, q, u):
        q, u = self._qu(q, u)
        return self.kernel.omega_gamma(q, u)

    def element_coordinates(self, q) -> np.ndarray:
        q, _ = self._qu(q, np.zeros(self.nv))
        return self.kernel.element_coordinates(q)

    def energy(self, q, u):
        """(kinetic, elastic, gravity potential)."""
        q, u = self._qu(q, u)
        _, en, _ = self.kernel.outputs_at(np.concatenate([q, u])[None, :])
        return tuple(float(x) for x in en[0])

    def node_positions(self, q) -> np.ndarray:
        q, _ = self._qu(q, np.zeros(self.nv))
        pos, _, _ = self.kernel.outputs_at(np.concatenate([q, np.zeros(self.nv)])[None, :])
        return pos[0]

    def curve(self, q, npts: int = 11) -> np.ndarray:
        """Points along every element (N_bar x npts x 2), r = S(xi) e (eqs 2-3)."""
        q, _ = self._qu(q, np.zeros(self.nv))
        return self.kernel.element_points(q, npts)

    def simulate(self, t_end: float, dt: float, integrator: str = "rk4", q0=None, u0=None, rtol: float = 1e-8,
                 atol: float = 1e-10, h_max: Optional[float] = None, substeps: int = 1, progress: bool = False,
                 alpha: float = -0.05, newton_tol: float = 1e-6, max_newton: int = 20) -> "BeamResult":
        """Integrate from the straight initial configuration (or q0, u0) to t_end, sampling every dt.

        rk4: fixed steps dt/substeps; dopri5: adaptive (rtol, atol, h_max), dense output at the samples;
        hht: implicit HHT-alpha (alpha in [-1/3, 0], modified Newton iterations with the analytical elastic
        Jacobian, the iteration matrix Omega + beta h^2 (1+alpha) K factored by the same O(n) recursion and
        reused across iterations and steps until the convergence slows), fixed step dt/substeps.
        """
        from .system import _versions, integrate_chunks, start_state
        if integrator not in INTEGRATORS:
            raise ValueError(f"integrator '{integrator}' not one of {', '.join(INTEGRATORS)}")
        if integrator == "hht" and not (-1.0 / 3.0 <= alpha <= 0.0):
            raise ValueError("HHT alpha must lie in [-1/3, 0]")
        x, ts = start_state(self, t_end, dt, q0, u0)
        acc, nfact = None, 0

        def hht(t0, x, m):                    # m samples of HHT-alpha (the state x is updated in place)
            nonlocal acc, nfact
            if acc is None:
                acc = self.kernel.forward_dynamics(x[:self.nq].copy(), x[self.nq:].copy(), None, 0)
            out = self.kernel.integrate_hht(t0, x, acc, dt / substeps, m, substeps, alpha, newton_tol, max_newton)
            nfact += self.kernel.hht_nfact
            return out

        X, stats, wall = integrate_chunks(self.kernel, x, ts, integrator, substeps, rtol, atol, h_max,
                                          f"simulate {self.model.name}", progress, other=hht)
        if integrator == "hht" and stats[3]:
            import warnings
            warnings.warn(f"HHT: {int(stats[3])} of {int(stats[1])} steps stopped at {max_newton} Newton iterations "
                          f"without reaching newton_tol = {newton_tol:g}", RuntimeWarning)
        pos, en, com = self.kernel.outputs_at(X)
        meta = {"model": self.model.source, "model_name": self.model.name, "algorithm": self.algorithm,
                "options": {}, "integrator": integrator, "dt": dt, "t_end": t_end, "substeps": substeps,
                "rtol": rtol if integrator == "dopri5" else None, "atol": atol if integrator == "dopri5" else None,
                "hht_alpha": alpha if integrator == "hht" else None,
                "wall_time_s": wall, "rhs_evaluations": int(stats[0]), "steps": int(stats[1]),
                "rejected_steps": int(stats[2]) if integrator == "dopri5" else 0,
                "newton_iterations": int(stats[2]) if integrator == "hht" else None,
                "newton_not_converged": int(stats[3]) if integrator == "hht" else None,
                "newton_factorizations": nfact if integrator == "hht" else None,
                "build_key": self.build_info["key"], "versions": _versions()}
        ang = np.zeros((len(ts), len(self.body_names)))
        nel = {bm.name: bm.elements for bm in self.model.beams}
        for b, name in enumerate(self.plan.beam_order):
            n0 = self.plan.node0[name]
            ne = nel[name]
            d = pos[:, n0 + ne] - pos[:, n0]
            ang[:, b] = np.arctan2(d[:, 1], d[:, 0])
        quat = np.zeros((len(ts), len(self.body_names), 4))
        quat[..., 0], quat[..., 3] = np.cos(ang / 2), np.sin(ang / 2)
        com3 = np.concatenate([com, np.zeros(com.shape[:2] + (1,))], axis=2)
        snap = np.unique(np.linspace(0, len(ts) - 1, 9).astype(int))
        extra = {"node_names": np.array(self.node_names), "node_pos": pos, "energy_elastic": en[:, 1].copy(),
                 "energy_gravity": en[:, 2].copy(), "snapshot_index": snap,
                 # r = S(xi) e at 11 points per element (eqs 2-3), at 9 instants: (9, N_bar * 11, 2)
                 "snapshot_curve": np.array([self.kernel.element_points(X[k, :self.nq].copy(), 11).reshape(-1, 2)
                                             for k in snap])}
        return BeamResult(ts, X[:, :self.nq].copy(), X[:, self.nq:].copy(), list(self.coord_names),
                          list(self.velocity_names), list(self.body_names), com3, quat, en[:, 0].copy(),
                          en[:, 1] + en[:, 2], meta, extra)


def _result_base():
    from .system import Result
    return Result


class BeamResult(_result_base()):
    """Result of a beam simulation: energy_potential = elastic + gravity (and constant loads); extra arrays
    node_names, node_pos (nt x n_nodes x 2), energy_elastic, energy_gravity (gravity and loads: -F_E . e),
    snapshot_index, snapshot_curve (9 instants x 11 points per element x 2)."""

    @property
    def node_names(self):
        return [str(s) for s in self.extra["node_names"]]

    @property
    def node_pos(self):
        return self.extra["node_pos"]

    def node(self, name: str) -> np.ndarray:
        return self.node_pos[:, self.node_names.index(name)]

    def plot(self, path) -> str:
        """PNG: node paths with configuration snapshots (left), tip coordinates and energies (right)."""
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        from .system import _atomic_write
        P = self.node_pos
        fig = plt.figure(figsize=(12, 7))
        a0 = fig.add_subplot(1, 2, 1)
        if "snapshot_curve" in self.extra:          # 11 points per element
            npe = 11
            for k, c in zip(self.extra["snapshot_index"], self.extra["snapshot_curve"]):
                col = plt.cm.viridis(k / max(len(self.t) - 1, 1))
                for el in c.reshape(-1, npe, 2):
                    a0.plot(el[:, 0], el[:, 1], "-", color=col, lw=1)
                a0.plot(P[k, :, 0], P[k, :, 1], ".", color=col, ms=3)
        else:
            for k in np.linspace(0, len(self.t) - 1, 9).astype(int):
                a0.plot(P[k, :, 0], P[k, :, 1], "-", color=plt.cm.viridis(k / max(len(self.t) - 1, 1)), lw=1)
        tip = self.node("tip") if "tip" in self.node_names else P[:, -1]
        a0.plot(tip[:, 0], tip[:, 1], "k--", lw=0.8, label="tip path")
        a0.set_aspect("equal")
        a0.set_xlabel("x [m]")
        a0.set_ylabel("y [m]")
        a0.legend(fontsize=8)
        a0.set_title("beams at 9 instants (11 points per element; dots: nodes)", fontsize=9)
        a1 = fig.add_subplot(2, 2, 2)
        a1.plot(self.t, tip[:, 0], label="tip x")
        a1.plot(self.t, tip[:, 1], label="tip y")
        a1.set_ylabel("m")
        a1.legend(fontsize=8)
        a2 = fig.add_subplot(2, 2, 4, sharex=a1)
        Ue = self.extra["energy_elastic"]
        Vg = self.extra["energy_gravity"]
        tot = self.energy_total
        a2.plot(self.t, self.energy_kinetic, label="kinetic")
        a2.plot(self.t, Ue, label="elastic")
        a2.plot(self.t, Vg, label="gravity")
        a2.plot(self.t, tot, "k--", label="total")
        scale = max(np.abs(self.energy_kinetic).max(), np.abs(Vg).max(), 1e-300)
        a2.set_title(f"max |E - E0| / max(T, |V|) = {np.abs(tot - tot[0]).max() / scale:.2e}", fontsize=9)
        a2.set_xlabel("t [s]")
        a2.set_ylabel("J")
        a2.legend(fontsize=8)
        fig.suptitle(f"{self.meta.get('model_name', '')}: {self.meta.get('algorithm')}, {self.meta.get('integrator')}")
        fig.tight_layout()
        path = os.fspath(path)
        _atomic_write(path, lambda fh: fig.savefig(fh, dpi=110, format="png"))
        plt.close(fig)
        return path


def build(model: BeamModel, algorithm: str = "rancf", cache_dir=None, progress: bool = False, **options) -> BeamSystem:
    bad = {k: v for k, v in options.items() if v is not None}
    if bad:
        from .build import BuildError
        raise BuildError(f"beam models take no options {sorted(bad)}")
    return BeamSystem(model, algorithm, cache_dir=cache_dir, progress=progress)
