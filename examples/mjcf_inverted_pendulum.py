"""gymnasium's inverted pendulum (an MJCF file as it ships) balanced by its own actuator under an LQR law.

    pip install gymnasium                                   # its MuJoCo models; no simulator needed
    python examples/mjcf_inverted_pendulum.py               # figure + GIF in docs/media
    python examples/mjcf_inverted_pendulum.py --quick --out /tmp/ip

The file carries what a real robot file does: a motor with gear 100 and ctrlrange [-3, 3] on the slider, joint
damping 1, limits on the slider ([-1, 1] m) and the hinge ([-90, 90] deg). All of it is imported
(codegen.model.mjcf) and compiled; nothing is set by hand here.

1. Linearise at the upright equilibrium: (A, B) = System.linearize(q0, u0), B with respect to the generalized
   forces; the actuator's input matrix is B dtau/dctrl (System.actuator_jacobian: gear on the slider).
2. Continuous LQR (scipy.linalg.solve_continuous_are): ctrl = -k x.
3. Simulate from the pole 0.15 rad off with ctrl a Python callable (simulate(..., ctrl=...)); the ctrlrange clamp
   and the joint limits act inside the compiled RK4.
"""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import codegen                                   # noqa: E402
from codegen.runtime import atomic_write         # noqa: E402


def model_path() -> str:
    import gymnasium
    return os.path.join(os.path.dirname(gymnasium.__file__), "envs", "mujoco", "assets", "inverted_pendulum.xml")


def run(quick=False, out=None, theta0=0.15, verbose=True):
    from scipy.linalg import solve_continuous_are
    say = print if verbose else (lambda *a: None)
    m = codegen.load_model(model_path())
    s = codegen.build(m, derivatives=True)                     # linearize needs them: one build
    q0, u0 = m.initial_state()
    A, B = s.linearize(q0, u0)                                 # x = (slider, hinge, their rates), input tau
    Bc = B @ s.actuator_jacobian(q0, u0, ctrl=[0.0])           # input: the motor's control
    P = solve_continuous_are(A, Bc, np.diag([1.0, 10.0, 0.1, 0.1]), np.array([[0.1]]))
    k = np.linalg.solve(np.array([[0.1]]), Bc.T @ P)           # ctrl = -k x
    say(f"LQR gain k = {np.array2string(k[0], precision=3)}; closed-loop poles "
        f"{np.array2string(np.linalg.eigvals(A - Bc @ k), precision=2)}")
    start = q0.copy()
    start[1] = theta0
    res = s.simulate(2.0 if quick else 5.0, 0.01, q0=start, ctrl=lambda t, q, u: -k @ np.concatenate([q, u]))
    theta, c = res.q[:, 1], res.extra["ctrl"][:, 0]
    say(f"pole {theta0} rad -> {theta[-1]:.2e} rad after {res.t[-1]:.0f} s; control saturated at "
        f"{np.count_nonzero(np.abs(c) >= 3.0)} of {len(c)} samples; limits active at "
        f"{res.meta['limits']['active_samples']} samples")
    out = Path(out) if out is not None else ROOT / "docs" / "media"
    out.mkdir(parents=True, exist_ok=True)
    png = out / "mjcf_inverted_pendulum.png"
    plot(png, res)
    say(f"  wrote {png}")
    if not quick:
        from codegen.runtime.animate import animate
        gif = animate(res, out / "mjcf_inverted_pendulum.gif", fps=20, size=(400, 300),
                      title="gymnasium inverted_pendulum.xml, LQR on its motor")
        say(f"  wrote {gif}")
    return {"k": k, "result": res, "theta": theta, "ctrl": c}


def plot(path, res):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(3, 1, figsize=(7, 6), sharex=True)
    ax[0].plot(res.t, res.q[:, 1])
    ax[0].set_ylabel("pole [rad]")
    ax[1].plot(res.t, res.q[:, 0])
    ax[1].set_ylabel("cart [m]")
    ax[2].plot(res.t, res.extra["ctrl"][:, 0], label="ctrl (after ctrlrange)")
    ax[2].plot(res.t, res.extra["actuator_force"][:, 0], "--", label="actuator force / gear")
    ax[2].set_ylabel("motor")
    ax[2].set_xlabel("t [s]")
    ax[2].legend()
    fig.tight_layout()
    atomic_write(os.fspath(path), lambda fh: fig.savefig(fh, format="png", dpi=110))
    plt.close(fig)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="2 s, no GIF")
    ap.add_argument("--out", default=None, help="folder for the figure and GIF (default docs/media)")
    ap.add_argument("--theta0", type=float, default=0.15)
    args = ap.parse_args(argv)
    run(args.quick, args.out, args.theta0)
    return 0


if __name__ == "__main__":
    sys.exit(main())
