"""One build cache for the whole run (generated/ or $MBGEN_CACHE_DIR) and memoised systems; repository paths."""
from pathlib import Path
from unittest import mock

import numpy as np

import codegen

ROOT = Path(__file__).resolve().parents[2]          # the repository
EXAMPLES = ROOT / "examples"

_SYSTEMS = {}

# Kernels several tests ask for with and without derivatives or lanes: every request of one of these (model name,
# algorithm, options) gets the one module with what any of them needs (a superset: the derivative kernels, the lanes of
# the recursive family) instead of two or three builds. The trees are tests/algorithms/test_derivatives.py's (the C
# export's tests, support/c_export.py, ask for the lanes; test_recursive and test_mstmm_free for the plain kernels).
SUPERSETS = {
    ("random14_7", "recursive", (("ref_point", "joint"),)): {"derivatives": True, "lanes": True},
    ("random14_7", "mstmm", ()): {"derivatives": True},
    ("sprung14_1", "recursive", (("ref_point", "centroid"),)): {"derivatives": True, "lanes": True},
    ("sprung14_1", "dense", ()): {"derivatives": True},
    ("random12_31", "recursive", (("ref_point", "origin"),)): {"derivatives": True, "lanes": True},
    ("random14_1", "dense", ()): {"derivatives": True},
    ("random16_21", "dense", ()): {"derivatives": True},
}


def get_system(model, algorithm="recursive", lanes=False, **options):
    """Build (or reuse within this run) the kernels of a model; keyed by name, algorithm, options.

    lanes: with the lanes of the recursive family (templates/c/lanes.c.j2), which the suite's builds otherwise leave
    out (MBGEN_LANES=0, tests/conftest.py). The kernels of SUPERSETS come with their derivatives and lanes."""
    plain = tuple(sorted((k, v) for k, v in options.items() if k != "derivatives"))
    extra = SUPERSETS.get((model.name, algorithm, plain), {})
    lanes = lanes or extra.get("lanes", False)
    if extra.get("derivatives"):
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
