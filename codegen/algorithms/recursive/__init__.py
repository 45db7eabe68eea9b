"""Family ``recursive``: the fully recursive O(n) formulation of Kang & Yoon with a choice of analysis
reference point (centroid, joint point, instant global origin).

Paper: shared/seeds/002_bb61ebea93666a2a.txt, eqs 1-36 (tree part).  Template: templates/recursive/.
Joint helpers: codegen.symbolic.joints; reference points: codegen.symbolic.spatial.
"""
from ...model import JOINT_TYPES
from ..family import Family
from ..tree_plan import Plan, template_vars

FAMILY = Family(
    name="recursive", paper="Kang & Yoon (seed 002), eqs 1-36",
    description="fully recursive O(n) forward and inverse dynamics of rigid trees",
    template="recursive/recursive.pyx.j2", models="tree", make_plan=Plan,
    template_vars=lambda plan, options: template_vars(plan, 132 * plan.nb),
    joint_types=tuple(JOINT_TYPES), options={"ref_point": ("centroid", "joint", "origin")})
