"""Shared fixtures. The tests mirror the package: tests/<layer>/ (model, symbolic, algorithms/<family>, compiler,
runtime, cli) plus tests/peers/ (trusted peers); helpers live in tests/support/ (on the path via pytest's
``pythonpath``)."""
import numpy as np
import pytest


@pytest.fixture
def rng():
    return np.random.default_rng(20261122)
