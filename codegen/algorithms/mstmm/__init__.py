"""Family ``mstmm``: the Riccati transfer matrix method for chain and branch systems (Rui et al. 2020).

Paper: shared/seeds/004_0233cf066626872d.txt.  Plan: plan.py (step B1, sweep groups); numpy references:
reference.py (Algorithms A and B literally for the paper's planar example, classical transfer-matrix product,
30-digit articulated-body check), spatial.py (the kernel's spatial algorithm, every hinge type); template:
templates/mstmm/; symbolic transfer matrices: codegen.symbolic.mstmm.
"""
from ...model import SCALAR_JOINTS
from ..family import Family
from ..tree_plan import Plan
from .plan import SUPPORTED, template_vars  # noqa: F401

FAMILY = Family(
    name="mstmm", paper="Rui, Bestle, Wang et al. 2020 (seed 004), Algorithms A/B, [RBW eqs 1-59]",
    description="Riccati transfer matrix method; joint wrenches from its state vectors",
    template="mstmm/mstmm.pyx.j2", models="tree", make_plan=Plan, template_vars=template_vars,
    joint_types=SUPPORTED, armature=tuple(t for t in SUPPORTED if t in SCALAR_JOINTS),
    # gcc's inliner limits, raised so that the sweep's per-body steps (mst_body, mst_input_*, mst_hinge_*, called
    # from every group's loop) are inlined into fd: the sweep is bound by its dependency chain from body to body,
    # and the calls hide it from the scheduler (M5, 100,002 DOF: 0.90 of the time per call, 0.94 per RK4 step)
    cflags=("--param=max-inline-insns-single=2000", "--param=large-function-growth=2000",
            "--param=inline-unit-growth=1000"))
