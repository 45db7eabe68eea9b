"""One build cache for the whole run (generated/ or $MBGEN_CACHE_DIR) and memoised systems; repository paths."""
from pathlib import Path
from unittest import mock

import numpy as np

import codegen

ROOT = Path(__file__).resolve().parents[2]          # the repository
EXAMPLES = ROOT / "examples"

_SYSTEMS = {}

# Kernels the derivative tests build with derivatives=True (tests/algorithms/test_derivatives.py: the mixed floating
# tree random_tree(14, seed=7, ...)): plain requests get the same module, a superset, instead of a second build.
WITH_DERIVATIVES = {("random14_7", "recursive", (("ref_point", "joint"),)), ("random14_7", "mstmm", ())}


def get_system(model, algorithm="recursive", lanes=False, **options):
    """Build (or reuse within this run) the kernels of a model; keyed by name, algorithm, options.

    lanes: with the lanes of the recursive family (templates/c/lanes.c.j2), which the suite's builds otherwise leave
    out (MBGEN_LANES=0, tests/conftest.py). The kernels of WITH_DERIVATIVES come with their derivatives."""
    if not lanes and (model.name, algorithm, tuple(sorted(options.items()))) in WITH_DERIVATIVES:
        options = dict(options, derivatives=True)
    key = (model.name, repr(model.topology_key()), algorithm, lanes, tuple(sorted(options.items())))
    if key not in _SYSTEMS:
        with mock.patch.dict("os.environ", {"MBGEN_LANES": "1"} if lanes else {}):
            _SYSTEMS[key] = codegen.build(model, algorithm, **options)
    s = _SYSTEMS[key]
    s.update_model(model)          # same topology, possibly other numbers
    return s


def rel_err(a, b):
    a, b = np.asarray(a, float), np.asarray(b, float)
    return float(np.max(np.abs(a - b)) / max(np.max(np.abs(b)), 1e-300))
