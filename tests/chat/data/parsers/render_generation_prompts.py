#!/usr/bin/python3
"""Renders the end of each chat template's generation prompt with Python jinja2, set up as Hugging Face
transformers sets it up, and writes generation_prompts.json: the oracle for reasoning_start_from_prompt().
Run from the repository root: /usr/bin/python3 tests/chat/data/parsers/render_generation_prompts.py"""
import datetime, json, os, sys
import jinja2
import jinja2.sandbox
from jinja2.ext import loopcontrols

FIXTURES = os.path.join(os.path.dirname(__file__), "../../../../../shared/fixtures/chat-templates")
TEMPLATES = ["Qwen-Qwen3-0.6B", "Qwen3-Coder", "Qwen3.5-4B", "NVIDIA-Nemotron-Nano-v2",
             "NVIDIA-Nemotron-3-Nano-30B-A3B-BF16", "Qwen-Qwen2.5-7B-Instruct",
             "NousResearch-Hermes-3-Llama-3.1-8B-tool_use", "vllm-tool_chat_template_nemotron_json",
             "vllm-tool_chat_template_nemotron_nano_v2"]

def raise_exception(message):
    raise jinja2.exceptions.TemplateError(message)

def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
    return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)

env = jinja2.sandbox.ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=[loopcontrols])
env.filters["tojson"] = tojson
env.globals["raise_exception"] = raise_exception
env.globals["strftime_now"] = lambda fmt: datetime.datetime(2025, 1, 1).strftime(fmt)

out = []
for name in TEMPLATES:
    source = open(os.path.join(FIXTURES, name + ".jinja"), encoding="utf-8").read()
    template = env.from_string(source)
    # Nemotron Nano v2 switches thinking with "/think" or "/no_think" in the system message.
    for thinking, system in [(None, None), (True, None), (False, None), (None, "/no_think")]:
        kwargs = {} if thinking is None else {"enable_thinking": thinking}
        messages = ([{"role": "system", "content": system}] if system else []) + [{"role": "user", "content": "Hi"}]
        prompt = template.render(messages=messages, add_generation_prompt=True, bos_token="", eos_token="", **kwargs)
        out.append({"template": name, "enable_thinking": thinking, "system": system, "prompt_tail": prompt[-80:]})
json.dump({"generator": "tests/chat/data/parsers/render_generation_prompts.py, jinja2 " + jinja2.__version__,
           "prompts": out}, sys.stdout, indent=1, ensure_ascii=False)
print()
