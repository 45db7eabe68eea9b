"""mbgen animate: an MP4 or GIF of a results file."""
from __future__ import annotations

import argparse
import os
import re

from .common import Formatter, check_out_path


def _size(text: str):
    m = re.fullmatch(r"\s*(\d+)\s*[xX]\s*(\d+)\s*", text)
    if not m or not (64 <= int(m.group(1)) <= 4096 and 64 <= int(m.group(2)) <= 4096):
        raise argparse.ArgumentTypeError(f"expected WIDTHxHEIGHT in pixels, each 64 .. 4096, got {text!r}")
    return int(m.group(1)), int(m.group(2))


def register(sub):
    """Register the command ``animate``."""
    s = sub.add_parser("animate", help="an MP4 or GIF of a results file (NPZ of 'mbgen simulate')",
                       formatter_class=Formatter,
                       description="Draw every frame with matplotlib and encode it (MP4: imageio-ffmpeg, no system\n"
                                   "ffmpeg needed; GIF: Pillow). Rigid bodies are sticks between their joint points,\n"
                                   "beams are drawn with their shape functions; 2-D when the motion stays in one\n"
                                   "plane, else 3-D. Each frame shows the time and the energies.")
    s.add_argument("result", help="NPZ written by 'mbgen simulate' (or Result.save)")
    s.add_argument("--out", default=None, help="output file, .mp4 or .gif (default: RESULT with .mp4)")
    s.add_argument("--fps", type=float, default=30.0, help="frames per second of the video")
    s.add_argument("--every", type=int, default=None,
                   help="draw every N-th sample (default: the N that plays in real time at --fps)")
    s.add_argument("--size", type=_size, default=(640, 480), metavar="WxH", help="frame size in pixels "
                   "(default: 640x480)")
    s.add_argument("--quiet", action="store_true", help="no progress bar")
    s.set_defaults(fn=cmd_animate)


def out_path(args) -> str:
    """The output path of ``mbgen animate``: --out, else the result's with .mp4."""
    return args.out or os.path.splitext(args.result)[0] + ".mp4"


def cmd_animate(args):
    """Run ``mbgen animate``."""
    from ..runtime.animate import animate, require_writer
    from ..runtime.result import load_result
    out = out_path(args)
    check_out_path(out, "--out")
    require_writer(os.path.splitext(out)[1].lower())
    if not os.path.lexists(args.result):
        raise ValueError(f"{args.result}: no such results file")
    res = load_result(args.result)             # checked as a model file is: ValueError naming the array
    path = animate(res, out, fps=args.fps, every=args.every, size=args.size, progress=not args.quiet)
    print(f"{res.meta.get('model_name', args.result)}: {path}")
