"""End to end through the CLI: simulate writes NPZ (documented fields), CSV and PNG atomically."""
import json
import os

import numpy as np
import pytest

import codegen
from codegen.cli import main

pytestmark = pytest.mark.build          # every test here compiles or loads a kernel (tests/conftest.py)


def test_simulate_writes_documented_results(tmp_path, capsys):
    out = tmp_path / "m1.npz"
    rc = main(["simulate", "examples/balance_pendulum.yaml", "--t-end", "0.5", "--dt", "0.01", "--ref-point",
               "origin", "--out", str(out), "--csv", "--plot", "--quiet"])
    assert rc == 0, capsys.readouterr().err
    text = capsys.readouterr().out
    assert "results:" in text and "figure:" in text
    z = np.load(out)
    nt, nb = 51, 4
    assert z["t"].shape == (nt,) and np.isclose(z["t"][-1], 0.5)
    assert z["q"].shape == (nt, 4) and z["u"].shape == (nt, 4)
    assert list(z["coord_names"]) == ["pin7.angle", "hinge1.angle", "hinge5.angle", "hinge3.angle"]
    assert set(z["body_names"]) == {"body1", "body3", "body5", "body7"}
    assert z["body_com"].shape == (nt, nb, 3) and z["body_quat"].shape == (nt, nb, 4)
    assert z["energy_kinetic"].shape == (nt,) and z["energy_potential"].shape == (nt,)
    meta = json.loads(str(z["meta"]))
    assert meta["algorithm"] == "recursive" and meta["options"] == {"ref_point": "origin"}
    assert meta["integrator"] == "rk4" and meta["wall_time_s"] > 0 and "numpy" in meta["versions"]
    # M1 geometry at t = 0: body 1 hangs from (-0.5, 0): centre (-0.5, -0.5); body 3 below body 5
    names = list(z["body_names"])
    assert np.allclose(z["body_com"][0, names.index("body1")], [-0.5, -0.5, 0], atol=1e-14)
    assert np.allclose(z["body_com"][0, names.index("body3")], [0.5, -1.5, 0], atol=1e-14)
    assert np.allclose(z["body_quat"][0, names.index("body7")], [1, 0, 0, 0])
    csv = (tmp_path / "m1.csv").read_text().splitlines()
    assert csv[0].startswith("t,q:pin7.angle") and len(csv) == nt + 1
    png = (tmp_path / "m1.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 10000
    assert not [f for f in os.listdir(tmp_path) if f.startswith(".tmp")]
    r = codegen.load_result(out)
    assert np.array_equal(r.q, z["q"]) and r.meta == meta


def test_simulate_chain_from_cli_spec_with_dopri5(tmp_path, capsys):
    out = tmp_path / "c.npz"
    assert main(["simulate", "chain:3", "--t-end", "1", "--dt", "0.1", "--integrator", "dopri5", "--rtol", "1e-9",
                 "--out", str(out), "--quiet"]) == 0
    z = np.load(out)
    assert z["q"].shape == (11, 3)
    e = z["energy_kinetic"] + z["energy_potential"]
    assert np.max(np.abs(e - e[0])) < 1e-7 * np.abs(z["energy_kinetic"]).max()   # e[0] = 0 (horizontal, at rest)
    assert main(["build", "chain:3", "--quiet"]) == 0
    assert "cache hit" in capsys.readouterr().out


def test_branch_spec_with_mstmm_writes_joint_wrenches(tmp_path, capsys):
    """'branch:N' is model M5 with bodies 1, 3, ..., N; --joint-wrench adds joint_wrench (nt x joints x 6)."""
    out = tmp_path / "b.npz"
    assert main(["simulate", "branch:15", "--algorithm", "mstmm", "--t-end", "0.05", "--dt", "0.01",
                 "--joint-wrench", "--out", str(out), "--quiet"]) == 0
    z = np.load(out)
    nb = 8
    assert sorted(z["body_names"]) == sorted(f"body{k}" for k in range(1, 16, 2))
    assert z["joint_wrench"].shape == (6, nb, 6) and len(z["joint_names"]) == nb
    ceiling = list(z["joint_child"]).index(list(z["body_names"]).index("body15"))
    # at rest, but body 11 tips (3 rods hang on one end, 2 on the other): the ceiling carries less than
    # the weight, the same wrench as the API reports at the initial state
    assert 0.9 * nb * 9.81 < np.linalg.norm(z["joint_wrench"][0, ceiling, :3]) < nb * 9.81
    s = codegen.build(codegen.models.branch_system(15), "mstmm")
    W = s.joint_wrenches(*s.initial_state())
    assert np.allclose(W, z["joint_wrench"][0], rtol=1e-12, atol=1e-12)
    assert main(["check", "branch:12"]) == 2
    assert "odd N >= 13" in capsys.readouterr().err


def test_writers_of_one_folder_take_turns(tmp_path):
    """simulate writes its NPZ, CSV and PNG under an advisory lock on the output folder: a second run writing the
    same --out waits for the first, so the files are all of one run (the later), never a mixture."""
    import fcntl
    import subprocess
    import sys
    import time
    from support.systems import ROOT, get_system
    get_system(codegen.models.chain(2))                         # from the cache in the subprocess
    fd = os.open(tmp_path, os.O_RDONLY)
    fcntl.flock(fd, fcntl.LOCK_EX)                              # another writer holds the folder
    p = subprocess.Popen([sys.executable, "-m", "codegen.cli", "simulate", "chain:2", "--t-end", "0.1", "--csv",
                          "--out", str(tmp_path / "r.npz"), "--quiet"], cwd=ROOT, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    time.sleep(4.0)
    assert p.poll() is None and not (tmp_path / "r.npz").exists()   # waiting, nothing written
    os.close(fd)
    out, err = p.communicate(timeout=60)
    assert p.returncode == 0, err
    assert sorted(os.listdir(tmp_path)) == ["r.csv", "r.npz"]
