"""Topology plan of the constraint force algorithm (Liu, Hu & Zhang 2016, seed 001).

Unknowns: the constraint force F_Sj of every joint, m_j = 6 - n_j numbers (a free joint has none, a fixed
one six), stacked in body order (offsets IS).  The coefficient matrix A = W^T P^T I^-1 P W [LHZ eq 26] couples
a joint with its parent joint and with its siblings (the node terms of [LHZ eqs 33-36]), nothing else.

General form [LHZ eqs 22-29]: A assembled dense, one Cholesky (LDL^T) solve.

Serial form (Sect. 3): the bodies are split into
  * specials: the node bodies (more than one child, Sect. 1) and the children of nodes -- the rows that
    carry the node couplings D^t [LHZ eq 35] and b^t [LHZ eq 36];
  * paths: maximal runs of the other bodies (each has at most one child), the single chains of Fig. 1.
    A path couples only to the special just inboard of its first body and to the special just outboard of
    its last one (the extra columns of A_chain_node, [LHZ eq 41]).
Per path K = ceil(log2 L) rounds of block odd-even elimination [LHZ eqs 39-40] leave every row coupled only
to itself and to its two end specials; substituting those rows into the special rows gives the node system
A_node [LHZ eqs 41-44], solved first; then every path row is back-substituted [LHZ eq 44].
Bodies with m_j = 0 (free joints) have no rows and split paths.

The node system is solved by block elimination along the tree (ours; the seed solves it densely): its blocks
couple a special with its parent special, its sibling specials and, through a path, the specials at the path's two
ends.  Eliminated deepest body first, every special's remaining neighbours are a clique already (a node's joint and
its children; a path's top special alone), so the block LDL^T makes no fill and costs O(sum of degree^2) = O(n)
on trees of bounded degree (``node_elimination`` still adds fill edges symbolically, should a topology need them).
"""
from __future__ import annotations

import math
from itertools import combinations
from typing import Dict

from ...model import JOINT_TYPES
from ..tree_plan import Plan, children_of, template_vars as tree_vars, work_layout

# Workspace per body (doubles): S = H_j (6 x n), W (6 x m), Z = X^T W (parent coords), YW = I^-1 W, YZ = I_parent^-1 Z,
# Yf (LDL^T of the 6x6 I_j), F (F' then the joint wrench), Fb (bias wrench), a (acceleration), g (P F).
PER_BODY = (("S", 36), ("W", 36), ("Z", 36), ("YW", 36), ("YZ", 36), ("Yf", 36), ("F", 6), ("Fb", 6), ("a", 6), ("g", 6))
# serial form, per body, two buffers: A (m x m), U (m x m_next), E (m x 12), X (m)
SERIAL_ROW = 36 + 36 + 72 + 6
# node-system edge kinds: a special's coupling to its parent special, to a sibling, through a path, fill
EDGE_PARENT, EDGE_SIBLING, EDGE_PATH, EDGE_FILL = range(4)


def node_elimination(spec, sidx, parent, kids, paths) -> Dict:
    """The node system's block structure in elimination order (deepest special first).

    Per special s (its edges in E_OFF[s] .. E_OFF[s + 1]): the specials it couples to that are eliminated after
    it (E_TGT, E_KIND), and the pairs of those edges (P_*) with the block their update lands in: P_BLK >= 0 an
    edge (P_TR: stored transposed), P_BLK = -1 - x the diagonal block of special x.  PATH_EDGE: the edge of each
    path's two end specials (-1: none)."""
    n = len(spec)
    adj = [dict() for _ in range(n)]

    def link(a, b, kind):
        adj[a].setdefault(b, kind)
        adj[b].setdefault(a, kind)
    for s, j in enumerate(spec):
        p = parent[j]
        if p >= 0 and p in sidx:
            link(s, sidx[p], EDGE_PARENT)
        if p >= 0:
            for k in kids[p]:
                if k > j and k in sidx:
                    link(s, sidx[k], EDGE_SIBLING)
    for pth in paths:
        if pth["top"] >= 0 and pth["bot"] >= 0:
            link(pth["bot"], pth["top"], EDGE_PATH)
    e_off, e_end, tgt, kind, edge = [0] * n, [0] * n, [], [], {}
    for s in reversed(range(n)):                       # spec ascends by body index: deepest first
        later = sorted(t for t in adj[s] if t < s)
        for a, b in combinations(later, 2):            # symbolic elimination: fill between the later neighbours
            link(a, b, EDGE_FILL)
        e_off[s] = len(tgt)
        for t in later:
            edge[(s, t)] = len(tgt)
            tgt.append(t)
            kind.append(adj[s][t])
        e_end[s] = len(tgt)
    p_off, p_end, pe1, pe2, pblk, ptr = [0] * n, [0] * n, [], [], [], []
    for s in reversed(range(n)):
        p_off[s] = len(pe1)
        for e1 in range(e_off[s], e_end[s]):
            for e2 in range(e1, e_end[s]):
                x, y = tgt[e1], tgt[e2]
                pe1.append(e1)
                pe2.append(e2)
                if x == y:
                    pblk.append(-1 - x)
                    ptr.append(0)
                else:                                  # the edge owned by the one eliminated first (higher index)
                    pblk.append(edge[(max(x, y), min(x, y))])
                    ptr.append(int(max(x, y) != x))
        p_end[s] = len(pe1)
    path_edge = [edge.get((p["bot"], p["top"]), -1) if p["top"] >= 0 and p["bot"] >= 0 else -1 for p in paths]
    return {"NE": len(tgt), "E_OFF": e_off or [0], "E_END": e_end or [0], "E_TGT": tgt or [0], "E_KIND": kind or [0],
            "NPAIR": len(pe1), "P_OFF": p_off or [0], "P_END": p_end or [0],
            "P_E1": pe1 or [0], "P_E2": pe2 or [0], "P_BLK": pblk or [0], "P_TR": ptr or [0],
            "PATH_EDGE": path_edge or [-1], "NFILL": kind.count(EDGE_FILL)}


def cfa_plan(plan: Plan) -> Dict:
    """Constraint counts and offsets, children lists, and the serial form's specials and paths."""
    nb, parent = plan.nb, plan.parent
    m = [6 - JOINT_TYPES[t].nv for t in plan.types]
    IS, off = [], 0
    for k in range(nb):
        IS.append(off)
        off += m[k]
    kids = children_of(parent)
    node = [len(kids[j]) > 1 for j in range(nb)]
    special = [m[j] > 0 and (node[j] or (parent[j] >= 0 and node[parent[j]])) for j in range(nb)]
    spec = [j for j in range(nb) if special[j]]
    sidx = {j: k for k, j in enumerate(spec)}
    soff, o = [], 0
    for j in spec:
        soff.append(o)
        o += m[j]
    interior = [m[j] > 0 and not special[j] for j in range(nb)]
    paths = []
    for j in range(nb):
        if not interior[j] or (parent[j] >= 0 and interior[parent[j]]):
            continue                                   # not the first body of a path
        body = [j]
        while len(kids[body[-1]]) == 1 and interior[kids[body[-1]][0]]:
            body.append(kids[body[-1]][0])
        p, last = parent[j], body[-1]
        top = sidx[p] if p >= 0 and special[p] else -1
        c = kids[last][0] if len(kids[last]) == 1 else -1
        bot = sidx[c] if c >= 0 and special[c] else -1
        paths.append({"bodies": body, "top": top, "bot": bot})
    flat, poff = [], []
    for pth in paths:
        poff.append(len(flat))
        flat.extend(pth["bodies"])
    longest = max((len(p["bodies"]) for p in paths), default=1)
    return {**node_elimination(spec, sidx, parent, kids, paths), "m": m, "IS": IS, "NS": off, "kids": kids, "special": spec, "SOFF": soff, "NSN": o,
            "paths": paths, "PATH_BODY": flat or [0], "PATH_OFF": poff or [0],
            "PATH_LEN": [len(p["bodies"]) for p in paths] or [0], "PATH_TOP": [p["top"] for p in paths] or [-1],
            "PATH_BOT": [p["bot"] for p in paths] or [-1], "NPATH": len(paths),
            "K": math.ceil(math.log2(longest)) if longest > 1 else 0}


def template_vars(plan: Plan, options: dict) -> Dict:
    """Variables of templates/cfa/cfa.pyx.j2: the rigid-tree ones, the per-type W_j helpers, the topology."""
    from ...symbolic.cfa import cfa_code
    c = cfa_plan(plan)
    work, per_body = work_layout(PER_BODY)
    ns = c["NS"]
    solver = ns * ns if options["form"] == "general" else \
        (2 * SERIAL_ROW + 36) * plan.nb + 36 * (len(c["special"]) + 2 * c["NE"]) + c["NSN"]
    extra = plan.nv + 12 * plan.nb + plan.nv + ns + solver     # tau_b, rnea V/Acc, F_T, F_S, solver
    tv = tree_vars(plan, per_body * plan.nb + extra)
    kid_off, kid_list = [], []
    for k in c["kids"]:
        kid_off.append(len(kid_list))
        kid_list.extend(k)
    kid_off.append(len(kid_list))
    tv.update(work=work, per_body=per_body, cfa=c, wcode={t: cfa_code(t)["W"] for t in plan.joint_types_used},
              kid_off=kid_off, kid_list=kid_list or [0], serial_row=SERIAL_ROW,
              edge_kinds={"EDGE_PARENT": EDGE_PARENT, "EDGE_SIBLING": EDGE_SIBLING, "EDGE_PATH": EDGE_PATH,
                          "EDGE_FILL": EDGE_FILL})
    return tv
