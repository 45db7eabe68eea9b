# Generated from codegen/algorithms/codes.py by `python -m codegen.compiler.engine_build` -- do not edit.

cpdef enum Fail:                # codegen.algorithms.codes.Fail
    FAIL_NONE = 0
    FAIL_NONFINITE = 1
    FAIL_STEP_COLLAPSED = 2
    FAIL_REJECTED = 3
    FAIL_NOT_PD = 4
    FAIL_RUNAWAY = 5
    FAIL_DEPENDENT_ROWS = 6
    FAIL_DEGRADED = 7
    FAIL_INTERRUPTED = 8
    FAIL_SINGULAR = 9
cpdef enum Switching:                # codegen.algorithms.codes.Switching
    SWITCH_OFF = 0
    SWITCH_ACS = 1
    SWITCH_GCL = 2
cpdef enum Poll:                # codegen.algorithms.codes.Poll
    POLL_EVERY = 4096
cpdef enum Step:                # codegen.algorithms.codes.Step
    STEP_OK = 0
    STEP_STOP = -1
    STEP_FAILED = -2
cpdef enum Integrator:                # codegen.algorithms.codes.Integrator
    INT_RK4 = 0
    INT_EULER = 1
    INT_IMPLICITFAST = 2
    INT_IMPLICIT = 3
cpdef enum Reference:                # codegen.algorithms.codes.Reference
    REF_LOCAL = 0
    REF_WORLD = 1
    REF_LOCAL_WORLD_ALIGNED = 2

