"""What an algorithm family registers: its name, paper, template, options and the models it takes.

A family lives in its own folder ``codegen/algorithms/<name>/``: its plan (model topology -> template
variables and the numeric parameter vector), its numpy reference for the tests, and a ``FAMILY``
registration; its template is ``templates/<name>/<name>.pyx.j2``.  ``codegen.algorithms`` lists them.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Dict, Tuple


# MuJoCo's velocity-implicit single steps (the engine's implicit_steps; codegen.algorithms.codes.Integrator) and the
# stiff, error-controlled rosenbrock (ROS2 with the exact Jacobian), which every rigid-tree family's modules take
# (implicit and rosenbrock: with their derivative kernels)
MUJOCO_STEPS = ("euler", "implicitfast", "implicit", "rosenbrock")


class BuildError(RuntimeError):
    """A model this algorithm cannot build, a bad option, or a failed compilation."""


@dataclass(frozen=True)
class Family:
    """The registration of one algorithm family: its paper, template, options, joint types and integrators."""

    name: str
    paper: str                       # seed reference and the equations implemented
    description: str
    template: str                    # path under templates/
    models: str                      # "tree" (rigid-body trees) or "beams" (flexible planar beams)
    make_plan: Callable              # model -> plan: .params() -> parameter vector, .roadmap() -> rows
    template_vars: Callable          # (plan, options) -> variables of the template
    joint_types: Tuple[str, ...]     # joint (or beam connection) types it accepts
    options: Dict[str, Tuple[str, ...]] = field(default_factory=dict)   # name -> allowed, first the default
    option_help: Dict[str, str] = field(default_factory=dict)           # name -> help (the CLI's --name)
    run_options: Dict[str, Tuple[str, str]] = field(default_factory=dict)   # run-time options (not in the
    #                                  kernel): name -> (metavar, help); System takes them, the CLI as --name
    integrators: Tuple[str, ...] = ("rk4", "dopri5") + MUJOCO_STEPS
    kernel_class: str = "System"     # the cdef class of the generated module
    check: Callable = None           # model -> None or raise BuildError (limits of the method)
    loops: bool = False              # takes closed loops (cut joints, the model's `loops:` section)
    couplings: bool = False          # takes couplings (the model's `couplings:` section: joint-space rows)
    armature: Tuple[str, ...] = ()   # joint types whose armature (rotor inertia) it models
    runtime: str = "tree"            # its run-time class's kind (codegen.runtime.system.System.KINDS)
    cflags: Tuple[str, ...] = ()     # C compiler flags of its modules beyond the build's own (each dropped if the
                                     # compiler refuses it: codegen.compiler.toolchain.accepted_flags)

    def resolve_options(self, **options) -> dict:
        """The family's options with their defaults filled in; BuildError for an unknown option or value."""
        out = {}
        unknown = sorted(k for k, v in options.items() if k not in self.options and v is not None)
        if unknown:
            raise BuildError(f"algorithm '{self.name}' takes no option(s) {', '.join(unknown)}"
                             + (f" (options: {', '.join(self.options)})" if self.options else ""))
        for name, allowed in self.options.items():
            v = options.get(name)
            v = allowed[0] if v is None else v
            if v not in allowed:
                raise BuildError(f"option {name}='{v}' not one of {', '.join(allowed)}")
            out[name] = v
        return out
