"""Topology plan of the generalized recursive coordinate reduction (Critchley & Anderson, seed 003).

Phantom bodies (Sect. 3, Fig. 2).  Every cut joint of the model's ``loops:`` section becomes a tree joint
that carries a *phantom body*, a massless copy of the cut's parent body (the loop base 0_i), hung from the
cut's child: the reversed cut (parent frame = the cut's child frame, child frame = the cut's parent frame,
axis = minus the cut's axis, so its coordinate *is* the cut's coordinate).  The loop is then the tree path
0_i -> 1 -> ... -> n_i - 1 -> n_i (the phantom), and closing it is  ^{0_i}V^{n_i} = 0  [CA eq 23]: the phantom's
frame coincides with the cut's frame on the base.  The cut coordinates join the state after the tree's
(``state_model``: the augmented tree), always dependent (the last coordinate of each loop, Sect. 4).

What the method takes (checked here, with messages naming the file and field):
  * the cut's parent is the loop base: an ancestor of the cut's child (or ground), so the loop is one chain
    from its base (Fig. 2); write the spanning tree that way (the cut joins the chain's last body to its base);
  * every joint of a loop chain (tree joints on the path and the cut) has one coordinate (revolute,
    prismatic);
  * loops do not share joints (loops may share bodies: a loop whose base lies on another loop hangs from it
    as a subtree).  Loops that share joints need the coupled-loop bookkeeping of Sect. 5 [CA eqs 103-111].

Couplings (the model's ``couplings:``) are rows L1 = p(L2) over the reduced solve (codegen.algorithms.couplings,
templates/grcr/couplings.pyx.j2); their parameters follow the loops'.

Everything else (off-loop subtrees, any joint type) runs the tree recursion of the recursive family at the
instant global origin ([KY eq 33]: B1 = I), whose world-frame vectors make the shift tensors S of the
seed identities: every spatial quantity below is world-frame, linear part first, about the origin.
"""
from __future__ import annotations

from typing import List

import numpy as np

from ...model import GROUND, Body, Joint, Model, ModelError, Placement
from ..couplings import coupling_params, coupling_pattern, coupling_roadmap, coupling_rows, coupling_vars
from ..family import BuildError
from ...symbolic.layout import Layout
from ..tree_plan import Plan, canonical_rotation

LOOP_PARAMS = Layout(("R", 9), ("p", 3))   # per loop in p, after the tree's: the cut frame on the base [CA eq 23]
NP_LOOP = LOOP_PARAMS.size
LOOP_TYPES = ("revolute", "prismatic")


def cut_axis(cut) -> np.ndarray:
    """The axis of a cut joint (z of its frame when it has none)."""
    return np.asarray(cut.axis if cut.axis is not None else (0.0, 0.0, 1.0), float)


def phantom_name(cut) -> str:
    """The name of the phantom body that opens the loop of `cut`."""
    return f"{cut.name}~phantom"


def state_model(model: Model) -> Model:
    """The tree the kernels integrate: the model's joints and one phantom body per cut.

    The tree the kernels integrate: the model's joints, then one phantom body per cut (massless, hung
    from the cut's child by the reversed cut).  Built without the model checks (a massless leaf makes the
    tree's own mass matrix singular; the loop closure makes the reduced one regular)."""
    aug = Model.__new__(Model)
    aug.__dict__.update(model.__dict__)
    bodies, joints = list(model.bodies), list(model.joints)
    for c in model.cuts:
        ph = Body(phantom_name(c), 0.0, np.zeros(3), np.zeros((3, 3)))
        bodies.append(ph)
        axis = -cut_axis(c)
        joints.append(Joint(c.name, c.type, c.child, ph.name,
                            Placement(c.child_frame.pos.copy(), c.child_frame.rot.copy()),
                            Placement(c.parent_frame.pos.copy(), c.parent_frame.rot.copy()),
                            axis=axis, q0=None if c.q0 is None else np.array(c.q0, float), u0=None))
    aug.bodies, aug.joints, aug.cuts = bodies, joints, []
    aug._bodies = {b.name: b for b in bodies}
    return aug


def loop_layout(model: Model) -> List[dict]:
    """The loops in processing order, each chain split into its prefix and its tail.

    The loops in processing order (bases inboard first) with their chains split into the *prefix* (tree
    joints that an earlier loop already holds) and the *tail* (the loop's own joints, then its cut).  A loop
    coupled to another (sharing joints, GRCR Sect. 5) hangs on it: its base B lies on the other loop's chain
    and its prefix is the joints of that chain right after B, up to the branching body b (the anchor, [CA eq 107]'s
    three accelerations A^{0_i}, ^{0_i}A^{0_j}, ^{0_j}A^b).  Raises ModelError naming the field otherwise."""
    if not model.cuts:
        raise BuildError("algorithm 'grcr' solves closed loops; this model has no `loops:` section: use recursive")
    parent = {j.child: j.parent for j in model.joints}
    jtype = {j.child: j for j in model.joints}

    def depth(b):
        n = 0
        while b != GROUND:
            b, n = parent[b], n + 1
        return n

    order = sorted(range(len(model.cuts)), key=lambda i: (depth(model.cuts[i].parent), i))
    owner, out = {}, []
    for ci in order:
        c = model.cuts[ci]
        f = f"loops[{c.name}]"
        if c.type not in LOOP_TYPES:
            raise ModelError(f"grcr takes loops of one-coordinate joints ({', '.join(LOOP_TYPES)}); this cut is "
                             f"{c.type}: use --algorithm recursive (cut-joint method)", model.source, f + ".type")
        path, b = [], c.child
        while b != c.parent:
            if b == GROUND:
                raise ModelError(f"grcr needs each loop as one chain from its base: the cut's parent "
                                 f"'{c.parent}' must be an ancestor of its child '{c.child}' in the tree (choose "
                                 f"the spanning tree so that the cut joins the chain's last body back to its "
                                 f"base), or use --algorithm recursive", model.source, f + ".parent")
            if jtype[b].type not in LOOP_TYPES:
                raise ModelError(f"grcr takes loops of one-coordinate joints; joint '{jtype[b].name}' on this loop "
                                 f"is {jtype[b].type}: use --algorithm recursive", model.source, f)
            path.append(b)
            b = parent[b]
        path.reverse()                                   # base outward
        held = [owner.get(b) for b in path]
        s = 0
        while s < len(path) and held[s] is not None:
            s += 1
        why = None
        if any(h is not None for h in held[s:]):
            why = "it shares joints that do not form the start of its chain"
        elif s:
            L1 = out[held[0]]
            k = L1["tail"].index(c.parent) if c.parent in L1["tail"] else -2
            if len({held[i] for i in range(s)}) > 1 or L1["tail"][k + 1:k + 1 + s] != path[:s]:
                why = (f"its shared joints must be the joints of loop '{L1['cut'].name}' that follow this loop's base "
                       f"'{c.parent}' on that loop's chain")
        if s == len(path):
            why = "all its tree joints belong to another loop"
        if why:
            raise ModelError(f"grcr cannot take this coupled loop: {why} (GRCR Sect. 5: a loop coupled to another "
                             f"hangs on it from a base on its chain); choose the spanning tree accordingly or use "
                             f"--algorithm recursive", model.source, f)
        for b in path[s:]:
            owner[b] = len(out)
        out.append({"cut": c, "cut_index": ci, "base": c.parent, "anchor": path[s - 1] if s else c.parent,
                    "prefix": path[:s], "tail": path[s:], "owner": held[0] if s else None})
    return out


def check(model: Model) -> None:
    """Raise BuildError (ModelError) when a loop is outside what the method takes (see loop_layout)."""
    loop_layout(model)


class GrcrPlan(Plan):
    """The tree plan of the state model, plus the loop chains."""

    def __init__(self, model: Model):
        check(model)
        self.source_model = model
        super().__init__(state_model(model))
        self.model = self.state_model = self.model
        self.nb_real = len(model.joints)            # real bodies first, phantoms last
        layout = loop_layout(model)
        self.loop_names = [lp["cut"].name for lp in layout]
        self.cut_order = [lp["cut_index"] for lp in layout]
        self.chains: List[List[int]] = []           # per loop: its own bodies base-outward, the phantom last
        self.bases: List[int] = []                  # -1: ground
        self.anchors: List[int] = []                # the body the chain starts from (the base, or the branching body)
        self.hangs: List[tuple] = []                # (owner loop, its chain position of the base, of the anchor, loop)
        ix = lambda name: self.index[name] if name != GROUND else -1      # noqa: E731
        for L, lp in enumerate(layout):
            self.chains.append([self.index[b] for b in lp["tail"]] + [self.nb_real + lp["cut_index"]])
            self.bases.append(ix(lp["base"]))
            self.anchors.append(ix(lp["anchor"]))
            if lp["prefix"]:
                ch = self.chains[lp["owner"]]
                self.hangs.append((lp["owner"], ch.index(self.bases[L]), ch.index(self.anchors[L]), L))
        self.prefixes = [[self.index[b] for b in lp["prefix"]] for lp in layout]
        self.nloop = len(self.chains)
        self.np_tree = self.np
        self.np += NP_LOOP * self.nloop
        self.couplings = coupling_rows(self, model, 0)     # rows L1 = p(L2) on top of the reduced solve

    def params(self) -> np.ndarray:
        """The parameter vector: the tree's numbers, then each loop's."""
        p = super().params()                        # the tree's numbers, then the loops'
        frames = self.body_frames()
        for k, (ci, base) in enumerate(zip(self.cut_order, self.bases)):
            c = self.source_model.cuts[ci]
            # the phantom's reference frame (its canonical joint frame on the child side = the cut's frame on
            # the base, turned by K) in the base's reference frame: where the phantom must sit [CA eq 23]
            K = canonical_rotation(c.type, -cut_axis(c), None)
            pos, rot = c.parent_frame.pos, c.parent_frame.rot @ K
            if base >= 0:
                gp, gr = frames[base][2]
                pos, rot = gr.T @ (pos - gp), gr.T @ rot
            o = self.np_tree + NP_LOOP * k
            LOOP_PARAMS.view(p, "R", o)[:] = rot.ravel()      # in the base's reference frame
            LOOP_PARAMS.view(p, "p", o)[:] = pos
        coupling_params(p, self.couplings, self.source_model)
        return p

    def loop_vars(self) -> dict:
        """Template variables: the chains (flat, with offsets), bases, the loop of every body, sizes."""
        flat, off = [], []
        for ch in self.chains:
            off.append(len(flat))
            flat.extend(ch)
        off.append(len(flat))
        first = [-1] * self.nb                # body -> loop whose chain starts at it
        member = [-1] * self.nb               # body -> loop whose chain holds it
        for k, ch in enumerate(self.chains):
            first[ch[0]] = k
            for b in ch:
                member[b] = k
        hangs = sorted(self.hangs)                  # by the loop they hang on
        arrays = dict(chain=flat, chain_off=off, base=self.bases, anchor=self.anchors, loop_first=first,
                      loop_member=member, hang_off=[sum(1 for h in hangs if h[0] < L) for L in range(self.nloop + 1)],
                      hang_owner=[h[0] for h in hangs], hang_pb=[h[1] for h in hangs], hang_pa=[h[2] for h in hangs],
                      hang_loop=[h[3] for h in hangs],
                      loop_hang=[next((i for i, h in enumerate(hangs) if h[3] == L), -1) for L in range(self.nloop)])
        return dict({k + "_c": ", ".join(str(v) for v in (a or [0])) for k, a in arrays.items()},
                    **coupling_vars(self.couplings),
                    nloop=self.nloop, nchain=len(flat), nmax=max(len(ch) for ch in self.chains),
                    np_tree=self.np_tree, np_loop=NP_LOOP, loop_names=self.loop_names, nhang=len(hangs))

    def roadmap(self) -> List[str]:
        """The tree's roadmap with one row per loop."""
        rows = super().roadmap()
        for k, ch in enumerate(self.chains):
            base = self.body_names[self.bases[k]] if self.bases[k] >= 0 else GROUND
            rows.append(f"loop {k} ({self.loop_names[k]}): base {base}; "
                        + (f"shares {', '.join(self.joint_names[b] for b in self.prefixes[k])} (hangs on loop "
                           f"{self.hangs[[h[3] for h in self.hangs].index(k)][0]}); " if self.prefixes[k] else "")
                        + "chain " + " -> ".join(self.body_names[b] for b in ch))
        return rows + coupling_roadmap(self, self.couplings)

    def code_pattern(self) -> str:
        """The tree's pattern plus the couplings' terms."""
        return super().code_pattern() + coupling_pattern(self.couplings)
