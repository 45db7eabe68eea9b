"""One citation form for the papers: `[KEY eq N]`, `[KEY eqs N-M, K]` (keys in docs/architecture.md).

Every equation cited in the package, the templates and a generated module has a row in the architecture tables,
and every row points to files and names that exist, so grep finds one equation and the table leads to its code."""
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "architecture.md"
KEYS = ("KY", "LHZ", "CA", "RBW", "HW", "CM", "RBDA")
CITE = re.compile(r"\[(" + "|".join(KEYS) + r") (eqs?) ([0-9][0-9.a-z, -]*)\]")
BARE = re.compile(r"\b(?:[Ee]qs?|[Ee]quations?)\.?\s*\(?\d")


def sources():
    return sorted((ROOT / "codegen").rglob("*.py")) + sorted((ROOT / "templates").rglob("*.j2"))


def numbers(spec: str) -> set:
    """'9-21, 27' -> {'9', ..., '21', '27'}; '7.38-7.45' -> {'7.38', ..., '7.45'}; '12a' -> {'12a'}."""
    out = set()
    for part in re.split(r",\s*", spec.strip()):
        a, _, b = part.partition("-")
        if not b:
            out.add(a)
            continue
        pa, _, na = a.rpartition(".")
        pb, _, nb = b.rpartition(".")
        assert pa == pb and na.isdigit() and nb.isdigit() and int(na) <= int(nb), f"bad range {part!r}"
        out |= {f"{pa}.{k}" if pa else str(k) for k in range(int(na), int(nb) + 1)}
    return out


def cited(text: str) -> set:
    return {(m.group(1), n) for m in CITE.finditer(text) for n in numbers(m.group(3))}


def table_rows():
    """(key, equation numbers, where-cell) of every row of the paper tables whose first cell cites equations."""
    rows = []
    for line in DOC.read_text().splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")] if line.startswith("|") else []
        if len(cells) >= 3 and CITE.search(cells[0]):
            rows.append((cited(cells[0]), cells[2]))
    return rows


def covered() -> set:
    return set().union(*(eqs for eqs, _ in table_rows()))


def test_numbers_parses_the_forms():
    assert numbers("9-11, 27") == {"9", "10", "11", "27"}
    assert numbers("7.38-7.40") == {"7.38", "7.39", "7.40"} and numbers("2.63") == {"2.63"}
    with pytest.raises(AssertionError):
        numbers("30-28")


def test_one_citation_form():
    """No `eq 29`, `eqs (28)-(29)`, `Kang & Yoon eq 3` left: only `[KY eq 29]` and its kin."""
    bad = []
    for p in sources():
        for i, line in enumerate(p.read_text().splitlines(), 1):
            rest = CITE.sub("", line)
            if BARE.search(rest):
                bad.append(f"{p.relative_to(ROOT)}:{i}: {line.strip()[:100]}")
    assert not bad, "citations not in the [KEY eq N] form:\n" + "\n".join(bad)


def test_every_cited_equation_has_a_table_row():
    have = covered()
    missing = {}
    for p in sources():
        for c in cited(p.read_text()) - have:
            missing.setdefault(f"[{c[0]} eq {c[1]}]", []).append(str(p.relative_to(ROOT)))
    assert not missing, "equations cited in the code without a row in docs/architecture.md: " + \
        "; ".join(f"{k} ({', '.join(sorted(set(v)))})" for k, v in sorted(missing.items()))


def test_generated_modules_cite_only_tabled_equations():
    """The rendered sources (comments printed from the sympy kernels and the plans) of one model per family."""
    import codegen
    from codegen.algorithms import family
    from codegen.compiler.render import render
    have = covered()
    cases = [(codegen.models.random_tree(6, seed=2), name, opts)
             for name, opts in [("recursive", {"ref_point": "centroid"}), ("dense", {}), ("mstmm", {}), ("cfa", {})]]
    cases.append((codegen.load_model(ROOT / "examples" / "five_bar.yaml"), "grcr", {}))
    cases.append((codegen.load_model(ROOT / "examples" / "flexible_pendulum.yaml"), "rancf", {}))
    for m, name, opts in cases:
        fam = family(name, m)
        src = render(fam, fam.make_plan(m), {**{k: v[0] for k, v in fam.options.items()}, **opts}, "cite")
        assert not BARE.search(CITE.sub("", src)), name
        assert cited(src) <= have, (name, sorted(cited(src) - have))


def test_every_row_points_to_code_that_exists():
    """Each `path` in a row's where-cell exists (under codegen/, templates/ or by file name), and each `name` after
    it occurs in that file."""
    files = {p.name: p for p in sources()}
    bad = []
    for eqs, where in table_rows():
        current = None
        for tok in re.findall(r"`([^`]+)`", where):
            tok = tok.split()[0]
            if tok.endswith((".py", ".j2")) or "/" in tok:
                cands = [ROOT / "codegen" / tok, ROOT / tok, files.get(Path(tok).name)]
                current = next((c for c in cands if c is not None and c.is_file()), None)
                if current is None:
                    bad.append(f"{sorted(eqs)[:3]}: no file {tok}")
            elif current is not None and re.fullmatch(r"[A-Za-z_][\w.*<>]*", tok):
                base = re.split(r"[<*]", tok)[0]                 # kin_<pattern> -> kin_, mst_hinge_* -> mst_hinge_
                name = base.split(".")[-1] or base                  # Plan.params -> params
                if name not in current.read_text():
                    bad.append(f"{sorted(eqs)[:3]}: {tok} not in {current.relative_to(ROOT)}")
    assert not bad, "rows of docs/architecture.md that point nowhere:\n" + "\n".join(bad)


def test_the_check_can_fail(tmp_path):
    """The form check sees a bare citation, and the coverage check an uncovered one."""
    assert BARE.search(CITE.sub("", "see eq (29) and [KY eq 30]"))
    assert not BARE.search(CITE.sub("", "see [KY eqs 29-30] and [CM eq 9]"))
    assert ("KY", "999") not in covered()
