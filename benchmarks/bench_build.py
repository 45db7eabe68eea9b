#!/usr/bin/env python
"""Time to first result for a new model: a new process from `import codegen` to its first forward dynamics.

What a user pays for every new model and every topology edit. Per model, the derivations are stored first (one
build in a throw-away process, not timed: a user's second model finds most of them), then per round the model's
cache entry is removed and a new process runs

    import codegen; m = <load the model>; s = codegen.build(m); s.forward_dynamics(q0, u0)

The parent reports that child's wall time and its CPU time with its compilers' (user + system, RUSAGE_CHILDREN),
and the child's build_info split: `generate_s` (render: sympy from the store, templates) and `compile_s` (Cython
and the C compiler). Rounds interleave the models, so load from other processes hits them alike; medians.
Also, once per model, the first build into an empty cache (every derivation from scratch). Writes
results/build.{json,md}.

    python benchmarks/bench_build.py                    # 3 rounds, the four models (~10 min on 2 cores)
    python benchmarks/bench_build.py --rounds 1 --models chain50
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

from bench_startup import git_commit  # noqa: E402
from bench_recursive import machine_info  # noqa: E402

# name -> (what the user has, the Python that loads it in the child); {tmp} is the benchmark's scratch folder
MODELS = {
    "chain50": ("codegen.models.chain(50): planar 50-link pendulum",
                "m = codegen.models.chain(50)"),
    "humanoid_yaml": ("examples/humanoid.yaml: 20-body floating humanoid (model file)",
                      "m = codegen.load_model('examples/humanoid.yaml')"),
    "gym_humanoid": ("gymnasium's humanoid.xml (MJCF, MuJoCo's compiler; contacts ignored)",
                     "import gymnasium, os\n"
                     "m = codegen.load_model(os.path.join(os.path.dirname(gymnasium.__file__), "
                     "'envs/mujoco/assets/humanoid.xml'), ignore_contacts=True)"),
    "urdf100": ("a 100-link URDF (codegen.model.export.to_urdf(chain(100)), read by yourdfpy)",
                "m = codegen.load_model('{tmp}/chain100.urdf')"),
}

CHILD = """
import json, time
t0 = time.perf_counter()
import codegen
{load}
t1 = time.perf_counter()
s = codegen.build(m, cache_dir={cache!r})
t2 = time.perf_counter()
q, u = s.initial_state()
qd = s.forward_dynamics(q, u)
t3 = time.perf_counter()
i = s.build_info
print(json.dumps({{"import_load_s": t1 - t0, "build_s": t2 - t1, "first_call_s": t3 - t2, "hit": i["hit"],
                  "generate_s": i["generate_s"], "compile_s": i["compile_s"], "key": i["key"],
                  "nq": len(q), "finite": bool(all(abs(x) < 1e300 for x in qd))}}))
"""


def child(name: str, cache: Path, tmp: Path) -> dict:
    """Run the child for model `name`; its JSON plus wall and CPU seconds as the parent sees them."""
    code = CHILD.format(load=MODELS[name][1].format(tmp=tmp), cache=str(cache))
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    p = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    if p.returncode != 0:
        sys.exit(f"bench_build: the child for {name} failed:\n{p.stderr[-3000:]}")
    out = json.loads(p.stdout.strip().splitlines()[-1])
    if not out["finite"]:
        sys.exit(f"bench_build: VERIFICATION FAILED: {name}'s first forward dynamics is not finite")
    out.update(wall_s=wall, cpu_s=(r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime))
    return out


def drop_entry(cache: Path, key: str) -> None:
    """Remove one model's cache entry (its folder and lock), keeping the derivation store."""
    shutil.rmtree(cache / key, ignore_errors=True)
    (cache / f"{key}.lock").unlink(missing_ok=True)


def median(v):
    v = sorted(v)
    return v[len(v) // 2] if len(v) % 2 else 0.5 * (v[len(v) // 2 - 1] + v[len(v) // 2])


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--models", nargs="+", choices=list(MODELS), default=list(MODELS))
    ap.add_argument("--out-dir", default=str(HERE / "results"))
    args = ap.parse_args(argv)
    machine = machine_info()
    tmp = Path(tempfile.mkdtemp(prefix="mbgen-bench-build-"))
    try:
        if "urdf100" in args.models:
            import warnings

            import codegen
            from codegen.model.export import to_urdf
            with warnings.catch_warnings():           # URDF has no gravity field: the URDF readers' (0, 0, -9.81)
                warnings.simplefilter("ignore")
                (tmp / "chain100.urdf").write_text(to_urdf(codegen.models.chain(100)))
        cold, runs = {}, {n: [] for n in args.models}
        for name in args.models:              # every derivation from scratch, each model into its own empty cache
            cache = tmp / f"cold-{name}"
            cold[name] = child(name, cache, tmp)
            shutil.rmtree(cache)
            print(f"{name}: first build into an empty cache {cold[name]['wall_s']:.1f} s", flush=True)
        cache = tmp / "cache"
        keys = {n: child(n, cache, tmp)["key"] for n in args.models}    # fills the shared derivation store
        for r in range(args.rounds):
            for name in args.models:
                drop_entry(cache, keys[name])
                out = child(name, cache, tmp)
                assert not out["hit"], out
                runs[name].append(out)
                print(f"round {r + 1}/{args.rounds} {name}: wall {out['wall_s']:.1f} s, CPU {out['cpu_s']:.1f} s "
                      f"(generate {out['generate_s']:.2f} s, compile {out['compile_s']:.2f} s)", flush=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    fields = ("wall_s", "cpu_s", "import_load_s", "generate_s", "compile_s", "first_call_s")
    summary = {n: {"model": MODELS[n][0], "nq": runs[n][0]["nq"],
                   **{f: median([o[f] for o in runs[n]]) for f in fields},
                   "cold_wall_s": cold[n]["wall_s"], "cold_generate_s": cold[n]["generate_s"]} for n in args.models}
    doc = {"command": "python " + " ".join([os.path.relpath(__file__, os.getcwd())]
                                           + (sys.argv[1:] if argv is None else argv)),
           "machine": machine, "commit": git_commit(), "rounds": args.rounds, "summary": summary,
           "runs": runs, "cold": cold, "loadavg_end": list(os.getloadavg())}
    out_dir = Path(args.out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "build.json").write_text(json.dumps(doc, indent=1) + "\n")
    L = ["# Time to first result for a new model", "", f"- command: `{doc['command']}`",
         f"- date {machine['date']}; commit {doc['commit']}; load average at start "
         f"{', '.join(f'{x:.2f}' for x in machine['loadavg_start'])}, at end "
         f"{', '.join(f'{x:.2f}' for x in doc['loadavg_end'])}; {machine['cpu']}, {machine['cores_usable']} cores",
         f"- a new process from `import codegen` to its first `forward_dynamics`, the model's cache entry removed "
         f"before each and the derivations stored; medians of {args.rounds} interleaved rounds; CPU is the "
         f"process's with its compilers' (user + system)", "",
         "| model | nq | wall [s] | CPU [s] | import + load [s] | generate [s] | compile [s] | first build, empty "
         "cache [s] |", "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for n, s in summary.items():
        L.append(f"| {s['model']} | {s['nq']} | {s['wall_s']:.2f} | {s['cpu_s']:.2f} | {s['import_load_s']:.2f} | "
                 f"{s['generate_s']:.2f} | {s['compile_s']:.2f} | {s['cold_wall_s']:.1f} |")
    (out_dir / "build.md").write_text("\n".join(L) + "\n")
    print("\n".join(L))


if __name__ == "__main__":
    main()
