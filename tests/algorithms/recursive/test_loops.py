"""Closed loops by cut joints (Kang & Yoon eqs 37-46) against an independent dense KKT solution.

The oracle (tests/support/kkt.py) builds the spanning tree in pinocchio straight from the model dict, adds
the cut frames as pinocchio frames and solves [[M, J^T], [J, 0]] with J, gamma from pinocchio's frame
Jacobians and accelerations; it shares nothing with our plan or templates.  Random models come from
tests/support/loops.py (planar and spatial, every cut joint type, one and several loops, coupled loops).
"""
import subprocess
import sys

import numpy as np
import pytest
import sympy as sp

import codegen
from codegen.runtime import SimulationDiverged
from codegen.runtime.families.loops import loop_outputs
from support.kkt import KKT
from support.loops import merge_loop_dicts, planar_loop_dict, spatial_loop_dict
from support.systems import EXAMPLES, get_system, rel_err

CUT_TYPES = ("revolute", "prismatic", "cylindrical", "universal", "spherical", "planar", "fixed")
REFS = ("centroid", "joint", "origin")


def _check(d, ref, tol=1e-9):
    m = codegen.model_from_dict(d)
    s = get_system(m, "recursive", ref_point=ref)
    k = KKT(d)
    q, u = m.initial_state()
    ud_ref, w_ref = k.forward(q, u)
    assert rel_err(s.forward_dynamics(q, u), ud_ref) < tol
    X = np.concatenate([q, u])[None]
    out = loop_outputs(s, X, np.zeros(1))
    assert rel_err(out["cut_joint_wrench"][0], w_ref) < tol
    assert np.max(out["constraint_violation"]) < 1e-12
    # tree joint wrenches with the constraint forces applied (the oracle: RNEA at the KKT accelerations)
    assert rel_err(s.joint_wrenches(q, u), k.tree_joint_wrenches(q, u)) < tol
    return s


@pytest.mark.build
@pytest.mark.parametrize("r, ref", list(enumerate(REFS)))
def test_planar_loops_match_kkt(r, ref):
    """Planar loops (revolute chains about z) closed by each cut type, in one model per reference point (every third
    cut type; the loops hang from ground side by side): the rows along the plane normal are dropped, the rest agree
    with the KKT solution (whose SVD drops the same directions)."""
    group = [(i, cut) for i, cut in enumerate(CUT_TYPES) if i % 3 == r]
    d = merge_loop_dicts([planar_loop_dict(10 + i, n_links=5, cut_type=cut) for i, cut in group], f"planar_{ref}")
    s = _check(d, ref)
    assert all(c.normal is not None for c in s.plan.cuts) and len(s.plan.cuts) == len(group)
    assert s.plan.nm == sum({"fixed": 3}.get(cut, 2) for _, cut in group)


SPATIAL_GROUPS = (("revolute", "prismatic"), ("cylindrical", "universal"), ("spherical", "planar", "fixed"))
ROWS = {"revolute": 5, "prismatic": 5, "cylindrical": 4, "universal": 4, "spherical": 3, "planar": 3, "fixed": 6}


@pytest.mark.build
@pytest.mark.parametrize("i, cuts", list(enumerate(SPATIAL_GROUPS)))
def test_spatial_loops_match_kkt(i, cuts):
    """Spatial trees (random joint types, inertias, placements) with one independent loop per cut type."""
    s = _check(dict(spatial_loop_dict(20 + i, cut_types=cuts, n_loops=len(cuts)), name=f"spatial_{i}"),
               REFS[(i + 1) % 3])
    assert [len(c.rows) for c in s.plan.cuts] == [ROWS[t] for t in cuts]


@pytest.mark.build
def test_coupled_loops_match_kkt():
    """Three loops sharing bodies (13 rows)."""
    _check(dict(spatial_loop_dict(3, cut_types=("revolute", "spherical", "prismatic"), coupled=True),
                name="coupled_loops"), "centroid")


@pytest.mark.build
def test_loop_on_a_floating_base():
    """A parallelogram on a free-floating base (gravity tilted): the planar loop is recognised in the base's
    frame; the run keeps the energy and the closure."""
    def rod(n):
        return {"name": n, "mass": 1.0, "com": [0.5, 0, 0], "inertia": [1e-3 / 12, 1 / 12, 1 / 12]}
    th = 0.9
    d = {"name": "floating_loop", "gravity": [0.3, -9.81, 0.2],
         "bodies": [{"name": "base", "mass": 5, "com": [0.1, 0, 0], "inertia": [0.3, 0.4, 0.5]}] + [rod(f"b{k}") for k in (1, 2, 3)],
         "joints": [{"name": "root", "type": "free", "parent": "ground", "child": "base",
                     "q0": [0.1, 0.2, 0.3, 1, 0, 0, 0], "u0": [0.1, 0.2, -0.3, 0.5, -0.2, 0.3]},
                    {"name": "j1", "type": "revolute", "parent": "base", "child": "b1", "q0": th, "u0": 0.4},
                    {"name": "j2", "type": "revolute", "parent": "b1", "child": "b2", "parent_frame": {"pos": [1, 0, 0]},
                     "q0": -th, "u0": -0.4},
                    {"name": "j3", "type": "revolute", "parent": "b2", "child": "b3", "parent_frame": {"pos": [1, 0, 0]},
                     "q0": th + np.pi, "u0": 0.4}],
         "loops": [{"name": "c", "type": "revolute", "parent": "base", "child": "b3", "parent_frame": {"pos": [1, 0, 0]},
                    "child_frame": {"pos": [1, 0, 0]}}]}
    s = _check(d, "joint")
    assert s.plan.cuts[0].normal == 2 and s.plan.nm == 2
    r = s.simulate(1.0, 1e-3)
    assert r.meta["energy"]["value"] < 1e-8 and r.meta["constraint_violation_max"]["position"] < 1e-8


@pytest.mark.build
def test_simulation_follows_the_kkt_solution():
    """A short RK4 run of spatial loops (no stabilisation) against the oracle integrated with the same RK4 steps (the
    model and kernel of test_spatial_loops_match_kkt's second group)."""
    d = dict(spatial_loop_dict(21, cut_types=SPATIAL_GROUPS[1], n_loops=2), name="spatial_1")
    m = codegen.model_from_dict(d)
    s = get_system(m, "recursive", ref_point="origin")
    k = KKT(d)
    res = s.simulate(0.2, 0.01, baumgarte=0)
    q, u = m.initial_state()
    h = 0.01
    for _ in range(20):                                           # RK4 on the oracle's accelerations
        def f(q, u):
            return k.qdot(q, u), k.forward(q, u)[0]
        k1 = f(q, u)
        k2 = f(q + h / 2 * k1[0], u + h / 2 * k1[1])                # (quaternions normalised after the step)
        k3 = f(q + h / 2 * k2[0], u + h / 2 * k2[1])
        k4 = f(q + h * k3[0], u + h * k3[1])
        q = k.normalized(q + h / 6 * (k1[0] + 2 * k2[0] + 2 * k3[0] + k4[0]))
        u = u + h / 6 * (k1[1] + 2 * k2[1] + 2 * k3[1] + k4[1])
    # RK4 leaves the constraint manifold by ~1e-10 per step; off it the two constraint formulations (d1 / d2 rows
    # here, the relative twist's log there) are different functions, so the runs part at that level
    assert rel_err(res.q[-1], q) < 1e-8 and rel_err(res.u[-1], u) < 1e-7
    assert res.meta["energy"]["value"] < 1e-6


# ---------------------------------------------------------------------------------------------- M2, M6
@pytest.mark.build
def test_five_bar_q5_is_free_fall_along_the_line_at_every_reference_point():
    """M2: bar4 slides freely on the line, q5(t) = -g sin(pi/4) t^2/2; all five coordinates reported;
    energy conserved; the three reference points agree to round-off."""
    m = codegen.load_model(str(EXAMPLES / "five_bar.yaml"))
    runs = {ref: get_system(m, "recursive", ref_point=ref).simulate(2.0, 1e-3) for ref in REFS}
    r = runs["origin"]
    assert list(r.extra["cut_q_names"]) == ["q5.disp"] and r.q.shape[1] == 4
    assert np.max(np.abs(r.extra["cut_q"][:, 0] + 9.81 * np.sin(np.pi / 4) * r.t ** 2 / 2)) < 1e-6
    assert r.meta["energy"]["value"] < 1e-6
    assert r.meta["constraint_violation_max"]["position"] < 1e-6
    for ref in ("centroid", "joint"):
        assert rel_err(runs[ref].q, r.q) < 1e-8
    assert np.abs(r.q[:, 3]).max() > 1.0                           # the run moves (q4 slides)


@pytest.mark.build
@pytest.mark.parametrize("ref", ["joint", "origin"])
def test_projection_keeps_the_five_bar_on_the_manifold(ref):
    """projection=True: positions back to 1e-12 and velocities to round-off after every step (Baumgarte off);
    q5 and the energy as without it."""
    m = codegen.load_model(str(EXAMPLES / "five_bar.yaml"))
    r = get_system(m, "recursive", ref_point=ref).simulate(2.0, 1e-3, projection=True)
    cv = r.meta["constraint_violation_max"]
    assert cv["position"] < 1e-11 and cv["velocity"] < 1e-13 and r.meta["baumgarte"] == 0
    assert np.max(np.abs(r.extra["cut_q"][:, 0] + 9.81 * np.sin(np.pi / 4) * r.t ** 2 / 2)) < 1e-6
    assert r.meta["energy"]["value"] < 1e-6


@pytest.mark.build
def test_quarter_car_rises_and_settles_as_the_spec_says():
    """M6: 6 rows, 2 degrees of freedom; the pre-tensioned strut lifts the wheel about 81 mm, it settles about
    69 mm above the design height; three reference points agree; energy balance with the damper's work."""
    m = codegen.load_model(str(EXAMPLES / "quarter_car.yaml"))
    runs = {ref: get_system(m, "recursive", ref_point=ref).simulate(2.0, 1e-3) for ref in REFS}
    r = runs["origin"]
    w = list(r.body_names).index("wheel")
    z = r.body_com[:, w, 2] - 0.15
    assert 0.078 < z.max() < 0.084 and 0.066 < z[-1] < 0.072
    assert r.meta["energy"]["value"] < 1e-4
    for ref in ("centroid", "joint"):
        assert rel_err(runs[ref].q, r.q) < 1e-9
    assert r.extra["cut_joint_wrench"].shape == (len(r.t), 2, 6)
    q, u = m.initial_state()
    d = codegen.load_model(str(EXAMPLES / "quarter_car.yaml")).to_dict()
    d["forces"] = [{"name": "strut", "type": "point_spring_damper", "body_a": "ground", "point_a": [0, 0.45, 0.60],
                    "body_b": "LCA", "point_b": [0, 0.25, -0.0125], "stiffness": 25000, "damping": 1500,
                    "length": 0.55}]
    d["joints"][[j["name"] for j in d["joints"]].index("hub")]["u0"] = [10.0]
    ud_ref, w_ref = KKT(d).forward(q, u)
    s = get_system(m, "recursive", ref_point="origin")
    assert rel_err(s.forward_dynamics(q, u), ud_ref) < 1e-9


# ---------------------------------------------------------------------------------------------- bad input
def _five_bar_dict():
    return codegen.load_model(str(EXAMPLES / "five_bar.yaml")).to_dict()


@pytest.mark.build
def test_cut_that_does_not_close_is_refused_naming_it():
    d = _five_bar_dict()
    d["loops"][0]["parent_frame"]["pos"][1] += 0.01
    with pytest.raises(codegen.ModelError, match=r"loops\[q5\].*does not close.*0\.00707"):
        codegen.build(codegen.model_from_dict(d))


@pytest.mark.build
def test_velocities_that_break_the_loop_are_refused():
    d = _five_bar_dict()
    d["joints"][0]["u0"] = [1.0]
    with pytest.raises(codegen.ModelError, match=r"loops\[q5\].*moves apart.*u0"):
        codegen.build(codegen.model_from_dict(d))


@pytest.mark.build
def test_redundant_cut_stops_the_run_naming_the_cuts(tmp_path):
    """A second, identical cut: the rows are dependent; the run stops with a message naming the cut joints and
    the CLI writes no result (exit 3)."""
    d = _five_bar_dict()
    d["loops"].append(dict(d["loops"][0], name="q5_again"))
    m = codegen.model_from_dict(d)
    s = codegen.build(m)
    with pytest.raises(SimulationDiverged, match=r"t = 0 .*dependent.*q5, q5_again"):
        s.simulate(0.1, 0.01)
    import yaml
    path = tmp_path / "redundant.yaml"
    path.write_text(yaml.safe_dump(d))
    out = tmp_path / "r.npz"
    p = subprocess.run([sys.executable, "-m", "codegen.cli", "simulate", str(path), "--out", str(out), "--quiet"],
                       capture_output=True, text=True)
    assert p.returncode == 3 and "q5_again" in p.stderr and not out.exists()


@pytest.mark.parametrize("change, field, message", [
    (lambda d: d["loops"][0].update(type="free"), "loops[q5].type", "free joint closes nothing"),
    (lambda d: d["loops"][0].update(child="nobody"), "loops[q5].child", "not a body"),
    (lambda d: d["loops"][0].update(parent="bar4"), "loops[q5].child", "two different bodies"),
    (lambda d: d["loops"][0].update(q0=[0.0]), "loops[0]", "unknown keys"),
    (lambda d: d["loops"][0].update(name="q1"), "loops[0].name", "duplicate name"),
    (lambda d: d["loops"][0].update(type="planar", axis=[0, 0, 1]), "loops[q5]", "constrains nothing"),
])
def test_bad_loops_name_file_and_field(change, field, message):
    d = _five_bar_dict()
    change(d)
    with pytest.raises(codegen.ModelError) as e:
        codegen.build(codegen.model_from_dict(d, source="five.yaml"))
    assert f"five.yaml: {field}" in str(e.value) and message in str(e.value)


def test_tree_algorithms_refuse_loops():
    m = codegen.load_model(str(EXAMPLES / "five_bar.yaml"))
    for alg in ("dense", "mstmm", "cfa"):
        with pytest.raises(codegen.BuildError, match="cut joints.*q5.*recursive"):
            codegen.build(m, alg)


# ---------------------------------------------------------------------------------------------- symbolic
def test_tables_3_jacobians_reproduced():
    """Kang & Yoon Table 3 (instant global origin): d1: Phi_Zi = [0, -a_j^T a_i~], Phi_Zj = [0, -a_i^T a_j~];
    d2: [-a_i^T, a_i^T p_i~ - p_ij^T a_i~], [a_i^T, -a_i^T p_j~]; s: [-I, p_i~], [I, -p_j~];
    ss: [-2 p_ij^T, 2 p_ij^T p_i~], [2 p_ij^T, -2 p_ij^T p_j~]."""
    from codegen.symbolic.loops import derive
    from codegen.symbolic.joints import skew
    v = lambda n: sp.Matrix(sp.symbols(f"{n}0:3"))                              # noqa: E731
    ai, aj, pi, pj = v("ai"), v("aj"), v("pi"), v("pj")
    pij = pj - pi
    Z = sp.zeros(1, 3)
    expect = {"d1": (Z.row_join(-aj.T * skew(ai)), Z.row_join(-ai.T * skew(aj))),
              "d2": ((-ai.T).row_join(ai.T * skew(pi) - pij.T * skew(ai)), ai.T.row_join(-ai.T * skew(pj))),
              "s": ((-sp.eye(3)).row_join(skew(pi)), sp.eye(3).row_join(-skew(pj))),
              "ss": ((-2 * pij.T).row_join(2 * pij.T * skew(pi)), (2 * pij.T).row_join(-2 * pij.T * skew(pj)))}
    for kind, (Ei, Ej) in expect.items():
        Ji, Jj, _, _ = derive(kind, "origin")
        assert sp.simplify(Ji - Ei) == sp.zeros(*Ei.shape), kind
        assert sp.simplify(Jj - Ej) == sp.zeros(*Ej.shape), kind


@pytest.mark.parametrize("ref", REFS)
def test_gamma_is_the_second_derivative(ref):
    """Phi'' = J_i Ydot_i + J_j Ydot_j - gamma along a random motion of two rigid bodies (finite differences)."""
    from codegen.symbolic.loops import derive
    from scipy.spatial.transform import Rotation
    rng = np.random.default_rng(1)
    body = [dict(R0=Rotation.random(random_state=k).as_matrix(), w=rng.normal(size=3), wd=rng.normal(size=3),
                 c0=rng.normal(size=3), v=rng.normal(size=3), a=rng.normal(size=3), s=rng.normal(size=3),
                 e=rng.normal(size=3), P=rng.normal(size=3)) for k in (3, 4)]

    def world(b, t):         # body point p, body vector a, reference point P (body-fixed or origin) at time t
        R = Rotation.from_rotvec(b["w"] * t + b["wd"] * t ** 2 / 2).as_matrix() @ b["R0"]   # omega(0) = w, omega'(0) = wd
        c = b["c0"] + b["v"] * t + b["a"] * t ** 2 / 2
        p = c + R @ b["R0"].T @ b["s"]
        P = np.zeros(3) if ref == "origin" else c + R @ b["R0"].T @ b["P"]
        return p, R @ b["R0"].T @ b["e"], P

    for kind in ("d1", "d2", "s", "ss"):
        Ji, Jj, g, phi = derive(kind, ref)
        h = 1e-4
        vals = []
        for t in (-h, 0.0, h):
            pi_, ai_, _ = world(body[0], t)
            pj_, aj_, _ = world(body[1], t)
            subs = {**dict(zip(sp.symbols("pi0:3"), pi_)), **dict(zip(sp.symbols("pj0:3"), pj_)),
                    **dict(zip(sp.symbols("ai0:3"), ai_)), **dict(zip(sp.symbols("aj0:3"), aj_))}
            vals.append(np.array(sp.Matrix(phi if isinstance(phi, sp.MatrixBase) else [phi]).subs(subs), float))
        fd = (vals[0] - 2 * vals[1] + vals[2]) / h ** 2
        subs = {}
        Yd = []
        for tag, b in zip("ij", body):
            p, a, P = world(b, 0.0)
            w, wd = b["w"], b["wd"]
            r, rP = p - b["c0"], P - b["c0"]
            vp = b["v"] + np.cross(w, r)                                     # rigid-body kinematics at t = 0
            ap = b["a"] + np.cross(wd, r) + np.cross(w, np.cross(w, r))
            Pd = np.zeros(3) if ref == "origin" else b["v"] + np.cross(w, rP)
            yv = ap - np.cross(wd, p - P) - np.cross(w, vp - Pd)             # Ydot_v of the body point at P
            Yd += list(yv) + list(wd)
            for n, x in (("w", w), ("p", p), ("vp", vp), ("a", a), ("P", P), ("Pd", Pd)):
                subs.update(zip(sp.symbols(f"{n}{tag}0:3"), x))
        J = np.array(Ji.row_join(Jj).subs(subs), float)
        gam = np.array(g.subs(subs), float).ravel()
        assert np.allclose(J @ np.array(Yd) - gam, fd.ravel(), rtol=1e-5, atol=1e-5), kind


@pytest.mark.build
@pytest.mark.parametrize("script, args", [("five_bar_figures.py", ["--t-end", "0.2"]),
                                          ("quarter_car_figures.py", ["--t-end", "0.2"])])
def test_loop_figure_scripts(tmp_path, script, args):
    """The example scripts of M2 and M6 on a short horizon: figures and a summary written."""
    r = subprocess.run([sys.executable, str(EXAMPLES / script), *args, "--out", str(tmp_path)], capture_output=True,
                       text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    assert len(list(tmp_path.glob("*.png"))) >= 2 and (tmp_path / "summary.txt").exists()


@pytest.mark.build
def test_cli_bad_loop_input_exits_2(tmp_path):
    """The command line: a cut that does not close, and --projection on a tree model: exit 2, the file and field
    (or the option) named, nothing written."""
    import yaml
    d = _five_bar_dict()
    d["loops"][0]["parent_frame"]["pos"][1] += 0.01
    bad = tmp_path / "open_loop.yaml"
    bad.write_text(yaml.safe_dump(d))
    out = tmp_path / "r.npz"
    for args in (["simulate", str(bad)], ["check", str(bad)],
                 ["simulate", str(EXAMPLES / "balance_pendulum.yaml"), "--projection"]):
        p = subprocess.run([sys.executable, "-m", "codegen.cli", *args, "--out", str(out), "--quiet"][:len(args) + 3]
                           if args[0] == "simulate" else [sys.executable, "-m", "codegen.cli", *args],
                           capture_output=True, text=True)
        assert p.returncode == 2, (args, p.stderr)
        assert ("open_loop.yaml: loops[q5]" in p.stderr) if "open_loop" in args[1] else ("--projection" in p.stderr)
        assert "Traceback" not in p.stderr and not out.exists()
