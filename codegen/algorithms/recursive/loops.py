"""Closed loops for the recursive family: cut joints [KY eqs 37-46].

The `joints:` tree is the spanning tree; each cut joint of the model's `loops:` section adds the rows of
its joint type (``codegen.symbolic.loops.ROWS``) between a frame on side i (its parent) and one on side j
(its child).  The plan decides everything structural:

* the rows of every cut, after the planar reduction: when every joint on the loop's tree path moves in
  one plane (revolute about its normal n, prismatic in it, planar about n, fixed), the rows along n are
  satisfied identically and are dropped (M2's prismatic cut keeps its two in-plane rows);
* the *loop bodies*: a body whose subtree holds a side of some cut carries the m x 6 Jacobian Phi_j of
  [KY eqs 39-40] in the backward pass (slot ``SLOT[j]``; other bodies skip the loop terms);
* the parameters of each cut (24 numbers: the point and the three axes of each side, in the side's body
  reference frame; world for ground), appended to the tree's parameter vector.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import List, Optional

import numpy as np

from ...model import GROUND, JOINT_TYPES, Model, ModelError
from ...symbolic.loop_rows import ROWS, planar_rows
from ..couplings import (c_array, coupling_params, coupling_pattern, coupling_roadmap, coupling_rows,
                         coupling_vars)
from ..tree_plan import Plan, canonical_rotation

NP_CUT = 24          # per cut: p_i (3), e0 e1 e2 (9), p_j (3), f0 f1 f2 (9)


@dataclass
class Row:
    """One constraint row of a cut joint."""

    kind: str        # d1 | d2
    a: int           # axis on side i
    b: int           # axis on side j (d1)
    index: int       # row number in the system (0 .. m-1)


@dataclass
class Cut:
    """A cut joint as the loop kernels see it: its sides, type and rows."""

    name: str
    type: str
    bi: int          # body index of side i (-1: ground)
    bj: int
    K: np.ndarray    # cut frame axes in the joint frame (columns; e2 = joint axis)
    rows: List[Row]
    normal: Optional[int]     # planar loop: the cut frame axis along the plane normal
    index: int = 0            # parameter offset

    @property
    def row0(self) -> int:
        """The index of the cut's first row in the constraint system."""
        return self.rows[0].index


def _unit_or_none(v):
    n = np.linalg.norm(v)
    return v / n if n > 1e-12 else None


class LoopPlan(Plan):
    """The tree plan plus the cut joints."""

    def __init__(self, model: Model):
        super().__init__(model)
        self.cuts: List[Cut] = []
        m = 0
        for c in model.cuts:
            bi = self.index[c.parent] if c.parent != GROUND else -1
            bj = self.index[c.child]
            K = canonical_rotation(c.type, c.axis, c.axis2)
            normal, K = self._planar(c, bi, bj, K)
            rows = ROWS[c.type] if normal is None else planar_rows(c.type, normal)
            if not rows:
                raise ModelError("this cut joint constrains nothing: its loop moves in a plane where the joint "
                                 "allows every motion", model.source, f"loops[{c.name}]")
            self.cuts.append(Cut(c.name, c.type, bi, bj, K, [Row(k, a, b, m + r) for r, (k, a, b) in
                                                              enumerate(rows)], normal))
            m += len(rows)
        self.nm_cut = m
        for cut in self.cuts:
            cut.index = self.np
            self.np += NP_CUT
        self.couplings = coupling_rows(self, model, m)  # one joint-space row each, after the cuts' rows
        self.nm = m + len(self.couplings)
        # loop bodies: a cut side in the subtree
        slot = [-1] * self.nb
        mark = [False] * self.nb
        for b in [b for cut in self.cuts for b in (cut.bi, cut.bj)] + [t[3] for cp in self.couplings
                                                                        for t in cp.terms]:
            while b >= 0 and not mark[b]:
                mark[b] = True
                b = self.parent[b]
        n = 0
        for j in range(self.nb):
            if mark[j]:
                slot[j], n = n, n + 1
        self.slot, self.nslot = slot, n

    # ------------------------------------------------------------ planar loops
    def _branches(self, bi: int, bj: int):
        """The loop's tree path: the common ancestor (-1: ground) and the bodies from it down to bi and to bj."""
        def up(b):
            out = []
            while b >= 0:
                out.append(b)
                b = self.parent[b]
            return out
        ui, uj = up(bi), up(bj)
        common = set(uj)
        top = next((b for b in ui if b in common), -1)
        down = lambda u: list(reversed(u[:u.index(top)] if top >= 0 else u))     # noqa: E731
        return top, down(ui), down(uj)

    def _planar(self, cut, bi, bj, K):
        """(normal axis index, K) when the loop through cut moves in one plane, else (None, K)."""
        joints = self.model.joints
        top, to_i, to_j = self._branches(bi, bj)
        start = next((b for b in to_i + to_j if JOINT_TYPES[joints[b].type].plane_motion == "normal"), None)
        if start is None:
            return None, K

        def carry(n, b, down):
            """The plane normal across tree joint b (user frames), or None if the joint leaves the plane."""
            jt = joints[b]
            v = (jt.parent_frame.rot.T if down else jt.child_frame.rot.T) @ n
            if not self._keeps_plane(jt, v):
                return None
            return (jt.child_frame.rot if down else jt.parent_frame.rot) @ v

        n = joints[start].parent_frame.rot @ joints[start].axis      # in start's parent's frame
        b = self.parent[start]
        while n is not None and b != top:                             # up to the common ancestor
            n, b = carry(n, b, False), self.parent[b]
        n_in = {top: n}                                               # body (-1 ground) -> normal in its frame
        for branch in (to_i, to_j):                                   # down both branches, every joint checked
            m = n
            for b in branch:
                m = None if m is None else carry(m, b, True)
                n_in[b] = m
        if any(v is None for v in n_in.values()):
            return None, K
        nloc = cut.parent_frame.rot.T @ n_in[bi]                    # normal in the cut's joint frame
        nloc = nloc / np.linalg.norm(nloc)
        # cut frame axes with n along one of them: the rows along n are then the identically satisfied ones (the
        # tree turns side j only about n, so side j's axis along n stays n; spherical rows use side i's axes only)
        if cut.axis is None:                                                     # spherical, fixed: e2 = n
            return 2, canonical_rotation("revolute", nloc, None)
        if not JOINT_TYPES[cut.type].needs_axis2 and abs(cut.axis @ nloc) < 1e-9:  # axis in the plane: e0 = n
            return 0, np.column_stack([nloc, np.cross(cut.axis, nloc), cut.axis])
        for k in range(3):
            if abs(abs(K[:, k] @ nloc) - 1) < 1e-9:
                return k, K
        return None, K

    @staticmethod
    def _keeps_plane(jt, v) -> bool:
        """Whether tree joint jt keeps the plane normal to v fixed.

        Does tree joint jt (motion in its joint frame) keep the plane normal to v (joint frame) fixed?
        (JointType.plane_motion: turning about v, sliding normal to v, or not moving.)"""
        v = _unit_or_none(v)
        if v is None:
            return False
        motion = JOINT_TYPES[jt.type].plane_motion
        if motion == "normal":
            return abs(abs(jt.axis @ v) - 1) < 1e-9
        if motion == "along":
            return abs(jt.axis @ v) < 1e-9
        return motion == "any"

    # ------------------------------------------------------------ parameters
    def params(self) -> np.ndarray:
        """The parameter vector: the tree's numbers, then the cut joints' frames and the couplings'."""
        p = super().params()
        frames = self.body_frames()
        for cut, c in zip(self.cuts, self.model.cuts):
            o = cut.index
            for side, (pl, b) in enumerate(((c.parent_frame, cut.bi), (c.child_frame, cut.bj))):
                R = pl.rot @ cut.K                         # cut frame axes in the user body frame
                if b >= 0:
                    gp, gr = frames[b][2]
                    x, R = gr.T @ (pl.pos - gp), gr.T @ R
                else:
                    x = pl.pos
                p[o + 12 * side:o + 12 * side + 3] = x
                p[o + 12 * side + 3:o + 12 * side + 12] = R.T.ravel()     # the axes one after the other
        coupling_params(p, self.couplings, self.model)
        return p

    def code_pattern(self) -> str:
        """The tree's pattern plus the rows of every cut (the planar reduction depends on the axes)."""
        return super().code_pattern() + ";" + ",".join(
            f"{c.type}:{c.normal}" for c in self.cuts) + coupling_pattern(self.couplings)

    def roadmap(self) -> List[str]:
        """The tree's roadmap with one row per cut joint."""
        rows = super().roadmap()
        for cut in self.cuts:
            bi = self.body_names[cut.bi] if cut.bi >= 0 else GROUND
            rows.append(f"  cut {cut.name[:16]:<16} {cut.type:<11} {bi[:16]:<16} -> {self.body_names[cut.bj][:16]:<16} "
                        f"rows {cut.rows[0].index}:{cut.rows[-1].index + 1}"
                        + (f" (planar loop, normal e{cut.normal})" if cut.normal is not None else ""))
        return rows + coupling_roadmap(self, self.couplings)

    def loop_vars(self) -> dict:
        """Template variables of the loop part (templates/recursive/loops.pyx.j2)."""
        rows = [r for c in self.cuts for r in c.rows]
        return dict(coupling_vars(self.couplings), ncut=len(self.cuts), nm=self.nm, nslot=self.nslot,
                    nm_cut=self.nm_cut, slot_c=c_array(self.slot), nv_of_c=c_array(JOINT_TYPES[t].nv for t in self.types),
                    # the cuts and their rows as data, so the kernel's size does not grow with the number of cuts
                    cut_bi_c=c_array(c.bi for c in self.cuts), cut_bj_c=c_array(c.bj for c in self.cuts),
                    cut_p_c=c_array(c.index for c in self.cuts),
                    cut_row0_c=c_array([c.row0 for c in self.cuts] + [self.nm_cut]),
                    row_a_c=c_array([r.a for r in rows] + [-1] * len(self.couplings)),
                    row_b_c=c_array([r.b if r.kind == "d1" else -1 for r in rows] + [-1] * len(self.couplings)))


def make_plan(model: Model) -> Plan:
    """The plan of a model: a LoopPlan when it has cut joints or couplings, else the tree's Plan."""
    return LoopPlan(model) if model.cuts or model.couplings else Plan(model)
