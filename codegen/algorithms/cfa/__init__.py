"""Family ``cfa``: the constraint force algorithm of Liu, Hu & Zhang (2016).

For any rigid tree, with the joint
constraint forces (reaction wrenches) as part of the solution.

Paper: shared/seeds/001_ba8d1a5f8ac7b9cc.txt; general form [LHZ eqs 22-29] (A assembled and solved densely, O(N_S^3)),
serial form Sect. 3, [LHZ eqs 30-44] (odd-even elimination along the chains; the node system by block elimination
along the tree, ours).  Plan: plan.py; numpy reference (the paper's global matrices P, H, W, I of [LHZ eqs 10-21], literally): reference.py; template:
templates/cfa/; symbolic P-hat, I_O, H_j, W_j: codegen.symbolic.cfa.
"""
from ...model import JOINT_TYPES
from ..family import Family
from ..tree_plan import Plan
from .plan import template_vars

def check(model):
    """Refuse a model with a massless body, by name.

    The constraint force algorithm inverts every body's mass matrix: a massless body (an MJCF helper body between
    two joints of one body, a URDF virtual link) has none. Refused by name."""
    from ..family import BuildError
    for b in model.bodies:
        if b.mass == 0 and not any(b.inertia.ravel()):
            raise BuildError(f"algorithm 'cfa' inverts each body's mass matrix; body {b.name!r} is massless: use "
                             "recursive, dense or mstmm")


FAMILY = Family(
    name="cfa", paper="Liu, Hu & Zhang 2016 (seed 001), [LHZ eqs 1-44]",
    description="constraint force algorithm: forward dynamics with the joint constraint forces (general: dense "
                "A; serial: odd-even elimination along the chains, the node system by blocks along the tree)",
    template="cfa/cfa.pyx.j2", models="tree", make_plan=Plan, template_vars=template_vars,
    joint_types=tuple(JOINT_TYPES), options={"form": ("serial", "general")}, check=check,
    option_help={"form": "the method's form: serial (odd-even elimination along the chains) or general "
                         "(dense A)"})
