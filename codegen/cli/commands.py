"""mbgen check | build (register), source (register_source), cache (register_cache)."""
from __future__ import annotations

import os
import sys
import time

from .common import CACHE_HELP, Formatter, add_model_args, build_options, load_spec


def register(sub):
    """Register the commands ``check`` and ``build``."""
    s = sub.add_parser("check", help="validate a model file and print its tree", formatter_class=Formatter)
    add_model_args(s, build=False)
    s.set_defaults(fn=cmd_check)
    s = sub.add_parser("build", help="generate and compile the kernels (cached)", formatter_class=Formatter)
    add_model_args(s)
    s.add_argument("--quiet", action="store_true", help="no progress bar")
    s.set_defaults(fn=cmd_build)


def register_source(sub):
    """Register the command ``source``."""
    s = sub.add_parser("source", help="print the generated Cython for a model", formatter_class=Formatter,
                       description="The Cython module that 'mbgen build' compiles (roadmap header, then the\n"
                                   "kernels); nothing is compiled. Flexible-beam models: the rancf module, which\n"
                                   "holds the O(n) recursion and the dense reference, whatever --algorithm.")
    add_model_args(s, cache=False)
    s.add_argument("--out", default=None, help="write the source to this file (default: standard output)")
    s.set_defaults(fn=cmd_source)


def register_cache(sub):
    """Register the command ``cache``."""
    s = sub.add_parser("cache", help="show ('info') or empty ('clean') the build cache", formatter_class=Formatter)
    cache_sub = s.add_subparsers(dest="action", required=True, metavar="{info,clean}")
    for action, text in (("info", "folder, entries (key, size, age, model), total size"),
                         ("clean", "remove entries and left-over temporary folders (each under its lock)")):
        c = cache_sub.add_parser(action, help=text, description=text, formatter_class=Formatter)
        c.add_argument("--cache-dir", default=None, help=CACHE_HELP)
        if action == "clean":
            c.add_argument("--older-than", type=float, default=None, metavar="DAYS",
                           help="only entries built more than DAYS days ago (default: all)")
    s.set_defaults(fn=cmd_cache)


def cmd_check(args):
    """Run ``mbgen check``."""
    m = load_spec(args.model, args)
    cuts = getattr(m, "cuts", None)
    if cuts:                                       # the closure of the initial state needs the kinematics: build
        from ..runtime import build
        s = build(m, "recursive", progress=False)
        print(f"{m.source}: ok - {len(m.bodies)} bodies, {len(m.joints)} joints, {len(cuts)} cut joint(s) with "
              f"{s.plan.nm} constraint rows, nq = {m.nq}, nv = {m.nv}, {m.nv - s.plan.nm} degrees of freedom; the "
              "loops close at the initial state")
        rows = s.plan.roadmap()
    else:
        from ..algorithms.tree_plan import Plan
        print(f"{m.source}: ok - {len(m.bodies)} bodies, {len(m.joints)} joints, nq = {m.nq}, nv = {m.nv}")
        rows = m.roadmap() if hasattr(m, "roadmap") else Plan(m).roadmap()    # beam models plan themselves
    for row in rows:
        print("  " + row)
    for line in physics_summary(m):
        print("  " + line)


def physics_summary(m) -> list:
    """What the model carries beyond bodies and joints (robot physics), one line each; [] for beam models."""
    if not hasattr(m, "joints") or hasattr(m, "beams"):
        return []
    out = []
    arm = [j.name for j in m.joints if getattr(j, "armature", None) is not None]
    lim = [j.name for j in m.joints if getattr(j, "limits", None) is not None]
    fri = [j.name for j in m.joints if getattr(j, "friction", None) is not None]
    for what, names in (("armature", arm), ("limits", lim), ("Coulomb friction", fri)):
        if names:
            out.append(f"{what} on {len(names)} joint(s): {', '.join(names)}")
    for t in getattr(m, "tendons", []):
        out.append(f"tendon {t.name}: L = " + " + ".join(f"{tj.coef:g} {tj.joint}" for tj in t.joints)
                   + (f", limits {t.limits.tolist()}" if t.limits is not None else ""))
    frames = getattr(m, "frames", None) or {}
    if frames:
        out.append(f"{len(frames)} frame(s): " + ", ".join(f"{n} on {on}" for n, (on, _, _) in list(frames.items())[:12])
                   + (" ..." if len(frames) > 12 else ""))
    for k, a in enumerate(getattr(m, "actuators", [])):
        out.append(f"actuator {k} {a.name}: {a.kind} on {'tendon ' + a.tendon if a.tendon else a.joint}, "
                   f"gear {a.gear:g}" + (f", ctrlrange {a.ctrlrange.tolist()}" if a.ctrlrange is not None else "")
                   + (f", forcerange {a.forcerange.tolist()}" if a.forcerange is not None else "")
                   + (f", activation {a.dynamics}" + (f" {a.timeconst:g} s" if a.timeconst else "")
                      + (f" in {a.actrange.tolist()}" if a.actrange is not None else "") if a.stateful else ""))
    return out


def cmd_build(args):
    """Run ``mbgen build``."""
    from ..runtime import build
    m = load_spec(args.model, args)
    t0 = time.perf_counter()
    s = build(m, args.algorithm, cache_dir=args.cache_dir, progress=not args.quiet, **build_options(args))
    info = s.build_info
    state = "cache hit" if info["hit"] else f"built (generate {info['generate_s']:.2f} s, compile {info['compile_s']:.2f} s)"
    print(f"{m.name}: {s.algorithm} {s.options} -> {state} in {time.perf_counter() - t0:.2f} s\n"
          f"  key {info['key']}\n  {info['path']}")


def cmd_source(args):
    """Run ``mbgen source``."""
    from ..algorithms import FAMILIES
    from ..compiler import generated_source
    m = load_spec(args.model, args)
    if hasattr(m, "beams"):                        # flexible beams: the rancf family
        src = generated_source(m, "rancf")
    else:
        run = FAMILIES[args.algorithm].run_options
        src = generated_source(m, args.algorithm, **{k: v for k, v in build_options(args).items() if k not in run})
    if args.out:
        from ..runtime import atomic_write
        atomic_write(args.out, lambda fh: fh.write(src.encode()))
        print(args.out)
    else:
        sys.stdout.write(src)


def cmd_cache(args):
    """Run ``mbgen cache``."""
    from ..compiler.cache import default_cache_dir
    from ..compiler.housekeeping import cache_entries, clean_cache, strangers, temp_folders

    def size(n):
        for unit in ("B", "kB", "MB", "GB"):
            if n < 1000 or unit == "GB":
                return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
            n /= 1000

    def age(s):
        return f"{s / 86400:.1f} d" if s >= 86400 else f"{s / 3600:.1f} h" if s >= 3600 else f"{s / 60:.0f} min"

    def printable(v):                              # names come from model files: no control characters
        return "-" if v is None else "".join(c if c.isprintable() else "?" for c in str(v))[:60]

    def report_strangers():                        # symbolic links, FIFOs, foreign entries: never followed
        odd = strangers(cache)
        if odd:
            print(f"  left alone: {len(odd)} item(s) no build made (remove them yourself): "
                  + "; ".join(f"{printable(n)}: {w}" for n, w in odd[:10]) + ("; ..." if len(odd) > 10 else ""))

    cache = args.cache_dir or str(default_cache_dir())
    if os.path.lexists(cache) and not os.path.isdir(cache):
        raise ValueError(f"cache folder {cache} is not a folder (set MBGEN_CACHE_DIR or --cache-dir to a folder)")
    if args.action == "info":
        entries, temps = cache_entries(cache), temp_folders(cache)
        print(f"cache: {cache}{'' if os.path.isdir(cache) else ' (does not exist yet)'}\n"
              f"  {len(entries)} entries, {size(sum(e['size'] for e in entries))}"
              f"{f'; {len(temps)} temporary folders' if temps else ''}")
        for e in entries:
            label = printable(e["model"]) + (f" [{e['algorithm']}]" if e["algorithm"] else "")
            print(f"  {e['key']}  {size(e['size']):>9}  {age(e['age_s']):>8}  {label}  {printable(e['module'])}")
        report_strangers()
        return
    done = clean_cache(cache, older_than_days=args.older_than)
    print(f"cache: {cache}\n  removed {len(done['entries'])} entries and {len(done['temp'])} temporary folders, "
          f"freed {size(done['freed'])}")
    if done["derived"]:
        print(f"  removed {done['derived']} stored derivations (sympy's printed kernels, derived again when needed)")
    if done["busy"]:
        print(f"  skipped {len(done['busy'])} entries being built: {', '.join(done['busy'])}")
    report_strangers()
