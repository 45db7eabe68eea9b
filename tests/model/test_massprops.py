"""Mass properties (codegen/model/massprops.py): lumping rigid bodies, what the inertia checks accept (point
masses, thin rods, round-off), and the singular-mass-matrix check that names the joint."""
import numpy as np
import pytest
import yaml

import codegen
from codegen.cli import main
from codegen.model import Body, Joint, Model, ModelError, Placement
from codegen.model.massprops import lumped, moved, singular_joint
from codegen.model.rotations import rot_rpy


def test_lumped_is_the_parallel_axis_theorem():
    """Two bodies in one frame: total mass, common centre, inertia about it; compared with point-mass sums."""
    rng = np.random.default_rng(1)
    pts = rng.normal(size=(40, 3))
    ms = rng.uniform(0.1, 1.0, 40)
    def body(idx):                       # a cloud of point masses as (m, c, J about c)
        m = ms[idx].sum()
        c = (ms[idx, None] * pts[idx]).sum(0) / m
        d = pts[idx] - c
        J = sum(mk * (dk @ dk * np.eye(3) - np.outer(dk, dk)) for mk, dk in zip(ms[idx], d))
        return m, c, J
    whole = body(np.arange(40))
    m, c, J = lumped([body(np.arange(15)), body(np.arange(15, 40))])
    assert m == pytest.approx(whole[0], rel=1e-14)
    assert np.allclose(c, whole[1], atol=1e-14) and np.allclose(J, whole[2], atol=1e-13)
    # moved: the same body seen from a rotated, shifted frame keeps its inertia about the centre up to rotation
    R, p = rot_rpy([0.3, -0.2, 1.1]), np.array([1.0, 2.0, -0.5])
    m2, c2, J2 = moved(*whole, p, R)
    assert np.allclose(c2, p + R @ whole[1]) and np.allclose(J2, R @ whole[2] @ R.T)
    # massless parts add their rotational inertia only; no mass at all: centre at the origin
    m3, c3, J3 = lumped([(0.0, [5, 5, 5], np.eye(3)), (0.0, [1, 0, 0], np.zeros((3, 3)))])
    assert m3 == 0 and np.array_equal(c3, np.zeros(3)) and np.allclose(J3, np.eye(3))


def test_lumped_stays_positive_semi_definite():
    """Point masses far from the centre: a sum of semi-definite terms, no cancellation below zero."""
    parts = [(1e-6, [1e3, 0, 0], np.zeros((3, 3))), (1e-6, [1e3 + 1e-9, 0, 0], np.zeros((3, 3)))]
    _, _, J = lumped(parts)
    assert np.linalg.eigvalsh(J).min() >= 0


def chain(bodies, joints):
    """Model from ((name, mass, com, inertia), ...) and ((name, type, parent, child, pos, axis), ...)."""
    return Model("t", [Body(n, m, np.asarray(c, float), np.asarray(J, float)) for n, m, c, J in bodies],
                 [Joint(n, t, p, c, Placement(np.asarray(pos, float)), Placement(), axis=None if a is None else np.asarray(a, float))
                  for n, t, p, c, pos, a in joints])


I = np.eye(3) * 0.01
Z = np.zeros((3, 3))


@pytest.mark.parametrize("bodies, joints, bad", [
    # a massless link between two joints (virtual link): regular
    ([("a", 1, [0, 0, 0.2], I), ("v", 0, [0, 0, 0], Z), ("b", 1, [0.3, 0, 0], I)],
     [("j1", "revolute", "ground", "a", [0, 0, 0], [0, 0, 1]), ("j2", "revolute", "a", "v", [0, 0, 0.4], [0, 1, 0]),
      ("j3", "revolute", "v", "b", [0, 0, 0], [1, 0, 0])], None),
    # a massless link at the tip: the last joint moves nothing
    ([("a", 1, [0, 0, 0.2], I), ("v", 0, [0, 0, 0], Z)],
     [("j1", "revolute", "ground", "a", [0, 0, 0], [0, 0, 1]), ("j2", "revolute", "a", "v", [0, 0, 0.4], [0, 1, 0])], "j2"),
    # two coaxial hinges joined by a massless link: their difference moves nothing
    ([("v", 0, [0, 0, 0], Z), ("b", 1, [0.3, 0, 0], I)],
     [("j1", "revolute", "ground", "v", [0, 0, 0], [0, 0, 1]), ("j2", "revolute", "v", "b", [0, 0, 0.5], [0, 0, 1])], "j1"),
    # a point mass off the axis: regular; on the axis: singular
    ([("p", 2, [0.5, 0, 0], Z)], [("j1", "revolute", "ground", "p", [0, 0, 0], [0, 0, 1])], None),
    ([("p", 2, [0, 0, 0.5], Z)], [("j1", "revolute", "ground", "p", [0, 0, 0], [0, 0, 1])], "j1"),
    # a point mass on a prismatic joint: regular (translation needs mass only)
    ([("p", 2, [0, 0, 0], Z)], [("j1", "prismatic", "ground", "p", [0, 0, 0], [0, 0, 1])], None),
    # a point mass on a ball joint: no inertia about the line through joint and mass
    ([("p", 2, [0.3, 0, 0], Z)], [("j1", "spherical", "ground", "p", [0, 0, 0], None)], "j1"),
    # a thin rod (0, I, I) about its own axis: singular; about a perpendicular axis: regular
    ([("r", 1, [0, 0, 0], np.diag([0, 0.1, 0.1]))], [("j1", "revolute", "ground", "r", [0, 0, 0], [1, 0, 0])], "j1"),
    ([("r", 1, [0, 0, 0], np.diag([0, 0.1, 0.1]))], [("j1", "revolute", "ground", "r", [0, 0, 0], [0, 0, 1])], None),
    # a free point mass: its rotation has no inertia
    ([("p", 2, [0, 0, 0], Z)], [("j1", "free", "ground", "p", [0, 0, 0], None)], "j1"),
    # a massless free base carrying two point masses on hinges: regular (generic configuration)
    ([("base", 0, [0, 0, 0], Z), ("p1", 1, [0.4, 0.1, 0], Z), ("p2", 1, [0, 0.3, 0.2], Z), ("p3", 1, [0.1, 0, 0.5], Z)],
     [("root", "free", "ground", "base", [0, 0, 0], None), ("h1", "revolute", "base", "p1", [0.1, 0, 0], [0, 0, 1]),
      ("h2", "revolute", "base", "p2", [0, 0.2, 0], [1, 0, 0]), ("h3", "revolute", "base", "p3", [0, 0, 0.3], [0, 1, 0])], None),
])
def test_singular_mass_matrix_is_refused_naming_the_joint(bodies, joints, bad):
    if bad is None:
        m = chain(bodies, joints)
        assert singular_joint(m) is None
        return
    with pytest.raises(ModelError) as e:
        chain(bodies, joints)
    assert e.value.field == f"joints[{bad}]" and "mass matrix is singular" in e.value.message


def test_zero_mass_and_edge_inertias_in_model_files(tmp_path, capsys):
    """mass 0 (a virtual link), a point mass (inertia 0), a thin rod (0, I, I) and round-off (-5e-20) load from
    YAML; the CLI says ok."""
    d = {"name": "edge", "gravity": [0, 0, -9.81],
         "bodies": [{"name": "v", "mass": 0, "inertia": [0, 0, 0]},
                    {"name": "rod", "mass": 1.0, "com": [0.5, 0, 0], "inertia": [0, 0.1, 0.1]},
                    {"name": "pt", "mass": 0.5, "com": [0.2, 0.1, 0], "inertia": [-5.4e-20, -5.4e-20, 0]}],
         "joints": [{"name": "j0", "type": "revolute", "parent": "ground", "child": "v", "axis": [0, 0, 1]},
                    {"name": "j1", "type": "revolute", "parent": "v", "child": "rod", "axis": [0, 1, 0]},
                    {"name": "j2", "type": "revolute", "parent": "rod", "child": "pt", "axis": [0, 0, 1],
                     "parent_frame": {"pos": [1, 0, 0]}}]}
    f = tmp_path / "edge.yaml"
    f.write_text(yaml.safe_dump(d))
    assert main(["check", str(f)]) == 0, capsys.readouterr().err
    m = codegen.load_model(f)
    assert [b.mass for b in m.bodies] == [0.0, 1.0, 0.5]
    # beyond the tolerances: still refused
    d["bodies"][1]["inertia"] = [0, 0.1, 0.1 + 1e-4]
    f.write_text(yaml.safe_dump(d))
    assert main(["check", str(f)]) == 2
    assert "bodies[rod].inertia" in capsys.readouterr().err
