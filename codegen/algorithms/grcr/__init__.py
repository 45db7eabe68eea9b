"""Family ``grcr``: the generalized recursive coordinate reduction of Critchley & Anderson for closed loops.

O(n + m): phantom bodies open every loop (Sect. 3, [CA eqs 23-45]), the dependent coordinates are eliminated loop
by loop and the coordinate-reduced equations solved by one recursion [CA eqs 46-64], with an arbitrary
selection of the dependent coordinates (ACS, Sect. 4, [CA eqs 65-102]) that a run re-selects when the partition
degrades.

Paper: shared/seeds/003_1a74c1a73cbe4f4e.txt.  Plan (phantom bodies, chains, what the method takes): plan.py;
template: templates/grcr/ (it extends the recursive template: the tree outside the loop chains runs Kang &
Yoon's passes at the instant global origin); the loop recursion's fixed-size steps as sympy kernels:
codegen.symbolic.grcr; run time (dependents, closure, switches): codegen.runtime.families.grcr.
"""
from ...model import JOINT_TYPES
from ...symbolic.layout import Layout
from ..family import Family
from ..tree_plan import articulated_vars, per_body_size, work_layout
from .plan import LOOP_PARAMS, LOOP_TYPES, GrcrPlan, check

# A coupled loop's load on the loop it hangs on (GRCR Sect. 5, [CA eqs 103-111]), per loop: f_b = K_bB A_B + K_bb A_b
# + phi on its branching body b, f_B = K_BB A_B + K_Bb A_b + psi on its base B (load_on_base writes, hang_terms
# reads).
LOAD = Layout(("K_bB", 36), ("K_bb", 36), ("K_BB", 36), ("K_Bb", 36), ("phi", 6), ("psi", 6))


def scratch_layout(nmax: int) -> Layout:
    """The layout of loop_backward's scratch, one loop at a time.

    loop_backward's scratch (one loop at a time; hang_terms and load_on_base read it): Y, H, Z of the dependent
    region [CA eqs 79-81], the sums of [CA eqs 53-55, 92-95], I Y, I H, I Z - Q, Ih0, Ihp, beta [CA eqs 100-102]; the
    loop's load on its base: sums I Y, I H, I Z - Q, I over the region, a_k = al A_0 + ga a_b + be and the total
    force F = FA A_0 + FG a_b + Fb."""
    n = nmax
    return Layout(("Y", 36), ("H", 6 * n), ("Z", 6), ("SYI", 36), ("SYIY", 36), ("SYb", 6), ("SYIH", 6 * n),
                  ("MM", n * n), ("IM0", 6 * n), ("FM", n), ("IY", 36), ("IH", 6 * n), ("Ib", 6),
                  ("Ih0", 36), ("Ihp", 36), ("bet", 6), ("S1", 36), ("S2", 6 * n), ("S3", 6), ("S4", 36),
                  ("al", 36), ("be", 6), ("FA", 36), ("Fb", 6), ("ga", 36), ("FG", 36))


def hang_layout(nmax: int) -> Layout:
    """Per hanging loop: the affine map a = Y a_p + H x + Z of its base in the region it hangs on [CA eq 78]."""
    return Layout(("Y", 36), ("H", 6 * nmax), ("Z", 6))


def template_vars(plan: GrcrPlan, options: dict) -> dict:
    lv = plan.loop_vars()
    nmax, nchain = lv["nmax"], lv["nchain"]
    scratch, hang = scratch_layout(nmax), hang_layout(nmax)
    gw, size = work_layout((("scratch", scratch.size), ("G1", 6 * nchain), ("G2", 6 * nchain),
                            ("g3", nchain), ("A", nmax * nmax), ("load", LOAD.size * lv["nloop"]),
                            ("hang", max(1, lv["nhang"]) * hang.size), ("hx", 6 * nmax)))
    gw = gw.shifted(per_body_size() * plan.nb)     # after the tree's per-body blocks
    tv = articulated_vars(plan, "origin", size)       # the tree outside the chains: Kang & Yoon at the origin
    from ...symbolic.grcr import grcr_kernels      # (sympy only when a module is generated, not on a cached run)
    tv["spatial"] = tuple(tv["spatial"]) + grcr_kernels()   # the loop recursion's steps (codegen.symbolic.grcr)
    if plan.couplings:                              # rows L1 = p(L2) over the reduced solve (templates/grcr/couplings)
        from ...symbolic.loops import coupling_kernel
        tv["coupling_kernels"] = [coupling_kernel()]
    tv.update(lv, gw=gw, scratch_layout=scratch, hang_layout=hang, load_layout=LOAD, loop_params=LOOP_PARAMS,
              ref_point="origin", project_hook=True)
    return tv


FAMILY = Family(
    name="grcr", paper="Critchley & Anderson (seed 003), [CA eqs 23-111]",
    description="generalized recursive coordinate reduction: closed loops by phantom bodies and dependent "
                "coordinates, O(n + m), arbitrary (re-)selection of the dependents",
    template="grcr/grcr.pyx.j2", models="tree", make_plan=GrcrPlan, template_vars=template_vars,
    joint_types=tuple(JOINT_TYPES),
    check=check, loops=True, couplings=True, runtime="grcr", integrators=("rk4", "dopri5"),
    run_options={"dependents": ("auto|q2,q3,q5", "the dependent coordinates, 'auto' (each loop from its tip inward, "
                                "the best conditioned) or a comma-separated list of loop joints (the cut joint's among "
                                "them); a run re-selects them when the partition turns singular (default: auto)")})

__all__ = ["FAMILY", "GrcrPlan", "LOOP_TYPES"]
