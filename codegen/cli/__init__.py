"""Command line: the ``mbgen`` commands.

Command line: mbgen check | build | simulate | animate | sweep | inspect | source | export | export-c | schema | cache.
One module per group of commands, each with a ``register(subparsers)``; ``parser`` lists them in the order
of ``mbgen --help``.

Exit status: 0 success; 1 internal failure; 2 bad input (model file, options, no command; simulate: also an
rk4 step that the model's stiffness estimate says is unstable, unless --force); 3 simulation diverged (a
non-finite state or a collapsing step size: `mbgen: error: ...` names the time, the coordinate and the last
good state; no results are written unless --keep-partial); 4 energy check failed (--check-energy / the model
file's check_energy; the results are written).
"""
from __future__ import annotations

import argparse
import sys

from . import animate, commands, elements, export, export_c, schema, simulate, sweep
from .common import BAD_INPUT, Formatter, check_output_size, default_stem, load_spec, safe_stem, validate_args
from .simulate import DIVERGED, ENERGY_CHECK_FAILED, SIMULATION_DEFAULTS, cmd_simulate
from .simulate import energy_text as _energy_text  # noqa: F401  (name used by tests)

__all__ = ["BAD_INPUT", "DIVERGED", "ENERGY_CHECK_FAILED", "SIMULATION_DEFAULTS", "check_output_size", "cmd_simulate",
           "default_stem", "load_spec", "main", "parser", "safe_stem", "validate_args"]

EPILOG = """Run 'mbgen COMMAND --help' for the options of a command.
Exit status: 0 success, 2 bad input, 3 simulation diverged, 4 energy check failed.
Examples:
  mbgen check examples/humanoid.yaml
  mbgen simulate examples/balance_pendulum.yaml --plot      # results/balance_pendulum.{npz,png}
  mbgen inspect list"""


def parser():
    """The argument parser of ``mbgen``, with every command registered."""
    from .._version import __version__
    p = argparse.ArgumentParser(prog="mbgen", formatter_class=Formatter, epilog=EPILOG,
                                description="Symbolic-to-Cython multibody dynamics code generator: model file -> "
                                            "compiled O(n) kernel -> simulation and results.")
    p.add_argument("--version", action="version", version=f"mbgen {__version__}")
    sub = p.add_subparsers(dest="cmd", title="commands", metavar="COMMAND")
    commands.register(sub)          # check, build
    simulate.register(sub)
    animate.register(sub)
    sweep.register(sub)
    elements.register(sub)          # inspect
    commands.register_source(sub)
    export.register(sub)
    export_c.register(sub)
    schema.register(sub)
    commands.register_cache(sub)
    return p


class Terminated(BaseException):
    """SIGTERM, raised by its handler where the process is (in compiled runs: at their next signal poll)."""


def _on_sigterm(signum, frame):
    raise Terminated()


def _one_line_warning(message, category, filename, lineno, line=None) -> str:
    """A warning as the command line prints it: one line, without the source line Python adds."""
    text = " ".join(str(message).split())
    return f"mbgen: warning: {text[7:] if text.startswith('mbgen: ') else text}\n"


def main(argv=None) -> int:
    """Run the command line ``mbgen`` with `argv` (default: sys.argv[1:]); returns the exit status."""
    import signal
    import threading
    import warnings
    main_thread = threading.current_thread() is threading.main_thread()
    old = signal.signal(signal.SIGTERM, _on_sigterm) if main_thread else None
    old_format, warnings.formatwarning = warnings.formatwarning, _one_line_warning
    try:
        return _main(argv)
    finally:
        warnings.formatwarning = old_format
        if main_thread:
            signal.signal(signal.SIGTERM, old)


def _main(argv=None) -> int:
    from ..compiler import BuildError
    from ..model import ModelError
    p = parser()
    args = p.parse_args(argv)
    if args.cmd is None:             # `mbgen` alone: the usage and the commands, exit 2 (no command given)
        p.print_help(sys.stderr)
        return BAD_INPUT
    try:
        validate_args(args)          # option values: exit 2 before any model is loaded or built
        rc = args.fn(args)           # simulate returns 3 (diverged) or 4 (energy check failed)
    except ModelError as e:
        print(f"mbgen: error: {e}", file=sys.stderr)
        return BAD_INPUT
    except (ValueError, KeyError, BuildError) as e:
        msg = e.args[0] if isinstance(e, KeyError) and e.args else e
        print(f"mbgen: error: {msg}", file=sys.stderr)
        return BAD_INPUT
    except KeyboardInterrupt:
        print("mbgen: interrupted (Ctrl-C)", file=sys.stderr)
        return 130
    except Terminated:
        print("mbgen: terminated (SIGTERM)", file=sys.stderr)
        return 143
    except BrokenPipeError:          # e.g. `mbgen inspect ... | head`
        sys.stderr.close()
        return 0
    except OSError as e:             # a full or read-only file system, a quota, ... where a file is written
        where = f"{e.filename}: " if getattr(e, "filename", None) else ""
        print(f"mbgen: error: {where}{e.strerror or e} (a full or read-only file system?)", file=sys.stderr)
        return BAD_INPUT
    return rc or 0
