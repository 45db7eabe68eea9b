"""URDF import (codegen/model/urdf.py): the mapping against pinocchio's own reading of the same file, lumped fixed
joints, pinocchio's coordinate order, mimic joints, visuals, and bad files (exit 2, the file and the element
named). No kernel is compiled here: the dynamics of the imported model are checked through a pinocchio model
built from it (support.robots.ModelPeer) against pinocchio's model of the file (UrdfPeer); the compiled kernels
on URDF models are in tests/peers/test_robots.py."""
import os
import sys

import numpy as np
import pytest

import codegen
from codegen.cli import main
from codegen.model import ModelError
from codegen.model.robotfiles import ModelWarning, file_kind
from support.robots import ModelPeer, UrdfPeer, random_states, rel_err

HERE = os.path.dirname(os.path.abspath(__file__))
CHAIN = os.path.join(HERE, "urdf", "massless_chain.urdf")

INERTIA = '<inertia ixx="0.01" ixy="0" ixz="0" iyy="0.02" iyz="0" izz="0.015"/>'


def link(name, mass=1.0, xyz="0 0 0"):
    return f'<link name="{name}"><inertial><origin xyz="{xyz}"/><mass value="{mass}"/>{INERTIA}</inertial></link>'


def joint(name, parent, child, jtype="revolute", xyz="0 0 0.1", rpy="0 0 0", axis="0 0 1", extra=""):
    lim = '<limit lower="-1" upper="1" effort="1" velocity="1"/>' if jtype in ("revolute", "prismatic") else ""
    return (f'<joint name="{name}" type="{jtype}"><parent link="{parent}"/><child link="{child}"/>'
            f'<origin xyz="{xyz}" rpy="{rpy}"/><axis xyz="{axis}"/>{lim}{extra}</joint>')


def robot(*parts, name="r"):
    return f'<?xml version="1.0"?>\n<robot name="{name}">\n' + "\n".join(parts) + "\n</robot>\n"


def write(tmp_path, text, name="robot.urdf"):
    p = tmp_path / name
    p.write_bytes(text.encode() if isinstance(text, str) else text)
    return str(p)


# ---------------------------------------------------------------- against pinocchio's reading of the file

@pytest.mark.parametrize("floating", [False, True])
def test_massless_chain_matches_pinocchio(floating):
    """Massless links, point masses, lumped fixed joints, tilted frames; ABA, RNEA and CRBA of the imported model
    equal pinocchio's model of the same file, coordinate by coordinate, in pinocchio's order."""
    m = codegen.load_model(CHAIN, floating_base=floating)
    peer, ours = UrdfPeer(CHAIN, floating, [(j.name, j.type) for j in m.joints]), ModelPeer(m)
    assert peer.same_order
    assert [j.name for j in m.joints] == list(peer.model.names)[1:]
    for q, u, tau in random_states(m, 20, seed=4):
        a = peer.aba(q, u, tau)
        assert np.all(np.isfinite(a))
        assert rel_err(ours.aba(q, u, tau), a) < 1e-12
        assert rel_err(ours.rnea(q, u, a), peer.rnea(q, u, a)) < 1e-12
        assert rel_err(ours.crba(q), peer.crba(q)) < 1e-12


def test_fixed_joints_are_lumped_by_hand():
    """upper_arm (1 kg at x = 0.15, inertia diag(0.001, 0.008, 0.008)) with the 0.4 kg point mass fixed at x = 0.3."""
    m = codegen.load_model(CHAIN)
    names = [b.name for b in m.bodies]
    assert names == ["shoulder", "virtual", "upper_arm", "slide_carriage", "hand"]
    b = m.body("upper_arm")
    c = (1.0 * 0.15 + 0.4 * 0.3) / 1.4
    assert b.mass == pytest.approx(1.4) and np.allclose(b.com, [c, 0, 0], atol=1e-15)
    jyy = 0.008 + 1.0 * (0.15 - c) ** 2 + 0.4 * (0.3 - c) ** 2
    assert np.allclose(b.inertia, np.diag([0.001, jyy, jyy]), atol=1e-15)
    assert m.body("virtual").mass == 0 and not np.any(m.body("virtual").inertia)
    # fixed base: base_link and shoulder_mount are ground; the yaw joint sits at their composed placement
    yaw = m.joints[0]
    assert yaw.parent == "ground"
    assert np.allclose(yaw.parent_frame.pos, [0.01 * np.cos(0.5), 0.01 * np.sin(0.5), 0.35])
    assert m.gravity.tolist() == [0, 0, -9.81]
    # the frames of every link: (body, pos, rot) in that body
    assert m.frames["tool_frame"][0] == "hand" and np.allclose(m.frames["tool_frame"][1], [0.1, 0, 0])
    assert m.frames["base_link"][0] == "ground"
    # visuals for drawing, in the body frame
    (cyl,) = m.visuals["shoulder"]
    assert cyl["type"] == "cylinder" and cyl["size"] == [0.04, 0.2] and np.allclose(cyl["pos"], [0, 0, 0.1])
    assert m.visuals["upper_arm"][0]["type"] == "box"


def test_floating_base_adds_root_joint():
    m = codegen.load_model(CHAIN, floating_base=True)
    j = m.joints[0]
    assert (j.name, j.type, j.parent, j.child) == ("root_joint", "free", "ground", "base_link")
    assert m.coord_names[:7] == [f"root_joint.{c}" for c in ("x", "y", "z", "qw", "qx", "qy", "qz")]
    # the base carries its own inertia and the links fixed to it
    assert m.body("base_link").mass == pytest.approx(5.0)


def test_order_is_pinocchios_not_the_files(tmp_path):
    """urdfdom keeps the joints below a link sorted by name: pinocchio's coordinates follow that order."""
    text = robot('<link name="base"/>', link("z"), link("a"), link("m"), link("c"),
                 joint("j1", "base", "z"), joint("j3", "base", "a", "continuous"),
                 joint("jm", "z", "m", "prismatic", axis="1 0 0"), joint("j2", "base", "c", axis="0 1 0"))
    p = write(tmp_path, text)
    m = codegen.load_model(p)
    assert [j.name for j in m.joints] == ["j1", "jm", "j2", "j3"]
    peer = UrdfPeer(p, False, [(j.name, j.type) for j in m.joints])
    assert peer.same_order and [j.name for j in m.joints] == list(peer.model.names)[1:]


def test_joint_types(tmp_path):
    """continuous -> revolute (one angle), prismatic, floating -> free, planar (normal = axis); a floating joint
    inside the tree matches pinocchio's free flyer."""
    text = robot('<link name="base"/>', link("a", xyz="0.1 0 0"), link("b", 0.5, "0 0.1 0"), link("obj", 2.0, "0 0 0.05"),
                 link("p", 0.7), joint("ja", "base", "a", "continuous", axis="0 1 1"),
                 joint("jb", "a", "b", "prismatic", axis="1 0 0", rpy="0.2 0.1 0"),
                 joint("free", "base", "obj", "floating", xyz="1 0 0"),
                 joint("plane", "base", "p", "planar", axis="0 0 1", xyz="0 2 0"))
    p = write(tmp_path, text)
    m = codegen.load_model(p)
    types = {j.name: j.type for j in m.joints}
    assert types == {"ja": "revolute", "jb": "prismatic", "free": "free", "plane": "planar"}
    assert np.allclose(m.joints[[j.name for j in m.joints].index("ja")].axis, np.array([0, 1, 1]) / np.sqrt(2))
    # dynamics of the joints pinocchio maps one to one (the planar joint made fixed for the comparison)
    p2 = write(tmp_path, text.replace('type="planar"', 'type="fixed"'), "noplanar.urdf")
    m2 = codegen.load_model(p2)
    peer, ours = UrdfPeer(p2, False, [(j.name, j.type) for j in m2.joints]), ModelPeer(m2)
    for q, u, tau in random_states(m2, 10, seed=2):
        assert rel_err(ours.aba(q, u, tau), peer.aba(q, u, tau)) < 1e-12


def test_limits_damping_and_friction(tmp_path):
    """<limit lower upper> of revolute and prismatic joints become limits (continuous: none; lower = upper = 0:
    none); <dynamics damping> a joint damper (-d u); <dynamics friction> the joint's Coulomb friction."""
    text = robot('<link name="base"/>', link("a"), link("b"), link("c"),
                 joint("ja", "base", "a", extra='<dynamics damping="0.7" friction="0.2"/>'),
                 joint("jb", "a", "b", "prismatic", axis="1 0 0"), joint("jc", "b", "c", "continuous"))
    p = write(tmp_path, text)
    m = codegen.load_model(p)
    lim = {j.name: None if j.limits is None else j.limits.tolist() for j in m.joints}
    assert lim == {"ja": [[-1.0, 1.0]], "jb": [[-1.0, 1.0]], "jc": None}
    assert [(s.joint, s.damping.tolist(), s.stiffness.tolist()) for s in m.springs] == [("ja", [0.7], [0.0])]
    assert m.joints[0].limit_solref.tolist() == [0.02, 1.0]          # MuJoCo's default time constant and ratio
    assert m.joints[0].friction.tolist() == [0.2] and m.joints[1].friction is None


def test_effort_transmissions_become_motors(tmp_path):
    """ros_control transmissions: an effort-driven SimpleTransmission is a motor with its mechanicalReduction as the
    gear; a position-interface one (its controller gains are not in the file) is left out with a warning."""
    tr = ('<transmission name="{0}"><type>transmission_interface/SimpleTransmission</type><joint name="{1}">'
          '<hardwareInterface>hardware_interface/{2}JointInterface</hardwareInterface></joint><actuator name="m">'
          '<mechanicalReduction>{3}</mechanicalReduction></actuator></transmission>')
    text = robot('<link name="base"/>', link("a"), link("b"), joint("ja", "base", "a"), joint("jb", "a", "b"),
                 tr.format("t_a", "ja", "Effort", 50), tr.format("t_b", "jb", "Position", 1))
    p = write(tmp_path, text)
    with pytest.warns(ModelWarning, match=r"1 transmissions \(t_b\)"):
        m = codegen.load_model(p)
    assert [(a.name, a.joint, a.kind, a.gear) for a in m.actuators] == [("t_a", "ja", "motor", 50.0)]


def test_mimic_joints(tmp_path, capsys):
    text = robot('<link name="base"/>', link("l"), link("r"), joint("left", "base", "l", "prismatic", axis="0 1 0"),
                 joint("right", "base", "r", "prismatic", axis="0 -1 0", extra='<mimic joint="left" multiplier="1"/>'))
    p = write(tmp_path, text)
    m = codegen.load_model(p)                               # default: coupled (tests/model/test_couplings.py)
    assert [(c.joint, c.joint2, c.polycoef[1]) for c in m.couplings] == [("right", "left", 1.0)]
    with pytest.raises(ModelError, match=r"joint 'right' \(line \d+\) mimics joint 'left'.*mimic='independent'"):
        codegen.load_model(p, mimic="refuse")
    m = codegen.load_model(p, mimic="independent")
    assert [j.name for j in m.joints] == ["left", "right"] and not m.couplings
    with pytest.raises(ModelError, match="mimic must be one of"):
        codegen.load_model(p, mimic="honour")
    assert main(["check", p]) == 0
    bad = write(tmp_path, text.replace('<mimic joint="left"', '<mimic joint="middle"'))
    assert main(["check", bad]) == 2 and "mimics joint 'middle'" in capsys.readouterr().err


def test_dispatch_by_extension_and_content(tmp_path, capsys):
    """.urdf by its extension; an .xml (or any) file by its root element, after a BOM, comments and the XML
    declaration; robot-file options are refused for YAML models."""
    text = robot('<link name="base"/>', link("a"), joint("j", "base", "a"))
    xml = write(tmp_path, b"\xef\xbb\xbf<?xml version='1.0'?>\n<!-- a <robot> in a comment -->\n" + text.split("\n", 1)[1].encode(),
                "robot.xml")
    assert file_kind(xml) == "urdf" and codegen.load_model(xml).coord_names == ["j.angle"]
    assert main(["check", xml]) == 0
    yaml_file = tmp_path / "m.yaml"
    yaml_file.write_text("bodies: [{name: a, mass: 1}]\njoints: [{name: j, type: revolute, parent: ground, child: a}]\n")
    with pytest.raises(ModelError, match="floating_base: only for robot files"):
        codegen.load_model(yaml_file, floating_base=True)


BAD = [  # (file text, words of the message)
    ('<robot><link name="a"/></robot>', "needs a name attribute (line 1)"),
    ('<rob name="x"/>', "root element is <rob>"),
    ("<robot name='x'><link name='a'/>", "not a well-formed URDF file (XML)"),
    (robot(link("a"), link("a")), "two links named 'a' (lines 3 and 4)"),
    (robot("<link/>"), "a <link> without a name (line 3)"),
    (robot('<link name="b"/>', link("a"), joint("j", "b", "a", "ball")), "joint 'j' (line 5): unknown joint type 'ball'"),
    (robot('<link name="b"/>', link("a"), '<joint name="j" type="fixed"><child link="a"/></joint>'),
     "joint 'j' (line 5): needs <parent"),
    (robot('<link name="b"/>', link("a", mass="nan"), joint("j", "b", "a")), "link 'a' (line 4): <mass value=...> must be 1 finite"),
    (robot('<link name="b"/>', link("a", mass="-1"), joint("j", "b", "a")), "link 'a' (line 4): mass must be non-negative"),
    (robot('<link name="b"/>', '<link name="a"><inertial><mass value="1"/><inertia ixx="1" iyy="1" izz="1"/></inertial></link>',
           joint("j", "b", "a")), "<inertia> needs the attribute 'ixy'"),
    (robot('<link name="b"/>', '<link name="a"><inertial><mass value="1"/></inertial></link>', joint("j", "b", "a")),
     "<inertial> needs <mass> and <inertia>"),
    (robot('<link name="b"/>', link("a"), joint("j", "b", "a", xyz="0 1")), "<origin xyz=...> must be 3 finite numbers"),
    (robot('<link name="b"/>', link("a"), joint("j", "b", "a", axis="0 0 0")), "the axis must be non-zero"),
    (robot(link("a"), link("b"), joint("j1", "a", "b"), joint("j2", "b", "a")), "no root link: the joints form a cycle"),
    (robot('<link name="b"/>', link("a"), link("c")), "3 root links"),
    (robot('<link name="b"/>', link("a"), link("c"), joint("j1", "b", "a"), joint("j2", "c", "a")),
     "link 'a' already has the parent joint 'j1'"),
    (robot('<link name="b"/>', link("a"), joint("j", "b", "x")), "its child link 'x' does not exist"),
    (robot('<link name="b"/>', link("a"), joint("j", "b", "a", "fixed")), "no movable joints: with a fixed base nothing"),
    (robot('<link name="b"/>', '<link name="a"/>', joint("j", "b", "a")), "joints[j]: the bodies beyond this joint have no inertia"),
    ('<?xml version="1.0"?><!DOCTYPE robot [<!ENTITY x "y">]><robot name="r"><link name="a"/></robot>',
     "must not declare a DOCTYPE"),
    ("", "empty file"),
]


@pytest.mark.parametrize("text, words", BAD, ids=[w[:30] for _, w in BAD])
def test_bad_urdf_is_refused_with_exit_2(tmp_path, capsys, text, words):
    p = write(tmp_path, text)
    capsys.readouterr()
    assert main(["check", p]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"mbgen: error: {p}: ") and words in err and "Traceback" not in err, err
    assert err.count("\n") == 1


def test_without_yourdfpy_the_message_says_what_to_install(tmp_path, monkeypatch):
    p = write(tmp_path, robot('<link name="b"/>', link("a"), joint("j", "b", "a")))
    monkeypatch.setitem(sys.modules, "yourdfpy", None)           # import yourdfpy -> ImportError
    with pytest.raises(ModelError, match=r'needs the .yourdfpy. package: pip install "mbgen\[urdf\]"'):
        codegen.load_model(p)


def test_folder_and_missing_file(tmp_path):
    d = tmp_path / "robot.urdf"
    d.mkdir()
    with pytest.raises(ModelError, match="it is a folder"):
        codegen.load_model(d)
    with pytest.raises(ModelError, match="cannot read"):
        codegen.load_model(tmp_path / "none.urdf")
