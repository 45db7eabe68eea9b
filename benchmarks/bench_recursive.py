#!/usr/bin/env python
"""Benchmark of the generated forward dynamics on n-link planar chains (codegen.models.chain(n)).

For every chain length n it builds the recursive kernels for the three analysis reference points
(centroid, joint, origin) and the dense method, checks them against pinocchio's ABA, and measures

  * forward dynamics per call, in compiled code (System.kernel.time_forward_dynamics) and through the
    Python API (System.forward_dynamics in a Python loop), and pin.aba through Python;
  * a whole fixed-step RK4 simulation, wall time per step;
  * generation and compile time of one fresh build (temporary cache) and the generated C file size.

Writes benchmarks/results/recursive.json and benchmarks/results/recursive.md (rewritten after every
chain length, so an interrupted run keeps what it measured) and prints the tables.

    python benchmarks/bench_recursive.py                 # full run, ~10 min on 2 cores
    python benchmarks/bench_recursive.py --quick         # sizes 7 20 50, short batches
    python benchmarks/bench_recursive.py --sizes 7 100 --repeats 5

See benchmarks/README.md for the meaning of every column.
"""
from __future__ import annotations

import argparse
import datetime as _dt
import json
import os
import platform
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))          # run from a checkout without installing

import codegen  # noqa: E402
from codegen.models import AXIAL, chain  # noqa: E402

REF_POINTS = ("centroid", "joint", "origin")
VARIANTS = REF_POINTS + ("dense",)
FRESH_VARIANT = "centroid"        # the one build per size that goes to a temporary cache
PIN_BYTES_PER_N3 = 66.0           # pinocchio Data holds nv^3 second-order-derivative tensors (measured)
TOL = 1e-9                        # pin.aba check: |ours - pin| <= TOL * max(1, max|udot|)
DENSE_COND_FACTOR = 10.0          # dense: tolerance max(TOL, 10 eps cond(M)) * max(1, max|udot|)


# ---------------------------------------------------------------------------------------------- helpers
def log(*a):
    print(*a, flush=True)


def machine_info() -> dict:
    cpu = "unknown"
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    try:
        affinity = len(os.sched_getaffinity(0))
    except AttributeError:
        affinity = os.cpu_count()
    mem = _meminfo()
    import Cython
    try:
        import pinocchio as pin
        pin_version = pin.__version__
    except ImportError:
        pin_version = None
    cc = sysconfig.get_config_var("CC") or "cc"
    try:
        ccv = subprocess.run(cc.split()[:1] + ["--version"], capture_output=True, text=True,
                             timeout=20).stdout.splitlines()[0]
    except (OSError, subprocess.SubprocessError, IndexError):
        ccv = "unknown"
    return {"cpu": cpu, "cores": os.cpu_count(), "cores_usable": affinity,
            "mem_total_gb": round(mem.get("MemTotal", 0) / 2 ** 30, 1), "platform": platform.platform(),
            "python": platform.python_version(), "numpy": np.__version__, "cython": Cython.__version__,
            "pinocchio": pin_version, "mbgen": codegen.__version__, "compiler": ccv,
            "date": _dt.datetime.now().astimezone().isoformat(timespec="seconds"),
            "loadavg_start": list(os.getloadavg())}


def _meminfo() -> dict:
    out = {}
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                k, v = line.split(":", 1)
                out[k] = int(v.split()[0]) * 1024
    except (OSError, ValueError):
        pass
    return out


def pin_chain(n: int, L: float = 1.0):
    """The same chain in pinocchio: joint k revolute about z at the inboard end of link k, the link's
    frame in pinocchio being the joint frame (so joints are L apart along x, com at L/2)."""
    import pinocchio as pin
    model = pin.Model()
    inertia = pin.Inertia(1.0, np.array([L / 2, 0.0, 0.0]), np.diag([AXIAL, 1.0 / 12, 1.0 / 12]))
    parent = 0
    for k in range(n):
        placement = pin.SE3.Identity() if k == 0 else pin.SE3(np.eye(3), np.array([L, 0.0, 0.0]))
        jid = model.addJoint(parent, pin.JointModelRZ(), placement, f"j{k + 1}")
        model.appendBodyToJoint(jid, inertia, pin.SE3.Identity())
        parent = jid
    model.gravity = pin.Motion(np.array([0.0, -9.81, 0.0]), np.zeros(3))
    return model


def python_batch(f):
    """A batch runner: mean seconds per call of f() over reps calls in a Python loop."""
    def run(reps):
        t0 = time.perf_counter()
        for _ in range(reps):
            f()
        return (time.perf_counter() - t0) / reps
    return run


def interleaved(runners: dict, batch_time: float, batches: int) -> dict:
    """runners: name -> (run(reps) -> seconds per call, estimated seconds per call). Batches of all
    runners are interleaved (round robin); returns name -> median, min, reps, batches."""
    plan = {k: plan_batches(est, batch_time, batches) for k, (_, est) in runners.items()}
    per = {k: [] for k in runners}
    for b in range(max(nb for _, nb in plan.values())):
        for k, (run, _) in runners.items():
            reps, nb = plan[k]
            if b < nb:
                per[k].append(run(reps))
    return {k: {"median": float(np.median(v)), "min": float(np.min(v)), "reps": plan[k][0], "batches": plan[k][1]}
            for k, v in per.items()}


def plan_batches(est: float, batch_time: float, batches: int):
    """Calls per batch so that a batch lasts ~batch_time; slow calls (dense at large n) get one call
    per batch and fewer batches (at least 3, about 3 s in all)."""
    reps = max(1, int(round(batch_time / max(est, 1e-9))))
    if reps > 1:
        return reps, batches
    return 1, max(3, min(batches, int(3.0 / max(est, 1e-9))))


def estimate(f, min_time: float = 0.02) -> float:
    """Rough seconds per call of f() (for choosing batch sizes); f runs at least once."""
    n, t0 = 0, time.perf_counter()
    while True:
        f()
        n += 1
        dt = time.perf_counter() - t0
        if dt >= min_time or n >= 10000:
            return dt / n


def c_file_size(s) -> dict:
    folder = os.path.dirname(s.build_info["path"])
    base = s.build_info["module"]
    out = {}
    for ext in ("c", "pyx"):
        p = os.path.join(folder, f"{base}.{ext}")
        out[f"{ext}_bytes"] = os.path.getsize(p) if os.path.exists(p) else None
    return out


class VerificationError(RuntimeError):
    pass


# ---------------------------------------------------------------------------------------------- one size
def bench_size(n: int, args, cfg) -> dict:
    row = {"n": n, "variants": {}, "build": {}, "pin": None, "check": {}}
    m = chain(n)
    tmp = tempfile.mkdtemp(prefix=f"mbgen-bench-{n}-")
    systems = {}
    try:
        # -- builds: one fresh (temporary cache, measured), the others from the cache
        for v in (FRESH_VARIANT,) + tuple(x for x in VARIANTS if x != FRESH_VARIANT):
            fresh = v == FRESH_VARIANT
            t0 = time.perf_counter()
            kw = {"algorithm": "dense"} if v == "dense" else {"ref_point": v}
            s = codegen.build(m, cache_dir=tmp if fresh else args.cache_dir, **kw)
            wall = time.perf_counter() - t0
            info = {"fresh": fresh, "cache_hit": bool(s.build_info["hit"]), "key": s.build_info["key"],
                    "generate_s": s.build_info["generate_s"], "compile_s": s.build_info["compile_s"],
                    "build_wall_s": wall, **c_file_size(s)}
            if fresh and info["cache_hit"]:
                raise RuntimeError("the fresh build hit a cache: the temporary cache dir was not empty")
            row["build"][v] = info
            systems[v] = s
            log(f"  n={n:<5} built {v:<8} {'fresh' if fresh else ('cache hit' if info['cache_hit'] else 'miss')}"
                f"  generate {info['generate_s']:.2f} s  compile {info['compile_s']:.1f} s"
                f"  C {info['c_bytes'] / 1024:.0f} KiB")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)      # the loaded extension stays mapped

    # -- benchmark state: initial state perturbed, random velocities
    rng = np.random.default_rng(args.seed + n)
    q0, u0 = m.initial_state()
    q = q0 + rng.normal(scale=0.1, size=q0.size)
    u = u0 + rng.normal(scale=1.0, size=u0.size)
    row["state"] = {"seed": args.seed + n, "q": "initial + N(0, 0.1)", "u": "initial + N(0, 1)"}
    acc = {v: systems[v].forward_dynamics(q, u) for v in VARIANTS}
    scale = max(1.0, float(np.max(np.abs(acc["centroid"]))))
    row["check"]["max_abs_udot"] = float(np.max(np.abs(acc["centroid"])))
    # the dense method solves M udot = rhs with Cholesky: its error grows with cond(M) (~n^4 for a chain)
    cond = float(np.linalg.cond(systems["dense"].mass_matrix(q)))
    dense_tol = max(TOL, DENSE_COND_FACTOR * np.finfo(float).eps * cond) * scale
    row["check"]["cond_M"] = cond
    for v in VARIANTS:
        if not np.all(np.isfinite(acc[v])):
            raise VerificationError(f"n={n}: {v} forward dynamics is not finite")
        if v != "centroid":
            row["check"][f"{v}_vs_centroid"] = float(np.max(np.abs(acc[v] - acc["centroid"])))
            row["check"][f"{v}_vs_centroid_rel"] = row["check"][f"{v}_vs_centroid"] / scale

    # -- pinocchio
    pm = pd = None
    if not args.no_pin:
        need = PIN_BYTES_PER_N3 * n ** 3
        avail = _meminfo().get("MemAvailable", 0)
        if need > args.pin_max_gb * 2 ** 30 or need > 0.6 * avail:
            row["pin"] = {"skipped": f"pinocchio Data would need ~{need / 2 ** 30:.0f} GB (nv^3 derivative "
                                     f"tensors); limit {args.pin_max_gb} GB, available {avail / 2 ** 30:.0f} GB"}
            log(f"  n={n:<5} pin.aba skipped: {row['pin']['skipped']}")
        else:
            import pinocchio as pin
            pm = pin_chain(n)
            pd = pm.createData()
            tau0 = np.zeros(n)
            a_pin = np.array(pin.aba(pm, pd, q, u, tau0))
            errs = {v: float(np.max(np.abs(acc[v] - a_pin))) for v in VARIANTS}
            tols = {v: dense_tol if v == "dense" else TOL * scale for v in VARIANTS}
            row["pin"] = {"max_abs_err": errs, "tol": tols}
            bad = {v: e for v, e in errs.items() if not e <= tols[v]}
            if bad:
                raise VerificationError(
                    f"n={n}: forward dynamics disagrees with pin.aba at the benchmark state: " +
                    ", ".join(f"{v} max|ours - pin| = {e:.3g} > tol {tols[v]:.3g}" for v, e in bad.items()) +
                    f" (tol = {TOL:g} x max(1, max|udot|) = {TOL * scale:.3g}; dense: "
                    f"max({TOL:g}, {DENSE_COND_FACTOR:g} eps cond(M)) x max(1, max|udot|), cond(M) = {cond:.3g})")
            log(f"  n={n:<5} pin.aba check ok (max|udot| {scale:.3g}, cond(M) {cond:.2g}): max|ours - pin| "
                + "  ".join(f"{v} {e:.1e}" for v, e in errs.items()))

    # -- forward dynamics timings: batches interleaved across the variants (and pin.aba), so that a
    #    burst of load from other processes hits all of them alike
    kern, py = {}, {}
    for v in VARIANTS:
        s = systems[v]
        est = estimate(lambda: s.kernel.time_forward_dynamics(q, u, 1), cfg["estimate_time"])
        kern[v] = (lambda reps, s=s: s.kernel.time_forward_dynamics(q, u, reps), est)
        py[v] = (python_batch(lambda s=s: s.forward_dynamics(q, u)), est)
    if pm is not None:
        import pinocchio as pin
        tau0 = np.zeros(n)
        f = lambda: pin.aba(pm, pd, q, u, tau0)  # noqa: E731
        py["pin.aba"] = (python_batch(f), estimate(f, cfg["estimate_time"]))
    tk = interleaved(kern, cfg["batch_time"], args.repeats)
    tp = interleaved(py, cfg["batch_time"], args.repeats)
    for v in VARIANTS:
        row["variants"][v] = {"fd_kernel_s": tk[v]["median"], "fd_kernel_min_s": tk[v]["min"],
                              "fd_kernel_calls_per_batch": tk[v]["reps"], "fd_kernel_batches": tk[v]["batches"],
                              "fd_python_s": tp[v]["median"], "fd_python_min_s": tp[v]["min"],
                              "fd_python_calls_per_batch": tp[v]["reps"], "fd_python_batches": tp[v]["batches"],
                              "python_overhead_s": tp[v]["median"] - tk[v]["median"]}
    if pm is not None:
        t = tp["pin.aba"]
        row["pin"].update({"aba_python_s": t["median"], "aba_python_min_s": t["min"], "calls_per_batch": t["reps"],
                           "batches": t["batches"]})
        del pm, pd

    # -- RK4: a whole simulation, wall time per step
    for v in VARIANTS:
        s = systems[v]
        step_est = 4 * row["variants"][v]["fd_kernel_s"]
        steps = int(min(cfg["rk4_max_steps"], max(1, round(cfg["rk4_time"] / step_est))))
        per = []
        for _ in range(cfg["rk4_runs"]):
            res = s.simulate(steps * 1e-3, dt=1e-3, integrator="rk4")
            if not np.all(np.isfinite(res.q[-1])):
                raise VerificationError(f"n={n}: {v} RK4 simulation produced non-finite states")
            per.append(res.meta["wall_time_s"] / res.meta["steps"])
        row["variants"][v].update({"rk4_step_s": float(np.median(per)), "rk4_steps": steps,
                                   "rk4_t_end": steps * 1e-3, "rk4_runs": cfg["rk4_runs"],
                                   "rk4_run_wall_s": float(np.median(per)) * steps})

    k = {v: row["variants"][v]["fd_kernel_s"] for v in VARIANTS}
    p = {v: row["variants"][v]["fd_python_s"] for v in VARIANTS}
    row["ratios"] = {"origin/centroid": k["origin"] / k["centroid"], "joint/centroid": k["joint"] / k["centroid"],
                     "dense/centroid": k["dense"] / k["centroid"],
                     "python origin/centroid": p["origin"] / p["centroid"],
                     "python joint/centroid": p["joint"] / p["centroid"]}
    if row["pin"] and "aba_python_s" in row["pin"]:
        best = min(p[v] for v in REF_POINTS)
        row["ratios"]["python best recursive/pin.aba"] = best / row["pin"]["aba_python_s"]
    return row


# ---------------------------------------------------------------------------------------------- output
def _us(x):
    if x is None:
        return "-"
    x *= 1e6
    return f"{x:.3g}" if x < 100 else f"{x:,.0f}"


def _r(x):
    return "-" if x is None else f"{x:.2f}"


def tables(doc: dict) -> str:
    rows = doc["rows"]
    out = []

    def table(title, header, lines, note=None):
        out.append(f"### {title}\n")
        if note:
            out.append(note + "\n")
        out.append("| " + " | ".join(header) + " |")
        out.append("|" + "|".join("---:" for _ in header) + "|")
        out.extend("| " + " | ".join(str(c) for c in line) + " |" for line in lines)
        out.append("")

    V = lambda r, v, key: r["variants"][v].get(key)  # noqa: E731
    table("Forward dynamics per call, timed in compiled code [µs]",
          ["n", "centroid", "joint", "origin", "dense", "origin/centroid", "joint/centroid", "dense/centroid"],
          [[r["n"]] + [_us(V(r, v, "fd_kernel_s")) for v in VARIANTS] +
           [_r(r["ratios"]["origin/centroid"]), _r(r["ratios"]["joint/centroid"]), _r(r["ratios"]["dense/centroid"])]
           for r in rows],
          "Median over batches of `System.kernel.time_forward_dynamics(q, u, repeats)` (no Python per call).")

    def pin_cell(r, key):
        pin = r.get("pin") or {}
        if "skipped" in pin:
            return "n/a"
        return _us(pin.get(key)) if key in pin else "-"

    def pin_rel(r, v):
        pin = r.get("pin") or {}
        if "max_abs_err" not in pin:
            return "n/a"
        return f"{pin['max_abs_err'][v] / max(1.0, r['check']['max_abs_udot']):.1e}"

    table("Forward dynamics per call through Python [µs]",
          ["n", "centroid", "joint", "origin", "dense", "pin.aba", "best recursive / pin.aba",
           "overhead ours (centroid)"],
          [[r["n"]] + [_us(V(r, v, "fd_python_s")) for v in VARIANTS] +
           [pin_cell(r, "aba_python_s"), _r(r["ratios"].get("python best recursive/pin.aba")),
            _us(V(r, "centroid", "python_overhead_s"))]
           for r in rows],
          "Median over batches of a Python loop of `System.forward_dynamics(q, u)` and of "
          "`pinocchio.aba(model, data, q, v, tau)`; both include the Python call overhead "
          f"(pin.aba on a 1-link chain, i.e. roughly its overhead: {_us(doc.get('pin_overhead_s'))} µs; "
          "ours: overhead = Python - in-kernel). n/a: pinocchio skipped (memory, see notes).")

    table("Accuracy at the benchmark state (max |difference| / max(1, max|udot|))",
          ["n", "max abs udot", "cond(M)", "centroid vs pin", "joint vs pin", "origin vs pin", "dense vs pin",
           "joint vs centroid", "origin vs centroid", "dense vs centroid"],
          [[r["n"], f"{r['check']['max_abs_udot']:.3g}", f"{r['check']['cond_M']:.1e}"] +
           [pin_rel(r, v) for v in VARIANTS] +
           [f"{r['check'][v + '_vs_centroid_rel']:.1e}" for v in ("joint", "origin", "dense")] for r in rows],
          f"Checked before timing: the recursive variants must agree with pin.aba to {TOL:g} (relative as shown), "
          f"the dense one to max({TOL:g}, {DENSE_COND_FACTOR:g} eps cond(M)); the run aborts otherwise.")

    table("RK4 simulation, wall time per step [µs] (4 forward dynamics per step, dt = 1e-3)",
          ["n", "centroid", "joint", "origin", "dense", "steps (centroid)", "steps (dense)"],
          [[r["n"]] + [_us(V(r, v, "rk4_step_s")) for v in VARIANTS] +
           [V(r, "centroid", "rk4_steps"), V(r, "dense", "rk4_steps")] for r in rows],
          "`System.simulate(t_end, dt=1e-3, integrator='rk4')`: `meta['wall_time_s'] / meta['steps']`, "
          "median of the runs.")

    def nbytes(b):
        return "-" if b is None else f"{b:,}"

    c0 = rows[0]["build"][FRESH_VARIANT]["c_bytes"] if rows else None
    table("Generation and compilation (fresh build into an empty temporary cache)",
          ["n", "ref point", "generate [s]", "compile [s]", "C file [bytes]", "C growth vs first row [bytes]",
           "C file dense [bytes]", ".pyx [bytes]"],
          [[r["n"], FRESH_VARIANT, f"{r['build'][FRESH_VARIANT]['generate_s']:.2f}",
            f"{r['build'][FRESH_VARIANT]['compile_s']:.1f}", nbytes(r["build"][FRESH_VARIANT]["c_bytes"]),
            nbytes(r["build"][FRESH_VARIANT]["c_bytes"] - c0) if c0 is not None else "-",
            nbytes(r["build"]["dense"]["c_bytes"]), nbytes(r["build"][FRESH_VARIANT]["pyx_bytes"])] for r in rows],
          "generate = derive + render the .pyx (after a one-time warm-up render, see the JSON); compile = Cython + "
          "C compiler. The C file is the one next to the .so in the build folder.")
    return "\n".join(out)


def markdown(doc: dict) -> str:
    mi = doc["machine"]
    head = [
        "# Recursive forward dynamics benchmark (n-link planar chains)\n",
        f"- command: `{doc['command']}`",
        f"- date: {mi['date']}; wall time of the run: {doc.get('run_wall_s', 0) / 60:.1f} min",
        f"- machine: {mi['cpu']}, {mi['cores']} cores ({mi['cores_usable']} usable), {mi['mem_total_gb']} GB; "
        f"load average at start {', '.join(f'{x:.2f}' for x in mi['loadavg_start'])}"
        + (f", at end {', '.join(f'{x:.2f}' for x in doc['loadavg_end'])}" if doc.get("loadavg_end") else ""),
        f"- versions: python {mi['python']}, numpy {mi['numpy']}, Cython {mi['cython']}, "
        f"pinocchio {mi['pinocchio']}, mbgen {mi['mbgen']}; {mi['compiler']}",
        f"- settings: batches {doc['config']['repeats']}, ~{doc['config']['batch_time']} s per batch, "
        f"RK4 runs of ~{doc['config']['rk4_time']} s (median of {doc['config']['rk4_runs']})",
        f"- benchmark state: q = initial + N(0, 0.1), u = N(0, 1) (seed {doc['config']['seed']} + n); "
        f"checked against pin.aba to {TOL:g} x max(1, max|udot|) before timing",
        "",
    ]
    if doc.get("notes"):
        head += ["Notes:", ""] + [f"- {x}" for x in doc["notes"]] + [""]
    return "\n".join(head) + "\n" + tables(doc)


def write_outputs(doc: dict, out_dir: Path):
    out_dir.mkdir(parents=True, exist_ok=True)
    for name, text in (("recursive.json", json.dumps(doc, indent=1)), ("recursive.md", markdown(doc))):
        tmp = out_dir / f".{name}.tmp"
        tmp.write_text(text + ("\n" if not text.endswith("\n") else ""))
        os.replace(tmp, out_dir / name)


# ---------------------------------------------------------------------------------------------- main
def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", type=int, nargs="+", default=None,
                    help="chain lengths (default 7 20 50 100 200 500 1000; --quick: 7 20 50)")
    ap.add_argument("--repeats", type=int, default=None, help="timing batches, median reported (default 7; quick 3)")
    ap.add_argument("--quick", action="store_true", help="fast run: small sizes, short batches, one RK4 run")
    ap.add_argument("--cache-dir", default=None,
                    help="build cache for the non-fresh builds (default: codegen's default cache)")
    ap.add_argument("--out-dir", default=str(HERE / "results"), help="where recursive.json/.md go")
    ap.add_argument("--seed", type=int, default=12345)
    ap.add_argument("--no-pin", action="store_true", help="skip pinocchio")
    ap.add_argument("--pin-max-gb", type=float, default=10.0,
                    help="skip pin.aba when its Data would need more memory (~66 n^3 bytes; default 10)")
    args = ap.parse_args(argv)
    if args.sizes is None:
        args.sizes = [7, 20, 50] if args.quick else [7, 20, 50, 100, 200, 500, 1000]
    if args.repeats is None:
        args.repeats = 3 if args.quick else 7
    if args.repeats < 1 or any(n < 1 for n in args.sizes):
        ap.error("sizes and repeats must be positive")
    cfg = ({"batch_time": 0.01, "estimate_time": 0.005, "rk4_time": 0.1, "rk4_runs": 1, "rk4_max_steps": 20000}
           if args.quick else
           {"batch_time": 0.05, "estimate_time": 0.02, "rk4_time": 0.4, "rk4_runs": 3, "rk4_max_steps": 100000})

    t_run = time.perf_counter()
    machine = machine_info()
    cmd = "python " + " ".join([os.path.relpath(__file__, os.getcwd())] + (sys.argv[1:] if argv is None else argv))
    doc = {"command": cmd, "machine": machine, "config": {**cfg, "repeats": args.repeats, "seed": args.seed,
                                                          "sizes": args.sizes, "quick": args.quick,
                                                          "cache_dir": args.cache_dir, "tolerance": TOL},
           "rows": [], "notes": []}
    log(f"machine: {machine['cpu']}, {machine['cores']} cores; numpy {machine['numpy']}, Cython {machine['cython']}, "
        f"pinocchio {machine['pinocchio']}; {machine['date']}")

    # warm-up: the first render in a process pays for sympy imports and joint derivations; keep that
    # one-time cost out of the per-size generation times
    from codegen.compiler import generated_source
    t0 = time.perf_counter()
    generated_source(chain(1))
    doc["warmup_generate_s"] = time.perf_counter() - t0
    if not args.no_pin:
        try:
            import pinocchio as pin
            pm1 = pin_chain(1)
            pd1 = pm1.createData()
            z = np.zeros(1)
            f = lambda: pin.aba(pm1, pd1, z, z, z)  # noqa: E731
            doc["pin_overhead_s"] = interleaved({"pin": (python_batch(f), estimate(f))}, cfg["batch_time"],
                                                args.repeats)["pin"]["median"]
        except ImportError:
            args.no_pin = True
            doc["notes"].append("pinocchio not importable: no pin.aba column")

    out_dir = Path(args.out_dir)
    try:
        for n in args.sizes:
            t0 = time.perf_counter()
            log(f"n = {n}")
            doc["rows"].append(bench_size(n, args, cfg))
            r = doc["rows"][-1]
            log(f"  n={n:<5} in-kernel us: " + "  ".join(f"{v} {_us(r['variants'][v]['fd_kernel_s'])}" for v in VARIANTS)
                + f"  | origin/centroid {r['ratios']['origin/centroid']:.2f}  ({time.perf_counter() - t0:.0f} s)")
            skipped = [x["n"] for x in doc["rows"] if x.get("pin") and "skipped" in x["pin"]]
            doc["notes"] = [x for x in doc["notes"] if not x.startswith("pin.aba not run")]
            if skipped:
                doc["notes"].append(f"pin.aba not run for n = {', '.join(map(str, skipped))}: pinocchio's Data "
                                    f"allocates nv^3 second-order-derivative tensors (~66 n^3 bytes, 66 GB at "
                                    f"n = 1000); raise --pin-max-gb if the memory is there")
            doc["run_wall_s"] = time.perf_counter() - t_run
            write_outputs(doc, out_dir)
    except VerificationError as e:
        msg = f"VERIFICATION FAILED: {e}"
        print("\n" + "!" * len(msg) + "\n" + msg + "\n" + "!" * len(msg), file=sys.stderr, flush=True)
        doc["notes"].append(msg)
        write_outputs(doc, out_dir)
        return 2
    doc["loadavg_end"] = list(os.getloadavg())
    doc["run_wall_s"] = time.perf_counter() - t_run
    write_outputs(doc, out_dir)
    log("")
    log(tables(doc))
    log(f"wrote {out_dir / 'recursive.json'} and {out_dir / 'recursive.md'}  ({doc['run_wall_s'] / 60:.1f} min)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
