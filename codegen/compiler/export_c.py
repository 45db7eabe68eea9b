"""Standalone C export of a rigid-tree model (issue 26): the generated dynamics without Python.

``export_c(model, out_dir, ref_point, prefix)`` writes

    NAME.h           sizes as macros, the coordinate table, the caller-owned workspace struct, documented
                     prototypes (and the CasADi external-function companions)
    NAME.c           C99, no allocation, no global that is written (every array of state lives in the workspace):
                     reentrant and thread-safe with one workspace per thread
    NAME_params.h    the model's numeric parameter vector (the Python module's ``Plan.params()``: the same numbers,
                     so the numbers of ``update_model`` can be written out with ``params_header``), q0, u0
    NAME_main.c      forward dynamics and joint wrenches at the initial state and a short RK4 simulation, printed
    CMakeLists.txt, Makefile

The maths is the Cython module's: the same sympy kernels (``codegen.symbolic.articulated``,
``codegen.symbolic.body_kernels``, the joints' qdot), specialised to the same body patterns, reduced by the same
CSE and printed by the same printer; ``codegen.compiler.c_emit`` turns their statements into C. The templates
(templates/c/) hold the structure: the passes of templates/recursive/recursive.pyx.j2 (Kang & Yoon's O(n) forward
dynamics at the chosen analysis reference point, c/passes.c.j2) or of templates/dense/dense.pyx.j2 (CRBA mass
matrix, RNEA bias, Cholesky: the O(n^3) reference, c/dense.c.j2), the RNEA and the joint reaction wrenches of
templates/shared/base.pyx.j2 (c/rnea.c.j2, c/api.c.j2), and the analytical derivatives of
templates/shared/derivatives.pyx.j2 (Carpentier & Mansard, the module's kernels of ``codegen.symbolic.derivatives``
and its dense tail: c/derivatives.c.j2, c/derivative_entries.c.j2). Both families give NAME.h the same functions.

Exported: the families ``EXPORT_FAMILIES`` (``recursive``, ``dense``) on rigid trees, every joint type, fixed and
floating base, gravity, armature, joint spring-dampers and joint forces (time functions). Refused by name
(``ExportRefused``, exit 2 on the command line), never dropped: what ``UNSUPPORTED`` lists, another algorithm.
"""
from __future__ import annotations

import dataclasses
import re
from pathlib import Path
from typing import Dict, List, Optional

from .._version import __version__
from ..algorithms import family
from ..algorithms.tree_plan import ARTICULATED_WORK, runs, work_layout
from .c_emit import LANE_FUNCTIONS, c_array_rows, c_comment, c_joint_map, c_kernel, c_literal

EXPORT_FAMILIES = ("recursive", "dense")   # the families `mbgen export-c` writes (mbgen inspect algorithms says so)
REF_POINTS = ("centroid", "joint", "origin")
_PREFIX = re.compile(r"^[A-Za-z][A-Za-z0-9_]{0,62}$")
_C_KEYWORDS = {"auto", "break", "case", "char", "const", "continue", "default", "do", "double", "else", "enum",
               "extern", "float", "for", "goto", "if", "inline", "int", "long", "register", "restrict", "return",
               "short", "signed", "sizeof", "static", "struct", "switch", "typedef", "union", "unsigned", "void",
               "volatile", "while"}


class ExportRefused(ValueError):
    """The model has physics the C export does not carry yet (named in the message)."""


# what the export does not carry yet: (what, test on the model)
UNSUPPORTED = (
    ("flexible beams", lambda m: hasattr(m, "beams") or not hasattr(m, "joints")),
    ("closed loops (cut joints)", lambda m: [c.name for c in getattr(m, "cuts", [])]),
    ("couplings (joint and tendon equalities, URDF mimic)", lambda m: [c.name for c in getattr(m, "couplings", [])]),
    ("actuators", lambda m: [a.name for a in getattr(m, "actuators", [])]),
    ("tendons", lambda m: [t.name for t in getattr(m, "tendons", [])]),
    ("joint limits", lambda m: [j.name for j in m.joints if getattr(j, "limits", None) is not None]),
    ("Coulomb friction", lambda m: [j.name for j in m.joints if getattr(j, "friction", None) is not None]),
    ("point-to-point spring-dampers", lambda m: [p.name for p in getattr(m, "point_springs", [])]),
    ("a Python force hook (tau_hook)", lambda m: getattr(m, "tau_hook", None) is not None),
)


def refusals(model) -> List[str]:
    """What of this model the C export cannot carry, one line each ([] when it exports in full)."""
    out = []
    for what, test in UNSUPPORTED:
        hit = test(model)
        if hit:
            names = f": {', '.join(c_comment(n) for n in hit[:6])}{' ...' if len(hit) > 6 else ''}" \
                if isinstance(hit, list) else ""
            out.append(f"{what}{names}")
        if what == "flexible beams" and hit:
            break
    return out


def check_exportable(model, algorithm: str = "recursive"):
    """Refuse (ExportRefused) a model or algorithm the C export does not handle."""
    if algorithm not in EXPORT_FAMILIES:
        raise ExportRefused(f"export-c: algorithm '{algorithm}' does not export to C yet (exported: "
                            f"{', '.join(EXPORT_FAMILIES)})")
    why = refusals(model)
    if why:
        raise ExportRefused("export-c: the model has what the C export does not carry yet (nothing is dropped "
                            "silently; remove it from the model or use the Python module): " + "; ".join(why))


def default_prefix(name: str) -> str:
    """The C prefix of a model's exported names.

    The model name when it is a plain C identifier (letters, digits, '_'; a letter first; not a keyword), else
    'model': no other piece of a user string reaches the code."""
    name = str(name)
    return name if _PREFIX.match(name) and name.lower() not in _C_KEYWORDS else "model"


def check_prefix(prefix: str) -> str:
    """Return `prefix` if it is a C identifier and not a keyword; ValueError otherwise."""
    if not _PREFIX.match(prefix or "") or prefix.lower() in _C_KEYWORDS:
        raise ValueError(f"--prefix must be a C identifier (a letter, then letters, digits or '_', at most 63) and "
                         f"not a C keyword, got {prefix!r}")
    return prefix


def _coordinate_rows(model, plan) -> List[dict]:
    """Per body: its q and u ranges and the coordinate names (for the header's table)."""
    from ..model import JOINT_TYPES
    rows = []
    for k, j in enumerate(model.joints):
        jt = JOINT_TYPES[j.type]
        rows.append({"k": k, "type": j.type, "joint": c_comment(j.name), "body": c_comment(j.child),
                     "iq": plan.iq[k], "iv": plan.iv[k], "nq": jt.nq, "nv": jt.nv,
                     "q": [c_comment(f"{j.name}.{c}") for c in jt.coordinates],
                     "u": [c_comment(f"{j.name}.{c}") for c in jt.velocities]})
    return rows


def _kernels(algorithm: str, plan, kinds, ref_point: str, lanes: bool = False) -> dict:
    """The sympy kernels of one family as C.

    Per body pattern, the spatial algebra (recursive), the joint maps, the derivative kernels
    (``codegen.symbolic.derivatives``: both families share the derivative passes, as the Cython modules do).
    lanes: over mb_real, and only what the lanes run (world kinematics, the recursion, the RNEA)."""
    from ..model import JOINT_TYPES
    from ..symbolic.articulated import recursive_kernels
    from ..symbolic.body_kernels import body_kernels
    from ..symbolic.derivatives import derivative_kernels
    types_nv = [(t, JOINT_TYPES[t].nv) for t in plan.joint_types_used]
    per_body = ("kin", "rnea", "rnea_back") + (() if lanes else ("pose",)) if algorithm == "recursive" else \
        ("pose", "rnea", "rnea_back")
    nvs = tuple(sorted({nv for _, nv in types_nv}))
    return dict(
        types_nv=types_nv, body=[c_kernel(k, lanes) for k in body_kernels(kinds, per_body)],
        spatial=[c_kernel(k, lanes) for k in recursive_kernels(ref_point, nvs)] if algorithm == "recursive" else [],
        qdots=[c_joint_map(t, lanes=lanes) for t, _ in types_nv if JOINT_TYPES[t].nq],
        jchild=[] if lanes else [c_joint_map(t, "jchild") for t, _ in types_nv],
        dkern=[] if lanes else [c_kernel(k) for k in derivative_kernels()],
        joint_kinds=sorted(dict(ck for s in plan.segments for ck in s.kinds).items()))


def _derivative_vars(plan) -> dict:
    """The derivative passes' variables (workspace layouts, column groups) as the Cython module has them."""
    from ..algorithms.tree_plan import derivative_vars
    dv = derivative_vars(plan)
    if dv["deriv_refusal"]:                                  # check_exportable refused it already
        raise ExportRefused(f"export-c: {dv['deriv_refusal']}")
    keep = ("dbody_layout", "ddof_layout", "dw_body", "dw_dof", "dge", "nvj")
    return {k: dv[k] for k in keep}


def export_vars(model, ref_point: str = "centroid", prefix: Optional[str] = None,
                algorithm: str = "recursive") -> dict:
    """The variables of templates/c/: sizes, tree arrays, runs, the kernels printed as C, forces, names (escaped)."""
    if ref_point not in REF_POINTS:
        raise ValueError(f"--ref-point must be one of {', '.join(REF_POINTS)}, got {ref_point!r}")
    check_exportable(model, algorithm)
    prefix = check_prefix(prefix) if prefix is not None else default_prefix(model.name)
    fam = family(algorithm, model)
    if fam.check is not None:
        fam.check(model)
    plan = fam.make_plan(model)
    tv = _plan_vars(model, plan, ref_point, prefix, algorithm)
    tv.update(R="double", p_scalar="p", linkage="", sqrt_fn="sqrt", **_derivative_vars(plan), **_kernels(algorithm, plan, tv["kinds"], ref_point))
    return tv


def _plan_vars(model, plan, ref_point: str, prefix: str, algorithm: str) -> dict:
    """What templates/c/ reads of the plan: sizes, tree arrays, runs, layouts, the force elements, names (escaped)."""
    from ..symbolic.body_kernels import NIB
    from ..symbolic.layout import BODY_PARAMS, P_BODIES
    pats = plan.patterns()
    ksegments, kind_code = runs(pats)
    work, per_body = work_layout(ARTICULATED_WORK)
    forces = [f for f in plan.forces if f.kind in ("spring", "jforce")]
    if len(forces) != len(plan.forces):                        # check_exportable refused the rest already
        raise ExportRefused("export-c: force elements other than joint spring-dampers and joint forces")
    forces = [dataclasses.replace(f, data=dict(f.data, name=c_comment(f.data["name"]))) for f in forces]
    return dict(
        P=prefix, PU=prefix.upper(), version=__version__, model_name=c_comment(model.name),
        source=c_comment(getattr(model, "source", "")), ref_point=ref_point, algorithm=algorithm,
        nb=plan.nb, nq=plan.nq, nv=plan.nv, np=plan.np, nib=NIB, npb=BODY_PARAMS.size, p_bodies=P_BODIES,
        body_params=BODY_PARAMS, parm=plan.arm_off, parent=plan.parent, iq=plan.iq, iv=plan.iv,
        quat=plan.quat_offsets, segments=plan.segments, jt_code=plan.jt_code, ksegments=ksegments,
        kind_code=kind_code, work=work, per_body=per_body, forces=forces,
        nwork=per_body * plan.nb if algorithm == "recursive" else plan.nv * plan.nv + plan.nv + 36 * plan.nb,
        roadmap=[c_comment(r) for r in plan.roadmap()], coords=_coordinate_rows(model, plan),
        kind_dispatch=any(len(s.kinds) > 1 for s in ksegments),
        kinds=tuple(sorted(set(pats), key=lambda p: p.name)))


def lanes_source(model, plan, ref_point: str) -> Optional[str]:
    """The lanes of a recursive-family module (templates/c/lanes.c.j2), or None.

    The module's forward and inverse dynamics and RK4 step over several states per pass, one per vector lane
    (issue 24): the C export's tables, kernels, force elements and passes printed over mb_real. None when the model has
    what the C export does not carry (``refusals``): its batches then run one state per pass."""
    if refusals(model):
        return None
    tv = _plan_vars(model, plan, ref_point, "mbl", "recursive")
    tv.update(R="mb_real", p_scalar="ps", linkage="static ", sqrt_fn="mb_sqrt", lane_functions=LANE_FUNCTIONS,
              **_kernels("recursive", plan, tv["kinds"], ref_point, lanes=True))
    return _env().get_template("c/lanes.c.j2").render(**tv)


def params_vars(model, prefix: str, plan=None) -> dict:
    """The variables of templates/c/params.h.j2: the parameter vector (``Plan.params()``), q0, u0, what is where."""
    from ..symbolic.layout import BODY_PARAMS, P_BODIES
    plan = plan or family("recursive", model).make_plan(model)
    p = plan.params()
    q0, u0 = model.initial_state()
    bodies = [{"k": k, "off": P_BODIES + BODY_PARAMS.size * k, "name": c_comment(n),
               "rows": c_array_rows(p[P_BODIES + BODY_PARAMS.size * k:P_BODIES + BODY_PARAMS.size * (k + 1)], 6)}
              for k, n in enumerate(plan.body_names)]
    return dict(P=prefix, PU=prefix.upper(), version=__version__, model_name=c_comment(model.name), np=plan.np,
                gravity=", ".join(c_literal(x) for x in p[:P_BODIES]), bodies=bodies,
                layout=BODY_PARAMS.describe(), parm=plan.arm_off, p_bodies=P_BODIES, npb=BODY_PARAMS.size,
                tail=c_array_rows(p[plan.arm_off:], 4), nq=plan.nq, nv=plan.nv,
                q0=c_array_rows(list(q0) + [0.0], 4), u0=c_array_rows(list(u0) + [0.0], 4))


def _env():
    from .render import template_env
    env = template_env()
    env.filters["c_comment"] = c_comment
    return env


def params_header(model, prefix: Optional[str] = None) -> str:
    """The header NAME_params.h for a model.

    The same numbers as the Python module's parameter vector. A model of the same
    topology with other numbers (what ``System.update_model`` loads) gives the header to compile in instead."""
    check_exportable(model)
    prefix = check_prefix(prefix) if prefix is not None else default_prefix(model.name)
    return _env().get_template("c/params.h.j2").render(**params_vars(model, prefix))


FILES = (("c/model.h.j2", "{P}.h"), ("c/model.c.j2", "{P}.c"), ("c/main.c.j2", "{P}_main.c"),
         ("c/CMakeLists.txt.j2", "CMakeLists.txt"), ("c/Makefile.j2", "Makefile"))


def render_export(model, ref_point: str = "centroid", prefix: Optional[str] = None,
                  algorithm: str = "recursive") -> Dict[str, str]:
    """file name -> text of every file of the export."""
    tv = export_vars(model, ref_point, prefix, algorithm)
    env = _env()
    out = {name.format(P=tv["P"]): env.get_template(tpl).render(**tv) for tpl, name in FILES}
    out[f"{tv['P']}_params.h"] = env.get_template("c/params.h.j2").render(**params_vars(model, tv["P"]))
    return out


def export_c(model, out_dir, ref_point: str = "centroid", prefix: Optional[str] = None,
             algorithm: str = "recursive") -> List[Path]:
    """Write the export into out_dir (created if needed); returns the paths written.

    ``algorithm``: a family of ``EXPORT_FAMILIES`` (``ref_point`` is the recursive family's; dense has none)."""
    files = render_export(model, ref_point, prefix, algorithm)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = []
    for name, text in files.items():
        path = out / name
        tmp = out / f".{name}.tmp"
        tmp.write_text(text)
        tmp.replace(path)
        paths.append(path)
    return paths
