"""Loop-closure constraints of cut joints ([KY eqs 37-46], Tables 1-4), derived in sympy.

The basic constraints of Haug (1989) between a vector / point on side i and one on side j of a cut joint:

    d1(a_i, a_j)       = a_i . a_j                    (two vectors stay perpendicular)
    d2(a_i, p_i, p_j)  = a_i . (p_j - p_i)            (a point stays in a plane normal to a_i)
    s(p_i, p_j)        = p_j - p_i                    (two points coincide)
    ss(p_i, p_j)       = (p_j - p_i).(p_j - p_i) - C  (two points keep their distance)

Every joint type is a set of d1 / d2 rows built from the cut frames' axes (``ROWS``; the point coincidence of
a revolute, spherical, universal or fixed cut is s expressed along side i's axes, i.e. three d2 rows).
Each row is differentiated twice along the motion: Phi'' = J_i Ydot_i + J_j Ydot_j - gamma [KY eq 37], with
Y = (velocity of the body point at the analysis reference point P, omega), world frame, and the
accelerations of a body point p and a body vector a

    p'' = Ydot_v + omega' x (p - P) + omega x (p' - P')        a'' = omega' x a + omega x (omega x a)

(P' = 0 at the instant global origin, [KY eq 31]).  ``table()`` gives the rows of Tables 1-4 (centroid and
instant global origin) for inspection; ``row_kernel()`` the C function of one row type for the
recursive kernel ([KY eqs 39-43] use J and gamma).
"""
from __future__ import annotations

from functools import lru_cache
from typing import List, Tuple

import sympy as sp

from .articulated import REF_POINTS, Arg, Kernel, KernelCode, arr
from .loop_rows import ROWS, planar_rows  # noqa: F401  (plain data: the plans import them from there)


def _vec(name):
    return sp.Matrix(sp.symbols(f"{name}0:3"))


def _side(tag: str, ref: str):
    """Symbols of one side: omega, omega', Ydot_v, P, P', point p and its velocity."""
    w, wd, yv = _vec(f"w{tag}"), _vec(f"wd{tag}"), _vec(f"yv{tag}")
    P, Pd = (sp.zeros(3, 1), sp.zeros(3, 1)) if ref == "origin" else (_vec(f"P{tag}"), _vec(f"Pd{tag}"))
    return dict(w=w, wd=wd, yv=yv, P=P, Pd=Pd, p=_vec(f"p{tag}"), vp=_vec(f"vp{tag}"))


def _acc_point(s):
    return s["yv"] + s["wd"].cross(s["p"] - s["P"]) + s["w"].cross(s["vp"] - s["Pd"])


def _acc_vec(s, a):
    return s["wd"].cross(a) + s["w"].cross(s["w"].cross(a))


def derive(kind: str, ref: str = "origin"):
    """One basic constraint, symbolic: (J_i, J_j, gamma, Phi).

    (J_i (1x6), J_j (1x6), gamma, Phi) of one basic constraint, symbolic, at the reference point ``ref``.
    Side i vectors: ai (d1, d2); side j: aj (d1)."""
    i, j = _side("i", ref), _side("j", ref)
    ai, aj = _vec("ai"), _vec("aj")
    Ydot = list(i["yv"]) + list(i["wd"]) + list(j["yv"]) + list(j["wd"])
    d, dd = j["p"] - i["p"], j["vp"] - i["vp"]
    if kind == "d1":
        phi = ai.dot(aj)
        acc = _acc_vec(i, ai).dot(aj) + 2 * i["w"].cross(ai).dot(j["w"].cross(aj)) + ai.dot(_acc_vec(j, aj))
    elif kind == "d2":
        phi = ai.dot(d)
        acc = _acc_vec(i, ai).dot(d) + 2 * i["w"].cross(ai).dot(dd) + ai.dot(_acc_point(j) - _acc_point(i))
    elif kind == "s":
        phi = d
        acc = _acc_point(j) - _acc_point(i)
    elif kind == "ss":
        phi = d.dot(d)
        acc = 2 * dd.dot(dd) + 2 * d.dot(_acc_point(j) - _acc_point(i))
    else:
        raise KeyError(kind)
    acc = sp.Matrix([acc]) if not isinstance(acc, sp.MatrixBase) else acc
    J = acc.jacobian(Ydot)
    gamma = -(acc - J * sp.Matrix(Ydot)).applyfunc(sp.expand)
    return J[:, :6], J[:, 6:], gamma, phi


def table(ref: str = "origin") -> List[Tuple[str, sp.Matrix, sp.Matrix, sp.Matrix]]:
    """Kang & Yoon's Tables 1-2 and 3-4: (name, J_i, J_j, gamma) per constraint.

    Tables 1-2 (ref = centroid: p - P = s) and 3-4 (ref = origin): (name, J_i, J_j, gamma) per constraint,
    with s_i = p_i - P_i written out."""
    out = []
    for kind in ("d1", "d2", "s", "ss"):
        Ji, Jj, g, _ = derive(kind, ref)
        out.append((kind, Ji.applyfunc(sp.factor_terms), Jj.applyfunc(sp.factor_terms), g.applyfunc(sp.factor_terms)))
    return out


def elements(ref: str = "origin") -> dict:
    """The elements of ``mbgen inspect loops-REF``.

    For ``mbgen inspect loops-REF``: Phi, J_i, J_j, gamma of every basic constraint at reference point ref
    (centroid: Tables 1-2, origin: Tables 3-4), then the rows of every cut joint type."""
    out = {}
    for kind in ("d1", "d2", "s", "ss"):
        Ji, Jj, g, phi = derive(kind, ref)
        out[f"Phi_{kind}"] = sp.Matrix([phi]) if not isinstance(phi, sp.MatrixBase) else phi
        out[f"J_i {kind}"], out[f"J_j {kind}"] = Ji, Jj
        out[f"gamma {kind}"] = g
    for t, rows in ROWS.items():
        out[f"rows {t}"] = sp.Matrix([sp.Symbol(f"d1(e{a},f{b})" if k == "d1" else f"d2(e{a})") for k, a, b in rows])
    return out


def row_kernel_obj(kind: str, ref: str) -> Kernel:
    """Kernel ``loop_<kind>``: one constraint row from world vectors: J_i, J_j (6 each) and gamma."""
    if ref not in REF_POINTS:
        raise KeyError(ref)
    Ji, Jj, g, _ = derive(kind, ref)
    sym = {}
    args = []

    def bind(tag, names):
        for n in names:
            a = arr(f"{n}{tag}", 3)
            for c in range(3):
                sym[sp.Symbol(f"{n}{tag}{c}")] = a[c]
            args.append(Arg(f"{n}{tag}", 3, "in"))

    bind("i", ["w"] + ([] if ref == "origin" else ["P", "Pd"]) + (["p", "vp"] if kind == "d2" else []) + ["a"])
    bind("j", ["w"] + ([] if ref == "origin" else ["P", "Pd"]) + (["p", "vp"] if kind == "d2" else [])
         + (["a"] if kind == "d1" else []))
    sym.update({sp.Symbol(f"ai{c}"): arr("ai", 3)[c] for c in range(3)})
    sym.update({sp.Symbol(f"aj{c}"): arr("aj", 3)[c] for c in range(3)})
    k = Kernel(f"loop_{kind}", "[KY eqs 37, 44-45], Tables 1-4",
               f"Constraint row {kind}: Phi'' = Ji Ydot_i + Jj Ydot_j - gamma, reference point {ref}.",
               tuple(args) + (Arg("Ji", 6, "out"), Arg("Jj", 6, "out"), Arg("gamma", 1, "out")))
    k.out("Ji", [e.xreplace(sym) for e in Ji])
    k.out("Jj", [e.xreplace(sym) for e in Jj])
    k.out("gamma", [g[0].xreplace(sym)])
    return k


@lru_cache(maxsize=None)
def row_kernel(kind: str, ref: str) -> KernelCode:
    """The printed row kernel of a basic constraint of `kind` at reference point `ref`."""
    k = row_kernel_obj(kind, ref)
    return KernelCode(k.name, k.equation, k.doc, k.params(), tuple(k.lines))


# ---------------------------------------------------------------- couplings (codegen.model.couplings)

def derive_coupling():
    """A coupling L1 = p(L2), symbolic: (Phi, Phi', p'(L2), gamma).

    (Phi, Phi', dPhi'/dV2 coefficient p'(L2), gamma) of a coupling L1 = p(L2), p = c0 + c1 L2 + ... + c4 L2^4,
    L1, L2 linear in q (velocities V1, V2): Phi = L1 - p(L2), Phi' = V1 - p'(L2) V2, and Phi'' = J udot - gamma with
    J = a - p'(L2) b (a, b the coordinates' coefficients of L1, L2), gamma = p''(L2) V2^2."""
    L1, L2, V1, V2, t = sp.symbols("L1 L2 V1 V2 t")
    c = sp.symbols("c0:5")
    p = sum(ck * L2 ** k for k, ck in enumerate(c))
    phi = L1 - p
    # along a motion L(t): Phi' and Phi'' by the chain rule, then J and gamma read off Phi''
    Lt1, Lt2 = sp.Function("L1")(t), sp.Function("L2")(t)
    phit = phi.subs({L1: Lt1, L2: Lt2})
    d1 = sp.diff(phit, t)
    d2 = sp.diff(phit, t, 2)
    A1, A2 = sp.symbols("A1 A2")                   # L1'', L2'' (= a . udot, b . udot)
    back = {sp.Derivative(Lt1, (t, 2)): A1, sp.Derivative(Lt2, (t, 2)): A2,
            sp.Derivative(Lt1, t): V1, sp.Derivative(Lt2, t): V2}
    back2 = {Lt1: L1, Lt2: L2}
    d1 = d1.subs(back).subs(back2)
    d2 = sp.expand(d2.subs(back).subs(back2))
    dp = -d2.coeff(A2)                              # J = a - p'(L2) b
    assert sp.simplify(d2.coeff(A1) - 1) == 0
    gamma = -(d2 - A1 + dp * A2).expand()
    return phi, d1, sp.expand(dp), gamma


def coupling_kernel_obj() -> Kernel:
    """Kernel ``coupling_row``: Phi, Phi', p'(L2) and gamma of one coupling from L1, L2, V1, V2 and c0..c4."""
    phi, phid, dp, gamma = derive_coupling()
    cs = arr("c", 5)
    sym = {sp.Symbol(f"c{k}"): cs[k] for k in range(5)}
    k = Kernel("coupling_row", "couplings: Phi = L1 - p(L2), J = a - p'(L2) b, gamma = p''(L2) V2^2",
               "One coupling row (codegen.model.couplings): Phi'' = J udot - gamma.",
               (Arg("L1", 1, "in", True), Arg("L2", 1, "in", True), Arg("V1", 1, "in", True),
                Arg("V2", 1, "in", True), Arg("c", 5, "in"), Arg("out", 4, "out")))
    k.out("out", [e.xreplace(sym) for e in (phi, phid, dp, gamma)])
    return k


@lru_cache(maxsize=None)
def coupling_kernel() -> KernelCode:
    """The printed kernel of a coupling's row."""
    k = coupling_kernel_obj()
    return KernelCode(k.name, k.equation, k.doc, k.params(), tuple(k.lines))
