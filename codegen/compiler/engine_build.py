"""The engine, compiled once: the package's own extension, or one build of it into the cache.

``pip install`` compiles codegen/compiler/engine.pyx (setup.py). A source checkout run without that build, or with a
build older than its source (an editable install after an edit), uses the extension of an installed copy of the
package built from the same source (``pip install .`` next to the checkout, as CI runs the tests), else gets one
build of the engine into the cache (``<cache>/engine-<source hash>/``, under a file lock, as a model's entry); either
is imported under the package's name, so that every model module (``cdef class System(Engine)``) finds it there. The engine's status codes
(engine_codes.pxi) are generated from codegen.algorithms.codes like every module's: ``codes_source()``; a test keeps
the file current (regenerate: ``python -m codegen.compiler.engine_build``)."""
from __future__ import annotations

import importlib
import json
import importlib.util
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

from ..algorithms import BuildError
from ..algorithms.codes import ENGINE_ENUMS
from . import trust
from .engine_source import ENGINE_DIR, ENGINE_FILES, MODULE, source_hash
from .entries import _ext_suffix
from .render import template_env
from .toolchain import _compile

CODES_FILE = ENGINE_DIR / "engine_codes.pxi"


def codes_source() -> str:
    """engine_codes.pxi: the status codes of codegen.algorithms.codes as the modules' cpdef enums."""
    text = template_env().get_template("shared/codes.pyx.j2").render(enums=ENGINE_ENUMS)
    return ("# Generated from codegen/algorithms/codes.py by `python -m codegen.compiler.engine_build` -- do not edit.\n"
            + text)


def _current(mod) -> bool:
    return mod is not None and getattr(mod, "SOURCE", None) == source_hash()


def _register(mod):
    sys.modules[MODULE] = mod
    setattr(importlib.import_module("codegen.compiler"), "engine", mod)
    return mod


def engine(cache: Path):
    """The engine module, current with its source: the package's, else built once into `cache`."""
    mod = sys.modules.get(MODULE)
    if _current(mod):
        return mod
    try:
        mod = importlib.import_module(MODULE)
    except ImportError:
        mod = None
    if _current(mod):
        return mod
    so_path = _installed()
    return _register(_load(so_path) if so_path else _cached(Path(cache)))


def _installed() -> Path | None:
    """The extension of another copy of the package on sys.path whose engine sources hash as this one's."""
    suffix, want = _ext_suffix(), source_hash()
    for entry in sys.path:
        folder = Path(entry or ".") / "codegen" / "compiler"
        try:
            if folder.resolve() == ENGINE_DIR or not (folder / ("engine" + suffix)).is_file():
                continue
            if source_hash(folder) == want:
                return folder / ("engine" + suffix)
        except OSError:
            continue
    return None


def _load(so_path: Path):
    spec = importlib.util.spec_from_file_location(MODULE, so_path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _cached(cache: Path):
    """The engine built into cache/engine-<hash>/ (built there first if missing), imported."""
    target = cache / f"engine-{source_hash()}"
    so_path = target / ("engine" + _ext_suffix())
    if not so_path.is_file():
        from filelock import FileLock           # only to build: a cached run imports no more than it needs
        trust.check_lock(cache / f"{target.name}.lock")
        try:
            with FileLock(str(cache / f"{target.name}.lock")):
                if not so_path.is_file():
                    _build(target)
        except OSError as e:
            raise BuildError(f"cannot write the build cache {cache}: {e.strerror or e} (set MBGEN_CACHE_DIR or "
                             f"--cache-dir to another folder)") from None
    return _load(so_path)


def _build(target: Path):
    """Compile the engine from the package's sources into target (through a temporary folder, renamed)."""
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.{os.getpid()}.build.", dir=str(target.parent)))
    try:
        src = tmp / "codegen" / "compiler"
        src.mkdir(parents=True)
        for pkg in (tmp / "codegen", src):
            (pkg / "__init__.py").write_text("")
        for name in ENGINE_FILES:
            shutil.copyfile(ENGINE_DIR / name, src / name)
        built = _compile(src / "engine.pyx", tmp / "lib", MODULE, quiet=True,
                         macros=[("MB_ENGINE_SOURCE", f'"{source_hash()}"')])
        out = tmp / "entry"
        out.mkdir()
        shutil.copyfile(built, out / ("engine" + _ext_suffix()))
        (out / "build.json").write_text(json.dumps({"module": MODULE, "model": "(the engine)", "algorithm": "-",
                                                    "source": source_hash(), "built_at": time.time()}))
        os.replace(out, target)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    CODES_FILE.write_text(codes_source())
    print(f"wrote {CODES_FILE}")
