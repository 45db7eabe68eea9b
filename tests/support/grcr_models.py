"""Closed-loop model dicts in the form the grcr family takes: each loop one chain of one-coordinate joints from its
base (ground, a floating base, or a body of another loop) whose cut (revolute or prismatic) joins the chain's last
body back to the base.  Off-loop bodies on any joint type hang from loop bodies.  Exactly closed at q0, random
consistent u0 (tests/support/loops.py: close_cut, set_initial_velocity, check_loop_dict; the oracle is
tests/support/kkt.py).  Nothing here imports codegen.
"""
from __future__ import annotations

import numpy as np

try:
    from support.kkt import KKT
    from support.loops import _body, check_loop_dict, close_cut, set_initial_velocity
    from support.peers_from_file import random_frame, unit
except ImportError:                                       # pragma: no cover
    from tests.support.kkt import KKT
    from tests.support.loops import _body, check_loop_dict, close_cut, set_initial_velocity
    from tests.support.peers_from_file import random_frame, unit

OFF_LOOP = ("spherical", "universal", "revolute", "cylindrical")


def chain_loops_dict(seed, loops=((None, 7),), floating=False, extra=2, at_rest=False, min_sv=1e-3,
                     max_tries=100) -> dict:
    """``loops``: (anchor, n) per loop: anchor None = ground (the floating base if ``floating``), an int k = a
    random body of loop k's chain (nested loops: they share that body, no joints), ("hang", k, s) = coupled
    loops (GRCR Sect. 5): the base is a random body of loop k's chain and the loop's first s joints are the s
    joints of loop k's chain after it (shared), its own chain continuing from there; n one-coordinate tree joints
    (revolute or prismatic, random axes and frames) on the chain; a random revolute or prismatic cut closes it.
    ``extra`` off-loop bodies (spherical, universal, revolute, cylindrical joints) hang from random bodies."""
    kinds = ("rpy", "matrix", "quat", "axis_angle")
    for attempt in range(max_tries):
        rng = np.random.default_rng([seed, attempt])
        bodies, joints, chains = [], [], []

        def add(parent, t):
            i = len(bodies)
            bodies.append(_body(rng, f"b{i}"))
            j = {"name": f"j{i}", "type": t, "parent": parent, "child": f"b{i}",
                 "parent_frame": random_frame(rng, kinds[i % 4]), "child_frame": random_frame(rng, kinds[(i + 1) % 4])}
            if t in ("revolute", "prismatic", "cylindrical", "universal"):
                a = unit(rng.normal(size=3))
                j["axis"] = [float(x) for x in a]
                if t == "universal":
                    j["axis2"] = [float(x) for x in unit(np.cross(a, rng.normal(size=3)))]
            j["q0"] = {"revolute": lambda: float(rng.uniform(-np.pi, np.pi)),
                       "prismatic": lambda: float(rng.uniform(-0.3, 0.3)),
                       "cylindrical": lambda: [float(rng.uniform(-1.5, 1.5)), float(rng.uniform(-0.3, 0.3))],
                       "universal": lambda: [float(x) for x in rng.uniform(-1.0, 1.0, 2)],
                       "spherical": lambda: [float(x) for x in unit(rng.normal(size=4))],
                       "free": lambda: [*[float(x) for x in rng.normal(size=3)],
                                        *[float(x) for x in unit(rng.normal(size=4))]]}[t]()
            joints.append(j)
            return f"b{i}"

        root = add("ground", "free") if floating else "ground"
        plans = []
        for li, (anchor, n) in enumerate(loops):
            if isinstance(anchor, tuple):                 # ("hang", k, s): coupled, sharing s joints of loop k
                _, k, sh = anchor
                i = int(rng.integers(0, len(chains[k]) - sh))
                base, parent = chains[k][i], chains[k][i + sh]
            else:
                base = root if anchor is None else str(rng.choice(chains[anchor]))
                parent = base
            chain = []
            for _ in range(n):
                parent = add(parent, "prismatic" if rng.uniform() < 0.25 else "revolute")
                chain.append(parent)
            chains.append(chain)
            plans.append((base, chain[-1], "prismatic" if rng.uniform() < 0.3 else "revolute"))
        for _ in range(extra):
            add(str(rng.choice([b["name"] for b in bodies])), str(rng.choice(OFF_LOOP)))
        g = unit(rng.normal(size=3)) * 9.81
        d = {"name": f"chain_loops_{seed}", "gravity": [float(x) for x in g], "bodies": bodies, "joints": joints,
             "forces": []}
        k_tree = KKT(d)
        q0, _ = k_tree.initial_state()
        d["loops"] = [close_cut(k_tree, q0, rng, f"cut{l}", t, base, end) for l, (base, end, t) in enumerate(plans)]
        try:
            check_loop_dict(set_initial_velocity(d, rng, at_rest=at_rest), min_sv=min_sv)
        except (np.linalg.LinAlgError, ValueError):
            continue
        return d
    raise RuntimeError(f"no regular chain-loop model after {max_tries} tries (seed {seed})")
