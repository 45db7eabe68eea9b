"""Flexible planar beams: the recursive ANCF (RANCF) of Hu & Wang 2016, generated per model.

Paper: Hu Jingchen, Wang Tianshu, "A recursive absolute nodal coordinate formulation with O(n)
algorithm complexity", Chinese J. Theor. Appl. Mech. 48(5):1172-1183, 2016 (seed text
shared/seeds/000_2dfa52d2e1bf2ae2.txt); equation numbers are the paper's.  Model M3 of
shared/specs/models.md.

This module is the Python side of the ``rancf`` family (schema and coordinate layout: codegen.model.beams):

* the plan (``BeamPlan``, on the model's ``BeamLayout``: elements in topological order, their kind,
  the kinematic parent element, the offsets of the generalised speeds beta [HW eqs 12-14, 17-23], the
  elimination order of the O(n) solve);
* parameters (per element mass matrix M_E [HW eq 4], E, A, I, l, gravity forces F_EG [HW eq 9], joint
  data, constant loads [HW eq 8]);
* the element code (elastic forces and their Jacobian, [HW eqs 5-7], strain energy [HW eq 6]) from sympy,
  and the variables of ``templates/rancf/rancf.pyx.j2``.
"""
from __future__ import annotations

from enum import IntEnum
from functools import lru_cache
from typing import Dict

import numpy as np

from ...model.beams import (GROUND, K_GCLAMP, K_GPIN, K_GTRA, K_INT, K_REV, K_TRA, BeamLayout,  # noqa: F401
                            BeamModel)
from ...symbolic.layout import Layout

# Per element s in p, at P_ELEMENTS + NPE s (the template's P_<block>): the mass matrix M_E ([HW eqs 4, 8] x 8), E, A, I, the
# element length l, the constant forces F_E (gravity, [HW eq 9], and loads, [HW eq 8]), and for the first element of a beam its
# joint: the ground point r0, the initial direction t0, the slider's axis.
ELEMENT_PARAMS = Layout(("M", 64), ("E", 1), ("A", 1), ("I", 1), ("L", 1), ("FE", 8), ("R0", 2), ("T0", 2), ("AX", 2))
NPE = ELEMENT_PARAMS.size
P_ELEMENTS = 2                        # p[0:2] gravity, then the elements
METHODS = ("rancf", "dense")          # O(n) recursion [HW eqs 44-55], dense Cholesky of the same Omega
Method = IntEnum("Method", [(m.upper(), k) for k, m in enumerate(METHODS)])      # C names: METHOD_RANCF, ...
BeamKind = IntEnum("BeamKind", [("INT", K_INT), ("REV", K_REV), ("TRA", K_TRA), ("GPIN", K_GPIN),
                                ("GCLAMP", K_GCLAMP), ("GTRA", K_GTRA)])           # codegen.model.beams: K_INT, ...


class Solve(IntEnum):
    """What the kernel's factor, fd and hht_step return (0: done)."""

    OK = 0
    NOT_PD = -1               # a Cholesky factorisation (P_s of [HW eq 46], or the dense Omega) met a non-positive pivot
    NO_MEMORY = -3            # the dense solve could not allocate its matrices
    NOT_CONVERGED = -4        # HHT: Newton did not converge within maxit (the step is kept, counted)


RANCF_ENUMS = {"K": BeamKind, "METHOD": Method, "SOLVE": Solve}      # rendered as the shared codes are


class BeamPlan(BeamLayout):
    """The model's layout plus its numeric parameter vector."""

    def params(self) -> np.ndarray:
        """The parameter vector of the beam model: the elements' numbers, geometry and loads."""
        m = self.model
        beams = {b.name: b for b in m.beams}
        jby = {j.child: j for j in m.joints}
        start, direc = self.element_geometry()
        p = np.zeros(P_ELEMENTS + NPE * self.nbar)
        p[0:P_ELEMENTS] = m.gravity
        for s in range(self.nbar):
            b = self.beam_order[self.beam_of[s]]
            bm, j = beams[b], jby[b]
            l = bm.length / bm.elements
            blk = self.element_numbers(p, s)
            blk["M"][:] = element_mass(bm.rho, bm.A, l).reshape(64)                      # [HW eq 4]
            blk["E"][:], blk["A"][:], blk["I"][:], blk["L"][:] = bm.E, bm.A, bm.I, l
            blk["FE"][:] = element_gravity(bm.rho, bm.A, l, m.gravity[0], m.gravity[1])  # [HW eq 9]
            if self.local[s] == 0:
                if j.parent == GROUND:
                    blk["R0"][:] = j.at
                blk["T0"][:] = direc[b]
                if j.axis is not None:
                    blk["AX"][:] = j.axis
        for ld in m.loads:                 # [HW eq 8]: F_E = S(xi)^T F, on the element holding s
            bm = beams[ld.beam]
            l = bm.length / bm.elements
            i = min(int(ld.s / l), bm.elements - 1)
            xi = ld.s / l - i
            s = self.first_el[ld.beam] + i
            N = np.array([1 - 3 * xi**2 + 2 * xi**3, l * (xi - 2 * xi**2 + xi**3), 3 * xi**2 - 2 * xi**3,
                          l * (xi**3 - xi**2)])                                            # [HW eq 3]
            fe = self.element_numbers(p, s)["FE"]
            fe[0::2] += N * ld.force[0]
            fe[1::2] += N * ld.force[1]
        return p

    @staticmethod
    def element_numbers(p: np.ndarray, s: int) -> Dict[str, np.ndarray]:
        """Element s's blocks of p by ELEMENT_PARAMS.

        (views: writes go to p): what the kernel reads at pe(s) + P_M,
        pe(s) + P_FE, ..."""
        return {b.name: ELEMENT_PARAMS.view(p, b.name, P_ELEMENTS + NPE * s) for b in ELEMENT_PARAMS}


# M_E [HW eq 4] and F_EG [HW eq 9] of codegen.symbolic.ancf in closed form, without sympy (a cached build makes the
# parameters, and importing sympy alone took ~0.3 s of its start-up): rho A l int_0^1 N_i N_j dxi and
# rho A l int_0^1 N_i dxi g of the cubic Hermite functions ([HW eq 3]; N_2, N_4 carry a factor l), each entry
# evaluated as sympy's lambdify of the factored matrices evaluates it, coefficient * A * l**k * rho (the same
# floats; tests/algorithms/rancf/test_rancf_ref.py compares them with the derivation bit for bit).
_MASS = ((13 / 35, 11 / 210, 9 / 70, -13 / 420), (11 / 210, 1 / 105, 13 / 420, -1 / 140),
         (9 / 70, 13 / 420, 13 / 35, -11 / 210), (-13 / 420, -1 / 140, -11 / 210, 1 / 105))
_GRAVITY = (1 / 2, 1 / 12, 1 / 2, -1 / 12)


def element_mass(rho, A, l) -> np.ndarray:
    """[HW eq 4]: the 8 x 8 mass matrix of a Shabana planar element, order [r_A; r'_A; r_B; r'_B]."""
    M = np.zeros((8, 8))
    for i in range(4):
        for j in range(4):
            k = 1 + i % 2 + j % 2                          # the power of l
            M[2 * i, 2 * j] = M[2 * i + 1, 2 * j + 1] = _MASS[i][j] * A * (l if k == 1 else l**k) * rho
    return M


def element_gravity(rho, A, l, gx, gy) -> np.ndarray:
    """[HW eq 9]: the element's gravity forces for g = (gx, gy)."""
    f = np.zeros(8)
    for i in range(4):
        for c, g in enumerate((gx, gy)):
            f[2 * i + c] = _GRAVITY[i] * A * g * (l if i % 2 == 0 else l**2) * rho
    return f


# ====================================================================== code generation

CHORD_LINES = (("chord_x", "e[4] - e[0]"), ("chord_y", "e[5] - e[1]"), ("chord", "sqrt(chord_x*chord_x + chord_y*chord_y)"),
               ("cos_a", "chord_x/chord"), ("sin_a", "chord_y/chord"))


@lru_cache(maxsize=None)
def chord_frame_force(with_energy: bool = False):
    """The elastic force F_EK [HW eq 7] (or the strain energy) as (target, C expr) pairs.

    (target, C expr) for the elastic force F_EK [HW eq 7] -> F[0..7], worked in the chord frame [HW eq 5]; with_energy:
    for the strain energy U [HW eq 6] -> U instead, from the same local quantities.

    [HW eq 6] in the frame rotated by the chord angle: with the local coordinates xb = R(alpha) x (x-components of
    r_A, r'_A, r_B, r'_B) and yb, U = 1/2 (xb - xb0)^T Kx (xb - xb0) + 1/2 yb^T Ky yb, Kx = E A int N'^T N' ds,
    Ky = E I int N''^T N'' ds (the even / odd rows and columns of the paper's A11 and B22,
    codegen.symbolic.ancf.paper_matrices), xb0 = (xb_A, 1, xb_A + l, 1) the unstretched element (Kx xb0 =
    E A int N' ds, the linear term of [HW eq 7]; Kx and Ky annihilate (1, 0, 1, 0)).  In the chord frame xb_B - xb_A
    = d and yb_B = yb_A, so dU/dxb = Kx (0, xb'_A - 1, d - l, xb'_B - 1) and dU/dyb = Ky (0, yb'_A, 0, yb'_B),
    and F = R^T (dU/dxb, dU/dyb) + dU/dalpha dalpha/de with dU/dalpha = sum_k dU/dxb_k yb_k - dU/dyb_k xb_k (the
    chain rule of [HW eq 7]).  About 80 operations per element instead of the ~400 of the expanded gradient
    (ancf.c_assignments), and the strains enter as differences, not as the cancelling quadratic and linear
    terms; tests/algorithms/rancf/test_rancf_ref.py compares it with the symbolic gradient."""
    import sympy as sp
    from ...symbolic import ancf
    pE, pA, pI, pl = (sp.Symbol(n, real=True) for n in ("EE", "AA", "II", "ll"))
    ca, sa, ch = (sp.Symbol(n, real=True) for n in ("cos_a", "sin_a", "chord"))
    xa1, ya1, xb1, yb1, ex1, exd, ex3 = sp.symbols("xa1 ya1 xb1 yb1 ex1 exd ex3", real=True)
    P = ancf.paper_matrices()
    sub = {ancf.E: pE, ancf.A: pA, ancf.I: pI, ancf.l: pl}
    Kx = P["A11"].extract([0, 2, 4, 6], [0, 2, 4, 6]).xreplace(sub)
    Ky = P["B22"].extract([1, 3, 5, 7], [1, 3, 5, 7]).xreplace(sub)
    rigid = sp.Matrix([1, 0, 1, 0])
    assert (Kx * rigid).is_zero_matrix and (Ky * rigid).is_zero_matrix
    gx = (Kx * sp.Matrix([0, ex1, exd, ex3])).applyfunc(sp.expand)
    gy = (Ky * sp.Matrix([0, ya1, 0, yb1])).applyfunc(sp.expand)
    # sum_k gx_k yb_k - gy_k xb_k with yb = (yb_A, ya1, yb_A, yb1), xb = (xb_A, xa1, xb_A + d, xb1); the yb_A and
    # xb_A terms drop out (gx_0 + gx_2 = gy_0 + gy_2 = 0)
    dU_dalpha = gx[1] * ya1 + gx[3] * yb1 - gy[1] * xa1 - gy[3] * xb1 - gy[2] * ch
    grad_alpha = [sa / ch, -ca / ch, 0, 0, -sa / ch, ca / ch, 0, 0]
    F = []
    for k in range(4):
        F += [ca * gx[k] - sa * gy[k] + dU_dalpha * grad_alpha[2 * k],
              sa * gx[k] + ca * gy[k] + dU_dalpha * grad_alpha[2 * k + 1]]
    pr = ancf._CPrinter()
    out = list(CHORD_LINES) + [("xa1", "cos_a*e[2] + sin_a*e[3]"), ("ya1", "cos_a*e[3] - sin_a*e[2]"),
                               ("xb1", "cos_a*e[6] + sin_a*e[7]"), ("yb1", "cos_a*e[7] - sin_a*e[6]"),
                               ("ex1", "xa1 - 1.0"), ("exd", "chord - ll"), ("ex3", "xb1 - 1.0")]
    reps, red = sp.cse(F, symbols=sp.numbered_symbols("f"))
    out += [(str(a), pr.doprint(b)) for a, b in reps]
    out += [(f"F[{k}]", pr.doprint(x)) for k, x in enumerate(red)]
    if with_energy:                          # U = 1/2 dx^T Kx dx + 1/2 dy^T Ky dy, from the same local quantities
        dx, dy = sp.Matrix([0, ex1, exd, ex3]), sp.Matrix([0, ya1, 0, yb1])
        U = sp.expand((dx.T * Kx * dx)[0, 0] / 2 + (dy.T * Ky * dy)[0, 0] / 2)
        out = out[:12]
        reps, red = sp.cse([U], symbols=sp.numbered_symbols("u"))
        out += [(str(a), pr.doprint(b)) for a, b in reps]
        out.append(("U", pr.doprint(red[0])))
    return tuple(out)


def _cy_body(assigns, indent="    "):
    from ...symbolic.ancf import c_locals
    locs = c_locals(assigns)
    lines = []
    for i in range(0, len(locs), 12):
        lines.append(indent + "cdef double " + ", ".join(locs[i:i + 12]))
    lines += [f"{indent}{t} = {x}" for t, x in assigns]
    return "\n".join(lines)


def element_code() -> Dict[str, str]:
    """The Cython code of the element kernels (elastic forces, energies, mass matrices) from the sympy model."""
    from ...symbolic import ancf
    prm = ("EE", "AA", "II", "ll")
    assert [t for t, _ in chord_frame_force()[:5]] == ["chord_x", "chord_y", "chord", "cos_a", "sin_a"]
    return {"force_local": _cy_body(chord_frame_force()[5:]),      # the chord given (Kernel.forces, two passes)
            "force_jac": _cy_body(ancf.c_assignments(("F_EK", "dF_EK"), params=prm)),
            "energy_local": _cy_body([(t, x) for t, x in chord_frame_force(True)[5:] if t != "U"]) + "\n    return " +
            chord_frame_force(True)[-1][1]}


def template_vars(plan: BeamPlan, options) -> dict:
    """Variables of the rancf template for a beam plan."""
    ints = lambda a: ", ".join(str(int(x)) for x in a)           # noqa: E731
    return dict(nbar=plan.nbar, n=plan.n, npar=P_ELEMENTS + NPE * plan.nbar, npe=NPE, nnode=len(plan.node_names),
                element_params=ELEMENT_PARAMS, p_elements=P_ELEMENTS, family_enums=RANCF_ENUMS,
                nbeam=len(plan.beam_order), kind=ints(plan.kind), par=ints(plan.par), off=ints(plan.off[:-1]),
                nbeta=ints(plan.nbeta), eord=ints(plan.eord), succ=ints(plan.succ), sdir=ints(plan.sdir),
                enode=ints(plan.enode), local=ints(plan.local), beam=ints(plan.beam_of), has_var=plan.has_var,
                kinds_used=sorted(set(int(k) for k in plan.kind)), roadmap=plan.roadmap(),
                code=element_code(), is_chain=plan.is_chain)
