#!/usr/bin/env python
"""Closed-loop scaling: forward dynamics per call, 1 s of RK4 and build time against the number of loops k.

Models (codegen.models): ``ladder(k)`` (k rectangular loops sharing rails and rungs, 3k + 2 bodies, k + 2
degrees of freedom) and ``loop_chain(k)`` (k four-bars in series coupled through bodies only, 3k bodies, k
degrees of freedom), k in the geometric sequence 1, 2, 5, 10, 20, 50, 100, 200, 500, 1000 up to ``--kmax``.
Algorithms (``--algorithms``, default ``recursive,grcr``): ``recursive`` is the cut-joint method (Kang & Yoon
eqs 37-46, analysis reference point the origin); an algorithm that is not registered, or that refuses a model
(codegen.BuildError), is skipped with the line ``<alg>: not available for <model>: <message>``.

For every (model, k) and algorithm:

  * build: generation + compilation in a child process (so that ``--build-timeout`` can stop it; default 600 s)
    into a fresh temporary cache (or ``--cache-dir``; a build found there is reported as cached, not timed):
    wall time, CPU time of the child and its compiler processes, and the generate / compile split of
    ``System.build_info``. A k whose build runs out of time is skipped, and so are the larger k of that
    algorithm and model (noted in the results);
  * forward dynamics per call in compiled code (``System.kernel.time_forward_dynamics``: a C loop of calls,
    ~``--fd-batch`` s per batch), CPU time of the calling thread, at the state reached by a short warm-up run;
  * 1 s of RK4 (h = 1 ms, the models' ``simulation`` default; Baumgarte alpha = beta = 0.1 / h as ``simulate``
    sets it) from the model's initial state, in compiled code (``System.kernel.run_rk4``). When 1 s would cost
    more than ``--rk4-budget`` seconds (estimated from 4 forward-dynamics calls per step), only the first steps
    that fit are timed and the 1 s figure is extrapolated from the time per step (marked in the results).

Algorithms are interleaved round by round (order rotated); medians over ``--rounds`` rounds. Growth exponents:
least-squares slopes of log(time) against log(k), over all k and over k >= 10. Writes
benchmarks/results/<out-name>.md, .json (machine load, commit, every round) and .png (log-log plots of forward
dynamics per call, 1 s of RK4 and build time against k).

    python benchmarks/bench_grcr.py                                    # everything up to k = 1000
    python benchmarks/bench_grcr.py --kmax 200 --algorithms recursive --stop-after 1800
    python benchmarks/bench_grcr.py --models ladder --kmax 20 --rounds 3 --out-name grcr_quick
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(HERE))

import codegen  # noqa: E402
from codegen.algorithms import BuildError, family  # noqa: E402
from bench_loops import git_commit, stats  # noqa: E402
from bench_recursive import machine_info  # noqa: E402

K_SEQUENCE = (1, 2, 5, 10, 20, 50, 100, 200, 500, 1000)
# forward dynamics of the algorithms must agree to this (relative) before anything is timed, else the run stops;
# the agreement itself is recorded per k (fd_agreement_with_grcr): both methods lose digits as the ladder grows
# (inertias about the world origin grow as k^3), grcr more: against the KKT oracle at k = 50 / 100 grcr is off by
# 2.7e-9 / 3.3e-8 and the cut-joint method by 1.7e-10 / 4.4e-9; between them 3.3e-5 at k = 500 and 2.4e-3 at
# k = 1000 (ladder), so the gross-error guard is 1e-2
AGREE_TOL = 1e-2
MODELS = ("ladder", "loop_chain")
OPTIONS = {"recursive": {"ref_point": "origin"}}        # build options per algorithm (others: their defaults)
H = 1e-3                                                 # RK4 step [s]
T_SIM = 1.0                                              # simulated time [s]
TAIL_K = 10                                              # the tail fit uses k >= TAIL_K


def log(*a):
    print(*a, flush=True)


def make_model(name: str, k: int):
    return getattr(codegen.models, name)(k)


# ---------------------------------------------------------------------------------------------- building
CHILD = r"""
import json, sys, time
sys.path.insert(0, {root!r})
import codegen
model = getattr(codegen.models, {model!r})({k})
t0 = time.perf_counter()
try:
    s = codegen.build(model, {alg!r}, cache_dir={cache!r}, **{opts!r})
except codegen.BuildError as e:
    print(json.dumps({{"error": str(e)}}))
    sys.exit(0)
info = {{x: s.build_info[x] for x in ("key", "hit", "generate_s", "compile_s")}}
info["build_s"] = time.perf_counter() - t0
print(json.dumps(info))
"""


def build_in_child(model: str, k: int, alg: str, cache: str, timeout: float) -> dict:
    """Build in a child process (its own process group, killed as a whole on timeout). Returns the child's
    build_info plus wall and CPU seconds, or {"error": message} / {"timeout": seconds}."""
    code = CHILD.format(root=str(ROOT), model=model, k=k, alg=alg, cache=cache, opts=OPTIONS.get(alg, {}))
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    w0 = time.perf_counter()
    p = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         start_new_session=True, cwd=str(ROOT))
    try:
        out, err = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)                 # the child and its compiler processes, nothing else
        p.communicate()
        return {"timeout": timeout, "wall_s": time.perf_counter() - w0}
    wall = time.perf_counter() - w0
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    lines = [x for x in out.splitlines() if x.startswith("{")]
    if p.returncode != 0 or not lines:
        return {"error": f"build process failed (exit {p.returncode}): {err.strip()[-600:]}"}
    info = json.loads(lines[-1])
    info["wall_s"] = wall
    info["cpu_s"] = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
    return info


# ---------------------------------------------------------------------------------------------- timing
def timed_fd(s, q, u, reps) -> float:
    c0 = time.thread_time()
    s.kernel.time_forward_dynamics(q, u, reps)
    return (time.thread_time() - c0) / reps


def timed_rk4(s, x0, steps) -> float:
    """CPU seconds of `steps` RK4 steps from x0 (compiled loop)."""
    x = x0.copy()
    if s.grcr:                                       # every run from the same partition (a run re-selects it)
        s.kernel.select_dependents(x[:s.nq])
    c0 = time.thread_time()
    s.kernel.run_rk4(0.0, x, H, 1, steps)
    dt = time.thread_time() - c0
    if s.kernel.fail_code:
        raise RuntimeError(f"RK4 failed (fail_code {s.kernel.fail_code}) at t = {s.kernel.fail_t}")
    return dt


def fit_slope(ks, ts, kmin=1):
    pts = [(k, t) for k, t in zip(ks, ts) if k >= kmin and t and t > 0]
    if len(pts) < 2:
        return None
    x, y = np.log([p[0] for p in pts]), np.log([p[1] for p in pts])
    return float(np.polyfit(x, y, 1)[0])


def bench_k(model_name: str, k: int, algs: list, cache: str, args, skipped: dict, notes: list) -> dict:
    """Build, check and time every available algorithm on model_name(k); one row per algorithm."""
    model = make_model(model_name, k)
    rows, systems = {}, {}
    for alg in algs:
        if (alg, model_name) in skipped:
            continue
        try:
            family(alg, model)                       # registered, and takes this kind of model?
            info = None
        except BuildError as e:
            info = {"error": str(e)}
        info = info or build_in_child(model_name, k, alg, cache, args.build_timeout)
        if "error" in info:
            msg = info["error"].splitlines()[0]
            log(f"{alg}: not available for {model_name}: {msg}")
            skipped[(alg, model_name)] = f"not available: {msg}"
            notes.append(f"{alg}: not available for {model_name} (k = {k}): {msg}")
            continue
        if "timeout" in info:
            msg = (f"{alg} on {model_name}({k}): build exceeded --build-timeout {args.build_timeout:g} s; this k and "
                   "the larger ones skipped")
            log("  " + msg)
            skipped[(alg, model_name)] = msg
            notes.append(msg)
            continue
        s = codegen.build(model, alg, cache_dir=cache, **OPTIONS.get(alg, {}))      # from the cache
        systems[alg] = s
        rows[alg] = {"model": model_name, "k": k, "algorithm": alg, "options": OPTIONS.get(alg, {}),
                     "nq": model.nq, "nv": model.nv, "bodies": len(model.bodies), "cuts": len(model.cuts),
                     "dof": model.nv - 2 * len(model.cuts),
                     "build": {x: info.get(x) for x in ("key", "hit", "generate_s", "compile_s", "build_s", "wall_s",
                                                        "cpu_s")}}
        b = rows[alg]["build"]
        log(f"  {model_name}({k}) {alg}: built in {b['wall_s']:.1f} s wall"
            + (" (cache hit: not a build time)" if b["hit"] else
               f", {b['cpu_s']:.1f} s CPU (generate {b['generate_s']:.1f} s, compile {b['compile_s']:.1f} s)"))
    if not systems:
        return rows
    x0s = {alg: np.concatenate(s.initial_state()) for alg, s in systems.items()}   # grcr: the cut coordinates too
    b = 0.1 / H
    steps_1s = int(round(T_SIM / H))
    # warm-up, checks, the state for forward dynamics, the RK4 plan
    ref_alg = next(iter(systems))
    fd_state, fd_at = {}, {}
    for alg, s in list(systems.items()):
        if hasattr(s.kernel, "alpha"):               # cut joints: Baumgarte as simulate sets it (grcr: projection)
            s.kernel.alpha = s.kernel.beta = b
        x0 = x0s[alg]
        q0, u0 = x0[:s.nq].copy(), x0[s.nq:].copy()
        c0 = time.thread_time()
        s.kernel.time_forward_dynamics(q0, u0, 1)
        fd_guess = max(time.thread_time() - c0, 1e-7)
        warm = int(min(100, max(1, args.rk4_budget / 10 / (4 * fd_guess))))
        x = x0.copy()
        s.kernel.run_rk4(0.0, x, H, 1, warm)
        if s.kernel.fail_code or not np.all(np.isfinite(x)):
            msg = (f"{alg} on {model_name}({k}): the warm-up RK4 run ({warm} steps) diverged (fail_code "
                   f"{s.kernel.fail_code} at t = {s.kernel.fail_t:g} s); this k and the larger ones skipped")
            log("  " + msg)
            skipped[(alg, model_name)] = msg
            notes.append(msg)
            del systems[alg], rows[alg]
            continue
        q, u = x[:s.nq].copy(), x[s.nq:].copy()
        fd_state[alg], fd_at[alg] = (q, u), warm * H
        reps = max(1, int(args.fd_batch / fd_guess))
        fd = timed_fd(s, q, u, reps)
        reps = max(1, int(args.fd_batch / max(fd, 1e-9)))
        steps = steps_1s if 4 * fd * steps_1s <= args.rk4_budget else max(1, int(args.rk4_budget / (4 * fd)))
        rk_reps = max(1, int(args.fd_batch / (4 * fd * steps)))      # short runs repeated to ~fd_batch s
        r = rows[alg]
        resid = (lambda q, u: s.kernel.closure_errors(q, u)) if s.grcr else s.kernel.loop_residual
        r.update(fd_reps=reps, rk4_steps_timed=steps, rk4_runs_per_round=rk_reps, rk4_h=H,
                 baumgarte=None if s.grcr else b, fd_state_t=warm * H,
                 closure_at_q0=float(np.abs(resid(q0, u0)).max()) if model.cuts else 0.0,
                 drift_after_warmup=np.abs(resid(q, u)).max(axis=0).tolist() if model.cuts else [])
    if not systems:
        return rows
    ref_alg = next(iter(systems))
    # algorithms agree at one state: grcr's (tree coordinates, then the cut coordinates) when it runs
    ref_alg = "grcr" if "grcr" in systems else ref_alg
    qr, ur = fd_state[ref_alg]
    nq, nv = model.nq, model.nv
    ud_ref = systems[ref_alg].forward_dynamics(qr, ur)[:nv]
    for alg, s in systems.items():
        ud = s.forward_dynamics(qr, ur) if s.nq == len(qr) else s.forward_dynamics(qr[:nq], ur[:nv])
        e = float(np.abs(ud[:nv] - ud_ref).max() / max(np.abs(ud_ref).max(), 1e-300))
        rows[alg]["fd_agreement_with_" + ref_alg] = e
        if e > AGREE_TOL:
            raise RuntimeError(f"VERIFICATION FAILED: {model_name}({k}): {alg} and {ref_alg} differ by {e:.2e}")
    fd_t = {a: [] for a in systems}
    rk_t = {a: [] for a in systems}
    load = []
    order = list(systems)
    for rnd in range(args.rounds):
        this = order[rnd % len(order):] + order[:rnd % len(order)]
        for alg in this:
            q, u = fd_state[alg]
            fd_t[alg].append(timed_fd(systems[alg], q, u, rows[alg]["fd_reps"]))
        for alg in this:
            n, reps = rows[alg]["rk4_steps_timed"], rows[alg]["rk4_runs_per_round"]
            rk_t[alg].append(sum(timed_rk4(systems[alg], x0s[alg], n) for _ in range(reps)) / (n * reps))
        load.append(os.getloadavg()[0])
        log(f"  {model_name}({k}) round {rnd + 1}/{args.rounds}: "
            + "; ".join(f"{a} fd {fd_t[a][-1] * 1e6:.2f} µs, rk4 {rk_t[a][-1] * 1e6:.1f} µs/step" for a in this)
            + f" (load {load[-1]:.2f})")
    for alg in systems:
        r = rows[alg]
        r["fd_cpu_per_call"] = stats(fd_t[alg])
        r["rk4_cpu_per_step"] = stats(rk_t[alg])
        r["rk4_cpu_1s"] = r["rk4_cpu_per_step"]["median"] * steps_1s
        r["rk4_1s_extrapolated"] = r["rk4_steps_timed"] < steps_1s
        r["rk4_step_over_4fd"] = r["rk4_cpu_per_step"]["median"] / (4 * r["fd_cpu_per_call"]["median"])
        r["loadavg_per_round"] = load
    return rows


# ---------------------------------------------------------------------------------------------- report
def slopes(doc) -> dict:
    out = {}
    for key in {(r["algorithm"], r["model"]) for r in doc["rows"]}:
        rs = sorted((r for r in doc["rows"] if (r["algorithm"], r["model"]) == key), key=lambda r: r["k"])
        ks = [r["k"] for r in rs]
        fd = [r["fd_cpu_per_call"]["median"] for r in rs]
        rk = [r["rk4_cpu_per_step"]["median"] for r in rs]
        bw = [None if r["build"]["hit"] else r["build"]["wall_s"] for r in rs]
        out[f"{key[0]}/{key[1]}"] = {
            "k": ks, "fd_all": fit_slope(ks, fd), "fd_tail": fit_slope(ks, fd, TAIL_K),
            "rk4_all": fit_slope(ks, rk), "rk4_tail": fit_slope(ks, rk, TAIL_K),
            "build_all": fit_slope(ks, bw), "build_tail": fit_slope(ks, bw, TAIL_K),
            "fd_local": [fit_slope(ks[i:i + 2], fd[i:i + 2]) for i in range(len(ks) - 1)]}
    return out


def _s(x):
    return "-" if x is None else f"{x:.2f}"


def _t(x):
    """seconds, readable"""
    if x is None:
        return "-"
    if x < 1e-3:
        return f"{x * 1e6:.2f} µs"
    if x < 1:
        return f"{x * 1e3:.2f} ms"
    return f"{x:.2f} s"


def markdown(doc) -> str:
    mi, cfg = doc["machine"], doc["config"]
    loads = [x for r in doc["rows"] for x in r["loadavg_per_round"]]
    le = doc.get("loadavg_end")
    ks_run = sorted({r["k"] for r in doc["rows"]})
    L = ["# Closed-loop scaling: forward dynamics, 1 s of RK4 and build time against the number of loops k", "",
         f"- command: `{doc['command']}`",
         f"- commit: {doc['git']['commit']}" + (f" (working tree: {', '.join(doc['git']['tracked_files_modified'])} "
                                                "modified)" if doc["git"]["tracked_files_modified"] else ""),
         f"- date: {mi['date']}; machine: {mi['cpu']}, {mi['cores']} cores (shared); load average (1, 5, 15 min) "
         f"at start {', '.join(f'{x:.2f}' for x in mi['loadavg_start'])}"
         + (f", at end {', '.join(f'{x:.2f}' for x in le)}" if le else "")
         + (f"; 1-min load after the rounds: {min(loads):.2f} .. {max(loads):.2f}" if loads else ""),
         f"- versions: python {mi['python']}, numpy {mi['numpy']}, Cython {mi['cython']}, mbgen {mi['mbgen']}; "
         f"{mi['compiler']}",
         f"- models: {', '.join(cfg['models'])}; algorithms asked: {', '.join(cfg['algorithms'])} "
         f"(recursive: cut joints, ref_point origin); k run: {', '.join(map(str, ks_run)) or 'none'} "
         f"(asked: up to {cfg['kmax']})",
         f"- forward dynamics: `System.kernel.time_forward_dynamics` (C loop, ~{cfg['fd_batch']:g} s per batch) at the "
         f"state after a short warm-up run; RK4: h = {H * 1e3:g} ms, {T_SIM:g} s = {int(T_SIM / H)} steps from the "
         "initial state, `System.kernel.run_rk4`, Baumgarte 0.1 / h; when 1 s would cost more than "
         f"{cfg['rk4_budget']:g} s only the steps that fit are timed and the 1 s time is extrapolated (marked *)",
         f"- {cfg['rounds']} rounds, algorithms interleaved in every round; medians of CPU time of the calling thread "
         "(`time.thread_time`); build: wall and CPU (child + compiler) of generation + compilation into a fresh "
         f"cache (build timeout {cfg['build_timeout']:g} s)", ""]
    if doc["notes"]:
        L += ["Notes:", ""] + [f"- {n}" for n in doc["notes"]] + [""]
    head = ["model", "k", "bodies", "nv", "DOF", "algorithm", "fd per call", "min..max", "RK4 per step",
            "1 s of RK4", "step / (4 fd)", "build wall", "build CPU", "generate + compile"]
    L += ["| " + " | ".join(head) + " |", "|" + "|".join([":--", "--:", "--:", "--:", "--:", ":--"]
                                                       + ["--:"] * (len(head) - 6)) + "|"]
    for r in sorted(doc["rows"], key=lambda r: (r["model"], r["k"], r["algorithm"])):
        fd, rk, b = r["fd_cpu_per_call"], r["rk4_cpu_per_step"], r["build"]
        L.append("| " + " | ".join([
            r["model"], str(r["k"]), str(r["bodies"]), str(r["nv"]), str(r["dof"]), r["algorithm"],
            _t(fd["median"]), f"{_t(fd['min'])}..{_t(fd['max'])}", _t(rk["median"]),
            _t(r["rk4_cpu_1s"]) + (f" * ({r['rk4_steps_timed']} steps)" if r["rk4_1s_extrapolated"] else ""),
            f"{r['rk4_step_over_4fd']:.2f}",
            "cached" if b["hit"] else _t(b["wall_s"]), "-" if b["hit"] else _t(b["cpu_s"]),
            "-" if b["hit"] else f"{_t(b['generate_s'])} + {_t(b['compile_s'])}"]) + " |")
    L += ["", "## Growth exponents (slope of log time against log k)", "",
          f"| algorithm / model | k | fd, all k | fd, k >= {TAIL_K} | fd, between neighbouring k | RK4 step, all k | "
          f"RK4 step, k >= {TAIL_K} | build wall, all k | build wall, k >= {TAIL_K} |",
          "|:--|:--|--:|--:|:--|--:|--:|--:|--:|"]
    for key, s in sorted(doc["slopes"].items()):
        L.append(f"| {key} | {', '.join(map(str, s['k']))} | {_s(s['fd_all'])} | {_s(s['fd_tail'])} | "
                 f"{', '.join(_s(x) for x in s['fd_local'])} | {_s(s['rk4_all'])} | {_s(s['rk4_tail'])} | "
                 f"{_s(s['build_all'])} | {_s(s['build_tail'])} |")
    L += ["", f"Plot: `{doc['plot']}` (log-log, against k: time per forward-dynamics call, 1 s of RK4, build time)."
          if doc.get("plot") else "", ""]
    if doc.get("discussion"):
        L += ["## Reading", ""] + doc["discussion"] + [""]
    return "\n".join(L)


def plot(doc, path: Path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, (a1, a3, a2) = plt.subplots(1, 3, figsize=(15, 4.6))
    keys = sorted({(r["algorithm"], r["model"]) for r in doc["rows"]})
    marked = False
    for alg, model in keys:
        rs = sorted((r for r in doc["rows"] if (r["algorithm"], r["model"]) == (alg, model)), key=lambda r: r["k"])
        ks = [r["k"] for r in rs]
        sl = doc["slopes"].get(f"{alg}/{model}", {})
        lab = f"{alg}, {model}" + (f" (slope {sl['fd_tail']:.2f} for k >= {TAIL_K})" if sl.get("fd_tail") else "")
        a1.loglog(ks, [r["fd_cpu_per_call"]["median"] for r in rs], "o-", label=lab)
        a3.loglog(ks, [r["rk4_cpu_1s"] for r in rs], "o-", label=f"{alg}, {model}")
        ext = [(r["k"], r["rk4_cpu_1s"]) for r in rs if r["rk4_1s_extrapolated"]]
        if ext:
            a3.loglog(*zip(*ext), "kx", ms=9, label=None if marked else "extrapolated from fewer steps")
            marked = True
        bk = [(r["k"], r["build"]["wall_s"]) for r in rs if not r["build"]["hit"]]
        if bk:
            a2.loglog(*zip(*bk), "s-", label=f"{alg}, {model}")
    for a, t, y in ((a1, "forward dynamics per call (CPU, compiled loop)", "s per call"),
                    (a3, f"{T_SIM:g} s of RK4, h = {H * 1e3:g} ms (CPU)", "s"),
                    (a2, "build: generation + compilation (wall)", "s")):
        a.set_xlabel("k (closed loops)")
        a.set_ylabel(y)
        a.set_title(t, fontsize=10)
        a.grid(True, which="both", alpha=0.3)
        if a.lines:
            a.legend(fontsize=8)
    fig.suptitle(f"closed-loop scaling ({doc['git']['commit']}, {doc['machine']['date']})", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def write(doc, out: Path, name: str, with_plot=True):
    doc["slopes"] = slopes(doc)
    doc["loadavg_end"] = list(os.getloadavg())
    if with_plot and doc["rows"]:
        png = out / f"{name}.png"
        plot(doc, png)
        doc["plot"] = os.path.relpath(png, ROOT)
    (out / f"{name}.json").write_text(json.dumps(doc, indent=1))
    (out / f"{name}.md").write_text(markdown(doc))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--kmax", type=int, default=1000, help="largest k of 1, 2, 5, 10, ..., 1000 (default 1000)")
    ap.add_argument("--models", default=",".join(MODELS), help=f"comma-separated, of {', '.join(MODELS)}")
    ap.add_argument("--algorithms", default="recursive,grcr", help="comma-separated (default recursive,grcr)")
    ap.add_argument("--rounds", type=int, default=5, help="interleaved rounds; medians over them (default 5)")
    ap.add_argument("--fd-batch", type=float, default=0.2, help="seconds per forward-dynamics batch (default 0.2)")
    ap.add_argument("--rk4-budget", type=float, default=20.0,
                    help="seconds one timed RK4 run may take; above, fewer steps are timed (default 20)")
    ap.add_argument("--build-timeout", type=float, default=600.0,
                    help="seconds a build may take; k values whose build exceeds it are skipped (default 600)")
    ap.add_argument("--stop-after", type=float, default=None,
                    help="start no new k after this many seconds (a note says which k were left out)")
    ap.add_argument("--cache-dir", default=None,
                    help="build cache (default: a fresh temporary one, removed at the end, so builds are timed)")
    ap.add_argument("--out-dir", default=str(HERE / "results"))
    ap.add_argument("--out-name", default="grcr")
    ap.add_argument("--skip", default="", metavar="ALG:MODEL:K,...",
                    help="start these (algorithm, model) pairs as skipped from k = K on, with a note (e.g. builds that "
                         "an earlier run found over --build-timeout)")
    args = ap.parse_args(argv)
    models = [m.strip() for m in args.models.split(",") if m.strip()]
    algs = [a.strip() for a in args.algorithms.split(",") if a.strip()]
    bad = [m for m in models if m not in MODELS]
    if bad or not models or not algs or args.rounds < 1:
        ap.error(f"--models from {', '.join(MODELS)}; at least one algorithm; --rounds >= 1")
    ks = [k for k in K_SEQUENCE if k <= args.kmax]
    cache = args.cache_dir or tempfile.mkdtemp(prefix="mbgen_grcr_")
    doc = {"command": "python " + " ".join([os.path.relpath(__file__, os.getcwd())]
                                           + (sys.argv[1:] if argv is None else list(argv))),
           "machine": machine_info(), "git": git_commit(),
           "config": {"kmax": args.kmax, "k_sequence": ks, "models": models, "algorithms": algs,
                      "rounds": args.rounds, "fd_batch": args.fd_batch, "rk4_budget": args.rk4_budget,
                      "build_timeout": args.build_timeout, "stop_after": args.stop_after, "h": H, "t_sim": T_SIM,
                      "cache": "fresh temporary" if not args.cache_dir else args.cache_dir},
           "rows": [], "notes": []}
    out = Path(args.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    skipped = {}
    start = time.perf_counter()
    try:
        for i, k in enumerate(ks):
            if args.stop_after is not None and time.perf_counter() - start > args.stop_after:
                note = (f"stopped after {time.perf_counter() - start:.0f} s (--stop-after {args.stop_after:g}): "
                        f"k = {', '.join(map(str, ks[i:]))} not run")
                log(note)
                doc["notes"].append(note)
                break
            for model in models:
                log(f"{model}({k}):")
                rows = bench_k(model, k, algs, cache, args, skipped, doc["notes"])
                doc["rows"].extend(rows.values())
                write(doc, out, args.out_name)
    finally:
        if not args.cache_dir:
            shutil.rmtree(cache, ignore_errors=True)
    write(doc, out, args.out_name)
    log("")
    for key, s in sorted(doc["slopes"].items()):
        log(f"growth exponent {key}: forward dynamics {_s(s['fd_all'])} (all k), {_s(s['fd_tail'])} (k >= {TAIL_K}); "
            f"RK4 step {_s(s['rk4_all'])} / {_s(s['rk4_tail'])}; build {_s(s['build_all'])} / {_s(s['build_tail'])}")
    log(f"written: {out / (args.out_name + '.md')}, .json, .png")
    return 0


if __name__ == "__main__":
    sys.exit(main())
