"""Animations: decoded frames show the model (not blank), sticks sit on the joint points, planar models are drawn
in 2-D and others in 3-D, beams follow their shape functions; the CLI writes MP4 and GIF and refuses bad input."""
import os

import numpy as np
import pytest

import codegen
from codegen.cli import main
from codegen.runtime.animate import _plane, _render, _rotate, _Scene, animate, element_curves
from support.systems import EXAMPLES, get_system

pytestmark = pytest.mark.build          # every test here compiles or loads a kernel (tests/conftest.py)

imageio = pytest.importorskip("imageio.v2")
pytest.importorskip("imageio_ffmpeg")


@pytest.fixture(scope="module")
def m1():
    return get_system(codegen.load_model(EXAMPLES / "balance_pendulum.yaml")).simulate(0.3, 0.01)


@pytest.fixture(scope="module")
def arm7():
    return get_system(codegen.load_model(EXAMPLES / "arm7.yaml")).simulate(0.2, 0.01, substeps=10)


def _video(path):
    with imageio.get_reader(path, format="FFMPEG") as r:
        return [f for f in r.iter_data()]


def _ink(frame):
    """Pixels of the drawn sticks (matplotlib's tab:blue, 31 119 180: blue well above red; the axes, text and
    background are grey) and the frame's contrast."""
    f = frame[..., :3].astype(int)
    return int((f[..., 2] - f[..., 0] > 60).sum()), f.std()


@pytest.mark.parametrize("suffix", [".mp4", ".gif"])
def test_frames_decode_and_show_the_model(m1, tmp_path, suffix):
    path = animate(m1, tmp_path / f"m1{suffix}", every=10, size=(240, 176), fps=10)
    frames = list(imageio.mimread(path, memtest=False)) if suffix == ".gif" else _video(path)
    assert len(frames) == 4                                     # samples 0, 10, 20, 30
    assert frames[0].shape[:2] == (176, 240)
    for f in frames:
        blue, contrast = _ink(f)
        assert blue > 100 and contrast > 20, (blue, contrast)  # 4 sticks drawn, not a blank or uniform frame
    assert np.abs(frames[0].astype(int) - frames[-1].astype(int)).sum() > 0     # the model moves


def test_joint_points_agree_from_both_sides(arm7):
    """joint_pos is computed from the child body; the parent body's frame must put the joint point there too."""
    m = codegen.load_model(EXAMPLES / "arm7.yaml")
    names = arm7.body_names
    body = {b.name: b for b in m.bodies}
    J, C, Q = arm7.extra["joint_pos"], arm7.body_com, arm7.body_quat
    assert list(arm7.extra["joint_names"]) == [j.name for j in m.joints]
    checked = 0
    for k, j in enumerate(m.joints):
        if j.parent == "ground":
            assert np.allclose(J[:, k], j.parent_frame.pos, atol=1e-12)
            continue
        p = names.index(j.parent)
        origin = C[:, p] - _rotate(Q[:, p], np.broadcast_to(body[j.parent].com, C[:, p].shape))
        assert np.allclose(J[:, k], origin + _rotate(Q[:, p], np.broadcast_to(j.parent_frame.pos, C[:, p].shape)),
                           atol=1e-10)
        checked += 1
    assert checked == 6


def test_planar_models_in_2d_others_in_3d(m1, arm7):
    assert _Scene(m1.arrays(), np.arange(3)).dim == 2
    assert _Scene(m1.arrays(), np.arange(3)).labels == ("x", "y")
    assert _Scene(arm7.arrays(), np.arange(3)).dim == 3
    tilted = np.random.default_rng(1).normal(size=(50, 2)) @ np.array([[1.0, 2, 3], [0, 1, -1]])
    labels, proj = _plane(tilted)
    assert labels == ("u", "v") and np.allclose(proj @ np.cross([1.0, 2, 3], [0, 1, -1]), 0, atol=1e-9)
    assert _plane(np.column_stack([tilted[:, :2], np.random.default_rng(2).normal(size=50)])) is None


def test_beams_are_drawn_with_their_shape_functions(tmp_path):
    s = get_system(codegen.load_model(EXAMPLES / "flexible_pendulum.yaml"), "rancf")
    res = s.simulate(0.4, 0.01, integrator="rk4", substeps=10)
    e = res.extra["element_coords"]
    assert e.shape == (len(res.t), 25, 8)
    curves = element_curves(e[-1], res.extra["element_length"], 11)
    assert np.allclose(curves, s.curve(res.q[-1], 11), atol=1e-12)           # the kernel's r = S(xi) e
    # curved, not straight segments: mid-element points leave the chords once the beams bend
    chord_mid = (curves[:, 0] + curves[:, -1]) / 2
    assert np.abs(curves[:, 5] - chord_mid).max() > 1e-4
    path = animate(res, tmp_path / "beam.gif", every=10, size=(200, 150))
    frames = imageio.mimread(path, memtest=False)
    assert len(frames) == 5 and all(_ink(f)[1] > 20 for f in frames)


def test_cli_animate_and_simulate_animate(m1, tmp_path, capsys):
    npz = m1.save(tmp_path / "m1.npz")
    assert main(["animate", npz, "--out", str(tmp_path / "a.gif"), "--every", "15", "--size", "160x120",
                 "--quiet"]) == 0
    assert len(imageio.mimread(tmp_path / "a.gif")) == 3
    out = tmp_path / "run.npz"
    assert main(["simulate", str(EXAMPLES / "balance_pendulum.yaml"), "--t-end", "0.1", "--dt", "0.01",
                 "--out", str(out), "--animate", "--quiet"]) == 0
    assert "video:" in capsys.readouterr().out
    video = _video(tmp_path / "run.mp4")
    assert len(video) == 4 and _ink(video[2])[0] > 100      # real time at 30 fps: every 3rd sample of dt = 0.01
    # bad input: exit 2 and a message naming the file or the option
    assert main(["animate", npz, "--out", str(tmp_path / "a.avi")]) == 2
    assert ".avi" in capsys.readouterr().err
    assert main(["animate", str(tmp_path / "missing.npz")]) == 2
    assert "missing.npz" in capsys.readouterr().err
    old = {k: v for k, v in np.load(npz).items() if not k.startswith("joint_")}
    np.savez(tmp_path / "old.npz", **old)
    assert main(["animate", str(tmp_path / "old.npz"), "--quiet"]) == 2
    assert "joint_pos" in capsys.readouterr().err
    (tmp_path / "junk.npz").write_bytes(b"not a zip")
    assert main(["animate", str(tmp_path / "junk.npz")]) == 2
    assert "junk.npz" in capsys.readouterr().err
    with pytest.raises(SystemExit) as e:
        main(["animate", npz, "--size", "10x10"])
    assert e.value.code == 2 and "WIDTHxHEIGHT" in capsys.readouterr().err


def _damaged(npz, tmp_path, **changes):
    d = dict(np.load(npz))
    d.update(changes)
    path = tmp_path / "damaged.npz"
    np.savez(path, **{k: v for k, v in d.items() if v is not None})
    return str(path)


def test_results_files_are_checked_like_model_files(m1, tmp_path, capsys):
    """animate reads results as strictly as model files: a bad meta, short or string body_com, a constant or
    reversed t, NaN joint positions, parents out of range, an NPZ that inflates past the limit, a FIFO: exit 2
    naming the file and the array, no animation written; a huge --every draws the first frame only."""
    npz = m1.save(tmp_path / "m1.npz")
    z = np.load(npz)
    nt = len(z["t"])
    jp = z["joint_pos"].copy()
    jp[1, 0, 0] = np.nan
    cases = [({"meta": np.array("{not json")}, "meta: not JSON"), ({"meta": np.array("[1, 2]")}, "meta: not a JSON"),
             ({"body_com": z["body_com"][:-1]}, "body_com: expected shape"),
             ({"body_com": np.array(["a"] * nt)}, "body_com: expected shape"),
             ({"t": np.zeros(nt)}, "t: not strictly increasing"), ({"t": z["t"][::-1].copy()}, "t: not strictly"),
             ({"joint_pos": jp}, "joint_pos: holds values that are not finite"),
             ({"joint_parent": z["joint_parent"] + 50}, "joint_parent: expected body indices"),
             ({"q": None}, "q: missing")]
    for change, words in cases:
        bad = _damaged(npz, tmp_path, **change)
        capsys.readouterr()
        assert main(["animate", bad, "--out", str(tmp_path / "a.gif"), "--quiet"]) == 2, words
        err = capsys.readouterr().err
        assert f"{bad}: {words}" in err and "Traceback" not in err, (words, err)
        assert not (tmp_path / "a.gif").exists()
    bomb = tmp_path / "bomb.npz"                     # 8 MB of zeros, a few kB compressed
    np.savez_compressed(bomb, **dict(z), pad=np.zeros(10 ** 6))
    with pytest.raises(ValueError, match="MB uncompressed, more than 5 MB"):
        codegen.load_result(bomb, limit_mb=5)
    os.mkfifo(tmp_path / "fifo.npz")
    assert main(["animate", str(tmp_path / "fifo.npz"), "--out", str(tmp_path / "a.gif")]) == 2
    assert "it is a FIFO" in capsys.readouterr().err
    assert main(["animate", npz, "--out", str(tmp_path / "one.gif"), "--every", str(10 ** 30), "--quiet"]) == 0
    assert len(imageio.mimread(tmp_path / "one.gif")) == 1


def test_absurd_times_and_gifs_larger_than_memory_are_refused(m1, tmp_path, capsys):
    """Results whose t reaches 1e300 s are refused like an out-of-range model number; a GIF whose frames would
    take more than GIF_MEMORY is refused before drawing, with the --every that fits (an MP4 streams)."""
    from codegen.runtime import animate as anim
    npz = m1.save(tmp_path / "m1.npz")
    z = np.load(npz)
    bad = _damaged(npz, tmp_path, t=z["t"] * 1e300)
    assert main(["animate", bad, "--out", str(tmp_path / "a.gif"), "--quiet"]) == 2
    assert f"{bad}: t: times up to" in capsys.readouterr().err
    frames = len(z["t"])
    limit = anim.GIF_MEMORY
    try:
        anim.GIF_MEMORY = 64 * 64 * 3 * (frames // 2)          # half the frames fit
        with pytest.raises(ValueError, match=r"draw fewer frames \(--every [23]\)"):
            anim.animate(npz, tmp_path / "a.gif", every=1, size=(64, 64))
    finally:
        anim.GIF_MEMORY = limit
    assert not (tmp_path / "a.gif").exists()


def test_frame_trajectories_recorded_saved_and_drawn(tmp_path, capsys):
    """simulate(frames=...) records each frame's placement and velocity at every sample (equal to the single-state
    calls), the NPZ keeps them, the animation draws each frame's axes (red, green, blue, along R's columns); the
    CLI's --frames writes them and refuses an unknown frame by name before the run."""
    s = get_system(codegen.load_model(EXAMPLES / "arm7.yaml"))
    res = s.simulate(0.2, 0.01, substeps=10, frames=["link7", "link4"])
    assert list(res.extra["frame_names"]) == ["link7", "link4"]
    for k in (0, 7, len(res.t) - 1):
        for i, f in enumerate(["link7", "link4"]):
            R, p = s.frame_placement(res.q[k], f)
            assert np.allclose(res.extra["frame_position"][k, i], p, atol=1e-12)
            assert np.allclose(res.extra["frame_rotation"][k, i], R, atol=1e-12)
            assert np.allclose(res.extra["frame_velocity"][k, i],
                               s.frame_velocity(res.q[k], res.u[k], f, "local_world_aligned"), atol=1e-12)
    npz = res.save(tmp_path / "arm.npz")
    z = np.load(npz)
    assert z["frame_position"].shape == (len(res.t), 2, 3)
    scene = _Scene(z, np.arange(len(res.t)))
    tri = scene.triads                                  # nt x (2 frames x 3 axes) x 2 ends x 3
    assert tri.shape == (len(res.t), 6, 2, 3) and np.allclose(tri[:, 0, 0], z["frame_position"][:, 0])
    axis = tri[5, 3:, 1] - tri[5, 3:, 0]                # link4's axes at sample 5: along R's columns
    assert np.allclose(axis / np.linalg.norm(axis, axis=1)[:, None], z["frame_rotation"][5, 1].T, atol=1e-12)
    assert len(imageio.mimread(animate(npz, tmp_path / "arm.gif", every=10, size=(240, 176)), memtest=False)) == 3
    f = next(_render(scene, (320, 240), "arm7", False)).astype(int)    # the frames as drawn (a GIF's palette aside)
    assert ((f[..., 1] - f[..., 0] > 40) & (f[..., 1] - f[..., 2] > 20)).sum() > 10     # tab:green axes drawn
    with pytest.raises(ValueError, match="no frame 'nope'"):
        s.simulate(0.2, 0.01, frames=["link7", "nope"])
    out = tmp_path / "cli.npz"
    assert main(["simulate", str(EXAMPLES / "arm7.yaml"), "--t-end", "0.05", "--dt", "0.01", "--substeps", "10",
                 "--frames", "link7", "--out", str(out), "--quiet"]) == 0
    assert np.load(out)["frame_position"].shape == (6, 1, 3)
    assert main(["simulate", str(EXAMPLES / "arm7.yaml"), "--frames", "link7,lnk3", "--out",
                 str(tmp_path / "no.npz"), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "--frames" in err and "'lnk3'" in err and "Traceback" not in err and not (tmp_path / "no.npz").exists()


def test_frames_of_a_closed_loop_model():
    """A tree closed by cut joints (examples/five_bar.yaml, kind loops): its frames are the spanning tree's bodies,
    their rotations and the centre of mass those of the kernel's body poses, and simulate(frames=...) records
    them; grcr refuses frames= by name (its phantom bodies are not frames)."""
    from codegen.model.rotations import quat_to_rot
    m = codegen.load_model(EXAMPLES / "five_bar.yaml")
    s = get_system(m)
    assert s.kind == "loops" and s.frames[:len(s.body_names)] == s.body_names
    q = s.initial_state()[0]
    com, quat = s.body_poses(q)
    masses = np.array([b.mass for b in m.bodies if b.name in s.body_names])
    for k, b in enumerate(s.body_names):
        assert np.allclose(s.frame_placement(q, b)[0], quat_to_rot(quat[k]), atol=1e-12)
    assert np.allclose(s.center_of_mass(q).position, masses @ com / masses.sum(), atol=1e-12)
    res = s.simulate(0.05, 0.01, frames=[s.body_names[-1]])
    assert np.allclose(res.extra["frame_rotation"][-1, 0], s.frame_placement(res.q[-1], s.body_names[-1])[0])
    g = get_system(m, "grcr")
    with pytest.raises(ValueError, match="frames: not an option of this model"):
        g.simulate(0.05, 0.01, frames=[s.body_names[-1]])
