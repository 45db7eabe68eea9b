"""Real robots: every URDF of the example-robot-data package against pinocchio's model of the same file.

* Every robot, fixed and floating base, without compiling: the imported Model (through support.robots.ModelPeer,
  a pinocchio model built from our Model's joints and bodies, not from our plan) against pinocchio's own reading
  of the file (UrdfPeer: urdfdom + buildModelFromUrdf), forward dynamics at 20 random states, 1e-9 relative; the
  robots we refuse are listed with the reason and must be exactly those.
* A few robots compiled (recursive kernel): an arm with a prismatic torso and continuous wheels (tiago_no_hand),
  a human with massless links (human), a floating humanoid (g1) (all three with the default reference point,
  the centroid), and the small massless_chain.urdf with the origin reference point and the dense method
  (massless intermediate links and point masses in the kernels).
  ``python benchmarks/robots.py`` compiles all of them (docs/robots.md).
"""
import os

import numpy as np
import pytest

from codegen.cli import main
from codegen.model import ModelError
from support.robots import ModelPeer, UrdfPeer, load, prebuild_files, random_states, rel_err, robot_files
from support.systems import ROOT, get_system

ROBOTS = robot_files()
CHAIN = str(ROOT / "tests" / "model" / "urdf" / "massless_chain.urdf")
STATES, TOL = 20, 1e-9

# the files we refuse, and why (both bases): a new package version that changes this fails here
REFUSED = {
    "ur3": "the <robot> element needs a name attribute",                       # an empty file
    "romeo": "joints[RThumb3]: the bodies beyond this joint have no inertia",  # massless thumb: pinocchio gives NaN
    "romeo_laas_small": "must be positive semi-definite",                      # a principal moment of -2.7e-3
}
NO_MOVING_JOINT = {"iris_simple", "quadrotor_base"}                              # fixed base: nothing moves


def test_the_package_ships_robots():
    assert len(ROBOTS) >= 60 and "panda" in ROBOTS and "talos_reduced" in ROBOTS


@pytest.mark.parametrize("floating", [False, True], ids=["fixed", "floating"])
def test_every_robot_against_pinocchio(floating):
    """Compile-free: the import (frames, lumped fixed joints, axes, inertias, coordinate order) of every robot."""
    refused, checked = {}, 0
    for name, path in ROBOTS.items():
        try:
            m = load(path, floating)
        except ModelError as e:
            refused[name] = str(e)
            continue
        peer = UrdfPeer(path, floating, [(j.name, j.type) for j in m.joints])
        assert peer.same_order, f"{name}: coordinate order differs from pinocchio's"
        ours = ModelPeer(m)
        for q, u, tau in random_states(m, STATES, seed=11):
            err = rel_err(ours.aba(q, u, tau), peer.aba(q, u, tau))
            assert err < TOL, (name, floating, err)
        checked += 1
    expected = dict(REFUSED, **({} if floating else {n: "no movable joints" for n in NO_MOVING_JOINT}))
    assert sorted(refused) == sorted(expected), refused
    for name, words in expected.items():
        assert words in refused[name] and ROBOTS[name] in refused[name], refused[name]
    assert checked == len(ROBOTS) - len(expected)


# ---------------------------------------------------------------- compiled kernels

COMPILED = [  # (robot, floating base, algorithm, options)
    ("tiago_no_hand", False, "recursive", {}),
    ("human", False, "recursive", {}),
    ("g1_29dof_rev_1_0", True, "recursive", {}),
    (CHAIN, True, "recursive", {"ref_point": "origin"}),
    (CHAIN, False, "dense", {}),
]


def _path(robot):
    return robot if os.path.isabs(robot) else ROBOTS[robot]


@pytest.fixture(scope="module")
def prebuilt():
    """The kernels below, compiled in two processes at once (then each test hits the cache)."""
    prebuild_files([(_path(r), fb, alg, opts) for r, fb, alg, opts in COMPILED])


@pytest.mark.build
@pytest.mark.parametrize("robot, floating, algorithm, options", COMPILED,
                         ids=[f"{os.path.basename(r)}-{'floating' if fb else 'fixed'}-{a}-{o.get('ref_point', '')}"
                              for r, fb, a, o in COMPILED])
def test_compiled_kernel_against_pinocchio(prebuilt, robot, floating, algorithm, options):
    path = _path(robot)
    m = load(path, floating)
    if robot in ("human", CHAIN):
        assert any(b.mass == 0 for b in m.bodies)              # massless links reach the kernel
    s = get_system(m, algorithm, **options)
    peer = UrdfPeer(path, floating, [(j.name, j.type) for j in m.joints])
    for q, u, tau in random_states(m, STATES, seed=12):
        a = np.asarray(s.forward_dynamics(q, u, tau))
        ref = peer.aba(q, u, tau)
        assert np.all(np.isfinite(a)) and rel_err(a, ref) < TOL, rel_err(a, ref)
        assert rel_err(s.inverse_dynamics(q, u, ref), tau) < 1e-8
    assert rel_err(s.mass_matrix(q), peer.crba(q)) < TOL


@pytest.mark.build
@pytest.mark.parametrize("robot, floating, algorithm, options", COMPILED[:3] + COMPILED[4:],
                         ids=["tiago_no_hand-fixed", "human-fixed", "g1-floating", "massless_chain-dense"])
def test_frames_jacobians_and_centroidal_against_pinocchio(prebuilt, robot, floating, algorithm, options):
    """Every URDF link as a frame (those merged into their body by fixed joints too) against pinocchio's frame of
    the same name: placement, velocity, spatial and classical acceleration, Jacobian in the three references;
    centre of mass, its Jacobian, centroidal momentum matrix, momentum, rate and inertia (tests/support/kinematics)."""
    from support.kinematics import compare, ours
    import pinocchio as pin
    path = _path(robot)
    m = load(path, floating)
    s = get_system(m, algorithm, **options)
    peer = UrdfPeer(path, floating, [(j.name, j.type) for j in m.joints])
    links = [f for f in s.frames if f in m.frames]
    assert set(links) == set(m.frames)                  # every link, its own body's or merged into another
    frames = {f: peer.model.getFrameId(f) for f in links if peer.model.existFrame(f)}
    assert len(frames) == len(links)
    states = [(q, u, tau) for q, u, tau in random_states(m, 3, seed=5)]
    worst = compare(s, peer, frames, states)
    bad = {k: v for k, v in worst.items() if not v < TOL}
    assert not bad, bad
    q, u, _ = states[0]                              # the comparison can fail: pinocchio's order is (linear; angular)
    f, fid = next(iter(frames.items())) if not floating else list(frames.items())[1]
    pin.forwardKinematics(peer.model, peer.data, peer.q_pin(q), peer.T(q) @ u)
    assert rel_err(s.frame_velocity(q, u, f), pin.getFrameVelocity(peer.model, peer.data, fid, pin.LOCAL).vector) > 1e-3 \
        or rel_err(s.frame_velocity(q, u, f), ours(pin.getFrameVelocity(peer.model, peer.data, fid, pin.WORLD).vector)) > 1e-3


@pytest.mark.build
def test_simulate_a_urdf_from_the_command_line(prebuilt, tmp_path, capsys):
    """mbgen simulate robot.urdf (the dense kernel of massless_chain.urdf, built above)."""
    import numpy as np
    out = tmp_path / "chain.npz"
    rc = main(["simulate", CHAIN, "--algorithm", "dense", "--t-end", "0.05", "--dt", "0.01", "--out", str(out),
               "--quiet"])
    assert rc == 0, capsys.readouterr().err
    data = np.load(out)
    assert list(data["coord_names"]) == ["yaw.angle", "pitch.angle", "roll.angle", "slide.disp", "wrist.angle"]
    assert np.all(np.isfinite(data["q"])) and data["q"].shape == (6, 5)
