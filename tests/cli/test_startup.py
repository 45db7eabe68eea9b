"""Start-up of a cached `mbgen simulate --quiet` (issue #14: < 1 s): it imports none of the heavy libraries that
only generating, building, plotting, animating or sweeping need (benchmarks/bench_startup.py times it)."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from codegen.cli import main

pytestmark = pytest.mark.build          # every test here compiles or loads a kernel (tests/conftest.py)

ROOT = Path(__file__).resolve().parents[2]
HEAVY = ("sympy", "jinja2", "matplotlib", "scipy", "dask", "Cython", "jsonschema", "tqdm", "filelock",
         "importlib.metadata")
PROBE = """
import json, sys
from codegen.cli import main
rc = main(sys.argv[1:])
print(json.dumps({"rc": rc, "modules": sorted(sys.modules)}))
"""


def _modules(code, *args):
    out = subprocess.run([sys.executable, "-c", code, *args], cwd=ROOT, capture_output=True, text=True, timeout=300,
                         env=dict(os.environ, MPLBACKEND="Agg"))
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("model", ["balance_pendulum", "five_bar", "flexible_pendulum"])
def test_cached_simulate_imports_no_heavy_library(tmp_path, capsys, model):
    argv = ["simulate", f"examples/{model}.yaml", "--t-end", "0.01", "--dt", "0.001", "--quiet",
            "--out", str(tmp_path / "m.npz")]
    assert main(argv) == 0, capsys.readouterr().err          # builds the kernel if the cache does not hold it
    bare = set(_modules("import json, sys; print(json.dumps({'modules': sorted(sys.modules)}))")["modules"])
    run = _modules(PROBE, *argv)
    assert run["rc"] == 0
    heavy = sorted(m for m in set(run["modules"]) - bare
                   if any(m == h or m.startswith(h + ".") for h in HEAVY))
    assert heavy == [], f"a cached `mbgen simulate {model}` imported {heavy}"
