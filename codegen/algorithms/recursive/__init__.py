"""Family ``recursive``: the fully recursive O(n) formulation of Kang & Yoon.

With a choice of analysis
reference point (centroid, joint point, instant global origin).

Paper: shared/seeds/002_bb61ebea93666a2a.txt, [KY eqs 1-36] (tree part), [KY eqs 37-46] (closed loops: cut joints,
``loops.py`` and templates/recursive/loops.pyx.j2).  Template: templates/recursive/ (structure
only). Joint helpers: codegen.symbolic.joints; spatial algebra of the recursion (B2, D, body at P, joint
projection, articulated update, shift to the parent, accelerations): codegen.symbolic.articulated;
reference points: codegen.symbolic.spatial.
"""
from ...model import JOINT_TYPES
from ..family import Family
from ..tree_plan import articulated_vars, per_body_size, work_layout
from .loops import make_plan


def recursive_template_vars(plan, options: dict) -> dict:
    """Variables of the recursive template: the tree's, the workspace and, with loops, the loop layout."""
    loops = hasattr(plan, "cuts")             # a LoopPlan: cut joints and / or couplings
    lw, nloop = {}, 0
    if loops:                    # closed loops [KY eqs 37-46]: per loop body Phi (m x 6) and G (nv x m), then Lambda
        m = plan.nm
        lw, nloop = work_layout((("phi", plan.nslot * m * 6), ("G", plan.nslot * 6 * m), ("Lam", m * m),
                                 ("gbar", m), ("cpos", m), ("cvel", m), ("lam", m), ("Jrow", 12 * m),
                                 ("phi2", 6 * m), ("Jq", m * plan.nv), ("du", plan.nv + plan.nq),
                                 ("Jt", max(1, sum(len(c.terms) for c in plan.couplings)))))
        lw = lw.shifted(per_body_size() * plan.nb)
    tv = articulated_vars(plan, options["ref_point"], nloop)
    tv.update(loops=bool(loops), lw=lw, project_hook=bool(loops))
    if loops:
        from ...symbolic.loops import row_kernel
        from ...symbolic.loops import coupling_kernel
        tv.update(plan.loop_vars(), loop_kernels=[row_kernel(k, options["ref_point"]) for k in ("d1", "d2")]
                  + [coupling_kernel()],
                  deriv_refusal="closed loops (cut joints): the constrained accelerations' partials are not derived")
    return tv


FAMILY = Family(
    name="recursive", paper="Kang & Yoon (seed 002), [KY eqs 1-36]",
    description="fully recursive O(n) forward and inverse dynamics of rigid trees",
    template="recursive/recursive.pyx.j2", models="tree", make_plan=make_plan, loops=True, couplings=True,
    template_vars=recursive_template_vars,
    joint_types=tuple(JOINT_TYPES), armature=tuple(JOINT_TYPES), options={"ref_point": ("centroid", "joint", "origin")},
    option_help={"ref_point": "analysis reference point: the body's centroid (method 1), "
                              "its joint, or the instant global origin (method 2)"})
