"""Family ``grcr``: the generalized recursive coordinate reduction of Critchley & Anderson for closed loops,
O(n + m): phantom bodies open every loop (Sect. 3, eqs 23-45), the dependent coordinates are eliminated loop
by loop and the coordinate-reduced equations solved by one recursion (eqs 46-64), with an arbitrary
selection of the dependent coordinates (ACS, Sect. 4, eqs 65-102) that a run re-selects when the partition
degrades.

Paper: shared/seeds/003_1a74c1a73cbe4f4e.txt.  Plan (phantom bodies, chains, what the method takes): plan.py;
template: templates/grcr/ (it extends the recursive template: the tree outside the loop chains runs Kang &
Yoon's passes at the instant global origin); symbolic form of the loop recursion: codegen.symbolic.grcr;
run time (dependents, closure, switches): codegen.runtime.families.grcr.
"""
from ..family import Family
from ..tree_plan import articulated_vars, per_body_size, work_layout
from .plan import LOOP_TYPES, GrcrPlan, check


def grcr_scratch(nmax: int) -> int:
    """Doubles of loop_backward's scratch: Y, H, Z, the sums of eqs 53-55 and 92-95, I Y, I H, I Z - Q, Ih0,
    Ihp, beta; the loop's load on its base (sums I Y, I H, I Z - Q, I; a_k = al A_0 + be; F = FA A_0 + Fb)."""
    return (36 + 6 * nmax + 6 + 36 + 36 + 6 + 6 * nmax + nmax * nmax + 6 * nmax + nmax + 36 + 6 * nmax + 6 + 36 + 36 + 6
            + 36 + 6 * nmax + 6 + 36 + 36 + 6 + 36 + 6 + 36 + 36)


def template_vars(plan: GrcrPlan, options: dict) -> dict:
    lv = plan.loop_vars()
    nmax, nchain = lv["nmax"], lv["nchain"]
    gw, size = work_layout((("scratch", grcr_scratch(nmax)), ("G1", 6 * nchain), ("G2", 6 * nchain),
                            ("g3", nchain), ("A", nmax * nmax), ("load", 156 * lv["nloop"]),
                            ("hang", max(1, lv["nhang"]) * (42 + 6 * nmax)), ("hx", 6 * nmax)))
    base = per_body_size() * plan.nb
    gw = {k: {"off": v["off"] + base, "size": v["size"]} for k, v in gw.items()}
    tv = articulated_vars(plan, "origin", size)       # the tree outside the chains: Kang & Yoon at the origin
    tv.update(lv, gw=gw, ref_point="origin", project_hook=True)
    return tv


FAMILY = Family(
    name="grcr", paper="Critchley & Anderson (seed 003), eqs 23-111",
    description="generalized recursive coordinate reduction: closed loops by phantom bodies and dependent "
                "coordinates, O(n + m), arbitrary (re-)selection of the dependents",
    template="grcr/grcr.pyx.j2", models="tree", make_plan=GrcrPlan, template_vars=template_vars,
    joint_types=("revolute", "prismatic", "cylindrical", "universal", "spherical", "planar", "free", "fixed"),
    check=check, loops=True, runtime="grcr",
    run_options={"dependents": ("auto|q2,q3,q5", "the dependent coordinates, 'auto' (each loop from its tip inward, "
                                "the best conditioned) or a comma-separated list of loop joints (the cut joint's among "
                                "them); a run re-selects them when the partition turns singular (default: auto)")})

__all__ = ["FAMILY", "GrcrPlan", "LOOP_TYPES"]
