"""mbgen: symbolic-to-Cython code generation for O(n) multibody dynamics.

    import codegen
    model = codegen.load_model("examples/balance_pendulum.yaml")
    system = codegen.build(model, algorithm="recursive", ref_point="origin")
    result = system.simulate(t_end=2.0, dt=1e-3, integrator="rk4")
    result.save("results/balance.npz")
"""
__version__ = "0.1.0"

from . import models  # noqa: E402
from .build import ALGORITHMS, BuildError  # noqa: E402
from .model import Body, Joint, JointForce, JointSpringDamper, Model, ModelError, Placement, \
    PointSpringDamper, TimeFunction, load_model, model_from_dict  # noqa: E402
from .system import Result, System, build, load_result  # noqa: E402

__all__ = ["ALGORITHMS", "Body", "BuildError", "Joint", "JointForce", "JointSpringDamper", "Model", "ModelError",
           "Placement", "PointSpringDamper", "Result", "System", "TimeFunction", "build", "load_model",
           "load_result", "model_from_dict", "models"]
