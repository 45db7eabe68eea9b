"""The page docs/model-format.md from the JSON Schema of model files.

docs/model-format.md from the JSON Schema of model files (``mbgen schema --markdown``): one table per mapping,
each row a field with what it takes, whether it is required, and its description."""
from __future__ import annotations

from .checks import LIMITS
from .schema import model_schema

HEADER = """# Model file reference

<!-- generated from the JSON Schema (codegen/model/schema.py) by `mbgen schema --markdown > docs/model-format.md`;
     tests/model/test_schema.py checks that this page is up to date. Do not edit by hand. -->

A model file is YAML or JSON: a tree of rigid bodies (`bodies`, `joints`, `forces`) or, when it has `beams`, planar
flexible beams (`beams`, `joints`, `loads`). SI units throughout. `mbgen schema` prints the JSON Schema itself (draft
2020-12); editors use it to complete and check model files, e.g. with the YAML language server, a first line

```yaml
# yaml-language-server: $schema=mbgen-model.schema.json
```

after `mbgen schema > mbgen-model.schema.json` (or point the `yaml.schemas` setting of your editor at the file).

The schema states the structure (types, required and known keys, list lengths) and the value ranges; `mbgen check`
adds what a schema cannot: names that refer to bodies and joints, the tree, inertia tensors, a regular mass matrix.
Numbers may also be written as strings that read as numbers (YAML 1.1 reads `4e-4` as a string).
"""


def _what(s) -> str:
    if "then" in s and "properties" in s["then"]:          # a time function
        return "a number or a mapping (below)"
    if "x-expected" in s:
        text = s["x-expected"]
    elif "const" in s:
        text = f"`{str(s['const']).lower() if isinstance(s['const'], bool) else s['const']}`"
    elif "enum" in s:
        text = "one of " + ", ".join(f"`{e}`" for e in s["enum"])
    elif "$ref" in s:
        text = "a mapping (below)"
    else:
        text = "see below" if "properties" in s else "any"
    if "enum" in s and "x-expected" in s:
        text = "one of " + ", ".join(f"`{e}`" for e in s["enum"])
    return text.replace("|", "\\|")


def _table(props, required) -> list:
    rows = ["| field | takes | required | description |", "|---|---|---|---|"]
    for name, s in props.items():
        desc = (s.get("description") or "").replace("|", "\\|")
        rows.append(f"| `{name}` | {_what(s)} | {'yes' if name in required else ''} | {desc} |")
    return rows


def _section(title, s, out, level=3):
    out += ["", f"{'#' * level} {title}", ""]
    if s.get("description"):
        out += [s["description"][0].upper() + s["description"][1:] + ".", ""]
    out += _table(s.get("properties", {}), s.get("required", ()))


def _items(s):
    return s.get("items", {})


def reference_markdown() -> str:
    """The page docs/model-format.md as Markdown."""
    sch = model_schema()
    rigid, beam = sch["$defs"]["rigid_model"], sch["$defs"]["beam_model"]
    sim = sch["$defs"]["simulation"]
    out = [HEADER.rstrip("\n")]
    out += ["", "## Rigid-body models"]
    _section("Top level", rigid, out)
    body = _items(rigid["properties"]["bodies"])
    _section("`bodies[]`", body, out)
    joint = _items(rigid["properties"]["joints"])
    _section("`joints[]`", joint, out)
    out += ["", "Coordinates `q0` and velocities `u0` per joint type (a one-coordinate joint also takes a single number):",
            "", "| type | q0 | u0 |", "|---|---|---|"]
    kinds = {}
    for rule in joint.get("allOf", []):
        t = rule["if"]["properties"]["type"]["const"]
        kinds[t] = (rule["then"]["properties"]["q0"]["x-expected"], rule["then"]["properties"]["u0"]["x-expected"])
    for t in joint["properties"]["type"]["enum"]:
        q0, u0 = kinds.get(t, ("none", "none"))
        out.append(f"| `{t}` | {q0} | {u0} |")
    _section("`parent_frame`, `child_frame`", joint["properties"]["parent_frame"], out)
    _section("`loops[]`", _items(rigid["properties"]["loops"]), out)
    out += ["", "A cut joint's frame on the parent side (side i) is `parent_frame` in the parent body frame (world for "
            "`ground`), on the child side (side j) `child_frame` in the child body frame; the loop is closed when side "
            "j's frame is where the joint type allows relative to side i's (as for a tree joint at some coordinate). "
            "The rows per type (revolute 5, prismatic 5, cylindrical 4, universal 4, spherical 3, planar 3, fixed 6) "
            "lose those that a planar loop satisfies identically. The initial state must close (position and "
            "velocity, to 1e-6)."]
    force = _items(rigid["properties"]["forces"])
    out += ["", "### `forces[]`", "", force["description"][0].upper() + force["description"][1:] +
            "; `name` and `type` are required.", ""]
    for rule in force["allOf"]:
        kind = rule["if"]["properties"]["type"]["const"]
        props = {k: v for k, v in rule["then"]["properties"].items() if k not in ("name", "type")}
        out += ["", f"#### `type: {kind}`", ""] + _table(props, rule["then"].get("required", ()))
        if "value" in props:
            tf = props["value"]
            out += ["", "`value`: " + tf["description"] + ":"]
            for k, s in tf["then"]["properties"].items():
                if "properties" in s:
                    out += ["", f"- `{k}`: {s['description']}", ""] + _table(s["properties"], s.get("required", ()))
                else:
                    out += ["", f"- `{k}`: {_what(s)}"]
    _section("`simulation`", sim, out, level=2)
    out += ["", "## Flexible-beam models (a file with `beams`)"]
    _section("Top level", beam, out)
    _section("`beams[]`", _items(beam["properties"]["beams"]), out)
    _section("`joints[]`", _items(beam["properties"]["joints"]), out)
    _section("`loads[]`", _items(beam["properties"]["loads"]), out)
    _section("`initial`", beam["properties"]["initial"], out)
    out += ["", "## Limits", "", "Checked before any work starts:", "",
            ", ".join(f"{k.replace('_', ' ')} {v:,}" for k, v in LIMITS.items()) + "."]
    return "\n".join(out) + "\n"
