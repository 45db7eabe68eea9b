"""One runtime class per kind of model.

One runtime class per kind of model, as Brian2 has one runtime per target: what a family does at run time
(its state, names, set-up, runs and outputs) lives in its class here, not in branches of System.

A family names its runtime (``Family.runtime``); a tree family's models with cut joints run as ``loops``.  A class
registers itself by its ``kind`` (System.KINDS); adding a kind of model is a class here and its import below.
"""
from __future__ import annotations

from .beams import BeamSystem
from .grcr import GrcrSystem
from .loops import LoopSystem
from .tree import TreeSystem

__all__ = ["BeamSystem", "GrcrSystem", "LoopSystem", "TreeSystem"]
