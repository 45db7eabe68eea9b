"""Topology plan of the generalized recursive coordinate reduction (Critchley & Anderson, seed 003).

Phantom bodies (Sect. 3, Fig. 2).  Every cut joint of the model's ``loops:`` section becomes a tree joint
that carries a *phantom body*, a massless copy of the cut's parent body (the loop base 0_i), hung from the
cut's child: the reversed cut (parent frame = the cut's child frame, child frame = the cut's parent frame,
axis = minus the cut's axis, so its coordinate *is* the cut's coordinate).  The loop is then the tree path
0_i -> 1 -> ... -> n_i - 1 -> n_i (the phantom), and closing it is  ^{0_i}V^{n_i} = 0  (eq 23): the phantom's
frame coincides with the cut's frame on the base.  The cut coordinates join the state after the tree's
(``state_model``: the augmented tree), always dependent (the last coordinate of each loop, Sect. 4).

What the method takes (checked here, with messages naming the file and field):
  * the cut's parent is the loop base: an ancestor of the cut's child (or ground), so the loop is one chain
    from its base (Fig. 2); write the spanning tree that way (the cut joins the chain's last body to its base);
  * every joint of a loop chain (tree joints on the path and the cut) has one coordinate (revolute,
    prismatic);
  * loops do not share joints (loops may share bodies: a loop whose base lies on another loop hangs from it
    as a subtree).  Loops that share joints need the coupled-loop bookkeeping of Sect. 5 (eqs 103-111).

Everything else (off-loop subtrees, any joint type) runs the tree recursion of the recursive family at the
instant global origin (Kang & Yoon eq 33: B1 = I), whose world-frame vectors make the shift tensors S of the
seed identities: every spatial quantity below is world-frame, linear part first, about the origin.
"""
from __future__ import annotations

from typing import List

import numpy as np

from ...model import GROUND, Body, Joint, Model, ModelError, Placement
from ..family import BuildError
from ..tree_plan import Plan, canonical_rotation

NP_LOOP = 12                 # per loop: the cut frame on the base, in the base's reference frame: R (9), p (3)
LOOP_TYPES = ("revolute", "prismatic")


def cut_axis(cut) -> np.ndarray:
    return np.asarray(cut.axis if cut.axis is not None else (0.0, 0.0, 1.0), float)


def phantom_name(cut) -> str:
    return f"{cut.name}~phantom"


def state_model(model: Model) -> Model:
    """The tree the kernels integrate: the model's joints, then one phantom body per cut (massless, hung
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


def check(model: Model) -> None:
    """Raise BuildError (ModelError) when a loop is outside what the method takes (see the module doc)."""
    if not model.cuts:
        raise BuildError("algorithm 'grcr' solves closed loops; this model has no `loops:` section: use recursive")
    parent = {j.child: j.parent for j in model.joints}
    jtype = {j.child: j for j in model.joints}
    owner = {}
    for c in model.cuts:
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
            j = jtype[b]
            if j.type not in LOOP_TYPES:
                raise ModelError(f"grcr takes loops of one-coordinate joints; joint '{j.name}' on this loop is "
                                 f"{j.type}: use --algorithm recursive", model.source, f)
            if j.name in owner:
                raise ModelError(f"loops '{owner[j.name]}' and '{c.name}' share joint '{j.name}': coupled loops "
                                 f"that share joints (GRCR Sect. 5) are not supported by grcr yet; use "
                                 f"--algorithm recursive", model.source, f)
            owner[j.name] = c.name
            path.append(b)
            b = parent[b]


class GrcrPlan(Plan):
    """The tree plan of the state model, plus the loop chains."""

    def __init__(self, model: Model):
        check(model)
        self.source_model = model
        super().__init__(state_model(model))
        self.model = self.state_model = self.model
        self.nb_real = len(model.joints)            # real bodies first, phantoms last
        self.loop_names = [c.name for c in model.cuts]
        self.chains: List[List[int]] = []           # per loop: body indices base-outward, the phantom last
        self.bases: List[int] = []                  # -1: ground
        for k, c in enumerate(model.cuts):
            ph = self.nb_real + k
            chain, b = [ph], self.parent[ph]
            base = self.index[c.parent] if c.parent != GROUND else -1
            while b != base:
                chain.append(b)
                b = self.parent[b]
            self.chains.append(chain[::-1])
            self.bases.append(base)
        self.nloop = len(self.chains)
        self.np_tree = self.np
        self.np += NP_LOOP * self.nloop

    def params(self) -> np.ndarray:
        p = super().params()                        # the tree's numbers, then the loops'
        frames = self.body_frames()
        for k, (c, base) in enumerate(zip(self.source_model.cuts, self.bases)):
            # the phantom's reference frame (its canonical joint frame on the child side = the cut's frame on
            # the base, turned by K) in the base's reference frame: where the phantom must sit (eq 23)
            K = canonical_rotation(c.type, -cut_axis(c), None)
            pos, rot = c.parent_frame.pos, c.parent_frame.rot @ K
            if base >= 0:
                gp, gr = frames[base][2]
                pos, rot = gr.T @ (pos - gp), gr.T @ rot
            o = self.np_tree + NP_LOOP * k
            p[o:o + 9], p[o + 9:o + 12] = rot.ravel(), pos
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
        nmax = max(len(ch) for ch in self.chains)
        return dict(nloop=self.nloop, chain_flat=flat, chain_off=off, bases=self.bases, loop_first=first,
                    loop_member=member, nchain=len(flat), nmax=nmax, np_tree=self.np_tree, np_loop=NP_LOOP,
                    loop_names=self.loop_names)

    def roadmap(self) -> List[str]:
        rows = super().roadmap()
        for k, ch in enumerate(self.chains):
            base = self.body_names[self.bases[k]] if self.bases[k] >= 0 else GROUND
            rows.append(f"loop {k} ({self.loop_names[k]}): base {base}; chain "
                        + " -> ".join(self.body_names[b] for b in ch))
        return rows
