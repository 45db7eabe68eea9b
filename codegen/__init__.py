"""mbgen: symbolic-to-Cython code generation for O(n) multibody dynamics.

    import codegen
    model = codegen.load_model("examples/balance_pendulum.yaml")
    system = codegen.build(model, algorithm="recursive", ref_point="origin")
    result = system.simulate(t_end=2.0, dt=1e-3, integrator="rk4")
    result.save("results/balance.npz")

Layers (imports point one way): model <- symbolic <- algorithms <- build <- runtime <- cli.
"""
from ._version import __version__  # noqa: E402,F401

import sys as _sys

from .algorithms import FAMILIES as ALGORITHMS  # noqa: E402
from .compiler import BuildError  # noqa: E402
from .model import Body, Joint, JointForce, JointSpringDamper, Model, ModelError, Placement, \
    PointSpringDamper, TimeFunction, load_model, model_from_dict  # noqa: E402
from .model import library as models  # noqa: E402
from .runtime import Result, SimulationDiverged, System, build, load_result  # noqa: E402
from .runtime.sweep import load_sweep, sweep  # noqa: E402

_sys.modules[__name__ + ".models"] = models      # `codegen.models` (the model library) as before

__all__ = ["ALGORITHMS", "Body", "BuildError", "Joint", "JointForce", "JointSpringDamper", "Model", "ModelError",
           "Placement", "PointSpringDamper", "Result", "SimulationDiverged", "System", "TimeFunction", "build",
           "load_model", "load_result", "load_sweep", "model_from_dict", "models", "sweep"]
