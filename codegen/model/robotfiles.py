"""Shared parts of the robot-file importers (urdf.py, mjcf.py) and the loader's dispatch.

Which kind of file a path
holds, reading it within the size limit, parsing XML strictly (no recovery, no entities, no network), unique
names, and the optional libraries imported lazily with an install hint."""
from __future__ import annotations

import os
import re
import stat
from typing import Dict, Iterable

from .checks import LIMITS, ModelError, limits_text

class ModelWarning(UserWarning):
    """Something a robot file holds that the model leaves out (on request), or that an export format cannot hold."""


KINDS = {"robot": "urdf", "mujoco": "mjcf"}          # XML root element -> importer
EXTENSIONS = {".urdf": "urdf", ".mjcf": "mjcf"}
EXTRAS = {"yourdfpy": "urdf", "mujoco": "mjcf", "lxml.etree": "urdf"}

_PROLOGUE = re.compile(rb"\s*(<\?.*?\?>|<!--.*?-->|<!DOCTYPE[^>\[]*(\[.*?\])?\s*>)", re.S)
_ROOT = re.compile(rb"\s*<([A-Za-z_][\w.:-]*)")


def file_kind(path: str) -> str:
    """The kind of file a path holds: 'urdf', 'mjcf', 'yaml' or 'xml'.

    'urdf', 'mjcf', 'yaml' or 'xml' (an XML file of another kind) from the extension, else from the content:
    an XML root element <robot> is URDF, <mujoco> is MJCF."""
    ext = os.path.splitext(path)[1].lower()
    if ext in EXTENSIONS:
        return EXTENSIONS[ext]
    try:
        with open_regular(path) as fh:
            head = fh.read(1 << 16)
    except (OSError, ModelError):
        return "yaml"                                # the YAML reader reports the file
    tag = root_tag(head)
    if tag is None:
        return "xml" if ext == ".xml" else "yaml"
    return KINDS.get(tag.split(":")[-1], "xml")


def root_tag(head: bytes):
    """The root element's name of an XML document (its first bytes), None if it does not look like XML."""
    for bom in (b"\xef\xbb\xbf",):
        if head.startswith(bom):
            head = head[len(bom):]
    pos = 0
    while True:
        m = _PROLOGUE.match(head, pos)
        if not m:
            break
        pos = m.end()
    m = _ROOT.match(head, pos)
    return m.group(1).decode("ascii", "replace") if m else None


_KINDS = ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
          (stat.S_ISSOCK, "a socket"))


def open_regular(path: str):
    """Open `path` if it is a regular file.

    A binary file object on `path` if it is a regular file; ModelError naming the file otherwise. Opened
    without blocking, so a FIFO with no writer, a device (/dev/zero) or a socket is refused by its kind instead
    of hanging the reader."""
    try:
        if os.path.isdir(path):
            raise ModelError("cannot read: it is a folder", path)
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    except OSError as e:
        raise ModelError(f"cannot read: {e.strerror or e}", path) from None
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        os.close(fd)
        kind = next((k for test, k in _KINDS if test(mode)), "not a regular file")
        raise ModelError(f"cannot read: it is {kind}, not a regular file", path)
    return os.fdopen(fd, "rb")


def read_limited(path: str, empty: str = "empty file", limit_mb=None) -> bytes:
    """The file's bytes, at most ``limit_mb``.

    ModelError naming the file otherwise
    (``empty``: the message for a file of only white space; a FIFO or a device: refused, see open_regular)."""
    limit_mb = LIMITS["file_mb"] if limit_mb is None else limit_mb
    limit = int(limit_mb * 2 ** 20)
    try:
        with open_regular(path) as fh:
            data = fh.read(limit + 1)
    except OSError as e:
        raise ModelError(f"cannot read: {e.strerror or e}", path) from None
    if len(data) > limit:
        raise ModelError(f"file larger than {limit_mb:g} MB ({limits_text()})", path)
    if not data.strip():
        raise ModelError(empty, path)
    return data


_XML_DECL = re.compile(rb"""^(\s*<\?xml[^>]*?version\s*=\s*)(["'])([^"']*)\2""")


def xml_version_1(data: bytes) -> bytes:
    """The document with its XML version declared 1.0 where it named another.

    The document with an XML declaration of another version than 1.0 or 1.1 (``<?xml version="0.0"?>``, seen in
    robot files that yourdfpy, pinocchio and pybullet load) declared 1.0; libxml2 refuses other versions."""
    m = _XML_DECL.match(data[:200])
    if m and m.group(3) not in (b"1.0", b"1.1"):
        return data[:m.start(3)] + b"1.0" + data[m.end(3):]
    return data


def parse_xml(data: bytes, path: str, what: str):
    """The root element of a well-formed XML document; no entity expansion, no DTD, no network access."""
    etree = require("lxml.etree", path)
    parser = etree.XMLParser(resolve_entities=False, no_network=True, load_dtd=False, huge_tree=False,
                             remove_comments=True)
    try:
        root = etree.fromstring(data, parser)
    except etree.XMLSyntaxError as e:
        line, col = (e.position if getattr(e, "position", None) else (getattr(e, "lineno", 0), 0))
        msg = re.sub(r",? line \d+, column \d+$", "", " ".join(str(getattr(e, "msg", e)).split()))[:200]
        raise ModelError(f"not a well-formed {what} file (XML): {msg} (line {line}, column {col})", path) from None
    if root.getroottree().docinfo.doctype:
        raise ModelError(f"a {what} file must not declare a DOCTYPE (entities are not expanded)", path)
    return root


def require(module: str, path: str = "<model>"):
    """Import an optional library, or ModelError saying which extra installs it."""
    import importlib
    try:
        return importlib.import_module(module)
    except ImportError:
        extra = EXTRAS.get(module, module)
        raise ModelError(f"reading this file needs the '{module.split('.')[0]}' package: pip install \"mbgen[{extra}]\"",
                         path) from None


def unique_name(base: str, taken: Dict[str, object]) -> str:
    """``base``, or ``base_2``, ``base_3``, ... whichever is not in ``taken``."""
    if base not in taken:
        return base
    k = 2
    while f"{base}_{k}" in taken:
        k += 1
    return f"{base}_{k}"


def listing(items: Iterable[str], n: int = 5) -> str:
    """The first `n` items, quoted, and how many more."""
    items = list(items)
    text = ", ".join(repr(x) for x in items[:n])
    return text + (f" and {len(items) - n} more" if len(items) > n else "")
