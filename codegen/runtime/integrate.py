"""Integration driver: every step runs inside the compiled kernel.

Python only hands out chunks so that a
progress bar can move.  Also the honesty checks around a run: divergence (SimulationDiverged) and the energy
balance (the stiffness estimate of beam models: codegen.runtime.families.beams)."""
from __future__ import annotations

import dataclasses
import math
import time
from typing import Optional

import numpy as np

from .._version import __version__
from ..algorithms.codes import FAIL_REASONS, Fail, Integrator

# RK4 is stable for oscillatory modes while h * omega < 2 sqrt(2) = 2.83 (its stability region on the
# imaginary axis); 2.78 leaves a small margin.
RK4_LIMIT = 2.78

# the engine's fixed-step integrators (its run_steps): rk4 and MuJoCo's velocity-implicit single steps
FIXED_STEPS = {i.name.lower(): int(i) for i in Integrator}
ADAPTIVE = ("dopri5", "rosenbrock")     # error-controlled, dense output at the samples (rtol, atol, h_max)

RUNAWAY = Fail.RUNAWAY      # not a kernel code: a finite state whose energy ran away (found after the run: runaway())
RUNAWAY_GAIN = 0.5


class SimulationDiverged(FloatingPointError):
    """A simulation diverged.

    A simulation left the finite numbers, its energy ran away (finite states, but an energy gain larger
    than half the largest energy so far), or (dopri5) its step size collapsed.

    Attributes: ``t`` (time of the failure), ``sample`` (index of the first sample that could not be written,
    or that ran away), ``coordinate`` (name of the first bad state component, or None), ``reason``, ``hint``,
    ``last_t`` (time of the last good sample), ``integrator``, ``code`` (the kernel's fail_code, FAIL_REASONS;
    RUNAWAY for the energy), and ``partial``: the Result of
    the good samples (meta["partial"] = True) when it was asked for (simulate(keep_partial=True) returns it
    instead of raising), else None.

    Parameters
    ----------
    message : str
        The message.
    t, sample, coordinate, reason, hint, last_t, integrator, code, partial
        Keyword-only: the attributes above.
    """

    def __init__(self, message, *, t, sample, coordinate, reason, hint, last_t, integrator, code, partial=None):
        super().__init__(message)
        self.t, self.sample, self.coordinate, self.reason, self.hint = t, sample, coordinate, reason, hint
        self.last_t, self.integrator, self.code, self.partial = last_t, integrator, code, partial


@dataclasses.dataclass(frozen=True)
class Failure:
    """Where and why a run stopped: what a compiled integrator (or runaway()) found, for divergence().

    Attributes
    ----------
    code : int
        The kernel's fail_code (codegen.algorithms.codes.Fail; FAIL_REASONS words it), or RUNAWAY.
    t : float
        Time of the failure (rk4, hht: the end of the step that produced it).
    sample : int
        Index into the sample times of the first sample that could not be written (or that ran away).
    index : int
        The state component the kernel named (dopri5: the largest error term or the first non-finite
        derivative), or -1: find it in ``state``.
    state : numpy.ndarray or None
        The bad state the step produced (rk4, hht, runaway), or None (dopri5).
    detail : str or None
        The reason in the family's words (it replaces FAIL_REASONS' for the message), or None.
    """

    code: int
    t: float
    sample: int
    index: int = -1
    state: Optional[np.ndarray] = None
    detail: Optional[str] = None

    @classmethod
    def of_kernel(cls, kernel, sample: int, state=None, code: Optional[int] = None, index: Optional[int] = None):
        """The failure a kernel recorded (fail_code, fail_t, fail_index) at run sample `sample`."""
        return cls(code=int(kernel.fail_code if code is None else code), t=float(kernel.fail_t), sample=int(sample),
                   index=int(kernel.fail_index if index is None else index), state=state)

    def explained(self, detail: str) -> "Failure":
        """The same failure with the family's reason (the component named in it: index -1)."""
        return dataclasses.replace(self, index=-1, detail=detail)


def start_state(system, t_end, dt, q0=None, u0=None):
    """Initial state and sample times of a simulation.

    Initial state x = (q, u) of a simulation (the model's, unless q0 / u0 are given) and the sample
    times 0, dt, ..., t_end."""
    if not (dt > 0 and t_end > 0 and math.isfinite(dt) and math.isfinite(t_end)):
        raise ValueError("t_end and dt must be positive")
    if round(t_end / dt) < 1:
        raise ValueError(f"t_end = {t_end:g} is shorter than one sample interval dt = {dt:g}")
    qi, ui = system.initial_state()
    q, u = system._qu(qi if q0 is None else np.asarray(q0, float), ui if u0 is None else np.asarray(u0, float))
    if not (np.all(np.isfinite(q)) and np.all(np.isfinite(u))):
        raise ValueError("the initial state must be finite")
    return np.concatenate([q, u, np.zeros(system.na)]), np.arange(int(round(t_end / dt)) + 1) * dt   # act = 0


class _NoBar:
    """What integrate_chunks needs of a tqdm bar, for runs without one (tqdm is not imported: start-up time)."""

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def update(self, n=1):
        pass


def _progress_bar(total, label, progress):
    if not progress:
        return _NoBar()
    from tqdm import tqdm
    return tqdm(total=total, desc=label, unit="sample", leave=False)


def integrate_chunks(kernel, x, ts, integrator, substeps, rtol, atol, h_max, label, progress, other=None, work=None,
                     outs=None):
    """Run a compiled integrator from state x over the sample times ts.

    (ts[0] = 0), every step inside the kernel: in about 100 chunks when a progress bar shows, so that it can
    move, else in chunks of at most 32 MB of states. Returns (X, stats, wall seconds, fail):
    X the state at each sample, stats [rhs evaluations, steps, rejected steps or Newton iterations, Jacobians
    (rosenbrock) ...].
    ``other(t0, x, m) -> (states, stats)`` integrates m samples for an integrator besides rk4 and dopri5.

    fail is None, or (the kernel stopped at a divergence; the rows of X from fail.sample on are NaN) its Failure.
    work (len(ts) float64, optional): filled with the work of the non-conservative forces at every sample, integrated
    by rk4 and dopri5 with their own steps (kernel.wnc, dW/dt = kernel.pnc). outs (len(ts) x kernel NOUT, optional,
    rk4 of a kernel with IN_LOOP_OUTPUTS): rows 1.. get the outputs of the samples from the steps' kinematics."""
    ns, dt, t_end = len(ts) - 1, ts[1] - ts[0], ts[-1]
    X = np.full((ns + 1, len(x)), np.nan)
    X[0] = x
    # about 100 chunks for a progress bar to move; without one, chunks of at most 32 MB (run_rk4 copies out)
    chunk = max(1, ns // 100) if progress else min(ns, max(1, (1 << 22) // len(x)))
    stats = np.zeros(4, dtype=np.int64)
    h = min(dt, 1e-3) if h_max is None else min(dt, h_max)
    t = 0.0
    fail = None
    kernel.wnc = 0.0
    wall = time.perf_counter()
    with _progress_bar(ns, label, progress) as bar:
        k = 0
        while k < ns:
            m = min(chunk, ns - k)
            if integrator in FIXED_STEPS:
                args = () if outs is None else (outs[k + 1:k + 1 + m],)
                out, nok = kernel.run_steps(FIXED_STEPS[integrator], ts[k], x, dt / substeps, m, substeps,
                                            None if work is None else work[k + 1:k + 1 + m], *args)
                X[k + 1:k + 1 + m] = out
                done = m if not kernel.fail_code else nok + 1
                stats[0] += (4 if integrator == "rk4" else 1) * done * substeps
                stats[1] += done * substeps
            elif integrator == "rosenbrock":
                out, t, h, st, nok = kernel.run_rosenbrock(t, x, h, ts[k + 1:k + 1 + m], rtol, atol,
                                                           h_max if h_max else t_end)
                X[k + 1:k + 1 + m] = out
                stats[:3] += np.asarray(st[:3])
                stats[3] += st[3]
            elif integrator == "dopri5":
                out, t, h, st, nok = kernel.run_dopri5(t, x, h, ts[k + 1:k + 1 + m], rtol, atol,
                                                       h_max if h_max else t_end,
                                                       None if work is None else work[k + 1:k + 1 + m])
                X[k + 1:k + 1 + m] = out
                stats[:3] += np.asarray(st)
            else:
                out, st = other(ts[k], x, m)
                X[k + 1:k + 1 + m] = out
                stats += np.asarray(st)
            if kernel.fail_code:
                fail = Failure.of_kernel(kernel, k + 1 + int(kernel.fail_sample),
                                         state=None if integrator in ADAPTIVE else np.array(x))
                bar.update(int(kernel.fail_sample))
                break
            k += m
            bar.update(m)
    return X, stats, time.perf_counter() - wall, fail


# ---------------------------------------------------------------------------------------------- divergence
def _component(system, k):
    """('coordinate' | 'velocity' | 'activation', name) of state component k of x = [q, u, act]."""
    if k < system.nq:
        return "coordinate", system.coord_names[k]
    if k < system.nq + system.nv:
        return "velocity", system.velocity_names[k - system.nq]
    return "activation", system.act_names[k - system.nq - system.nv]


def _bad_component(system, fail, last):
    """Index of the state component to blame.

    The kernel's (dopri5), else among the non-finite components of
    the bad state the one that was largest in the last good state (it is the one that ran away)."""
    if fail.index >= 0 or fail.state is None:
        return fail.index
    bad = np.flatnonzero(~np.isfinite(fail.state))
    if bad.size == 0:                        # finite but run away: the largest component
        return int(np.argmax(np.abs(fail.state)))
    if bad.size == 1:
        return int(bad[0])
    return int(bad[np.argmax(np.abs(last[bad]))])


def _summary(system, x):
    """'max |q| = 3.1 (hinge1.angle), max |u| = 1.2e+03 (hinge1.rate)' for a state."""
    q, u = x[:system.nq], x[system.nq:system.nq + system.nv]
    out = []
    for what, v, names in (("q", q, system.coord_names), ("u", u, system.velocity_names)):
        if v.size:
            i = int(np.argmax(np.abs(v)))
            out.append(f"max |{what}| = {abs(v[i]):.3g} ({names[i]})")
    return ", ".join(out)


def divergence(system, fail, X, ts, integrator, h, stable_step=None):
    """The SimulationDiverged for a failed run.

    (partial left None): time, first bad coordinate by name, last
    good state, hint.  h: the integrator's (fixed) step; stable_step: the estimated stable rk4 step of a beam
    model, if known."""
    code, t, sample = fail.code, fail.t, fail.sample
    last = X[sample - 1]
    k = _bad_component(system, fail, last)
    kind, name = _component(system, k) if k >= 0 else (None, None)
    reason = fail.detail or FAIL_REASONS.get(code, f"kernel failure code {code}")
    if code == Fail.NONFINITE and integrator == "dopri5":
        reason = "the state derivative became non-finite (NaN or inf)"
    if integrator == "rk4" and code in (Fail.NONFINITE, RUNAWAY):
        hint = system.unstable_rk4_hint(h, stable_step)
    elif integrator in FIXED_STEPS and code in (Fail.NONFINITE, Fail.SINGULAR, RUNAWAY):
        hint = (f"the step h = {h:g} s is too large for this model with {integrator} (it takes only the velocity "
                "partials of the forces implicitly): use a smaller --dt or more --substeps, or --integrator rosenbrock "
                "(stiff, error-controlled)")
    elif integrator == "hht" and code in (Fail.NONFINITE, Fail.NOT_PD, RUNAWAY):
        hint = f"use a smaller --dt or more --substeps (h = {h:g} s), or check the model (parameters, loads)"
    elif integrator == "rosenbrock" and code == Fail.SINGULAR:
        hint = "check the model (a singular mass matrix or Jacobian near this state)"
    elif code in (Fail.STEP_COLLAPSED, Fail.REJECTED):
        hint = ("loosen --rtol / --atol, or check the model (a singularity or a discontinuous force near "
                f"t = {t:.6g} s)")
    else:
        hint = "check the model (a singular configuration, force values or a force hook returning NaN)"
    where = ""
    if name is not None:
        if code in (Fail.STEP_COLLAPSED, Fail.REJECTED):
            where = f"; largest error in {kind} {name}"
        elif code == Fail.NONFINITE and integrator == "dopri5":
            where = f"; first non-finite derivative: {kind} {name}"
        elif code == RUNAWAY:
            where = f"; runaway {kind}: {name} = {fail.state[k]:.3g}"
        else:
            where = f"; first bad {kind}: {name}"
    msg = (f"simulation diverged at t = {t:.6g} s (sample {sample} of {len(ts) - 1}, {integrator}): {reason}{where}; "
           f"last good state at t = {ts[sample - 1]:.6g} s (sample {sample - 1}): {_summary(system, last)}. "
           f"Hint: {hint}")
    return SimulationDiverged(msg, t=t, sample=sample, coordinate=name, reason=reason, hint=hint,
                              last_t=float(ts[sample - 1]), integrator=integrator, code=code)


# ---------------------------------------------------------------------------------------------- energy
def cumulative_work(P, t):
    """Cumulative work W(t_k) = int_0^t_k P dt at uniformly spaced samples.

    Per interval the cubic through four neighbouring
    samples (h/24 (-P[i-1] + 13 P[i] + 13 P[i+1] - P[i+2])), the quadratic through three at the ends; trapezoids
    for two samples."""
    n = len(P)
    if n < 2:
        return np.zeros(n)
    h = (t[-1] - t[0]) / (n - 1)
    if n == 2:
        inc = 0.5 * h * (P[:1] + P[1:])
    else:
        inc = np.empty(n - 1)
        inc[0] = h / 12 * (5 * P[0] + 8 * P[1] - P[2])
        inc[-1] = h / 12 * (5 * P[-1] + 8 * P[-2] - P[-3])
        if n > 3:
            inc[1:-1] = h / 24 * (-P[:-3] + 13 * P[1:-2] + 13 * P[2:-1] - P[3:])
    return np.concatenate([[0.0], np.cumsum(inc)])


def energy_balance(system, res) -> dict:
    """Energy monitor of a run.

    Value = max_t |E(t) - E0 - W(t)| / max(max|T|, max|V|, |E0|), W the work of the
    applied non-conservative forces: result.extra["work"], integrated inside the compiled rk4 or dopri5 with the
    run's own steps (so a coarse sampling does not count as an energy error), else (hht, GCL runs) the
    cumulative_work of System.applied_power at the samples.  Returns {"value", "change" (E(end) - E0), "work"
    (W(end), None if unknown), "conservative" (no such forces)}; value is None when the work is not known (a
    force hook without the compiled work)."""
    E = res.energy_total
    T, V = res.energy_kinetic, res.energy_potential
    change = float(E[-1] - E[0])
    conservative = system.conservative()
    if "work" in res.extra:                  # integrated by the compiled integrator with its own steps
        W = res.extra["work"]
    else:                                    # (hht, a GCL run): quadrature of the sampled power
        P = system.applied_power(res)
        if P is None:
            return {"value": None, "change": change, "work": None, "conservative": False}
        W = cumulative_work(P, res.t)
    scale = max(float(np.abs(T).max()), float(np.abs(V).max()), abs(float(E[0])))
    err = float(np.abs(E - E[0] - W).max())
    value = 0.0 if scale == 0 else err / scale
    return {"value": value, "change": change, "work": float(W[-1]), "conservative": bool(conservative)}


def runaway(system, res, X):
    """The first sample at which a run has visibly run away, as a Failure, or None.

    The first sample at which a run has visibly run away although its state is finite, as a Failure
    (code RUNAWAY) for divergence(), or None: an energy that is not finite, or a spurious energy gain
    E - E0 - W larger than RUNAWAY_GAIN times the largest |T|, |V|, |E0| seen up to that sample (an unstable
    explicit step pumps energy in; numerical damping only takes it out, so losses never count).  W: the
    work of dampers and joint forces, with the integral of the joint forces' |power| as slack (their W is a
    quadrature of sampled, maybe discontinuous power); not checked when W is not known (a force hook)."""
    from types import SimpleNamespace
    ts, T, V = res.t, res.energy_kinetic, res.energy_potential
    E = T + V
    bad = ~(np.isfinite(T) & np.isfinite(V))
    bad[0] = False
    k = int(np.argmax(bad)) if bad.any() else None
    n = len(ts) if k is None else k                  # the finite prefix
    gain_at = None
    if n > 1:
        pre = SimpleNamespace(t=ts[:n], q=res.q[:n], u=res.u[:n], energy_kinetic=T[:n], energy_potential=V[:n],
                              body_names=res.body_names, body_com=res.body_com[:n], body_quat=res.body_quat[:n],
                              extra={k: res.extra[k][:n] for k in (
                                  "actuator_force", "limit_force", "friction_force", "tendon_force", "tendon_length",
                                  "tendon_velocity") if k in res.extra})
        with np.errstate(all="ignore"):
            if "work" in res.extra:                      # the compiled integrator's own (exact to its order)
                W, slack = res.extra["work"][:n], 0.0
            else:
                P = system.applied_power(pre)
                # causal (trapezoidal) W: a stencil reaching past sample k would mix later garbage into W(t_k)
                W = None if P is None else np.concatenate([[0.0], np.cumsum(0.5 * (P[1:] + P[:-1]) * np.diff(ts[:n]))])
                if W is not None:
                    # joint forces: their W is a quadrature of sampled power, as uncertain as the work that went
                    # through in all (a step force between two samples): that much slack on top
                    absP = np.abs(system.applied_power(pre, joint_forces_only=True))
                    slack = np.concatenate([[0.0], np.cumsum(np.maximum(absP[1:], absP[:-1]) * np.diff(ts[:n]))])
            if W is not None:
                gain = E[:n] - E[0] - W
                scale = np.maximum.accumulate(np.maximum(np.maximum(np.abs(T[:n]), np.abs(V[:n])), abs(E[0])))
                over = gain > RUNAWAY_GAIN * scale + slack
                over[0] = False
                if over.any():
                    gain_at = k = int(np.argmax(over))
    if k is None:
        return None
    if gain_at is not None:
        detail = (f"the energy ran away (an unstable step pumps energy in): E - E0 - W = {gain[k]:.3g} J, more "
                  f"than {RUNAWAY_GAIN:g} x the largest |T|, |V|, |E0| so far ({scale[k]:.3g} J)")
    else:
        detail = "the energy became non-finite (the state ran away)"
    return Failure(code=RUNAWAY, t=float(ts[k]), sample=k, state=X[k].copy(), detail=detail)


def versions():
    """Versions for a result's meta (read once per process: the metadata lookup costs ~6 ms)."""
    global _VERSIONS
    if _VERSIONS is None:
        import platform
        from .._metadata import dist_version as version   # not `import sympy`: that alone takes ~1 s at start-up
        _VERSIONS = {"mbgen": __version__, "numpy": np.__version__, "sympy": version("sympy"),
                     "cython": version("Cython"), "python": platform.python_version()}
    return dict(_VERSIONS)


_VERSIONS = None
