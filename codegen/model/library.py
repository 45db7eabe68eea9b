"""Model builders: the benchmark chain, the canonical example models, random trees for tests.

Thin rods get the small axial moment of inertia of models.md M5 (1e-3/12 kg m^2 for m = 1, L = 1,
scaled with m L^2): a strictly zero one is not positive definite, and for planar motion about an axis
normal to the rod the axial value never enters the equations.
"""
from __future__ import annotations

import math

import numpy as np

from .beams import pendulum  # noqa: F401  (flexible pendulum M3)
from .core import (GROUND, LIMITS, Body, Joint, JointForce, JointSpringDamper, Model, Placement, TimeFunction,
                   limits_text)
from .joint_types import JOINT_TYPES

AXIAL = 1e-3 / 12


def thin_rod(name: str, m: float = 1.0, L: float = 1.0) -> Body:
    """Uniform slender rod along the body x axis, origin at its centre."""
    return Body(name, m, np.zeros(3), np.diag([AXIAL * m * L * L, m * L * L / 12, m * L * L / 12]))


def chain(n: int, m: float = 1.0, L: float = 1.0, theta0: float = 0.0, gravity=(0.0, -9.81, 0.0)) -> Model:
    """n-link pendulum of thin rods (mass m, length L) on revolute joints about z, in the x-y plane.

    Link k's frame sits at its centre with x along the rod; joint k is at the inboard end. Released
    from rest with the first link at angle theta0 from +x (0: horizontal) and the others straight.

    Parameters
    ----------
    n : int
        Number of links.
    m : float, optional
        Mass of each link [kg].
    L : float, optional
        Length of each link [m].
    theta0 : float, optional
        Initial angle of the first link [rad].
    gravity : array_like, shape (3,), optional
        Gravitational acceleration [m/s^2].

    Returns
    -------
    Model
        The chain (nq = nv = n).

    Raises
    ------
    ValueError
        n is not a positive integer.
    ModelError
        n exceeds the model limits.
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

    Returns
    -------
    Model
        The balance pendulum (4 bodies, nq = nv = 4).
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
    """A 7-DOF serial arm (axes z y z y z y z, links along z), fixed base, joint damping.

    Returns
    -------
    Model
        The arm (nq = nv = 7).
    """
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
    """A humanoid-like tree on a floating base (free joint).

    Spherical hips and shoulders, revolute knees
    and elbows, universal ankles, a spherical neck. Gravity -z, starts 1 m above the ground, tumbling.

    Returns
    -------
    Model
        The humanoid.
    """
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
    """Model M4: a free-floating space robot with two 6R arms.

    M4 (models.md; Liu et al. Figs 5-7, arm data reconstructed): a free-floating hexagonal-prism base with
    two identical 6R arms, no gravity, sinusoidal joint torques tau_kj = s_k A_j sin(2 pi t / T_j).

    Returns
    -------
    Model
        The space robot (a free base and 12 revolute joints, nv = 18).
    """
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


# every joint type but the free one (random_tree(floating=True) gives the root one), in registry order
JOINT_MIX = tuple(t for t in JOINT_TYPES if t != "free")


def random_rotation(rng) -> np.ndarray:
    """A uniformly distributed random rotation matrix."""
    q = rng.normal(size=4)
    q /= np.linalg.norm(q)
    w, x, y, z = q
    return np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
                     [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
                     [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)]])


def random_tree(n: int, seed: int = 0, types=JOINT_MIX, floating: bool = False, forces: bool = False) -> Model:
    """A random tree of n bodies with random joint types, placements, axes, masses and inertias.

    Parameters
    ----------
    n : int
        Number of bodies.
    seed : int, optional
        Seed of the random generator (the same seed gives the same tree).
    types : sequence of str, optional
        The joint types drawn from.
    floating : bool, optional
        The root on a free joint.
    forces : bool, optional
        Add spring-dampers and joint forces.

    Returns
    -------
    Model
        The tree.
    """
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
        axis = rng.normal(size=3) if JOINT_TYPES[jt].needs_axis else None
        axis2 = None
        if JOINT_TYPES[jt].needs_axis2:
            axis2 = np.cross(axis, rng.normal(size=3))
        joints.append(Joint(f"j{k}", jt, parent, f"b{k}", Placement(rng.normal(scale=0.5, size=3), random_rotation(rng)),
                            Placement(rng.normal(scale=0.5, size=3), random_rotation(rng)), axis=axis, axis2=axis2))
    m = Model(f"random{n}_{seed}", bodies, joints, gravity=rng.normal(size=3) * 5)
    q, u = random_state(m, rng)
    for j, (iq, iv) in zip(m.joints, m.q_offsets()):
        j.q0, j.u0 = q[iq:iq + j.nq], u[iv:iv + j.nv]
    if forces:
        scal = [j for j in m.joints if JOINT_TYPES[j.type].scalar]
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
        o = JOINT_TYPES[j.type].quaternion
        if o is None:
            q.extend(rng.uniform(-1.5, 1.5, j.nq))
        else:                       # the unit quaternion drawn first, then the other coordinates around it
            v = rng.normal(size=4)
            rest = list(rng.normal(size=j.nq - 4)) if j.nq > 4 else []
            q.extend(rest[:o] + list(v / np.linalg.norm(v)) + rest[o:])
        u.extend(rng.normal(size=j.nv))
    return np.array(q), np.array(u)


BUILTIN = {"balance_pendulum": balance_pendulum, "arm7": arm7, "humanoid": humanoid}
SIZED = {"chain": lambda n: chain(n), "branch": lambda n: branch_system(n)}     # 'chain:N', 'branch:N'


def spec_size(spec: str):
    """The (kind, N) of 'chain:N' / 'branch:N', checked; None for anything else.

    (kind, N) of 'chain:N' / 'branch:N', checked against LIMITS['bodies'] before anything is built;
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

    Parameters
    ----------
    N : int, optional
        The highest body number (odd, >= 13).
    m : float, optional
        Mass of each rod [kg].
    L : float, optional
        Length of each rod [m].

    Returns
    -------
    Model
        The branch system.

    Raises
    ------
    ValueError
        N is not an odd integer >= 13.
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


# ---------------------------------------------------------------- closed-loop families (cut joints)

def _rev(name, parent, child, ppos, cpos, q0):
    """Revolute joint about z between two points given in the parent's and the child's body frames."""
    return Joint(name, "revolute", parent, child, Placement(np.array([ppos[0], ppos[1], 0.0])),
                 Placement(np.array([cpos[0], cpos[1], 0.0])), axis=[0, 0, 1], q0=[float(q0)])


def _loop_simulation():
    from .simulation import parse_simulation
    return parse_simulation({"integrator": "rk4", "dt": 1e-3, "t_end": 1.0, "check_energy": 1e-6}, "<library>",
                            beams=False)


def ladder(k: int, L: float = 1.0, m: float = 1.0, width: float = 1.0, theta0: float = 0.4,
           gravity=(0.0, -9.81, 0.0)) -> Model:
    """A planar ladder of k closed loops hanging in the vertical x-y plane.

    A planar ladder of k closed loops hanging in the vertical x-y plane (gravity -y), every joint revolute
    about z: k + 2 degrees of freedom.

    Bodies (thin rods, mass m): the left rail L0..Lk and the right rail R0..Rk (k + 1 links of length L
    each) and the rungs rung1..rungk (length ``width``). The rails hang from two ground pivots at (0, 0)
    and (width, 0); rail link j spans the j-th to (j+1)-th rail point, rail point j of the left rail being
    P_j = j L d and of the right rail Q_j = (width, 0) + j L d, d = (sin theta0, -cos theta0). Rung j
    (j = 1..k) joins the centres of rail links Lj and Rj, (P_j + P_(j+1)) / 2 to (Q_j + Q_(j+1)) / 2, so every
    loop has six distinct pins (rungs at the rail hinges would put three bodies on one pin and leave a loop's
    own joints on two points only: a coordinate reduction could not solve its three constraints for them). At q0 the whole ladder is sheared by theta0 from the
    vertical (every floor a parallelogram, the rungs horizontal), at rest: exactly closed, no equilibrium
    (theta0 = 0 would be one), far from the parallelogram's singular (flat) configuration.
    DOF: 3 (3k + 2) bodies - 2 (4k + 2) revolute joints = k + 2 (one shear per floor, the two free links).

    Body frames at the rod centre, x along the rod: rails pointing down the rail (from rail point j to j+1),
    rungs from the left rail to the right one. Joint names: ``pivotL`` (ground - L0), ``hL<j>`` / ``hR<j>``
    (the hinge between rail links j-1 and j), ``rung<j>L`` / ``rung<j>R`` (rung j on the left / right rail),
    ``cut<j>`` (the cut joint of loop j).

    Spanning tree (serpentine), chosen so that every cut's parent is an ancestor of its child (or ground):
    loop j is the tree path from the cut's parent down to its child, closed by the cut::

        loop 1:        ground -pivotL- L0 -hL1- L1 -rung1L- rung1 -rung1R- R1 -hR1- R0;  cut1: ground -> R0
                       (the right ground pivot, at R0's upper end)
        loop j even:   R(j-1) -hRj- Rj -rungjR- rungj -rungjL- Lj;  cutj: L(j-1) -> Lj   (the hinge hLj)
        loop j odd>1:  L(j-1) -hLj- Lj -rungjL- rungj -rungjR- Rj;  cutj: R(j-1) -> Rj   (the hinge hRj)

    so loop j's tree path runs L(j-1) -> rung(j-1) -> R(j-1) -> Rj -> rungj -> Lj (j even) or
    R(j-1) -> rung(j-1) -> L(j-1) -> Lj -> rungj -> Rj (j odd > 1); the tree is one serpentine chain but for
    R0, the second child of R1. Relative angles: rail-to-rail 0, rail-to-rung +-(pi/2 - theta0), the pivot
    theta0 - pi/2.

    Parameters
    ----------
    k : int
        Number of loops.
    L : float, optional
        Rail link length [m].
    m : float, optional
        Mass of each rod [kg].
    width : float, optional
        Rung length [m].
    theta0 : float, optional
        Initial rail angle from the vertical [rad].
    gravity : array_like, shape (3,), optional
        Gravitational acceleration [m/s^2].

    Returns
    -------
    Model
        The ladder (k cut joints).

    Raises
    ------
    ValueError
        k is not a positive integer.
    """
    if int(k) != k or k < 1:
        raise ValueError(f"ladder needs a positive integer number of loops, got {k}")
    k = int(k)
    h, w = L / 2, width / 2
    phi = theta0 - math.pi / 2                      # absolute angle of every rail link's x axis (down the rail)
    bodies = ([thin_rod(f"L{j}", m, L) for j in range(k + 1)] + [thin_rod(f"R{j}", m, L) for j in range(k + 1)]
              + [thin_rod(f"rung{j}", m, width) for j in range(1, k + 1)])
    top, bot, left, right = (-h, 0), (h, 0), (-w, 0), (w, 0)
    joints = [_rev("pivotL", GROUND, "L0", (0, 0), top, phi),
              _rev("hL1", "L0", "L1", bot, top, 0.0),
              _rev("rung1L", "L1", "rung1", (0, 0), left, -phi),
              _rev("rung1R", "rung1", "R1", right, (0, 0), phi),
              _rev("hR1", "R1", "R0", top, bot, 0.0)]
    cuts = [Joint("cut1", "revolute", GROUND, "R0", Placement(np.array([float(width), 0.0, 0.0])),
                  Placement(np.array([-h, 0.0, 0.0])), axis=[0, 0, 1])]
    for j in range(2, k + 1):
        a, b = ("R", "L") if j % 2 == 0 else ("L", "R")        # the rail continued, the rail closed by the cut
        ra, rb = (right, left) if a == "R" else (left, right)  # rung ends on rail a and on rail b
        joints += [_rev(f"h{a}{j}", f"{a}{j - 1}", f"{a}{j}", bot, top, 0.0),
                   _rev(f"rung{j}{a}", f"{a}{j}", f"rung{j}", (0, 0), ra, -phi),
                   _rev(f"rung{j}{b}", f"rung{j}", f"{b}{j}", rb, (0, 0), phi)]
        cuts.append(Joint(f"cut{j}", "revolute", f"{b}{j - 1}", f"{b}{j}", Placement(np.array([h, 0.0, 0.0])),
                          Placement(np.array([-h, 0.0, 0.0])), axis=[0, 0, 1]))
    return Model(f"ladder{k}", bodies, joints, gravity=np.array(gravity, float), cuts=cuts,
                 simulation=_loop_simulation())


FOUR_BAR = (0.6, 1.6, 1.4, 1.2)     # crank, coupler, rocker, base: Grashof crank-rocker, never flat


def four_bar_pose(crank=0.6, coupler=1.6, rocker=1.4, base=1.2, theta=-1.2):
    """Absolute angles (crank, coupler, rocker) of a planar four-bar.

    With base pivots A = (0, 0), D = (base, 0),
    crank A -> B at angle theta, coupler B -> C, rocker C -> D; C on the same side of BD as the crank's tip
    lies of AD (theta < 0: below)."""
    A, D = np.zeros(2), np.array([base, 0.0])
    B = A + crank * np.array([math.cos(theta), math.sin(theta)])
    r = float(np.linalg.norm(D - B))
    a = (coupler ** 2 - rocker ** 2 + r ** 2) / (2 * r)
    hh = coupler ** 2 - a ** 2
    if hh <= 0:
        raise ValueError("the four-bar does not close at this crank angle")
    e = (D - B) / r
    n = np.array([-e[1], e[0]]) * (1.0 if theta >= 0 else -1.0)
    C = B + a * e + math.sqrt(hh) * n
    ang = lambda v: math.atan2(v[1], v[0])          # noqa: E731
    return ang(B - A), ang(C - B), ang(D - C)


def loop_chain(k: int, m: float = 1.0, theta: float = -1.2, dims=FOUR_BAR, gravity=(0.0, -9.81, 0.0)) -> Model:
    """k planar four-bar loops in series, coupled through bodies only (no shared joint); k degrees of freedom.

    Loop i (i = 1..k) has the base body B_i (B_1 = ground, B_(i+1) = c_i) and the tree chain
    B_i -ja<i>- a_i -jb<i>- b_i -jc<i>- c_i (crank a_i, coupler b_i, rocker c_i: thin rods of mass m and lengths
    ``dims`` = (crank, coupler, rocker, base) = (0.6, 1.6, 1.4, 1.2), revolute joints about z), closed by the
    revolute cut ``cut<i>`` with parent B_i and child c_i (so every cut's parent is an ancestor of its
    child). Base pivots: the crank's A and the cut's D, ``base`` apart; on the ground A = (0, 0), D = (1.2, 0);
    on the rocker c_i they sit on a rigid bracket centred at the rod's centre such that, at q0, every loop's
    base line is horizontal: all loops are translated copies of the first, a staircase hanging down to the
    right. Crank angle theta = -1.2 rad from the base line, C below the base (the upper-branch mirror image).
    Grashof crank-rocker (0.6 + 1.6 < 1.4 + 1.2) and no signed sum of the three moving lengths equals the
    base, so no loop ever reaches a flat (rank-losing) configuration; the constraint Jacobian is block
    triangular (loop i's rows involve loops 1..i only) with full-rank blocks. Gravity -y in the plane; at
    rest at q0 (not an equilibrium).

    Body frames at the rod centres, x from A to B (crank), B to C (coupler), C to D (rocker).

    Parameters
    ----------
    k : int
        Number of four-bar loops.
    m : float, optional
        Mass of each rod [kg].
    theta : float, optional
        Initial crank angle [rad].
    dims : tuple of float, optional
        (crank, coupler, rocker, base) lengths [m].
    gravity : array_like, shape (3,), optional
        Gravitational acceleration [m/s^2].

    Returns
    -------
    Model
        The chain of loops (k cut joints).

    Raises
    ------
    ValueError
        k is not a positive integer, or the four-bar does not close at this crank angle.
    """
    if int(k) != k or k < 1:
        raise ValueError(f"loop_chain needs a positive integer number of loops, got {k}")
    k = int(k)
    l1, l2, l3, g = (float(x) for x in dims)
    t1, t2, t3 = four_bar_pose(l1, l2, l3, g, theta)
    c, s = math.cos(-t3), math.sin(-t3)
    Rm = np.array([[c, -s], [s, c]])               # base-line directions into the rocker's frame
    A_on_c, D_on_c = Rm @ np.array([-g / 2, 0.0]), Rm @ np.array([g / 2, 0.0])
    bodies, joints, cuts = [], [], []
    for i in range(1, k + 1):
        base = GROUND if i == 1 else f"c{i - 1}"
        A, D = ((0.0, 0.0), (g, 0.0)) if i == 1 else (tuple(A_on_c), tuple(D_on_c))
        base_angle = 0.0 if i == 1 else t3          # the base body's x axis, relative to the base line
        bodies += [thin_rod(f"a{i}", m, l1), thin_rod(f"b{i}", m, l2), thin_rod(f"c{i}", m, l3)]
        joints += [_rev(f"ja{i}", base, f"a{i}", A, (-l1 / 2, 0), t1 - base_angle),
                   _rev(f"jb{i}", f"a{i}", f"b{i}", (l1 / 2, 0), (-l2 / 2, 0), t2 - t1),
                   _rev(f"jc{i}", f"b{i}", f"c{i}", (l2 / 2, 0), (-l3 / 2, 0), t3 - t2)]
        cuts.append(Joint(f"cut{i}", "revolute", base, f"c{i}", Placement(np.array([D[0], D[1], 0.0])),
                          Placement(np.array([l3 / 2, 0.0, 0.0])), axis=[0, 0, 1]))
    return Model(f"loop_chain{k}", bodies, joints, gravity=np.array(gravity, float), cuts=cuts,
                 simulation=_loop_simulation())
