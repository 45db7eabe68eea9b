"""MkDocs hooks (mkdocs.yml `hooks:`): the generated parts of the site, written at build time.

Placeholders in a page's markdown (HTML comments, so a page read on GitHub shows nothing in their place):

- ``<!-- mbgen:inspect NAME -->`` or ``<!-- mbgen:inspect NAME | LABEL; LABEL -->``: the output of
  ``mbgen inspect NAME --format latex`` (every element, or those whose label starts with one of the LABELs),
  each element's label followed by its expression as display maths (MathJax, pymdownx.arithmatex);
- ``<!-- mbgen:algorithms -->``: the output of ``mbgen inspect algorithms``, as printed;
- ``<!-- mbgen:cli -->``: ``mbgen --help`` and the help of every command, from ``codegen.cli.parser()``.

The benchmark figures of ``benchmarks/results/*.png`` are added to the site as ``media/bench/NAME.png``.
A placeholder naming an unknown element or label stops the build.
"""
from __future__ import annotations

import argparse
import contextlib
import io
import os
import re
from pathlib import Path

from mkdocs.exceptions import PluginError
from mkdocs.structure.files import File

ROOT = Path(__file__).resolve().parents[1]
PLACEHOLDER = re.compile(r"<!--\s*mbgen:(inspect|algorithms|cli)\b(.*?)-->", re.S)
_OUTPUT: dict = {}


def mbgen_output(*argv: str) -> str:
    """What `mbgen ARGV` prints on stdout (run in this process, through codegen.cli.main)."""
    if argv not in _OUTPUT:
        from codegen.cli import main
        buf = io.StringIO()
        with contextlib.redirect_stdout(buf):
            rc = main(list(argv))
        if rc:
            raise PluginError(f"docs/hooks.py: `mbgen {' '.join(argv)}` exited with status {rc}")
        _OUTPUT[argv] = buf.getvalue()
    return _OUTPUT[argv]


def latex_elements(name: str) -> list:
    """[(label, latex)] of `mbgen inspect NAME --format latex` (blocks of '% label' and one line of LaTeX)."""
    out = []
    for block in mbgen_output("inspect", *name.split(), "--format", "latex").strip().split("\n\n"):
        head, _, body = block.partition("\n")
        if not head.startswith("% "):
            raise PluginError(f"docs/hooks.py: unexpected output of mbgen inspect {name}: {block[:80]!r}")
        out.append((head[2:].strip(), body.strip()))
    return out


def render_inspect(arg: str, page) -> str:
    name, _, wanted = arg.partition("|")
    name = " ".join(name.split())
    elements = latex_elements(name)
    if wanted.strip():
        labels = [" ".join(w.split()) for w in wanted.split(";") if w.strip()]
        chosen = []
        for lab in labels:
            hits = [e for e in elements if " ".join(e[0].split()).startswith(lab)]
            if not hits:
                raise PluginError(f"{page.file.src_uri}: mbgen inspect {name} has no element '{lab}' "
                                  f"(there are: {', '.join(e[0] for e in elements)})")
            chosen += [h for h in hits if h not in chosen]
        elements = chosen
    parts = [f"<small>Generated from `mbgen inspect {name} --format latex`.</small>\n"]
    for label, tex in elements:
        parts.append(f"`{label}`\n\n$$\n{tex}\n$$\n")
    return "\n".join(parts)


def _subparsers(p, prefix=("mbgen",)):
    for a in p._actions:
        if isinstance(a, argparse._SubParsersAction):
            for name, sp in a.choices.items():
                yield prefix + (name,), sp
                yield from _subparsers(sp, prefix + (name,))


def render_cli() -> str:
    from codegen.cli import parser
    old = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = "110"            # argparse wraps at $COLUMNS: the same text on every machine
    try:
        p = parser()
        parts = ["<small>Generated from `codegen.cli.parser()` (argparse) when the site is built.</small>\n",
                 "## mbgen\n", "```text\n" + p.format_help().rstrip() + "\n```\n"]
        for path, sp in _subparsers(p):
            parts += [f"## {' '.join(path)}\n", "```text\n" + sp.format_help().rstrip() + "\n```\n"]
    finally:
        if old is None:
            del os.environ["COLUMNS"]
        else:
            os.environ["COLUMNS"] = old
    return "\n".join(parts)


def on_page_markdown(markdown, page, config, files):
    def repl(m):
        kind, arg = m.group(1), m.group(2).strip()
        if kind == "inspect":
            return render_inspect(arg, page)
        if kind == "algorithms":
            return "```text\n" + mbgen_output("inspect", "algorithms").rstrip() + "\n```"
        return render_cli()
    return PLACEHOLDER.sub(repl, markdown)


def on_files(files, config):
    for png in sorted((ROOT / "benchmarks" / "results").glob("*.png")):
        files.append(File.generated(config, f"media/bench/{png.name}", abs_src_path=str(png)))
    return files
