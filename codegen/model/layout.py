"""Memory layouts: named blocks of a flat array (the parameter vector p, a kernel's workspace), defined once.

A layout names every block of a flat array with its size and offset.  The plan fills the arrays by these names, the
numpy references read them by these names, the templates render them as compile-time constants (the macro
``layout_enum`` of templates/shared/layout.j2: ``cdef enum`` entries PREFIX_<block> = offset, PREFIX_SIZE =
total), so no offset is written twice and the generated code stays as fast as with literals.

The class lives at the model layer (no sympy here) because the model's own elements (actuators, tendons) lay out
their numbers with it and imports point one way only; codegen.symbolic.layout holds the body and workspace layouts.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, Iterator, Tuple


@dataclass(frozen=True)
class Block:
    """One named block: ``size`` numbers from ``off`` on."""

    name: str
    off: int
    size: int

    @property
    def end(self) -> int:
        """The offset just past the block."""
        return self.off + self.size

    @property
    def slice(self) -> slice:
        """The block's slice of the array."""
        return slice(self.off, self.end)


class Layout:
    """Blocks laid end to end in the order given.

    ``Layout(("S", 36), ("e", 6))``; ``layout.e.off`` is 36,
    ``layout.size`` the total.  ``base`` shifts every offset (blocks that follow other data in the same array)."""

    def __init__(self, *items: Tuple[str, int], base: int = 0):
        blocks: Dict[str, Block] = {}
        off = base
        for name, size in items:
            if name in blocks:
                raise ValueError(f"layout: block {name!r} twice")
            blocks[name] = Block(name, off, int(size))
            off += int(size)
        self._blocks, self.base, self.size = blocks, base, off - base

    def __getattr__(self, name: str) -> Block:
        if name.startswith("_"):
            raise AttributeError(name)
        try:
            return self._blocks[name]
        except KeyError:
            raise AttributeError(f"layout has no block {name!r} (blocks: {', '.join(self._blocks)})") from None

    def __getitem__(self, name: str) -> Block:
        return self._blocks[name]

    def __iter__(self) -> Iterator[Block]:
        return iter(self._blocks.values())

    def items(self):
        """(name, block) pairs in order (as a dict's)."""
        return self._blocks.items()

    def shifted(self, base: int) -> "Layout":
        """The same blocks from ``base`` on (a block after ``base`` numbers of other data)."""
        return Layout(*((b.name, b.size) for b in self), base=base)

    def view(self, array, name: str, start: int = 0):
        """Block ``name`` of the record at ``start`` of ``array`` (a numpy view: writes go to the array)."""
        b = self._blocks[name]
        return array[start + b.off:start + b.end]

    def describe(self) -> str:
        """'S 36 | e 6 | ...' (for comments in the generated code)."""
        return " | ".join(f"{b.name} {b.size}" for b in self)


__all__ = ["Block", "Layout"]
