"""The build cache: generate a model's module, compile it, and keep it by content hash.

A hit imports the cached extension; a miss builds in a temporary folder and renames the finished files into place
under a file lock, so concurrent builds of one model are safe. The parts, one job each: codegen.compiler.key (the build
key), toolchain (the compiler's flags and the compile step), entries (what the cache folder holds and how it is
trusted: a truncated, corrupted or foreign module is rebuilt with a CacheWarning naming the entry, never loaded), trust
(file ownership and permissions), housekeeping (`mbgen cache info|clean`). A crashed holder's `.lock` file does not
block: the lock is an flock(2), released by the kernel.
"""
from __future__ import annotations

import importlib.util
import os
import shutil
import sys
import tempfile
import time
import warnings
from pathlib import Path
from typing import Optional

from ..algorithms import BuildError, family
from ..symbolic import persist
from . import engine_build, trust
from .render import PACKAGE_DIR, render
from .entries import (_MISSING, FAILED_MARK, DerivedStore, _assemble_entry, _ext_suffix, current_umask, entry_problem,
                      sweep_temp_folders)
from .key import build_key
from .toolchain import _compile, _cython_errors, accepted_flags, disk_error, lanes_enabled
# names of the parts that callers (tests, benchmarks) know from here
from .toolchain import CompileFailed, cpu_fingerprint, native_flags, opt_flags  # noqa: F401,E402

__all__ = ["CacheWarning", "CompileFailed", "DerivedStore", "build_key", "build_module", "cached_module",
           "current_umask", "default_cache_dir", "entry_problem", "generated_source", "module_sources",
           "resolve_options", "sweep_temp_folders"]


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
        engine_build.engine(cache)            # the module's base class: the engine, compiled once
        try:
            spec = importlib.util.spec_from_file_location(modname, so_path)
            mod = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(mod)
        except (ImportError, OSError) as e:
            if attempt == 0 and entry_problem(target, modname) is not None:
                continue                      # removed or replaced (mbgen cache clean) since the check
            raise BuildError(f"the module {so_path} does not import: {' '.join(str(e).split())[:300]} (remove the "
                             f"entry with `mbgen cache clean`)") from None
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


def generated_source(model, algorithm: str = "recursive", **options) -> str:
    """The Cython source that would be compiled for this model (for inspection)."""
    fam = family(algorithm, model)
    options = fam.resolve_options(**options)
    return module_sources(fam, fam.make_plan(model), options, build_key(model, algorithm, options))["pyx"]
