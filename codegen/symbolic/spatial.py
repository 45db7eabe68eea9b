"""Spatial algebra of the analysis reference point (Kang & Yoon 2003), derived with sympy.

State vectors are world-frame Y^P = (velocity of the body point at P, omega). With s^P the offset of
P from the centroid C:
    T^P  = [[I, s~], [0, I]]                      [KY eq 4]   delta Z^c = T^P delta Z^P
    M^P  = T^T M^c T                              [KY eq 8]
    Q^P  = T^T (Q^c - M^c Tdot Y^P)               [KY eq 8]
    B1, B2 velocity transformation matrices       [KY eqs 25, 33]   Y_j = B1 Y_i + B2 qdot_j
The recursion's kernels (``templates/recursive/recursive.pyx.j2``) are generated from the same
expressions by ``codegen.symbolic.articulated`` (sympy + CSE, printed as C functions); tests compare
them with numpy and with these elements (tests/symbolic/test_spatial_codegen.py).
"""
from __future__ import annotations

from collections import OrderedDict
from functools import lru_cache

import sympy as sp

from .joints import skew

REF_POINTS = ("centroid", "joint", "origin")


def vec(name):
    """A 3-vector of symbols name_x, name_y, name_z."""
    return sp.Matrix(sp.symbols(f"{name}_x {name}_y {name}_z", real=True))


def sym3(name):
    """A symmetric 3 x 3 matrix of symbols."""
    a = sp.symbols(f"{name}_xx {name}_xy {name}_xz {name}_yy {name}_yz {name}_zz", real=True)
    return sp.Matrix([[a[0], a[1], a[2]], [a[1], a[3], a[4]], [a[2], a[4], a[5]]])


def block(A, B, C, D):
    """The 2 x 2 block matrix [[A, B], [C, D]]."""
    return sp.Matrix.vstack(sp.Matrix.hstack(A, B), sp.Matrix.hstack(C, D))


@lru_cache(maxsize=None)
def reference_point(name: str) -> "OrderedDict[str, sp.Basic]":
    """Symbolic elements of one analysis reference point (centroid | joint | origin)."""
    if name not in REF_POINTS:
        raise KeyError(f"reference point '{name}' not one of {', '.join(REF_POINTS)}")
    m = sp.Symbol("m", positive=True)
    J = sym3("J")                     # central inertia, world frame
    F, tau = vec("F"), vec("tau")     # applied force at C, applied torque
    w = vec("omega")                  # angular velocity of body j
    rho = vec("rho")                  # joint point -> centroid, world
    rc = vec("r^c")                   # centroid, world
    rcd = vec("rdot^c")               # centroid velocity
    I3, Z3 = sp.eye(3), sp.zeros(3)
    s = {"centroid": sp.zeros(3, 1), "joint": -rho, "origin": -rc}[name]               # P - C
    sd = {"centroid": sp.zeros(3, 1), "joint": -w.cross(rho), "origin": -rcd}[name]    # d/dt (P - C)
    T = block(I3, skew(s), Z3, I3)                                                    # [KY eq 4]
    Td = block(Z3, skew(sd), Z3, Z3)
    Mc = block(m * I3, Z3, Z3, J)                                                     # [KY eq 3]
    Qc = sp.Matrix.vstack(F, tau - skew(w) * J * w)                                   # [KY eq 3]
    vP = vec("v^P")
    YP = sp.Matrix.vstack(vP, w)
    MP = sp.simplify(T.T * Mc * T)                                                    # [KY eq 8]
    QP = sp.simplify(T.T * (Qc - Mc * Td * YP))                                       # [KY eq 8]
    # velocity transformation [KY eqs 25, 33] for a joint with world maps B^v, B^w (one column shown)
    Bv, Bw = vec("B^v"), vec("B^w")
    r_j, r_i = vec("r_j"), vec("r_i")   # joint points of body j and of its parent i
    rho_i = vec("rho_i")
    P_j = {"centroid": r_j + rho, "joint": r_j, "origin": sp.zeros(3, 1)}[name]
    P_i = {"centroid": r_i + rho_i, "joint": r_i, "origin": sp.zeros(3, 1)}[name]
    B1 = block(I3, -skew(P_j - P_i), Z3, I3)
    B2 = sp.Matrix.vstack(Bv - skew(P_j - r_j) * Bw, Bw)
    out = OrderedDict()
    out["s^P (P - centroid)"] = s
    out["T^P  [KY eq 4]"] = T
    out["M^c  [KY eq 3]"] = Mc
    out["Q^c  [KY eq 3]"] = Qc
    out["M^P = T^T M^c T  [KY eq 8]"] = MP
    out["Q^P = T^T (Q^c - M^c Tdot Y^P)  [KY eq 8]"] = QP
    out["B_j1  [KY eqs 25, 33]"] = B1
    out["B_j2 column  [KY eqs 25, 33]"] = B2
    return out


def spatial_elements() -> "OrderedDict[str, sp.Basic]":
    """The elements of ``mbgen inspect spatial``."""
    v = vec("v")
    return OrderedDict([("skew(v) = v~", skew(v)), ("T^P [KY eq 4], s = offset of P from the centroid",
                                                    block(sp.eye(3), skew(vec("s")), sp.zeros(3), sp.eye(3)))])
