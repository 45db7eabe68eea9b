"""mbgen simulate: build if needed, integrate in compiled code, write results (NPZ, CSV, PNG, animation)."""
from __future__ import annotations

import argparse
import math
import os
import sys

from .common import (Formatter, add_model_args, build_options, check_out_path, check_output_size, default_stem,
                     load_spec, output_lock)

# simulate: built-in defaults; the value used is the command-line option, else the model file's `simulation:`
# section, else this
SIMULATION_DEFAULTS = {"integrator": None, "dt": 1e-3, "t_end": 2.0, "substeps": 1, "rtol": 1e-8, "atol": 1e-10,
                       "hht_alpha": -0.05, "check_energy": None}
DIVERGED, ENERGY_CHECK_FAILED = 3, 4


def check_energy_arg(v: str):
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


def energy_text(en: dict) -> str:
    """The energy line of a run's summary."""
    if en["value"] is None:
        return f"energy not conserved (applied forces; their work is not known): energy change {en['change']:.4g} J"
    if en["conservative"]:
        return f"max relative energy error {en['value']:.2e}"
    return (f"energy not conserved (applied forces): change {en['change']:.4g} J, work of the applied forces "
            f"{en['work']:.4g} J, max relative error of the balance {en['value']:.2e}")


def add_integration_args(s, output_size=True):
    """Add the time span and integrator options to a parser.

    Time span and integrator options (defaults None: the option, else the model file's `simulation:`
    section, else SIMULATION_DEFAULTS; the help states the built-in default)."""
    s.add_argument("--t-end", type=float, default=None, help="end time [s] (default: 2)")
    s.add_argument("--dt", type=float, default=None, help="sample interval (and the fixed step) [s] (default: the "
                                                           "model file's (an MJCF file's timestep), else 1e-3)")
    s.add_argument("--integrator", default=None, choices=["rk4", "dopri5", "euler", "implicitfast", "implicit",
                                                              "rosenbrock", "hht"],
                   help="euler, implicitfast, implicit: MuJoCo's single steps, rigid-body models; rosenbrock: stiff, "
                        "error-controlled (--rtol, --atol), rigid-body models; hht: implicit "
                        "HHT-alpha, flexible-beam (rancf) models only (default: the model file's (an MJCF file's "
                        "option integrator), else rk4; beam models: rk4 if dt / substeps is below the estimated "
                        "stable rk4 step, else hht)")
    s.add_argument("--hht-alpha", type=float, default=None,
                   help="HHT alpha in [-1/3, 0] (numerical damping) (default: -0.05)")
    s.add_argument("--substeps", type=int, default=None, help="fixed steps (rk4, euler, implicitfast, implicit, hht) per sample (default: 1)")
    s.add_argument("--rtol", type=float, default=None, help="dopri5 / rosenbrock relative tolerance, >= 1e-14 "
                                                            "(default: 1e-8)")
    s.add_argument("--atol", type=float, default=None, help="dopri5 / rosenbrock absolute tolerance (default: 1e-10)")
    s.add_argument("--force", action="store_true",
                   help="run rk4 even where the stiffness estimate says its step is unstable")
    if output_size:
        s.add_argument("--max-output-mb", type=float, default=2000.0,
                       help="refuse runs whose results would exceed this size [MB]")


def register(sub):
    """Register the command ``simulate``."""
    s = sub.add_parser("simulate", help="build if needed, integrate, write results", formatter_class=Formatter,
                       description="Each setting is the option if given, else the model file's `simulation:` "
                                   "section, else the built-in default.\nExit status: 0 ok, 2 bad input, "
                                   "3 simulation diverged, 4 energy check failed.")
    add_model_args(s)
    add_integration_args(s)
    s.add_argument("--check-energy", type=check_energy_arg, default=None, metavar="TOL",
                   help="fail (exit 4, results still written) if the relative energy error |E - E0 - W| / "
                        "max(|T|, |V|, |E0|) exceeds TOL (W: work of dampers and joint forces); 'off' disables "
                        "the model file's check_energy (default: off)")
    s.add_argument("--keep-partial", action="store_true",
                   help="if the simulation diverges (exit 3), still save the samples before the failure "
                        "(meta partial, diverged_at)")
    s.add_argument("--out", default=None,
                   help="NPZ path (default: results/MODEL[-ALGORITHM][-REFPOINT][-INTEGRATOR].npz, naming the "
                        "method options that differ from the default run)")
    s.add_argument("--friction-velocity", type=float, default=None, metavar="V_S",
                   help="Coulomb friction's regularising velocity [rad/s, m/s] (default F T / m, T = 0.02 s); a small "
                        "one (1e-5) makes joints under a load below their friction hold, with --integrator "
                        "rosenbrock or implicitfast")
    s.add_argument("--no-limits", action="store_true",
                   help="do not enforce the joint limits (the model's limits:, MJCF ranges, URDF <limit>)")
    s.add_argument("--joint-wrench", action="store_true",
                   help="also store the joint reaction wrenches (NPZ joint_wrench: nt x n_joints x 6, fx fy fz mx my "
                        "mz in each joint's child-side frame, about the joint point; joint_names); rigid models")
    s.add_argument("--frames", default=None, metavar="NAMES",
                   help="also store these frames' trajectories (comma-separated: bodies, URDF links, MJCF sites and "
                        "bodies, the model file's frames:; NPZ frame_names, frame_position nt x k x 3, frame_rotation "
                        "nt x k x 3 x 3, frame_velocity nt x k x 6 angular then linear, world axes); rigid models; default: none")
    s.add_argument("--baumgarte", type=float, default=None, metavar="RATE",
                   help="closed loops: Baumgarte stabilisation rate b [1/s] (gamma - 2 b Phi' - b^2 Phi; 0: off; "
                        "default 0.1 / step). The result stores cut_joint_wrench, multipliers, constraint_violation, "
                        "cut_q")
    s.add_argument("--projection", action="store_true",
                   help="closed loops: project the state onto the constraint manifold after every step "
                        "(positions to 1e-12, then velocities) instead of Baumgarte's stabilisation")
    s.add_argument("--switching", default=None, choices=["acs", "gcl"],
                   help="grcr: what a run does when a loop's dependents become ill-conditioned: acs re-selects them "
                        "(arbitrary coordinate selection, default) or gcl restructures the loop so that three "
                        "adjacent dependents close an open loop (general coupled loops; planar loops, rk4)")
    s.add_argument("--threads", type=int, default=1,
                   help="rk4 on two threads: --algorithm mstmm, models without point-to-point forces or actuator "
                        "activations (the same states; default: 1)")
    s.add_argument("--csv", action="store_true", help="also write a CSV beside the NPZ")
    s.add_argument("--plot", action="store_true", help="also write a PNG of coordinates and energy")
    s.add_argument("--animate", action="store_true", help="also write an MP4 animation beside the NPZ "
                                                          "(extra 'anim'; 'mbgen animate' for GIFs and options)")
    s.add_argument("--quiet", action="store_true", help="no progress bars")
    s.set_defaults(fn=cmd_simulate)


def resolve_settings(args, m) -> tuple:
    """(settings, origin): each of SIMULATION_DEFAULTS from the option, else the model file, else the default."""
    from_file = getattr(m, "simulation", None) or {}
    opt, origin = {}, {}
    for k, default in SIMULATION_DEFAULTS.items():
        cli = getattr(args, k, None)
        opt[k], origin[k] = ((cli, "option") if cli is not None else (from_file[k], "model file") if k in from_file
                             else (default, "default"))
    if opt["check_energy"] == "off":
        opt["check_energy"] = None
    if opt["t_end"] < opt["dt"]:
        raise ValueError(f"t_end = {opt['t_end']:g} s ({origin['t_end']}) is shorter than one sample interval "
                         f"dt = {opt['dt']:g} s ({origin['dt']})")
    if opt["integrator"] == "hht" and not hasattr(m, "beams"):
        raise ValueError("--integrator hht is only available for flexible-beam (rancf) models")
    if opt["integrator"] in ("euler", "implicitfast", "implicit", "rosenbrock") and hasattr(m, "beams"):
        raise ValueError(f"--integrator {opt['integrator']} is for rigid-body models (flexible-beam models: rk4, "
                         "dopri5, hht)")
    return opt, origin


def choose_integrator(s, opt, force=False, name="") -> tuple:
    """Choose the integrator of a run: (integrator, automatic choice).

    Beam models check rk4 against the stiffness estimate (Hu & Wang
    models: highest element frequency); an unstable explicit rk4 step is refused unless ``force``."""
    from ..runtime.integrate import RK4_LIMIT
    integ, h, auto = opt["integrator"], opt["dt"] / opt["substeps"], "rk4"
    hs = s.stable_step()
    if hs is not None:
        why = (f"the estimated stable rk4 step of this model is {hs:.2g} s (h omega_max < {RK4_LIMIT}, highest "
               f"element frequency {RK4_LIMIT / hs / (2 * math.pi):.3g} Hz)")
        auto = "rk4" if h <= hs else "hht"
        if integ is None:
            integ = auto
            if integ == "hht":
                print(f"{name}: integrator hht: rk4 at h = {h:g} s would be unstable; {why}")
        elif integ == "rk4" and h > hs and not force:
            raise ValueError(f"rk4 at h = dt / substeps = {h:g} s is unstable for this model: {why}. Use "
                             f"--integrator hht, or --substeps {math.ceil(opt['dt'] / hs)} (h <= {hs:.2g} s), or "
                             f"--force to run rk4 anyway")
    return integ or "rk4", auto


def default_out(args, m, integ, origin, auto) -> str:
    """The default result path of a run.

    results/MODEL.npz for the default run (MODEL: the model's name; a robot file's stem, since the names inside
    URDF and MJCF files often collide); the algorithm, reference point and integrator join the name when they
    differ from what `mbgen simulate MODEL` alone uses."""
    beams = hasattr(m, "beams")
    alg = None if args.algorithm in (("recursive", "rancf") if beams else ("recursive",)) else args.algorithm
    ref = args.ref_point if args.algorithm == "recursive" and args.ref_point not in (None, "centroid") else \
        args.form if args.algorithm == "cfa" and args.form == "general" else \
        args.switching if args.algorithm == "grcr" and args.switching == "gcl" else None
    file_integ = (getattr(m, "simulation", None) or {}).get("integrator") or auto
    integ_part = integ if origin["integrator"] == "option" and integ != file_integ else None
    name = m.name
    src = str(getattr(m, "source", ""))
    if os.path.splitext(src)[1].lower() in (".urdf", ".xml", ".mjcf"):     # robot files: their internal names
        name = os.path.splitext(os.path.basename(src))[0] or name       # collide (two laikago URDFs are 'plane')
    return os.path.join("results", default_stem(name, alg, ref, integ_part) + ".npz")


def cmd_simulate(args):
    """Exit 0 ok, 2 bad input or an rk4 step the model cannot take (unless --force), 3 diverged, 4 energy check."""
    from ..runtime import SimulationDiverged, build
    m = load_spec(args.model, args)
    opt, origin = resolve_settings(args, m)
    args.t_end, args.dt = opt["t_end"], opt["dt"]
    check_output_size(args, m)                     # before anything is built
    if args.joint_wrench and hasattr(m, "beams"):
        raise ValueError("--joint-wrench: joint reaction wrenches are for rigid-body models")
    frames = [n.strip() for n in args.frames.split(",") if n.strip()] if args.frames is not None else None
    if frames is not None and (hasattr(m, "beams") or not frames):
        raise ValueError("--frames: name frames of a rigid-body model, comma-separated"
                         + (" (beam models have none)" if hasattr(m, "beams") else ""))
    if args.animate:
        from ..runtime.animate import require_writer
        require_writer(".mp4")                     # before anything is built: the extra is installed
    s = build(m, args.algorithm, cache_dir=args.cache_dir, progress=not args.quiet, **build_options(args))
    for f in frames or ():
        if f not in s.frames:
            near = [n for n in s.frames if f.lower() in n.lower()][:6]
            raise ValueError(f"--frames: {args.model} has no frame {f!r}"
                             + (f" (did you mean {', '.join(near)}?)" if near else f" ({len(s.frames)} frames: "
                                f"{', '.join(s.frames[:8])}{' ...' if len(s.frames) > 8 else ''})"))
    extra_frames = {"frames": frames} if frames else {}
    if args.friction_velocity is not None:
        if not hasattr(s, "set_friction_velocity"):
            raise ValueError(f"--friction-velocity: not an option of this model ({s.kind})")
        s.set_friction_velocity(args.friction_velocity)
    integ, auto = choose_integrator(s, opt, args.force, m.name)
    extra = {"alpha": opt["hht_alpha"]} if integ == "hht" else {}
    if args.switching is not None:
        if args.algorithm != "grcr":
            raise ValueError(f"--switching applies to --algorithm grcr, not {args.algorithm}")
        extra["switching"] = args.switching
    for name, given in (("baumgarte", args.baumgarte is not None), ("projection", args.projection)):
        if given:
            if not getattr(m, "cuts", None):
                raise ValueError(f"--{name}: the model has no closed loops (no `loops:` section)")
            extra[name] = getattr(args, name)
    out = args.out or default_out(args, m, integ, origin, auto)
    if args.out is None:                           # (a given --out is checked with the options)
        sides = (".csv",) * bool(args.csv) + (".png",) * bool(args.plot) + (".mp4",) * bool(args.animate)
        check_out_path(out, "the default --out", sides)     # e.g. `results` a file here: before the run
    try:
        res = s.simulate(opt["t_end"], opt["dt"], integrator=integ, rtol=opt["rtol"], atol=opt["atol"],
                         substeps=opt["substeps"], progress=not args.quiet, check_energy=opt["check_energy"],
                         keep_partial=args.keep_partial, joint_wrench=args.joint_wrench,
                         limits=not args.no_limits, threads=args.threads, **extra, **extra_frames)
    except SimulationDiverged as e:
        print(f"mbgen: error: {e}\n  no results written (--keep-partial saves the samples before the failure)",
              file=sys.stderr)
        return DIVERGED
    try:
        return _write_outputs(args, m, s, res, out, integ, origin)
    except OSError as e:               # a full disk or a quota: the temporary files are gone, one line
        if isinstance(e, BrokenPipeError):
            raise
        raise ValueError(f"--out {out}: cannot write the results: {e.strerror or e} (a full or read-only file "
                         f"system?)") from None


def _write_outputs(args, m, s, res, out, integ, origin):
    """The NPZ (and CSV, PNG, MP4) of a finished run under the output folder's lock; the exit status."""
    with output_lock(out):             # one writer of this folder at a time: never a mixture of two runs
        path = res.save(out)
        if res.meta.get("partial"):
            print(f"mbgen: error: {res.meta['diverged']}", file=sys.stderr)
            print(f"{m.name}: partial results, t = 0 .. {res.t[-1]:g} s ({len(res.t)} samples; diverged at "
                  f"t = {res.meta['diverged_at']:.6g} s): {path}")
            return DIVERGED
        en = res.meta["energy"]
        print(f"{m.name}: {len(res.t) - 1} samples to t = {res.t[-1]:g} s with {integ} "
              f"[{s.algorithm} {s.options}] in {res.meta['wall_time_s']:.3f} s wall; {energy_text(en)}")
        if res.meta.get("constraint_violation_max"):
            cv = res.meta["constraint_violation_max"]
            how = (f"dependents {res.meta['dependents']}, {res.meta['partition_switches']} "
                   + ("restructuring(s) (gcl)" if res.meta.get("switching") == "gcl" else "partition switch(es)")
                   if s.grcr else f"Baumgarte rate {res.meta['baumgarte']:g} 1/s"
                   + ("; projection after every step" if res.meta["projection"] else ""))
            print(f"  loops:   largest constraint violation {cv['position']:.2e} (position), {cv['velocity']:.2e} "
                  f"(velocity); {how}")
            for t, loop, old, new in zip(*(res.extra.get(k, ()) for k in ("partition_switch_t", "partition_switch_loop",
                                                                         "partition_switch_old", "partition_switch_new"))):
                print(f"  switch:  t = {t:.6g} s, loop {loop}: dependents {old} -> {new}")
        print(f"  results: {path}")
        stem = os.path.splitext(path)[0]
        if args.csv:
            print(f"  csv:     {res.save_csv(stem + '.csv')}")
        if args.plot:
            print(f"  figure:  {res.plot(stem + '.png')}")
        if args.animate:
            from ..runtime.animate import animate
            print(f"  video:   {animate(res, stem + '.mp4', progress=not args.quiet)}")
        chk = res.meta.get("energy_check")
        if chk and chk["passed"] is False:
            tip = ("less numerical damping (--hht-alpha closer to 0) or a smaller --dt" if integ == "hht" else
                   "a smaller --dt or more --substeps" if integ == "rk4" else "a tighter --rtol / --atol")
            where = "--check-energy" if origin["check_energy"] == "option" else "check_energy of the model file"
            print(f"mbgen: error: energy check failed: max relative energy error {chk['value']:.2e} > tolerance "
                  f"{chk['tol']:g} ({where}); results written to {path}; try {tip}", file=sys.stderr)
            return ENERGY_CHECK_FAILED
        return 0
