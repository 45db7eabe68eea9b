"""Linearised dynamics from the compiled derivative kernels: continuous-time A, B of x' = f(x, tau) and the
Jacobians of one compiled RK4 step, in tangent coordinates.

State perturbations dx = (dq, du): dq in each joint's tangent space (nv numbers: the coordinate change for scalar
joints, the local rotation delta with q (x) exp(delta / 2) for the quaternions of spherical and free joints, the
free joint's translation along the parent axes), du the velocity change. Continuous time:

    d(dq)/dt = Aqq dq + du,   Aqq = -[omega]x on the angular block of a quaternion joint (omega = its body rate),
    d(du)/dt = dudot/dq dq + dudot/du du + M^-1 dtau.

One RK4 step x1 = x0 + h/6 (k1 + 2 k2 + 2 k3 + k4) of the compiled integrator (stages at x0, x0 + h/2 k1,
x0 + h/2 k2, x0 + h k3, tau held over the step) has by the chain rule through its stages

    K1 = J(x0), K2 = J(x2) (I + h/2 K1), K3 = J(x3) (I + h/2 K2), K4 = J(x4) (I + h K3),
    A_d = I + h/6 (K1 + 2 K2 + 2 K3 + K4), and B_d the same with the input columns,

with J the continuous Jacobian at each stage state. For models without quaternion joints this is the exact
Jacobian of the compiled step (coordinates are the tangent space); with quaternions the stages are evaluated at
their normalised rotations and tangent vectors at nearby states are identified, an error of order h^2 |omega|^2
relative to the step's rotation terms (stated, and measured in tests/runtime/test_linearize.py).
"""
from __future__ import annotations

import numpy as np

from ..model import JOINT_TYPES, QUATERNION_JOINTS


def quaternion_slots(model):
    """(q offset of (w, x, y, z), v offset of the body rate) of every quaternion joint."""
    out = []
    for j, (iq, iv) in zip(model.joints, model.q_offsets()):
        if j.type in QUATERNION_JOINTS:
            o = QUATERNION_JOINTS[j.type]
            out.append((iq + o, iv + o))
    return out


def qdot(model, Q, U):
    """Coordinate rates of B states (rows): u itself, and 1/2 q (x) (0, omega) for the quaternions."""
    Q, U = np.atleast_2d(Q), np.atleast_2d(U)
    out = np.empty_like(Q)
    for j, (iq, iv) in zip(model.joints, model.q_offsets()):
        nq, nv = JOINT_TYPES[j.type][:2]
        if j.type not in QUATERNION_JOINTS:
            out[:, iq:iq + nq] = U[:, iv:iv + nv]
            continue
        o = QUATERNION_JOINTS[j.type]
        out[:, iq:iq + o] = U[:, iv:iv + o]
        w, x, y, z = (Q[:, iq + o + k] for k in range(4))
        a, b, c = (U[:, iv + o + k] for k in range(3))
        out[:, iq + o:iq + o + 4] = 0.5 * np.stack([-x * a - y * b - z * c, w * a + y * c - z * b,
                                                    w * b + z * a - x * c, w * c + x * b - y * a], axis=1)
    return out


def normalized(model, Q):
    """Copies of the rows of Q with unit quaternions."""
    Q = np.array(Q, dtype=float, copy=True)
    for oq, _ in quaternion_slots(model):
        Q[:, oq:oq + 4] /= np.linalg.norm(Q[:, oq:oq + 4], axis=1, keepdims=True)
    return Q


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


def rk4_step(kernel, model, Q, U, TAU, t, h, threads=None):
    """Jacobians (A_d: B x 2nv x 2nv, B_d: B x 2nv x nv) of one compiled RK4 step of size h from B states."""
    Q, U = np.atleast_2d(np.asarray(Q, float)), np.atleast_2d(np.asarray(U, float))
    nq = Q.shape[1]
    nb, nv = U.shape
    X = np.hstack([Q, U])
    I = np.eye(2 * nv)
    Ad, Bd = np.zeros((nb, 2 * nv, 2 * nv)), np.zeros((nb, 2 * nv, nv))
    Kx, Kb = None, None
    xs = X
    for s, (c, w) in enumerate(((0.0, 1.0), (0.5, 2.0), (0.5, 2.0), (1.0, 1.0))):
        if s:                                      # the stage state, as the compiled step forms it
            xs = X + c * h * k
        qs, us = xs[:, :nq], xs[:, nq:]
        ts = t + c * h
        J, Bs = continuous(kernel, model, normalized(model, qs), us, TAU, ts, threads)
        if s == 0:
            Kx, Kb = J, Bs
        else:
            Kx = J @ (I + c * h * Kx)
            Kb = J @ (c * h * Kb) + Bs
        Ad += w * Kx
        Bd += w * Kb
        if s == 3:
            break
        udot = kernel.forward_dynamics_batch(qs, us, TAU, ts, None, threads)
        k = np.hstack([qdot(model, qs, us), udot])
    return I + h / 6.0 * Ad, h / 6.0 * Bd
