"""Generation and the build cache: content-hash keys, hits, atomic concurrent builds, generated header."""
import json
import os
import subprocess
import sys

import numpy as np
import pytest

import codegen
from codegen.compiler import build_key, generated_source, resolve_options
from support.systems import get_system


def test_key_depends_on_topology_and_options_not_numbers():
    a = codegen.models.chain(4)
    b = codegen.models.chain(4, m=3.0, L=0.2, theta0=1.0)
    c = codegen.models.chain(5)
    o = resolve_options("recursive", ref_point="origin")
    assert build_key(a, "recursive", o) == build_key(b, "recursive", o)
    assert build_key(a, "recursive", o) != build_key(c, "recursive", o)
    assert build_key(a, "recursive", o) != build_key(a, "recursive", resolve_options("recursive"))
    assert build_key(a, "recursive", o) != build_key(a, "dense", resolve_options("dense"))


@pytest.mark.build
def test_lanes_switch_is_in_the_key_and_test_builds_have_no_lanes(monkeypatch):
    """MBGEN_LANES=0 (the suite's setting, tests/conftest.py) builds recursive modules without their lanes, under
    another key: such a module runs its batches one state per pass (System.lanes 1)."""
    assert os.environ["MBGEN_LANES"] == "0"
    assert get_system(codegen.models.chain(5), ref_point="joint").lanes == 1       # (built by other tests too)
    a, o = codegen.models.chain(4), resolve_options("recursive", ref_point="origin")
    k0 = build_key(a, "recursive", o)
    monkeypatch.setenv("MBGEN_LANES", "1")
    assert build_key(a, "recursive", o) != k0
    monkeypatch.delenv("MBGEN_LANES")                        # the default: with lanes
    assert build_key(a, "recursive", o) != k0


def test_key_names_the_processor_the_kernels_are_tuned_for():
    """Kernels are compiled with -march=native: the processor is in the key, so a cache shared by machines of
    different kinds never loads code for another one; MBGEN_NATIVE=0 gives a portable build (another key)."""
    code = ("import codegen, sys; from codegen.compiler import build_key, resolve_options, cache;"
            "print(build_key(codegen.models.chain(4), 'recursive', resolve_options('recursive')),"
            " cache.cpu_fingerprint(), cache.native_flags())")
    out = {}
    for native in ("1", "0"):
        env = dict(os.environ, MBGEN_NATIVE=native)
        out[native] = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                                     check=True).stdout.split(maxsplit=2)
    assert out["0"][1] == "portable" and out["0"][2].strip() == "[]"
    assert out["1"][1] != "portable" and out["1"][0] != out["0"][0]
    assert out["1"][2].strip() in ("['-march=native']", "[]")      # [] only for a compiler that refuses it


@pytest.mark.build
def test_test_builds_at_Og_agree_with_O3(monkeypatch):
    """The suite compiles at -Og (MBGEN_OPT=g, set by conftest), users' kernels at -O3: the same model gives two keys
    and the same numbers to round-off (forces, springs, every joint type); a level gcc does not have is refused."""
    from codegen.compiler import cache
    assert cache.opt_flags() == ["-Og"]
    m = codegen.models.random_tree(6, seed=4, floating=True, forces=True)
    fast = get_system(m, ref_point="origin")
    monkeypatch.setenv("MBGEN_OPT", "3")
    assert cache.opt_flags() == ["-O3"]
    full = codegen.build(m, ref_point="origin")
    assert full.build_info["key"] != fast.build_info["key"] and not full.build_info["hit"]
    rng = np.random.default_rng(5)
    for _ in range(5):
        q, u = codegen.models.random_state(m, rng)
        tau = rng.normal(size=m.nv)
        a = full.forward_dynamics(q, u, tau)
        assert np.abs(fast.forward_dynamics(q, u, tau) - a).max() <= 1e-12 * np.abs(a).max()
        t = full.inverse_dynamics(q, u, a)
        assert np.abs(fast.inverse_dynamics(q, u, a) - t).max() <= 1e-12 * np.abs(t).max()
    monkeypatch.setenv("MBGEN_OPT", "4")
    with pytest.raises(ValueError, match=r"MBGEN_OPT must be one of 0, 1, 2, 3, g, s .*'4'"):
        cache.opt_flags()


@pytest.mark.build
def test_family_cflags_reach_the_compiler_if_it_takes_them(monkeypatch, tmp_path):
    """A family's own C flags (mstmm: gcc's inliner limits) go into its modules' compile; a flag the compiler refuses
    is dropped, not an error; the other families add none."""
    from codegen.algorithms import family
    from codegen.compiler import cache
    flags = family("mstmm").cflags
    assert flags and all(f.startswith("--param=") for f in flags)
    assert cache.accepted_flags(flags + ("-fno-such-flag-xyz",)) == list(flags)
    assert family("recursive").cflags == ()
    seen = []
    monkeypatch.setattr(cache, "_compile", lambda *a, cflags=(), **k: seen.append(list(cflags)) or 1 / 0)
    m = codegen.models.chain(3)
    for alg in ("mstmm", "recursive"):
        with pytest.raises(Exception):
            codegen.build(m, alg, cache_dir=str(tmp_path / alg))
    assert seen == [list(flags), []]


@pytest.mark.build
def test_cache_hit_reuses_module():
    m = codegen.load_model("examples/balance_pendulum.yaml")
    first = get_system(m, ref_point="centroid")
    again = codegen.build(codegen.models.balance_pendulum(), ref_point="centroid")
    assert again.build_info["hit"] and again.build_info["key"] == first.build_info["key"]   # no compiler run
    folder = os.path.dirname(again.build_info["path"])
    files = sorted(os.listdir(folder))
    assert any(f.endswith(".pyx") for f in files) and any(f.endswith(".c") for f in files)
    assert json.load(open(os.path.join(folder, "build.json")))["key"] == first.build_info["key"]


@pytest.mark.build
def test_concurrent_builds_of_one_model_are_safe(tmp_path):
    """Two processes build the same new model into an empty cache at once: both succeed, one folder."""
    code = ("import codegen, sys; m = codegen.models.chain(2, m=float(sys.argv[1]));"
            "s = codegen.build(m, ref_point='joint', cache_dir=sys.argv[2]);"
            "print(s.build_info['key'], s.build_info['hit'], s.forward_dynamics(*m.initial_state())[0])")
    procs = [subprocess.Popen([sys.executable, "-c", code, str(mass), str(tmp_path)], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for mass in (1.0, 2.0)]
    outs = [p.communicate(timeout=300) for p in procs]
    assert all(p.returncode == 0 for p in procs), outs
    keys = {o[0].split()[0] for o in outs}
    hits = sorted(o[0].split()[1] for o in outs)
    assert len(keys) == 1 and hits == ["False", "True"]          # one built, the other waited and reused
    entries = [e for e in os.listdir(tmp_path)
               if not e.endswith(".lock") and e != "derived" and not e.startswith("engine-")]
    assert entries == list(keys)                                 # no half-written or temporary folders
    a1, a2 = (float(o[0].split()[2]) for o in outs)
    assert np.isclose(a1, a2)                                    # the mass cancels for a pendulum


def test_generated_module_header_and_structure():
    m = codegen.models.humanoid()
    src = generated_source(m, "recursive", ref_point="origin")
    key = build_key(m, "recursive", resolve_options("recursive", ref_point="origin"))
    head = src[:4000]
    assert f"Build hash: {key}" in head
    assert "Roadmap" in head and "l_foot" in head and "l_ankle" in head and "universal" in head
    assert "# cython: language_level=3, boundscheck=False, wraparound=False" in head
    for banner in ("pass 2: leaves -> root", "pass 3: root -> leaves", "[KY eqs 9-21, 27]"):
        assert banner in src
    assert "static inline void jchild_universal" in src and "jchild_prismatic" not in src   # only used types
    assert "static inline void kin_universal_" in src and "kin_prismatic" not in src       # per-body patterns
    assert "noexcept nogil" in src and "cdef object" not in src.split("def forward_dynamics")[0].split(
        "cdef class System")[1].split("cdef void call_hook")[0].replace("cdef object hook\n", "").replace(
        "cdef object ctrl_fn, ctrl_obj", "")                  # Python-side control sources (set_ctrl)


def test_generated_code_grows_linearly():
    """Loops over the topology, not one expression per body: the rendered source of a 1000-body chain is
    barely larger than that of a 10-body one (generation time is measured by benchmarks/bench_grcr.py and the
    build benchmarks, not asserted here: a loaded machine would fail such a test)."""
    big = generated_source(codegen.models.chain(1000), "recursive")
    small = generated_source(codegen.models.chain(10), "recursive")
    tree = generated_source(codegen.models.random_tree(200, seed=4), "recursive")
    tree2 = generated_source(codegen.models.random_tree(400, seed=4), "recursive")
    assert len(big) - len(small) < 140 * 990                 # a roadmap row and the tables' entries (IQ, IV, QV ...) per body
    assert len(tree2) - len(tree) < 1.3 * (len(tree) - len(small))   # per-body growth bounded


def test_unknown_algorithm_and_option():
    m = codegen.models.chain(2)
    with pytest.raises(codegen.BuildError, match="unknown algorithm"):
        codegen.build(m, "magic")
    with pytest.raises(codegen.BuildError, match="ref_point='middle'"):
        codegen.build(m, ref_point="middle")


def test_versions_in_the_key_and_meta_are_importlib_metadata_s(tmp_path, monkeypatch):
    """codegen._metadata reads distribution versions without importing importlib.metadata (start-up time); it must
    answer as importlib.metadata does, and leave what it does not handle (an .egg-info) to it."""
    from importlib.metadata import PackageNotFoundError, version

    from codegen._metadata import dist_version
    for name in ("Cython", "numpy", "sympy", "PyYAML", "pyyaml", "jsonschema", "typing_extensions", "pip"):
        try:
            expected = version(name)
        except PackageNotFoundError:
            continue
        assert dist_version(name) == expected, name
    with pytest.raises(PackageNotFoundError):
        dist_version("no-such-distribution-mbgen")
    assert dist_version("no-such-distribution-mbgen", default="unknown") == "unknown"
    (tmp_path / "Fake_Dist-1.0.dist-info").mkdir()
    (tmp_path / "Fake_Dist-1.0.dist-info" / "METADATA").write_text("Metadata-Version: 2.1\nName: Fake_Dist\n"
                                                                    "Version: 1.0rc2\n\nVersion: 9\n")
    (tmp_path / "other.egg-info").mkdir()
    (tmp_path / "other.egg-info" / "PKG-INFO").write_text("Metadata-Version: 1.1\nName: other\nVersion: 2.5\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert dist_version("fake-dist") == "1.0rc2" == version("fake.dist")
    assert dist_version("other") == "2.5" == version("other")
    # the fast path itself, in a fresh interpreter as at start-up (it steps aside when something else on
    # sys.meta_path could find distributions, as may be the case in a test process)
    code = (f"import sys; sys.path.insert(0, {str(tmp_path)!r}); from codegen._metadata import _fast; "
            "print(_fast('fake.dist'), _fast('other'), 'importlib.metadata' in sys.modules)")
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    out = subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True, text=True, timeout=120)
    assert out.stdout.split() == ["1.0rc2", "None", "False"], out.stdout + out.stderr
