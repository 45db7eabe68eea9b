"""The loop recursion of the generalized recursive coordinate reduction (Critchley & Anderson, seed 003) in
sympy, for ``mbgen inspect grcr``: world-frame joint columns ([CA eq 5] about the origin, linear part first), the
dependent-coordinate elimination [CA eqs 28-30, 34, 36, 66], W and X [CA eqs 39-40, 76-77] and the recursions of
Y, Z, H [CA eqs 79-81], the inboard triangularisation T [CA eq 63].  The generated kernel (templates/grcr) applies
the same rank-one forms; tests/symbolic/test_grcr_symbolic.py checks the identities they rest on.
"""
from __future__ import annotations

from collections import OrderedDict

import sympy as sp


def vec(name, n=6):
    return sp.Matrix(n, 1, lambda a, _: sp.Symbol(f"{name}{a}"))


def sym6(name):
    return sp.Matrix(6, 6, lambda a, b: sp.Symbol(f"{name}{min(a, b)}{max(a, b)}"))


def joint_column(jtype: str, r=None, axis=None) -> sp.Matrix:
    """World joint column s (linear velocity of the body point at the origin; angular) of a one-coordinate
    joint through point r along unit axis a: revolute [r x a; a], prismatic [a; 0] [CA eq 5]."""
    r = sp.Matrix(sp.symbols("r_x r_y r_z")) if r is None else sp.Matrix(r)
    a = sp.Matrix(sp.symbols("a_x a_y a_z")) if axis is None else sp.Matrix(axis)
    if jtype == "revolute":
        return sp.Matrix.vstack(r.cross(a), a)
    if jtype == "prismatic":
        return sp.Matrix.vstack(a, sp.zeros(3, 1))
    raise KeyError(jtype)


def elimination(s=None, R=None) -> OrderedDict:
    """One dependent coordinate eliminated from the tip: rho = R s, Q = (s^T R s)^-1 [CA eq 34], R' [CA eq 36],
    X = -s Q rho^T and W = U + X ([CA eqs 76-77], the shift tensors being identities in world coordinates)."""
    s = vec("s") if s is None else s
    R = sym6("R") if R is None else R
    rho = R * s
    Q = 1 / (s.T * rho)[0]
    X = -s * Q * rho.T
    return OrderedDict([("rho = R^{k+1} s [CA eq 34]", rho), ("Q^k = (s^T R^{k+1} s)^-1 [CA eq 34]", Q),
                        ("R^k = R^{k+1} - rho Q rho^T [CA eqs 36, 66]", R - rho * Q * rho.T),
                        ("X^k = -s Q rho^T [CA eq 77]", X), ("W^k = U + X^k [CA eq 76]", sp.eye(6) + X)])


def triangularisation(s=None, Ihp=None) -> OrderedDict:
    """Inboard step [CA eqs 59-64]: M-hat = s^T Ihp s, T = U - Ihp s s^T / M-hat."""
    s = vec("s") if s is None else s
    Ihp = sym6("I") if Ihp is None else Ihp
    d = (s.T * Ihp * s)[0]
    return OrderedDict([("M-hat = s^T ^0I-hat s [CA eq 64]", d), ("T = U - ^0I-hat s s^T / M-hat [CA eq 63]",
                                                               sp.eye(6) - Ihp * s * s.T / d)])


def elements() -> OrderedDict:
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
