"""Status codes and modes shared by the generated kernels and the runtime, defined once here.

The templates get
them as named C enums (templates/shared/codes.pyx.j2, rendered into every module), the runtime reads these."""
from __future__ import annotations

from enum import IntEnum


class Fail(IntEnum):
    """A kernel's fail_code: what stopped a compiled run (0: nothing)."""

    NONE = 0
    NONFINITE = 1             # the state (or the state derivative) became NaN or inf
    STEP_COLLAPSED = 2        # dopri5: the step size fell below 1e-14 max(1, |t|)
    REJECTED = 3              # dopri5: 100 steps in a row rejected
    NOT_PD = 4                # hht: the iteration matrix is not positive definite
    RUNAWAY = 5               # not a kernel code: a finite state whose energy ran away (found after the run)
    DEPENDENT_ROWS = 6        # cut joints: the loop-closure constraints became dependent
    DEGRADED = 7              # grcr, switching GCL: no well-conditioned structure, the run must restructure
    INTERRUPTED = 8           # a signal (Ctrl-C, SIGTERM) stopped the run: its exception is raised by the driver
    SINGULAR = 9              # euler, implicitfast, implicit: the step's matrix M - h D could not be factored


FAIL_REASONS = {Fail.NONFINITE: "the state became non-finite (NaN or inf)",
                Fail.STEP_COLLAPSED: "the step size collapsed below 1e-14 max(1, |t|)",
                Fail.REJECTED: "100 steps in a row were rejected",
                Fail.NOT_PD: "the HHT iteration matrix is not positive definite",
                Fail.RUNAWAY: "the energy ran away",
                Fail.DEPENDENT_ROWS: "the loop-closure constraints became dependent",
                Fail.DEGRADED: "no loop structure (GCL) with well-conditioned dependents was found",
                Fail.INTERRUPTED: "interrupted by a signal",
                Fail.SINGULAR: "the implicit step's matrix M - h dF/du is singular (or, symmetric, not positive "
                               "definite)"}


class Switching(IntEnum):
    """grcr: what a run does when a loop's partition degrades."""

    OFF = 0                   # nothing (a projection that must not switch)
    ACS = 1                   # re-select the loop's dependents (Sect. 4)
    GCL = 2                   # stop with Fail.DEGRADED so that the runtime restructures the loop (Sect. 5)


class Step(IntEnum):
    """What a compiled integrator's advance (rk4, dopri5) returns to its driver."""

    OK = 0                    # advanced to the end
    STOP = -1                 # stopped on request: the force hook raised or a signal arrived (the driver raises it)
    FAILED = -2               # dopri5 failed: fail_code, fail_t, fail_sample and fail_index say where and why


class Integrator(IntEnum):
    """The fixed-step integrators of the engine's run_steps (MuJoCo's mjtIntegrator names and meaning)."""

    RK4 = 0                   # classic Runge-Kutta 4 (the engine's rk4)
    EULER = 1                 # MuJoCo's Euler: semi-implicit, the joint dampers implicit
    IMPLICITFAST = 2          # MuJoCo's implicitfast: velocity-implicit in the force elements' partials
    IMPLICIT = 3              # MuJoCo's implicit: also the bias (Coriolis, centrifugal) forces' partials


class Poll(IntEnum):
    """How often a compiled run looks for a pending signal (Ctrl-C, SIGTERM): every EVERY steps (~1-20 ms)."""

    EVERY = 4096


class Reference(IntEnum):
    """Where a frame's 6-vectors (velocity, acceleration, Jacobian rows) are taken and in which axes."""

    LOCAL = 0                 # the frame's own axes, at its origin
    WORLD = 1                 # world axes, at the world origin (spatial vectors)
    LOCAL_WORLD_ALIGNED = 2   # world axes, at the frame's origin


TEMPLATE_ENUMS = {"FAIL": Fail, "SWITCH": Switching, "POLL": Poll, "STEP": Step, "INT": Integrator}  # C names: FAIL_NONFINITE, STEP_OK, ...

ENGINE_ENUMS = {**TEMPLATE_ENUMS, "REF": Reference}     # the engine's: REF_LOCAL, ... (engine_kinematics.pxi)

__all__ = ["ENGINE_ENUMS", "FAIL_REASONS", "Fail", "Integrator", "Poll", "Reference", "Step", "Switching", "TEMPLATE_ENUMS"]
