"""Time functions of joint forces evaluated inside the compiled kernels against closed forms.

The generalized force the kernel applies at time t is M(q) (a(t) - a_free), with a_free the acceleration
of the same state without the forces; it must equal offset + A sin(2 pi f t + phase), the step and the
linear table interpolation written out here (a slightly wrong 2 pi or a shifted table would show).
"""
import math

import numpy as np
import pytest

import codegen

from support.systems import get_system

SINE = {"amplitude": 1.7, "frequency": 2.3, "phase": 0.4, "offset": -0.3}
STEP = {"t0": 0.75, "before": 0.5, "after": -1.25}
TABLE = {"t": [0.0, 0.5, 1.5, 3.0], "value": [0.0, 2.0, -1.0, 0.5]}


def model(forces=True):
    d = {"name": "forced", "gravity": [0, -9.81, 0],
         "bodies": [{"name": "a", "mass": 1.3, "com": [0.4, 0, 0], "inertia": [0.06, 0.2, 0.25]},
                    {"name": "b", "mass": 0.7, "com": [0.3, 0.1, 0], "inertia": [0.03, 0.1, 0.12]}],
         "joints": [{"name": "j1", "type": "revolute", "parent": "ground", "child": "a", "axis": [0, 0, 1]},
                    {"name": "j2", "type": "cylindrical", "parent": "a", "child": "b", "axis": [1, 0, 0],
                     "parent_frame": {"pos": [0.8, 0, 0]}}],
         "forces": [{"name": "fs", "type": "joint_force", "joint": "j1", "value": {"sine": SINE}},
                    {"name": "fp", "type": "joint_force", "joint": "j2", "dof": 0, "value": {"step": STEP}},
                    {"name": "ft", "type": "joint_force", "joint": "j2", "dof": 1, "value": {"table": TABLE}}]}
    if not forces:                      # same kinds (the topology), all values zero
        d["forces"][0]["value"] = {"sine": dict(SINE, amplitude=0.0, offset=0.0)}
        d["forces"][1]["value"] = {"step": dict(STEP, before=0.0, after=0.0)}
        d["forces"][2]["value"] = {"table": dict(TABLE, value=[0.0] * len(TABLE["t"]))}
    return codegen.model_from_dict(d)


def expected(t):
    sine = SINE["offset"] + SINE["amplitude"] * math.sin(2 * math.pi * SINE["frequency"] * t + SINE["phase"])
    step = STEP["before"] if t < STEP["t0"] else STEP["after"]
    table = float(np.interp(t, TABLE["t"], TABLE["value"]))
    return np.array([sine, step, table])


@pytest.mark.build
def test_joint_force_functions_in_the_kernel():
    """M (a - a0) is the closed form of each function at six times. (Every family evaluates them in the same
    generated code, templates/shared/forces.pyx.j2; dense and recursive agree on random_tree(14, seed=1,
    forces=True)'s sine, step and table forces at random times in test_recursive.py.)"""
    forced = get_system(model(True))
    q, u = np.array([0.3, -0.2, 0.1]), np.array([0.5, -1.0, 0.2])
    M = forced.mass_matrix(q)
    for t in (0.0, 0.37, 0.75, 1.2, 2.9, 4.0):
        a = forced.forward_dynamics(q, u, None, t)
        forced.update_model(model(False))
        a0 = forced.forward_dynamics(q, u, None, t)
        forced.update_model(model(True))
        np.testing.assert_allclose(M @ (a - a0), expected(t), rtol=1e-11, atol=1e-11)


def test_closed_forms_can_fail():
    assert abs(expected(0.37)[0] - (SINE["offset"] + SINE["amplitude"] *
                                    math.sin(6.283 * SINE["frequency"] * 0.37 + SINE["phase"]))) > 1e-5
