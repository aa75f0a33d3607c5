#!/usr/bin/python3
"""Renders chat templates as Hugging Face transformers' apply_chat_template does, with Debian's
python3-jinja2: the reference tests/text/chat_template_test.cpp compares Orion's renderer with.

The environment is transformers' (src/transformers/utils/chat_template_utils.py):
ImmutableSandboxedEnvironment with trim_blocks and lstrip_blocks, the loopcontrols extension,
a {% generation %} tag that renders its body, tojson with ensure_ascii=False, and the globals
raise_exception and strftime_now. Variables: the special tokens, messages, tools and documents
(None unless given), add_generation_prompt and the case's extra keyword arguments.

Usage: render_chat.py CASES.json OUT.json, where CASES is a list of
{"template": str, "special": {...}, "messages": [...], "add_generation_prompt": bool,
 "extra": {...}}; OUT is a list of {"text": str} or {"error": str}.
"""
import json
import sys
from datetime import datetime

import jinja2
from jinja2 import nodes
from jinja2.ext import Extension
from jinja2.sandbox import ImmutableSandboxedEnvironment


class Generation(Extension):
    tags = {"generation"}

    def parse(self, parser):
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(["name:endgeneration"], drop_needle=True)
        return nodes.CallBlock(self.call_method("_render"), [], [], body).set_lineno(lineno)

    def _render(self, caller):
        return caller()


def raise_exception(message):
    raise jinja2.exceptions.TemplateError(message)


def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
    return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)


def strftime_now(fmt):
    return datetime.now().strftime(fmt)


def main():
    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                        extensions=[Generation, jinja2.ext.loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    with open(sys.argv[1], encoding="utf-8") as f:
        cases = json.load(f)
    out = []
    for c in cases:
        try:
            t = env.from_string(c["template"])
            variables = dict(c.get("special", {}))
            variables.update(messages=c["messages"], tools=None, documents=None,
                             add_generation_prompt=c.get("add_generation_prompt", True))
            variables.update(c.get("extra", {}))
            out.append({"text": t.render(**variables)})
        except Exception as e:  # the C++ test only asks whether both refused
            out.append({"error": f"{type(e).__name__}: {e}"})
    with open(sys.argv[2], "w", encoding="utf-8") as f:
        json.dump(out, f, ensure_ascii=False)


if __name__ == "__main__":
    main()
