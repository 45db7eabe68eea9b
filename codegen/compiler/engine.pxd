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
    # ---------------------------------------------------------------- the velocity-implicit steps (init_steps)
    cdef int* qv                    # NQ: the velocity that moves each coordinate (-1: inside a unit quaternion)
    cdef int nquat                  # unit quaternions in q
    cdef int* quat                  # their offsets in q, then the offsets of their body rates in u
    cdef double* smat               # M, D, S (NV x NV each), then a, b (NV each): the steps' matrices (lazily)
    cdef int* piv                   # NV: the LU solve's row exchanges
    cdef int nfree                  # standalone free bodies (a free joint on the ground, nothing below it)
    cdef int* vq                    # NV: the coordinate each velocity moves (-1: a quaternion's rate), error scales
    cdef int nt                     # tangent state (dq, du, dact): 2 nv + activations
    cdef double* rmat               # rosenbrock: J, W (nt x nt), F0, F1, K1, K2, D (nt each), x2, x1, xd (nx each)
    cdef int* rpiv                  # nt: its LU's row exchanges
    cdef int* freev                 # their first velocities (implicitfast solves their 6 x 6 blocks apart)

    cdef int init_engine(self, int nq, int nv, int nx, int nout, int pipelined) except -1
    cdef int init_steps(self, const int* qv, int nquat, const int* quat, const int* quatv, int nfree,
                        const int* freev) except -1

    # ---------------------------------------------------------------- the model's methods (its module overrides)
    cdef void rhs(self, double t, const double* x, double* xd) noexcept nogil
    cdef void normalize(self, double* x) noexcept nogil
    cdef void project(self, double* x, double t) noexcept nogil
    cdef int rk4_pipe(self, double t, double* x, double h, int nsteps) noexcept nogil
    cdef void sample_outputs(self, const double* x, double* out, int from_kin) noexcept nogil
    cdef int step_matrices(self, double t, const double* x, const double* xd, int method, double* M,
                           double* D, double* S) noexcept nogil
    cdef int implicit_rate(self, double t, const double* x, double h, int method, double* xd, double* D,
                           double* S) noexcept nogil
    cdef void advance_act(self, double* x, const double* xd, double h) noexcept nogil
    cdef int step_prepare(self, int method) except -1
    cdef int tangent_jacobian(self, double t, const double* x, double* J) noexcept nogil

    # ---------------------------------------------------------------- the engine's
    cdef bint finite_state(self, const double* x, int n) noexcept nogil
    cdef void clear_failure(self) noexcept nogil
    cdef void normalize_quat(self, double* x, int o) noexcept nogil
    cdef int rk4(self, double t, double* x, double h, int nsteps) noexcept nogil
    cdef int step_end(self, double* t, const double* x, double h) noexcept nogil
    cdef void integrate_pos(self, double* q, const double* v, double h) noexcept nogil
    cdef int implicit_steps(self, double t, double* x, double h, int nsteps, int method) noexcept nogil
    cdef int steps_ready(self, int method) except -1
    cdef void tangent_rate(self, const double* x, const double* xd, double* F) noexcept nogil
    cdef void retract(self, const double* x0, const double* d, double* x) noexcept nogil
    cdef int ros_fail(self, int code, double t, int iout) noexcept nogil
    cdef int rosenbrock(self, double* t, double* x, double* h, int nout, const double* ts, double* xout,
                        double rtol, double atol, double hmax, long* stats) noexcept nogil
    cdef int poll_signals(self) noexcept nogil
    cdef int hook_error_flag(self) noexcept nogil
    cdef int dopri5_fail(self, int code, double t, int iout, const double* bad, const double* x, double hh,
                         double rtol, double atol) noexcept nogil
    cdef int dopri5(self, double* t, double* x, double* h, double tout, int nout, const double* ts,
                    double* xout, double rtol, double atol, double hmax, long* stats, double* wout) noexcept nogil


# ---------------------------------------------------------------- rigid trees: what a kinematics pass leaves
ctypedef struct TreeKin:            # world frame; a body's reference frame: origin r (its joint point), axes A
    const double* A                 # NB x 9   rotation body -> world (row major)
    const double* r                 # NB x 3   origin
    const double* w                 # NB x 3   angular velocity
    const double* vr                # NB x 3   velocity of the origin
    const double* Hw                # NB x 36  joint columns [linear at r; angular] (6 x nvj, column major)
    const double* ib                # NB x 10  inertia numbers, body axes: m, m rho, I about r (upper: xx xy xz yy yz zz)
    const double* arm               # NV       armature of every velocity (added to the mass matrix's diagonal)


cdef class TreeEngine(Engine):
    """The kinematic quantities of a rigid tree (frames, Jacobians, centre of mass, centroidal momentum), computed
    once for every model from what its kinematics pass leaves (TreeKin) and its topology (init_tree)."""
    cdef int nb                     # bodies, topological order (parents first)
    cdef int* parent                # NB: parent body (-1: ground)
    cdef int* iv                    # NB: first velocity of the body's joint
    cdef int* nvj                   # NB: velocities of the body's joint
    cdef int* hcols                 # NB: 1: Hw holds the joint's columns; 0: a ball with rates in the child's axes,
                                    #     columns [0; A_j] (codegen.symbolic.body_kernels.body_axes_ball)
    cdef int* hcarry                # NB x 6: per column, the columns whose rotation carries it (a bit mask;
                                    #     codegen.symbolic.joints.column_carriers): the rates of the columns
    cdef int* scarry                # NB x 6: the same as spatial motions (column_carriers(spatial=True))
    cdef int nf                     # frames (set_frames)
    cdef int* fbody                 # NF: the body a frame is fixed on (-1: ground)
    cdef double* fX                 # NF x 12: its rotation (9, row major) and origin (3) in that body's frame
    cdef double* kw                 # workspace: body accelerations (6 NB), subtree sums (13 NB), their rates (12 NB)
    cdef double* zu                 # NV zeros (a state at rest)
    cdef double* kwv                # workspace: per velocity k, W_k (6 nv), then B_k (6 nv): the derivatives' bases

    cdef int init_tree(self, int nb, const int* parent, const int* iv, const int* nvj, const int* hcols,
                       const int* jt, const int* kcarry) except -1
    # the model's (its module overrides): run the kinematics of (q, u) and point k at the results; the world
    # angular and (classical) linear acceleration of every body's origin at (q, u, ud), NB x 6; 0 on success
    cdef int tree_kin(self, const double* q, const double* u, TreeKin* k) noexcept nogil
    cdef int tree_acc(self, const double* q, const double* u, const double* ud, double* acc) noexcept nogil
    # the engine's (engine_kinematics.pxi)
    cdef void frame_world(self, const TreeKin* k, int f, double* R, double* p) noexcept nogil
    cdef void point_motion(self, const TreeKin* k, const double* acc, int b, const double* x, double* w,
                           double* v, double* al, double* a) noexcept nogil
    cdef void point_jacobian(self, const TreeKin* k, int b, const double* x, int ref, const double* R,
                             double* J) noexcept nogil
    cdef void column_dot(self, const TreeKin* k, const double* u, int j, int c, const double* hv, const double* hw,
                          double* hvd, double* hwd) noexcept nogil
    cdef void point_jacobian_dot(self, const TreeKin* k, const double* u, int b, const double* x, const double* xd,
                                 int ref, const double* R, const double* wf, double* Jd) noexcept nogil
    cdef void velocity_bases(self, const TreeKin* k, const double* u) noexcept nogil
    cdef void acceleration_bases(self, const TreeKin* k, const double* u, const double* ud) noexcept nogil
    cdef void body_acceleration(self, const TreeKin* k, int b, double* A) noexcept nogil
    cdef void column_derivatives(self, const TreeKin* k, const double* u, int j, int c, const double* V,
                                 const double* A, double* S, double* Dv, double* D, double* E) noexcept nogil
    cdef double subtree_sums(self, const TreeKin* k, bint inertia=*) noexcept nogil
    cdef void subtree_rates(self, const TreeKin* k) noexcept nogil
    cdef void totals(self, double* out) noexcept nogil
    cdef void momentum_matrix(self, const TreeKin* k, const double* G, double* AG, int ld, int rows) noexcept nogil
    cdef void tree_crba(self, const TreeKin* k, double* Mq) noexcept nogil
    cdef void free_gyro(self, const TreeKin* k, const double* u, int b, double* D) noexcept nogil
    cdef void momentum_matrix_dot(self, const TreeKin* k, const double* u, const double* G, const double* Gd,
                                  double* AGd) noexcept nogil
    cdef void momentum(self, const TreeKin* k, const double* acc, const double* G, double* h,
                       double* hd) noexcept nogil
    cdef int kin_prepare(self, object q, object u, object ud, TreeKin* k) except -1
    cdef object zeros_v(self)
    cdef int frame_point(self, const TreeKin* k, int f, object point, double* R, double* x) except -1
    cdef int kin_check(self) except -1
    cdef int frame_index(self, int f) except -1
