"""mbgen export-c MODEL --out DIR [--algorithm recursive|dense] [--ref-point ...] [--prefix NAME]: standalone C99."""
from __future__ import annotations

from .common import Formatter, add_model_args, load_spec

DESCRIPTION = """The model's dynamics as a standalone C99 library, for a controller, an MPC solver or a board:
  NAME.h          sizes, coordinate table, the caller-owned workspace struct, documented prototypes
  NAME.c          forward dynamics (--algorithm recursive: Kang & Yoon's O(n) recursion; dense: CRBA
                  mass matrix, RNEA bias, Cholesky), inverse dynamics (RNEA), mass matrix, joint
                  reaction wrenches, RK4 step and rollout, parameter setting, the analytical
                  derivatives of forward and inverse dynamics (tangent space, NV x NV); no
                  allocation, no written globals
  NAME_params.h   the model's parameter vector (the Python module's), initial state
  NAME_main.c     forward dynamics and joint wrenches at the initial state, a short RK4 simulation
  CMakeLists.txt, Makefile
and CasADi external functions NAME_fd, NAME_id, NAME_jw and the derivatives' NAME_fdd, NAME_idd:
casadi.external("NAME_fd", "libNAME.so").
The same sympy kernels as the Cython module. Gravity, armature, joint spring-dampers and joint forces are
compiled in; a model with what the export does not carry yet (actuators, limits, friction, tendons, point
springs, closed loops, couplings, flexible beams) is refused by name (exit 2), never exported without it.
Build: make (or cmake -S DIR -B DIR/build && cmake --build DIR/build); run: make run."""


def register(sub):
    """Register the command ``export-c``."""
    from ..compiler.export_c import EXPORT_FAMILIES, REF_POINTS
    s = sub.add_parser("export-c", help="write the model's dynamics as a standalone C library", formatter_class=Formatter,
                       description=DESCRIPTION)
    add_model_args(s, build=False)
    s.add_argument("--out", required=True, help="folder to write the files into (created if needed)")
    s.add_argument("--algorithm", default=EXPORT_FAMILIES[0], choices=list(EXPORT_FAMILIES),
                   help="algorithm family: the families that export to C (recursive: O(n); dense: the O(n^3) "
                        "reference)")
    s.add_argument("--ref-point", default=REF_POINTS[0], choices=list(REF_POINTS),
                   help="recursive: analysis reference point (dense has none)")
    s.add_argument("--prefix", default=None,
                   help="C name of the files and functions (default: from the model name)")
    s.set_defaults(fn=cmd_export_c)


def cmd_export_c(args):
    """Run ``mbgen export-c``."""
    from ..compiler.export_c import check_exportable, check_prefix, export_c
    if args.prefix is not None:
        check_prefix(args.prefix)
    m = load_spec(args.model, args)
    check_exportable(m, args.algorithm)
    for path in export_c(m, args.out, args.ref_point, args.prefix, args.algorithm):
        print(path)
