"""Closed-loop model dicts for tests: random planar and spatial loops, the five-bar linkage (M2) and the quarter
car (M6) of /work/shared/specs/models.md.

Every dict is our model-file format with a ``loops:`` section (cut joints: same fields as ``joints:``), built so
the cuts close exactly at the joints' ``q0`` (|constraint| ~ 1e-15) and the joints' ``u0`` satisfy the velocity
constraints (a random u projected on the null space of the oracle's Jacobian, ``kkt.KKT.project_velocity``).
The cut frames are computed from the tree's pose at q0 with the oracle's forward kinematics (pinocchio):
``F_j = (child body frame) * child_frame`` is placed first, then ``F_i = F_j * M_rel^-1`` with M_rel a random
motion the cut type allows (so the cut sits at a non-trivial joint position: a rotated revolute, a displaced
prismatic, a bent universal...), and ``parent_frame = (parent body frame)^-1 * F_i``.

Nothing here imports codegen.
"""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pinocchio as pin
from scipy.spatial.transform import Rotation

try:
    from support.kkt import CUT_TYPES, N_CONSTRAINTS, KKT, joint_motion
    from support.peers_from_file import NQ_NV, random_frame, random_inertia, unit
except ImportError:                                       # run as a script: python tests/support/loops.py
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from support.kkt import CUT_TYPES, N_CONSTRAINTS, KKT, joint_motion
    from support.peers_from_file import NQ_NV, random_frame, random_inertia, unit

# rows a cut keeps in a planar loop (motion in the x-y plane; the cut axes chosen as in planar_loop_dict)
PLANAR_ROWS = {"revolute": 2, "prismatic": 2, "cylindrical": 2, "universal": 2, "spherical": 2, "planar": 2,
               "fixed": 3}


# ---------------------------------------------------------------- helpers

def frame_dict(M: pin.SE3, kind="quat") -> dict:
    """A placement as a model-file frame (``quat`` w x y z or ``matrix``), plain floats."""
    f = {"pos": [float(x) for x in M.translation]}
    if kind == "matrix":
        f["matrix"] = [[float(x) for x in row] for row in M.rotation]
    else:
        x, y, z, w = Rotation.from_matrix(M.rotation).as_quat()
        f["quat"] = [float(w), float(x), float(y), float(z)]
    return f


def _random_cut_motion(rng, t, a, a2, planar=False):
    """A random relative placement F_i^-1 F_j allowed by the cut type (planar: motions of the x-y plane)."""
    if t == "revolute":
        return joint_motion(t, a, x=[rng.uniform(-1.5, 1.5)])
    if t == "prismatic":
        return joint_motion(t, a, x=[rng.uniform(-0.3, 0.3)])
    if t == "cylindrical":
        return joint_motion(t, a, x=[rng.uniform(-1.5, 1.5), rng.uniform(-0.3, 0.3)])
    if t == "universal":
        return joint_motion(t, a, a2, x=[rng.uniform(-1.0, 1.0), 0.0 if planar else rng.uniform(-1.0, 1.0)])
    if t == "spherical":
        return joint_motion(t, x=Rotation.random(random_state=rng).as_rotvec())
    if t == "planar":
        return joint_motion(t, a, x=[*rng.uniform(-0.3, 0.3, 2), rng.uniform(-1.5, 1.5)])
    return pin.SE3.Identity()


def _cut_axes(rng, t, planar=False):
    """(axis, axis2) for a cut type: random unit vectors (spatial); in a planar loop (motion in x-y): revolute,
    cylindrical, universal about z (universal's axis2 in the plane), prismatic along an in-plane direction,
    planar with an in-plane normal (a normal z would constrain nothing)."""
    if t in ("spherical", "fixed"):
        return None, None
    if planar:
        phi = rng.uniform(-np.pi, np.pi)
        inplane = np.array([np.cos(phi), np.sin(phi), 0.0])
        if t in ("prismatic", "planar"):
            return inplane, None
        return np.array([0.0, 0, 1]), (inplane if t == "universal" else None)
    a = unit(rng.normal(size=3))
    return a, (unit(np.cross(a, rng.normal(size=3))) if t == "universal" else None)


def close_cut(k_tree: KKT, q0, rng, name, t, parent, child, a=None, a2=None, planar=False, offset_scale=0.2):
    """A cut entry between ``parent`` (a body or ground) and ``child`` closing at q0 (see module docstring)."""
    if a is None and a2 is None:
        a, a2 = _cut_axes(rng, t, planar)
    B_child = k_tree.peer.body_frame(q0, child)
    if planar:
        off = pin.SE3(Rotation.from_rotvec([0, 0, rng.uniform(-np.pi, np.pi)]).as_matrix(),
                      np.array([*rng.normal(scale=offset_scale, size=2), 0.0]))
    else:
        off = pin.SE3(Rotation.random(random_state=rng).as_matrix(), rng.normal(scale=offset_scale, size=3))
    Fj = B_child * off
    Fi = Fj * _random_cut_motion(rng, t, a, a2, planar).inverse()
    B_parent = pin.SE3.Identity() if parent == "ground" else k_tree.peer.body_frame(q0, parent)
    c = {"name": name, "type": t, "parent": parent, "child": child,
         "parent_frame": frame_dict(B_parent.inverse() * Fi, "quat"),
         "child_frame": frame_dict(off, "matrix")}
    if a is not None:
        c["axis"] = [float(x) for x in a]
    if a2 is not None:
        c["axis2"] = [float(x) for x in a2]
    return c


def set_initial_velocity(d: dict, rng, u_scale=1.0, at_rest=False) -> dict:
    """Write a random u0 satisfying the velocity constraints into d's joints (in place; returns d)."""
    k = KKT(d)
    q0, _ = k.initial_state()
    u = np.zeros(k.nv) if at_rest else k.project_velocity(q0, rng.normal(scale=u_scale, size=k.nv))
    sl = k.joint_slices()
    for j in d["joints"]:
        if j["type"] != "fixed":
            j["u0"] = [float(x) for x in u[sl[j["name"]][1]]]
    return d


def check_loop_dict(d: dict, min_sv=1e-3, expect_rows=None, tol=1e-12) -> KKT:
    """The generator's acceptance test: closes at q0 and u0, full row rank (smallest / largest singular value of
    the reduced Jacobian >= min_sv), at least one degree of freedom; ``expect_rows``: rows kept per cut."""
    k = KKT(d)
    q0, u0 = k.initial_state()
    J = k.jacobian(q0)
    s = np.linalg.svd(J, compute_uv=False)
    if expect_rows is not None and k.rows_per_cut(q0) != list(expect_rows):
        raise ValueError(f"rows per cut {k.rows_per_cut(q0)}, expected {list(expect_rows)}")
    if s.size and s[-1] < min_sv * s[0]:
        raise np.linalg.LinAlgError(f"ill-conditioned constraint Jacobian: singular values {s[0]:.3g} .. {s[-1]:.3g}")
    if k.nv - J.shape[0] < 1:
        raise ValueError(f"no degree of freedom left: nv {k.nv}, {J.shape[0]} constraints")
    assert k.max_violation(q0) < tol, k.max_violation(q0)
    assert k.velocity_violation(q0, u0) < tol * max(1.0, np.abs(u0).max()), k.velocity_violation(q0, u0)
    return k


def _body(rng, name, planar=False, scale=1.0):
    com = rng.normal(scale=0.2, size=3)
    if planar:
        com[2] *= 0.25
    return {"name": name, "mass": float(rng.uniform(0.5, 3.0)), "com": [float(x) for x in com],
            "inertia": random_inertia(rng, 0.1 * scale).tolist()}


# ---------------------------------------------------------------- planar loops

def planar_loop_dict(seed, n_links=4, cut_type="revolute", n_prismatic=0, to_ground=None, at_rest=False,
                     max_tries=50) -> dict:
    """A planar closed chain: ``n_links`` bodies b0..b{n-1} on a chain of joints from ground, revolute about z
    (``n_prismatic`` of them, not the first, prismatic along in-plane axes), gravity -y; one cut of type
    ``cut_type`` closing b{n-1} to ground (``to_ground``; default: random) or to an earlier body b_k, with the
    loop's tree joints >= (rows of the cut in the plane) + 1. Joint frames rotate about z only, positions in
    the plane; bodies have full random inertias and small out-of-plane com offsets (the motion stays planar).
    Cut axes: see ``_cut_axes``. Random q0 (retried until the reduced constraint Jacobian is well conditioned)
    and a consistent random u0 (or rest)."""
    if cut_type not in CUT_TYPES:
        raise ValueError(cut_type)
    rows = PLANAR_ROWS[cut_type]
    if n_links < rows + 1:
        raise ValueError(f"a planar loop closed by a {cut_type} cut ({rows} constraints) needs n_links >= {rows + 1}")
    for attempt in range(max_tries):
        rng = np.random.default_rng([seed, attempt])
        prism = set(rng.choice(np.arange(1, n_links), size=min(n_prismatic, n_links - 1), replace=False).tolist()) \
            if n_prismatic else set()
        bodies, joints = [], []
        for i in range(n_links):
            bodies.append(_body(rng, f"b{i}", planar=True))
            j = {"name": f"j{i}", "type": "prismatic" if i in prism else "revolute",
                 "parent": "ground" if i == 0 else f"b{i - 1}", "child": f"b{i}",
                 "parent_frame": {"pos": [float(rng.uniform(0.5, 1.0)) if i else 0.0, float(rng.normal(scale=0.2)),
                                          0.0],
                                  "rpy": [0.0, 0.0, float(rng.uniform(-1, 1))]},
                 "child_frame": {"pos": [float(x) for x in (*rng.normal(scale=0.1, size=2), 0.0)],
                                 "rpy": [0.0, 0.0, float(rng.uniform(-1, 1))]}}
            if i in prism:
                phi = rng.uniform(-np.pi, np.pi)
                j["axis"] = [float(np.cos(phi)), float(np.sin(phi)), 0.0]
                j["q0"] = float(rng.uniform(-0.2, 0.2))
            else:
                j["axis"] = [0.0, 0.0, 1.0]
                j["q0"] = float(rng.uniform(-np.pi, np.pi))
            joints.append(j)
        d = {"name": f"planar_loop_{cut_type}_{seed}", "gravity": [0.0, -9.81, 0.0], "bodies": bodies,
             "joints": joints, "forces": []}
        k_tree = KKT(d)
        q0, _ = k_tree.initial_state()
        ground = (rng.uniform() < 0.5) if to_ground is None else to_ground
        if ground:
            parent = "ground"
        else:                              # an earlier body, keeping >= rows + 1 joints in the loop
            kmax = n_links - 2 - rows
            if kmax < 0:
                parent = "ground"
            else:
                parent = f"b{int(rng.integers(0, kmax + 1))}"
        d["loops"] = [close_cut(k_tree, q0, rng, "cut", cut_type, parent, f"b{n_links - 1}", planar=True)]
        try:
            check_loop_dict(set_initial_velocity(d, rng, at_rest=at_rest), expect_rows=[rows])
        except (np.linalg.LinAlgError, ValueError):
            continue
        return d
    raise RuntimeError(f"no regular planar loop after {max_tries} tries (seed {seed}, {cut_type})")


def merge_loop_dicts(parts, name: str) -> dict:
    """One model of several independent loop models (each hangs from ground; names prefixed p0_, p1_, ...): one build
    for all of them. Gravity and everything else of the first part."""
    out = dict(parts[0], name=name, bodies=[], joints=[], loops=[], forces=[])

    def ren(p, n):
        return n if n == "ground" else f"p{p}_{n}"
    for p, d in enumerate(parts):
        out["bodies"] += [dict(b, name=ren(p, b["name"])) for b in d["bodies"]]
        out["joints"] += [dict(j, name=ren(p, j["name"]), parent=ren(p, j["parent"]), child=ren(p, j["child"]))
                          for j in d["joints"]]
        out["loops"] += [dict(c, name=ren(p, c["name"]), parent=ren(p, c["parent"]), child=ren(p, c["child"]))
                         for c in d.get("loops", [])]
        assert not d.get("forces"), "merge_loop_dicts: parts with forces"
    return out


# ---------------------------------------------------------------- spatial loops

TREE_TYPES = ("revolute", "prismatic", "universal", "spherical", "cylindrical")
TREE_WEIGHTS = (0.35, 0.1, 0.2, 0.2, 0.15)


def spatial_loop_dict(seed, cut_types=("revolute",), n_loops=None, coupled=False, to_ground=None, extra_bodies=1,
                      mobility=1, at_rest=False, min_sv=1e-3, max_tries=100) -> dict:
    """A spatial tree with ``n_loops`` cuts (default ``len(cut_types)``; loop l has type
    ``cut_types[l % len(cut_types)]``, a string is one type).

    Each loop grows a new chain of random joints (revolute, prismatic, universal, spherical, cylindrical;
    tilted random axes, random frames cycling rpy / matrix / quat / axis_angle, full random inertias) until the
    chain's degrees of freedom reach (constraints of the cut) + ``mobility``; the cut joins the chain's last
    body to ground or to the chain's first body (uncoupled loops: every chain starts at ground, so loops share
    no body). ``coupled``: the chain of loop l >= 1 starts at a body of an earlier loop and its cut goes to
    ground or to another body of an earlier loop, so the loops share bodies and tree joints (their constraint
    rows share columns). ``extra_bodies`` open branches hang off random bodies. Parent and child of a cut are
    in random order (ground is always the parent). Retries (new random numbers from (seed, attempt)) until the
    Jacobian has full row rank with smallest / largest singular value >= ``min_sv``, no cut row is lost, and
    nv - m >= 1."""
    if isinstance(cut_types, str):
        cut_types = (cut_types,)
    for ct in cut_types:
        if ct not in CUT_TYPES:
            raise ValueError(ct)
    n_loops = len(cut_types) if n_loops is None else n_loops
    types = [cut_types[i % len(cut_types)] for i in range(n_loops)]
    kinds = ("rpy", "matrix", "quat", "axis_angle")
    for attempt in range(max_tries):
        rng = np.random.default_rng([seed, attempt])
        bodies, joints, chains, plans = [], [], [], []

        def add(parent):
            i = len(bodies)
            t = str(rng.choice(TREE_TYPES, p=TREE_WEIGHTS))
            bodies.append(_body(rng, f"b{i}"))
            j = {"name": f"j{i}", "type": t, "parent": parent, "child": f"b{i}",
                 "parent_frame": random_frame(rng, kinds[i % 4]), "child_frame": random_frame(rng, kinds[(i + 1) % 4])}
            if t in ("revolute", "prismatic", "cylindrical", "universal"):
                a = unit(rng.normal(size=3))
                j["axis"] = [float(x) for x in a]
                if t == "universal":
                    j["axis2"] = [float(x) for x in unit(np.cross(a, rng.normal(size=3)))]
            if t == "spherical":
                j["q0"] = [float(x) for x in unit(rng.normal(size=4))]
            elif t == "prismatic":
                j["q0"] = float(rng.uniform(-0.3, 0.3))
            elif t == "cylindrical":
                j["q0"] = [float(rng.uniform(-1.5, 1.5)), float(rng.uniform(-0.3, 0.3))]
            elif t == "universal":
                j["q0"] = [float(x) for x in rng.uniform(-1.0, 1.0, 2)]
            else:
                j["q0"] = float(rng.uniform(-np.pi, np.pi))
            joints.append(j)
            return f"b{i}", NQ_NV[t][1]

        for l, ct in enumerate(types):
            earlier = [b for ch in chains for b in ch]
            anchor = str(rng.choice(earlier)) if coupled and l > 0 else "ground"
            ground = (rng.uniform() < 0.5) if to_ground is None else to_ground
            if coupled and l > 0:
                others = [b for b in earlier if b != anchor]
                other = "ground" if (ground or not others) else str(rng.choice(others))
            else:
                other = "ground" if ground else None        # None: the chain's first body
            chain, dof, parent = [], 0, anchor
            need = N_CONSTRAINTS[ct] + mobility
            while dof < need or (other is None and len(chain) < 2):
                b, n = add(parent)
                if chain or other is not None:              # the first body's joint is outside the loop
                    dof += n
                chain.append(b)
                parent = b
            other = chain[0] if other is None else other
            plans.append((ct, other, chain[-1]))
            chains.append(chain)
        for _ in range(extra_bodies):
            add(str(rng.choice([b["name"] for b in bodies])))
        g = unit(rng.normal(size=3)) * 9.81
        d = {"name": f"spatial_loops_{seed}", "gravity": [float(x) for x in g], "bodies": bodies[::-1],
             "joints": joints[::-1], "forces": []}
        k_tree = KKT(d)
        q0, _ = k_tree.initial_state()
        loops = []
        for l, (ct, other, end) in enumerate(plans):
            if other == "ground" or rng.uniform() < 0.5:
                parent, child = other, end
            else:
                parent, child = end, other
            loops.append(close_cut(k_tree, q0, rng, f"cut{l}", ct, parent, child))
        d["loops"] = loops
        try:
            check_loop_dict(set_initial_velocity(d, rng, at_rest=at_rest), min_sv=min_sv,
                            expect_rows=[N_CONSTRAINTS[ct] for ct in types])
        except (np.linalg.LinAlgError, ValueError):
            continue
        return d
    raise RuntimeError(f"no regular spatial loop model after {max_tries} tries (seed {seed}, {types})")


# ---------------------------------------------------------------- the spec models

def _rod(name, L=1.0, m=1.0):
    """Thin rod along body x from the body origin: com (L/2, 0, 0), m L^2/12 about y and z; axial 1e-3 of that
    (as examples/balance_pendulum.yaml: a zero one is not positive definite; it never enters planar motion)."""
    I = m * L ** 2 / 12
    return {"name": name, "mass": m, "com": [L / 2, 0.0, 0.0], "inertia": [1e-3 * I, I, I]}


def five_bar_dict(q0=(np.pi / 4, np.pi / 2, -np.pi / 2, 0.0)) -> dict:
    """M2, the five-bar linkage: tree ground -R(q1)- bar1 -R(q2)- bar2 -R(q3)- bar3 -P(q4)- bar4, cut ``q5``:
    prismatic between ground (parent side, F_i at P0 = (sqrt 2/2, 3 sqrt 2/2) with x along u0 = (cos pi/4,
    sin pi/4), axis x) and bar4 (child side, F_j = bar4's frame). Body frames at each bar's start point with x
    along the bar (bar4: at B3 + q4 u3); q1 absolute, q2, q3 relative angles about z; q4 along bar3's x.
    The spec's q5 is not a coordinate here: q5 = (bar4 origin - P0) . u0 (``five_bar_q5``). Spec initial state:
    q = (pi/4, pi/2, -pi/2, 0), q5 = 0, at rest."""
    s2 = np.sqrt(2.0)
    q1, q2, q3, q4 = (float(x) for x in q0)
    rz = lambda th: {"rpy": [0.0, 0.0, th]}                 # noqa: E731
    return {"name": "five_bar", "gravity": [0.0, -9.81, 0.0],
            "bodies": [_rod("bar1"), _rod("bar2"), _rod("bar3"), _rod("bar4")],
            "joints": [
                {"name": "q1", "type": "revolute", "parent": "ground", "child": "bar1", "axis": [0, 0, 1], "q0": q1},
                {"name": "q2", "type": "revolute", "parent": "bar1", "child": "bar2", "axis": [0, 0, 1],
                 "parent_frame": {"pos": [1.0, 0, 0]}, "q0": q2},
                {"name": "q3", "type": "revolute", "parent": "bar2", "child": "bar3", "axis": [0, 0, 1],
                 "parent_frame": {"pos": [1.0, 0, 0]}, "q0": q3},
                {"name": "q4", "type": "prismatic", "parent": "bar3", "child": "bar4", "axis": [1, 0, 0],
                 "parent_frame": {"pos": [1.0, 0, 0]}, "q0": q4}],
            "loops": [{"name": "q5", "type": "prismatic", "parent": "ground", "child": "bar4", "axis": [1, 0, 0],
                       "parent_frame": {"pos": [s2 / 2, 3 * s2 / 2, 0.0], **rz(np.pi / 4)}}],
            "forces": []}


def five_bar_q5(k: KKT, q) -> float:
    """The spec's q5: bar4's origin along u0 from P0."""
    p = k.peer.body_frame(q, "bar4").translation
    return float((p - np.array([np.sqrt(2) / 2, 3 * np.sqrt(2) / 2, 0])) @ np.array([1, 1, 0]) / np.sqrt(2))


def quarter_car_dict(wheel_spin=10.0) -> dict:
    """M6, the chassis-fixed quarter car: the chassis is ground. Body frames at the tree joint points with
    world-aligned axes at the design configuration (all tree q zero, identity quaternion), so coms are the spec's
    world COMs minus the joint point and the spec's inertias are body-frame inertias. Tree: ground -R(x) at A- LCA,
    ground -R(x) at C- UCA, LCA -S at B- knuckle, knuckle -R(y) at W- wheel, ground -U(z; x) at F- tie rod. Cuts
    (spherical): UCA (parent) - knuckle (child) at D, tie rod (parent) - knuckle (child) at E. Spring-damper:
    ground point (0, 0.45, 0.60) to the LCA point (0, 0.45, -0.0125) (LCA frame: minus A), k 25000, c 1500, free
    length 0.55. Initial state: design configuration, wheel spin +10 rad/s about +y, everything else at rest."""
    A, B, C = np.array([0, 0.20, 0]), np.array([0, 0.60, -0.02]), np.array([0, 0.30, 0.30])
    D, E, F, W = np.array([0, 0.58, 0.32]), np.array([-0.12, 0.60, 0.10]), np.array([-0.12, 0.25, 0.10]), \
        np.array([0, 0.75, 0.15])
    L = lambda v: [float(x) for x in v]                     # noqa: E731

    def body(name, m, com, at, inertia):
        return {"name": name, "mass": m, "com": L(np.array(com) - at), "inertia": inertia}
    return {"name": "quarter_car", "gravity": [0.0, 0.0, -9.81],
            "bodies": [body("LCA", 4.0, [0, 0.40, -0.01], A, [0.06, 0.01, 0.06]),
                       body("UCA", 2.5, [0, 0.44, 0.31], C, [0.02, 0.005, 0.02]),
                       body("knuckle", 10.0, [0, 0.62, 0.15], B, [0.10, 0.05, 0.08]),
                       body("wheel", 20.0, [0, 0.75, 0.15], W, [0.8, 1.4, 0.8]),
                       body("tie_rod", 1.0, [-0.12, 0.425, 0.10], F, [0.0102, 1e-4, 0.0102])],
            "joints": [
                {"name": "lca", "type": "revolute", "parent": "ground", "child": "LCA", "axis": [1, 0, 0],
                 "parent_frame": {"pos": L(A)}, "q0": 0.0, "u0": 0.0},
                {"name": "uca", "type": "revolute", "parent": "ground", "child": "UCA", "axis": [1, 0, 0],
                 "parent_frame": {"pos": L(C)}, "q0": 0.0, "u0": 0.0},
                {"name": "ball_joint", "type": "spherical", "parent": "LCA", "child": "knuckle",
                 "parent_frame": {"pos": L(B - A)}, "q0": [1.0, 0, 0, 0], "u0": [0.0, 0, 0]},
                {"name": "hub", "type": "revolute", "parent": "knuckle", "child": "wheel", "axis": [0, 1, 0],
                 "parent_frame": {"pos": L(W - B)}, "q0": 0.0, "u0": float(wheel_spin)},
                {"name": "tie_rod_mount", "type": "universal", "parent": "ground", "child": "tie_rod",
                 "axis": [0, 0, 1], "axis2": [1, 0, 0], "parent_frame": {"pos": L(F)}, "q0": [0.0, 0.0],
                 "u0": [0.0, 0.0]}],
            "loops": [
                {"name": "upper_ball_joint", "type": "spherical", "parent": "UCA", "child": "knuckle",
                 "parent_frame": {"pos": L(D - C)}, "child_frame": {"pos": L(D - B)}},
                {"name": "tie_rod_end", "type": "spherical", "parent": "tie_rod", "child": "knuckle",
                 "parent_frame": {"pos": L(E - F)}, "child_frame": {"pos": L(E - B)}}],
            "forces": [{"name": "spring", "type": "point_spring_damper", "body_a": "ground",
                        "point_a": [0.0, 0.45, 0.60], "body_b": "LCA", "point_b": L(np.array([0, 0.45, -0.0125]) - A),
                        "stiffness": 25000.0, "damping": 1500.0, "length": 0.55}]}


# ---------------------------------------------------------------- self-test

def simulate(k: KKT, q0, u0, t_end, baumgarte=(10.0, 10.0), rtol=1e-10, t_eval=None, **kw):
    """solve_ivp (DOP853) of the KKT dynamics in our coordinates (quaternions renormalised in the right-hand
    side); returns the OdeResult."""
    from scipy.integrate import solve_ivp

    def rhs(t, x):
        q = k.normalized(x[:k.nq])
        u = x[k.nq:]
        return np.concatenate([k.qdot(q, u), k.forward(q, u, t=t, baumgarte=baumgarte, **kw)[0]])
    return solve_ivp(rhs, (0, t_end), np.concatenate([q0, u0]), method="DOP853", rtol=rtol, atol=rtol,
                     t_eval=t_eval)


def _selftest(verbose=True):
    from support.kkt import check_derivatives, random_state_for
    say = print if verbose else (lambda *a: None)
    rng = np.random.default_rng(11)

    # planar loops: every cut type, closing to ground and to a body, with prismatic tree joints
    for s, ct in enumerate(CUT_TYPES):
        for tg in (True, False):
            d = planar_loop_dict(s, n_links=6, cut_type=ct, n_prismatic=1 + s % 2, to_ground=tg)
            k = check_loop_dict(d, expect_rows=[PLANAR_ROWS[ct]])
            q0, u0 = k.initial_state()
            check_derivatives(k, q0, u0)
            udot, wr = k.forward(q0, u0)
            # the planar reduction keeps in-plane wrench components only; the accelerations keep the constraints
            assert np.abs(np.vstack(k.jacobian_full(q0)) @ udot
                          - np.concatenate(k.gamma_full(q0, u0))).max() < 1e-9
    say(f"planar_loop_dict: {len(CUT_TYPES)} cut types x (ground, body): closed (1e-12), rows per cut "
        f"{PLANAR_ROWS}, J / gamma vs FD ok, KKT accelerations satisfy every full row")

    # a repeated cut on a planar loop with enough coordinates (rows <= nv): refused by the rank test
    d = planar_loop_dict(1, n_links=6, cut_type="revolute")
    d["loops"].append(dict(d["loops"][0], name="again"))
    try:
        KKT(d).forward(*KKT(d).initial_state())
        raise AssertionError("repeated cut accepted")
    except np.linalg.LinAlgError:
        pass

    # spatial loops: every cut type alone; mixed, coupled and uncoupled; derivative checks at q0 and at random
    # (non-closing) states
    made = []
    for s, ct in enumerate(CUT_TYPES):
        d = spatial_loop_dict(s, cut_types=(ct,))
        made.append(d)
    mixes = [(("revolute", "spherical"), False), (("universal", "prismatic", "cylindrical"), False),
             (("revolute", "spherical"), True), (("fixed", "planar", "universal"), True),
             (("spherical", "spherical", "revolute"), True)]
    for s, (cts, cp) in enumerate(mixes):
        made.append(spatial_loop_dict(100 + s, cut_types=cts, coupled=cp))
    for d in made:
        k = check_loop_dict(d, expect_rows=[N_CONSTRAINTS[c["type"]] for c in d["loops"]])
        q0, u0 = k.initial_state()
        check_derivatives(k, q0, u0)
        check_derivatives(k, *random_state_for(k, rng))
        m = k.jacobian(q0).shape[0]
        assert k.nv - m >= 1
        # the cut wrenches as external forces: inverse dynamics at the KKT accelerations gives back tau
        tau = rng.normal(size=k.nv)
        udot, wr = k.forward(q0, u0, tau)
        T = k.peer.T(q0)
        tq = T.T @ pin.rnea(k.model, k.data, k.peer.q_pin(q0), T @ u0, T @ udot + k.peer.c(q0, u0),
                            k.external_forces(q0, u0, wr))
        assert np.abs(tq - tau).max() < 1e-9, np.abs(tq - tau).max()
    say("spatial_loop_dict: " + ", ".join(f"{'+'.join(c['type'][:3] for c in d['loops'])}"
                                          f"(nv {KKT(d).nv}, m {KKT(d).jacobian(KKT(d).initial_state()[0]).shape[0]})"
                                          for d in made))
    # coupled really shares: some cut's rows involve another loop's chain
    d = made[len(CUT_TYPES) + 2]
    k = KKT(d)
    Js = k.jacobian_full(k.initial_state()[0])
    used = [set(np.nonzero(np.abs(J).max(axis=0) > 1e-12)[0]) for J in Js]
    assert used[0] & used[1], "coupled loops share no coordinate"

    # energy over a short run of a coupled spatial model (quaternions, Baumgarte)
    d = spatial_loop_dict(5, cut_types=("revolute", "spherical"), coupled=True)
    k = KKT(d)
    q0, u0 = k.initial_state()
    sol = simulate(k, q0, u0, 0.5, rtol=1e-11, t_eval=np.linspace(0, 0.5, 6))
    E0 = k.energy(q0, u0)
    X = sol.y.T
    dE = max(abs(k.energy(k.normalized(x[:k.nq]), x[k.nq:]) - E0) for x in X) / max(1.0, abs(E0))
    viol = max(k.max_violation(k.normalized(x[:k.nq])) for x in X)
    assert dE < 1e-6 and viol < 1e-8, (dE, viol)
    say(f"coupled spatial loops (revolute + spherical cuts), 0.5 s: energy drift {dE:.1e}, violation {viol:.1e}")

    # five-bar: closes, 2 DOF, bar4 slides freely: q5'' = -g sin(pi/4) at t = 0, and q5(t) = -g sin(pi/4) t^2/2
    d = five_bar_dict()
    k = check_loop_dict(d, expect_rows=[2])
    q0, u0 = k.initial_state()
    assert k.nv - 2 == 2 and abs(five_bar_q5(k, q0)) < 1e-15
    udot, wr = k.forward(q0, u0)
    Jrel = k.relative_jacobians(q0)[0][0]           # F_j (bar4) relative to F_i (slide frame), F_j components
    a5 = Jrel[0] @ udot                              # at rest: q5'' = x component (along u0) of that acceleration
    g = 9.81 * np.sin(np.pi / 4)
    assert abs(a5 + g) < 1e-12, (a5, -g)
    # the cut takes no force along the slide; bar4's along-slide balance
    assert abs(wr[0][0]) < 1e-12, wr
    sol = simulate(k, q0, u0, 1.0, rtol=1e-11, t_eval=np.linspace(0, 1.0, 11))
    e5 = max(abs(five_bar_q5(k, x[:k.nq]) + g * t ** 2 / 2) for t, x in zip(sol.t, sol.y.T))
    assert e5 < 1e-7, e5
    say(f"five_bar: q5'' at t=0 {a5:.12f} (-g sin(pi/4) = {-g:.12f}); |q5(t) + g sin(pi/4) t^2/2| <= {e5:.1e} "
        f"over 1 s; cut wrench at t=0 {np.round(wr[0], 6)}")

    # quarter car: 8 coordinates, 6 constraints, closes at the design configuration; spring pre-tension
    d = quarter_car_dict()
    k = check_loop_dict(d, expect_rows=[3, 3])
    q0, u0 = k.initial_state()
    assert (k.nq, k.nv) == (9, 8) and k.nv - 6 == 2
    f, L, Ldot, *_ = k.point_spring_state(q0, u0)[0]
    assert abs(25000 * (L - 0.55) - 1562.5) < 1e-9
    check_derivatives(k, q0, u0)
    # the spec's expected motion: rises about 81 mm, settles about 69 mm above design (c = 0: swings 0..140 mm)
    out = {}
    for c in (1500.0, 0.0):
        d["forces"][0]["damping"] = c
        k = KKT(d)
        sol = simulate(k, q0, u0, 2.0, rtol=1e-9, t_eval=np.linspace(0, 2, 401))
        Q = [k.normalized(x[:k.nq]) for x in sol.y.T]
        z = np.array([k.peer.body_frame(q, "wheel").translation[2] - 0.15 for q in Q])
        E = [k.energy(q, x[k.nq:]) for q, x in zip(Q, sol.y.T)]
        out[c] = (z.max(), z[-1], np.ptp(E) / abs(E[0]), max(k.max_violation(q) for q in Q))
        assert out[c][3] < 1e-8
    assert abs(out[1500.0][0] - 0.081) < 2e-3 and abs(out[1500.0][1] - 0.069) < 2e-3
    assert abs(out[0.0][0] - 0.140) < 2e-3 and out[0.0][2] < 1e-6
    say(f"quarter_car: nq {k.nq}, nv {k.nv}, 6 rows, spring 1562.5 N at design; 2 s: wheel rises "
        f"{out[1500.0][0] * 1e3:.1f} mm, ends {out[1500.0][1] * 1e3:.1f} mm (spec ~81, ~69); c = 0: max "
        f"{out[0.0][0] * 1e3:.1f} mm (spec 140), energy drift {out[0.0][2]:.1e}; violation <= "
        f"{max(o[3] for o in out.values()):.1e}")
    return True


if __name__ == "__main__":
    _selftest()
    print("loops self-test passed")
