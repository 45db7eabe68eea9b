"""mbgen inspect: the derived symbolic elements and the registered algorithm families."""
from __future__ import annotations

from .common import Formatter

# what each entry of the symbolic modules' INSPECT tables shows (their functions carry no text of their own)
DESCRIPTIONS = {
    "shabana-beam": "ANCF beam element (Hu & Wang): e [HW eq 1], S [HW eq 3], M_E [HW eq 4], U [HW eq 6], F_EK [HW eq 7], F_EG [HW eq 9]",
    "shabana-beam-mass": "ANCF beam: shape matrix S [HW eq 3] and element mass matrix M_E [HW eq 4]",
    "shabana-beam-elastic": "ANCF beam: chord-frame strains and energy [HW eqs 5-6], elastic force F_EK and its "
                            "auxiliary matrices [HW eq 7]",
    "shabana-beam-gravity": "ANCF beam: external and gravity forces F_E, F_EG [HW eqs 8-9], gravity potential",
    "mstmm-state": "MSTMM state vectors z [RBW eqs 1, 6, 35] and the boundary states (Rui et al.)",
    "mstmm-planar-state": "MSTMM planar state [RBW eq 35]: which rows of [RBW eqs 1, 6] are kept",
    "mstmm-body": "MSTMM rigid-body transfer matrix U_i [RBW eq 4] with E1..E9 [RBW eq 5], M1 rod reduced [RBW eq 36]",
    "mstmm-multi-body": "MSTMM multi-input body [RBW eqs 6-9], M5 body 11",
    "mstmm-ball-hinge": "MSTMM hinge transfer matrices [RBW eq 10]: spatial ball hinge, planar revolute [RBW eq 44], fixed",
    "mstmm-multi-hinge": "MSTMM multi-hinge subsystem of M1 body 7 [RBW eqs 8, 12-13, 16-17, 49, 52, 55]",
    "mstmm-multi-hinge-spatial": "MSTMM spatial multi-hinge subsystem Uhat and geometric equations [RBW eqs 11-17], "
                                 "M5 body 11",
    "mstmm-riccati": "MSTMM Riccati recursion: P_i, q_i [RBW eq 24], S_{i+1}, e_{i+1} [RBW eqs 29-30]",
    "mstmm-example": "MSTMM worked example of the paper, M1 [RBW eqs 38-47]",
}


# what each family offers of forward/inverse_dynamics_derivatives, linearize and rollout sensitivities
DERIVATIVES = {"grcr": "no (closed loops: build the tree with recursive)", "rancf": "no (flexible beams)"}
C_EXPORT = ("yes: mbgen export-c (standalone C99 and CasADi external functions, with the analytical derivatives; "
            "rigid trees with gravity, armature, joint spring-dampers and joint forces)")
C_EXPORT_NO = "no (mbgen export-c: {} only for now)"
DERIVATIVES_TREES = ("analytical (trees without cut joints; every force element, actuators and activation states "
                     "included; compiled with build(..., derivatives=True) or on first use)")


def register(sub):
    """Register the command ``inspect``."""
    s = sub.add_parser("inspect", help="print a derived symbolic element ('mbgen inspect list')",
                       formatter_class=Formatter,
                       description="Print the sympy expressions the kernels are generated from.\n"
                                   "  mbgen inspect list          every element, with what it shows\n"
                                   "  mbgen inspect algorithms    every algorithm family: paper, options, joint types")
    s.add_argument("what", nargs="*", help="'list', 'algorithms' or an element, e.g. 'joint revolute', "
                                           "'reference-point origin', 'spatial'")
    s.add_argument("--format", default="text", choices=["text", "latex", "sympy"],
                   help="text: sympy's pretty printer; latex; sympy: srepr, to paste into Python")
    s.set_defaults(fn=cmd_inspect)


def inspect_registry():
    """name -> (description, callable returning an ordered dict of sympy objects)."""
    from ..model import JOINT_TYPES
    from ..symbolic import spatial
    from ..symbolic.joints import joint_model
    reg = {}
    for t in JOINT_TYPES:
        reg[f"joint {t}"] = (f"{t} joint: R, d, S_w, S_v, H, W, ... ([KY eq 16], Liu et al.)",
                             lambda t=t: joint_model(t).elements())
    for p in spatial.REF_POINTS:
        reg[f"reference-point {p}"] = (f"analysis reference point '{p}' [KY eqs 3-8, 25, 33, 36]",
                                       lambda p=p: spatial.reference_point(p))
    reg["spatial"] = ("skew matrix and the shift matrix T^P [KY eq 4]", spatial.spatial_elements)
    from ..symbolic.cfa import cfa_elements
    reg["cfa"] = ("constraint force algorithm (Liu et al.): P-hat [LHZ eqs 1-2], I_C, I_O [LHZ eq 3], H_j and W_j of every "
                  "joint type [LHZ eq 5]", cfa_elements)
    from ..symbolic import loops
    for p in spatial.REF_POINTS:
        reg[f"loops {p}"] = (f"closed loops at the {p}: the basic constraints d1, d2, s, ss (Phi, J_i, J_j, gamma; "
                             f"[KY eqs 37, 44-45], Tables {'3-4' if p == 'origin' else '1-2'}) and the rows of "
                             "every cut joint type", lambda p=p: loops.elements(p))
    from ..symbolic import grcr
    reg["grcr"] = ("generalized recursive coordinate reduction (Critchley & Anderson): world joint columns [CA eq 5], "
                   "dependent elimination rho, Q [CA eq 34], R [CA eq 36], X, W [CA eqs 76-77], T [CA eqs 63-64]", grcr.elements)
    from ..symbolic import derivatives
    for t in JOINT_TYPES:
        reg[f"derivatives {t}"] = (f"{t} joint: derivative building blocks (Carpentier & Mansard 2018): child-frame "
                                   "columns, column groups, dV/dq, dA/dq, dA/du [CM eqs 10-12]",
                                   lambda t=t: derivatives.elements(t))
    for modname in ("ancf", "mstmm_examples"):      # later algorithm families register their elements here
        try:
            mod = __import__(f"codegen.symbolic.{modname}", fromlist=["INSPECT"])
        except ImportError:
            continue
        for k, fn in getattr(mod, "INSPECT", {}).items():
            doc = (fn.__doc__ or "").strip().split("\n")[0]
            reg[k] = (DESCRIPTIONS.get(k) or doc or f"{modname}: {k}", fn)
    return reg


def print_algorithms():
    """Every registered algorithm family: name, paper, options, model kind, joint types, integrators."""
    from ..algorithms import FAMILIES
    from ..compiler.export_c import EXPORT_FAMILIES
    for f in FAMILIES.values():
        opts = ", ".join(f"{k}={'|'.join(v)} (default {v[0]})" for k, v in f.options.items()) or "-"
        print(f"{f.name}: {f.description}")
        print(f"  paper:       {f.paper}")
        print(f"  models:      {'flexible planar beams' if f.models != 'tree' else 'rigid-body trees and closed loops (cut joints)' if f.loops else 'rigid-body trees'}")
        print(f"  {'joint types:' if f.models == 'tree' else 'connections:'} {', '.join(f.joint_types)}")
        if f.models == "tree":
            print(f"  armature:    {', '.join(f.armature) if f.armature else 'no (refused by name)'}")
            print(f"  couplings:   {'yes (joint and fixed-tendon equalities, URDF mimic)' if f.couplings else 'no (refused by name)'}")
        print(f"  options:     {opts}")
        print(f"  integrators: {', '.join(f.integrators)}")
        print(f"  derivatives: {DERIVATIVES.get(f.name, DERIVATIVES_TREES)}")
        print(f"  C export:    {C_EXPORT if f.name in EXPORT_FAMILIES else C_EXPORT_NO.format(', '.join(EXPORT_FAMILIES))}")
        print(f"  template:    templates/{f.template}")


def cmd_inspect(args):
    """Run ``mbgen inspect``."""
    import sympy as sp
    reg = inspect_registry()
    name = " ".join(args.what)
    if name == "algorithms":
        return print_algorithms()
    if not name or name == "list":
        print("algorithms                     the algorithm families (paper, options, joint types, integrators)")
        print("Elements (mbgen inspect NAME [--format text|latex|sympy]):")
        for k, (desc, _) in reg.items():
            print(f"  {k:<28} {desc}")
        return
    if name not in reg:
        close = [k for k in reg if name.split()[0] in k]
        raise ValueError(f"unknown element '{name}'" + (f"; did you mean: {', '.join(close)}" if close else
                                                          "; 'mbgen inspect list' shows them all"))
    elements = reg[name][1]()
    for label, expr in elements.items():
        if args.format == "latex":
            print(f"% {label}\n{sp.latex(expr)}\n")
        elif args.format == "sympy":
            print(f"{label} = {sp.srepr(expr)}\n")
        else:
            print(f"{label} =")
            print(sp.pretty(expr, use_unicode=False, wrap_line=False))
            print()
