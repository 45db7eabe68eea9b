"""Derivations kept between processes: the printed kernels of joint types and body patterns.

Deriving a joint type's kernels with sympy (simplify, CSE, printing) takes seconds, and every new process did it
again: each ``mbgen`` command, each worker of a test run or a sweep. ``persistent`` keeps a derivation's result in
memory (as ``functools.lru_cache``) and, where the compiler has installed a store (``install``; the compiler's is
``<build cache>/derived``, under the build cache's own trust rules), on disk as JSON, under a name that hashes the
function, its arguments and the sources of this package's model and symbolic layers with the sympy version: a
change to any of them derives afresh. Only printed code (strings, tuples, dicts and the registered dataclasses)
is stored, never sympy objects.
"""
from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
from pathlib import Path
from typing import Callable, Optional, Protocol


class Store(Protocol):
    """Where the derivations live between processes (codegen.compiler.entries.DerivedStore)."""

    def get(self, name: str) -> Optional[bytes]:
        """The bytes stored under `name`, or None (missing, unreadable or untrusted)."""

    def put(self, name: str, data: bytes) -> None:
        """Store `data` under `name` (silently not, where the store cannot be written)."""


_store: Optional[Store] = None
_TYPES = {}                                     # dataclasses a stored result may hold, by name


def install(store: Optional[Store]) -> None:
    """Use `store` for the derivations from now on (None: memory only)."""
    global _store
    _store = store


def register(cls):
    """Class decorator: a dataclass of printed code that stored results may hold."""
    _TYPES[cls.__name__] = cls
    return cls


@functools.lru_cache(maxsize=None)
def fingerprint() -> str:
    """Hash of the sympy version and the sources of codegen.model and codegen.symbolic."""
    import sympy
    h = hashlib.sha256(sympy.__version__.encode())
    package = Path(__file__).resolve().parents[1]
    for f in sorted((package / "model").rglob("*.py")) + sorted((package / "symbolic").rglob("*.py")):
        h.update(f.relative_to(package).as_posix().encode())
        h.update(f.read_bytes())
    return h.hexdigest()[:20]


def _encode(x):
    if isinstance(x, (str, int, float, bool)) or x is None:
        return x
    if isinstance(x, list):
        return [_encode(v) for v in x]
    if isinstance(x, tuple):
        return {"tuple": [_encode(v) for v in x]}
    if isinstance(x, dict) and all(isinstance(k, str) for k in x):
        return {"dict": {k: _encode(v) for k, v in x.items()}}
    if dataclasses.is_dataclass(x) and _TYPES.get(type(x).__name__) is type(x):
        return {"type": type(x).__name__, "fields": {f.name: _encode(getattr(x, f.name)) for f in dataclasses.fields(x)}}
    raise TypeError(f"cannot store a {type(x).__name__}")


def _decode(x):
    if isinstance(x, list):
        return [_decode(v) for v in x]
    if not isinstance(x, dict):
        return x
    if "tuple" in x:
        return tuple(_decode(v) for v in x["tuple"])
    if "dict" in x:
        return {k: _decode(v) for k, v in x["dict"].items()}
    return _TYPES[x["type"]](**{k: _decode(v) for k, v in x["fields"].items()})


def persistent(fn: Callable) -> Callable:
    """Decorator: `fn`'s results (printed code) kept in memory and in the installed store.

    The arguments must be hashable and have a repr that does not change between processes (strings, numbers,
    tuples, frozen dataclasses of those)."""
    @functools.lru_cache(maxsize=None)
    @functools.wraps(fn)
    def cached(*args):
        store = _store
        if store is None:
            return fn(*args)
        call = f"{fn.__module__}.{fn.__qualname__}{args!r}"
        name = f"{fingerprint()}-{hashlib.sha256(call.encode()).hexdigest()[:24]}.json"
        data = store.get(name)
        if data is not None:
            try:
                stored = json.loads(data)
                if stored["call"] == call:
                    return _decode(stored["result"])
            except (ValueError, KeyError, TypeError):
                pass                                        # damaged: derived again and stored over it
        result = fn(*args)
        store.put(name, json.dumps({"call": call, "result": _encode(result)}).encode())
        return result
    return cached
