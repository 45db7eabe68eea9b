# The kinematic quantities of a rigid tree, compiled once for every model (included by engine.pyx).
#
# Inputs: what the model's kinematics pass leaves (TreeKin: each body's reference frame (A_j, r_j), its angular
# velocity w_j, the velocity vr_j of its origin, the joint columns H_j = [H_v; H_w] of its velocities [KY eq 15],
# its inertia numbers and the armature), the model's body accelerations (tree_acc) and its topology (init_tree:
# parents, velocity offsets, and per joint kind the columns each column carries, codegen.symbolic.joints.
# column_carriers, rotating and as spatial motions).
# Outputs: frame placements, velocities, accelerations, Jacobians and their rates in three references; the centre
# of mass, its Jacobian, the centroidal momentum matrix, its rate, momentum, momentum rate, the centroidal and
# subtree inertias; the mass matrix (CRBA); derivatives with respect to q (tangent coordinates) and u of frame
# velocities and accelerations, of the centre of mass velocity and of h_G; batches over states.
#
# Conventions (docs/guide/kinematics.md): 6-vectors are (angular; linear); references REF_LOCAL (the frame's axes,
# at its origin), REF_WORLD (world axes, at the world origin: spatial vectors, pinocchio's WORLD) and
# REF_LOCAL_WORLD_ALIGNED (world axes, at the frame's origin). The velocity column of velocity k of joint j at a
# point x fixed on a body below j: (H_w,k ; H_v,k + H_w,k x (x - r_j)) (rigid motion of the subtree); as a spatial
# motion at the world origin S_k = (H_w,k; H_v,k + r_j x H_w,k).
#
# Roadmap: small 3-vector and spatial algebra -> frame poses (frame_world) -> frame motion, Jacobians and their
# rates (column_dot) -> the derivatives' bases (velocity_bases, acceleration_bases) -> subtree sums, their rates,
# the momentum matrix and its rate -> the Python API: frames, derivatives, centre of mass and centroidal terms,
# mass matrix (tree_crba), compute_all_terms (all_terms) -> batches (frames_at, frame_jacobians_at, com_at).

cdef inline void kx_cross(const double* a, const double* b, double* c) noexcept nogil:
    """c = a x b (c distinct from a and b)."""
    c[0] = a[1] * b[2] - a[2] * b[1]
    c[1] = a[2] * b[0] - a[0] * b[2]
    c[2] = a[0] * b[1] - a[1] * b[0]


cdef inline void kx_cross_add(const double* a, const double* b, double* c) noexcept nogil:
    """c += a x b."""
    c[0] += a[1] * b[2] - a[2] * b[1]
    c[1] += a[2] * b[0] - a[0] * b[2]
    c[2] += a[0] * b[1] - a[1] * b[0]


cdef inline void kx_mv(const double* A, const double* x, double* y) noexcept nogil:
    """y = A x (A row major)."""
    y[0] = A[0] * x[0] + A[1] * x[1] + A[2] * x[2]
    y[1] = A[3] * x[0] + A[4] * x[1] + A[5] * x[2]
    y[2] = A[6] * x[0] + A[7] * x[1] + A[8] * x[2]


cdef inline void kx_mtv(const double* A, const double* x, double* y) noexcept nogil:
    """y = A^T x."""
    y[0] = A[0] * x[0] + A[3] * x[1] + A[6] * x[2]
    y[1] = A[1] * x[0] + A[4] * x[1] + A[7] * x[2]
    y[2] = A[2] * x[0] + A[5] * x[1] + A[8] * x[2]


cdef inline void kx_column(const TreeKin* k, const int* hcols, int j, int c, double* hv, double* hw) noexcept nogil:
    """Joint column c of body j: hv (linear, at r_j) and hw (angular), world [KY eq 15]."""
    cdef int a
    if hcols[j]:
        for a in range(3):
            hv[a] = k.Hw[36 * j + 6 * c + a]
            hw[a] = k.Hw[36 * j + 6 * c + 3 + a]
    else:                                               # ball, rates in the child's axes: H = [0; A_j]
        for a in range(3):
            hv[a] = 0.0
            hw[a] = k.A[9 * j + 3 * a + c]


cdef inline void kx_shift(int ref, const double* R, const double* x, const double* ang, const double* lin,
                          double* out) noexcept nogil:
    """A motion 6-vector (ang; lin at x, world axes) in reference ref: out = (angular; linear)."""
    cdef double t[3]
    if ref == REF_LOCAL:
        kx_mtv(R, ang, out)
        kx_mtv(R, lin, out + 3)
        return
    out[0], out[1], out[2] = ang[0], ang[1], ang[2]
    out[3], out[4], out[5] = lin[0], lin[1], lin[2]
    if ref == REF_WORLD:                                # at the world origin: lin + x x ang
        kx_cross_add(x, ang, out + 3)


cdef inline void kx_spatial(const TreeKin* k, const int* hcols, int j, int c, double* S) noexcept nogil:
    """S = (hw; vO): joint column c of body j as a world spatial motion at the world origin, vO = hv + r_j x hw."""
    kx_column(k, hcols, j, c, S + 3, S)
    kx_cross_add(k.r + 3 * j, S, S + 3)


cdef inline void kx_body_velocity(const TreeKin* k, int b, double* V) noexcept nogil:
    """V = (w_b; vr_b - w_b x r_b): body b's world spatial velocity at the world origin (0 for the ground)."""
    cdef int a
    if b < 0:
        memset(V, 0, 6 * sizeof(double))
        return
    for a in range(3):
        V[a] = k.w[3 * b + a]
        V[3 + a] = k.vr[3 * b + a]
    kx_cross_add(k.r + 3 * b, V, V + 3)


cdef inline void kx_cross_motion(const double* a, const double* b, double* c) noexcept nogil:
    """c = a x b for spatial motions (ang; lin at the world origin): (a_w x b_w; a_w x b_v + a_v x b_w)."""
    kx_cross(a, b, c)
    kx_cross(a, b + 3, c + 3)
    kx_cross_add(a + 3, b, c + 3)


cdef inline void kx_body_mass(const TreeKin* k, int j, double* m, double* rc, double* Iw) noexcept nogil:
    """Mass, world centroid rc = r + A rho and world central inertia Iw = A (I_r - m (|rho|^2 1 - rho rho^T)) A^T
    of body j (parallel axis theorem; rho = h / m, 0 for a massless body)."""
    cdef const double* ib = k.ib + 10 * j
    cdef const double* A = k.A + 9 * j
    cdef double rho[3]
    cdef double Ic[9]
    cdef double T[9]
    cdef double rr
    cdef int a, b, c
    m[0] = ib[0]
    for a in range(3):
        rho[a] = ib[1 + a] / ib[0] if ib[0] > 0 else 0.0
    rr = rho[0] * rho[0] + rho[1] * rho[1] + rho[2] * rho[2]
    Ic[0], Ic[1], Ic[2], Ic[4], Ic[5], Ic[8] = ib[4], ib[5], ib[6], ib[7], ib[8], ib[9]
    Ic[3], Ic[6], Ic[7] = ib[5], ib[6], ib[8]
    for a in range(3):
        for b in range(3):
            Ic[3 * a + b] -= ib[0] * ((rr if a == b else 0.0) - rho[a] * rho[b])
    kx_mv(A, rho, rc)
    for a in range(3):
        rc[a] += k.r[3 * j + a]
    for a in range(3):                                  # T = A Ic, Iw = T A^T
        for b in range(3):
            T[3 * a + b] = A[3 * a] * Ic[b] + A[3 * a + 1] * Ic[3 + b] + A[3 * a + 2] * Ic[6 + b]
    for a in range(3):
        for b in range(3):
            Iw[3 * a + b] = T[3 * a] * A[3 * b] + T[3 * a + 1] * A[3 * b + 1] + T[3 * a + 2] * A[3 * b + 2]


cdef class TreeEngine(Engine):
    """Frames, Jacobians, the centre of mass and centroidal momentum of every rigid tree (see engine.pxd)."""

    def __cinit__(self):
        self.parent = self.iv = self.nvj = self.hcols = self.hcarry = self.scarry = self.fbody = NULL
        self.fX = self.kw = self.zu = self.kwv = NULL
        self.nf = 0

    def __dealloc__(self):
        free(self.parent); free(self.iv); free(self.nvj); free(self.hcols); free(self.hcarry); free(self.scarry); free(self.fbody)
        free(self.fX); free(self.kw); free(self.zu); free(self.kwv)

    cdef int init_tree(self, int nb, const int* parent, const int* iv, const int* nvj, const int* hcols,
                       const int* jt, const int* kcarry) except -1:
        """The tree's topology, from its module's __cinit__ (copied; after init_engine); jt: each body's joint kind
        code, kcarry: per kind its columns' carrier masks, then their spatial ones (6 each)."""
        cdef int j, c
        self.nb = nb
        self.parent = <int*> calloc(nb + 1, sizeof(int))
        self.iv = <int*> calloc(nb + 1, sizeof(int))
        self.nvj = <int*> calloc(nb + 1, sizeof(int))
        self.hcols = <int*> calloc(nb + 1, sizeof(int))
        self.hcarry = <int*> calloc(6 * nb + 1, sizeof(int))
        self.scarry = <int*> calloc(6 * nb + 1, sizeof(int))
        self.kw = <double*> calloc(31 * nb + 1, sizeof(double))
        self.zu = <double*> calloc(self.nv + 1, sizeof(double))
        self.kwv = <double*> calloc(18 * self.nv + 1, sizeof(double))
        if not (self.parent and self.iv and self.nvj and self.hcols and self.hcarry and self.scarry and self.kw and self.zu and self.kwv):
            raise MemoryError()
        memcpy(self.parent, parent, nb * sizeof(int))
        memcpy(self.iv, iv, nb * sizeof(int))
        memcpy(self.nvj, nvj, nb * sizeof(int))
        memcpy(self.hcols, hcols, nb * sizeof(int))
        for j in range(nb):
            for c in range(6):
                self.hcarry[6 * j + c] = kcarry[12 * jt[j] + c]
                self.scarry[6 * j + c] = kcarry[12 * jt[j] + 6 + c]
        return 0

    # ================================================================== the model's (overridden by its module)
    cdef int tree_kin(self, const double* q, const double* u, TreeKin* k) noexcept nogil:
        return -1

    cdef int tree_acc(self, const double* q, const double* u, const double* ud, double* acc) noexcept nogil:
        return -1

    # ================================================================== frames
    cdef void frame_world(self, const TreeKin* k, int f, double* R, double* p) noexcept nogil:
        """World rotation R (row major) and origin p of frame f: R = A_b R_bf, p = r_b + A_b p_bf."""
        cdef int b = self.fbody[f], a, c
        cdef const double* X = self.fX + 12 * f
        if b < 0:
            memcpy(R, X, 9 * sizeof(double))
            memcpy(p, X + 9, 3 * sizeof(double))
            return
        for a in range(3):
            for c in range(3):
                R[3 * a + c] = (k.A[9 * b + 3 * a] * X[c] + k.A[9 * b + 3 * a + 1] * X[3 + c]
                                + k.A[9 * b + 3 * a + 2] * X[6 + c])
        kx_mv(k.A + 9 * b, X + 9, p)
        for a in range(3):
            p[a] += k.r[3 * b + a]

    cdef void point_motion(self, const TreeKin* k, const double* acc, int b, const double* x, double* w,
                           double* v, double* al, double* a) noexcept nogil:
        """Angular velocity w, velocity v of the point x fixed on body b (v = vr_b + w x (x - r_b)); with acc:
        angular acceleration al and classical acceleration a = a_b + al x d + w x (w x d), d = x - r_b."""
        cdef double d[3]
        cdef double t[3]
        cdef int c
        if b < 0:
            for c in range(3):
                w[c] = v[c] = 0.0
                if acc != NULL:
                    al[c] = a[c] = 0.0
            return
        for c in range(3):
            w[c] = k.w[3 * b + c]
            d[c] = x[c] - k.r[3 * b + c]
            v[c] = k.vr[3 * b + c]
        kx_cross_add(w, d, v)
        if acc == NULL:
            return
        for c in range(3):
            al[c] = acc[6 * b + c]
            a[c] = acc[6 * b + 3 + c]
        kx_cross_add(al, d, a)
        kx_cross(w, d, t)
        kx_cross_add(w, t, a)

    cdef void point_jacobian(self, const TreeKin* k, int b, const double* x, int ref, const double* R,
                             double* J) noexcept nogil:
        """J (6 x nv, row major, angular rows first) of the point x fixed on body b, reference ref (axes R for
        REF_LOCAL): the columns of every joint from b to the root, (H_w ; H_v + H_w x (x - r_j))."""
        cdef int n = self.nv, j, c, a, col
        cdef double hv[3]
        cdef double hw[3]
        cdef double d[3]
        cdef double o[6]
        memset(J, 0, 6 * n * sizeof(double))
        j = b
        while j >= 0:
            for a in range(3):
                d[a] = x[a] - k.r[3 * j + a]
            for c in range(self.nvj[j]):
                kx_column(k, self.hcols, j, c, hv, hw)
                kx_cross_add(hw, d, hv)
                kx_shift(ref, R, x, hw, hv, o)
                col = self.iv[j] + c
                for a in range(6):
                    J[a * n + col] = o[a]
            j = self.parent[j]

    cdef void column_dot(self, const TreeKin* k, const double* u, int j, int c, const double* hv, const double* hw,
                          double* hvd, double* hwd) noexcept nogil:
        """The rates of joint column c of body j (hv, hw): a vector fixed in the body that rotates at
        W = w_parent + sum over the carrying columns (hcarry) of H_w,k u_k, so hvd = W x hv, hwd = W x hw."""
        cdef double W[3]
        cdef double gv[3]
        cdef double gw[3]
        cdef int a, kk, m = self.hcarry[6 * j + c], pj = self.parent[j]
        for a in range(3):
            W[a] = k.w[3 * pj + a] if pj >= 0 else 0.0
        for kk in range(self.nvj[j]):
            if m >> kk & 1:
                kx_column(k, self.hcols, j, kk, gv, gw)
                for a in range(3):
                    W[a] += gw[a] * u[self.iv[j] + kk]
        kx_cross(W, hv, hvd)
        kx_cross(W, hw, hwd)

    cdef void point_jacobian_dot(self, const TreeKin* k, const double* u, int b, const double* x, const double* xd,
                                 int ref, const double* R, const double* wf, double* Jd) noexcept nogil:
        """Jd = dJ/dt (6 x nv, row major) of point_jacobian's J for the point x moving at xd (wf: the angular
        velocity of the axes R, for REF_LOCAL). Per column, with d = x - r_j, dd = xd - vr_j:
        world axes at x: (hwd ; hvd + hwd x d + hw x dd); at the world origin add x x hwd + xd x hw;
        in the axes R: R^T (rate - wf x column), each half."""
        cdef int n = self.nv, j, c, a, col
        cdef double hv[3]
        cdef double hw[3]
        cdef double hvd[3]
        cdef double hwd[3]
        cdef double d[3]
        cdef double dd[3]
        cdef double lin[3]
        cdef double jl[3]
        memset(Jd, 0, 6 * n * sizeof(double))
        j = b
        while j >= 0:
            for a in range(3):
                d[a] = x[a] - k.r[3 * j + a]
                dd[a] = xd[a] - k.vr[3 * j + a]
            for c in range(self.nvj[j]):
                kx_column(k, self.hcols, j, c, hv, hw)
                self.column_dot(k, u, j, c, hv, hw, hvd, hwd)
                lin[0], lin[1], lin[2] = hvd[0], hvd[1], hvd[2]
                kx_cross_add(hwd, d, lin)
                kx_cross_add(hw, dd, lin)
                if ref == REF_WORLD:
                    kx_cross_add(x, hwd, lin)
                    kx_cross_add(xd, hw, lin)
                elif ref == REF_LOCAL:                  # hwd - wf x hw, lin - wf x (hv + hw x d)
                    jl[0], jl[1], jl[2] = hv[0], hv[1], hv[2]
                    kx_cross_add(hw, d, jl)
                    kx_cross_add(hw, wf, hwd)
                    kx_cross_add(jl, wf, lin)
                    kx_mtv(R, hwd, hvd)
                    hwd[0], hwd[1], hwd[2] = hvd[0], hvd[1], hvd[2]
                    kx_mtv(R, lin, jl)
                    lin[0], lin[1], lin[2] = jl[0], jl[1], jl[2]
                col = self.iv[j] + c
                for a in range(3):
                    Jd[a * n + col] = hwd[a]
                    Jd[(3 + a) * n + col] = lin[a]
            j = self.parent[j]

    # ================================================================== velocity derivatives
    cdef void velocity_bases(self, const TreeKin* k, const double* u) noexcept nogil:
        """kwv (nv x 6): per velocity k (column c of body j), W_k = V_j - A_k, A_k = the sum of S_c' u_c' over the
        columns c' of j that column c carries as spatial motions (scarry). Moving the coordinates along S_k (d/de_k, tangent)
        carries the bodies below j and those columns rigidly: a body b below j has dV_b/de_k = S_k x (V_b - W_k)
        (the velocity its own joint columns below k give it; Featherstone 2008, eq 2.29: dS/de = S_k x S)."""
        cdef double Vj[6]
        cdef double S[6]
        cdef double* W
        cdef int j, c, c2, a
        for j in range(self.nb):
            kx_body_velocity(k, j, Vj)
            for c in range(self.nvj[j]):
                W = self.kwv + 6 * (self.iv[j] + c)
                memcpy(W, Vj, 6 * sizeof(double))
                for c2 in range(self.nvj[j]):
                    if self.scarry[6 * j + c2] >> c & 1:
                        kx_spatial(k, self.hcols, j, c2, S)
                        for a in range(6):
                            W[a] -= S[a] * u[self.iv[j] + c2]

    # ================================================================== centre of mass and centroidal momentum
    cdef double subtree_sums(self, const TreeKin* k, bint inertia=True) noexcept nogil:
        """kw[6 NB:]: per body j, the sums over its subtree of m (1), m rc (3) and (inertia) K = Iw + m (|rc|^2 1
        - rc rc^T) (9, the rotational inertia about the world origin); returns the total mass."""
        cdef double* S = self.kw + 6 * self.nb
        cdef double* s
        cdef double m, M = 0.0, rr
        cdef double rc[3]
        cdef double Iw[9]
        cdef int j, a, b
        for j in range(self.nb):
            s = S + 13 * j
            if not inertia:                             # m and m rc only: rc = r + A h / m
                s[0] = k.ib[10 * j]
                kx_mv(k.A + 9 * j, k.ib + 10 * j + 1, s + 1)
                for a in range(3):
                    s[1 + a] += s[0] * k.r[3 * j + a]
                continue
            kx_body_mass(k, j, &m, rc, Iw)
            rr = rc[0] * rc[0] + rc[1] * rc[1] + rc[2] * rc[2]
            s[0] = m
            for a in range(3):
                s[1 + a] = m * rc[a]
                for b in range(3):
                    s[4 + 3 * a + b] = Iw[3 * a + b] + m * ((rr if a == b else 0.0) - rc[a] * rc[b])
        for j in range(self.nb - 1, -1, -1):            # children after parents: sum tips to root
            if self.parent[j] >= 0:
                for a in range(13 if inertia else 4):
                    S[13 * self.parent[j] + a] += S[13 * j + a]
            else:
                M += S[13 * j]
        return M

    cdef void totals(self, double* out) noexcept nogil:
        """out (13): the sums of subtree_sums over the roots (the whole tree)."""
        cdef int j, a
        memset(out, 0, 13 * sizeof(double))
        for j in range(self.nb):
            if self.parent[j] < 0:
                for a in range(13):
                    out[a] += self.kw[6 * self.nb + 13 * j + a]

    cdef void subtree_rates(self, const TreeKin* k) noexcept nogil:
        """kw[19 NB:]: per body j, the rates of its subtree sums (after subtree_sums, at k's velocities): d(m rc)/dt =
        m vc (3) and dK/dt = w x Iw - Iw w x + m (2 rc.vc 1 - vc rc^T - rc vc^T) (9), summed over the subtree."""
        cdef double* S = self.kw + 19 * self.nb
        cdef double* s
        cdef double m, rv
        cdef double rc[3]
        cdef double Iw[9]
        cdef double w[3]
        cdef double vc[3]
        cdef double WI[9]
        cdef int j, a, b
        for j in range(self.nb):
            s = S + 12 * j
            kx_body_mass(k, j, &m, rc, Iw)
            self.point_motion(k, NULL, j, rc, w, vc, NULL, NULL)
            rv = rc[0] * vc[0] + rc[1] * vc[1] + rc[2] * vc[2]
            for b in range(3):                          # WI = w x Iw (column b: w x Iw[:, b])
                WI[b] = w[1] * Iw[6 + b] - w[2] * Iw[3 + b]
                WI[3 + b] = w[2] * Iw[b] - w[0] * Iw[6 + b]
                WI[6 + b] = w[0] * Iw[3 + b] - w[1] * Iw[b]
            for a in range(3):
                s[a] = m * vc[a]
                for b in range(3):                      # Iw w x = -(w x Iw)^T (Iw symmetric)
                    s[3 + 3 * a + b] = WI[3 * a + b] + WI[3 * b + a] + m * (
                        (2.0 * rv if a == b else 0.0) - vc[a] * rc[b] - rc[a] * vc[b])
        for j in range(self.nb - 1, -1, -1):
            if self.parent[j] >= 0:
                for a in range(12):
                    S[12 * self.parent[j] + a] += S[12 * j + a]

    cdef void momentum_matrix(self, const TreeKin* k, const double* G, double* AG, int ld, int rows) noexcept nogil:
        """Columns of the momentum about G of a unit velocity (after subtree_sums): per joint j, velocity c,
        with v_O = H_v + r_j x H_w (the velocity field's value at the world origin): l = M_j v_O + H_w x S1_j,
        k_G = K_j H_w + S1_j x v_O - G x l (Orin, Goswami and Lee 2013, eq 17 summed over the subtree).
        rows 6: AG = [k_G; l]; rows 3: AG = l (for the CoM Jacobian)."""
        cdef int j, c, a, col
        cdef double hv[3]
        cdef double hw[3]
        cdef double vO[3]
        cdef double l[3]
        cdef double kk[3]
        cdef const double* s
        for j in range(self.nb):
            s = self.kw + 6 * self.nb + 13 * j
            for c in range(self.nvj[j]):
                kx_column(k, self.hcols, j, c, hv, hw)
                vO[0], vO[1], vO[2] = hv[0], hv[1], hv[2]
                kx_cross_add(k.r + 3 * j, hw, vO)
                for a in range(3):
                    l[a] = s[0] * vO[a]
                kx_cross_add(hw, s + 1, l)
                col = self.iv[j] + c
                if rows == 3:
                    for a in range(3):
                        AG[a * ld + col] = l[a]
                    continue
                kx_mv(s + 4, hw, kk)
                kx_cross_add(s + 1, vO, kk)
                for a in range(3):
                    AG[a * ld + col] = kk[a] - (G[(a + 1) % 3] * l[(a + 2) % 3] - G[(a + 2) % 3] * l[(a + 1) % 3])
                    AG[(3 + a) * ld + col] = l[a]

    cdef void momentum_matrix_dot(self, const TreeKin* k, const double* u, const double* G, const double* Gd,
                                  double* AGd) noexcept nogil:
        """AGd (6 x nv) = dA_G/dt (after subtree_sums and subtree_rates; Gd the centre of mass velocity): the
        rates of momentum_matrix's columns, with vOd = hvd + vr_j x hw + r_j x hwd: ld = M_j vOd + hwd x S1_j +
        hw x dS1_j, dk_O = dK_j hw + K_j hwd + dS1_j x vO + S1_j x vOd, dk_G = dk_O - Gd x l - G x ld."""
        cdef int n = self.nv, j, c, a, col
        cdef double hv[3]
        cdef double hw[3]
        cdef double hvd[3]
        cdef double hwd[3]
        cdef double vO[3]
        cdef double vOd[3]
        cdef double l[3]
        cdef double ld[3]
        cdef double kd[3]
        cdef double t[3]
        cdef const double* s
        cdef const double* sd
        for j in range(self.nb):
            s = self.kw + 6 * self.nb + 13 * j
            sd = self.kw + 19 * self.nb + 12 * j
            for c in range(self.nvj[j]):
                kx_column(k, self.hcols, j, c, hv, hw)
                self.column_dot(k, u, j, c, hv, hw, hvd, hwd)
                for a in range(3):
                    vO[a] = hv[a]
                    vOd[a] = hvd[a]
                kx_cross_add(k.r + 3 * j, hw, vO)
                kx_cross_add(k.vr + 3 * j, hw, vOd)
                kx_cross_add(k.r + 3 * j, hwd, vOd)
                for a in range(3):
                    l[a] = s[0] * vO[a]
                    ld[a] = s[0] * vOd[a]
                kx_cross_add(hw, s + 1, l)
                kx_cross_add(hwd, s + 1, ld)
                kx_cross_add(hw, sd, ld)
                kx_mv(sd + 3, hw, kd)
                kx_mv(s + 4, hwd, t)
                for a in range(3):
                    kd[a] += t[a]
                kx_cross_add(sd, vO, kd)
                kx_cross_add(s + 1, vOd, kd)
                kx_cross_add(l, Gd, kd)                 # - Gd x l
                kx_cross_add(ld, G, kd)                 # - G x ld
                col = self.iv[j] + c
                for a in range(3):
                    AGd[a * n + col] = kd[a]
                    AGd[(3 + a) * n + col] = ld[a]

    cdef void momentum(self, const TreeKin* k, const double* acc, const double* G, double* h,
                       double* hd) noexcept nogil:
        """h = (k_G; l) = sum over bodies (Iw w + m (rc - G) x vc ; m vc); with acc: hd = dh/dt = sum (Iw al +
        w x Iw w + m (rc - G) x ac ; m ac)."""
        cdef int j, a
        cdef double m
        cdef double rc[3]
        cdef double Iw[9]
        cdef double w[3]
        cdef double vc[3]
        cdef double al[3]
        cdef double ac[3]
        cdef double d[3]
        cdef double t[3]
        memset(h, 0, 6 * sizeof(double))
        if acc != NULL:
            memset(hd, 0, 6 * sizeof(double))
        for j in range(self.nb):
            kx_body_mass(k, j, &m, rc, Iw)
            self.point_motion(k, acc, j, rc, w, vc, al, ac)
            for a in range(3):
                d[a] = rc[a] - G[a]
                h[3 + a] += m * vc[a]
            kx_mv(Iw, w, t)
            for a in range(3):
                h[a] += t[a] + m * (d[(a + 1) % 3] * vc[(a + 2) % 3] - d[(a + 2) % 3] * vc[(a + 1) % 3])
            if acc == NULL:
                continue
            kx_cross_add(w, t, hd)
            kx_mv(Iw, al, t)
            for a in range(3):
                hd[a] += t[a] + m * (d[(a + 1) % 3] * ac[(a + 2) % 3] - d[(a + 2) % 3] * ac[(a + 1) % 3])
                hd[3 + a] += m * ac[a]

    # ================================================================== Python API (the runtime wraps it)
    # Arguments: C-contiguous float64 arrays are taken as they are (a type and size check in C), anything else is
    # converted once (arg_f64); results are new arrays (new_f64) or the caller's `out` (out_f64).
    cdef int kin_prepare(self, object q, object u, object ud, TreeKin* k) except -1:
        """The kinematics of (q, u) (u None: at rest) and, with ud, the body accelerations in kw."""
        q = arg_f64(q, self.nq, "q")
        cdef const double* pu = self.zu
        if u is not None:
            u = arg_f64(u, self.nv, "u")
            pu = f64_ptr(u) if self.nv else self.zu
        if self.parent == NULL or self.tree_kin(f64_ptr(q), pu, k) != 0:
            raise NotImplementedError("this kernel has no tree kinematics")
        if ud is not None:
            ud = arg_f64(ud, self.nv, "udot")
            self.tree_acc(f64_ptr(q), pu, f64_ptr(ud) if self.nv else self.zu, self.kw)
        return 0

    cdef int kin_check(self) except -1:
        """The batches' check that the model has tree kinematics (its module called init_tree)."""
        if self.parent == NULL:
            raise NotImplementedError("this kernel has no tree kinematics")
        return 0

    cdef int frame_index(self, int f) except -1:
        if not 0 <= f < self.nf:
            raise IndexError(f"frame {f}: the model has {self.nf} frames")
        return f

    def set_frames(self, body, X):
        """The frames: body (nf ints, -1: ground) and X (nf x 12: rotation row major, origin) in that body's
        reference frame."""
        cdef long[::1] b = np.ascontiguousarray(body, dtype=np.int_).reshape(-1)
        cdef double[:, ::1] x = np.ascontiguousarray(X, dtype=np.float64).reshape(-1, 12)
        cdef int f, n = b.shape[0]
        if x.shape[0] != n:
            raise ValueError("set_frames: one placement per frame")
        for f in range(n):
            if not -1 <= b[f] < self.nb:
                raise ValueError(f"set_frames: frame {f} on body {b[f]} of {self.nb}")
        free(self.fbody); free(self.fX)
        self.nf = 0
        self.fbody = <int*> calloc(n + 1, sizeof(int))
        self.fX = <double*> calloc(12 * n + 1, sizeof(double))
        if self.fbody == NULL or self.fX == NULL:
            raise MemoryError()
        for f in range(n):
            self.fbody[f] = b[f]
            if n:
                memcpy(self.fX + 12 * f, &x[f, 0], 12 * sizeof(double))
        self.nf = n

    def frame_placement(self, q, int f):
        """(R (3 x 3, frame -> world), p (3)): frame f at q."""
        cdef TreeKin k
        self.frame_index(f)
        self.kin_prepare(q, None, None, &k)
        R, p = new_f64(3, 3), new_f64(3, 0)
        self.frame_world(&k, f, f64_ptr(R), f64_ptr(p))
        return R, p

    def frame_motion(self, q, u, ud, int f, int ref, int what):
        """(6,), angular first, of frame f in reference ref: what 0 its velocity, 1 its spatial acceleration,
        2 the classical acceleration of the body point at the reference point (ud None: 0)."""
        cdef TreeKin k
        cdef double R[9]
        cdef double x[3]
        cdef double w[3]
        cdef double v[3]
        cdef double al[3]
        cdef double a[3]
        cdef double vo[6]
        cdef int c
        self.frame_index(f)
        self.kin_prepare(q, u, (ud if ud is not None else self.zeros_v()) if what else None, &k)
        out = new_f64(6, 0)
        cdef double* o = f64_ptr(out)
        self.frame_world(&k, f, R, x)
        self.point_motion(&k, self.kw if what else NULL, self.fbody[f], x, w, v, al, a)
        if what == 0:
            kx_shift(ref, R, x, w, v, o)
            return out
        for c in range(3):                              # the spatial acceleration at x: (al ; a - w x v)
            a[c] -= w[(c + 1) % 3] * v[(c + 2) % 3] - w[(c + 2) % 3] * v[(c + 1) % 3]
        kx_shift(ref, R, x, al, a, o)
        if what == 2:                                   # classical at the reference point: + w x v there
            kx_shift(ref, R, x, w, v, vo)
            kx_cross_add(vo, vo + 3, o + 3)
        return out

    cdef object zeros_v(self):
        out = new_f64(self.nv, 0)
        memset(f64_ptr(out), 0, self.nv * sizeof(double))
        return out

    cdef int frame_point(self, const TreeKin* k, int f, object point, double* R, double* x) except -1:
        """World axes R and origin x of frame f, x moved to `point` (frame axes, from its origin) if given."""
        cdef double d[3]
        cdef int c
        self.frame_world(k, f, R, x)
        if point is not None:
            point = arg_f64(point, 3, "point")
            kx_mv(R, f64_ptr(point), d)
            for c in range(3):
                x[c] += d[c]
        return 0

    def frame_jacobian(self, q, int f, int ref, point=None, out=None):
        """(6 x nv, angular rows first): the Jacobian of frame f in reference ref, or of the point `point` (frame
        axes, from its origin) fixed with it; into `out` when given."""
        cdef TreeKin k
        cdef double R[9]
        cdef double x[3]
        self.frame_index(f)
        self.kin_prepare(q, None, None, &k)
        out = out_f64(out, 6, self.nv, "out")
        self.frame_point(&k, f, point, R, x)
        if self.fbody[f] < 0:
            memset(f64_ptr(out), 0, 6 * self.nv * sizeof(double))
        else:
            self.point_jacobian(&k, self.fbody[f], x, ref, R, f64_ptr(out))
        return out

    def frame_jacobian_dot(self, q, u, int f, int ref, point=None, out=None):
        """(6 x nv): dJ/dt along u of frame_jacobian(q, f, ref, point)."""
        cdef TreeKin k
        cdef double R[9]
        cdef double x[3]
        cdef double w[3]
        cdef double v[3]
        self.frame_index(f)
        if u is None:
            raise ValueError("u: required (the Jacobian's rate along u)")
        u = arg_f64(u, self.nv, "u")
        self.kin_prepare(q, u, None, &k)
        out = out_f64(out, 6, self.nv, "out")
        self.frame_point(&k, f, point, R, x)
        if self.fbody[f] < 0:
            memset(f64_ptr(out), 0, 6 * self.nv * sizeof(double))
        else:
            self.point_motion(&k, NULL, self.fbody[f], x, w, v, NULL, NULL)
            self.point_jacobian_dot(&k, f64_ptr(u) if self.nv else self.zu, self.fbody[f], x, v, ref, R,
                                    w, f64_ptr(out))
        return out

    def frame_velocity_dq(self, q, u, int f, int ref, out=None):
        """(6 x nv): d(frame_velocity(q, u, f, ref))/dq in tangent coordinates (q moved along each velocity
        column: velocity_bases). World: D_k = S_k x (V_b - W_k); at the frame's origin x (moving at
        dx = S_k's velocity there): d(v_O + w x x) = D_v + D_w x x + w x dx; local: R^T (d - w_k x (w; v_x))."""
        cdef TreeKin k
        cdef double R[9]
        cdef double x[3]
        cdef double V[6]
        cdef double S[6]
        cdef double D[6]
        cdef double T[6]
        cdef double L[6]
        cdef double dx[3]
        cdef int b, j, c, a, col, n = self.nv
        self.frame_index(f)
        if u is None:
            raise ValueError("u: required")
        u = arg_f64(u, n, "u")
        self.kin_prepare(q, u, None, &k)
        out = out_f64(out, 6, n, "out")
        cdef double* o = f64_ptr(out)
        memset(o, 0, 6 * n * sizeof(double))
        b = self.fbody[f]
        if b < 0:
            return out
        self.frame_world(&k, f, R, x)
        self.velocity_bases(&k, f64_ptr(u) if n else self.zu)
        kx_body_velocity(&k, b, V)
        L[0], L[1], L[2] = V[0], V[1], V[2]             # (w; v_x): the velocity at x, world axes
        L[3], L[4], L[5] = V[3], V[4], V[5]
        kx_cross_add(V, x, L + 3)
        j = b
        while j >= 0:
            for c in range(self.nvj[j]):
                col = self.iv[j] + c
                kx_spatial(&k, self.hcols, j, c, S)
                for a in range(6):
                    T[a] = V[a] - self.kwv[6 * col + a]
                kx_cross_motion(S, T, D)
                if ref != REF_WORLD:
                    dx[0], dx[1], dx[2] = S[3], S[4], S[5]
                    kx_cross_add(S, x, dx)
                    kx_cross_add(D, x, D + 3)
                    kx_cross_add(V, dx, D + 3)
                    if ref == REF_LOCAL:
                        kx_cross_add(L, S, D)           # - w_k x w
                        kx_cross_add(L + 3, S, D + 3)   # - w_k x v_x
                        kx_mtv(R, D, T)
                        kx_mtv(R, D + 3, T + 3)
                        memcpy(D, T, 6 * sizeof(double))
                for a in range(6):
                    o[a * n + col] = D[a]
            j = self.parent[j]
        return out

    def com_velocity_dq(self, q, u, out=None):
        """(3 x nv): d(centre of mass velocity)/dq in tangent coordinates: per body b and velocity k above it,
        with D = S_k x (V_b - W_k): d(m v_c) = m (D_v + D_w x c + w_b x dc), dc = S_k's velocity at c, over M."""
        cdef TreeKin k
        cdef double V[6]
        cdef double S[6]
        cdef double T[6]
        cdef double D[6]
        cdef double dc[3]
        cdef double rc[3]
        cdef double Iw[9]
        cdef double m, M = 0.0
        cdef int b, j, c, a, col, n = self.nv
        if u is None:
            raise ValueError("u: required")
        u = arg_f64(u, n, "u")
        self.kin_prepare(q, u, None, &k)
        out = out_f64(out, 3, n, "out")
        cdef double* o = f64_ptr(out)
        memset(o, 0, 3 * n * sizeof(double))
        self.velocity_bases(&k, f64_ptr(u) if n else self.zu)
        for b in range(self.nb):
            kx_body_mass(&k, b, &m, rc, Iw)
            M += m
            if m == 0.0:
                continue
            kx_body_velocity(&k, b, V)
            j = b
            while j >= 0:
                for c in range(self.nvj[j]):
                    col = self.iv[j] + c
                    kx_spatial(&k, self.hcols, j, c, S)
                    for a in range(6):
                        T[a] = V[a] - self.kwv[6 * col + a]
                    kx_cross_motion(S, T, D)
                    dc[0], dc[1], dc[2] = S[3], S[4], S[5]
                    kx_cross_add(S, rc, dc)
                    kx_cross_add(D, rc, D + 3)
                    kx_cross_add(V, dc, D + 3)
                    for a in range(3):
                        o[a * n + col] += m * D[3 + a]
                j = self.parent[j]
        if M > 0:
            for a in range(3 * n):
                o[a] /= M
        return out

    def centroidal_dq(self, q, u, out=None):
        """(6 x nv): d h_G/dq in tangent coordinates, h_G = sum over bodies (Iw w + m (c - G) x v_c; m v_c): per
        body b and velocity k above it, D = S_k x (V_b - W_k), dw = D_w, dv_c = D_v + D_w x c + w x dc, dc = S_k's
        velocity at c, dIw w = w_k x (Iw w) - Iw (w_k x w); then - dG x l over the whole tree, dG = sum m dc / M."""
        cdef TreeKin k
        cdef double V[6]
        cdef double S[6]
        cdef double T[6]
        cdef double D[6]
        cdef double dc[3]
        cdef double rc[3]
        cdef double vc[3]
        cdef double d[3]
        cdef double Iw[9]
        cdef double Iww[3]
        cdef double t[3]
        cdef double x[3]
        cdef double tot[13]
        cdef double G[3]
        cdef double l[3]
        cdef double m, M
        cdef int b, j, c, a, col, n = self.nv
        if u is None:
            raise ValueError("u: required")
        u = arg_f64(u, n, "u")
        self.kin_prepare(q, u, None, &k)
        out = out_f64(out, 6, n, "out")
        dG = new_f64(3, n)
        cdef double* o = f64_ptr(out)
        cdef double* pg = f64_ptr(dG)
        memset(o, 0, 6 * n * sizeof(double))
        memset(pg, 0, 3 * n * sizeof(double))
        M = self.subtree_sums(&k, False)
        self.totals(tot)
        for a in range(3):
            G[a] = tot[1 + a] / M if M > 0 else 0.0
            l[a] = 0.0
        self.velocity_bases(&k, f64_ptr(u) if n else self.zu)
        for b in range(self.nb):
            kx_body_mass(&k, b, &m, rc, Iw)
            kx_body_velocity(&k, b, V)
            vc[0], vc[1], vc[2] = V[3], V[4], V[5]      # v_c = v_O + w x c
            kx_cross_add(V, rc, vc)
            kx_mv(Iw, V, Iww)
            for a in range(3):
                l[a] += m * vc[a]
                d[a] = rc[a] - G[a]
            j = b
            while j >= 0:
                for c in range(self.nvj[j]):
                    col = self.iv[j] + c
                    kx_spatial(&k, self.hcols, j, c, S)
                    for a in range(6):
                        T[a] = V[a] - self.kwv[6 * col + a]
                    kx_cross_motion(S, T, D)
                    dc[0], dc[1], dc[2] = S[3], S[4], S[5]
                    kx_cross_add(S, rc, dc)
                    kx_cross_add(D, rc, D + 3)          # D_v: now dv_c
                    kx_cross_add(V, dc, D + 3)
                    kx_mv(Iw, D, t)                     # Iw dw
                    kx_cross_add(S, Iww, t)             # + w_k x (Iw w)
                    kx_cross(S, V, x)                   # - Iw (w_k x w)
                    kx_mv(Iw, x, T)
                    kx_cross(d, D + 3, x)               # (c - G) x dv_c + dc x v_c
                    kx_cross_add(dc, vc, x)
                    for a in range(3):
                        o[a * n + col] += t[a] - T[a] + m * x[a]
                        o[(3 + a) * n + col] += m * D[3 + a]
                        pg[a * n + col] += m * dc[a]
                j = self.parent[j]
        for col in range(n):                            # - dG x l
            for a in range(3):
                x[a] = pg[a * n + col] / M if M > 0 else 0.0
            t[0], t[1], t[2] = 0.0, 0.0, 0.0
            kx_cross_add(l, x, t)
            for a in range(3):
                o[a * n + col] += t[a]
        return out

    cdef void acceleration_bases(self, const TreeKin* k, const double* u, const double* ud) noexcept nogil:
        """kwv[6 nv:] (nv x 6): per velocity k (column c of body j), the acceleration base B_k = A_j - the sum over
        the columns c' of j that c carries of (S_c' ud_c' + dS_c'/dt u_c'), dS_c'/dt = V_c' x S_c', V_c' = V_parent
        + the carriers' S u (after velocity_bases and tree_acc); kwv[12 nv:]: X_k. A body b below: dA_b/de_k =
        S_k x (A_b - B_k) - (S_k x W_k) x (V_b - W_k) + X_k (the velocity derivatives' argument carried to the
        accelerations)."""
        cdef double Aj[6]
        cdef double S[6]
        cdef double Vc[6]
        cdef double T[6]
        cdef double Sd[6]
        cdef double Sk[6]
        cdef double* B
        cdef double* X
        cdef int j, c, c2, c3, a, pj
        for j in range(self.nb):
            self.body_acceleration(k, j, Aj)
            pj = self.parent[j]
            for c in range(self.nvj[j]):
                B = self.kwv + 6 * self.nv + 6 * (self.iv[j] + c)
                memcpy(B, Aj, 6 * sizeof(double))
                for c2 in range(self.nvj[j]):
                    if not (self.scarry[6 * j + c2] >> c & 1):
                        continue
                    kx_spatial(k, self.hcols, j, c2, S)
                    kx_body_velocity(k, pj, Vc)
                    for c3 in range(self.nvj[j]):
                        if self.scarry[6 * j + c2] >> c3 & 1:
                            kx_spatial(k, self.hcols, j, c3, T)
                            for a in range(6):
                                Vc[a] += T[a] * u[self.iv[j] + c3]
                    kx_cross_motion(Vc, S, Sd)
                    for a in range(6):
                        B[a] -= S[a] * ud[self.iv[j] + c2] + Sd[a] * u[self.iv[j] + c2]
                # X_k: the columns c' that c does not carry but whose own carriers it does (a quaternion's rate
                # columns) change their rates: sum over them of (S_k x (those carriers' S u)) x S_c' u_c'
                X = self.kwv + 12 * self.nv + 6 * (self.iv[j] + c)
                memset(X, 0, 6 * sizeof(double))
                kx_spatial(k, self.hcols, j, c, Sk)
                for c2 in range(self.nvj[j]):
                    if self.scarry[6 * j + c2] >> c & 1:
                        continue
                    memset(Vc, 0, 6 * sizeof(double))
                    for c3 in range(self.nvj[j]):
                        if self.scarry[6 * j + c2] >> c3 & 1 and self.scarry[6 * j + c3] >> c & 1:
                            kx_spatial(k, self.hcols, j, c3, T)
                            for a in range(6):
                                Vc[a] += T[a] * u[self.iv[j] + c3]
                    kx_cross_motion(Sk, Vc, T)
                    kx_spatial(k, self.hcols, j, c2, S)
                    kx_cross_motion(T, S, Sd)
                    for a in range(6):
                        X[a] += Sd[a] * u[self.iv[j] + c2]

    cdef void body_acceleration(self, const TreeKin* k, int b, double* A) noexcept nogil:
        """A = body b's world spatial acceleration at the world origin (after tree_acc): (al; a_r - w x v_r - al x r)."""
        cdef int a
        if b < 0:
            memset(A, 0, 6 * sizeof(double))
            return
        for a in range(3):
            A[a] = self.kw[6 * b + a]
            A[3 + a] = self.kw[6 * b + 3 + a]
        kx_cross_add(k.vr + 3 * b, k.w + 3 * b, A + 3)          # - w x v_r
        kx_cross_add(k.r + 3 * b, A, A + 3)                     # - al x r

    cdef void column_derivatives(self, const TreeKin* k, const double* u, int j, int c, const double* V,
                                 const double* A, double* S, double* Dv, double* D, double* E) noexcept nogil:
        """For velocity k = column c of body j and a body below with world spatial velocity V and acceleration A
        (after velocity_bases and acceleration_bases): S = S_k, Dv = dV/de_k = S_k x (V - W_k), D = dA/de_k =
        S_k x (A - B_k) - (S_k x W_k) x (V - W_k) + X_k, E = dA/du_k = V_c(k) x S_k + S_k x (V - W_k)."""
        cdef double T[6]
        cdef double U[6]
        cdef double F[6]
        cdef int a, c3, n = self.nv, col = self.iv[j] + c
        kx_spatial(k, self.hcols, j, c, S)
        for a in range(6):
            T[a] = V[a] - self.kwv[6 * col + a]                          # V - W_k
            U[a] = A[a] - self.kwv[6 * n + 6 * col + a]                  # A - B_k
        kx_cross_motion(S, T, Dv)
        kx_cross_motion(S, self.kwv + 6 * col, F)                        # S_k x W_k
        kx_cross_motion(S, U, D)
        kx_cross_motion(F, T, U)
        for a in range(6):
            D[a] += self.kwv[12 * n + 6 * col + a] - U[a]
        kx_body_velocity(k, self.parent[j], U)                           # V_c(k) = V_parent + carriers' S u
        for c3 in range(self.nvj[j]):
            if self.scarry[6 * j + c] >> c3 & 1:
                kx_spatial(k, self.hcols, j, c3, F)
                for a in range(6):
                    U[a] += F[a] * u[self.iv[j] + c3]
        kx_cross_motion(U, S, E)
        kx_cross_motion(S, T, U)
        for a in range(6):
            E[a] += U[a]

    def centroidal_rate_derivatives(self, q, u, ud):
        """(dhd/dq, dhd/du) (6 x nv each, tangent coordinates) of the momentum's rate hd = sum over bodies (Iw al
        + w x Iw w + m (c - G) x a_c; m a_c), a_c = a_O + al x c + w x v_c the centroid's classical acceleration;
        dhd/dud = A_G. Per body and velocity k above it, from column_derivatives: dw, dal, dv_c, da_c, dc = S_k's
        velocity at c and dIw y = w_k x Iw y - Iw (w_k x y) (q side; 0 on the u side); then - dG x sum m a_c."""
        cdef TreeKin k
        cdef double V[6]
        cdef double A[6]
        cdef double S[6]
        cdef double Dv[6]
        cdef double D[6]
        cdef double E[6]
        cdef double rc[3]
        cdef double Iw[9]
        cdef double vc[3]
        cdef double ac[3]
        cdef double d[3]
        cdef double Iww[3]
        cdef double Ial[3]
        cdef double dc[3]
        cdef double dvc[3]
        cdef double dac[3]
        cdef double t[3]
        cdef double y[3]
        cdef double z1[3]
        cdef double z2[3]
        cdef double tot[13]
        cdef double G[3]
        cdef double la[3]
        cdef double m, M
        cdef int b, j, c, a, col, side, n = self.nv
        if u is None or ud is None:
            raise ValueError("u, udot: required")
        u = arg_f64(u, n, "u")
        ud = arg_f64(ud, n, "udot")
        self.kin_prepare(q, u, ud, &k)
        dq, du, dG = new_f64(6, n), new_f64(6, n), new_f64(3, n)
        cdef double* oq = f64_ptr(dq)
        cdef double* ou = f64_ptr(du)
        cdef double* pg = f64_ptr(dG)
        cdef double* o
        memset(oq, 0, 6 * n * sizeof(double))
        memset(ou, 0, 6 * n * sizeof(double))
        memset(pg, 0, 3 * n * sizeof(double))
        cdef const double* pu = f64_ptr(u) if n else self.zu
        M = self.subtree_sums(&k, False)
        self.totals(tot)
        for a in range(3):
            G[a] = tot[1 + a] / M if M > 0 else 0.0
            la[a] = 0.0
        self.velocity_bases(&k, pu)
        self.acceleration_bases(&k, pu, f64_ptr(ud) if n else self.zu)
        for b in range(self.nb):
            kx_body_mass(&k, b, &m, rc, Iw)
            kx_body_velocity(&k, b, V)
            self.body_acceleration(&k, b, A)
            vc[0], vc[1], vc[2] = V[3], V[4], V[5]
            kx_cross_add(V, rc, vc)
            ac[0], ac[1], ac[2] = A[3], A[4], A[5]
            kx_cross_add(A, rc, ac)
            kx_cross_add(V, vc, ac)
            kx_mv(Iw, V, Iww)
            kx_mv(Iw, A, Ial)
            for a in range(3):
                la[a] += m * ac[a]
                d[a] = rc[a] - G[a]
            j = b
            while j >= 0:
                for c in range(self.nvj[j]):
                    col = self.iv[j] + c
                    self.column_derivatives(&k, pu, j, c, V, A, S, Dv, D, E)
                    for side in range(2):
                        o = oq if side == 0 else ou
                        if side == 0:
                            dc[0], dc[1], dc[2] = S[3], S[4], S[5]
                            kx_cross_add(S, rc, dc)
                        else:
                            memcpy(Dv, S, 6 * sizeof(double))       # dV/du_k = S_k, dA/du_k = E
                            memcpy(D, E, 6 * sizeof(double))
                            dc[0] = dc[1] = dc[2] = 0.0
                        dvc[0], dvc[1], dvc[2] = Dv[3], Dv[4], Dv[5]
                        kx_cross_add(Dv, rc, dvc)
                        kx_cross_add(V, dc, dvc)
                        dac[0], dac[1], dac[2] = D[3], D[4], D[5]  # da_c = dA_v + dal x c + al x dc + dw x v_c + w x dv_c
                        kx_cross_add(D, rc, dac)
                        kx_cross_add(A, dc, dac)
                        kx_cross_add(Dv, vc, dac)
                        kx_cross_add(V, dvc, dac)
                        kx_mv(Iw, D, t)                             # Iw dal + dw x Iw w + w x Iw dw
                        kx_cross_add(Dv, Iww, t)
                        kx_mv(Iw, Dv, y)
                        kx_cross_add(V, y, t)
                        if side == 0:                               # + dIw al + w x (dIw w)
                            kx_cross_add(S, Ial, t)                 # dIw al = w_k x Iw al - Iw (w_k x al)
                            kx_cross(S, A, z1)
                            kx_mv(Iw, z1, z2)
                            for a in range(3):
                                t[a] -= z2[a]
                            kx_cross(S, Iww, y)                     # dIw w = w_k x Iw w - Iw (w_k x w)
                            kx_cross(S, V, z1)
                            kx_mv(Iw, z1, z2)
                            for a in range(3):
                                y[a] -= z2[a]
                            kx_cross_add(V, y, t)
                        kx_cross(d, dac, z1)                        # m ((c - G) x da_c + dc x a_c)
                        kx_cross_add(dc, ac, z1)
                        for a in range(3):
                            o[a * n + col] += t[a] + m * z1[a]
                            o[(3 + a) * n + col] += m * dac[a]
                            if side == 0:
                                pg[a * n + col] += m * dc[a]
                j = self.parent[j]
        for col in range(n):                            # - dG x sum m a_c, dG = sum m dc / M
            for a in range(3):
                z1[a] = pg[a * n + col] / M if M > 0 else 0.0
                t[a] = 0.0
            kx_cross_add(la, z1, t)
            for a in range(3):
                oq[a * n + col] += t[a]
        return dq, du

    def frame_acceleration_derivatives(self, q, u, ud, int f, int ref, bint classical):
        """(da/dq, da/du) (6 x nv each, tangent coordinates) of frame f's spatial (classical: classical)
        acceleration in ref, as frame_motion's; da/dud is its Jacobian. World, per velocity k above the frame's
        body b: dA/de_k = S_k x (A_b - B_k) - (S_k x W_k) x (V_b - W_k), dA/du_k = V_c(k) x S_k + S_k x (V_b - W_k);
        then shifted to the frame's origin x (moving with e_k), the classical part's w x v, and the local axes."""
        cdef TreeKin k
        cdef double R[9]
        cdef double x[3]
        cdef double V[6]
        cdef double A[6]
        cdef double S[6]
        cdef double T[6]
        cdef double U[6]
        cdef double D[6]
        cdef double Dv[6]
        cdef double E[6]
        cdef double Y[6]
        cdef double dx[3]
        cdef double vx[3]
        cdef int b, j, c, c3, a, col, side, n = self.nv
        self.frame_index(f)
        if u is None or ud is None:
            raise ValueError("u, udot: required")
        u = arg_f64(u, n, "u")
        ud = arg_f64(ud, n, "udot")
        self.kin_prepare(q, u, ud, &k)
        dq, du = new_f64(6, n), new_f64(6, n)
        cdef double* oq = f64_ptr(dq)
        cdef double* ou = f64_ptr(du)
        memset(oq, 0, 6 * n * sizeof(double))
        memset(ou, 0, 6 * n * sizeof(double))
        b = self.fbody[f]
        if b < 0:
            return dq, du
        cdef const double* pu = f64_ptr(u) if n else self.zu
        self.frame_world(&k, f, R, x)
        self.velocity_bases(&k, pu)
        self.acceleration_bases(&k, pu, f64_ptr(ud) if n else self.zu)
        kx_body_velocity(&k, b, V)
        self.body_acceleration(&k, b, A)
        vx[0], vx[1], vx[2] = V[3], V[4], V[5]          # the velocity of the body point at x
        kx_cross_add(V, x, vx)
        Y[0], Y[1], Y[2] = A[0], A[1], A[2]             # the acceleration at x, world axes (spatial or classical)
        Y[3], Y[4], Y[5] = A[3], A[4], A[5]
        kx_cross_add(A, x, Y + 3)
        if classical:
            kx_cross_add(V, vx, Y + 3)
        j = b
        while j >= 0:
            for c in range(self.nvj[j]):
                col = self.iv[j] + c
                self.column_derivatives(&k, pu, j, c, V, A, S, Dv, D, E)
                for side in range(2):                                    # 0: d/de_k (D, the frame moves), 1: d/du_k (E)
                    if side == 0:
                        memcpy(U, D, 6 * sizeof(double))
                        dx[0], dx[1], dx[2] = S[3], S[4], S[5]           # dx: S_k's velocity at x
                        kx_cross_add(S, x, dx)
                    else:
                        memcpy(U, E, 6 * sizeof(double))
                        dx[0] = dx[1] = dx[2] = 0.0
                    kx_cross_add(U, x, U + 3)                            # at x: da_O + dal x x + al x dx
                    kx_cross_add(A, dx, U + 3)
                    if classical:                                        # + d(w x v_x)
                        if side == 0:                                    # dw, dv_x of the velocity derivative
                            T[0], T[1], T[2] = Dv[0], Dv[1], Dv[2]
                            T[3], T[4], T[5] = Dv[3], Dv[4], Dv[5]
                            kx_cross_add(Dv, x, T + 3)
                            kx_cross_add(V, dx, T + 3)
                        else:                                            # the Jacobian's column at x
                            T[0], T[1], T[2] = S[0], S[1], S[2]
                            T[3], T[4], T[5] = S[3], S[4], S[5]
                            kx_cross_add(S, x, T + 3)
                        kx_cross_add(T, vx, U + 3)
                        kx_cross_add(V, T + 3, U + 3)
                    if ref == REF_WORLD:                                 # at the world origin: - al x x etc. undone
                        if side == 0:
                            memcpy(U, D, 6 * sizeof(double))
                            if classical:
                                kx_cross_add(Dv, V + 3, U + 3)
                                kx_cross_add(V, Dv + 3, U + 3)
                        else:
                            memcpy(U, E, 6 * sizeof(double))
                            if classical:
                                kx_cross_add(S, V + 3, U + 3)
                                kx_cross_add(V, S + 3, U + 3)
                    elif ref == REF_LOCAL:
                        if side == 0:                                    # R^T (dY - w_k x Y)
                            kx_cross_add(Y, S, U)
                            kx_cross_add(Y + 3, S, U + 3)
                        kx_mtv(R, U, T)
                        kx_mtv(R, U + 3, T + 3)
                        memcpy(U, T, 6 * sizeof(double))
                    for a in range(6):
                        (oq if side == 0 else ou)[a * n + col] = U[a]
            j = self.parent[j]
        return dq, du

    def center_of_mass(self, q, u, ud):
        """(G, its velocity, its acceleration (3 each; u, ud None: 0), the total mass)."""
        cdef TreeKin k
        cdef double tot[13]
        cdef double h[6]
        cdef double hd[6]
        cdef double M
        cdef int c
        self.kin_prepare(q, u, ud, &k)
        G, V, A = new_f64(3, 0), new_f64(3, 0), new_f64(3, 0)
        cdef double* g = f64_ptr(G)
        cdef double* gv = f64_ptr(V)
        cdef double* ga = f64_ptr(A)
        M = self.subtree_sums(&k, False)
        self.totals(tot)
        for c in range(3):
            g[c] = tot[1 + c] / M if M > 0 else 0.0
        if u is None and ud is None:                    # at rest
            memset(gv, 0, 3 * sizeof(double))
            memset(ga, 0, 3 * sizeof(double))
            return G, V, A, M
        self.momentum(&k, self.kw if ud is not None else NULL, g, h, hd)
        for c in range(3):
            gv[c] = h[3 + c] / M if M > 0 else 0.0
            ga[c] = (hd[3 + c] / M if M > 0 else 0.0) if ud is not None else 0.0
        return G, V, A, M

    def com_jacobian(self, q, out=None):
        """(3 x nv): d(centre of mass velocity)/du; into `out` when given."""
        cdef TreeKin k
        cdef double M
        cdef double* o
        cdef int a
        self.kin_prepare(q, None, None, &k)
        out = out_f64(out, 3, self.nv, "out")
        o = f64_ptr(out)
        M = self.subtree_sums(&k, False)
        memset(o, 0, 3 * self.nv * sizeof(double))
        self.momentum_matrix(&k, NULL, o, self.nv, 3)
        if M > 0:
            for a in range(3 * self.nv):
                o[a] /= M
        return out

    def centroidal(self, q, u, ud):
        """(A_G (6 x nv), dA_G/dt along u (6 x nv), h_G = A_G u = (k_G; l) (6), its rate A_G ud + dA_G/dt u (6;
        ud None: 0), I_G (6 x 6, angular block first), G (3), the total mass): one kinematics pass, no
        accelerations."""
        cdef TreeKin k
        cdef double tot[13]
        cdef double Gd[3]
        cdef double M, gg, x, y
        cdef int a, b, j, n = self.nv
        if u is None:
            raise ValueError("u: required (zeros for a state at rest)")
        u = arg_f64(u, n, "u")
        cdef const double* pud = NULL
        if ud is not None:
            ud = arg_f64(ud, n, "udot")
            pud = f64_ptr(ud)
        self.kin_prepare(q, u, None, &k)
        AG, AGd, h, hd, I, Gv = new_f64(6, n), new_f64(6, n), new_f64(6, 0), new_f64(6, 0), new_f64(6, 6), new_f64(3, 0)
        cdef double* G = f64_ptr(Gv)
        cdef double* pI = f64_ptr(I)
        cdef double* pA = f64_ptr(AG)
        cdef double* pAd = f64_ptr(AGd)
        cdef const double* pu = f64_ptr(u) if n else self.zu
        M = self.subtree_sums(&k)
        self.totals(tot)
        for a in range(3):
            G[a] = tot[1 + a] / M if M > 0 else 0.0
        memset(pI, 0, 36 * sizeof(double))
        gg = G[0] * G[0] + G[1] * G[1] + G[2] * G[2]
        for a in range(3):                              # K about G: K_O - M (|G|^2 1 - G G^T); M 1
            for b in range(3):
                pI[6 * a + b] = tot[4 + 3 * a + b] - M * ((gg if a == b else 0.0) - G[a] * G[b])
            pI[6 * (3 + a) + 3 + a] = M
        memset(pA, 0, 6 * n * sizeof(double))
        self.momentum_matrix(&k, G, pA, n, 6)
        self.subtree_rates(&k)
        memset(Gd, 0, 3 * sizeof(double))
        for j in range(self.nb):
            if self.parent[j] < 0:
                for a in range(3):
                    Gd[a] += self.kw[19 * self.nb + 12 * j + a] / M if M > 0 else 0.0
        self.momentum_matrix_dot(&k, pu, G, Gd, pAd)
        for a in range(6):                              # h_G = A_G u, its rate A_G ud + dA_G/dt u
            x = y = 0.0
            for b in range(n):
                x += pA[a * n + b] * pu[b]
                y += pAd[a * n + b] * pu[b] + (pA[a * n + b] * pud[b] if pud != NULL else 0.0)
            f64_ptr(h)[a] = x
            f64_ptr(hd)[a] = y
        return AG, AGd, h, hd, I, Gv, M

    cdef void free_gyro(self, const TreeKin* k, const double* u, int b, double* D) noexcept nogil:
        """D (nv x nv) -= dC/du, C the bias forces of body b on a free joint with nothing below it (MuJoCo's
        standalone free body, whose implicitfast step takes them implicitly: mjd_freeMhat). v the world velocity
        of its origin, w its body rate, c its centroid and I_O its inertia about the origin (body axes), R = A_b:
            C_v = m R (w x (w x c)),    C_w = w x (I_O w)                   (Newton-Euler about the origin)
            dC_v/dw = R ((w . mc) 1 + w mc^T - 2 mc w^T),    dC_w/dw = [w]x I_O - [I_O w]x,    dC/dv = 0."""
        cdef int n = self.nv, o = self.iv[b], r, c
        cdef const double* ib = k.ib + 10 * b
        cdef const double* R = k.A + 9 * b
        cdef const double* w = u + o + 3
        cdef double I[9]
        cdef double G[9]
        cdef double Iw[3]
        cdef double wc = w[0] * ib[1] + w[1] * ib[2] + w[2] * ib[3]
        I[0], I[1], I[2], I[4], I[5], I[8] = ib[4], ib[5], ib[6], ib[7], ib[8], ib[9]
        I[3], I[6], I[7] = I[1], I[2], I[5]
        for r in range(3):
            for c in range(3):
                G[3 * r + c] = (wc if r == c else 0.0) + w[r] * ib[1 + c] - 2.0 * ib[1 + r] * w[c]
        for r in range(3):
            for c in range(3):
                D[(o + r) * n + o + 3 + c] -= R[3 * r] * G[c] + R[3 * r + 1] * G[3 + c] + R[3 * r + 2] * G[6 + c]
        kx_mv(I, w, Iw)
        for c in range(3):                                  # [w]x I_O, column c: w x I_O e_c
            D[(o + 3) * n + o + 3 + c] -= w[1] * I[6 + c] - w[2] * I[3 + c]
            D[(o + 4) * n + o + 3 + c] -= w[2] * I[c] - w[0] * I[6 + c]
            D[(o + 5) * n + o + 3 + c] -= w[0] * I[3 + c] - w[1] * I[c]
        D[(o + 3) * n + o + 4] += -Iw[2]                    # - [I_O w]x
        D[(o + 3) * n + o + 5] += Iw[1]
        D[(o + 4) * n + o + 3] += Iw[2]
        D[(o + 4) * n + o + 5] += -Iw[0]
        D[(o + 5) * n + o + 3] += -Iw[1]
        D[(o + 5) * n + o + 4] += Iw[0]

    cdef void tree_crba(self, const TreeKin* k, double* Mq) noexcept nogil:
        """Mq (nv x nv) = the mass matrix (after subtree_sums): per column j of joint b, the momentum about the
        world origin of the subtree of b moving with it, F = (k_O; l) = (K_b hw + S1_b x vO; M_b vO + hw x S1_b),
        paired with every column i of b and its ancestors: M_ij = hw_i . k_O + vO_i . l (Featherstone 2008,
        Table 6.2, composite inertias in world coordinates); plus the armature on the diagonal."""
        cdef int n = self.nv, b, j, a, c, i, col
        cdef double hv[3]
        cdef double hw[3]
        cdef double vO[3]
        cdef double l[3]
        cdef double kk[3]
        cdef double x
        cdef const double* s
        for b in range(self.nb):
            s = self.kw + 6 * self.nb + 13 * b
            for c in range(self.nvj[b]):
                kx_column(k, self.hcols, b, c, hv, hw)
                for i in range(3):
                    vO[i] = hv[i]
                kx_cross_add(k.r + 3 * b, hw, vO)
                for i in range(3):
                    l[i] = s[0] * vO[i]
                kx_cross_add(hw, s + 1, l)
                kx_mv(s + 4, hw, kk)
                kx_cross_add(s + 1, vO, kk)
                col = self.iv[b] + c
                a = b
                while a >= 0:
                    for j in range(self.nvj[a]):
                        if a == b and j > c:
                            break
                        kx_column(k, self.hcols, a, j, hv, hw)
                        kx_cross_add(k.r + 3 * a, hw, hv)          # its vO
                        x = (hw[0] * kk[0] + hw[1] * kk[1] + hw[2] * kk[2]
                             + hv[0] * l[0] + hv[1] * l[1] + hv[2] * l[2])
                        Mq[(self.iv[a] + j) * n + col] = x
                        Mq[col * n + self.iv[a] + j] = x
                    a = self.parent[a]
        for i in range(n):
            Mq[i * n + i] += k.arm[i]

    def tree_mass_matrix(self, q, out=None):
        """(nv x nv): the mass matrix M(q), armature included (CRBA on the tree kinematics)."""
        cdef TreeKin k
        self.kin_prepare(q, None, None, &k)
        out = out_f64(out, self.nv, self.nv, "out")
        memset(f64_ptr(out), 0, self.nv * self.nv * sizeof(double))
        self.subtree_sums(&k)
        self.tree_crba(&k, f64_ptr(out))
        return out

    def all_terms(self, q, u, int ref):
        """From one kinematics pass at (q, u): (the mass matrix (tree_crba), J of every frame (nf x 6 x nv, in
        ref), G, its velocity (3), J_com (3 x nv), A_G (6 x nv), h_G (6), I_G (6 x 6), the total mass)."""
        cdef TreeKin k
        cdef double tot[13]
        cdef double R[9]
        cdef double x[3]
        cdef double M, gg
        cdef int f, a, b, n = self.nv
        if u is None:
            raise ValueError("u: required")
        self.kin_prepare(q, u, None, &k)
        cdef npy_intp dims[3]
        dims[0], dims[1], dims[2] = self.nf, 6, n
        J = PyArray_EMPTY(3, dims, NPY_DOUBLE, 0)
        cdef double* pJ = f64_ptr(J)
        for f in range(self.nf):
            self.frame_world(&k, f, R, x)
            if self.fbody[f] < 0:
                memset(pJ + 6 * n * f, 0, 6 * n * sizeof(double))
            else:
                self.point_jacobian(&k, self.fbody[f], x, ref, R, pJ + 6 * n * f)
        Gv, V, Jc, AG, h, I = new_f64(3, 0), new_f64(3, 0), new_f64(3, n), new_f64(6, n), new_f64(6, 0), new_f64(6, 6)
        cdef double* G = f64_ptr(Gv)
        cdef double* ph = f64_ptr(h)
        cdef double* pI = f64_ptr(I)
        cdef double* pA = f64_ptr(AG)
        cdef double* pc = f64_ptr(Jc)
        M = self.subtree_sums(&k)
        self.totals(tot)
        for a in range(3):
            G[a] = tot[1 + a] / M if M > 0 else 0.0
        self.momentum(&k, NULL, G, ph, NULL)
        for a in range(3):
            f64_ptr(V)[a] = ph[3 + a] / M if M > 0 else 0.0
        memset(pA, 0, 6 * n * sizeof(double))
        self.momentum_matrix(&k, G, pA, n, 6)
        for a in range(3 * n):                          # J_com: the linear rows of A_G over M
            pc[a] = pA[3 * n + a] / M if M > 0 else 0.0
        memset(pI, 0, 36 * sizeof(double))
        gg = G[0] * G[0] + G[1] * G[1] + G[2] * G[2]
        for a in range(3):
            for b in range(3):
                pI[6 * a + b] = tot[4 + 3 * a + b] - M * ((gg if a == b else 0.0) - G[a] * G[b])
            pI[6 * (3 + a) + 3 + a] = M
        Mq = new_f64(n, n)
        memset(f64_ptr(Mq), 0, n * n * sizeof(double))
        self.tree_crba(&k, f64_ptr(Mq))
        return Mq, J, Gv, V, Jc, AG, h, I, M

    def subtree_mass(self, q):
        """(nb x 4): per body, the mass of its subtree and the subtree's centre of mass."""
        cdef TreeKin k
        cdef const double* s
        cdef double* o
        cdef int j, a
        self.kin_prepare(q, None, None, &k)
        out = new_f64(self.nb, 4)
        o = f64_ptr(out)
        self.subtree_sums(&k, False)
        for j in range(self.nb):
            s = self.kw + 6 * self.nb + 13 * j
            o[4 * j] = s[0]
            for a in range(3):
                o[4 * j + 1 + a] = s[1 + a] / s[0] if s[0] > 0 else 0.0
        return out

    # ================================================================== batches: one compiled loop over states
    def frames_at(self, const double[:, ::1] X, const long[::1] frames, int ref, double[:, :, ::1] pose,
                  double[:, :, ::1] vel):
        """Per row of X (q, then u where vel is given, in its leading columns): pose (m x k x 12, as
        frame_placement) and vel (m x k x 6, as frame_motion's velocity in ref, or None) of the k frames."""
        cdef TreeKin k
        cdef double w[3]
        cdef double v[3]
        cdef Py_ssize_t m = X.shape[0], s
        cdef int i, f, nf = frames.shape[0]
        self.kin_check()
        for i in range(nf):
            self.frame_index(frames[i])
        if X.shape[1] < self.nq + (self.nv if vel is not None else 0):
            raise ValueError(f"X: expected rows of at least {self.nq + (self.nv if vel is not None else 0)} values")
        if pose.shape[0] != m or pose.shape[1] != nf or pose.shape[2] != 12 or (vel is not None and (
                vel.shape[0] != m or vel.shape[1] != nf or vel.shape[2] != 6)):
            raise ValueError(f"pose, vel: expected {m} x {nf} x 12 and x 6 arrays")
        if m == 0 or nf == 0:
            return
        with nogil:
            for s in range(m):
                self.tree_kin(&X[s, 0], &X[s, self.nq] if vel is not None and self.nv else self.zu, &k)
                for i in range(nf):
                    f = frames[i]
                    self.frame_world(&k, f, &pose[s, i, 0], &pose[s, i, 9])
                    if vel is not None:
                        self.point_motion(&k, NULL, self.fbody[f], &pose[s, i, 9], w, v, NULL, NULL)
                        kx_shift(ref, &pose[s, i, 0], &pose[s, i, 9], w, v, &vel[s, i, 0])

    def frame_jacobians_at(self, const double[:, ::1] Q, int f, int ref, double[:, :, ::1] out):
        """out (m x 6 x nv): frame f's Jacobian in ref at every row of Q (q in its leading columns)."""
        cdef TreeKin k
        cdef double R[9]
        cdef double x[3]
        cdef Py_ssize_t m = Q.shape[0], s
        self.kin_check()
        self.frame_index(f)
        if Q.shape[1] < self.nq or out.shape[0] != m or out.shape[1] != 6 or out.shape[2] != self.nv:
            raise ValueError(f"Q, out: expected rows of {self.nq} values and an m x 6 x {self.nv} array")
        if m == 0 or self.nv == 0:
            return
        with nogil:
            for s in range(m):
                self.tree_kin(&Q[s, 0], self.zu, &k)
                self.frame_world(&k, f, R, x)
                if self.fbody[f] < 0:
                    memset(&out[s, 0, 0], 0, 6 * self.nv * sizeof(double))
                else:
                    self.point_jacobian(&k, self.fbody[f], x, ref, R, &out[s, 0, 0])

    def com_at(self, const double[:, ::1] X, bint velocity, double[:, ::1] out):
        """out (m x 6): the centre of mass and (velocity: X's rows hold u after q) its velocity at every row."""
        cdef TreeKin k
        cdef double tot[13]
        cdef double h[6]
        cdef double M
        cdef Py_ssize_t m = X.shape[0], s
        cdef int c
        self.kin_check()
        if X.shape[1] < self.nq + (self.nv if velocity else 0) or out.shape[0] != m or out.shape[1] != 6:
            raise ValueError("X, out: expected rows of q (and u) and an m x 6 array")
        if m == 0:
            return
        with nogil:
            for s in range(m):
                self.tree_kin(&X[s, 0], &X[s, self.nq] if velocity and self.nv else self.zu, &k)
                M = self.subtree_sums(&k, False)
                self.totals(tot)
                for c in range(3):
                    out[s, c] = tot[1 + c] / M if M > 0 else 0.0
                    out[s, 3 + c] = 0.0
                if velocity:
                    self.momentum(&k, NULL, &out[s, 0], h, NULL)
                    for c in range(3):
                        out[s, 3 + c] = h[3 + c] / M if M > 0 else 0.0
