"""iLQR swing-up of the cart-pole (examples/cartpole.yaml): from hanging down (theta = pi) to upright (theta = 0).

    python examples/ilqr_swingup.py                     # 3 s at dt = 0.02, up to 250 iterations; figure in docs/media
    python examples/ilqr_swingup.py --quick --out /tmp/ilqr     # fewer iterations

The trajectory is N = T / dt steps of the compiled RK4 with the cart force held over each step (tau = (F, 0)).
Every iteration:

1. one call System.rollout(x0, tau, sensitivities=True) gives the nominal trajectory and the Jacobians of all
   its steps, x_{k+1} = A_k x_k + B_k dtau_k (A_k 4 x 4, B_k 4 x 2; only B_k's cart column b_k is an input);
2. the backward Riccati pass of iLQR on the quadratic cost
       J = 1/2 sum_k dt [(x_k - x_g)' Q (x_k - x_g) + r F_k^2] + 1/2 (x_N - x_g)' Qf (x_N - x_g),   x_g = 0 (upright),
   with Levenberg-Marquardt regularisation of Q_uu, gives feed-forward steps kff_k and gains Kfb_k;
3. the forward pass rolls the nonlinear system out with F_k = F_k + alpha kff_k + Kfb_k (x_k - xbar_k) for
   several alpha at once (a batch of rollouts of one step each, in compiled code), and keeps the alpha of least
   cost if it lowers the cost (else the regularisation grows).

Prints the cost per iteration and the final angle error; writes ilqr_swingup.png (pole angle, cart position,
cart force of the final trajectory, some intermediate iterates, and the cost per iteration) into --out
(default docs/media).
"""
from __future__ import annotations

import argparse
import math
import os
import sys
import warnings
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import codegen                                   # noqa: E402
from codegen.runtime import atomic_write         # noqa: E402

MODEL = ROOT / "examples" / "cartpole.yaml"
T_HORIZON, DT = 3.0, 0.02
Q_RUN = np.diag([0.1, 0.1, 0.01, 0.01])          # running state weight (times dt)
R_RUN = 0.01                                      # running force weight (times dt) [N^-2]
Q_FINAL = np.diag([100.0, 500.0, 50.0, 50.0])    # terminal weight
ALPHAS = np.array([1.0, 0.7, 0.5, 0.35, 0.25, 0.15, 0.1, 0.05, 0.02, 0.01])   # line search, tried in one batch


class ILQR:
    """iLQR of the cart-pole with the cart force as the only input (tau = (F, 0) on the system's nv DOFs)."""

    def __init__(self, system, x0, x_goal, n, dt, Q=Q_RUN, r=R_RUN, Qf=Q_FINAL):
        self.s, self.nq, self.nv = system, system.nq, system.nv
        self.x0, self.xg = np.asarray(x0, float), np.asarray(x_goal, float)
        self.n, self.dt = n, dt
        self.Q, self.r, self.Qf = Q * dt, r * dt, Qf
        self.nx = self.nq + self.nv

    def tau(self, F):
        """B x n x nv joint inputs of B force sequences (B x n)."""
        F = np.atleast_2d(F)
        out = np.zeros(F.shape + (self.nv,))
        out[..., 0] = F
        return out

    def cost(self, X, F):
        """Costs of B trajectories X (B x (n + 1) x nx), forces F (B x n); inf where a rollout diverged."""
        X, F = (X if X.ndim == 3 else X[None]), np.atleast_2d(F)
        E = X - self.xg
        with np.errstate(all="ignore"):
            run = np.einsum("bki,ij,bkj->b", E[:, :-1], self.Q, E[:, :-1]) + self.r * np.sum(F * F, axis=1)
            J = 0.5 * (run + np.einsum("bi,ij,bj->b", E[:, -1], self.Qf, E[:, -1]))
        J[~np.isfinite(J)] = np.inf
        return J

    def linearized_rollout(self, F):
        """Nominal trajectory (n + 1) x nx and the step Jacobians A (n x nx x nx), b (n x nx): one call."""
        q, u, A, B = self.s.rollout(self.x0[None, :self.nq], self.x0[None, self.nq:], self.n, self.dt,
                                    self.tau(F), sensitivities=True, threads=1)
        return np.concatenate([q[0], u[0]], axis=1), A[0], B[0][:, :, 0]

    def backward(self, X, F, A, b, mu):
        """The Riccati recursion: (kff n, Kfb n x nx, expected reduction terms (d1, d2)) or None if Q_uu <= 0."""
        n, nx = self.n, self.nx
        kff, Kfb = np.zeros(n), np.zeros((n, nx))
        e = X[-1] - self.xg
        Vx, Vxx = self.Qf @ e, self.Qf.copy()
        d1 = d2 = 0.0
        for k in range(n - 1, -1, -1):
            Ak, bk = A[k], b[k]
            e = X[k] - self.xg
            Qx = self.Q @ e + Ak.T @ Vx
            Qu = self.r * F[k] + bk @ Vx
            Vb = Vxx @ bk
            Qxx = self.Q + Ak.T @ Vxx @ Ak
            Quu = self.r + bk @ Vb
            Qux = Vb @ Ak                       # b' Vxx A
            Quu_reg = Quu + mu * (bk @ bk)      # regularise in the state (Tassa et al. 2012)
            Qux_reg = Qux + mu * (bk @ Ak)
            if not Quu_reg > 0:
                return None
            kff[k] = -Qu / Quu_reg
            Kfb[k] = -Qux_reg / Quu_reg
            Vx = Qx + Kfb[k] * (Quu * kff[k]) + Kfb[k] * Qu + Qux * kff[k]
            Vxx = Qxx + Quu * np.outer(Kfb[k], Kfb[k]) + np.outer(Kfb[k], Qux) + np.outer(Qux, Kfb[k])
            Vxx = 0.5 * (Vxx + Vxx.T)
            d1 += kff[k] * Qu
            d2 += 0.5 * kff[k] * Quu * kff[k]
        return kff, Kfb, (d1, d2)

    def forward(self, X, F, kff, Kfb, alphas):
        """Closed-loop nonlinear forward passes for every alpha at once: (X B x (n + 1) x nx, F B x n)."""
        nb = len(alphas)
        Xn = np.empty((nb, self.n + 1, self.nx))
        Fn = np.empty((nb, self.n))
        Xn[:, 0] = self.x0
        alive = np.ones(nb, bool)
        for k in range(self.n):
            Fn[:, k] = F[k] + alphas * kff[k] + (Xn[:, k] - X[k]) @ Kfb[k]
            alive &= np.all(np.isfinite(Xn[:, k]), axis=1) & np.isfinite(Fn[:, k])
            Xn[~alive, k + 1] = np.nan
            if not alive.any():
                break
            with warnings.catch_warnings():         # a too long step may diverge: its cost is inf
                warnings.simplefilter("ignore", RuntimeWarning)
                q, u = self.s.rollout(Xn[alive, k, :self.nq], Xn[alive, k, self.nq:], 1, self.dt,
                                      self.tau(Fn[alive, k:k + 1]), threads=1)
            Xn[alive, k + 1, :self.nq], Xn[alive, k + 1, self.nq:] = q[:, 1], u[:, 1]
        return Xn, Fn

    def solve(self, F0, iterations=100, tol=1e-7, verbose=True):
        """iLQR from the force sequence F0; returns a dict (X, F, costs per iteration, the iterates' X)."""
        say = print if verbose else (lambda *a, **k: None)
        F = np.array(F0, float)
        X, A, b = self.linearized_rollout(F)
        J = float(self.cost(X, F)[0])
        costs, iterates, alphas_taken = [J], [X.copy()], []
        mu, mu_min = 1e-6, 1e-9
        rejected = 0                                     # iterations whose line search found no decrease
        say(f"  iter    0: cost {J:12.6f}")
        for it in range(1, iterations + 1):
            back = self.backward(X, F, A, b, mu)
            while back is None and mu < 1e10:        # Q_uu not positive: more regularisation
                mu = max(10.0 * mu, 1e-6)
                back = self.backward(X, F, A, b, mu)
            if back is None:
                say("  stopped: Q_uu stays indefinite")
                break
            kff, Kfb, (d1, d2) = back
            Xs, Fs = self.forward(X, F, kff, Kfb, ALPHAS)
            Js = self.cost(Xs, Fs)
            best = int(np.argmin(Js))
            if Js[best] < J:
                rel = (J - Js[best]) / J
                F = Fs[best]
                X, A, b = self.linearized_rollout(F)     # the same trajectory, now with its Jacobians
                J = float(self.cost(X, F)[0])
                costs.append(J)
                iterates.append(X.copy())
                alphas_taken.append(float(ALPHAS[best]))
                mu = max(mu / 4.0, mu_min) if best == 0 else mu
                say(f"  iter {it:4d}: cost {J:12.6f}  alpha {ALPHAS[best]:.4f}  mu {mu:.1e}  "
                    f"expected reduction {-(d1 + d2):.3g}")
                if rel < tol:
                    break
            else:
                rejected += 1
                mu = max(10.0 * mu, 1e-6)
                say(f"  iter {it:4d}: no decrease (mu -> {mu:.1e})")
                if mu > 1e10:
                    break
        return {"X": X, "F": F, "costs": np.array(costs), "iterates": iterates, "alphas": alphas_taken,
                "iterations": len(costs) - 1, "rejected": rejected}


def run(quick=False, out=None, iterations=None, system=None, verbose=True):
    say = print if verbose else (lambda *a, **k: None)
    s = system or codegen.build(codegen.load_model(MODEL), "recursive", derivatives=True)
    s.set_feedback(None)                          # the bare plant (a memoised system may hold a gain)
    n = int(round(T_HORIZON / DT))
    x0 = np.array([0.0, math.pi, 0.0, 0.0])       # hanging down, at rest
    xg = np.zeros(4)                              # upright, at rest, cart back at 0
    iterations = iterations or (40 if quick else 250)
    say(f"cartpole iLQR swing-up: {T_HORIZON} s, dt = {DT} s ({n} steps), from theta = pi to 0, "
        f"up to {iterations} iterations")
    solver = ILQR(s, x0, xg, n, DT)
    sol = solver.solve(np.zeros(n), iterations=iterations, verbose=verbose)
    X, F = sol["X"], sol["F"]
    err = X[-1] - xg
    c = sol["costs"]
    increases = int(np.sum(np.diff(c) > 0))
    say(f"  {sol['iterations']} accepted iterations ({sol['rejected']} without a decrease): cost {c[0]:.4f} -> "
        f"{c[-1]:.6f} ({increases} increases)")
    say(f"  final state: x_cart = {X[-1, 0]:+.2e} m, theta error = {err[1]:+.2e} rad "
        f"({math.degrees(err[1]):+.3f} deg), x_cart' = {X[-1, 2]:+.2e} m/s, theta' = {X[-1, 3]:+.2e} rad/s")
    say(f"  max |F| = {np.abs(F).max():.2f} N, max |x_cart| = {np.abs(X[:, 0]).max():.3f} m")
    out = Path(out) if out is not None else ROOT / "docs" / "media"
    out.mkdir(parents=True, exist_ok=True)
    png = out / "ilqr_swingup.png"
    plot(png, np.arange(n + 1) * DT, sol)
    say(f"  wrote {png}")
    sol.update(final_error=err, png=str(png), x0=x0, x_goal=xg, dt=DT, n=n)
    return sol


def plot(path, t, sol):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    X, F, its = sol["X"], sol["F"], sol["iterates"]
    fig, ax = plt.subplots(2, 2, figsize=(11, 7))
    show = sorted(set(np.unique(np.geomspace(1, max(len(its) - 1, 1), 5).astype(int))) - {len(its) - 1})
    for i in show:
        a = 0.25 + 0.5 * i / max(len(its) - 1, 1)
        ax[0, 0].plot(t, its[i][:, 1], color="tab:blue", alpha=a, lw=0.8, label=f"iteration {i}")
        ax[0, 1].plot(t, its[i][:, 0], color="tab:blue", alpha=a, lw=0.8)
    ax[0, 0].plot(t, X[:, 1], "k", lw=2, label=f"final (iteration {len(its) - 1})")
    ax[0, 1].plot(t, X[:, 0], "k", lw=2)
    ax[0, 0].axhline(0, color="tab:red", lw=0.8, ls="--")
    ax[0, 0].set_ylabel("pole angle theta [rad] (0: upright)")
    ax[0, 0].legend(fontsize=7, loc="upper right")
    ax[0, 1].set_ylabel("cart position [m]")
    ax[1, 0].step(t[:-1], F, where="post", color="k")
    ax[1, 0].set_ylabel("cart force F [N] (held over each step)")
    for a in (ax[0, 0], ax[0, 1], ax[1, 0]):
        a.set_xlabel("t [s]")
    c = sol["costs"]
    ax[1, 1].semilogy(np.arange(len(c)), c - c[-1] + 1e-12 * max(c[0], 1.0), "o-", ms=3, label="J - J_final")
    ax[1, 1].semilogy(np.arange(len(c)), c, "s-", ms=2, label="J")
    ax[1, 1].set_xlabel("iteration")
    ax[1, 1].set_ylabel("cost")
    ax[1, 1].legend(fontsize=8)
    for a in ax.flat:
        a.grid(alpha=0.3)
    fig.suptitle(f"cart-pole iLQR swing-up ({len(t) - 1} RK4 steps of {t[1] - t[0]:g} s; step Jacobians from "
                 f"rollout(sensitivities=True))", fontsize=10)
    fig.tight_layout()
    atomic_write(os.fspath(path), lambda fh: fig.savefig(fh, format="png", dpi=110))
    plt.close(fig)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="fewer iterations (40)")
    ap.add_argument("--iterations", type=int, default=None, help="iteration limit (default 250, --quick 40)")
    ap.add_argument("--out", default=None, help="output folder (default: docs/media)")
    a = ap.parse_args(argv)
    run(quick=a.quick, out=a.out, iterations=a.iterations)
    return 0


if __name__ == "__main__":
    sys.exit(main())
