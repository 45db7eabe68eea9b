"""Discrete LQR balancing of the cart-pole (examples/cartpole.yaml), the gain compiled into the integrator.

    python examples/lqr_cartpole.py                   # 6 s from a pole 0.2 rad off; figure + GIF in docs/media
    python examples/lqr_cartpole.py --quick --out /tmp/lqr     # no GIF, shorter run
    python examples/lqr_cartpole.py --theta0 0.02     # a smaller perturbation: the linear models match closer

1. Linearise at the upright equilibrium (q = u = 0): (Ad, Bd) = System.linearize(q, u, dt=h), the Jacobians of
   one compiled RK4 step of size h (the step simulate(integrator="rk4") takes), x = (x_cart, theta, x_cart',
   theta').
2. Solve the discrete Riccati equation (scipy.linalg.solve_discrete_are) with the cart force alone as input,
   b = Bd[:, [0]]: k = (R + b' P b)^-1 b' P Ad; K (nv x 2nv) is k on the cart's row and zeros on the pole's
   (the pin is not actuated).
3. Compile it: System.set_feedback(K, x_ref=0), i.e. tau = -K x inside the compiled RK4 (no Python per step),
   and simulate from the perturbed start.

Two linear predictions are overlaid on the nonlinear closed loop:
  * the design model x_{k+1} = (Ad - Bd K) x_k: the force held over each step (zero-order hold);
  * the linearisation of the compiled closed loop, System.linearize(0, 0, dt=h) with the feedback set: the
    compiled feedback acts at every RK4 stage (a continuous-time control law), not held over the step, so the
    design model is off by O(h) in the gain (a few per cent here, whatever the amplitude), while this one is
    the exact Jacobian of the compiled step (its error falls as theta0^2).

Settling time (|x| below 2 % of |x0|): predicted from the slowest closed-loop pole, t_s = ln(50) / sigma with
sigma = -ln|lambda_max| / h (an estimate that ignores how much of x0 lies in the slow mode), from the linear
prediction itself, and measured on the nonlinear run.

Writes into --out (default docs/media): lqr_cartpole.png (pole angle, cart position, cart force, |x| on a log
scale with the predicted settling time) and, without --quick, lqr_cartpole.gif (codegen.runtime.animate, as
examples/make_animations.py and `mbgen animate`).
"""
from __future__ import annotations

import argparse
import math
import os
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import codegen                                   # noqa: E402
from codegen.runtime import atomic_write         # noqa: E402

MODEL = ROOT / "examples" / "cartpole.yaml"
H = 0.01                                          # control and RK4 step [s]
Q_WEIGHTS = (10.0, 100.0, 1.0, 1.0)               # x_cart, theta, x_cart', theta'
R_WEIGHT = 0.1                                    # cart force [N]^-2


def dlqr(Ad, Bd, Q, R):
    """Discrete LQR with the cart force alone as input: (K nv x 2nv, P, k 1 x 2nv)."""
    from scipy.linalg import solve_discrete_are
    b = Bd[:, [0]]
    P = solve_discrete_are(Ad, b, Q, R)
    k = np.linalg.solve(R + b.T @ P @ b, b.T @ P @ Ad)
    K = np.zeros((Bd.shape[1], Ad.shape[0]))
    K[0] = k[0]                                   # the pole's row stays zero: the pin is not actuated
    return K, P, k


def propagate(A, x0, n):
    """x_0..x_{n-1} of x_{k+1} = A x_k."""
    X = np.empty((n, len(x0)))
    X[0] = x0
    for i in range(1, n):
        X[i] = A @ X[i - 1]
    return X


def settling_time(t, X, frac=0.02):
    """The first time after which |x| stays below frac |x0| (inf if it never does)."""
    n = np.linalg.norm(X, axis=1)
    above = np.flatnonzero(n > frac * n[0])
    if not above.size:
        return float(t[0])
    return float(t[above[-1] + 1]) if above[-1] + 1 < len(t) else math.inf


def pole_settling_time(eig, h, frac=0.02):
    lam = float(np.max(np.abs(eig)))
    return math.log(1.0 / frac) / (-math.log(lam) / h), lam


def run(quick=False, out=None, theta0=0.2, t_end=None, gif=None, system=None, verbose=True):
    """The whole example; returns a dict of the numbers and arrays (the test reads it)."""
    say = print if verbose else (lambda *a, **k: None)
    s = system or codegen.build(codegen.load_model(MODEL), "recursive", derivatives=True)
    nv = s.nv
    q_eq, u_eq = np.zeros(s.nq), np.zeros(nv)
    x_ref = np.concatenate([q_eq, u_eq])

    s.set_feedback(None)                          # the open loop (a memoised system may hold an old gain)
    Ad, Bd = s.linearize(q_eq, u_eq, dt=H)
    K, P, k = dlqr(Ad, Bd, np.diag(Q_WEIGHTS), np.array([[R_WEIGHT]]))
    A_design = Ad - Bd @ K
    eig_open = np.linalg.eigvals(Ad)
    eig_design = np.linalg.eigvals(A_design)

    s.set_feedback(K, x_ref)                      # tau = -K (x - x_ref), compiled
    A_compiled, _ = s.linearize(q_eq, u_eq, dt=H)   # the feedback is part of linearize: the closed-loop step
    eig_compiled = np.linalg.eigvals(A_compiled)
    ts_pred, lam_max = pole_settling_time(eig_compiled, H)
    ts_design, _ = pole_settling_time(eig_design, H)

    if t_end is None:
        t_end = math.ceil(2.0 * ts_pred) if quick else 6.0
    q0 = q_eq.copy()
    q0[1] = theta0
    try:
        res = s.simulate(t_end, H, integrator="rk4", q0=q0, u0=u_eq)
    finally:
        s.set_feedback(None)                      # leave the system as it was given
    X = np.hstack([res.q, res.u]) - x_ref
    force = -X @ K[0]                             # the compiled law at the samples (cart force [N])
    X_design = propagate(A_design, X[0], len(res.t))
    X_compiled = propagate(A_compiled, X[0], len(res.t))
    scale = np.abs(X).max(axis=0)
    err_design = np.abs(X_design - X).max(axis=0) / scale
    err_compiled = np.abs(X_compiled - X).max(axis=0) / scale
    ts_linear = settling_time(res.t, X_compiled)
    ts_meas = settling_time(res.t, X)

    say(f"cartpole: discrete LQR at h = {H} s, Q = diag{Q_WEIGHTS}, R = {R_WEIGHT}; theta0 = {theta0} rad")
    say(f"  gain k (cart force) = {np.array2string(k[0], precision=4)}")
    say(f"  open-loop eigenvalues of Ad      : {fmt_eig(eig_open)}")
    say(f"  closed loop, design Ad - Bd K    : {fmt_eig(eig_design)}")
    say(f"  closed loop, compiled (linearize): {fmt_eig(eig_compiled)}")
    say(f"  slowest pole |lambda| = {lam_max:.6f}: predicted settling time (2 %) t_s = ln 50 / sigma = "
        f"{ts_pred:.3f} s (design model: {ts_design:.3f} s)")
    say(f"  settling time of the linear prediction: {ts_linear:.3f} s; measured (nonlinear, compiled RK4): "
        f"{ts_meas:.3f} s")
    i15 = int(np.searchsorted(res.t, 1.5 * ts_pred))
    tail = np.abs(X[i15:]).max(axis=0) if i15 < len(res.t) else np.full(2 * nv, np.nan)
    say(f"  after 1.5 t_s = {1.5 * ts_pred:.2f} s: max |theta| = {tail[1]:.2e} rad, max |x_cart| = {tail[0]:.2e} m")
    say(f"  max |cart force| = {np.abs(force).max():.3f} N, max |x_cart| = {np.abs(X[:, 0]).max():.3f} m")
    say(f"  linear prediction, max error / max |x_i| (x, theta, x', theta'): design "
        f"{np.array2string(err_design, precision=2)}, compiled {np.array2string(err_compiled, precision=2)}")

    out = Path(out) if out is not None else ROOT / "docs" / "media"
    out.mkdir(parents=True, exist_ok=True)
    png = out / "lqr_cartpole.png"
    plot(png, res.t, X, force, X_design, X_compiled, K, ts_pred, ts_meas, ts_linear, theta0)
    say(f"  wrote {png}")
    gif_path = None
    if gif if gif is not None else not quick:
        from codegen.runtime.animate import animate
        gif_path = animate(res, out / "lqr_cartpole.gif", fps=20, size=(400, 300),
                           title="cart-pole, discrete LQR compiled in the RK4 loop")
        say(f"  wrote {gif_path} ({os.path.getsize(gif_path) / 1e3:.0f} kB)")

    return {"K": K, "k": k[0], "Ad": Ad, "Bd": Bd, "A_design": A_design, "A_compiled": A_compiled,
            "eig_open": eig_open, "eig_design": eig_design, "eig_compiled": eig_compiled, "lambda_max": lam_max,
            "ts_pred": ts_pred, "ts_design": ts_design, "ts_linear": ts_linear, "ts_meas": ts_meas,
            "t": res.t, "X": X, "force": force, "X_design": X_design, "X_compiled": X_compiled,
            "err_design": err_design, "err_compiled": err_compiled, "result": res, "png": str(png),
            "gif": None if gif_path is None else str(gif_path)}


def fmt_eig(e):
    e = sorted(e, key=lambda z: (abs(z), z.imag))
    return ", ".join(f"{z.real:.5f}{z.imag:+.5f}j" if abs(z.imag) > 1e-12 else f"{z.real:.5f}" for z in e)


def plot(path, t, X, force, X_design, X_compiled, K, ts_pred, ts_meas, ts_linear, theta0):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(4, 1, figsize=(8, 9.5), sharex=True)
    lines = (("nonlinear (compiled RK4 + feedback)", X, "k", "-", 2.2),
             ("linear, design model Ad - Bd K", X_design, "tab:orange", "--", 1.4),
             ("linear, compiled closed loop (linearize)", X_compiled, "tab:blue", ":", 1.6))
    for label, Y, c, ls, lw in lines:
        ax[0].plot(t, Y[:, 1], color=c, ls=ls, lw=lw, label=label)
        ax[1].plot(t, Y[:, 0], color=c, ls=ls, lw=lw)
        ax[2].plot(t, force if Y is X else -Y @ K[0], color=c, ls=ls, lw=lw)
        ax[3].semilogy(t, np.linalg.norm(Y, axis=1), color=c, ls=ls, lw=lw)
    ax[0].set_ylabel("pole angle theta [rad]")
    ax[0].legend(fontsize=8)
    ax[0].set_title(f"cart-pole: discrete LQR (h = {H} s) from theta0 = {theta0} rad", fontsize=10)
    ax[1].set_ylabel("cart position [m]")
    ax[2].set_ylabel("cart force [N]")
    n0 = np.linalg.norm(X[0])
    ax[3].axhline(0.02 * n0, color="gray", lw=0.8, ls="--", label="2 % of |x0|")
    ax[3].axvline(ts_pred, color="tab:red", lw=0.9, label=f"predicted t_s (slowest pole) {ts_pred:.2f} s")
    ax[3].axvline(ts_meas, color="tab:green", lw=0.9, ls="-.",
                  label=f"measured t_s {ts_meas:.2f} s (linear prediction {ts_linear:.2f} s)")
    ax[3].set_ylabel("|x| (state norm)")
    ax[3].set_xlabel("t [s]")
    ax[3].legend(fontsize=8)
    for a in ax:
        a.grid(alpha=0.3)
    fig.tight_layout()
    atomic_write(os.fspath(path), lambda fh: fig.savefig(fh, format="png", dpi=110))
    plt.close(fig)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="no GIF; a run of 2 predicted settling times")
    ap.add_argument("--out", default=None, help="output folder (default: docs/media)")
    ap.add_argument("--theta0", type=float, default=0.2, help="initial pole angle [rad] (default 0.2)")
    a = ap.parse_args(argv)
    run(quick=a.quick, out=a.out, theta0=a.theta0)
    return 0


if __name__ == "__main__":
    sys.exit(main())
