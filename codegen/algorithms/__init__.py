"""Algorithm families, one folder each; adding one is one line here (see docs/architecture.md)."""
from __future__ import annotations

from . import cfa, dense, grcr, mstmm, rancf, recursive
from .family import BuildError, Family

FAMILIES = {f.name: f for f in (recursive.FAMILY, dense.FAMILY, mstmm.FAMILY, rancf.FAMILY, cfa.FAMILY, grcr.FAMILY)}


def family(name: str, model=None) -> Family:
    """The registered family `name`; with a model, checked to accept that kind of model."""
    if name not in FAMILIES:
        raise BuildError(f"unknown algorithm '{name}' (known: {', '.join(FAMILIES)})")
    fam = FAMILIES[name]
    if model is not None:
        kind = "beams" if hasattr(model, "beams") else "tree"
        if fam.models != kind:
            others = [f.name for f in FAMILIES.values() if f.models == kind]
            raise BuildError(f"algorithm '{name}' takes {fam.models} models; this is a "
                             f"{'flexible-beam' if kind == 'beams' else 'rigid-tree'} model: use "
                             f"{' or '.join(others)}")
        if getattr(model, "cuts", None) and not fam.loops:
            raise BuildError(f"algorithm '{name}' solves trees; this model closes loops with cut joints "
                             f"({', '.join(c.name for c in model.cuts)}): use "
                             f"{' or '.join(f.name for f in FAMILIES.values() if f.loops)}")
        if getattr(model, "couplings", None) and not fam.couplings:
            raise BuildError(f"algorithm '{name}' does not solve couplings (equality constraints between "
                             f"coordinates: {', '.join(c.name for c in model.couplings)}; MJCF joint and tendon "
                             f"equalities, URDF mimic joints): use "
                             f"{' or '.join(f.name for f in FAMILIES.values() if f.couplings)}")
        arm = [j for j in getattr(model, "joints", ()) if getattr(j, "armature", None) is not None
               and j.type not in fam.armature]
        if arm:
            takes = [f.name for f in FAMILIES.values() if all(j.type in f.armature for j in arm)]
            raise BuildError(f"algorithm '{name}' does not model armature on {arm[0].type} joints (joint "
                             f"{arm[0].name!r}{f' and {len(arm) - 1} more' if len(arm) > 1 else ''}): use "
                             f"{' or '.join(takes)}")
    return fam


__all__ = ["BuildError", "FAMILIES", "Family", "family"]
