"""Field checks of the model layer.

Errors that name the file and the field, the input limits, typed
readers for numbers, names, vectors, matrices, inertias and rotations."""
from __future__ import annotations

import math
import numbers
import reprlib
from typing import List, Optional

import numpy as np

# Input limits, checked before any work starts (loader, validation, 'chain:N' / 'branch:N', CLI).
LIMITS = {
    "bodies": 100_000,          # rigid bodies (= joints) of a model; beams of a beam model
    "beam_elements": 100_000,   # elements over all beams of a beam model
    "forces": 100_000,          # force elements of a model; loads of a beam model
    "table_points": 100_000,    # points of one force table
    "name_length": 200,         # characters of one name
    "file_mb": 50,              # size of a model file (and of each file an MJCF file includes)
    "assets_mb": 500,           # an MJCF file with its includes and assets (meshes, textures)
    "yaml_nodes": 1_000_000,    # YAML nodes of a model file, aliases expanded
    "yaml_depth": 64,           # nesting depth of a model file
}


def limits_text() -> str:
    """The limits as one line, for error messages."""
    return "limits: " + ", ".join(f"{k} {v:,}" for k, v in LIMITS.items())


class ModelError(ValueError):
    """Bad model input. ``str(err)`` names the file and the field.

    Parameters
    ----------
    message : str
        What is wrong.
    source : str, optional
        The file (or ``<model>``).
    field : str, optional
        The field path, e.g. ``joints[2].axis``.
    """

    def __init__(self, message: str, source: str = "<model>", field: str = ""):
        source = str(source)
        self.source, self.field, self.message = source, field, message
        where = f"{source}: {field}: " if field else f"{source}: "
        super().__init__(where + message)


# ---------------------------------------------------------------- validation
#
# Every check raises ModelError(message, source, field path). User values are echoed through _short (a
# bounded repr: no line breaks, never the whole of a huge or alias-expanded structure).

_REPR = reprlib.Repr()
_REPR.maxstring, _REPR.maxother, _REPR.maxlist, _REPR.maxdict, _REPR.maxlevel = 60, 60, 6, 4, 3


def _short(value) -> str:
    """A bounded one-line repr of a user value for messages."""
    try:
        return _REPR.repr(value)
    except Exception:                    # a hostile __repr__ (Python API only)
        return f"<{type(value).__name__}>"


def _too_many(count: int, what: str, key: str, source, fld) -> ModelError:
    return ModelError(f"{count:,} {what} exceed the limit of {LIMITS[key]:,} ({limits_text()})", source, fld)


PHYSICAL_RANGE = (1e-100, 1e100)     # |x| of a mass, length or inertia in SI units (0 allowed): products stay normal


def _physical(v, src, fld):
    """Refuse numbers whose products would leave double precision.

    Refuse numbers whose products would leave double precision (a mass of 1e308, a length of 1e300, a
    denormal inertia), naming the field, before anything is built."""
    a = np.abs(np.asarray(v, dtype=float))
    bad = a[(a != 0) & ((a < PHYSICAL_RANGE[0]) | (a > PHYSICAL_RANGE[1]))]
    if bad.size:
        raise ModelError(f"{bad.flat[0]:.3g} is outside the range of a physical model: nonzero magnitudes lie in "
                         f"[{PHYSICAL_RANGE[0]:g}, {PHYSICAL_RANGE[1]:g}] (SI units)", src, fld)


def _num(v, source, fld, positive=False, nonneg=False, integer=False, what=None):
    """A real, finite number (bool is not one).

    Strings such as '4e-4' (YAML 1.1 reads exponent forms
    without a dot as strings) are accepted. ``integer``: an integral value (2.0 is 2; 2.5 is refused)."""
    if isinstance(v, str):
        try:
            parsed = float(v.strip()) if len(v) <= 100 else None
        except ValueError:
            parsed = None
        if parsed is None:
            raise ModelError(f"expected a number, got {_short(v)}", source, fld)
        v = parsed
    if isinstance(v, (bool, np.bool_)) or not isinstance(v, numbers.Real):
        raise ModelError(f"expected a number, got {_short(v)}", source, fld)
    try:
        x = float(v)
    except (OverflowError, ValueError, TypeError):
        raise ModelError("must be a finite number (too large for a float)", source, fld) from None
    if not math.isfinite(x):
        raise ModelError(f"must be finite, got {x}", source, fld)
    if integer and x != math.floor(x):
        raise ModelError(f"expected an integer, got {x:g}", source, fld)
    if positive and x <= 0:
        raise ModelError(f"{what + ' ' if what else ''}must be positive, got {x:g}", source, fld)
    if nonneg and x < 0:
        raise ModelError(f"{what + ' ' if what else ''}must be non-negative, got {x:g}", source, fld)
    if integer:
        return int(v) if isinstance(v, numbers.Integral) else int(x)
    return x


def _name(v, source, fld, what="name", printable=False) -> str:
    """A non-empty string.

    ``printable`` (model files): at most LIMITS['name_length'] characters, none of them
    a control, format or separator character other than the space. The Python API takes any non-empty
    string: user strings reach generated source only through the comment filter."""
    if not isinstance(v, str):
        raise ModelError(f"a {what} must be a string, got {_short(v)}", source, fld)
    if not v:
        raise ModelError(f"missing {what} (an empty string)", source, fld)
    if printable and len(v) > LIMITS["name_length"]:
        raise ModelError(f"a {what} is at most {LIMITS['name_length']} characters, got {len(v):,} "
                         f"({limits_text()})", source, fld)
    if printable and not v.isprintable():
        bad = next(c for c in v if not c.isprintable())
        raise ModelError(f"a {what} must be printable text, got {_short(v)} (character {bad!r})", source, fld)
    return v


def _seq(value):
    """A list view of a list, tuple or 1-d/2-d numpy array; None for anything else."""
    if isinstance(value, np.ndarray):
        return value.tolist() if value.ndim >= 1 else None
    return value if isinstance(value, (list, tuple)) else None


_PLAIN = (int, float)


def _plain(seq) -> Optional[np.ndarray]:
    """Fast path: a flat list or numeric array as a float array, or None.

    Fast path: a flat list/tuple of plain finite floats and ints (not bool) or a numeric 1-d/2-d array, as a
    float array; None when anything needs the element-by-element check (which names the element)."""
    try:
        if type(seq) is np.ndarray:
            if seq.dtype.kind not in "fiu":
                return None
            arr = seq.astype(float)
        else:
            for x in seq:
                if type(x) not in _PLAIN:
                    return None
            arr = np.array(seq, dtype=float)
    except (OverflowError, TypeError, ValueError):
        return None
    return arr if np.isfinite(arr).all() else None


def _vec(value, n, source, fld) -> np.ndarray:
    if type(value) in (list, np.ndarray) and len(value) == n and (type(value) is list or value.shape == (n,)):
        arr = _plain(value)
        if arr is not None:
            return arr
    seq = _seq(value)
    if seq is None or len(seq) != n:
        raise ModelError(f"expected a list of {n} numbers, got {_short(value)}", source, fld)
    return np.array([_num(x, source, f"{fld}[{k}]") for k, x in enumerate(seq)], dtype=float)


def _numlist(value, source, fld, min_len=0, max_key="table_points") -> np.ndarray:
    """A list of finite numbers of any length in [min_len, LIMITS[max_key]]."""
    seq = _seq(value)
    if seq is None:
        raise ModelError(f"expected a list of numbers, got {_short(value)}", source, fld)
    if len(seq) > LIMITS[max_key]:
        raise _too_many(len(seq), "points", max_key, source, fld)
    if len(seq) < min_len:
        raise ModelError(f"expected at least {min_len} numbers, got {len(seq)}", source, fld)
    return np.array([_num(x, source, f"{fld}[{k}]") for k, x in enumerate(seq)], dtype=float)


def _mat3(value, source, fld) -> np.ndarray:
    """3x3 matrix, or 3 principal (diagonal) / 6 unique entries (ixx iyy izz ixy ixz iyz)."""
    if type(value) is np.ndarray and value.shape == (3, 3):
        arr = _plain(value)
        if arr is not None:
            return arr
    elif type(value) is list and len(value) == 3 and all(type(r) is list and len(r) == 3 for r in value):
        arr = _plain(value[0] + value[1] + value[2])
        if arr is not None:
            return arr.reshape(3, 3)
    seq = _seq(value)

    def bad():
        return ModelError(f"expected a 3x3 matrix (or 3 principal / 6 unique entries), got {_short(value)}",
                          source, fld)
    if seq is None or len(seq) not in (3, 6):
        raise bad()
    if len(seq) == 3 and all(_seq(r) is not None for r in seq):
        rows = [_seq(r) for r in seq]
        if any(len(r) != 3 for r in rows):
            raise bad()
        return np.array([[_num(x, source, f"{fld}[{i}][{k}]") for k, x in enumerate(r)] for i, r in enumerate(rows)])
    v = [_num(x, source, f"{fld}[{k}]") for k, x in enumerate(seq)]
    if len(v) == 3:
        return np.diag(v)
    ixx, iyy, izz, ixy, ixz, iyz = v
    return np.array([[ixx, ixy, ixz], [ixy, iyy, iyz], [ixz, iyz, izz]])


# Inertia tensors as real robot files give them (pinocchio and MuJoCo accept these too): zero (a point mass), positive
# semi-definite (a thin rod), principal moments on the edge of the triangle inequality, round-off such as -5e-20.
# Tolerances: relative to the largest entry (scale), plus an absolute floor; whether the mass matrix is regular is
# decided for the whole model (massprops.py).
INERTIA_PSD_TOL = 1e-9           # eigenvalues down to -(tol * scale + INERTIA_ABS_TOL) count as zero
INERTIA_TRIANGLE_TOL = 1e-6      # a + b >= c - (tol * scale + INERTIA_ABS_TOL), principal moments a <= b <= c
INERTIA_ABS_TOL = 1e-12          # kg m^2 in SI units: (1 micrometre)^2 x 1 kg


def _check_inertia(J: np.ndarray, source: str, fld: str):
    scale = float(np.abs(J).max())
    if scale == 0:
        return                           # a point mass
    Js = J / scale                       # eigenvalues of the scaled tensor: no overflow near 1e308
    if not np.allclose(Js, Js.T, rtol=0, atol=1e-12):
        raise ModelError("inertia tensor must be symmetric", source, fld)
    ev = np.linalg.eigvalsh(0.5 * (Js + Js.T))
    floor = INERTIA_ABS_TOL / scale
    if ev.min() < -(INERTIA_PSD_TOL + floor):
        raise ModelError(f"inertia tensor must be positive semi-definite (eigenvalues {(ev * scale).tolist()})",
                         source, fld)
    a, b, c = ev
    if a + b < c - (INERTIA_TRIANGLE_TOL + floor):
        raise ModelError(f"principal moments {(ev * scale).tolist()} violate the triangle inequality "
                         f"(a + b >= c, relative tolerance {INERTIA_TRIANGLE_TOL:g})", source, fld)


LIMIT_SOLREF = (0.02, 1.0)     # MuJoCo's default solref: time constant [s], damping ratio


def _solref(value, source, fld) -> np.ndarray:
    """A limit's (time constant, damping ratio), both > 0; None: MuJoCo's default LIMIT_SOLREF."""
    sr = _vec(LIMIT_SOLREF if value is None else value, 2, source, fld)
    if not (sr[0] > 0 and sr[1] > 0):
        raise ModelError(f"time constant and damping ratio must be > 0, got {_short(sr.tolist())}", source, fld)
    return sr


def _check_inertias(Js: List[np.ndarray], source: str, fields: List[str], triangle: bool = True) -> List[str]:
    """_check_inertia for many tensors at once.

    (numpy per call costs more than the check); the first failing
    one is re-checked alone for its message. triangle=False: tensors that only break the triangle inequality pass,
    and their fields are returned (the caller warns)."""
    if not Js:
        return []
    J = np.array(Js)
    scale = np.abs(J).max(axis=(1, 2))
    Js_ = J / np.where(scale > 0, scale, 1.0)[:, None, None]
    ok = (np.abs(Js_ - Js_.transpose(0, 2, 1)) <= 1e-12).all(axis=(1, 2))
    ev = np.linalg.eigvalsh(0.5 * (Js_ + Js_.transpose(0, 2, 1)))
    floor = INERTIA_ABS_TOL / np.where(scale > 0, scale, 1.0)
    ok &= ev[:, 0] >= -(INERTIA_PSD_TOL + floor)
    tri = ev[:, 0] + ev[:, 1] >= ev[:, 2] - (INERTIA_TRIANGLE_TOL + floor)
    ok |= scale == 0
    for k in np.flatnonzero(~ok):
        _check_inertia(J[k], source, fields[k])
    bad = [fields[k] for k in np.flatnonzero(~tri & (scale > 0))]
    if bad and triangle:
        _check_inertia(J[fields.index(bad[0])], source, bad[0])
    return bad


def _check_rotations(Rs: List[np.ndarray], source: str, fields: List[str]):
    """Proper orthonormal rotation matrices, checked at once; the first failing one is named."""
    if not Rs:
        return
    R = np.array(Rs)
    ok = np.abs(R).max(axis=(1, 2)) <= 1 + 1e-6
    Rc = np.where(ok[:, None, None], R, 0.0)
    ok &= (np.abs(Rc @ Rc.transpose(0, 2, 1) - np.eye(3)) <= 1e-9).all(axis=(1, 2))
    ok &= np.linalg.det(Rc) > 0
    for k in np.flatnonzero(~ok):
        if not _orthonormal(R[k]):
            raise ModelError("rotation matrix must be proper orthonormal", source, fields[k])


def _normalised(v: np.ndarray, source, fld, message="axis must be non-zero", tiny=1e-12) -> np.ndarray:
    """v / |v| computed without overflow (|v| of [1e308, 1e308, 0] is not inf here); |v| < tiny is refused."""
    m = float(np.abs(v).max()) if len(v) else 0.0
    if m == 0:
        raise ModelError(message, source, fld)
    w = v / m
    n = float(np.linalg.norm(w))
    if m * n < tiny:
        raise ModelError(f"{message} (its length {m * n:.3g} is below {tiny:g})", source, fld)
    return w / n


def _unit(v, source, fld):
    """An axis (a direction) as a unit vector.

    Any length is accepted but one whose square overflows: a component beyond PHYSICAL_RANGE (three of 1e308, whose
    length is inf) is a broken file, refused by name."""
    v = np.asarray(v, float)
    big = float(np.abs(v).max()) if v.size else 0.0
    if big > PHYSICAL_RANGE[1]:
        raise ModelError(f"axis component {big:.3g} is beyond {PHYSICAL_RANGE[1]:g}: its length overflows; give a unit "
                         f"vector (or any non-zero vector of moderate components)", source, fld)
    return _normalised(v, source, fld)


def _check_count(items, what, key, source, fld):
    seq = _seq(items) if not isinstance(items, list) else items
    if seq is None:
        raise ModelError(f"expected a list, got {_short(items)}", source, fld)
    if len(seq) > LIMITS[key]:
        raise _too_many(len(seq), what, key, source, fld)


def _orthonormal(R: np.ndarray) -> bool:
    if np.abs(R).max() > 1 + 1e-6:      # entries of a rotation are in [-1, 1] (and no overflow below)
        return False
    return bool(np.allclose(R @ R.T, np.eye(3), atol=1e-9) and np.linalg.det(R) > 0)


def _check_keys(d, allowed, source, fld):
    """A mapping whose keys are all in ``allowed`` (rigid and beam schemas alike)."""
    if not isinstance(d, dict):
        raise ModelError(f"expected a mapping, got {_short(d)}", source, fld)
    unknown = set(d) - set(allowed)
    if unknown:
        shown = sorted(unknown, key=lambda k: (not isinstance(k, str), str(k)))
        raise ModelError(f"unknown keys {_short(shown)} (allowed: {sorted(allowed)})", source, fld)
