"""Animations of results: MP4 (imageio-ffmpeg's own ffmpeg, no system one) or GIF (Pillow), drawn with matplotlib.

Rigid models are drawn as sticks between joint points (the Result's ``joint_pos``), plus each body's centroid;
a body without children is drawn from its joint through its centroid to the point as far beyond it (the far
end of a uniform rod). Models whose points all stay in one plane are drawn in 2-D, others in 3-D. Beam models
are drawn element by element with the ANCF shape functions, r(xi) = S(xi) e [HW eqs 2-3], from the
Result's ``element_coords``. Every frame carries the time and the energies.

Also here: the extra result arrays the drawing needs (``joint_geometry``, ``beam_geometry``), computed by
System when it assembles a Result.
"""
from __future__ import annotations

import os
import tempfile

import numpy as np

from .result import plain

ANIM_EXTRA = "pip install 'mbgen[anim]' (imageio, imageio-ffmpeg)"
FORMATS = (".mp4", ".gif")


# ---------------------------------------------------------------- result arrays for the drawing

def _rotate(quat, v):
    """World vectors R(quat) v for quaternions w, x, y, z (..., 4) and body vectors v (..., 3)."""
    w, x, y, z = (quat[..., k] for k in range(4))
    qv = np.stack([x, y, z], axis=-1)
    t = 2.0 * np.cross(qv, v)
    return v + w[..., None] * t + np.cross(qv, t)


JOINT_GEOMETRY_KEYS = ("joint_names", "joint_pos", "joint_parent", "joint_child")    # what joint_geometry gives


def joint_geometry(model, body_names, com, quat) -> dict:
    """The joint geometry of an animation.

    joint_names, joint_parent / joint_child (indices into body_names, -1: ground) and joint_pos
    (nt x n_joints x 3): the world position of each joint point, the origin of the joint frame on the child,
    from the child's centroid and orientation: p = c + R (child_frame.pos - com_body)."""
    index = {n: k for k, n in enumerate(body_names)}
    body = {b.name: b for b in model.bodies}
    joints = list(model.joints)
    child = [index[j.child] for j in joints]             # every joint at once (one rotation call per result)
    offset = np.array([np.asarray(j.child_frame.pos, float) - np.asarray(body[j.child].com, float)
                       for j in joints]).reshape(len(joints), 3)
    pos = com[:, child] + _rotate(quat[:, child], np.broadcast_to(offset, (com.shape[0], len(joints), 3)))
    return {"joint_names": np.array([j.name for j in joints]), "joint_pos": pos,
            "joint_parent": np.array([index.get(j.parent, -1) for j in joints], dtype=np.int64),
            "joint_child": np.array([index[j.child] for j in joints], dtype=np.int64)}


def beam_geometry(system, q) -> dict:
    """The beam geometry of an animation: element coordinates and lengths.

    element_coords (nt x n_elements x 8, e = [r_A, r'_A, r_B, r'_B], [HW eq 1]) and element_length:
    what the shape functions need to draw every element at every sample."""
    lengths = {bm.name: bm.length / bm.elements for bm in system.model.beams}
    order = system.plan.beam_order
    e = system.kernel.element_coordinates_at(q)                   # all samples in one compiled call
    return {"element_coords": e,
            "element_length": np.array([lengths[order[b]] for b in system.plan.beam_of], float)}


def element_curves(e, length, npts: int = 11) -> np.ndarray:
    """Points r = S(xi) e on every element.

    (..., n_elements, npts, 2); the cubic shape functions of [HW eq 3]:
    S = [N1 I, l N2 I, N3 I, l N4 I]."""
    xi = np.linspace(0.0, 1.0, npts)
    N = np.stack([1 - 3 * xi ** 2 + 2 * xi ** 3, xi - 2 * xi ** 2 + xi ** 3, 3 * xi ** 2 - 2 * xi ** 3,
                  xi ** 3 - xi ** 2])                                             # (4, npts)
    e = np.asarray(e, float)
    l = np.asarray(length, float)[:, None]                                        # (n_elements, 1)
    comp = [N[0] * e[..., 0 + d, None] + l * N[1] * e[..., 2 + d, None] + N[2] * e[..., 4 + d, None]
            + l * N[3] * e[..., 6 + d, None] for d in (0, 1)]
    return np.stack(comp, axis=-1)


# ---------------------------------------------------------------- writers

def require_writer(suffix: str):
    """ValueError unless the file type is known and its writer is installed (checked before a run)."""
    if suffix not in FORMATS:
        raise ValueError(f"animation: unknown file type '{suffix}'; use .mp4 or .gif")
    if suffix == ".mp4":
        try:
            import imageio.v2  # noqa: F401
            import imageio_ffmpeg
            imageio_ffmpeg.get_ffmpeg_exe()
        except (ImportError, RuntimeError) as e:
            raise ValueError(f"animation: MP4 needs imageio and imageio-ffmpeg ({e}); {ANIM_EXTRA}, "
                             f"or write a .gif") from None


def _write(path, frames_iter, fps, suffix):
    """Frames (uint8 RGB arrays) into a temporary file beside ``path``, renamed into place when complete."""
    from ..compiler.entries import current_umask
    folder = os.path.dirname(os.path.abspath(path))
    os.makedirs(folder, exist_ok=True)
    if os.path.lexists(path) and not os.path.isfile(path):
        raise ValueError(f"{path}: exists and is not a regular file")
    fd, tmp = tempfile.mkstemp(prefix=".tmp.", suffix=suffix, dir=folder)
    os.close(fd)
    try:
        if suffix == ".mp4":
            import imageio.v2 as iio
            with iio.get_writer(tmp, format="FFMPEG", fps=fps, codec="libx264", quality=7,
                                pixelformat="yuv420p", macro_block_size=16, ffmpeg_log_level="error") as w:
                for f in frames_iter:
                    w.append_data(f)
        else:
            from PIL import Image
            frames = [Image.fromarray(f) for f in frames_iter]
            pal = frames[0].quantize(colors=64, method=Image.Quantize.MEDIANCUT)       # one palette for all
            frames = [f.quantize(palette=pal, dither=Image.Dither.NONE) for f in frames]
            frames[0].save(tmp, format="GIF", save_all=True, append_images=frames[1:], loop=0,
                           duration=round(1000 / fps), optimize=True, disposal=1)
        os.chmod(tmp, 0o666 & ~current_umask())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    return path


# ---------------------------------------------------------------- scene

def _plane(points):
    """The plane of the motion, or None if the points span 3-D.

    None if the points span 3-D, else (axis labels, 2 x 3 projection): the world plane when the motion
    lies in one (x-y, x-z or y-z), otherwise the plane of the two principal directions."""
    p = points.reshape(-1, 3)
    p = p[np.all(np.isfinite(p), axis=1)]
    c = p - p.mean(axis=0)
    _, s, vt = np.linalg.svd(c, full_matrices=False)
    if s[0] == 0 or s[-1] > 1e-9 * s[0]:
        return None
    n = vt[-1]
    for k, (labels, rows) in enumerate(((("y", "z"), (1, 2)), (("x", "z"), (0, 2)), (("x", "y"), (0, 1)))):
        if abs(abs(n[k]) - 1) < 1e-9:
            return labels, np.eye(3)[list(rows)]
    return ("u", "v"), vt[:2]


class _Scene:
    """Everything to draw: per frame a list of segments (n_seg x 2 x dim), point markers, frame axes, the text."""

    def __init__(self, z, frames):
        self.t = z["t"][frames]
        self.T, self.V = z["energy_kinetic"][frames], z["energy_potential"][frames]
        self.beams = "element_coords" in z
        if self.beams:
            curves = element_curves(z["element_coords"][frames], z["element_length"])    # nf x nel x npts x 2
            self.segs = curves
            self.points = z["node_pos"][frames]
            self.dim, self.labels, self.proj = 2, ("x", "y"), None
            return
        if "joint_pos" not in z:
            raise ValueError("the results hold no joint positions (joint_pos; written by an older mbgen): "
                             "run the simulation again to animate it")
        J, C = z["joint_pos"][frames], z["body_com"][frames]
        parent, child = z["joint_parent"], z["joint_child"]
        nb = C.shape[1]
        inboard = {int(c): k for k, c in enumerate(child)}
        pairs, P = [], [J, C]                       # point array: joints, centroids, leaf ends
        leaf_ends = []
        for b in range(nb):
            kids = [k for k, p in enumerate(parent) if p == b]
            j = inboard.get(b)
            if j is None:
                continue
            for k in kids:
                pairs.append((j, k))
            if not kids:
                leaf_ends.append((j, b))
        if leaf_ends:
            P.append(np.stack([2 * C[:, b] - J[:, j] for j, b in leaf_ends], axis=1))
            nj = J.shape[1]
            pairs += [(j, nj + nb + i) for i, (j, _) in enumerate(leaf_ends)]
        pts = np.concatenate(P, axis=1)
        plane = _plane(pts)
        self.dim = 3 if plane is None else 2
        self.labels, self.proj = (("x", "y", "z"), None) if plane is None else plane
        if self.proj is not None:
            pts = pts @ self.proj.T
        a, b = np.array([p[0] for p in pairs], int), np.array([p[1] for p in pairs], int)
        self.segs = np.stack([pts[:, a], pts[:, b]], axis=2) if pairs else np.zeros((len(frames), 0, 2, self.dim))
        self.points = pts[:, J.shape[1]:J.shape[1] + nb]                              # centroids
        self.triads = None                          # simulate(frames=...): each frame's axes x, y, z (red, green, blue)
        if "frame_position" in z:
            P, R = z["frame_position"][frames], z["frame_rotation"][frames]       # nf x k x 3, nf x k x 3 x 3
            p = pts.reshape(-1, self.dim)
            L = 0.2 * max(float(np.nanmax(np.ptp(p[np.all(np.isfinite(p), axis=1)], axis=0))), 1e-3)
            ends = P[:, :, None, :] + L * np.swapaxes(R, -1, -2)                  # nf x k x axis x 3
            tri = np.stack([np.broadcast_to(P[:, :, None, :], ends.shape), ends], axis=3)
            tri = tri.reshape(len(frames), -1, 2, 3)
            self.triads = tri if self.proj is None else tri @ self.proj.T
        fixed = [k for k, p in enumerate(parent) if p < 0 and np.ptp(z["joint_pos"][:, k], axis=0).max() <= 1e-12]
        self.ground = pts[:, fixed]                 # joints on the ground that stay put (not a free base)

    def view(self):
        """The view of every frame: (centres nf x dim, half-widths dim).

        A fixed view holding every frame, or, when the system travels
        much further than its own size (a falling floating base), a window of its size that follows it.
        3-D views are cubes, so that lengths look right from any side."""
        frame = np.concatenate([self.segs.reshape(len(self.t), -1, self.dim), self.points], axis=1)
        lo, hi = np.nanmin(frame, axis=1), np.nanmax(frame, axis=1)                 # nf x dim
        size = max(float((hi - lo).max()), 1e-3)                                     # largest frame
        glo, ghi = lo.min(axis=0), hi.max(axis=0)
        if float((ghi - glo).max()) > 2.5 * size:                                    # follow the system
            centres, half = (lo + hi) / 2, np.full(self.dim, 0.6 * size)
        else:
            centres = np.broadcast_to((glo + ghi) / 2, lo.shape)
            span = float((ghi - glo).max())
            half = np.full(self.dim, span / 2) if self.dim == 3 else np.maximum((ghi - glo) / 2, 0.05 * span)
        return centres, 1.08 * half


GIF_MEMORY = 1e9           # bytes of RGB frames a GIF may hold in memory before it is written


def animate(result, out, fps: float = 30.0, every=None, size=(640, 480), progress: bool = False,
            title=None) -> str:
    """Write an MP4 or GIF (by the suffix of ``out``) of a Result or a saved NPZ; returns the path.

    every: draw every n-th sample (default: as many samples as make real time at ``fps``); size: pixels."""
    from .result import Result, load_result
    suffix = os.path.splitext(os.fspath(out))[1].lower()
    require_writer(suffix)
    res = result if isinstance(result, Result) else load_result(result)
    z = res.arrays()
    nt = len(res.t)
    if nt == 0:
        raise ValueError("animation: the results hold no samples")
    if every is None:
        dt = float(res.t[1] - res.t[0]) if nt > 1 else 1.0
        every = max(1, round(1.0 / (fps * dt))) if dt > 0 else 1
    frames = np.arange(0, nt, min(int(every), nt))
    held = len(frames) * size[0] * size[1] * 3
    if suffix == ".gif" and held > GIF_MEMORY:          # Pillow holds every frame of a GIF; an MP4 streams
        fewer = int(np.ceil(nt / max(1, GIF_MEMORY // (size[0] * size[1] * 3))))
        raise ValueError(f"animation: a GIF of {len(frames):,} frames of {size[0]}x{size[1]} holds about "
                         f"{held / 1e6:,.0f} MB in memory (at most {GIF_MEMORY / 1e6:,.0f} MB): draw fewer frames "
                         f"(--every {fewer}), a smaller --size, or write an .mp4")
    scene = _Scene(z, frames)
    name = title or res.meta.get("model_name", "")
    return _write(os.fspath(out), _render(scene, size, name, progress), fps, suffix)


def _render(scene, size, name, progress):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.collections import LineCollection
    from tqdm import tqdm
    dpi = 100
    w, h = size
    fig = plt.figure(figsize=(w / dpi, h / dpi), dpi=dpi)
    centres, half = scene.view()
    if scene.dim == 3:
        from mpl_toolkits.mplot3d.art3d import Line3DCollection
        ax = fig.add_subplot(projection="3d")
        ax.set_box_aspect((1, 1, 1))
        ax.set_zlabel("z [m]")
        lines = Line3DCollection([], colors="tab:blue", linewidths=2.5)
    else:
        ax = fig.add_subplot()
        ax.set_aspect("equal", adjustable="box")
        ax.grid(alpha=0.3)
        lines = LineCollection([], colors="tab:blue", linewidths=2.5 if not scene.beams else 1.8)
    ax.add_collection(lines)
    triads = getattr(scene, "triads", None)
    if triads is not None:
        colors = ["tab:red", "tab:green", "tab:blue"] * (triads.shape[1] // 3)
        tri = (Line3DCollection if scene.dim == 3 else LineCollection)(triads[0], colors=colors, linewidths=2.0)
        ax.add_collection(tri)
    ax.set_xlabel(f"{scene.labels[0]} [m]")
    ax.set_ylabel(f"{scene.labels[1]} [m]")
    ax.set_title(plain(name), fontsize=10)
    setters = (ax.set_xlim, ax.set_ylim, ax.set_zlim) if scene.dim == 3 else (ax.set_xlim, ax.set_ylim)

    def frame_view(k):
        for f, c, r in zip(setters, centres[k], half):
            f(c - r, c + r)

    xyz = (lambda p: (p[:, 0], p[:, 1], p[:, 2])) if scene.dim == 3 else (lambda p: (p[:, 0], p[:, 1]))
    dots, = ax.plot(*xyz(scene.points[0]), "o", color="tab:red", ms=2 if scene.beams else 3.5)
    ground = getattr(scene, "ground", None)
    if ground is not None and ground.shape[1]:
        ax.plot(*xyz(ground[0]), "k^", ms=7)
    font = max(6.0, min(9.0, 9.0 * w / 640))
    text = fig.text(0.02, 0.01, "", fontsize=font, family="monospace", va="bottom")
    rect = (0, 2.6 * font / h * dpi / 72, 1, 1)
    frame_view(0)
    fig.tight_layout(rect=rect)
    if scene.dim == 2:                  # widen the shorter range to fill the axes box at equal scale
        pos = ax.get_position(original=True)
        box = pos.width * w / max(pos.height * h, 1.0)
        half = half * np.maximum([box * half[1] / half[0], half[0] / box / half[1]], 1.0)
        frame_view(0)
        fig.tight_layout(rect=rect)     # tick labels of the new ranges
    try:
        for k in tqdm(range(len(scene.t)), desc="animate", unit="frame", disable=not progress, leave=False):
            seg = scene.segs[k]
            lines.set_segments(seg.reshape(-1, seg.shape[-2], seg.shape[-1]) if scene.beams else seg)
            if triads is not None:
                tri.set_segments(triads[k])
            if scene.dim == 3:
                dots.set_data_3d(*xyz(scene.points[k]))
            else:
                dots.set_data(*xyz(scene.points[k]))
            if k:
                frame_view(k)
            E = scene.T[k] + scene.V[k]
            text.set_text(f"t = {scene.t[k]:.3f} s\nE = T + V = {E:.6g} J (T {scene.T[k]:.4g}, V {scene.V[k]:.4g})")
            fig.canvas.draw()
            yield np.asarray(fig.canvas.buffer_rgba())[..., :3].copy()
    finally:
        plt.close(fig)
