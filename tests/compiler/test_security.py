"""Generated code is safe: no string of a model file ever runs (issue: names run as code).

Every string field of a model (model, body, joint and force names) is planted with payloads that try to
leave a comment line of the generated Cython (newlines, carriage returns, triple quotes, C comment
closers, jinja delimiters, __import__ calls). Nothing may run, every line of the source that carries a
payload must be a comment, the kernel must build, and its numbers must equal the genuine model's.
"""
import copy
import os

import numpy as np
import pytest
import yaml

import codegen
from codegen.compiler import comment, generated_source
from codegen.cli import main, safe_stem

from support.systems import get_system
from support.systems import EXAMPLES

MARK = "PWNED_MARKER"


def payloads(flag):
    run = f"__import__('pathlib').Path({str(flag)!r}).write_text('ran')"
    return [
        f"x\n{run}  # {MARK}",
        f"x\r{run}  # {MARK}",
        f"x\r\n{run}\n# {MARK}",
        f"x\"\"\"\n{run}\n\"\"\"{MARK}",
        f"x'''\n{run}\n'''{MARK}",
        f"x */ int {MARK}_c = 1; /* \n{run}",
        "x {{ 7*7 }} {% if 1 %}" + MARK + "{% endif %}\n" + run,
        f"x\u2028\u2029\x0b\x0c\x85{run}\x00{MARK}",
        f"{MARK}\\\n{run}",
    ]


RIGID = {
    "name": "safe",
    "bodies": [{"name": "a", "mass": 1.0, "com": [0.5, 0, 0], "inertia": [0.01, 0.1, 0.1]},
               {"name": "b", "mass": 2.0, "inertia": [[0.2, 0, 0], [0, 0.2, 0], [0, 0, 0.1]]}],
    "joints": [{"name": "j1", "type": "revolute", "parent": "ground", "child": "a", "axis": [0, 0, 1]},
               {"name": "j2", "type": "revolute", "parent": "a", "child": "b", "axis": [0, 1, 0],
                "parent_frame": {"pos": [1, 0, 0]}, "q0": 0.4}],
    "forces": [{"name": "k1", "type": "joint_spring_damper", "joint": "j1", "stiffness": 3.0, "damping": 0.1},
               {"name": "f1", "type": "joint_force", "joint": "j1", "value": {"sine": {"amplitude": 1, "frequency": 2}}},
               {"name": "f2", "type": "joint_force", "joint": "j2",
                "value": {"table": {"t": [0, 1], "value": [0.5, -0.5]}}},
               {"name": "p1", "type": "point_spring_damper", "body_a": "ground", "body_b": "b",
                "point_b": [0, 0, 0.1], "stiffness": 10, "length": 0.5}],
}


def planted_rigid(payload):
    d = copy.deepcopy(RIGID)
    rename = {"a": "a" + payload, "b": "b" + payload}          # bodies are referenced by name
    d["name"] = "m" + payload
    for b in d["bodies"]:
        b["name"] = rename[b["name"]]
    for k, j in enumerate(d["joints"]):
        j["name"] = f"j{k}" + payload
        j["child"] = rename[j["child"]]
        j["parent"] = rename.get(j["parent"], j["parent"])
    joint_names = {"j1": d["joints"][0]["name"], "j2": d["joints"][1]["name"]}
    for k, f in enumerate(d["forces"]):
        f["name"] = f"f{k}" + payload
        if "joint" in f:
            f["joint"] = joint_names[f["joint"]]
        if "body_b" in f:
            f["body_b"] = rename[f["body_b"]]
    return d


def assert_only_in_comments(src, payload):
    """Every piece of the payload in the generated source sits behind the '#' of a comment (a line comment or a
    trailing one after our own code)."""
    for line in src.splitlines():
        if MARK in line or "pathlib" in line:
            code = line.split("#", 1)[0]
            assert "#" in line and MARK not in code and "pathlib" not in code, f"user text outside a comment: {line!r}"


def test_comment_filter_keeps_one_printable_line():
    for p in payloads("/nonexistent"):
        c = comment(p)
        assert "\n" not in c and "\r" not in c and "*/" not in c and "/*" not in c
        assert all(" " <= ch <= "~" for ch in c)


@pytest.mark.build
@pytest.mark.parametrize("algorithm", ["recursive", "dense", "mstmm"])
def test_planted_names_never_run(tmp_path, algorithm):
    flag = tmp_path / "ran.txt"
    genuine = codegen.model_from_dict(copy.deepcopy(RIGID))
    ref = get_system(genuine)                      # the genuine numbers (every family agrees to round-off)
    rng = np.random.default_rng(1)
    q, u = rng.normal(size=genuine.nq), rng.normal(size=genuine.nv)
    a_ref = ref.forward_dynamics(q, u, None, 0.3)
    for payload in payloads(flag):
        m = codegen.model_from_dict(planted_rigid(payload))
        src = generated_source(m, algorithm)
        assert_only_in_comments(src, payload)
        assert not flag.exists()
    # one full build and run of the most hostile payload: nothing runs, the numbers are the genuine ones (one family:
    # the loader, the compiler and the runtime treat every family's names alike; the source check above is per family)
    for payload in payloads(flag)[:1 if algorithm == "recursive" else 0]:
        s = get_system(codegen.model_from_dict(planted_rigid(payload)), algorithm)
        np.testing.assert_allclose(s.forward_dynamics(q, u, None, 0.3), a_ref, rtol=1e-11, atol=1e-12)
        assert not flag.exists()


def test_model_name_is_part_of_the_build_key():
    """A hostile name cannot poison the cache entry of the genuine model (names key the build)."""
    from codegen.compiler import build_key, resolve_options
    opts = resolve_options("recursive")
    genuine = codegen.model_from_dict(copy.deepcopy(RIGID))
    renamed = codegen.model_from_dict(dict(copy.deepcopy(RIGID), name="other"))
    assert build_key(genuine, "recursive", opts) != build_key(renamed, "recursive", opts)


def test_planted_beam_names_never_run(tmp_path):
    flag = tmp_path / "ran.txt"
    base = yaml.safe_load(open(os.path.join(EXAMPLES,
                                            "flexible_pendulum.yaml")))
    for payload in payloads(flag):
        d = copy.deepcopy(base)
        ren = {b["name"]: b["name"] + payload for b in d["beams"]}
        d["name"] = "m" + payload
        for b in d["beams"]:
            b["name"] = ren[b["name"]]
        for j in d["joints"]:
            j["name"] += payload
            j["child"] = ren[j["child"]]
            j["parent"] = ren.get(j["parent"], j["parent"])
        assert_only_in_comments(generated_source(_beam(d), "rancf"), payload)
    assert not flag.exists()


def _beam(d):
    from codegen.model import beam_model_from_dict
    return beam_model_from_dict(d, source="<planted>")


@pytest.mark.build
def test_default_output_name_is_sanitised(tmp_path, monkeypatch):
    for name in ["/etc/passwd", "../../x", "..", "a/b\\c", "", "\n", "ok_name-1.2"]:
        stem = safe_stem(name)
        assert stem and "/" not in stem and "\\" not in stem and ".." not in stem and not stem.startswith(".")
    assert safe_stem("ok_name-1.2") == "ok_name-1.2"
    d = copy.deepcopy(RIGID)
    d["name"] = "../../escaped"
    f = tmp_path / "m.yaml"
    f.write_text(yaml.safe_dump(d))
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    assert main(["simulate", str(f), "--t-end", "0.01", "--dt", "0.005", "--quiet"]) == 0
    assert [p.name for p in (work / "results").iterdir()] == ["____escaped.npz"]
    assert not (tmp_path / "escaped.npz").exists()


def test_yaml_is_read_with_the_safe_loader(tmp_path):
    f = tmp_path / "evil.yaml"
    f.write_text("!!python/object/apply:os.system ['echo hacked > %s']\n" % (tmp_path / "ran.txt"))
    with pytest.raises(codegen.ModelError):
        codegen.load_model(str(f))
    assert not (tmp_path / "ran.txt").exists()


def test_results_never_replace_a_special_file(tmp_path):
    """Writing results over /dev/null (or any non-regular file) is refused, never a rename over it."""
    from codegen.runtime import atomic_write
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    for target in (fifo, tmp_path):
        with pytest.raises(ValueError, match="not a regular file"):
            atomic_write(str(target), lambda fh: fh.write(b"x"))
    assert fifo.exists() and not fifo.is_file()
    assert os.path.exists("/dev/null") and not os.path.isfile("/dev/null")


def test_planted_cut_joint_names_stay_in_comments(tmp_path):
    """The names of a closed-loop model (cut joints included) reach the source only inside comments."""
    from support.systems import EXAMPLES
    flag = tmp_path / "ran.txt"
    d = codegen.load_model(str(EXAMPLES / "five_bar.yaml")).to_dict()
    for payload in payloads(flag):
        e = copy.deepcopy(d)
        e["name"], e["loops"][0]["name"] = "m" + payload, "q5" + payload
        src = generated_source(codegen.model_from_dict(e), "recursive")
        assert_only_in_comments(src, payload)
        assert not flag.exists()


def test_cython_error_report_leaves_dev_null_alone(tmp_path):
    """A failed build re-runs Cython for its error report; Cython deletes its output file on errors, so that output
    must never be os.devnull (as root the run unlinked /dev/null and the next writer made it a regular file)."""
    import stat
    from codegen.compiler.cache import _cython_errors
    bad = tmp_path / "bad.pyx"
    bad.write_text("cdef int x = undefined_name\n")
    report = _cython_errors(bad)
    assert "undefined_name" in report
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode)
