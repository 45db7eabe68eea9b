"""Export (codegen/model/export.py) and back: YAML is exact, MJCF and URDF keep the dynamics to round-off with the
same coordinates. Checked against MuJoCo (the exported MJCF through mj_forward), pinocchio peers of both models,
and once with the compiled recursive kernel (humanoid -> MJCF -> ours)."""
import warnings

import mujoco
import numpy as np
import pytest

import codegen
from codegen.algorithms.tree_plan import Plan, canonical_rotation
from codegen.cli import main
from codegen.model import ModelError
from codegen.model.export import export_model, minimal_rotation, model_dict
from codegen.model.mjcf import ModelWarning
from codegen.models import random_state
from support.peers import PinPeer
from support.systems import EXAMPLES, get_system, rel_err

EXT = {"yaml": "yaml", "urdf": "urdf", "mjcf": "xml"}


def roundtrip(model, fmt, tmp_path):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ModelWarning)
        text = export_model(model, fmt)
    p = tmp_path / f"{model.name}.{EXT[fmt]}"
    p.write_text(text)
    return codegen.load_model(p), p


@pytest.mark.parametrize("model", [codegen.models.random_tree(10, 3, forces=True),
                                   codegen.models.random_tree(12, 7, floating=True), codegen.models.humanoid()],
                         ids=["tree", "floating_tree", "humanoid"])
def test_yaml_is_exact(model, tmp_path):
    """Every number comes back bit for bit, but for axes and quaternions, which loading normalises again (one ulp)."""
    back, _ = roundtrip(model, "yaml", tmp_path)
    a, b = model_dict(back), model_dict(model)
    for ja, jb in zip(a.pop("joints"), b.pop("joints")):
        for k in ("axis", "axis2", "q0"):
            if k in jb:
                assert np.allclose(ja.pop(k), jb.pop(k), rtol=0, atol=1e-15)
        assert ja == jb
    assert a == b
    assert np.allclose(Plan(back).params(), Plan(model).params(), rtol=0, atol=1e-15)
    assert back.topology_key() == model.topology_key()


def test_mjcf_of_every_joint_type_against_mujoco(tmp_path):
    """random_tree(10, 3): revolute, prismatic, cylindrical, universal, spherical, planar, fixed; the exported file's
    mj_forward equals our model's dynamics (pinocchio peer of the original), springs included; loading it back
    gives the same coordinates."""
    m = codegen.models.random_tree(10, 3, forces=True)
    m.point_springs, m.joint_forces = [], []            # MJCF has no place for them (tested below)
    assert {j.type for j in m.joints} >= {"revolute", "prismatic", "cylindrical", "universal", "spherical", "planar",
                                          "fixed"}
    back, p = roundtrip(m, "mjcf", tmp_path)
    mj = mujoco.MjModel.from_xml_path(str(p))
    d = mujoco.MjData(mj)
    assert (back.nq, back.nv) == (m.nq, m.nv) == (mj.nq, mj.nv)
    peer, peer_back = PinPeer(m), PinPeer(back)
    rng = np.random.default_rng(5)
    springs = {s.joint: s for s in m.springs}
    for _ in range(10):
        q, u = random_state(m, rng)
        tau = rng.normal(size=m.nv)
        f = tau.copy()
        for j, (iq, iv) in zip(m.joints, m.q_offsets()):
            s = springs.get(j.name)
            if s is not None:
                f[iv:iv + j.nv] += -s.stiffness * (q[iq:iq + j.nq] - s.q_ref) - s.damping * u[iv:iv + j.nv]
        ref = peer.aba(q, u, f)
        d.qpos[:], d.qvel[:], d.qfrc_applied[:] = q, u, tau
        mujoco.mj_forward(mj, d)
        assert rel_err(d.qacc, ref) < 1e-10
        assert rel_err(peer_back.aba(q, u, f), ref) < 1e-12


@pytest.mark.build
def test_humanoid_mjcf_roundtrip_compiled(tmp_path):
    """ours -> MJCF -> ours with the compiled recursive kernel: free root, spherical, universal (two hinges in one
    body) and revolute joints; the same coordinates, accelerations to round-off."""
    m = codegen.models.humanoid()
    back, _ = roundtrip(m, "mjcf", tmp_path)
    assert back.nq == m.nq and [b.name for b in back.bodies if "." not in b.name] == [b.name for b in m.bodies]
    a, b = get_system(m), get_system(back)
    rng = np.random.default_rng(6)
    for _ in range(20):
        q, u = random_state(m, rng)
        tau = rng.normal(size=m.nv)
        assert rel_err(b.forward_dynamics(q, u, tau), a.forward_dynamics(q, u, tau)) < 1e-10


def test_urdf_roundtrip(tmp_path):
    """arm7 (revolute) and a tree of prismatic, planar, floating and fixed joints: the same dynamics; the joints
    come back in pinocchio's order (by name below each link), matched here by name."""
    arm = codegen.models.arm7()
    arm.springs = []
    tree = codegen.models.random_tree(9, 2, types=("prismatic", "planar", "revolute", "fixed", "prismatic", "revolute"))
    tree.joints[1].type, tree.joints[1].axis = "free", None         # a floating joint inside the tree
    for j in tree.joints:
        j.q0 = j.u0 = None
    tree = codegen.Model(tree.name, tree.bodies, tree.joints, gravity=np.array([0, 0, -9.81]))
    for m in (arm, tree):
        back, _ = roundtrip(m, "urdf", tmp_path)
        order = [j.name for j in back.joints]
        assert sorted(order) == sorted(j.name for j in m.joints if j.type != "fixed")
        peer, peer_back = PinPeer(m), PinPeer(back)
        off = {j.name: o for j, o in zip(m.joints, m.q_offsets())}
        jq = [np.arange(off[n][0], off[n][0] + back.joints[k].nq) for k, n in enumerate(order)]
        jv = [np.arange(off[n][1], off[n][1] + back.joints[k].nv) for k, n in enumerate(order)]
        iq, iv = np.concatenate(jq), np.concatenate(jv)
        rng = np.random.default_rng(7)
        for _ in range(10):
            q, u = random_state(m, rng)
            tau = rng.normal(size=m.nv)
            assert rel_err(peer_back.aba(q[iq], u[iv], tau[iv]), peer.aba(q, u, tau)[iv]) < 1e-12


def test_planar_axes_agree_with_the_plan():
    """MJCF export writes a planar joint's in-plane slides along the axes our kernels use."""
    rng = np.random.default_rng(8)
    for a in [*rng.normal(size=(20, 3)), [0, 0, 1], [0, 0, -1], [1, 0, 0]]:
        assert np.allclose(minimal_rotation(a), canonical_rotation("planar", a, None), atol=1e-15)


def test_what_cannot_be_written(tmp_path):
    h = codegen.models.humanoid()
    with pytest.raises(ModelError, match="URDF has no cylindrical, universal or spherical joints: 'neck' "):
        export_model(h, "urdf")
    t = codegen.models.random_tree(5, 1, floating=True)
    with pytest.raises(ModelError, match="joint 'j0': an MJCF free joint"):
        export_model(t, "mjcf")
    with pytest.raises(ModelError, match="unknown export format 'sdf'"):
        export_model(h, "sdf")
    with pytest.raises(ModelError, match="rigid-body tree models"):
        export_model(codegen.models.pendulum(2, 2), "yaml")
    f = codegen.models.random_tree(6, 1, forces=True)
    with pytest.warns(ModelWarning, match="MJCF has no place for 2 point spring-dampers; 3 joint forces; the initial state"):
        export_model(f, "mjcf")
    with pytest.warns(ModelWarning, match=r"URDF has no place for 7 force elements; the initial state"):
        export_model(codegen.models.arm7(), "urdf")
    g = codegen.models.chain(2)
    with pytest.warns(ModelWarning, match=r"URDF has no place for gravity \[0.0, -9.81, 0.0\]"):
        export_model(g, "urdf")


def test_export_command(tmp_path, capsys):
    """mbgen export MODEL --format F [--out FILE]: standard output or a file; warnings on stderr; exit 2 for what
    a format cannot hold."""
    out = tmp_path / "arm7.urdf"
    arm7 = str(EXAMPLES / "arm7.yaml")
    assert main(["export", arm7, "--format", "urdf", "--out", str(out)]) == 0
    err = capsys.readouterr().err
    assert f"mbgen: warning: {arm7}: URDF has no place for 7 force elements" in err
    assert codegen.load_model(out).coord_names == codegen.models.arm7().coord_names
    assert main(["export", "humanoid", "--format", "mjcf"]) == 0
    assert capsys.readouterr().out.startswith("<!-- humanoid: exported by mbgen -->\n<mujoco model=\"humanoid\">")
    assert main(["export", "humanoid", "--format", "urdf"]) == 2
    assert "URDF has no cylindrical, universal or spherical joints" in capsys.readouterr().err
    assert main(["export", arm7, "--format", "yaml", "--floating-base"]) == 2
    assert "only for robot files" in capsys.readouterr().err
