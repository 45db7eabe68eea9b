"""The build key: a hash of everything a generated module depends on.

The model topology and every name that reaches the source (not its numbers), the family's code pattern, the algorithm
and its options, the templates and the generator's own source (model, symbolic, algorithms, compiler layers), the
toolchain, the processor and the optimisation flags."""
from __future__ import annotations

import hashlib
import json
from functools import lru_cache

from .._version import __version__
from ..algorithms import family
from .engine_source import interface_hash
from .toolchain import _toolchain_fingerprint, cpu_fingerprint, lanes_enabled, opt_flags
from .render import PACKAGE_DIR, names_key, template_dir


@lru_cache(maxsize=None)
def _source_fingerprint() -> str:
    """Hash of every source a generated module depends on.

    Hash of every source a generated module depends on (templates, model, symbolic, algorithms, compiler), so
    that any change to them rebuilds the cached modules (the C export's templates too: the lanes are printed from them)."""
    h = hashlib.sha256()
    files = sorted(template_dir().rglob("*.j2")) + \
        [f for layer in ("model", "symbolic", "algorithms", "compiler") for f in sorted((PACKAGE_DIR / layer).rglob("*.py"))]
    for f in files:
        rel = f.as_posix().split("/templates/")[-1].split("/codegen/")[-1]
        h.update(rel.encode())
        h.update(f.read_bytes())
    return h.hexdigest()


def code_pattern(model, algorithm: str):
    """The structure the family's kernel is specialised to beyond the topology, or None.

    The structure the family's kernel is specialised to beyond the topology (rigid trees: per body whether
    offsets are zero and joint frames unrotated, codegen.algorithms.tree_plan.Plan.code_pattern), or None."""
    plan = family(algorithm, model).make_plan(model)
    f = getattr(plan, "code_pattern", None)
    return f() if f is not None else None


def build_key(model, algorithm: str, options: dict, derivatives: bool = False) -> str:
    """The build key of a model's kernel module: a hash of everything the generated code depends on."""
    flags = opt_flags()
    opt = {} if flags == ["-O3"] else {"opt": flags}                   # (the default's keys as before)
    if not lanes_enabled():
        opt["lanes"] = False
    payload = json.dumps({"topology": model.topology_key(), "pattern": code_pattern(model, algorithm),
                          "names": names_key(model),
                          "algorithm": algorithm, "options": options, "derivatives": bool(derivatives),
                          "generator": __version__, "sources": _source_fingerprint(), "engine": interface_hash(),
                          "toolchain": _toolchain_fingerprint(), "cpu": cpu_fingerprint(), **opt}, sort_keys=True)
    return hashlib.sha256(payload.encode()).hexdigest()[:20]
