"""Model files: schema validation, clear messages naming file and field, exit status 2."""
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
import yaml

import codegen
from codegen.cli import main
from support.mutate import DELETE, set_path

GOOD = {
    "name": "two",
    "bodies": [{"name": "a", "mass": 1.0, "com": [0.5, 0, 0], "inertia": [0.01, 0.1, 0.1]},
               {"name": "b", "mass": 2.0, "inertia": [[0.2, 0, 0], [0, 0.2, 0], [0, 0, 0.1]]}],
    "joints": [{"name": "j1", "type": "revolute", "parent": "ground", "child": "a", "axis": [0, 0, 1]},
               {"name": "j2", "type": "spherical", "parent": "a", "child": "b",
                "parent_frame": {"pos": [1, 0, 0], "rpy": [0, 0.3, 0]}, "q0": [1, 0, 0, 0]}],
    "forces": [{"name": "k1", "type": "joint_spring_damper", "joint": "j1", "stiffness": 3.0, "damping": 0.1},
               {"name": "f1", "type": "joint_force", "joint": "j1", "value": {"sine": {"amplitude": 1, "frequency": 2}}},
               {"name": "p1", "type": "point_spring_damper", "body_a": "ground", "body_b": "b",
                "point_b": [0, 0, 0.1], "stiffness": 10, "length": 0.5}],
}


def mutate(path, value):
    return set_path(GOOD, path, value)

BAD = [
    # (mutation path, value, words the message must contain); structural faults (the JSON Schema) name list items
    # by index, the semantic checks by name
    (("joints", 0, "type"), "hinge", ["joints[0].type", "unknown joint type 'hinge'"]),
    (("bodies", 0, "name"), DELETE, ["bodies[0].name", "missing"]),
    (("joints", 1, "name"), "j1", ["joints[1].name", "duplicate name 'j1'"]),
    (("bodies", 1, "name"), "a", ["bodies[1].name", "duplicate name 'a'"]),
    (("joints", 1, "parent"), "nowhere", ["joints[j2].parent", "'nowhere' is not a body"]),
    (("joints", 1), {"name": "j2", "type": "revolute", "parent": "ground", "child": "a"},
     ["joints[j2].child", "already has parent joint"]),
    (("joints", 1, "child"), "a", ["joints[j2].child", "joined to itself"]),
    # mass 0 is a massless body (accepted where the mass matrix stays regular: test_massless_and_point_masses)
    (("bodies", 1), {"name": "b", "mass": 0.0, "inertia": [0, 0, 0]}, ["joints[j2]", "mass matrix is singular"]),
    (("bodies", 0, "mass"), -2.0, ["bodies[a].mass", "mass must be non-negative"]),
    (("bodies", 0, "inertia"), [[1, 0.5, 0], [0, 1, 0], [0, 0, 1]], ["bodies[a].inertia", "symmetric"]),
    (("bodies", 0, "inertia"), [1, -1, 1], ["bodies[a].inertia", "positive semi-definite"]),
    (("bodies", 0, "inertia"), [0.1, 0.1, 0.5], ["bodies[a].inertia", "triangle inequality"]),
    (("bodies", 0, "com"), [1, 2], ["bodies[0].com", "3 numbers"]),
    (("joints", 0, "axis"), [0, 0, 0], ["joints[j1].axis", "non-zero"]),
    (("joints", 1, "q0"), [1, 0, 0], ["joints[1].q0", "4 numbers"]),
    (("joints", 0, "u0"), [1, 2], ["joints[0].u0", "list of 1 number"]),
    (("gravity",), [0, -9.81], ["gravity", "3 numbers"]),
    (("joints", 1, "parent_frame"), {"pos": [0, 0, 0], "color": 1}, ["joints[1].parent_frame", "unknown keys"]),
    (("forces", 0, "joint"), "j9", ["forces[k1].joint", "'j9' does not exist"]),
    (("forces", 1, "value"), {"ramp": 1}, ["forces[1].value", "expected one of"]),
    (("forces", 0, "joint"), "j2", ["forces[k1].joint", "scalar coordinates"]),
    (("forces", 2, "body_b"), "zz", ["forces[p1].body_b", "'zz' is not a body"]),
    (("bodies", 0, "density"), 3, ["bodies[0]", "unknown keys ['density']"]),
    (("joints",), DELETE, ["joints", "missing"]),
    (("joints", 0, "armature"), -0.1, ["joints[j1].armature", ">= 0"]),
    (("joints", 1, "armature"), [0.1, 0.2], ["joints[j2].armature", "3 numbers"]),
    (("joints", 1, "armature"), [0.1, -0.2, 0.0], ["joints[j2].armature", ">= 0"]),
    (("joints", 0, "armature"), "lots", ["joints[0].armature", "a number >= 0"]),
]


@pytest.mark.parametrize("path,value,words", BAD, ids=[".".join(map(str, b[0])) + "=" + str(b[1])[:12] for b in BAD])
def test_bad_model_gives_clear_message_and_status_2(tmp_path, capsys, path, value, words):
    f = tmp_path / "bad.yaml"
    f.write_text(yaml.safe_dump(mutate(path, value)))
    assert main(["check", str(f)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"mbgen: error: {f}: "), err
    for w in words:
        assert w in err, (w, err)
    assert "Traceback" not in err


def test_good_model_loads(tmp_path, capsys):
    f = tmp_path / "good.yaml"
    f.write_text(yaml.safe_dump(GOOD))
    assert main(["check", str(f)]) == 0
    m = codegen.load_model(f)
    assert m.nq == 5 and m.nv == 4 and m.coord_names[0] == "j1.angle"


TOPOLOGY_BAD = {
    "cycle": ("""
        bodies: [{name: a, mass: 1}, {name: b, mass: 1}]
        joints:
          - {name: j1, type: revolute, parent: b, child: a}
          - {name: j2, type: revolute, parent: a, child: b}
        """, "cycle"),
    "disconnected": ("""
        bodies: [{name: a, mass: 1}, {name: b, mass: 1}]
        joints: [{name: j1, type: revolute, parent: ground, child: a}]
        """, "bodies[b]: body 'b' has no parent joint"),
    "self": ("""
        bodies: [{name: a, mass: 1}]
        joints: [{name: j1, type: revolute, parent: a, child: a}]
        """, "joined to itself"),
    "not a mapping": ("- just\n- a list\n", "top level must be a mapping"),
    "yaml syntax": ("bodies: [a, b\n", "not valid YAML"),
    "table": ("""
        bodies: [{name: a, mass: 1}]
        joints: [{name: j1, type: revolute, parent: ground, child: a}]
        forces: [{name: f, type: joint_force, joint: j1, value: {table: {t: [0, 1, 0.5], value: [0, 1, 2]}}}]
        """, "strictly increasing"),
    "axis on ball": ("""
        bodies: [{name: a, mass: 1}]
        joints: [{name: j1, type: spherical, parent: ground, child: a, axis: [0, 0, 1]}]
        """, "takes no axis"),
}


@pytest.mark.parametrize("case", list(TOPOLOGY_BAD))
def test_bad_topology(tmp_path, capsys, case):
    text, words = TOPOLOGY_BAD[case]
    f = tmp_path / "m.yaml"
    f.write_text(textwrap.dedent(text))
    assert main(["check", str(f)]) == 2
    err = capsys.readouterr().err
    assert str(f) in err and words in err, err


def test_missing_file_and_bad_cli_options(tmp_path, capsys):
    assert main(["check", str(tmp_path / "nope.yaml")]) == 2
    assert "cannot read" in capsys.readouterr().err
    assert main(["simulate", "chain:0"]) == 2
    assert "positive integer" in capsys.readouterr().err
    assert main(["simulate", "examples/balance_pendulum.yaml", "--dt", "-1"]) == 2
    assert "must be positive" in capsys.readouterr().err
    assert main(["inspect", "joint", "hinge"]) == 2
    assert "unknown element" in capsys.readouterr().err
    assert main(["simulate", "chain:x"]) == 2
    assert "chain:x: N: expected an integer" in capsys.readouterr().err
    assert main(["simulate", "chain:2", "--integrator", "hht"]) == 2
    assert "only available for flexible-beam" in capsys.readouterr().err
    assert main(["simulate", "examples/flexible_pendulum.yaml", "--integrator", "hht", "--hht-alpha", "0.5",
                 "--quiet"]) == 2
    assert "HHT alpha must lie in [-1/3, 0]" in capsys.readouterr().err


def test_cli_process_exit_status_and_no_traceback(tmp_path):
    f = tmp_path / "bad.yaml"
    f.write_text(yaml.safe_dump(mutate(("bodies", 0, "mass"), -1.0)))
    p = subprocess.run([sys.executable, "-m", "codegen.cli", "simulate", str(f)], capture_output=True, text=True)
    assert p.returncode == 2
    assert "bodies[a].mass" in p.stderr and "Traceback" not in p.stderr
    assert not os.path.exists("results/bad.npz")


def test_builtin_examples_match_yaml():
    """examples/*.yaml are the builders' models exactly (same parameters, same topology)."""
    from codegen.algorithms.tree_plan import Plan
    for name, builder in (("balance_pendulum", codegen.models.balance_pendulum), ("arm7", codegen.models.arm7),
                          ("humanoid", codegen.models.humanoid), ("space_robot", codegen.models.space_robot)):
        a, b = codegen.load_model(f"examples/{name}.yaml"), builder()
        assert a.topology_key() == b.topology_key()
        assert np.allclose(Plan(a).params(), Plan(b).params(), atol=1e-14)
        assert all(np.allclose(x, y) for x, y in zip(a.initial_state(), b.initial_state()))


def test_frames_section_of_a_model_file():
    """`frames:` of a model file: name -> (body, origin, rotation) in the body frame; mbgen check lists them."""
    d = {"name": "fr", "bodies": [{"name": "link1", "mass": 1.0}],
         "joints": [{"name": "j1", "type": "revolute", "parent": "ground", "child": "link1", "axis": [0, 0, 1]}],
         "frames": [{"name": "tip", "body": "link1", "pos": [1, 0, 0], "rpy": [0, 0, 0.5]},
                    {"name": "mark", "body": "ground", "pos": [0, 1, 0]}]}
    m = codegen.model_from_dict(d)
    assert list(m.frames) == ["tip", "mark"] and m.frames["mark"][0] == "ground"
    body, pos, rot = m.frames["tip"]
    assert body == "link1" and pos == [1, 0, 0]
    assert np.allclose(rot, [[np.cos(0.5), -np.sin(0.5), 0], [np.sin(0.5), np.cos(0.5), 0], [0, 0, 1]])
    from codegen.cli.commands import physics_summary
    assert "2 frame(s): tip on link1, mark on ground" in physics_summary(m)
