"""General coupled loops (GCL, Critchley & Anderson Sect. 5).

A planar loop restructured so that a window of
adjacent dependent coordinates lies at the end of an open loop, where the plain recursive coordinate reduction
takes it (no arbitrary-selection solve, [CA eq 99]).

The loop is the chain B -J1- b1 -J2- ... -b_{n-1} -Jn- B (B its base, Jn the cut) with rank m (3 in a plane).
Plain RCR takes the last m joints as dependents; when they are singular (M2: q4 and q5 slide along one line)
the loop is opened elsewhere.  For the window W = J_{a+1} .. J_{a+m} (0-based start a < n - m) the topology
"adjustment" of Sect. 5 adds fictitious joints and a second loop:

  * loop A: B -J1- ... -J_a- p -rot- m -x- m2 -y- G, closed to B by the cut z.  rot (revolute about the plane
    normal n), x and y (prismatic along two in-plane directions e1, e2 of B) form a full planar joint from p to
    G, a massless copy of the base; the cut z, prismatic along n, holds G's in-plane position and every rotation
    to B's, and its own coordinate stays 0 (planar motion; rot's joint point is shifted into B's plane), so
    G = B exactly.  The four columns (rotation about n, e1, e2, n) are independent at every configuration:
    rot, x, y, z are loop A's dependents throughout ("an m_i coordinate growth", m_i + 1 with the cut's);
  * loop B hangs on loop A ([CA eq 107]: base p on loop A's chain, shared joints rot, x, y, branching body G): the old
    cut Jn hangs b_{n-1} from G (as it hung from B), the joints J_{n-1} .. J_{a+2} are reversed (child hung from
    parent, frames swapped, axis negated: the same coordinate), and J_{a+1} closes loop B as its cut.  Its last
    m joints are the window, eliminated from the tip like any loop's tail.

Every real joint keeps its name and coordinate, so states map one to one by name (the fictitious coordinates
follow from the poses, ``fictitious_state``).  The restructured model is an ordinary model of the grcr family:
built, cached and checked like any other.
"""
from __future__ import annotations

from typing import Dict, List

import numpy as np

from ...model import GROUND, Body, Joint, Model, ModelError, Placement
from ...model.core import order_joints
from ...model.rotations import quat_to_rot
from .plan import loop_layout

TAG = "~gcl"                   # fictitious names: CUT~gcl.rot ... (no model name can hold '~' and '.' like this)
M = 3                          # a planar loop's rank: the width of a window of dependents
FICTITIOUS = (("rot", "angle"), ("x", "disp"), ("y", "disp"), ("z", "disp"))     # joint, coordinate name


def loop_joints(model: Model) -> Dict[str, dict]:
    """Per cut name: base, joints J1..Jn (the cut last), and whether the loop shares joints with another."""
    jof = {j.child: j for j in model.joints}
    layout = loop_layout(model)
    return {lp["cut"].name: {"base": lp["cut"].parent, "joints": [jof[b] for b in lp["tail"]] + [lp["cut"]],
                             "coupled": bool(lp["prefix"]) or any(o["owner"] == i for o in layout)}
            for i, lp in enumerate(layout)}


def _rot_about(R: np.ndarray, a: np.ndarray) -> float:
    """Angle of the rotation R about the unit axis a."""
    s = 0.5 * np.array([R[2, 1] - R[1, 2], R[0, 2] - R[2, 0], R[1, 0] - R[0, 1]]) @ a
    return float(np.arctan2(s, 0.5 * (np.trace(R) - 1.0)))


def _names(cut: str) -> dict:
    p = f"{cut}{TAG}"
    return {k: f"{p}.{k}" for k in ("m", "m2", "G", "rot", "x", "y", "z")}


class Frames:
    """World poses (R, p) of the bodies of a model at one state, from the kernel's outputs (quaternion, centroid)."""

    def __init__(self, model: Model, names: List[str], com: np.ndarray, quat: np.ndarray):
        self.R = {GROUND: np.eye(3)}
        self.p = {GROUND: np.zeros(3)}
        for k, b in enumerate(names):
            R = quat_to_rot(quat[k])
            self.R[b] = R
            self.p[b] = com[k] - R @ model.body(b).com


def plane_normal(model: Model, joints: List[Joint], fr: Frames) -> np.ndarray:
    """The loop's plane normal in world coordinates.

    The axis of its revolute joints, which must all be parallel, with every
    prismatic axis in the plane; ModelError otherwise."""
    axes = {j.name: fr.R[j.parent] @ j.parent_frame.rot @ (np.asarray(j.axis, float) if j.axis is not None
                                                           else np.array([0.0, 0.0, 1.0])) for j in joints}
    rev = [axes[j.name] / np.linalg.norm(axes[j.name]) for j in joints if j.type == "revolute"]
    cut = joints[-1].name
    if not rev or any(abs(abs(a @ rev[0]) - 1.0) > 1e-9 for a in rev) or any(
            abs(axes[j.name] @ rev[0]) > 1e-9 * np.linalg.norm(axes[j.name]) for j in joints if j.type == "prismatic"):
        raise ModelError(f"general coupled loops (--switching gcl) restructure planar loops (revolute joints about "
                         f"one normal, prismatic joints in the plane); loop {cut} is not planar: use --switching acs",
                         model.source, f"loops[{cut}]")
    return rev[0]


def restructure(model: Model, starts: Dict[str, int], fr: Frames, q_of: Dict[str, np.ndarray]) -> Model:
    """The model with the loops named in `starts` restructured.

    The model with each loop named in `starts` (cut name -> window start a) restructured as in the module
    docstring, at the state given by q_of (joint name -> its coordinates, which become the tree's q0; u0 = 0)
    and the poses fr (the fictitious joints' q0).  A loop whose window is its tail (a = n - M) keeps its
    structure, and so do loops not named."""
    loops = loop_joints(model)
    joints, cuts = list(model.joints), list(model.cuts)
    bodies = list(model.bodies)
    fict = {}
    for cut, a in starts.items():
        lp = loops[cut]
        J, B = lp["joints"], lp["base"]
        n = len(J)
        if a >= n - M:
            continue
        if lp["coupled"]:
            raise ModelError(f"general coupled loops (--switching gcl) restructure loops that share no joints with "
                             f"another; loop {cut} does: use --switching acs", model.source, f"loops[{cut}]")
        if J[a].name in {s.joint for s in model.springs} | {f.joint for f in model.joint_forces}:
            raise ModelError(f"loop {cut} cannot be opened at joint {J[a].name}: a force element acts on it; use "
                             f"--switching acs", model.source, f"loops[{cut}]")
        moved = {j.name for j in J[a:]}
        joints = [j for j in joints if j.name not in moved]
        cuts = [c for c in cuts if c.name != cut]
        hub = B                                          # a = 0: the loop worked in the opposite direction
        if a > 0:                                        # fictitious planar joint p -> G = B, loop A
            nm = _names(cut)
            g = geometry(model, J, B, a, fr)
            fict.update({nm[k]: v for k, v in zip(("rot", "x", "y"), g["f"])})
            bodies += [Body(nm[k], 0.0, np.zeros(3), np.zeros((3, 3))) for k in ("m", "m2", "G")]
            joints += [Joint(nm["rot"], "revolute", g["p"], nm["m"], Placement(-g["d"] * g["n_p"], np.eye(3)),
                             Placement(np.zeros(3), g["K"]), axis=g["n_p"]),
                       Joint(nm["x"], "prismatic", nm["m"], nm["m2"], axis=g["e1"]),
                       Joint(nm["y"], "prismatic", nm["m2"], nm["G"], axis=g["e2"])]
            cuts.append(Joint(nm["z"], "prismatic", B, nm["G"], axis=g["nB"]))
            hub = nm["G"]
        joints.append(Joint(J[-1].name, J[-1].type, hub, J[-1].child, J[-1].parent_frame, J[-1].child_frame,
                            axis=J[-1].axis))
        for j in reversed(J[a + 1:n - 1]):
            joints.append(Joint(j.name, j.type, j.child, j.parent, j.child_frame, j.parent_frame,
                                axis=-np.asarray(j.axis if j.axis is not None else (0.0, 0.0, 1.0), float)))
        cuts.append(Joint(J[a].name, J[a].type, J[a].parent, J[a].child, J[a].parent_frame, J[a].child_frame,
                          axis=J[a].axis))
    joints = [Joint(j.name, j.type, j.parent, j.child, j.parent_frame, j.child_frame, j.axis, j.axis2,
                    np.atleast_1d(np.asarray(fict[j.name] if j.name in fict else q_of[j.name], float)).copy(), None)
              for j in joints]
    # Built without the model checks (as the state model of plan.py): the fictitious translations x, y and the
    # loop's own make the *tree's* mass matrix singular; loop A's closure makes the reduced one regular.
    out = Model.__new__(Model)
    out.__dict__.update(model.__dict__)
    out.bodies, out.joints, out.cuts = bodies, joints, cuts
    out._bodies = {b.name: b for b in bodies}
    order_joints(out)
    return out


def geometry(model: Model, J: List[Joint], B: str, a: int, fr: Frames) -> dict:
    """The fictitious joints of window start a.

    The body p they hang from, the plane normal in p's frame
    (n_p), the offset d of p's origin from B's plane, in-plane directions e1, e2 of B, the constant child frame
    K of rot (m's frame = B's when rot = 0 at the poses fr) and the values f = (rot, x, y, z) that close loop A."""
    nw = plane_normal(model, J, fr)
    p = B if a == 0 else J[a - 1].child
    RB, Rp = fr.R[B], fr.R[p]
    nB = RB.T @ nw
    e1 = np.cross(nB, [1.0, 0.0, 0.0] if abs(nB[0]) < 0.9 else [0.0, 1.0, 0.0])
    e1 /= np.linalg.norm(e1)
    g = {"p": p, "n_p": Rp.T @ nw, "nB": nB, "e1": e1, "e2": np.cross(nB, e1), "K": RB.T @ Rp}
    g["d"] = float(nB @ (RB.T @ (fr.p[p] - fr.p[B])))
    g["f"] = fictitious_values(fr, B, g)
    return g


def fictitious_values(fr: Frames, B: str, g: dict) -> np.ndarray:
    """The values rot, x, y, z that close loop A at the poses fr.

    rot, x, y, z that close loop A at the poses fr (G = B): Rot(n_p, rot) = R_p^T R_B K, minus the in-plane
    offset of p from B along e1, e2, and 0."""
    RB, Rp = fr.R[B], fr.R[g["p"]]
    rel = RB.T @ (fr.p[g["p"]] - fr.p[B])
    return np.array([_rot_about(Rp.T @ RB @ g["K"], g["n_p"]), -(g["e1"] @ rel), -(g["e2"] @ rel), 0.0])
