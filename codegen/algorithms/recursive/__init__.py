"""Family ``recursive``: the fully recursive O(n) formulation of Kang & Yoon with a choice of analysis
reference point (centroid, joint point, instant global origin).

Paper: shared/seeds/002_bb61ebea93666a2a.txt, eqs 1-36 (tree part).  Template: templates/recursive/ (structure
only). Joint helpers: codegen.symbolic.joints; spatial algebra of the recursion (B2, D, body at P, joint
projection, articulated update, shift to the parent, accelerations): codegen.symbolic.articulated;
reference points: codegen.symbolic.spatial.
"""
from ...model import JOINT_TYPES
from ..family import Family
from ..tree_plan import Plan, template_vars, work_layout

# Workspace per body, in this order (block of NB * size each): B2 (6 x n, column major), D, M (articulated
# inertia, packed upper triangle), Q, K (n x 6), k0, Ydot.
WORK = (("B2", 36), ("D", 6), ("M", 21), ("Q", 6), ("K", 36), ("k0", 6), ("Yd", 6))


def recursive_template_vars(plan: Plan, options: dict) -> dict:
    from ...symbolic.articulated import recursive_kernels
    work, per_body = work_layout(WORK)
    tv = template_vars(plan, per_body * plan.nb)
    nvs = tuple(sorted({nv for _, nv in tv["types_nv"]}))
    tv.update(work=work, spatial=recursive_kernels(options["ref_point"], nvs))
    return tv


FAMILY = Family(
    name="recursive", paper="Kang & Yoon (seed 002), eqs 1-36",
    description="fully recursive O(n) forward and inverse dynamics of rigid trees",
    template="recursive/recursive.pyx.j2", models="tree", make_plan=Plan,
    template_vars=recursive_template_vars,
    joint_types=tuple(JOINT_TYPES), options={"ref_point": ("centroid", "joint", "origin")})
