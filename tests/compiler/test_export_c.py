"""Standalone C export (issue 26, `mbgen export-c`): the exported C99 library compiles with -Wall -Wextra -Werror
-pedantic, allocates nothing, and gives the Python module's forward and inverse dynamics, mass matrix, joint
reaction wrenches and RK4 rollouts to round-off (1e-12), and its analytical derivatives to 1e-10, on random trees of every joint type, fixed and floating
base, at every analysis reference point of the recursive family and for the dense family; its main runs from the
Makefile; casadi.external loads it; model names reach it only inside comments; and what it does not carry is
refused by name.

The models are ones other tests build at the same options (tests/support/c_export.py names where), so the Python
modules come from the shared build cache; the export itself costs its sympy kernels and one cc run each."""
import copy
import ctypes
import re
import shutil
import subprocess

import numpy as np
import pytest

import codegen
from codegen.cli import main
from codegen.compiler.export_c import EXPORT_FAMILIES, ExportRefused, check_exportable, export_c, refusals, \
    render_export
from codegen.models import random_state, random_tree

from support.c_export import CASES, STRICT, CLib, cc, compile_shared, floating, strip_c_comments
from support.systems import EXAMPLES, get_system, rel_err

TOL = 1e-12
_BUILT = {}


def exported(tmp_path_factory, ref_point, model_fn=None, tag="", algorithm="recursive"):
    """(model, prefix, folder, ctypes library) of one export, compiled once per test run."""
    key = (ref_point, tag, algorithm)
    if key not in _BUILT:
        m = (model_fn or CASES[ref_point])()
        folder = tmp_path_factory.mktemp(f"c_{algorithm}_{ref_point}{tag}")
        paths = export_c(m, folder, ref_point=ref_point, algorithm=algorithm)
        prefix = paths[0].stem
        so = compile_shared(folder, prefix)
        lib = CLib(so, prefix, m.nq, m.nv)
        lib.nb = len(m.joints)
        _BUILT[key] = (m, prefix, folder, lib)
    return _BUILT[key]


def joint_wrench(lib, q, u, tau=None, t=0.0):
    """NAME_joint_wrench through ctypes: (NB, 6)."""
    f = lib.fn("joint_wrench")
    d = ctypes.POINTER(ctypes.c_double)
    f.argtypes = [ctypes.c_void_p, ctypes.c_double, d, d, d, d]
    keep = [None if x is None else np.ascontiguousarray(x, dtype=np.float64) for x in (q, u, tau)]
    out = np.zeros((lib.nb, 6))
    f(lib.ws, t, *[None if x is None else x.ctypes.data_as(d) for x in keep], out.ctypes.data_as(d))
    return out


# (reference point, family): the dense export (no reference point) of the forced tree against the dense module
# tests/algorithms/test_derivatives.py builds of it; the floating tree's dense export is checked below. A dense
# rollout is not compared with the recursive module: the families agree at unit quaternions (every state) but not
# off them, where the RK4 stages evaluate before the renormalisation (1e-10 apart after 12 steps)
EXPORTS = [(r, "recursive") for r in CASES] + [("centroid", "dense")]


@pytest.mark.build
@pytest.mark.parametrize("ref_point, algorithm", EXPORTS, ids=[f"{a}-{r}" for r, a in EXPORTS])
def test_matches_the_python_module(tmp_path_factory, ref_point, algorithm):
    """Forward dynamics (with tau and time functions), RNEA, mass matrix, joint wrenches and an RK4 rollout with
    per-step tau equal the Cython module's to 1e-12; the shared library references no allocator."""
    m, prefix, folder, lib = exported(tmp_path_factory, ref_point, algorithm=algorithm)
    s = get_system(m, algorithm, **({"ref_point": ref_point, "lanes": True} if algorithm == "recursive" else {}))
    kinds = {j.type for j in m.joints}
    assert kinds >= {"revolute", "prismatic", "spherical", "fixed"}
    rng = np.random.default_rng(17)
    for trial in range(3):
        q, u = random_state(m, rng)
        tau, ud = rng.normal(size=m.nv), rng.normal(size=m.nv)
        t = float(rng.uniform(0, 0.3))
        ref = s.forward_dynamics(q, u, tau, t)
        assert np.max(np.abs(ref)) > 1e-3
        assert rel_err(lib.forward_dynamics(q, u, tau, t), ref) < TOL, (ref_point, trial)
        assert rel_err(lib.forward_dynamics(q, u, None, t), s.forward_dynamics(q, u, None, t)) < TOL
        assert rel_err(lib.inverse_dynamics(q, u, ud, t), s.inverse_dynamics(q, u, ud, t)) < TOL, (ref_point, trial)
        assert rel_err(lib.mass_matrix(q), s.mass_matrix(q)) < TOL, (ref_point, trial)
        W = s.kernel.joint_wrench(q, u, tau, t)
        assert np.max(np.abs(W)) > 1e-3 and rel_err(joint_wrench(lib, q, u, tau, t), W) < TOL, (ref_point, trial)
        assert rel_err(joint_wrench(lib, q, u, None, t), s.kernel.joint_wrench(q, u, None, t)) < TOL
    q0, u0 = m.initial_state()
    tr = rng.normal(size=(1, 12, m.nv))
    qs, us = s.rollout(q0[None], u0[None], 12, 0.01, tr)
    n, qc, uc = lib.rollout(q0, u0, 12, 0.01, tr[0])
    assert n == 12 and rel_err(qc, qs[0]) < TOL and rel_err(uc, us[0]) < TOL
    syms = subprocess.run(["nm", "-D", str(folder / f"lib{prefix}.so")], capture_output=True, text=True).stdout
    assert not re.search(r"\b(malloc|free|calloc|realloc)\b", syms), syms


def derivatives(lib, name, q, u, a, t=0.0):
    """NAME_forward/inverse_dynamics_derivatives through ctypes: (return code, three nv x nv arrays)."""
    f = lib.fn(f"{name}_dynamics_derivatives")
    d = ctypes.POINTER(ctypes.c_double)
    f.argtypes = [ctypes.c_void_p, ctypes.c_double] + [d] * 6
    keep = [None if x is None else np.ascontiguousarray(x, dtype=np.float64) for x in (q, u, a)]
    outs = [np.full((lib.nv, lib.nv), np.nan) for _ in range(3)]
    rc = f(lib.ws, t, *[None if x is None else x.ctypes.data_as(d) for x in keep], *[o.ctypes.data_as(d) for o in outs])
    return rc, outs


# (reference point, family, tag) of the exports above; each against the derivative module that
# tests/algorithms/test_derivatives.py builds of its model (the floating tree's: the recursive family at the joint)
DERIVS = [(r, a, "") for r, a in EXPORTS] + [("centroid", "dense", "_floating")]


@pytest.mark.build
@pytest.mark.parametrize("ref_point, algorithm, tag", DERIVS, ids=[f"{a}-{r}{t}" for r, a, t in DERIVS])
def test_derivatives_match_the_python_module(tmp_path_factory, ref_point, algorithm, tag):
    """NAME_forward_dynamics_derivatives (dudot/dq, dudot/du, M^-1) and NAME_inverse_dynamics_derivatives (dtau/dq,
    dtau/du, M) equal the module's forward/inverse_dynamics_derivatives to 1e-10 at random states and times: fixed and
    floating base (free and spherical joints: the tangent space), joint spring-dampers and time functions."""
    m, _, _, lib = exported(tmp_path_factory, ref_point, floating if tag else None, tag, algorithm)
    s = get_system(m, "recursive", lanes=True, ref_point="joint") if tag else \
        get_system(m, algorithm, **({"ref_point": ref_point, "lanes": True} if algorithm == "recursive" else {}))
    rng = np.random.default_rng(23)
    for _ in range(2):
        q, u = random_state(m, rng)
        tau, ud = rng.normal(size=m.nv), rng.normal(size=m.nv)
        t = float(rng.uniform(0, 0.3))
        rc, out = derivatives(lib, "forward", q, u, tau, t)
        assert rc == 0
        for a, b in zip(out, s.forward_dynamics_derivatives(q, u, tau, t)):
            assert np.max(np.abs(b)) > 1e-3 and rel_err(a, b) < 1e-10, (ref_point, algorithm, tag)
        _, out = derivatives(lib, "forward", q, u, None, t)
        assert rel_err(out[0], s.forward_dynamics_derivatives(q, u, None, t)[0]) < 1e-10
        _, out = derivatives(lib, "inverse", q, u, ud, t)
        for a, b in zip(out, s.inverse_dynamics_derivatives(q, u, ud, t=t)):
            assert np.max(np.abs(b)) > 1e-3 and rel_err(a, b) < 1e-10, (ref_point, algorithm, tag)


@pytest.mark.build
@pytest.mark.parametrize("algorithm", EXPORT_FAMILIES)
def test_floating_base_at_the_centroid(tmp_path_factory, algorithm):
    """The floating tree (free joints at the root and inside) exported at the centroid (the default) and by the
    dense family against its Python module at the joint point (the reference points agree to 1e-10,
    tests/algorithms/recursive/test_recursive.py, and so do the families; the fixed-base tree is exported at the
    centroid above)."""
    m, _, _, lib = exported(tmp_path_factory, "centroid", floating, tag="_floating", algorithm=algorithm)
    s = get_system(m, "recursive", lanes=True, ref_point="joint")
    rng = np.random.default_rng(5)
    for _ in range(2):
        q, u = random_state(m, rng)
        tau, ud = rng.normal(size=m.nv), rng.normal(size=m.nv)
        assert rel_err(lib.forward_dynamics(q, u, tau), s.forward_dynamics(q, u, tau)) < 1e-10
        assert rel_err(lib.inverse_dynamics(q, u, ud), s.inverse_dynamics(q, u, ud)) < 1e-10
        assert rel_err(joint_wrench(lib, q, u, tau), s.kernel.joint_wrench(q, u, tau)) < 1e-10


@pytest.mark.build
def test_set_params_takes_the_numbers_of_update_model(tmp_path_factory):
    """set_params with the parameter vector of another model of the same topology (what update_model loads, and
    what params_header writes out) gives that model's dynamics."""
    from codegen.compiler.export_c import params_header
    m, prefix, _, lib = exported(tmp_path_factory, "origin")
    m2 = CASES["origin"]()
    for b in m2.bodies:
        b.mass *= 1.7
    m2.gravity = m2.gravity * 0.5
    s = get_system(m, "recursive", lanes=True, ref_point="origin")
    q, u = random_state(m, np.random.default_rng(2))
    a1 = lib.forward_dynamics(q, u)
    p2 = s.family.make_plan(m2).params()
    try:
        s.update_model(m2)
        lib.set_params(p2)
        assert rel_err(lib.forward_dynamics(q, u), s.forward_dynamics(q, u)) < TOL
        assert rel_err(a1, lib.forward_dynamics(q, u)) > 1e-6
    finally:
        s.update_model(m)
        lib.fn("init")(lib.ws)
    text = params_header(m2, prefix)
    assert repr(float(p2[-1])) in text and f"{prefix.upper()}_PARAMS" in text


@pytest.mark.build
def test_main_runs_from_the_makefile(tmp_path_factory):
    """`make run` builds NAME_main (strict flags) and prints the forward dynamics and joint wrenches at the initial
    state and the state after 100 RK4 steps of 1 ms: the Python module's numbers."""
    m, prefix, folder, _ = exported(tmp_path_factory, "centroid")
    out = subprocess.run(["make", "-s", "-C", str(folder), f"CC={cc()}", "CFLAGS=-O2 -Werror", "run"],
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stdout + out.stderr
    vals = dict(re.findall(r"^(\w+\[\d+\]) = (\S+)$", out.stdout, re.M))
    s = get_system(m, "recursive", lanes=True, ref_point="centroid")
    q0, u0 = m.initial_state()
    ud = np.array([float(vals[f"udot[{k}]"]) for k in range(m.nv)])
    assert rel_err(ud, s.forward_dynamics(q0, u0, None, 0.0)) < TOL
    W = np.array([float(vals[f"Fj[{k}]"]) for k in range(6 * len(m.joints))]).reshape(-1, 6)
    assert rel_err(W, s.kernel.joint_wrench(q0, u0, None, 0.0)) < TOL
    qs, us = s.rollout(q0[None], u0[None], 100, 1e-3)
    x = np.array([float(vals[f"x[{k}]"]) for k in range(m.nq + m.nv)])
    assert rel_err(x, np.concatenate([qs[0, -1], us[0, -1]])) < 1e-11


@pytest.mark.build
@pytest.mark.skipif(shutil.which("cmake") is None, reason="cmake is not installed")
def test_cmake_builds_the_library_and_main(tmp_path_factory):
    m, prefix, folder, _ = exported(tmp_path_factory, "origin")
    build = folder / "build"
    for cmd in (["cmake", "-S", str(folder), "-B", str(build), f"-DCMAKE_C_COMPILER={cc()}",
                 "-DCMAKE_C_FLAGS=-Wall -Wextra -Werror -pedantic"], ["cmake", "--build", str(build)]):
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
        assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    run = subprocess.run([str(build / f"{prefix}_main")], capture_output=True, text=True, timeout=60)
    assert run.returncode == 0 and "udot[0] = " in run.stdout


@pytest.mark.build
def test_casadi_external_functions(tmp_path_factory):
    """casadi.external("NAME_fd", "libNAME.so"), NAME_id and NAME_jw (6 x NB) evaluate the Python module's dynamics
    and joint wrenches (t = 0)."""
    casadi = pytest.importorskip("casadi", reason="casadi is not installed (pip install casadi: the test extra)")
    m, prefix, folder, _ = exported(tmp_path_factory, "joint")
    so = str(folder / f"lib{prefix}.so")
    fd, idf, jw = (casadi.external(f"{prefix}_{f}", so) for f in ("fd", "id", "jw"))
    assert fd.n_in() == 3 and fd.n_out() == 1 and fd.name_in(2) == "tau" and fd.size1_in(0) == m.nq
    s = get_system(m, "recursive", lanes=True, ref_point="joint")
    rng = np.random.default_rng(8)
    q, u = random_state(m, rng)
    tau, ud = rng.normal(size=m.nv), rng.normal(size=m.nv)
    assert rel_err(np.array(fd(q, u, tau)).ravel(), s.forward_dynamics(q, u, tau)) < TOL
    assert rel_err(np.array(idf(q, u, ud)).ravel(), s.inverse_dynamics(q, u, ud)) < TOL
    assert jw.size_out(0) == (6, len(m.joints)) and jw.name_out(0) == "Fj"
    assert rel_err(np.array(jw(q, u, tau)).T, s.kernel.joint_wrench(q, u, tau)) < TOL
    fdd, idd = (casadi.external(f"{prefix}_{f}", so) for f in ("fdd", "idd"))
    assert fdd.n_out() == 3 and fdd.name_out(2) == "Minv" and idd.name_out(0) == "dtaudq"
    assert fdd.size_out(0) == (m.nv, m.nv) and idd.name_in(2) == "udot"
    for a, b in zip(fdd(q, u, tau), s.forward_dynamics_derivatives(q, u, tau)):
        assert rel_err(np.array(a), b) < 1e-10
    for a, b in zip(idd(q, u, ud), s.inverse_dynamics_derivatives(q, u, ud)):
        assert rel_err(np.array(a), b) < 1e-10


# ------------------------------------------------------------------------------------------------ refusals
@pytest.mark.parametrize("example, words", [("five_bar", "closed loops (cut joints)"),
                                            ("flexible_pendulum", "flexible beams"),
                                            ("quarter_car", "point-to-point spring-dampers: strut")])
def test_refuses_what_it_does_not_carry_by_name(tmp_path, capsys, example, words):
    assert main(["export-c", str(EXAMPLES / f"{example}.yaml"), "--out", str(tmp_path / "x")]) == 2
    err = capsys.readouterr().err
    assert words in err and "export-c" in err
    assert not (tmp_path / "x").exists()


def test_command_line_exports_the_dense_family(tmp_path, capsys):
    """`mbgen export-c MODEL --algorithm dense` writes the dense library (CRBA, Cholesky) with the same interface."""
    assert main(["export-c", str(EXAMPLES / "arm7.yaml"), "--out", str(tmp_path / "c"), "--algorithm", "dense",
                 "--prefix", "arm7"]) == 0
    c, h = (tmp_path / "c" / "arm7.c").read_text(), (tmp_path / "c" / "arm7.h").read_text()
    assert "algorithm: dense (CRBA + RNEA + Cholesky" in c and "static void crba(" in c
    for fn in ("forward_dynamics", "inverse_dynamics", "mass_matrix", "joint_wrench", "rk4_step", "rollout",
               "set_params", "fd", "id", "jw", "forward_dynamics_derivatives", "inverse_dynamics_derivatives", "fdd",
               "idd"):
        assert f" arm7_{fn}(" in h, fn
    assert main(["export-c", str(EXAMPLES / "arm7.yaml"), "--out", str(tmp_path / "c"), "--prefix", "arm7"]) == 0
    assert "algorithm: dense" not in (tmp_path / "c" / "arm7.c").read_text()     # exported again into the folder
    (tmp_path / "f").write_text("")
    assert main(["export-c", str(EXAMPLES / "arm7.yaml"), "--out", str(tmp_path / "f")]) == 2
    assert "exists and is not a folder" in capsys.readouterr().err


def test_refusals_name_every_feature():
    m = random_tree(6, seed=1, forces=True)
    m.joints[1].limits, m.joints[2].friction = np.array([[-1.0, 1.0]]), np.array([0.1])
    m.actuators, m.tendons = [type("A", (), {"name": "motor0"})()], [type("T", (), {"name": "ten0"})()]
    m.couplings = [type("C", (), {"name": "mimic0"})()]
    text = "; ".join(refusals(m))
    for words in ("actuators: motor0", "tendons: ten0", "couplings (joint and tendon equalities, URDF mimic): mimic0", f"joint limits: {m.joints[1].name}",
                  f"Coulomb friction: {m.joints[2].name}", "point-to-point spring-dampers: ps0, ps1"):
        assert words in text
    with pytest.raises(ValueError, match="prefix"):
        render_export(random_tree(3, seed=1), prefix="int")
    with pytest.raises(ExportRefused, match="algorithm 'mstmm' does not export to C yet .exported: recursive, dense"):
        check_exportable(random_tree(3, seed=1), "mstmm")


def test_inspect_algorithms_says_which_families_export():
    import io
    from contextlib import redirect_stdout
    buf = io.StringIO()
    with redirect_stdout(buf):
        assert main(["inspect", "algorithms"]) == 0
    blocks = dict(re.findall(r"^(\w+): .*?\n((?:  .*\n)+)", buf.getvalue(), re.M))
    assert "C export:    yes: mbgen export-c" in blocks["recursive"]
    assert "C export:    yes: mbgen export-c" in blocks["dense"]
    assert "C export:    no (mbgen export-c: recursive, dense only" in blocks["mstmm"]


# ------------------------------------------------------------------------------------------------ security
HOSTILE = ["*/ int evil_MARK; /*", "x\n#include </etc/passwd> MARK", "x */ #define MARK 1 /* ", "MARK??/\n/",
           "x\\\nint MARK;", "MARK \" ; int q; \"", "x\r\nMARK\u2028\x00", "{{ MARK }} {% if 1 %}MARK{% endif %}"]

RIGID = {
    "name": "safe",
    "bodies": [{"name": "a", "mass": 1.0, "com": [0.5, 0, 0], "inertia": [0.01, 0.1, 0.1]},
               {"name": "b", "mass": 2.0, "inertia": [[0.2, 0, 0], [0, 0.2, 0], [0, 0, 0.1]]}],
    "joints": [{"name": "j1", "type": "revolute", "parent": "ground", "child": "a", "axis": [0, 0, 1]},
               {"name": "j2", "type": "spherical", "parent": "a", "child": "b", "parent_frame": {"pos": [1, 0, 0]}}],
    "forces": [{"name": "k1", "type": "joint_spring_damper", "joint": "j1", "stiffness": 3.0, "damping": 0.1},
               {"name": "f1", "type": "joint_force", "joint": "j1", "value": {"sine": {"amplitude": 1, "frequency": 2}}},
               {"name": "f2", "type": "joint_force", "joint": "j1",
                "value": {"table": {"t": [0, 1], "value": [0.5, -0.5]}}}],
}


def planted(payload):
    d = copy.deepcopy(RIGID)
    d["name"] = payload
    for b in d["bodies"]:
        b["name"] += payload
    for j in d["joints"]:
        j["child"] += payload
        j["parent"] = j["parent"] + payload if j["parent"] != "ground" else "ground"
        j["name"] += payload
    for f in d["forces"]:
        f["name"] += payload
        f["joint"] += payload
    return d


@pytest.mark.build
def test_hostile_names_reach_the_c_files_only_inside_comments(tmp_path):
    """Every user string (model, body, joint, force names) carries a payload that tries to leave a C comment; no
    piece of it is outside one in any file, the prefix made from the name is a plain identifier, and the most
    hostile export compiles strictly and computes what the genuine one does."""
    for payload, algorithm in [(p, a) for p in HOSTILE for a in ("recursive", "dense")]:
        files = render_export(codegen.model_from_dict(planted(payload)), "joint", algorithm=algorithm)
        for name, text in files.items():
            assert re.fullmatch(r"[A-Za-z0-9_.]+", name), name
            code = strip_c_comments(text) if not name.startswith(("Makefile", "CMake")) else text
            assert "MARK" not in code and "evil" not in code and "passwd" not in code, (name, payload)
    libs = {}
    for tag, d in (("genuine", copy.deepcopy(RIGID)), ("hostile", planted(HOSTILE[0]))):
        m = codegen.model_from_dict(d)
        prefix = export_c(m, tmp_path / tag, "joint")[0].stem
        libs[tag] = CLib(compile_shared(tmp_path / tag, prefix, STRICT), prefix, m.nq, m.nv)
    q, u = random_state(m, np.random.default_rng(1))
    for t in (0.0, 0.3):
        assert np.array_equal(libs["hostile"].forward_dynamics(q, u, None, t), libs["genuine"].forward_dynamics(q, u, None, t))
