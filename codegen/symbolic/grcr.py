"""The loop recursion of the generalized recursive coordinate reduction in sympy.

Critchley & Anderson, seed 003: world-frame joint columns ([CA eq 5] about the origin, linear part first), the
dependent-coordinate elimination [CA eqs 28-30, 34, 36, 66], W and X [CA eqs 39-40, 76-77] and the recursions of Y, Z, H
[CA eqs 79-81], the inboard triangularisation T [CA eq 63].  ``elements()`` is what ``mbgen inspect grcr`` shows;
the same expressions, specialised to the kernel's storage, are the straight-line helpers the grcr template calls
(``grcr_kernels``: codegen.symbolic.articulated's Kernel type and printer, one helper per step; ``Staged``
computes every output before the first store, which keeps the 6x6 products as fast as the hand-written loops were).

Storage of the kernels: 6x6 matrices full, row major (entry (a, b) at 6 a + b); 6-vectors; scalars by pointer
when written.  Kernels:

    eliminate_step   R^k = R^{k+1} - rho Q rho^T, rho, Q, health s^T R s / s^T s          [CA eqs 34, 36, 66]
    map_Y            Y <- W Y, W = U + X, X = -s Q rho^T                                 [CA eqs 76-77, 79]
    map_Z            Z <- W Z + c + X C                                                  [CA eqs 76-77, 80]
    body_load        a region body's force as an affine map: I Y, I Z - Q                 [CA eqs 87-91]
    hang_load        a coupled loop's two-body load as the same affine map                [CA eqs 103-111]
    region_share     the fixed-size sums of the region over one load                     [CA eqs 53-55, 92-95]
    inboard_step     T applied to Ih0, Ihp, Ihp c + beta; u0, up, b, M-hat               [CA eqs 60-64]
    affine_step      a_k = al A_0 + ga a_b + be through one inboard joint                [CA eq 59]
    inboard_accel    u_k and a <- a + c + s u_k of one inboard joint (forward pass)       [CA eq 59]
    body_force       F += I (A_0 + a_k) - Q as affine terms (inboard body)               [CA eqs 20-22]
    region_force     F += S4 A_0 + S1 a_p + S3 as affine terms (the region)              [CA eqs 20-22, 99]
"""
from __future__ import annotations

from collections import OrderedDict
from functools import lru_cache
from typing import Tuple

import sympy as sp

from .articulated import Arg, Kernel, KernelCode, arr, kernel_lines


def vec(name, n=6):
    """A column of n symbols name0, name1, ..."""
    return sp.Matrix(n, 1, lambda a, _: sp.Symbol(f"{name}{a}"))


def sym6(name):
    """A symmetric 6 x 6 matrix of symbols."""
    return sp.Matrix(6, 6, lambda a, b: sp.Symbol(f"{name}{min(a, b)}{max(a, b)}"))


def joint_column(jtype: str, r=None, axis=None) -> sp.Matrix:
    """World joint column s of a one-coordinate joint [CA eq 5].

    s is the linear velocity of the body point at the origin, then the angular one, of a joint through point r
    along unit axis a: revolute [r x a; a], prismatic [a; 0]."""
    r = sp.Matrix(sp.symbols("r_x r_y r_z")) if r is None else sp.Matrix(r)
    a = sp.Matrix(sp.symbols("a_x a_y a_z")) if axis is None else sp.Matrix(axis)
    if jtype == "revolute":
        return sp.Matrix.vstack(r.cross(a), a)
    if jtype == "prismatic":
        return sp.Matrix.vstack(a, sp.zeros(3, 1))
    raise KeyError(jtype)


def X_apply(s, rho, Q, V) -> sp.Matrix:
    """X V with X = -s Q rho^T [CA eq 77].

    The shift tensors being identities in world coordinates): a rank-one
    product, rho^T V first."""
    return -s * (Q * (rho.T * V))


def elimination(s=None, R=None) -> OrderedDict:
    """One dependent coordinate eliminated from the tip.

    rho = R s, Q = (s^T R s)^-1 [CA eq 34], R' [CA eq 36],
    X = -s Q rho^T and W = U + X ([CA eqs 76-77], the shift tensors being identities in world coordinates)."""
    s = vec("s") if s is None else s
    R = sym6("R") if R is None else R
    rho = R * s
    Q = 1 / (s.T * rho)[0]
    X = X_apply(s, rho, Q, sp.eye(6))
    return OrderedDict([("rho = R^{k+1} s [CA eq 34]", rho), ("Q^k = (s^T R^{k+1} s)^-1 [CA eq 34]", Q),
                        ("R^k = R^{k+1} - rho Q rho^T [CA eqs 36, 66]", R - rho * Q * rho.T),
                        ("X^k = -s Q rho^T [CA eq 77]", X), ("W^k = U + X^k [CA eq 76]", sp.eye(6) + X)])


def T_apply(s, up, d, V) -> sp.Matrix:
    """T V = V - ^0I-hat s (s^T V) / M-hat [CA eqs 60-63], up = ^0I-hat s, d = M-hat: a rank-one product."""
    return V - up * ((s.T * V) / d)


def triangularisation(s=None, Ihp=None) -> OrderedDict:
    """Inboard step [CA eqs 59-64]: M-hat = s^T Ihp s, T = U - Ihp s s^T / M-hat."""
    s = vec("s") if s is None else s
    Ihp = sym6("I") if Ihp is None else Ihp
    d = (s.T * Ihp * s)[0]
    return OrderedDict([("M-hat = s^T ^0I-hat s [CA eq 64]", d), ("T = U - ^0I-hat s s^T / M-hat [CA eq 63]",
                                                               T_apply(s, Ihp * s, d, sp.eye(6)))])


def inboard_acceleration(s, c, u0, up, b, d, A0, a) -> Tuple[sp.Basic, sp.Matrix]:
    """One inboard joint [CA eq 59].

    u_k = -(b + u0^T A_0 + up^T (a + c)) / M-hat and the next body's acceleration
    relative to the base a' = a + c + s u_k."""
    u = -(b + (u0.T * A0)[0] + (up.T * (a + c))[0]) / d
    return u, a + c + s * u


def elements() -> OrderedDict:
    """The elements of ``mbgen inspect grcr``."""
    out = OrderedDict()
    out["s revolute ([CA eq 5], world, about the origin)"] = joint_column("revolute")
    out["s prismatic [CA eq 5]"] = joint_column("prismatic")
    for k, v in elimination().items():
        if k.startswith(("rho", "Q^k")):
            out[k] = v
    out["Y^k = W^k Y^{k-1}, Z^k = W^k Z^{k-1} + c_k + X^k C_k, H^k = W^k H^{k-1} + X^k G^k [CA eqs 79-81]"] = \
        sp.Symbol("see codegen.symbolic.grcr.elimination")
    out.update(triangularisation())
    return out


# ---------------------------------------------------------------------------------------------- kernels
class Staged(Kernel):
    """A Kernel whose printed body computes every output into a local before the first store.

    The C compiler need not reload the inputs after each store (the arrays are plain pointers that might alias)."""

    @property
    def lines(self):
        """The Cython body: kernel_lines, then every output staged in a local s<n> before the stores."""
        lines = kernel_lines(self)
        body, final = lines[:len(lines) - len(self.outs)], lines[len(lines) - len(self.outs):]
        staged, stores = [], []
        for n, line in enumerate(final):
            target, op, expr = line.split(" ", 2)
            if expr.startswith("o") and expr[1:].isdigit():      # already staged (an inout array read back)
                stores.append(line)
                continue
            staged.append(f"cdef double s{n} = {expr}")
            stores.append(f"{target} {op} s{n}")
        return body + staged + stores


def full6(name: str) -> sp.Matrix:
    """6x6 matrix read row major from name[0..35]."""
    return sp.Matrix(6, 6, lambda a, b: sp.Symbol(f"{name}[{6 * a + b}]"))


def _out6(k: Kernel, name: str, M: sp.Matrix, op: str = "="):
    k.out(name, [M[a, b] for a in range(6) for b in range(6)], op)


def eliminate_step() -> Kernel:
    """The kernel of one dependent coordinate's elimination: R^k, rho, Q and the partition's health."""
    k = Staged("eliminate_step", "[CA eqs 34, 36, 66]",
               "In: s (the column about the loop's point p), p, R = R^{k+1} (6x6, row major). Out: R <- R^k = "
               "R - rho Q rho^T, rho = R s shifted to the origin (rho_v; rho_w + p x rho_v), Q = (s^T R s)^-1, "
               "ratio = s^T R s / s^T s (the partition's health).",
               (Arg("s", 6, "in"), Arg("p", 3, "in"), Arg("R", 36, "inout"), Arg("rho", 6, "out"), Arg("q", 1, "out"),
                Arg("ratio", 1, "out")))
    s, R = arr("s", 6), full6("R")
    e = elimination(s, R)
    rl = k.lets_vec("rl", list(e["rho = R^{k+1} s [CA eq 34]"]))
    pi = k.let("piv", (s.T * rl)[0])
    q = k.let("qk", 1 / pi)
    Rn = e["R^k = R^{k+1} - rho Q rho^T [CA eqs 36, 66]"]
    Rn = Rn.xreplace({e["rho = R^{k+1} s [CA eq 34]"][a]: rl[a] for a in range(6)}).xreplace(
        {e["Q^k = (s^T R^{k+1} s)^-1 [CA eq 34]"].xreplace({e["rho = R^{k+1} s [CA eq 34]"][a]: rl[a]
                                                          for a in range(6)}): q})
    _out6(k, "R", Rn)
    p = arr("p", 3)
    k.out("rho", list(rl[:3, 0]) + list(rl[3:, 0] + p.cross(rl[:3, 0])))
    k.out("q", [q])
    k.out("ratio", [pi / (s.T * s)[0]])
    return k


def map_Y() -> Kernel:
    """The kernel Y <- W Y of the dependent region."""
    k = Staged("map_Y", "[CA eqs 76-77, 79]",
               "In: s, rho, q of a dependent joint. Out: Y <- W Y = Y + X Y, X = -s q rho^T (6x6, row major).",
               (Arg("s", 6, "in"), Arg("rho", 6, "in"), Arg("q", 1, "in", True), Arg("Y", 36, "inout")),
               optimizations=None)
    s, rho, Y = arr("s", 6), arr("rho", 6), full6("Y")
    _out6(k, "Y", Y + X_apply(s, rho, sp.Symbol("q"), Y))
    return k


def map_Z() -> Kernel:
    """The kernel Z <- W Z + c + X C of the dependent region."""
    k = Staged("map_Z", "[CA eqs 76-77, 80]",
               "In: s, rho, q, c (product term), C (suffix sum of c) of a dependent joint. Out: Z <- W Z + c + X C.",
               (Arg("s", 6, "in"), Arg("rho", 6, "in"), Arg("q", 1, "in", True), Arg("c", 6, "in"), Arg("C", 6, "in"),
                Arg("Z", 6, "inout")))
    s, rho, Z, C = arr("s", 6), arr("rho", 6), arr("Z", 6), arr("C", 6)
    k.out("Z", list(Z + arr("c", 6) + X_apply(s, rho, sp.Symbol("q"), Z + C)))
    return k


def body_load() -> Kernel:
    """The kernel of a region body's load: I Y and I Z - Q."""
    k = Staged("body_load", "[CA eqs 87-91]",
               "In: I, Q of a region body, its map a = Y a_p + H x + Z. Out: its force I a - Q in a_p: "
               "cp = I Y (6x6), cz = I Z - Q (the factor of x, I H, is per independent: the template's loop).",
               (Arg("I", 36, "in"), Arg("Y", 36, "in"), Arg("Z", 6, "in"), Arg("Q", 6, "in"), Arg("cp", 36, "out"),
                Arg("cz", 6, "out")), optimizations=None)
    I = full6("I")
    _out6(k, "cp", I * full6("Y"))
    k.out("cz", list(I * arr("Z", 6) - arr("Q", 6)))
    return k


def hang_load() -> Kernel:
    """The kernel of a coupled loop's load on the two bodies it hangs on."""
    k = Staged("hang_load", "[CA eqs 103-111]",
               "In: one side of a coupled loop's load f = KB A_B + Kb A_b + kz, the maps A_B = A_0 + YB a_p + HB x + ZB "
               "and A_b = A_0 + Yb a_p + Hb x + Zb. Out: f = c0 A_0 + cp a_p + cx x + cz: c0 = KB + Kb, "
               "cp = KB YB + Kb Yb, cz = kz + KB ZB + Kb Zb (cx per independent: the template's loop).",
               (Arg("KB", 36, "in"), Arg("Kb", 36, "in"), Arg("kz", 6, "in"), Arg("YB", 36, "in"), Arg("Yb", 36, "in"),
                Arg("ZB", 6, "in"), Arg("Zb", 6, "in"), Arg("c0", 36, "out"), Arg("cp", 36, "out"), Arg("cz", 6, "out")),
               optimizations=None)
    KB, Kb = full6("KB"), full6("Kb")
    _out6(k, "c0", KB + Kb)
    _out6(k, "cp", KB * full6("YB") + Kb * full6("Yb"))
    k.out("cz", list(arr("kz", 6) + KB * arr("ZB", 6) + Kb * arr("Zb", 6)))
    return k


def region_share() -> Kernel:
    """The kernel of the region's fixed-size sums, shared by its bodies and hanging loops."""
    k = Staged("region_share", "[CA eqs 53-55, 92-95]",
               "In: a load f = c0 A_0 + cp a_p + cz (+ x terms) on a body whose map has Y = Yh. Out (added): "
               "SYI += Yh^T c0, SYIY += Yh^T cp, SYb += Yh^T cz; the loop's total on its base S4 += c0, S1 += cp, "
               "S3 += cz.",
               (Arg("Yh", 36, "in"), Arg("c0", 36, "in"), Arg("cp", 36, "in"), Arg("cz", 6, "in"),
                Arg("SYI", 36, "inout"), Arg("SYIY", 36, "inout"), Arg("SYb", 6, "inout"), Arg("S1", 36, "inout"),
                Arg("S3", 6, "inout"), Arg("S4", 36, "inout")), optimizations=None)
    YT, c0, cp, cz = full6("Yh").T, full6("c0"), full6("cp"), arr("cz", 6)
    _out6(k, "SYI", YT * c0, "+=")
    _out6(k, "SYIY", YT * cp, "+=")
    k.out("SYb", list(YT * cz), "+=")
    _out6(k, "S1", cp, "+=")
    k.out("S3", list(cz), "+=")
    _out6(k, "S4", c0, "+=")
    return k


def inboard_step() -> Kernel:
    """The kernel of the inboard triangularisation T applied to Ih0, Ihp, beta."""
    k = Staged("inboard_step", "[CA eqs 60-64]",
               "In: s, c of inboard joint k; Ih0, Ihp (symmetric: its upper triangle is read), beta of the region "
               "folded onto body k. Out: up = Ihp s, u0 = Ih0^T s, b = s^T beta, d = M-hat = s^T Ihp s; "
               "Ih0 <- T Ih0, Ihp <- T Ihp, beta <- T (Ihp c + beta), T = U - Ihp s s^T / M-hat.",
               (Arg("s", 6, "in"), Arg("c", 6, "in"), Arg("Ih0", 36, "inout"), Arg("Ihp", 36, "inout"),
                Arg("bet", 6, "inout"), Arg("up", 6, "out"), Arg("u0", 6, "out"), Arg("b", 1, "out"),
                Arg("d", 1, "out")))
    s, c, bet, Ih0 = arr("s", 6), arr("c", 6), arr("bet", 6), full6("Ih0")
    Ihp = sp.Matrix(6, 6, lambda a, b: sp.Symbol(f"Ihp[{6 * min(a, b) + max(a, b)}]"))
    up = k.lets_vec("us", list(Ihp * s))
    u0 = k.lets_vec("uz", list(Ih0.T * s))
    d = k.let("dh", triangularisation(s, Ihp)["M-hat = s^T ^0I-hat s [CA eq 64]"])
    k.out("up", list(up))
    k.out("u0", list(u0))
    k.out("b", [(s.T * bet)[0]])
    k.out("d", [d])
    _out6(k, "Ih0", T_apply(s, up, d, Ih0).xreplace({(s.T * Ih0)[b]: u0[b] for b in range(6)}))
    _out6(k, "Ihp", T_apply(s, up, d, Ihp).xreplace({(s.T * Ihp)[b]: up[b] for b in range(6)}))
    k.out("bet", list(T_apply(s, up, d, Ihp * c + bet)))
    return k


def affine_step() -> Kernel:
    """The kernel of the affine acceleration a = al A_0 + ga a_b + be through one inboard joint."""
    k = Staged("affine_step", "[CA eq 59]",
               "In: s, c, u0, up, b, d of inboard joint k. Out: the body's acceleration relative to the base, "
               "a = al A_0 + ga a_b + be (6x6, 6x6, 6), carried through the joint: a <- a + c + s u_k, "
               "u_k = -(b + u0^T A_0 + up^T (a + c)) / d.",
               (Arg("s", 6, "in"), Arg("c", 6, "in"), Arg("u0", 6, "in"), Arg("up", 6, "in"), Arg("b", 1, "in", True),
                Arg("d", 1, "in", True), Arg("al", 36, "inout"), Arg("ga", 36, "inout"), Arg("be", 6, "inout")))
    A0, ab = vec("A0_"), vec("ab_")
    al, ga, be = full6("al"), full6("ga"), arr("be", 6)
    _, an = inboard_acceleration(arr("s", 6), arr("c", 6), arr("u0", 6), arr("up", 6), sp.Symbol("b"),
                                 sp.Symbol("d"), A0, al * A0 + ga * ab + be)
    zero = {x: 0 for x in list(A0) + list(ab)}
    _out6(k, "al", an.jacobian(A0).xreplace(zero))
    _out6(k, "ga", an.jacobian(ab).xreplace(zero))
    k.out("be", list(an.xreplace(zero)))
    return k


def inboard_accel() -> Kernel:
    """The kernel of one inboard joint's acceleration in the forward pass."""
    k = Staged("inboard_accel", "[CA eq 59]",
               "In: s, c, u0, up, b, d of inboard joint k, the base's acceleration A0, the body's acceleration "
               "relative to the base a. Out: ud = u_k = -(b + u0^T A_0 + up^T (a + c)) / d, a <- a + c + s u_k.",
               (Arg("s", 6, "in"), Arg("c", 6, "in"), Arg("u0", 6, "in"), Arg("up", 6, "in"), Arg("b", 1, "in", True),
                Arg("d", 1, "in", True), Arg("A0", 6, "in"), Arg("acc", 6, "inout"), Arg("ud", 1, "out")))
    s = arr("s", 6)
    u, _ = inboard_acceleration(s, arr("c", 6), arr("u0", 6), arr("up", 6), sp.Symbol("b"), sp.Symbol("d"),
                                arr("A0", 6), arr("acc", 6))
    u = k.let("uk", u)
    k.out("ud", [u])
    k.out("acc", list(arr("acc", 6) + arr("c", 6) + s * u))
    return k


def _force(name: str, eq: str, doc: str, body: bool) -> Kernel:
    """F += I0 A_0 + I1 a + f0 with a = al A_0 + ga a_b + be, as FA (of A_0), FG (of a_b), Fb (constant)."""
    args = (Arg("I", 36, "in"), Arg("Q", 6, "in")) if body else \
        (Arg("S4", 36, "in"), Arg("S1", 36, "in"), Arg("S3", 6, "in"))
    k = Staged(name, eq, doc, args + (Arg("al", 36, "in"), Arg("ga", 36, "in"), Arg("be", 6, "in"),
                                      Arg("FA", 36, "inout"), Arg("FG", 36, "inout"), Arg("Fb", 6, "inout")))
    I0, I1, f0 = (full6("I"), full6("I"), -arr("Q", 6)) if body else (full6("S4"), full6("S1"), arr("S3", 6))
    A0, ab = vec("A0_"), vec("ab_")
    F = I0 * A0 + I1 * (full6("al") * A0 + full6("ga") * ab + arr("be", 6)) + f0
    zero = {x: 0 for x in list(A0) + list(ab)}
    _out6(k, "FA", F.jacobian(A0).xreplace(zero), "+=")
    _out6(k, "FG", F.jacobian(ab).xreplace(zero), "+=")
    k.out("Fb", list(F.xreplace(zero)), "+=")
    return k


def body_force() -> Kernel:
    """The kernel of an inboard body's force as affine terms."""
    return _force("body_force", "[CA eqs 20-22]",
                  "In: I, Q of inboard body k, its acceleration relative to the base a = al A_0 + ga a_b + be. "
                  "Out (added): its force I (A_0 + a) - Q = FA A_0 + FG a_b + Fb.", True)


def region_force() -> Kernel:
    """The kernel of the region's force as affine terms."""
    return _force("region_force", "[CA eqs 20-22, 99]",
                  "In: the region's sums S4, S1, S3 (force S4 A_0 + S1 a_p + S2 x + S3), a_p = al A_0 + ga a_b + be. "
                  "Out (added): the terms without x to FA A_0 + FG a_b + Fb (the x terms: the template's loop).", False)


KERNELS = {"eliminate_step": eliminate_step, "map_Y": map_Y, "map_Z": map_Z, "body_load": body_load,
           "hang_load": hang_load, "region_share": region_share, "inboard_step": inboard_step,
           "affine_step": affine_step, "inboard_accel": inboard_accel, "body_force": body_force, "region_force": region_force}


@lru_cache(maxsize=None)
def kernel(name: str) -> Kernel:
    """One grcr kernel by name, derived once per process."""
    return KERNELS[name]()


@lru_cache(maxsize=None)
def grcr_kernels() -> Tuple[KernelCode, ...]:
    """The helpers templates/grcr calls (printed with the recursive kernels, codegen.symbolic.articulated)."""
    return tuple(KernelCode(k.name, k.equation, k.doc, k.params(), tuple(k.lines))
                 for k in (kernel(n) for n in KERNELS))
