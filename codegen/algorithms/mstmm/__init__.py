"""Family ``mstmm``: the Riccati transfer matrix method for chain and branch systems (Rui et al. 2020).

Paper: shared/seeds/004_0233cf066626872d.txt.  Plan: plan.py (step B1, sweep groups); numpy reference:
reference.py (Algorithms A and B literally, classical transfer-matrix product); template:
templates/mstmm/; symbolic transfer matrices: codegen.symbolic.mstmm.
"""
from ..family import Family
from ..tree_plan import Plan
from .plan import SUPPORTED, joint_reactions, reaction_history, template_vars  # noqa: F401

FAMILY = Family(
    name="mstmm", paper="Rui, Bestle, Wang et al. 2020 (seed 004), Algorithms A/B, eqs 1-59",
    description="Riccati transfer matrix method; joint reactions from its state vectors",
    template="mstmm/mstmm.pyx.j2", models="tree", make_plan=Plan, template_vars=template_vars,
    joint_types=SUPPORTED)
