"""Generalized recursive coordinate reduction (family grcr, Critchley & Anderson, seed 003).

Independent references: the dense KKT oracle (tests/support/kkt.py: pinocchio's tree from the model dict, the
cut frames' Jacobians and accelerations), the cut-joint method of the recursive family on the same model file,
and M2's analytical q5(t).  Random models: tests/support/grcr_models.py (loops as chains from their base, one
and several loops, nested loops, a floating base, off-loop bodies on any joint type) and planar loops of
tests/support/loops.py.
"""
import subprocess
import sys

import numpy as np
import pytest

import codegen
from codegen.model import ModelError
from support.grcr_models import chain_loops_dict
from support.kkt import KKT
from support.loops import planar_loop_dict
from support.systems import EXAMPLES, ROOT, get_system, rel_err

FIVE_BAR = str(EXAMPLES / "five_bar.yaml")


def _state(s, d):
    """The grcr state (tree coordinates, then the cut coordinates solved for) of the dict's initial state."""
    q, u = s.initial_state()
    k = KKT(d)
    q0, u0 = k.initial_state()
    nq, nv = len(q0), len(u0)
    assert np.allclose(q[:nq], q0) and np.allclose(u[:nv], u0)
    return q, u, nq, nv, k


def _partitions(s, rng, n=3):
    """'auto' and up to n random valid dependent sets (the cut's coordinate plus random ones, healthy at q0)."""
    from codegen.runtime.families.grcr import chain_coords
    q, _ = s.initial_state()
    out = ["auto"]
    entries = chain_coords(s)
    for _ in range(40):
        picks = []
        for L, ch in enumerate(s.plan.chains):
            names = [e[1] for e in entries if e[0] == L]
            picks += [names[-1]] + list(rng.choice(names[:-1], size=s.ranks[L] - 1, replace=False))
        try:
            s.set_dependents(picks)
        except ModelError:
            continue
        if s.kernel.health(q).min() > 1e-3:
            out.append(picks)
        if len(out) > n:
            break
    return out


def _check_kkt(d, rng, tol=1e-9):
    m = codegen.model_from_dict(d)
    s = get_system(m, "grcr")
    q, u, nq, nv, k = _state(s, d)
    ud_ref, _ = k.forward(q[:nq], u[:nv])
    parts = _partitions(s, rng)
    assert len(parts) >= 2
    for deps in parts:
        s.set_dependents(deps)
        ud = s.forward_dynamics(q, u)
        assert rel_err(ud[:nv], ud_ref) < tol, deps
    s.set_dependents("auto")
    return s


@pytest.mark.build
@pytest.mark.parametrize("seed, cut, nprism", [(1, "revolute", 0), (2, "prismatic", 2)])
def test_planar_loops_match_kkt_for_every_partition(seed, cut, nprism, rng):
    """Planar loops (rank 3: the out-of-plane rows vanish by themselves in the projectors of eqs 30, 36)."""
    d = dict(planar_loop_dict(seed, n_links=6, cut_type=cut, n_prismatic=nprism, to_ground=True),
             name=f"grcr_planar_{cut}")
    s = _check_kkt(d, rng)          # (the cut-joint method of the recursive family: M2 and the coupled ladder below)
    assert s.ranks == [3]


@pytest.mark.build
@pytest.mark.parametrize("seed, name, loops, floating", [
    (5, "spatial1", ((None, 7),), False),                    # one spatial loop, rank 6, mobility 2
    (6, "nested", ((None, 7), (0, 7)), False),               # a loop based on a moving body of another
    (7, "floating", ((None, 6), (None, 4)), True),           # two loops on a free-floating base
    (8, "coupled", ((None, 8), (("hang", 0, 2), 6)), False),  # two loops sharing two joints (Sect. 5)
])
def test_spatial_loops_match_kkt_for_every_partition(seed, name, loops, floating, rng):
    """Spatial loops (rank 6); loops whose base moves: the loop loads its base with the forces of all its bodies
    (through the first joint and the cut)."""
    d = dict(chain_loops_dict(seed, loops=loops, floating=floating), name=f"grcr_{name}")
    s = _check_kkt(d, rng)                                   # each against KKT
    if name == "coupled":
        assert s.plan.prefixes[1] and s.plan.hangs
    assert all(r in (3, 5, 6) for r in s.ranks)


@pytest.mark.build
def test_region_independents_are_solved_jointly(rng):
    """ACS (eqs 65-102): independents between the dependents (n_I > 0) give the same accelerations as dependents
    at the tip (n_I = 0)."""
    d = dict(planar_loop_dict(3, n_links=7, cut_type="revolute", to_ground=True), name="grcr_acs")
    m = codegen.model_from_dict(d)
    s = get_system(m, "grcr")
    q, u, nq, nv, k = _state(s, d)
    ud_ref, _ = k.forward(q[:nq], u[:nv])
    names = [f"j{i}" for i in range(7)] + ["cut"]
    done = 0
    for deps in (["j1", "j3", "cut"], ["j0", "j2", "cut"], ["j5", "j6", "cut"], ["j0", "j6", "cut"]):
        s.set_dependents(deps)
        if s.kernel.health(q).min() < 1e-3:
            continue
        assert rel_err(s.forward_dynamics(q, u)[:nv], ud_ref) < 1e-9, deps
        done += 1
    assert done >= 3 and names


# ---------------------------------------------------------------------------------------------- M2
@pytest.fixture(scope="module")
def five_bar():
    m = codegen.load_model(FIVE_BAR)
    r = get_system(m, "recursive", ref_point="origin").simulate(2.0, 1e-3, substeps=4, projection=True)
    return m, r


@pytest.mark.build
@pytest.mark.parametrize("deps", ["auto", "q2,q3,q5"])
def test_five_bar_agrees_with_the_cut_joint_method_through_every_switch(five_bar, deps):
    """M2 over 0..2 s (the seed's Fig. 7): every output time within 1e-8 of the cut-joint method (both RK4 at
    h = 2.5e-4), through every partition switch; q5 = -g sin(pi/4) t^2 / 2; the seed's dependents (q2, q3, q5)
    are singular at t = 0 exactly, so the run switches there first."""
    m, r = five_bar
    s = get_system(m, "grcr", dependents=deps)
    res = s.simulate(2.0, 1e-3, substeps=4)
    assert list(res.coord_names) == ["q1.angle", "q2.angle", "q3.angle", "q4.disp", "q5.disp"]
    assert np.abs(res.q[:, :4] - r.q).max() < 1e-8 and np.abs(res.u[:, :4] - r.u).max() < 1e-8
    assert np.abs(res.q[:, 4] - r.extra["cut_q"][:, 0]).max() < 1e-8
    assert np.abs(res.q[:, 4] + 9.81 * np.sin(np.pi / 4) * res.t ** 2 / 2).max() < 1e-8
    t_sw = res.extra["partition_switch_t"]
    assert res.meta["partition_switches"] == len(t_sw) >= 3
    if deps != "auto":
        assert t_sw[0] == 0.0 and res.extra["partition_switch_old"][0] == "q2,q3,q5"
    assert res.meta["constraint_violation_max"]["position"] < 1e-12
    assert res.meta["energy"]["value"] < 1e-8


@pytest.mark.build
def test_five_bar_without_switching_fails_where_the_seed_says(five_bar):
    """The seed's partition held fixed meets its singularity: at t = 0 its pivot s^T R s / s^T s is zero (bar2
    normal to the slide line), so the monitor is what carries the run."""
    m, _ = five_bar
    s = get_system(m, "grcr", dependents="q2,q3,q5")
    q, _ = s.initial_state()
    assert s.kernel.health(q)[0] < 1e-12
    s.set_dependents("q1,q3,q5")
    assert s.kernel.health(q)[0] > 0.1


@pytest.mark.build
@pytest.mark.parametrize("deps, what", [
    ("q3,q4,q5", "structurally singular: the columns of q4 and q5 are parallel"),
    ("q1,q4,q5", "structurally singular: the columns of q4 and q5 are parallel"),
    ("q1,q2,q3", "always dependent"),
    ("q2,q5", "give 3 dependent coordinates"),
    ("q2,q9,q5", "'q9' is not a coordinate of a loop"),
    ("q2,q2,q5", "'q2' is given twice"),
    ("q2,q2.angle,q5", "'q2.angle' is given twice (q2)"),
])
def test_bad_dependents_are_refused_naming_the_field(five_bar, deps, what):
    m, _ = five_bar
    s = get_system(m, "grcr")
    with pytest.raises(ModelError, match="dependents") as e:
        s.set_dependents(deps)
    assert what in str(e.value)


def test_cli_refuses_a_name_given_twice_before_building(tmp_path, monkeypatch, capsys):
    from codegen.cli import main
    monkeypatch.setenv("MBGEN_CACHE_DIR", str(tmp_path / "cache"))
    assert main(["simulate", FIVE_BAR, "--algorithm", "grcr", "--dependents", "q1,q1,q1", "--out",
                 str(tmp_path / "r.npz")]) == 2
    assert "--dependents: q1 given twice" in capsys.readouterr().err
    assert not any((tmp_path / "cache").glob("*/*.so")) and not (tmp_path / "r.npz").exists()   # nothing built


@pytest.mark.build
def test_cli_refuses_a_singular_choice_and_writes_nothing(tmp_path):
    out = tmp_path / "fb.npz"
    p = subprocess.run([sys.executable, "-m", "codegen.cli", "simulate", FIVE_BAR, "--algorithm", "grcr",
                        "--dependents", "q3,q4,q5", "--out", str(out), "--quiet"], capture_output=True, text=True,
                       cwd=ROOT)
    assert p.returncode == 2 and "structurally singular" in p.stderr and "five_bar.yaml" in p.stderr
    assert not out.exists()
    p = subprocess.run([sys.executable, "-m", "codegen.cli", "simulate", FIVE_BAR, "--algorithm", "grcr",
                        "--dependents", "q2,q3,q5", "--t-end", "0.6", "--out", str(out), "--quiet"],
                       capture_output=True, text=True, cwd=ROOT)
    assert p.returncode == 0, p.stderr
    assert "switch:  t = 0 s, loop q5: dependents q2,q3,q5 -> q1,q3,q5" in p.stdout
    res = codegen.load_result(str(out))
    assert list(res.extra["partition_switch_new"][:1]) == ["q1,q3,q5"]
    p = subprocess.run([sys.executable, "-m", "codegen.cli", "simulate", FIVE_BAR, "--dependents", "auto",
                        "--out", str(out), "--quiet"], capture_output=True, text=True, cwd=ROOT)
    assert p.returncode == 2 and "--dependents applies to --algorithm grcr" in p.stderr


def test_models_outside_the_method_are_refused_naming_the_field():
    from support.loops import spatial_loop_dict
    d = spatial_loop_dict(21, cut_types=("spherical",))
    with pytest.raises(ModelError, match=r"loops\[cut0\]"):
        codegen.build(codegen.model_from_dict(d), "grcr")
    tree = codegen.models.chain(3)
    with pytest.raises(codegen.BuildError, match="no `loops:` section"):
        codegen.build(tree, "grcr")


@pytest.mark.build
def test_ladder_coupled_loops_match_the_cut_joint_method_and_kkt(rng):
    """codegen.models.ladder(3): three loops, each sharing a rung's two joints with the next (GRCR Sect. 5): at a
    random consistent state the accelerations agree with the KKT oracle and the cut-joint method; a 1 s run
    through its partition switches agrees with the cut-joint run (projection) to 1e-9 and keeps the energy."""
    from codegen.model.core import model_dict
    m = codegen.models.ladder(3)
    s = get_system(m, "grcr")
    assert [bool(p) for p in s.plan.prefixes] == [False, True, True] and s.ranks == [3, 3, 3]
    r = get_system(m, "recursive", ref_point="origin")
    x = np.concatenate(s.initial_state())
    from codegen.runtime.families.grcr import chain_coords
    free = [iq for c, (_, _, iq) in enumerate(chain_coords(s)) if not s.kernel.dependents()[c]]
    x[free] += rng.uniform(-0.1, 0.1, len(free))
    x[[s.nq + i for i in free]] = rng.normal(size=len(free))
    s.kernel.project_state(x)
    assert s.kernel.closure_errors(x[:s.nq], x[s.nq:]).max() < 1e-12
    nq = m.nq
    q, u = x[:nq], x[s.nq:s.nq + nq]
    ud = s.forward_dynamics(x[:s.nq], x[s.nq:])[:nq]
    assert rel_err(ud, r.forward_dynamics(q, u)) < 1e-9
    d = model_dict(m)
    assert rel_err(ud, KKT(d).forward(q, u)[0]) < 1e-9
    a = s.simulate(1.0, 1e-3, substeps=2)
    b = r.simulate(1.0, 1e-3, substeps=2, projection=True)
    assert np.abs(a.q[:, :nq] - b.q).max() < 1e-9 and a.meta["energy"]["value"] < 1e-9
    assert np.abs(a.q[:, :nq] - a.q[0, :nq]).max() > 0.1                   # it moves


@pytest.mark.build
def test_coupled_loops_whose_own_joints_cannot_close_are_refused():
    """Rungs on the rail hinges (three bodies on one pin): a loop's own joints sit on two points only and span
    two of its three constraints; grcr refuses it naming the loop, rather than solve the wrong equations."""
    from codegen.model.core import model_dict
    d = model_dict(codegen.models.ladder(2))
    for j in d["joints"]:                      # move the rung joints to the rail hinges
        if j["name"].startswith("rung"):
            side = "parent_frame" if j["parent"].startswith(("L", "R")) else "child_frame"
            j[side] = dict(j[side], pos=[-0.5, 0.0, 0.0])
    with pytest.raises(ModelError, match=r"loops\[cut2\].*span only 2"):
        codegen.build(codegen.model_from_dict(dict(d, name="ladder_on_pins")), "grcr")
