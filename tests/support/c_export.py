"""The C export in the tests (tests/compiler/test_export_c.py): its models (the ones other tests already build, so
the Python modules come from the shared build cache), strict compilation, a ctypes view of the library, and a C
comment stripper for the security checks."""
import ctypes
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np

import codegen
from codegen.models import JOINT_MIX, random_tree

STRICT = ["-std=c99", "-Wall", "-Wextra", "-Werror", "-pedantic", "-O2"]


def sprung():
    """tests/algorithms/test_derivatives.py's `sprung` (built there at the centroid): random_tree(14, seed=1,
    forces=True) without its point springs, named sprung14_1: every joint type but free, fixed base, joint spring-dampers and
    sine/step/table joint forces."""
    m = random_tree(14, seed=1, forces=True)
    m.point_springs = []
    return codegen.model_from_dict(dict(m.to_dict(), name="sprung14_1"))


def floating():
    """tests/algorithms/test_derivatives.py's `floating` (built there at the joint point): free base, every joint
    type, free joints inside the tree."""
    return random_tree(14, seed=7, types=JOINT_MIX + ("free", "revolute", "spherical"), floating=True)


def pin_tree():
    """tests/algorithms/test_derivatives.py's test_matches_pinocchio tree (built there at the origin)."""
    return random_tree(12, seed=31, types=("revolute", "prismatic", "spherical", "fixed", "revolute", "spherical"))


# reference point -> (model, where the suite builds its Python module at that point)
CASES = {"centroid": sprung, "joint": floating, "origin": pin_tree}


def cc() -> str:
    return shutil.which("cc") or shutil.which("gcc") or "cc"


def compile_shared(folder: Path, prefix: str, flags=STRICT) -> Path:
    """lib{prefix}.so from the export in folder, with the issue's flags (-Werror: any warning fails)."""
    so = folder / f"lib{prefix}.so"
    out = subprocess.run([cc(), *flags, "-shared", "-fPIC", "-o", str(so), str(folder / f"{prefix}.c"), "-lm"],
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-4000:]
    return so


_D = ctypes.POINTER(ctypes.c_double)


def _p(a):
    return None if a is None else np.ascontiguousarray(a, dtype=np.float64).ctypes.data_as(_D)


class CLib:
    """The exported library through ctypes: one workspace, numpy in and out."""

    def __init__(self, so: Path, prefix: str, nq: int, nv: int):
        self.lib, self.P, self.nq, self.nv = ctypes.CDLL(str(so)), prefix, nq, nv
        self.ws = ctypes.create_string_buffer(self.workspace_size())
        self.fn("init")(self.ws)

    def fn(self, name):
        return getattr(self.lib, f"{self.P}_{name}")

    def workspace_size(self) -> int:
        n = ctypes.c_longlong(0)
        self.fn("fd_work")(None, None, None, ctypes.byref(n))
        return 8 * n.value

    def _call(self, name, t, a, b, c, n):
        out = np.zeros(n)
        f = self.fn(name)
        f.argtypes = [ctypes.c_void_p, ctypes.c_double, _D, _D, _D, _D]
        keep = [None if x is None else np.ascontiguousarray(x, dtype=np.float64) for x in (a, b, c)]
        f(self.ws, t, *[_p(x) for x in keep], out.ctypes.data_as(_D))
        return out

    def forward_dynamics(self, q, u, tau=None, t=0.0):
        return self._call("forward_dynamics", t, q, u, tau, self.nv)

    def inverse_dynamics(self, q, u, ud, t=0.0):
        return self._call("inverse_dynamics", t, q, u, ud, self.nv)

    def mass_matrix(self, q):
        M = np.zeros((self.nv, self.nv))
        q = np.ascontiguousarray(q, dtype=np.float64)
        self.fn("mass_matrix")(self.ws, _p(q), M.ctypes.data_as(_D))
        return M

    def set_params(self, p):
        p = np.ascontiguousarray(p, dtype=np.float64)
        return self.fn("set_params")(self.ws, _p(p))

    def rollout(self, q0, u0, nsteps, h, tau=None, t0=0.0):
        f = self.fn("rollout")
        f.argtypes = [ctypes.c_void_p, ctypes.c_double, ctypes.c_double, ctypes.c_int, _D, _D, _D]
        x0 = np.ascontiguousarray(np.concatenate([q0, u0]))
        X = np.zeros((nsteps + 1, self.nq + self.nv))
        tau = None if tau is None else np.ascontiguousarray(tau, dtype=np.float64)
        n = f(self.ws, t0, h, nsteps, _p(x0), _p(tau), X.ctypes.data_as(_D))
        return n, X[:, :self.nq], X[:, self.nq:]


def strip_c_comments(src: str) -> str:
    """The C source without its comments (block and line); string literals are kept whole (text there is code)."""
    out, k, n = [], 0, len(src)
    while k < n:
        if src.startswith("/*", k):
            end = src.find("*/", k + 2)
            assert end >= 0, "unterminated comment"
            k = end + 2
            out.append(" ")
        elif src.startswith("//", k):
            end = src.find("\n", k)
            k = n if end < 0 else end
        elif src[k] == '"':
            m = re.compile(r'"(?:[^"\\\n]|\\.)*"').match(src, k)
            assert m, "unterminated string"
            out.append(m.group(0))
            k = m.end()
        else:
            out.append(src[k])
            k += 1
    return "".join(out)
