"""The engine's source files and their hash (the standard library only: setup.py loads this file by path).

The engine (engine.pyx, engine.pxd, engine_codes.pxi, engine_kinematics.pxi) is compiled once: at ``pip install`` by setup.py, or, in a
source checkout without that build (or with a stale one), once into the build cache (codegen.compiler.engine_build).
The hash is compiled into the extension (MB_ENGINE_SOURCE) so that a stale build is never used."""
from __future__ import annotations

import hashlib
from pathlib import Path

ENGINE_DIR = Path(__file__).resolve().parent
ENGINE_FILES = ("engine.pyx", "engine.pxd", "engine_codes.pxi", "engine_kinematics.pxi")
MODULE = "codegen.compiler.engine"


def source_hash(folder: Path = ENGINE_DIR) -> str:
    """Hash of the engine's source files in `folder` (16 hex digits)."""
    h = hashlib.sha256()
    for name in ENGINE_FILES:
        h.update(name.encode())
        h.update((Path(folder) / name).read_bytes())
    return h.hexdigest()[:16]


def interface_hash(folder: Path = ENGINE_DIR) -> str:
    """Hash of engine.pxd, the binary interface every generated module is compiled against (their build key)."""
    return hashlib.sha256((Path(folder) / "engine.pxd").read_bytes()).hexdigest()[:16]
