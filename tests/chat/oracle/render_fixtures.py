#!/usr/bin/python3
"""Expected prompts for keel's chat-template tests: every template in a folder x every scenario, rendered by
jinja2 set up as transformers does (jinja_oracle.py), with the context transformers' apply_chat_template builds:
messages, tools (None when absent), documents=None, add_generation_prompt, bos_token, eos_token, then the
scenario's extra keyword arguments.

Scenarios whose tool calls carry `arguments` as JSON strings are rendered twice: "raw" (as the OpenAI API sends
them) and "normalized" (each string holding a JSON object replaced by that object, as vLLM does before rendering).

Also decides, per template, whether tool-call arguments should be objects, by the rule chat_template.h states:
render a probe conversation with object arguments; objects are wanted when that renders, shows the argument value
and shows no Python repr of the arguments.

usage: render_fixtures.py TEMPLATE_DIR SCENARIOS_JSON OUT_JSON [TEMPLATE_FILE_NAME]
(with a file name, only that template is rendered)
"""
import copy
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import jinja_oracle  # noqa: E402


def normalize_arguments(messages):
    out = copy.deepcopy(messages)
    for m in out:
        if not isinstance(m, dict) or m.get("role") != "assistant" or not isinstance(m.get("tool_calls"), list):
            continue
        for call in m["tool_calls"]:
            fn = call.get("function") if isinstance(call, dict) else None
            if isinstance(fn, dict) and isinstance(fn.get("arguments"), str):
                try:
                    parsed = json.loads(fn["arguments"])
                except ValueError:
                    continue
                if isinstance(parsed, dict):
                    fn["arguments"] = parsed
    return out


def context(messages, tools, add_generation_prompt, bos, eos, kwargs):
    ctx = {"messages": messages, "tools": tools, "documents": None, "add_generation_prompt": add_generation_prompt,
           "bos_token": bos, "eos_token": eos}
    ctx.update(kwargs)
    return ctx


def probe_wants_objects(template, bos, eos):
    arguments = {"keel_probe_arg": "keel_probe_value"}
    messages = [
        {"role": "user", "content": "Use the tool."},
        {"role": "assistant", "content": "", "tool_calls": [
            {"id": "keelprobe", "type": "function",
             "function": {"name": "keel_probe_tool", "arguments": arguments}}]},
        {"role": "tool", "tool_call_id": "keelprobe", "name": "keel_probe_tool", "content": "ok"},
    ]
    params = {"type": "object", "properties": {"keel_probe_arg": {"type": "string", "description": "a probe"}},
              "required": ["keel_probe_arg"]}
    tools = [{"type": "function", "function": {"name": "keel_probe_tool", "description": "A probe.",
                                                "parameters": params}}]
    r = jinja_oracle.render(template, context(messages, tools, True, bos, eos, {}))
    return r["ok"] and "keel_probe_value" in r["output"] and "'keel_probe_arg'" not in r["output"]


def main():
    template_dir, scenarios_path, out_path = sys.argv[1:4]
    only = sys.argv[4] if len(sys.argv) > 4 else None
    with open(scenarios_path, encoding="utf-8") as f:
        spec = json.load(f)
    bos, eos = spec["bos_token"], spec["eos_token"]
    result = {}
    for name in sorted(os.listdir(template_dir)):
        if not name.endswith(".jinja") or (only and name != only):
            continue
        with open(os.path.join(template_dir, name), encoding="utf-8", newline="") as f:
            template = f.read()  # unchanged: CRLF stays CRLF
        entry = {"wants_object_arguments": probe_wants_objects(template, bos, eos), "results": {}}
        for s in spec["scenarios"]:
            variants = {"raw": s["messages"]}
            normalized = normalize_arguments(s["messages"])
            if normalized != s["messages"]:
                variants["normalized"] = normalized
            for variant, messages in variants.items():
                ctx = context(messages, s.get("tools"), s.get("add_generation_prompt", True), bos, eos,
                              s.get("kwargs", {}))
                entry["results"][s["name"] + "/" + variant] = jinja_oracle.render(template, ctx)
        result[name] = entry
    with open(out_path, "w", encoding="utf-8") as f:
        json.dump(result, f, ensure_ascii=False, indent=1)


if __name__ == "__main__":
    main()
