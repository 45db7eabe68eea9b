"""Command line: mbgen check | build | simulate | inspect | source.

Exit status: 0 success; 1 internal failure; 2 bad input (model file, options; simulate: also an rk4 step
that the model's stiffness estimate says is unstable, unless --force); 3 simulation diverged (a non-finite
state or a collapsing step size: `mbgen: error: ...` names the time, the coordinate and the last good state;
no results are written unless --keep-partial); 4 energy check failed (--check-energy / the model file's
check_energy; the results are written).
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
            m = from_spec(spec)          # N is checked against LIMITS['bodies'] before anything is built
        except ValueError as e:
            raise ModelError(str(e), spec[:60], "N") from None
        m.source = spec
        return m
    if not os.path.exists(spec):
        if spec in BUILTIN:
            return from_spec(spec)
        raise ModelError(f"cannot read: no such file (nor 'chain:N', 'branch:N' or a builtin model: "
                         f"{', '.join(BUILTIN)})", spec)
    return load_model(spec)


MAX_SUBSTEPS = 1_000_000


def _check_out_path(path: str, option: str, suffixes=()):
    """An output path that can be written: not a folder, not a device, its folder creatable and writable.
    ``suffixes``: sibling files written beside it (same stem), checked the same way."""
    if not path or not path.strip():
        raise ValueError(f"{option}: empty path")
    if path.endswith((os.sep, "/")) or os.path.isdir(path):
        raise ValueError(f"{option} {path}: is a folder; give a file name (e.g. {os.path.join(path, 'run.npz')})")
    for target in [path] + [os.path.splitext(path)[0] + s for s in suffixes]:
        if os.path.isdir(target):
            raise ValueError(f"{option} {path}: {target} is a folder")
        if os.path.lexists(target) and not os.path.isfile(target):
            raise ValueError(f"{option} {path}: {target} exists and is not a regular file")
    folder = os.path.dirname(os.path.abspath(path))
    probe = folder
    while not os.path.lexists(probe):             # the nearest existing ancestor (folders are created)
        probe = os.path.dirname(probe)
    if not os.path.isdir(probe):
        raise ValueError(f"{option} {path}: {probe} is not a folder")
    if not os.access(probe, os.W_OK | os.X_OK):
        raise ValueError(f"{option} {path}: cannot write into {probe}")


def validate_args(args):
    """Values of the command line, checked before any model is loaded or built (ValueError: exit 2).
    Checks that need the model (the projected output size) are in check_output_size."""
    import math

    def get(name):
        return getattr(args, name, None)

    for opt, name in (("--dt", "dt"), ("--t-end", "t_end"), ("--atol", "atol"), ("--max-output-mb", "max_output_mb")):
        v = get(name)
        if v is not None and not (math.isfinite(v) and v > 0):
            raise ValueError(f"{opt} must be positive and finite, got {v:g}")
    dt, t_end = get("dt"), get("t_end")
    if dt is not None and t_end is not None:
        if t_end < dt:
            raise ValueError(f"--t-end {t_end:g} is shorter than one sample interval (--dt {dt:g})")
        samples = t_end / dt + 1
        max_mb = get("max_output_mb")
        if max_mb is not None and samples * 4 * 8 > max_mb * 1e6:     # t and 3 energies per sample at least
            raise ValueError(f"--t-end {t_end:g} / --dt {dt:g} asks for {samples:.3g} samples: more than "
                             f"--max-output-mb {max_mb:g} MB of results")
    sub = get("substeps")
    if sub is not None and not (1 <= sub <= MAX_SUBSTEPS):
        raise ValueError(f"--substeps must lie in [1, {MAX_SUBSTEPS:,}], got {sub}")
    rtol = get("rtol")
    if rtol is not None and not (0 < rtol < 1):
        raise ValueError(f"--rtol must lie in (0, 1), got {rtol:g}")
    alpha = get("hht_alpha")
    if alpha is not None and not (-1.0 / 3.0 <= alpha <= 0.0):
        raise ValueError(f"--hht-alpha: HHT alpha must lie in [-1/3, 0], got {alpha:g}")
    out = get("out")
    if out is not None and not out.strip():
        raise ValueError("--out: empty path")
    if out is not None:
        if args.fn is cmd_simulate:
            target = out if out.endswith(".npz") else out + ".npz"            # Result.save adds .npz
            sides = (".csv",) * bool(get("csv")) + (".png",) * bool(get("plot"))
            if out.endswith((os.sep, "/")) or os.path.isdir(out):
                _check_out_path(out, "--out")                                     # refused: a folder
            _check_out_path(target, "--out", sides)
        else:
            _check_out_path(out, "--out")


def check_output_size(args, model):
    """The projected size of the results, samples * (nq + nv + 7 bodies + 4) * 8 bytes, against
    --max-output-mb: after the model is loaded, before anything is built."""
    samples = round(args.t_end / args.dt) + 1
    per_sample = model.nq + model.nv + 7 * len(model.bodies) + 4
    size_mb = samples * per_sample * 8 / 1e6
    if size_mb > args.max_output_mb:
        raise ValueError(f"the results would take about {size_mb:,.0f} MB ({samples:,} samples x {per_sample:,} "
                         f"numbers): above --max-output-mb {args.max_output_mb:g}; raise --dt or lower --t-end")


def safe_stem(name: str) -> str:
    """A file name from a model name: letters, digits, '-', '_', '.' only, no leading dot (so never a path
    or '..'); only an explicit --out writes elsewhere than results/."""
    stem = re.sub(r"\.{2,}", "_", re.sub(r"[^A-Za-z0-9_.-]+", "_", str(name))).lstrip(".")[:100]
    return stem or "model"


def _options(args) -> dict:
    if getattr(args, "form", None) and args.algorithm != "cfa":
        raise ValueError(f"--form applies to --algorithm cfa, not {args.algorithm}")
    if args.algorithm == "cfa" and getattr(args, "form", None):
        return {"form": args.form}
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


# simulate: built-in defaults; the value used is the command-line option, else the model file's `simulation:`
# section, else this
SIMULATION_DEFAULTS = {"integrator": None, "dt": 1e-3, "t_end": 2.0, "substeps": 1, "rtol": 1e-8, "atol": 1e-10,
                       "hht_alpha": -0.05, "check_energy": None}
DIVERGED, ENERGY_CHECK_FAILED = 3, 4


def _check_energy_arg(v: str):
    """--check-energy TOL (a positive number) or 'off'."""
    if v.strip().lower() in ("off", "none", "no"):
        return "off"
    try:
        x = float(v)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive tolerance or 'off', got {v!r}") from None
    if not (x > 0 and x < float("inf")):
        raise argparse.ArgumentTypeError(f"expected a positive tolerance or 'off', got {v!r}")
    return x


def _energy_text(en: dict) -> str:
    if en["value"] is None:
        return f"energy not conserved (applied forces; their work is not known): energy change {en['change']:.4g} J"
    if en["conservative"]:
        return f"max relative energy error {en['value']:.2e}"
    return (f"energy not conserved (applied forces): change {en['change']:.4g} J, work of the applied forces "
            f"{en['work']:.4g} J, max relative error of the balance {en['value']:.2e}")


def cmd_simulate(args):
    """Exit 0 ok, 2 bad input or an rk4 step the model cannot take (unless --force), 3 diverged, 4 energy check."""
    import math
    from .runtime import SimulationDiverged, build
    from .runtime.integrate import RK4_LIMIT, rk4_stable_step
    m = _model(args.model)
    beams = hasattr(m, "beams")
    from_file = getattr(m, "simulation", None) or {}
    opt, origin = {}, {}
    for k, default in SIMULATION_DEFAULTS.items():
        cli = getattr(args, k)
        opt[k], origin[k] = ((cli, "option") if cli is not None else (from_file[k], "model file") if k in from_file
                             else (default, "default"))
    if opt["check_energy"] == "off":
        opt["check_energy"] = None
    if opt["t_end"] < opt["dt"]:
        raise ValueError(f"t_end = {opt['t_end']:g} s ({origin['t_end']}) is shorter than one sample interval "
                         f"dt = {opt['dt']:g} s ({origin['dt']})")
    args.t_end, args.dt = opt["t_end"], opt["dt"]
    check_output_size(args, m)                     # before anything is built
    if args.joint_wrench and beams:
        raise ValueError("--joint-wrench: joint reaction wrenches are for rigid-body models")
    integ, h = opt["integrator"], opt["dt"] / opt["substeps"]
    if integ == "hht" and not beams:
        raise ValueError("--integrator hht is only available for flexible-beam (rancf) models")
    s = build(m, args.algorithm, cache_dir=args.cache_dir, progress=not args.quiet, **_options(args))
    if beams:
        hs = rk4_stable_step(s)
        why = (f"the estimated stable rk4 step of this model is {hs:.2g} s (h omega_max < {RK4_LIMIT}, highest "
               f"element frequency {RK4_LIMIT / hs / (2 * math.pi):.3g} Hz)")
        if integ is None:
            integ = "rk4" if h <= hs else "hht"
            if integ == "hht":
                print(f"{m.name}: integrator hht: rk4 at h = {h:g} s would be unstable; {why}")
        elif integ == "rk4" and h > hs and not args.force:
            raise ValueError(f"rk4 at h = dt / substeps = {h:g} s is unstable for this model: {why}. Use "
                             f"--integrator hht, or --substeps {math.ceil(opt['dt'] / hs)} (h <= {hs:.2g} s), or "
                             f"--force to run rk4 anyway")
    integ = integ or "rk4"
    extra = {"alpha": opt["hht_alpha"]} if integ == "hht" else {}
    out = args.out or os.path.join("results", safe_stem(m.name) + ".npz")
    try:
        res = s.simulate(opt["t_end"], opt["dt"], integrator=integ, rtol=opt["rtol"], atol=opt["atol"],
                         substeps=opt["substeps"], progress=not args.quiet, check_energy=opt["check_energy"],
                         keep_partial=args.keep_partial, joint_wrench=args.joint_wrench, **extra)
    except SimulationDiverged as e:
        print(f"mbgen: error: {e}\n  no results written (--keep-partial saves the samples before the failure)",
              file=sys.stderr)
        return DIVERGED
    path = res.save(out)
    if res.meta.get("partial"):
        print(f"mbgen: error: {res.meta['diverged']}", file=sys.stderr)
        print(f"{m.name}: partial results, t = 0 .. {res.t[-1]:g} s ({len(res.t)} samples; diverged at "
              f"t = {res.meta['diverged_at']:.6g} s): {path}")
        return DIVERGED
    en = res.meta["energy"]
    print(f"{m.name}: {len(res.t) - 1} samples to t = {res.t[-1]:g} s with {integ} "
          f"[{s.algorithm} {s.options}] in {res.meta['wall_time_s']:.3f} s wall; {_energy_text(en)}")
    print(f"  results: {path}")
    if args.csv:
        print(f"  csv:     {res.save_csv(os.path.splitext(path)[0] + '.csv')}")
    if args.plot:
        print(f"  figure:  {res.plot(os.path.splitext(path)[0] + '.png')}")
    chk = res.meta.get("energy_check")
    if chk and chk["passed"] is False:
        tip = ("less numerical damping (--hht-alpha closer to 0) or a smaller --dt" if integ == "hht" else
               "a smaller --dt or more --substeps" if integ == "rk4" else "a tighter --rtol / --atol")
        where = "--check-energy" if origin["check_energy"] == "option" else "check_energy of the model file"
        print(f"mbgen: error: energy check failed: max relative energy error {chk['value']:.2e} > tolerance "
              f"{chk['tol']:g} ({where}); results written to {path}; try {tip}", file=sys.stderr)
        return ENERGY_CHECK_FAILED
    return 0


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
    from .symbolic.cfa import cfa_elements
    reg["cfa"] = ("constraint force algorithm (Liu et al.): P-hat (eqs 1-2), I_C, I_O (eq 3), H_j and W_j of every "
                  "joint type (eq 5)", cfa_elements)
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


def cmd_cache(args):
    from .compiler.cache import cache_entries, clean_cache, default_cache_dir, temp_folders

    def size(n):
        for unit in ("B", "kB", "MB", "GB"):
            if n < 1000 or unit == "GB":
                return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
            n /= 1000

    def age(s):
        return f"{s / 86400:.1f} d" if s >= 86400 else f"{s / 3600:.1f} h" if s >= 3600 else f"{s / 60:.0f} min"

    def printable(v):                              # names come from model files: no control characters
        return "-" if v is None else "".join(c if c.isprintable() else "?" for c in str(v))[:60]

    cache = args.cache_dir or str(default_cache_dir())
    if args.action == "info":
        entries, temps = cache_entries(cache), temp_folders(cache)
        print(f"cache: {cache}{'' if os.path.isdir(cache) else ' (does not exist yet)'}\n"
              f"  {len(entries)} entries, {size(sum(e['size'] for e in entries))}"
              f"{f'; {len(temps)} temporary folders' if temps else ''}")
        for e in entries:
            label = printable(e["model"]) + (f" [{e['algorithm']}]" if e["algorithm"] else "")
            print(f"  {e['key']}  {size(e['size']):>9}  {age(e['age_s']):>8}  {label}  {printable(e['module'])}")
        return
    done = clean_cache(cache, older_than_days=args.older_than)
    print(f"cache: {cache}\n  removed {len(done['entries'])} entries and {len(done['temp'])} temporary folders, "
          f"freed {size(done['freed'])}")
    if done["busy"]:
        print(f"  skipped {len(done['busy'])} entries being built: {', '.join(done['busy'])}")


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
            sp_.add_argument("--form", default=None, choices=["serial", "general"],
                             help="form of the cfa method: serial (odd-even elimination along the chains, default) "
                                  "or general (dense A)")
            sp_.add_argument("--cache-dir", default=None, help="build cache (default: $MBGEN_CACHE_DIR, "
                                                                "generated/ in a checkout, else ~/.cache/mbgen)")

    s = sub.add_parser("check", help="validate a model file and print its tree")
    model_args(s, build=False)
    s.set_defaults(fn=cmd_check)
    s = sub.add_parser("build", help="generate and compile the kernels (cached)")
    model_args(s)
    s.add_argument("--quiet", action="store_true")
    s.set_defaults(fn=cmd_build)
    s = sub.add_parser("simulate", help="build if needed, integrate, write results",
                       description="Each setting is the option if given, else the model file's `simulation:` "
                                   "section, else the built-in default shown in brackets. Exit status: 0 ok, "
                                   "2 bad input, 3 simulation diverged, 4 energy check failed.")
    model_args(s)
    # defaults None: the value used is the option, else the model file's `simulation:` section, else the
    # built-in default in brackets (SIMULATION_DEFAULTS)
    s.add_argument("--t-end", type=float, default=None, help="end time [s] (2)")
    s.add_argument("--dt", type=float, default=None, help="sample interval (and the rk4 / hht step) [s] (1e-3)")
    s.add_argument("--integrator", default=None, choices=["rk4", "dopri5", "hht"],
                   help="hht: implicit HHT-alpha, flexible-beam (rancf) models only (rk4; beam models: rk4 if "
                        "dt / substeps is below the estimated stable rk4 step, else hht)")
    s.add_argument("--hht-alpha", type=float, default=None, help="HHT alpha in [-1/3, 0] (numerical damping) (-0.05)")
    s.add_argument("--substeps", type=int, default=None, help="rk4 / hht steps per sample (1)")
    s.add_argument("--rtol", type=float, default=None, help="dopri5 relative tolerance, >= 1e-14 (1e-8)")
    s.add_argument("--atol", type=float, default=None, help="dopri5 absolute tolerance (1e-10)")
    s.add_argument("--check-energy", type=_check_energy_arg, default=None, metavar="TOL",
                   help="fail (exit 4, results still written) if the relative energy error |E - E0 - W| / "
                        "max(|T|, |V|, |E0|) exceeds TOL (W: work of dampers and joint forces); 'off' disables "
                        "the model file's check_energy (off)")
    s.add_argument("--keep-partial", action="store_true",
                   help="if the simulation diverges (exit 3), still save the samples before the failure "
                        "(meta partial, diverged_at)")
    s.add_argument("--force", action="store_true",
                   help="run rk4 even where the stiffness estimate says its step is unstable")
    s.add_argument("--max-output-mb", type=float, default=2000.0,
                   help="refuse runs whose results would exceed this size (default 2000 MB)")
    s.add_argument("--out", default=None, help="NPZ path (default results/MODEL.npz)")
    s.add_argument("--joint-wrench", action="store_true",
                   help="also store the joint reaction wrenches (NPZ joint_wrench: nt x n_joints x 6, fx fy fz mx my "
                        "mz in each joint's child-side frame, about the joint point; joint_names); rigid models")
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
    s = sub.add_parser("cache", help="show ('info') or empty ('clean') the build cache")
    cache_sub = s.add_subparsers(dest="action", required=True)
    for action, text in (("info", "folder, entries (key, size, age, model), total size"),
                         ("clean", "remove entries and left-over temporary folders (each under its lock)")):
        c = cache_sub.add_parser(action, help=text)
        c.add_argument("--cache-dir", default=None, help="build cache (default: $MBGEN_CACHE_DIR, "
                                                         "generated/ in a checkout, else ~/.cache/mbgen)")
        if action == "clean":
            c.add_argument("--older-than", type=float, default=None, metavar="DAYS",
                           help="only entries built more than DAYS days ago")
    s.set_defaults(fn=cmd_cache)
    return p


def main(argv=None) -> int:
    from .compiler import BuildError
    from .model import ModelError
    args = parser().parse_args(argv)
    try:
        validate_args(args)          # option values: exit 2 before any model is loaded or built
        rc = args.fn(args)           # simulate returns 3 (diverged) or 4 (energy check failed)
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
    return rc or 0


if __name__ == "__main__":
    sys.exit(main())
