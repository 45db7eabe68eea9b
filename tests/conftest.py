"""Shared fixtures. The tests mirror the package: tests/<layer>/ (model, symbolic, algorithms/<family>, compiler,
runtime, cli) plus tests/peers/ (trusted peers); helpers live in tests/support/ (on the path via pytest's
``pythonpath``).

Kernels built by the tests are compiled at -Og (MBGEN_OPT=g, a quarter of -O3's C compile time and about half of -O1's;
codegen.compiler.cache.opt_flags): tests/compiler/test_build.py checks them against an -O3 build. They are built
without the lanes of the recursive family (MBGEN_LANES=0, an eighth less compile time; cache.lanes_enabled) except
where a test asks for them (support.systems.get_system(..., lanes=True): tests/runtime/test_lanes.py).

Two tiers: every test that compiles anything (a kernel module, a C export, a Cython module of the cache's tests) or
loads a compiled kernel is marked ``build``; ``pytest -m "not build"`` runs the others (the fast tier: models, schema,
symbolic layer, plans and numpy references, CLI checks, docs) with no compiler at all. That tier is guarded, so that a
test that compiles without the mark fails there instead of making the tier slow: its cache is an empty folder of its
own, ``cc``, ``gcc``, ``make`` and ``cmake`` on its PATH (and $CC) exit with a message, and the compile step of the
build cache raises (support.tiers)."""
import os

import numpy as np
import pytest

os.environ.setdefault("MBGEN_OPT", "g")          # inherited by the subprocesses the tests start
os.environ.setdefault("MBGEN_LANES", "0")


def pytest_configure(config):
    config.addinivalue_line("markers", "build: compiles a kernel (or any C) or loads a compiled one; "
                                       "pytest -m 'not build' is the fast tier")
    from support import tiers
    if tiers.fast_tier(config.getoption("markexpr", "")):
        tiers.arm(config)


def pytest_unconfigure(config):
    root = getattr(config, "_mbgen_fast_tier", None)
    if root is not None:
        import shutil
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture
def rng():
    return np.random.default_rng(20261122)
