"""The command line explains itself: usage without a command, a default in every option's help, no ignored
options, described inspect entries, default output names that do not collide."""
import argparse
import json
import os

import numpy as np
import pytest

from codegen.cli import main, parser
from support.systems import EXAMPLES


def _subparsers(p, prefix=()):
    for a in p._actions:
        if isinstance(a, argparse._SubParsersAction):
            for name, sp in a.choices.items():
                yield prefix + (name,), sp
                yield from _subparsers(sp, prefix + (name,))


def test_mbgen_alone_prints_usage_and_commands(capsys):
    assert main([]) == 2
    err = capsys.readouterr().err
    assert err.startswith("usage: mbgen")
    for cmd in ("check", "build", "simulate", "inspect", "source", "cache"):
        assert f"\n    {cmd} " in err, cmd
    assert "Exit status" in err


def test_every_option_has_help_with_its_default():
    seen = 0
    for path, sp in _subparsers(parser()):
        help_text = sp.format_help()
        for a in sp._actions:
            if not a.option_strings or isinstance(a, (argparse._HelpAction, argparse._VersionAction)):
                continue
            assert a.help, f"mbgen {' '.join(path)} {a.option_strings[0]}: no help"
            seen += 1
            if isinstance(a, (argparse._StoreTrueAction, argparse._StoreFalseAction)) or a.required:
                continue                                   # a flag (off unless given) or a required option
            formatter = sp._get_formatter()
            shown = formatter._get_help_string(a) % {"default": a.default}
            assert "default" in shown, f"mbgen {' '.join(path)} {a.option_strings[0]}: no default in {shown!r}"
        assert "usage: mbgen" in help_text
    assert seen >= 30


def test_source_offers_no_option_it_ignores():
    """source compiles nothing and shows no progress: no --cache-dir, --quiet; it takes what shapes the source."""
    subs = dict(_subparsers(parser()))
    opts = {o for a in subs[("source",)]._actions for o in a.option_strings}
    assert {"--algorithm", "--ref-point", "--out"} <= opts
    assert not {"--cache-dir", "--quiet", "--t-end", "--dt"} & opts
    assert {"--cache-dir", "--quiet"} <= {o for a in subs[("build",)]._actions for o in a.option_strings}


def test_inspect_list_describes_each_entry(capsys):
    assert main(["inspect", "list"]) == 0
    rows = [r.strip() for r in capsys.readouterr().out.splitlines() if r.startswith("  ")]
    assert len(rows) > 20
    for r in rows:
        key, _, desc = r.partition("  ")
        desc = desc.strip()
        assert len(desc.split()) >= 4 and key not in desc, r      # a sentence, not the entry's own name


@pytest.mark.build
def test_default_output_names_do_not_collide(tmp_path, monkeypatch, capsys):
    """The README's runs of one model with other algorithms or options each keep their own results."""
    monkeypatch.chdir(tmp_path)
    model = str(EXAMPLES / "balance_pendulum.yaml")
    runs = {(): "balance_pendulum", ("--algorithm", "mstmm"): "balance_pendulum-mstmm",    # (one other algorithm)
            ("--ref-point", "origin"): "balance_pendulum-origin",
            ("--ref-point", "centroid"): "balance_pendulum",             # the default, spelled out
            ("--integrator", "dopri5"): "balance_pendulum-dopri5"}
    for opts, stem in runs.items():
        assert main(["simulate", model, "--t-end", "0.02", "--dt", "0.01", "--quiet", "--csv", *opts]) == 0
        assert f"results/{stem}.npz" in capsys.readouterr().out, opts
    files = sorted(os.listdir(tmp_path / "results"))
    assert files == sorted(f"{s}.{e}" for s in set(runs.values()) for e in ("npz", "csv"))
    metas = {stem: json.loads(str(np.load(tmp_path / "results" / f"{stem}.npz")["meta"])) for stem in runs.values()}
    assert metas["balance_pendulum-mstmm"]["algorithm"] == "mstmm" and metas["balance_pendulum"]["algorithm"] == \
        "recursive" and metas["balance_pendulum-origin"]["options"] == {"ref_point": "origin"}
    assert metas["balance_pendulum-dopri5"]["integrator"] == "dopri5"
    # --out stays exactly what was asked
    assert main(["simulate", model, "--t-end", "0.02", "--dt", "0.01", "--quiet", "--algorithm", "mstmm",
                 "--out", "mine.npz"]) == 0
    assert (tmp_path / "mine.npz").is_file()


@pytest.mark.parametrize("argv", [["simulate", "--help"], ["source", "--help"], ["cache", "clean", "--help"]])
def test_help_exits_zero(argv, capsys):
    with pytest.raises(SystemExit) as e:
        main(argv)
    assert e.value.code == 0 and "usage: mbgen" in capsys.readouterr().out
