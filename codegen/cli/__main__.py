"""Run the command line: ``python -m codegen.cli``."""
import sys

from . import main

sys.exit(main())
