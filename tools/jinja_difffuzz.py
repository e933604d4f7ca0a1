#!/usr/bin/python3
"""Differential fuzzing of keel's Jinja engine against Python's jinja2.

Generates random templates from a grammar of the features keel supports (text and whitespace control, trim_blocks
and lstrip_blocks, if/for/set/macro/call/filter/raw/namespace/break/continue, expressions with Python semantics,
filters, tests, str/dict methods) and random contexts, renders each with jinja2 (set up as transformers does:
tests/chat/oracle/jinja_oracle.py) and with keel (`keel render --jinja-batch`), and reports every case where the
outputs differ or one raises and the other does not (or raise_exception messages differ).

  jinja_difffuzz.py --keel build/keel [--seed N] [--count N | --seconds S] [--show N]
  jinja_difffuzz.py --emit FILE [--seed N] [--count N]      # cases + jinja2's results, for a test to replay

Without --seed a random seed is drawn and printed, so any run can be repeated. Exit status 1 on a mismatch.
Run with /usr/bin/python3 (Debian's python3-jinja2).
"""
import argparse
import warnings
import json
import os
import random
import re
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "chat", "oracle"))
import jinja_oracle  # noqa: E402

WORDS = ["a", "b", "hello", "World", "x y", " pad ", "Ünï", "日本", "😀", "a,b,c", "it's", 'say "hi"', "back\\slash",
         "line\nbreak", "tab\there", "", "UPPER", "lower", "MiXeD cAsE", "42", "3.5", "-7", "  ", "\u00a0nbsp\u3000",
         "cr\r\nlf", "<b>&amp;</b>", "{{ not a tag }}", "ÉCOLE ß", "\x0bvt\x0c", "1_000", " 12 ", "0x1F"]
KEYS = ["k", "name", "role", "content", "items", "value", "n"]
NAMES = ["a", "b", "s", "t", "n", "f", "lst", "nums", "words", "dct", "msgs", "flag", "none_v", "undef"]


class Gen:
    def __init__(self, rng):
        self.r = rng
        self.loop_depth = 0
        self.macros = []
        self.locals = []

    def choice(self, xs):
        return self.r.choice(xs)

    def lazy(self, xs):
        """One of xs; callables are only called when picked (so alternatives are not all generated)."""
        x = self.r.choice(xs)
        return x() if callable(x) else x

    # ---- context ----
    def value(self, depth=0):
        r = self.r.random()
        if depth > 2 or r < 0.55:
            return self.choice([
                self.r.randint(-3, 5), self.r.randint(-100, 100), self.choice([0.5, -1.25, 2.0, 1e20, 0.1, 3.0, -0.0]),
                self.choice(WORDS), True, False, None])
        if r < 0.8:
            return [self.value(depth + 1) for _ in range(self.r.randint(0, 4))]
        return {self.choice(KEYS): self.value(depth + 1) for _ in range(self.r.randint(0, 4))}

    def context(self):
        ctx = {
            "a": self.r.randint(-5, 9), "b": self.choice([0, 1, 2, 7, -3, 2.5]), "s": self.choice(WORDS),
            "n": self.r.randint(0, 4), "f": self.choice([0.5, 1.0, -2.75, 3.14159, 1e-7, 12345.678]),
            "t": self.choice(WORDS), "nums": [self.r.randint(-9, 20) for _ in range(self.r.randint(1, 5))],
            "words": [self.choice(WORDS) for _ in range(self.r.randint(1, 5))],
            "lst": [self.value(1) for _ in range(self.r.randint(0, 5))],
            "dct": {k: self.value(1) for k in self.r.sample(KEYS, self.r.randint(0, 4))},
            "msgs": [{"role": self.choice(["user", "assistant", "system"]), "content": self.choice(WORDS)}
                     for _ in range(self.r.randint(1, 4))],
            "flag": self.choice([True, False]), "none_v": None,
        }
        return ctx

    # ---- expressions ----
    # Typed generators keep most templates valid (so they render and their output is compared); `wild` mixes
    # anything with anything, for the error paths.
    def string_literal(self):
        s = self.choice(WORDS + ["%s-%d", "{} {}", "\\n", "\\t", "\\u00e9", "\\x41", "\\\\", "a\\'b", "%s"])
        q = self.choice(["'", '"'])
        body = s.replace("\n", "\\n").replace("\t", "\\t")
        if q == "'":
            body = body.replace("'", "\\'") if "\\'" not in body else body
        else:
            body = body.replace('"', '\\"')
        return q + body + q

    @staticmethod
    def atom(e):
        """e as a primary expression: parenthesized unless it is a plain name, number or string."""
        if re.fullmatch(r"[A-Za-z_][A-Za-z_0-9.]*|-?[0-9][0-9._e]*|'[^']*'|\"[^\"]*\"", e):
            return e
        return "(" + e + ")"

    def loop_names(self, kind):
        if not self.loop_depth:
            return []
        if kind == "num":
            return ["loop.index", "loop.index0", "loop.length", "loop.revindex", "loop.revindex0", "loop.depth"]
        return ["loop.first", "loop.last"]

    def num(self, d=0):
        r = self.r.random()
        if d > 2 or r < 0.35:
            return self.lazy(["a", "n", "b", "f", lambda: str(self.r.randint(-3, 9)), "0.5", "2.0", "1e3", "1_000", "0x1F",
                                "-0.0", "3.25"] + self.loop_names("num") + [x for x in self.locals if x == "i"])
        if r < 0.6:
            op = self.choice(["+", "-", "*", "/", "//", "%", "**"])
            right = self.num(d + 1) if op in "+-*" else self.choice(["2", "3", "-4", "0.5", "7"])
            if op == "**":
                right = self.choice(["0", "1", "2", "3", "-1"])
            return f"{self.num(d + 1)} {op} {right}"
        return self.lazy([
            lambda: f"{self.atom(self.str_(d + 1))}|length", lambda: f"{self.atom(self.lst(d + 1))}|length", lambda: f"-{self.atom(self.num(d + 1))}", lambda: f"({self.num(d + 1)})",
            lambda: f"{self.atom(self.num(d + 1))}|abs", lambda: f"{self.atom(self.num(d + 1))}|round", lambda: f"{self.atom(self.num(d + 1))}|round(2)", lambda: f"{self.atom(self.num(d + 1))}|int",
            lambda: f"{self.atom(self.num(d + 1))}|float", "nums|sum", "nums|max", "nums|min", lambda: f"'{self.r.randint(-9, 99)}'|int",
            lambda: f"{self.atom(self.str_(d + 1))}|int", lambda: f"{self.atom(self.str_(d + 1))}|float", lambda: f"{self.atom(self.str_(d + 1))}.count('a')",
            lambda: f"{self.atom(self.str_(d + 1))}.find('l')", "nums|first", "nums|last", "range(5)|sum", "dct|length", "msgs|length",
            lambda: f"({self.num(d + 1)} if {self.cond(d + 1)} else {self.num(d + 1)})", lambda: f"[{self.num(d + 1)}, 2]|max",
            "nums|sum(start=10)", lambda: f"{self.atom(self.str_(d + 1))}|wordcount"])

    def str_(self, d=0):
        r = self.r.random()
        if d > 2 or r < 0.35:
            return self.lazy(["s", "t", lambda: self.string_literal(), lambda: self.string_literal(), "msgs[0].content",
                                "dct.name", "words|first"] + [x for x in self.locals if x in ("w", "v")])
        if r < 0.5:
            return f"{self.str_(d + 1)} ~ {self.any(d + 1)}"
        if r < 0.58:
            return f"{self.str_(d + 1)} + {self.str_(d + 1)}"
        f = self.choice(["upper", "lower", "trim", "title", "capitalize", "string", "reverse", "center(9)", "indent(2)",
                         "indent(2, true)", "indent(2, blank=true)", "replace('a', 'X')", "replace(' ', '')",
                         "replace('l', 'L', 1)", "truncate(6)", "e", "safe", "trim('ab ')", "default('D')",
                         "format(1, 2)", "first", "last"])
        m = self.choice(["upper()", "lower()", "strip()", "strip('a ')", "lstrip()", "rstrip('x')", "title()",
                         "capitalize()", "replace('a', 'b')", "replace('', '-')", "center(7, '*')", "zfill(4)",
                         "swapcase()", "ljust(6)", "rjust(6, '.')", "removeprefix('h')", "removesuffix('o')"])
        return self.lazy([
            lambda: f"{self.atom(self.str_(d + 1))}|{f}", lambda: f"{self.atom(self.str_(d + 1))}.{m}", lambda: f"{self.atom(self.str_(d + 1))}[{self.slice_()}]",
            lambda: f"{self.str_(d + 1)} * {self.r.randint(-1, 3)}", lambda: f"{self.atom(self.num(d + 1))}|string", lambda: f"{self.atom(self.any(d + 1))}|string",
            lambda: f"{self.atom(self.lst(d + 1))}|join", lambda: f"{self.atom(self.lst(d + 1))}|join(', ')", lambda: f"{self.atom(self.any(d + 1))}|tojson",
            lambda: f"{self.atom(self.any(d + 1))}|tojson(indent=2)", lambda: f"{self.atom(self.any(d + 1))}|tojson(sort_keys=true)",
            lambda: f"{self.atom(self.any(d + 1))}|tojson(separators=(',', ':'))", lambda: f"{self.atom(self.any(d + 1))}|tojson(indent='\t')",
            lambda: f"dct.get('name', {self.str_(d + 1)})|string", lambda: f"{self.atom(self.str_(d + 1))}.split(',')|join('|')",
            lambda: f"'%s|%d|%5.2f|%-4s|%r' % ({self.str_(d + 1)}, {self.num(d + 1)}, {self.num(d + 1)}, 'x', {self.any(d + 1)})",
            lambda: f"'{{}}:{{:>5}}:{{:.3f}}'.format({self.str_(d + 1)}, {self.str_(d + 1)}, {self.num(d + 1)})",
            lambda: f"({self.str_(d + 1)} if {self.cond(d + 1)} else {self.str_(d + 1)})", lambda: f"({self.str_(d + 1)})",
            lambda: f"{self.atom(self.str_(d + 1))}.join({self.lst(d + 1)}|map('string'))", lambda: f"{self.atom(self.str_(d + 1))}|list|join('.')",
            lambda: f"{self.atom(self.str_(d + 1))}.splitlines()|join('/')", lambda: f"{self.atom(self.num(d + 1))}|string|center(8)",
            lambda: f"strftime_now('{self.choice(['%Y-%m-%d', '%d %b %Y', '%A %H:%M', '%j'])}')"])

    def slice_(self):
        return self.choice(["0", "-1", "1:", ":2", "::-1", "-2:", "1:-1", "::2", "n:", ":n", "5:", "-9:"])

    def lst(self, d=0):
        r = self.r.random()
        if d > 2 or r < 0.4:
            return self.choice(["nums", "words", "lst", "msgs", "[1, 2, 3]", "['b', 'A', 'c']", "[]", "range(n)",
                                "range(1, 7, 2)", "(1, 'x')", "dct.items()|list", "dct|list"])
        return self.lazy([
            lambda: f"{self.atom(self.lst(d + 1))}|list", lambda: f"{self.atom(self.str_(d + 1))}|list", lambda: f"{self.atom(self.str_(d + 1))}.split()",
            lambda: f"{self.atom(self.str_(d + 1))}.split(',')", lambda: f"{self.atom(self.str_(d + 1))}.rsplit(' ', 1)", "nums|sort",
            "nums|sort(reverse=true)", "words|sort", "words|sort(case_sensitive=true)", "nums|reverse|list",
            "words|unique|list", "nums|unique|list", "msgs|map(attribute='role')|list",
            "msgs|selectattr('role', 'eq', 'user')|list", "msgs|rejectattr('role', 'equalto', 'system')|list",
            "msgs|selectattr('content')|list", "nums|select('odd')|list", "nums|reject('even')|list",
            "nums|select('gt', 1)|list", "words|map('upper')|list", "nums|map('string')|list",
            "lst|select('none')|list", "lst|reject('string')|list", "nums|batch(2)|list", "nums|batch(2, 0)|list",
            "words|slice(2)|list", "dct|dictsort", "dct|dictsort(by='key', reverse=true)", "dct|items|list",
            "msgs|groupby('role')|list", "msgs|sort(attribute='role')", "msgs|map(attribute='missing', default='?')|list",
            lambda: f"{self.lst(d + 1)} + {self.lst(d + 1)}", lambda: f"{self.atom(self.lst(d + 1))}[{self.slice_()}]",
            lambda: f"[{self.any(d + 1)}, {self.any(d + 1)}]", lambda: f"{self.lst(d + 1)} * 2", "dct.keys()|list", "dct.values()|list",
            lambda: f"({self.lst(d + 1)} if {self.cond(d + 1)} else [])"])

    def dict_(self, d=0):
        if d > 2 or self.r.random() < 0.6:
            return self.choice(["dct", "msgs[0]", "{}", "{'k': 1, 'name': 'x'}", "dict(k=1, v='x')",
                                "namespace(v=1).v", "msgs|last"])
        return self.lazy([lambda: f"{{'k': {self.any(d + 1)}, {self.str_(d + 1)}: {self.num(d + 1)}}}",
                            lambda: f"dict({self.dict_(d + 1)}, extra=1)"])

    def cond(self, d=0):
        r = self.r.random()
        if d > 2 or r < 0.25:
            return self.choice(["flag", "not flag", "true", "false", "none_v", "undef", "lst", "s", "n"] +
                               self.loop_names("bool"))
        if r < 0.5:
            op = self.choice(["==", "!=", "<", ">", "<=", ">="])
            kind = self.choice(["num", "num", "str_"])
            return f"{getattr(self, kind)(d + 1)} {op} {getattr(self, kind)(d + 1)}"
        if r < 0.65:
            test = self.choice(["defined", "undefined", "none", "string", "number", "integer", "float", "mapping",
                                "sequence", "iterable", "boolean", "true", "false", "lower", "upper", "callable",
                                "eq(1)", "eq 'a'", "in([1, 'a'])", "in 'hello world'", "sameas none", "gt 2",
                                "ne(0)", "escaped", "filter", "test"])
            if test in ("odd", "even"):
                return f"{self.num(d + 1)} is {test}"
            return f"{self.atom(self.any(d + 1))} is {self.choice(['', 'not '])}{test}"
        if r < 0.72:
            return f"{self.atom(self.num(d + 1))} is {self.choice(['odd', 'even', 'divisibleby 3', 'divisibleby(2)'])}"
        if r < 0.82:
            return self.lazy([lambda: f"{self.str_(d + 1)} in {self.str_(d + 1)}", lambda: f"{self.any(d + 1)} in {self.lst(d + 1)}",
                                lambda: f"'k' in {self.dict_(d + 1)}", lambda: f"{self.any(d + 1)} not in {self.lst(d + 1)}",
                                lambda: f"{self.atom(self.str_(d + 1))}.startswith(('a', 'h'))", lambda: f"{self.atom(self.str_(d + 1))}.endswith('o')",
                                lambda: f"{self.atom(self.str_(d + 1))}.isdigit()", lambda: f"{self.atom(self.str_(d + 1))}.isalpha()"])
        if r < 0.92:
            return f"{self.cond(d + 1)} {self.choice(['and', 'or'])} {self.cond(d + 1)}"
        return f"not {self.cond(d + 1)}"

    def wild(self, d=0):
        """Anything with anything: mostly errors, for the error paths."""
        r = self.r.random()
        if d > 2 or r < 0.3:
            return self.choice(NAMES + [self.string_literal(), str(self.r.randint(-3, 9)), "none", "[1]", "{}"])
        if r < 0.6:
            op = self.choice(["+", "-", "*", "/", "//", "%", "~", "<", "in", "==", "and"])
            return f"{self.wild(d + 1)} {op} {self.wild(d + 1)}"
        return self.lazy([lambda: f"{self.atom(self.wild(d + 1))}.{self.choice(KEYS)}", lambda: f"{self.atom(self.wild(d + 1))}[0]",
                            lambda: f"{self.atom(self.wild(d + 1))}|{self.choice(['first', 'length', 'int', 'upper', 'items|list', 'dictsort', 'join', 'sum', 'abs', 'tojson'])}",
                            lambda: f"{self.atom(self.wild(d + 1))}()", lambda: f"{self.atom(self.wild(d + 1))}.{self.choice(['split()', 'get(1)', 'items()', 'append(1)', 'upper()'])}"])

    def any(self, d=0):
        kind = self.r.random()
        if kind < 0.25:
            return self.num(d)
        if kind < 0.5:
            return self.str_(d)
        if kind < 0.65:
            return self.lst(d)
        if kind < 0.75:
            return self.dict_(d)
        if kind < 0.88:
            return self.cond(d)
        if self.macros and kind < 0.94:
            m = self.choice(self.macros)
            return f"{m}({', '.join(self.any(d + 1) for _ in range(self.r.randint(0, 2)))})"
        return self.wild(d)

    def expr(self, depth=0):
        return self.any(depth)

    # ---- statements ----
    def ws(self):
        return self.choice(["", "", " ", "\n", "  ", "\t", "\n  ", " \n", "\n\n", "\n    ", "\r\n", "\r\n  ",
                            "\u3000", "\n\x0b ", " \n\n  "])

    def open_tag(self):
        return "{%" + self.choice(["", "", "", "-", "+"]) + " "

    def close_tag(self):
        return " " + self.choice(["", "", "", "-", "+"]) + "%}"

    def tag(self, body):
        return self.ws() + self.open_tag() + body + self.close_tag() + self.ws()

    def text(self):
        return self.choice(["x", "word ", "  ", "\n", " \n ", "Ünï ", "{ ", "}", "#", "%", "-", "+", "\t", "a b\n"])

    def output(self):
        return "{{" + self.choice(["", "", "-", "+"]) + " " + self.expr() + " " + self.choice(["", "", "-"]) + "}}"

    def block(self, depth):
        parts = []
        for _ in range(self.r.randint(1, 4 if depth else 6)):
            parts.append(self.statement(depth))
        return "".join(parts)

    def statement(self, depth):
        r = self.r.random()
        if depth > 2 or r < 0.3:
            return self.text() if self.r.random() < 0.5 else self.output()
        if r < 0.45:
            s = self.tag(f"if {self.cond()}") + self.block(depth + 1)
            for _ in range(self.r.randint(0, 2)):
                s += self.tag(f"elif {self.cond()}") + self.block(depth + 1)
            if self.r.random() < 0.5:
                s += self.tag("else") + self.block(depth + 1)
            return s + self.tag("endif")
        if r < 0.6:
            var = self.choice(["i", "w", "item"])
            it = self.choice(["nums", "words", "msgs", "dct", "s", "range(n)", "[1, 2, 3]", "dct.items()",
                              "nums|reverse", "undef", "lst", self.lst()])
            head = f"for {var} in {self.atom(it) if ' if ' in it else it}"
            if it == "dct.items()":
                head = f"for key, {var} in {it}"
            if self.r.random() < 0.2:
                head += f" if {var} is defined and {var}"
            if self.r.random() < 0.1:
                head += " recursive"
            self.loop_depth += 1
            self.locals.append(var)
            body = self.block(depth + 1)
            if self.r.random() < 0.3:
                body += self.tag(f"if {self.cond()}") + self.tag(self.choice(["break", "continue"])) + self.tag("endif")
            if self.r.random() < 0.3:
                body += self.choice(["{{ loop.cycle('odd', 'even') }}", "{{ loop.previtem }}|{{ loop.nextitem }}",
                                     "{{ loop.changed(" + var + ") }}", "{{ loop.depth0 }}"])
            if "recursive" in head and self.r.random() < 0.7:
                body += "{% if " + var + " is sequence and " + var + " is not string %}<{{ loop(" + var + ") }}>{% endif %}"
            self.locals.pop()
            self.loop_depth -= 1
            s = self.tag(head) + body
            if self.r.random() < 0.3:
                s += self.tag("else") + self.block(depth + 1)
            return s + self.tag("endfor")
        if r < 0.72:
            var = self.choice(["v", "w", "t", "s"])
            self.locals.append(var)
            if self.r.random() < 0.8:
                return self.tag(f"set {var} = {self.expr()}")
            return self.tag(f"set {var}") + self.block(depth + 1) + self.tag("endset")
        if r < 0.78:
            return (self.tag("set ns = namespace(v=0, t='')") + self.tag(f"set ns.v = ns.v + 1") +
                    self.tag(f"set ns.t = ns.t ~ {self.expr()}") + "{{ ns.v }}{{ ns.t }}")
        if r < 0.85:
            name = self.choice(["m1", "m2"])
            params = self.choice(["", "p", "p, q=2", "p='d'", "p, q=p ~ 'x'"])
            self.locals.extend(["p", "q"])
            body = self.block(depth + 1)
            if self.r.random() < 0.3:
                body += self.choice(["{{ caller() }}", "{{ caller(1, 2) }}", "{{ varargs|length }}", "{{ kwargs }}",
                                     "{{ varargs }}{{ kwargs|dictsort }}"])
            del self.locals[-2:]
            self.macros.append(name)
            return self.tag(f"macro {name}({params})") + body + self.tag("endmacro")
        if r < 0.88:
            return "{#" + self.choice(["", "-"]) + " comment " + self.choice(["", "-"]) + "#}" + self.ws()
        if r < 0.9:
            return self.tag(f"if {self.cond()}") + "{{ raise_exception('stop: ' ~ " + self.atom(self.str_()) + ") }}" + \
                self.tag("endif")
        if r < 0.92 and self.macros:
            head = self.choice(["call ", "call(x, y=0) "]) + self.choice(self.macros) + self.choice(["(1)", "()", "(1, 2, k=3)"])
            return self.tag(head) + self.block(depth + 1) + self.tag("endcall")
        if r < 0.94:
            return (self.ws() + "{%" + self.choice(["", "-", "+"]) + " raw " + self.choice(["", "-"]) + "%}" +
                    self.choice(["{{ not parsed }}", "{% if %}", " x ", "\n  "]) + self.tag("endraw"))
        if r < 0.97:
            f = self.choice(["upper", "trim", "title", 'replace("a", "b")'])
            return self.tag("filter " + f) + self.block(depth + 1) + self.tag("endfilter")
        return self.tag("with w2 = " + self.expr()) + "{{ w2 }}" + self.tag("endwith")

    def template(self):
        self.macros, self.locals, self.loop_depth = [], [], 0
        return self.block(0)


def generate(seed, count):
    rng = random.Random(seed)
    gen = Gen(rng)
    return [{"template": gen.template(), "context": gen.context()} for _ in range(count)]


ADDRESS = re.compile(r" at 0x[0-9a-f]+>", re.IGNORECASE)  # |upper may have been applied to it


def keel_limit(got):
    """keel stopped at one of its own limits: LimitError (a 5 GB string, a runaway loop) or an integer past 64
    bits (keel's integers are 64-bit, Python's unbounded)."""
    return not got["ok"] and (got.get("type") == "LimitError" or
                              (got.get("type") == "OverflowError" and "64 bits" in got.get("error", "")))


def comparable(expected, got):
    """False when jinja2 printed an object's memory address (a method, a reversed() iterator...), in its output
    or in a raised message: no engine can reproduce that text; or when keel stopped at one of its limits where
    Python, which has none, went on: both cases are skipped."""
    text = expected["output"] if expected["ok"] else expected.get("error", "")
    if ADDRESS.search(text):
        return False
    return not (expected["ok"] and keel_limit(got))


def same(a, b):
    if a["ok"] != b["ok"]:
        return False
    if a["ok"]:
        return a["output"] == b["output"]
    if a.get("raised") or b.get("raised"):
        return a.get("raised") == b.get("raised") and a["error"] == b["error"]
    return True


def keel_render(keel, cases):
    with tempfile.NamedTemporaryFile("w", suffix=".jsonl", delete=False, encoding="utf-8") as f:
        for c in cases:
            f.write(json.dumps({"template": c["template"], "context": c["context"]}, ensure_ascii=False) + "\n")
        path = f.name
    try:
        now = jinja_oracle.PINNED_NOW.strftime("%Y-%m-%d %H:%M:%S")
        p = subprocess.run([keel, "render", "--jinja-batch", path, "--now", now], capture_output=True, timeout=600)
        if p.returncode != 0:
            raise SystemExit(f"keel exited with {p.returncode}: {p.stderr.decode(errors='replace')[-2000:]}")
        return [json.loads(line) for line in p.stdout.decode("utf-8").splitlines()]
    finally:
        os.unlink(path)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--keel", help="path to the keel binary")
    ap.add_argument("--emit", help="write cases with jinja2's results as JSON lines to this file")
    ap.add_argument("--seed", type=int)
    ap.add_argument("--count", type=int, default=300)
    ap.add_argument("--seconds", type=float, help="run batches until this much time has passed")
    ap.add_argument("--show", type=int, default=5, help="mismatches to print")
    args = ap.parse_args()
    seed = args.seed if args.seed is not None else random.SystemRandom().randrange(1 << 31)
    print(f"jinja_difffuzz: seed {seed}", flush=True)
    sys.setrecursionlimit(3000)
    warnings.simplefilter("ignore")  # jinja2's compiler warns about code like `1[0]`

    if args.emit:
        cases = generate(seed, args.count)
        with open(args.emit, "w", encoding="utf-8") as f:
            for c in cases:
                c["expected"] = jinja_oracle.render(c["template"], c["context"])
                f.write(jinja_oracle.dump(c) + "\n")
        return 0
    if not args.keel:
        ap.error("give --keel PATH or --emit FILE")

    start, total, bad, batch, skipped = time.time(), 0, 0, 0, 0
    outcomes = {"ok": 0, "error": 0, "raised": 0}
    while True:
        cases = generate(seed + batch, args.count)
        expected = [jinja_oracle.render(c["template"], c["context"]) for c in cases]
        got = keel_render(args.keel, cases)
        for c, e, g in zip(cases, expected, got):
            if not comparable(e, g):
                skipped += 1
                continue
            total += 1
            outcomes["ok" if e["ok"] else "raised" if e.get("raised") else "error"] += 1
            if not same(e, g):
                bad += 1
                if bad <= args.show:
                    print(f"--- mismatch (seed {seed + batch}) ---\ntemplate: {c['template']!r}\n"
                          f"context: {json.dumps(c['context'], ensure_ascii=False)}\njinja2: {e}\nkeel:   {g}")
        batch += 1
        if not args.seconds or time.time() - start >= args.seconds:
            break
    print(f"jinja_difffuzz: {total} cases ({outcomes['ok']} rendered, {outcomes['error']} errors, "
          f"{outcomes['raised']} raise_exception), {bad} mismatches, {skipped} skipped (jinja2 printed an "
          f"address, or keel hit a resource limit), {time.time() - start:.1f} s")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
