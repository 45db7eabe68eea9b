"""MJCF import (codegen/model/mjcf.py) against MuJoCo itself: qacc of mj_forward (zero control, contacts and
constraints disabled) on the test models in tests/model/mjcf/, coordinate for coordinate (our q is MuJoCo's qpos).

Three models, all checked without compiling (a pinocchio model built from the imported Model, support.robots.
ModelPeer, plus the joint spring-dampers), and the free tree once more with the compiled recursive kernel:
* chain_hinge_slide.xml: hinge with ref, slide, a body with two joints (a massless helper body), springs and
  dampers, full inertias off the body origin, tilted gravity;
* ball.xml: two ball joints with anchors off the body origins;
* free_tree.xml: a free body with hinge, ball and slide children and welded bodies (lumped).
Armature (rotor inertia) on hinge, slide and ball joints of chain_hinge_slide.xml and free_tree.xml.
Refusals (contacts, equality constraints, tendons, friction loss) and the warnings of the ignore flags (actuators:
tests/model/test_mjcf_actuators.py)."""
import os
import warnings

import mujoco
import numpy as np
import pytest

import codegen
from codegen.cli import main
from codegen.model import ModelError
from codegen.model.mjcf import ModelWarning
from support.robots import ModelPeer, random_states, rel_err
from support.systems import get_system

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "mjcf")
FILES = ["chain_hinge_slide.xml", "ball.xml", "free_tree.xml"]


def mj_qacc(path):
    """q, u, tau -> MuJoCo's qacc with contacts and constraints off and zero control."""
    mj = mujoco.MjModel.from_xml_path(path)
    mj.opt.disableflags |= int(mujoco.mjtDisableBit.mjDSBL_CONTACT) | int(mujoco.mjtDisableBit.mjDSBL_CONSTRAINT)
    d = mujoco.MjData(mj)

    def qacc(q, u, tau):
        d.qpos[:], d.qvel[:], d.qfrc_applied[:], d.ctrl[:] = q, u, tau, 0
        mujoco.mj_forward(mj, d)
        return d.qacc.copy()
    return mj, qacc


def spring_forces(model, q, u):
    f = np.zeros(model.nv)
    off = {j.name: o for j, o in zip(model.joints, model.q_offsets())}
    for s in model.springs:
        iq, iv = off[s.joint]
        f[iv] += -s.stiffness[0] * (q[iq] - s.q_ref[0]) - s.damping[0] * u[iv]
    return f


@pytest.mark.parametrize("name", FILES)
def test_mjcf_matches_mj_forward(name):
    path = os.path.join(HERE, name)
    m = codegen.load_model(path)
    mj, qacc = mj_qacc(path)
    assert (m.nq, m.nv) == (mj.nq, mj.nv)
    q0, _ = m.initial_state()
    assert np.allclose(q0, mj.qpos0, atol=1e-15)                     # our q is qpos: the initial state too
    peer = ModelPeer(m)
    for q, u, tau in random_states(m, 20, seed=7):
        assert rel_err(peer.aba(q, u, tau + spring_forces(m, q, u)), qacc(q, u, tau)) < 1e-12


@pytest.mark.build
def test_free_tree_compiled_kernel_matches_mj_forward():
    path = os.path.join(HERE, "free_tree.xml")
    m = codegen.load_model(path)
    s = get_system(m)
    _, qacc = mj_qacc(path)
    for q, u, tau in random_states(m, 20, seed=8):
        a = s.forward_dynamics(q, u, tau)                           # springs and dampers of the file included
        assert rel_err(a, qacc(q, u, tau)) < 1e-9


def test_mapping_details():
    m = codegen.load_model(os.path.join(HERE, "chain_hinge_slide.xml"))
    # two joints in one body: a massless helper body between them
    assert [b.name for b in m.bodies] == ["base", "slider", "wrist.wrist_hinge", "wrist"]
    helper = m.body("wrist.wrist_hinge")
    assert helper.mass == 0 and not np.any(helper.inertia)
    assert m.coord_names == ["yaw.angle", "rail.disp", "wrist_hinge.angle", "wrist_slide.disp"]
    springs = {s.joint: (s.stiffness[0], s.damping[0], s.q_ref[0]) for s in m.springs}
    assert springs == {"yaw": (3.0, 0.5, 0.2), "rail": (0.0, 0.2, 0.0), "wrist_slide": (10.0, 0.0, 0.05)}
    assert m.gravity.tolist() == [0.3, -1.2, -9.81]
    assert m.armature.tolist() == [0.0, 0.7, 0.01, 0.0]                       # dof_armature, per coordinate
    assert {v["type"] for vs in m.visuals.values() for v in vs} >= {"box", "cylinder", "sphere"}
    t = codegen.load_model(os.path.join(HERE, "free_tree.xml"))
    assert [b.name for b in t.bodies] == ["trunk", "arm", "head", "leg"]          # sensor and visor lumped
    assert t.body("trunk").mass == pytest.approx(10.3) and t.body("head").mass == pytest.approx(2.2)
    assert t.armature.tolist() == [0.0] * 6 + [0.05] + [0.02] * 3 + [0.3]


def mjcf(body, extra="", option=""):
    return (f'<mujoco model="m"><compiler angle="radian"/><option>{option}</option><worldbody>'
            f'{body}</worldbody>{extra}</mujoco>')


ARM = ('<body name="a"><joint name="h" type="hinge" axis="0 1 0"/><geom type="capsule" size="0.05" '
       'fromto="0 0 0 0.3 0 0" contype="0" conaffinity="0"/></body>')
FLOOR = '<geom name="floor" type="plane" size="1 1 0.1"/>'
TOUCHING = ('<body name="a"><joint name="h" type="hinge" axis="0 1 0"/><geom name="arm" type="capsule" size="0.05" '
            'fromto="0 0 0 0.3 0 0"/></body>')


@pytest.mark.parametrize("text, words", [
    (mjcf(FLOOR + TOUCHING), "contacts (geoms 'floor' and 'arm' can touch)"),
    (mjcf(ARM.replace("</body>", '<site name="s1"/></body>') + ARM.replace('"a"', '"b"').replace('"h"', '"h2"')
          .replace("</body>", '<site name="s2"/></body>'), '<equality><connect site1="s1" site2="s2"/></equality>'),
     "the connect equality constraint"),             # site-based; joint equalities are couplings (test_couplings.py)
    (mjcf('<body name="a"><joint name="h" type="ball" frictionloss="0.1"/><geom size="0.1" contype="0" '
          'conaffinity="0"/></body>'), "friction loss on the ball or free joints 'h'"),
    (mjcf('<body name="a"><joint name="h" type="ball" damping="1"/><geom size="0.1" contype="0" conaffinity="0"/></body>'),
     "stiffness or damping on the spherical joint 'h'"),
    (mjcf(ARM, option="").replace("<option></option>", '<option density="1.2"/>'), "fluid forces"),
    ("<mujoco><worldbody><body><joint/></worldbody></mujoco>", "not a well-formed MJCF file (XML)"),
    (mjcf('<body name="a"><joint type="hinge"/></body>'), "not a valid MJCF file: Error: mass and inertia"),
    (mjcf('<body name="a"><geom size="0.1" contype="0" conaffinity="0"/></body>'), "no joints"),
])
def test_refused_with_a_message(tmp_path, capsys, text, words):
    p = tmp_path / "m.xml"
    p.write_text(text)
    capsys.readouterr()
    assert main(["check", str(p)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"mbgen: error: {p}: ") and words in err and "Traceback" not in err, err


def test_ignore_flags_warn(tmp_path):
    p = tmp_path / "m.xml"
    p.write_text(mjcf(FLOOR + TOUCHING, '<actuator><motor joint="h"/></actuator>'))
    with pytest.raises(ModelError, match="ignore_contacts=True"):
        codegen.load_model(p, ignore_actuators=True)
    assert [a.name for a in codegen.load_model(p, ignore_contacts=True).actuators] == ["actuator0"]
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        m = codegen.load_model(p, ignore_contacts=True, ignore_actuators=True)
    assert m.coord_names == ["h.angle"]
    (msg,) = [str(x.message) for x in w if issubclass(x.category, ModelWarning)]
    assert "left out on request" in msg and "contacts" in msg and "1 actuators" in msg
    with pytest.raises(ModelError, match="floating_base .* is for URDF files"):
        codegen.load_model(p, floating_base=True)


def _check_within(argv, seconds=30):
    """main(argv) in a daemon thread: (exit code, or None if it still runs after `seconds`: a hang)."""
    import threading
    out = []
    t = threading.Thread(target=lambda: out.append(main(argv)), daemon=True)
    t.start()
    t.join(seconds)
    return out[0] if out else None


@pytest.mark.parametrize("body, words", [
    ('<include file="fifo.xml"/>', "fifo.xml: cannot read: it is a FIFO"),
    ('<include file="/dev/zero"/>', "/dev/zero: cannot read: it is a character device"),
    ('<asset><mesh name="m" file="fifo.xml"/></asset>', "fifo.xml: cannot read: it is a FIFO"),
    ('<include file="big.xml"/>', "big.xml: file larger than"),
    ('<worldbody><replicate count="2000"><replicate count="200"><body><freejoint/><geom size="0.1"/></body>'
     '</replicate></replicate></worldbody>', "counts multiply to 400,000 copies"),
])
def test_files_an_mjcf_file_reads_are_checked_before_mujoco(tmp_path, capsys, body, words):
    """Includes and assets are regular files within the size limits (a FIFO or /dev/zero would hang MuJoCo's
    reader; a huge include would take its memory), replicate counts are bounded before MuJoCo expands them: exit
    2 naming the file, at once. A model file that is a FIFO is refused the same way."""
    os.mkfifo(tmp_path / "fifo.xml")
    (tmp_path / "big.xml").write_bytes(b"<mujoco>" + b" " * (51 * 2 ** 20) + b"</mujoco>")
    top = tmp_path / "top.xml"
    top.write_text(f"<mujoco>{body}<worldbody/></mujoco>" if "worldbody" not in body else f"<mujoco>{body}</mujoco>")
    capsys.readouterr()
    assert _check_within(["check", str(top)]) == 2
    err = capsys.readouterr().err
    assert words in err and "Traceback" not in err, err
    os.mkfifo(tmp_path / "model.yaml")
    assert _check_within(["check", str(tmp_path / "model.yaml")]) == 2
    assert "model.yaml: cannot read: it is a FIFO" in capsys.readouterr().err
