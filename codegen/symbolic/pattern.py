"""The compile-time structure of one body of a rigid tree (no sympy here: the build key needs it at start-up).

A pattern is what a body's numbers look like, not the numbers: its joint type, whether its parent is ground,
whether the canonical parent joint frame C_j is the identity, which components of the joint offset s_j are
non-zero. ``codegen.symbolic.body_kernels`` specialises the per-body kernels to it.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Tuple


@dataclass(frozen=True)
class Pattern:
    """Compile-time structure of one body: joint type, parent is ground, C_j = I, non-zero components of s_j."""

    type: str
    root: bool
    ident: bool
    off: Tuple[bool, bool, bool]

    @property
    def name(self) -> str:
        """The pattern's name (joint type, root, identity frame, offset mask)."""
        mask = "".join(c for c, f in zip("xyz", self.off) if f) or "0"
        return f"{self.type}_{'g' if self.root else 'b'}{'I' if self.ident else 'C'}{mask}"
