# The run-time engine compiled once per installation (codegen/compiler/engine.pyx): what every generated module
# shares. A model's module subclasses Engine (cdef class System(Engine), cdef class Kernel(Engine)) and overrides
# the model's methods below; the engine's integrators reach the model through them alone (Cython's virtual table:
# one table of function pointers per model class). Changing this file changes every module's binary interface:
# it is part of every build key (codegen.compiler.key).

cdef class Engine:
    # ---------------------------------------------------------------- the model's sizes (init_engine)
    cdef int nq                     # generalized coordinates
    cdef int nv                     # generalized velocities
    cdef int nx                     # state x = (q, u, act): nq + nv + activations
    cdef int nout                   # in-loop outputs per sample (0: the model has none)
    cdef int pipelined              # the model's rk4 may run on two threads (rk4_pipe)
    cdef double* ktmp               # integrator stages, 16 nx + 16
    cdef double* oprev              # run_rk4: where the next step's first stage writes the last sample's outputs
    # ---------------------------------------------------------------- the force hook
    cdef int has_hook
    cdef public object hook_error   # the hook's exception (a run stops at it)
    # ---------------------------------------------------------------- divergence watch
    cdef public int fail_code       # codegen.algorithms.codes.Fail: FAIL_NONE, FAIL_NONFINITE, FAIL_STEP_COLLAPSED, ...
    cdef public double fail_t       # time of the failure (rk4, hht: end of the step that produced it)
    cdef public long fail_sample    # index, within the call, of the first sample that could not be written
    cdef public long fail_index     # dopri5: state component that failed (-1: see the state itself)
    cdef public object signal_exc   # the exception of a signal's Python handler met during a run (raised after it)
    cdef public double pnc          # power of the non-conservative forces at the last rhs (the model's; beams: 0)
    cdef public double wnc          # their work, integrated by rk4 and dopri5 with the run's own steps
    cdef int nsig                   # steps since signals were last polled
    # ---------------------------------------------------------------- run switches the model's methods read
    cdef public int project_on      # closed loops: project the state onto the constraints after each step
    cdef public int step_threads    # 2: rk4 on two threads (pipelined models), else serial

    cdef int init_engine(self, int nq, int nv, int nx, int nout, int pipelined) except -1

    # ---------------------------------------------------------------- the model's methods (its module overrides)
    cdef void rhs(self, double t, const double* x, double* xd) noexcept nogil
    cdef void normalize(self, double* x) noexcept nogil
    cdef void project(self, double* x, double t) noexcept nogil
    cdef int rk4_pipe(self, double t, double* x, double h, int nsteps) noexcept nogil
    cdef void sample_outputs(self, const double* x, double* out, int from_kin) noexcept nogil

    # ---------------------------------------------------------------- the engine's
    cdef bint finite_state(self, const double* x, int n) noexcept nogil
    cdef void clear_failure(self) noexcept nogil
    cdef void normalize_quat(self, double* x, int o) noexcept nogil
    cdef int rk4(self, double t, double* x, double h, int nsteps) noexcept nogil
    cdef int step_end(self, double* t, const double* x, double h) noexcept nogil
    cdef int poll_signals(self) noexcept nogil
    cdef int hook_error_flag(self) noexcept nogil
    cdef int dopri5_fail(self, int code, double t, int iout, const double* bad, const double* x, double hh,
                         double rtol, double atol) noexcept nogil
    cdef int dopri5(self, double* t, double* x, double* h, double tout, int nout, const double* ts,
                    double* xout, double rtol, double atol, double hmax, long* stats, double* wout) noexcept nogil
