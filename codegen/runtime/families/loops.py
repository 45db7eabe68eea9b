"""Trees closed by cut joints at run time (families recursive and dense with a `loops:` section).

The closure
check of the initial state, Baumgarte's stabilisation or the projection of a run, the loop outputs of a result (cut
joint wrenches, multipliers, constraint drift, the cut joints' own coordinates) and the message of a run that meets
dependent constraints.  The kernels are the recursive family's (templates/recursive/loops.pyx.j2)."""
from __future__ import annotations

import math

import numpy as np

from ...algorithms.codes import Fail
from ...model import JOINT_TYPES, ModelError, rot_to_quat
from .tree import TreeSystem

CLOSURE_TOL = 1e-6          # |Phi| [m or -] and |Phi'| [m/s or 1/s] accepted at the initial state


def row_cuts(plan):
    """Name of the cut joint (or coupling) of every constraint row."""
    return [c.name for c in plan.cuts for _ in c.rows] + [c.name for c in plan.couplings]


def row_fields(plan):
    """The model-file field of every constraint row: loops[CUT] or couplings[NAME]."""
    return [f"loops[{c.name}]" for c in plan.cuts for _ in c.rows] + [f"couplings[{c.name}]" for c in plan.couplings]


def per_cut_max(plan, v):
    """max |v| over each cut's rows, then each coupling's row: v (..., NM) -> (..., n_cuts + n_couplings)."""
    groups = [[r.index for r in c.rows] for c in plan.cuts] + [[c.index] for c in plan.couplings]
    return np.stack([np.max(np.abs(v[..., g]), axis=-1) for g in groups], axis=-1)


def _constraints(plan):
    return list(plan.cuts) + list(plan.couplings)


def check_closure(system, q, u, where: str = "initial state"):
    """Check that the state (q, u) closes every loop.

    Raise ModelError naming the cut joint whose constraints the state (q, u) violates by more than
    CLOSURE_TOL, at position or velocity level."""
    viol = system.kernel.loop_residual(q, u)
    fields = row_fields(system.plan)
    for level, what, unit in ((0, "does not close", "m or rad"), (1, "moves apart", "m/s or rad/s")):
        r = int(np.argmax(np.abs(viol[:, level])))
        if abs(viol[r, level]) > CLOSURE_TOL:
            worst = ", ".join(f"{c.name}: {v:.3g}" for c, v in zip(_constraints(system.plan),
                                                                    per_cut_max(system.plan, viol[:, level]))
                              if v > CLOSURE_TOL)
            if fields[r].startswith("couplings"):
                raise coupling_violated(system, fields[r], level, viol[r, level], where, f"per constraint: {worst}")
            raise ModelError(f"the cut joint {what} at the {where} by up to {abs(viol[r, level]):.3g} {unit} "
                             f"(tolerance {CLOSURE_TOL:g}; per cut: {worst}); "
                             + ("check its frames against the tree's q0" if level == 0 else
                                "the joints' u0 must satisfy the loop's velocity constraints"),
                             system.model.source, fields[r])


def coupling_violated(system, field, level, value, where, detail) -> ModelError:
    """The error of a start state that violates a coupling (level 0: position, 1: velocity)."""
    return ModelError(f"the coupling L1 = p(L2) is violated at the {where} by {value:.3g} "
                      + ("(L1 - p(L2)" if level == 0 else "(its rate L1' - p'(L2) L2'")
                      + f", tolerance {CLOSURE_TOL:g}; {detail}): "
                      + ("give the coupled joint a q0 that satisfies it" if level == 0 else
                         "the joints' u0 must satisfy its rate too"),
                      system.model.source, field)


def baumgarte_rate(run) -> float:
    """The run's Baumgarte rate alpha = beta [1/s]: given, or 0.1 / h (0 with projection)."""
    h = run.h if run.integrator not in ("dopri5", "rosenbrock") else min(run.dt, run.h_max or run.dt)
    b = (0.0 if run.projection else 0.1 / h) if run.baumgarte is None else float(run.baumgarte)
    if not (b >= 0 and math.isfinite(b)):
        raise ValueError(f"baumgarte must be a non-negative rate [1/s], got {run.baumgarte!r}")
    return b


def _angle(R, d):
    """The turn about the cut frame's axis e2."""
    return np.arctan2(R[:, 1, 0], R[:, 0, 0])


# loop-closing joint type -> (R, d) -> its coordinates (a list of nt-arrays, JointType.coordinates): R[t, a, b] =
# e_a . f_b (side j's axes in side i's frame), d side j's point in side i's frame
CUT_COORDINATES = {
    "revolute": lambda R, d: [_angle(R, d)],
    "prismatic": lambda R, d: [d[:, 2]],
    "cylindrical": lambda R, d: [_angle(R, d), d[:, 2]],
    "universal": lambda R, d: [_angle(R, d), np.arctan2(R[:, 2, 1], R[:, 2, 2])],
    "spherical": lambda R, d: list(np.array([rot_to_quat(r) for r in R]).T),
    "planar": lambda R, d: [d[:, 0], d[:, 1], _angle(R, d)],
    "fixed": lambda R, d: [],
}


def cut_coordinates(model, frames):
    """The cut joints' own coordinates (nt x k) and names.

    The cut joints' own coordinates (nt x k) and names from the cut frames (nt x n_cuts x 24: point and
    axes of side i, then of side j): the relative pose of side j's frame in side i's, read as the joint
    type's coordinates (revolute angle, prismatic displacement, ...; spherical: quaternion w, x, y, z)."""
    cols, names = [], []
    for c, cut in enumerate(model.cuts):
        pi, E = frames[:, c, 0:3], frames[:, c, 3:12].reshape(-1, 3, 3)       # rows: e0, e1, e2 (world)
        pj, F = frames[:, c, 12:15], frames[:, c, 15:24].reshape(-1, 3, 3)
        R = np.einsum("tak,tbk->tab", E, F)                 # R[a, b] = e_a . f_b: side j axes in side i frame
        d = np.einsum("tak,tk->ta", E, pj - pi)
        cols += CUT_COORDINATES[cut.type](R, d)
        names += [f"{cut.name}.{n}" for n in JOINT_TYPES[cut.type].coordinates]
    return (np.column_stack(cols) if cols else np.zeros((frames.shape[0], 0))), names


def loop_outputs(system, X, ts) -> dict:
    """Result extras of a closed-loop model (see System.simulate)."""
    lam, wrench, viol, frames = system.kernel.loop_history(X, ts)
    cuts = [c.name for c in system.plan.cuts]
    ncut_rows = system.plan.nm_cut
    per_cut = np.stack([per_cut_max(system.plan, viol[..., 0]), per_cut_max(system.plan, viol[..., 1])], axis=-1)
    K = np.array([c.K for c in system.plan.cuts]).reshape(-1, 3, 3)   # cut frame axes in the user's joint frame
    wrench = np.concatenate([np.einsum("cab,tcb->tca", K, wrench[..., :3]),
                             np.einsum("cab,tcb->tca", K, wrench[..., 3:])], axis=2)
    cq, cq_names = cut_coordinates(system.model, frames)
    out = {"cut_joint_wrench": wrench, "cut_joint_names": np.array(cuts), "multipliers": lam,
           "constraint_violation": per_cut, "cut_q": cq, "cut_q_names": np.array(cq_names)}
    if system.plan.couplings:           # their multipliers: the force on L1 (lambda), rows after the cuts'
        out.update(coupling_names=np.array([c.name for c in system.plan.couplings]),
                   coupling_force=lam[:, ncut_rows:])
    return out


def dependent_rows_detail(system, fail):
    """A failed run's Failure (Fail.DEPENDENT_ROWS) with the message naming the cut joints."""
    names = row_cuts(system.plan)
    r = fail.index
    cut = row_fields(system.plan)[r] if 0 <= r < len(names) else None
    cuts = ", ".join(c.name for c in _constraints(system.plan))
    return fail.explained((
        f"the loop-closure constraints became dependent (cut joints and couplings {cuts}; first dependent row: "
        f"{cut}): a redundant cut joint or coupling, or a singular configuration"))


class LoopSystem(TreeSystem):
    """A tree closed by cut joints (constraint rows solved with the tree's dynamics; see System.simulate)."""

    kind = "loops"
    loops = True

    def _setup(self):
        super()._setup()
        check_closure(self, *self.model.initial_state())

    def _no_derivatives(self):
        return (f"not available for closed loops (cut joints and couplings "
                f"{', '.join(c.name for c in _constraints(self.plan))}): the "
                f"constrained accelerations' partials are not derived")

    def _start_run(self, x, run):
        if run.q0 is not None or run.u0 is not None:
            check_closure(self, x[:self.nq], x[self.nq:self.nq + self.nv], "given start state")
        self.kernel.alpha = self.kernel.beta = baumgarte_rate(run)
        self.kernel.project_on, self.kernel.project_tol = int(bool(run.projection)), 1e-12

    def _finish_run(self, meta, run, stats, fail):
        meta["baumgarte"], meta["projection"] = self.kernel.alpha, bool(run.projection)
        return dependent_rows_detail(self, fail) if fail and fail.code == Fail.DEPENDENT_ROWS else fail

    def _loop_outputs(self, res, X, ts):
        res.extra.update(loop_outputs(self, X, ts))
        violation_meta(res)


def violation_meta(res):
    """meta["constraint_violation_max"] from the result's constraint_violation (nt x loops x 2)."""
    cv = res.extra["constraint_violation"]
    res.meta["constraint_violation_max"] = {"position": float(cv[..., 0].max()), "velocity": float(cv[..., 1].max())}
