#!/usr/bin/python3
"""The reference renderer for keel's Jinja engine: Python's jinja2 set up as Hugging Face transformers sets it up.

ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True) with the loopcontrols extension and
transformers' AssistantTracker `{% generation %}` tag, transformers' tojson (json.dumps with ensure_ascii=False),
raise_exception() and strftime_now() with the clock pinned to PINNED_NOW.

As a program it renders JSON lines {"template": str, "context": {...}} from stdin and writes one JSON line per
input: {"ok": true, "output": str} or {"ok": false, "raised": bool, "type": str, "error": str}, where "raised"
means the template called raise_exception() and "error" is then its message.

Run it with /usr/bin/python3 (Debian's python3-jinja2); a pyenv python3 on PATH has no jinja2.
"""
import datetime
import json
import sys

import jinja2
import jinja2.ext
import jinja2.nodes
from jinja2.sandbox import ImmutableSandboxedEnvironment

# Must match the date keel's tests pin (tests/chat/template_oracle.h).
PINNED_NOW = datetime.datetime(2025, 3, 7, 9, 5, 2)


class TemplateRaised(jinja2.exceptions.TemplateError):
    """raise_exception() from a template (transformers raises jinja2's TemplateError)."""


def raise_exception(message):
    raise TemplateRaised(message)


def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
    return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)


def strftime_now(format):
    return PINNED_NOW.strftime(format)


class AssistantTracker(jinja2.ext.Extension):
    """transformers' {% generation %}...{% endgeneration %}: the body renders in place."""

    tags = {"generation"}

    def parse(self, parser):
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(["name:endgeneration"], drop_needle=True)
        return jinja2.nodes.CallBlock(self.call_method("_generation_support"), [], [], body).set_lineno(lineno)

    def _generation_support(self, caller):
        return caller()


def make_env():
    env = ImmutableSandboxedEnvironment(
        trim_blocks=True, lstrip_blocks=True, extensions=[AssistantTracker, jinja2.ext.loopcontrols]
    )
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    return env


ENV = make_env()
_compiled = {}


def compile_template(template):
    if template not in _compiled:
        if len(_compiled) > 256:
            _compiled.clear()
        _compiled[template] = ENV.from_string(template)
    return _compiled[template]


def render(template, context):
    """One render as a result dict (see the module doc)."""
    try:
        return {"ok": True, "output": compile_template(template).render(**context)}
    except TemplateRaised as e:
        return {"ok": False, "raised": True, "type": "TemplateError", "error": str(e.message)}
    except RecursionError as e:
        return {"ok": False, "raised": False, "type": "RecursionError", "error": str(e)}
    except Exception as e:  # every jinja2 / Python error is an expected outcome to compare against
        return {"ok": False, "raised": False, "type": type(e).__name__, "error": str(e)}


def dump(result):
    # surrogateescape-free: outputs with lone surrogates cannot be encoded; report them as errors.
    try:
        return json.dumps(result, ensure_ascii=False)
    except UnicodeEncodeError as e:
        return json.dumps({"ok": False, "raised": False, "type": "UnicodeEncodeError", "error": str(e)})


def main():
    sys.setrecursionlimit(3000)
    sys.stdin.reconfigure(encoding="utf-8")
    sys.stdout.reconfigure(encoding="utf-8")
    out = sys.stdout
    for line in sys.stdin:
        if not line.strip():
            continue
        job = json.loads(line)
        text = dump(render(job["template"], job["context"]))
        try:
            out.write(text + "\n")
        except UnicodeEncodeError:
            out.write(json.dumps({"ok": False, "raised": False, "type": "UnicodeEncodeError", "error": ""}) + "\n")
    out.flush()


if __name__ == "__main__":
    main()
