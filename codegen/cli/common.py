"""Shared pieces of the command line: model specs, option checks, output names, the help formatter."""
from __future__ import annotations

import argparse
import contextlib
import os
import re

from ..model.simulation import MAX_SUBSTEPS

BAD_INPUT = 2
CACHE_HELP = "build cache (default: $MBGEN_CACHE_DIR, generated/ in a checkout, else ~/.cache/mbgen)"
MODEL_HELP = ("model file (our YAML or JSON, URDF, MJCF), 'chain:N' (n-link chain), 'branch:N' (M5, N odd >= 13), "
              "or a builtin (balance_pendulum, arm7, humanoid)")


class Formatter(argparse.RawDescriptionHelpFormatter, argparse.ArgumentDefaultsHelpFormatter):
    """The help formatter of mbgen: descriptions as written, defaults appended.

    Descriptions as written; every option's help ends with its default unless the text names it already
    (options whose default is None or a flag state it in words)."""

    def _get_help_string(self, action):
        text = action.help or ""
        if ("default" in text or not action.option_strings or action.default in (None, False)
                or action.default is argparse.SUPPRESS):
            return text
        return text + " (default: %(default)s)"


def import_options(args) -> dict:
    """The robot-file options of the command line (add_model_args), for load_model."""
    opts = {k: getattr(args, k, None) for k in ("floating_base", "mimic", "ignore_contacts", "ignore_actuators")}
    return {k: v for k, v in opts.items() if v}


def load_spec(spec: str, args=None):
    """Load the model a command line names.

    A model file (YAML/JSON, URDF, MJCF), 'chain:N', 'branch:N', or a builtin name (balance_pendulum, arm7,
    humanoid). ``args``: the command line, for the robot-file options; what a robot file leaves out on request
    (ModelWarning) is printed as 'mbgen: warning: ...'."""
    import sys
    import warnings

    from ..model import ModelError, load_model
    from ..model.robotfiles import ModelWarning
    from ..model.library import BUILTIN, from_spec
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
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ModelWarning)
        m = load_model(spec, **import_options(args))
    for w in caught:
        if issubclass(w.category, ModelWarning):
            print(f"mbgen: warning: {w.message}", file=sys.stderr)
        else:
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    return m


def add_model_args(sp_, build=True, cache=True):
    """The model argument; with build: --algorithm, --ref-point (and --cache-dir with cache)."""
    from ..algorithms import FAMILIES
    sp_.add_argument("model", help=MODEL_HELP)
    robot = sp_.add_argument_group("robot files (URDF, MJCF)")
    robot.add_argument("--floating-base", action="store_true",
                       help="URDF: a free joint 'root_joint' from ground to the root link (default: fixed base)")
    robot.add_argument("--mimic", default=None, choices=["couple", "independent", "refuse"],
                       help="URDF mimic joints: couple them (one hard constraint row each, algorithm recursive), "
                            "keep them as independent joints as pinocchio does, or refuse the file (default: couple)")
    robot.add_argument("--ignore-contacts", action="store_true",
                       help="MJCF: simulate without contacts instead of refusing a file whose geoms can touch")
    robot.add_argument("--ignore-actuators", action="store_true",
                       help="MJCF: simulate without the file's actuators (their controls then drive nothing)")
    if build:
        sp_.add_argument("--algorithm", default="recursive", choices=list(FAMILIES),
                         help="dynamics algorithm (see 'mbgen inspect algorithms'); flexible-beam models take "
                              "rancf ('recursive' maps to it) or dense")
        for fam in FAMILIES.values():           # each family's options, from its registration
            for name, allowed in fam.options.items():
                sp_.add_argument(_flag(name), default=None, choices=list(allowed),
                                 help=f"{fam.name}: {fam.option_help.get(name, name)} (default: {allowed[0]})")
            for name, (metavar, text) in fam.run_options.items():
                sp_.add_argument(_flag(name), default=None, metavar=metavar, help=f"{fam.name}: {text}")
        if cache:
            sp_.add_argument("--cache-dir", default=None, help=CACHE_HELP)


def _flag(name: str) -> str:
    return "--" + name.replace("_", "-")


def build_options(args) -> dict:
    """The family options given on the command line.

    (Family.options and run_options), refused by name when
    they belong to another algorithm than --algorithm."""
    from ..algorithms import FAMILIES
    out = {}
    for fam in FAMILIES.values():
        for name in list(fam.options) + list(fam.run_options):
            value = getattr(args, name, None)
            if value is None:
                continue
            mine = FAMILIES[args.algorithm]
            if name not in mine.options and name not in mine.run_options:
                raise ValueError(f"{_flag(name)} applies to --algorithm {fam.name}, not {args.algorithm}")
            out[name] = value
    return out


def check_out_path(path: str, option: str, suffixes=()):
    """Check that an output path can be written.

    An output path that can be written: not a folder, not a device, its folder creatable and writable.
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
    check_out_folder(path, option)


@contextlib.contextmanager
def output_lock(path: str):
    """Writers of one output folder, one at a time.

    (an advisory lock on the folder itself, so no lock file is left):
    two runs writing the same --out leave the files (NPZ, CSV, PNG, MP4) of one of them, never a mixture."""
    folder = os.path.dirname(os.path.abspath(path))
    os.makedirs(folder, exist_ok=True)
    try:
        import fcntl
        fd = os.open(folder, os.O_RDONLY)
    except (ImportError, OSError):                # no flock here (Windows), or a folder that cannot be opened
        yield
        return
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)                              # (releases the lock)


def check_out_folder(path: str, option: str):
    """Check that the folder of ``path`` exists or can be created, and can be written.

    Names within the file system's
    limits, and a file can really be created in the nearest existing folder (os.access says yes to root under
    /proc and /sys, where nothing can be written)."""
    import tempfile
    full = os.path.abspath(path)
    folder = os.path.dirname(full)
    probe = folder
    while not os.path.lexists(probe):             # the nearest existing ancestor (folders are created)
        probe = os.path.dirname(probe)
    if not os.path.isdir(probe):
        raise ValueError(f"{option} {path}: {probe} is not a folder")
    try:
        name_max, path_max = os.pathconf(probe, "PC_NAME_MAX"), os.pathconf(probe, "PC_PATH_MAX")
    except (OSError, ValueError, AttributeError):
        name_max, path_max = 255, 4096
    long = [p for p in full.split(os.sep) if len(os.fsencode(p)) + 8 > name_max]     # + room for ".png" etc.
    if long or len(os.fsencode(full)) + 16 > path_max:
        raise ValueError(f"{option} {path}: " + (f"the name {long[0][:40]}... is longer than this file system takes "
                                                  f"({name_max} bytes)" if long else
                                                  f"the path is longer than this file system takes ({path_max} bytes)"))
    if not os.access(probe, os.W_OK | os.X_OK):
        raise ValueError(f"{option} {path}: cannot write into {probe}")
    try:
        fd, tmp = tempfile.mkstemp(prefix=".mbgen-probe.", dir=probe)
        os.close(fd)
        os.unlink(tmp)
    except OSError as e:
        raise ValueError(f"{option} {path}: cannot write into {probe} ({e.strerror or e})") from None


WORKERS_PER_CPU = 4          # --workers of a LocalCluster: at most this many per CPU
MAX_FPS = 1000.0             # --fps of animations (a GIF stores 10 ms steps; players show no more)


def max_workers() -> int:
    """The default number of workers of a sweep: WORKERS_PER_CPU per processor."""
    return WORKERS_PER_CPU * (os.cpu_count() or 1)


def validate_args(args):
    """Check the values of the command line before any model is loaded or built.

    Values of the command line, checked before any model is loaded or built (ValueError: exit 2).
    Checks that need the model (the projected output size) are in check_output_size."""
    import math

    def get(name):
        return getattr(args, name, None)

    for opt, name in (("--dt", "dt"), ("--t-end", "t_end"), ("--atol", "atol"), ("--max-output-mb", "max_output_mb"),
                      ("--fps", "fps")):
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
    for opt, name in (("--every", "every"), ("--workers", "workers")):
        v = get(name)
        if v is not None and v < 1:
            raise ValueError(f"{opt} must be a positive integer, got {v}")
    workers, cpus = get("workers"), os.cpu_count() or 1
    if workers is not None and workers > max_workers():     # each a process: 10^5 of them never start
        raise ValueError(f"--workers {workers}: more than {max_workers()} LocalCluster processes ({WORKERS_PER_CPU} "
                         f"per CPU, {cpus} CPUs here); more workers than CPUs only add start-up time and memory")
    fps = get("fps")
    if fps is not None and fps > MAX_FPS:
        raise ValueError(f"--fps must lie in (0, {MAX_FPS:g}], got {fps:g}")
    rtol = get("rtol")
    if rtol is not None and not (0 < rtol < 1):
        raise ValueError(f"--rtol must lie in (0, 1), got {rtol:g}")
    deps = get("dependents")
    if isinstance(deps, str) and deps.strip() != "auto":        # before the build: a name given twice
        names = [d.strip() for d in deps.split(",") if d.strip()]
        twice = sorted({d for d in names if names.count(d) > 1})
        if twice:
            raise ValueError(f"--dependents: {', '.join(twice)} given twice")
    alpha = get("hht_alpha")
    if alpha is not None and not (-1.0 / 3.0 <= alpha <= 0.0):
        raise ValueError(f"--hht-alpha: HHT alpha must lie in [-1/3, 0], got {alpha:g}")
    out = get("out")
    if out is not None and not out.strip():
        raise ValueError("--out: empty path")
    if out is None:
        return
    cmd = get("cmd")
    if cmd == "simulate":
        target = out if out.endswith(".npz") else out + ".npz"            # Result.save adds .npz
        sides = (".csv",) * bool(get("csv")) + (".png",) * bool(get("plot")) + (".mp4",) * bool(get("animate"))
        if out.endswith((os.sep, "/")) or os.path.isdir(out):
            check_out_path(out, "--out")                                     # refused: a folder
        check_out_path(target, "--out", sides)
    elif cmd == "sweep" and out.rstrip("/").endswith(".zarr"):             # a Zarr store is a folder
        if os.path.lexists(out) and not os.path.isdir(out):
            raise ValueError(f"--out {out}: exists and is not a Zarr folder")
        check_out_folder(out.rstrip("/"), "--out")
    elif cmd == "export-c":                                                # a folder, written again on a re-export
        if os.path.lexists(out) and not os.path.isdir(out):
            raise ValueError(f"--out {out}: exists and is not a folder")
        check_out_folder(os.path.join(out.rstrip("/"), "model.c"), "--out")
    else:
        check_out_path(out, "--out")


def check_output_size(args, model):
    """Check the projected size of the results against --max-output-mb.

    The projected size of the results, samples * (nq + nv + 10 per body + 4) * 8 bytes (centroid,
    quaternion, joint point; t and energies), against --max-output-mb: after the model is loaded, before
    anything is built."""
    samples = round(args.t_end / args.dt) + 1
    per_sample = model.nq + model.nv + 10 * len(model.bodies) + 4
    size_mb = samples * per_sample * 8 / 1e6
    if size_mb > args.max_output_mb:
        raise ValueError(f"the results would take about {size_mb:,.0f} MB ({samples:,} samples x {per_sample:,} "
                         f"numbers): above --max-output-mb {args.max_output_mb:g}; raise --dt or lower --t-end")


def safe_stem(name: str) -> str:
    """A file name from a model name.

    Letters, digits, '-', '_', '.' only, no leading dot (so never a path
    or '..'); only an explicit --out writes elsewhere than results/."""
    stem = re.sub(r"\.{2,}", "_", re.sub(r"[^A-Za-z0-9_.-]+", "_", str(name))).lstrip(".")[:100]
    return stem or "model"


def default_stem(name: str, *variants) -> str:
    """The default result path ``results/<model>[-<variant>...]``.

    The method choices that differ from the default run are part of the
    name, so runs of one model with other algorithms, reference points or integrators do not overwrite it."""
    return "-".join([safe_stem(name)] + [safe_stem(v) for v in variants if v])
