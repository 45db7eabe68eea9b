"""Closed loops by generalized recursive coordinate reduction (family ``grcr``) at run time: the state with the
cut coordinates, the rank of every loop, the dependent coordinates (``auto`` or a list, refused when
structurally singular), the partition switches of a run and the loop outputs of a result.

The kernels are templates/grcr/grcr.pyx.j2; the plan (phantom bodies, chains) codegen.algorithms.grcr.plan.
"""
from __future__ import annotations

import logging

import numpy as np

from ..model import ModelError

log = logging.getLogger("codegen.grcr")

CLOSURE_TOL = 1e-6        # closing twist and relative velocity accepted at the initial state (as the cut-joint check)
SWITCH_TOL = 1e-2         # a run re-selects a loop's dependents when min s^T R s / s^T s falls below this
SELECT_TOL = 1e-1         # ... taking, from the tip inward, the joints whose ratio is at least this
SINGULAR_TOL = 1e-10      # a requested partition with a smaller ratio at every sampled configuration is refused
SAMPLES = 12              # configurations on the constraint manifold for the structural check


def chain_coords(system):
    """Per chain entry (CHAIN order): (loop index, joint name, state coordinate index)."""
    plan, out = system.plan, []
    for L, ch in enumerate(plan.chains):
        for b in ch:
            out.append((L, plan.joint_names[b], plan.iq[b]))
    return out


def _ranks(system, q):
    """m_i of every loop: the rank of its whole chain's columns (shared joints included); refused when its own
    joints (the chain the kernel eliminates from) cannot take them all."""
    cols = system.kernel.chain_columns(q)
    entry = {b: c for c, b in enumerate(b for ch in system.plan.chains for b in ch)}
    ranks, o = [], 0

    def rank(G):
        sv = np.linalg.svd(G, compute_uv=False)
        return int(np.sum(sv > 1e-9 * max(sv[0], 1.0)))
    for L, ch in enumerate(system.plan.chains):
        own = cols[o:o + len(ch)].T
        full = np.column_stack([own] + [cols[entry[b]] for b in system.plan.prefixes[L]])
        ranks.append(rank(full))
        if rank(own) < ranks[-1]:
            raise ModelError(f"loop {system.plan.loop_names[L]} has {ranks[-1]} independent constraints but its own "
                             f"joints ({', '.join(system.plan.joint_names[b] for b in ch)}) span only {rank(own)}: "
                             f"the joints it shares with another loop would have to be dependent; choose the spanning "
                             f"tree so that each loop owns enough joints, or use --algorithm recursive",
                             system.model.source, f"loops[{system.plan.loop_names[L]}]")
        o += len(ch)
    return ranks


def _close(system, x, where):
    """Project x (state) onto the loops with the current partition and check what was left."""
    system.kernel.project_state(x)
    err = system.kernel.closure_errors(x[:system.nq], x[system.nq:])
    for L, (pos, vel) in enumerate(err):
        for v, what in ((pos, "does not close"), (vel, "moves apart")):
            if v > CLOSURE_TOL:
                raise ModelError(f"loop {system.plan.loop_names[L]} {what} at the {where} by {v:.3g} (tolerance "
                                 f"{CLOSURE_TOL:g}) even with its cut coordinate(s) solved for; check the cut "
                                 f"joint's frames against the tree's q0 and u0", system.model.source,
                                 f"loops[{system.plan.loop_names[L]}]")
    return x


def initial_state(system):
    """The state model's initial state with every cut coordinate (and speed) solved for from the tree's."""
    qs, us = system.plan.state_model.initial_state()
    x = np.concatenate([qs, us])
    k = system.kernel
    keep = k.dependents()
    mask = np.zeros_like(keep)
    o = 0
    for ch in system.plan.chains:                 # the phantom's joint alone: least squares (exact when closed)
        o += len(ch)
        mask[o - 1] = 1
    k.set_dependents(mask)
    try:
        return _close(system, x, "initial state")
    finally:
        k.set_dependents(keep)


def _mask_of(system, dependents):
    """Dependents as a chain mask: names of loop joints or of their coordinates (q5 or q5.disp)."""
    entries = chain_coords(system)
    by_name = {}
    for c, (L, name, iq) in enumerate(entries):
        by_name[name] = c
        by_name[system.coord_names[iq]] = c
    if isinstance(dependents, str):
        dependents = [s.strip() for s in dependents.split(",") if s.strip()]
    mask = np.zeros(len(entries), dtype=np.int64)
    for d in dependents:
        if d not in by_name:
            known = ", ".join(n for _, n, _ in entries)
            raise ModelError(f"dependent coordinate '{d}' is not a coordinate of a loop (loop joints: {known})",
                             system.model.source, "dependents")
        mask[by_name[d]] = 1
    o = 0
    for L, ch in enumerate(system.plan.chains):
        n = len(ch)
        names = [entries[o + k][1] for k in range(n)]
        got = int(mask[o:o + n].sum())
        if got != system.ranks[L]:
            raise ModelError(f"loop {system.plan.loop_names[L]} has {system.ranks[L]} independent constraints: give "
                             f"{system.ranks[L]} dependent coordinates among {', '.join(names)} (got {got})",
                             system.model.source, "dependents")
        if not mask[o + n - 1]:
            raise ModelError(f"the cut joint's coordinate {names[-1]} is always dependent (GRCR Sect. 4: the "
                             f"phantom body is massless); include it", system.model.source, "dependents")
        o += n
    return mask


def _manifold_samples(system, x0, rng):
    """Configurations on the constraint manifold near and away from x0: random independents, projected."""
    k = system.kernel
    keep = k.dependents()
    out = [x0[:system.nq].copy()]
    try:
        k.select_dependents(x0[:system.nq])
        free = [iq for c, (_, _, iq) in enumerate(chain_coords(system)) if not k.dependents()[c]]
        for s in range(SAMPLES):
            x = x0.copy()
            x[free] += rng.uniform(-1.0, 1.0, len(free)) * (0.05 if s < SAMPLES // 2 else 0.5)
            try:
                x = k.project_state(x)
            except Exception:
                continue
            e = k.closure_errors(x[:system.nq], x[system.nq:])
            if np.all(np.isfinite(e)) and e[:, 0].max() < 1e-9:
                out.append(x[:system.nq].copy())
    finally:
        k.set_dependents(keep)
    return out


def _why_singular(system, L, mask, q):
    """Which chosen columns are dependent: a parallel pair if there is one, else the null combination."""
    cols = system.kernel.chain_columns(q)
    o = sum(len(ch) for ch in system.plan.chains[:L])
    n = len(system.plan.chains[L])
    idx = [o + k for k in range(n) if mask[o + k]]
    names = [chain_coords(system)[c][1] for c in idx]
    unit = [cols[c] / np.linalg.norm(cols[c]) for c in idx]
    for a in range(len(idx)):
        for b in range(a + 1, len(idx)):
            if abs(abs(unit[a] @ unit[b]) - 1) < 1e-9:
                return f"the columns of {names[a]} and {names[b]} are parallel"
    _, _, vt = np.linalg.svd(np.column_stack([cols[c] for c in idx]))
    v = vt[-1]
    return "the columns of " + ", ".join(nm for nm, x in zip(names, v) if abs(x) > 1e-6) + " are linearly dependent"


def set_dependents(system, dependents="auto", x0=None):
    """Choose the dependent coordinates: 'auto' (from each loop's tip inward, the best conditioned) or a list of
    loop coordinates (the cut's always among them).  A list that is singular at every sampled configuration of
    the constraint manifold is refused (ModelError naming the coordinates and why); one that is singular only
    at the start is kept and switched away from at t = 0 by the run (ACS)."""
    k = system.kernel
    x0 = np.concatenate(system.initial_state()) if x0 is None else x0
    q0 = x0[:system.nq]
    if dependents is None or (isinstance(dependents, str) and dependents.strip() == "auto"):
        k.select_dependents(q0)
        system.dependents_spec = "auto"
        return
    mask = _mask_of(system, dependents)
    k.set_dependents(mask)
    h0 = k.health(q0)
    if np.any(h0 < SINGULAR_TOL):
        samples = _manifold_samples(system, x0, np.random.default_rng(0))
        k.set_dependents(mask)
        H = np.array([k.health(q) for q in samples])
        for L in range(len(system.plan.chains)):
            if np.all(H[:, L] < SINGULAR_TOL):
                chosen = [n for c, (LL, n, _) in enumerate(chain_coords(system)) if LL == L and mask[c]]
                raise ModelError(f"dependent coordinates {', '.join(chosen)} of loop {system.plan.loop_names[L]} are "
                                 f"structurally singular: {_why_singular(system, L, mask, q0)} at every one of "
                                 f"{len(samples)} sampled configurations of the loop, so they cannot be solved for; "
                                 f"choose others or 'auto'", system.model.source, "dependents")
    system.dependents_spec = ",".join(dependents) if not isinstance(dependents, str) else dependents


def setup(system, dependents):
    """After the kernel is loaded: sizes and names of the state, the loops' ranks, the dependents."""
    plan, k = system.plan, system.kernel
    sm = plan.state_model
    system.nq, system.nv = sm.nq, sm.nv
    system.coord_names, system.velocity_names = sm.coord_names, sm.velocity_names
    system.body_names = plan.body_names[:plan.nb_real]
    k.switching, k.switch_tol, k.select_tol = 1, SWITCH_TOL, SELECT_TOL
    k.project_on, k.project_tol = 1, 1e-12
    k.set_rank([6] * len(plan.chains))
    x0 = initial_state(system)
    system.ranks = _ranks(system, x0[:system.nq])
    k.set_rank(system.ranks)
    system._x0 = x0
    set_dependents(system, dependents, x0)


def dependent_names(system, mask=None):
    mask = system.kernel.dependents() if mask is None else mask
    entries = chain_coords(system)
    return [entries[c][1] for c in range(len(entries)) if mask[c]]


def switches(system):
    """The run's partition switches: [(t, loop name, old dependents, new dependents)] (names of coordinates)."""
    log_, total = system.kernel.switch_log()
    entries = chain_coords(system)
    offs = np.cumsum([0] + [len(ch) for ch in system.plan.chains])
    out = []
    for t, L, old, new in log_:
        out.append((t, system.plan.loop_names[L], [entries[offs[L] + k][1] for k in old],
                    [entries[offs[L] + k][1] for k in new]))
    return out, total


def start(system, x, t0=0.0):
    """Before a run: the partition watched at the start state (a switch at t0 if it is singular there)."""
    system.kernel.clear_switch_log()
    system.kernel.project_state(x, t0)
    return x


def outputs(system, X, ts) -> dict:
    """Result extras of a grcr run: the partition switches, each loop's closure (position, velocity) and the
    cut coordinates (as the cut-joint method reports them)."""
    sw, total = switches(system)
    for t, loop, old, new in sw:
        log.info("t = %.6g s: loop %s dependents %s -> %s", t, loop, ",".join(old), ",".join(new))
    plan = system.plan
    cut_cols = [plan.iq[ch[-1]] for ch in plan.chains]
    return {"partition_switch_t": np.array([s[0] for s in sw], float),
            "partition_switch_loop": np.array([s[1] for s in sw], dtype=str),
            "partition_switch_old": np.array([",".join(s[2]) for s in sw], dtype=str),
            "partition_switch_new": np.array([",".join(s[3]) for s in sw], dtype=str),
            "dependents_final": np.array(dependent_names(system)),
            "constraint_violation": system.kernel.closure_history(X),
            "cut_q": X[:, cut_cols].copy(), "cut_q_names": np.array([system.coord_names[i] for i in cut_cols])}, total
