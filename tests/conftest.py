"""Shared fixtures. The tests mirror the package: tests/<layer>/ (model, symbolic, algorithms/<family>, compiler,
runtime, cli) plus tests/peers/ (trusted peers); helpers live in tests/support/ (on the path via pytest's
``pythonpath``).

Kernels built by the tests are compiled at -Og (MBGEN_OPT=g, a quarter of -O3's C compile time and about half of -O1's;
codegen.compiler.cache.opt_flags): tests/compiler/test_build.py checks them against an -O3 build. They are built
without the lanes of the recursive family (MBGEN_LANES=0, an eighth less compile time; cache.lanes_enabled) except
where a test asks for them (support.systems.get_system(..., lanes=True): tests/runtime/test_lanes.py)."""
import os

import numpy as np
import pytest

os.environ.setdefault("MBGEN_OPT", "g")          # inherited by the subprocesses the tests start
os.environ.setdefault("MBGEN_LANES", "0")


@pytest.fixture
def rng():
    return np.random.default_rng(20261122)
