"""Mutation check: deliberate one-line mistakes in the plan, the symbolic modules and the templates must
each make the test suite fail.

    python benchmarks/mutation_check.py [--only NAME] [--keep]

Each mutation is applied to a fresh copy of the committed tree (git archive HEAD) in a temporary folder,
with its own build cache, and a focused part of the suite runs there (-x: the first failure is enough).
A mutation the suite does not catch is reported as MISSED and the script exits 1.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# name, file, exact text, replacement, the tests that must notice it
MUTATIONS = [
    ("inertia rotated R J R^T (the review's example)", "codegen/algorithms/tree_plan.py",
     "p[o + 16:o + 25] = (gr.T @ b.inertia @ gr).ravel()", "p[o + 16:o + 25] = (gr @ b.inertia @ gr.T).ravel()",
     ["tests/peers/test_peers_independent.py"]),
    ("centroid rotated the wrong way", "codegen/algorithms/tree_plan.py",
     "p[o + 13:o + 16] = gr.T @ (b.com - gp)", "p[o + 13:o + 16] = gr @ (b.com - gp)",
     ["tests/peers/test_peers_independent.py"]),
    ("quaternion rate sign (symbolic joints)", "codegen/symbolic/joints.py",
     "(w * wx + y * wz - z * wy) / 2,", "(w * wx - y * wz + z * wy) / 2,",
     ["tests/symbolic/test_joints_symbolic.py", "tests/runtime/test_simulation.py", "tests/peers/test_peers_independent.py"]),
    ("RK4 weights", "templates/shared/integrators.pyx.j2",
     "x[k] += h / 6.0 * (k1[k] + 2.0 * k2[k] + 2.0 * k3[k] + k4[k])",
     "x[k] += h / 6.0 * (k1[k] + 2.0 * k2[k] + 2.0 * k3[k] + 1.0001 * k4[k])",
     ["tests/runtime/test_simulation.py", "tests/algorithms/recursive/test_recursive.py"]),
    ("point spring-damper: damping sign", "templates/shared/base.pyx.j2",
     "f = fp[6] * (L - fp[8]) + fp[7] * Ld", "f = fp[6] * (L - fp[8]) - fp[7] * Ld",
     ["tests/peers/test_peers_independent.py"]),
    ("joint spring: reference offset ignored", "templates/shared/base.pyx.j2",
     "(q[{{ f.data.iq }} + k] - fp[{{ 2 * f.data.n }} + k])", "(q[{{ f.data.iq }} + k] - 0.0 * fp[{{ 2 * f.data.n }} + k])",
     ["tests/runtime/test_simulation.py", "tests/peers/test_peers_independent.py"]),
    ("Shabana beam mass matrix scaled (eq 4)", "codegen/symbolic/ancf.py",
     "return sp.ImmutableMatrix((rho * A * l * (S.T * S).applyfunc(int01)).applyfunc(sp.factor))",
     "return sp.ImmutableMatrix((rho * A * l * (1 + sp.Rational(1, 1000)) * (S.T * S).applyfunc(int01)).applyfunc(sp.factor))",
     ["tests/symbolic/test_ancf_symbolic.py"]),
    ("sine joint force frequency", "templates/shared/base.pyx.j2",
     "fp[0] * sin(6.283185307179586 * fp[1] * t + fp[2])", "fp[0] * sin(6.283 * fp[1] * t + fp[2])",
     ["tests/runtime/test_force_functions.py"]),
]


def run(name, path, old, new, tests, keep):
    tmp = tempfile.mkdtemp(prefix="mbgen-mut-")
    subprocess.run(f"git -C {ROOT} archive HEAD | tar -x -C {tmp}", shell=True, check=True)
    f = os.path.join(tmp, path)
    text = open(f).read()
    if old not in text:
        return "STALE", 0.0, f"text not found in {path}"
    open(f, "w").write(text.replace(old, new, 1))
    env = dict(os.environ, MBGEN_CACHE_DIR=os.path.join(tmp, "cache"), PYTHONPATH=tmp)
    t0 = time.perf_counter()
    out = subprocess.run([sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider", *tests],
                         cwd=tmp, env=env, capture_output=True, text=True)
    dt = time.perf_counter() - t0
    if not keep:
        subprocess.run(["rm", "-rf", tmp])
    last = [ln for ln in out.stdout.splitlines() if ln.strip()][-1:] or [""]
    return ("CAUGHT" if out.returncode == 1 else "MISSED" if out.returncode == 0 else f"ERROR {out.returncode}"), dt, last[0]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", default=None, help="run the mutations whose name contains this text")
    ap.add_argument("--keep", action="store_true", help="keep the temporary copies")
    args = ap.parse_args()
    missed = 0
    for name, path, old, new, tests in MUTATIONS:
        if args.only and args.only not in name:
            continue
        status, dt, last = run(name, path, old, new, tests, args.keep)
        missed += status != "CAUGHT"
        print(f"{status:<8} {dt:6.1f} s  {name}  [{path}]  -- {last}", flush=True)
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
