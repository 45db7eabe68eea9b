"""One build cache for the whole run (generated/ or $MBGEN_CACHE_DIR) and memoised systems; repository paths."""
import os
from contextlib import contextmanager
from pathlib import Path

import numpy as np

import codegen

ROOT = Path(__file__).resolve().parents[2]          # the repository
EXAMPLES = ROOT / "examples"

_SYSTEMS = {}


@contextmanager
def lanes_on():
    """Builds inside carry the lanes of the recursive family (the suite builds without: tests/conftest.py)."""
    old = os.environ.get("MBGEN_LANES")
    os.environ["MBGEN_LANES"] = "1"
    try:
        yield
    finally:
        if old is None:
            del os.environ["MBGEN_LANES"]
        else:
            os.environ["MBGEN_LANES"] = old


def get_system(model, algorithm="recursive", lanes=False, **options):
    """Build (or reuse within this run) the kernels of a model; keyed by name, algorithm, options.

    lanes: with the lanes of the recursive family (templates/c/lanes.c.j2), which the suite's builds otherwise leave
    out (MBGEN_LANES=0, tests/conftest.py)."""
    key = (model.name, repr(model.topology_key()), algorithm, lanes, tuple(sorted(options.items())))
    if key not in _SYSTEMS:
        if lanes:
            with lanes_on():
                _SYSTEMS[key] = codegen.build(model, algorithm, **options)
        else:
            _SYSTEMS[key] = codegen.build(model, algorithm, **options)
    s = _SYSTEMS[key]
    s.update_model(model)          # same topology, possibly other numbers
    return s


def rel_err(a, b):
    a, b = np.asarray(a, float), np.asarray(b, float)
    return float(np.max(np.abs(a - b)) / max(np.max(np.abs(b)), 1e-300))
