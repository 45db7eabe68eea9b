"""Family ``dense``: the O(n^3) reference: composite-rigid-body mass matrix, RNEA bias, Cholesky solve.

Every O(n) kernel is checked against it to round-off.  Template: templates/dense/.
"""
from ...model import JOINT_TYPES
from ..family import BuildError, Family
from ..tree_plan import Plan, template_vars

DENSE_MAX_NV = 4000


def check(model):
    """Refuse a model whose dense mass matrix would be too large (nv > DENSE_MAX_NV)."""
    if model.nv > DENSE_MAX_NV:
        raise BuildError(f"the dense method stores an nv x nv mass matrix; nv = {model.nv} exceeds "
                         f"{DENSE_MAX_NV}: use --algorithm recursive")


FAMILY = Family(
    name="dense", paper="Featherstone, Rigid Body Dynamics Algorithms (CRBA + RNEA); the O(n^3) reference",
    description="joint-space mass matrix by CRBA, bias by RNEA, dense Cholesky solve",
    template="dense/dense.pyx.j2", models="tree", make_plan=Plan,
    template_vars=lambda plan, options: template_vars(plan, plan.nv * plan.nv + 2 * plan.nv + 54 * plan.nb),
    joint_types=tuple(JOINT_TYPES), armature=tuple(JOINT_TYPES), check=check)
