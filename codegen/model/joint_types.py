"""The joint types: one ``JointType`` record each, the one place that says what a type is.

Everything that knows a joint type reads it from here: validation and the schema (coordinates, axes, which
types take limits, friction, springs, actuators, which may close a loop), the plans (coordinate counts and
names, quaternion slots), the robot-file importers and exporters (URDF and MuJoCo names), the random trees of
the model library. The maths of a type lives one layer up, keyed by the same name (the model layer imports no
sympy): R(q), d(q) in ``codegen.symbolic.joints.KINEMATICS`` (S, H, W and the rest derived from them), the
cut-joint rows in ``codegen.symbolic.loop_rows.ROWS``, the derivative column groups in
``codegen.symbolic.derivatives.GROUPS``. ``tests/model/test_joint_types.py`` checks that every per-type table
covers exactly ``JOINT_TYPES``; docs/architecture.md ("Adding a joint type") is the checklist.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, Optional, Tuple

# where a MuJoCo joint written for one of ours takes its axis from (codegen.model.export._mj_axis)
MJCF_AXES = (None, "axis", "axis2", "plane_x", "plane_y")
# how a joint's motion relates to a plane a closed loop moves in (codegen.algorithms.recursive.loops)
PLANE_MOTIONS = (None, "normal", "along", "any")


@dataclass(frozen=True)
class JointType:
    """What a joint type is, by name.

    Its coordinates, the fields a joint of this type takes, where it may stand,
    and its names in robot files."""

    name: str
    nq: int                                  # position coordinates
    nv: int                                  # velocity coordinates
    coordinates: Tuple[str, ...]             # names of q (result columns "<joint>.<name>", limits)
    velocities: Tuple[str, ...]              # names of u (friction)
    needs_axis: bool = False                 # takes `axis` (default 0 0 1; planar: the plane's normal)
    needs_axis2: bool = False                # takes `axis2`, perpendicular to axis (universal)
    quaternion: Optional[int] = None         # offset of the unit quaternion (w, x, y, z) in q; its body rate sits
                                             # at the same offset in u
    scalar: bool = False                     # plain scalar coordinates: limits, friction, springs, tendons, actuators
    loop_closing: bool = True                # may be a cut joint of the `loops:` section (has cut rows)
    plane_motion: Optional[str] = None       # its motion w.r.t. a plane of a planar loop: "normal" (turns about
                                             # its axis, the plane's normal), "along" (slides along its axis, in
                                             # the plane), "any" (no motion), None (leaves every plane)
    urdf: Optional[str] = None               # the URDF type the exporter writes (None: URDF has none)
    urdf_aliases: Tuple[str, ...] = ()       # further URDF types the importer reads as this one
    mjcf: Tuple[Tuple[str, Optional[str]], ...] = ()   # the MuJoCo joints that make it, in order of its velocity
                                                       # coordinates: (MuJoCo type, axis source in MJCF_AXES)

    def __post_init__(self):
        assert len(self.coordinates) == self.nq and len(self.velocities) == self.nv, self.name
        assert self.plane_motion in PLANE_MOTIONS and all(a in MJCF_AXES for _, a in self.mjcf), self.name

    # The former positional form (nq, nv, coordinates, velocities, needs axis), for code written against the
    # tuple (`JOINT_TYPES[t][1]`, `nq, nv = JOINT_TYPES[t][:2]`); new code reads the fields.
    def _legacy(self) -> tuple:
        return self.nq, self.nv, list(self.coordinates), list(self.velocities), self.needs_axis

    def __getitem__(self, k):
        return self._legacy()[k]

    def __iter__(self):
        return iter(self._legacy())

    def __len__(self) -> int:
        return 5


def _registry(*types: JointType) -> Dict[str, JointType]:
    return {t.name: t for t in types}


JOINT_TYPES: Dict[str, JointType] = _registry(
    JointType("revolute", 1, 1, ("angle",), ("rate",), needs_axis=True, scalar=True, plane_motion="normal",
              urdf="continuous", urdf_aliases=("revolute",), mjcf=(("hinge", "axis"),)),
    JointType("prismatic", 1, 1, ("disp",), ("vel",), needs_axis=True, scalar=True, plane_motion="along",
              urdf="prismatic", mjcf=(("slide", "axis"),)),
    JointType("cylindrical", 2, 2, ("angle", "disp"), ("rate", "vel"), needs_axis=True, scalar=True,
              mjcf=(("hinge", "axis"), ("slide", "axis"))),
    JointType("universal", 2, 2, ("angle1", "angle2"), ("rate1", "rate2"), needs_axis=True, needs_axis2=True,
              scalar=True, mjcf=(("hinge", "axis"), ("hinge", "axis2"))),
    JointType("spherical", 4, 3, ("qw", "qx", "qy", "qz"), ("wx", "wy", "wz"), quaternion=0,
              mjcf=(("ball", None),)),
    JointType("planar", 3, 3, ("x", "y", "theta"), ("vx", "vy", "rate"), needs_axis=True, scalar=True,
              plane_motion="normal", urdf="planar",
              mjcf=(("slide", "plane_x"), ("slide", "plane_y"), ("hinge", "axis"))),
    JointType("free", 7, 6, ("x", "y", "z", "qw", "qx", "qy", "qz"), ("vx", "vy", "vz", "wx", "wy", "wz"),
              quaternion=3, loop_closing=False, urdf="floating", mjcf=(("free", None),)),
    JointType("fixed", 0, 0, (), (), plane_motion="any", urdf="fixed"),
)

# derived views, kept for code written against them
QUATERNION_JOINTS: Dict[str, int] = {t.name: t.quaternion for t in JOINT_TYPES.values() if t.quaternion is not None}
SCALAR_JOINTS = frozenset(t.name for t in JOINT_TYPES.values() if t.scalar)
LOOP_JOINTS: Tuple[str, ...] = tuple(t.name for t in JOINT_TYPES.values() if t.loop_closing)


def names_where(flag: str) -> Tuple[str, ...]:
    """The joint types whose field ``flag`` is true, in registry order (for messages and schema text)."""
    return tuple(t.name for t in JOINT_TYPES.values() if getattr(t, flag))


def or_list(names, word: str = "or") -> str:
    """'a, b, c or d': joint type names for a message."""
    names = list(names)
    return ", ".join(names[:-1]) + f" {word} " + names[-1] if len(names) > 1 else "".join(names)
