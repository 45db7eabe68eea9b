"""mbgen sweep: one build, a grid of parameter values, every run a Dask task, one stacked results file."""
from __future__ import annotations

import os
import sys

from .common import Formatter, add_model_args, build_options, check_out_path, default_stem, load_spec
from .simulate import DIVERGED, add_integration_args, choose_integrator, resolve_settings

EXAMPLE = """Paths address numbers of the model as the model file names them:
  bodies.<name>.mass | com.<i> | inertia.ixx (iyy izz ixy ixz iyz)
  joints.<name>.q0 (q0.<i> for joints with several coordinates) | u0 | parent_frame.pos.<i>
  forces.<name>.stiffness | damping | q_ref | length | value.sine.amplitude | value.constant ...
  gravity.<i>;  beam models: beams.<name>.E | A | I | rho | length | angle, loads.<name>.s | force.<i>
Values: START:STOP:COUNT (COUNT values, both ends included) or v1,v2,...; several --set make a grid.
Example:
  mbgen sweep chain:3 --set bodies.link1.mass=1:2:11 --set gravity.1=-9.81,-1.62 --workers 2 --t-end 1
Exit status: 0 ok, 2 bad input, 3 some runs diverged (their rows end in NaN; results written)."""


def register(sub):
    """Register the command ``sweep``."""
    s = sub.add_parser("sweep", help="simulate a grid of parameter values on Dask workers",
                       formatter_class=Formatter, epilog=EXAMPLE,
                       description="One build; every combination of the --set values is one run, the runs grouped\n"
                                   "in chunks, each chunk a Dask task (a LocalCluster on this machine, the workers of\n"
                                   "--scheduler, or this process with --in-process); each worker loads the kernel\n"
                                   "once. The results are stacked on a leading run axis (q: runs x nt x nq, ...)\n"
                                   "with param_names and param_values (runs x n_params). Settings: the option,\n"
                                   "else the model file's `simulation:` section, else the built-in default.")
    add_model_args(s)
    s.add_argument("--set", action="append", required=True, metavar="PATH=VALUES",
                   help="a parameter and its values: PATH=START:STOP:COUNT or PATH=v1,v2,... (repeat for a grid)")
    add_integration_args(s)
    s.add_argument("--scheduler-timeout", type=float, default=10.0, metavar="SECONDS",
                   help="give up on a --scheduler that does not answer within this time")
    s.add_argument("--scheduler", default=None, metavar="ADDRESS",
                   help="address of a running Dask scheduler, e.g. tcp://10.0.0.5:8786 (default: a LocalCluster "
                        "on this machine)")
    s.add_argument("--workers", type=int, default=None,
                   help="LocalCluster worker processes (default: the number of CPUs)")
    s.add_argument("--in-process", action="store_true",
                   help="every run in this process, one after the other, without Dask (no cluster to start: quicker "
                        "for small sweeps; one CPU)")
    s.add_argument("--threads", action="store_true",
                   help="LocalCluster workers as threads of this process instead of processes (quicker start; "
                        "the compiled integrators release the GIL)")
    s.add_argument("--fields", default=None, metavar="A,B,...",
                   help="per-sample arrays to keep, e.g. q,u,energy_kinetic (default: all: q, u, body_com, "
                        "body_quat, energies, joint_pos, ...)")
    s.add_argument("--out", default=None,
                   help="results: .npz (held in memory, then written) or .zarr (written run by run, for sweeps "
                        "larger than memory) (default: results/MODEL-sweep.npz)")
    s.add_argument("--quiet", action="store_true", help="no progress bar")
    s.set_defaults(fn=cmd_sweep)


def cmd_sweep(args):
    """Run ``mbgen sweep``."""
    from ..runtime import build
    from ..runtime.fastparams import FastNumbers
    from ..runtime.params import ParamError, check_path, checked_rows, grid, parse_set
    from ..runtime.sweep import connect, quiet_shutdown, sweep
    m = load_spec(args.model, args)
    params = {}
    try:
        for spec in args.set:
            path, values = parse_set(spec)
            if path in params:
                raise ParamError(f"--set {path}: given twice")
            check_path(m, path)
            params[path] = values
        names, values = grid(params)
        checker = FastNumbers(m, names)              # the structure validated once, then the numbers per row
        for row in checked_rows(params, values):     # valid before anything is built
            checker.apply(row)
        del checker
    except ParamError as e:
        msg = str(e)
        raise ValueError(msg if msg.startswith("--set") else f"--set {msg}") from None
    opt, origin = resolve_settings(args, m)
    runs, samples = len(values), round(opt["t_end"] / opt["dt"]) + 1
    size_mb = runs * samples * (m.nq + m.nv + 10 * len(m.bodies) + 2) * 8 / 1e6
    out = args.out or os.path.join("results", default_stem(m.name, None if args.algorithm == "recursive"
                                                           else args.algorithm, "sweep") + ".npz")
    zarr_out = out.rstrip("/").endswith(".zarr")
    if args.out is None:                             # (a given --out is checked with the options)
        check_out_path(out, "the default --out")
    if not zarr_out and size_mb > args.max_output_mb:
        raise ValueError(f"{runs} runs x {samples:,} samples: about {size_mb:,.0f} MB in memory, above "
                         f"--max-output-mb {args.max_output_mb:g}; write a Zarr store (--out sweep.zarr), or "
                         f"select --fields, raise --dt or lower --t-end")
    fields = [f.strip() for f in args.fields.split(",") if f.strip()] if args.fields else None
    if args.in_process and (args.scheduler or args.workers is not None or args.threads):
        raise ValueError("--in-process runs without Dask: drop --scheduler, --workers and --threads")
    inprocess = args.in_process
    client, close = (None, []) if inprocess else connect(None, args.scheduler, args.workers, not args.threads,
                                                         timeout=args.scheduler_timeout)   # a bad address: before a build

    def notify(seconds, text):                       # the whole sweep's time, from its first chunk: never silent
        if seconds > 60 and (not args.quiet or seconds > 600):
            print(f"mbgen: {text}", file=sys.stderr, flush=True)
    try:
        options = build_options(args)
        s = build(m, args.algorithm, cache_dir=args.cache_dir, progress=not args.quiet, **options)
        integ, _ = choose_integrator(s, opt, args.force, m.name)
        extra = {"alpha": opt["hht_alpha"]} if integ == "hht" else {}
        res = sweep(m, params, opt["t_end"], opt["dt"], integrator=integ, algorithm=args.algorithm,
                    options=options, cache_dir=args.cache_dir, out=out, client=client, workers=0 if inprocess else args.workers,
                    notify=notify,
                    scheduler=args.scheduler, fields=fields, progress=not args.quiet, rtol=opt["rtol"],
                    atol=opt["atol"], substeps=opt["substeps"], **extra)
    except ParamError as e:
        raise ValueError(f"--set {e}") from None
    except BaseException as e:
        if not isinstance(e, Exception):         # Ctrl-C, SIGTERM: the cluster closes without Dask's log
            quiet_shutdown()
        raise
    finally:
        for x in close:
            x.close()
    meta = res["meta"]
    loads = meta["kernel_loads"]
    print(f"{m.name}: {runs} runs ({' x '.join(str(len(v)) for v in params.values())} over {', '.join(names)}) "
          f"to t = {opt['t_end']:g} s with {meta['integrator']} [{meta['algorithm']} {meta['options']}] "
          + (f"on {meta['workers']} workers" if meta["workers"] else "in this process (no Dask)")
          + f" in {meta['wall_time_s']:.2f} s ({runs / max(meta['wall_time_s'], 1e-9):,.0f} runs/s, chunks of "
          f"{meta['chunk']}); kernel loaded {sum(loads.values())} times by {len(loads)} worker threads")
    print(f"  results: {out}")
    if meta["failed"]:
        first = int(list(res["ok"]).index(False))
        print(f"mbgen: error: {meta['failed']} of {runs} runs diverged (ok = False, NaN after the failure); "
              f"first: run {first} ({', '.join(f'{n} = {v:g}' for n, v in zip(names, values[first]))}): "
              f"{res['error'][first]}", file=sys.stderr)
        return DIVERGED
    return 0
