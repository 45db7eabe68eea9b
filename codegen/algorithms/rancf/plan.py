"""Flexible planar beams: the recursive ANCF (RANCF) of Hu & Wang 2016, generated per model.

Paper: Hu Jingchen, Wang Tianshu, "A recursive absolute nodal coordinate formulation with O(n)
algorithm complexity", Chinese J. Theor. Appl. Mech. 48(5):1172-1183, 2016 (seed text
shared/seeds/000_2dfa52d2e1bf2ae2.txt); equation numbers are the paper's.  Model M3 of
shared/specs/models.md.

This module is the Python side of the ``rancf`` family (schema and coordinate layout: codegen.model.beams):

* the plan (``BeamPlan``, on the model's ``BeamLayout``: elements in topological order, their kind,
  the kinematic parent element, the offsets of the generalised speeds beta (eqs 12-14, 17-23), the
  elimination order of the O(n) solve);
* parameters (per element mass matrix M_E (eq 4), E, A, I, l, gravity forces F_EG (eq 9), joint
  data, constant loads (eq 8));
* the element code (elastic forces and their Jacobian, eqs 5-7, strain energy eq 6) from sympy,
  and the variables of ``templates/rancf/rancf.pyx.j2``.
"""
from __future__ import annotations

from functools import lru_cache
from typing import Dict

import numpy as np

from ...model.beams import GROUND, K_GCLAMP, K_GTRA, K_INT, K_REV, K_TRA, BeamLayout, BeamModel  # noqa: F401

NPE = 82           # parameters per element: M(64) E A I l F_E(8) r0(2) t0(2) axis(2)
METHODS = ("rancf", "dense")          # O(n) recursion (eqs 44-55), dense Cholesky of the same Omega


class BeamPlan(BeamLayout):
    """The model's layout plus its numeric parameter vector."""

    def params(self) -> np.ndarray:
        m = self.model
        beams = {b.name: b for b in m.beams}
        jby = {j.child: j for j in m.joints}
        start, direc = self.element_geometry()
        p = np.zeros(2 + NPE * self.nbar)
        p[0:2] = m.gravity
        for s in range(self.nbar):
            b = self.beam_order[self.beam_of[s]]
            bm, j = beams[b], jby[b]
            l = bm.length / bm.elements
            blk = p[2 + NPE * s: 2 + NPE * (s + 1)]
            blk[0:64] = element_mass(bm.rho, bm.A, l).reshape(64)                      # eq 4
            blk[64:68] = (bm.E, bm.A, bm.I, l)
            blk[68:76] = element_gravity(bm.rho, bm.A, l, m.gravity[0], m.gravity[1])  # eq 9
            if self.local[s] == 0:
                if j.parent == GROUND:
                    blk[76:78] = j.at
                blk[78:80] = direc[b]
                if j.axis is not None:
                    blk[80:82] = j.axis
        for ld in m.loads:                 # Hu & Wang eq 8: F_E = S(xi)^T F, on the element holding s
            bm = beams[ld.beam]
            l = bm.length / bm.elements
            i = min(int(ld.s / l), bm.elements - 1)
            xi = ld.s / l - i
            s = self.first_el[ld.beam] + i
            N = np.array([1 - 3 * xi**2 + 2 * xi**3, l * (xi - 2 * xi**2 + xi**3), 3 * xi**2 - 2 * xi**3,
                          l * (xi**3 - xi**2)])                                            # eq 3
            fe = p[2 + NPE * s + 68: 2 + NPE * s + 76]
            fe[0::2] += N * ld.force[0]
            fe[1::2] += N * ld.force[1]
        return p


# M_E (eq 4) and F_EG (eq 9) of codegen.symbolic.ancf in closed form, without sympy (a cached build makes the
# parameters, and importing sympy alone took ~0.3 s of its start-up): rho A l int_0^1 N_i N_j dxi and
# rho A l int_0^1 N_i dxi g of the cubic Hermite functions (eq 3; N_2, N_4 carry a factor l), each entry
# evaluated as sympy's lambdify of the factored matrices evaluates it, coefficient * A * l**k * rho (the same
# floats; tests/algorithms/rancf/test_rancf_ref.py compares them with the derivation bit for bit).
_MASS = ((13 / 35, 11 / 210, 9 / 70, -13 / 420), (11 / 210, 1 / 105, 13 / 420, -1 / 140),
         (9 / 70, 13 / 420, 13 / 35, -11 / 210), (-13 / 420, -1 / 140, -11 / 210, 1 / 105))
_GRAVITY = (1 / 2, 1 / 12, 1 / 2, -1 / 12)


def element_mass(rho, A, l) -> np.ndarray:
    """Hu & Wang eq 4: the 8 x 8 mass matrix of a Shabana planar element, order [r_A; r'_A; r_B; r'_B]."""
    M = np.zeros((8, 8))
    for i in range(4):
        for j in range(4):
            k = 1 + i % 2 + j % 2                          # the power of l
            M[2 * i, 2 * j] = M[2 * i + 1, 2 * j + 1] = _MASS[i][j] * A * (l if k == 1 else l**k) * rho
    return M


def element_gravity(rho, A, l, gx, gy) -> np.ndarray:
    """Hu & Wang eq 9: the element's gravity forces for g = (gx, gy)."""
    f = np.zeros(8)
    for i in range(4):
        for c, g in enumerate((gx, gy)):
            f[2 * i + c] = _GRAVITY[i] * A * g * (l if i % 2 == 0 else l**2) * rho
    return f


# ====================================================================== code generation

@lru_cache(maxsize=None)
def energy_c_assignments():
    """(target, C expr) for the element strain energy U (eq 6) -> 'U', inputs e[0..7], EE, AA, II, ll."""
    import sympy as sp
    from ...symbolic import ancf
    es = sp.MatrixSymbol("e", 8, 1)
    pE, pA, pI, pl = (sp.Symbol(n, real=True) for n in ("EE", "AA", "II", "ll"))
    ca, sa, ch = (sp.Symbol(n, real=True) for n in ("cos_a", "sin_a", "chord"))
    to_c = {sp.cos(ancf.alpha): ca, sp.sin(ancf.alpha): sa, ancf.d: ch, ancf.E: pE, ancf.A: pA, ancf.I: pI,
            ancf.l: pl}
    to_c.update({ancf.e[k]: es[k, 0] for k in range(8)})
    U = ancf.strain_energy().xreplace(to_c)
    pr = ancf._CPrinter()
    out = [("chord_x", "e[4] - e[0]"), ("chord_y", "e[5] - e[1]"),
           ("chord", "sqrt(chord_x*chord_x + chord_y*chord_y)"), ("cos_a", "chord_x/chord"),
           ("sin_a", "chord_y/chord")]
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
    from ...symbolic import ancf
    prm = ("EE", "AA", "II", "ll")
    return {"force": _cy_body(ancf.c_assignments(("F_EK",), params=prm)),
            "force_jac": _cy_body(ancf.c_assignments(("F_EK", "dF_EK"), params=prm)),
            "energy": _cy_body([(t, x) for t, x in energy_c_assignments() if t != "U"]) + "\n    return " +
            energy_c_assignments()[-1][1]}


def template_vars(plan: BeamPlan, options) -> dict:
    ints = lambda a: ", ".join(str(int(x)) for x in a)           # noqa: E731
    return dict(nbar=plan.nbar, n=plan.n, npar=2 + NPE * plan.nbar, npe=NPE, nnode=len(plan.node_names),
                nbeam=len(plan.beam_order), kind=ints(plan.kind), par=ints(plan.par), off=ints(plan.off[:-1]),
                nbeta=ints(plan.nbeta), eord=ints(plan.eord), succ=ints(plan.succ), sdir=ints(plan.sdir),
                enode=ints(plan.enode), local=ints(plan.local), beam=ints(plan.beam_of), has_var=plan.has_var,
                kinds_used=sorted(set(int(k) for k in plan.kind)), roadmap=plan.roadmap(),
                code=element_code(), is_chain=plan.is_chain)
