#!/usr/bin/env python
"""Every robot of the example-robot-data package, imported from its URDF and compiled, against pinocchio.

For each robot file, with a fixed base and with a free base (``floating_base=True``), this script

  * loads the URDF with ``codegen.load_model(mimic="refuse")`` (for a file with mimic joints it is loaded again with
    ``mimic='independent'``, pinocchio's default, and the table says so), its joint limits and ``<dynamics damping
    friction>`` left out as pinocchio's ABA has none (as tests/support/robots.py ``load``);
  * builds the recursive kernel (default reference point) in its own cache (``--cache-dir``, default a folder
    under the system's temporary folder: 130 entries would crowd the project cache);
  * compares forward dynamics at 20 random states (angles in [-pi, pi], prismatic displacements in [-0.3, 0.3]
    m, random free poses, normal velocities and joint forces) with pinocchio's ABA of a model built straight
    from the same file (``pin.buildModelFromUrdf``; ``pin.JointModelFreeFlyer()`` as the free base), in our
    coordinates (tests/support/robots.py: ``UrdfPeer``); the joints are matched by name and the coordinate
    order is checked to be pinocchio's;
  * lists robots that cannot be loaded with the reason (never skipped), and the SDF files of the package
    (not a format mbgen reads).

Writes docs/robots.md (the table) and benchmarks/results/robots.json (every row, also the partial runs: a
rerun skips the rows already there, but for errors, unless --fresh).

    python benchmarks/robots.py                # all robots, 2 worker processes (~40 min cold on 2 cores)
    python benchmarks/robots.py --only ur5_robot panda --jobs 1
"""
from __future__ import annotations

import argparse
import datetime as _dt
import json
import os
import platform
import sys
import tempfile
import time
import traceback
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))                 # run from a checkout without installing
sys.path.insert(0, str(ROOT / "tests"))       # tests/support/robots.py: the pinocchio peer, the robot files

STATES, TOL = 20, 1e-9
JSON = HERE / "results" / "robots.json"
DOC = ROOT / "docs" / "robots.md"


def check(name: str, path: str, floating: bool, cache_dir: str) -> dict:
    """One row half: load, build, compare. Never raises: failures are the row's status."""
    import codegen
    from codegen.model import ModelError
    from support.robots import UrdfPeer, random_states, rel_err
    row = {"robot": name, "file": os.path.relpath(path, _robots_dir()), "floating": floating}
    t0 = time.perf_counter()
    try:
        try:
            m = codegen.load_model(path, floating_base=floating, mimic="refuse")     # mimic joints: below
        except ModelError as e:
            if "mimics joint" not in str(e):
                raise
            m = codegen.load_model(path, floating_base=floating, mimic="independent")
            row["mimic"] = True
        for j in m.joints:             # as pinocchio's ABA sees the file (tests/support/robots.py load): no limits,
            j.limits = j.limit_solref = j.friction = None     # no <dynamics damping friction> (their import:
        m.springs = []                                        # tests/model/test_urdf.py)
        row.update(bodies=len(m.bodies), nq=m.nq, nv=m.nv, load_s=time.perf_counter() - t0)
        peer = UrdfPeer(path, floating, [(j.name, j.type) for j in m.joints])
        row["pinocchio_order"] = peer.same_order
        t1 = time.perf_counter()
        s = codegen.build(m, "recursive", cache_dir=cache_dir)
        row["build_s"] = time.perf_counter() - t1
        errs = []
        for q, u, tau in random_states(m, STATES, seed=20261123):
            a = np.asarray(s.forward_dynamics(q, u, tau))
            errs.append(rel_err(a, peer.aba(q, u, tau)) if np.all(np.isfinite(a)) else float("inf"))
        row["max_rel_err"] = max(errs)
        row["status"] = "ok" if row["max_rel_err"] <= TOL and peer.same_order else "FAILED"
    except ModelError as e:
        row["status"], row["reason"] = "refused", str(e).split(": ", 1)[-1]
    except Exception as e:                                # a bug: kept in the table, not hidden
        row["status"], row["reason"] = "error", f"{type(e).__name__}: {e}"
        row["traceback"] = traceback.format_exc()
    row["total_s"] = time.perf_counter() - t0
    return row


def _robots_dir():
    from support.robots import robots_dir
    return robots_dir()


def _key(row):
    return f"{row['robot']}|{row['floating']}"


def _err(row):
    if row is None:
        return "-"
    if row["status"] in ("refused", "error"):
        return "-"
    e = row["max_rel_err"]
    return f"{e:.1e}" if np.isfinite(e) else "not finite"


def _status(fixed, free):
    def one(r):
        if r["status"] == "refused":
            return f"refused: {r['reason']}"
        if r["status"] == "error":
            return f"error: {r['reason']}"
        if r["status"] == "FAILED":
            return f"FAILED (tolerance {TOL:g}{'' if r.get('pinocchio_order') else ', coordinate order differs'})"
        return "ok"
    a, b = one(fixed), one(free)
    parts = [a] if a == b else [f"fixed base {a}", f"floating base {b}"]
    if fixed.get("mimic") or free.get("mimic"):
        parts.append("mimic joints taken as independent joints (`mimic='independent'`, pinocchio's default)")
    text = "; ".join(parts)
    return text.replace("|", "\\|").replace("<", "&lt;").replace(">", "&gt;").replace("\n", " ")


def write_doc(rows: dict, files: dict, sdf: list, meta: dict):
    names = sorted(files)
    lines = [
        "# Robots of example-robot-data against pinocchio",
        "",
        "Generated by `python benchmarks/robots.py` (do not edit by hand). Every URDF file of the",
        f"[example-robot-data](https://pypi.org/project/example-robot-data/) package {meta['erd_version']} is "
        "loaded with `codegen.load_model` (fixed base, and `floating_base=True`), compiled (recursive kernel, "
        f"default reference point) and compared with pinocchio {meta['pin_version']}'s ABA of a model built from "
        f"the same file (`pin.buildModelFromUrdf`, `pin.JointModelFreeFlyer()` as the free base) at {STATES} random "
        "states: the largest relative error of the accelerations, max |ours - pinocchio| / max |pinocchio|, "
        f"tolerance {TOL:g}. The coordinates are pinocchio's, in its order (checked). bodies, nq and nv are "
        "those of the fixed-base model (fixed joints merged); the floating base adds one body, 7 and 6.",
        "",
        f"Run of {meta['date']} on {meta['machine']} (Python {meta['python']}): {meta['summary']}.",
        "",
        "| robot | file | bodies | nq | nv | fixed base: max rel err | floating base: max rel err | status |",
        "|---|---|---:|---:|---:|---:|---:|---|",
    ]
    for n in names:
        fixed, free = rows.get(f"{n}|False"), rows.get(f"{n}|True")
        if fixed is None or free is None:
            missing = " and ".join(b for b, r in (("fixed", fixed), ("floating", free)) if r is None)
            lines.append(f"| {n} | `{os.path.relpath(files[n], _robots_dir())}` | - | - | - | {_err(fixed)} | "
                         f"{_err(free)} | {missing} base not checked in this run (interrupted: rerun "
                         "`python benchmarks/robots.py` to resume) |")
            continue
        ref = fixed if fixed.get("bodies") is not None else free
        size = (["-"] * 3 if ref.get("bodies") is None else
                [str(ref["bodies"] - (ref is free)), str(ref["nq"] - 7 * (ref is free)), str(ref["nv"] - 6 * (ref is free))])
        lines.append(f"| {n} | `{fixed['file']}` | {' | '.join(size)} | {_err(fixed)} | {_err(free)} | "
                     f"{_status(fixed, free)} |")
    for f in sdf:
        lines.append(f"| {Path(f).stem} | `{f}` | - | - | - | - | - | SDF file: not read (mbgen reads URDF and MJCF) |")
    lines += ["", "Refusals are the model checks at work: a mass matrix that is singular (a joint whose subtree has "
              "no inertia along its motion; pinocchio's ABA returns NaN there), an inertia that is not positive "
              "semi-definite or breaks the triangle inequality beyond the tolerance, a file that is not a valid "
              "URDF.", ""]
    DOC.write_text("\n".join(lines))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--jobs", type=int, default=2, help="worker processes (2)")
    ap.add_argument("--cache-dir", default=os.path.join(tempfile.gettempdir(), "mbgen_robots_cache"),
                    help="build cache of the robot kernels (default: a folder in the temporary folder)")
    ap.add_argument("--only", nargs="*", help="robot names (file stems) to run")
    ap.add_argument("--fresh", action="store_true", help="ignore the rows of an earlier run")
    ap.add_argument("--doc-only", action="store_true", help="rewrite docs/robots.md from the rows of the last run")
    args = ap.parse_args(argv)
    import importlib.metadata

    import pinocchio as pin
    from support.robots import robot_files
    files = robot_files()
    sdf = sorted(os.path.relpath(p, _robots_dir()) for p in robot_files((".sdf",)).values())
    if args.only:
        files = {k: v for k, v in files.items() if k in args.only}
    rows = {} if args.fresh or not JSON.exists() else json.loads(JSON.read_text())["rows"]
    rows = {k: r for k, r in rows.items() if r["status"] != "error"}          # errors (a bug, a broken tree): again
    todo = [(n, p, fb) for n, p in files.items() for fb in (False, True) if f"{n}|{fb}" not in rows]
    if args.doc_only:
        todo = []
    meta = {"date": _dt.date.today().isoformat(), "machine": f"{os.cpu_count()}-core {platform.machine()}",
            "python": platform.python_version(), "pin_version": pin.__version__,
            "erd_version": importlib.metadata.version("example-robot-data")}
    print(f"{len(files)} robot files, {len(todo)} checks to run ({args.jobs} processes, cache {args.cache_dir})")

    def save():
        JSON.parent.mkdir(parents=True, exist_ok=True)
        JSON.write_text(json.dumps({"meta": meta, "rows": rows}, indent=1, default=float))

    t0 = time.perf_counter()
    with ProcessPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        futures = {pool.submit(check, n, p, fb, args.cache_dir): (n, fb) for n, p, fb in todo}
        for k, fut in enumerate(as_completed(futures), 1):
            row = fut.result()
            rows[_key(row)] = row
            save()
            print(f"[{k}/{len(todo)}] {row['robot']:<32} {'floating' if row['floating'] else 'fixed':<8} "
                  f"{row['status']:<8} {_err(row):>10} {row.get('reason', '')[:90]} ({row['total_s']:.0f} s)",
                  flush=True)
    selected = {k: r for k, r in rows.items() if r["robot"] in files}
    n_ok = sum(1 for n in files if all(selected.get(f"{n}|{fb}", {}).get("status") == "ok" for fb in (False, True)))
    checked = [r for r in selected.values() if "max_rel_err" in r]
    worst = max((r["max_rel_err"] for r in checked), default=float("nan"))
    meta["summary"] = (f"{len(files)} URDF files; {n_ok} pass with both bases; {len(checked)} of {2 * len(files)} "
                       f"robot/base pairs compiled and checked, largest relative error {worst:.1e}")
    save()
    write_doc(selected, files, sdf if not args.only else [], meta)
    print(f"{meta['summary']} ({time.perf_counter() - t0:.0f} s)\nwrote {DOC} and {JSON}")
    failed = [k for k, r in selected.items() if r["status"] in ("FAILED", "error")]
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
