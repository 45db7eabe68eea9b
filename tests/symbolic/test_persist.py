"""Derivations kept between processes (codegen.symbolic.persist, stored by codegen.compiler.cache.DerivedStore).

A derivation stored once is read back, not derived again (the derivation itself is made to fail); a damaged,
foreign or other-version file is not used; the stored text equals the derived text; `mbgen cache clean` removes
the store with the entries."""
import json
import os

import pytest

from codegen.compiler.cache import DerivedStore
from codegen.compiler.housekeeping import clean_cache
from codegen.symbolic import joints, persist
from codegen.symbolic.articulated import KernelCode, kernel_code
from codegen.symbolic.body_kernels import _code
from codegen.symbolic.pattern import Pattern


@pytest.fixture
def store(tmp_path):
    s = DerivedStore(tmp_path)
    persist.install(s)
    yield s
    persist.install(None)


def _fresh(*fns):
    for f in fns:
        f.cache_clear()                  # the in-memory copy: as in a new process


def _fail(*a, **k):
    raise AssertionError("derived again")


def test_a_stored_derivation_is_read_back_not_derived(store, monkeypatch):
    _fresh(joints.jcalc_code)
    first = joints.jcalc_code("universal")
    files = sorted(os.listdir(store.folder))
    assert len(files) == 1 and files[0].startswith(persist.fingerprint())
    _fresh(joints.jcalc_code)
    monkeypatch.setattr(joints, "joint_model", _fail)
    assert joints.jcalc_code("universal") == first                    # tuples and dicts come back as they were
    with pytest.raises(AssertionError, match="derived again"):
        joints.jcalc_code("planar")                                   # another argument: another file


def test_printed_kernels_come_back_equal(store):
    p = Pattern("spherical", False, False, (True, False, True))
    _fresh(_code)
    k = _code("kin", p, False)
    _fresh(_code)
    back = _code("kin", p, False)
    assert isinstance(back, KernelCode) and back == k and back.lines and isinstance(back.lines, tuple)
    assert kernel_code("D_term", "centroid") == kernel_code("D_term", "centroid")


@pytest.mark.parametrize("damage", ["garbage", "other-call", "writable-by-others"])
def test_a_damaged_or_foreign_file_is_derived_again(store, damage):
    _fresh(joints.jcalc_code)
    good = joints.jcalc_code("cylindrical")
    path = store.folder / os.listdir(store.folder)[0]
    if damage == "garbage":
        path.write_bytes(b"\x00{not json")
    elif damage == "other-call":
        path.write_text(json.dumps({"call": "something else", "result": "x"}))
    else:
        path.write_text(path.read_text().replace("=", "= 1 +"))      # planted code that must not reach a module
        os.chmod(path, 0o666)
    _fresh(joints.jcalc_code)
    assert joints.jcalc_code("cylindrical") == good
    if damage != "writable-by-others":                                 # stored over the damaged file
        assert json.loads(path.read_text())["result"]


def test_clean_removes_the_store(store):
    _fresh(joints.jcalc_code)
    joints.jcalc_code("prismatic")
    assert os.listdir(store.folder)
    done = clean_cache(store.folder.parent)
    assert done["derived"] == 1 and not store.folder.exists()
