"""Linearised dynamics from the compiled derivative kernels.

Linearised dynamics from the compiled derivative kernels: continuous-time A, B of x' = f(x, tau) and the
Jacobians of one compiled RK4 step, in tangent coordinates (with activation dynamics x = (q, u, act): the
activation rows d(dact)/dt = d(dact/dt)/dact dact, and d(du)/dt gains M^-1 dtau/dact dact).

State perturbations dx = (dq, du): dq in each joint's tangent space (nv numbers: the coordinate change for scalar
joints, the local rotation delta with q (x) exp(delta / 2) for the quaternions of spherical and free joints, the
free joint's translation along the parent axes), du the velocity change. Continuous time:

    d(dq)/dt = Aqq dq + du,   Aqq = -[omega]x on the angular block of a quaternion joint (omega = its body rate),
    d(du)/dt = dudot/dq dq + dudot/du du + M^-1 dtau.

One RK4 step x1 = x0 + h/6 (k1 + 2 k2 + 2 k3 + k4) of the compiled integrator (stages at x0, x0 + h/2 k1,
x0 + h/2 k2, x0 + h k3, tau held over the step) has by the chain rule through its stages

    K1 = J(x0), K2 = J(x2) (I + h/2 K1), K3 = J(x3) (I + h/2 K2), K4 = J(x4) (I + h K3),
    A_d = I + h/6 (K1 + 2 K2 + 2 K3 + K4), and B_d the same with the input columns,

with J the continuous Jacobian at each stage state: compiled as `rk4_jac` (templates/shared/derivatives.pyx.j2),
used by linearize(dt) and rollout(sensitivities=True). For models without quaternion joints this is the exact
Jacobian of the compiled step (coordinates are the tangent space); with quaternions the stages are evaluated at
their normalised rotations and tangent vectors at nearby states are identified (measured against central
differences of a compiled step in tests/algorithms/test_derivatives.py).
"""
from __future__ import annotations

import numpy as np

from ..model import JOINT_TYPES


def quaternion_slots(model):
    """(q offset of (w, x, y, z), v offset of the body rate) of every quaternion joint."""
    out = []
    for j, (iq, iv) in zip(model.joints, model.q_offsets()):
        o = JOINT_TYPES[j.type].quaternion
        if o is not None:
            out.append((iq + o, iv + o))
    return out


def kinematic_block(model, U):
    """Aqq of B states (B x nv x nv): -[omega]x on each quaternion joint's angular block, else zero."""
    U = np.atleast_2d(U)
    nv = U.shape[1]
    A = np.zeros((U.shape[0], nv, nv))
    for _, ov in quaternion_slots(model):
        w = U[:, ov:ov + 3]
        A[:, ov, ov + 1], A[:, ov, ov + 2] = w[:, 2], -w[:, 1]
        A[:, ov + 1, ov], A[:, ov + 1, ov + 2] = -w[:, 2], w[:, 0]
        A[:, ov + 2, ov], A[:, ov + 2, ov + 1] = w[:, 1], -w[:, 0]
    return A


def continuous(kernel, model, Q, U, TAU, t, threads=None):
    """Continuous-time A (B x 2nv x 2nv) and B (B x 2nv x nv) at B states."""
    Q, U = np.atleast_2d(np.asarray(Q, float)), np.atleast_2d(np.asarray(U, float))
    nb, nv = U.shape
    dq, du, minv = kernel.forward_dynamics_derivatives_batch(Q, U, TAU, t, None, threads)
    A = np.zeros((nb, 2 * nv, 2 * nv))
    A[:, :nv, :nv] = kinematic_block(model, U)
    A[:, :nv, nv:] = np.eye(nv)
    A[:, nv:, :nv], A[:, nv:, nv:] = dq, du
    B = np.zeros((nb, 2 * nv, nv))
    B[:, nv:, :] = minv
    return A, B


def with_activations(kernel, A, B, q, u, t):
    """A, B of one state extended by the activation rows and columns.

    A (2nv x 2nv), B (2nv x nv) -> x = (q, u, act) at the activations of set_act: d(du)/d(act) = M^-1 dtau/dact,
    d(dact)/d(act) = diag(d(dact/dt)/dact)."""
    nv = B.shape[1]
    T, D, _ = kernel.activation_jacobian(q, u, t)
    na = D.shape[0]
    Ax = np.zeros((2 * nv + na, 2 * nv + na))
    Ax[:2 * nv, :2 * nv] = A
    Ax[nv:2 * nv, 2 * nv:] = B[nv:] @ T
    Ax[2 * nv:, 2 * nv:] = np.diag(D)
    Bx = np.zeros((2 * nv + na, nv))
    Bx[:2 * nv] = B
    return Ax, Bx
