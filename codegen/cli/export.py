"""mbgen export MODEL --format yaml|urdf|mjcf [--out FILE]: a rigid-body tree model in another format."""
from __future__ import annotations

import sys
import warnings

from .common import Formatter, add_model_args, load_spec


def register(sub):
    """Register the command ``export``."""
    s = sub.add_parser("export", help="write a model as our YAML, URDF or MJCF", formatter_class=Formatter,
                       description="Rigid-body tree models (any source: YAML, URDF, MJCF, chain:N, builtins) as\n"
                                   "  yaml  our format, complete and exact;\n"
                                   "  urdf  revolute (as continuous), prismatic, planar, free (floating), fixed joints;\n"
                                   "  mjcf  every joint type (several MuJoCo joints in one body where needed).\n"
                                   "Each body's frame is put at its joint frame, so loading the file back gives the\n"
                                   "same coordinates and the same dynamics to round-off. What a format cannot hold\n"
                                   "(URDF: gravity, force elements; MJCF: point springs, joint forces; both: the\n"
                                   "initial state) is left out with a warning.")
    add_model_args(s, build=False)
    s.add_argument("--format", required=True, choices=["yaml", "urdf", "mjcf"], help="output format")
    s.add_argument("--out", default=None, help="write to this file (default: standard output)")
    s.set_defaults(fn=cmd_export)


def cmd_export(args):
    """Run ``mbgen export``."""
    from ..model.export import export_model
    from ..model.robotfiles import ModelWarning
    m = load_spec(args.model, args)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ModelWarning)
        text = export_model(m, args.format)
    for w in caught:
        print(f"mbgen: warning: {w.message}", file=sys.stderr)
    if args.out:
        from ..runtime import atomic_write
        atomic_write(args.out, lambda fh: fh.write(text.encode()))
        print(args.out)
    else:
        sys.stdout.write(text)
