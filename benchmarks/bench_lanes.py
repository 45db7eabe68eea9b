#!/usr/bin/env python
"""SIMD across states (issue 24): forward and inverse dynamics per state in lanes against the single compiled call.

For chain(n) (codegen.models.chain) and the 7-DOF arm (codegen.models.arm7), recursive family, one thread, the
script times in one process, rounds interleaved, for forward dynamics (fd) and inverse dynamics (id, the RNEA):

  * single   the compiled single call in a compiled loop (``kernel.time_forward_dynamics``,
             ``time_inverse_dynamics``: no Python per call)
  * scalar   ``forward_dynamics_batch(Q, U, threads=1, simd=False)`` (``inverse_dynamics_batch``): one state per
             pass, per state
  * lanes    the same with ``System.lanes`` states per pass (the default), per state

over B = 512 random states (one Python call per batch, so the binding's cost is ~1 ns per state). Ratio
lanes / single: the goal is <= 0.5. Before timing, the lanes' results are checked against the single calls
(1e-12 relative; exit 2 and VERIFICATION FAILED otherwise). Writes results/lanes.{json,md}.

    python benchmarks/bench_lanes.py                    # n = 7 20 50 100 and arm7
    python benchmarks/bench_lanes.py --sizes 7 20 --rounds 5
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

import codegen  # noqa: E402
from codegen.models import arm7, chain, random_state  # noqa: E402
from bench_recursive import machine_info  # noqa: E402

TOL = 1e-12
B = 512


def one_model(m, ref_point: str, rounds: int, rng) -> dict:
    """Medians over `rounds` interleaved rounds, seconds per state."""
    s = codegen.build(m, "recursive", ref_point=ref_point)
    Q = np.array([random_state(m, rng)[0] for _ in range(B)])
    U = rng.normal(0, 1, (B, s.nv))
    A = rng.normal(0, 1, (B, s.nv))
    out = np.empty((B, s.nv))
    err = 0.0
    for one, many, args in ((s.forward_dynamics, s.forward_dynamics_batch, (Q, U)),
                            (s.inverse_dynamics, s.inverse_dynamics_batch, (Q, U, A))):
        ref = np.array([one(*(a[b] for a in args)) for b in range(B)])
        err = max(err, float(np.max(np.abs(many(*args, threads=1) - ref)) / max(np.max(np.abs(ref)), 1.0)))
    if not err < TOL:
        raise SystemExit(f"VERIFICATION FAILED: {m.name}: lanes against single calls {err:.3g} > {TOL}")
    reps = max(1, int(0.05 / max(s.kernel.time_forward_dynamics(Q[0], U[0], 200), 1e-9)))
    nb = max(1, reps // B)

    def batch(fn, args, simd):
        t0 = time.thread_time()
        for _ in range(nb):
            fn(*args, out=out, threads=1, simd=simd)
        return (time.thread_time() - t0) / (nb * B)

    runs = {"fd_single": lambda: s.kernel.time_forward_dynamics(Q[0], U[0], reps),
            "fd_scalar": lambda: batch(s.forward_dynamics_batch, (Q, U), False),
            "fd_lanes": lambda: batch(s.forward_dynamics_batch, (Q, U), True),
            "id_single": lambda: s.kernel.time_inverse_dynamics(Q[0], U[0], A[0], reps),
            "id_scalar": lambda: batch(s.inverse_dynamics_batch, (Q, U, A), False),
            "id_lanes": lambda: batch(s.inverse_dynamics_batch, (Q, U, A), True)}
    per = {k: [] for k in runs}
    for _ in range(rounds):
        for k, run in runs.items():
            per[k].append(run())
    med = {k: float(np.median(v)) for k, v in per.items()}
    return {"model": m.name, "nb": len(m.joints), "nv": s.nv, "ref_point": ref_point, "lanes": s.lanes,
            "error": err, **{f"{k}_ns": v * 1e9 for k, v in med.items()},
            **{f"{w}_lanes_over_single": med[f"{w}_lanes"] / med[f"{w}_single"] for w in ("fd", "id")}}


def markdown(doc) -> str:
    """The results as the markdown table of results/lanes.md."""
    lines = [f"# SIMD across states ({doc['date']})", "", f"Command: `{doc['command']}`  ", f"Machine: {doc['machine']}", "",
             "Per state on one thread, ns (medians of interleaved rounds); goal lanes / single <= 0.5.", "",
             "| model | lanes | fd single call | fd batch, 1 state per pass | fd batch in lanes | fd lanes / single "
             "| id single call | id batch in lanes | id lanes / single |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in doc["rows"]:
        lines.append(f"| {r['model']} | {r['lanes']} | {r['fd_single_ns']:,.0f} | {r['fd_scalar_ns']:,.0f} | "
                     f"{r['fd_lanes_ns']:,.0f} | {r['fd_lanes_over_single']:.2f} | {r['id_single_ns']:,.0f} | "
                     f"{r['id_lanes_ns']:,.0f} | {r['id_lanes_over_single']:.2f} |")
    return "\n".join(lines) + "\n"


def main(argv=None):
    """Measure every model, print and write the results."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[7, 20, 50, 100])
    ap.add_argument("--no-arm", action="store_true", help="skip the 7-DOF arm")
    ap.add_argument("--ref-point", default="centroid", choices=("centroid", "joint", "origin"))
    ap.add_argument("--rounds", type=int, default=9)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--out-dir", default=str(HERE / "results"))
    args = ap.parse_args(argv)
    rng = np.random.default_rng(args.seed)
    models = [chain(n) for n in args.sizes] + ([] if args.no_arm else [arm7()])
    rows = []
    for m in models:
        rows.append(one_model(m, args.ref_point, args.rounds, rng))
        r = rows[-1]
        print(f"{r['model']}: fd single {r['fd_single_ns']:.0f} ns, lanes {r['fd_lanes_ns']:.0f} per state "
              f"({r['fd_lanes_over_single']:.2f}); id single {r['id_single_ns']:.0f}, lanes {r['id_lanes_ns']:.0f} "
              f"({r['id_lanes_over_single']:.2f})", flush=True)
    doc = {"date": time.strftime("%Y-%m-%d"), "command": "python benchmarks/bench_lanes.py " + " ".join(argv or sys.argv[1:]),
           "machine": machine_info().get("cpu", "unknown"), "rows": rows}
    out = Path(args.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    (out / "lanes.json").write_text(json.dumps(doc, indent=1))
    (out / "lanes.md").write_text(markdown(doc))
    print(markdown(doc))


if __name__ == "__main__":
    main()
