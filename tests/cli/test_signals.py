"""Ctrl-C and SIGTERM stop a long compiled run within a second (the integrators poll for a pending signal every
codegen.algorithms.codes.Poll.EVERY steps): a one-line message, exit 130 / 143, no traceback, no temporary file."""
import os
import signal
import subprocess
import sys
import time

import pytest

import codegen
from support.systems import ROOT, get_system

pytestmark = pytest.mark.build          # every test here compiles or loads a kernel (tests/conftest.py)


def start(argv):
    """The command as a child with Ctrl-C's default action: a runner started in the background (`nohup ... &`)
    passes SIGINT on ignored, and Python keeps an ignored SIGINT ignored (no KeyboardInterrupt to test)."""
    return subprocess.Popen(argv, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))


@pytest.fixture(scope="module")
def chain3():
    get_system(codegen.models.chain(3))            # compiled once: the runs below start from the cache


@pytest.mark.parametrize("sig, code, words", [(signal.SIGINT, 130, "interrupted (Ctrl-C)"),
                                              (signal.SIGTERM, 143, "terminated (SIGTERM)")])
def test_a_signal_stops_a_compiled_run(chain3, tmp_path, sig, code, words):
    # 1000 samples of 10^6 rk4 steps each: the driver gets control back every 10 samples (minutes), so only a
    # signal seen inside the compiled loop stops the run at once
    argv = [sys.executable, "-m", "codegen.cli", "simulate", "chain:3", "--t-end", "1000", "--dt", "1",
            "--substeps", "1000000", "--out", str(tmp_path / "r.npz"), "--quiet"]
    p = start(argv)
    time.sleep(4.0)                                  # start-up, cache hit, into the compiled loop
    assert p.poll() is None, p.communicate()
    t0 = time.perf_counter()
    p.send_signal(sig)
    out, err = p.communicate(timeout=30)
    assert time.perf_counter() - t0 < 5.0 and p.returncode == code, (p.returncode, err)
    assert err.strip() == f"mbgen: {words}" and "Traceback" not in out + err
    assert os.listdir(tmp_path) == []                # no result, no temporary file


def test_a_signal_stops_a_sweep(chain3, tmp_path):
    """A 10^5-run sweep (minutes) stops on Ctrl-C between runs of a chunk: exit 130, one line, nothing written."""
    argv = [sys.executable, "-m", "codegen.cli", "sweep", "chain:3", "--set", "bodies.link1.mass=1:2:100000",
            "--t-end", "0.05", "--in-process", "--out", str(tmp_path / "s.npz"), "--quiet"]
    p = start(argv)
    time.sleep(6.0)                                  # start-up, cache hit, the pre-check, into the runs
    assert p.poll() is None, p.communicate()
    t0 = time.perf_counter()
    p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=30)
    assert time.perf_counter() - t0 < 5.0 and p.returncode == 130, (p.returncode, err)
    assert err.strip() == "mbgen: interrupted (Ctrl-C)" and "Traceback" not in out + err
    assert os.listdir(tmp_path) == []
