"""Command line: mbgen check | build | simulate | inspect | source.

Exit status: 0 success, 2 bad input (model file, options), 1 internal failure.
"""
from __future__ import annotations

import argparse
import os
import re
import sys
import time

BAD_INPUT = 2


def _model(spec: str):
    """A YAML file, 'chain:N', 'branch:N', or a builtin name (balance_pendulum, arm7, humanoid)."""
    from .model import ModelError, load_model
    from .model.library import BUILTIN, from_spec
    if spec.startswith(("chain:", "branch:")):
        try:
            m = from_spec(spec)
        except ValueError as e:
            raise ModelError(str(e), spec, "N") from None
        m.source = spec
        return m
    if not os.path.exists(spec) and spec in BUILTIN:
        return from_spec(spec)
    return load_model(spec)


def safe_stem(name: str) -> str:
    """A file name from a model name: letters, digits, '-', '_', '.' only, no leading dot (so never a path
    or '..'); only an explicit --out writes elsewhere than results/."""
    stem = re.sub(r"\.{2,}", "_", re.sub(r"[^A-Za-z0-9_.-]+", "_", str(name))).lstrip(".")[:100]
    return stem or "model"


def _options(args) -> dict:
    return {"ref_point": args.ref_point} if args.algorithm == "recursive" and args.ref_point else {}


def cmd_check(args):
    m = _model(args.model)
    print(f"{m.source}: ok - {len(m.bodies)} bodies, {len(m.joints)} joints, nq = {m.nq}, nv = {m.nv}")
    from .algorithms.tree_plan import Plan
    for row in (m.roadmap() if hasattr(m, "roadmap") else Plan(m).roadmap()):   # beam models plan themselves
        print("  " + row)


def cmd_build(args):
    from .runtime import build
    m = _model(args.model)
    t0 = time.perf_counter()
    s = build(m, args.algorithm, cache_dir=args.cache_dir, progress=not args.quiet, **_options(args))
    info = s.build_info
    state = "cache hit" if info["hit"] else f"built (generate {info['generate_s']:.2f} s, compile {info['compile_s']:.2f} s)"
    print(f"{m.name}: {s.algorithm} {s.options} -> {state} in {time.perf_counter() - t0:.2f} s\n"
          f"  key {info['key']}\n  {info['path']}")


def cmd_simulate(args):
    from .runtime import build
    m = _model(args.model)
    if not (args.t_end > 0 and args.dt > 0):
        raise ValueError("--t-end and --dt must be positive")
    if args.integrator == "hht" and not hasattr(m, "beams"):
        raise ValueError("--integrator hht is only available for flexible-beam (rancf) models")
    s = build(m, args.algorithm, cache_dir=args.cache_dir, progress=not args.quiet, **_options(args))
    extra = {"alpha": args.hht_alpha} if args.integrator == "hht" else {}
    res = s.simulate(args.t_end, args.dt, integrator=args.integrator, rtol=args.rtol, atol=args.atol,
                     substeps=args.substeps, progress=not args.quiet, **extra)
    out = args.out or os.path.join("results", safe_stem(m.name) + ".npz")
    path = res.save(out)
    e = res.energy_total
    drift = float(abs(e - e[0]).max() / max(abs(e[0]), abs(res.energy_kinetic).max(), 1e-300))
    print(f"{m.name}: {len(res.t) - 1} samples to t = {res.t[-1]:g} s with {args.integrator} "
          f"[{s.algorithm} {s.options}] in {res.meta['wall_time_s']:.3f} s wall; "
          f"max relative energy change {drift:.2e}")
    print(f"  results: {path}")
    if args.csv:
        print(f"  csv:     {res.save_csv(os.path.splitext(path)[0] + '.csv')}")
    if args.plot:
        print(f"  figure:  {res.plot(os.path.splitext(path)[0] + '.png')}")


def _inspect_registry():
    """name -> (description, callable returning an ordered dict of sympy objects)."""
    from .model import JOINT_TYPES
    from .symbolic import spatial
    from .symbolic.joints import joint_model
    reg = {}
    for t in JOINT_TYPES:
        reg[f"joint {t}"] = (f"{t} joint: R, d, S_w, S_v, H, W, ... (Kang & Yoon eq 16, Liu et al.)",
                             lambda t=t: joint_model(t).elements())
    for p in spatial.REF_POINTS:
        reg[f"reference-point {p}"] = (f"analysis reference point '{p}' (Kang & Yoon eqs 3-8, 25, 33, 36)",
                                       lambda p=p: spatial.reference_point(p))
    reg["spatial"] = ("skew matrix and the shift matrix T^P (Kang & Yoon eq 4)", spatial.spatial_elements)
    for modname in ("ancf", "mstmm_examples"):      # later algorithm families register their elements here
        try:
            mod = __import__(f"codegen.symbolic.{modname}", fromlist=["INSPECT"])
        except ImportError:
            continue
        for k, fn in getattr(mod, "INSPECT", {}).items():
            reg[k] = (f"{modname}: {k}", fn)
    return reg


def _print_algorithms():
    """Every registered algorithm family: name, paper, options, model kind, joint types, integrators."""
    from .algorithms import FAMILIES
    for f in FAMILIES.values():
        opts = ", ".join(f"{k}={'|'.join(v)} (default {v[0]})" for k, v in f.options.items()) or "-"
        print(f"{f.name}: {f.description}")
        print(f"  paper:       {f.paper}")
        print(f"  models:      {'rigid-body trees' if f.models == 'tree' else 'flexible planar beams'}")
        print(f"  {'joint types:' if f.models == 'tree' else 'connections:'} {', '.join(f.joint_types)}")
        print(f"  options:     {opts}")
        print(f"  integrators: {', '.join(f.integrators)}")
        print(f"  template:    templates/{f.template}")


def cmd_inspect(args):
    import sympy as sp
    reg = _inspect_registry()
    name = " ".join(args.what)
    if name == "algorithms":
        return _print_algorithms()
    if not name or name == "list":
        print("Algorithm families: mbgen inspect algorithms")
        print("Elements (mbgen inspect NAME [--format text|latex|sympy]):")
        for k, (desc, _) in reg.items():
            print(f"  {k:<28} {desc}")
        return
    if name not in reg:
        close = [k for k in reg if name.split()[0] in k]
        raise ValueError(f"unknown element '{name}'" + (f"; did you mean: {', '.join(close)}" if close else
                                                          "; 'mbgen inspect list' shows them all"))
    elements = reg[name][1]()
    for label, expr in elements.items():
        if args.format == "latex":
            print(f"% {label}\n{sp.latex(expr)}\n")
        elif args.format == "sympy":
            print(f"{label} = {sp.srepr(expr)}\n")
        else:
            print(f"{label} =")
            print(sp.pretty(expr, use_unicode=False, wrap_line=False))
            print()


def cmd_source(args):
    from .compiler import generated_source
    m = _model(args.model)
    if hasattr(m, "beams"):                        # flexible beams: the rancf family
        src = generated_source(m, "rancf")
    else:
        src = generated_source(m, args.algorithm, **_options(args))
    if args.out:
        from .runtime import atomic_write
        atomic_write(args.out, lambda fh: fh.write(src.encode()))
        print(args.out)
    else:
        sys.stdout.write(src)


def parser():
    from ._version import __version__
    from .algorithms import FAMILIES as ALGORITHMS
    p = argparse.ArgumentParser(prog="mbgen", description="Symbolic-to-Cython multibody dynamics code generator")
    p.add_argument("--version", action="version", version=f"mbgen {__version__}")
    sub = p.add_subparsers(dest="cmd", required=True)

    def model_args(sp_, build=True):
        sp_.add_argument("model", help="model YAML file, 'chain:N' (n-link chain), 'branch:N' (M5, N odd >= 13), "
                         "or a builtin (balance_pendulum, arm7, humanoid)")
        if build:
            sp_.add_argument("--algorithm", default="recursive", choices=list(ALGORITHMS),
                             help="rancf: flexible-beam models (recursive ANCF; 'recursive' maps to it too)")
            sp_.add_argument("--ref-point", default=None, choices=["centroid", "joint", "origin"],
                             help="analysis reference point of the recursive method (default centroid)")
            sp_.add_argument("--cache-dir", default=None, help="build cache (default: $MBGEN_CACHE_DIR, "
                                                                "generated/ in a checkout, else ~/.cache/mbgen)")

    s = sub.add_parser("check", help="validate a model file and print its tree")
    model_args(s, build=False)
    s.set_defaults(fn=cmd_check)
    s = sub.add_parser("build", help="generate and compile the kernels (cached)")
    model_args(s)
    s.add_argument("--quiet", action="store_true")
    s.set_defaults(fn=cmd_build)
    s = sub.add_parser("simulate", help="build if needed, integrate, write results")
    model_args(s)
    s.add_argument("--t-end", type=float, default=2.0)
    s.add_argument("--dt", type=float, default=1e-3, help="sample interval (and the rk4 step)")
    s.add_argument("--integrator", default="rk4", choices=["rk4", "dopri5", "hht"],
                   help="hht: implicit HHT-alpha, flexible-beam (rancf) models only")
    s.add_argument("--hht-alpha", type=float, default=-0.05, help="HHT alpha in [-1/3, 0] (numerical damping)")
    s.add_argument("--substeps", type=int, default=1, help="rk4 steps per sample")
    s.add_argument("--rtol", type=float, default=1e-8)
    s.add_argument("--atol", type=float, default=1e-10)
    s.add_argument("--out", default=None, help="NPZ path (default results/MODEL.npz)")
    s.add_argument("--csv", action="store_true", help="also write a CSV beside the NPZ")
    s.add_argument("--plot", action="store_true", help="also write a PNG of coordinates and energy")
    s.add_argument("--quiet", action="store_true", help="no progress bars")
    s.set_defaults(fn=cmd_simulate)
    s = sub.add_parser("inspect", help="print a derived symbolic element ('mbgen inspect list')")
    s.add_argument("what", nargs="*", help="e.g. 'joint revolute', 'reference-point origin', 'spatial'")
    s.add_argument("--format", default="text", choices=["text", "latex", "sympy"])
    s.set_defaults(fn=cmd_inspect)
    s = sub.add_parser("source", help="print the generated Cython for a model")
    model_args(s)
    s.add_argument("--out", default=None)
    s.set_defaults(fn=cmd_source)
    return p


def main(argv=None) -> int:
    from .compiler import BuildError
    from .model import ModelError
    args = parser().parse_args(argv)
    try:
        args.fn(args)
    except ModelError as e:
        print(f"mbgen: error: {e}", file=sys.stderr)
        return BAD_INPUT
    except (ValueError, KeyError, BuildError) as e:
        msg = e.args[0] if isinstance(e, KeyError) and e.args else e
        print(f"mbgen: error: {msg}", file=sys.stderr)
        return BAD_INPUT
    except KeyboardInterrupt:
        print("mbgen: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:          # e.g. `mbgen inspect ... | head`
        sys.stderr.close()
        return 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
