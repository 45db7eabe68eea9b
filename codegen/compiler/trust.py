"""What the build cache trusts.

Only folders and files the user owns that nobody else can write (the policy of
ssh's StrictModes and of Python's bytecode cache), regular files opened without following a symbolic link and
without blocking (a FIFO or a device planted in the cache is refused, never read), within size limits.

A cache shared with other users (world- or group-writable, or owned by someone else) would let one user plant a
module under the key of a model another user then builds and imports: such a cache folder is refused with the
way out named; such an entry is not trusted (rebuilt)."""
from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Optional

from ..algorithms import BuildError

BUILD_JSON_LIMIT = 1 << 20          # bytes of a build.json
EXTENSION_LIMIT = 1 << 31           # bytes of a compiled extension
_KINDS = ((stat.S_ISLNK, "a symbolic link"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"),
          (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"), (stat.S_ISDIR, "a folder"))


class Untrusted(Exception):
    """A cache file or folder that must not be read (the message says why)."""


def kind(mode: int) -> str:
    """The kind of file of a stat mode, in words."""
    return next((k for test, k in _KINDS if test(mode)), "not a regular file")


def foreign(st, what: str) -> Optional[str]:
    """Why a file or folder with stat result `st` is not the user's alone, or None."""
    if hasattr(os, "geteuid") and st.st_uid != os.geteuid():
        return f"{what} belongs to another user (uid {st.st_uid})"
    if st.st_mode & 0o022:
        return f"{what} is writable by {'all users' if st.st_mode & 0o002 else 'its group'}"
    return None


def open_trusted(path, limit: int):
    """Open a regular file of the user's that nobody else can write.

    A binary file object on a regular file of the user's that nobody else can write, at most `limit` bytes;
    Untrusted otherwise (a symbolic link is not followed, a FIFO or a device is not waited on)."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    name = Path(path).name
    try:
        fd = os.open(path, flags)
    except FileNotFoundError:
        raise
    except OSError as e:                       # ELOOP: a symbolic link under O_NOFOLLOW
        raise Untrusted(f"{name} cannot be opened safely ({e.strerror or e})") from None
    st = os.fstat(fd)
    why = (f"{name} is {kind(st.st_mode)}" if not stat.S_ISREG(st.st_mode) else foreign(st, name)
           or (f"{name} is larger than {limit:,} bytes" if st.st_size > limit else None))
    if why:
        os.close(fd)
        raise Untrusted(why)
    return os.fdopen(fd, "rb")


def entry_folder_problem(target: Path) -> Optional[str]:
    """Why an entry folder cannot be trusted, 'missing' if there is none, else None.

    Why an entry folder cannot be trusted (a symbolic link, not a folder, someone else's), 'missing' if there
    is none, else None."""
    try:
        st = os.lstat(target)
    except FileNotFoundError:
        return "missing"
    except OSError as e:
        return f"the entry cannot be read ({e.strerror or e})"
    if not stat.S_ISDIR(st.st_mode):
        return f"the entry is {kind(st.st_mode)}"
    return foreign(st, "the entry folder")


def cache_folder(path) -> Path:
    """The cache folder, created if it is missing.

    The cache folder, created (readable by all, writable by the user only) if it is missing; BuildError
    naming it when it cannot be created or is not the user's alone, with the way out."""
    path = Path(path)
    try:
        os.makedirs(path, mode=0o755, exist_ok=True)
    except FileExistsError:
        raise BuildError(f"cache folder {path}: a file of that name exists (set MBGEN_CACHE_DIR or --cache-dir to "
                         f"a folder)") from None
    except OSError as e:
        raise BuildError(f"cache folder {path} cannot be created: {e.strerror or e} (set MBGEN_CACHE_DIR or "
                         f"--cache-dir to a writable folder)") from None
    real = Path(os.path.realpath(path))
    st = os.stat(real)
    if not stat.S_ISDIR(st.st_mode):
        raise BuildError(f"cache folder {path} is not a folder")
    why = foreign(st, f"cache folder {real}")
    if why:
        fix = (f"chmod go-w {real}" if "writable" in why else "a folder of your own")
        raise BuildError(f"{why}: another user could plant code that this process would import. Use {fix}, or set "
                         f"MBGEN_CACHE_DIR (or --cache-dir) to a folder only you can write")
    return path


def check_lock(lock: Path):
    """Check that a lock file that exists is a regular file.

    A lock file that exists must be a regular file (a folder, a symbolic link or a FIFO there would make the
    lock fail or block): BuildError naming it otherwise."""
    try:
        st = os.lstat(lock)
    except FileNotFoundError:
        return
    except OSError as e:
        raise BuildError(f"cache lock {lock} cannot be checked: {e.strerror or e}") from None
    if not stat.S_ISREG(st.st_mode):
        raise BuildError(f"cache lock {lock} is {kind(st.st_mode)}, not a file: remove it (mbgen cache clean does "
                         f"not touch it)")
