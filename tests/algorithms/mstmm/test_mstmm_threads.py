"""rk4 of the mstmm family on two threads (System.simulate(threads=2), templates/mstmm/pipeline.pyx.j2): the second
thread makes each stage's kinematics and the bodies' own terms a few bodies behind the backward recursion.  The
suite builds at -Og, where gcc fuses no multiply-adds, so the two-thread run must give bitwise the serial run's
states, outputs and work, including where it stops (divergence) and across samples (the pipeline restarts at
every sample).  Models it does not handle are refused by name."""
import numpy as np
import pytest

import codegen
from codegen.models import JOINT_MIX, branch_system, random_state, random_tree
from support.systems import get_system

pytestmark = pytest.mark.build          # every test here compiles or loads a kernel (tests/conftest.py)


def _runs(system, q, u, **kw):
    """The same run with threads = 1 and 2."""
    return [system.simulate(q0=q, u0=u, threads=n, **kw) for n in (1, 2)]


@pytest.mark.parametrize("which", ["m5", "mixed"])
def test_two_threads_give_the_serial_states_bitwise(which):
    """M5 (ball joints, a junction of two subchains) and a free-based tree of every joint type with free joints
    deeper in it (several quaternions, junctions whose children are far apart in body order)."""
    m = branch_system(21) if which == "m5" else \
        random_tree(14, seed=7, types=JOINT_MIX + ("free", "revolute", "spherical"), floating=True)
    s = get_system(m, "mstmm")
    assert s.kernel.STEP_THREADS == 2
    q, u = random_state(m, np.random.default_rng(3))
    one, two = _runs(s, q, u, t_end=0.05, dt=0.01, substeps=5)
    assert np.array_equal(one.q, two.q) and np.array_equal(one.u, two.u)
    assert np.isfinite(two.q).all() and np.abs(two.q[-1] - two.q[0]).max() > 1e-3    # it moved
    for key in ("body_com", "body_quat", "energy_kinetic", "energy_potential"):
        assert np.array_equal(getattr(one, key), getattr(two, key)), key
    assert two.meta["threads"] == 2 and s.kernel.step_threads == 1          # reset after the run


def test_two_threads_stop_where_the_serial_run_stops():
    """A step far too long for the spin: both runs diverge at the same sample with the same last good state."""
    m = branch_system(21)
    s = get_system(m, "mstmm")
    q, u = random_state(m, np.random.default_rng(5))
    one, two = _runs(s, q, 400.0 * u, t_end=2.0, dt=0.05, substeps=2, keep_partial=True)
    assert one.meta["partial"] and two.meta["partial"]
    assert one.meta["diverged_at"] == two.meta["diverged_at"]
    assert len(one.t) == len(two.t) and np.array_equal(one.q, two.q)


def test_threads_are_refused_where_they_do_not_apply():
    m = branch_system(21)
    with pytest.raises(ValueError, match="only rk4 of algorithm mstmm"):
        get_system(m, "mstmm").simulate(0.01, 0.01, integrator="dopri5", threads=2)
    with pytest.raises(ValueError, match="algorithm recursive"):
        get_system(m, ref_point="origin").simulate(0.01, 0.01, threads=2)
    with pytest.raises(ValueError, match="positive integer"):
        get_system(m, "mstmm").simulate(0.01, 0.01, threads=0)
    pts = random_tree(24, seed=3, types=("revolute", "spherical"), forces=True)     # point springs
    s = get_system(pts, "mstmm")
    assert s.kernel.STEP_THREADS == 1
    with pytest.raises(ValueError, match="point-to-point forces"):
        s.simulate(0.01, 0.01, threads=2)


def test_cli_threads(tmp_path, capsys):
    """mbgen simulate --threads 2 writes the serial run's results; with dopri5: exit 2, no traceback."""
    from codegen.cli import main
    out1, out2 = tmp_path / "a.npz", tmp_path / "b.npz"
    args = ["simulate", "branch:21", "--algorithm", "mstmm", "--t-end", "0.02", "--quiet"]
    assert main(args + ["--out", str(out1)]) == 0
    assert main(args + ["--out", str(out2), "--threads", "2"]) == 0
    a, b = codegen.load_result(out1), codegen.load_result(out2)
    assert np.array_equal(a.q, b.q) and b.meta["threads"] == 2
    assert main(args + ["--out", str(out1), "--threads", "2", "--integrator", "dopri5"]) == 2
    assert "only rk4 of algorithm mstmm" in capsys.readouterr().err
