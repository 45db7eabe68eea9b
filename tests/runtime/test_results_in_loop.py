"""Results at the speed of the loop (issue #24): with rk4, the families whose forward dynamics starts with the
kinematics pass (recursive, mstmm, grcr; kernel.IN_LOOP_OUTPUTS) take each sample's centroids, quaternions and
energies from the next step's first stage inside the compiled loop, and the joint geometry of an animation is made
on first use (Result.extra is a LazyExtras). The numbers are those of outputs_at, bit for bit; the keys, the NPZ
and the divergence checks are unchanged. The time ratio to the bare compiled loop: benchmarks/bench_rollout.py."""
import numpy as np
import pytest

import codegen
from codegen.models import random_tree
from codegen.runtime.result import LazyExtras
from support.systems import EXAMPLES, get_system

pytestmark = pytest.mark.build          # every test here compiles or loads a kernel (tests/conftest.py)


def _same_as_outputs_at(s, res):
    X = np.hstack([res.q, res.u] + ([res.extra["act"]] if "act" in res.extra else []))
    com, quat, en = s.kernel.outputs_at(X)
    nb = len(s.body_names)
    assert np.array_equal(res.body_com, com[:, :nb]) and np.array_equal(res.body_quat, quat[:, :nb])
    assert np.array_equal(res.energy_kinetic, en[:, 0]) and np.array_equal(res.energy_potential, en[:, 1])


@pytest.mark.parametrize("algorithm, model", [
    ("recursive", lambda: random_tree(14, seed=1, forces=True)),
    ("mstmm", lambda: codegen.load_model(str(EXAMPLES / "space_robot.yaml"))),
    ("recursive", lambda: codegen.load_model(str(EXAMPLES / "five_bar.yaml"))),        # cut joints: projected
    ("grcr", lambda: codegen.load_model(str(EXAMPLES / "five_bar.yaml"))),
])
def test_in_loop_outputs_equal_outputs_at(algorithm, model):
    s = get_system(model(), algorithm)
    assert s.kernel.IN_LOOP_OUTPUTS
    res = s.simulate(0.2, 1e-3, integrator="rk4", substeps=2)
    _same_as_outputs_at(s, res)
    res = s.simulate(0.05, 1e-3, integrator="dopri5")                    # dopri5: outputs_at after the run
    _same_as_outputs_at(s, res)


def test_a_diverging_run_keeps_its_good_outputs():
    m = random_tree(14, seed=1, forces=True)
    s = get_system(m)
    q0, u0 = s.initial_state()
    res = s.simulate(5.0, 0.05, u0=u0 + 10.0, keep_partial=True)       # far too large a step: it blows up
    assert res.meta["partial"] and 2 <= len(res.t) < 101 and np.all(np.isfinite(res.body_com))
    _same_as_outputs_at(s, res)


def test_joint_geometry_is_made_on_first_use():
    calls = []
    d = LazyExtras(a=1)
    d.defer(("joint_pos", "joint_names"), lambda: calls.append(1) or {"joint_pos": 2, "joint_names": 3})
    assert "joint_pos" in d and len(d) == 3 and not calls
    d["joint_names"] = 4                                  # set since: the producer does not overwrite it
    assert d["joint_pos"] == 2 and calls == [1] and d["joint_names"] == 4
    assert dict(d.items()) == {"a": 1, "joint_pos": 2, "joint_names": 4} and calls == [1]
    d2 = LazyExtras()
    d2.defer(("x",), lambda: {"x": 5})
    assert sorted(d2) == ["x"] and d2.get("x") == 5 and d2.get("y") is None
    with pytest.raises(KeyError):
        d2["y"]
    s = get_system(random_tree(14, seed=1, forces=True))
    res = s.simulate(0.05, 1e-3)
    assert {"joint_pos", "joint_names", "joint_parent", "joint_child"} <= set(res.arrays())
    assert res.extra["joint_pos"].shape == (len(res.t), len(s.model.joints), 3)
    import pickle
    res2 = s.simulate(0.05, 1e-3)
    back = pickle.loads(pickle.dumps(res2))                # a Result crosses processes with its deferred entries
    assert np.array_equal(back.extra["joint_pos"], res2.extra["joint_pos"])
