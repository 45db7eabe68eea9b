"""Compile rendered kernels with Cython and cache them by content hash.

The build key hashes what shapes the generated code: the model topology and every name that reaches the
source (not its numbers), the algorithm and its options, the templates and the generator's own source
(model, symbolic, algorithms, build layers), and the Cython, compiler and Python versions. A hit imports
the cached extension; a miss builds in a temporary folder and renames the finished files into place under
a file lock, so concurrent builds of one model are safe.
"""
from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import platform
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import time
from functools import lru_cache
from pathlib import Path

from .._version import __version__
from ..algorithms import BuildError, family
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


@lru_cache(maxsize=None)
def _toolchain_fingerprint() -> str:
    import Cython
    cc = sysconfig.get_config_var("CC") or "cc"
    try:
        ver = subprocess.run(cc.split()[:1] + ["--version"], capture_output=True, text=True,
                             timeout=20).stdout.splitlines()[:1]
    except (OSError, subprocess.SubprocessError):
        ver = ["unknown"]
    return json.dumps([Cython.__version__, cc, ver, sys.version, platform.machine(),
                       sysconfig.get_config_var("EXT_SUFFIX")])


@lru_cache(maxsize=None)
def _source_fingerprint() -> str:
    h = hashlib.sha256()
    files = sorted(template_dir().rglob("*.j2")) + \
        [f for layer in ("model", "symbolic", "algorithms", "compiler") for f in sorted((PACKAGE_DIR / layer).rglob("*.py"))]
    for f in files:
        h.update(f.as_posix().split("/templates/")[-1].split("/codegen/")[-1].encode())
        h.update(f.read_bytes())
    return h.hexdigest()


def build_key(model, algorithm: str, options: dict) -> str:
    payload = json.dumps({"topology": model.topology_key(), "names": names_key(model),
                          "algorithm": algorithm, "options": options,
                          "generator": __version__, "sources": _source_fingerprint(),
                          "toolchain": _toolchain_fingerprint()}, sort_keys=True)
    return hashlib.sha256(payload.encode()).hexdigest()[:20]


def _compile(pyx: Path, build_dir: Path, modname: str, quiet: bool) -> Path:
    """Cythonize and compile one .pyx inside build_dir; returns the extension path."""
    from Cython.Build import cythonize
    from setuptools import Distribution, Extension
    from setuptools.command.build_ext import build_ext

    ext = Extension(modname, [str(pyx)], extra_compile_args=["-O3", "-fno-math-errno", "-w"])
    exts = cythonize([ext], quiet=True, language_level=3,
                     compiler_directives={"boundscheck": False, "wraparound": False, "cdivision": True})
    dist = Distribution({"name": modname, "ext_modules": exts})
    cmd = build_ext(dist)
    cmd.build_lib = str(build_dir)
    cmd.build_temp = str(build_dir / "tmp")
    cmd.ensure_finalized()
    if quiet:
        devnull = os.open(os.devnull, os.O_WRONLY)
        saved = os.dup(1), os.dup(2)
        os.dup2(devnull, 1)
        os.dup2(devnull, 2)
        try:
            cmd.run()
        finally:
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
            os.close(devnull)
    else:
        cmd.run()
    return Path(cmd.get_ext_fullpath(modname))


def resolve_options(algorithm: str, **options) -> dict:
    """The options of `algorithm` with defaults filled in (BuildError for unknown ones)."""
    return family(algorithm).resolve_options(**options)


def build_module(model, algorithm: str = "recursive", cache_dir=None, progress: bool = False, **options):
    """Generate and compile (or fetch from the cache) the kernel module for a model.

    Returns (module, info) where info holds the key, paths, timings and the resolved options.
    """
    fam = family(algorithm, model)
    options = fam.resolve_options(**options)
    if fam.check is not None:
        fam.check(model)
    key = build_key(model, algorithm, options)
    mod, info = cached_module(key, f"mbgen_{algorithm}_{key}", f"build {model.name} [{algorithm}]",
                              lambda: render(fam, fam.make_plan(model), options, key), cache_dir, progress)
    info["options"] = options
    return mod, info


def cached_module(key: str, modname: str, label: str, source, cache_dir=None, progress: bool = False):
    """Import module `modname` from cache entry `key`, first rendering `source()` and compiling it there if
    the entry is missing. Under a file lock; the entry folder appears complete or not at all."""
    from filelock import FileLock

    cache = Path(cache_dir) if cache_dir else default_cache_dir()
    cache.mkdir(parents=True, exist_ok=True)
    target = cache / key
    so_path = target / (modname + (sysconfig.get_config_var("EXT_SUFFIX") or ".so"))
    info = {"key": key, "module": modname, "path": str(so_path), "cache_dir": str(cache), "hit": True,
            "generate_s": 0.0, "compile_s": 0.0}
    if not so_path.exists():
        with FileLock(str(cache / f"{key}.lock")):
            if not so_path.exists():
                info["hit"] = False
                _build_into(source, modname, target, info, label, progress)
    mod = sys.modules.get(modname)
    if mod is None:
        spec = importlib.util.spec_from_file_location(modname, so_path)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        sys.modules[modname] = mod
    return mod, info


def _build_into(source, modname, target, info, label, progress):
    from tqdm import tqdm
    key = target.name
    with tqdm(total=3, desc=label, unit="step", disable=not progress, leave=False) as bar:
        tmp = Path(tempfile.mkdtemp(prefix=f".{key}.", dir=str(target.parent)))
        t0 = time.perf_counter()
        bar.set_postfix_str("derive + render")
        pyx = tmp / f"{modname}.pyx"
        pyx.write_text(source())
        info["generate_s"] = time.perf_counter() - t0
        bar.update(1)
        bar.set_postfix_str("cython + cc")
        t1 = time.perf_counter()
        try:
            built = _compile(pyx, tmp, modname, quiet=True)
        except Exception as e:
            raise BuildError(f"compiling {pyx.name} failed; the sources are kept in {tmp}\n"
                             f"{_cython_errors(pyx)}") from e
        info["compile_s"] = time.perf_counter() - t1
        bar.update(1)
        staging = Path(tempfile.mkdtemp(prefix=f".{key}.stage.", dir=str(target.parent)))
        for f in (pyx, tmp / f"{modname}.c", built):
            if f.exists():
                shutil.copy2(f, staging / f.name)
        (staging / "build.json").write_text(json.dumps({k: v for k, v in info.items() if k != "hit"}, indent=1))
        if target.exists():
            shutil.rmtree(target)
        os.replace(staging, target)            # atomic: the folder appears complete or not at all
        bar.update(1)
        shutil.rmtree(tmp, ignore_errors=True)


def _cython_errors(pyx: Path) -> str:
    """Cython's own error report for a failed build (first lines), for the BuildError message."""
    try:
        out = subprocess.run([sys.executable, "-m", "cython", "-3", str(pyx), "-o", os.devnull],
                             capture_output=True, text=True, timeout=300)
        return "\n".join((out.stdout + out.stderr).splitlines()[:25])
    except (OSError, subprocess.SubprocessError) as e:
        return f"(could not re-run cython: {e})"


def generated_source(model, algorithm: str = "recursive", **options) -> str:
    """The Cython source that would be compiled for this model (for inspection)."""
    fam = family(algorithm, model)
    options = fam.resolve_options(**options)
    return render(fam, fam.make_plan(model), options, build_key(model, algorithm, options))
