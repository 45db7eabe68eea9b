"""Versions of installed distributions, read without importing importlib.metadata.

Importing importlib.metadata costs ~20 ms (its email parser) on
the start-up of a cached run: the build key records the Cython and numpy versions, a result's meta those of
sympy and Cython.

``dist_version(name)`` finds what ``importlib.metadata.version(name)`` finds - the first ``*.dist-info`` or
``*.egg-info`` folder on sys.path whose normalised name is ``name``'s - and reads the ``Version:`` header of its
METADATA itself. Anything it does not handle the same way (an .egg-info, a zip or .egg entry on sys.path, two
candidates in one folder, a folded header, another finder of distributions on sys.meta_path) is left to
importlib.metadata, which then answers (or raises PackageNotFoundError) as before.
"""
from __future__ import annotations

import os
import re
import sys


_NOT_FOUND = object()


def _fast(name: str):
    """The version, _NOT_FOUND when no entry of sys.path holds the distribution, or None: ask importlib.metadata."""
    from importlib.machinery import PathFinder
    if [f for f in sys.meta_path if getattr(f, "find_distributions", None) is not None] != [PathFinder]:
        return None
    want = re.sub(r"[-_.]+", "-", name).lower().replace("-", "_")       # importlib.metadata.Prepared.normalize
    for entry in sys.path:
        root = entry or "."
        if os.path.basename(entry).lower().endswith(".egg"):
            return None
        try:
            children = os.listdir(root)
        except OSError:
            if os.path.exists(root):               # a zip file: importlib.metadata looks inside
                return None
            continue
        found = [c for c in children if c.lower().endswith((".dist-info", ".egg-info"))
                 and re.sub(r"[-_.]+", "-", c.lower().rpartition(".")[0].partition("-")[0]).replace("-", "_") == want]
        if not found:
            continue
        if len(found) > 1 or not found[0].lower().endswith(".dist-info"):
            return None
        try:
            with open(os.path.join(root, found[0], "METADATA"), encoding="utf-8") as fh:
                lines = fh.read().split("\n")
        except (OSError, ValueError):
            return None
        for k, line in enumerate(lines):
            if not line.strip():
                return None                        # end of the headers: no Version
            if line.lower().startswith("version:"):
                if k + 1 < len(lines) and lines[k + 1][:1] in (" ", "\t"):
                    return None                    # folded
                return line.split(":", 1)[1].lstrip(" \t").rstrip("\r")
        return None
    return _NOT_FOUND


def dist_version(name: str, default=None) -> str:
    """The installed version of distribution ``name``.

    importlib.metadata.version(name), mostly without importing importlib.metadata; for a distribution that is
    not installed ``default``, or with None PackageNotFoundError."""
    v = _fast(name)
    if v is _NOT_FOUND and default is not None:
        return default
    if v is not None and v is not _NOT_FOUND:
        return v
    from importlib.metadata import PackageNotFoundError, version
    try:
        return version(name)
    except PackageNotFoundError:
        if default is None:
            raise
        return default
