"""The JointType record (codegen.model.joint_types) and the per-type tables of the other layers: each covers exactly
the joint types it must, so a type added to JOINT_TYPES without one of its pieces fails here, naming the piece
(docs/architecture.md, "Adding a joint type")."""
import numpy as np
import pytest

from codegen.model import JOINT_TYPES, QUATERNION_JOINTS, SCALAR_JOINTS, JointType, default_q
from codegen.model.export import URDF_TYPES, _mj_joints, minimal_rotation
from codegen.model.joint_types import LOOP_JOINTS, MJCF_AXES
from codegen.model.massprops import RELATIVE_MOTIONS
from codegen.model.mjcf import JOINT_TYPES as MJCF_IMPORT, MJT_JOINT
from codegen.model.urdf import JOINT_MAP
from codegen.runtime.families.loops import CUT_COORDINATES, cut_coordinates
from codegen.symbolic.derivatives import GROUPS, group_ends
from codegen.symbolic.joints import KINEMATICS, joint_model
from codegen.symbolic.loop_rows import ROWS

ALL = set(JOINT_TYPES)
LOOPS = set(LOOP_JOINTS)

# piece -> (its per-type table, the types it must cover)
PIECES = {
    "symbolic R(q), d(q): codegen/symbolic/joints.py KINEMATICS": (KINEMATICS, ALL),
    "derivative column groups: codegen/symbolic/derivatives.py GROUPS": (GROUPS, ALL),
    "cut-joint rows: codegen/symbolic/loop_rows.py ROWS": (ROWS, LOOPS),
    "cut-joint coordinates: codegen/runtime/families/loops.py CUT_COORDINATES": (CUT_COORDINATES, LOOPS),
    "generic relative motion: codegen/model/massprops.py RELATIVE_MOTIONS": (RELATIVE_MOTIONS, ALL),
}
MJ_DOFS = {"hinge": 1, "slide": 1, "ball": 3, "free": 6}      # velocity coordinates of a MuJoCo joint


@pytest.mark.parametrize("piece", list(PIECES))
def test_every_type_has_its_piece(piece):
    table, types = PIECES[piece]
    assert not types - set(table), f"{piece} misses {sorted(types - set(table))}"
    assert not set(table) - types, f"{piece} has types that are not in JOINT_TYPES: {sorted(set(table) - types)}"


@pytest.mark.parametrize("jtype", list(JOINT_TYPES))
def test_record_agrees_with_the_symbolic_model(jtype):
    """nq, nv of the record are those of R(q), d(q) and the derived maps; the column groups span the velocities;
    a quaternion joint's coordinates at its offset are (qw, qx, qy, qz)."""
    jt, jm = JOINT_TYPES[jtype], joint_model(jtype)
    assert isinstance(jt, JointType) and jt.name == jtype
    assert (jm.nq, jm.nv) == (jt.nq, jt.nv) and jm.H.shape == (6, jt.nv) and jm.W.shape == (6, 6 - jt.nv)
    assert len(group_ends(jtype)) == jt.nv
    if jt.quaternion is not None:
        o = jt.quaternion
        assert jt.coordinates[o:o + 4] == ("qw", "qx", "qy", "qz") and jt.nq == jt.nv + 1
        assert default_q(jtype)[o] == 1.0
    if jt.scalar:
        assert jt.nq == jt.nv and jt.quaternion is None
    if jt.needs_axis2:
        assert jt.needs_axis


@pytest.mark.parametrize("jtype", list(JOINT_TYPES))
def test_robot_file_names(jtype):
    """The URDF exporter's name reads back as the type; the MuJoCo joints written for it carry its velocities."""
    jt = JOINT_TYPES[jtype]
    if jt.urdf:
        assert URDF_TYPES[jtype] == jt.urdf and JOINT_MAP[jt.urdf] == jtype
    for alias in jt.urdf_aliases:
        assert JOINT_MAP[alias] == jtype
    assert sum(MJ_DOFS[m] for m, _ in jt.mjcf) == jt.nv or (jt.nv == 0 and jt.mjcf == ())
    assert all(a in MJCF_AXES for _, a in jt.mjcf)


def test_importers_map_onto_the_record():
    assert set(JOINT_MAP.values()) <= ALL and set(MJCF_IMPORT.values()) <= ALL
    assert len(MJCF_IMPORT) == len(MJT_JOINT)


def test_mjcf_export_of_a_planar_joint():
    """The generic exporter gives every MuJoCo joint its name, axis and our dof index."""
    from codegen.model import Joint
    a = np.array([0.0, 0.6, 0.8])
    j = Joint("p", "planar", "ground", "b", axis=a)
    K = minimal_rotation(a)
    got = _mj_joints(j)
    assert [(n, t, k) for n, t, _, k in got] == [("p.x", "slide", 0), ("p.y", "slide", 1), ("p.theta", "hinge", 2)]
    assert np.allclose(got[0][2], K[:, 0]) and np.allclose(got[1][2], K[:, 1]) and np.allclose(got[2][2], a)
    assert _mj_joints(Joint("f", "free", "ground", "b")) == []
    assert [(n, t) for n, t, _, _ in _mj_joints(Joint("r", "revolute", "ground", "b", axis=a))] == [("r", "hinge")]


def test_cut_coordinates_follow_the_record():
    """Each loop-closing type reads as many coordinates as its record names."""
    class M:
        cuts = [type("C", (), {"name": f"c_{t}", "type": t}) for t in LOOP_JOINTS]
    frames = np.random.default_rng(0).normal(size=(3, len(LOOP_JOINTS), 24))
    cq, names = cut_coordinates(M, frames)
    assert cq.shape == (3, sum(JOINT_TYPES[t].nq for t in LOOP_JOINTS))
    assert names == [f"c_{t}.{c}" for t in LOOP_JOINTS for c in JOINT_TYPES[t].coordinates]


def test_derived_views_and_the_positional_form():
    """QUATERNION_JOINTS, SCALAR_JOINTS and the former tuple access (JOINT_TYPES[t][k]) stay as they were."""
    assert QUATERNION_JOINTS == {"spherical": 0, "free": 3}
    assert set(SCALAR_JOINTS) == {"revolute", "prismatic", "cylindrical", "universal", "planar"}
    assert LOOP_JOINTS == tuple(t for t in JOINT_TYPES if t != "free")
    for t, jt in JOINT_TYPES.items():
        assert JOINT_TYPES[t][:2] == (jt.nq, jt.nv) and JOINT_TYPES[t][2] == list(jt.coordinates)
        assert JOINT_TYPES[t][3] == list(jt.velocities) and JOINT_TYPES[t][4] is jt.needs_axis
        nq, nv, *_ = jt
        assert (nq, nv) == (jt.nq, jt.nv)
