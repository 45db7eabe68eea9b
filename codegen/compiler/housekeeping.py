"""Housekeeping of the build cache for `mbgen cache info|clean`.

List the entries, remove them under their locks,
sweep the temporary folders of dead builds. Nothing here follows a symbolic link or reads an untrusted file."""
from __future__ import annotations

import json
import os
import shutil
import tempfile
import time
from pathlib import Path
from typing import Optional

from ..algorithms import BuildError
from . import trust
from .cache import default_cache_dir
from .entries import _KEY_RE, DerivedStore, _temp_folder_owner, sweep_temp_folders


def _is_entry(folder: Path) -> bool:
    return (not folder.name.startswith(".") and folder.is_dir() and not folder.is_symlink()
            and (_KEY_RE.fullmatch(folder.name) is not None or (folder / "build.json").is_file()))


def _tree_size(folder: Path) -> int:
    total = 0
    for root, _, files in os.walk(folder):
        for f in files:
            try:
                total += os.lstat(os.path.join(root, f)).st_size
            except OSError:
                pass
    return total


def cache_entries(cache_dir=None) -> list:
    """One dict per entry of the cache, oldest first.

    One dict per entry of the cache (key, module, model, algorithm, size, age_s, path), oldest first;
    build.json fields are reported as found (not verified)."""
    cache = Path(cache_dir) if cache_dir else default_cache_dir()
    if not cache.is_dir():
        return []
    now = time.time()
    out = []
    for folder in sorted(cache.iterdir()):
        if not _is_entry(folder):
            continue
        try:
            with trust.open_trusted(folder / "build.json", trust.BUILD_JSON_LIMIT) as fh:
                meta = json.loads(fh.read())
            meta = meta if isinstance(meta, dict) else {}
        except (OSError, ValueError, trust.Untrusted):
            meta = {}
        try:
            built = float(meta.get("built_at") or (folder / "build.json").stat().st_mtime)
        except (OSError, TypeError, ValueError):
            built = folder.stat().st_mtime
        out.append({"key": folder.name, "module": meta.get("module"), "model": meta.get("model"),
                    "algorithm": meta.get("algorithm"), "size": _tree_size(folder), "age_s": max(now - built, 0.0),
                    "path": str(folder)})
    return sorted(out, key=lambda e: -e["age_s"])


def strangers(cache_dir=None) -> list:
    """The items in the cache that no build made: (name, what).

    (name, what) of the items in the cache that no build made and nothing here touches: symbolic links,
    FIFOs, devices, lock files that are not files, entries of another user or writable by others (reported by
    `mbgen cache info` and `clean`, for the user to remove)."""
    import stat
    cache = Path(cache_dir) if cache_dir else default_cache_dir()
    try:
        listing = sorted(os.scandir(cache), key=lambda d: d.name)
    except OSError:
        return []
    out = []
    for d in listing:
        try:
            st = d.stat(follow_symlinks=False)
        except OSError:
            continue
        if stat.S_ISLNK(st.st_mode) or not (stat.S_ISDIR(st.st_mode) or stat.S_ISREG(st.st_mode)):
            out.append((d.name, trust.kind(st.st_mode)))
        elif d.name.endswith(".lock") and not stat.S_ISREG(st.st_mode):
            out.append((d.name, f"{trust.kind(st.st_mode)} where a lock file belongs"))
        elif stat.S_ISDIR(st.st_mode) and _is_entry(Path(d.path)):
            why = trust.foreign(st, "an entry")
            if why:
                out.append((d.name, why))
    return out


def temp_folders(cache_dir=None) -> list:
    """The temporary build folders (`.KEY.*`) in the cache, in use or left over."""
    cache = Path(cache_dir) if cache_dir else default_cache_dir()
    if not cache.is_dir():
        return []
    return sorted(f for f in cache.iterdir() if _temp_folder_owner(f.name) and f.is_dir() and not f.is_symlink())


def clean_cache(cache_dir=None, older_than_days: Optional[float] = None, timeout: float = 10.0) -> dict:
    """Remove the cache's entries, the temporary folders no running build owns and the stored derivations.

    Remove every entry (only those built more than older_than_days ago, if given), each under its lock
    (an entry whose lock stays busy for `timeout` s - a build in progress - is skipped), the temporary
    folders no running build owns and the stored derivations (cache.DerivedStore; those older than
    older_than_days). Lock files stay: removing one a waiter has open would break the lock.
    Returns {"entries": [keys], "temp": [paths], "busy": [keys], "derived": files, "freed": bytes}."""
    from filelock import FileLock, Timeout

    if older_than_days is not None and not older_than_days >= 0:
        raise ValueError(f"--older-than must be a number of days >= 0, not {older_than_days}")
    cache = Path(cache_dir) if cache_dir else default_cache_dir()
    done = {"entries": [], "temp": [], "busy": [], "derived": 0, "freed": 0}
    if not cache.is_dir():
        return done
    max_age = None if older_than_days is None else older_than_days * 86400.0
    for e in cache_entries(cache):
        if max_age is not None and e["age_s"] <= max_age:
            continue
        try:
            trust.check_lock(cache / f"{e['key']}.lock")
            with FileLock(str(cache / f"{e['key']}.lock"), timeout=timeout):
                trash = Path(tempfile.mkdtemp(prefix=f".{e['key']}.{os.getpid()}.trash.", dir=str(cache)))
                os.replace(e["path"], trash / "old")          # the entry disappears at once
                shutil.rmtree(trash, ignore_errors=True)
        except (Timeout, BuildError):                 # a build holds it, or its lock file is not a file
            done["busy"].append(e["key"])
            continue
        except OSError as err:                        # a read-only file system, a folder not ours to write
            raise BuildError(f"cannot clean the build cache {cache}: {err.strerror or err} (a read-only file "
                             f"system, or a folder you cannot write?)") from None
        done["entries"].append(e["key"])
        done["freed"] += e["size"]
    derived = DerivedStore(cache).folder
    if derived.is_dir() and not derived.is_symlink():
        now = time.time()
        for f in sorted(derived.iterdir()):
            try:
                st = f.lstat()
                if max_age is None or now - st.st_mtime > max_age:
                    f.unlink()
                    done["derived"] += 1
                    done["freed"] += st.st_size
            except OSError:
                pass
        try:
            derived.rmdir()                                 # (when empty)
        except OSError:
            pass
    sizes = {f: _tree_size(f) for f in temp_folders(cache)}
    for folder in sweep_temp_folders(cache, max_age=max_age or 0.0):
        done["temp"].append(str(folder))
        done["freed"] += sizes.get(folder, 0)
    return done
