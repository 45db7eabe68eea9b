"""General coupled loops (GCL, Critchley & Anderson Sect. 5): planar loops restructured so that a window of three
adjacent dependents closes an open loop (codegen.algorithms.grcr.gcl), and runs that restructure instead of
re-selecting (``switching="gcl"``).

Independent references: the dense KKT oracle of the *source* model (tests/support/kkt.py, pinocchio from the
model dict), the cut-joint method on the source model file, and M2's analytical q5(t).
"""
import subprocess
import sys

import numpy as np
import pytest

import codegen
from codegen.algorithms.grcr import gcl
from codegen.model import ModelError
from codegen.model.core import model_dict
from codegen.runtime.families.grcr import CoupledLoopRun
from support.kkt import KKT
from support.loops import planar_loop_dict
from support.systems import EXAMPLES, ROOT, get_system, rel_err

pytestmark = pytest.mark.build          # every test here compiles or loads a kernel (tests/conftest.py)

FIVE_BAR = str(EXAMPLES / "five_bar.yaml")


def _windows_against_kkt(m, x, tol=1e-9, starts=None):
    """Every window start a of the model's loop (or those of `starts`): the restructured model's accelerations of
    the real coordinates against the KKT oracle of the source model at the source state x; returns the starts
    tried (each is a build of its own)."""
    s = get_system(m, "grcr")
    run = CoupledLoopRun(s)
    nq = m.nq                                             # the source tree's coordinates (KKT's order)
    ud_ref, _ = KKT(model_dict(m)).forward(x[:nq], x[s.nq:s.nq + nq])
    cut = s.plan.loop_names[0]
    tried = []
    n = len(run.loops[cut]["joints"])
    for a in (range(n - 2) if starts is None else [a % (n - 2) for a in starts]):
        if run.health(x, (a,))[0] < 1e-3:                # singular at x: not buildable here
            continue
        st = run.struct((a,), x)
        r = st.system
        xs = run.to_struct(st, x, 0.0)
        assert r.kernel.closure_errors(xs[:r.nq], xs[r.nq:]).max() < 1e-12
        names = run.window_names(cut, a)
        fict = [n for n in r.dependents if gcl.TAG in n]
        assert sorted(set(r.dependents) - set(fict)) == sorted(names) and len(fict) == (4 if 0 < a < n - 3 else 0)
        for i, c in enumerate(s.coord_names):             # the real coordinates map one to one, by name
            assert abs(xs[r.coord_names.index(c)] - x[i]) < 1e-12
        ud = r.forward_dynamics(xs[:r.nq], xs[r.nq:])
        got = np.array([ud[r.velocity_names.index(v)] for v in s.velocity_names[:nq]])
        assert rel_err(got, ud_ref) < tol, a
        if 0 < a < n - 3:                                 # fictitious planar joint: loop A never degrades
            assert r.kernel.health(xs[:r.nq])[0] > 0.1 and len(r.plan.loop_names) == 2 and r.plan.hangs
        tried.append(a)
    return tried


@pytest.fixture(scope="module")
def five_bar():
    m = codegen.load_model(FIVE_BAR)
    r = get_system(m, "recursive", ref_point="origin").simulate(2.0, 1e-3, substeps=4, projection=True)
    return m, r


def test_five_bar_restructured_models_match_kkt(five_bar):
    """M2 at three states of the cut-joint run: the reversed loop (window q1, q2, q3) and the coupled loops of a
    fictitious planar joint (window q2, q3, q4) give the source model's accelerations."""
    m, r = five_bar
    s = get_system(m, "grcr")
    tried = set()
    for k in (0, 500, 1400):
        x = np.concatenate([r.q[k], r.extra["cut_q"][k], r.u[k], [0.0]])
        s.kernel.project_state(x)                          # the cut speed from the tree's
        tried |= set(_windows_against_kkt(m, x))
    assert tried == {0, 1}                                 # q3, q4, q5 (a = 2) is singular everywhere


@pytest.mark.parametrize("seed, nprism", [(12, 2)])      # all-revolute loops: the five-bar tests above
def test_random_planar_loops_restructured_match_kkt(seed, nprism):
    d = dict(planar_loop_dict(seed, n_links=6, cut_type="revolute", n_prismatic=nprism, to_ground=True),
             name=f"gcl_planar_{seed}")
    m = codegen.model_from_dict(d)
    s = get_system(m, "grcr")
    x = np.concatenate(s.initial_state())
    rng = np.random.default_rng(seed)
    x[s.nq:] += rng.normal(size=s.nv)
    s.kernel.project_state(x)
    # the first window, one inside the loop (a fictitious planar joint) and the last: every kind of window, three
    # builds (the others are more of the middle kind)
    tried = _windows_against_kkt(m, x, starts=(0, 1, -1))
    assert len(tried) == 3 and tried[:2] == [0, 1] and tried[2] > 1


def test_five_bar_gcl_run_agrees_with_the_cut_joint_method(five_bar):
    """M2 over 0..2 s restructuring (GCL) instead of re-selecting: every output time within 1e-8 of the cut-joint
    method (both RK4 at h = 2.5e-4), q5 = -g sin(pi/4) t^2 / 2, the loop closed to round-off. The run starts on
    the reversed loop (q1, q2, q3), leaves it before bars 1 and 2 align (t = 1.0482 s) for the coupled loops of
    window q2, q3, q4, and leaves that before bar 2 is normal to the slide line (t = 1.1654 s)."""
    m, r = five_bar
    s = get_system(m, "grcr")
    res = s.simulate(2.0, 1e-3, substeps=4, switching="gcl")
    assert np.abs(res.q[:, :4] - r.q).max() < 1e-8 and np.abs(res.u[:, :4] - r.u).max() < 1e-8
    assert np.abs(res.q[:, 4] - r.extra["cut_q"][:, 0]).max() < 1e-8
    assert np.abs(res.q[:, 4] + 9.81 * np.sin(np.pi / 4) * res.t ** 2 / 2).max() < 1e-9
    t_sw, old, new = (res.extra[f"partition_switch_{k}"] for k in ("t", "old", "new"))
    assert res.meta["switching"] == "gcl" and res.meta["partition_switches"] == len(t_sw) >= 2
    assert list(old[:2]) == ["q1,q2,q3", "q2,q3,q4"] and list(new[:2]) == ["q2,q3,q4", "q1,q2,q3"]
    assert 1.0 < t_sw[0] < 1.0482 < t_sw[1] < 1.1654
    assert res.meta["constraint_violation_max"]["position"] < 1e-12
    assert res.meta["energy"]["value"] < 1e-8
    acs = s.simulate(2.0, 1e-3, substeps=4)                  # ACS on the same steps: the same motion
    assert np.abs(res.q - acs.q).max() < 1e-8


def test_gcl_refuses_what_it_cannot_restructure(tmp_path):
    from support.grcr_models import chain_loops_dict
    d = dict(chain_loops_dict(5, loops=((None, 7),), floating=False), name="grcr_spatial1")   # test_grcr's kernel
    s = get_system(codegen.model_from_dict(d), "grcr")
    with pytest.raises(ModelError, match=r"loops\[.*planar"):
        s.simulate(0.01, 1e-3, switching="gcl")
    lad = get_system(codegen.models.ladder(3), "grcr")      # (test_grcr's kernel)
    with pytest.raises(ModelError, match="share no joints"):
        lad.simulate(0.01, 1e-3, switching="gcl")
    with pytest.raises(ValueError, match="switching"):
        get_system(codegen.load_model(FIVE_BAR), "recursive", ref_point="origin").simulate(0.01, 1e-3,
                                                                                           switching="gcl")
    out = tmp_path / "x.npz"
    for extra, msg in (([], "--switching applies to --algorithm grcr"),
                       (["--algorithm", "grcr", "--integrator", "dopri5"], "switching 'gcl' runs rk4")):
        p = subprocess.run([sys.executable, "-m", "codegen.cli", "simulate", FIVE_BAR, "--switching", "gcl",
                            "--out", str(out), "--quiet"] + extra, capture_output=True, text=True, cwd=ROOT)
        assert p.returncode == 2 and msg in p.stderr, p.stderr
        assert not out.exists()


def test_cli_gcl_run_prints_the_restructurings(tmp_path):
    out = tmp_path / "fb.npz"
    p = subprocess.run([sys.executable, "-m", "codegen.cli", "simulate", FIVE_BAR, "--algorithm", "grcr",
                        "--switching", "gcl", "--t-end", "1.2", "--out", str(out), "--quiet"],
                       capture_output=True, text=True, cwd=ROOT)
    assert p.returncode == 0, p.stderr
    assert "restructuring(s) (gcl)" in p.stdout and "dependents q1,q2,q3 -> q2,q3,q4" in p.stdout
    res = codegen.load_result(str(out))
    assert list(res.extra["partition_switch_new"][:1]) == ["q2,q3,q4"]
