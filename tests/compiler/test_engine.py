"""The run-time engine compiled once (codegen/compiler/engine.pyx): every model's kernel class derives from it."""
import numpy as np
import pytest

import codegen
from codegen.compiler import engine_build
from codegen.compiler.engine_source import MODULE, interface_hash, source_hash


def test_engine_codes_are_generated_from_codes_py():
    """engine_codes.pxi is codegen.algorithms.codes rendered as every module renders it (regenerate:
    python -m codegen.compiler.engine_build)."""
    assert engine_build.CODES_FILE.read_text() == engine_build.codes_source()


def test_engine_interface_is_in_the_build_key(monkeypatch):
    from codegen.compiler import key
    m = codegen.models.chain(2)
    k0 = key.build_key(m, "recursive", {"ref_point": "centroid"})
    monkeypatch.setattr(key, "interface_hash", lambda: "another")
    assert key.build_key(m, "recursive", {"ref_point": "centroid"}) != k0
    assert len(interface_hash()) == 16


@pytest.mark.build
def test_engine_built_once_into_a_cache(tmp_path):
    """Without the package's extension (a source checkout) or with a stale one: one build into the cache,
    reused, carrying its source hash."""
    mod = engine_build._cached(tmp_path)
    (so,) = tmp_path.glob("engine-*/engine*.so")
    stamp = so.stat().st_mtime_ns
    assert mod.SOURCE == source_hash() and mod.__name__ == MODULE
    assert engine_build._cached(tmp_path).SOURCE == source_hash() and so.stat().st_mtime_ns == stamp
    from codegen.compiler.housekeeping import cache_entries
    assert [e["module"] for e in cache_entries(tmp_path)] == [MODULE]    # mbgen cache info | clean see it


@pytest.mark.build
def test_kernels_derive_from_the_engine():
    """The integrators a run uses are the engine's: the model's class overrides only the model's methods."""
    import sys
    s = codegen.build(codegen.models.chain(3))
    eng = sys.modules[MODULE]
    k = s.kernel
    assert isinstance(k, eng.Engine) and type(k) is not eng.Engine
    for name in ("run_rk4", "run_dopri5", "raise_pending"):
        assert name not in type(k).__dict__ and name in eng.Engine.__dict__
    x = np.zeros(6)
    x[0] = 0.5
    X, nok = k.run_rk4(0.0, x, 1e-3, 5)
    assert nok == 5 and np.isfinite(X).all() and X[-1, 0] < 0.5     # it falls


def test_engine_of_an_installed_copy_with_the_same_source(tmp_path, monkeypatch):
    """A source checkout run where `pip install .` built the package (CI runs the tests so) uses that build of the
    engine when its sources hash as the checkout's, and never a build of other sources."""
    import shutil
    import sys
    from codegen.compiler.engine_source import ENGINE_DIR, ENGINE_FILES
    from codegen.compiler.entries import _ext_suffix
    folder = tmp_path / "site" / "codegen" / "compiler"
    folder.mkdir(parents=True)
    for name in ENGINE_FILES:
        shutil.copyfile(ENGINE_DIR / name, folder / name)
    so = folder / ("engine" + _ext_suffix())
    so.write_bytes(b"")
    monkeypatch.setattr(sys, "path", [str(ENGINE_DIR.parent.parent), str(tmp_path / "site")])
    assert engine_build._installed() == so
    (folder / "engine.pyx").write_text((ENGINE_DIR / "engine.pyx").read_text() + "\n# edited\n")
    assert engine_build._installed() is None                     # other sources: built into the cache instead
    so.unlink()
    (folder / "engine.pyx").write_text((ENGINE_DIR / "engine.pyx").read_text())
    assert engine_build._installed() is None                     # sources without a build


def test_no_module_template_redefines_an_engine_method():
    """A model's module overrides only the model's methods of engine.pxd (rhs ... tree_acc); a template that defines
    another engine method's name breaks every build (Cython: "Signature not compatible") or, for a Python method,
    silently replaces the engine's. Every cdef and def name of the engine's own against every template."""
    import re
    from pathlib import Path
    ROOT = Path(codegen.__file__).resolve().parent.parent
    src = ROOT / "codegen" / "compiler"
    pxd = (src / "engine.pxd").read_text()
    ours = set(re.findall(r"^\s+cdef\s+[\w\s\*]+?\b(\w+)\(self", pxd, re.M))
    for f in ("engine.pyx", "engine_kinematics.pxi"):
        ours |= set(re.findall(r"^    def (\w+)\(self", (src / f).read_text(), re.M))
    section = pxd.split("the model's methods (its module overrides)")[1].split("# ----")[0]   # engine.pxd says
    model = set(re.findall(r"cdef\s+[\w\s\*]+?\b(\w+)\(self", section)) | {"tree_kin", "tree_acc", "__cinit__",
                                                                         "__dealloc__", "__init__"}
    assert {"rhs", "step_matrices", "tangent_jacobian"} <= model
    assert {"frame_placement", "column_dot", "rk4", "init_tree"} <= ours
    clashes = []
    for t in (ROOT / "templates").rglob("*.j2"):
        for name in re.findall(r"^\s+c?p?def\s+(?:[\w\s\*]+?\s)?(\w+)\(self", t.read_text(), re.M):
            if name in ours - model:
                clashes.append(f"{t.relative_to(ROOT)}: {name}")
    assert not clashes, clashes
