"""Print the sympy kernels of the rigid-tree families as C99 functions (the standalone C export, issue 26).

The kernels are the ones the Cython modules compile: ``codegen.symbolic.articulated`` (Kang & Yoon's spatial algebra),
``codegen.symbolic.body_kernels`` (world kinematics, poses and Newton-Euler per body pattern) and the joint helpers
of ``codegen.symbolic.joints`` (qdot; the motion subspaces of the dense family). Their statements come from the
same CSE, in the same order, printed by the same sympy C99 printer; the Cython text has exactly two statement
forms, which this module turns into C:

    cdef double NAME = EXPR          ->   const double NAME = EXPR;
    ARRAY[INDEX] OP EXPR             ->   ARRAY[INDEX] OP EXPR;          (OP: =, +=, -=)

Any other line is refused (``CEmitError``), so a change of the kernel printer cannot slip through as wrong C.
Every parameter and named local is marked used (``(void)x;``): a specialised kernel may not read all of them, and the export
compiles with -Wall -Wextra -Werror.

``lanes=True`` prints the same statements over ``mb_real``, a vector of states (templates/c/lanes.c.j2, issue 24):
every double becomes mb_real, a function call f(...) becomes the lane-wise mb_f(...), and an assignment of a bare
number is broadcast (``MB_SPLAT``); the arithmetic is otherwise the same text, lane by lane.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Iterable, List, Sequence, Tuple


_DECL = re.compile(r"^cdef double ([A-Za-z_]\w*) = (.+)$")
_ASSIGN = re.compile(r"^([A-Za-z_]\w*\[\d+\]) (=|\+=|-=) (.+)$")
_PLAIN = re.compile(r"^([A-Za-z_]\w*) = (.+)$")                 # joints.c_assignments temporaries: "x0 = expr"
_EXPR_OK = re.compile(r"^[A-Za-z0-9_\[\]\(\)\.\+\-\*/, ]+$")       # what the C99 printer produces for these kernels
_PARAM = re.compile(r"^(const double\*|double\*|double) ([A-Za-z_]\w*)$")


def comment(text) -> str:
    """A user string made safe for a one-line comment of generated code.

    A user string (model, body, joint, force name) made safe for a one-line comment of generated code:
    printable ASCII only (everything else escaped, so no line break can leave the comment), and no C
    comment delimiters (Cython copies source lines into C comments)."""
    s = "".join(c if " " <= c <= "~" else ascii(c)[1:-1] for c in str(text))
    return s.replace("*/", "*\\/").replace("/*", "/\\*")


class CEmitError(ValueError):
    """A kernel line that is not one of the two statement forms (or an expression with unexpected characters)."""


def c_comment(text) -> str:
    """A string made safe inside a one-line C block comment.

    A string (user text or our own docs) made safe inside a one-line C block comment that closes on the same
    line: the ``comment`` filter (printable ASCII only, so no line break; no comment delimiters) and no trigraph
    (``??``). A backslash stays: it only splices lines when a line break follows it, and none can."""
    s = comment(text)
    while "??" in s:
        s = s.replace("??", "? ?")
    return s


_NUMBER = re.compile(r"\d+\.?\d*(?:e[-+]?\d+)?")
_CALL = re.compile(r"\b([a-z]\w*)\(")
LANE_FUNCTIONS = ("sin", "cos", "sqrt")          # the calls the kernels print; templates/c/lanes.c.j2 has their mb_ forms


def _expr(e: str, where: str, lanes: bool = False) -> str:
    if not _EXPR_OK.match(e) or "**" in e:
        raise CEmitError(f"{where}: unexpected characters in the printed expression {e[:80]!r}")
    if not lanes:
        return e
    for f in _CALL.findall(e):
        if f not in LANE_FUNCTIONS:
            raise CEmitError(f"{where}: no lane-wise form of {f}() (codegen.compiler.c_emit.LANE_FUNCTIONS)")
    e = _CALL.sub(r"mb_\1(", e)
    return e if re.search(r"[A-Za-z_]", _NUMBER.sub("", e)) else f"MB_SPLAT({e})"


def real_type(lanes: bool) -> str:
    """The C type of a state quantity: double, or the vector of states of templates/c/lanes.c.j2."""
    return "mb_real" if lanes else "double"


def c_statement(line: str, where: str = "kernel", lanes: bool = False) -> str:
    """One Cython statement of a kernel as C (lanes: over mb_real, see the module docstring)."""
    m = _DECL.match(line)
    if m:
        return f"const {real_type(lanes)} {m.group(1)} = {_expr(m.group(2), where, lanes)};"
    m = _ASSIGN.match(line)
    if m:
        return f"{m.group(1)} {m.group(2)} {_expr(m.group(3), where, lanes)};"
    raise CEmitError(f"{where}: not a kernel statement: {line[:80]!r}")


def param_names(params: str) -> List[str]:
    """The parameter names of a kernel's C parameter list ('const double* H, double m, ...')."""
    if not params.strip():
        return []
    out = []
    for p in params.split(", "):
        m = _PARAM.match(p.strip())
        if not m:
            raise CEmitError(f"unexpected kernel parameter {p!r}")
        out.append(m.group(2))
    return out


@dataclass(frozen=True)
class CFunction:
    """One kernel as C: its name, a comment (equation and what it computes), the full definition."""

    name: str
    doc: str
    text: str


def c_kernel(k, lanes: bool = False) -> CFunction:
    """A ``KernelCode`` (name, equation, doc, params, Cython lines) as a static inline C99 function."""
    names = param_names(k.params)
    stmts = [c_statement(ln, k.name, lanes) for ln in k.lines]
    text = "\n".join(stmts)
    unread = [m.group(1) for ln in k.lines if (m := _DECL.match(ln))           # a named local sympy left unread
              and len(re.findall(rf"\b{m.group(1)}\b", text)) == 1]
    body = ["(void)" + n + ";" for n in names] + stmts + ["(void)" + n + ";" for n in unread]
    doc = c_comment(f"{k.equation}. {k.doc}")
    params = re.sub(r"\bdouble\b", real_type(lanes), k.params) or "void"
    text = (f"static inline void {k.name}({params})\n{{\n"
            + "".join(f"    {ln}\n" for ln in body) + "}\n")
    return CFunction(k.name, doc, text)


def c_assignment_block(block: Tuple[Sequence[str], Sequence[str]], where: str, lanes: bool = False) -> List[str]:
    """(temporaries, assignments) of ``codegen.symbolic.joints.c_assignments`` as C statements."""
    temps, lines = block
    out = []
    for t in temps:
        m = _PLAIN.match(t)
        if not m:
            raise CEmitError(f"{where}: not a temporary: {t[:80]!r}")
        out.append(f"const {real_type(lanes)} {m.group(1)} = {_expr(m.group(2), where, lanes)};")
    out += [c_statement(ln, where, lanes) for ln in lines]
    return out


_JOINT_MAPS = {   # block of codegen.symbolic.joints.jcalc_code -> (C parameters, what, citation)
    "qdot": ("const double* q, const double* u, double* qd", "kinematic map qdot = G(q) u", "[KY eq 16]"),
    "jchild": ("const double* q, const double* u, double* Sc, double* cJ",
               "child-frame motion subspace Sc (6 x n, column k at Sc + 6 k) and product term cJ", "[KY eq 12]"),
}


def c_joint_map(jtype: str, which: str = "qdot", lanes: bool = False) -> CFunction:
    """One joint helper of ``codegen.symbolic.joints.jcalc_code`` as a C function ``WHICH_JTYPE``.

    Parameters
    ----------
    jtype : str
        The joint type (a key of ``codegen.model.JOINT_TYPES``).
    which : str
        ``qdot`` (qdot = G(q) u) or ``jchild`` (Sc, cJ of the dense family's composite rigid body algorithm).
    lanes : bool
        Over mb_real, a vector of states (see the module docstring).

    Returns
    -------
    CFunction
        The static inline C99 function.
    """
    from ..symbolic.joints import jcalc_code
    params, what, cite = _JOINT_MAPS[which]
    names = param_names(params)
    body = [f"(void){n};" for n in names] + c_assignment_block(jcalc_code(jtype)[which], f"{which}_{jtype}", lanes)
    params = re.sub(r"\bdouble\b", real_type(lanes), params)
    text = (f"static inline void {which}_{jtype}({params})\n{{\n"
            + "".join(f"    {ln}\n" for ln in body) + "}\n")
    return CFunction(f"{which}_{jtype}", f"{what} of a {jtype} joint {cite}", text)


def c_literal(x: float) -> str:
    """A double as a C literal that reads back exactly (repr: shortest round trip)."""
    import math
    x = float(x)
    if math.isnan(x):
        return "NAN"
    if math.isinf(x):
        return "INFINITY" if x > 0 else "-INFINITY"
    s = repr(x)
    return s if any(c in s for c in ".e") else s + ".0"


def c_array_rows(values: Iterable[float], per_row: int = 4) -> List[str]:
    """Values as rows of C literals (for an initialiser)."""
    vals = [c_literal(v) for v in values]
    return [", ".join(vals[k:k + per_row]) for k in range(0, len(vals), per_row)]
