"""Render a model's kernels from the jinja2 templates, compile them with Cython, cache by content hash.

The build key hashes what shapes the generated code: the model topology (not its numbers), the
algorithm and its options, the templates, the generator's own source, and the Cython, compiler and
Python versions. A hit imports the cached extension; a miss builds in a temporary folder and renames
the finished files into place under a file lock, so concurrent builds of one model are safe.
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

import jinja2

from . import __version__
from .model import JOINT_TYPES, Model
from .plan import NP_BODY, Plan

PACKAGE_DIR = Path(__file__).resolve().parent

# algorithm name -> template and the options it takes (name -> allowed values, first is default)
ALGORITHMS = {
    "recursive": {"template": "recursive.pyx.j2", "options": {"ref_point": ("centroid", "joint", "origin")}},
    "dense": {"template": "dense.pyx.j2", "options": {}},
    "mstmm": {"template": "mstmm.pyx.j2", "options": {}, "vars": "mstmm"},
}
DENSE_MAX_NV = 4000


class BuildError(RuntimeError):
    pass


def template_dir() -> Path:
    """Templates: the source checkout's templates/ or the installed codegen/templates package data."""
    installed = PACKAGE_DIR / "templates"
    if installed.is_dir() and any(installed.glob("*.j2")):
        return installed
    return PACKAGE_DIR.parent / "templates"


def default_cache_dir() -> Path:
    env = os.environ.get("MBGEN_CACHE_DIR")
    if env:
        return Path(env).expanduser()
    checkout = PACKAGE_DIR.parent
    if (checkout / "pyproject.toml").is_file() and (checkout / "generated").is_dir():
        return checkout / "generated"
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "mbgen"


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
    files = sorted(template_dir().glob("*.j2")) + sorted(PACKAGE_DIR.glob("*.py")) + \
        sorted((PACKAGE_DIR / "symbolic").glob("*.py"))
    for f in files:
        h.update(f.name.encode())
        h.update(f.read_bytes())
    return h.hexdigest()


def resolve_options(algorithm: str, **options) -> dict:
    if algorithm not in ALGORITHMS:
        raise BuildError(f"unknown algorithm '{algorithm}' (known: {', '.join(ALGORITHMS)})")
    spec = ALGORITHMS[algorithm]["options"]
    out = {}
    for name, allowed in spec.items():
        v = options.get(name)
        v = allowed[0] if v is None else v
        if v not in allowed:
            raise BuildError(f"option {name}='{v}' not one of {', '.join(allowed)}")
        out[name] = v
    return out


def build_key(model: Model, algorithm: str, options: dict) -> str:
    payload = json.dumps({"topology": model.topology_key(), "names": names_key(model),
                          "algorithm": algorithm, "options": options,
                          "generator": __version__, "sources": _source_fingerprint(),
                          "toolchain": _toolchain_fingerprint()}, sort_keys=True)
    return hashlib.sha256(payload.encode()).hexdigest()[:20]


def comment(text) -> str:
    """A user string (model, body, joint, force name) made safe for a one-line comment of generated code:
    printable ASCII only (everything else escaped, so no line break can leave the comment), and no C
    comment delimiters (Cython copies source lines into C comments)."""
    s = "".join(c if " " <= c <= "~" else ascii(c)[1:-1] for c in str(text))
    return s.replace("*/", "*\\/").replace("/*", "/\\*")


def template_env() -> jinja2.Environment:
    """The one jinja2 environment of all kernels. User strings reach the source only through |comment."""
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(template_dir())), undefined=jinja2.StrictUndefined,
                             keep_trailing_newline=True, trim_blocks=False, lstrip_blocks=False)
    env.filters["comment"] = comment
    return env


def names_key(model) -> str:
    """Digest of every user string that reaches generated source (as escaped comments): part of the build key,
    so a cached module always matches what its model would render."""
    names = [model.name] + [j.name for j in model.joints] + [b.name for b in model.bodies] + \
        [f.name for f in (*getattr(model, "springs", ()), *getattr(model, "point_springs", ()),
                          *getattr(model, "joint_forces", ()))]
    return hashlib.sha256(json.dumps(names).encode()).hexdigest()


def render(plan: Plan, algorithm: str, options: dict, key: str) -> str:
    from .symbolic.joints import jcalc_code
    tpl = template_env().get_template(ALGORITHMS[algorithm]["template"])
    nb, nv = plan.nb, plan.nv
    work = {"recursive": 132 * nb, "dense": nv * nv + 2 * nv + 54 * nb, "mstmm": 72 * nb}[algorithm] + 8
    hook = ALGORITHMS[algorithm].get("vars")          # module with template_vars(plan) -> extra variables
    extra = importlib.import_module(f".{hook}", __package__).template_vars(plan) if hook else {}
    return tpl.render(
        version=__version__, build_hash=key, model_name=plan.model.name, algorithm=algorithm,
        options=", ".join(f"{k}={v}" for k, v in options.items()) or "-", options_repr=repr(options),
        nb=nb, nq=plan.nq, nv=nv, np=plan.np, npb=NP_BODY, roadmap=plan.roadmap(), segments=plan.segments,
        parent=plan.parent, iq=plan.iq, iv=plan.iv, quat=plan.quat_offsets,
        jcalc={t: jcalc_code(t) for t in plan.joint_types_used}, forces=plan.forces, work_size=work,
        types_nv=[(t, JOINT_TYPES[t][1]) for t in plan.joint_types_used],
        **options, **extra)


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


def build_module(model: Model, algorithm: str = "recursive", cache_dir=None, progress: bool = False, **options):
    """Generate and compile (or fetch from the cache) the kernel module for a model.

    Returns (module, info) where info holds the key, paths and timings.
    """
    options = resolve_options(algorithm, **options)
    if algorithm == "dense" and model.nv > DENSE_MAX_NV:
        raise BuildError(f"the dense method stores an nv x nv mass matrix; nv = {model.nv} exceeds "
                         f"{DENSE_MAX_NV}: use --algorithm recursive")
    key = build_key(model, algorithm, options)
    return cached_module(key, f"mbgen_{algorithm}_{key}", f"build {model.name} [{algorithm}]",
                         lambda: render(Plan(model), algorithm, options, key), cache_dir, progress)


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


def generated_source(model: Model, algorithm: str = "recursive", **options) -> str:
    """The Cython source that would be compiled for this model (for inspection)."""
    options = resolve_options(algorithm, **options)
    return render(Plan(model), algorithm, options, build_key(model, algorithm, options))
