"""The C toolchain: its fingerprint, the flags it takes (probed once per process), and the compile step.

Kernels are compiled with -march=native where the compiler takes it (MBGEN_NATIVE=0 for a portable build), at
-O3 or $MBGEN_OPT, with OpenMP and glibc's vector sin and cos where they link; `_compile` runs Cython and the C compiler
on one module (its output captured with quiet builds, a full disk named by disk_error)."""
from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import os
import platform
import subprocess
import sys
import sysconfig
import tempfile
from functools import lru_cache
from pathlib import Path
from typing import Optional

from .._metadata import dist_version


def _dist_version(name: str) -> str:
    """An installed distribution's version without importing it (start-up time)."""
    return dist_version(name, default="unknown")


@lru_cache(maxsize=None)
def _toolchain_fingerprint() -> str:
    cc = sysconfig.get_config_var("CC") or "cc"
    try:
        ver = subprocess.run(cc.split()[:1] + ["--version"], capture_output=True, text=True,
                             timeout=20).stdout.splitlines()[:1]
    except (OSError, subprocess.SubprocessError):
        ver = ["unknown"]
    return json.dumps([_dist_version("Cython"), cc, ver, sys.version, platform.machine(),
                       sysconfig.get_config_var("EXT_SUFFIX"), _dist_version("numpy")])


@lru_cache(maxsize=None)
def cpu_fingerprint() -> str:
    """The processor the kernels are tuned for (``-march=native``).

    Its model name and feature flags from
    /proc/cpuinfo (elsewhere platform.processor()), so a cache shared by different machines keeps one entry
    per processor kind and never loads code with instructions a machine lacks. "portable" when
    MBGEN_NATIVE=0 (then kernels are built for the compiler's default target)."""
    if os.environ.get("MBGEN_NATIVE", "1") == "0":
        return "portable"
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            info = f.read(1 << 16)
        keep = [ln for ln in info.splitlines() if ln.split(":")[0].strip() in ("model name", "flags", "Features",
                                                                                "CPU implementer", "CPU part")]
        text = "\n".join(dict.fromkeys(keep))                  # one line of each kind (all cores alike)
    except OSError:
        text = platform.processor() or platform.machine()
    return hashlib.sha256(text.encode()).hexdigest()[:16]


OPT_LEVELS = ("0", "1", "2", "3", "g", "s")      # MBGEN_OPT: the C compiler's -O levels


def opt_flags() -> list:
    """The C optimisation flags; part of the build key.

    -O3, or -O$MBGEN_OPT. The test suite sets MBGEN_OPT=g (tests/conftest.py): -Og compiles a module in a quarter of
    -O3's C time and about half of -O1's, and its kernels run about as fast as -O1's. It contracts no a*b+c into fused
    multiply-adds, so its numbers differ from -O3's at round-off only, as -O1's did (tests/compiler/test_build.py
    checks 1e-12).

    Raises
    ------
    ValueError
        MBGEN_OPT is not one of the levels 0, 1, 2, 3, g, s.
    """
    level = os.environ.get("MBGEN_OPT", "3")
    if level not in OPT_LEVELS:
        raise ValueError(f"MBGEN_OPT must be one of {', '.join(OPT_LEVELS)} (the C compiler's -O level), "
                         f"got {level!r}")
    return [f"-O{level}"]


def lanes_enabled() -> bool:
    """Whether recursive modules carry their lanes (templates/c/lanes.c.j2); part of the build key.

    True unless MBGEN_LANES=0. The test suite sets it to 0 (tests/conftest.py): the lanes are about an eighth of a
    recursive module's compile time, and only the tests of the lanes (which build with it on) call them. Without
    lanes the batches run one state per pass (System.lanes is 1), with the same results as simd=False."""
    return os.environ.get("MBGEN_LANES", "1") != "0"


@lru_cache(maxsize=None)
def native_flags() -> list:
    """The flag ``-march=native`` if the C compiler takes it.

    ["-march=native"] if the C compiler takes it (probed when a kernel is compiled), else []; [] when
    MBGEN_NATIVE=0. Worth 4-9 % per RK4 step on chain(20..100) (FMA, wider vectors)."""
    if cpu_fingerprint() == "portable":
        return []
    return ["-march=native"] if _cc_accepts(["-march=native"]) else []


def _cc_accepts(flags: list, source: str = "int main(void) { return 0; }\n", libs: tuple = ()) -> bool:
    cc = (sysconfig.get_config_var("CC") or "cc").split()
    with tempfile.TemporaryDirectory(prefix="mbgen-cc-") as tmp:
        src = Path(tmp) / "probe.c"
        src.write_text(source)
        try:
            return subprocess.run(cc + flags + [str(src), "-o", str(Path(tmp) / "probe"), *libs], capture_output=True,
                                  timeout=60).returncode == 0
        except (OSError, subprocess.SubprocessError):
            return False


@lru_cache(maxsize=None)
def openmp_flags() -> list:
    """The flag ``-fopenmp`` if the C compiler builds and links an OpenMP program with it.

    ["-fopenmp"] if the C compiler builds and links an OpenMP program with it, else [] (the batch loops of
    the kernels then run on one thread; the module's OPENMP says which). MBGEN_OPENMP=0 turns it off. Probed
    when a kernel is compiled, not part of the build key (no compiler run at start-up)."""
    if os.environ.get("MBGEN_OPENMP", "1") == "0":
        return []
    return ["-fopenmp"] if _cc_accepts(["-fopenmp"], "#include <omp.h>\nint main(void) { int n = 0;\n"
                                       "#pragma omp parallel reduction(+:n)\nn += 1;\n"
                                       "return omp_get_max_threads() > 0 && n > 0 ? 0 : 1; }\n") else []


@lru_cache(maxsize=None)
def vector_math_flags() -> tuple:
    """glibc's vector sin and cos (libmvec) for the lanes: (define_macros, libraries), or ((), ()).

    The lanes (templates/c/lanes.c.j2) call ``_ZGVdN4v_sin`` and ``_ZGVdN4v_cos`` (4 lanes of AVX2, at most 4 ulp:
    to round-off the scalar libm) where the C compiler links them with ``-lmvec``, else sin and cos lane by lane
    (they were half the time of the inverse dynamics in lanes). Probed when a kernel is compiled, like
    openmp_flags; MBGEN_LIBMVEC=0 turns it off."""
    if os.environ.get("MBGEN_LIBMVEC", "1") == "0":
        return (), ()
    ok = _cc_accepts(["-mavx2"], libs=("-lmvec",), source="#include <immintrin.h>\n__m256d _ZGVdN4v_sin(__m256d);\n"
                     "__m256d _ZGVdN4v_cos(__m256d);\nint main(void) { volatile double d = 0.5;\n"
                     "__m256d x = _ZGVdN4v_sin(_mm256_set1_pd(d)), y = _ZGVdN4v_cos(x);\n"
                     "return _mm256_cvtsd_f64(y) > 0.0 ? 0 : 1; }\n")
    return ((("MB_LIBMVEC", "1"),), ("mvec",)) if ok else ((), ())


@lru_cache(maxsize=None)
def accepted_flags(flags: tuple) -> list:
    """Those of the C compiler flags `flags` that the compiler takes (each probed once per process)."""
    return [f for f in flags if _cc_accepts([f])]


def _compile(pyx: Path, build_dir: Path, modname: str, quiet: bool, extra=(), cflags=(), macros=()) -> Path:
    """Cythonize and compile one .pyx (and the C files `extra`) inside build_dir; returns the extension path.

    cflags: C compiler flags beyond the build's own (the family's, codegen.algorithms.family.Family.cflags);
    macros: (name, value) pairs defined for the C compiler. The package's .pxd files (the engine's,
    codegen/compiler/engine.pxd) are on Cython's include path."""
    from Cython.Build import cythonize
    from setuptools import Distribution, Extension
    from setuptools.command.build_ext import build_ext

    import numpy
    omp = openmp_flags()
    vm_macros, vm_libs = vector_math_flags() if extra else ((), ())
    ext = Extension(modname, [str(pyx), *map(str, extra)], include_dirs=[numpy.get_include()],
                    define_macros=[("NPY_NO_DEPRECATED_API", "NPY_1_7_API_VERSION"), *vm_macros, *macros],
                    # -g0: no debug information (Python's own CFLAGS carry -g): a third less compile time
                    extra_compile_args=opt_flags() + ["-g0", "-fno-math-errno", "-w"] + native_flags() + omp + list(cflags),
                    libraries=list(vm_libs), extra_link_args=omp)
    with _captured(quiet):           # Cython prints its own traceback of a failure (a full disk): kept, not shown
        exts = cythonize([ext], quiet=True, language_level=3, include_path=[str(Path(__file__).resolve().parents[2])],
                         compiler_directives={"boundscheck": False, "wraparound": False, "cdivision": True})
        dist = Distribution({"name": modname, "ext_modules": exts})
        cmd = build_ext(dist)
        cmd.build_lib = str(build_dir)
        cmd.build_temp = str(build_dir / "tmp")
        cmd.ensure_finalized()
        cmd.run()
    return Path(cmd.get_ext_fullpath(modname))


class CompileFailed(Exception):
    """Cython or the C compiler failed; ``output`` holds what they printed (with quiet builds)."""

    def __init__(self, output: str):
        super().__init__(output[-2000:])
        self.output = output


@contextlib.contextmanager
def _captured(quiet: bool):
    """Capture the process's output for the duration (with quiet).

    With quiet: the process's stdout and stderr (file descriptors 1 and 2: the compiler's too) go to a scratch
    file for the duration; an exception is re-raised as CompileFailed with that output (Ctrl-C passes through)."""
    if not quiet:
        yield
        return
    with tempfile.TemporaryFile() as log:
        for stream in (sys.stdout, sys.stderr):
            stream.flush()
        saved = os.dup(1), os.dup(2)
        os.dup2(log.fileno(), 1)
        os.dup2(log.fileno(), 2)
        failure = None
        text = open(log.fileno(), "w", encoding="utf-8", errors="replace", closefd=False)   # sys.stderr may not
        try:                                                                                  # be fd 2 (pytest)
            with contextlib.redirect_stdout(text), contextlib.redirect_stderr(text):
                yield
        except Exception as e:
            failure = e
        finally:
            for stream in (text, sys.stdout, sys.stderr):
                try:
                    stream.flush()
                except (OSError, ValueError):
                    pass
            text.close()
            for fd, saved_fd in ((1, saved[0]), (2, saved[1])):
                os.dup2(saved_fd, fd)
                os.close(saved_fd)
        if failure is not None:
            log.seek(0)
            raise CompileFailed(log.read(1 << 20).decode("utf-8", "replace")) from failure


_DISK_ERRNOS = tuple(getattr(errno, n) for n in ("ENOSPC", "EDQUOT", "EROFS", "EFBIG") if hasattr(errno, n))


def disk_error(e: BaseException) -> Optional[int]:
    """The errno of a full or read-only file system behind exception ``e``, or None.

    The errno of a full or read-only file system (or a quota) behind exception ``e``: in its chain, or in what
    the compiler printed (CompileFailed); None if there is none."""
    seen = 0
    while e is not None and seen < 20:
        if isinstance(e, OSError) and e.errno in _DISK_ERRNOS:
            return e.errno
        if isinstance(e, CompileFailed):
            for code in _DISK_ERRNOS:
                if os.strerror(code) in e.output:
                    return code
        e, seen = e.__cause__ or e.__context__, seen + 1
    return None


def _cython_errors(pyx: Path) -> str:
    """Cython's own error report for a failed build (first lines), for the BuildError message."""
    import tempfile
    try:
        # the C output goes to a scratch folder, never to os.devnull: Cython deletes its output file when the
        # source has errors, and run as root that unlinks /dev/null itself
        with tempfile.TemporaryDirectory(prefix="mbgen_cython_") as tmp:
            out = subprocess.run([sys.executable, "-m", "cython", "-3", str(pyx), "-o", os.path.join(tmp, "out.c")],
                                 capture_output=True, text=True, timeout=300)
        return "\n".join((out.stdout + out.stderr).splitlines()[:25])
    except (OSError, subprocess.SubprocessError) as e:
        return f"(could not re-run cython: {e})"
