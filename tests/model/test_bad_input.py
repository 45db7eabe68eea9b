"""Bad input: never a traceback, never a partial file (issue "Bad input: never a traceback, never a partial file").

Every malformed or adversarial model file ends with exit status 2 from ``mbgen check``, one line on stderr that
names the file (and, past the YAML level, the field path), no traceback, and nothing written. Property-based
(hypothesis) families mutate valid rigid and beam models from the schema; a fixed corpus in tests/model/bad_models/
holds hand-made adversarial files (alias bombs, deep nesting, binary garbage, ...); the limits of
codegen.model.core.LIMITS are checked at their values or, where a file at the limit would be slow to write
and read, with a lowered limit; bad command-line values end with exit 2 before any build (the build cache
stays empty).
"""
import copy
import json
import math
import os
import string
import tempfile

import pytest
import yaml
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import codegen
from codegen.cli import main
from codegen.model import JOINT_TYPES, ModelError
from codegen.model import core as model_core
from support.mutate import DELETE, set_path
from support.systems import EXAMPLES

HERE = os.path.dirname(os.path.abspath(__file__))
CORPUS = os.path.join(HERE, "bad_models")
EX_BEAM = str(EXAMPLES / "flexible_pendulum.yaml")

N = int(os.environ.get("MBGEN_BAD_INPUT_EXAMPLES", "100"))      # examples per property family
SETTINGS = settings(max_examples=N, deadline=None, database=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow,
                                           HealthCheck.data_too_large, HealthCheck.filter_too_much])


# ---------------------------------------------------------------- helpers

def run(argv):
    """main() as the shell sees it: argparse errors raise SystemExit(2)."""
    try:
        return main(argv)
    except SystemExit as e:
        return e.code


class Workdir:
    """One temporary folder per test; a model file written and checked in it, the folder otherwise empty."""

    def __init__(self):
        self.dir = tempfile.mkdtemp(prefix="mbgen_bad_")
        self.n = 0

    def write(self, content, suffix=".yaml"):
        for f in os.listdir(self.dir):
            os.unlink(os.path.join(self.dir, f))
        self.n += 1
        path = os.path.join(self.dir, f"m{self.n}{suffix}")
        with open(path, "wb") as fh:
            fh.write(content if isinstance(content, bytes) else content.encode("utf-8"))
        return path


@pytest.fixture
def work():
    w = Workdir()
    yield w
    for f in os.listdir(w.dir):
        os.unlink(os.path.join(w.dir, f))
    os.rmdir(w.dir)


def assert_refused(capsys, path, fields=None, argv=None):
    """Exit 2, one line on stderr naming the file (and one of ``fields`` right after it), no traceback,
    nothing written beside the file."""
    folder = os.path.dirname(path)
    before = sorted(os.listdir(folder))
    capsys.readouterr()
    rc = run(argv or ["check", path])
    out, err = capsys.readouterr()
    assert rc == 2, (rc, out, err)
    assert "Traceback" not in out + err
    assert err.startswith(f"mbgen: error: {path}: "), err
    assert err.count("\n") == 1, err
    if fields:
        rest = err[len(f"mbgen: error: {path}: "):]
        assert any(rest.startswith(f) for f in fields), (fields, err)
    assert sorted(os.listdir(folder)) == before
    return err


def dump(d) -> str:
    return yaml.safe_dump(d, allow_unicode=False, default_flow_style=None, width=1000)


# ---------------------------------------------------------------- the valid models mutated

RIGID = {
    "name": "adversarial",
    "gravity": [0.0, -9.81, 0.0],
    "bodies": [{"name": "a", "mass": 1.0, "com": [0.5, 0, 0], "inertia": [0.01, 0.1, 0.1]},
               {"name": "b", "mass": 2.0, "com": [0, 0, 0], "inertia": [[0.2, 0, 0], [0, 0.2, 0], [0, 0, 0.1]]},
               {"name": "c", "mass": 0.5, "inertia": [0.02, 0.02, 0.03, 0, 0, 0]}],
    "joints": [{"name": "j1", "type": "revolute", "parent": "ground", "child": "a", "axis": [0, 0, 1], "u0": [0.1]},
               {"name": "j2", "type": "spherical", "parent": "a", "child": "b",
                "parent_frame": {"pos": [1, 0, 0], "rpy": [0, 0.3, 0]}, "q0": [1, 0, 0, 0]},
               {"name": "j3", "type": "universal", "parent": "b", "child": "c", "axis": [0, 1, 0],
                "axis2": [1, 0, 0], "child_frame": {"quat": [1, 0, 0, 0]}}],
    "forces": [{"name": "k1", "type": "joint_spring_damper", "joint": "j1", "stiffness": 3.0, "damping": 0.1},
               {"name": "f1", "type": "joint_force", "joint": "j1", "dof": 0,
                "value": {"sine": {"amplitude": 1, "frequency": 2}}},
               {"name": "f2", "type": "joint_force", "joint": "j3", "dof": 1, "value": {"step": {"t0": 0.1, "after": 2}}},
               {"name": "f3", "type": "joint_force", "joint": "j1", "value": {"table": {"t": [0, 1, 2], "value": [0, 1, 0]}}},
               {"name": "p1", "type": "point_spring_damper", "body_a": "ground", "body_b": "b",
                "point_b": [0, 0, 0.1], "stiffness": 10, "damping": 0.5, "length": 0.5}],
}
with open(EX_BEAM) as _fh:
    BEAM = yaml.safe_load(_fh)
BEAM["beams"] = BEAM["beams"][:2] + [dict(BEAM["beams"][0], name="b3", elements=2)]
BEAM["joints"] = BEAM["joints"][:2] + [{"name": "s3", "type": "translational", "parent": "b2", "child": "b3",
                                        "axis": [1, 0], "q0": 0.1}]
BEAM["loads"] = [{"name": "p", "beam": "b1", "s": 2.5, "force": [0, -10]}]


def test_the_valid_models_are_valid(work, capsys):
    for d in (RIGID, BEAM):
        assert run(["check", work.write(dump(d))]) == 0, capsys.readouterr().err


# ---------------------------------------------------------------- value strategies

def _parses_as_number(s):
    try:
        float(s.strip())
        return True
    except (ValueError, OverflowError):
        return False


words = st.text(min_size=0, max_size=12).filter(lambda s: not _parses_as_number(s))
not_a_number = st.one_of(st.none(), st.booleans(), words, st.lists(st.integers(), max_size=3),
                         st.dictionaries(st.text(string.ascii_letters, min_size=1, max_size=3), st.integers(), max_size=2))
non_finite = st.sampled_from([math.nan, math.inf, -math.inf, ".nan", "inf", "-Infinity", 10 ** 400])
bad_number = st.one_of(not_a_number, non_finite)
negative = st.one_of(st.floats(max_value=-1e-300, allow_infinity=False, allow_nan=False),
                     st.integers(max_value=-1))
bad_positive = st.one_of(bad_number, negative, st.sampled_from([0, 0.0, -0.0, "0", "-4e-4"]))
bad_nonneg = st.one_of(bad_number, negative)
finite = st.floats(min_value=-1e6, max_value=1e6, allow_nan=False)


def bad_vector(n, zero_ok=True, also_valid=()):
    """Invalid n-vectors: wrong lengths (but not the lengths in also_valid), one bad element, scalars; the zero
    vector unless zero_ok."""
    wrong_length = st.integers(0, 7).filter(lambda k: k != n and k not in also_valid).flatmap(
        lambda k: st.lists(finite, min_size=k, max_size=k))
    one_bad = st.tuples(st.lists(finite, min_size=n, max_size=n), st.integers(0, n - 1), bad_number).map(
        lambda t: t[0][:t[1]] + [t[2]] + t[0][t[1] + 1:])
    scalars = st.one_of(st.booleans(), words, st.dictionaries(st.just("x"), st.integers(), max_size=1))
    extra = [st.just([0.0] * n)] if not zero_ok else []
    return st.one_of(wrong_length, one_bad, scalars, *extra)


control = st.characters(categories=["Cc", "Cf", "Zl", "Zp", "Zs"]).filter(lambda c: c != " ")
bad_string = st.one_of(
    st.none(), st.booleans(), st.integers(), st.floats(), st.lists(st.text(max_size=3), max_size=2),
    st.dictionaries(st.text(string.ascii_letters, min_size=1, max_size=3), st.integers(), max_size=2),
    st.just(""),
    st.text(min_size=201, max_size=260, alphabet=string.ascii_letters),
    st.tuples(st.text(max_size=5), control, st.text(max_size=5)).map("".join),
)
RIGID_NAMES = {"a", "b", "c", "ground", "j1", "j2", "j3", "k1", "f1", "f2", "f3", "p1", "adversarial"}
BEAM_NAMES = {"b1", "b2", "b3", "ground", "pin", "j2", "s3", "p"}
bad_reference = st.one_of(bad_string, st.text(min_size=1, max_size=20).filter(lambda s: s not in RIGID_NAMES))
bad_beam_reference = st.one_of(bad_string, st.text(min_size=1, max_size=20).filter(lambda s: s not in BEAM_NAMES))


def bad_inertia():
    pos = st.floats(0.01, 1.0)
    triangle = st.tuples(pos, pos, st.floats(1e-3, 10.0)).map(lambda t: [t[0], t[1], t[0] + t[1] + t[2]])
    # a zero principal moment is a thin rod (accepted on the edge of the triangle inequality): negative ones only
    not_pd = st.tuples(pos, pos, st.floats(-1.0, -1e-3)).map(lambda t: [t[0], t[1], t[2]])
    unsym = st.floats(1e-6, 0.4).map(lambda x: [[1, x, 0], [0, 1, 0], [0, 0, 1]])
    return st.one_of(triangle, not_pd, unsym, bad_vector(3, also_valid=(6,)), st.just([[1, 0], [0, 1]]),
                     st.lists(st.lists(finite, min_size=3, max_size=3), min_size=2, max_size=2))


# (path into RIGID, strategy of invalid values, field paths the message may start with). Structural faults (types,
# lengths, keys: the JSON Schema of codegen/model/schema.py) name list items by index, value and reference faults
# (the semantic checks) by name.
RIGID_FIELDS = [
    (("name",), bad_string, ["name"]),
    (("gravity",), bad_vector(3), ["gravity"]),
    (("bodies", 0, "name"), st.one_of(bad_string, st.just("ground"), st.just("b")), ["bodies[0].name", "bodies[1].name"]),
    # mass 0 is a massless body (body a has children: a regular mass matrix), so only negative masses fail
    (("bodies", 0, "mass"), st.one_of(bad_nonneg, st.sampled_from(["-4e-4", -1e-9])), ["bodies[a].mass", "bodies[0].mass"]),
    (("bodies", 1, "com"), bad_vector(3), ["bodies[b].com", "bodies[1].com"]),
    (("bodies", 0, "inertia"), bad_inertia(), ["bodies[a].inertia", "bodies[0].inertia"]),
    (("bodies", 2, "inertia"), bad_inertia(), ["bodies[c].inertia", "bodies[2].inertia"]),
    (("joints", 0, "name"), st.one_of(bad_string, st.just("a"), st.just("j2")), ["joints[0].name", "joints[1].name"]),
    (("joints", 0, "type"), st.one_of(bad_string, st.text(max_size=15).filter(lambda s: s not in JOINT_TYPES)),
     ["joints[0].type", "joints[j1].type"]),
    (("joints", 1, "parent"), st.one_of(bad_reference, st.just("b")), ["joints[1].parent", "joints[j2].parent", "joints[j2].child"]),
    (("joints", 1, "child"), st.one_of(bad_reference, st.just("ground")), ["joints[1].child", "joints[j2].child"]),
    (("joints", 0, "axis"), st.one_of(bad_vector(3, zero_ok=False), st.just([1e-13, 0, 0])), ["joints[j1].axis", "joints[0].axis"]),
    (("joints", 2, "axis2"), st.one_of(bad_vector(3, zero_ok=False), st.just([0, 1, 0]), st.just([1, 1, 0])),
     ["joints[j3].axis2", "joints[2].axis2"]),
    (("joints", 0, "u0"), st.one_of(bad_vector(1).filter(lambda v: not isinstance(v, (str, bool))), non_finite),
     ["joints[j1].u0", "joints[0].u0"]),
    (("joints", 1, "q0"), st.one_of(bad_vector(4, zero_ok=False), non_finite), ["joints[j2].q0", "joints[1].q0"]),
    (("joints", 1, "parent_frame", "pos"), bad_vector(3), ["joints[1].parent_frame.pos"]),
    (("joints", 1, "parent_frame", "rpy"), bad_vector(3), ["joints[1].parent_frame.rpy"]),
    (("joints", 2, "child_frame", "quat"), bad_vector(4, zero_ok=False), ["joints[2].child_frame.quat"]),
    (("forces", 0, "stiffness"), bad_nonneg.filter(lambda v: not (isinstance(v, list) and len(v) == 1 and v[0] >= 0)),
     ["forces[0].stiffness", "forces[k1].stiffness", "forces[k1]"]),      # [k]: one stiffness per coordinate
    (("forces", 0, "joint"), st.one_of(bad_reference, st.just("j2")), ["forces[0].joint", "forces[k1].joint"]),
    (("forces", 1, "dof"), st.one_of(bad_number, st.floats(0.01, 0.99), st.integers(1, 10 ** 6), negative),
     ["forces[1].dof", "forces[f1].dof"]),
    (("forces", 1, "value", "sine", "amplitude"), bad_number, ["forces[1].value.sine.amplitude"]),
    (("forces", 2, "value", "step", "after"), bad_number, ["forces[2].value.step.after"]),
    (("forces", 1, "value"), st.one_of(bad_number, st.dictionaries(
        words.filter(lambda k: k not in ("constant", "sine", "step", "table")), st.integers(), max_size=2)),
     ["forces[1].value"]),
    (("forces", 3, "value", "table", "t"), st.one_of(bad_vector(3), st.just([0, 2, 1]), st.just([0, 0, 1]),
                                                     st.just([0])), ["forces[3].value.table", "forces[f3].table"]),
    (("forces", 4, "stiffness"), bad_nonneg, ["forces[4].stiffness", "forces[p1].stiffness"]),
    (("forces", 4, "length"), bad_nonneg, ["forces[4].length", "forces[p1].length"]),
    (("forces", 4, "body_b"), st.one_of(bad_reference, st.just("ground")), ["forces[4].body_b", "forces[p1].body_b"]),
    (("forces", 4, "point_b"), bad_vector(3), ["forces[p1].point_b", "forces[4].point_b"]),
    (("forces", 4, "name"), st.one_of(bad_string, st.just("k1"), st.just("a"), st.just("j1")),
     ["forces[4].name", "forces[p1].name", "forces[k1].name", "forces[a].name", "forces[j1].name"]),
]


@SETTINGS
@given(data=st.data())
def test_rigid_wrong_values_are_refused(work, capsys, data):
    path, strategy, fields = data.draw(st.sampled_from(RIGID_FIELDS), label="field")
    value = data.draw(strategy, label="value")
    assert_refused(capsys, work.write(dump(set_path(RIGID, path, value))), fields)


REQUIRED = [(("bodies",), ["bodies"]), (("joints",), ["joints"]), (("bodies", 1, "name"), ["bodies[1].name"]),
            (("bodies", 1, "mass"), ["bodies[1].mass"]), (("joints", 1, "type"), ["joints[1].type"]),
            (("joints", 1, "parent"), ["joints[1].parent"]), (("joints", 2, "child"), ["joints[2].child"]),
            (("joints", 0, "name"), ["joints[0].name"]), (("forces", 0, "joint"), ["forces[0]"]),
            (("forces", 2, "value", "step", "after"), ["forces[2].value.step.after"]),
            (("forces", 3, "value", "table", "value"), ["forces[3].value.table.value"]),
            (("forces", 4, "type"), ["forces[4]"]), (("joints", 1), ["bodies[b]"])]
MAPPINGS = [((), {"name", "gravity", "bodies", "joints", "forces", "simulation"}, "<top level>"),
            (("bodies", 0), {"name", "mass", "com", "inertia"}, "bodies[0]"),
            (("joints", 1), {"name", "type", "parent", "child", "parent_frame", "child_frame", "axis", "axis2", "q0",
                             "u0"}, "joints[1]"),
            (("joints", 1, "parent_frame"), {"pos", "rpy", "quat", "matrix", "axis_angle"}, "joints[1].parent_frame"),
            (("forces", 0), {"name", "type", "joint", "stiffness", "damping", "q_ref"}, "forces[0]"),
            (("forces", 1, "value", "sine"), {"amplitude", "frequency", "phase", "offset"}, "forces[1].value.sine"),
            (("forces", 2, "value", "step"), {"t0", "before", "after"}, "forces[2].value.step"),
            (("forces", 3, "value", "table"), {"t", "value"}, "forces[3].value.table")]
CONTAINERS = [(("bodies",), ["bodies"]), (("joints",), ["joints"]), (("forces",), ["forces"]),
              (("bodies", 1), ["bodies[1]"]), (("joints", 0), ["joints[0]"]), (("forces", 2), ["forces[2]"]),
              (("joints", 1, "parent_frame"), ["joints[1].parent_frame"]), (("forces", 1, "value", "sine"),
                                                                           ["forces[1].value"])]
TOPOLOGY = [  # (mutation, field paths)
    (lambda d: d["joints"][0].update(parent="c"), ["joints[j1].parent", "joints[j2].parent", "joints[j3].parent"]),
    (lambda d: d["joints"][1].update(parent="c"), ["joints[j2].parent", "joints[j3].parent"]),
    (lambda d: d["joints"].pop(2), ["bodies[c]"]),
    (lambda d: d["joints"][2].update(child="b"), ["joints[j3].child"]),
    (lambda d: d["joints"].append(dict(d["joints"][0], name="j4")), ["joints[j4].child"]),
    (lambda d: d["bodies"].append({"name": "orphan", "mass": 1}), ["bodies[orphan]"]),
    (lambda d: d.update(bodies=[]), ["bodies"]),
    (lambda d: d["bodies"].append(dict(d["bodies"][0])), ["bodies[3].name"]),
]


@SETTINGS
@given(data=st.data())
def test_rigid_structure_faults_are_refused(work, capsys, data):
    family = data.draw(st.sampled_from(["missing", "unknown key", "container", "topology"]), label="family")
    if family == "missing":
        path, fields = data.draw(st.sampled_from(REQUIRED))
        d = set_path(RIGID, path, DELETE)
    elif family == "unknown key":
        path, allowed, fld = data.draw(st.sampled_from(MAPPINGS))
        key = data.draw(st.one_of(st.text(max_size=10), st.integers()).filter(
            lambda k: k not in allowed and k != "beams"))
        d = copy.deepcopy(RIGID)
        cur = d
        for k in path:
            cur = cur[k]
        cur[key] = data.draw(st.one_of(st.integers(), st.text(max_size=5)))
        fields = [fld]
    elif family == "container":
        path, fields = data.draw(st.sampled_from(CONTAINERS))
        d = set_path(RIGID, path, data.draw(st.one_of(st.integers(), st.text(max_size=5), st.booleans(),
                                                     st.just({"x": 1}), st.just([[1]]))))
    else:
        mutate, fields = data.draw(st.sampled_from(TOPOLOGY))
        d = copy.deepcopy(RIGID)
        mutate(d)
    assert_refused(capsys, work.write(dump(d)), fields)


BEAM_FIELDS = [
    (("name",), bad_string, ["name"]),
    (("gravity",), st.one_of(bad_vector(2, also_valid=(3,)), st.just([0, -9.81, 1])), ["gravity"]),
    (("beams", 0, "name"), st.one_of(bad_string, st.just("ground"), st.just("b2")), ["beams[0].name", "beams[1].name"]),
    (("beams", 1, "elements"), st.one_of(bad_positive, st.floats(1.1, 1.9), st.integers(10 ** 5 + 1, 10 ** 30)),
     ["beams[1].elements"]),
    (("beams", 0, "length"), bad_positive, ["beams[0].length"]),
    (("beams", 0, "E"), bad_positive, ["beams[0].E"]),
    (("beams", 1, "A"), bad_positive, ["beams[1].A"]),
    (("beams", 1, "I"), bad_positive, ["beams[1].I"]),
    (("beams", 2, "rho"), bad_positive, ["beams[2].rho"]),
    (("beams", 2, "angle"), st.one_of(bad_number, st.just(1.0)), ["beams[2].angle"]),
    (("joints", 1, "name"), st.one_of(bad_string, st.just("pin")), ["joints[1].name"]),
    (("joints", 1, "type"), st.one_of(bad_string, st.text(max_size=15).filter(
        lambda s: s not in ("revolute", "fixed", "translational", "pin", "planar_revolute", "clamp", "prismatic",
                            "planar_translational", "slider"))), ["joints[1].type"]),
    (("joints", 1, "parent"), st.one_of(bad_beam_reference, st.just("b2")), ["joints[1].parent"]),
    (("joints", 1, "child"), st.one_of(bad_beam_reference, st.just("b1")), ["joints[1].child", "joints[1].parent"]),
    (("joints", 2, "axis"), st.one_of(bad_vector(2, zero_ok=False, also_valid=(3,)), st.just([0, 0, 0])),
     ["joints[2].axis"]),
    (("joints", 0, "at"), bad_vector(2, also_valid=(3,)), ["joints[0].at"]),
    (("joints", 2, "q0"), bad_number, ["joints[2].q0"]),
    (("loads", 0, "force"), bad_vector(2, also_valid=(3,)), ["loads[0].force"]),
    (("loads", 0, "s"), st.one_of(bad_number, st.just(-1.0), st.just(100.0)), ["loads[0].s"]),
    (("loads", 0, "beam"), bad_beam_reference, ["loads[0].beam"]),
    (("loads", 0, "name"), bad_string, ["loads[0].name"]),
    (("initial",), st.one_of(st.integers(), st.text(min_size=1, max_size=4), st.just({"angle": math.nan}),
                             st.just({"at_rest": False}), st.just({"spin": 1})), ["initial"]),
]


@SETTINGS
@given(data=st.data())
def test_beam_wrong_values_are_refused(work, capsys, data):
    path, strategy, fields = data.draw(st.sampled_from(BEAM_FIELDS), label="field")
    value = data.draw(strategy, label="value")
    assert_refused(capsys, work.write(dump(set_path(BEAM, path, value))), fields)


# ---------------------------------------------------------------- names, encodings, garbage, alias bombs

@SETTINGS
@given(name=st.text(min_size=1, max_size=30))
def test_names_printable_accepted_else_refused(work, capsys, name):
    """Any printable unicode name of <= 200 characters is a name; a control, format or line/paragraph
    separator character is refused with the field named."""
    d = copy.deepcopy(RIGID)
    d["joints"][2]["name"] = name
    for f in d["forces"]:
        if f.get("joint") == "j3":
            f["joint"] = name
    path = work.write(dump(d))
    if name.isprintable() and name not in ("j1", "j2", "a", "b", "c", "k1", "f1", "f2", "f3", "p1"):
        capsys.readouterr()
        assert run(["check", path]) == 0, capsys.readouterr().err
        assert codegen.load_model(path).joints[2].name == name
    else:
        assert_refused(capsys, path, ["joints[2].name"])


@SETTINGS
@given(scale=st.floats(1e-10, 1e100), x=st.floats(-1, 1), y=st.floats(-1, 1), z=st.floats(0.1, 1))
def test_non_unit_and_huge_axes_are_normalised(work, capsys, scale, x, y, z):
    """Non-unit axes are accepted and normalised without overflow (components up to 1e100)."""
    d = copy.deepcopy(RIGID)
    d["joints"][0]["axis"] = [x * scale, y * scale, z * scale]
    path = work.write(dump(d))
    capsys.readouterr()
    assert run(["check", path]) == 0, capsys.readouterr().err
    axis = codegen.load_model(path).joints[0].axis
    assert abs(sum(a * a for a in axis) - 1) < 1e-12


@pytest.mark.parametrize("axis", [[1e308, 1e308, 1e308], [1e308, 1e308, 0], [0, -1e101, 0]])
def test_an_axis_whose_length_overflows_is_refused(work, capsys, axis):
    """An axis of three 1e308 components (its length is inf) is a broken file: refused naming the field."""
    err = assert_refused(capsys, work.write(dump(set_path(RIGID, ("joints", 0, "axis"), axis))), ["joints[j1].axis"])
    assert "its length overflows" in err


def test_overflowing_quaternion_norm(work, capsys):
    d = set_path(RIGID, ("joints", 1, "q0"), [1e308, 1e308, 0, 0])
    assert abs(codegen.load_model(work.write(dump(d))).joints[1].q0[0] - 2 ** -0.5) < 1e-15


@SETTINGS
@given(blob=st.binary(min_size=0, max_size=400))
def test_binary_garbage_is_refused(work, capsys, blob):
    assert_refused(capsys, work.write(blob))


@SETTINGS
@given(text=st.text(max_size=200))
def test_random_text_is_refused(work, capsys, text):
    assert_refused(capsys, work.write(text))


@SETTINGS
@given(width=st.integers(4, 30), depth=st.integers(2, 12), where=st.sampled_from(["bodies", "com", "top"]))
def test_alias_bombs_are_refused_or_bounded(work, capsys, width, depth, where):
    """Anchors of ``width`` aliases each, ``depth`` levels: refused as soon as the expanded size passes
    LIMITS['yaml_nodes']; below that the file is an ordinary (invalid) model."""
    lines = ["l0: &l0 [" + ", ".join(["1"] * width) + "]"]
    lines += [f"l{i}: &l{i} [" + ", ".join([f"*l{i - 1}"] * width) + "]" for i in range(1, depth)]
    top = f"*l{depth - 1}"
    if where == "bodies":
        lines += [f"bodies: {top}", "joints: []"]
    elif where == "com":             # the anchors inside the value of an allowed field
        anchors = ", ".join(ln.split(": ", 1)[1] for ln in lines)
        lines = ["bodies:", f"  - {{name: a, mass: 1, com: [{anchors}, {top}]}}", "joints: []"]
    else:
        lines += [f"extra: {top}"]
    err = assert_refused(capsys, work.write("\n".join(lines) + "\n"))
    if width ** depth > model_core.LIMITS["yaml_nodes"] * 1.2:
        assert "alias" in err


@SETTINGS
@given(depth=st.integers(65, 5000), kind=st.sampled_from("[{"))
@example(depth=1000, kind="[")      # past libyaml 0.2.6's own cap, hit by its scanner before our event check
def test_deep_nesting_is_refused(work, capsys, depth, kind):
    body = "[" * depth + "]" * depth if kind == "[" else "{a: " * depth + "1" + "}" * depth
    err = assert_refused(capsys, work.write(f"bodies: {body}\njoints: []\n"))
    assert "nested too deeply" in err


# ---------------------------------------------------------------- limits

def test_limits_are_stated():
    text = model_core.limits_text()
    for k, v in model_core.LIMITS.items():
        assert f"{k} {v:,}" in text


@pytest.mark.parametrize("spec", ["chain:100001", "chain:100000000", "branch:200001", "branch:1000000001",
                                  "chain:" + "9" * 5000])
def test_sized_specs_above_the_body_limit_are_refused_at_once(capsys, spec):
    import time
    t0 = time.perf_counter()
    assert run(["check", spec]) == 2
    err = capsys.readouterr().err
    assert time.perf_counter() - t0 < 2.0
    assert "above the limit of 100,000" in err and "limits: bodies 100,000" in err and "Traceback" not in err


def test_bodies_above_the_limit(work, capsys):
    """100,001 bodies (aliases of one body: a small file) are refused before any of them is validated."""
    path = work.write("bodies: [&b {name: x, mass: 1}" + ", *b" * 100_000 + "]\njoints: []\n")
    err = assert_refused(capsys, path, ["bodies"])
    assert "100,001 bodies exceed the limit of 100,000" in err


@pytest.mark.parametrize("key, build, field", [
    ("bodies", lambda n: {"bodies": [{"name": f"b{i}", "mass": 1} for i in range(n + 1)], "joints": []}, "bodies"),
    ("forces", lambda n: dict(copy.deepcopy(RIGID), forces=[{"name": f"k{i}", "type": "joint_spring_damper",
                                                              "joint": "j1"} for i in range(n + 1)]), "forces"),
    ("table_points", lambda n: set_path(RIGID, ("forces", 3, "value", "table"),
                                       {"t": list(range(n + 1)), "value": [0] * (n + 1)}), "forces[3].value.table.t"),
    ("beam_elements", lambda n: set_path(BEAM, ("beams", 2, "elements"), n), "beams[2].elements"),
    ("bodies", lambda n: dict(copy.deepcopy(BEAM), beams=[dict(BEAM["beams"][0], name=f"b{i}")
                                                          for i in range(n + 1)]), "beams"),
    ("forces", lambda n: dict(copy.deepcopy(BEAM), loads=[{"beam": "b1", "force": [0, 1]}] * (n + 1)), "loads"),
    ("name_length", lambda n: set_path(RIGID, ("name",), "x" * (n + 1)), "name"),
])
def test_limits_are_enforced(work, capsys, monkeypatch, key, build, field):
    """Each limit of LIMITS at a lowered value (a file at the real limit takes seconds to write and read)."""
    monkeypatch.setitem(model_core.LIMITS, key, 40)
    err = assert_refused(capsys, work.write(dump(build(40))), [field])
    assert "40" in err and "limits:" in err
    if key != "beam_elements":      # one below: whatever else is wrong, not the limit
        capsys.readouterr()
        run(["check", work.write(dump(build(39)))])
        assert "exceed the limit" not in capsys.readouterr().err


def test_real_limits_for_elements_names_and_tables(work, capsys):
    assert_refused(capsys, work.write(dump(set_path(BEAM, ("beams", 0, "elements"), 10 ** 12))), ["beams[0].elements"])
    assert_refused(capsys, work.write(dump(set_path(BEAM, ("beams", 0, "elements"), 100_001))), ["beams[0].elements"])
    assert_refused(capsys, work.write(dump(set_path(RIGID, ("bodies", 0, "name"), "n" * 201))), ["bodies[0].name"])
    n = model_core.LIMITS["table_points"] + 1
    text = dump(set_path(RIGID, ("forces", 3, "value", "table"), {"t": "T", "value": "V"}))
    text = text.replace("t: T", "t: [" + ", ".join(map(str, range(n))) + "]").replace("value: V", "value: [" +
                                                                                       "0, " * (n - 1) + "0]")
    err = assert_refused(capsys, work.write(text), ["forces[3].value.table.t"])
    assert "100,001 points exceed the limit of 100,000" in err


def test_yaml_node_limit_and_file_size(work, capsys, monkeypatch):
    monkeypatch.setitem(model_core.LIMITS, "yaml_nodes", 500)
    err = assert_refused(capsys, work.write(dump(set_path(RIGID, ("forces", 3, "value", "table"),
                                                         {"t": list(range(600)), "value": [0] * 600}))))
    assert "too many YAML nodes" in err
    monkeypatch.setitem(model_core.LIMITS, "file_mb", 1)
    err = assert_refused(capsys, work.write(dump(RIGID) + "#" * (2 ** 20)))
    assert "larger than 1 MB" in err


def test_duplicate_keys_are_refused_with_both_lines(work, capsys):
    """YAML and JSON loaders keep the last of two equal keys; a model file with one is refused, naming the key,
    where it is and both places. Equal keys in different mappings (every body's name) are fine."""
    text = dump(RIGID)
    assert run(["check", work.write(text)]) == 0
    lines = text.splitlines()
    k = next(i for i, ln in enumerate(lines) if ln.strip().startswith("mass:"))
    bad = "\n".join(lines[:k + 1] + [lines[k].replace("mass:", "mass: 7.0 #")] + lines[k + 1:])
    err = assert_refused(capsys, work.write(bad), ["duplicate key 'mass' at bodies["])
    assert f"(lines {k + 1} and {k + 2})" in err and "keep only the last" in err
    js = json.dumps(RIGID)
    err = assert_refused(capsys, work.write(js[:-1] + ', "name": "other"}', ".json"),
                         ["duplicate key 'name' at name (line 1, columns"])


def test_folder_and_missing_file(work, capsys):
    os.mkdir(os.path.join(work.dir, "sub.yaml"))
    capsys.readouterr()
    assert run(["check", os.path.join(work.dir, "sub.yaml")]) == 2
    err = capsys.readouterr().err
    assert "sub.yaml: cannot read: it is a folder" in err
    os.rmdir(os.path.join(work.dir, "sub.yaml"))
    assert run(["check", "no_such_model_xyz"]) == 2
    assert "no_such_model_xyz: cannot read: no such file (nor 'chain:N', 'branch:N' or a builtin" in \
        capsys.readouterr().err


def test_python_api_keeps_type_checks(tmp_path):
    """model_from_dict (the Python API) type-checks the same; the printable-name and name-length rules are for
    files (tests/compiler/test_security.py plants long names with line breaks through the API)."""
    with pytest.raises(ModelError, match=r"bodies\[0\].name: a body name must be a string"):
        codegen.model_from_dict(set_path(RIGID, ("bodies", 0, "name"), ["x"]))
    with pytest.raises(ModelError, match=r"forces\[1\].dof: expected an integer, got 1.7"):
        codegen.model_from_dict(set_path(RIGID, ("forces", 1, "dof"), 1.7))
    assert "j\n2" in [j.name for j in codegen.model_from_dict(set_path(RIGID, ("joints", 1, "name"), "j\n2")).joints]
    with pytest.raises(ModelError, match="printable"):
        codegen.model_from_dict(set_path(RIGID, ("joints", 1, "name"), "j\n2"), strict_names=True)
    assert codegen.model_from_dict(set_path(RIGID, ("joints", 1, "name"), "j" * 300)).joints[1].name == "j" * 300
    with pytest.raises(ModelError, match="at most 200 characters"):
        codegen.model_from_dict(set_path(RIGID, ("joints", 1, "name"), "j" * 300), strict_names=True)


# ---------------------------------------------------------------- the fixed corpus

CORPUS_EXPECT = {  # file -> field path the message names after the file (None: the file as a whole)
    "frame_unknown_body.yaml": "frames[0].body", "frame_name_taken.yaml": "frames[0].name",
    "frame_bad_rotation.yaml": "frames[0].rpy",
    "alias_bomb.yaml": None, "alias_bomb_merge.yaml": None, "recursive_alias.yaml": None,
    "deep_nesting.yaml": None, "deep_mapping.yaml": None, "empty.yaml": None, "comments_only.yaml": None,
    "top_level_list.yaml": None, "top_level_scalar.json": None, "invalid_json.json": None,
    "multi_document.yaml": None, "nul_byte.yaml": None, "timestamp_name.yaml": None, "huge_integer.yaml": None,
    "binary_garbage.yaml": None, "latin1.yaml": None, "utf8_then_garbage.yaml": None,
    "name_is_list.yaml": "bodies[0].name", "joint_type_is_mapping.yaml": "joints[0].type",
    "parent_is_list.yaml": "joints[0].parent", "name_control_char.yaml": "joints[0].name",
    "name_too_long.yaml": "joints[0].name", "mass_bool.yaml": "bodies[0].mass", "mass_nan.yaml": "bodies[a].mass",
    "inertia_triangle.yaml": "bodies[a].inertia", "inertia_inf.yaml": "bodies[a].inertia[1]",
    "axis_zero.yaml": "joints[j1].axis", "axis_nan.yaml": "joints[j1].axis[1]", "dof_fractional.yaml": "forces[0].dof",
    "dof_list.yaml": "forces[0].dof", "force_value_nan.yaml": "forces[0].value",
    "force_value_bool.yaml": "forces[0].value", "point_spring_inf.yaml": "forces[0].stiffness",
    "point_spring_list.yaml": "forces[0].damping", "spring_stiffness_nan.yaml": "forces[k].stiffness",
    "sine_unknown_key.yaml": "forces[0].value.sine", "step_unknown_key.yaml": "forces[0].value.step",
    "table_unknown_key.yaml": "forces[0].value.table", "table_inf.yaml": "forces[0].value.table.t[1]",
    "cycle.yaml": "joints[j1].parent", "orphan.yaml": "bodies[b]", "unknown_top_key.yaml": "<top level>",
    "integer_keys.yaml": "<top level>", "beam_huge_elements.yaml": "beams[0].elements",
    "beam_name_mapping.yaml": "beams[0].name", "beam_axis_nan.yaml": "joints[1].axis[0]",
    "beam_load_inf.yaml": "loads[0].force[1]",
    # a singular mass matrix names the joint; robot files that cannot be read say what they are
    "massless_tip.yaml": "joints[j1]", "point_mass_on_axis.yaml": "joints[j1]", "malformed.urdf": None,
    "missing_link.urdf": None, "mimic.urdf": None, "malformed_mjcf.xml": None, "not_urdf_nor_mjcf.xml": None,
}


def test_corpus_is_complete():
    assert sorted(os.listdir(CORPUS)) == sorted(CORPUS_EXPECT)


@pytest.mark.parametrize("name", sorted(CORPUS_EXPECT))
def test_corpus_file_is_refused(capsys, name):
    path = os.path.join(CORPUS, name)
    field = CORPUS_EXPECT[name]
    assert_refused(capsys, path, [field] if field else None)


# ---------------------------------------------------------------- command-line values

BAD_CLI = [  # (extra arguments of 'simulate chain:2', words of the message)
    (["--dt", "0"], "--dt must be positive"), (["--dt", "-1"], "--dt must be positive"),
    (["--dt", "nan"], "--dt must be positive and finite"), (["--dt", "inf"], "--dt must be positive and finite"),
    (["--t-end", "0"], "--t-end must be positive"), (["--t-end", "-2"], "--t-end must be positive"),
    (["--t-end", "inf"], "--t-end must be positive and finite"), (["--t-end", "nan"], "--t-end must be"),
    (["--t-end", "1e-4"], "shorter than one sample interval"), (["--dt", "3", "--t-end", "2"], "shorter than"),
    (["--dt", "1e-9"], "--max-output-mb"), (["--dt", "1e-300", "--t-end", "1e300"], "--max-output-mb"),
    (["--substeps", "0"], "--substeps must lie in [1,"), (["--substeps", "-3"], "--substeps must lie"),
    (["--substeps", "10000000000"], "--substeps must lie"),
    (["--rtol", "0"], "--rtol must lie in (0, 1)"), (["--rtol", "-1"], "--rtol must lie in (0, 1)"),
    (["--rtol", "1"], "--rtol must lie in (0, 1)"), (["--rtol", "nan"], "--rtol must lie in (0, 1)"),
    (["--atol", "0"], "--atol must be positive"), (["--atol=-1e-10"], "--atol must be positive"),
    (["--atol", "nan"], "--atol must be positive"),
    (["--hht-alpha", "0.5"], "HHT alpha must lie in [-1/3, 0]"), (["--hht-alpha", "-0.4"], "HHT alpha must lie"),
    (["--hht-alpha", "nan"], "HHT alpha must lie"),
    (["--max-output-mb", "0"], "--max-output-mb must be positive"), (["--max-output-mb", "nan"], "--max-output-mb"),
    (["--t-end", "1", "--dt", "1e-4", "--max-output-mb", "1"], "the results would take about 2 MB"),
    (["--integrator", "hht"], "only available for flexible-beam"),
]
ARGPARSE_BAD = [["--substeps", "1.5"], ["--substeps", "x"], ["--dt", "fast"], ["--algorithm", "magic"],
                ["--integrator", "verlet"], ["--ref-point", "moon"], ["--no-such-option"]]


@pytest.fixture
def cli_dirs(tmp_path):
    cache, outdir = tmp_path / "cache", tmp_path / "out"
    cache.mkdir()
    outdir.mkdir()
    yield cache, outdir
    assert list(cache.iterdir()) == [], "a build started"
    assert list(outdir.iterdir()) == [], "something was written"


@pytest.mark.parametrize("extra, words", BAD_CLI, ids=[" ".join(b[0]) for b in BAD_CLI])
def test_bad_cli_values_exit_2_before_any_build(cli_dirs, capsys, extra, words):
    cache, outdir = cli_dirs
    argv = ["simulate", "chain:2", "--quiet", "--cache-dir", str(cache), "--out", str(outdir / "r.npz")] + extra
    assert run(argv) == 2
    out, err = capsys.readouterr()
    assert err.startswith("mbgen: error: ") and words in err and err.count("\n") == 1, err
    assert "Traceback" not in out + err


@pytest.mark.parametrize("extra", ARGPARSE_BAD, ids=[" ".join(b) for b in ARGPARSE_BAD])
def test_unparsable_cli_values_exit_2(cli_dirs, capsys, extra):
    cache, outdir = cli_dirs
    assert run(["simulate", "chain:2", "--cache-dir", str(cache), "--out", str(outdir / "r.npz")] + extra) == 2
    out, err = capsys.readouterr()
    assert "error:" in err and "Traceback" not in out + err


def test_bad_out_paths_exit_2(cli_dirs, capsys):
    cache, outdir = cli_dirs
    (outdir / "folder.npz").mkdir()
    (outdir / "plain").write_text("x")
    os.mkfifo(outdir / "fifo.npz")       # a special file: atomic_write would replace it (never use /dev/null here:
    cases = [(str(outdir), "is a folder"), (str(outdir) + os.sep, "is a folder"),   # a regression would replace it)
             (str(outdir / "folder.npz"), "is a folder"), (str(outdir / "folder"), "is a folder"),
             (str(outdir / "plain" / "r.npz"), "is not a folder"), ("", "empty path"), (" ", "empty path"),
             (str(outdir / "fifo.npz"), "exists and is not a regular file"),
             (str(outdir / ("n" * 300 + ".npz")), "longer than this file system takes"),
             (str(outdir) + "/d" * 2100 + "/r.npz", "the path is longer than this file system takes")]
    if os.path.isdir("/proc/self"):        # writable for root as far as os.access knows: nothing can be created there
        cases.append(("/proc/r.npz", "cannot write into /proc"))
    for out, words in cases:
        for cmd in (["simulate", "chain:2"], ["source", "chain:2"]):
            if cmd[0] == "source" and out == str(outdir / "folder"):
                continue                 # a valid file name for source
            argv = cmd + ["--cache-dir", str(cache)] * (cmd[0] != "source") + ["--out", out]   # source builds nothing
            assert run(argv) == 2, argv
            err = capsys.readouterr().err
            assert "--out" in err and words in err and "Traceback" not in err, (argv, err)
    assert (outdir / "plain").read_text() == "x" and (outdir / "folder.npz").is_dir()
    (outdir / "folder.npz").rmdir()
    (outdir / "plain").unlink()
    (outdir / "fifo.npz").unlink()


@pytest.mark.parametrize("spec, words", [
    ("chain:100000000", "above the limit"), ("branch:999999999", "above the limit"), ("chain:", "expected an integer"),
    ("chain:x", "expected an integer"), ("chain:0", "positive integer"), ("branch:12", "odd N"),
    ("no_such_builtin", "cannot read: no such file"),
])
@pytest.mark.parametrize("cmd", ["build", "simulate"])
def test_bad_model_names_exit_2_before_any_build(cli_dirs, capsys, cmd, spec, words):
    cache, outdir = cli_dirs
    argv = [cmd, spec, "--quiet", "--cache-dir", str(cache)] + (["--out", str(outdir / "r.npz")] if cmd == "simulate"
                                                                 else [])
    assert run(argv) == 2
    err = capsys.readouterr().err
    assert words in err and "Traceback" not in err and err.count("\n") == 1, err


def test_bad_model_file_exits_2_before_any_build(cli_dirs, capsys):
    cache, outdir = cli_dirs
    for name in ("alias_bomb.yaml", "dof_fractional.yaml", "binary_garbage.yaml"):
        path = os.path.join(CORPUS, name)
        assert run(["simulate", path, "--quiet", "--cache-dir", str(cache), "--out", str(outdir / "r.npz")]) == 2
        assert capsys.readouterr().err.startswith(f"mbgen: error: {path}: ")


@pytest.mark.parametrize("path, value, field", [
    (("bodies", 0, "mass"), 1e308, "mass"), (("bodies", 0, "mass"), 1e-320, "mass"),
    (("bodies", 0, "com"), [1e300, 0, 0], "com"), (("bodies", 0, "inertia"), [1e-310, 1e-310, 1e-310], "inertia"),
])
def test_numbers_that_leave_double_precision_are_refused(work, capsys, path, value, field):
    """A mass of 1e308 or a length of 1e300 would overflow the physics (a NaN run, or a linear-algebra error
    naming nothing): refused before any build, naming the field; zero (massless, at the origin) is fine."""
    err = assert_refused(capsys, work.write(dump(set_path(RIGID, path, value))), ["bodies["])
    assert f".{field}: " in err and "outside the range of a physical model" in err


@pytest.mark.parametrize("key, value", [("length", 1e300), ("length", 1e-300), ("E", 1e308), ("A", 1e-310),
                                        ("I", 1e-310), ("rho", 1e308)])
def test_beam_numbers_that_leave_double_precision_are_refused(work, capsys, key, value):
    err = assert_refused(capsys, work.write(dump(set_path(BEAM, ("beams", 0, key), value))), [f"beams[0].{key}: "])
    assert "would leave double precision" in err
