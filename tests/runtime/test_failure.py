"""The failure record of a run (codegen.runtime.integrate.Failure) and the message divergence() makes of it.

Fast tier: a stand-in system with named coordinates, no kernel."""
from types import SimpleNamespace

import numpy as np
import pytest

from codegen.algorithms.codes import Fail
from codegen.runtime.integrate import RUNAWAY, Failure, divergence

SYSTEM = SimpleNamespace(nq=2, nv=2, coord_names=["a.angle", "b.angle"], velocity_names=["a.rate", "b.rate"],
                         act_names=[], unstable_rk4_hint=lambda h, stable: f"rk4 step {h:g} too long")
TS = np.arange(5) * 0.1
X = np.array([[0.0, 0.1, 0.0, 1.0]] * 5)


def test_the_kernels_record_is_read_once_into_a_frozen_failure():
    kernel = SimpleNamespace(fail_code=Fail.STEP_COLLAPSED, fail_t=0.25, fail_index=3, fail_sample=2)
    f = Failure.of_kernel(kernel, sample=3)
    assert (f.code, f.t, f.sample, f.index, f.state, f.detail) == (Fail.STEP_COLLAPSED, 0.25, 3, 3, None, None)
    with pytest.raises(AttributeError):
        f.code = 0
    g = f.explained("the rows became dependent")
    assert (g.code, g.t, g.sample, g.index, g.detail) == (f.code, f.t, f.sample, -1, "the rows became dependent")


def test_divergence_names_the_component_the_kernel_named():
    err = divergence(SYSTEM, Failure(code=Fail.STEP_COLLAPSED, t=0.25, sample=3, index=3), X, TS, "dopri5", 1e-3)
    assert (err.t, err.sample, err.coordinate, err.last_t, err.code) == (0.25, 3, "b.rate", 0.2, Fail.STEP_COLLAPSED)
    assert "largest error in velocity b.rate" in str(err) and "loosen --rtol" in err.hint


def test_divergence_finds_the_bad_component_in_the_state_and_uses_the_familys_words():
    bad = np.array([0.0, np.inf, 0.0, np.nan])       # two non-finite: the one largest in the last good state
    f = Failure(code=Fail.NONFINITE, t=0.3, sample=3, state=bad).explained("the loop rows became dependent")
    err = divergence(SYSTEM, f, X, TS, "rk4", 0.01)
    assert err.coordinate == "b.rate" and err.reason == "the loop rows became dependent"
    assert "first bad velocity: b.rate" in str(err) and err.hint == "rk4 step 0.01 too long"


def test_a_runaway_names_the_value_that_ran_away():
    state = np.array([0.0, 40.0, 0.0, 1.0])
    err = divergence(SYSTEM, Failure(code=RUNAWAY, t=0.2, sample=2, state=state, detail="the energy ran away"), X,
                     TS, "rk4", 0.01)
    assert "runaway coordinate: b.angle = 40" in str(err) and err.code == RUNAWAY
