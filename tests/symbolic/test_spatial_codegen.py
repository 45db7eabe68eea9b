"""The spatial-algebra kernels of the recursive template (codegen.symbolic.articulated).

Each sympy kernel is evaluated (lambdify) at random inputs and compared with a plain numpy implementation
of the same Kang & Yoon formula; the printed Cython body (CSE temporaries, locals, in-place updates) is run
as Python on the same inputs; the template keeps no jinja arithmetic; rendering stays fast.
"""
import re
import zlib

import numpy as np
import pytest
import sympy as sp

from codegen.symbolic import articulated as ar
from support.systems import ROOT

REFS = ar.REF_POINTS
NS = (0, 1, 2, 3, 6)
TEMPLATE = ROOT / "templates" / "recursive" / "recursive.pyx.j2"


# ------------------------------------------------------------------------------------------ numpy reference
def sk(v):
    return np.array([[0, -v[2], v[1]], [v[2], 0, -v[0]], [-v[1], v[0], 0]])


def blk(A, B, C, D):
    return np.block([[A, B], [C, D]])


def pack(M):
    return np.array([M[a, b] for a, b in ar.UPPER])


def unpack(x):
    return np.array(ar.unpack(x), float)


def B1(dl):
    return blk(np.eye(3), -sk(dl), np.zeros((3, 3)), np.eye(3))


def rand_sym6(rng):
    X = rng.normal(size=(6, 6))
    return X @ X.T + 6 * np.eye(6)


def inputs(k, rng, ref):
    """Random values for every input of kernel k, consistent with its reference point."""
    v = {a.name: (float(rng.normal()) if a.scalar else rng.normal(size=a.size)) for a in k.args}
    if "m" in v:
        v["m"] = float(rng.uniform(0.5, 2.0))
    for name in ("M", "Mp"):
        if name in v:
            v[name] = pack(rand_sym6(rng))
    if "J" in v:
        X = rng.normal(size=(3, 3))
        v["J"] = (X @ X.T).ravel()
    # the kernels are specialised to the reference point: feed inputs that satisfy it
    if ref == "origin":
        for name in ("P", "Pd", "Pi", "Pdi"):
            if name in v:
                v[name] = np.zeros(3)
    elif ref == "centroid" and "rc" in v:
        v["P"], v["Pd"] = v["rc"].copy(), v["vc"].copy()
    elif ref == "joint" and "r" in v:
        v["P"] = v["r"].copy()
        if "vr" in v:
            v["Pd"] = v["vr"].copy()
    return v


def reference(name, n, v):
    """The formula of each kernel in plain numpy: outputs after the kernel ran."""
    if name == "B2_column":
        H, e = v["H"], v["P"] - v["r"]
        return {"B2": np.concatenate([H[:3] - sk(e) @ H[3:], H[3:]])}             # eqs (25), (33)
    if name == "D_term":
        wi, rel, cw = v["wi"], v["rel"], v["cw"]
        e, ed = v["P"] - v["r"], v["Pd"] - v["vr"]
        Dw = np.cross(wi, rel[3:]) + cw[3:]                                        # eq (27)
        Dv = np.cross(wi, v["Pd"] - v["Pdi"]) + np.cross(wi, rel[:3]) + cw[:3] + np.cross(Dw, e) \
            + np.cross(rel[3:], ed)
        return {"D": np.concatenate([Dv, Dw])}
    if name == "body_at_P":
        A, m, w = v["A"].reshape(3, 3), v["m"], v["w"]
        Jc = A @ v["J"].reshape(3, 3) @ A.T                                         # comment 1 after eq 30
        s, sd = v["P"] - v["rc"], v["Pd"] - v["vc"]                                 # s^P: P - centroid
        T = blk(np.eye(3), sk(s), np.zeros((3, 3)), np.eye(3))                     # eq (4)
        Td = blk(np.zeros((3, 3)), sk(sd), np.zeros((3, 3)), np.zeros((3, 3)))
        Mc = blk(m * np.eye(3), np.zeros((3, 3)), np.zeros((3, 3)), Jc)            # eq (3)
        Qc = np.concatenate([m * v["g"] + v["Fe"], v["Te"] - np.cross(w, Jc @ w)])
        Y = np.concatenate([v["Pd"], w])
        return {"M": v["M"] + pack(T.T @ Mc @ T), "Q": v["Q"] + T.T @ (Qc - Mc @ Td @ Y)}   # eq (8)
    if name == "joint_projection":
        M = unpack(v["M"])
        Q1 = v["Q"] - M @ v["D"]                                                    # eq (28)
        if n == 0:
            return {"Q": Q1, "M": v["M"]}
        B2 = v["B2"].reshape(n, 6).T
        U = M @ B2
        M22 = B2.T @ U + np.diag(np.atleast_1d(v["arm"]))                          # + the rotors' armature
        Q2 = B2.T @ Q1 + v["tau"]
        if n == 1:                                                                  # + eq (29)
            K = np.linalg.solve(M22, U.T)
            k0 = np.linalg.solve(M22, Q2)
            return {"K": K.ravel(), "k0": k0, "M": pack(M - U @ K), "Q": Q1 - U @ k0}
        return {"U": U.T.ravel(), "M22": np.tril(M22).ravel(), "Q2": Q2, "Q": Q1, "M": v["M"]}
    if name == "articulated_update":
        U, K = v["U"].reshape(n, 6).T, v["K"].reshape(n, 6)
        return {"M": pack(unpack(v["M"]) - U @ K), "Q": v["Q"] - U @ v["k0"]}       # eq (29)
    if name == "shift_to_parent":
        B = B1(v["P"] - v["Pi"])                                                     # eqs (25), (33)
        return {"Mp": v["Mp"] + pack(B.T @ unpack(v["M"]) @ B), "Qp": v["Qp"] + B.T @ v["Q"]}   # eq (29)
    if name == "joint_acceleration":
        Y1 = B1(v["P"] - v["Pi"]) @ v["Ydi"]                                         # eq (30)
        K, B2 = v["K"].reshape(n, 6), v["B2"].reshape(n, 6).T
        qdd = v["k0"] - K @ Y1
        return {"qdd": qdd, "Yd": Y1 + B2 @ qdd + v["D"]}
    raise KeyError(name)


def kernels():
    out = []
    for ref in REFS:
        for name in ("B2_column", "D_term", "body_at_P", "shift_to_parent"):
            out.append((name, ref, 1))
        for n in NS:
            out.append(("joint_acceleration", ref, n))
    for n in NS:
        out.append(("joint_projection", "origin", n))
        if n > 1:
            out.append(("articulated_update", "origin", n))
    return out


def run_printed(k, v):
    """Execute the printed Cython body as Python (same statements, same order)."""
    env = {a.name: (v[a.name] if a.scalar else np.array(v[a.name], float).copy() if a.mode != "out"
                    else np.zeros(a.size)) for a in k.args}
    code = "\n".join(line.replace("cdef double ", "") for line in k.lines)
    exec(compile(code, k.name, "exec"), {}, env)
    return env


# ------------------------------------------------------------------------------------------ tests
@pytest.mark.parametrize("name,ref,n", kernels())
def test_kernel_matches_numpy(name, ref, n):
    """sympy kernel (lambdify) == numpy formula == printed code, at random inputs."""
    k = ar.kernel(name, ref, n)
    rng = np.random.default_rng(zlib.crc32(f"{name} {ref} {n}".encode()))
    for _ in range(3):
        v = inputs(k, rng, ref)
        want = reference(name, n, v)
        got = k.evaluate(**v)
        printed = run_printed(k, v)
        for arg in k.args:
            if arg.mode == "in" or arg.size == 0:
                continue
            w = np.asarray(want[arg.name], float)
            if name == "joint_projection" and arg.name == "M22":          # only the lower triangle is written
                w = np.tril(w.reshape(n, n)).ravel()
            scale = max(1.0, np.max(np.abs(w)))
            assert np.max(np.abs(got[arg.name] - w)) < 1e-12 * scale, (name, ref, n, arg.name)
            assert np.max(np.abs(printed[arg.name] - w)) < 1e-12 * scale, (name, ref, n, arg.name, "printed")


@pytest.mark.parametrize("ref", ["centroid", "origin"])
def test_shift_is_the_textbook_product(ref):
    """The factored shift (B' = B - A dl~, C' = C + dl~ B + (dl~ B')^T) is exactly B1^T M B1 (eq 29)."""
    k = ar.kernel("shift_to_parent", ref)
    M, Q = ar.sym6("M"), ar.arr("Q", 6)
    dl = sp.zeros(3, 1) if ref == "origin" else ar.arr("P", 3) - ar.arr("Pi", 3)
    B = ar.B1_matrix(dl)
    want = {("Mp", i): e for i, e in enumerate(ar.pack(B.T * M * B))}
    want.update({("Qp", i): e for i, e in enumerate(B.T * Q)})
    got = {(a, i): e for a, i, op, e in k.resolved()}
    for key, w in want.items():
        assert sp.expand(got.get(key, 0) - w) == 0, key


def test_body_at_P_matches_the_reference_point_derivation():
    """M^P of the origin kernel equals eq (36) as derived in codegen.symbolic.spatial (symbolically)."""
    from codegen.symbolic import spatial
    k = ar.kernel("body_at_P", "origin")
    el = spatial.reference_point("origin")["M^P = T^T M^c T  [KY eq 8]"]
    m = sp.Symbol("m", positive=True)
    rc = spatial.vec("r^c")
    J = spatial.sym3("J")
    sub = {sp.Symbol("m"): m, **{sp.Symbol(f"rc[{i}]"): rc[i] for i in range(3)}}
    # A = I: J^c is J' itself
    sub.update({sp.Symbol(f"A[{i}]"): (1 if i in (0, 4, 8) else 0) for i in range(9)})
    names = [(0, 0, 0), (1, 0, 1), (2, 0, 2), (4, 1, 1), (5, 1, 2), (8, 2, 2)]
    sub.update({sp.Symbol(f"J[{i}]"): J[a, b] for i, a, b in names})
    got = {i: e.xreplace(sub) for a, i, op, e in k.resolved() if a == "M"}
    for i, (a, b) in enumerate(ar.UPPER):
        assert sp.expand(got.get(i, 0) - el[a, b]) == 0, (a, b)


def test_every_kernel_cites_its_equation():
    for name, ref, n in kernels():
        k = ar.kernel_code(name, ref, n)
        assert re.search(r"\[KY eqs? \d+", k.equation), k.name


def test_template_has_no_jinja_arithmetic():
    """Jinja only substitutes names (and the comment filter); loops in jinja are over structure only (the recursive
    templates and grcr's, which extends them)."""
    text = TEMPLATE.read_text() + (TEMPLATE.parent / "loops.pyx.j2").read_text() \
        + (TEMPLATE.parents[1] / "grcr" / "grcr.pyx.j2").read_text()
    for expr in re.findall(r"\{\{(.*?)\}\}", text, re.S):
        if re.match(r"\s*(layout_enum\(|coupling_constants\(\)\s*$|c_kernels\(|super\(\)\s*$)", expr):   # a memory
            continue      # layout as a C enum (shared/layout.j2), the couplings' data (couplings.j2), the sympy kernels
                          # printed as C (shared/kernels.j2), the parent template's kernels
        if re.fullmatch(r'\s*(wk\("\w+", "[\w\[\]]+"\)|self\.\w+\(\))\s*', expr):   # a workspace block by name
            continue                                                                  # (shared/layout.j2), a block
        assert re.fullmatch(r"\s*[A-Za-z_][\w.]*\s*(\|\s*comment\s*)?", expr), f"jinja expression {{{{{expr}}}}}"
    for tag in re.findall(r"\{%(.*?)%\}", text, re.S):
        assert not re.search(r"range\(|\|\s*(min|max)|[*+]|\s-\s|//", tag), f"jinja tag {{%{tag}%}}"
    # the 6x6 algebra is not spelled out in the template: no hand-written M[...] index arithmetic
    body = text.split("{% block algorithm %}")[1]
    assert not re.search(r"\bM\[\s*\d+\s*\*", body) and "sym_mv" not in body


def test_rendered_source_calls_the_kernels():
    import codegen
    from codegen.algorithms import family
    from codegen.compiler.render import render
    m = codegen.models.random_tree(12, seed=3)
    fam = family("recursive", m)
    for ref in REFS:
        src = render(fam, fam.make_plan(m), {"ref_point": ref}, "test")
        for k in ar.recursive_kernels(ref, tuple(sorted({j.nv for j in m.joints}))):
            assert f"static inline void {k.name}({k.params})" in src        # printed as C (shared/kernels.j2)
            assert f"    void {k.name}({k.params}) noexcept nogil" in src   # declared to Cython
            assert re.search(rf"[^.\w]{k.name}\(", src.split("cdef class System")[1]), (ref, k.name)   # called
            assert f"/* {k.equation}" in src


def test_render_of_a_long_chain_derives_nothing_again():
    """Derivations are cached per process: rendering a 1000-body chain a second time runs no sympy derivation (the
    cached kernels are not derived again), so generation time does not grow with repeated builds."""
    import codegen
    from codegen.algorithms import family
    from codegen.compiler.render import render
    from codegen.symbolic.articulated import _kernel, recursive_kernels
    m = codegen.models.chain(1000)
    fam = family("recursive", m)
    render(fam, fam.make_plan(m), {"ref_point": "centroid"}, "warm")
    before = (_kernel.cache_info().misses, recursive_kernels.cache_info().misses)
    src = render(fam, fam.make_plan(m), {"ref_point": "centroid"}, "again")
    assert (_kernel.cache_info().misses, recursive_kernels.cache_info().misses) == before
    assert "        joint_projection_1(M, Q, D, B2" in src          # called (printed as C: shared/kernels.j2)
