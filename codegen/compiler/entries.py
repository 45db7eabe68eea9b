"""The cache folder's contents and how they are trusted: entries, their checks, temporary folders, the derivations.

Each entry's build.json records the SHA-256 of its extension and the Python and Cython versions that built it, and
entry_problem checks all of that before the extension is imported. Temporary folders are named `.KEY.PID.KIND.XXXX`;
one left by a killed build (its process is gone, or it is older than an hour) is swept, under that entry's lock. Entries
get the user's umask (current_umask). DerivedStore keeps codegen.symbolic.persist's derivations in `<cache>/derived`."""
from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import stat
import sys
import sysconfig
import tempfile
import threading
import time
from functools import lru_cache
from pathlib import Path
from typing import Optional

from .._version import __version__
from . import trust
from .toolchain import _dist_version


STALE_AFTER_S = 3600.0        # a temporary folder this old is swept even if a process with its pid is alive


FAILED_MARK = "BUILD-FAILED"  # in the temporary folder of a failed compilation: kept (for reading) that long


_MISSING = "missing"


_KEY_RE = re.compile(r"[0-9a-f]{20}")


def _ext_suffix() -> str:
    return sysconfig.get_config_var("EXT_SUFFIX") or ".so"


@lru_cache(maxsize=None)
def _runtime_versions() -> dict:
    return {"python": sys.version, "cython": _dist_version("Cython")}


_umask_lock = threading.Lock()


_umask_cached: Optional[int] = None


def current_umask() -> int:
    """The process umask.

    Read from /proc/self/status where there is one (no change to the process state);
    otherwise read once with os.umask - set to the restrictive 0o077 for that instant, so a file another
    thread creates meanwhile is never more open than wanted - and restored."""
    global _umask_cached
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    with _umask_lock:
        if _umask_cached is None:
            _umask_cached = os.umask(0o077)
            os.umask(_umask_cached)
        return _umask_cached


class DerivedStore:
    """The derivations of codegen.symbolic.persist in ``<cache>/derived``, one JSON file each.

    Read only from regular files of the user's that nobody else can write, in a folder nobody else can write
    (trust.open_trusted: the printed code ends up compiled into a module); written to a temporary file and renamed
    into place (readers see a whole file or none); a cache that cannot be written keeps none (nothing fails)."""

    LIMIT = 16 << 20                 # bytes of one file (the largest, a 64-entry Jacobian, is about 100 kB)

    def __init__(self, cache: Path):
        self.folder = Path(cache) / "derived"

    def _trusted_folder(self) -> bool:
        try:
            st = os.stat(self.folder, follow_symlinks=False)
        except OSError:
            return False
        return stat.S_ISDIR(st.st_mode) and trust.foreign(st, "") is None

    def get(self, name: str) -> Optional[bytes]:
        """The file's bytes, or None (missing, unreadable or not trusted)."""
        if not self._trusted_folder():
            return None
        try:
            with trust.open_trusted(self.folder / name, self.LIMIT) as fh:
                return fh.read()
        except (OSError, trust.Untrusted):
            return None

    def put(self, name: str, data: bytes) -> None:
        """Store `data` as the file `name` (nothing where the cache cannot be written)."""
        try:
            os.makedirs(self.folder, mode=0o755, exist_ok=True)
            if not self._trusted_folder():
                return
            fd, tmp = tempfile.mkstemp(dir=self.folder, prefix=".", suffix=".tmp")
            try:
                with os.fdopen(fd, "wb") as fh:
                    fh.write(data)
                os.chmod(tmp, 0o644 & ~current_umask())
                os.replace(tmp, self.folder / name)
            except BaseException:
                os.unlink(tmp)
                raise
        except OSError:
            pass


def _sha256(path: Path, limit: int = trust.EXTENSION_LIMIT, find: bytes = b"") -> tuple:
    """(the file's SHA-256, whether it holds the bytes `find`), in one read."""
    h = hashlib.sha256()
    found, tail = not find, b""
    with trust.open_trusted(path, limit) as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
            if not found:
                found = find in tail + block
                tail = block[-len(find):]
    return h.hexdigest(), found


def entry_problem(target: Path, modname: str) -> Optional[str]:
    """Why cache entry `target` cannot be trusted, or None if it can.

    Why cache entry `target` cannot be trusted ('missing' if absent), or None if it can: build.json is
    readable and names this entry, the Python and Cython versions are ours, and the extension's SHA-256 is
    the one recorded at build time. Reads files only; nothing is imported."""
    target = Path(target)
    problem = trust.entry_folder_problem(target)          # a symbolic link, someone else's folder, ...
    if problem is not None:
        return problem
    try:
        with trust.open_trusted(target / "build.json", trust.BUILD_JSON_LIMIT) as fh:
            meta = json.loads(fh.read())
    except FileNotFoundError:
        return "build.json is missing"
    except trust.Untrusted as e:
        return str(e)
    except (OSError, ValueError) as e:        # UnicodeDecodeError and JSONDecodeError are ValueErrors
        return f"build.json is unreadable ({type(e).__name__})"
    if not isinstance(meta, dict):
        return "build.json is not a JSON object"
    if meta.get("key") != target.name or meta.get("module") != modname:
        return "build.json describes another entry"
    for tool, version in _runtime_versions().items():
        if tool not in meta:
            return f"build.json does not record the {tool} version"
        if meta[tool] != version:
            return f"built by {tool} {meta[tool]!r}, this is {tool} {version!r}"
    so_path = target / (modname + _ext_suffix())
    expected = meta.get("sha256")
    if not isinstance(expected, str):
        return "build.json records no checksum of the extension"
    try:
        digest, exported = _sha256(so_path, find=b"PyInit_" + modname.encode() + b"\0")
    except FileNotFoundError:
        return f"{so_path.name} is missing"
    except trust.Untrusted as e:
        return str(e)
    except OSError as e:
        return f"{so_path.name} is unreadable ({e})"
    if digest != expected:
        return f"{so_path.name} does not match the SHA-256 recorded in build.json (truncated or corrupted)"
    if not exported:                  # its import would fail: "dynamic module does not define module export function"
        return f"{so_path.name} does not define PyInit_{modname} (another module's extension)"
    return None


def _assemble_entry(tmp: Path, target: Path, modname: str, files, info: dict, meta: dict):
    """Move the products into the entry and rename it over `target`.

    Move the products into tmp/entry, record build.json (checksum, versions, meta), set the umask's
    permissions, and rename it over `target` (any old entry goes into tmp first, so readers see the old
    entry or the new one or none, never a mixture)."""
    staging = tmp / "entry"
    staging.mkdir()
    so_name = modname + _ext_suffix()
    for f in files:
        if f.exists():
            os.replace(f, staging / f.name)
    record = dict(meta)                       # model name, algorithm, options: reported by `mbgen cache info`
    record.update({k: v for k, v in info.items() if k != "hit"})
    record.update(_runtime_versions())
    record.update({"generator": __version__, "ext_suffix": _ext_suffix(), "built_at": time.time(),
                   "sha256": _sha256(staging / so_name)[0], "size": (staging / so_name).stat().st_size})
    (staging / "build.json").write_text(json.dumps(record, indent=1, default=str))
    umask = current_umask() | 0o022           # the umask's permissions, never writable by others (trust.py)
    for f in staging.iterdir():
        executable = f.stat().st_mode & 0o111 if f.name == so_name else 0   # as the linker made the .so
        os.chmod(f, (0o666 | executable) & ~umask)
    os.chmod(staging, 0o777 & ~umask)
    if os.path.lexists(target):
        os.replace(target, tmp / "old")
    os.replace(staging, target)               # atomic: the folder appears complete or not at all


def _temp_folder_owner(name: str):
    """The (key, pid or None) of one of our temporary folder names, or None.

    (key, pid or None) of a temporary folder name `.KEY.PID.build.XXXX` or `.KEY.PID.trash.XXXX` (older
    mbgen: `.KEY.XXXX`, `.KEY.stage.XXXX` with a 20-hex key), or None if the name is not one of ours."""
    parts = name[1:].split(".") if name.startswith(".") else []
    if len(parts) == 4 and parts[0] and parts[1].isdigit() and parts[2] in ("build", "trash"):
        return parts[0], int(parts[1])
    if len(parts) in (2, 3) and _KEY_RE.fullmatch(parts[0]) and (len(parts) == 2 or parts[1] == "stage"):
        return parts[0], None
    return None


def _pid_alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:          # someone else's process
        return True
    except (OSError, OverflowError):
        return False
    try:                             # a zombie (killed, not yet reaped) is dead for our purposes
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return True


def _is_stale(folder: Path, pid: Optional[int], max_age: float, now: float) -> bool:
    try:
        age = now - folder.stat().st_mtime
    except OSError:
        return False
    if (folder / FAILED_MARK).exists():
        return age > max_age
    return pid is None or age > max_age or not _pid_alive(pid)


def sweep_temp_folders(cache_dir, held_key: Optional[str] = None, max_age: float = STALE_AFTER_S) -> list:
    """Remove the temporary folders a killed or failed build left in the cache.

    Those whose process is gone
    or that are older than max_age seconds (failed compilations: only by age). Each only under its entry's
    lock - already held for `held_key`, else taken without waiting (a build holding it is alive: skip).
    Returns the removed paths."""
    from filelock import FileLock, Timeout

    cache = Path(cache_dir)
    now = time.time()
    by_key = {}
    try:
        listing = list(cache.iterdir())
    except OSError:
        return []
    for folder in listing:
        owner = _temp_folder_owner(folder.name)
        if owner is not None and folder.is_dir() and not folder.is_symlink():
            by_key.setdefault(owner[0], []).append((folder, owner[1]))
    removed = []
    for key, folders in sorted(by_key.items()):
        if not any(_is_stale(f, pid, max_age, now) for f, pid in folders):
            continue
        lock = None
        if key != held_key:
            lock = FileLock(str(cache / f"{key}.lock"))
            try:
                lock.acquire(timeout=0)
            except (Timeout, OSError):
                continue
        try:
            for folder, pid in folders:
                if _is_stale(folder, pid, max_age, now):
                    shutil.rmtree(folder, ignore_errors=True)
                    if not folder.exists():
                        removed.append(folder)
        finally:
            if lock is not None:
                lock.release()
    return removed
