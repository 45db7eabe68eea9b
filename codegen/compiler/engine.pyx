# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
# cython: initializedcheck=False, nonecheck=False, infer_types=False
"""The run-time engine: compiled once per installation, shared by every generated module.

Every model's module subclasses Engine (codegen/compiler/engine.pxd) and overrides the model's methods: rhs
(the state derivative), normalize (unit quaternions, activation ranges), project (closed loops), rk4_pipe
(two-thread rk4) and sample_outputs (in-loop outputs). The integrators below reach the model through those
alone, with the model's sizes (nq, nv, nx, nout) as numbers, not compile-time constants.

Roadmap: divergence watch (finite_state, clear_failure) -> integrators (rk4 and its step_end, dopri5 and
dopri5_fail; MuJoCo's velocity-implicit single steps euler, implicitfast, implicit: implicit_steps with the
model's step_matrices, integrate_pos, the small dense solves) -> signals and the force hook (poll_signals,
hook_error_flag, raise_pending) -> checked drivers (run_steps, run_rk4, run_dopri5: the Python API of a run).
"""
from libc.math cimport sqrt, fabs, sin, cos
from libc.stdlib cimport calloc, free
from libc.string cimport memcpy, memset
import numpy as np

include "engine_codes.pxi"

cdef extern from "Python.h":
    int PyErr_CheckSignals() except -1
    int PyObject_GetBuffer(object obj, Py_buffer* view, int flags) except -1
    void PyBuffer_Release(Py_buffer* view)
    enum: PyBUF_C_CONTIGUOUS, PyBUF_FORMAT, PyBUF_WRITABLE

cdef extern from "numpy/arrayobject.h":          # the few C-API names the argument helpers use
    ctypedef Py_ssize_t npy_intp
    ctypedef struct PyArrayObject
    enum: NPY_DOUBLE
    int _import_array() except -1
    bint PyArray_CheckExact(object op)
    int PyArray_TYPE(PyArrayObject* arr)
    bint PyArray_IS_C_CONTIGUOUS(PyArrayObject* arr)
    bint PyArray_ISWRITEABLE(PyArrayObject* arr)
    npy_intp PyArray_SIZE(PyArrayObject* arr)
    int PyArray_NDIM(PyArrayObject* arr)
    npy_intp* PyArray_DIMS(PyArrayObject* arr)
    void* PyArray_DATA(PyArrayObject* arr)
    object PyArray_EMPTY(int nd, npy_intp* dims, int typenum, int fortran)

_import_array()


# ---------------------------------------------------------------- arguments of the Python API
cdef inline bint is_f64(object a, Py_ssize_t n) noexcept:
    """a is a C-contiguous float64 ndarray of n values (a type, flag and size check in C)."""
    return (PyArray_CheckExact(a) and PyArray_TYPE(<PyArrayObject*> a) == NPY_DOUBLE
            and PyArray_IS_C_CONTIGUOUS(<PyArrayObject*> a) and PyArray_SIZE(<PyArrayObject*> a) == n)


cdef object arg_f64(object a, Py_ssize_t n, str name):
    """a itself if it is a C-contiguous float64 array of n values, else a converted copy (ValueError naming it)."""
    if is_f64(a, n):
        return a
    try:
        b = np.ascontiguousarray(a, dtype=np.float64)
    except (TypeError, ValueError) as e:
        raise ValueError(f"{name}: expected {n} float64 values ({e})") from None
    if b.size != n:
        raise ValueError(f"{name}: expected {n} values, got an array of shape {b.shape}")
    return b


cdef inline double* f64_ptr(object a) noexcept:
    return <double*> PyArray_DATA(<PyArrayObject*> a)


cdef object new_f64(Py_ssize_t rows, Py_ssize_t cols):
    """A new float64 array, rows x cols (cols 0: a vector of rows values), uninitialised."""
    cdef npy_intp dims[2]
    dims[0], dims[1] = rows, cols
    return PyArray_EMPTY(2 if cols else 1, dims, NPY_DOUBLE, 0)


cdef object out_f64(object out, Py_ssize_t rows, Py_ssize_t cols, str name):
    """out itself (a writable C-contiguous float64 array of that shape) or, for None, a new one."""
    if out is None:
        return new_f64(rows, cols)
    if (is_f64(out, rows * (cols or 1)) and PyArray_ISWRITEABLE(<PyArrayObject*> out)
            and PyArray_NDIM(<PyArrayObject*> out) == (2 if cols else 1)
            and PyArray_DIMS(<PyArrayObject*> out)[0] == rows):
        return out
    cdef object shape = (rows, cols)
    if not cols:
        shape = (rows,)
    raise ValueError(f"{name}: expected a writable C-contiguous float64 array of shape {shape}, got {type(out).__name__} {getattr(out, 'shape', '')} "
                     f"{getattr(out, 'dtype', '')}")


cdef extern from *:
    """
    #ifndef MB_ENGINE_SOURCE
    #define MB_ENGINE_SOURCE "unknown"
    #endif
    """
    const char* MB_ENGINE_SOURCE

SOURCE = MB_ENGINE_SOURCE.decode()      # the hash of the engine's source it was built from (engine_source.py)


cdef double* acquire(object a, Py_buffer* v, Py_ssize_t n, str name, bint writable=False) except NULL:
    """Data pointer of a C-contiguous float64 buffer of n values. Release with PyBuffer_Release(v)."""
    PyObject_GetBuffer(a, v, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT | (PyBUF_WRITABLE if writable else 0))
    if v.itemsize != 8 or v.format == NULL or v.format[0] != b'd' or v.len != n * 8:
        PyBuffer_Release(v)
        raise ValueError(f"{name}: expected {n} float64 values in a C-contiguous array")
    return <double*> v.buf


# ---------------------------------------------------------------- small dense solves (the implicit steps)
cdef int cholesky_solve(int n, double* A, double* b) noexcept nogil:
    """b <- A^-1 b for a symmetric positive definite A (n x n, row major) given by its lower triangle: A = L L^T in
    place (L in the lower triangle). Returns 1 when A is not positive definite."""
    cdef int i, j, k
    cdef double s, f
    for j in range(n):
        s = A[j * n + j]
        for k in range(j):
            s -= A[j * n + k] * A[j * n + k]
        if not s > 0.0:
            return 1
        s = sqrt(s)
        A[j * n + j] = s
        for i in range(j + 1, n):
            f = A[i * n + j]
            for k in range(j):
                f -= A[i * n + k] * A[j * n + k]
            A[i * n + j] = f / s
    for i in range(n):                      # L y = b
        s = b[i]
        for k in range(i):
            s -= A[i * n + k] * b[k]
        b[i] = s / A[i * n + i]
    for i in range(n - 1, -1, -1):          # L^T x = y
        s = b[i]
        for k in range(i + 1, n):
            s -= A[k * n + i] * b[k]
        b[i] = s / A[i * n + i]
    return 0


cdef int lu_factor(int n, double* A, int* piv) noexcept nogil:
    """A = P L U in place by Gaussian elimination with partial pivoting (A n x n, row major; piv: the row exchanged
    with each row). Returns 1 when a pivot is zero (A singular)."""
    cdef int i, j, k, p
    cdef double m, big, t
    for k in range(n):
        p, big = k, fabs(A[k * n + k])
        for i in range(k + 1, n):
            if fabs(A[i * n + k]) > big:
                p, big = i, fabs(A[i * n + k])
        if not big > 0.0:
            return 1
        piv[k] = p
        if p != k:
            for j in range(n):
                t = A[k * n + j]; A[k * n + j] = A[p * n + j]; A[p * n + j] = t
        for i in range(k + 1, n):
            m = A[i * n + k] / A[k * n + k]
            A[i * n + k] = m
            if m != 0.0:
                for j in range(k + 1, n):
                    A[i * n + j] -= m * A[k * n + j]
    return 0


cdef void lu_apply(int n, const double* A, const int* piv, double* b) noexcept nogil:
    """b <- A^-1 b with the factors of lu_factor."""
    cdef int i, j, k
    cdef double t
    for k in range(n):                      # P^T b (the rows were exchanged whole: LAPACK's getrs)
        if piv[k] != k:
            t = b[k]; b[k] = b[piv[k]]; b[piv[k]] = t
    for k in range(n):                      # L y = P^T b
        for i in range(k + 1, n):
            b[i] -= A[i * n + k] * b[k]
    for i in range(n - 1, -1, -1):          # U x = y
        t = b[i]
        for j in range(i + 1, n):
            t -= A[i * n + j] * b[j]
        b[i] = t / A[i * n + i]


cdef int lu_solve(int n, double* A, int* piv, double* b) noexcept nogil:
    """b <- A^-1 b (A overwritten by its LU factors). Returns 1 when A is singular."""
    if lu_factor(n, A, piv):
        return 1
    lu_apply(n, A, piv, b)
    return 0


# the fixed-step integrators by name (codegen.algorithms.codes.Integrator), for the run drivers and rollouts
STEP_METHODS = {"rk4": INT_RK4, "euler": INT_EULER, "implicitfast": INT_IMPLICITFAST, "implicit": INT_IMPLICIT}


def f64(a, n=None):
    """a as a C-contiguous float64 array (of shape n, if given)."""
    out = np.ascontiguousarray(a, dtype=np.float64)
    return out if n is None else out.reshape(n)


cdef class Engine:
    """What every model's kernel class shares; a model's module subclasses it (see engine.pxd)."""

    def __cinit__(self):
        self.ktmp = NULL
        self.oprev = NULL
        self.step_threads = 1
        self.qv = self.quat = self.piv = self.freev = self.vq = self.rpiv = NULL
        self.smat = self.rmat = NULL

    def __dealloc__(self):
        free(self.ktmp); free(self.qv); free(self.quat); free(self.smat); free(self.piv); free(self.freev)
        free(self.vq); free(self.rmat); free(self.rpiv)

    cdef int init_engine(self, int nq, int nv, int nx, int nout, int pipelined) except -1:
        """The model's sizes, from its module's __cinit__; allocates the integrators' stages."""
        self.nq, self.nv, self.nx, self.nout, self.pipelined = nq, nv, nx, nout, pipelined
        free(self.ktmp)
        self.ktmp = <double*> calloc(16 * nx + 16, sizeof(double))
        if self.ktmp == NULL:
            raise MemoryError()
        return 0

    cdef int init_steps(self, const int* qv, int nquat, const int* quat, const int* quatv, int nfree,
                        const int* freev) except -1:
        """The coordinates' map of the position update q <- q (+) h u (integrate_pos): the velocity that moves
        each coordinate (qv, NQ; -1 inside a unit quaternion), the nquat unit quaternions' offsets in q (quat)
        and their body rates' in u (quatv); the first velocities of the nfree standalone free bodies (freev). From
        the module's __cinit__ (models without it: no implicit steps)."""
        cdef int k
        free(self.qv); free(self.quat); free(self.freev)
        self.qv = <int*> calloc(self.nq + 1, sizeof(int))
        self.quat = <int*> calloc(2 * nquat + 1, sizeof(int))
        self.freev = <int*> calloc(nfree + 1, sizeof(int))
        if self.qv == NULL or self.quat == NULL or self.freev == NULL:
            raise MemoryError()
        memcpy(self.qv, qv, self.nq * sizeof(int))
        memcpy(self.freev, freev, nfree * sizeof(int))
        self.nfree = nfree
        free(self.vq)
        self.vq = <int*> calloc(self.nv + 1, sizeof(int))
        if self.vq == NULL:
            raise MemoryError()
        for k in range(self.nv):
            self.vq[k] = -1
        for k in range(self.nq):
            if qv[k] >= 0:
                self.vq[qv[k]] = k
        self.nt = 2 * self.nv + (self.nx - self.nq - self.nv)
        for k in range(nquat):
            self.quat[k] = quat[k]
            self.quat[nquat + k] = quatv[k]
        self.nquat = nquat
        return 0

    # ================================================================== the model's (overridden by its module)
    cdef void rhs(self, double t, const double* x, double* xd) noexcept nogil:
        """xd = dx/dt at (t, x): the model's state derivative."""
        pass

    cdef void normalize(self, double* x) noexcept nogil:
        """After a step: the model's unit quaternions renormalised, activations clamped to their ranges."""
        pass

    cdef void project(self, double* x, double t) noexcept nogil:
        """After a step (project_on): the state moved back onto the model's constraints."""
        pass

    cdef int rk4_pipe(self, double t, double* x, double h, int nsteps) noexcept nogil:
        """rk4 on two threads (pipelined models override it)."""
        return STEP_FAILED

    cdef void sample_outputs(self, const double* x, double* out, int from_kin) noexcept nogil:
        """The nout outputs of state x (from_kin: from the kinematics the last rhs(x) took, else a pass of
        their own)."""
        pass

    cdef int step_matrices(self, double t, const double* x, const double* xd, int method, double* M,
                           double* D, double* S) noexcept nogil:
        """After rhs(t, x) gave xd: the mass matrix M (nv x nv, armature included) at x and D = dF/du, the
        velocity partials of the generalized forces F (MuJoCo's qDeriv) that the step of `method` takes
        implicitly: INT_EULER the joint dampers' diagonal, INT_IMPLICITFAST every force element's,
        INT_IMPLICIT also the bias forces' (-dC/du). S: nv x nv scratch. Returns 0, 2 when D = 0 (the step is
        explicit: M is not computed), 1 when the model cannot (it has no such step)."""
        return 1

    cdef int implicit_rate(self, double t, const double* x, double h, int method, double* xd, double* D,
                           double* S) noexcept nogil:
        """Where the step's D is diagonal: xd = (qdot, a, dact/dt) with a = (M - h D)^-1 F by the model's own
        articulated solve (its armature raised by -h D_ii: O(n), no mass matrix); returns 0, or 1 where the model
        cannot (the engine then takes rhs and step_matrices). D, S: nv x nv scratch."""
        return 1

    cdef int step_prepare(self, int method) except -1:
        """Before a run of a velocity-implicit method: the model's workspace for step_matrices."""
        return 0

    cdef int tangent_jacobian(self, double t, const double* x, double* J) noexcept nogil:
        """J (nt x nt) = d(tangent rate)/d(tangent state) at (t, x): [[dq'/dq, I, 0], [du'/dq, du'/du, du'/dact],
        [0, 0, dact'/dact]] (the model's derivative kernels). Returns 0, or 1 (the model has none, or M is not
        positive definite)."""
        return 1

    cdef void advance_act(self, double* x, const double* xd, double h) noexcept nogil:
        """The activations after a velocity-implicit step: act += h dact/dt (the model's filterexact actuators:
        exactly, act += dact/dt tau (1 - exp(-h / tau)), as MuJoCo's mj_nextActivation); clamped by normalize."""
        cdef int k
        for k in range(self.nq + self.nv, self.nx):
            x[k] += h * xd[k]

    # ================================================================== divergence watch
    cdef bint finite_state(self, const double* x, int n) noexcept nogil:
        """One sum over the state: finite iff every component is (an overflowing sum counts as divergence)."""
        cdef double s = 0.0
        cdef int k
        for k in range(n):
            s += x[k]
        return (s - s) == 0.0

    cdef void clear_failure(self) noexcept nogil:
        self.fail_code = FAIL_NONE
        self.fail_t = 0.0
        self.fail_sample = -1
        self.fail_index = -1

    cdef void normalize_quat(self, double* x, int o) noexcept nogil:
        """The quaternion x[o .. o + 3] divided by its norm."""
        cdef double s = sqrt(x[o] * x[o] + x[o + 1] * x[o + 1] + x[o + 2] * x[o + 2] + x[o + 3] * x[o + 3])
        x[o] /= s; x[o + 1] /= s; x[o + 2] /= s; x[o + 3] /= s

    # ================================================================== integrators
    cdef int rk4(self, double t, double* x, double h, int nsteps) noexcept nogil:
        """Classic Runge-Kutta 4, fixed step; quaternions renormalised (activations clamped to actrange, as
        MuJoCo's step does) after each step.  A non-finite state
        after a step sets fail_code = FAIL_NONFINITE and fail_t (the first time only; clear_failure() resets)."""
        cdef int n = self.nx, s, k
        cdef double* k1 = self.ktmp
        cdef double* k2 = k1 + n
        cdef double* k3 = k2 + n
        cdef double* k4 = k3 + n
        cdef double* xt = k4 + n
        cdef double pw
        if self.pipelined and self.step_threads > 1 and not self.has_hook:     # two threads (the model's rk4_pipe)
            return self.rk4_pipe(t, x, h, nsteps)
        for s in range(nsteps):
            self.rhs(t, x, k1)
            if self.oprev != NULL:              # the sample x: its outputs from the kinematics k1 just took
                self.sample_outputs(x, self.oprev, 1)
                self.oprev = NULL
            pw = self.pnc
            for k in range(n):
                xt[k] = x[k] + 0.5 * h * k1[k]
            self.rhs(t + 0.5 * h, xt, k2)
            pw += 2.0 * self.pnc
            for k in range(n):
                xt[k] = x[k] + 0.5 * h * k2[k]
            self.rhs(t + 0.5 * h, xt, k3)
            pw += 2.0 * self.pnc
            for k in range(n):
                xt[k] = x[k] + h * k3[k]
            self.rhs(t + h, xt, k4)
            self.wnc += h / 6.0 * (pw + self.pnc)          # dW/dt = P: one more state, the same RK4 weights
            for k in range(n):
                x[k] += h / 6.0 * (k1[k] + 2.0 * k2[k] + 2.0 * k3[k] + k4[k])
            self.normalize(x)
            if self.project_on:                 # closed loops: back onto the constraint manifold
                self.project(x, t + h)
            if self.step_end(&t, x, h) != STEP_OK:
                return STEP_STOP
        return STEP_OK

    cdef int step_end(self, double* t, const double* x, double h) noexcept nogil:
        """After a step of rk4 (and of its two-thread form): the time, the divergence watch (the first non-finite
        state is recorded: run_rk4 stops there), hook errors and signals."""
        t[0] += h
        if self.fail_code == FAIL_NONE and not self.finite_state(x, self.nx):
            self.fail_code = FAIL_NONFINITE
            self.fail_t = t[0]
        if self.hook_error_flag():
            return STEP_STOP
        self.nsig += 1
        if self.nsig >= POLL_EVERY and self.poll_signals():
            return STEP_STOP
        return STEP_OK

    # ------------------------------------------------------------------ MuJoCo's velocity-implicit single steps
    cdef void integrate_pos(self, double* q, const double* v, double h) noexcept nogil:
        """q <- q (+) h v, as MuJoCo's mj_integratePos: q_i += h v_qv[i] for every coordinate outside a unit
        quaternion; a unit quaternion turned by its body rate w: q <- q exp(h w / 2) (mju_quatIntegrate: q
        normalised first, the axis of a rate below 1e-15 taken as x)."""
        cdef int i, k, o
        cdef const double* w
        cdef double nw, a, s, c, ax, ay, az, q0, q1, q2, q3, nq
        for i in range(self.nq):
            if self.qv[i] >= 0:
                q[i] += h * v[self.qv[i]]
        for k in range(self.nquat):
            o = self.quat[k]
            w = v + self.quat[self.nquat + k]
            nw = sqrt(w[0] * w[0] + w[1] * w[1] + w[2] * w[2])
            if nw < 1e-15:
                ax, ay, az = 1.0, 0.0, 0.0
            else:
                ax, ay, az = w[0] / nw, w[1] / nw, w[2] / nw
            a = h * nw
            if a == 0.0:
                c, s = 1.0, 0.0
            else:
                c, s = cos(0.5 * a), sin(0.5 * a)
            nq = sqrt(q[o] * q[o] + q[o + 1] * q[o + 1] + q[o + 2] * q[o + 2] + q[o + 3] * q[o + 3])
            if nq < 1e-15:
                q[o], q[o + 1], q[o + 2], q[o + 3] = 1.0, 0.0, 0.0, 0.0
            elif fabs(nq - 1.0) > 1e-15:
                q[o] /= nq; q[o + 1] /= nq; q[o + 2] /= nq; q[o + 3] /= nq
            q0, q1, q2, q3 = q[o], q[o + 1], q[o + 2], q[o + 3]
            ax, ay, az = s * ax, s * ay, s * az           # q <- q (c, s axis)
            q[o] = q0 * c - q1 * ax - q2 * ay - q3 * az
            q[o + 1] = q0 * ax + q1 * c + q2 * az - q3 * ay
            q[o + 2] = q0 * ay - q1 * az + q2 * c + q3 * ax
            q[o + 3] = q0 * az + q1 * ay - q2 * ax + q3 * c

    cdef int implicit_steps(self, double t, double* x, double h, int nsteps, int method) noexcept nogil:
        """nsteps of MuJoCo's Euler (method INT_EULER), implicitfast or implicit single step [MuJoCo, Computation,
        Numerical integration], from (t, x) in place:
            (M - h D) a = M udot = F            (F the model's forces at (t, x), its constraint forces in)
            u1 = u + h a,   q1 = q (+) h u1,    act1 = act + h dact/dt (filterexact: exactly), clamped
        D = dF/du from step_matrices: Euler the joint dampers (none: a = udot), symmetric M - h D by Cholesky
        (euler, implicitfast: its lower triangle, as MuJoCo's), implicit by LU. implicitfast solves the 6 x 6
        block of a standalone free body apart, by LU with its bias forces' partials (MuJoCo's mjd_freeMhat; the
        block is uncoupled). A matrix that cannot be factored sets fail_code = FAIL_SINGULAR, a non-finite state
        FAIL_NONFINITE (fail_t: the end of that step)."""
        cdef int n = self.nv, s, i, j, rc, b, o
        cdef double* xd = self.ktmp
        cdef double* M = self.smat
        cdef double* D = M + n * n
        cdef double* S = D + n * n
        cdef double* a = S + n * n
        cdef double* ud = xd + self.nq
        cdef double pw, f
        cdef double Hb[36]
        cdef double fb[6]
        cdef int pb[6]
        for s in range(nsteps):
            rc = 3 if method == INT_IMPLICIT else self.implicit_rate(t, x, h, method, xd, D, S)
            if rc != 0:
                self.rhs(t, x, xd)
            if self.oprev != NULL:              # the sample x: its outputs from the kinematics rhs just took
                self.sample_outputs(x, self.oprev, 1)
                self.oprev = NULL
            pw = self.pnc
            if rc == 0:                         # the articulated solve of M - h D gave a in xd
                rc = 2
            else:
                rc = self.step_matrices(t, x, xd, method, M, D, S)
            if rc == 2:                         # D = 0, or a already solved: the rate's acceleration
                memcpy(a, ud, n * sizeof(double))
            else:
                if method == INT_IMPLICITFAST and self.nfree:
                    memcpy(S, M, n * n * sizeof(double))        # M, for the free bodies' blocks
                for i in range(n):              # a = F = M udot; M <- M - h D
                    f = 0.0
                    for j in range(n):
                        f += M[i * n + j] * ud[j]
                        M[i * n + j] -= h * D[i * n + j]
                    a[i] = f
                for b in range(self.nfree if method == INT_IMPLICITFAST else 0):
                    o = self.freev[b]               # the symmetric solve keeps M on a free body's rows
                    memcpy(M + o * n, S + o * n, 6 * n * sizeof(double))
                if rc != 0 or (lu_solve(n, M, self.piv, a) if method == INT_IMPLICIT
                               else cholesky_solve(n, M, a)):
                    if self.fail_code == FAIL_NONE:
                        self.fail_code = FAIL_SINGULAR
                        self.fail_t = t + h
                    return STEP_OK
                for b in range(self.nfree if method == INT_IMPLICITFAST else 0):
                    o = self.freev[b]               # the block of M - h D, by LU: its bias partials unsymmetric
                    for i in range(6):
                        fb[i] = 0.0
                        for j in range(n):
                            fb[i] += S[(o + i) * n + j] * ud[j]
                        for j in range(6):
                            Hb[6 * i + j] = S[(o + i) * n + o + j] - h * D[(o + i) * n + o + j]
                    if lu_solve(6, Hb, pb, fb):
                        if self.fail_code == FAIL_NONE:
                            self.fail_code = FAIL_SINGULAR
                            self.fail_t = t + h
                        return STEP_OK
                    memcpy(a + o, fb, 6 * sizeof(double))
            for i in range(n):
                x[self.nq + i] += h * a[i]
            self.integrate_pos(x, x + self.nq, h)
            self.advance_act(x, xd, h)
            self.wnc += h * pw                  # the work: the power at the step's start
            self.normalize(x)
            if self.project_on:
                self.project(x, t + h)
            if self.step_end(&t, x, h) != STEP_OK:
                return STEP_STOP
        return STEP_OK

    # ------------------------------------------------------------------ Rosenbrock: stiff, error-controlled
    cdef void tangent_rate(self, const double* x, const double* xd, double* F) noexcept nogil:
        """F = the rate of x in tangent coordinates (dq as the velocities u, then du/dt, dact/dt) from xd = rhs."""
        memcpy(F, x + self.nq, self.nv * sizeof(double))
        memcpy(F + self.nv, xd + self.nq, (self.nx - self.nq) * sizeof(double))

    cdef void retract(self, const double* x0, const double* d, double* x) noexcept nogil:
        """x = x0 (+) d for a tangent increment d = (dq, du, dact): q moved as integrate_pos(q, dq, 1) (a unit
        quaternion turned by the body-axes rotation vector dq), u and act added to."""
        cdef int k
        memcpy(x, x0, self.nx * sizeof(double))
        self.integrate_pos(x, d, 1.0)
        for k in range(self.nx - self.nq):
            x[self.nq + k] += d[self.nv + k]

    cdef int ros_fail(self, int code, double t, int iout) noexcept nogil:
        """Record a rosenbrock failure at t (the first sample not written: iout; the component: see the state)."""
        self.fail_code = code
        self.fail_t = t
        self.fail_sample = iout
        self.fail_index = -1
        return STEP_FAILED

    cdef int rosenbrock(self, double* t, double* x, double* h, int nout, const double* ts, double* xout,
                        double rtol, double atol, double hmax, long* stats) noexcept nogil:
        """ROS2 (Verwer, Spee, Blom & Hundsdorfer 1999), L-stable, order 2 for any Jacobian (a W-method), in tangent
        coordinates with the model's exact J (tangent_jacobian), error-controlled by its embedded first-order
        solution; gamma = 1 + 1/sqrt(2):
            W = I - gamma h J,   W K1 = h F(x),   W K2 = h F(x (+) K1) - 2 K1,
            x1 = x (+) (3/2 K1 + 1/2 K2),   error = 1/2 (K1 + K2)         (x (+) d: retract)
        err = RMS(error_i / (atol + rtol max(|y0_i|, |y1_i|))) over the tangent components (y: the coordinate a
        velocity moves, 1 for a quaternion's rate; u; act); accepted when err <= 1, h <- h min(5, max(0.2,
        0.9 / sqrt(err))). Samples by cubic Hermite in the step's tangent coordinates (F at both ends). Advances
        from t through the nout sample times ts (xout rows). Returns STEP_OK, STEP_STOP, or STEP_FAILED with
        fail_code FAIL_NONFINITE (the rate at an accepted state), FAIL_STEP_COLLAPSED, FAIL_REJECTED (100 in a row)
        or FAIL_SINGULAR (J not available or W singular); t, x: the last accepted state."""
        cdef int n = self.nx, m = self.nt, k, i, iout = 0, nrej = 0
        cdef double* J = self.rmat
        cdef double* W = J + m * m
        cdef double* F0 = W + m * m
        cdef double* F1 = F0 + m
        cdef double* K1 = F1 + m
        cdef double* K2 = K1 + m
        cdef double* D = K2 + m
        cdef double* x2 = D + m
        cdef double* x1 = x2 + n
        cdef double* xd = x1 + n
        cdef double g = 1.0 + 1.0 / sqrt(2.0), hh = 0.0, err, sk, y0, y1, e, fac, th, a, b, c, tend = ts[nout - 1]
        cdef bint clamped
        while iout < nout and ts[iout] <= t[0]:
            memcpy(xout + n * iout, x, n * sizeof(double))
            iout += 1
        self.rhs(t[0], x, xd)
        self.tangent_rate(x, xd, F0)
        stats[0] += 1
        if not self.finite_state(F0, m):
            return self.ros_fail(FAIL_NONFINITE, t[0], iout)
        while iout < nout:
            if h[0] > hmax:
                h[0] = hmax
            if h[0] < 1e-14 * (fabs(t[0]) if fabs(t[0]) > 1.0 else 1.0):
                return self.ros_fail(FAIL_STEP_COLLAPSED, t[0], iout)
            hh = h[0]
            clamped = t[0] + hh > tend
            if clamped:
                hh = tend - t[0]
            if self.tangent_jacobian(t[0], x, J):
                return self.ros_fail(FAIL_SINGULAR, t[0], iout)
            stats[3] += 1
            for i in range(m * m):              # W = I - gamma h J
                W[i] = -g * hh * J[i]
            for i in range(m):
                W[i * m + i] += 1.0
            if lu_factor(m, W, self.rpiv):
                return self.ros_fail(FAIL_SINGULAR, t[0], iout)
            for i in range(m):
                K1[i] = hh * F0[i]
            lu_apply(m, W, self.rpiv, K1)
            self.retract(x, K1, x2)
            self.normalize(x2)
            self.rhs(t[0] + hh, x2, xd)
            self.tangent_rate(x2, xd, F1)
            for i in range(m):
                K2[i] = hh * F1[i] - 2.0 * K1[i]
            lu_apply(m, W, self.rpiv, K2)
            for i in range(m):
                D[i] = 1.5 * K1[i] + 0.5 * K2[i]
            self.retract(x, D, x1)
            stats[0] += 1
            err = 0.0
            for i in range(m):
                if i < self.nv:                 # dq: the coordinate the velocity moves (a quaternion's rate: 1)
                    k = self.vq[i]
                    y0 = fabs(x[k]) if k >= 0 else 1.0
                    y1 = fabs(x1[k]) if k >= 0 else 1.0
                else:
                    y0, y1 = fabs(x[self.nq + i - self.nv]), fabs(x1[self.nq + i - self.nv])
                sk = atol + rtol * (y0 if y0 > y1 else y1)
                e = 0.5 * (K1[i] + K2[i]) / sk
                err += e * e
            err = sqrt(err / m)
            if not (err <= 1e30) or not self.finite_state(x1, n):
                err = 1e30
            if err <= 1.0:
                nrej = 0
                stats[1] += 1
                self.normalize(x1)
                self.rhs(t[0] + hh, x1, xd)     # F at the new state: the samples' Hermite end, the next F0
                self.tangent_rate(x1, xd, F1)
                stats[0] += 1
                while iout < nout and ts[iout] <= t[0] + hh * (1.0 + 1e-13):
                    th = (ts[iout] - t[0]) / hh
                    a = th * th * (3.0 - 2.0 * th)          # Hermite: a D + b h F0 + c h F1
                    b = th * (th - 1.0) * (th - 1.0)
                    c = th * th * (th - 1.0)
                    for i in range(m):
                        K2[i] = a * D[i] + hh * (b * F0[i] + c * F1[i])
                    self.retract(x, K2, xout + n * iout)
                    self.normalize(xout + n * iout)
                    iout += 1
                t[0] += hh
                memcpy(x, x1, n * sizeof(double))
                if self.project_on:
                    self.project(x, t[0])
                    self.rhs(t[0], x, xd)
                    self.tangent_rate(x, xd, F1)
                memcpy(F0, F1, m * sizeof(double))
                if not self.finite_state(F0, m):
                    return self.ros_fail(FAIL_NONFINITE, t[0], iout)
                fac = 0.9 / sqrt(err) if err > 1e-10 else 5.0
            else:
                stats[2] += 1
                nrej += 1
                fac = 0.9 / sqrt(err)
                if fac < 0.2:
                    fac = 0.2
                if nrej >= 100:
                    return self.ros_fail(FAIL_REJECTED, t[0], iout)
            if fac > 5.0:
                fac = 5.0
            if not (clamped and err <= 1.0 and hh * fac < h[0]):
                h[0] = hh * fac
            if self.hook_error_flag():
                return STEP_STOP
            self.nsig += 1
            if self.nsig >= POLL_EVERY and self.poll_signals():
                return STEP_STOP
        return STEP_OK

    cdef int steps_ready(self, int method) except -1:
        """Before a run of `method` (INT_RK4 ... INT_IMPLICIT): the velocity-implicit steps' matrices and the
        model's workspace; ValueError for an unknown method or a model without those steps."""
        if method == INT_RK4:
            return 0
        if method not in (INT_EULER, INT_IMPLICITFAST, INT_IMPLICIT):
            raise ValueError(f"run_steps: unknown integrator code {method}")
        if self.qv == NULL:
            raise ValueError("run_steps: this model has no velocity-implicit steps (euler, implicitfast, implicit)")
        if self.smat == NULL:
            self.smat = <double*> calloc(3 * self.nv * self.nv + 2 * self.nv + 1, sizeof(double))
            self.piv = <int*> calloc(self.nv + 1, sizeof(int))
            if self.smat == NULL or self.piv == NULL:
                raise MemoryError()
        self.step_prepare(method)
        return 0

    def raise_pending(self):
        """After a run: the exception of a signal handler met during it, or the force hook's error."""
        if self.signal_exc is not None:
            err, self.signal_exc = self.signal_exc, None
            raise err
        if self.hook_error is not None:
            err, self.hook_error = self.hook_error, None
            raise RuntimeError(f"force hook failed: {err!r}") from err

    cdef int poll_signals(self) noexcept nogil:
        """Every POLL_EVERY steps: a pending signal (Ctrl-C, SIGTERM) runs its Python handler here (the main thread
        only; elsewhere nothing is pending); its exception is kept in signal_exc for the driver to raise, and
        the run stops (returns 1: its integrator returns STEP_STOP, fail_code FAIL_INTERRUPTED)."""
        self.nsig = 0
        with gil:
            try:
                PyErr_CheckSignals()
            except BaseException as e:
                self.signal_exc = e
                self.fail_code = FAIL_INTERRUPTED
                return 1
        return 0

    cdef int hook_error_flag(self) noexcept nogil:
        if not self.has_hook:
            return 0
        with gil:
            return self.hook_error is not None

    cdef int dopri5_fail(self, int code, double t, int iout, const double* bad, const double* x, double hh,
                         double rtol, double atol) noexcept nogil:
        """Record a dopri5 failure: bad = a non-finite vector (its first non-finite component is named), or
        (bad = NULL) the rejected step from x in ktmp = K1..K7, y1: the largest scaled term of its error
        estimate is named."""
        cdef int n = self.nx, k
        cdef const double* K = self.ktmp
        cdef const double* y1 = K + 7 * n
        cdef double e, sk, emax = -1.0
        self.fail_code = code
        self.fail_t = t
        self.fail_sample = iout
        self.fail_index = -1
        if bad != NULL:
            for k in range(n):
                if not ((bad[k] - bad[k]) == 0.0):
                    self.fail_index = k
                    break
        else:
            for k in range(n):
                sk = atol + rtol * (fabs(x[k]) if fabs(x[k]) > fabs(y1[k]) else fabs(y1[k]))
                e = fabs(hh * (71.0 / 57600.0 * K[k] - 71.0 / 16695.0 * K[2 * n + k]
                               + 71.0 / 1920.0 * K[3 * n + k] - 17253.0 / 339200.0 * K[4 * n + k]
                               + 22.0 / 525.0 * K[5 * n + k] - K[6 * n + k] / 40.0)) / sk
                if not (e <= emax):
                    emax = e
                    self.fail_index = k
        return STEP_FAILED

    cdef int dopri5(self, double* t, double* x, double* h, double tout, int nout, const double* ts,
                    double* xout, double rtol, double atol, double hmax, long* stats, double* wout) noexcept nogil:
        """Dormand-Prince 5(4) with error control and 4th-order dense output (Hairer's contd5).
        Advances from t to the last of the nout sample times ts, writing x(ts[k]) to xout rows.
        A trial step with a non-finite result is rejected like one with a large error.  Returns STEP_FAILED (t, x: the
        last accepted state; fail_sample: the first sample not written) when the state derivative is not
        finite (fail_code 1), the step size collapses below 1e-14 max(1, |t|) (2), or 100 steps in a row are
        rejected (3); fail_index names the state component (the largest term of the error estimate, or the
        first non-finite derivative)."""
        cdef int n = self.nx, k, st, iout = 0, nrej = 0
        cdef bint clamped
        cdef double* K1 = self.ktmp
        cdef double* K2 = K1 + n
        cdef double* K3 = K2 + n
        cdef double* K4 = K3 + n
        cdef double* K5 = K4 + n
        cdef double* K6 = K5 + n
        cdef double* K7 = K6 + n
        cdef double* y1 = K7 + n
        cdef double* yt = y1 + n
        cdef double* r1 = yt + n
        cdef double* r2 = r1 + n
        cdef double* r3 = r2 + n
        cdef double* r4 = r3 + n
        cdef double* r5 = r4 + n
        cdef double err, sk, fac, hh = 0.0, th, th1, tend = ts[nout - 1]
        cdef double P[8]                    # stage powers of the work W (dW/dt = P, integrated as one more state)
        cdef double w1, wr2, wr3, wr4, wr5
        # Butcher tableau (Dormand & Prince 1980)
        cdef double a21 = 1.0 / 5.0, a31 = 3.0 / 40.0, a32 = 9.0 / 40.0
        cdef double a41 = 44.0 / 45.0, a42 = -56.0 / 15.0, a43 = 32.0 / 9.0
        cdef double a51 = 19372.0 / 6561.0, a52 = -25360.0 / 2187.0, a53 = 64448.0 / 6561.0, a54 = -212.0 / 729.0
        cdef double a61 = 9017.0 / 3168.0, a62 = -355.0 / 33.0, a63 = 46732.0 / 5247.0, a64 = 49.0 / 176.0, a65 = -5103.0 / 18656.0
        cdef double a71 = 35.0 / 384.0, a73 = 500.0 / 1113.0, a74 = 125.0 / 192.0, a75 = -2187.0 / 6784.0, a76 = 11.0 / 84.0
        cdef double e1 = 71.0 / 57600.0, e3 = -71.0 / 16695.0, e4 = 71.0 / 1920.0, e5 = -17253.0 / 339200.0, e6 = 22.0 / 525.0, e7 = -1.0 / 40.0
        cdef double d1 = -12715105075.0 / 11282082432.0, d3 = 87487479700.0 / 32700410799.0, d4 = -10690763975.0 / 1880347072.0
        cdef double d5 = 701980252875.0 / 199316789632.0, d6 = -1453857185.0 / 822651844.0, d7 = 69997945.0 / 29380423.0
        # samples at (or before) the start
        while iout < nout and ts[iout] <= t[0]:
            memcpy(xout + n * iout, x, n * sizeof(double))
            if wout != NULL:
                wout[iout] = self.wnc
            iout += 1
        self.rhs(t[0], x, K1)
        P[1] = self.pnc
        if not self.finite_state(K1, n):
            return self.dopri5_fail(FAIL_NONFINITE, t[0], iout, K1, x, 0.0, rtol, atol)
        while iout < nout:
            if h[0] > hmax:
                h[0] = hmax
            if h[0] < 1e-14 * (fabs(t[0]) if fabs(t[0]) > 1.0 else 1.0):
                return self.dopri5_fail(FAIL_STEP_COLLAPSED, t[0], iout, NULL, x, hh, rtol, atol)
            hh = h[0]                                   # h: the controller's step; hh: this step (to tend)
            clamped = t[0] + hh > tend
            if clamped:
                hh = tend - t[0]
            for k in range(n):
                yt[k] = x[k] + hh * a21 * K1[k]
            self.rhs(t[0] + 0.2 * hh, yt, K2)
            P[2] = self.pnc
            for k in range(n):
                yt[k] = x[k] + hh * (a31 * K1[k] + a32 * K2[k])
            self.rhs(t[0] + 0.3 * hh, yt, K3)
            P[3] = self.pnc
            for k in range(n):
                yt[k] = x[k] + hh * (a41 * K1[k] + a42 * K2[k] + a43 * K3[k])
            self.rhs(t[0] + 0.8 * hh, yt, K4)
            P[4] = self.pnc
            for k in range(n):
                yt[k] = x[k] + hh * (a51 * K1[k] + a52 * K2[k] + a53 * K3[k] + a54 * K4[k])
            self.rhs(t[0] + 8.0 / 9.0 * hh, yt, K5)
            P[5] = self.pnc
            for k in range(n):
                yt[k] = x[k] + hh * (a61 * K1[k] + a62 * K2[k] + a63 * K3[k] + a64 * K4[k] + a65 * K5[k])
            self.rhs(t[0] + hh, yt, K6)
            P[6] = self.pnc
            for k in range(n):
                y1[k] = x[k] + hh * (a71 * K1[k] + a73 * K3[k] + a74 * K4[k] + a75 * K5[k] + a76 * K6[k])
            self.rhs(t[0] + hh, y1, K7)
            P[7] = self.pnc
            stats[0] += 6
            err = 0.0
            for k in range(n):
                sk = atol + rtol * (fabs(x[k]) if fabs(x[k]) > fabs(y1[k]) else fabs(y1[k]))
                fac = hh * (e1 * K1[k] + e3 * K3[k] + e4 * K4[k] + e5 * K5[k] + e6 * K6[k] + e7 * K7[k]) / sk
                err += fac * fac
            err = sqrt(err / n)
            if not (err <= 1e30) or not self.finite_state(y1, n):
                err = 1e30                              # non-finite trial step: reject, shrink by 5
            if err <= 1.0:
                nrej = 0
                stats[1] += 1
                # dense output coefficients (contd5)
                for k in range(n):
                    r1[k] = x[k]
                    r2[k] = y1[k] - x[k]
                    r3[k] = hh * K1[k] - r2[k]
                    r4[k] = r2[k] - hh * K7[k] - r3[k]
                    r5[k] = hh * (d1 * K1[k] + d3 * K3[k] + d4 * K4[k] + d5 * K5[k] + d6 * K6[k] + d7 * K7[k])
                w1 = self.wnc + hh * (a71 * P[1] + a73 * P[3] + a74 * P[4] + a75 * P[5] + a76 * P[6])
                wr2 = w1 - self.wnc                # the work's dense output, as the state's
                wr3 = hh * P[1] - wr2
                wr4 = wr2 - hh * P[7] - wr3
                wr5 = hh * (d1 * P[1] + d3 * P[3] + d4 * P[4] + d5 * P[5] + d6 * P[6] + d7 * P[7])
                while iout < nout and ts[iout] <= t[0] + hh * (1.0 + 1e-13):
                    th = (ts[iout] - t[0]) / hh
                    th1 = 1.0 - th
                    for k in range(n):
                        xout[n * iout + k] = r1[k] + th * (r2[k] + th1 * (r3[k] + th * (r4[k] + th1 * r5[k])))
                    self.normalize(xout + n * iout)
                    if wout != NULL:
                        wout[iout] = self.wnc + th * (wr2 + th1 * (wr3 + th * (wr4 + th1 * wr5)))
                    iout += 1
                self.wnc = w1
                t[0] += hh
                memcpy(x, y1, n * sizeof(double))
                self.normalize(x)
                if self.project_on:
                    self.project(x, t[0])
                self.rhs(t[0], x, K1)        # (FSAL would reuse K7; renormalisation changes x)
                P[1] = self.pnc
                stats[0] += 1
                if not self.finite_state(K1, n):
                    return self.dopri5_fail(FAIL_NONFINITE, t[0], iout, K1, x, 0.0, rtol, atol)
                fac = 0.9 * (1.0 / err) ** 0.2 if err > 1e-10 else 5.0
            else:
                stats[2] += 1
                nrej += 1
                fac = 0.9 * (1.0 / err) ** 0.2
                if fac < 0.2:
                    fac = 0.2
                if nrej >= 100:                    # DP_MAX_REJECT
                    return self.dopri5_fail(FAIL_REJECTED, t[0], iout, NULL, x, hh, rtol, atol)
            if fac > 5.0:
                fac = 5.0
            if not (clamped and err <= 1.0 and hh * fac < h[0]):
                h[0] = hh * fac                         # (a shortened last step leaves h as it was)
            if self.hook_error_flag():
                return STEP_STOP
            self.nsig += 1
            if self.nsig >= POLL_EVERY and self.poll_signals():
                return STEP_STOP
        return STEP_OK

    # ================================================================== checked drivers (Python API)
    def run_rk4(self, double t0, x, double h, int nsamples, int substeps=1, wout=None, oout=None):
        """run_steps with rk4 (the same arguments and results)."""
        return self.run_steps(INT_RK4, t0, x, h, nsamples, substeps, wout, oout)

    def run_steps(self, int method, double t0, x, double h, int nsamples, int substeps=1, wout=None, oout=None):
        """A fixed-step run of `method` (codegen.algorithms.codes.Integrator: rk4, or MuJoCo's euler,
        implicitfast, implicit) from t0 with x = [q, u, act] advanced in place: nsamples samples of substeps
        steps of size h.
        Returns (samples (nsamples x (nq + nv)), number of good samples).  At the first non-finite state it
        stops: fail_code = FAIL_NONFINITE, fail_t = the time of that state, fail_sample = the sample that holds it;
        x is left at that (bad) state and the rows from fail_sample on are NaN.  wout (nsamples float64, optional):
        the work of the non-conservative forces at each sample (self.wnc goes on from its value).
        oout (nsamples x nout float64, optional; models whose class sets IN_LOOP_OUTPUTS): the outputs of each
        good sample (centroids, quaternions, T, V as outputs_at gives them), each from the kinematics of the next
        step's first stage (the last: its own pass)."""
        cdef int n = self.nx
        if oout is not None and self.nout == 0:
            raise ValueError("run_steps: oout: this model has no in-loop outputs")
        self.steps_ready(method)
        xout = np.zeros((nsamples, n))
        cdef Py_buffer vx, vo, vw, vout
        cdef double* px = acquire(x, &vx, n, "state", True)
        cdef double* po = acquire(xout, &vo, nsamples * n, "out", True)
        cdef double* pw = acquire(wout, &vw, nsamples, "wout", True) if wout is not None else NULL
        cdef double* pout = acquire(oout, &vout, nsamples * self.nout, "oout", True) if oout is not None else NULL
        cdef int s, rc = 0
        cdef long nok = 0
        self.hook_error = self.signal_exc = None
        self.clear_failure()
        with nogil:
            for s in range(nsamples):
                self.oprev = (pout + (s - 1) * self.nout) if (pout != NULL and s > 0) else NULL
                if method == INT_RK4:
                    rc = self.rk4(t0 + s * substeps * h, px, h, substeps)
                else:
                    rc = self.implicit_steps(t0 + s * substeps * h, px, h, substeps, method)
                if rc != STEP_OK:
                    break
                if self.fail_code != 0:
                    self.fail_sample = s
                    break
                memcpy(po + s * n, px, n * sizeof(double))
                if pw != NULL:
                    pw[s] = self.wnc
                nok += 1
            self.oprev = NULL
            if pout != NULL and nok > 0:        # the last good sample: a kinematics pass of its own
                self.sample_outputs(po + (nok - 1) * n, pout + (nok - 1) * self.nout, 0)
        PyBuffer_Release(&vx); PyBuffer_Release(&vo)
        if pw != NULL:
            PyBuffer_Release(&vw)
        if pout != NULL:
            PyBuffer_Release(&vout)
            oout[nok:] = np.nan
        xout[nok:] = np.nan
        self.raise_pending()
        return xout, nok

    def run_rosenbrock(self, double t0, x, double h0, ts, double rtol, double atol, double hmax):
        """The stiff, error-controlled ROS2 (rosenbrock) from t0 through the sample times ts, x advanced in place;
        the model's derivative kernel gives its Jacobian. Returns (samples (len(ts) x nx), t reached, next step
        size, (rate evaluations, accepted, rejected, Jacobians), number of good samples); on failure as
        run_dopri5 (fail_code, fail_t, fail_sample; rows from fail_sample on NaN)."""
        ts = f64(ts)
        cdef Py_ssize_t m = ts.shape[0]
        xout = np.zeros((m, self.nx))
        cdef double t = t0, h = h0
        cdef long stats[4]
        cdef int rc = 0
        cdef long nok = m
        cdef Py_buffer vx, vo, vt
        stats[0] = 0; stats[1] = 0; stats[2] = 0; stats[3] = 0
        self.hook_error = self.signal_exc = None
        self.clear_failure()
        if m == 0:
            return xout, t, h, (0, 0, 0, 0), 0
        self.steps_ready(INT_IMPLICIT)              # the derivative kernel's workspace
        if self.rmat == NULL:
            self.rmat = <double*> calloc(2 * self.nt * self.nt + 5 * self.nt + 3 * self.nx + 1, sizeof(double))
            self.rpiv = <int*> calloc(self.nt + 1, sizeof(int))
            if self.rmat == NULL or self.rpiv == NULL:
                raise MemoryError()
        cdef double* px = acquire(x, &vx, self.nx, "state", True)
        cdef double* po = acquire(xout, &vo, m * self.nx, "out", True)
        cdef double* pt = acquire(ts, &vt, m, "ts")
        with nogil:
            rc = self.rosenbrock(&t, px, &h, m, pt, po, rtol, atol, hmax, stats)
        PyBuffer_Release(&vx); PyBuffer_Release(&vo); PyBuffer_Release(&vt)
        self.raise_pending()
        if rc != STEP_OK and self.fail_code != FAIL_NONE:
            nok = self.fail_sample
            xout[nok:] = np.nan
        return xout, t, h, (stats[0], stats[1], stats[2], stats[3]), nok

    def run_dopri5(self, double t0, x, double h0, ts, double rtol, double atol, double hmax, wout=None):
        """Adaptive DOPRI5 from t0 through the sample times ts (dense output), x advanced in place.
        Returns (samples (len(ts) x (nq + nv)), t reached, next step size, (nfev, accepted, rejected), number of
        good samples).  On failure (fail_code FAIL_NONFINITE: non-finite state derivative, FAIL_STEP_COLLAPSED,
        FAIL_REJECTED: too many rejected steps; fail_t, fail_sample, fail_index) t and x hold the last accepted state and the rows
        from fail_sample on are NaN.  wout (len(ts) float64, optional): the work of the non-conservative forces at
        each sample time, by the same dense output."""
        ts = f64(ts)
        cdef Py_ssize_t m = ts.shape[0]
        xout = np.zeros((m, self.nx))
        cdef double t = t0, h = h0
        cdef long stats[3]
        cdef int rc = 0
        cdef long nok = m
        cdef Py_buffer vx, vo, vt, vw
        stats[0] = 0; stats[1] = 0; stats[2] = 0
        self.hook_error = self.signal_exc = None
        self.clear_failure()
        if m == 0:
            return xout, t, h, (0, 0, 0), 0
        cdef double* px = acquire(x, &vx, self.nx, "state", True)
        cdef double* po = acquire(xout, &vo, m * self.nx, "out", True)
        cdef double* pt = acquire(ts, &vt, m, "ts")
        cdef double* pw = acquire(wout, &vw, m, "wout", True) if wout is not None else NULL
        with nogil:
            rc = self.dopri5(&t, px, &h, pt[m - 1], m, pt, po, rtol, atol, hmax, stats, pw)
        PyBuffer_Release(&vx); PyBuffer_Release(&vo); PyBuffer_Release(&vt)
        if pw != NULL:
            PyBuffer_Release(&vw)
        self.raise_pending()
        if rc != STEP_OK and self.fail_code != FAIL_NONE:
            nok = self.fail_sample
            xout[nok:] = np.nan
        return xout, t, h, (stats[0], stats[1], stats[2]), nok


include "engine_kinematics.pxi"
