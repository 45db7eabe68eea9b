"""The rows of every cut joint type as plain data, without sympy.

The rows of every cut joint type (Kang & Yoon, seed 002, Tables 1-4; ``codegen.symbolic.loops`` derives them):
plain data, without sympy, so that the recursive family's plan - which a cached build still makes - does not
import sympy (start-up time of a cached model)."""
from __future__ import annotations

from typing import Dict, Tuple

# joint type -> rows (kind, vector on side i, vector on side j): axes e0 e1 e2 of the cut frame on side i and
# f0 f1 f2 on side j (the joint axis is e2 = f2 at zero motion; universal: e2 = axis, f0 = axis2)
ROWS: Dict[str, Tuple[Tuple[str, int, int], ...]] = {
    "revolute": (("d2", 0, -1), ("d2", 1, -1), ("d2", 2, -1), ("d1", 0, 2), ("d1", 1, 2)),
    "prismatic": (("d1", 0, 2), ("d1", 1, 2), ("d1", 0, 1), ("d2", 0, -1), ("d2", 1, -1)),
    "cylindrical": (("d1", 0, 2), ("d1", 1, 2), ("d2", 0, -1), ("d2", 1, -1)),
    "universal": (("d2", 0, -1), ("d2", 1, -1), ("d2", 2, -1), ("d1", 2, 0)),
    "spherical": (("d2", 0, -1), ("d2", 1, -1), ("d2", 2, -1)),
    "planar": (("d1", 0, 2), ("d1", 1, 2), ("d2", 2, -1)),
    "fixed": (("d2", 0, -1), ("d2", 1, -1), ("d2", 2, -1), ("d1", 0, 1), ("d1", 0, 2), ("d1", 1, 2)),
}


def planar_rows(jtype: str, normal_axis: int) -> Tuple[Tuple[str, int, int], ...]:
    """Rows of a cut joint whose loop moves in the plane normal to ``normal_axis``.

    The tree
    satisfies the rows along the normal identically (d2 along it; d1 with it on either side), so they are
    dropped (a revolute or spherical cut keeps 2 rows, prismatic 2, fixed 3)."""
    return tuple(r for r in ROWS[jtype] if not (r[1] == normal_axis or r[2] == normal_axis))
