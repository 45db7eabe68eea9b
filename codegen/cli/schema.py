"""mbgen schema: the JSON Schema of model files, or the model-file reference page generated from it."""
from __future__ import annotations

import sys

from .common import Formatter


def register(sub):
    """Register the command ``schema``."""
    s = sub.add_parser("schema", help="print the JSON Schema of model files (for editors) or its reference page",
                       formatter_class=Formatter,
                       description="The model file format as a JSON Schema (draft 2020-12). Point an editor at it,\n"
                                   "e.g. with the YAML language server: mbgen schema > mbgen-model.schema.json and a\n"
                                   "first line '# yaml-language-server: $schema=mbgen-model.schema.json' in the file.")
    s.add_argument("--markdown", action="store_true",
                   help="print the model-file reference page generated from the schema (docs/model-format.md)")
    s.add_argument("--out", default=None, help="write to this file (default: standard output)")
    s.set_defaults(fn=cmd_schema)


def cmd_schema(args):
    """Run ``mbgen schema``."""
    from ..model.schema import schema_json
    from ..model.schema_doc import reference_markdown
    text = reference_markdown() if args.markdown else schema_json()
    if args.out:
        from ..runtime import atomic_write
        atomic_write(args.out, lambda fh: fh.write(text.encode()))
        print(args.out)
    else:
        sys.stdout.write(text)
