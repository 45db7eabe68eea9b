"""One build cache for the whole run (generated/ or $MBGEN_CACHE_DIR) and memoised systems; repository paths."""
from pathlib import Path

import numpy as np

import codegen

ROOT = Path(__file__).resolve().parents[2]          # the repository
EXAMPLES = ROOT / "examples"

_SYSTEMS = {}


def get_system(model, algorithm="recursive", **options):
    """Build (or reuse within this run) the kernels of a model; keyed by name, algorithm, options."""
    key = (model.name, repr(model.topology_key()), algorithm, tuple(sorted(options.items())))
    if key not in _SYSTEMS:
        _SYSTEMS[key] = codegen.build(model, algorithm, **options)
    s = _SYSTEMS[key]
    s.update_model(model)          # same topology, possibly other numbers
    return s


def rel_err(a, b):
    a, b = np.asarray(a, float), np.asarray(b, float)
    return float(np.max(np.abs(a - b)) / max(np.max(np.abs(b)), 1e-300))
