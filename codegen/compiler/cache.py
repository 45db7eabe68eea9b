"""Compile rendered kernels with Cython and cache them by content hash.

The build key hashes what shapes the generated code: the model topology and every name that reaches the
source (not its numbers), the algorithm and its options, the templates and the generator's own source
(model, symbolic, algorithms, build layers), the Cython, compiler and Python versions, and the processor
(kernels are compiled with -march=native where the compiler takes it; MBGEN_NATIVE=0 for a portable build). A hit imports
the cached extension; a miss builds in a temporary folder and renames the finished files into place under
a file lock, so concurrent builds of one model are safe.

Faults: each entry's build.json records the SHA-256 of its extension and the Python and Cython versions
that built it, and all of that is checked before the extension is imported, so a truncated, corrupted or
foreign module is rebuilt (with a CacheWarning naming the entry) and never loaded. Temporary folders are
named `.KEY.PID.KIND.XXXX`; one left by a killed build (its process is gone, or it is older than an hour)
is swept, under that entry's lock, by the next build that misses. A crashed holder's `.lock` file does not
block: the lock is an flock(2), released by the kernel. Entries get the user's umask.
"""
from __future__ import annotations

import contextlib
import errno
import hashlib
import importlib.util
import json
import os
import platform
import re
import shutil
import stat
import subprocess
import sys
import sysconfig
import tempfile
import threading
import time
import warnings
from functools import lru_cache
from pathlib import Path
from typing import Optional

from .._metadata import dist_version
from .._version import __version__
from ..algorithms import BuildError, family
from ..symbolic import persist
from . import trust
from .render import PACKAGE_DIR, names_key, render, template_dir


def default_cache_dir() -> Path:
    """$MBGEN_CACHE_DIR, else generated/ in a source checkout, else the user cache folder (platformdirs)."""
    env = os.environ.get("MBGEN_CACHE_DIR")
    if env:
        return Path(env).expanduser()
    checkout = PACKAGE_DIR.parent
    if (checkout / "pyproject.toml").is_file() and (checkout / "generated").is_dir():
        return checkout / "generated"
    import platformdirs
    return Path(platformdirs.user_cache_dir("mbgen", appauthor=False))


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
def _source_fingerprint() -> str:
    """Hash of every source a generated module depends on.

    Hash of every source a generated module depends on (templates, model, symbolic, algorithms, compiler), so
    that any change to them rebuilds the cached modules (the C export's templates too: the lanes are printed from them)."""
    h = hashlib.sha256()
    files = sorted(template_dir().rglob("*.j2")) + \
        [f for layer in ("model", "symbolic", "algorithms", "compiler") for f in sorted((PACKAGE_DIR / layer).rglob("*.py"))]
    for f in files:
        rel = f.as_posix().split("/templates/")[-1].split("/codegen/")[-1]
        h.update(rel.encode())
        h.update(f.read_bytes())
    return h.hexdigest()


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


def code_pattern(model, algorithm: str):
    """The structure the family's kernel is specialised to beyond the topology, or None.

    The structure the family's kernel is specialised to beyond the topology (rigid trees: per body whether
    offsets are zero and joint frames unrotated, codegen.algorithms.tree_plan.Plan.code_pattern), or None."""
    plan = family(algorithm, model).make_plan(model)
    f = getattr(plan, "code_pattern", None)
    return f() if f is not None else None


def build_key(model, algorithm: str, options: dict, derivatives: bool = False) -> str:
    """The build key of a model's kernel module: a hash of everything the generated code depends on."""
    flags = opt_flags()
    opt = {} if flags == ["-O3"] else {"opt": flags}                   # (the default's keys as before)
    if not lanes_enabled():
        opt["lanes"] = False
    payload = json.dumps({"topology": model.topology_key(), "pattern": code_pattern(model, algorithm),
                          "names": names_key(model),
                          "algorithm": algorithm, "options": options, "derivatives": bool(derivatives),
                          "generator": __version__, "sources": _source_fingerprint(),
                          "toolchain": _toolchain_fingerprint(), "cpu": cpu_fingerprint(), **opt}, sort_keys=True)
    return hashlib.sha256(payload.encode()).hexdigest()[:20]


@lru_cache(maxsize=None)
def accepted_flags(flags: tuple) -> list:
    """Those of the C compiler flags `flags` that the compiler takes (each probed once per process)."""
    return [f for f in flags if _cc_accepts([f])]


def _compile(pyx: Path, build_dir: Path, modname: str, quiet: bool, extra=(), cflags=()) -> Path:
    """Cythonize and compile one .pyx (and the C files `extra`) inside build_dir; returns the extension path.

    cflags: C compiler flags beyond the build's own (the family's, codegen.algorithms.family.Family.cflags)."""
    from Cython.Build import cythonize
    from setuptools import Distribution, Extension
    from setuptools.command.build_ext import build_ext

    import numpy
    omp = openmp_flags()
    vm_macros, vm_libs = vector_math_flags() if extra else ((), ())
    ext = Extension(modname, [str(pyx), *map(str, extra)], include_dirs=[numpy.get_include()],
                    define_macros=[("NPY_NO_DEPRECATED_API", "NPY_1_7_API_VERSION"), *vm_macros],
                    # -g0: no debug information (Python's own CFLAGS carry -g): a third less compile time
                    extra_compile_args=opt_flags() + ["-g0", "-fno-math-errno", "-w"] + native_flags() + omp + list(cflags),
                    libraries=list(vm_libs), extra_link_args=omp)
    with _captured(quiet):           # Cython prints its own traceback of a failure (a full disk): kept, not shown
        exts = cythonize([ext], quiet=True, language_level=3,
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


def resolve_options(algorithm: str, **options) -> dict:
    """The options of `algorithm` with defaults filled in (BuildError for unknown ones)."""
    return family(algorithm).resolve_options(**options)


def module_sources(fam, plan, options: dict, key: str, derivatives: bool = False) -> dict:
    """The sources of one model's module: the Cython source, its lanes, its family's C flags.

    {"pyx": the Cython source, "c": its lanes, when it has them, "cflags": the family's own C flags that the
    compiler takes}.

    The lanes (templates/c/lanes.c.j2: forward dynamics and RK4 over several states per pass) come with the
    recursive family for the models the C export carries."""
    from .export_c import lanes_source          # here: a cached build renders nothing (start-up time)
    lanes = lanes_source(plan.model, plan, options["ref_point"]) if fam.name == "recursive" and lanes_enabled() \
        else None
    out = {"pyx": render(fam, plan, options, key, derivatives, lanes=lanes is not None),
           "cflags": accepted_flags(fam.cflags)}
    if lanes is not None:
        out["c"] = lanes
    return out


def build_module(model, algorithm: str = "recursive", cache_dir=None, progress: bool = False,
                 derivatives: bool = False, **options):
    """Generate and compile (or fetch from the cache) the kernel module for a model.

    Derivatives: with the
    derivative kernels (templates/shared/derivatives.pyx.j2: about 40 % more compile time, so only on request).

    Returns (module, info) where info holds the key, paths, timings and the resolved options.
    """
    fam = family(algorithm, model)
    options = fam.resolve_options(**options)
    if fam.check is not None:
        fam.check(model)
    key = build_key(model, algorithm, options, derivatives)
    label = f"build {model.name} [{algorithm}{', derivatives' if derivatives else ''}]"
    mod, info = cached_module(key, f"mbgen_{algorithm}_{key}", label,
                              lambda: module_sources(fam, fam.make_plan(model), options, key, derivatives), cache_dir,
                              progress, meta={"model": model.name, "algorithm": algorithm, "options": options,
                                              "derivatives": bool(derivatives)})
    info["options"] = options
    return mod, info


class CacheWarning(UserWarning):
    """A cache entry could not be trusted (corrupt, truncated, foreign) and is being rebuilt."""


STALE_AFTER_S = 3600.0        # a temporary folder this old is swept even if a process with its pid is alive
FAILED_MARK = "BUILD-FAILED"  # in the temporary folder of a failed compilation: kept (for reading) that long
_MISSING = "missing"
_KEY_RE = re.compile(r"[0-9a-f]{20}")


def _ext_suffix() -> str:
    return sysconfig.get_config_var("EXT_SUFFIX") or ".so"


@lru_cache(maxsize=None)
def _runtime_versions() -> dict:
    return {"python": sys.version, "cython": _dist_version("Cython")}


_umask_lock = threading.Lock()
_umask_cached: Optional[int] = None


def current_umask() -> int:
    """The process umask.

    Read from /proc/self/status where there is one (no change to the process state);
    otherwise read once with os.umask - set to the restrictive 0o077 for that instant, so a file another
    thread creates meanwhile is never more open than wanted - and restored."""
    global _umask_cached
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    with _umask_lock:
        if _umask_cached is None:
            _umask_cached = os.umask(0o077)
            os.umask(_umask_cached)
        return _umask_cached


class DerivedStore:
    """The derivations of codegen.symbolic.persist in ``<cache>/derived``, one JSON file each.

    Read only from regular files of the user's that nobody else can write, in a folder nobody else can write
    (trust.open_trusted: the printed code ends up compiled into a module); written to a temporary file and renamed
    into place (readers see a whole file or none); a cache that cannot be written keeps none (nothing fails)."""

    LIMIT = 16 << 20                 # bytes of one file (the largest, a 64-entry Jacobian, is about 100 kB)

    def __init__(self, cache: Path):
        self.folder = Path(cache) / "derived"

    def _trusted_folder(self) -> bool:
        try:
            st = os.stat(self.folder, follow_symlinks=False)
        except OSError:
            return False
        return stat.S_ISDIR(st.st_mode) and trust.foreign(st, "") is None

    def get(self, name: str) -> Optional[bytes]:
        """The file's bytes, or None (missing, unreadable or not trusted)."""
        if not self._trusted_folder():
            return None
        try:
            with trust.open_trusted(self.folder / name, self.LIMIT) as fh:
                return fh.read()
        except (OSError, trust.Untrusted):
            return None

    def put(self, name: str, data: bytes) -> None:
        """Store `data` as the file `name` (nothing where the cache cannot be written)."""
        try:
            os.makedirs(self.folder, mode=0o755, exist_ok=True)
            if not self._trusted_folder():
                return
            fd, tmp = tempfile.mkstemp(dir=self.folder, prefix=".", suffix=".tmp")
            try:
                with os.fdopen(fd, "wb") as fh:
                    fh.write(data)
                os.chmod(tmp, 0o644 & ~current_umask())
                os.replace(tmp, self.folder / name)
            except BaseException:
                os.unlink(tmp)
                raise
        except OSError:
            pass


def _sha256(path: Path, limit: int = trust.EXTENSION_LIMIT) -> str:
    h = hashlib.sha256()
    with trust.open_trusted(path, limit) as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def entry_problem(target: Path, modname: str) -> Optional[str]:
    """Why cache entry `target` cannot be trusted, or None if it can.

    Why cache entry `target` cannot be trusted ('missing' if absent), or None if it can: build.json is
    readable and names this entry, the Python and Cython versions are ours, and the extension's SHA-256 is
    the one recorded at build time. Reads files only; nothing is imported."""
    target = Path(target)
    problem = trust.entry_folder_problem(target)          # a symbolic link, someone else's folder, ...
    if problem is not None:
        return problem
    try:
        with trust.open_trusted(target / "build.json", trust.BUILD_JSON_LIMIT) as fh:
            meta = json.loads(fh.read())
    except FileNotFoundError:
        return "build.json is missing"
    except trust.Untrusted as e:
        return str(e)
    except (OSError, ValueError) as e:        # UnicodeDecodeError and JSONDecodeError are ValueErrors
        return f"build.json is unreadable ({type(e).__name__})"
    if not isinstance(meta, dict):
        return "build.json is not a JSON object"
    if meta.get("key") != target.name or meta.get("module") != modname:
        return "build.json describes another entry"
    for tool, version in _runtime_versions().items():
        if tool not in meta:
            return f"build.json does not record the {tool} version"
        if meta[tool] != version:
            return f"built by {tool} {meta[tool]!r}, this is {tool} {version!r}"
    so_path = target / (modname + _ext_suffix())
    expected = meta.get("sha256")
    if not isinstance(expected, str):
        return "build.json records no checksum of the extension"
    try:
        digest = _sha256(so_path)
    except FileNotFoundError:
        return f"{so_path.name} is missing"
    except trust.Untrusted as e:
        return str(e)
    except OSError as e:
        return f"{so_path.name} is unreadable ({e})"
    if digest != expected:
        return f"{so_path.name} does not match the SHA-256 recorded in build.json (truncated or corrupted)"
    return None


def cached_module(key: str, modname: str, label: str, source, cache_dir=None, progress: bool = False,
                  meta: Optional[dict] = None):
    """Import module `modname` from cache entry `key`, building it there if needed.

    Import module `modname` from cache entry `key`, first rendering `source()` (the pyx text, or {"pyx": ...,
    "c": a second C translation unit}) and compiling it there if the entry is missing or fails entry_problem() (then with a CacheWarning). Under a file lock; the entry
    folder appears complete or not at all. `meta` (model name, ...) is recorded in build.json."""
    cache = trust.cache_folder(Path(cache_dir) if cache_dir else default_cache_dir())    # the user's alone
    persist.install(DerivedStore(cache))            # the derivations a build needs, kept between processes
    target = cache / key
    so_path = target / (modname + _ext_suffix())
    info = {"key": key, "module": modname, "path": str(so_path), "cache_dir": str(cache), "hit": True,
            "generate_s": 0.0, "compile_s": 0.0}
    for attempt in range(2):
        if entry_problem(target, modname) is not None:
            from filelock import FileLock             # here: a hit takes no lock (start-up time)
            trust.check_lock(cache / f"{key}.lock")
            try:
                with FileLock(str(cache / f"{key}.lock")):
                    problem = entry_problem(target, modname)      # another process may have built it meanwhile
                    if problem is not None:
                        if problem != _MISSING:
                            warnings.warn(f"mbgen: cache entry {target} cannot be trusted: {problem}; rebuilding it",
                                          CacheWarning, stacklevel=3)
                        info["hit"] = False
                        sweep_temp_folders(cache, held_key=key)
                        _build_into(source, modname, target, info, label, progress, meta or {})
            except OSError as e:                  # a read-only or full file system, a quota
                raise BuildError(f"cannot write the build cache {cache}: {e.strerror or e} (a full or read-only file "
                                 f"system? set MBGEN_CACHE_DIR or --cache-dir to another folder)") from None
        mod = sys.modules.get(modname)
        if mod is not None:
            return mod, info
        try:
            spec = importlib.util.spec_from_file_location(modname, so_path)
            mod = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(mod)
        except (ImportError, OSError):
            if attempt == 0 and entry_problem(target, modname) is not None:
                continue                      # removed or replaced (mbgen cache clean) since the check
            raise
        sys.modules[modname] = mod
        return mod, info
    raise AssertionError("unreachable")


def _build_into(source, modname, target, info, label, progress, meta):
    """Build into a temporary folder and rename it to `target`.

    Build in `.KEY.PID.build.XXXX`, assemble the entry in it, rename it to `target` (the caller holds the
    entry's lock). A failed compilation keeps its folder, marked FAILED_MARK, for an hour."""
    from tqdm import tqdm
    key = target.name
    tmp = Path(tempfile.mkdtemp(prefix=f".{key}.{os.getpid()}.build.", dir=str(target.parent)))
    try:
        with tqdm(total=3, desc=label, unit="step", disable=not progress, leave=False) as bar:
            t0 = time.perf_counter()
            bar.set_postfix_str("derive + render")
            pyx = tmp / f"{modname}.pyx"
            text = source()
            text = text if isinstance(text, dict) else {"pyx": text}       # "c": a second translation unit
            pyx.write_text(text["pyx"])
            extra = []
            if "c" in text:
                extra = [tmp / f"{modname}_lanes.c"]
                extra[0].write_text(text["c"])
            info["generate_s"] = time.perf_counter() - t0
            bar.update(1)
            bar.set_postfix_str("cython + cc")
            t1 = time.perf_counter()
            try:
                built = _compile(pyx, tmp, modname, quiet=True, extra=extra, cflags=text.get("cflags", ()))
            except Exception as e:
                code = disk_error(e)
                if code is not None:          # no room for the build: its folder goes, the caller names the cache
                    raise OSError(code, os.strerror(code)) from None
                try:
                    (tmp / FAILED_MARK).touch()
                except OSError:
                    pass
                raise BuildError(f"compiling {pyx.name} failed; the sources are kept in {tmp} (for an hour)\n"
                                 f"{_cython_errors(pyx)}") from e
            info["compile_s"] = time.perf_counter() - t1
            bar.update(1)
            _assemble_entry(tmp, target, modname, [pyx, tmp / f"{modname}.c", *extra, built], info, meta)
            bar.update(1)
    except BaseException:
        if not (tmp / FAILED_MARK).exists():
            shutil.rmtree(tmp, ignore_errors=True)
        raise
    shutil.rmtree(tmp, ignore_errors=True)


def _assemble_entry(tmp: Path, target: Path, modname: str, files, info: dict, meta: dict):
    """Move the products into the entry and rename it over `target`.

    Move the products into tmp/entry, record build.json (checksum, versions, meta), set the umask's
    permissions, and rename it over `target` (any old entry goes into tmp first, so readers see the old
    entry or the new one or none, never a mixture)."""
    staging = tmp / "entry"
    staging.mkdir()
    so_name = modname + _ext_suffix()
    for f in files:
        if f.exists():
            os.replace(f, staging / f.name)
    record = dict(meta)                       # model name, algorithm, options: reported by `mbgen cache info`
    record.update({k: v for k, v in info.items() if k != "hit"})
    record.update(_runtime_versions())
    record.update({"generator": __version__, "ext_suffix": _ext_suffix(), "built_at": time.time(),
                   "sha256": _sha256(staging / so_name), "size": (staging / so_name).stat().st_size})
    (staging / "build.json").write_text(json.dumps(record, indent=1, default=str))
    umask = current_umask() | 0o022           # the umask's permissions, never writable by others (trust.py)
    for f in staging.iterdir():
        executable = f.stat().st_mode & 0o111 if f.name == so_name else 0   # as the linker made the .so
        os.chmod(f, (0o666 | executable) & ~umask)
    os.chmod(staging, 0o777 & ~umask)
    if os.path.lexists(target):
        os.replace(target, tmp / "old")
    os.replace(staging, target)               # atomic: the folder appears complete or not at all


def _temp_folder_owner(name: str):
    """The (key, pid or None) of one of our temporary folder names, or None.

    (key, pid or None) of a temporary folder name `.KEY.PID.build.XXXX` or `.KEY.PID.trash.XXXX` (older
    mbgen: `.KEY.XXXX`, `.KEY.stage.XXXX` with a 20-hex key), or None if the name is not one of ours."""
    parts = name[1:].split(".") if name.startswith(".") else []
    if len(parts) == 4 and parts[0] and parts[1].isdigit() and parts[2] in ("build", "trash"):
        return parts[0], int(parts[1])
    if len(parts) in (2, 3) and _KEY_RE.fullmatch(parts[0]) and (len(parts) == 2 or parts[1] == "stage"):
        return parts[0], None
    return None


def _pid_alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:          # someone else's process
        return True
    except (OSError, OverflowError):
        return False
    try:                             # a zombie (killed, not yet reaped) is dead for our purposes
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return True


def _is_stale(folder: Path, pid: Optional[int], max_age: float, now: float) -> bool:
    try:
        age = now - folder.stat().st_mtime
    except OSError:
        return False
    if (folder / FAILED_MARK).exists():
        return age > max_age
    return pid is None or age > max_age or not _pid_alive(pid)


def sweep_temp_folders(cache_dir, held_key: Optional[str] = None, max_age: float = STALE_AFTER_S) -> list:
    """Remove the temporary folders a killed or failed build left in the cache.

    Those whose process is gone
    or that are older than max_age seconds (failed compilations: only by age). Each only under its entry's
    lock - already held for `held_key`, else taken without waiting (a build holding it is alive: skip).
    Returns the removed paths."""
    from filelock import FileLock, Timeout

    cache = Path(cache_dir)
    now = time.time()
    by_key = {}
    try:
        listing = list(cache.iterdir())
    except OSError:
        return []
    for folder in listing:
        owner = _temp_folder_owner(folder.name)
        if owner is not None and folder.is_dir() and not folder.is_symlink():
            by_key.setdefault(owner[0], []).append((folder, owner[1]))
    removed = []
    for key, folders in sorted(by_key.items()):
        if not any(_is_stale(f, pid, max_age, now) for f, pid in folders):
            continue
        lock = None
        if key != held_key:
            lock = FileLock(str(cache / f"{key}.lock"))
            try:
                lock.acquire(timeout=0)
            except (Timeout, OSError):
                continue
        try:
            for folder, pid in folders:
                if _is_stale(folder, pid, max_age, now):
                    shutil.rmtree(folder, ignore_errors=True)
                    if not folder.exists():
                        removed.append(folder)
        finally:
            if lock is not None:
                lock.release()
    return removed


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


def generated_source(model, algorithm: str = "recursive", **options) -> str:
    """The Cython source that would be compiled for this model (for inspection)."""
    fam = family(algorithm, model)
    options = fam.resolve_options(**options)
    return module_sources(fam, fam.make_plan(model), options, build_key(model, algorithm, options))["pyx"]
