"""Topology planning for the Riccati transfer matrix method (algorithm ``mstmm``).

Source: Rui X., Bestle D., Wang G. et al., "A new version of the Riccati transfer matrix method for
multibody systems consisting of chain and branch bodies", Multibody Syst. Dyn. 49, 337-354 (2020)
(seed shared/seeds/004_0233cf066626872d.txt); equation numbers are the paper's.

Step B1 (divide the branch system into subchains, multi-hinge subsystems and multi-input bodies) is
done here, in Python, once per topology; the template ``templates/mstmm/mstmm.pyx.j2`` renders the result
as one loop per run of chain bodies and explicit code per junction (multi-input body), so the
generated code grows linearly with the number of bodies at most.

Transfer direction: from the free tips (leaf bodies, boundary "0" with m = q = 0, eq 34) towards the
ground.  Every body's OUTPUT point O is its joint to its parent; its INPUT points I_k are the joints
of its children (a leaf has one free input, taken at O itself since m = q = 0 there).  Bodies are in
topological order (parent index < child index), so a descending sweep meets every input before its
body.  Per body j the forward sweep does
    own      element transfer matrix of the body (eqs 4-5; the extended eq 8 for several inputs),
             written at O: the T12 P and f_a - S q parts of eqs 29-30 (T21 = 0, P = T22^-1)
    input    for every child c: its Riccati relation z_a = S z_b + e at I_k carried to O through the
             rigid body kinematics (eq 14: the geometric equations of the multi-hinge, eqs 15-17) and
             the force/moment transfer (T11 of eq 20, the extra columns E6 + E_Ik of eq 8):
             S_O += T11 S T22^-1, e_O += T11 (e + S b) (eqs 29-30; B3 at a junction)
    hinge    the smooth hinge between body j and its parent (revolute or ball): condensed form of
             eq 10 enforcing the moment condition AT the hinge (H^T m = joint torque), see
             codegen/algorithms/mstmm/reference.py "articulated"; this removes the singular closure of eq 59 and the
             spurious singular value of eq 10 (det(T21 S + T22) = 0) documented there.
The root hinge's output is the ground boundary (A4: r'' = 0, Omega' = 0 known), and the backward
sweep (A5 / B4, eqs 25 and 33) gives every state z = [r'', Omega', m, q] and the relative joint
accelerations.

Output of the states (generated module): ``kernel.mstmm_states(q, u, tau, t)`` (nb x 12: r'', Omega', m, q
per joint) and ``kernel.joint_forces``; here ``joint_reactions`` (one state), ``reaction_history`` (a
simulated Result; the runtime stores it as ``joint_force`` and ``joint_moment`` in the NPZ).
"""
from __future__ import annotations

from typing import Dict, List

from ...model import JOINT_TYPES
from ..family import BuildError
from ..tree_plan import children_of, template_vars as tree_vars

SUPPORTED = ("revolute", "spherical")


def kind_of(j: int, kids: List[List[int]]) -> str:
    """tip: no inputs besides the free end; chain: single input from body j + 1; junction: otherwise."""
    if not kids[j]:
        return "tip"
    if kids[j] == [j + 1]:
        return "chain"
    return "junction"


def subchains(parent: List[int]) -> List[Dict]:
    """Step B1: maximal chains of single-input bodies, from a free tip or a junction's output
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


def plan_mstmm(plan) -> Dict:
    """Groups of the forward (tip -> root) Riccati sweep in descending body order.

    Returns {"groups": [...], "subchains": [...], "junctions": [...]} where a group is
      {"kind": "tip" | "chain", "hi": j_hi, "lo": j_lo, "type": joint type, "nv": n,
       "ctype": joint type of the single input's hinge (chain) or None}                  (loop)
      {"kind": "junction", "j": j, "inputs": [(child, its joint type)], "type": ..., "nv": n}  (explicit)
    """
    bad = sorted({t for t in plan.types if t not in SUPPORTED})
    if bad:
        raise BuildError(f"the mstmm algorithm handles revolute and spherical (ball) joints only; "
                         f"this model has {', '.join(bad)}")
    for k, i in enumerate(plan.parent):
        if i >= k:
            raise BuildError("bodies must be in topological order")
    kids = children_of(plan.parent)
    names = plan.body_names
    groups: List[Dict] = []
    for j in range(plan.nb - 1, -1, -1):
        kind = kind_of(j, kids)
        t = plan.types[j]
        nv = JOINT_TYPES[t][1]
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
    return {"groups": groups, "subchains": desc, "junctions": junctions}


def template_vars(plan, options) -> Dict:
    """Variables of templates/mstmm/mstmm.pyx.j2: the rigid-tree ones and the sweep groups."""
    return dict(tree_vars(plan, 72 * plan.nb), mst=plan_mstmm(plan))


# ------------------------------------------------------------------ joint reactions as output

def joint_reactions(system, q, u, tau=None, t: float = 0.0):
    """Joint reactions of an mstmm System at one state: (F, M), each nb x 3 in body order, world frame,
    the force and the moment about the joint point that the parent (or the ground) exerts on the child
    through its joint.  They are the internal force and moment of the MSTMM state (eq 1) at every
    connection point, F = -q, M = +m (sign convention of Sect. 2.1), from the same sweep as the
    accelerations (steps A5 / B4)."""
    k = getattr(system, "kernel", system)
    if not hasattr(k, "joint_forces"):
        raise ValueError("joint reactions come from the mstmm kernels: build with algorithm='mstmm'")
    return k.joint_forces(q, u, tau, t)


def reaction_history(system, result):
    """Joint reactions along a simulated trajectory: {"joint_force", "joint_moment"} (nt x nb x 3, world
    frame, see joint_reactions) evaluated at every sample of a Result (model forces at the sample time)."""
    import numpy as np
    nt, nb = len(result.t), len(result.body_names)
    F, M = np.empty((nt, nb, 3)), np.empty((nt, nb, 3))
    for i, t in enumerate(result.t):
        F[i], M[i] = joint_reactions(system, result.q[i], result.u[i], None, float(t))
    return {"joint_force": F, "joint_moment": M}
