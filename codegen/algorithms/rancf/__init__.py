"""Family ``rancf``: the recursive absolute nodal coordinate formulation for flexible planar beams.

Paper: Hu & Wang 2016 (shared/seeds/000_2dfa52d2e1bf2ae2.txt).  Plan and element code: plan.py; numpy
reference: reference.py; template: templates/rancf/; symbolic element: codegen.symbolic.ancf.
"""
from ...model.beams import BEAM_JOINT_TYPES
from ..family import Family
from .plan import METHODS, NPE, BeamPlan, template_vars  # noqa: F401

FAMILY = Family(
    name="rancf", paper="Hu & Wang 2016 (seed 000), [HW eqs 1-56]",
    description="recursive ANCF: O(n) flexible planar beams (dense Cholesky of the same Omega inside)",
    template="rancf/rancf.pyx.j2", models="beams", make_plan=BeamPlan, template_vars=template_vars,
    joint_types=BEAM_JOINT_TYPES, integrators=("rk4", "dopri5", "hht"), kernel_class="Kernel",
    runtime="beams")
