"""Closed loops by generalized recursive coordinate reduction (family ``grcr``) at run time.

Closed loops by generalized recursive coordinate reduction (family ``grcr``) at run time (GrcrSystem): the
state with the cut coordinates, the rank of every loop, the dependent coordinates (``auto`` or a list, refused when
structurally singular), the partition switches of a run and the loop outputs of a result.

The kernels are templates/grcr/grcr.pyx.j2; the plan (phantom bodies, chains) codegen.algorithms.grcr.plan.
"""
from __future__ import annotations

import logging
import time
from typing import NamedTuple

import numpy as np

from ...algorithms.codes import Fail, Switching
from ...model import ModelError
from ..system import refused
from .loops import CLOSURE_TOL as COUPLING_TOL, baumgarte_rate, coupling_violated, violation_meta
from .tree import TreeSystem

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
    """The rank m_i of every loop.

    m_i of every loop: the rank of its whole chain's columns (shared joints included); refused when its own
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


def check_couplings(system, x, where):
    """Raise ModelError naming the first coupling that the state x violates by more than the tolerance."""
    if not system.plan.couplings:
        return
    viol = system.kernel.coupling_residual(x[:system.nq], x[system.nq:system.nq + system.nv])
    for level in (0, 1):
        c = int(np.argmax(np.abs(viol[:, level])))
        if abs(viol[c, level]) > COUPLING_TOL:
            raise coupling_violated(system, f"couplings[{system.plan.couplings[c].name}]", level, viol[c, level],
                                    where, "solved with grcr's loops")


def coupling_outputs(system, X, ts) -> dict:
    """The couplings' forces (the multiplier: the force on L1) and drift (|Phi|, |Phi'|) at the samples."""
    lam, viol = system.kernel.coupling_history(X, ts)
    return {"coupling_names": np.array([c.name for c in system.plan.couplings]), "coupling_force": lam,
            "coupling_violation": np.abs(viol)}


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
        if mask[by_name[d]]:
            raise ModelError(f"dependent coordinate '{d}' is given twice ({entries[by_name[d]][1]})",
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
    """Choose the dependent coordinates.

    'auto' (from each loop's tip inward, the best conditioned) or a list of
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
    k.switching, k.switch_tol, k.select_tol = Switching.ACS, SWITCH_TOL, SELECT_TOL
    k.project_on, k.project_tol = 1, 1e-12
    k.set_rank([6] * len(plan.chains))
    x0 = initial_state(system)
    system.ranks = _ranks(system, x0[:system.nq])
    k.set_rank(system.ranks)
    system._x0 = x0
    check_couplings(system, x0, "initial state")
    set_dependents(system, dependents, x0)


def dependent_names(system, mask=None):
    """The names of the dependent coordinates (the kernel's current ones, or those of `mask`)."""
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
    """Result extras of a grcr run.

    The partition switches (ACS) or restructurings (GCL), each loop's closure
    (position, velocity) and the cut coordinates (as the cut-joint method reports them)."""
    run = getattr(system, "gcl_run", None)
    sw, total = (run.switches, len(run.switches)) if run is not None else switches(system)
    for t, loop, old, new in sw:
        log.info("t = %.6g s: loop %s dependents %s -> %s", t, loop, ",".join(old), ",".join(new))
    plan = system.plan
    cut_cols = [plan.iq[ch[-1]] for ch in plan.chains]
    return {"partition_switch_t": np.array([s[0] for s in sw], float),
            "partition_switch_loop": np.array([s[1] for s in sw], dtype=str),
            "partition_switch_old": np.array([",".join(s[2]) for s in sw], dtype=str),
            "partition_switch_new": np.array([",".join(s[3]) for s in sw], dtype=str),
            "dependents_final": np.array(dependent_names(system) if run is None else
                                         [n for c, a in zip(run.names, run.final) for n in run.window_names(c, a)]),
            "constraint_violation": system.kernel.closure_history(X),   # per loop, then per coupling (below)
            "cut_q": X[:, cut_cols].copy(), "cut_q_names": np.array([system.coord_names[i] for i in cut_cols])}, total


# ---------------------------------------------------------------------------------------- GCL (Sect. 5)
class Structure(NamedTuple):
    """One restructured model of a GCL run.

    Its System (dependents: the last m_i of every open loop), the
    fictitious joints' geometry per restructured loop, its coordinates' and speeds' indices in the source state
    (-1: fictitious) and, per structure loop, the source loop it solves."""

    system: object
    geo: dict
    iq: list
    iv: list
    owner: list


class CoupledLoopRun:
    """A run that restructures (GCL) instead of re-selecting (ACS).

    Every loop of the model is solved with a
    window of three adjacent dependents at the end of an open loop (codegen.algorithms.grcr.gcl), the window with
    the best conditioned columns at the start; when the kernel reports the partition degraded (Fail.DEGRADED)
    the run goes back to the last sample, restructures the degraded loops around their best window there and
    carries on.  Each structure is its own kernel (built once, cached); states map by joint name."""

    def __init__(self, system):
        from ...algorithms.grcr import gcl
        self.gcl, self.sys = gcl, system
        self.model = system.model
        self.loops = gcl.loop_joints(self.model)
        self.names = [system.plan.loop_names[L] for L in range(len(system.plan.chains))]
        fr = self.frames(np.concatenate(system.initial_state()))
        for L, cut in enumerate(self.names):
            lp = self.loops[cut]
            if lp["coupled"] or system.ranks[L] != gcl.M:
                raise ModelError(f"general coupled loops (--switching gcl) restructure planar loops that share no "
                                 f"joints with another; loop {cut} " + ("shares joints" if lp["coupled"] else
                                 f"has rank {system.ranks[L]}") + ": use --switching acs", self.model.source,
                                 f"loops[{cut}]")
            gcl.plane_normal(self.model, lp["joints"], fr)
        self.structs = {}

    def frames(self, x):
        """The bodies' frames at state x."""
        k = self.sys.kernel
        com, quat, _ = k.outputs_at(np.asarray(x, float)[None])
        return self.gcl.Frames(self.sys.plan.state_model, self.sys.plan.body_names, com[0], quat[0])

    def window_names(self, cut, a):
        """The joint names of the window of loop `cut` that starts at `a`."""
        return [j.name for j in self.loops[cut]["joints"][a:a + self.gcl.M]]

    def health(self, x, starts, t=0.0, own=None):
        """Per source loop the conditioning of the windows `starts` at the source state x.

        Per source loop: the conditioning (min s^T R s / s^T s) of the windows `starts` at the source state x,
        measured in the source model (columns about its loops' first joints, one scale for every structure); 0
        where the structure cannot be used at x (its open loops cannot take their constraints, or its
        projection is not finite)."""
        k = self.sys.kernel
        keep = k.dependents()
        mask = np.zeros_like(keep)
        o = 0
        for L, ch in enumerate(self.sys.plan.chains):
            mask[o + starts[L]:o + starts[L] + self.gcl.M] = 1
            o += len(ch)
        k.set_dependents(mask)
        try:
            h = np.nan_to_num(k.health(np.asarray(x[:self.sys.nq], float)), nan=0.0)
        finally:
            k.set_dependents(keep)
        own = self.own_health(x, starts, t) if own is None else own
        return np.where(own > 0, h, 0.0)

    def own_health(self, x, starts, t=0.0):
        """Per source loop the conditioning by the structure's own kernel.

        The same by the structure's own kernel (its loops mapped back to the source loops they solve): the
        measure its run watches."""
        try:
            st = self.struct(starts, x)
        except ModelError:
            return np.zeros(len(self.names))
        s, xs = st.system, self.to_struct(st, x, t)
        h = np.nan_to_num(s.kernel.health(xs[:s.nq]), nan=0.0) if np.all(np.isfinite(xs)) else np.zeros(len(st.owner))
        out = np.ones(len(self.names))
        for L, v in enumerate(h):
            out[st.owner[L]] = min(out[st.owner[L]], v)
        return out

    def best(self, x, cur=None, avoid=(), t=0.0):
        """Per loop the window start with the best conditioning at x.

        Per loop the window start with the best conditioning at x (trying each start with the others kept);
        with cur, only the loops in `avoid` change, to another window than their current one."""
        out = list(cur) if cur is not None else [len(self.loops[c]["joints"]) - self.gcl.M for c in self.names]
        for L, cut in enumerate(self.names):
            if cur is not None and L not in avoid:
                continue
            scores = []
            for a in range(len(self.loops[cut]["joints"]) - self.gcl.M + 1):
                if cur is not None and a == cur[L]:
                    continue
                trial = list(out)
                trial[L] = a
                scores.append((self.health(x, tuple(trial), t)[L], -a, a))
            out[L] = max(scores)[2]
        return tuple(out)

    def tolerance(self, starts, x, t):
        """The structure's watch tolerance in its own measure.

        The structure's watch in its own measure: SWITCH_TOL of the source measure, converted at x (the two
        differ by the structure's reference point and lever arms; recalibrated after every chunk of samples),
        and at most half its own conditioning at x (a structure taken near another's singularity runs until it
        degrades itself)."""
        own = self.own_health(x, starts, t)
        src = self.health(x, starts, t, own).min()
        self.struct(starts, x).system.kernel.switch_tol = min(SWITCH_TOL * own.min() / max(src, 1e-300),
                                                              0.5 * own.min())

    def struct(self, starts, x):
        """The Structure of window starts `starts` (one per source loop), built at the source state x on first use."""
        if starts not in self.structs:
            fr = self.frames(x)
            q_of = self.coordinates(x)
            m = self.gcl.restructure(self.model, dict(zip(self.names, starts)), fr, q_of)
            s = type(self.sys)(m, "grcr", cache_dir=self.sys.build_info["cache_dir"], dependents="auto")
            geo = {cut: self.gcl.geometry(self.model, self.loops[cut]["joints"], self.loops[cut]["base"], a, fr)
                   for cut, a in zip(self.names, starts) if 0 < a < len(self.loops[cut]["joints"]) - self.gcl.M}
            mask = np.zeros_like(s.kernel.dependents())
            o = 0
            for ch, rank in zip(s.plan.chains, s.ranks):   # plain RCR: the last m_i of every open loop
                o += len(ch)
                mask[o - rank:o] = 1
            s.kernel.set_dependents(mask)
            s.kernel.switching = Switching.GCL
            owner = []                                   # structure loop -> the source loop it solves
            for name in s.plan.loop_names:
                src = name.split(self.gcl.TAG)[0]
                owner.append(self.names.index(src) if src in self.names else
                             next(L for L, (c, a) in enumerate(zip(self.names, starts))
                                  if self.loops[c]["joints"][a].name == name))
            index = lambda names, own: [names.index(c) if c in names else -1 for c in own]      # noqa: E731
            self.structs[starts] = Structure(s, geo, index(self.sys.coord_names, s.coord_names),
                                             index(self.sys.velocity_names, s.velocity_names), owner)
        return self.structs[starts]

    def coordinates(self, x):
        """joint name -> its coordinates in the source state x."""
        out = {}
        for i, c in enumerate(self.sys.coord_names):
            out.setdefault(c.rsplit(".", 1)[0], []).append(x[i])
        return {k: np.array(v) for k, v in out.items()}

    def to_struct(self, st, x, t):
        """The structure's state at the source state x.

        Real coordinates by name, the fictitious ones from the
        poses, then projected (the fictitious speeds; round-off of the closure)."""
        s = st.system
        xs = np.zeros(s.nq + s.nv)
        for i, k in enumerate(st.iq):
            if k >= 0:
                xs[i] = x[k]
        for i, k in enumerate(st.iv):
            if k >= 0:
                xs[s.nq + i] = x[self.sys.nq + k]
        if st.geo:
            fr = self.frames(x)
            for cut, g in st.geo.items():
                f = self.gcl.fictitious_values(fr, self.loops[cut]["base"], g)
                for (name, dof), v in zip(self.gcl.FICTITIOUS, f):
                    xs[s.coord_names.index(f"{cut}{self.gcl.TAG}.{name}.{dof}")] = v
        sw, s.kernel.switching = s.kernel.switching, Switching.OFF
        s.kernel.project_state(xs, t)
        s.kernel.switching = sw
        return xs

    def from_struct(self, st, XS):
        """Rows of structure states back to source states (every real coordinate is in every structure)."""
        X = np.empty((len(XS), self.sys.nq + self.sys.nv))
        for i, k in enumerate(st.iq):
            if k >= 0:
                X[:, k] = XS[:, i]
        for i, k in enumerate(st.iv):
            if k >= 0:
                X[:, self.sys.nq + k] = XS[:, st.system.nq + i]
        return X

    def run(self, x, ts, substeps, label, progress):
        """Integrate with rk4 over the sample times ts, restructuring as needed.

        rk4 over the sample times ts from x (source state); returns (X, stats, wall, fail) as
        integrate_chunks does, and records the restructurings in self.switches."""
        from ..integrate import Failure, _progress_bar
        ns, dt = len(ts) - 1, ts[1] - ts[0]
        X = np.full((ns + 1, len(x)), np.nan)
        X[0] = x
        stats = np.zeros(4, dtype=np.int64)
        cur = self.best(x)
        self.initial, self.switches = cur, []
        self.tolerance(cur, x, ts[0])
        fail, k, chunk, stalled = None, 0, max(1, ns // 100), False
        wall = time.perf_counter()
        with _progress_bar(ns, label, progress) as bar:
            while k < ns:
                st = self.struct(cur, X[k])
                xs = self.to_struct(st, X[k], ts[k])
                kern = st.system.kernel
                m = min(chunk, ns - k)
                out, nok = kern.run_rk4(ts[k], xs, dt / substeps, m, substeps)
                X[k + 1:k + 1 + nok] = self.from_struct(st, out[:nok])
                stats[0] += 4 * (nok + (kern.fail_code != 0)) * substeps
                stats[1] += (nok + (kern.fail_code != 0)) * substeps
                k += nok
                bar.update(nok)
                if not kern.fail_code and k < ns:
                    self.tolerance(cur, X[k], ts[k])
                if kern.fail_code == Fail.DEGRADED:      # restructure from the last sample
                    if nok == 0 and stalled:
                        fail = Failure.of_kernel(kern, k + 1, self.from_struct(st, xs[None])[0], index=-1)
                        break
                    stalled = nok == 0
                    h = self.own_health(self.from_struct(st, xs[None])[0], cur, float(kern.fail_t))
                    avoid = [L for L in range(len(cur)) if h[L] < kern.switch_tol] or list(range(len(cur)))
                    new = self.best(X[k], cur, avoid, float(ts[k]))
                    self.tolerance(new, X[k], ts[k])
                    for L in avoid:
                        self.switches.append((float(kern.fail_t), self.names[L], self.window_names(self.names[L], cur[L]),
                                              self.window_names(self.names[L], new[L])))
                    cur = new
                elif kern.fail_code:
                    fail = Failure.of_kernel(kern, k + 1, self.from_struct(st, xs[None])[0], index=-1)
                    break
        self.final = cur
        return X, stats, time.perf_counter() - wall, fail


def _not_grcr(name):
    return refused(name, f"{name} is not available for algorithm 'grcr' (its constraint forces and batched "
                         f"partitions are not implemented); use algorithm 'recursive' for this model")


class GrcrSystem(TreeSystem):
    """Closed loops solved by coordinate partitioning (GRCR).

    The state holds the cut coordinates, the dependents
    are solved after every step; partition switches (ACS) or restructured loops (GCL) when one degrades.

    Parameters
    ----------
    model : Model
        A model with a ``loops:`` section.
    algorithm : str
        ``grcr``.
    **options
        As for System; ``dependents`` ('auto' or a list of loop coordinates).

    Raises
    ------
    ModelError
        The loops cannot be solved with the chosen dependents.
    """

    kind = "grcr"
    grcr = loops = True
    lean = ("forward_dynamics",)
    inverse_dynamics = _not_grcr("inverse_dynamics")
    forward_dynamics_batch = _not_grcr("forward_dynamics_batch")
    rollout = _not_grcr("rollout")
    joint_wrenches = _not_grcr("joint_wrenches")
    set_feedback = refused("set_feedback", "set_feedback: rigid-body trees of the recursive, dense, mstmm and cfa "
                                           "algorithms only")
    gcl_run = None

    def _setup(self, dependents=None):
        super()._setup()
        setup(self, dependents)

    def _numbers_changed(self):
        super()._numbers_changed()
        setup(self, getattr(self, "dependents_spec", "auto"))      # the new numbers' initial state, ranks, dependents

    def _no_derivatives(self):
        return ("not available for algorithm 'grcr'; build the tree with algorithm 'recursive' or 'dense' (closed "
                "loops have no derivatives yet)")

    def set_dependents(self, dependents="auto"):
        """The dependent coordinates, 'auto' or a list of loop coordinates (see set_dependents of this module).

        Parameters
        ----------
        dependents : str or list of str, optional
            ``auto`` or loop coordinate names.

        Raises
        ------
        ModelError
            The list is singular at every sampled configuration of the constraint manifold.
        """
        set_dependents(self, dependents)

    @property
    def dependents(self):
        """The current dependent coordinates (joint names).

        Returns
        -------
        list of str
            The dependent coordinates' names.
        """
        return dependent_names(self)

    def initial_state(self):
        """The model's initial state with the cut coordinates solved for.

        Returns
        -------
        q0 : numpy.ndarray, shape (nq,)
            Initial coordinates [rad, m], the cut coordinates included.
        u0 : numpy.ndarray, shape (nv,)
            Initial velocities [rad/s, m/s].
        """
        return self._x0[:self.nq].copy(), self._x0[self.nq:].copy()

    def _start_run(self, x, run):
        if run.switching not in (None, "acs", "gcl"):
            raise ValueError(f"switching: 'acs' or 'gcl' (got {run.switching!r})")
        if run.switching == "gcl" and self.plan.couplings:
            raise ValueError(f"switching 'gcl' restructures the loops of models without couplings; this one has "
                             f"{', '.join(c.name for c in self.plan.couplings)}: use switching 'acs' (the default)")
        if run.switching == "gcl" and (run.integrator != "rk4" or getattr(self, "dependents_spec", "auto") != "auto"):
            raise ValueError("switching 'gcl' runs rk4 with dependents 'auto' (it chooses windows of adjacent "
                             "dependents itself)")
        if run.baumgarte is not None and not self.plan.couplings:
            raise ValueError("baumgarte: grcr solves the dependent coordinates from the loop constraints after every "
                             "step (coordinate partitioning); Baumgarte's rate belongs to algorithm recursive, or to "
                             "the couplings of a model that has them")
        if self.plan.couplings:                         # the couplings' drift: Baumgarte, as algorithm recursive's
            if run.q0 is not None or run.u0 is not None:
                check_couplings(self, x, "given start state")
            self.kernel.alpha = self.kernel.beta = baumgarte_rate(run)
        self.gcl_run = CoupledLoopRun(self) if run.switching == "gcl" else None
        start(self, x)

    def _finish_run(self, meta, run, stats, fail):
        fail = super()._finish_run(meta, run, stats, fail)
        if fail and fail.code == Fail.DEPENDENT_ROWS:
            names = [c.name for c in self.plan.couplings]
            r = fail.index
            fail = fail.explained((
                f"the couplings became dependent on the loops' manifold (couplings {', '.join(names)}; first "
                f"dependent row: couplings[{names[r] if 0 <= r < len(names) else '?'}]): a redundant coupling, or "
                f"one that the loops already fix"))
        return fail

    def _integrate(self, x, ts, run, other=None):
        if self.gcl_run is None:
            return super()._integrate(x, ts, run)
        return self.gcl_run.run(x, ts, run.substeps, f"simulate {self.model.name}", run.progress)

    def _loop_outputs(self, res, X, ts):
        extra, total = outputs(self, X, ts)
        if self.plan.couplings:
            extra.update(coupling_outputs(self, X, ts))
            extra["constraint_violation"] = np.concatenate([extra["constraint_violation"],
                                                            extra.pop("coupling_violation")], axis=1)
            res.meta["baumgarte"] = self.kernel.alpha
        res.extra.update(extra)
        res.meta.update(partition_switches=int(total), dependents=getattr(self, "dependents_spec", "auto"),
                        switching="gcl" if self.gcl_run is not None else "acs")
        violation_meta(res)
