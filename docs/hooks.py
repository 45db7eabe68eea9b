r"""MkDocs hooks (mkdocs.yml `hooks:`): the generated parts of the site, written at build time.

Placeholders in a page's markdown (HTML comments, so a page read on GitHub shows nothing in their place):

- ``<!-- mbgen:inspect NAME -->`` or ``<!-- mbgen:inspect NAME | LABEL; LABEL -->``: the output of
  ``mbgen inspect NAME --format latex`` (every element, or those whose label starts with one of the LABELs),
  each element's label followed by its expression as display maths (``$$ ... $$``);
- ``<!-- mbgen:algorithms -->``: the output of ``mbgen inspect algorithms``, as printed;
- ``<!-- mbgen:cli -->``: ``mbgen --help`` and the help of every command, from ``codegen.cli.parser()``.

The benchmark figures of ``benchmarks/results/*.png`` are added to the site as ``media/bench/NAME.png``.
A placeholder naming an unknown element or label stops the build.

Maths, the generated equations and any ``$...$`` / ``$$...$$`` written in a page alike, is turned into MathML
when the site is built (``latex2mathml``): pymdownx.arithmatex (generic mode) marks it as
``<span class="arithmatex">\(...\)</span>`` or ``<div class="arithmatex">\[...\]</div>`` and
``on_page_content`` replaces the TeX inside with ``<math>``, which browsers draw natively. So the site needs no
script and no network to show its equations (offline machines, air-gapped labs); the TeX stays in the page as the
MathML's ``application/x-tex`` annotation. TeX that latex2mathml cannot read, or a command it does not know,
stops the build. The stylesheet ``stylesheets/mbgen-maths.css`` (``MATHS_CSS``) names the maths fonts.
"""
from __future__ import annotations

import argparse
import contextlib
import html
import io
import os
import re
from pathlib import Path

from mkdocs.exceptions import PluginError
from mkdocs.structure.files import File

ROOT = Path(__file__).resolve().parents[1]
PLACEHOLDER = re.compile(r"<!--\s*mbgen:(inspect|algorithms|cli)\b(.*?)-->", re.S)
ARITHMATEX = re.compile(r'<(div|span) class="arithmatex">(.*?)</\1>', re.S)
WRAPS = {"div": ("\\[", "\\]"), "span": ("\\(", "\\)")}      # arithmatex's generic mode: \[...\] and \(...\)
_OUTPUT: dict = {}
# MathML is drawn with a font that has an OpenType MATH table (stretched brackets, fraction bars); a browser's
# default `math` family is often not one, so name those that Windows, macOS and Linux distributions ship.
MATHS_CSS = """\
.md-typeset math {
  font-family: "STIX Two Math", "Latin Modern Math", "Cambria Math", "DejaVu Math TeX Gyre", "TeX Gyre Termes Math",
               "Libertinus Math", math;
  font-size: 1.1em;
}
.md-typeset div.arithmatex { overflow-x: auto; }
"""
MATHS_CSS_URI = "stylesheets/mbgen-maths.css"


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


def tex_to_mathml(tex: str, display: bool, where: str) -> str:
    """MathML of one formula (``<math display="block|inline">``), the TeX kept as its annotation."""
    from latex2mathml.converter import convert
    try:
        mathml = convert(tex, display="block" if display else "inline")
    except Exception as e:                   # latex2mathml's own errors (unbalanced braces, \left without \right)
        raise PluginError(f"{where}: latex2mathml cannot read the maths {tex[:120]!r}: {e!r}") from e
    unknown = re.findall(r">(\\[A-Za-z]+)<", mathml)     # a command it does not know comes out as text
    if unknown:
        raise PluginError(f"{where}: latex2mathml does not know {', '.join(sorted(set(unknown)))} "
                          f"in {tex[:120]!r}")
    head, sep, rest = mathml.partition(">")
    body, tail = rest.rsplit("</math>", 1)
    return (f"{head}{sep}<semantics>{body}<annotation encoding=\"application/x-tex\">"
            f"{html.escape(tex, quote=False)}</annotation></semantics></math>{tail}")


def render_maths(content: str, where: str) -> str:
    """The page's HTML with the TeX of every arithmatex element replaced by MathML."""
    def repl(m):
        tag, tex = m.group(1), html.unescape(m.group(2)).strip()
        left, right = WRAPS[tag]
        if tex.startswith(left) and tex.endswith(right):
            tex = tex[len(left):-len(right)].strip()
        return f'<{tag} class="arithmatex">{tex_to_mathml(tex, tag == "div", where)}</{tag}>'
    return ARITHMATEX.sub(repl, content)


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


def on_page_content(html_, page, config, files):
    return render_maths(html_, page.file.src_uri)


def on_config(config):
    if MATHS_CSS_URI not in config.extra_css:
        config.extra_css.append(MATHS_CSS_URI)
    return config


def on_files(files, config):
    files.append(File.generated(config, MATHS_CSS_URI, content=MATHS_CSS))
    for png in sorted((ROOT / "benchmarks" / "results").glob("*.png")):
        files.append(File.generated(config, f"media/bench/{png.name}", abs_src_path=str(png)))
    return files
