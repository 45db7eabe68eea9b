#!/usr/bin/env python
"""Before/after: the kernels of an earlier git revision against this checkout's, in one process, with pinocchio.

The earlier revision is exported with ``git archive REV`` into a temporary folder, its kernels for chain(n) are
built there (in its own cache) by a subprocess running that revision's code, and its compiled module is loaded
into this process next to this checkout's build of the same model. Then forward dynamics and inverse dynamics
through Python (old: ``kernel.forward_dynamics(q, u)``, new: ``s.forward_dynamics(q, u, out=buf)``), the old and
new compiled forward-dynamics loops, ``pin.aba`` and ``pin.rnea`` run in interleaved batches (CPU time of this
thread, medians). The old and new results are compared first.

    python benchmarks/compare_revisions.py 63a3d46 --sizes 7 20 100 --ref-point origin

Writes results/compare_REV.{json,md}.
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

import codegen  # noqa: E402
from codegen.models import chain  # noqa: E402
from bench_calls import python_batch  # noqa: E402
from bench_recursive import interleaved, machine_info, pin_chain  # noqa: E402

BUILD = """
import json, sys, codegen
from codegen.models import chain
s = codegen.build(chain(int(sys.argv[1])), ref_point=sys.argv[2])
print(json.dumps([s.build_info['path'], s.build_info['module']]))
"""


def old_module(tree: Path, n: int, ref: str):
    env = dict(os.environ, MBGEN_CACHE_DIR=str(tree / "generated"), PYTHONPATH=str(tree))
    out = subprocess.run([sys.executable, "-c", BUILD, str(n), ref], cwd=tree, capture_output=True, text=True,
                         env=env, check=True)
    path, name = json.loads(out.stdout.strip().splitlines()[-1])
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def kernel_batch(k, q, u):
    def run(reps):
        t0 = time.thread_time()
        k.time_forward_dynamics(q, u, reps)
        return (time.thread_time() - t0) / reps
    return run


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("rev", help="the earlier git revision (e.g. a commit hash)")
    ap.add_argument("--sizes", type=int, nargs="+", default=[7, 20, 100])
    ap.add_argument("--ref-point", default="origin", choices=("centroid", "joint", "origin"))
    ap.add_argument("--repeats", type=int, default=9)
    ap.add_argument("--out-dir", default=str(HERE / "results"))
    ap.add_argument("--tree", default=None, help="an existing export of REV (reused with its generated/ cache)")
    args = ap.parse_args(argv)
    import pinocchio as pin
    if args.tree:
        tree = Path(args.tree)
    else:
        tree = Path(tempfile.mkdtemp(prefix=f"mbgen-rev-{args.rev}-"))
        archive = subprocess.run(["git", "-C", str(HERE.parent), "archive", args.rev], capture_output=True, check=True)
        subprocess.run(["tar", "-x", "-C", str(tree)], input=archive.stdout, check=True)
    (tree / "generated").mkdir(exist_ok=True)
    os.chmod(tree / "generated", 0o700)     # tar run as root keeps the archive's 775: the cache must be ours alone
    doc = {"command": "python " + " ".join([os.path.relpath(__file__, os.getcwd())] + (sys.argv[1:] if argv is None
                                                                                         else argv)),
           "machine": machine_info(), "rev": args.rev, "ref_point": args.ref_point, "rows": []}
    for n in args.sizes:
        m = chain(n)
        new = codegen.build(m, ref_point=args.ref_point)
        old = old_module(tree, n, args.ref_point).System()
        old.set_params(new.plan.params())           # the parameter layout is unchanged since 63a3d46
        rng = np.random.default_rng(n)
        q = m.initial_state()[0] + rng.normal(0, 0.1, n)
        u, a = rng.normal(0, 1, n), rng.normal(0, 1, n)
        d_fd = float(np.max(np.abs(old.forward_dynamics(q, u) - new.forward_dynamics(q, u))))
        d_id = float(np.max(np.abs(old.inverse_dynamics(q, u, a) - new.inverse_dynamics(q, u, a))))
        pm = pin_chain(n)
        pd = pm.createData()
        z, out = np.zeros(n), np.zeros(n)
        runners = {
            "old fd": (python_batch(lambda: old.forward_dynamics(q, u)), 1e-5),
            "new fd": (python_batch(lambda: new.forward_dynamics(q, u, out=out)), 1e-5),
            "pin.aba": (python_batch(lambda: pin.aba(pm, pd, q, u, z)), 1e-5),
            "old id": (python_batch(lambda: old.inverse_dynamics(q, u, a)), 1e-5),
            "new id": (python_batch(lambda: new.inverse_dynamics(q, u, a, out=out)), 1e-5),
            "pin.rnea": (python_batch(lambda: pin.rnea(pm, pd, q, u, a)), 1e-5),
            "old fd compiled loop": (kernel_batch(old, q, u), 1e-5),
            "new fd compiled loop": (kernel_batch(new.kernel, q, u), 1e-5)}
        t = interleaved(runners, 0.02, args.repeats)
        row = {"n": n, "max_diff_fd": d_fd, "max_diff_id": d_id, "times": t}
        doc["rows"].append(row)
        print(f"n={n}: old vs new max |diff| fd {d_fd:.1e}, id {d_id:.1e}; " +
              ", ".join(f"{k} {1e6 * v['median']:.3g} us" for k, v in t.items()), flush=True)
    L = [f"# Before/after: revision {args.rev} against this checkout (chain(n), recursive, {args.ref_point})", "",
         f"- command: `{doc['command']}`; date {doc['machine']['date']}; load average at start "
         f"{', '.join(f'{x:.2f}' for x in doc['machine']['loadavg_start'])}",
         "- µs of CPU time per call (this thread), medians of interleaved batches; old: `kernel.forward_dynamics(q, u)`, "
         "new: `forward_dynamics(q, u, out=buf)`", "",
         "| n | fd old | fd new | pin.aba | old / pin | new / pin | id old | id new | pin.rnea | old / pin | new / pin "
         "| fd compiled loop old | new |", "|" + "---:|" * 13]
    for r in doc["rows"]:
        t = {k: v["median"] for k, v in r["times"].items()}
        L.append(f"| {r['n']} | {1e6 * t['old fd']:.3g} | {1e6 * t['new fd']:.3g} | {1e6 * t['pin.aba']:.3g} | "
                 f"{t['old fd'] / t['pin.aba']:.2f} | {t['new fd'] / t['pin.aba']:.2f} | {1e6 * t['old id']:.3g} | "
                 f"{1e6 * t['new id']:.3g} | {1e6 * t['pin.rnea']:.3g} | {t['old id'] / t['pin.rnea']:.2f} | "
                 f"{t['new id'] / t['pin.rnea']:.2f} | {1e6 * t['old fd compiled loop']:.3g} | "
                 f"{1e6 * t['new fd compiled loop']:.3g} |")
    out_dir = Path(args.out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / f"compare_{args.rev}.json").write_text(json.dumps(doc, indent=1))
    (out_dir / f"compare_{args.rev}.md").write_text("\n".join(L) + "\n")
    print("\n".join(L))
    return 0


if __name__ == "__main__":
    sys.exit(main())
