"""Topology plan of a rigid-body tree, shared by the recursive, dense and mstmm families.

The plan turns a validated Model into
  * the tree as a parent array over bodies in topological order (Featherstone's lambda),
  * coordinate offsets IQ, IV and joint types,
  * *runs*: maximal runs of consecutive bodies of one joint type (``segments``) or one compile-time pattern
    (``ksegments``); each becomes one loop in the generated code that calls the kind's helper. Beyond MAX_RUNS
    runs (kinds that alternate along the tree) a pass is one loop that dispatches on the body's kind code, so
    the generated code's size never grows with the body count,
  * the flat parameter vector ``p`` with the numbers (gravity; per body placements, mass, centroid, inertia;
    the armature of every velocity coordinate; the force elements' constants): an input
    of the compiled module, so changing a number never rebuilds.

Frames. The user's joint frame on the parent side is turned by K so the joint axis is z (canonical
joints, see ``codegen.symbolic.joints``). Each body's *reference frame* is its canonical child joint
frame (Kang & Yoon: "we defined the body reference frames at the joint"); its centroid rho and central
inertia J' are re-expressed there once (Kang & Yoon, comment 1 after [KY eq 30]).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import List

import numpy as np

from ..model import GROUND, JOINT_TYPES, Model
from ..model.actuators import ACTUATOR_PARAMS, CTRL_SOURCES, NPA
from ..model.tendons import NPT, TENDON_PARAMS
from ..symbolic.layout import BODY_PARAMS, P_BODIES, Layout

NP_BODY = BODY_PARAMS.size   # per body: s(3) C(9) m(1) rho(3) J'(9) Kout(9), at P_BODIES + NP_BODY j
# per limited coordinate in p: its range, the spring-damper's stiffness k and damping c (limit_gains, at run time)
LIMIT_PARAMS = Layout(("lower", 1), ("upper", 1), ("k", 1), ("c", 1))
NPL = LIMIT_PARAMS.size
# per coordinate with Coulomb friction: the friction force F and the regularising velocity v_s (limit_gains)
FRICTION_PARAMS = Layout(("F", 1), ("vs", 1))
# per point spring-damper between two bodies: its points (reference frames of a and b), stiffness, damping, length
POINT_SPRING_PARAMS = Layout(("a", 3), ("b", 3), ("k", 1), ("d", 1), ("L", 1))
FRICTION_T = 0.02       # Coulomb friction's regularisation: tanh(u / v_s) with v_s = F FRICTION_T / m
P_GRAVITY = 0           # p[0:3] gravity
IDENT_TOL = 1e-15       # C_j within this of the identity (max abs entry) is compiled as the identity


def canonical_rotation(jtype: str, axis, axis2) -> np.ndarray:
    """K with K e_z = axis (minimal rotation); with a second axis (universal): K = [axis2, axis x axis2, axis]."""
    if JOINT_TYPES[jtype].needs_axis2:
        a1, a2 = np.asarray(axis, float), np.asarray(axis2, float)
        return np.column_stack([a2, np.cross(a1, a2), a1])
    if axis is None:
        return np.eye(3)
    a = np.asarray(axis, float)
    a = a / np.linalg.norm(a)
    c = a[2]
    if c > 1 - 1e-15:
        return np.eye(3)
    if c < -1 + 1e-15:
        return np.diag([1.0, -1.0, -1.0])          # pi about x
    k = np.cross([0.0, 0.0, 1.0], a)
    k /= np.linalg.norm(k)
    Kx = np.array([[0, -k[2], k[1]], [k[2], 0, -k[0]], [-k[1], k[0], 0]])
    ang = math.acos(max(-1.0, min(1.0, c)))
    return np.eye(3) + math.sin(ang) * Kx + (1 - math.cos(ang)) * Kx @ Kx


def children_of(parent: List[int]) -> List[List[int]]:
    """Children of every body, from the parent array (Featherstone's lambda)."""
    kids: List[List[int]] = [[] for _ in parent]
    for j, i in enumerate(parent):
        if i >= 0:
            kids[i].append(j)
    return kids


def body_numbers(p: np.ndarray, k: int) -> dict:
    """Body k's numbers in p by BODY_PARAMS, for the numpy references.

    Body k's numbers in p by BODY_PARAMS (what the kernels read as pb[PB_m], pb + PB_J, ...): s, C (3 x 3), m,
    rho, J' (3 x 3), Kout (3 x 3); for the numpy references."""
    o = P_BODIES + NP_BODY * k
    out = {b.name: BODY_PARAMS.view(p, b.name, o) for b in BODY_PARAMS}
    out.update({n: out[n].reshape(3, 3) for n in ("C", "J", "Kout")}, m=out["m"][0])
    return out


def work_layout(items):
    """Per-body workspace blocks of a kernel.

    Per-body workspace blocks of a kernel: ((name, size), ...) -> (Layout, per-body total); block `name` of all
    bodies starts at off * NB (templates: ``{{ work.M.off }} * NB + {{ work.M.size }} * j``)."""
    out = Layout(*items)
    return out, out.size


@dataclass(frozen=True)
class JointKind:
    """A joint type as the kernels see it: its name and numbers of coordinates."""

    type: str
    nq: int
    nv: int

    @property
    def name(self) -> str:
        """The joint type's name."""
        return self.type


MAX_RUNS = 24          # more runs than this in a pass: one loop over the bodies that dispatches per body


@dataclass
class Run:
    """Bodies start..stop-1 as one generated loop.

    Kinds: the ((code, kind), ...) met there; one kind: the loop
    calls its helper; several: the loop dispatches on the body's code (templates/shared/each.j2)."""

    start: int
    stop: int
    kinds: tuple

    @property
    def label(self) -> str:
        """The joint kinds of the run, comma separated."""
        return ", ".join(k.name for _, k in self.kinds)


def runs(kinds: list, cap: int = MAX_RUNS):
    """The runs of equal consecutive kinds and each body's kind code.

    The runs of equal consecutive kinds, or one dispatching run over every body beyond ``cap`` runs; and
    each body's kind code (codes in order of first appearance)."""
    code = {k: c for c, k in enumerate(dict.fromkeys(kinds))}
    out: List[Run] = []
    for j, k in enumerate(kinds):
        if out and out[-1].kinds[0][1] == k:
            out[-1].stop = j + 1
        else:
            out.append(Run(j, j + 1, ((code[k], k),)))
    if len(out) > cap:
        out = [Run(0, len(kinds), tuple((c, k) for k, c in code.items()))]
    return out, [code[k] for k in kinds]


@dataclass
class ForceTerm:
    """One force element as the templates see it: its kind, parameter offset and topology facts."""

    kind: str             # spring | point | jforce
    index: int            # parameter offset in p
    data: dict            # topology facts for the template (offsets, body indices, function kind)


def solref_gains(m: float, T: float, zeta: float):
    """Stiffness and damping of a compliant limit (MuJoCo's solref).

    Stiffness k = m / (T zeta)^2 and damping c = 2 m / T of a compliant limit on a coordinate of effective mass m
    (MuJoCo's solref: time constant T, damping ratio zeta, with its default impedance 1)."""
    return m / (T * zeta) ** 2, 2.0 * m / T


def _function_layout(fn) -> dict:
    """Template facts of a time function in p: its kind, its numbers n, a table's length."""
    if fn.kind == "table":
        return {"fn": "table", "n": 2 * len(fn.t), "len": len(fn.t)}
    return {"fn": fn.kind, "n": {"constant": 1, "sine": 4, "step": 3}[fn.kind]}


def _function_params(fn) -> list:
    """A time function's numbers in p.

    (constant: value; sine: amplitude, frequency, phase, offset; step: t0, before,
    after; table: t then values)."""
    vals = {"constant": [fn.value], "sine": [fn.amplitude, fn.frequency, fn.phase, fn.offset],
            "step": [fn.t0, fn.value_before, fn.value]}.get(fn.kind)
    return list(fn.t) + list(fn.y) if vals is None else vals


class Plan:
    """Everything structural about one model, plus its parameter vector."""

    def __init__(self, model: Model):
        self.model = model
        joints = model.joints
        self.nb = len(joints)
        self.body_names = [j.child for j in joints]
        self.joint_names = [j.name for j in joints]
        index = {j.child: k for k, j in enumerate(joints)}
        self.index = index
        self.parent = [index[j.parent] if j.parent != GROUND else -1 for j in joints]
        self.types = [j.type for j in joints]
        offs = model.q_offsets()
        self.iq = [o[0] for o in offs]
        self.iv = [o[1] for o in offs]
        self.nq, self.nv = model.nq, model.nv
        self.quat_offsets = [self.iq[k] + JOINT_TYPES[t].quaternion for k, t in enumerate(self.types)
                             if JOINT_TYPES[t].quaternion is not None]
        self.segments, self.jt_code = runs([JointKind(t, JOINT_TYPES[t].nq, JOINT_TYPES[t].nv) for t in self.types])
        self.joint_types_used = sorted(set(self.types))
        self._layout_forces()

    # ------------------------------------------------------------ parameters
    def _layout_forces(self):
        m = self.model
        self.arm_off = P_BODIES + NP_BODY * self.nb              # armature: one number per velocity coordinate
        off = self.arm_off + self.nv
        self.forces: List[ForceTerm] = []
        jidx = {j.name: k for k, j in enumerate(m.joints)}
        for s in m.springs:
            k = jidx[s.joint]
            nv = JOINT_TYPES[self.types[k]].nv
            self.forces.append(ForceTerm("spring", off, {"iq": self.iq[k], "iv": self.iv[k], "n": nv,
                                                          "name": s.name}))
            off += 3 * nv
        for ps in m.point_springs:
            a = self.index.get(ps.body_a, -1)
            b = self.index.get(ps.body_b, -1)
            self.forces.append(ForceTerm("point", off, {"a": a, "b": b, "name": ps.name}))
            off += POINT_SPRING_PARAMS.size
        for fe in m.joint_forces:
            k = jidx[fe.joint]
            data = {"iv": self.iv[k] + fe.dof, "name": fe.name, **_function_layout(fe.function)}
            self.forces.append(ForceTerm("jforce", off, data))
            off += data["n"]
        self.limits: List[ForceTerm] = []                # limited coordinates: lower, upper, k, c
        for k, j in enumerate(m.joints):
            for d in range(j.nv if j.limits is not None else 0):
                self.limits.append(ForceTerm("limit", off, {"iq": self.iq[k] + d, "iv": self.iv[k] + d, "l": len(self.limits),
                                                           "name": f"{j.name}.{JOINT_TYPES[j.type].coordinates[d]}"}))
                off += NPL
        self.frictions: List[ForceTerm] = []             # Coulomb friction per coordinate: F, v_s
        for k, j in enumerate(m.joints):
            for d in range(j.nv if j.friction is not None else 0):
                self.frictions.append(ForceTerm("friction", off, {"iv": self.iv[k] + d, "f": len(self.frictions),
                                                                  "name": f"{j.name}.{JOINT_TYPES[j.type].velocities[d]}"}))
                off += FRICTION_PARAMS.size
        self.tendons: List[ForceTerm] = []               # fixed tendons: NPT numbers, then the coefficients
        tidx = {}
        for t, ten in enumerate(m.tendons):
            terms = [(self.iq[jidx[tj.joint]] + tj.dof, self.iv[jidx[tj.joint]] + tj.dof, NPT + k)
                     for k, tj in enumerate(ten.joints)]
            tidx[ten.name] = ForceTerm("tendon", off, {"t": t, "terms": terms, "name": ten.name,
                                                       "limited": ten.limits is not None})
            self.tendons.append(tidx[ten.name])
            off += NPT + len(terms)
        self.actuators: List[ForceTerm] = []             # actuators: NPA numbers, then the ctrl function's
        self.na = 0                                      # activation states (x = (q, u, act))
        for a, act in enumerate(m.actuators):
            if act.tendon is not None:                   # on a tendon: its coordinates and coefficients
                ten = tidx[act.tendon]
                data = {"tendon": ten.data["t"], "tp": ten.index, "terms": ten.data["terms"], "a": a,
                        "name": act.name, **_function_layout(act.ctrl)}
            else:
                k = jidx[act.joint]
                data = {"iq": self.iq[k] + act.dof, "iv": self.iv[k] + act.dof, "a": a, "name": act.name,
                        "tendon": None, "terms": [(self.iq[k] + act.dof, self.iv[k] + act.dof, None)],
                        **_function_layout(act.ctrl)}
            data.update(dyn=act.dynamics, ia=self.na if act.stateful else None)
            self.na += act.stateful
            self.actuators.append(ForceTerm("actuator", off, data))
            off += NPA + data["n"]
        self.np = off

    def limit_numbers(self):
        """Per limited coordinate: lower, upper, time constant, damping ratio."""
        return [(*j.limits[d], *j.limit_solref) for j in self.model.joints if j.limits is not None
                for d in range(j.nv)]

    def limit_gains(self, p, meff) -> None:
        """Write each limit's stiffness and damping into p.

        Write each limit's stiffness k = m / (T zeta)^2 and damping c = 2 m / T into p (MuJoCo's solref with
        its default impedance 1), m: the coordinate's diagonal mass-matrix entry meff[iv] at the initial state."""
        for term, (_, _, T, zeta) in zip(self.limits, self.limit_numbers()):
            k, c = solref_gains(meff[term.data["iv"]], T, zeta)
            LIMIT_PARAMS.view(p, "k", term.index)[:], LIMIT_PARAMS.view(p, "c", term.index)[:] = k, c
        for term in self.frictions:                      # v_s = F T / m: the slope F / v_s is m / T
            F = FRICTION_PARAMS.view(p, "F", term.index)[0]
            FRICTION_PARAMS.view(p, "vs", term.index)[:] = max(F * FRICTION_T / meff[term.data["iv"]], 1e-300)

    def tendon_limit_gains(self, p, minv) -> None:
        """Write each limited tendon's stiffness and damping into p.

        Each limited tendon's k = m / (T zeta)^2, c = 2 m / T into p, m = 1 / (c^T M^-1 c) its effective mass at
        the initial state (minv(c) = M^-1 c)."""
        for ten, term in zip(self.model.tendons, self.tendons):
            if ten.limits is None:
                continue
            c = np.zeros(self.nv)
            for (_, iv, k) in term.data["terms"]:
                c[iv] += p[term.index + k]
            k, d = solref_gains(1.0 / float(c @ minv(c)), *ten.limit_solref)
            TENDON_PARAMS.view(p, "klim", term.index)[:], TENDON_PARAMS.view(p, "clim", term.index)[:] = k, d

    def body_frames(self):
        """Per body: (s, C, G) with G = child placement composed with K (body frame -> ref frame)."""
        out = []
        G = {}
        for j in self.model.joints:
            K = canonical_rotation(j.type, j.axis, j.axis2)
            Gc = (j.child_frame.pos, j.child_frame.rot @ K)       # ref frame in the user child frame
            G[j.child] = Gc
            pp, pr = j.parent_frame.pos, j.parent_frame.rot @ K   # canonical parent joint frame
            if j.parent == GROUND:
                s, C = pp, pr
            else:
                gp, gr = G[j.parent]
                s, C = gr.T @ (pp - gp), gr.T @ pr
            out.append((s, C, Gc))
        return out

    def params(self) -> np.ndarray:
        """The parameter vector p that the kernels read: gravity, then each body's numbers and the force elements'."""
        m = self.model
        p = np.zeros(self.np)
        p[0:3] = m.gravity
        frames = self.body_frames()
        for k, (j, (s, C, (gp, gr))) in enumerate(zip(m.joints, frames)):
            b = m.body(j.child)
            o, pb = P_BODIES + NP_BODY * k, BODY_PARAMS
            pb.view(p, "s", o)[:] = s
            pb.view(p, "C", o)[:] = C.ravel()
            pb.view(p, "m", o)[:] = b.mass
            pb.view(p, "rho", o)[:] = gr.T @ (b.com - gp)                 # rho in the ref frame
            pb.view(p, "J", o)[:] = (gr.T @ b.inertia @ gr).ravel()       # J' in the ref frame
            pb.view(p, "Kout", o)[:] = gr.T.ravel()                       # Kout: A_user = A_ref Kout
        p[self.arm_off:self.arm_off + self.nv] = m.armature
        fi = iter(self.forces)
        for s in m.springs:
            o = next(fi).index
            n = len(s.stiffness)
            p[o:o + n], p[o + n:o + 2 * n], p[o + 2 * n:o + 3 * n] = s.stiffness, s.damping, s.q_ref
        for ps in m.point_springs:
            o = next(fi).index
            L = POINT_SPRING_PARAMS
            L.view(p, "a", o)[:] = self._to_ref(ps.body_a, ps.point_a, frames)
            L.view(p, "b", o)[:] = self._to_ref(ps.body_b, ps.point_b, frames)
            L.view(p, "k", o)[:], L.view(p, "d", o)[:], L.view(p, "L", o)[:] = ps.stiffness, ps.damping, ps.length
        for fe in m.joint_forces:
            o = next(fi).index
            vals = _function_params(fe.function)
            p[o:o + len(vals)] = vals
        for term, (lo, hi, T, zeta) in zip(self.limits, self.limit_numbers()):
            LIMIT_PARAMS.view(p, "lower", term.index)[:] = lo   # k, c: set by the runtime (limit_gains)
            LIMIT_PARAMS.view(p, "upper", term.index)[:] = hi
        fr = [F for j in m.joints if j.friction is not None for F in j.friction]
        for F, term in zip(fr, self.frictions):
            FRICTION_PARAMS.view(p, "F", term.index)[:] = F     # v_s: 1 until the runtime sets it (limit_gains)
            FRICTION_PARAMS.view(p, "vs", term.index)[:] = 1.0
        q0, _ = m.initial_state()
        for ten, term in zip(m.tendons, self.tendons):
            c = [tj.coef for tj in ten.joints]
            L0 = ten.length0 if ten.length0 is not None else sum(ci * q0[iq] for ci, (iq, _, _) in
                                                                  zip(c, term.data["terms"]))
            lo, hi = ten.limits if ten.limits is not None else (-math.inf, math.inf)
            T = TENDON_PARAMS                                      # klim, clim: the runtime's (tendon_limit_gains)
            for name, v in (("k", ten.stiffness), ("d", ten.damping), ("L0", L0), ("lower", lo), ("upper", hi)):
                T.view(p, name, term.index)[:] = v
            p[term.index + NPT:term.index + NPT + len(c)] = c
        for act, term in zip(m.actuators, self.actuators):
            o = term.index
            p[o:o + NPA] = act.params()
            vals = _function_params(act.ctrl)
            p[o + NPA:o + NPA + len(vals)] = vals
        return p

    def patterns(self):
        """Per body its compile-time structure (codegen.symbolic.body_kernels.Pattern).

        Joint type, parent is
        ground, canonical parent joint frame C_j = I, non-zero components of the offset s_j. Part of the build
        key (code_pattern): update_model refuses numbers with another pattern."""
        from ..symbolic.pattern import Pattern
        out = []
        for k, (s, C, _) in enumerate(self.body_frames()):
            out.append(Pattern(self.types[k], self.parent[k] < 0, bool(np.max(np.abs(C - np.eye(3))) <= IDENT_TOL),
                               tuple(bool(x != 0.0) for x in s)))
        return out

    def code_pattern(self) -> str:
        """The patterns as one string (part of the build key)."""
        return ",".join(p.name for p in self.patterns())

    def _to_ref(self, body, point, frames):
        if body == GROUND:
            return np.asarray(point, float)
        gp, gr = frames[self.index[body]][2]
        return gr.T @ (np.asarray(point, float) - gp)

    # ------------------------------------------------------------ description
    def roadmap(self) -> List[str]:
        """SD/FAST-style table of the tree.

        For the generated file's header and `mbgen check` (names in full: the
        columns are as wide as the longest)."""
        b = max([16] + [len(n) for n in self.body_names])
        jw = max([16] + [len(n) for n in self.joint_names])
        rows = [f"{'#':>5} {'body':<{b}} {'parent':<{b}} {'joint':<{jw}} {'type':<12} {'q':>9} {'u':>9}"]
        for k in range(self.nb):
            par = self.body_names[self.parent[k]] if self.parent[k] >= 0 else GROUND
            nq, nv = JOINT_TYPES[self.types[k]].nq, JOINT_TYPES[self.types[k]].nv
            qr = f"{self.iq[k]}:{self.iq[k] + nq}" if nq else "-"
            ur = f"{self.iv[k]}:{self.iv[k] + nv}" if nv else "-"
            rows.append(f"{k:>5} {self.body_names[k]:<{b}} {par:<{b}} {self.joint_names[k]:<{jw}} "
                        f"{self.types[k]:<12} {qr:>9} {ur:>9}")
        return rows


# the force elements' records in p, each at its ForceTerm.index, as the templates name them: prefix -> layout
PARAM_LAYOUTS = (("AP", ACTUATOR_PARAMS, "per actuator in p, at its index (codegen.model.actuators)"),
                 ("TP", TENDON_PARAMS, "per fixed tendon in p, at its index, before its coefficients (codegen.model.tendons)"),
                 ("JL", LIMIT_PARAMS, "per limited coordinate in p, at its index"),
                 ("CF", FRICTION_PARAMS, "per coordinate with Coulomb friction in p, at its index"),
                 ("PS", POINT_SPRING_PARAMS, "per point spring-damper in p, at its index"))


def template_vars(plan: Plan, work_size: int, lean: frozenset = frozenset()) -> dict:
    """Variables of templates/shared/base.pyx.j2 (the rigid-tree kernels).

    Joint helpers and the per-pattern body kernels from sympy; the world kinematics of the joint types in lean
    write no joint columns, product terms or relative velocities (Hw, cw6, rel: the family derives them,
    codegen.symbolic.body_kernels.body_axes_ball)."""
    from ..symbolic.body_kernels import body_kernels
    from ..symbolic.joints import column_carriers, jcalc_code
    pats = plan.patterns()
    # standalone free bodies (a free joint on the ground, nothing below it): implicitfast takes their bias forces
    free_bodies = [j for j, t in enumerate(plan.types) if t == "free" and plan.parent[j] < 0 and j not in plan.parent]
    kinds = tuple(sorted(set(pats), key=lambda p: p.name))
    ksegments, kind_code = runs(pats)
    return dict(ksegments=ksegments, kind_code=kind_code, jt_code=plan.jt_code,
                joint_kinds=sorted(dict(ck for s in plan.segments for ck in s.kinds).items()),
                body=body_kernels(kinds, lean=frozenset(lean)), kin_lean=frozenset(lean),
                hcols=[0 if t in lean else 1 for t in plan.types],
                kcarry=[m for _, k in sorted(dict(ck for s in plan.segments for ck in s.kinds).items())
                        for spatial in (False, True) for m in (tuple(column_carriers(k.name, spatial)) + (0,) * 6)[:6]],
                point_forces=any(f.kind == "point" for f in plan.forces), loops=False, nb=plan.nb, nq=plan.nq, nv=plan.nv, np=plan.np,
                npb=NP_BODY, body_params=BODY_PARAMS, p_bodies=P_BODIES, roadmap=plan.roadmap(),
                parm=plan.arm_off, actuators=plan.actuators, npa=NPA, nu=len(plan.actuators), na=plan.na,
                param_layouts=PARAM_LAYOUTS,
                ctrl_sources=CTRL_SOURCES, limits=plan.limits, tendons=plan.tendons, frictions=plan.frictions,
                segments=plan.segments, parent=plan.parent, iq=plan.iq, iv=plan.iv, quat=plan.quat_offsets,
                qv=position_map(plan), free_bodies=free_bodies, free_v=[plan.iv[j] for j in free_bodies], jcalc={t: jcalc_code(t) for t in plan.joint_types_used}, forces=plan.forces,
                work_size=work_size + 8, types_nv=[(t, JOINT_TYPES[t].nv) for t in plan.joint_types_used],
                **derivative_vars(plan))


# Derivative passes (templates/shared/derivatives.pyx.j2): workspace per body and per DOF, in this order.
DERIV_BODY = (("A", 9), ("p", 3), ("Y", 10), ("v", 6), ("a", 6), ("Yc", 10), ("Bc", 36), ("fc", 6), ("IA", 36),
              ("Di", 36))
DERIV_DOF = (("S", 6), ("dVq", 6), ("dAq", 6), ("dAv", 6), ("dFq", 6), ("dFv", 6), ("dFa", 6), ("BtS", 6), ("U", 6),
             ("UD", 6))
DERIV_KB = 32           # right-hand sides per block of the articulated solve M^-1 [dtau/dq, dtau/du, I]
DERIV_DENSE_MAX = 112   # trees: up to this many velocities the dense tail (Cholesky, register tiles) beats the solve
DERIV_FACTORED_MIN = 22 # serial chains from this many velocities, of any size: the factored tail (~75 nv^2) beats the
                        # dense tail (2.5 nv^3: 1.03 of its time at 20 velocities, 0.92 at 24) and the solve (0.33 at 150)


def ancestor_runs(parent, iv, nvj, nv: int) -> dict:
    """The DOF ranges the derivative entries run over (bodies in depth-first preorder, as Model orders them).

    Per body j: ``drun0`` the first DOF of the run of consecutive DOFs that ends with j's joint and goes up through
    its ancestors, ``drunp`` the body above that run (-1: the root), so that a walk from j to the root visits its
    ancestors' DOFs in a few contiguous runs (one on a chain); ``dsubv`` the end of the DOF range of j's subtree
    (its descendants' DOFs are ``IV[j] + NVJ[j] .. dsubv[j] - 1``, contiguous in preorder)."""
    nb = len(parent)
    run0, runp, size = [0] * nb, [0] * nb, [1] * nb
    for j in range(nb):
        i = parent[j]
        if i >= 0 and iv[i] + nvj[i] == iv[j]:
            run0[j], runp[j] = run0[i], runp[i]
        else:
            run0[j], runp[j] = iv[j], i
    for j in range(nb - 1, 0, -1):
        if parent[j] >= 0:
            size[parent[j]] += size[j]
    if not all(parent[j] < j < parent[j] + size[parent[j]] for j in range(nb) if parent[j] >= 0):
        return dict(drun0=run0, drunp=runp, dsubv=[iv[j] + nvj[j] for j in range(nb)],
                    deriv_refusal="bodies not in depth-first preorder (a restructured plan): the derivative "
                                  "entries run over each subtree's contiguous DOF range")
    subv = [iv[j + size[j]] if j + size[j] < nb else nv for j in range(nb)]
    return dict(drun0=run0, drunp=runp, dsubv=subv, deriv_refusal="")


def position_map(plan: Plan) -> list:
    """Per coordinate, the velocity that moves it in the implicit steps' q <- q (+) h u.

    The engine's integrate_pos: the velocity at the same place in the joint's lists, -1 inside a unit quaternion
    (turned by its body rate), the coordinates after it by the velocities after the rate (a free joint's)."""
    qv = [-1] * plan.nq
    for k, t in enumerate(plan.types):
        jt = JOINT_TYPES[t]
        o = jt.quaternion
        for i in range(jt.nq):
            if o is None or i < o:
                qv[plan.iq[k] + i] = plan.iv[k] + i
            elif i >= o + 4:
                qv[plan.iq[k] + i] = plan.iv[k] + i - 1
    return qv


def derivative_vars(plan: Plan) -> dict:
    """Variables of the derivative passes.

    Workspace layouts, each body's nv, each DOF's column-group end
    (codegen.symbolic.derivatives.GROUPS), the ancestor runs, the sympy kernels, ``serial`` (every body's parent
    the body before it: the factored tail applies); ``deriv_refusal`` says why a model
    has no derivatives ('' when it has them; a family may set its own, recursive: cut joints)."""
    from ..symbolic.derivatives import derivative_kernels, group_ends
    dbody, nbody = work_layout(DERIV_BODY)
    ddof, ndof = work_layout(DERIV_DOF)
    dge = [plan.iv[k] + e for k, t in enumerate(plan.types) for e in group_ends(t)]
    quatv = [plan.iv[k] + JOINT_TYPES[t].quaternion for k, t in enumerate(plan.types)
             if JOINT_TYPES[t].quaternion is not None]
    return dict(dbody_layout=dbody, ddof_layout=ddof, dw_body=nbody, dw_dof=ndof, dge=dge, dkb=DERIV_KB,
                **ancestor_runs(plan.parent, plan.iv, [JOINT_TYPES[t].nv for t in plan.types], plan.nv),
                dense_max=DERIV_DENSE_MAX, factored_min=DERIV_FACTORED_MIN, quatv=quatv,
                dstride=(plan.nv + 7) // 8 * 8,         # the factored tail's rows: whole vectors of eight
                serial=all(i == j - 1 for j, i in enumerate(plan.parent)),
                nvj=[JOINT_TYPES[t].nv for t in plan.types], dkern=derivative_kernels())


# Kang & Yoon's recursion (templates/recursive, and the tree part of templates/grcr): workspace per body, in this
# order (block of NB * size each): B2 (6 x n, column major), D, M (articulated inertia, packed upper triangle), Q,
# K (n x 6), k0, Ydot.
ARTICULATED_WORK = (("B2", 36), ("D", 6), ("M", 21), ("Q", 6), ("K", 36), ("k0", 6), ("Yd", 6))


def per_body_size() -> int:
    """The doubles of workspace per body of the articulated recursion."""
    return work_layout(ARTICULATED_WORK)[1]


def articulated_vars(plan: Plan, ref_point: str, extra: int = 0) -> dict:
    """Variables of templates/recursive/recursive.pyx.j2 without loops.

    The tree's, the workspace, the spatial
    algebra of the recursion at the reference point (codegen.symbolic.articulated); ``extra`` doubles of
    workspace after the per-body blocks."""
    from ..symbolic.articulated import recursive_kernels
    work, per_body = work_layout(ARTICULATED_WORK)
    tv = template_vars(plan, per_body * plan.nb + extra)
    nvs = tuple(sorted({nv for _, nv in tv["types_nv"]}))
    tv.update(work=work, spatial=recursive_kernels(ref_point, nvs), loops=False, lw={}, project_hook=False,
              fd_kin=True)                       # fd starts with kin(q, u): rk4 takes the outputs from it
    return tv
