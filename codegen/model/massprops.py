"""Mass properties of the model layer.

Rigid inertias moved between frames and lumped (fixed joints of imported
robot files), and the check that the mass matrix is regular when some bodies carry no mass or no rotational
inertia (massless links between joints, point masses).

Featherstone, Rigid Body Dynamics Algorithms (2008): spatial inertia about a point [RBDA eq 2.63], composite
rigid-body inertia (sect. 6.2), articulated-body inertia and its joint-space projection D = S^T I^A S
(sect. 7.3, [RBDA eqs 7.38-7.45]). ABA divides by D at every joint, so D singular at a joint <=> the mass matrix is
singular: the joint's subtree has no inertia along (a combination of) the joint's motions.
"""
from __future__ import annotations

from typing import Iterable, Optional, Tuple

import numpy as np

from .checks import ModelError
from .rotations import quat_to_rot, rot_axis_angle

SINGULAR_TOL = 1e-12     # D scaled by the subtree's largest possible inertia along each motion; below: singular


def skew(v) -> np.ndarray:
    """The skew-symmetric matrix of a 3-vector: skew(v) w = v x w."""
    return np.array([[0.0, -v[2], v[1]], [v[2], 0.0, -v[0]], [-v[1], v[0], 0.0]])


def moved(m: float, com, J, pos, rot) -> Tuple[float, np.ndarray, np.ndarray]:
    """Mass properties given in frame B, expressed in frame A.

    Mass properties (mass, centre of mass, inertia about it) given in frame B, expressed in frame A where B
    sits at (pos, rot): c_A = pos + rot c_B, J_A = rot J_B rot^T."""
    rot = np.asarray(rot, float)
    return float(m), np.asarray(pos, float) + rot @ np.asarray(com, float), rot @ np.asarray(J, float) @ rot.T


def lumped(parts: Iterable[Tuple[float, np.ndarray, np.ndarray]]) -> Tuple[float, np.ndarray, np.ndarray]:
    """One rigid body from several, all in one frame.

    One rigid body from several (mass, com, inertia about the com), all in one frame: the total mass, the
    common centre of mass, and the inertia about it (parallel axis theorem, [RBDA eq 2.63]). Massless
    parts add their rotational inertia only; with no mass at all the centre is the origin."""
    parts = [(float(mk), np.asarray(ck, float), np.asarray(Jk, float)) for mk, ck, Jk in parts]
    m = sum(mk for mk, _, _ in parts)
    c = sum((mk * ck for mk, ck, _ in parts), np.zeros(3)) / m if m > 0 else np.zeros(3)
    J = np.zeros((3, 3))
    for mk, ck, Jk in parts:           # a sum of positive semi-definite terms: no cancellation
        d = ck - c
        J += Jk + mk * (d @ d * np.eye(3) - np.outer(d, d))
    return m, c, 0.5 * (J + J.T)


def degenerate(body) -> bool:
    """A body whose spatial inertia is singular: no mass, or (nearly) no rotational inertia about some axis."""
    if body.mass <= 0:
        return True
    J = np.asarray(body.inertia, float)
    s = float(np.abs(J).max())
    return s == 0 or float(np.linalg.eigvalsh(0.5 * (J + J.T)).min()) <= 1e-12 * s


# ---------------------------------------------------------------- mass-matrix regularity

def _turn(j, rng):
    """A revolute joint's pose: a turn about its axis."""
    return rot_axis_angle(j.axis, rng.uniform(-np.pi, np.pi)), np.zeros(3), [("rot", j.axis)]


def _slide(j, rng):
    """A prismatic joint's pose: a slide along its axis."""
    return np.eye(3), j.axis * rng.uniform(-0.5, 0.5), [("lin", j.axis)]


def _screw(j, rng):
    """A cylindrical joint's pose: a turn about its axis, then a slide along it."""
    R, _, turn = _turn(j, rng)
    _, p, slide = _slide(j, rng)
    return R, p, turn + slide


def _universal(j, rng):
    """A universal joint's pose: a turn about its axis, then one about axis2 (carried by the first)."""
    a = j.axis
    R1 = rot_axis_angle(a, rng.uniform(-np.pi, np.pi))
    R = R1 @ rot_axis_angle(j.axis2, rng.uniform(-np.pi, np.pi))
    return R, np.zeros(3), [("rot", a), ("rot", R1 @ j.axis2)]


def _planar(j, rng):
    """A planar joint's pose: a slide in the plane normal to its axis and a turn about it."""
    a = j.axis
    e1 = np.cross(a, [1.0, 0, 0] if abs(a[0]) < 0.9 else [0, 1.0, 0])
    e1 /= np.linalg.norm(e1)
    e2 = np.cross(a, e1)
    R = rot_axis_angle(a, rng.uniform(-np.pi, np.pi))
    p = e1 * rng.uniform(-0.5, 0.5) + e2 * rng.uniform(-0.5, 0.5)
    return R, p, [("lin", e1), ("lin", e2), ("rot", a)]


def _ball(j, rng):
    """A spherical joint's pose: any rotation."""
    return quat_to_rot(rng.normal(size=4)), np.zeros(3), [("rot", e) for e in np.eye(3)]


def _free(j, rng):
    """A free joint's pose: any rotation and a shift."""
    R, _, cols = _ball(j, rng)
    return R, rng.uniform(-0.5, 0.5, 3), cols + [("lin", e) for e in np.eye(3)]


# joint type -> (joint, rng) -> a generic (random) relative pose (R, p) of the child joint frame in the parent joint
# frame and the joint's motion directions as (kind, direction in the parent joint frame after the motion) pairs
RELATIVE_MOTIONS = {"revolute": _turn, "prismatic": _slide, "cylindrical": _screw, "universal": _universal,
                    "planar": _planar, "spherical": _ball, "free": _free,
                    "fixed": lambda j, rng: (np.eye(3), np.zeros(3), [])}


def singular_joint(model, seed: int = 20261122) -> Optional[Tuple[str, str]]:
    """The first joint whose articulated inertia is singular, or None.

    (joint name, coordinate) of the first joint, tip to root, whose articulated inertia D = S^T I^A S is
    singular at a generic configuration [RBDA eqs 7.38-7.45], else None.

    Everything is in world axes about the world origin: body spatial inertia I = [[J + m c~ c~^T, m c~],
    [m c~^T, m 1]] ([RBDA eq 2.63], angular part first), a rotation about unit a through r has the motion [a; r x a], a
    translation [0; a]. D is scaled by the largest inertia the subtree could have along each motion (mass times
    squared distance from the joint plus rotational inertias, or the mass), so the test is dimensionless and
    insensitive to round-off."""
    rng = np.random.default_rng(seed)
    nb = len(model.joints)
    index = {j.child: k for k, j in enumerate(model.joints)}
    parent = [index.get(j.parent, -1) for j in model.joints]
    Rb, pb = [None] * nb, [None] * nb
    I6, S, kinds, origin, mass, com, trJ = [], [], [], [], [], [], []
    for k, j in enumerate(model.joints):               # parents first (validate orders the joints)
        Rp, pp = (np.eye(3), np.zeros(3)) if parent[k] < 0 else (Rb[parent[k]], pb[parent[k]])
        Rjp = Rp @ j.parent_frame.rot
        pjp = pp + Rp @ j.parent_frame.pos
        RJ, pJ, cols = RELATIVE_MOTIONS[j.type](j, rng)
        Rjc, pjc = Rjp @ RJ, pjp + Rjp @ pJ
        Rb[k] = Rjc @ j.child_frame.rot.T
        pb[k] = pjc - Rb[k] @ j.child_frame.pos
        b = model.body(j.child)
        c = pb[k] + Rb[k] @ b.com
        Jw = Rb[k] @ b.inertia @ Rb[k].T
        cx = skew(c)
        I6.append(np.block([[Jw + b.mass * cx @ cx.T, b.mass * cx], [b.mass * cx.T, b.mass * np.eye(3)]]))
        Sk = np.zeros((6, len(cols)))
        for i, (kind, d) in enumerate(cols):
            d = Rjp @ d
            Sk[:, i] = np.concatenate([d, np.cross(pjc, d)]) if kind == "rot" else np.concatenate([np.zeros(3), d])
        S.append(Sk)
        kinds.append([kind for kind, _ in cols])
        origin.append(pjc)
        mass.append(b.mass)
        com.append(c)
        trJ.append(float(np.trace(b.inertia)))
    subtree = [[k] for k in range(nb)]
    for k in range(nb - 1, -1, -1):
        if parent[k] >= 0:
            subtree[parent[k]].extend(subtree[k])
    IA = [I.copy() for I in I6]
    mass, com, trJ = np.array(mass), np.array(com), np.array(trJ)
    for k in range(nb - 1, -1, -1):                     # tips first
        j, Sk = model.joints[k], S[k]
        if Sk.shape[1]:
            U = IA[k] @ Sk
            D = Sk.T @ U
            sub = subtree[k]
            m_sub = mass[sub].sum()
            d2 = ((com[sub] - origin[k]) ** 2).sum(axis=1)
            rot_scale = float(mass[sub] @ d2 + trJ[sub].sum())
            scale = np.array([rot_scale if kind == "rot" else m_sub for kind in kinds[k]])
            if not scale.min() > 0:
                i = int(np.argmin(scale))
            else:
                Ds = D / np.sqrt(np.outer(scale, scale))
                w, V = np.linalg.eigh(0.5 * (Ds + Ds.T))
                i = int(np.argmax(np.abs(V[:, 0]))) if w[0] <= SINGULAR_TOL else -1
            if i >= 0:
                return j.name, model.velocity_names[model.q_offsets()[k][1] + i]
            Pa = IA[k] - U @ np.linalg.solve(D, U.T)
        else:
            Pa = IA[k]
        if parent[k] >= 0:
            IA[parent[k]] += Pa
    return None


def check_mass_matrix(model) -> None:
    """Refuse (ModelError naming the joint) a model whose mass matrix is singular.

    Only models with a massless
    body or a body without rotational inertia about some axis can have one."""
    if not any(degenerate(b) for b in model.bodies):
        return
    found = singular_joint(model)
    if found is None:
        return
    name, dof = found
    raise ModelError(f"the bodies beyond this joint have no inertia along its motion ({dof}): the mass matrix is "
                     "singular. Give them mass, or rotational inertia about the joint's axis, or make the joint "
                     "fixed", model.source, f"joints[{name}]")
