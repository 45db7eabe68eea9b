"""Faults around the command line found by the attack pass of issue #27: default output paths that cannot be
written, a full disk under --out, absurd --workers and --fps, a scheduler address Dask cannot parse, warnings as
one line, a Zarr store interrupted while it is laid out."""
import os
import subprocess
import warnings

import numpy as np
import pytest

from codegen.cli import main


@pytest.mark.build
def test_the_default_out_is_checked_before_the_run(tmp_path, monkeypatch, capsys):
    """`results` is a file where the default --out would create the folder: exit 2 naming it, nothing written."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "results").write_text("not a folder")
    assert main(["sweep", "chain:2", "--set", "gravity.1=-9.81,-1.62", "--t-end", "0.01", "--quiet"]) == 2
    err = capsys.readouterr().err
    assert f"the default --out results/chain2-sweep.npz: {tmp_path / 'results'} is not a folder" in err, err
    assert main(["simulate", "chain:2", "--t-end", "0.01", "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "the default --out results/" in err and "is not a folder" in err and "Traceback" not in err, err
    assert sorted(os.listdir(tmp_path)) == ["results"]


@pytest.mark.build
def test_a_full_disk_under_out_is_one_line(tmp_path, capsys):
    mnt = tmp_path / "fs"
    mnt.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(mnt)], capture_output=True).returncode:
        pytest.skip("cannot mount a tmpfs here")
    try:
        assert main(["simulate", "chain:2", "--t-end", "3", "--quiet", "--csv", "--out", str(mnt / "r.npz")]) == 2
        err = capsys.readouterr().err
        assert f"--out {mnt / 'r.npz'}: cannot write the results: No space left on device" in err, err
        assert "Traceback" not in err and os.listdir(mnt) == []
    finally:
        subprocess.run(["umount", "-l", str(mnt)], capture_output=True)


@pytest.mark.parametrize("argv, words", [
    (["sweep", "chain:2", "--set", "gravity.1=1,2", "--workers", "100000"], "--workers 100000: more than"),
    (["animate", "x.npz", "--fps", "1e300"], "--fps must lie in (0, 1000]")])
def test_absurd_counts_are_refused_before_anything_starts(argv, words, capsys):
    assert main(argv) == 2
    assert words in capsys.readouterr().err


def test_a_scheduler_address_dask_cannot_parse(tmp_path, capfd):
    """A ValueError inside Dask's connection thread: the address named, no thread traceback on stderr."""
    assert main(["sweep", "chain:2", "--set", "gravity.1=-9.81,-1.62", "--t-end", "0.01", "--quiet",
                 "--scheduler", "garbage://x::", "--scheduler-timeout", "2", "--out", str(tmp_path / "s.npz")]) == 2
    err = capfd.readouterr().err
    assert "--scheduler garbage://x::: cannot connect (unknown address scheme 'garbage'" in err, err
    assert "Traceback" not in err


def test_warnings_print_as_one_line_and_the_format_is_restored():
    from codegen.cli import _one_line_warning
    before = warnings.formatwarning
    text = _one_line_warning("mbgen: cache entry X cannot be trusted:\n it is a FIFO", UserWarning, "f.py", 3)
    assert text == "mbgen: warning: cache entry X cannot be trusted: it is a FIFO\n"
    main(["inspect", "list"])
    assert warnings.formatwarning is before


def test_a_zarr_store_interrupted_while_laid_out_leaves_nothing(tmp_path, monkeypatch):
    pytest.importorskip("zarr")
    import zarr
    from codegen.runtime.sweep import _Store

    def interrupted(*a, **k):
        raise KeyboardInterrupt
    monkeypatch.setattr(zarr, "open_group", interrupted)
    with pytest.raises(KeyboardInterrupt):
        _Store(str(tmp_path / "s.zarr"), 3, {"q": np.zeros((5, 2))}, {})
    assert os.listdir(tmp_path) == []
