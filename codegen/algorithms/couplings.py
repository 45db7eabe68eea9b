"""Couplings as constraint rows: the plan part shared by the families that take them (recursive, grcr).

A coupling (codegen.model.couplings: MJCF joint and fixed-tendon equalities, URDF mimic joints, the model's
``couplings:`` section) is one joint-space row L1 = p(L2), L = sum coef q over its side's terms.  Its row and
Jacobian are the sympy kernel ``coupling_row`` (codegen.symbolic.loops); this module places the rows, their
parameters (c0 .. c4, then the terms' coefficients) and the template arrays (CPL_P, CPL_T0, TERM_*).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import List

import numpy as np

NP_COUPLING = 5      # per coupling in p: c0 .. c4, then one coefficient per term


@dataclass
class CouplingRow:
    """A coupling (codegen.model.couplings) as one joint-space row: L1 = p(L2), L = sum coef q."""

    name: str
    terms: List[tuple]   # (side 0 | 1, q index, v index, body index of the joint, coef)
    index: int = 0       # its row number (after the cuts' rows, if any)
    p: int = 0           # parameter offset: c0 .. c4, then the terms' coefficients


def coupling_rows(plan, model, row0: int) -> List[CouplingRow]:
    """One row per coupling of `model`, numbered from row0, their parameters appended to plan.np."""
    body = {j.name: k for k, j in enumerate(model.joints)}
    out = []
    for k, c in enumerate(model.couplings):
        terms = [(side, plan.iq[body[jn]] + d, plan.iv[body[jn]] + d, body[jn], coef)
                 for side, terms in enumerate(c.sides(model)) for jn, d, coef in terms]
        out.append(CouplingRow(c.name, terms, row0 + k, plan.np))
        plan.np += NP_COUPLING + len(terms)
    return out


def coupling_params(p: np.ndarray, rows: List[CouplingRow], model) -> None:
    """Write every coupling's numbers into the parameter vector p."""
    for cp, c in zip(rows, model.couplings):
        p[cp.p:cp.p + NP_COUPLING] = c.polycoef
        p[cp.p + NP_COUPLING:cp.p + NP_COUPLING + len(cp.terms)] = [t[4] for t in cp.terms]


def coupling_pattern(rows: List[CouplingRow]) -> str:
    """The compile-time part of the rows (which coordinates each term reads) for the plan's code_pattern."""
    return "".join(";" + ",".join(f"{t[0]}:{t[1]}:{t[2]}" for t in cp.terms) for cp in rows)


def coupling_roadmap(plan, rows: List[CouplingRow]) -> List[str]:
    """One roadmap row per coupling: its row number and terms."""
    return [f"  coupling {cp.name[:16]:<16} row {cp.index}: " + " ".join(
        f"{'L1' if t[0] == 0 else 'L2'}:{plan.joint_names[t[3]][:16]}[{t[2] - plan.iv[t[3]]}]" for t in cp.terms)
        for cp in rows]


def c_array(xs, pad="0") -> str:
    """A C initialiser list of at least one entry."""
    return ",".join(map(str, xs)) or pad


def coupling_vars(rows: List[CouplingRow]) -> dict:
    """Template variables: the couplings' parameter offsets and terms as C arrays (templates/shared/couplings.j2)."""
    terms = [t for cp in rows for t in cp.terms]
    t0 = [0]
    for cp in rows:
        t0.append(t0[-1] + len(cp.terms))
    return dict(ncpl=len(rows), nterm=max(1, len(terms)),      # NTERM sizes C arrays: at least one entry
                cpl_p_c=c_array(cp.p for cp in rows), cpl_t0_c=c_array(t0),
                term_side_c=c_array(t[0] for t in terms), term_q_c=c_array(t[1] for t in terms),
                term_v_c=c_array(t[2] for t in terms), term_b_c=c_array(t[3] for t in terms))
