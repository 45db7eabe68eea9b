"""The spatial algebra of Kang & Yoon's recursion (seed 002, [KY eqs 25-36]) as sympy kernels, printed as C.

Every 6x6 matrix and 6-vector of the recursion is world-frame (linear; angular) about the analysis
reference point P of its body.  The symmetric 6x6 mass matrices (body M^P, articulated M_j) are stored as
their upper triangle, row by row, in 21 numbers (``UPPER``; entry (a, b), a <= b, at ``upper_index(a, b)``).

Kernels (one C function each, ``static inline void NAME(...)``: ``kernel_lines`` prints the statements,
``codegen.compiler.c_emit`` turns them into C, templates/shared/kernels.j2 puts them in the module):

    B2_column            B_j2 column [B^v - e~ B^w ; B^w], e = P - r_j                  [KY eqs 25, 33]
    D_term               velocity-product term D_j of Ydot_j = B1 Ydot_i + B2 qdd + D     [KY eqs 27, 35]
    body_at_P            body mass matrix and force at P: M += T^T M^c T,
                         Q += T^T (Q^c - M^c Tdot Y), J^c = A J' A^T                      [KY eqs 3, 8, 36]
    joint_projection_n   Q' = Q - M D, U = M B2 (= M_j21^T), M22 = B2^T M B2 + diag(I_a),
                         Q2 = B2^T Q' + tau (I_a: the joint's armature, rotor inertia)                [KY eq 28]
                         n = 1: also [KY eq 29]'s elimination (K = U / M22, k0 = Q2 / M22, M -= U K^T, Q' -= U k0)
                         n = 0: only Q' = Q - M D
    articulated_update_n M -= U K, Q -= U k0 (K = M22^-1 U^T, k0 = M22^-1 Q2)             [KY eq 29]
    shift_to_parent      Mp += B1^T M B1, Qp += B1^T Q, B1 = [[I, -dl~], [0, I]], dl = P_j - P_i   [KY eqs 25, 29, 33]
    joint_acceleration_n qdd = k0 - K B1 Ydot_i ; Ydot_j = B1 Ydot_i + B2 qdd + D           [KY eqs 26, 30, 34]

Each kernel is built from sympy matrices in the textbook form, specialised to the analysis reference point
(centroid: c = r^c - P = 0; joint: e = P - r_j = 0; origin: P = 0, B1 = I) so vanishing terms drop out,
reduced by ``sympy.cse`` and printed with the joint helpers' printer (``codegen.symbolic.joints``).
Intermediate quantities a kernel is *designed* around (e.g. U = M b, K = U / d) are introduced as named
locals (``Kernel.lets``), so the printed code keeps their operation count; the tests compare every kernel
with numpy at random inputs (``Kernel.evaluate``) and with the untransformed textbook products.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from typing import Dict, List, Tuple

import sympy as sp

from .joints import _printer, skew
from .persist import persistent, register

REF_POINTS = ("centroid", "joint", "origin")
UPPER: Tuple[Tuple[int, int], ...] = tuple((a, b) for a in range(6) for b in range(a, 6))
_UPPER_INDEX = {ab: k for k, ab in enumerate(UPPER)}
NSYM = len(UPPER)     # 21


def upper_index(a: int, b: int) -> int:
    """Position of entry (a, b) of a symmetric 6x6 matrix in its packed upper triangle."""
    return _UPPER_INDEX[(min(a, b), max(a, b))]


def arr(name: str, n: int) -> sp.Matrix:
    """n x 1 matrix of the symbols name[0] .. name[n-1] (printed as C array reads)."""
    return sp.Matrix([sp.Symbol(f"{name}[{k}]") for k in range(n)])


def sym6(name: str) -> sp.Matrix:
    """Symmetric 6x6 matrix read from the packed upper triangle name[0..20]."""
    return sp.Matrix(6, 6, lambda a, b: sp.Symbol(f"{name}[{upper_index(a, b)}]"))


def pack(M: sp.Matrix) -> List[sp.Basic]:
    """Upper triangle of a (symmetric) 6x6 matrix, row by row."""
    return [M[a, b] for a, b in UPPER]


def unpack(x) -> "list":
    """Full 6x6 nested list from a packed upper triangle (numbers or sympy)."""
    return [[x[upper_index(a, b)] for b in range(6)] for a in range(6)]


def block(A, B, C, D):
    """The 2 x 2 block matrix [[A, B], [C, D]]."""
    return sp.Matrix.vstack(sp.Matrix.hstack(A, B), sp.Matrix.hstack(C, D))


def B1_matrix(dl: sp.Matrix) -> sp.Matrix:
    """Velocity transformation B_j1 = [[I, -dl~], [0, I]] of [KY eq 25] ([KY eq 33]: dl = 0, B1 = I)."""
    return block(sp.eye(3), -skew(dl), sp.zeros(3), sp.eye(3))


# ---------------------------------------------------------------------------------------------- kernel type
@dataclass(frozen=True)
class Arg:
    """One argument of a generated kernel: name, size, direction."""

    name: str
    size: int          # entries read or written (1 for a scalar)
    mode: str          # in | out | inout
    scalar: bool = False   # a double, not a pointer


@dataclass
class Kernel:
    """One straight-line helper: named locals (lets), then outputs ``target op= expr``."""

    name: str
    equation: str                                   # "[KY eq 29]" ...
    doc: str
    args: Tuple[Arg, ...]
    lets: List[Tuple[sp.Symbol, sp.Basic]] = field(default_factory=list)
    outs: List[Tuple[str, int, str, sp.Basic]] = field(default_factory=list)   # (array, index, op, expr)
    optimizations: object = "basic"                 # sympy.cse: "basic" (factor terms first) or None (faster)
    tree_sums: bool = False                         # outputs' long sums as balanced trees (shorter dependency chains)
    _numeric: object = field(default=None, repr=False, compare=False)

    # ----------------------------------------------------------------- building
    def let(self, name: str, expr) -> sp.Symbol:
        """Bind `expr` to a local named `name`; returns its symbol."""
        s = sp.Symbol(name)
        self.lets.append((s, sp.sympify(expr)))
        return s

    def lets_vec(self, name: str, exprs) -> sp.Matrix:
        """Bind each of `exprs` to a local name{k}; returns their symbols."""
        return sp.Matrix([self.let(f"{name}{k}", e) for k, e in enumerate(exprs)])

    def out(self, array: str, exprs, op: str = "=", skip_zero: bool = None):
        """Outputs array[k] op= exprs[k]; increments that are identically zero are dropped."""
        skip = op != "=" if skip_zero is None else skip_zero
        for k, e in enumerate(exprs):
            e = sp.sympify(e)
            if skip and e == 0:
                continue
            self.outs.append((array, k, op, e))

    # ----------------------------------------------------------------- meaning
    def inputs(self) -> List[Arg]:
        """The arguments the kernel reads."""
        return [a for a in self.args if a.mode in ("in", "inout")]

    def input_symbols(self, a: Arg) -> List[sp.Symbol]:
        """The symbols of argument `a`."""
        return [sp.Symbol(a.name)] if a.scalar else list(arr(a.name, a.size))

    def resolved(self) -> List[Tuple[str, int, str, sp.Basic]]:
        """Outputs with the locals substituted: expressions of the inputs only."""
        env = {}
        for s, e in self.lets:
            env[s] = e.xreplace(env)
        return [(a, k, op, e.xreplace(env)) for a, k, op, e in self.outs]

    def evaluate(self, **values) -> Dict[str, "object"]:
        """Numeric evaluation with sympy.lambdify.

        Inputs by argument name (scalars or sequences);
        returns every output/inout array after the kernel ran (outputs start at zero)."""
        import numpy as np
        syms, vals = [], []
        for a in self.inputs():
            v = np.atleast_1d(np.asarray(values[a.name], float)).ravel()
            syms += self.input_symbols(a)
            vals += list(v[:a.size])
        res = {a.name: (np.array(np.atleast_1d(values[a.name]), float).ravel().copy() if a.mode == "inout"
                        else np.zeros(a.size)) for a in self.args if a.mode in ("out", "inout")}
        if self._numeric is None:                   # lambdify once: each local in order, then the outputs
            fs = []
            for s, e in self.lets:
                fs.append(sp.lambdify(syms, e, modules="numpy", dummify=True))
                syms = syms + [s]
            self._numeric = fs, sp.lambdify(syms, [e for *_, e in self.outs], modules="numpy", dummify=True)
        fs, f = self._numeric
        for g in fs:
            vals.append(g(*vals))
        for (a, k, op, _), v in zip(self.outs, f(*vals)):
            res[a][k] = v if op == "=" else res[a][k] + v if op == "+=" else res[a][k] - v
        return res

    # ----------------------------------------------------------------- C text
    def params(self) -> str:
        """The kernel's C parameter list."""
        return ", ".join(f"double {a.name}" if a.scalar else
                         f"{'const ' if a.mode == 'in' else ''}double* {a.name}" for a in self.args)

    @property
    def lines(self) -> List[str]:
        """The kernel's Cython lines."""
        return kernel_lines(self)


def kernel_lines(k: Kernel) -> List[str]:
    """The Cython body of a kernel.

    CSE over the locals and outputs together; temporaries are declared just before their
    first use; every read of an array the kernel writes happens before the first write."""
    p = _printer()
    exprs = [e for _, e in k.lets] + [e for *_, e in k.outs]
    reps, red = sp.cse(exprs, symbols=sp.numbered_symbols("t"), optimizations=k.optimizations)
    rep_expr = dict(reps)
    order = {s: i for i, (s, _) in enumerate(reps)}
    done, lines = set(), []

    def need(e):
        """Emit the temporaries e depends on (in CSE order)."""
        todo, stack = set(), [e]
        while stack:
            for s in stack.pop().free_symbols:
                if s in rep_expr and s not in done and s not in todo:
                    todo.add(s)
                    stack.append(rep_expr[s])
        for s in sorted(todo, key=order.get):
            lines.append(f"cdef double {p.doprint(s)} = {p.doprint(rep_expr[s])}")
            done.add(s)

    nl = len(k.lets)
    for (s, _), e in zip(k.lets, red[:nl]):
        need(e)
        lines.append(f"cdef double {p.doprint(s)} = {p.doprint(e)}")
    outs = list(zip(k.outs, red[nl:]))
    for _, e in outs:
        need(e)
    written = {a for a, *_ in k.outs}
    reads_written = lambda e: any(str(s).split("[")[0] in written for s in e.free_symbols)  # noqa: E731
    final = []
    for n, ((a, i, op, _), e) in enumerate(outs):
        if reads_written(e):                          # an inout array: read it before any write
            lines.append(f"cdef double o{n} = {p.doprint(e)}")
            e = sp.Symbol(f"o{n}")
        if op != "=" and e.could_extract_minus_sign():
            op, e = {"+=": "-=", "-=": "+="}[op], -e
        final.append(f"{a}[{i}] {op} {_tree_sum(p, e) if k.tree_sums else p.doprint(e)}")
    return lines + final


def _tree_sum(p, e) -> str:
    """A sum of more than three terms printed as a balanced tree, ((a + b) + (c + d)) + ....

    The compiler keeps the written order of floating-point sums: a tree is evaluated in log2 depth, a flat sum as one
    chain of multiply-adds."""
    terms = sp.Add.make_args(e)
    if len(terms) <= 3:
        return p.doprint(e)

    def tree(ts):
        if len(ts) == 1:
            return p.doprint(ts[0])
        h = len(ts) // 2
        right = ts[h:]
        if len(right) == 1 and right[0].could_extract_minus_sign():
            return f"({tree(ts[:h])} - {p.doprint(-right[0])})"
        return f"({tree(ts[:h])} + {tree(right)})"
    return tree(list(terms))


# ---------------------------------------------------------------------------------------------- kernels
def _vec(name):
    return arr(name, 3)


def _ref(ref: str):
    if ref not in REF_POINTS:
        raise KeyError(f"reference point '{ref}' not one of {', '.join(REF_POINTS)}")


def B2_column(ref: str) -> Kernel:
    """The kernel of one column of the velocity transformation B_j2."""
    _ref(ref)
    k = Kernel("B2_column", "[KY eqs 25, 33]",
               "One column of the velocity transformation B_j2 = [B^v - e~ B^w ; B^w], e = P - r_j "
               "([KY eq 25]: e = rho_j; [KY eq 33]: e = -r_j; joint point: B2 = H).",
               (Arg("H", 6, "in"), Arg("P", 3, "in"), Arg("r", 3, "in"), Arg("B2", 6, "out")))
    H, r = arr("H", 6), _vec("r")
    P = sp.zeros(3, 1) if ref == "origin" else _vec("P")
    e = P - r
    k.out("B2", list(H[:3, 0] - skew(e) * H[3:, 0]) + list(H[3:, 0]))
    return k


def D_term(ref: str) -> Kernel:
    """The kernel of the velocity-product term D_j."""
    _ref(ref)
    k = Kernel("D_term", "[KY eqs 27, 35]",
               "Velocity-product term D_j of Ydot_j = B1 Ydot_i + B2 qdd_j + D_j: angular w_i x w_ij + "
               "A_i C_j Bdot^w' q' (cw); linear w_i x (Pd_j - Pd_i) + w_i x v_ij + Bdot^v q' (cv) + D^w x e "
               "+ w_ij x edot, e = P - r_j. Ground parent: w_i = 0.",
               (Arg("wi", 3, "in"), Arg("P", 3, "in"), Arg("Pd", 3, "in"), Arg("Pdi", 3, "in"), Arg("r", 3, "in"),
                Arg("vr", 3, "in"), Arg("rel", 6, "in"), Arg("cw", 6, "in"), Arg("D", 6, "out")))
    wi, rel, cw = _vec("wi"), arr("rel", 6), arr("cw", 6)
    v_ij, w_ij = rel[:3, 0], rel[3:, 0]
    if ref == "origin":
        P = Pd = Pdi = sp.zeros(3, 1)
    else:
        P, Pd, Pdi = _vec("P"), _vec("Pd"), _vec("Pdi")
    e, ed = (sp.zeros(3, 1), sp.zeros(3, 1)) if ref == "joint" else (P - _vec("r"), Pd - _vec("vr"))
    Dw = wi.cross(w_ij) + cw[3:, 0]
    Dv = wi.cross(Pd - Pdi) + wi.cross(v_ij) + cw[:3, 0] + Dw.cross(e) + w_ij.cross(ed)
    k.out("D", list(Dv) + list(Dw))
    return k


def body_at_P(ref: str) -> Kernel:
    """The kernel that adds a body's own inertia at P."""
    _ref(ref)
    k = Kernel("body_at_P", "[KY eqs 3, 8, 36]",
               "Own body at P, added to the children's M (packed upper) and Q: M += T^T M^c T = "
               "[[m I, -m c~], [m c~, J^c - m c~ c~]] [KY eq 36], Q += T^T (Q^c - M^c Tdot Y) [KY eq 8] with "
               "M^c, Q^c of [KY eq 3], c = r^c - P, J^c = A J' A^T (comment 1 after [KY eq 30]), F^c = m g + F_e.",
               (Arg("A", 9, "in"), Arg("J", 9, "in"), Arg("m", 1, "in", True), Arg("g", 3, "in"), Arg("Fe", 3, "in"),
                Arg("Te", 3, "in"), Arg("w", 3, "in"), Arg("rc", 3, "in"), Arg("vc", 3, "in"), Arg("P", 3, "in"),
                Arg("Pd", 3, "in"), Arg("M", NSYM, "inout"), Arg("Q", 6, "inout")))
    A = sp.Matrix(3, 3, list(arr("A", 9)))
    Jb = arr("J", 9)
    J = sp.Matrix(3, 3, lambda a, b: Jb[3 * min(a, b) + max(a, b)])       # symmetric: upper entries
    m, w = sp.Symbol("m"), _vec("w")
    I3, Z3 = sp.eye(3), sp.zeros(3)
    AJ = k.lets_vec("aj", list(A * J))                                    # rows of A J'
    AJ = sp.Matrix(3, 3, list(AJ))
    Jw = AJ * A.T                                                         # J^c = A J' A^T
    Jw = sp.Matrix(3, 3, lambda a, b: Jw[min(a, b), max(a, b)])
    if ref == "centroid":
        c = dv = sp.zeros(3, 1)
    else:
        P, Pd = (sp.zeros(3, 1),) * 2 if ref == "origin" else (_vec("P"), _vec("Pd"))
        c, dv = _vec("rc") - P, Pd - _vec("vc")                           # c = r^c - P = -s^P, dv = sdot^P
    T = block(I3, -skew(c), Z3, I3)                                        # [KY eq 4], s^P = -c
    Td = block(Z3, skew(dv), Z3, Z3)
    Mc = block(m * I3, Z3, Z3, Jw)                                         # [KY eq 3]
    Qc = sp.Matrix.vstack(m * _vec("g") + _vec("Fe"), _vec("Te") - skew(w) * (Jw * w))
    Y = sp.Matrix.vstack(sp.zeros(3, 1), w)                               # Tdot Y only reads omega
    MP = T.T * Mc * T                                                      # [KY eq 8]
    QP = T.T * (Qc - Mc * Td * Y)
    k.out("M", pack(MP), "+=")
    k.out("Q", list(QP), "+=")
    return k


def joint_projection(n: int) -> Kernel:
    """[KY eq 28] for an n-column joint (n = 1 fused with [KY eq 29], n = 0 only Q - M D)."""
    args = [Arg("M", NSYM, "inout"), Arg("Q", 6, "inout"), Arg("D", 6, "in")]
    if n == 1:
        args += [Arg("B2", 6, "in"), Arg("tau", 1, "in", True), Arg("arm", 1, "in", True), Arg("K", 6, "out"),
                 Arg("k0", 1, "out")]
        doc = ("One joint column b = B2: Q' = Q - M D, U = M b (= M_j21^T), d = b^T U + I_a (= M_j22 with the "
               "rotor's armature I_a), Q2 = b^T Q' + tau [KY eq 28]; K = U / d, k0 = Q2 / d, articulated M - U K^T, "
               "Q' - U k0 [KY eq 29].")
        eq = "[KY eqs 28, 29]"
    elif n == 0:
        doc = "No joint column (fixed joint): Q' = Q - M D [KY eq 28]; M and Q' pass to the parent unchanged."
        eq = "[KY eq 28]"
    else:
        args += [Arg("B2", 6 * n, "in"), Arg("tau", n, "in"), Arg("arm", n, "in"), Arg("U", 6 * n, "out"),
                 Arg("M22", n * n, "out"), Arg("Q2", n, "out")]
        doc = (f"{n} joint columns B2 (6 x {n}, column major): Q' = Q - M D, U = M B2 (= M_j21^T), lower "
               f"triangle of M22 = B2^T M B2 + diag(I_a) (row major {n} x {n}; I_a: the rotors' armature), "
               f"Q2 = B2^T Q' + tau.")
        eq = "[KY eq 28]"
    k = Kernel(f"joint_projection_{n}", eq, doc, tuple(args))
    M, D = sym6("M"), arr("D", 6)
    Q1 = k.lets_vec("qp", list(arr("Q", 6) - M * D))                    # Q_j - M_j D_j
    if n == 0:
        k.out("Q", list(Q1))
        return k
    B2 = sp.Matrix(6, n, lambda a, c: sp.Symbol(f"B2[{6 * c + a}]"))
    U = sp.Matrix(6, n, lambda a, c: k.let(f"u{6 * c + a}", (M * B2[:, c])[a]))
    tau = [sp.Symbol("tau")] if n == 1 else list(arr("tau", n))
    Q2 = [tau[c] + (B2[:, c].T * Q1)[0] for c in range(n)]
    if n == 1:
        d = (B2[:, 0].T * U)[0] + sp.Symbol("arm")                            # M_j22 + I_a
        dinv = k.let("dinv", 1 / d)
        K = k.lets_vec("kk", list(U * dinv))                                  # M22^-1 M21
        k0 = k.let("kq", Q2[0] * dinv)                                        # M22^-1 Q2
        k.out("K", list(K))
        k.out("k0", [k0])
        k.out("M", [U[a, 0] * K[b] for a, b in UPPER], "-=")                 # [KY eq 29]
        k.out("Q", [Q1[a] - U[a, 0] * k0 for a in range(6)])
        return k
    k.out("U", [U[a, c] for c in range(n) for a in range(6)])
    arm = arr("arm", n)
    k.out("M22", [(B2[:, r].T * U[:, c])[0] + (arm[r] if c == r else 0) if c <= r else 0
                  for r in range(n) for c in range(n)], skip_zero=True)
    k.out("Q2", Q2)
    k.out("Q", list(Q1))
    return k


def articulated_update(n: int) -> Kernel:
    """The kernel of the articulated update for n joint columns."""
    k = Kernel(f"articulated_update_{n}", "[KY eq 29]",
               f"Articulated M - M_j21^T M22^-1 M_j21 = M - U K and Q' - M_j21^T M22^-1 Q2 = Q' - U k0 for "
               f"{n} joint columns (U: 6 x {n} column major, K = M22^-1 U^T: {n} x 6 row major).",
               (Arg("U", 6 * n, "in"), Arg("K", 6 * n, "in"), Arg("k0", n, "in"), Arg("M", NSYM, "inout"),
                Arg("Q", 6, "inout")))
    U, K, k0 = arr("U", 6 * n), arr("K", 6 * n), arr("k0", n)
    k.out("M", [sum(U[6 * c + a] * K[6 * c + b] for c in range(n)) for a, b in UPPER], "-=")
    k.out("Q", [sum(U[6 * c + a] * k0[c] for c in range(n)) for a in range(6)], "-=")
    return k


def shift_to_parent(ref: str) -> Kernel:
    """The kernel that adds a body's articulated inertia and force to its parent."""
    _ref(ref)
    k = Kernel("shift_to_parent", "[KY eqs 25, 29, 33]",
               "Add the articulated M (packed upper) and Q' of body j to its parent: Mp += B1^T M B1, "
               "Qp += B1^T Q', B1 = [[I, -dl~], [0, I]], dl = P_j - P_i ([KY eq 25]; origin, [KY eq 33]: B1 = I). "
               "For M = [[A, B], [B^T, C]]: B' = B - A dl~, C' = C + dl~ B + (dl~ B')^T.",
               (Arg("M", NSYM, "in"), Arg("Q", 6, "in"), Arg("P", 3, "in"), Arg("Pi", 3, "in"),
                Arg("Mp", NSYM, "inout"), Arg("Qp", 6, "inout")))
    M, Q = sym6("M"), arr("Q", 6)
    dl = sp.zeros(3, 1) if ref == "origin" else _vec("P") - _vec("Pi")
    S = skew(dl)
    Aa, B, C = M[:3, :3], M[:3, 3:], M[3:, 3:]
    Bn = B - Aa * S                                                       # upper right of B1^T M B1
    Cn = C + S * B + (S * Bn).T                                           # lower right (symmetric)
    k.out("Mp", pack(block(Aa, Bn, Bn.T, Cn)), "+=")
    k.out("Qp", list(B1_matrix(dl).T * Q), "+=")
    return k


def joint_acceleration(ref: str, n: int) -> Kernel:
    """The kernel of pass 3: joint accelerations for n joint columns."""
    _ref(ref)
    k = Kernel(f"joint_acceleration_{n}", "[KY eqs 26, 30, 34]",
               "Pass 3: Y1 = B1 Ydot_i = (a_i + alpha_i x dl ; alpha_i), dl = P_j - P_i (origin: Y1 = Ydot_i), "
               "qdd = M22^-1 (Q2 - M_j21 Ydot_i) = k0 - K Y1, Ydot_j = Y1 + B2 qdd + D. Ground parent: Ydot_i = 0.",
               (Arg("Ydi", 6, "in"), Arg("P", 3, "in"), Arg("Pi", 3, "in"), Arg("D", 6, "in"),
                Arg("B2", 6 * n, "in"), Arg("K", 6 * n, "in"), Arg("k0", n, "in"), Arg("qdd", n, "out"),
                Arg("Yd", 6, "out")))
    Ydi = arr("Ydi", 6)
    dl = sp.zeros(3, 1) if ref == "origin" else _vec("P") - _vec("Pi")
    Y1 = B1_matrix(dl) * Ydi
    if ref != "origin":
        Y1 = k.lets_vec("y", list(Y1))
    B2, K, k0 = arr("B2", 6 * n), arr("K", 6 * n), arr("k0", n)
    qdd = [k.let(f"qdd{c}", k0[c] - sum(K[6 * c + a] * Y1[a] for a in range(6))) for c in range(n)]
    k.out("qdd", qdd)
    k.out("Yd", [Y1[a] + arr("D", 6)[a] + sum(B2[6 * c + a] * qdd[c] for c in range(n)) for a in range(6)])
    return k


# ---------------------------------------------------------------------------------------------- for templates
_USES = {"B2_column": "r", "D_term": "r", "body_at_P": "r", "shift_to_parent": "r", "joint_projection": "n",
         "articulated_update": "n", "joint_acceleration": "rn"}


def kernel(name: str, ref: str = "origin", n: int = 1) -> Kernel:
    """One kernel by name (ref: analysis reference point, n: joint columns), derived once per process."""
    uses = _USES[name]
    return _kernel(name, ref if "r" in uses else None, n if "n" in uses else None)


@lru_cache(maxsize=None)
def _kernel(name: str, ref, n) -> Kernel:
    makers = {"B2_column": lambda: B2_column(ref), "D_term": lambda: D_term(ref), "body_at_P": lambda: body_at_P(ref),
              "joint_projection": lambda: joint_projection(n), "articulated_update": lambda: articulated_update(n),
              "shift_to_parent": lambda: shift_to_parent(ref), "joint_acceleration": lambda: joint_acceleration(ref, n)}
    return makers[name]()


@register
@dataclass(frozen=True)
class KernelCode:
    """A printed kernel: name, equation, description, parameters and lines."""

    name: str
    equation: str
    doc: str
    params: str
    lines: Tuple[str, ...]


def kernel_code(name: str, ref: str = "origin", n: int = 1) -> KernelCode:
    """The printed kernel `name` at reference point `ref` with `n` joint columns."""
    uses = _USES[name]
    return _kernel_code(name, ref if "r" in uses else None, n if "n" in uses else None)


@persistent
def _kernel_code(name: str, ref, n) -> KernelCode:
    k = _kernel(name, ref, n)
    return KernelCode(k.name, k.equation, k.doc, k.params(), tuple(k.lines))


@lru_cache(maxsize=None)
def recursive_kernels(ref: str, nvs: Tuple[int, ...]) -> Tuple[KernelCode, ...]:
    """The helpers the recursive template calls, for one reference point and the joint sizes in use."""
    out = [kernel_code("D_term", ref), kernel_code("body_at_P", ref), kernel_code("shift_to_parent", ref)]
    if ref != "joint":
        out.insert(0, kernel_code("B2_column", ref))
    for n in sorted(set(nvs)):
        out.append(kernel_code("joint_projection", ref, n))
        if n > 1:
            out.append(kernel_code("articulated_update", ref, n))
        out.append(kernel_code("joint_acceleration", ref, n))
    return tuple(out)
