"""The build cache survives faults: concurrent builds, a build killed mid-compilation, corrupted or foreign
cached modules (checked before they are loaded), the user's umask, and `mbgen cache info|clean`.

Every test uses its own temporary cache and uniquely named models, so each build here is a fresh compile.
A cached module cannot be re-imported in a process that loaded it, and a corrupted one may crash the
interpreter: those builds run in subprocesses."""
import json
import os
import shutil
import signal
import stat
import subprocess
import sys
import time
import uuid

import numpy as np
import pytest

import codegen
from codegen.cli import main
from codegen.compiler import build_key, resolve_options
from codegen.compiler.cache import _ext_suffix, cached_module, entry_problem
from codegen.runtime import atomic_write

TIMEOUT = 300

# build chain(2) named argv[1] into cache argv[2]; print key, hit, a forward-dynamics value, the warnings
BUILD_CHAIN = """
import json, sys, warnings
import codegen
m = codegen.models.chain(2)
m.name = sys.argv[1]
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    s = codegen.build(m, cache_dir=sys.argv[2])
print(json.dumps({"key": s.build_info["key"], "hit": s.build_info["hit"],
                  "qdd": float(s.forward_dynamics(*m.initial_state())[0]),
                  "warnings": [str(w.message) for w in caught]}))
"""

TINY_SOURCE = "def answer():\n    return 42\n"
# the same with a tiny Cython module straight through cached_module: argv = key, module name, cache
BUILD_TINY = f"""
import json, sys, warnings
from codegen.compiler import cached_module
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    mod, info = cached_module(sys.argv[1], sys.argv[2], "tiny", lambda: {TINY_SOURCE!r}, sys.argv[3])
print(json.dumps({{"hit": info["hit"], "answer": mod.answer(), "warnings": [str(w.message) for w in caught]}}))
"""


def _run(code, *args, **kw):
    p = subprocess.run([sys.executable, "-c", code, *map(str, args)], capture_output=True, text=True,
                       timeout=TIMEOUT, **kw)
    assert p.returncode == 0, f"exit {p.returncode}\n{p.stdout}\n{p.stderr[-3000:]}"
    return json.loads(p.stdout.strip().splitlines()[-1])


def _temp_folders(cache):
    return sorted(e for e in os.listdir(cache) if e.startswith("."))


def _chain(name):
    m = codegen.models.chain(2)
    m.name = name
    return m


def _copy_entry(src_cache, key, dst_cache):
    os.makedirs(dst_cache)
    shutil.copytree(os.path.join(src_cache, key), os.path.join(dst_cache, key))
    return os.path.join(dst_cache, key)


@pytest.fixture(scope="module")
def four_builds(tmp_path_factory):
    """Four processes build one new model into one empty cache at once (umask 022)."""
    cache = tmp_path_factory.mktemp("four")
    name = f"faults_{uuid.uuid4().hex[:8]}"
    procs = [subprocess.Popen([sys.executable, "-c", BUILD_CHAIN, name, str(cache)], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, umask=0o022) for _ in range(4)]
    outs = [p.communicate(timeout=TIMEOUT) for p in procs]
    assert all(p.returncode == 0 for p in procs), outs
    return cache, name, [json.loads(o[0].strip().splitlines()[-1]) for o in outs]


@pytest.mark.build
def test_four_concurrent_builds_compile_once(four_builds):
    cache, name, results = four_builds
    keys = {r["key"] for r in results}
    assert len(keys) == 1
    key = keys.pop()
    assert sorted(r["hit"] for r in results) == [False, True, True, True]     # one compiled, three waited
    assert len({r["qdd"] for r in results}) == 1 and np.isfinite(results[0]["qdd"])
    assert not any(r["warnings"] for r in results)
    listing = [e for e in os.listdir(cache) if not e.startswith("engine-")]     # the engine, where built here
    assert sorted(listing) == sorted([key, f"{key}.lock", "derived"])           # no temporary folders left
    meta = json.load(open(cache / key / "build.json"))
    so = cache / key / f"{meta['module']}{_ext_suffix()}"
    assert meta["key"] == key and meta["model"] == name and meta["algorithm"] == "recursive"
    assert meta["python"] == sys.version and meta["cython"] == __import__("Cython").__version__
    assert meta["sha256"] and meta["size"] == so.stat().st_size
    assert entry_problem(cache / key, meta["module"]) is None


@pytest.mark.build
def test_cache_entry_follows_umask(four_builds):
    cache, _, results = four_builds
    entry = cache / results[0]["key"]
    assert stat.S_IMODE(entry.stat().st_mode) == 0o755                        # not mkdtemp's 0700
    for f in entry.iterdir():
        want = 0o755 if f.name.endswith(_ext_suffix()) else 0o644
        assert stat.S_IMODE(f.stat().st_mode) == want, f.name


def test_results_file_follows_umask(tmp_path):
    old = os.umask(0o022)
    try:
        atomic_write(str(tmp_path / "r.npz"), lambda fh: fh.write(b"x"))
        os.umask(0o002)
        atomic_write(str(tmp_path / "sub" / "r.csv"), lambda fh: fh.write(b"y"))
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "r.npz").stat().st_mode) == 0o644        # not mkstemp's 0600
    assert stat.S_IMODE((tmp_path / "sub" / "r.csv").stat().st_mode) == 0o664
    assert stat.S_IMODE((tmp_path / "sub").stat().st_mode) == 0o775
    assert sorted(os.listdir(tmp_path)) == ["r.npz", "sub"]


def _truncate(b):
    return b[:len(b) // 3]


def _zero(b):
    return bytes(len(b))


def _flip(b):
    i = len(b) // 2
    return b[:i] + bytes([b[i] ^ 0x01]) + b[i + 1:]


@pytest.fixture(scope="module")
def tiny_entry(tmp_path_factory):
    """A pristine cache entry of a one-function Cython module (2 s to compile), built in this process."""
    cache = tmp_path_factory.mktemp("tiny")
    key, modname = uuid.uuid4().hex[:20], f"mbgen_tiny_{uuid.uuid4().hex[:8]}"
    mod, info = cached_module(key, modname, "tiny", lambda: TINY_SOURCE, str(cache),
                              meta={"model": "tiny model", "algorithm": "none"})
    assert mod.answer() == 42 and info["hit"] is False
    return cache, key, modname


@pytest.mark.build
def test_damaged_extension_is_rebuilt_not_loaded(tiny_entry, tmp_path):
    """A truncated, zeroed or one-byte-flipped .so (which the import would die on, e.g. SIGBUS when
    truncated) is caught by its SHA-256 before the import: the next build, in a fresh process and cache for
    each damage (the three run at once), rebuilds it, warns naming the entry, and works. (The check is
    cached_module's, the same for every module: the tiny one keeps the three rebuilds at 2 s each.)"""
    cache, key, modname = tiny_entry
    runs = {}
    for damage in (_truncate, _zero, _flip):
        entry = _copy_entry(cache, key, tmp_path / damage.__name__)
        so = os.path.join(entry, modname + _ext_suffix())
        data = open(so, "rb").read()
        open(so, "wb").write(damage(data))
        runs[damage.__name__] = entry, subprocess.Popen(
            [sys.executable, "-c", BUILD_TINY, key, modname, str(tmp_path / damage.__name__)], stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, text=True)
    for case, (entry, proc) in runs.items():
        stdout, stderr = proc.communicate(timeout=TIMEOUT)
        assert proc.returncode == 0, (case, proc.returncode, stderr[-3000:])
        out = json.loads(stdout.strip().splitlines()[-1])
        assert out["hit"] is False and out["answer"] == 42, (case, out)
        assert len(out["warnings"]) == 1, (case, out)
        assert f"cache entry {entry} cannot be trusted" in out["warnings"][0] and "SHA-256" in out["warnings"][0]
        assert entry_problem(entry, modname) is None, case
        assert _temp_folders(os.path.dirname(entry)) == [], case


@pytest.mark.build
def test_another_modules_extension_is_rebuilt(tiny_entry, tmp_path):
    """An entry whose extension is another model's module, with its build.json made consistent (name, key, checksum),
    which the import would refuse with a traceback ("does not define module export function"): found before the
    import (the extension must export PyInit_<module>), rebuilt with a warning saying so; in a fresh process, as a
    user's next `mbgen simulate`."""
    cache, key, modname = tiny_entry
    key2, mod2 = uuid.uuid4().hex[:20], f"mbgen_tiny_{uuid.uuid4().hex[:8]}"
    entry = _copy_entry(cache, key, tmp_path / "cache")
    target = os.path.join(os.path.dirname(entry), key2)
    os.rename(entry, target)
    os.rename(os.path.join(target, modname + _ext_suffix()), os.path.join(target, mod2 + _ext_suffix()))
    meta = json.load(open(os.path.join(target, "build.json")))
    meta.update(key=key2, module=mod2)
    open(os.path.join(target, "build.json"), "w").write(json.dumps(meta))
    assert f"does not define PyInit_{mod2} (another module's extension)" in entry_problem(target, mod2)
    out = _run(BUILD_TINY, key2, mod2, tmp_path / "cache")
    assert out["hit"] is False and out["answer"] == 42, out
    assert len(out["warnings"]) == 1 and f"does not define PyInit_{mod2}" in out["warnings"][0], out
    assert entry_problem(target, mod2) is None


def _edit_json(field, value):
    def edit(path):
        meta = json.load(open(path))
        meta[field] = value
        open(path, "w").write(json.dumps(meta))
    return edit


@pytest.mark.build
@pytest.mark.parametrize("damage, reason", [
    (os.remove, "build.json is missing"),
    (lambda p: open(p, "wb").write(b"\x00" * 40), "build.json is unreadable"),
    (lambda p: open(p, "r+").truncate(25), "build.json is unreadable"),
    (_edit_json("cython", "0.29.0"), "built by cython '0.29.0'"),
    (_edit_json("python", "2.7.18"), "built by python '2.7.18'"),
], ids=["missing", "zeroed", "truncated", "other-cython", "other-python"])
def test_untrusted_build_json_is_rebuilt(tiny_entry, tmp_path, damage, reason):
    cache, key, modname = tiny_entry
    entry = _copy_entry(cache, key, tmp_path / "cache")
    damage(os.path.join(entry, "build.json"))
    assert reason in entry_problem(entry, modname)
    out = _run(BUILD_TINY, key, modname, tmp_path / "cache")
    assert out["hit"] is False and out["answer"] == 42 and len(out["warnings"]) == 1
    assert f"cache entry {entry} cannot be trusted: " in out["warnings"][0] and reason in out["warnings"][0]
    assert out["warnings"][0].endswith("; rebuilding it")
    assert entry_problem(entry, modname) is None


def _fifo(path):
    os.remove(path)
    os.mkfifo(path)


def _link(path, to):
    os.remove(path) if not os.path.isdir(path) or os.path.islink(path) else shutil.move(path, to)
    os.symlink(to, path)


@pytest.mark.build
@pytest.mark.parametrize("damage, reason", [
    (lambda e, m, t: _fifo(os.path.join(e, "build.json")), "build.json is a FIFO"),
    (lambda e, m, t: (shutil.copy(os.path.join(e, "build.json"), t / "b.json"),
                      _link(os.path.join(e, "build.json"), t / "b.json")), "build.json cannot be opened safely"),
    (lambda e, m, t: os.chmod(os.path.join(e, "build.json"), 0o666), "build.json is writable by all users"),
    (lambda e, m, t: _link(os.path.join(e, m + _ext_suffix()), "/dev/zero"), "cannot be opened safely"),
    (lambda e, m, t: os.chmod(e, 0o775), "the entry folder is writable by its group"),
    (lambda e, m, t: _link(e, t / "planted"), "the entry is a symbolic link"),
], ids=["fifo", "symlinked-json", "world-writable-json", "so-to-dev-zero", "group-writable-entry", "symlinked-entry"])
def test_planted_or_shared_cache_files_are_not_trusted(tiny_entry, tmp_path, damage, reason):
    """Only the user's own regular files that nobody else can write are read (never through a symbolic link, never
    waiting on a FIFO or a device): anything else in an entry makes it untrusted and rebuilt, and a planted folder
    an entry links to is left alone (not loaded, not deleted through)."""
    cache, key, modname = tiny_entry
    entry = _copy_entry(cache, key, tmp_path / "cache")
    damage(entry, modname, tmp_path)
    assert reason in entry_problem(entry, modname)
    out = _run(BUILD_TINY, key, modname, tmp_path / "cache")
    assert out["hit"] is False and out["answer"] == 42 and reason in out["warnings"][0]
    assert entry_problem(entry, modname) is None and not os.path.islink(entry)
    if (tmp_path / "planted").exists():
        assert sorted(os.listdir(tmp_path / "planted")) == sorted(os.listdir(os.path.join(cache, key)))


@pytest.mark.build
def test_a_cache_folder_others_can_write_is_refused(tiny_entry, tmp_path, capsys):
    """A world- or group-writable cache folder (a shared MBGEN_CACHE_DIR) is refused with the way out, before any
    entry is read; so is a cache folder under a file, and a lock that is a folder (exit 2 from the CLI)."""
    from codegen.algorithms import BuildError
    cache, key, modname = tiny_entry
    shared = tmp_path / "shared"
    _copy_entry(cache, key, shared)
    for mode, words in ((0o777, "writable by all users"), (0o775, "writable by its group")):
        os.chmod(shared, mode)
        with pytest.raises(BuildError, match=f"{words}: another user could plant code.*chmod go-w"):
            cached_module(key, modname, "tiny", lambda: TINY_SOURCE, str(shared))
    (tmp_path / "file").write_text("x")
    with pytest.raises(BuildError, match="cannot be created: Not a directory"):
        cached_module(key, modname, "tiny", lambda: TINY_SOURCE, str(tmp_path / "file" / "cache"))
    os.chmod(shared, 0o755)
    shutil.rmtree(shared / key)
    os.mkdir(shared / f"{key}.lock")
    with pytest.raises(BuildError, match=r"\.lock is a folder, not a file: remove it"):
        cached_module(key, modname, "tiny", lambda: TINY_SOURCE, str(shared))
    os.chmod(shared, 0o777)
    assert main(["simulate", "chain:1", "--t-end", "0.01", "--quiet", "--cache-dir", str(shared),
                 "--out", str(tmp_path / "r.npz")]) == 2
    assert "writable by all users" in capsys.readouterr().err and not (tmp_path / "r.npz").exists()


def _dead_pid():
    try:
        return int(open("/proc/sys/kernel/pid_max").read()) + 1                # no process can have it
    except OSError:
        return 2 ** 22 + 1


@pytest.mark.build
def test_killed_build_recovers_and_is_swept(tmp_path):
    """SIGKILL while the C compiler runs: no entry appears, the crashed holder's lock does not block, and the
    next build compiles, loads and sweeps the temporary folders no live build owns."""
    from filelock import FileLock

    cache = tmp_path / "cache"
    cache.mkdir()
    name = f"killed_{uuid.uuid4().hex[:8]}"
    m = _chain(name)
    key = build_key(m, "recursive", resolve_options("recursive"))

    child = subprocess.Popen([sys.executable, "-c", BUILD_CHAIN, name, str(cache)], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, start_new_session=True)
    prefix = f".{key}.{child.pid}.build."
    deadline = time.monotonic() + TIMEOUT
    killed_dir = None
    while killed_dir is None and time.monotonic() < deadline and child.poll() is None:
        for d in os.listdir(cache):
            if d.startswith(prefix) and any(f.endswith(".c") for f in os.listdir(cache / d)):
                killed_dir = cache / d                                       # cython done, cc running
        time.sleep(0.05)
    assert killed_dir is not None, child.communicate()
    os.killpg(child.pid, signal.SIGKILL)                                    # python and its cc
    child.communicate()
    assert child.returncode == -signal.SIGKILL
    assert not (cache / key).exists() and killed_dir.exists() and (cache / f"{key}.lock").exists()
    with FileLock(str(cache / f"{key}.lock")).acquire(timeout=5):          # the dead holder does not block
        pass

    other = [uuid.uuid4().hex[:20] for _ in range(3)]                      # folders of other builds:
    live = cache / f".{other[0]}.{os.getpid()}.build.abcd1234"             # of a live process
    dead = cache / f".{other[1]}.{_dead_pid()}.build.abcd1234"             # its process is gone
    busy = cache / f".{other[2]}.{_dead_pid()}.build.abcd1234"             # ... but its lock is held
    for d in (live, dead, busy):
        d.mkdir()
        (d / "x.c").write_text("int x;")
    with FileLock(str(cache / f"{other[2]}.lock")):
        s = codegen.build(m, cache_dir=str(cache))
        assert s.build_info["hit"] is False and np.isfinite(s.forward_dynamics(*m.initial_state())[0])
        assert _temp_folders(cache) == sorted([live.name, busy.name])       # killed_dir and dead swept
    assert entry_problem(cache / key, s.build_info["module"]) is None
    assert codegen.build(_chain(name), cache_dir=str(cache)).build_info["hit"] is True


@pytest.mark.build
def test_cache_cli_info_and_clean(tiny_entry, tmp_path, capsys):
    cache, key, modname = tiny_entry
    c = str(tmp_path / "cache")
    _copy_entry(cache, key, c)
    key2 = uuid.uuid4().hex[:20]
    shutil.copytree(os.path.join(c, key), os.path.join(c, key2))            # a second (old) entry
    old = time.time() - 3 * 86400
    meta = json.load(open(os.path.join(c, key2, "build.json")))
    meta["built_at"] = old
    open(os.path.join(c, key2, "build.json"), "w").write(json.dumps(meta))
    for name in (key, key2):
        open(os.path.join(c, f"{name}.lock"), "w").close()
    left = os.path.join(c, f".{key}.{_dead_pid()}.build.abcd1234")          # left by a killed build
    os.mkdir(left)
    open(os.path.join(left, "big.o"), "wb").write(b"\0" * 1000)
    os.mkdir(os.path.join(c, "not-an-entry"))                              # somebody else's: never touched

    assert main(["cache", "info", "--cache-dir", c]) == 0
    out = capsys.readouterr().out
    assert c in out and "2 entries" in out and "1 temporary folders" in out
    assert out.count("tiny model [none]") == 2 and key in out and key2 in out and modname in out
    line2 = next(line for line in out.splitlines() if key2 in line)
    assert "3.0 d" in line2 and "kB" in line2

    assert main(["cache", "clean", "--older-than", "1", "--cache-dir", c]) == 0
    assert "removed 1 entries and 1 temporary folders" in capsys.readouterr().out
    assert sorted(os.listdir(c)) == sorted([key, f"{key}.lock", f"{key2}.lock", "not-an-entry"])

    assert main(["cache", "clean", "--cache-dir", c]) == 0
    assert "removed 1 entries" in capsys.readouterr().out
    assert sorted(os.listdir(c)) == sorted([f"{key}.lock", f"{key2}.lock", "not-an-entry"])
    assert main(["cache", "info", "--cache-dir", c]) == 0
    assert "0 entries, 0 B" in capsys.readouterr().out
    assert main(["cache", "clean", "--older-than", "-1", "--cache-dir", c]) == 2
    assert "--older-than" in capsys.readouterr().err


@pytest.fixture
def small_tmpfs(tmp_path):
    """A 64 kB tmpfs (full after the first few files), where this process may mount one (root on Linux)."""
    mnt = tmp_path / "fs"
    mnt.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(mnt)], capture_output=True).returncode:
        pytest.skip("cannot mount a tmpfs here")
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], capture_output=True)


@pytest.mark.build
def test_a_full_or_read_only_cache_file_system_is_named(small_tmpfs, capsys):
    """The compiler's output does not fit (ENOSPC), or the cache cannot be created (EROFS): exit 2 naming the cache
    folder and what to do, no traceback, no temporary folder left."""
    argv = ["simulate", "chain:2", "--t-end", "0.01", "--quiet", "--out", str(small_tmpfs.parent / "r.npz")]
    assert main(argv + ["--cache-dir", str(small_tmpfs / "c")]) == 2
    err = capsys.readouterr().err
    assert f"cannot write the build cache {small_tmpfs / 'c'}: No space left on device" in err, err
    assert [e for e in os.listdir(small_tmpfs / "c") if e.startswith(".")] == []
    assert subprocess.run(["mount", "-o", "remount,ro", str(small_tmpfs)], capture_output=True).returncode == 0
    assert main(argv + ["--cache-dir", str(small_tmpfs / "c2")]) == 2
    assert "cannot be created: Read-only file system" in capsys.readouterr().err


@pytest.mark.build
def test_the_compiler_running_out_of_space_is_named(tmp_path, capsys):
    """A cache file system with room for the .pyx but not for Cython's C output: exit 2 naming the cache and
    the full disk, not Cython's own traceback, and no temporary build folder left on the full disk."""
    mnt = tmp_path / "fs"
    mnt.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(mnt)], capture_output=True).returncode:
        pytest.skip("cannot mount a tmpfs here")
    try:
        assert main(["build", "chain:2", "--cache-dir", str(mnt / "c"), "--quiet"]) == 2
        err = capsys.readouterr().err
        assert f"cannot write the build cache {mnt / 'c'}: No space left on device" in err, err
        assert "Traceback" not in err and err.count("\n") == 1, err
        assert [e for e in os.listdir(mnt / "c") if e.startswith(".")] == []
    finally:
        subprocess.run(["umount", "-l", str(mnt)], capture_output=True)


def test_a_disk_error_is_found_in_the_compiler_output():
    from codegen.compiler.cache import CompileFailed, disk_error
    import errno
    try:
        try:
            raise RuntimeError("cython failed")
        except RuntimeError as inner:
            raise CompileFailed("gcc: fatal error: error writing to x.o: No space left on device\n") from inner
    except CompileFailed as e:
        assert disk_error(e) == errno.ENOSPC
    assert disk_error(CompileFailed("x.pyx:3:4: undeclared name")) is None
    assert disk_error(OSError(errno.EROFS, "Read-only file system")) == errno.EROFS


def test_cache_info_and_clean_report_what_they_leave_alone(tmp_path, capsys):
    """Symbolic links (to a victim's folder, dangling), FIFOs and folders where lock files belong are neither
    followed nor removed by `mbgen cache clean`, and both commands name them; a cache folder that is a file,
    and a read-only cache file system for clean, exit 2 with one line."""
    cache = tmp_path / "cache"
    cache.mkdir(mode=0o700)
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "precious").write_text("keep")
    os.symlink(victim, cache / ("0" * 20))
    os.symlink(tmp_path / "nowhere", cache / ("1" * 20))
    os.mkfifo(cache / ("2" * 20 + ".lock"))
    (cache / ("3" * 20 + ".lock")).mkdir()
    for action in ("info", "clean"):
        assert main(["cache", action, "--cache-dir", str(cache)]) in (0, None)
        out = capsys.readouterr().out
        assert "left alone: 4 item(s) no build made" in out and f"{'0' * 20}: a symbolic link" in out, out
        assert f"{'2' * 20}.lock: a FIFO" in out and "a folder where a lock file belongs" in out, out
    assert (victim / "precious").read_text() == "keep" and os.path.islink(cache / ("0" * 20))
    afile = tmp_path / "afile"
    afile.write_text("x")
    assert main(["cache", "info", "--cache-dir", str(afile)]) == 2
    assert "is not a folder" in capsys.readouterr().err
    mnt = tmp_path / "ro"
    mnt.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m,mode=700", "tmpfs", str(mnt)],
                      capture_output=True).returncode:
        return
    try:
        (mnt / ("4" * 20)).mkdir()
        (mnt / ("4" * 20) / "build.json").write_text("{}")
        assert subprocess.run(["mount", "-o", "remount,ro", str(mnt)], capture_output=True).returncode == 0
        assert main(["cache", "clean", "--cache-dir", str(mnt)]) == 2
        err = capsys.readouterr().err
        assert f"cannot clean the build cache {mnt}: Read-only file system" in err and "Traceback" not in err, err
    finally:
        subprocess.run(["umount", "-l", str(mnt)], capture_output=True)
