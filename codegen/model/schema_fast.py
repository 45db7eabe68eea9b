"""The fast paths of model-file validation (codegen.model.schema).

``_decide`` settles the values that the
jsonschema validator of schema.py then skips (a model file is mostly numbers), ``_accepts`` recognises a valid
file without jsonschema at all."""
from __future__ import annotations

import re

RANGE_KEYWORDS = ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum")   # left to the semantic checks

_NOTES = {"x-expected", "x-unknown", "description", "x-limit"} | set(RANGE_KEYWORDS)
_PLAIN = {"type", "pattern", "minLength", "maxLength", "enum", "const"} | _NOTES
_ARRAY = {"type", "items", "minItems", "maxItems"} | _NOTES
_TYPES = {int: ("number", "integer"), float: ("number",), str: ("string",), bool: ("boolean",),
          type(None): ("null",), list: ("array",), dict: ("object",)}


_KINDS = {}            # id(subschema) -> its classification for _decide (the schema is built once per process)


def _kind(schema):
    k = _KINDS.get(id(schema))
    if k is None:
        keys = schema.keys()
        props = schema.get("properties", {})
        types = schema.get("type", ())
        types = (types,) if isinstance(types, str) else tuple(types)
        if keys <= _NOTES:
            k = ("any",)
        elif "anyOf" in schema and keys <= {"anyOf"} | _NOTES:
            k = ("anyOf", schema["anyOf"])
        elif keys and keys <= {"properties", "required"} and all(p.keys() <= {"const"} for p in props.values()):
            k = ("test", tuple(schema.get("required", ())), {n: p["const"] for n, p in props.items()})
        elif keys <= _ARRAY and "array" in types:
            k = ("array", schema.get("minItems", 0), schema.get("maxItems", 1 << 62), schema.get("items"))
        elif keys <= _PLAIN:
            k = ("plain", types, schema)
        else:
            k = ("other",)
        _KINDS[id(schema)] = k
    return k


def _decide(schema, v):
    """Whether ``v`` satisfies ``schema``, when the fast path knows.

    True / False when the fast path knows whether ``v`` satisfies ``schema`` (value ranges aside: they are not
    reported here), None when the full validation must decide. Covers what a model file is mostly made of:
    numbers, names, numeric vectors and matrices, nulls, and the joint-type tests of the if/then rules."""
    k = _kind(schema)
    tag, t = k[0], type(v)
    if tag == "any":
        return True
    if tag == "plain":
        types, s = k[1], k[2]
        if t is float or t is int:
            if "number" in types or ("integer" in types and (t is int or v.is_integer())):
                return "const" not in s and "enum" not in s or None
            return False if types else None
        if types and not any(n in types for n in _TYPES.get(t, ())):
            return False
        if "const" in s and (v != s["const"] or type(v) is not type(s["const"])):
            return False
        if "enum" in s and not any(v == e and type(v) is type(e) for e in s["enum"]):
            return False
        if t is str:
            if not s.get("minLength", 0) <= len(v) <= s.get("maxLength", len(v)):
                return False
            if "pattern" in s and not re.search(s["pattern"], v):
                return False
        return True
    if tag == "array":
        if t is not list:
            return False
        if not k[1] <= len(v) <= k[2]:
            return False
        if k[3] is None:
            return True
        for x in v:
            r = _decide(k[3], x)
            if r is not True:
                return r
        return True
    if tag == "anyOf":
        results = [_decide(alt, v) for alt in k[1]]
        return True if True in results else (False if all(r is False for r in results) else None)
    if tag == "test":
        if t is not dict:
            return True
        return all(n in v for n in k[1]) and all(v[n] == c for n, c in k[2].items() if n in v)
    return None


# ------------------------------------------------------------------------------------- the valid-file fast path
# check_schema first asks _accepts(): True only when every keyword of draft 2020-12 (value ranges included) holds,
# i.e. when jsonschema would find nothing. A valid file is then never handed to jsonschema, and a cached
# `mbgen simulate` does not import it (~60 ms of start-up). False or None (a keyword or a value this checker
# does not know): jsonschema decides and words the error, as before.
_ANNOTATIONS = {"$schema", "$defs", "title", "description", "x-expected", "x-unknown", "x-limit"}
_CHECKS = {}             # id(subschema) -> (subschema, its compiled check)


def _json_types(v):
    """The JSON types of a value as jsonschema's draft 2020-12 type checker sees it.

    The JSON types of a value as jsonschema's draft 2020-12 type checker sees it (a float with an integral
    value is an integer; a bool is not a number), or None for a value that is not plain JSON."""
    t = type(v)
    if t is float:
        return ("number", "integer") if v.is_integer() else ("number",)
    return _TYPES.get(t)


def _all(results):
    """Tri-state AND: False if any is False, else None if any is None, else True."""
    out = True
    for r in results:
        if r is False:
            return False
        if r is None:
            out = None
    return out


def _keyword(key, value, schema, root):
    """The check of one keyword: a function (instance, its JSON types) -> True / False / None; None if unknown."""
    def objects(f):
        return lambda v, ts: f(v) if "object" in ts else True

    def arrays(f):
        return lambda v, ts: f(v) if "array" in ts else True

    def numbers(f):
        return lambda v, ts: f(v) if "number" in ts else True

    if key == "type":
        want = (value,) if isinstance(value, str) else tuple(value)
        return lambda v, ts: any(w in ts for w in want)
    if key in ("const", "enum"):
        options = (value,) if key == "const" else tuple(value)
        if not all(type(o) is str for o in options):
            return None                      # jsonschema's equality (1 == 1.0, True != 1): left to it
        return lambda v, ts: type(v) is str and v in options
    if key == "pattern":
        rx = re.compile(value)
        return lambda v, ts: rx.search(v) is not None if "string" in ts else True
    if key == "minLength":
        return lambda v, ts: len(v) >= value if "string" in ts else True
    if key == "maxLength":
        return lambda v, ts: len(v) <= value if "string" in ts else True
    if key == "minimum":
        return numbers(lambda v: not v < value)
    if key == "maximum":
        return numbers(lambda v: not v > value)
    if key == "exclusiveMinimum":
        return numbers(lambda v: not v <= value)
    if key == "exclusiveMaximum":
        return numbers(lambda v: not v >= value)
    if key == "minItems":
        return arrays(lambda v: len(v) >= value)
    if key == "maxItems":
        return arrays(lambda v: len(v) <= value)
    if key == "items":
        return arrays(lambda v: _all(_accepts(value, x, root) for x in v))
    if key == "required":
        return objects(lambda v: all(k in v for k in value))
    if key == "minProperties":
        return objects(lambda v: len(v) >= value)
    if key == "maxProperties":
        return objects(lambda v: len(v) <= value)
    if key == "properties":
        return objects(lambda v: _all(_accepts(sub, v[k], root) for k, sub in value.items() if k in v))
    if key == "additionalProperties":
        if "patternProperties" in schema:
            return None
        known = schema.get("properties", {})
        return objects(lambda v: _all(_accepts(value, v[k], root) for k in v if k not in known))
    if key == "propertyNames":
        return objects(lambda v: _all(_accepts(value, k, root) for k in v))
    if key == "anyOf":
        def any_of(v, ts):
            results = [_accepts(alt, v, root) for alt in value]
            return True if True in results else False if all(r is False for r in results) else None
        return any_of
    if key == "allOf":
        return lambda v, ts: _all(_accepts(sub, v, root) for sub in value)
    if key == "if":
        then, else_ = schema.get("then", True), schema.get("else", True)

        def if_(v, ts):
            ok = _accepts(value, v, root)
            if ok is None or _decide(value, v) not in (None, ok):   # _validator() decides the branch with _decide
                return None
            return _accepts(then if ok else else_, v, root)
        return if_
    if key in ("then", "else"):
        return lambda v, ts: True            # applied by "if"
    if key == "$ref":
        if not value.startswith("#/$defs/") or value[8:] not in root.get("$defs", {}):
            return None
        target = root["$defs"][value[8:]]
        return lambda v, ts: _accepts(target, v, root)
    return None


def _accepts(schema, v, root):
    """Whether ``v`` is valid against ``schema`` by draft 2020-12, when this checker can tell.

    True when ``v`` is valid against ``schema`` (a subschema of ``root``) by draft 2020-12, every keyword
    (value ranges too); False when it is not; None when this checker cannot tell."""
    if schema is True:
        return True
    if schema is False:
        return False
    entry = _CHECKS.get(id(schema))
    if entry is not None and entry[0] is schema:
        check = entry[1]
    else:
        checks = []
        for key, value in schema.items():
            if key in _ANNOTATIONS:
                continue
            f = _keyword(key, value, schema, root)
            if f is None:
                checks = None
                break
            checks.append(f)
        if checks is None:
            def check(v, ts):
                return None
        else:
            def check(v, ts, checks=tuple(checks)):
                out = True
                for f in checks:
                    r = f(v, ts)
                    if r is False:
                        return False
                    if r is None:
                        out = None
                return out
        _CHECKS[id(schema)] = (schema, check)
    ts = _json_types(v)
    return None if ts is None else check(v, ts)
