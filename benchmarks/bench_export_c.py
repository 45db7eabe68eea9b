#!/usr/bin/env python
"""Speed of the standalone C export (mbgen export-c, issue 26) against the Python module's compiled kernel.

For each model it builds the Python module (codegen.build, the default -O3 -march=native build unless MBGEN_OPT /
MBGEN_NATIVE say otherwise), exports the same model to C at the same analysis reference point, and compiles the
export twice into a shared library with a small C timing loop:

  * "matched": the Python module's C flags (-O3 -march=native -fno-math-errno -ffp-contract=fast: Cython compiles
    in GNU mode, where contraction into fused multiply-adds is on);
  * "Makefile": the export's own Makefile defaults (-std=c99 -O2).

Forward dynamics per call is timed in compiled loops on both sides (System.kernel.time_forward_dynamics; the C
loop around NAME_forward_dynamics), interleaved round by round; the medians and their ratio are printed.

    python benchmarks/bench_export_c.py                  # humanoid, chain(50), random_tree(30)
    python benchmarks/bench_export_c.py --rounds 15 --calls 20000
"""
from __future__ import annotations

import argparse
import ctypes
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))          # run from a checkout without installing

import codegen  # noqa: E402
from codegen.compiler.export_c import export_c  # noqa: E402
from codegen.models import chain, humanoid, random_state, random_tree  # noqa: E402

BENCH_C = r"""
#define _POSIX_C_SOURCE 199309L
#include <time.h>
#include "%(P)s.h"
double timing_fd(%(P)s_workspace* ws, const double* q, const double* u, double* out, int repeats)
{
    struct timespec a, b;
    int k;
    clock_gettime(CLOCK_MONOTONIC, &a);
    for (k = 0; k < repeats; k++)
        %(P)s_forward_dynamics(ws, 0.0, q, u, NULL, out);
    clock_gettime(CLOCK_MONOTONIC, &b);
    return ((double)(b.tv_sec - a.tv_sec) + 1e-9 * (double)(b.tv_nsec - a.tv_nsec)) / repeats;
}
unsigned long workspace_size(void) { return sizeof(%(P)s_workspace); }
"""
FLAGS = {"matched": ["-O3", "-march=native", "-fno-math-errno", "-ffp-contract=fast"], "Makefile": ["-O2"]}


def models():
    m = random_tree(30, seed=1)
    return {"humanoid": humanoid(), "chain(50)": chain(50), "random_tree(30)": m}


def c_library(model, ref_point, folder: Path, flags):
    prefix = export_c(model, folder, ref_point, prefix="mb")[0].stem
    (folder / "timing_loop.c").write_text(BENCH_C % {"P": prefix})
    cc = shutil.which("cc") or "gcc"
    so = folder / f"libtiming_{flags[0][1:]}{len(flags)}.so"
    subprocess.run([cc, "-std=c99", *flags, "-shared", "-fPIC", "-o", str(so), str(folder / f"{prefix}.c"),
                    str(folder / "timing_loop.c"), "-lm"], check=True)
    lib = ctypes.CDLL(str(so))
    lib.workspace_size.restype = ctypes.c_ulong
    ws = ctypes.create_string_buffer(lib.workspace_size())
    getattr(lib, f"{prefix}_init")(ws)
    lib.timing_fd.restype = ctypes.c_double
    lib.timing_fd.argtypes = [ctypes.c_void_p] + [ctypes.POINTER(ctypes.c_double)] * 3 + [ctypes.c_int]
    return lib, ws


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--ref-point", default="centroid", choices=["centroid", "joint", "origin"])
    ap.add_argument("--rounds", type=int, default=11)
    ap.add_argument("--calls", type=int, default=20000, help="forward-dynamics calls per timed round")
    args = ap.parse_args()
    ptr = lambda a: a.ctypes.data_as(ctypes.POINTER(ctypes.c_double))   # noqa: E731
    print(f"{'model':<16} {'nv':>4} {'python module':>14} {'C matched':>11} {'ratio':>7} {'C Makefile':>11} "
          f"{'ratio':>7}   (us per forward-dynamics call, medians of {args.rounds} interleaved rounds)")
    with tempfile.TemporaryDirectory(prefix="mbgen-bench-c-") as tmp:
        for name, m in models().items():
            s = codegen.build(m, ref_point=args.ref_point)
            q, u = random_state(m, np.random.default_rng(0))
            q, u = np.ascontiguousarray(q), np.ascontiguousarray(u)
            out = np.zeros(m.nv)
            libs = {}
            for kind, flags in FLAGS.items():
                folder = Path(tmp) / f"{name.replace('(', '_').replace(')', '')}_{kind}"
                libs[kind] = c_library(m, args.ref_point, folder, flags)
                lib, ws = libs[kind]
                lib.timing_fd(ws, ptr(q), ptr(u), ptr(out), 10)
                assert np.max(np.abs(out - s.forward_dynamics(q, u))) <= 1e-10 * max(1.0, np.max(np.abs(out)))
            times = {"py": [], **{k: [] for k in FLAGS}}
            for _ in range(args.rounds):
                times["py"].append(s.kernel.time_forward_dynamics(q, u, args.calls))
                for kind, (lib, ws) in libs.items():
                    times[kind].append(lib.timing_fd(ws, ptr(q), ptr(u), ptr(out), args.calls))
            med = {k: statistics.median(v) * 1e6 for k, v in times.items()}
            print(f"{name:<16} {m.nv:>4} {med['py']:>14.3f} {med['matched']:>11.3f} {med['matched'] / med['py']:>7.3f} "
                  f"{med['Makefile']:>11.3f} {med['Makefile'] / med['py']:>7.3f}", flush=True)


if __name__ == "__main__":
    main()
