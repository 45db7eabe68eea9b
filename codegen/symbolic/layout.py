"""Memory layouts of the generated kernels, defined once: the per-body numbers of p (BODY_PARAMS).

The class (codegen.model.layout.Layout, re-exported here) names every block of a flat array with its size and
offset; the plan fills the arrays by these names, the numpy references read them by these names, the templates
render them as compile-time constants (templates/shared/layout.j2), so no offset is written twice.

The body layout lives at the symbolic layer (no sympy here) because the sympy body kernels name the same per-body
parameters (``pb[...]`` in codegen.symbolic.body_kernels, codegen.symbolic.derivatives) and imports point one way
only.
"""
from __future__ import annotations

from ..model.layout import Block, Layout

# Per body of a rigid tree in p (after the gravity): the joint offset s and the canonical parent joint frame C in
# the parent's reference frame, mass m, centroid rho and central inertia J' in the body's reference frame (Kang &
# Yoon, comment 1 after [KY eq 30]), Kout (A_user = A_ref Kout).  Filled by codegen.algorithms.tree_plan.Plan.params.
BODY_PARAMS = Layout(("s", 3), ("C", 9), ("m", 1), ("rho", 3), ("J", 9), ("Kout", 9))
P_BODIES = 3            # p[0:3] gravity, then NB records of BODY_PARAMS

__all__ = ["BODY_PARAMS", "Block", "Layout", "P_BODIES"]
