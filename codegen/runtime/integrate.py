"""Integration driver: every step runs inside the compiled kernel; Python only hands out chunks so that a
progress bar can move."""
from __future__ import annotations

import math
import time

import numpy as np

from .._version import __version__


def start_state(system, t_end, dt, q0=None, u0=None):
    """Initial state x = (q, u) of a simulation (the model's, unless q0 / u0 are given) and the sample
    times 0, dt, ..., t_end."""
    if not (dt > 0 and t_end > 0 and math.isfinite(dt) and math.isfinite(t_end)):
        raise ValueError("t_end and dt must be positive")
    qi, ui = system.model.initial_state()
    q, u = system._qu(qi if q0 is None else np.asarray(q0, float), ui if u0 is None else np.asarray(u0, float))
    return np.concatenate([q, u]), np.arange(int(round(t_end / dt)) + 1) * dt


def integrate_chunks(kernel, x, ts, integrator, substeps, rtol, atol, h_max, label, progress, other=None):
    """Run a compiled integrator from state x over the sample times ts (ts[0] = 0) in about 100 chunks, so
    that a progress bar can move; every step runs inside the kernel. Returns (X, stats, wall seconds):
    X the state at each sample, stats [rhs evaluations, steps, rejected steps or Newton iterations, ...].
    ``other(t0, x, m) -> (states, stats)`` integrates m samples for an integrator besides rk4 and dopri5."""
    from tqdm import tqdm
    ns, dt, t_end = len(ts) - 1, ts[1] - ts[0], ts[-1]
    X = np.empty((ns + 1, len(x)))
    X[0] = x
    chunk = max(1, ns // 100)
    stats = np.zeros(4, dtype=np.int64)
    h = min(dt, 1e-3) if h_max is None else min(dt, h_max)
    t = 0.0
    wall = time.perf_counter()
    with tqdm(total=ns, desc=label, unit="sample", disable=not progress, leave=False) as bar:
        k = 0
        while k < ns:
            m = min(chunk, ns - k)
            if integrator == "rk4":
                X[k + 1:k + 1 + m] = kernel.integrate_rk4(ts[k], x, dt / substeps, m, substeps)
                stats[0] += 4 * m * substeps
                stats[1] += m * substeps
            elif integrator == "dopri5":
                out, t, h, st = kernel.integrate_dopri5(t, x, h, ts[k + 1:k + 1 + m], rtol, atol,
                                                        h_max if h_max else t_end)
                X[k + 1:k + 1 + m] = out
                stats[:3] += np.asarray(st)
            else:
                out, st = other(ts[k], x, m)
                X[k + 1:k + 1 + m] = out
                stats += np.asarray(st)
            k += m
            bar.update(m)
    return X, stats, time.perf_counter() - wall


def versions():
    import Cython
    import sympy
    import platform
    return {"mbgen": __version__, "numpy": np.__version__, "sympy": sympy.__version__,
            "cython": Cython.__version__, "python": platform.python_version()}


