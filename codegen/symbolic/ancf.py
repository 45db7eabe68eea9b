"""Shabana planar two-node ANCF beam, the element of the recursive ANCF (RANCF) of Hu & Wang.

Source: Hu Jingchen, Wang Tianshu, "A recursive absolute nodal coordinate formulation with O(n)
algorithm complexity", Chinese Journal of Theoretical and Applied Mechanics 48(5):1172-1183, 2016
(seed text shared/seeds/000_2dfa52d2e1bf2ae2.txt).  Equation numbers below are the paper's.

Everything is derived with sympy from the paper's definitions; nothing is typed in by hand except the
shape functions [HW eq 3].  Functions are short and named after the paper's symbols:

    e                 nodal coordinates                                   [HW eq 1]
    S, r = S e        shape function matrix                               [HW eqs 2-3]
    M_E               mass matrix  rho A l int_0^1 S^T S dxi              [HW eq 4]
    u_s, U            chord-frame deformation and elastic energy          [HW eqs 5-6]
    F_EK, dF_EK/de    elastic force (gradient of U) and its Jacobian      [HW eq 7]
    F_E, F_EG         external nodal forces and gravity                   [HW eqs 8-9]

plus C code generation for F_EK and its Jacobian (cse + sympy's C99 printer) and the ``INSPECT``
table used by ``mbgen inspect``.

Reading notes on the seed text (the text is an OCR/HTML conversion; some formulas are damaged):

* [HW eq 1] prints the coordinate order e = [r_A; r_B; r'_A; r'_B], but the shape matrix [HW eq 3], the
  printed mass matrix [HW eq 4], the gravity vector [HW eq 9] and the node-major velocities of [HW eqs 11-12]
  all use  e = [r_A; r'_A; r_B; r'_B] = [x_A, y_A, x'_A, y'_A, x_B, y_B, x'_B, y'_B].  We use the
  latter (the only order consistent with [HW eqs 3, 4, 9, 12]).
* [HW eq 4] prints the matrix without its factor; int_V rho S^T S dV = rho A l * (printed matrix).
* [HW eq 6] is legible: U = 1/2 int_0^l [E a (u_l')^2 + E I (u_t'')^2] ds, with "a" the cross-section
  area (called A here).  The bending term is the paper's own curvature measure: the second
  derivative of the transverse displacement u_t in the frame rotated by the chord angle alpha (a
  linearised curvature in the co-rotated chord frame), not the exact curvature |r' x r''|/|r'|^3.
* [HW eq 7] is garbled in the text (one term reads "+T(A_22+B_11)e(...)", the e^T is lost; the
  auxiliary matrices A_ij, B_ij, A_i are only defined by reference to Shabana's report [4]).  It is
  reconstructed here as the chain rule of [HW eq 6] written with
        A_ij = E A int_0^l S_i'^T S_j' ds,  B_ij = E I int_0^l S_i''^T S_j'' ds,  A_i = E A int_0^l S_i' ds
  (S_i = i-th row of S), i.e.
        U = 1/2 e^T [c^2 (A11+B22) + s^2 (A22+B11) + c s (A12+A21-B12-B21)] e - (c A1 + s A2) e + E A l/2
  with c = cos(alpha), s = sin(alpha); see ``elastic_force_eq7`` (it equals the symbolic gradient,
  which tests/symbolic/test_ancf_symbolic.py checks).  "F_EK = K_E e" in [HW eq 7] is notation only: F_EK is
  not linear in e.
* [HW eq 9] prints F_EG = m g [0, 1/2, 0, l/12, 0, 1/2, 0, -l/12]^T, i.e. g is the signed y component
  of gravity; here F_EG = int rho A S^T g ds for any g = (g_x, g_y), which reduces to [HW eq 9] for
  g_x = 0, g_y = g.

The chord angle alpha (Fig. 2) is the angle of r_B - r_A:  cos(alpha) = (x_B - x_A)/d,
sin(alpha) = (y_B - y_A)/d, d = |r_B - r_A|.  Expressions are kept in terms of e, cos(alpha),
sin(alpha) and d, and differentiated with the exact chain rule (``total_derivative``); this keeps
F_EK and its Jacobian small (the fully expanded forms with the square root substituted are ~10x
larger and slow to build).  ``explicit`` substitutes alpha and d by their definitions when a pure
function of e is wanted.  Everything is singular for a collapsed chord (d = 0).
"""
from __future__ import annotations

from collections import OrderedDict
from functools import lru_cache
from typing import Dict, List, Sequence, Tuple

import sympy as sp
from sympy.printing.c import C99CodePrinter
from sympy.printing.precedence import PRECEDENCE

from .persist import persistent

# ------------------------------------------------------------------ symbols (paper notation)

xi = sp.Symbol("xi", real=True)                 # xi = s / l, [HW eq 3]
s_arc = sp.Symbol("s", real=True)               # arc-length coordinate s along the element
l, E, A, I, rho = sp.symbols("l E A I rho", positive=True)   # length, modulus, area, area moment, density
gx, gy = sp.symbols("g_x g_y", real=True)       # gravity components
alpha = sp.Symbol("alpha", real=True)           # chord angle (Fig. 2)
d = sp.Symbol("d", positive=True)               # chord length |r_B - r_A|

# nodal coordinates in the order [r_A; r'_A; r_B; r'_B] (see module notes on [HW eq 1])
E_NAMES = ("x_A", "y_A", "x'_A", "y'_A", "x_B", "y_B", "x'_B", "y'_B")
e = sp.ImmutableMatrix([sp.Symbol(n, real=True) for n in E_NAMES])


# ------------------------------------------------------------------ element kinematics

def nodal_coordinates() -> sp.Matrix:
    """The nodal coordinates e of an ANCF beam element, [r_A; r'_A; r_B; r'_B]."""
    # Hu & Wang 2016, [HW eq 1] (order [r_A; r'_A; r_B; r'_B], the one used by [HW eqs 3, 4, 9, 12])
    return e


def shape_functions() -> List[sp.Expr]:
    """The cubic Hermite shape functions N1..N4 of xi = s / l."""
    # Hu & Wang 2016, [HW eq 3]: cubic Hermite functions of xi = s/l
    return [1 - 3 * xi**2 + 2 * xi**3,
            l * (xi - 2 * xi**2 + xi**3),
            3 * xi**2 - 2 * xi**3,
            l * (xi**3 - xi**2)]


@lru_cache(maxsize=None)
def shape_matrix() -> sp.Matrix:
    """The shape matrix S (2 x 8) with r = S e."""
    # Hu & Wang 2016, [HW eq 3]: S = [N1 I2, N2 I2, N3 I2, N4 I2]  (2 x 8), r = S e [HW eq 2]
    N = shape_functions()
    S = sp.zeros(2, 8)
    for k in range(4):
        S[0, 2 * k] = N[k]
        S[1, 2 * k + 1] = N[k]
    return sp.ImmutableMatrix(S)   # cached results are immutable


def position() -> sp.Matrix:
    """The position r(xi) = S e of a point of the element."""
    # Hu & Wang 2016, [HW eq 2]: r(xi) = S e
    return shape_matrix() * e


def int01(f) -> sp.Expr:
    """int_0^1 f dxi for f polynomial in xi (exact, term by term: int_0^1 c xi^k dxi = c/(k+1))."""
    total = []
    for term in sp.Add.make_args(sp.expand(f)):
        coeff, k = term.as_coeff_exponent(xi)
        if coeff.has(xi) or not (k.is_Integer and k >= 0):
            raise ValueError(f"int01 needs a polynomial in xi, got the term {term}")
        total.append(coeff / (k + 1))
    return sp.Add(*total)


def d_ds(expr, n: int = 1):
    """n-th derivative along the arc length s = l xi."""
    return sp.diff(expr, xi, n) / l**n


@lru_cache(maxsize=None)
def mass_matrix() -> sp.Matrix:
    """The element's consistent mass matrix M_E (8 x 8)."""
    # Hu & Wang 2016, [HW eq 4]: M_E = int_V rho S^T S dV = rho A l int_0^1 S^T S dxi
    S = shape_matrix()
    return sp.ImmutableMatrix((rho * A * l * (S.T * S).applyfunc(int01)).applyfunc(sp.factor))


# ------------------------------------------------------------------ chord frame and elastic energy

def chord_frame() -> sp.Matrix:
    """The rotation by the chord angle alpha (the element frame)."""
    # Hu & Wang 2016, [HW eq 5]: rotation by the chord angle alpha (element frame of Fig. 2)
    c, s = sp.cos(alpha), sp.sin(alpha)
    return sp.Matrix([[c, s], [-s, c]])


def chord_gradients() -> Tuple[sp.Matrix, sp.Matrix]:
    """d(alpha)/de and d(d)/de in terms of cos(alpha), sin(alpha), d (alpha = atan2(y_B-y_A, x_B-x_A))."""
    # Hu & Wang 2016, [HW eq 7]: the d(cos alpha)/de = -sin(alpha) d(alpha)/de, d(sin alpha)/de = cos(alpha) d(alpha)/de
    c, s = sp.cos(alpha), sp.sin(alpha)
    grad_alpha = sp.Matrix([s, -c, 0, 0, -s, c, 0, 0]) / d
    grad_d = sp.Matrix([-c, -s, 0, 0, c, s, 0, 0])
    return grad_alpha, grad_d


def explicit(expr):
    """Substitute cos(alpha), sin(alpha), d by their definitions in e (a pure function of e)."""
    dx, dy = e[4] - e[0], e[5] - e[1]
    dd = sp.sqrt(dx**2 + dy**2)
    return expr.xreplace({sp.cos(alpha): dx / d, sp.sin(alpha): dy / d}).xreplace({d: dd})


def total_derivative(expr, k: int):
    """d(expr)/d(e_k) for expr(e, alpha(e), d(e)): exact chain rule through the chord angle and length."""
    grad_alpha, grad_d = chord_gradients()
    return sp.diff(expr, e[k]) + sp.diff(expr, alpha) * grad_alpha[k] + sp.diff(expr, d) * grad_d[k]


@lru_cache(maxsize=None)
def deformation() -> sp.Matrix:
    """The deformation u_s = (u_l, u_t) in the chord frame."""
    # Hu & Wang 2016, [HW eq 5]: u_s = [u_l, u_t] = R(alpha) (r - r_A) - [s, 0]
    r = position()
    r_A = r.subs(xi, 0)
    return sp.ImmutableMatrix(chord_frame() * (r - r_A) - sp.Matrix([l * xi, 0]))


@lru_cache(maxsize=None)
def strain_energy() -> sp.Expr:
    """The element's strain energy U."""
    # Hu & Wang 2016, [HW eq 6]: U = 1/2 int_0^l [E A (u_l')^2 + E I (u_t'')^2] ds  ("Ea" of the text = E A);
    # u_t'' in the chord frame is the paper's (linearised) curvature.  ds = l dxi.
    u_l, u_t = deformation()
    integrand = E * A * d_ds(u_l) ** 2 + E * I * d_ds(u_t, 2) ** 2
    U = sp.Rational(1, 2) * l * int01(integrand)
    return sp.collect(sp.expand(U), [E * A, E * I])


@lru_cache(maxsize=None)
def elastic_force() -> sp.Matrix:
    """The elastic force F_EK = dU/de (8 entries)."""
    # Hu & Wang 2016, [HW eq 7]: F_EK = dU/de (symbolic gradient, chain rule through alpha(e))
    U = strain_energy()
    return sp.ImmutableMatrix([total_derivative(U, k) for k in range(8)])


@lru_cache(maxsize=None)
def elastic_jacobian() -> sp.Matrix:
    """The tangent stiffness K_T = dF_EK/de (8 x 8)."""
    # Hu & Wang 2016, [HW eq 7] differentiated once more: K_T = dF_EK/de (8 x 8, the Hessian of U)
    F = elastic_force()
    return sp.ImmutableMatrix(8, 8, lambda i, j: total_derivative(F[i], j))


@lru_cache(maxsize=None)
def paper_matrices() -> Dict[str, sp.Matrix]:
    """The auxiliary matrices A_ij, B_ij, A_i of the printed elastic force."""
    # Hu & Wang 2016, [HW eq 7] auxiliary matrices (defined only by reference [4] in the paper; reconstructed):
    # A_ij = E A int S_i'^T S_j' ds, B_ij = E I int S_i''^T S_j'' ds, A_i = E A int S_i' ds (1 x 8)
    S = shape_matrix()
    S1, S2 = d_ds(S), d_ds(S, 2)

    def integ(M):
        return (l * M).applyfunc(int01)

    out = {}
    for i in range(2):
        out[f"A{i + 1}"] = sp.ImmutableMatrix(integ(E * A * S1[i, :]))
        for j in range(2):
            out[f"A{i + 1}{j + 1}"] = sp.ImmutableMatrix(integ(E * A * S1[i, :].T * S1[j, :]))
            out[f"B{i + 1}{j + 1}"] = sp.ImmutableMatrix(integ(E * I * S2[i, :].T * S2[j, :]))
    return out


@lru_cache(maxsize=None)
def elastic_force_eq7() -> sp.Matrix:
    """The elastic force in the paper's printed form, for comparison with elastic_force()."""
    # Hu & Wang 2016, [HW eq 7] as printed (reconstructed where garbled: "+T(A22+B11)e" -> "+e^T(A22+B11)e")
    P = paper_matrices()
    c, s = sp.cos(alpha), sp.sin(alpha)
    grad_alpha, _ = chord_gradients()
    dc, ds = -s * grad_alpha, c * grad_alpha           # d(cos alpha)/de, d(sin alpha)/de
    K1 = P["A11"] + P["B22"]
    K2 = P["A22"] + P["B11"]
    K3 = P["A12"] + P["A21"] - P["B12"] - P["B21"]
    q = lambda K: (e.T * K * e)[0, 0]
    return sp.ImmutableMatrix(c**2 * K1 * e + q(K1) * c * dc
            + s**2 * K2 * e + q(K2) * s * ds
            + s * c * K3 * e + sp.Rational(1, 2) * q(K3) * (s * dc + c * ds)
            - c * P["A1"].T - s * P["A2"].T - (P["A1"] * e)[0, 0] * dc - (P["A2"] * e)[0, 0] * ds)


# ------------------------------------------------------------------ applied forces

def external_force(F=None, xi_F=None) -> sp.Matrix:
    """The generalized force F_E = S^T F of a force F applied at xi_F."""
    # Hu & Wang 2016, [HW eq 8]: F_E = S^T F for a force F applied at xi_F (virtual work F . S de)
    F = sp.Matrix(sp.symbols("F_x F_y", real=True)) if F is None else sp.Matrix(F)
    xi_F = sp.Symbol("xi_F", real=True) if xi_F is None else xi_F
    return shape_matrix().subs(xi, xi_F).T * F


@lru_cache(maxsize=None)
def gravity_force() -> sp.Matrix:
    """The generalized gravity force F_EG of the element."""
    # Hu & Wang 2016, [HW eq 9]: F_EG = int_0^l rho A S^T g ds for g = (g_x, g_y); [HW eq 9] is g_x = 0, g_y = g
    S = shape_matrix()
    g = sp.Matrix([gx, gy])
    return sp.ImmutableMatrix((rho * A * l * (S.T * g).applyfunc(int01)).applyfunc(sp.factor))


def gravity_potential() -> sp.Expr:
    """Potential of gravity V = -int rho A g . r ds = -F_EG . e (its gradient is -F_EG)."""
    return sp.expand(-(gravity_force().T * e)[0, 0])


# ------------------------------------------------------------------ C code generation

class _CPrinter(C99CodePrinter):
    """sympy's C99 printer, with small integer powers written as products (x*x instead of pow(x, 2))."""

    def _print_Pow(self, expr):
        b, p = expr.base, expr.exp
        if p.is_Integer and 2 <= abs(int(p)) <= 4:
            base = self.parenthesize(b, PRECEDENCE["Mul"] + 1)
            prod = "*".join([base] * abs(int(p)))
            # always parenthesised: sympy ranks a Pow above a Mul, so a caller printing "a/" + this
            # would not add parentheses itself ("a/x*x" would be wrong)
            return f"({prod})" if p > 0 else f"(1.0/({prod}))"
        return super()._print_Pow(expr)


# names of the chord quantities computed first in the generated code
CHORD_NAMES = ("chord_x", "chord_y", "chord", "cos_a", "sin_a")


@persistent
def _c_assignments_cached(what: Tuple[str, ...], e_name: str, F_name: str, J_name: str,
                          params: Tuple[str, str, str, str], temp_prefix: str) -> Tuple[Tuple[str, str], ...]:
    es = sp.MatrixSymbol(e_name, 8, 1)
    pE, pA, pI, pl = (sp.Symbol(n, real=True) for n in params)
    cx, cy, ch, ca, sa = (sp.Symbol(n, real=True) for n in CHORD_NAMES)
    to_c = {sp.cos(alpha): ca, sp.sin(alpha): sa, d: ch, E: pE, A: pA, I: pI, l: pl}
    to_c.update({e[k]: es[k, 0] for k in range(8)})

    targets, exprs = [], []
    if "F_EK" in what:
        F = elastic_force()
        targets += [f"{F_name}[{k}]" for k in range(8)]
        exprs += [F[k].xreplace(to_c) for k in range(8)]
    if "dF_EK" in what:
        J = elastic_jacobian()
        targets += [f"{J_name}[{8 * i + j}]" for i in range(8) for j in range(8)]
        exprs += [J[i, j].xreplace(to_c) for i in range(8) for j in range(8)]

    printer = _CPrinter()
    out = [(CHORD_NAMES[0], printer.doprint(es[4, 0] - es[0, 0])),
           (CHORD_NAMES[1], printer.doprint(es[5, 0] - es[1, 0])),
           (CHORD_NAMES[2], printer.doprint(sp.sqrt(cx**2 + cy**2))),
           (CHORD_NAMES[3], printer.doprint(cx / ch)),
           (CHORD_NAMES[4], printer.doprint(cy / ch))]
    reps, reduced = sp.cse(exprs, symbols=sp.numbered_symbols(temp_prefix))
    out += [(str(sym), printer.doprint(val)) for sym, val in reps]
    out += [(t, printer.doprint(x)) for t, x in zip(targets, reduced)]
    return tuple(out)


def c_assignments(what: Sequence[str] = ("F_EK", "dF_EK"), e_name: str = "e", F_name: str = "F",
                  J_name: str = "J", params: Sequence[str] = ("E", "A", "I", "l"),
                  temp_prefix: str = "t") -> List[Tuple[str, str]]:
    """(target, C expression) assignments computing F_EK (F[0..7]) and/or dF_EK/de (J[0..63], row-major).

    Inputs of the code: the array ``e[0..7]`` (order of [HW eq 1] as used here) and the scalars E, A, I, l
    (names changeable with ``params``, e.g. if ``I`` clashes with complex.h).  The first five
    assignments compute the chord (chord_x, chord_y, chord, cos_a, sin_a); then the common
    subexpressions of sympy ``cse`` (temp_prefix0, temp_prefix1, ...); then the outputs.  Every
    target without ``[`` is a local ``double`` (see ``c_locals``).  Only +, -, *, / and sqrt (and
    pow for non-integer powers, if any) appear, so the lines are valid C and valid Cython inside a
    ``nogil`` function with ``from libc.math cimport sqrt, pow`` (use cdivision).
    """
    what = tuple(what)
    for w in what:
        if w not in ("F_EK", "dF_EK"):
            raise ValueError(f"unknown output {w!r}; expected 'F_EK' and/or 'dF_EK'")
    return list(_c_assignments_cached(what, e_name, F_name, J_name, tuple(params), temp_prefix))


def c_locals(assignments: Sequence[Tuple[str, str]]) -> List[str]:
    """Names of the local double temporaries of an assignment list (targets that are not array entries)."""
    return [t for t, _ in assignments if "[" not in t]


def cython_function(name: str = "ancf_beam_elastic", what: Sequence[str] = ("F_EK", "dF_EK")) -> str:
    """A complete ``cdef ... noexcept nogil`` Cython function around ``c_assignments`` (for pasting)."""
    assigns = c_assignments(what)
    args = ["const double* e", "double E", "double A", "double I", "double l"]
    if "F_EK" in what:
        args.append("double* F")
    if "dF_EK" in what:
        args.append("double* J")
    lines = ["# needs: from libc.math cimport sqrt, pow   and   # cython: cdivision=True",
             f"cdef void {name}({', '.join(args)}) noexcept nogil:",
             "    # Hu & Wang 2016, [HW eq 7]: F = dU/de (F[0..7]) and J = dF/de (J[0..63], row-major)"]
    locs = c_locals(assigns)
    for i in range(0, len(locs), 12):
        lines.append("    cdef double " + ", ".join(locs[i:i + 12]))
    lines += [f"    {t} = {x}" for t, x in assigns]
    return "\n".join(lines) + "\n"


# ------------------------------------------------------------------ inspection table (mbgen inspect)

def _inspect_beam():
    return OrderedDict([
        ("e [HW eq 1]", nodal_coordinates()),
        ("S [HW eq 3]", shape_matrix()),
        ("M_E [HW eq 4]", mass_matrix()),
        ("U [HW eq 6]", strain_energy()),
        ("F_EK [HW eq 7]", elastic_force()),
        ("F_EG [HW eq 9]", gravity_force()),
    ])


def _inspect_elastic():
    P = paper_matrices()
    grad_alpha, grad_d = chord_gradients()
    return OrderedDict([
        ("u_s [HW eq 5]", deformation()),
        ("U [HW eq 6]", strain_energy()),
        ("A11 + B22 [HW eq 7]", P["A11"] + P["B22"]),
        ("A22 + B11 [HW eq 7]", P["A22"] + P["B11"]),
        ("A12 + A21 - B12 - B21 [HW eq 7]", P["A12"] + P["A21"] - P["B12"] - P["B21"]),
        ("A1 [HW eq 7]", P["A1"]),
        ("A2 [HW eq 7]", P["A2"]),
        ("d alpha / d e", grad_alpha),
        ("F_EK [HW eq 7]", elastic_force()),
    ])


def _inspect_gravity():
    return OrderedDict([
        ("F_E [HW eq 8]", external_force()),
        ("F_EG [HW eq 9]", gravity_force()),
        ("V_G = -F_EG . e", gravity_potential()),
    ])


def _inspect_mass():
    return OrderedDict([("S [HW eq 3]", shape_matrix()), ("M_E [HW eq 4]", mass_matrix())])


INSPECT = {
    "shabana-beam": _inspect_beam,
    "shabana-beam-mass": _inspect_mass,
    "shabana-beam-elastic": _inspect_elastic,
    "shabana-beam-gravity": _inspect_gravity,
}
