"""The published JSON Schema of model files: a valid draft 2020-12 schema, printed by `mbgen schema`, the same
keys as the loader, every shipped example valid, structural faults worded with file, field and what was expected,
the fast paths equal to plain jsonschema, and docs/model-format.md generated from it."""
import copy
import glob
import json
import random

import jsonschema
import pytest
import yaml

from codegen.cli import main
from codegen.model import ModelError, beams, loader
from codegen.model.checks import LIMITS
from codegen.model.core import JOINT_TYPES
from codegen.model.loader import read_model_file
from codegen.model.schema import RANGE_KEYWORDS, _accepts, _validator, check_schema, model_schema
from codegen.model.schema_doc import reference_markdown
from codegen.model.simulation import SIMULATION_KEYS
from support.systems import EXAMPLES, ROOT

SCHEMA = model_schema()
RIGID = SCHEMA["$defs"]["rigid_model"]
BEAM = SCHEMA["$defs"]["beam_model"]
PLAIN = jsonschema.Draft202012Validator(SCHEMA)
SHIPPED = sorted(glob.glob(str(EXAMPLES / "*.yaml")))


def test_schema_is_valid_and_printed(capsys):
    jsonschema.Draft202012Validator.check_schema(SCHEMA)
    assert main(["schema"]) == 0
    assert json.loads(capsys.readouterr().out) == json.loads(json.dumps(SCHEMA))


def test_schema_keys_are_the_loaders():
    """One definition: the schema knows exactly the keys the loader reads (a drift fails here)."""
    def props(s):
        return set(s["properties"])

    items = {k: RIGID["properties"][k]["items"] for k in ("bodies", "joints", "forces")}
    assert props(RIGID) == loader._TOP_KEYS
    assert props(items["bodies"]) == loader._BODY_KEYS and props(items["joints"]) == loader._JOINT_KEYS
    assert props(items["joints"]["properties"]["parent_frame"]) == {"pos", "rpy", "quat", "matrix", "axis_angle"}
    for rule in items["forces"]["allOf"]:
        kind = rule["if"]["properties"]["type"]["const"]
        assert set(rule["then"]["properties"]) == loader._FORCE_KEYS[kind], kind
    value = items["forces"]["allOf"][2]["then"]["properties"]["value"]["then"]["properties"]
    assert {k: set(v["properties"]) for k, v in value.items() if "properties" in v} == loader._FUNCTION_KEYS
    assert items["joints"]["properties"]["type"]["enum"] == list(JOINT_TYPES)
    assert props(BEAM) == beams._TOP and props(BEAM["properties"]["beams"]["items"]) == beams._BEAM
    assert props(BEAM["properties"]["joints"]["items"]) == beams._JOINT
    assert props(BEAM["properties"]["loads"]["items"]) == beams._LOAD
    assert props(SCHEMA["$defs"]["simulation"]) == set(SIMULATION_KEYS)
    assert RIGID["properties"]["bodies"]["maxItems"] == LIMITS["bodies"]


@pytest.mark.parametrize("path", SHIPPED, ids=[p.rsplit("/", 1)[-1] for p in SHIPPED])
def test_shipped_examples_validate(path):
    d = read_model_file(path)
    assert list(PLAIN.iter_errors(d)) == []
    check_schema(d, path)


def _rigid():
    return read_model_file(str(EXAMPLES / "arm7.yaml"))


FAULTS = [  # (mutation of arm7.yaml, field path, words of the message)
    (lambda d: d["bodies"][1].update(com="abc"), "bodies[1].com", "expected a list of 3 numbers, got 'abc'"),
    (lambda d: d["bodies"][1].update(inertia=[1, "x", 3]), "bodies[1].inertia[1]", "expected a number, got 'x'"),
    (lambda d: d["bodies"][0].update(mass=True), "bodies[0].mass", "expected a number >= 0, got True"),
    (lambda d: d["bodies"][2].pop("mass"), "bodies[2].mass", "missing"),
    (lambda d: d["bodies"][2].update(colour="red"), "bodies[2]", "unknown keys ['colour'] (allowed: ['com', 'inertia',"),
    (lambda d: d["joints"][3].update(type="hinge"), "joints[3].type", "unknown joint type 'hinge' (known: revolute,"),
    (lambda d: d["joints"][0].update(q0=[0.1, 0.2]), "joints[0].q0", "expected a number or a list of 1 number"),
    (lambda d: d["joints"][1].update(parent_frame={"pos": [0, 0]}), "joints[1].parent_frame.pos",
     "expected a list of 3 numbers, got [0, 0]"),
    (lambda d: d["joints"][1].update(parent_frame={"matrix": [[1, 0, 0], [0, 1]]}), "joints[1].parent_frame.matrix",
     "expected a 3x3 matrix"),
    (lambda d: d["forces"][0].update(type="magnet"), "forces[0].type", "unknown force type 'magnet'"),
    (lambda d: d["forces"][0].pop("joint"), "forces[0].joint", "missing"),
    (lambda d: d.update(gravity=[0, -9.81]), "gravity", "expected a list of 3 numbers, got [0, -9.81]"),
    (lambda d: d.update(simulation={"integrator": "verlet"}), "simulation.integrator", "expected one of rk4, dopri5, euler"),
    (lambda d: d["bodies"][0].update(name="n" * 201), "bodies[0].name", "a name is at most 200 characters, got 201"),
    (lambda d: d.update(forces=[{"name": "f", "type": "joint_force", "joint": "a1", "value": {"ramp": 1}}]),
     "forces[0].value", "expected one of ('constant', 'sine', 'step', 'table') (a mapping with one key) or a number"),
]


@pytest.mark.parametrize("mutate, field, words", FAULTS, ids=[f[1] for f in FAULTS])
def test_structural_faults_name_file_field_and_expectation(tmp_path, capsys, mutate, field, words):
    d = _rigid()
    mutate(d)
    assert list(PLAIN.iter_errors(d)), "plain jsonschema must refuse it too"
    with pytest.raises(ModelError) as e:
        check_schema(d, "robot.yaml")
    assert str(e.value).startswith(f"robot.yaml: {field}: {words}"), str(e.value)
    f = tmp_path / "robot.yaml"                                  # the same through the command line
    f.write_text(yaml.safe_dump(d))
    assert main(["check", str(f)]) == 2
    assert capsys.readouterr().err.startswith(f"mbgen: error: {f}: {field}: ")


def test_yaml_11_numbers_and_ranges_left_to_the_semantic_checks(tmp_path, capsys):
    d = _rigid()
    d["bodies"][0]["mass"] = "4e-4"                              # a string in YAML 1.1: accepted
    check_schema(d, "x.yaml")
    d["bodies"][0]["mass"] = -1.0                                # a range fault: worded by the semantic check
    check_schema(d, "x.yaml")
    f = tmp_path / "x.yaml"
    f.write_text(yaml.safe_dump(d))
    assert main(["check", str(f)]) == 2
    assert "bodies[link1].mass: mass must be non-negative, got -1" in capsys.readouterr().err


def test_fast_path_agrees_with_plain_jsonschema():
    """The validator skips values that _decide() settles; on valid and broken files it must agree with
    jsonschema's own Draft 2020-12 validator."""
    docs = [read_model_file(p) for p in SHIPPED]
    base = _rigid()
    for mutate, _, _ in FAULTS:
        d = copy.deepcopy(base)
        mutate(d)
        docs.append(d)
    beam = read_model_file(str(EXAMPLES / "flexible_pendulum.yaml"))
    for k, v in (("E", "stiff"), ("elements", 2.5), ("elements", "3"), ("name", 7), ("angle", None)):
        d = copy.deepcopy(beam)
        d["beams"][0][k] = v
        docs.append(d)
    d = copy.deepcopy(base)
    d["bodies"][0]["mass"], d["simulation"] = -1.0, {"dt": 0}   # range faults: not reported by the fast path
    docs.append(d)
    failing = 0
    for d in docs:
        fast = sorted((list(map(str, e.absolute_path)), e.validator) for e in _validator().iter_errors(d))
        plain = sorted((list(map(str, e.absolute_path)), e.validator) for e in PLAIN.iter_errors(d)
                       if e.validator not in RANGE_KEYWORDS)
        assert fast == plain, (fast, plain)
        failing += bool(plain)
    assert failing == len(FAULTS) + 4           # the beam cases but elements "3" (it reads as 3)


def _leaves(d, path=()):
    """(path, value) of every value of a document, containers included."""
    yield path, d
    items = d.items() if isinstance(d, dict) else enumerate(d) if isinstance(d, list) else ()
    for k, v in items:
        yield from _leaves(v, path + (k,))


def _mutants(doc, n, seed):
    """n copies of doc, each with one value replaced, one key removed or one unknown key added."""
    rng = random.Random(seed)
    pool = [None, True, False, 0, 1, -1, 2.5, -1e-9, float("nan"), "x", "", "3", "4e-4", "revolute", "rk4", [], [1, 2],
            [0.0, 0.0, 0.0], [[1, 0, 0], [0, 1, 0], [0, 0, 1]], {}, {"constant": 1}, {"ramp": 1}, "n" * 201]
    paths = [p for p, _ in _leaves(doc) if p]
    for _ in range(n):
        d = copy.deepcopy(doc)
        path = rng.choice(paths)
        parent = d
        for k in path[:-1]:
            parent = parent[k]
        what = rng.random()
        if what < 0.7:
            parent[path[-1]] = copy.deepcopy(rng.choice(pool))
        elif what < 0.85:
            del parent[path[-1]]
        elif isinstance(parent, dict):
            parent["colour"] = "red"
        yield d


def test_valid_file_fast_path_is_exact():
    """check_schema skips jsonschema when _accepts() says True: that must mean plain jsonschema finds nothing
    at all (value ranges included), and False that it finds something; every shipped example takes it."""
    schema = model_schema()
    docs = [read_model_file(p) for p in SHIPPED]
    for d in docs:
        assert _accepts(schema, d, schema) is True
    seen = {True: 0, False: 0, None: 0}
    for k, base in enumerate([_rigid(), read_model_file(str(EXAMPLES / "flexible_pendulum.yaml")),
                              read_model_file(str(EXAMPLES / "five_bar.yaml")),
                              read_model_file(str(EXAMPLES / "quarter_car.yaml"))]):
        for d in _mutants(base, 100, seed=k):
            verdict = _accepts(schema, d, schema)
            seen[verdict] += 1
            errors = list(PLAIN.iter_errors(d))
            if verdict is True:
                assert errors == [], [e.message for e in errors]
            elif verdict is False:
                assert errors, "the fast path refuses a file that jsonschema accepts"
    assert seen[True] > 50 and seen[False] > 50, seen


def test_reference_page_is_up_to_date(capsys):
    page = (ROOT / "docs" / "model-format.md").read_text()
    assert page == reference_markdown(), "regenerate: mbgen schema --markdown > docs/model-format.md"
    assert main(["schema", "--markdown"]) == 0 and capsys.readouterr().out == page
    for key in ("`bodies[]`", "`joints[]`", "`forces[]`", "`simulation`", "`beams[]`", "`loads[]`", "| `free` |"):
        assert key in page
