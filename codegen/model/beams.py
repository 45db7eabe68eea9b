"""Flexible planar beams (model M3, Hu & Wang 2016 RANCF seed): schema, validation, coordinate layout.

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
    loads:                           # optional constant forces, F_E = S^T F [HW eq 8]; s = arc length from the
      - {name: p, beam: b4, s: 5, force: [0, -100]}   # beam's first node (default: its tip)

Joint types (the child's first node is attached to the parent beam's tip node, or to a ground point):
    revolute       planar revolute: shared position, independent slopes [HW eqs 17-19, 23];
                   with parent ground: a pin at ``at``
    fixed          shared position and slope (a continuous beam); with parent ground: a clamp at ``at``
                   along the child's initial direction.  The clamp fixes the whole slope vector
                   r' = (cos angle, sin angle), so the axial strain is zero at the clamp (the usual ANCF
                   clamp): the first element is axially stiffer (a 2-element cantilever under an axial
                   tip load stretches 16/17 of N L / EA); the effect fades with mesh refinement
    translational  planar translational joint [HW eqs 20-21]: r_child = r_parent + p gamma,
                   r'_child = lambda r'_parent (orientation locked, slope length free);
                   p = ``axis`` is a fixed direction in the world frame, as in [HW eqs 20-21] (p_{k+1}
                   constant); ``q0`` = initial gamma.  With parent ground the slider starts at ``at``.
Each beam is straight at t = 0 along its ``angle``; a fixed or translational child must start with its
parent's angle (its slope is tied to the parent's).  The last node of the last beam is named ``tip``.
Numbers may be written 4e-4 (YAML 1.1 reads that as a string; it is accepted).  The potential energy
reported as ``energy_gravity`` is -F_E . e summed over the elements: gravity [HW eq 9] plus the constant loads.
"""
from __future__ import annotations

import math
import os
from dataclasses import dataclass, field
from typing import Dict, List, Optional

import numpy as np

from .checks import _check_keys
from .core import (GROUND, LIMITS, ModelError, _check_count, _name, _normalised, _num,
                   _short, limits_text)
from .simulation import parse_simulation

# element kinds (must match templates/rancf/rancf.pyx.j2)
K_INT, K_REV, K_TRA, K_GPIN, K_GCLAMP, K_GTRA = range(6)
KIND_NAMES = ("interior", "revolute", "translational", "ground-pin", "ground-clamp", "ground-slider")
BEAM_JOINT_TYPES = ("revolute", "fixed", "translational")
_ALIASES = {"pin": "revolute", "planar_revolute": "revolute", "clamp": "fixed", "prismatic": "translational",
            "planar_translational": "translational", "slider": "translational"}



# ====================================================================== model

@dataclass
class Beam:
    """A flexible planar beam of ANCF elements: its length, element count and material numbers."""

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
        """The beam's mass [kg]."""
        return self.rho * self.A * self.length


@dataclass
class BeamJoint:
    """A joint between two beams or a beam and ground."""

    name: str
    type: str                 # revolute | fixed | translational
    parent: str               # beam name or ground
    child: str
    at: np.ndarray = field(default_factory=lambda: np.zeros(2))     # ground point
    axis: Optional[np.ndarray] = None                                # translational direction p
    q0: float = 0.0                                                  # initial gamma (translational)


@dataclass
class BeamLoad:
    """A constant force on a beam at arc length s from its first node ([HW eq 8]: F_E = S^T F)."""

    name: str
    beam: str
    s: float
    force: np.ndarray


@dataclass
class BeamModel:
    """A model of flexible planar beams (family rancf)."""

    name: str
    beams: List[Beam]
    joints: List[BeamJoint]
    gravity: np.ndarray = field(default_factory=lambda: np.array([0.0, -9.81]))
    source: str = "<model>"
    tau_hook: None = None
    loads: List[BeamLoad] = field(default_factory=list)
    simulation: dict = field(default_factory=dict)   # the file's validated `simulation:` defaults (model/simulation.py)

    def __post_init__(self):
        self._plan = None

    # rigid-model look-alikes used by the CLI
    @property
    def bodies(self):
        """The beams (the bodies of a beam model)."""
        return self.beams

    @property
    def plan(self) -> "BeamLayout":
        """The element order and coordinate layout (computed once)."""
        if self._plan is None:
            self._plan = BeamLayout(self)
        return self._plan

    @property
    def nq(self) -> int:
        """The number of coordinates."""
        return self.plan.n

    @property
    def nv(self) -> int:
        """The number of velocity coordinates (equal to nq)."""
        return self.plan.n

    @property
    def coord_names(self) -> List[str]:
        """The names of the coordinates."""
        return list(self.plan.coord_names)

    @property
    def velocity_names(self) -> List[str]:
        """The names of the velocity coordinates."""
        return [f"d({c})" for c in self.plan.coord_names]

    def initial_state(self):
        """The initial state (q0, u0): the undeformed beams at rest."""
        q = self.plan.initial_q()
        return q, np.zeros_like(q)

    def topology_key(self) -> dict:
        """What shapes the generated code (numbers are parameters)."""
        p = self.plan
        return {"kind": p.kind.tolist(), "par": p.par.tolist(), "beam": p.beam_of.tolist(),
                "eord": p.eord.tolist(), "succ": p.succ.tolist()}

    def roadmap(self) -> List[str]:
        """The table of beams and elements printed by ``mbgen check``."""
        return self.plan.roadmap()


def _vec2(v, source, fld, nonzero=False):
    if isinstance(v, np.ndarray):
        v = v.tolist()
    if not isinstance(v, (list, tuple)) or len(v) not in (2, 3):
        raise ModelError(f"expected a list of 2 numbers, got {_short(v)}", source, fld)
    out = np.array([_num(x, source, f"{fld}[{k}]") for k, x in enumerate(v)])
    if len(out) == 3:
        if out[2] != 0:
            raise ModelError("planar model: the z component must be 0", source, fld)
        out = out[:2]
    if nonzero:
        out = _normalised(out, source, fld, "must be a non-zero vector", tiny=0.0)
    return out


def _list(d, k, source, nonempty=True):
    v = d.get(k, []) if not nonempty else d[k]
    v = [] if v is None and not nonempty else v
    if not isinstance(v, list) or (nonempty and not v):
        raise ModelError(f"expected a {'non-empty ' if nonempty else ''}list, got {_short(v)}", source, k)
    return v


_TOP = {"name", "gravity", "beams", "joints", "initial", "loads", "simulation"}   # 'simulation': read elsewhere
_BEAM = {"name", "length", "elements", "E", "A", "I", "rho", "angle"}
_JOINT = {"name", "type", "parent", "child", "at", "axis", "q0"}
_LOAD = {"name", "beam", "s", "force"}


NUMBER_RANGE = (1e-100, 1e100)   # an element's mass, stiffnesses and lengths: their products stay normal doubles


def _check_element_numbers(v, ne, source, fld):
    """Refuse a beam whose element numbers leave double precision.

    Refuse a beam whose element numbers leave double precision (1e300 lengths, E = 1e308, denormal A or I)
    before anything is built: each input and the element's mass rho A l, axial stiffness E A / l and bending
    stiffness E I / l^3 lie in NUMBER_RANGE, and the element's highest frequency is finite."""
    lo, hi = NUMBER_RANGE
    le = v["length"] / ne
    derived = {"length": v["length"], "E": v["E"], "A": v["A"], "I": v["I"], "rho": v["rho"], "length / elements": le,
               "the element mass rho A l": v["rho"] * v["A"] * le, "the axial stiffness E A / l": v["E"] * v["A"] / le,
               "the bending stiffness E I / l^3": v["E"] * v["I"] / (le * le * le) if le > 1e-100 else 0.0,
               "the squared axial frequency E / (rho l^2)": v["E"] / (v["rho"] * le * le) if le > 1e-100 else math.inf}
    for what, x in derived.items():          # (float products: inf or 0 where they leave the range, no exception)
        if not (lo <= x <= hi):
            raise ModelError(f"{what} = {x:.3g} is outside [{lo:g}, {hi:g}]: the element's numbers would leave "
                             f"double precision (check length, elements, E, A, I, rho)", source,
                             f"{fld}.{what}" if what in v else fld)


def beam_model_from_dict(d: dict, source: str = "<model>", strict_names: bool = False) -> BeamModel:
    """Validate a beam-model mapping (the YAML top level) and build the BeamModel.

    ``strict_names`` (model files): names must be printable text; see model_from_dict."""
    source = str(source)
    _check_keys(d, _TOP, source, "<top level>")

    def nm(v, fld, what="name"):
        return _name(v, source, fld, what, printable=strict_names)

    for k in ("beams", "joints"):
        if k not in d:
            raise ModelError("missing", source, k)
        _list(d, k, source)
        _check_count(d[k], k, "bodies", source, k)
    load_list = _list(d, "loads", source, nonempty=False)
    _check_count(load_list, "loads", "forces", source, "loads")
    init = d.get("initial", {})
    init = {} if init is None else init
    _check_keys(init, {"angle", "at_rest"}, source, "initial")
    if init.get("at_rest", True) is not True:
        raise ModelError("only 'at_rest: true' is supported (straight beams at rest)", source, "initial.at_rest")
    angle0 = _num(init.get("angle", 0.0), source, "initial.angle")
    beams, names, n_elements = [], {}, 0
    for i, b in enumerate(d["beams"]):
        fld = f"beams[{i}]"
        _check_keys(b, _BEAM, source, fld)
        for k in ("name", "length", "elements", "E", "A", "I", "rho"):
            if k not in b:
                raise ModelError("missing", source, f"{fld}.{k}")
        name = b["name"]
        if not isinstance(name, str) or not name or name == GROUND:
            raise ModelError(f"a beam name must be a non-empty string other than '{GROUND}'", source, f"{fld}.name")
        nm(name, f"{fld}.name", "beam name")
        if name in names:
            raise ModelError(f"duplicate beam name {name!r}", source, f"{fld}.name")
        names[name] = i
        ne = _num(b["elements"], source, f"{fld}.elements", positive=True, integer=True)
        n_elements += ne
        if n_elements > LIMITS["beam_elements"]:
            raise ModelError(f"{n_elements:,} elements (beams[0..{i}]) exceed the limit of "
                             f"{LIMITS['beam_elements']:,} ({limits_text()})", source, f"{fld}.elements")
        vals = {k: _num(b[k], source, f"{fld}.{k}", positive=True) for k in ("length", "E", "A", "I", "rho")}
        _check_element_numbers(vals, ne, source, fld)
        beams.append(Beam(name, vals["length"], ne, vals["E"], vals["A"], vals["I"], vals["rho"],
                          _num(b.get("angle", angle0), source, f"{fld}.angle")))
    joints, child_of, jnames = [], {}, set()
    for i, j in enumerate(d["joints"]):
        fld = f"joints[{i}]"
        _check_keys(j, _JOINT, source, fld)
        for k in ("type", "parent", "child"):
            if k not in j:
                raise ModelError("missing", source, f"{fld}.{k}")
        jname = nm(j.get("name", f"joint{i + 1}"), f"{fld}.name", "joint name")
        if jname in jnames:
            raise ModelError(f"duplicate joint name {jname!r}", source, f"{fld}.name")
        jnames.add(jname)
        jtype = _name(j["type"], source, f"{fld}.type", "joint type")
        t = _ALIASES.get(jtype, jtype)
        if t not in BEAM_JOINT_TYPES:
            raise ModelError(f"unknown joint type {_short(jtype)} (known: {', '.join(BEAM_JOINT_TYPES)})",
                             source, f"{fld}.type")
        par, ch = j["parent"], j["child"]
        if not isinstance(ch, str) or ch not in names:
            raise ModelError(f"unknown beam {_short(ch)}", source, f"{fld}.child")
        if not isinstance(par, str) or (par != GROUND and par not in names):
            raise ModelError(f"unknown beam {_short(par)} (or '{GROUND}')", source, f"{fld}.parent")
        if par == ch:
            raise ModelError(f"beam {ch!r} is joined to itself", source, f"{fld}.parent")
        if ch in child_of:
            raise ModelError(f"beam {ch!r} is already the child of joint {child_of[ch]} (each beam has one "
                             "inboard joint; the structure must be a tree)", source, f"{fld}.child")
        child_of[ch] = i
        axis = None
        if t == "translational":
            if "axis" not in j:
                raise ModelError("a translational joint needs an axis (its sliding direction p, [HW eqs 20-21])",
                                 source, f"{fld}.axis")
            axis = _vec2(j["axis"], source, f"{fld}.axis", nonzero=True)
        elif "axis" in j:
            raise ModelError(f"'axis' only applies to translational joints (this is {t})", source, f"{fld}.axis")
        if "at" in j and par != GROUND:
            raise ModelError("'at' only applies to joints with the ground (a beam joint sits at the parent's "
                             "tip)", source, f"{fld}.at")
        at = _vec2(j.get("at", [0.0, 0.0]), source, f"{fld}.at")
        q0 = _num(j.get("q0", 0.0), source, f"{fld}.q0")
        if "q0" in j and t != "translational":
            raise ModelError("'q0' (initial slide) only applies to translational joints", source, f"{fld}.q0")
        joints.append(BeamJoint(jname, t, par, ch, at, axis, q0))
    for b in beams:
        if b.name not in child_of:
            raise ModelError(f"beam {b.name!r} has no joint (every beam needs one inboard joint)", source,
                             f"beams[{names[b.name]}]")
    # tree check: follow parents to ground
    jby = {j.child: j for j in joints}
    rooted = {GROUND}                     # beams known to reach the ground: O(number of beams) in all
    for b in beams:
        path, cur = set(), b.name
        while cur not in rooted:
            if cur in path:
                raise ModelError(f"joints form a loop through beam {b.name!r}", source,
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
                raise ModelError(f"a {j.type} joint locks the slope direction: beam {j.child!r} must start with "
                                 f"the angle of {j.parent!r} ({a:g}), got {c:g}", source, f"beams[{names[j.child]}].angle")
    g = _vec2(d.get("gravity", [0.0, -9.81]), source, "gravity")
    if "name" in d:
        name = nm(d["name"], "name", "model name")
    else:
        name = (os.path.splitext(os.path.basename(source))[0] or "model")[:LIMITS["name_length"]]
    loads, lnames = [], set()
    for i, ld in enumerate(load_list):
        fld = f"loads[{i}]"
        _check_keys(ld, _LOAD, source, fld)
        for k in ("beam", "force"):
            if k not in ld:
                raise ModelError("missing", source, f"{fld}.{k}")
        if not isinstance(ld["beam"], str) or ld["beam"] not in bby:
            raise ModelError(f"unknown beam {_short(ld['beam'])}", source, f"{fld}.beam")
        lname = nm(ld.get("name", f"load{i + 1}"), f"{fld}.name", "load name")
        if lname in lnames:
            raise ModelError(f"duplicate load name {lname!r}", source, f"{fld}.name")
        lnames.add(lname)
        bm = bby[ld["beam"]]
        sv = _num(ld.get("s", bm.length), source, f"{fld}.s")
        if not 0.0 <= sv <= bm.length:
            raise ModelError(f"must lie on the beam, 0 <= s <= {bm.length:g}, got {sv:g}", source, f"{fld}.s")
        loads.append(BeamLoad(lname, bm.name, sv, _vec2(ld["force"], source, f"{fld}.force")))
    return BeamModel(name, beams, joints, g, source, loads=loads,
                     simulation=parse_simulation(d.get("simulation"), source, beams=True))


def pendulum(n_beams=5, n_elem=5, L_beam=5.0, E=21e6, A=4e-4, I=2e-6, rho=7800.0, g=(0.0, -9.81),
             name=None) -> BeamModel:
    """Model M3: a chain of beams, the first pinned to the ground at (0, 0), straight along +x.

    Parameters
    ----------
    n_beams : int, optional
        Number of beams.
    n_elem : int, optional
        Elements per beam.
    L_beam : float, optional
        Length of each beam [m].
    E : float, optional
        Young's modulus [Pa].
    A : float, optional
        Cross-section area [m^2].
    I : float, optional
        Second moment of area [m^4].
    rho : float, optional
        Density [kg/m^3].
    g : array_like, shape (2,), optional
        Gravitational acceleration [m/s^2].
    name : str, optional
        Model name.

    Returns
    -------
    codegen.model.beams.BeamModel
        The flexible pendulum.
    """
    d = {"name": name or f"flexible_pendulum_{n_beams}x{n_elem}", "gravity": list(g),
         "beams": [{"name": f"b{k + 1}", "length": L_beam, "elements": n_elem, "E": E, "A": A, "I": I, "rho": rho}
                   for k in range(n_beams)],
         "joints": [{"name": "pin", "type": "revolute", "parent": "ground", "child": "b1", "at": [0.0, 0.0]}] +
                   [{"name": f"j{k + 1}", "type": "revolute", "parent": f"b{k}", "child": f"b{k + 1}"}
                    for k in range(1, n_beams)]}
    return beam_model_from_dict(d, source=f"<pendulum {n_beams}x{n_elem}>")


# ====================================================================== layout

class BeamLayout:
    """Elements in topological order, the coordinate layout and the structure the kernel loops over.

    Element s (beam b, local index i) has nodes A (its first) and B; e_s = [r_A, r'_A, r_B, r'_B].
    Its generalised speeds beta_s (nbeta_s = 4 or 6 numbers at offset off_s, [HW eqs 14, 23]):
        interior / fixed to a beam tip / ground clamp : beta = V_N(B)                 (4)
        revolute to a beam tip / ground pin          : beta = [r'_A dot, V_N(B)]      (6)
        translational (beam tip or ground slider)     : beta = [gamma dot, lambda dot, V_N(B)]  (6)
    and the coordinates q have the same layout (qdot = beta).  par_s = kinematic parent element
    (-1: ground).  Elimination order [HW eq 46]: for a chain the paper's order (root first, succ(s) = the
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
        """The table of beams and elements."""
        rows = []
        jby = {j.child: j for j in self.model.joints}
        for b in self.beam_order:
            s0, s1 = self.first_el[b], self.last_el[b]
            j = jby[b]
            rows.append(f"beam {b}: elements {s0}..{s1} ({KIND_NAMES[self.kind[s0]]} from {j.parent}), "
                        f"beta offsets {self.off[s0]}..{self.off[s1 + 1] - 1}")
        rows.append(f"{self.nbar} elements, n = {self.n} generalised coordinates (4 N_bar + 2 N, [HW eq 56] for "
                    f"pins/revolute/translational); elimination: {'chain [HW eq 46]' if self.is_chain else 'tree, leaves first'}")
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
        """The coordinates of the undeformed beams at their initial placement."""
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
