"""The fast tier's guard (``pytest -m "not build"``): no test there may compile.

armed by tests/conftest.py when the mark expression leaves the ``build`` tests out (or with MBGEN_TEST_NO_COMPILER=1,
which arms it for any selection): the run gets an empty build cache of its own (no kernel of an earlier run is
loaded), a folder first on PATH whose ``cc``, ``gcc``, ``c++``, ``g++``, ``make`` and ``cmake`` fail with a message
(also $CC, for setuptools in the subprocesses the tests start), and codegen.compiler.cache's compile step raises in
this process. A test that needs a compiler without the ``build`` mark therefore fails in the fast tier, naming it."""
import os
import re
import stat
import tempfile
from pathlib import Path

MESSAGE = "the fast tier (pytest -m 'not build') has no compiler: mark this test @pytest.mark.build"
TOOLS = ("cc", "gcc", "c++", "g++", "make", "cmake")


def fast_tier(markexpr: str) -> bool:
    """Whether a mark expression leaves out the build tests (``not build``), or MBGEN_TEST_NO_COMPILER=1."""
    return os.environ.get("MBGEN_TEST_NO_COMPILER") == "1" or re.search(r"\bnot\s+build\b", markexpr or "") is not None


class NoCompiler(RuntimeError):
    """A compile was asked for in the fast tier."""


def _refuse(*args, **kwargs):
    raise NoCompiler(MESSAGE)


def arm(config) -> Path:
    """Install the guard for this process and the processes it starts; returns the folder of the failing tools."""
    root = Path(tempfile.mkdtemp(prefix="mbgen-fast-tier-"))
    tools = root / "bin"
    tools.mkdir()
    for name in TOOLS:
        script = tools / name
        script.write_text(f"#!/bin/sh\necho '{name}: {MESSAGE}' >&2\nexit 97\n")
        script.chmod(script.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    (root / "cache").mkdir()
    os.environ["PATH"] = f"{tools}{os.pathsep}{os.environ.get('PATH', '')}"
    os.environ["CC"] = str(tools / "cc")
    os.environ["MBGEN_CACHE_DIR"] = str(root / "cache")
    os.environ["MBGEN_TEST_NO_COMPILER"] = "1"          # pytest-xdist's workers arm their own guard
    from codegen.compiler import cache
    cache._build_into = cache._compile = _refuse        # before any derivation, render or Cython run
    config._mbgen_fast_tier = root
    return tools
