"""Topology planning for the Riccati transfer matrix method (algorithm ``mstmm``).

Source: Rui X., Bestle D., Wang G. et al., "A new version of the Riccati transfer matrix method for
multibody systems consisting of chain and branch bodies", Multibody Syst. Dyn. 49, 337-354 (2020)
(seed shared/seeds/004_0233cf066626872d.txt); equation numbers are the paper's.

Step B1 (divide the branch system into subchains, multi-hinge subsystems and multi-input bodies) is
done here, in Python, once per topology; the template ``templates/mstmm/mstmm.pyx.j2`` renders the result
as one loop per run of chain bodies and explicit code per junction (multi-input body), so the
generated code grows linearly with the number of bodies at most.

Transfer direction: from the free tips (leaf bodies, boundary "0" with m = q = 0, [RBW eq 34]) towards the
ground.  Every body's OUTPUT point O is its joint to its parent; its INPUT points I_k are the joints
of its children (a leaf has one free input, taken at O itself since m = q = 0 there).  Bodies are in
topological order (parent index < child index), so a descending sweep meets every input before its
body.  Per body j the forward sweep does
    own      element transfer matrix of the body ([RBW eqs 4-5]; the extended [RBW eq 8] for several inputs),
             written at O: the T12 P and f_a - S q parts of [RBW eqs 29-30] (T21 = 0, P = T22^-1)
    input    for every child c: its Riccati relation z_a = S z_b + e at I_k carried to O through the
             rigid body kinematics ([RBW eq 14]: the geometric equations of the multi-hinge, [RBW eqs 15-17]) and
             the force/moment transfer (T11 of [RBW eq 20], the extra columns E6 + E_Ik of [RBW eq 8]):
             S_O += T11 S T22^-1, e_O += T11 (e + S b) ([RBW eqs 29-30]; B3 at a junction)
    hinge    the hinge between body j and its parent: condensed form of [RBW eq 10] enforcing the hinge condition
             AT the hinge (Y^T [m; q] = joint force, Y = [H_w; -H_v]), see codegen/algorithms/mstmm/reference.py
             "articulated"; this removes the singular closure of [RBW eq 59] and the spurious singular value of
             [RBW eq 10] (det(T21 S + T22) = 0) documented there.  Our generalisation to hinges with a
             translational part (prismatic, cylindrical, planar, free) and the free joint (S' = O: it passes
             only the wrench of its joint force; at the root it is the paper's free boundary) is derived in
             codegen/algorithms/mstmm/spatial.py (module notes), the numpy reference of this kernel.
The root hinge's parent side is the ground boundary (A4: r'' = 0, Omega' = 0 known), and the backward
sweep (A5 / B4, [RBW eqs 25, 33]) gives every state z = [r'', Omega', m, q] and the relative joint
accelerations.

Output of the states (generated module): ``kernel.mstmm_states(q, u, tau, t)`` (nb x 12: r'', Omega', m, q
per joint), and the joint wrenches of the unified interface (``kernel.joint_wrench``, ``joint_wrench_at``,
templates/shared/base.pyx.j2 block joint_wrench) from the same states: F = -q, M = m, rotated into each
body's reference frame.
"""
from __future__ import annotations

from typing import Dict, List

from ...model import JOINT_TYPES
from ...symbolic.layout import Layout
from ..family import BuildError
from ..tree_plan import children_of, template_vars as tree_vars

SUPPORTED = tuple(JOINT_TYPES)       # every rigid joint type (hinge condensation of spatial.py)
INPUT_KIND = {"spherical": "ball", "free": "free"}     # children whose S has structure (else "gen")


def kind_of(j: int, kids: List[List[int]]) -> str:
    """tip: no inputs besides the free end; chain: single input from body j + 1; junction: otherwise."""
    if not kids[j]:
        return "tip"
    if kids[j] == [j + 1]:
        return "chain"
    return "junction"


def subchains(parent: List[int]) -> List[Dict]:
    """Step B1: the maximal chains of single-input bodies.

    From a free tip or a junction's output
    towards the root; each ends at the body whose parent is a junction (a multi-hinge input) or ground."""
    kids = children_of(parent)
    starts = [j for j in range(len(parent)) if len(kids[j]) != 1]      # tips and junction bodies
    out = []
    for s in starts:
        bodies = [s]
        j = s
        while parent[j] >= 0 and len(kids[parent[j]]) == 1:
            j = parent[j]
            bodies.append(j)
        end = parent[j]
        out.append({"bodies": bodies, "start": "tip" if not kids[s] else "junction", "into": end})
    return out


def hinge_kind(jtype: str) -> Dict:
    """Which parts of the hinge condensation a joint type needs.

    (from its sympy model): lin / ang: the
    relative linear / angular velocity map is not identically zero; kind: ball (S' has only the q-r'' block),
    free (S' = O), rigid (no dof: S' = S), gen; from_A: the hinge's columns are A_j's and its product term is
    Omega_i x Omega_j (codegen.symbolic.body_kernels.body_axes_ball), so the kernel reads A and Omega, and the
    kinematics pass writes no joint columns for it (less memory traffic per body: 0.8 of M5's time per call)."""
    from ...symbolic.body_kernels import body_axes_ball
    from ...symbolic.joints import joint_model
    jm = joint_model(jtype)
    kind = "rigid" if jm.nv == 0 else INPUT_KIND.get(jtype, "gen")
    if (kind == "ball") != body_axes_ball(jtype):       # the template's ball hinge reads A_j as its columns
        raise RuntimeError(f"joint type {jtype}: a ball hinge must have its rates in body axes")
    return {"nv": jm.nv, "lin": not jm.S_v.is_zero_matrix, "ang": not jm.S_w.is_zero_matrix, "kind": kind,
            "from_A": body_axes_ball(jtype)}


A1_SIZE = 18      # mst_body_pre's numbers per body: J_O (9), d (3), e (6), stored after the bodies' workspace blocks


def work_layout(nmax: int) -> Layout:
    """The workspace layout per body j (the template's MW_<block>).

    Workspace per body j (the template's MW_<block>, at MW_SIZE j): S, e: the Riccati coefficients z_a = S z_b'
    + e at the joint [RBW eqs 29-30]; G, g0: the hinge row udot_j = g0 - G z_b' [RBW eq 25], nmax the most joint velocities;
    c: the hinge's velocity-product terms; zb: the body's state [r''; Omega'] after A5."""
    nmax = max(nmax, 1)
    return Layout(("S", 36), ("e", 6), ("G", 6 * nmax), ("g0", nmax), ("c", 6), ("zb", 6))


def plan_mstmm(plan) -> Dict:
    """Groups of the forward (tip -> root) Riccati sweep in descending body order.

    Returns {"groups": [...], "subchains": [...], "junctions": [...], "hinge": {type: hinge_kind},
    "input_kind": {type: ball | free | gen}, "input_kinds": the input kinds present, "work": work_layout}
    where a group is
      {"kind": "tip" | "chain", "hi": j_hi, "lo": j_lo, "type": joint type, "nv": n,
       "ctype": joint type of the single input's hinge (chain) or None}                  (loop)
      {"kind": "junction", "j": j, "inputs": [(child, its joint type)], "type": ..., "nv": n}  (explicit)
    """
    bad = sorted({t for t in plan.types if t not in SUPPORTED})
    if bad:
        raise BuildError(f"the mstmm algorithm does not handle joint type(s) {', '.join(bad)}")
    for k, i in enumerate(plan.parent):
        if i >= k:
            raise BuildError("bodies must be in topological order")
    kids = children_of(plan.parent)
    names = plan.body_names
    groups: List[Dict] = []
    for j in range(plan.nb - 1, -1, -1):
        kind = kind_of(j, kids)
        t = plan.types[j]
        nv = JOINT_TYPES[t].nv
        if kind == "junction":
            groups.append({"kind": kind, "j": j, "inputs": [(c, plan.types[c]) for c in kids[j]], "type": t,
                           "nv": nv, "name": names[j], "input_names": [names[c] for c in kids[j]]})
            continue
        ctype = plan.types[j + 1] if kind == "chain" else None        # joint type of the input's hinge
        g = groups[-1] if groups else None
        if g is not None and g["kind"] == kind and g["type"] == t and g["ctype"] == ctype and g["lo"] == j + 1:
            g["lo"] = j
        else:
            groups.append({"kind": kind, "hi": j, "lo": j, "type": t, "nv": nv, "ctype": ctype})
    for g in groups:
        if g["kind"] != "junction":
            g["names"] = f"{names[g['hi']]} .. {names[g['lo']]}" if g["hi"] != g["lo"] else names[g["hi"]]
    chains = subchains(plan.parent)
    desc = []
    for c in chains:
        b = c["bodies"]
        into = names[c["into"]] if c["into"] >= 0 else "ground"
        seq = " -> ".join(names[k] for k in b) if len(b) <= 6 else \
            f"{names[b[0]]} -> {names[b[1]]} -> ... -> {names[b[-1]]} ({len(b)} bodies)"
        desc.append(f"{c['start']} {seq} -> {into}")
    junctions = [f"{g['name']}: inputs {', '.join(g['input_names'])}" for g in groups if g["kind"] == "junction"]
    hinges = {t: hinge_kind(t) for t in plan.joint_types_used}
    inputs = {t: INPUT_KIND.get(t, "gen") for t in plan.joint_types_used}
    return {"groups": groups, "subchains": desc, "junctions": junctions, "hinge": hinges, "input_kind": inputs,
            "input_kinds": sorted({inputs[plan.types[j]] for j in range(plan.nb) if plan.parent[j] >= 0}),
            "work": work_layout(max(h["nv"] for h in hinges.values()))}


def pipeline_vars(plan) -> Dict:
    """The per-body tables of templates/mstmm/pipeline.pyx.j2 (rk4 on two threads).

    lastchild[j] = max(j, its children): the last body whose backward step reads j's kinematics; quat_of_body[j]:
    the offset in q of j's quaternion, or -1."""
    last = list(range(plan.nb))
    for j, i in enumerate(plan.parent):
        if i >= 0:
            last[i] = max(last[i], j)
    quat = {o for o in plan.quat_offsets}
    qb = [next((o for o in range(plan.iq[j], plan.iq[j] + JOINT_TYPES[t].nq) if o in quat), -1)
          for j, t in enumerate(plan.types)]
    return {"lastchild": last, "quat_of_body": qb, "a1_size": A1_SIZE}


def template_vars(plan, options) -> Dict:
    """Variables of templates/mstmm/mstmm.pyx.j2: the rigid-tree ones, the sweep groups and the two-thread rk4's."""
    mst = plan_mstmm(plan)
    mst.update(pipeline_vars(plan))
    lean = {t for t, h in mst["hinge"].items() if h["from_A"]}
    tv = tree_vars(plan, (mst["work"].size + A1_SIZE) * plan.nb, lean)
    # rk4 on two threads (pipeline.pyx.j2): not with point forces (mst_body_pre reads their loads) or activations
    return dict(tv, mst=mst, fd_kin=True, pipeline=not (tv["point_forces"] or tv["loops"] or tv["na"]))

