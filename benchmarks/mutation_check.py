"""Mutation check: deliberate one-line mistakes in the plan, the symbolic modules and the templates must
each make the test suite fail.

    python benchmarks/mutation_check.py [--only NAME] [--keep] [--worktree] [--check]

Each mutation is applied to a fresh copy of the committed tree (git archive HEAD; --worktree: the working tree's
tracked and untracked files instead, for changes not committed yet) in a temporary folder, with its own build
cache, and a focused part of the suite runs there (-x: the first failure is enough).  A mutation the suite does
not catch is reported as MISSED, one whose text is no longer in its file as STALE, and the script exits 1.
--check only looks for every mutation's text (no copy, no tests: seconds).
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
     'pb.view(p, "J", o)[:] = (gr.T @ b.inertia @ gr).ravel()', 'pb.view(p, "J", o)[:] = (gr @ b.inertia @ gr.T).ravel()',
     ["tests/peers/test_peers_independent.py"]),
    ("centroid rotated the wrong way", "codegen/algorithms/tree_plan.py",
     'pb.view(p, "rho", o)[:] = gr.T @ (b.com - gp)', 'pb.view(p, "rho", o)[:] = gr @ (b.com - gp)',
     ["tests/peers/test_peers_independent.py"]),
    ("quaternion rate sign (symbolic joints)", "codegen/symbolic/joints.py",
     "(w * wx + y * wz - z * wy) / 2,", "(w * wx - y * wz + z * wy) / 2,",
     ["tests/symbolic/test_joints_symbolic.py", "tests/runtime/test_simulation.py", "tests/peers/test_peers_independent.py"]),
    ("RK4 weights", "templates/shared/integrators.pyx.j2",
     "x[k] += h / 6.0 * (k1[k] + 2.0 * k2[k] + 2.0 * k3[k] + k4[k])",
     "x[k] += h / 6.0 * (k1[k] + 2.0 * k2[k] + 2.0 * k3[k] + 1.0001 * k4[k])",
     ["tests/runtime/test_simulation.py", "tests/algorithms/recursive/test_recursive.py"]),
    ("point spring-damper: damping sign", "templates/shared/forces.pyx.j2",
     "f = fp[6] * (L - fp[8]) + fp[7] * Ld", "f = fp[6] * (L - fp[8]) - fp[7] * Ld",
     ["tests/peers/test_peers_independent.py"]),
    ("joint spring: reference offset ignored", "templates/shared/forces.pyx.j2",
     "(q[{{ f.data.iq }} + k] - fp[{{ 2 * f.data.n }} + k])", "(q[{{ f.data.iq }} + k] - 0.0 * fp[{{ 2 * f.data.n }} + k])",
     ["tests/runtime/test_simulation.py", "tests/peers/test_peers_independent.py"]),
    ("Shabana beam mass matrix scaled (eq 4)", "codegen/symbolic/ancf.py",
     "return sp.ImmutableMatrix((rho * A * l * (S.T * S).applyfunc(int01)).applyfunc(sp.factor))",
     "return sp.ImmutableMatrix((rho * A * l * (1 + sp.Rational(1, 1000)) * (S.T * S).applyfunc(int01)).applyfunc(sp.factor))",
     ["tests/symbolic/test_ancf_symbolic.py"]),
    ("sine joint force frequency", "templates/shared/base.pyx.j2",
     "{{ fp }}[0] * sin(6.283185307179586 * {{ fp }}[1] * t + {{ fp }}[2])",
     "{{ fp }}[0] * sin(6.283 * {{ fp }}[1] * t + {{ fp }}[2])",
     ["tests/runtime/test_force_functions.py"]),
    # ---- grcr, mstmm, rancf: their generated steps (issue #21)
    ("grcr: dependent elimination R^k sign (eq 36)", "codegen/symbolic/grcr.py",
     '("R^k = R^{k+1} - rho Q rho^T [CA eqs 36, 66]", R - rho * Q * rho.T)',
     '("R^k = R^{k+1} - rho Q rho^T [CA eqs 36, 66]", R + rho * Q * rho.T)',
     ["tests/algorithms/grcr/test_grcr.py"]),
    ("grcr: dependent region's W = U + X, X = -s Q rho^T sign (eqs 76-77)", "codegen/symbolic/grcr.py",
     "return -s * (Q * (rho.T * V))", "return s * (Q * (rho.T * V))",
     ["tests/algorithms/grcr/test_grcr.py"]),
    ("grcr: coupled loop's load on its base, psi sign (eqs 103-111)", "templates/grcr/forward.pyx.j2",
     "Kl[GL_psi + a] = Fb[a] - bet[a]", "Kl[GL_psi + a] = Fb[a] + bet[a]",
     ["tests/algorithms/grcr/test_grcr.py"]),
    ("mstmm: gyroscopic term Omega x J Omega sign (E9)", "templates/mstmm/mstmm.pyx.j2",
     "e[a] = y[a] - x[a] - self.Te[3 * j + a]", "e[a] = -y[a] - x[a] - self.Te[3 * j + a]",
     ["tests/algorithms/mstmm/test_mstmm_kernel.py", "tests/algorithms/mstmm/test_mstmm_accuracy.py"]),
    ("mstmm: geometric equation, parent's centripetal term (eq 14)", "templates/mstmm/mstmm.pyx.j2",
     "        cross(wi, d, x)\n        cross_add(wi, x, zp)", "        cross(d, wi, x)\n        cross_add(wi, x, zp)",
     ["tests/algorithms/mstmm/test_mstmm_kernel.py", "tests/algorithms/mstmm/test_mstmm_accuracy.py"]),
    ("rancf: constant forces F_E sign in kappa (eq 52)", "templates/rancf/recursion.pyx.j2",
     "self.kap[8 * s + i] = self.F[8 * s + i] - pp[P_FE + i]", "self.kap[8 * s + i] = self.F[8 * s + i] + pp[P_FE + i]",
     ["tests/algorithms/rancf/test_rancf_kernel.py"]),
    ("rancf: chord-frame elastic force, local y rotation sign (eqs 5-7)", "codegen/algorithms/rancf/plan.py",
     '("ya1", "cos_a*e[3] - sin_a*e[2]")', '("ya1", "cos_a*e[3] + sin_a*e[2]")',
     ["tests/algorithms/rancf/test_rancf_ref.py", "tests/algorithms/rancf/test_rancf_kernel.py"]),
]


def copy_tree(tmp, worktree):
    """The committed tree (git archive HEAD) or the working tree's tracked and untracked files into tmp."""
    if worktree:
        cmd = (f"git -C {ROOT} ls-files -z -co --exclude-standard | "
               f"tar -C {ROOT} --null --ignore-failed-read -T - -cf - | tar -x -C {tmp}")
    else:
        cmd = f"git -C {ROOT} archive HEAD | tar -x -C {tmp}"
    subprocess.run(cmd, shell=True, check=True)


def source_text(path, worktree):
    """The file as the mutation would see it (HEAD or the working tree)."""
    if worktree:
        with open(os.path.join(ROOT, path)) as f:
            return f.read()
    out = subprocess.run(["git", "-C", ROOT, "show", f"HEAD:{path}"], capture_output=True, text=True)
    return out.stdout if out.returncode == 0 else ""


def run(name, path, old, new, tests, keep, worktree=False):
    if old not in source_text(path, worktree):
        return "STALE", 0.0, f"text not found in {path}"
    tmp = tempfile.mkdtemp(prefix="mbgen-mut-")
    copy_tree(tmp, worktree)
    f = os.path.join(tmp, path)
    text = open(f).read()
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
    ap = argparse.ArgumentParser(description=" ".join(__doc__.split("\n\n")[0].split()))
    ap.add_argument("--only", default=None, help="run the mutations whose name contains this text")
    ap.add_argument("--keep", action="store_true", help="keep the temporary copies")
    ap.add_argument("--worktree", action="store_true",
                    help="mutate a copy of the working tree (uncommitted changes included) instead of HEAD")
    ap.add_argument("--check", action="store_true", help="only check that every mutation's text is in its file")
    args = ap.parse_args()
    missed = 0
    for name, path, old, new, tests in MUTATIONS:
        if args.only and args.only not in name:
            continue
        if args.check:
            ok = old in source_text(path, args.worktree)
            missed += not ok
            print(f"{'ok' if ok else 'STALE':<8} {name}  [{path}]", flush=True)
            continue
        status, dt, last = run(name, path, old, new, tests, args.keep, args.worktree)
        missed += status != "CAUGHT"
        print(f"{status:<8} {dt:6.1f} s  {name}  [{path}]  -- {last}", flush=True)
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
