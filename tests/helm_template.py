"""A small renderer for the subset of Helm's Go-template language the automem chart uses.

No `helm` binary can be installed on this machine, so the chart tests render the templates with
this instead. It is deliberately strict: syntax or a function outside the subset raises
`TemplateError` instead of rendering something Helm would not. What it models from Helm and Go:
- text/template actions with `{{-`/`-}}` trimming, comments, `if`/`else if`/`else`, `with`,
  `range` over lists and maps (keys sorted, as Go does) with `$k, $v :=`, `define` + `include`
  (template files are also named templates, for `include (print $.Template.BasePath "/x.yaml")`),
  variables (`$x :=`, `$x =`, `$`), pipelines, parenthesised sub-pipelines;
- Go's truthiness, `and`/`or` returning an operand and short-circuiting, `eq` refusing to compare
  a number with a string, a field of a missing value being an error ("nil pointer evaluating");
- Helm's values: YAML numbers become float64 (printed the Go way: 1048576 → "1.048576e+06"),
  user values merged over the defaults (null deletes a key), the schema checked first (Draft 7),
  `lookup` returning an empty map as in `helm template`;
- the Sprig functions listed in FUNCTIONS, with Sprig's argument order.
What it does not do: render subcharts (the official qdrant chart is not available offline), the
`.Capabilities` object, `tpl`, `template`/`block`, or any Kubernetes API validation.
"""

from __future__ import annotations

import base64
import copy
import hashlib
import json
import re
import secrets
import string
from collections.abc import Callable
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any

import jsonschema
import yaml


class TemplateError(Exception):
    """The template uses syntax or a function outside the supported subset, or fails like Helm would."""


class TemplateFail(TemplateError):
    """`fail` or `required` stopped the rendering (helm reports these messages to the user)."""


# --- values, printing -----------------------------------------------------------------------------


def helm_numbers(value: Any) -> Any:
    """Values as Helm holds them: every YAML number is a float64."""
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, int):
        return float(value)
    if isinstance(value, dict):
        return {k: helm_numbers(v) for k, v in value.items()}
    if isinstance(value, list):
        return [helm_numbers(v) for v in value]
    return value


def merge_values(base: dict[str, Any], override: dict[str, Any]) -> dict[str, Any]:
    """Helm's coalescing of user values over the chart's: maps merge, null deletes a key."""
    out = copy.deepcopy(base)
    for key, value in override.items():
        if value is None:
            out.pop(key, None)
        elif isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = merge_values(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def go_float(value: float) -> str:
    """Go's %v of a float64: shortest digits, exponent form below 1e-4 and from 1e+06 on."""
    if value == 0:
        return "0"
    sign, digits, exponent = Decimal(repr(value)).normalize().as_tuple()
    text = "".join(str(d) for d in digits)
    exp10 = len(text) + int(exponent) - 1
    prefix = "-" if sign else ""
    if exp10 < -4 or exp10 >= 6:
        mantissa = text[0] + ("." + text[1:] if len(text) > 1 else "")
        return f"{prefix}{mantissa}e{'-' if exp10 < 0 else '+'}{abs(exp10):02d}"
    if exp10 >= len(text) - 1:
        return prefix + text + "0" * (exp10 - len(text) + 1)
    if exp10 >= 0:
        return prefix + text[: exp10 + 1] + "." + text[exp10 + 1 :]
    return prefix + "0." + "0" * (-exp10 - 1) + text


def go_string(value: Any) -> str:
    """How Go's fmt prints a value with %v (Helm turns <no value> into an empty string)."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return go_float(value)
    if isinstance(value, int | str):
        return str(value)
    raise TemplateError(f"printing a {type(value).__name__} is outside the supported subset: {value!r}")


def truth(value: Any) -> bool:
    if value is None or value is False:
        return False
    if isinstance(value, int | float | str | list | dict):
        return bool(value)
    return True


def _plain(value: Any) -> Any:
    """Floats that hold integers back to ints, as sigs.k8s.io/yaml (JSON) writes them."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


# --- functions ------------------------------------------------------------------------------------


def _kind(value: Any) -> str:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if value is None:
        return "nil"
    return "other"


def _eq(first: Any, *others: Any) -> bool:
    for other in others:
        if _kind(first) != _kind(other) and "nil" not in (_kind(first), _kind(other)):
            raise TemplateError(f"incompatible types for comparison: {first!r} and {other!r}")
        if first == other:
            return True
    return False


def _printf(fmt: str, *args: Any) -> str:
    values = iter(args)

    def one(match: re.Match[str]) -> str:
        verb = match.group(0)
        if verb == "%%":
            return "%"
        value = next(values)
        if verb in ("%s", "%v"):
            return go_string(value)
        if verb == "%d":
            return str(int(value))
        if verb == "%q":
            return json.dumps(go_string(value))
        raise TemplateError(f"printf verb {verb} is outside the supported subset")

    return re.sub(r"%[a-z%]", one, fmt)


def _indent(width: Any, text: str) -> str:
    pad = " " * int(width)
    return pad + text.replace("\n", "\n" + pad)


def _to_yaml(value: Any) -> str:
    return yaml.safe_dump(_plain(value), default_flow_style=False, sort_keys=True).rstrip("\n")


def _empty(value: Any) -> bool:
    return not truth(value)


def _required(message: str, value: Any) -> Any:
    if value is None or value == "":
        raise TemplateFail(message)
    return value


def _fail(message: str) -> Any:
    raise TemplateFail(message)


def _trunc(length: Any, text: str) -> str:
    return text[: int(length)]


def _rand_alnum(length: Any) -> str:
    alphabet = string.ascii_letters + string.digits
    return "".join(secrets.choice(alphabet) for _ in range(int(length)))


def _dict(*pairs: Any) -> dict[str, Any]:
    if len(pairs) % 2:
        raise TemplateError("dict needs key/value pairs")
    return {str(pairs[i]): pairs[i + 1] for i in range(0, len(pairs), 2)}


def _get(mapping: dict[str, Any], key: str) -> Any:
    return mapping.get(key, "")


FUNCTIONS: dict[str, Callable[..., Any]] = {
    "eq": _eq,
    "ne": lambda a, b: not _eq(a, b),
    "not": lambda v: not truth(v),
    "default": lambda fallback, *given: given[0] if given and truth(given[0]) else fallback,
    "empty": _empty,
    "quote": lambda *vs: " ".join(json.dumps(go_string(v), ensure_ascii=False) for v in vs),
    "toString": go_string,
    "printf": _printf,
    "print": lambda *vs: "".join(go_string(v) for v in vs),
    "trunc": _trunc,
    "trimSuffix": lambda suffix, text: text[: -len(suffix)] if suffix and text.endswith(suffix) else text,
    "replace": lambda old, new, text: text.replace(old, new),
    "contains": lambda needle, text: needle in text,
    "indent": _indent,
    "nindent": lambda width, text: "\n" + _indent(width, text),
    "toYaml": _to_yaml,
    "b64enc": lambda text: base64.b64encode(go_string(text).encode()).decode(),
    "b64dec": lambda text: base64.b64decode(text).decode(),
    "sha256sum": lambda text: hashlib.sha256(text.encode()).hexdigest(),
    "randAlphaNum": _rand_alnum,
    "required": _required,
    "fail": _fail,
    "dict": _dict,
    "list": lambda *vs: list(vs),
    "get": _get,
    "lookup": lambda api_version, kind, namespace, name: {},  # as in `helm template`: no cluster
}
_LAZY = {"and", "or", "include"}  # evaluated by the renderer itself


# --- parsing --------------------------------------------------------------------------------------

_TOKEN = re.compile(
    r"""\s*(?:
      (?P<string>"(?:[^"\\]|\\.)*")
    | (?P<number>-?\d+(?:\.\d+)?)
    | (?P<declare>:=)
    | (?P<assign>=)
    | (?P<punct>[()|,])
    | (?P<variable>\$[A-Za-z0-9_]*(?:\.[A-Za-z0-9_]+)*)
    | (?P<field>(?:\.[A-Za-z0-9_]+)+|\.)
    | (?P<ident>[A-Za-z_][A-Za-z0-9_]*)
    )""",
    re.X,
)


@dataclass
class Token:
    kind: str
    text: str
    spaced: bool = True  # preceded by white space: `(x) .F` is two operands, `(x).F` a field access


def tokenize(source: str) -> list[Token]:
    tokens, pos = [], 0
    source = source.strip()
    while pos < len(source):
        match = _TOKEN.match(source, pos)
        if not match or match.end() == pos:
            raise TemplateError(f"cannot parse {source[pos:]!r} in {{{{ {source} }}}}")
        kind = match.lastgroup or ""
        tokens.append(Token(kind, match.group(kind), spaced=match.start(kind) > pos))
        pos = match.end()
    return tokens


@dataclass
class Pipeline:
    commands: list[list[Any]]  # each command: a list of operands (Token or Pipeline)
    declare: list[str] = field(default_factory=list)
    assign: bool = False


def parse_pipeline(tokens: list[Token]) -> Pipeline:
    declare: list[str] = []
    assign = False
    for n, token in enumerate(tokens):
        if token.kind in ("declare", "assign"):
            names = [t.text for t in tokens[:n] if t.kind == "variable"]
            if not names or any(t.kind not in ("variable", "punct") for t in tokens[:n]):
                raise TemplateError("malformed variable declaration")
            declare, assign, tokens = names, token.kind == "assign", tokens[n + 1 :]
            break
    commands: list[list[Any]] = [[]]
    pos = 0
    while pos < len(tokens):
        token = tokens[pos]
        if token.kind == "punct" and token.text == "|":
            commands.append([])
        elif token.kind == "punct" and token.text == "(":
            depth, end = 1, pos + 1
            while depth:
                if end >= len(tokens):
                    raise TemplateError("unclosed parenthesis")
                depth += {"(": 1, ")": -1}.get(tokens[end].text if tokens[end].kind == "punct" else "", 0)
                end += 1
            commands[-1].append(parse_pipeline(tokens[pos + 1 : end - 1]))
            pos = end
            if pos < len(tokens) and tokens[pos].kind == "field" and not tokens[pos].spaced:
                raise TemplateError("a field of a parenthesised pipeline is outside the supported subset")
            continue
        elif token.kind == "punct":
            raise TemplateError(f"unexpected {token.text!r}")
        else:
            if (
                token.kind == "ident"
                and token.text not in FUNCTIONS
                and token.text not in _LAZY
                and (token.text not in ("true", "false", "nil"))
            ):
                raise TemplateError(f'function "{token.text}" not defined')
            commands[-1].append(token)
        pos += 1
    if any(not c for c in commands):
        raise TemplateError("empty command in pipeline")
    return Pipeline(commands, declare, assign)


@dataclass
class Node:
    kind: str  # text, output, if, with, range
    text: str = ""
    pipeline: Pipeline | None = None
    body: list[Node] = field(default_factory=list)
    branches: list[tuple[Pipeline, list[Node]]] = field(default_factory=list)
    otherwise: list[Node] | None = None


def split_actions(source: str) -> list[tuple[str, str]]:
    """(kind, text) pieces: text, or the inside of an action, with trim markers applied."""
    pieces: list[tuple[str, str]] = []
    pos = 0
    trim_next = False
    while True:
        start = source.find("{{", pos)
        text = source[pos:] if start < 0 else source[pos:start]
        if trim_next:
            text = text.lstrip(" \t\r\n")
        if start < 0:
            pieces.append(("text", text))
            return pieces
        end = source.find("}}", start)
        if end < 0:
            raise TemplateError("unclosed action")
        inner = source[start + 2 : end]
        if inner.startswith("- ") or inner.startswith("-\n"):
            text = text.rstrip(" \t\r\n")
            inner = inner[1:]
        trim_next = inner.endswith(" -") or inner.endswith("\n-")
        if trim_next:
            inner = inner[:-1]
        pieces.append(("text", text))
        pieces.append(("action", inner.strip()))
        pos = end + 2


def parse(source: str, defines: dict[str, list[Node]]) -> list[Node]:
    root: list[Node] = []
    stack: list[tuple[Node | None, list[Node]]] = [(None, root)]  # (open block, list receiving nodes)
    for kind, text in split_actions(source):
        current = stack[-1][1]
        if kind == "text":
            if text:
                current.append(Node("text", text=text))
            continue
        if text.startswith("/*"):
            if not text.endswith("*/"):
                raise TemplateError("unclosed comment")
            continue
        word, _, rest = text.partition(" ")
        if word in ("if", "with", "range"):
            node = Node(word, pipeline=parse_pipeline(tokenize(rest)))
            if word == "if":
                node.branches.append((node.pipeline, node.body))
            current.append(node)
            stack.append((node, node.body))
        elif word == "define":
            name = json.loads(rest.strip())
            node = Node("define", text=name)
            stack.append((node, node.body))
        elif word == "else":
            block = stack[-1][0]
            if block is None or block.kind == "define":
                raise TemplateError("else outside if/with/range")
            stack.pop()
            if rest.startswith("if "):
                if block.kind != "if":
                    raise TemplateError("else if outside if")
                branch: list[Node] = []
                block.branches.append((parse_pipeline(tokenize(rest[3:])), branch))
                stack.append((block, branch))
            else:
                block.otherwise = []
                stack.append((block, block.otherwise))
        elif word == "end":
            block = stack.pop()[0]
            if block is None:
                raise TemplateError("end without a block")
            if block.kind == "define":
                defines[block.text] = block.body
        elif word in ("template", "block", "break", "continue", "tpl"):
            raise TemplateError(f"{word} is outside the supported subset")
        else:
            current.append(Node("output", pipeline=parse_pipeline(tokenize(text))))
    if len(stack) != 1:
        raise TemplateError("unclosed block")
    return root


# --- evaluation -----------------------------------------------------------------------------------


class Scope:
    def __init__(self, parent: Scope | None = None) -> None:
        self.vars: dict[str, Any] = {}
        self.parent = parent

    def get(self, name: str) -> Any:
        scope: Scope | None = self
        while scope is not None:
            if name in scope.vars:
                return scope.vars[name]
            scope = scope.parent
        raise TemplateError(f"undefined variable {name}")

    def set(self, name: str, value: Any) -> None:
        scope: Scope | None = self
        while scope is not None:
            if name in scope.vars:
                scope.vars[name] = value
                return
            scope = scope.parent
        raise TemplateError(f"undefined variable {name}")


def _field(value: Any, names: list[str], where: str) -> Any:
    for name in names:
        if value is None:
            raise TemplateError(f"nil pointer evaluating interface {{}}.{name} ({where})")
        if not isinstance(value, dict):
            raise TemplateError(f"can't evaluate field {name} in a {type(value).__name__} ({where})")
        value = value.get(name)
    return value


class Renderer:
    def __init__(self, defines: dict[str, list[Node]]) -> None:
        self.defines = defines

    def run(self, nodes: list[Node], dot: Any, scope: Scope) -> str:
        out: list[str] = []
        for node in nodes:
            out.append(self.node(node, dot, scope))
        return "".join(out)

    def node(self, node: Node, dot: Any, scope: Scope) -> str:
        if node.kind == "text":
            return node.text
        if node.kind == "output":
            assert node.pipeline is not None
            value = self.pipeline(node.pipeline, dot, scope)
            return "" if node.pipeline.declare else go_string(value)
        inner = Scope(scope)
        if node.kind == "if":
            for pipeline, body in node.branches:
                if truth(self.pipeline(pipeline, dot, inner)):
                    return self.run(body, dot, inner)
            return self.run(node.otherwise or [], dot, inner)
        assert node.pipeline is not None
        if node.kind == "with":
            value = self.pipeline(node.pipeline, dot, inner)
            return self.run(
                node.body if truth(value) else node.otherwise or [], value if truth(value) else dot, inner
            )
        return self.range(node, dot, inner)

    def range(self, node: Node, dot: Any, scope: Scope) -> str:
        assert node.pipeline is not None
        names = node.pipeline.declare
        value = self.pipeline(Pipeline(node.pipeline.commands), dot, scope)
        if isinstance(value, dict):
            items = [(k, value[k]) for k in sorted(value)]
        elif isinstance(value, list):
            items = list(enumerate(value))
        elif value is None:
            items = []
        else:
            raise TemplateError(f"range over a {type(value).__name__} is outside the supported subset")
        if not items:
            return self.run(node.otherwise or [], dot, scope)
        out = []
        for key, item in items:
            inner = Scope(scope)
            if len(names) == 1:
                inner.vars[names[0]] = item
            elif len(names) == 2:
                inner.vars[names[0]], inner.vars[names[1]] = key, item
            out.append(self.run(node.body, item, inner))
        return "".join(out)

    def pipeline(self, pipeline: Pipeline, dot: Any, scope: Scope) -> Any:
        value: Any = None
        for n, command in enumerate(pipeline.commands):
            value = self.command(command, dot, scope, piped=(value,) if n else ())
        for name in pipeline.declare:
            if pipeline.assign:
                scope.set(name, value)
            else:
                scope.vars[name] = value
        return value

    def command(self, command: list[Any], dot: Any, scope: Scope, piped: tuple[Any, ...]) -> Any:
        head = command[0]
        if isinstance(head, Token) and head.kind == "ident" and head.text not in ("true", "false", "nil"):
            name = head.text
            if name in ("and", "or"):
                return self.logic(name, [*command[1:]], dot, scope, piped)
            args = [self.operand(a, dot, scope) for a in command[1:]] + list(piped)
            if name == "include":
                return self.include(*args)
            try:
                return FUNCTIONS[name](*args)
            except TypeError as exc:
                raise TemplateError(f"wrong arguments for {name}: {exc}") from exc
        if len(command) > 1 or piped:
            raise TemplateError("can't give an argument to a non-function")
        return self.operand(head, dot, scope)

    def logic(self, name: str, operands: list[Any], dot: Any, scope: Scope, piped: tuple[Any, ...]) -> Any:
        value: Any = None
        thunks: list[Callable[[], Any]] = [lambda o=o: self.operand(o, dot, scope) for o in operands]
        thunks += [lambda p=p: p for p in piped]
        for thunk in thunks:
            value = thunk()
            if (name == "and") != truth(value):
                return value
        return value

    def operand(self, operand: Any, dot: Any, scope: Scope) -> Any:
        if isinstance(operand, Pipeline):
            return self.pipeline(operand, dot, scope)
        kind, text = operand.kind, operand.text
        if kind == "string":
            return json.loads(text)
        if kind == "number":
            return float(text) if "." in text else int(text)
        if kind == "field":
            return dot if text == "." else _field(dot, text[1:].split("."), text)
        if kind == "variable":
            name, *names = text.split(".")
            return _field(scope.get(name), names, text)
        if kind == "ident" and text in ("true", "false", "nil"):
            return {"true": True, "false": False, "nil": None}[text]
        if kind == "ident":  # a function called without arguments, e.g. `default dict`
            return self.command([operand], dot, scope, ())
        raise TemplateError(f"unexpected {text!r}")

    def include(self, name: str, data: Any) -> str:
        if name not in self.defines:
            raise TemplateError(f'no template "{name}" associated with template')
        scope = Scope()
        scope.vars["$"] = data
        return self.run(self.defines[name], data, scope)


# --- charts ---------------------------------------------------------------------------------------


@dataclass
class Rendered:
    manifests: dict[str, list[dict[str, Any]]]  # template file → its YAML documents
    notes: str

    @property
    def documents(self) -> list[dict[str, Any]]:
        return [doc for docs in self.manifests.values() for doc in docs]

    def find(self, kind: str, name: str | None = None) -> list[dict[str, Any]]:
        return [
            d for d in self.documents if d["kind"] == kind and (name is None or d["metadata"]["name"] == name)
        ]

    def one(self, kind: str, name: str) -> dict[str, Any]:
        found = self.find(kind, name)
        if len(found) != 1:
            raise AssertionError(f"expected one {kind} {name}, found {len(found)}")
        return found[0]


def chart_values(chart: Path, overrides: dict[str, Any] | None = None) -> dict[str, Any]:
    values = yaml.safe_load((chart / "values.yaml").read_text())
    return merge_values(values, overrides or {})


def validate_values(chart: Path, values: dict[str, Any]) -> None:
    schema = json.loads((chart / "values.schema.json").read_text())
    jsonschema.Draft7Validator(schema).validate(values)


def render_chart(
    chart: Path,
    overrides: dict[str, Any] | None = None,
    release: str = "mem",
    namespace: str = "default",
) -> Rendered:
    """Like `helm template RELEASE CHART -f overrides.yaml` for this chart's own templates."""
    meta = yaml.safe_load((chart / "Chart.yaml").read_text())
    values = chart_values(chart, overrides)
    validate_values(chart, values)
    templates = sorted((chart / "templates").glob("*"))
    base = f"{meta['name']}/templates"
    defines: dict[str, list[Node]] = {}
    parsed = {path.name: parse(path.read_text(), defines) for path in templates}
    for name, nodes in parsed.items():
        defines[f"{base}/{name}"] = nodes
    root = {
        "Values": helm_numbers(values),
        "Release": {
            "Name": release,
            "Namespace": namespace,
            "Service": "Helm",
            "IsInstall": True,
            "Revision": 1,
        },
        "Chart": {"Name": meta["name"], "Version": meta["version"], "AppVersion": meta.get("appVersion", "")},
        "Template": {"BasePath": base},
    }
    renderer = Renderer(defines)
    manifests: dict[str, list[dict[str, Any]]] = {}
    notes = ""
    for name, nodes in parsed.items():
        if name.startswith("_"):
            continue
        scope = Scope()
        scope.vars["$"] = root
        text = renderer.run(
            nodes, {**root, "Template": {**root["Template"], "Name": f"{base}/{name}"}}, scope
        )
        if name == "NOTES.txt":
            notes = text
            continue
        docs = [d for d in yaml.safe_load_all(text) if d is not None]
        if docs:
            manifests[name] = docs
    return Rendered(manifests, notes)
