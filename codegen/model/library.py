"""Model builders: the benchmark chain, the canonical example models, random trees for tests.

Thin rods get the small axial moment of inertia of models.md M5 (1e-3/12 kg m^2 for m = 1, L = 1,
scaled with m L^2): a strictly zero one is not positive definite, and for planar motion about an axis
normal to the rod the axial value never enters the equations.
"""
from __future__ import annotations

import math

import numpy as np

from .beams import pendulum  # noqa: F401  (flexible pendulum M3)
from .core import (LIMITS, Body, Joint, JointForce, JointSpringDamper, Model, Placement, TimeFunction,
                   limits_text)

AXIAL = 1e-3 / 12


def thin_rod(name: str, m: float = 1.0, L: float = 1.0) -> Body:
    """Uniform slender rod along the body x axis, origin at its centre."""
    return Body(name, m, np.zeros(3), np.diag([AXIAL * m * L * L, m * L * L / 12, m * L * L / 12]))


def chain(n: int, m: float = 1.0, L: float = 1.0, theta0: float = 0.0, gravity=(0.0, -9.81, 0.0)) -> Model:
    """n-link pendulum of thin rods (mass m, length L) on revolute joints about z, in the x-y plane.

    Link k's frame sits at its centre with x along the rod; joint k is at the inboard end. Released
    from rest with the first link at angle theta0 from +x (0: horizontal) and the others straight.
    """
    if int(n) != n or n < 1:
        raise ValueError(f"chain length must be a positive integer, got {n}")
    n = int(n)
    bodies = [thin_rod(f"link{k + 1}", m, L) for k in range(n)]
    joints = []
    for k in range(n):
        joints.append(Joint(f"j{k + 1}", "revolute", "ground" if k == 0 else f"link{k}", f"link{k + 1}",
                            Placement(np.array([0.0 if k == 0 else L / 2, 0, 0])),
                            Placement(np.array([-L / 2, 0, 0])), axis=[0, 0, 1],
                            q0=[theta0 if k == 0 else 0.0]))
    return Model(f"chain{n}", bodies, joints, gravity=np.array(gravity, float))


def balance_pendulum() -> Model:
    """models.md M1: rods 7 (balance, pinned at its centre), 1 and 5 hanging from its ends, 3 from 5.

    Revolute coordinates are relative; the seed's absolute angles are th7 = q7, th1 = q7 + q1,
    th5 = q7 + q5, th3 = q7 + q5 + q3 (each rod's x axis points from its lower end to its upper end).
    """
    a = 0.5
    z = [0, 0, 1]
    bodies = [thin_rod("body7"), thin_rod("body1"), thin_rod("body5"), thin_rod("body3")]
    joints = [
        Joint("pin7", "revolute", "ground", "body7", Placement(), Placement(), axis=z, q0=[0.0]),
        Joint("hinge1", "revolute", "body7", "body1", Placement(np.array([-a, 0, 0])),
              Placement(np.array([a, 0, 0])), axis=z, q0=[math.pi / 2]),
        Joint("hinge5", "revolute", "body7", "body5", Placement(np.array([a, 0, 0])),
              Placement(np.array([a, 0, 0])), axis=z, q0=[math.pi / 2]),
        Joint("hinge3", "revolute", "body5", "body3", Placement(np.array([-a, 0, 0])),
              Placement(np.array([a, 0, 0])), axis=z, q0=[0.0]),
    ]
    return Model("balance_pendulum", bodies, joints, gravity=np.array([0.0, -9.81, 0.0]))


def _cylinder(name, m, length, radius=0.05, axis=0):
    """Solid cylinder along body axis `axis`, centred at (length/2) on that axis."""
    Ia = 0.5 * m * radius ** 2
    It = m * (3 * radius ** 2 + length ** 2) / 12
    J = np.full(3, It)
    J[axis] = Ia
    com = np.zeros(3)
    com[axis] = length / 2
    return Body(name, m, com, np.diag(J))


def arm7() -> Model:
    """A 7-DOF serial arm (axes z y z y z y z, links along z), fixed base, joint damping."""
    lengths = [0.34, 0.2, 0.4, 0.2, 0.39, 0.08, 0.1]
    masses = [4.0, 4.0, 3.0, 2.7, 1.7, 1.8, 0.3]
    axes = [[0, 0, 1], [0, 1, 0]] * 3 + [[0, 0, 1]]
    bodies, joints = [], []
    for k in range(7):
        bodies.append(_cylinder(f"link{k + 1}", masses[k], lengths[k], 0.06, axis=2))
        joints.append(Joint(f"a{k + 1}", "revolute", "ground" if k == 0 else f"link{k}", f"link{k + 1}",
                            Placement(np.array([0, 0, 0.0 if k == 0 else lengths[k - 1]])), Placement(),
                            axis=axes[k], q0=[0.3 * (-1) ** k]))
    springs = [JointSpringDamper(f"damp{k + 1}", f"a{k + 1}", [0.0], [0.5], [0.0]) for k in range(7)]
    return Model("arm7", bodies, joints, gravity=np.array([0, 0, -9.81]), springs=springs)


def humanoid() -> Model:
    """Humanoid-like tree on a floating base (free joint): spherical hips and shoulders, revolute knees
    and elbows, universal ankles, a spherical neck. Gravity -z, starts 1 m above the ground, tumbling."""
    B = []
    J = []

    def add(name, m, com, inertia, jname, jtype, parent, pos, axis=None, axis2=None, q0=None, u0=None):
        B.append(Body(name, m, np.array(com, float), np.diag(inertia)))
        J.append(Joint(jname, jtype, parent, name, Placement(np.array(pos, float)), Placement(),
                       axis=axis, axis2=axis2, q0=q0, u0=u0))

    add("torso", 30.0, [0, 0, 0.25], [1.2, 1.0, 0.4], "root", "free", "ground", [0, 0, 0],
        q0=[0, 0, 1.0, 1, 0, 0, 0], u0=[0.1, 0, 0.5, 0.3, -0.2, 0.6])
    add("head", 5.0, [0, 0, 0.12], [0.03, 0.03, 0.02], "neck", "spherical", "torso", [0, 0, 0.55])
    for side, y in (("l", 0.1), ("r", -0.1)):
        add(f"{side}_thigh", 7.0, [0, 0, -0.2], [0.1, 0.1, 0.02], f"{side}_hip", "spherical", "torso", [0, y, -0.05])
        add(f"{side}_shank", 3.5, [0, 0, -0.2], [0.05, 0.05, 0.01], f"{side}_knee", "revolute", f"{side}_thigh",
            [0, 0, -0.42], axis=[0, 1, 0], q0=[0.4])
        add(f"{side}_foot", 1.0, [0.05, 0, -0.03], [0.002, 0.004, 0.004], f"{side}_ankle", "universal",
            f"{side}_shank", [0, 0, -0.42], axis=[0, 1, 0], axis2=[1, 0, 0])
    for side, y in (("l", 0.22), ("r", -0.22)):
        add(f"{side}_upperarm", 2.0, [0, 0, -0.15], [0.02, 0.02, 0.004], f"{side}_shoulder", "spherical", "torso",
            [0, y, 0.5])
        add(f"{side}_forearm", 1.5, [0, 0, -0.13], [0.015, 0.015, 0.003], f"{side}_elbow", "revolute",
            f"{side}_upperarm", [0, 0, -0.3], axis=[0, 1, 0], q0=[-0.5])
    return Model("humanoid", B, J, gravity=np.array([0, 0, -9.81]))


def space_robot() -> Model:
    """M4 (models.md; Liu et al. Figs 5-7, arm data reconstructed): a free-floating hexagonal-prism base with
    two identical 6R arms, no gravity, sinusoidal joint torques tau_kj = s_k A_j sin(2 pi t / T_j)."""
    m0, a, h = 400.0, 0.8, 1.2
    B = [Body("base", m0, np.zeros(3), np.diag([m0 * (5 / 24 * a * a + h * h / 12)] * 2 + [5 / 12 * m0 * a * a]))]
    J = [Joint("base_free", "free", "ground", "base", Placement(), Placement())]
    F = []
    lengths, masses = (0.2, 1.0, 1.0, 0.2, 0.2, 0.3), (5.0, 10.0, 8.0, 3.0, 2.0, 2.0)
    axes = ([0, 0, 1], [0, 1, 0], [0, 1, 0], [0, 0, 1], [0, 1, 0], [0, 0, 1])
    amp, period = (2.0, 5.0, 3.0, 0.2, 0.2, 0.1), (10.0, 8.0, 6.0, 5.0, 4.0, 3.0)
    r = 0.05
    for k, sgn in ((1, 1.0), (2, -1.0)):
        parent, pos = "base", np.array([sgn * 0.6928, 0.0, 0.0])
        for j in range(6):
            L, m = lengths[j], masses[j]
            name = f"L{k}{j + 1}"
            inertia = np.diag([m * r * r / 2] + [m * (3 * r * r + L * L) / 12] * 2)   # solid cylinder along x
            B.append(Body(name, m, np.array([sgn * L / 2, 0.0, 0.0]), inertia))
            J.append(Joint(f"arm{k}_j{j + 1}", "revolute", parent, name, Placement(pos), Placement(),
                           axis=np.array(axes[j], float)))
            F.append(JointForce(f"tau{k}{j + 1}", f"arm{k}_j{j + 1}", 0,
                                TimeFunction("sine", amplitude=sgn * amp[j], frequency=1.0 / period[j])))
            parent, pos = name, np.array([sgn * L, 0.0, 0.0])
    return Model("space_robot", B, J, gravity=np.zeros(3), joint_forces=F)


JOINT_MIX = ("revolute", "prismatic", "cylindrical", "universal", "spherical", "planar", "fixed")


def random_rotation(rng) -> np.ndarray:
    q = rng.normal(size=4)
    q /= np.linalg.norm(q)
    w, x, y, z = q
    return np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
                     [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
                     [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)]])


def random_tree(n: int, seed: int = 0, types=JOINT_MIX, floating: bool = False, forces: bool = False) -> Model:
    """A random tree of n bodies with random joint types, placements, axes, masses and inertias."""
    from .core import JointForce, PointSpringDamper, TimeFunction
    rng = np.random.default_rng(seed)
    bodies, joints = [], []
    for k in range(n):
        R = random_rotation(rng)
        ev = np.sort(rng.uniform(0.05, 1.0, 3))
        ev[2] = min(ev[2], ev[0] + ev[1] - 1e-3)                  # triangle inequality
        bodies.append(Body(f"b{k}", float(rng.uniform(0.5, 3.0)), rng.normal(scale=0.3, size=3), R @ np.diag(ev) @ R.T))
        if k == 0 and floating:
            jt, parent = "free", "ground"
        else:
            kk = k - 1 if floating else k
            jt = types[kk] if kk < len(types) else str(rng.choice(types))
            parent = "ground" if k == 0 else f"b{int(rng.integers(0, k))}"
        axis = rng.normal(size=3) if jt in ("revolute", "prismatic", "cylindrical", "universal", "planar") else None
        axis2 = None
        if jt == "universal":
            axis2 = np.cross(axis, rng.normal(size=3))
        joints.append(Joint(f"j{k}", jt, parent, f"b{k}", Placement(rng.normal(scale=0.5, size=3), random_rotation(rng)),
                            Placement(rng.normal(scale=0.5, size=3), random_rotation(rng)), axis=axis, axis2=axis2))
    m = Model(f"random{n}_{seed}", bodies, joints, gravity=rng.normal(size=3) * 5)
    q, u = random_state(m, rng)
    for j, (iq, iv) in zip(m.joints, m.q_offsets()):
        j.q0, j.u0 = q[iq:iq + j.nq], u[iv:iv + j.nv]
    if forces:
        scal = [j for j in m.joints if j.type in ("revolute", "prismatic", "cylindrical", "universal", "planar")]
        m.springs = [JointSpringDamper(f"spring_{j.name}", j.name, rng.uniform(1, 5, j.nv), rng.uniform(0, 1, j.nv),
                                       rng.normal(size=j.nv)) for j in scal[:3]]
        m.point_springs = [PointSpringDamper("ps0", "ground", rng.normal(size=3), m.bodies[-1].name, rng.normal(size=3),
                                             10.0, 0.5, 0.3),
                           PointSpringDamper("ps1", m.bodies[0].name, rng.normal(size=3), m.bodies[-2].name,
                                             rng.normal(size=3), 5.0, 0.2, 0.5)]
        m.joint_forces = [JointForce("f_sine", scal[0].name, 0, TimeFunction("sine", amplitude=2.0, frequency=0.7,
                                                                               phase=0.3, offset=0.1)),
                          JointForce("f_step", scal[-1].name, 0, TimeFunction("step", t0=0.05, value_before=-1.0,
                                                                               value=1.5)),
                          JointForce("f_table", scal[1].name, 0, TimeFunction("table", t=np.array([0, 0.1, 0.2]),
                                                                                y=np.array([0, 2.0, -1.0])))]
        from .core import validate
        validate(m)
    return m


def random_state(model: Model, rng):
    """Random q (unit quaternions where needed) and u."""
    q, u = [], []
    for j in model.joints:
        if j.type == "spherical":
            v = rng.normal(size=4)
            q.extend(v / np.linalg.norm(v))
        elif j.type == "free":
            v = rng.normal(size=4)
            q.extend(list(rng.normal(size=3)) + list(v / np.linalg.norm(v)))
        else:
            q.extend(rng.uniform(-1.5, 1.5, j.nq))
        u.extend(rng.normal(size=j.nv))
    return np.array(q), np.array(u)


BUILTIN = {"balance_pendulum": balance_pendulum, "arm7": arm7, "humanoid": humanoid}
SIZED = {"chain": lambda n: chain(n), "branch": lambda n: branch_system(n)}     # 'chain:N', 'branch:N'


def spec_size(spec: str):
    """(kind, N) of 'chain:N' / 'branch:N', checked against LIMITS['bodies'] before anything is built;
    None for anything else."""
    kind, sep, n = spec.partition(":")
    if kind not in SIZED or not sep:
        return None
    digits = n.strip().lstrip("+-")
    if not digits.isascii() or not digits.isdigit():
        raise ValueError(f"expected an integer after '{kind}:', got {n[:40]!r}")
    n = int(n) if len(digits) <= 18 else 10 ** 18           # no huge int parsing: it is refused below anyway
    bodies = n if kind == "chain" else (n + 1) // 2
    if bodies > LIMITS["bodies"]:
        raise ValueError(f"{bodies:,}{'+' if len(digits) > 18 else ''} bodies, above the limit of "
                         f"{LIMITS['bodies']:,} ({limits_text()})")
    return kind, n


def from_spec(spec: str) -> Model:
    """'chain:N' (n-link chain), 'branch:N' (M5 with bodies 1, 3, ..., N) or a builtin name."""
    sized = spec_size(spec)
    if sized is not None:
        return SIZED[sized[0]](sized[1])
    if spec not in BUILTIN:
        raise ValueError(f"unknown model {spec[:60]!r}: not 'chain:N', 'branch:N' or a builtin "
                         f"({', '.join(BUILTIN)})")
    return BUILTIN[spec]()


def branch_system(N: int = 999, m: float = 1.0, L: float = 1.0) -> Model:
    """models.md M5, the large branch system of the Riccati MSTMM seed (Rui et al. 2020, Fig. 1).

    Thin rods (mass m, length L, axial inertia AXIAL m L^2) named body1, body3, ..., bodyN (N odd,
    N >= 13), all joined by 3-DOF ball joints (quaternion coordinates, identity at t = 0), gravity -y.
    Body N hangs by its upper end from the ceiling point (origin); N-2, ..., 13 hang each from the lower
    end of the previous one; body 11 (horizontal along x) hangs from its centre on the lower end of
    body 13.  Subchain A: body 3 hangs from the -x end of body 11 (its input I1), body 1 from body 3;
    subchain B: body 9 hangs from the +x end (input I2), 7 from 9, 5 from 7.  Each rod's frame sits at
    its centre with x pointing from its lower (free) end to its upper end, so vertical rods are turned
    by Rz(90 deg).  N = 999: 500 bodies, 1500 degrees of freedom.
    """
    N = int(N)
    if N < 13 or N % 2 == 0:
        raise ValueError(f"branch_system needs an odd N >= 13, got {N}")
    h = L / 2
    R90 = np.array([[0.0, -1.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 1.0]])     # Rz(+90 deg), exact
    bodies = [thin_rod(f"body{k}", m, L) for k in range(1, N + 1, 2)]
    up = Placement(np.array([h, 0.0, 0.0]))                  # upper end of a rod (child side)
    low = Placement(np.array([-h, 0.0, 0.0]))                # lower end of a rod (parent side)

    def ball(k, parent, pf, cf=None):
        return Joint(f"ball{k}", "spherical", parent, f"body{k}", pf, cf if cf is not None else up)

    joints = [ball(N, "ground", Placement(np.zeros(3), R90.copy()))]
    for k in range(N - 2, 12, -2):
        joints.append(ball(k, f"body{k + 2}", low))
    joints.append(ball(11, "body13", Placement(np.array([-h, 0.0, 0.0]), R90.T.copy()), Placement()))
    joints.append(ball(3, "body11", Placement(np.array([-h, 0.0, 0.0]), R90.copy())))   # input I1
    joints.append(ball(1, "body3", low))
    joints.append(ball(9, "body11", Placement(np.array([h, 0.0, 0.0]), R90.copy())))    # input I2
    joints.append(ball(7, "body9", low))
    joints.append(ball(5, "body7", low))
    return Model(f"branch_system{N}", bodies, joints, gravity=np.array([0.0, -9.81, 0.0]))
