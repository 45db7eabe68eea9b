"""The package mirrors the pipeline: layers import one way (import-linter), no import circles, small modules,
one folder and one template per algorithm family, every family documented and listed by the CLI."""
import ast
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import codegen
from codegen.algorithms import FAMILIES
from codegen.cli import main

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "codegen"
MAX_LINES = 600
MAX_TEMPLATE_LINES = 410          # templates: passes split into included files (templates/<family>/*.pyx.j2)


def test_layers_contract_holds():
    exe = shutil.which("lint-imports") or os.path.join(os.path.dirname(sys.executable), "lint-imports")
    out = subprocess.run([exe, "--config", str(ROOT / "pyproject.toml")], cwd=ROOT, capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "BROKEN" not in out.stdout and "4 kept, 0 broken" in out.stdout


def _import_graph():
    import grimp
    g = grimp.build_graph("codegen")
    return {m: g.find_modules_directly_imported_by(m) for m in g.modules}


def _cycles(edges):
    """Strongly connected components with more than one module (Tarjan)."""
    index, low, stack, on, out, counter = {}, {}, [], set(), [], [0]
    sys.setrecursionlimit(max(10000, sys.getrecursionlimit()))

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in edges.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return out


def test_no_import_circles():
    edges = _import_graph()
    # the package root is the public facade (it imports every layer); nothing inside imports it
    importers_of_root = [m for m, imp in edges.items() if "codegen" in imp and m != "codegen"]
    assert importers_of_root == [], f"modules importing the package root (a circle): {importers_of_root}"
    assert _cycles(edges) == []


def test_cycle_finder_can_fail():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def _lines_without_docstrings(path: Path) -> int:
    """Lines of a module less those of its docstrings (module, classes, functions): the size rule is about code;
    the numpydoc sections that every public name carries (tests/test_docs.py) do not count."""
    text = path.read_text()
    doc = 0
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value,
                                                                                                    str):
                doc += first.end_lineno - first.lineno + 1
    return len(text.splitlines()) - doc


def test_modules_stay_small():
    big = {str(p.relative_to(ROOT)): n for p in PACKAGE.rglob("*.py")
           if (n := _lines_without_docstrings(p)) > MAX_LINES}
    assert big == {}, f"modules above {MAX_LINES} lines (docstrings not counted): {big}"


def test_templates_stay_small():
    big = {str(p.relative_to(ROOT)): n for p in (ROOT / "templates").rglob("*.j2")
           if (n := len(p.read_text().splitlines())) > MAX_TEMPLATE_LINES}
    assert big == {}, f"templates above {MAX_TEMPLATE_LINES} lines (split a pass into an included file): {big}"


# the templates that read the force elements' records in p through a pointer fp = self.p + <record index>
FORCE_RECORD_TEMPLATES = ("actuators", "tendons", "limits", "friction", "forces", "outputs", "derivative_entries",
                          "derivative_api", "base")


def test_force_element_records_are_read_by_name():
    """fp[AP_gear], never fp[0]: the records' layouts (tree_plan.PARAM_LAYOUTS) are the one place of each offset."""
    import re
    raw = {f"{name}.pyx.j2:{i}": line.strip() for name in FORCE_RECORD_TEMPLATES
           for i, line in enumerate((ROOT / "templates" / "shared" / f"{name}.pyx.j2").read_text().splitlines(), 1)
           if re.search(r"\bfp\[\d+\]|\bfp \+ \d|a\.index \+ \d|self\.p\[\{\{ a\.index \}\}\]", line)}
    assert raw == {}, f"raw offsets into a force element's record (name them in its Layout): {raw}"


def test_force_element_layouts_are_rendered():
    from codegen.algorithms.tree_plan import PARAM_LAYOUTS
    from codegen.compiler.cache import generated_source
    src = generated_source(codegen.models.chain(2))
    for prefix, layout, _ in PARAM_LAYOUTS:
        for b in layout:
            assert f"    {prefix}_{b.name} = {b.off}\n" in src


@pytest.mark.parametrize("name", sorted(FAMILIES))
def test_family_has_its_folder_template_and_docs(name):
    fam = FAMILIES[name]
    assert (PACKAGE / "algorithms" / name / "__init__.py").is_file()
    assert (ROOT / "templates" / fam.template).is_file() and fam.template.startswith(f"{name}/")
    doc = (ROOT / "docs" / "architecture.md").read_text()
    assert f"`{name}`" in doc, f"docs/architecture.md does not describe family {name}"
    assert fam.paper and fam.description and fam.joint_types


def test_family_runtimes_live_in_their_classes():
    """System is the shared driver: no branch on a family or a kind of model; every family names a runtime class
    of codegen.runtime.families, and System(model) is an instance of it."""
    import re
    from codegen.runtime.system import System
    src = (PACKAGE / "runtime" / "system.py").read_text()
    assert not re.findall(r"(?:if|elif|and|or|not)\s+self\.(?:beams|grcr|loops)\b", src)
    assert not re.findall(r"==\s*[\"'](?:grcr|rancf|recursive|dense|cfa|mstmm)[\"']", src)
    assert {f.runtime for f in FAMILIES.values()} <= set(System.KINDS) and "loops" in System.KINDS
    for kind, cls in System.KINDS.items():
        assert cls.__module__ == f"codegen.runtime.families.{kind}", (kind, cls)


def test_inspect_algorithms_lists_every_family(capsys):
    assert main(["inspect", "algorithms"]) == 0
    out = capsys.readouterr().out
    for name, fam in FAMILIES.items():
        assert f"{name}: {fam.description}" in out
        assert fam.paper in out


def test_tests_mirror_the_package():
    """Every test lives beside what it tests: tests/<layer>/ for a codegen/<layer>/ package,
    tests/algorithms/<family>/ for a registered family, tests/cli/ for codegen/cli/; peers and support aside; at the
    top only this file, test_docs.py (README.md, docs/, mkdocs.yml) and test_citations.py (the paper citations),
    which test the repository."""
    extra = {"cli", "peers", "support"}
    for f in (ROOT / "tests").rglob("test_*.py"):
        parts = f.relative_to(ROOT / "tests").parts[:-1]
        if not parts:
            assert f.name in ("test_architecture.py", "test_docs.py", "test_citations.py"), \
                f"{f.name} belongs in a layer folder"
            continue
        if parts[0] in extra:
            assert len(parts) == 1, f
        elif parts[0] == "algorithms" and len(parts) == 2:
            assert parts[1] in FAMILIES, f"{f}: no family {parts[1]!r}"
        else:
            assert (PACKAGE.joinpath(*parts) / "__init__.py").exists(), f"{f}: no package codegen/{'/'.join(parts)}"


def test_every_package_is_installed():
    """pip install . ships the packages listed in pyproject.toml: every folder of codegen/ must be among them."""
    tomllib = pytest.importorskip("tomllib")              # Python 3.11+
    listed = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    found = {".".join(p.parent.relative_to(ROOT).parts) for p in PACKAGE.rglob("__init__.py")}
    assert found - listed == set(), f"packages missing from pyproject.toml: {sorted(found - listed)}"
