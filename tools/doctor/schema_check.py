"""A small JSON Schema validator: the subset schema.json uses, standard library only.

Supported keywords: type (incl. lists and "null"), const, enum, properties,
required, additionalProperties (boolean), items, minimum, pattern and local
$ref ("#/$defs/NAME").  Used by the tests and by `tern doctor validate FILE`.
"""
from __future__ import annotations

import json
import os
import re

SCHEMA_PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "schema.json")

_TYPES = {
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    "string": lambda v: isinstance(v, str),
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
    "boolean": lambda v: isinstance(v, bool),
    "null": lambda v: v is None,
}


def load_schema(path=SCHEMA_PATH):
    with open(path) as f:
        return json.load(f)


def validate(doc, schema=None, definition=None):
    """Return a list of "path: problem" strings; empty means valid.  definition
    names a part of the schema to check against instead of the whole report
    ("rate_report" for `tern doctor rate --json`)."""
    schema = schema or load_schema()
    errors = []
    node = schema["$defs"][definition] if definition else schema
    _check(doc, node, schema, "$", errors)
    return errors


def kind_of(doc):
    """'rate_report' for a `tern doctor rate --json` document, else None (a report)."""
    return "rate_report" if isinstance(doc, dict) and "link_bps" in doc and "findings" not in doc else None


def _check(value, node, root, where, errors):
    if "$ref" in node:
        ref = node["$ref"]
        if not ref.startswith("#/"):
            errors.append("%s: unsupported $ref %s" % (where, ref))
            return
        target = root
        for part in ref[2:].split("/"):
            target = target[part]
        _check(value, target, root, where, errors)
        return
    if "const" in node and value != node["const"]:
        errors.append("%s: expected %r, got %r" % (where, node["const"], value))
    if "enum" in node and value not in node["enum"]:
        errors.append("%s: %r not one of %r" % (where, value, node["enum"]))
    if "type" in node:
        types = node["type"] if isinstance(node["type"], list) else [node["type"]]
        if not any(_TYPES[t](value) for t in types):
            errors.append("%s: expected %s, got %s" % (where, "/".join(types), type(value).__name__))
            return
    if isinstance(value, dict):
        props = node.get("properties", {})
        for key in node.get("required", []):
            if key not in value:
                errors.append("%s: missing %r" % (where, key))
        for key, sub in value.items():
            if key in props:
                _check(sub, props[key], root, "%s.%s" % (where, key), errors)
            elif node.get("additionalProperties") is False:
                errors.append("%s: unexpected property %r" % (where, key))
    if isinstance(value, list) and "items" in node:
        for i, item in enumerate(value):
            _check(item, node["items"], root, "%s[%d]" % (where, i), errors)
    if "minimum" in node and _TYPES["number"](value) and value < node["minimum"]:
        errors.append("%s: %r below minimum %r" % (where, value, node["minimum"]))
    if "pattern" in node and isinstance(value, str) and not re.search(node["pattern"], value):
        errors.append("%s: %r does not match %s" % (where, value, node["pattern"]))
