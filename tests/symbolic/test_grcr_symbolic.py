"""The identities the grcr kernel's rank-one updates rest on (codegen.symbolic.grcr), exactly in sympy; and the
kernels the grcr template calls (codegen.symbolic.grcr.KERNELS), compared with numpy at random inputs: the sympy
kernel (lambdify) and its printed Cython body (run as Python) against a plain numpy form of the same step."""
import zlib

import numpy as np
import pytest
import sympy as sp

from codegen.symbolic import grcr
from codegen.symbolic.grcr import elimination, joint_column, triangularisation


def _projector(cols):
    """Orthogonal projector onto the complement of span(cols) (6 x k, exact rationals)."""
    G = sp.Matrix.hstack(*cols)
    return sp.eye(6) - G * (G.T * G).inv() * G.T


def test_elimination_keeps_an_orthogonal_projector_and_kills_the_eliminated_column():
    """eq (36): R' = R - rho Q rho^T is again symmetric and idempotent, and R' s = 0 (the eliminated dependent's
    column leaves the remaining constraint equations), for R the projector left by earlier dependents."""
    a = sp.Matrix([1, 2, 0, 1, -1, 3])
    s = sp.Matrix([0, 1, 1, 2, 0, -1])
    R = _projector([a])
    e = elimination(s, R)
    Rn = e["R^k = R^{k+1} - rho Q rho^T [CA eqs 36, 66]"]
    assert sp.simplify(Rn - Rn.T) == sp.zeros(6) and sp.simplify(Rn * Rn - Rn) == sp.zeros(6)
    assert sp.simplify(Rn * s) == sp.zeros(6, 1) and sp.simplify(Rn * a) == sp.zeros(6, 1)
    assert sp.simplify(Rn - _projector([a, s])) == sp.zeros(6)


def test_dependents_solved_from_the_tip_solve_the_constraint():
    """eqs (27), (33), (67): u_k = -Q rho^T w_k from the tip inward gives G_D u_D = -w for a consistent w."""
    cols = [sp.Matrix([1, 0, 2, 0, 1, 1]), sp.Matrix([0, 1, 1, 1, 0, 2]), sp.Matrix([2, 1, 0, 1, 1, 0])]
    u_true = sp.Matrix([3, -2, 5])
    w = -sp.Matrix.hstack(*cols) * u_true
    R, sol = sp.eye(6), {}
    rhos, Qs = {}, {}
    for k in (2, 1, 0):
        e = elimination(cols[k], R)
        rhos[k], Qs[k] = e["rho = R^{k+1} s [CA eq 34]"], e["Q^k = (s^T R^{k+1} s)^-1 [CA eq 34]"]
        R = e["R^k = R^{k+1} - rho Q rho^T [CA eqs 36, 66]"]
    acc = w
    for k in (0, 1, 2):                                        # base outward (the forward pass); rho_k is
        # orthogonal to the outboard dependents' columns, so u_k sees only the inboard ones, already known
        sol[k] = sp.simplify(-Qs[k] * (rhos[k].T * acc)[0])
        acc = acc + cols[k] * sol[k]
    assert [sol[k] for k in range(3)] == list(u_true)


def test_triangularisation_removes_the_joint_direction():
    """eq (63): s^T T = 0 applied to the articulated quantities (T^T s = 0): the parent sees no force along the
    joint's free direction."""
    s = sp.Matrix([1, 0, 2, 0, 1, 1])
    I = sp.Matrix(6, 6, lambda a, b: sp.Rational(1, 1 + a + b) + (3 if a == b else 0))
    T = triangularisation(s, I)["T = U - ^0I-hat s s^T / M-hat [CA eq 63]"]
    assert sp.simplify(s.T * T) == sp.zeros(1, 6)


def test_joint_columns():
    r, a = sp.Matrix([1, 2, 3]), sp.Matrix([0, 0, 1])
    assert joint_column("revolute", r, a) == sp.Matrix([2, -1, 0, 0, 0, 1])
    assert joint_column("prismatic", r, a) == sp.Matrix([0, 0, 1, 0, 0, 0])


# ------------------------------------------------------------------------------------------ the template's kernels
def _rand_sym(rng):
    X = rng.normal(size=(6, 6))
    return X @ X.T + 6 * np.eye(6)


def _inputs(k, rng):
    v = {a.name: (float(rng.normal()) if a.scalar else rng.normal(size=a.size)) for a in k.args}
    for name in ("R", "I", "Ihp", "Ih0", "S4", "S1"):
        if name in v:
            v[name] = _rand_sym(rng).ravel()
    if k.name == "eliminate_step":              # R: a projector, as left by earlier dependents
        a = rng.normal(size=6)
        v["R"] = (np.eye(6) - np.outer(a, a) / (a @ a)).ravel()
    if "d" in v:
        v["d"] = float(rng.uniform(1.0, 3.0))
    return v


def _reference(name, v):
    """Each kernel's step in plain numpy: outputs after it ran (inout arrays: updated)."""
    m = lambda x: np.asarray(x, float).reshape(6, 6)  # noqa: E731
    if name == "eliminate_step":                              # [CA eqs 34, 36, 66]
        s, R = v["s"], m(v["R"])
        rl = R @ s
        q = 1 / (s @ rl)
        rho = np.concatenate([rl[:3], rl[3:] + np.cross(v["p"], rl[:3])])
        return {"R": (R - q * np.outer(rl, rl)).ravel(), "rho": rho, "q": [q], "ratio": [(s @ rl) / (s @ s)]}
    if name in ("map_Y", "map_Z"):                            # [CA eqs 76-77, 79-80]
        X = -v["q"] * np.outer(v["s"], v["rho"])
        if name == "map_Y":
            return {"Y": (m(v["Y"]) + X @ m(v["Y"])).ravel()}
        return {"Z": v["Z"] + v["c"] + X @ (v["Z"] + v["C"])}
    if name == "body_load":                                   # [CA eqs 87-91]
        return {"cp": (m(v["I"]) @ m(v["Y"])).ravel(), "cz": m(v["I"]) @ v["Z"] - v["Q"]}
    if name == "hang_load":                                   # [CA eqs 103-111]
        KB, Kb = m(v["KB"]), m(v["Kb"])
        return {"c0": (KB + Kb).ravel(), "cp": (KB @ m(v["YB"]) + Kb @ m(v["Yb"])).ravel(),
                "cz": v["kz"] + KB @ v["ZB"] + Kb @ v["Zb"]}
    if name == "region_share":                                # [CA eqs 53-55, 92-95]
        Y = m(v["Yh"])
        return {"SYI": v["SYI"] + (Y.T @ m(v["c0"])).ravel(), "SYIY": v["SYIY"] + (Y.T @ m(v["cp"])).ravel(),
                "SYb": v["SYb"] + Y.T @ v["cz"], "S1": v["S1"] + v["cp"], "S3": v["S3"] + v["cz"],
                "S4": v["S4"] + v["c0"]}
    if name == "inboard_step":                                # [CA eqs 60-64]
        s, Ih0, Ihp = v["s"], m(v["Ih0"]), m(v["Ihp"])
        up, d = Ihp @ s, s @ Ihp @ s
        T = np.eye(6) - np.outer(up, s) / d
        return {"up": up, "u0": Ih0.T @ s, "b": [s @ v["bet"]], "d": [d], "Ih0": (T @ Ih0).ravel(),
                "Ihp": (T @ Ihp).ravel(), "bet": T @ (Ihp @ v["c"] + v["bet"])}
    if name in ("affine_step", "inboard_accel"):              # [CA eq 59], a = al A0 + ga a_b + be
        s, c, d = v["s"], v["c"], v["d"]
        if name == "inboard_accel":
            u = -(v["b"] + v["u0"] @ v["A0"] + v["up"] @ (v["acc"] + c)) / d
            return {"ud": [u], "acc": v["acc"] + c + s * u}
        al, ga, be = m(v["al"]), m(v["ga"]), v["be"]
        return {"al": (al - np.outer(s, v["u0"] + al.T @ v["up"]) / d).ravel(),
                "ga": (ga - np.outer(s, ga.T @ v["up"]) / d).ravel(),
                "be": be + c - s * (v["b"] + v["up"] @ (be + c)) / d}
    if name in ("body_force", "region_force"):                # [CA eqs 20-22]
        I0, I1, f0 = (m(v["I"]), m(v["I"]), -v["Q"]) if name == "body_force" else (m(v["S4"]), m(v["S1"]), v["S3"])
        return {"FA": v["FA"] + (I0 + I1 @ m(v["al"])).ravel(), "FG": v["FG"] + (I1 @ m(v["ga"])).ravel(),
                "Fb": v["Fb"] + I1 @ v["be"] + f0}
    raise KeyError(name)


def _run_printed(k, v):
    env = {a.name: (v[a.name] if a.scalar else np.array(v[a.name], float).copy() if a.mode != "out"
                    else np.zeros(a.size)) for a in k.args}
    exec(compile("\n".join(line.replace("cdef double ", "") for line in k.lines), k.name, "exec"), {}, env)
    return env


@pytest.mark.parametrize("name", list(grcr.KERNELS))
def test_kernel_matches_numpy(name):
    """sympy kernel (lambdify) == numpy form of the step == printed code, at random inputs."""
    k = grcr.kernel(name)
    rng = np.random.default_rng(zlib.crc32(name.encode()))
    for _ in range(3):
        v = _inputs(k, rng)
        want = _reference(name, v)
        got, printed = k.evaluate(**v), _run_printed(k, v)
        for arg in k.args:
            if arg.mode == "in":
                continue
            w = np.asarray(want[arg.name], float)
            scale = max(1.0, np.max(np.abs(w)))
            assert np.max(np.abs(got[arg.name] - w)) < 1e-11 * scale, (name, arg.name)
            assert np.max(np.abs(printed[arg.name] - w)) < 1e-11 * scale, (name, arg.name, "printed")


def test_kernels_cite_their_equation_and_state_inputs_and_outputs():
    for code in grcr.grcr_kernels():
        assert code.equation.startswith("[CA eq") and "In:" in code.doc and "Out" in code.doc, code.name
        assert code.lines, code.name


def test_kernels_use_the_inspected_elimination():
    """The elimination kernel is the inspected R^k: a sign flip there changes the kernel."""
    k = grcr.kernel("eliminate_step")
    s, R = grcr.arr("s", 6), grcr.full6("R")
    want = elimination(s, R)["R^k = R^{k+1} - rho Q rho^T [CA eqs 36, 66]"]
    got = {i: e for a, i, op, e in k.resolved() if a == "R"}
    for i in (0, 7, 11):
        assert sp.simplify(got[i] - want[i // 6, i % 6]) == 0
