"""Tangent-space perturbations of a state, the convention of the derivative kernels written once for the tests:
scalar joints add to their coordinates; spherical and free joints rotate locally, q (x) exp(delta / 2); the free
joint's translation adds along the parent axes. ``plus`` and ``minus`` are inverse to each other."""
import numpy as np

from codegen.model import JOINT_TYPES, QUATERNION_JOINTS


def _qmul(a, b):
    w1, x1, y1, z1 = a
    w2, x2, y2, z2 = b
    return np.array([w1 * w2 - x1 * x2 - y1 * y2 - z1 * z2, w1 * x2 + x1 * w2 + y1 * z2 - z1 * y2,
                     w1 * y2 - x1 * z2 + y1 * w2 + z1 * x2, w1 * z2 + x1 * y2 - y1 * x2 + z1 * w2])


def plus(model, q, dv):
    """q (+) dv: q moved by the tangent vector dv (nv)."""
    q = np.array(q, float, copy=True)
    for j, (iq, iv) in zip(model.joints, model.q_offsets()):
        nq, nv = JOINT_TYPES[j.type].nq, JOINT_TYPES[j.type].nv
        if j.type not in QUATERNION_JOINTS:
            q[iq:iq + nq] += dv[iv:iv + nv]
            continue
        o = QUATERNION_JOINTS[j.type]
        q[iq:iq + o] += dv[iv:iv + o]
        w = np.asarray(dv[iv + o:iv + o + 3], float)
        th = np.linalg.norm(w)
        e = np.r_[np.cos(th / 2), (np.sin(th / 2) / th if th > 0 else 0.5) * w]
        q[iq + o:iq + o + 4] = _qmul(q[iq + o:iq + o + 4], e)
    return q


def minus(model, q1, q0):
    """The tangent vector dv with plus(q0, dv) == q1."""
    d = np.zeros(model.nv)
    for j, (iq, iv) in zip(model.joints, model.q_offsets()):
        nq, nv = JOINT_TYPES[j.type].nq, JOINT_TYPES[j.type].nv
        if j.type not in QUATERNION_JOINTS:
            d[iv:iv + nv] = q1[iq:iq + nq] - q0[iq:iq + nq]
            continue
        o = QUATERNION_JOINTS[j.type]
        d[iv:iv + o] = q1[iq:iq + o] - q0[iq:iq + o]
        a = q0[iq + o:iq + o + 4]
        r = _qmul(np.r_[a[0], -a[1:]] / np.dot(a, a), q1[iq + o:iq + o + 4])
        r = -r if r[0] < 0 else r
        s = np.linalg.norm(r[1:])
        d[iv + o:iv + o + 3] = r[1:] * (2 * np.arctan2(s, r[0]) / s if s > 0 else 2.0)
    return d


def central_jacobian(f, n, h=1e-6):
    """Columns (f(+h e_k) - f(-h e_k)) / 2h of a function of a tangent vector."""
    cols = []
    for k in range(n):
        e = np.zeros(n)
        e[k] = h
        cols.append((np.asarray(f(e)) - np.asarray(f(-e))) / (2 * h))
    return np.column_stack(cols)


def pin_v_order(peer) -> np.ndarray:
    """perm with v_pin[perm] == v_ours (DictPeer of a model without free joints, where v_pin = u)."""
    perm = np.zeros(peer.nv, int)
    for t, _, iv, _, pv in peer.layout:
        n = JOINT_TYPES[t].nv
        perm[iv:iv + n] = np.arange(pv, pv + n)
    return perm
