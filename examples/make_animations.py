"""Regenerate the README's animations of the shipped examples: docs/media/<example>.gif (each below 1 MB).

    python examples/make_animations.py [--out docs/media] [--fps 20] [--size 400x300]

Each example runs with the settings of its model file (`simulation:`), as `mbgen simulate FILE` would, and is
drawn by codegen.runtime.animate (the same as `mbgen animate RESULT.npz --out X.gif`).
"""
import argparse
import os
import sys
from pathlib import Path

import codegen
from codegen.runtime.animate import animate

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ["balance_pendulum", "flexible_pendulum", "arm7", "humanoid", "five_bar", "quarter_car"]
MAX_BYTES = 1_000_000


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=str(ROOT / "docs" / "media"), help="output folder (default: docs/media)")
    ap.add_argument("--fps", type=float, default=20.0, help="frames per second, played in real time (default: 20)")
    ap.add_argument("--size", default="400x300", help="frame size in pixels (default: 400x300)")
    ap.add_argument("examples", nargs="*", default=EXAMPLES, help=f"examples (default: {' '.join(EXAMPLES)})")
    a = ap.parse_args(argv)
    size = tuple(int(v) for v in a.size.lower().split("x"))
    too_big = []
    for name in a.examples:
        m = codegen.load_model(ROOT / "examples" / f"{name}.yaml")
        sim = m.simulation
        extra = {"alpha": sim["hht_alpha"]} if sim.get("integrator") == "hht" and "hht_alpha" in sim else {}
        res = codegen.build(m).simulate(sim["t_end"], sim["dt"], integrator=sim.get("integrator"), **extra)
        path = animate(res, os.path.join(a.out, f"{name}.gif"), fps=a.fps, size=size)
        kb = os.path.getsize(path) / 1e3
        print(f"{path}: {kb:.0f} kB, {res.t[-1]:g} s of {name}")
        if kb * 1e3 > MAX_BYTES:
            too_big.append(path)
    if too_big:
        print(f"above {MAX_BYTES / 1e6:g} MB (lower --fps or --size): {', '.join(too_big)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
