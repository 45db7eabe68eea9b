"""The documentation (README.md, docs/, mkdocs.yml): the site builds with warnings as errors, the README stays a
front page, every name the API reference lists has a docstring, and every code block of the README and docs/
either runs here or says why not (the convention is in docs/contributing.md):

- ``bash`` blocks: every line an ``mbgen`` command, run in-process; status 0, or the one its comment names;
- ``python`` blocks: the blocks of one page in order, in one namespace;
- ``yaml`` blocks: parsed, and a complete model (``bodies`` or ``beams``) loaded and checked;
- a block after ``<!-- not-run: REASON -->`` is not run; ``text`` and unlabelled blocks are output or drawings;
- a ``text`` block after ``<!-- output -->`` is the output of the bash block before it: each of its lines is a
  line of what the block's commands printed (spaces collapsed, numbers free), so shown output stays real.

Blocks run in a temporary folder whose ``examples/`` is the repository's; ``$NAME`` in a bash block is the environment
variable (a python block before it may set it). The tutorials build only kernels the rest of the suite builds
anyway (the build cache is shared by content hash: M1 .. M6 with the options their family tests use, TIAGo as
tests/peers/test_robots.py builds it), so running them costs their runs, not builds.
"""
from __future__ import annotations

import contextlib
import importlib
import importlib.util
import inspect
import io
import os
import re
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
PAGES = [ROOT / "README.md"] + sorted(DOCS.rglob("*.md"))
README_MAX_LINES = 200

FENCE = re.compile(r"^(\s*)```\s*([\w+-]*)\s*$")
NOT_RUN = re.compile(r"^\s*<!--\s*not-run:\s*(.*?)\s*-->\s*$")
OUTPUT = re.compile(r"^\s*<!--\s*output\s*-->\s*$")
SNIPPET = re.compile(r'^\s*--8<--\s+"([^"]+)"\s*$')
RUNNABLE = {"bash", "python", "yaml"}
NOT_CODE = {"", "text"}


@dataclass
class Block:
    page: Path
    line: int                    # 1-based line of the opening fence
    lang: str
    text: str
    not_run: str | None          # the reason, when marked
    output: bool = False         # marked <!-- output -->: the output of the bash block before it

    @property
    def where(self):
        return f"{self.page.relative_to(ROOT)}:{self.line}"

    def source(self) -> str:
        """The block's text with pymdownx.snippets includes (--8<-- "path", from the repository root) expanded."""
        out = []
        for ln in self.text.splitlines():
            m = SNIPPET.match(ln)
            out.append((ROOT / m.group(1)).read_text() if m else ln)
        return "\n".join(out)


def code_blocks(page: Path) -> list:
    lines = page.read_text().splitlines()
    blocks, i = [], 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        indent, lang = m.group(1), m.group(2).lower()
        j = i + 1
        while j < len(lines) and lines[j].strip() != "```":
            j += 1
        body = "\n".join(ln[len(indent):] if ln.startswith(indent) else ln for ln in lines[i + 1:j])
        marker = NOT_RUN.match(lines[i - 1]) if i else None
        output = bool(i and OUTPUT.match(lines[i - 1]))
        blocks.append(Block(page, i + 1, lang, body, marker.group(1) if marker else None, output))
        i = j + 1
    return blocks


def _page_id(p):
    return str(p.relative_to(ROOT))


# ---------------------------------------------------------------- the README and the markers


def test_readme_is_a_front_page():
    n = len((ROOT / "README.md").read_text().splitlines())
    assert n <= README_MAX_LINES, f"README.md has {n} lines (at most {README_MAX_LINES}: move the rest to docs/)"


def test_readme_keeps_the_set_up_commands_of_ci():
    """.ci/run runs the README's two set-up commands: they stay in its Set-up section, word for word."""
    text = (ROOT / "README.md").read_text()
    setup = text[text.index("## Set-up"):].split("\n## ", 1)[0]
    for cmd in ("pip install . && mbgen simulate examples/balance_pendulum.yaml --plot",
                'pip install ".[test]" && python -m pytest -q -n 2'):
        assert cmd in setup, cmd
    assert 'pip install ".[docs]" && mkdocs build --strict' in text


def test_every_code_block_runs_or_says_why_not():
    """A block is runnable (bash of mbgen commands, python, yaml), or output/drawing (text), or marked not-run
    with a reason; a not-run marker gives a reason of a few words."""
    bad = []
    for page in PAGES:
        for b in code_blocks(page):
            if b.not_run is not None:
                if len(b.not_run.split()) < 3:
                    bad.append(f"{b.where}: not-run needs a reason, got {b.not_run!r}")
                continue
            if b.lang in NOT_CODE:
                continue
            if b.lang not in RUNNABLE:
                bad.append(f"{b.where}: a ```{b.lang} block is not run by tests/test_docs.py: mark it "
                           "<!-- not-run: REASON -->")
            elif b.lang == "bash":
                for cmd in _commands(b.text):
                    if cmd[0] != "mbgen":
                        bad.append(f"{b.where}: `{' '.join(cmd)}` is not an mbgen command: mark the block "
                                   "<!-- not-run: REASON -->")
    assert not bad, "\n".join(bad)


def _commands(text):
    """(argv, expected exit status) of each command of a bash block: continuation lines joined, comments read."""
    out = []
    for line in text.replace("\\\n", " ").splitlines():
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        code, _, comment = line.partition(" #")
        m = re.search(r"exit (\d+)", comment)
        argv = [os.path.expandvars(a) for a in shlex.split(code, comments=True)]
        if argv:
            out.append(_Cmd(argv, int(m.group(1)) if m else 0))
    return out


class _Cmd(list):
    def __init__(self, argv, status):
        super().__init__(argv)
        self.status = status


# ---------------------------------------------------------------- running the blocks


RUN_PAGES = [p for p in PAGES if any(b.not_run is None and b.lang in RUNNABLE for b in code_blocks(p))]
# a page whose blocks build or load a kernel is in the build tier (tests/conftest.py; its guard fails a page missed here)
BUILDS = re.compile(r"\bbuild\(|simulate|sweep|animate|rollout|mbgen build")


def _page_param(page):
    text = "\n".join(b.text for b in code_blocks(page) if b.not_run is None and b.lang in RUNNABLE)
    return pytest.param(page, id=_page_id(page), marks=[pytest.mark.build] if BUILDS.search(text) else [])


@pytest.mark.parametrize("page", [_page_param(p) for p in RUN_PAGES])
def test_code_blocks_run(page, tmp_path, monkeypatch, capsys):
    import codegen
    from codegen.cli import main
    from codegen.model.beams import beam_model_from_dict
    monkeypatch.setenv("MPLBACKEND", "Agg")
    (tmp_path / "examples").symlink_to(ROOT / "examples")
    monkeypatch.chdir(tmp_path)
    env, printed = {"__name__": "__docs__"}, ""
    for b in code_blocks(page):
        if b.output:
            _assert_shown_output_is_real(b, printed)
        if b.not_run is not None or b.lang not in RUNNABLE:
            continue
        if b.lang == "yaml":
            data = yaml.safe_load(b.source())
            if isinstance(data, dict) and "beams" in data:
                beam_model_from_dict(data)
            elif isinstance(data, dict) and "bodies" in data:
                codegen.model_from_dict(data)
        elif b.lang == "bash":
            printed = ""
            for cmd in _commands(b.text):
                if cmd[0] != "mbgen":
                    continue                  # test_every_code_block_runs_or_says_why_not names it
                try:
                    rc = main(cmd[1:])
                except SystemExit as e:       # argparse: unknown command or option, --help
                    rc = e.code
                out = capsys.readouterr()
                printed += out.out
                assert (rc or 0) == cmd.status, f"{b.where}: `{' '.join(cmd)}` exited {rc}: {out.err[-2000:]}"
        else:
            with contextlib.redirect_stdout(io.StringIO()):
                try:
                    exec(compile(b.source(), b.where, "exec"), env)
                except Exception as e:
                    raise AssertionError(f"{b.where}: the python block failed: {e!r}") from e


NUMBER = re.compile(r"[-+]?\d+(?:\.\d*)?(?:e[-+]?\d+)?")


def _squash(text):
    """The lines of a text with spaces collapsed and every number read as '#' (wall times and round-off vary)."""
    return [NUMBER.sub("#", " ".join(ln.split())) for ln in text.splitlines() if ln.strip()]


def _assert_shown_output_is_real(b, printed):
    """Every line of an <!-- output --> block is a line the bash block before it printed."""
    real = set(_squash(printed))
    missing = [ln for ln in _squash(b.text) if ln not in real]
    assert not missing, f"{b.where}: shown output differs from the real output; not printed: {missing[:3]}\n" \
                        f"printed:\n{printed[-2000:]}"


def test_the_output_check_can_fail():
    b = Block(ROOT / "README.md", 1, "text", "  results:  results/m.npz\nin 0.009 s wall", None, True)
    _assert_shown_output_is_real(b, "results: results/m.npz\nin 0.2 s wall\nmore\n")
    with pytest.raises(AssertionError, match="not printed"):
        _assert_shown_output_is_real(b, "results: results/other.npz\nin 0.2 s wall\n")


def test_output_markers_follow_a_bash_block():
    bad = []
    for page in PAGES:
        blocks = code_blocks(page)
        for k, b in enumerate(blocks):
            if b.output and (b.lang not in NOT_CODE or k == 0 or blocks[k - 1].lang != "bash"
                             or blocks[k - 1].not_run is not None):
                bad.append(f"{b.where}: <!-- output --> marks a text block right after a bash block that runs")
    assert not bad, "\n".join(bad)


def test_not_run_markers_name_tests_that_exist():
    """A not-run reason that names a test file (tests/...py) names one that exists."""
    bad = [f"{b.where}: {m}" for page in PAGES for b in code_blocks(page) if b.not_run
           for m in re.findall(r"tests/[\w/]+\.py", b.not_run) if not (ROOT / m).is_file()]
    assert not bad, "\n".join(bad)


# ---------------------------------------------------------------- the API reference's docstrings


def _api_entries():
    """(dotted path, options) of every `::: NAME` of docs/reference/api.md, with its `members:` list if any."""
    entries, cur = [], None
    for line in (DOCS / "reference" / "api.md").read_text().splitlines():
        m = re.match(r"^:::\s+(\S+)", line)
        if m:
            cur = {"path": m.group(1), "members": None, "inherited": False}
            entries.append(cur)
        elif cur is not None and re.match(r"^\s+- \w+", line) and cur["members"] is not None:
            cur["members"].append(line.strip()[2:])
        elif cur is not None and line.strip() == "members:":
            cur["members"] = []
        elif cur is not None and line.strip() == "inherited_members: true":
            cur["inherited"] = True
        elif line.strip() and not line.startswith(" "):
            cur = None
    return entries


def _resolve(path):
    parts = path.split(".")
    for k in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:k]))
        except ImportError:
            continue
        for p in parts[k:]:
            obj = getattr(obj, p)
        return obj
    raise ImportError(path)


def _public_members(cls, inherited):
    classes = [c for c in cls.__mro__ if c.__module__.startswith("codegen")] if inherited else [cls]
    seen = {}
    for c in reversed(classes):
        for k, v in vars(c).items():
            if not k.startswith("_") and (inspect.isfunction(v) or isinstance(v, (property, staticmethod,
                                                                                    classmethod))):
                seen[k] = getattr(cls, k) if not isinstance(v, property) else v
    return seen


def test_every_name_of_the_api_reference_has_a_docstring():
    entries = _api_entries()
    assert any(e["path"] == "codegen.build" for e in entries) and len(entries) > 20
    missing = []
    for e in entries:
        obj = _resolve(e["path"])
        if not inspect.getdoc(obj):
            missing.append(e["path"])
        if inspect.ismodule(obj):
            members = {m: getattr(obj, m) for m in (e["members"] or [n for n in dir(obj) if not n.startswith("_")])}
        elif inspect.isclass(obj):
            members = _public_members(obj, e["inherited"])
            if e["members"] is not None:
                members = {k: v for k, v in members.items() if k in e["members"]}
        else:
            members = {}
        for k, v in members.items():
            name = f"{e['path']}.{k}"
            if (inspect.isfunction(v) or inspect.isclass(v) or isinstance(v, property) or inspect.ismethod(v)) \
                    and not inspect.getdoc(v):
                missing.append(name)
    assert not missing, "no docstring: " + ", ".join(missing)


def test_docstrings_follow_the_numpydoc_rules():
    """ruff's pydocstyle rules (`D`, numpy convention; pyproject.toml's [tool.ruff.lint] says which are ignored
    and why) pass on the package: a docstring for every public module, class and function, a one-line summary,
    numpydoc sections. The configuration's ignores apply only without --select on the command line, so the test
    checks that the configuration selects D."""
    pytest.importorskip("ruff")
    conf = (ROOT / "pyproject.toml").read_text()
    assert re.search(r'^\[tool\.ruff\.lint\]\nselect = \["D"\]', conf, re.M), "pyproject.toml: select = [\"D\"]"
    assert 'convention = "numpy"' in conf
    r = subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", "--output-format", "concise", "codegen"],
                       cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stdout[-5000:] + r.stderr[-2000:]


def test_the_public_facade_is_in_the_api_reference():
    import codegen
    listed = {e["path"] for e in _api_entries()}
    absent = [n for n in codegen.__all__ if f"codegen.{n}" not in listed and n != "ALGORITHMS"]
    assert not absent, f"codegen.{absent} missing from docs/reference/api.md"


# ---------------------------------------------------------------- the site


@pytest.fixture(scope="session")
def built_site(tmp_path_factory):
    """mkdocs build --strict, once per test run: the site folder and (return code, output). Under pytest-xdist the
    workers share one build (a file lock in the run's temporary folder) rather than each building the site."""
    pytest.importorskip("mkdocs")
    from filelock import FileLock
    base = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        base = base.parent                   # .../pytest-N/popen-gwK -> .../pytest-N, this run's, shared
    site, status = base / "docs-site", base / "docs-site.status"
    with FileLock(str(base / "docs-site.lock")):
        if not status.exists():
            r = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-q", "-f",
                                str(ROOT / "mkdocs.yml"), "-d", str(site)], cwd=ROOT, capture_output=True,
                               text=True, timeout=600,
                               env={**os.environ, "NO_MKDOCS_2_WARNING": "1", "MPLBACKEND": "Agg"})
            status.write_text(f"{r.returncode}\n{r.stdout[-3000:]}{r.stderr[-5000:]}")
        rc, _, out = status.read_text().partition("\n")
    return site, int(rc), out


def test_the_site_builds_with_no_warning(built_site):
    """mkdocs build --strict: broken links and anchors, pages missing from the navigation, unknown API names,
    unknown `mbgen inspect` elements, maths latex2mathml cannot read all fail; the generated parts are there."""
    site, rc, out = built_site
    assert rc == 0, out
    recursive = (site / "algorithms" / "recursive" / "index.html").read_text()
    assert 'class="arithmatex"' in recursive and r"\begin{matrix}" in recursive   # equations from mbgen inspect
    assert "mbgen:inspect" not in recursive
    cli = (site / "reference" / "cli" / "index.html").read_text()
    assert "usage: mbgen simulate" in cli and "--ref-point" in cli                     # the parser's help
    api = (site / "reference" / "api" / "index.html").read_text()
    assert 'id="codegen.build"' in api and 'id="codegen.System"' in api               # mkdocstrings
    assert (site / "media" / "bench" / "grcr.png").is_file()
    assert (site / "architecture" / "index.html").is_file()


# a tag that makes the browser fetch something from another host when the page is shown
REMOTE_FETCH = re.compile(r'<(?:script|link|img|iframe|source|video|audio|embed)\b[^>]*?\b(?:src|href)='
                          r'["\']?(?:https?:)?//[^"\'\s>]*', re.I)


def test_the_maths_is_mathml_and_nothing_is_fetched_from_the_network(built_site):
    """The equations are MathML written when the site is built (docs/hooks.py, latex2mathml): no MathJax script,
    no CDN, no web fonts; a page read offline shows them. The TeX stays as the MathML's annotation."""
    site, rc, out = built_site
    assert rc == 0, out
    recursive = (site / "algorithms" / "recursive" / "index.html").read_text()
    blocks = re.findall(r'<div class="arithmatex">(.*?)</div>', recursive, re.S)
    assert len(blocks) > 10
    for b in blocks:
        assert b.startswith('<math xmlns="http://www.w3.org/1998/Math/MathML" display="block">'), b[:200]
        assert "<mtable>" in b or "<mi>" in b or "<mn>" in b
        tex = b.split('<annotation encoding="application/x-tex">', 1)[1]
        assert not re.search(r"\\[\[(]", tex)             # arithmatex's \[ \] wrapping is gone
    assert "\\left[" not in re.sub(r"<annotation.*?</annotation>", "", recursive, flags=re.S)   # no TeX shown
    remote = {}
    for page in site.rglob("*.html"):
        for m in REMOTE_FETCH.findall(page.read_text()):
            remote.setdefault(m, str(page.relative_to(site)))
    assert not remote, f"pages fetch from the network: {remote}"
    assert not list(site.rglob("mathjax*.js"))


def _chromium():
    return next((shutil.which(n) for n in ("chromium", "chromium-browser", "google-chrome") if shutil.which(n)), None)


def _screenshot(browser, url, png, size):
    r = subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                        f"--window-size={size[0]},{size[1]}", f"--screenshot={png}", url],
                       capture_output=True, text=True, timeout=120)
    assert png.is_file(), r.stdout[-2000:] + r.stderr[-2000:]
    from PIL import Image
    return Image.open(png).convert("L")


def _ink(img, level=200):
    """(fraction of dark pixels, their bounding box) of a greyscale screenshot."""
    mask = img.point(lambda v: 255 if v < level else 0)
    hist = mask.histogram()
    return hist[255] / (img.width * img.height), mask.getbbox()


@pytest.mark.skipif(_chromium() is None, reason="no chromium on PATH (CI does not install it; "
                    "docs/contributing.md has the check and its screenshot)")
def test_the_equations_render_in_a_headless_browser(built_site, tmp_path):
    """The check of docs/contributing.md: headless Chromium draws the recursive family's page (not blank), and
    one of its equations, the 6x6 matrix T^P, alone on a page is drawn as maths: a tall narrow block of six rows,
    not a line of TeX source across the window."""
    site, rc, out = built_site
    assert rc == 0, out
    browser = _chromium()
    page = site / "algorithms" / "recursive" / "index.html"
    shot = _screenshot(browser, page.as_uri(), tmp_path / "page.png", (1200, 1600))
    lo, hi = shot.getextrema()
    dark, _ = _ink(shot)
    assert hi - lo > 100 and dark > 0.01, f"blank screenshot: extrema {lo}..{hi}, {dark:.2%} dark"

    html = page.read_text()
    tp = re.search(r'<code>T\^P\s+\[KY eq 4\]</code>.*?(<div class="arithmatex">.*?</div>)', html, re.S).group(1)
    css = (site / "stylesheets" / "mbgen-maths.css").as_uri()
    one = tmp_path / "one.html"
    one.write_text(f'<!doctype html><html><head><meta charset="utf-8"><link rel="stylesheet" href="{css}">'
                   f'</head><body style="margin:20px;font-size:16px"><div class="md-typeset">{tp}</div></body></html>')
    dark, box = _ink(_screenshot(browser, one.as_uri(), tmp_path / "one.png", (1200, 400)))
    assert box is not None, "the equation drew nothing"
    width, height = box[2] - box[0], box[3] - box[1]
    assert height > 100 and width < 600, f"T^P drawn {width}x{height} px: not a 6x6 matrix (raw TeX?)"


def test_hand_written_maths_becomes_mathml_and_bad_tex_stops_the_build():
    """`$...$` and `$$...$$` written in a page go the same way as the generated equations: pymdownx.arithmatex
    (mkdocs.yml's settings) marks them, docs/hooks.py's render_maths writes MathML; TeX latex2mathml cannot read
    or does not know stops the build."""
    markdown = pytest.importorskip("markdown")
    pytest.importorskip("latex2mathml")
    from mkdocs.exceptions import PluginError
    spec = importlib.util.spec_from_file_location("docs_hooks", DOCS / "hooks.py")
    hooks = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(hooks)
    md = markdown.Markdown(extensions=["pymdownx.arithmatex"], extension_configs={"pymdownx.arithmatex":
                                                                                    {"generic": True}})
    out = hooks.render_maths(md.convert("The mass $m_i < M$ and\n\n$$\n\\frac{a}{b} + x^{2}\n$$\n"), "page.md")
    assert '<span class="arithmatex"><math xmlns="http://www.w3.org/1998/Math/MathML" display="inline">' in out
    assert '<div class="arithmatex"><math xmlns="http://www.w3.org/1998/Math/MathML" display="block">' in out
    assert "<mfrac>" in out and "<msub>" in out and "<msup>" in out
    assert '<annotation encoding="application/x-tex">m_i &lt; M</annotation>' in out
    assert "\\(" not in out and "\\[" not in out
    for bad in ("$\\frac{1}{$", "$\\nosuchcommand x$"):
        with pytest.raises(PluginError, match="page.md"):
            hooks.render_maths(md.convert(bad), "page.md")
