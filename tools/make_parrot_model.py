#!/usr/bin/env python3
"""Writes a "parrot" model: a real Hugging Face llama folder whose greedy output replays a fixed chain of tokens.

It exists to test the server end to end through the normal loader, sampler, detokenizer and output parser, with
an output known in advance (parrot.json in the folder says what the API must return).

How it works. The layer's o_proj and down_proj are zero, so the residual stream leaving the decoder is the
embedding of the current token. Each chain token t_i gets its own embedding direction e_i (one-hot in the hidden
dimension); every other token shares one "other" direction. After the final RMSNorm the row is sqrt(hidden)·e_i,
and lm_head maps direction e_i to the next chain token t_{i+1} with weight 8, so its logit is 8·sqrt(64) = 64
against 0 for every other token: greedy picks it, and sampling at temperature 1 picks it with probability
1 − 4100·e^-64. The "other" direction maps to <|im_end|> (the end of generation). The chain starts at the last
token of the ChatML generation prompt "<|im_start|>assistant\\n", i.e. the byte-level token "Ċ" (a newline).

The tokenizer is the bundled model's byte-level BPE (models/keel-brown-nemotron-h-8m) with the chain's pieces
added as non-special added tokens, so each piece of the reply is exactly one token. No torch: the safetensors file
is written with the struct module.

Usage: make_parrot_model.py OUT_DIR [--mode tool|text]
  tool: <think>…</think> reasoning, then a Hermes <tool_call> for get_weather, then <|im_end|>.
  text: one sentence of content, then <|im_end|> (for agent clients such as OpenCode: the turn ends at once).
  bash: a Hermes <tool_call> for Claude Code's Bash tool (echo parrot-was-here > parrot.txt), then <|im_end|>.
"""
import argparse
import json
import os
import struct
import sys

HIDDEN = 64
HEADS, KV_HEADS, HEAD_DIM = 4, 2, 16
INTERMEDIATE = 32
LM_WEIGHT = 8.0

CHAT_TEMPLATE = (
    "{%- if tools %}<|im_start|>system\n"
    "{%- if messages[0].role == 'system' %}{{ messages[0].content }}\n\n{% endif %}"
    "# Tools\n\nYou may call one or more functions. Their signatures are within <tools></tools>:\n<tools>"
    "{%- for tool in tools %}\n{{ tool | tojson }}{%- endfor %}\n</tools>\n\n"
    "For each call, return a JSON object within <tool_call></tool_call> tags:\n"
    "<tool_call>\n{\"name\": <function-name>, \"arguments\": <args-json-object>}\n</tool_call><|im_end|>\n"
    "{%- elif messages[0].role == 'system' %}<|im_start|>system\n{{ messages[0].content }}<|im_end|>\n"
    "{%- endif %}"
    "{%- for message in messages %}"
    "{%- if message.role == 'system' and loop.first %}"
    "{%- elif message.role == 'assistant' %}<|im_start|>assistant\n"
    "{%- if message.reasoning_content %}<think>\n{{ message.reasoning_content }}\n</think>\n\n{% endif %}"
    "{%- if message.content %}{{ message.content }}{% endif %}"
    "{%- for call in message.tool_calls or [] %}<tool_call>\n"
    "{\"name\": \"{{ call.function.name }}\", \"arguments\": {{ call.function.arguments | tojson }}}\n"
    "</tool_call>{%- endfor %}<|im_end|>\n"
    "{%- elif message.role == 'tool' %}<|im_start|>user\n<tool_response>\n{{ message.content }}\n"
    "</tool_response><|im_end|>\n"
    "{%- else %}<|im_start|>{{ message.role }}\n{{ message.content }}<|im_end|>\n"
    "{%- endif %}"
    "{%- endfor %}"
    "{%- if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)

REASONING = "The user asks for the weather in Paris, so I call get_weather."
CALL = {"name": "get_weather", "arguments": {"city": "Paris", "days": 3}}
TEXT = "Hello from the parrot model. This turn is complete."
# Claude Code's shell tool: running it leaves a file the test can see.
BASH_CALL = {"name": "Bash", "arguments": {"command": "echo parrot-was-here > parrot.txt",
                                           "description": "Write parrot.txt"}}


def chains(mode):
    """The added-token pieces of the reply, in order, and what the API must return for them."""
    if mode == "tool":
        pieces = ["<think>\n", REASONING, "\n</think>\n\n", "<tool_call>\n", json.dumps(CALL), "\n</tool_call>"]
        expect = {"reasoning_content": REASONING, "content": None, "tool_calls": [CALL], "finish_reason": "tool_calls"}
    elif mode == "bash":
        pieces = ["<tool_call>\n", json.dumps(BASH_CALL), "\n</tool_call>"]
        expect = {"reasoning_content": None, "content": None, "tool_calls": [BASH_CALL], "finish_reason": "tool_calls"}
    else:
        pieces = [TEXT]
        expect = {"reasoning_content": None, "content": TEXT, "tool_calls": [], "finish_reason": "stop"}
    return pieces, expect


def bf16_bytes(values):
    """float values → little-endian bfloat16 (the values used here are exact in bf16)."""
    out = bytearray()
    for v in values:
        out += struct.pack("<f", v)[2:4]
    return bytes(out)


def write_safetensors(path, tensors):
    """tensors: list of (name, shape, flat float list) → a BF16 safetensors file."""
    header, blobs, offset = {}, [], 0
    for name, shape, values in tensors:
        data = bf16_bytes(values)
        header[name] = {"dtype": "BF16", "shape": shape, "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    header["__metadata__"] = {"format": "pt"}
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * ((8 - len(text) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for b in blobs:
            f.write(b)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out")
    ap.add_argument("--mode", choices=["tool", "text", "bash"], default="tool")
    ap.add_argument("--base", default=os.path.join(os.path.dirname(__file__), "..", "models", "keel-brown-nemotron-h-8m"))
    args = ap.parse_args()

    with open(os.path.join(args.base, "tokenizer.json"), encoding="utf-8") as f:
        tok = json.load(f)
    vocab = tok["model"]["vocab"]
    base_size = max(max(vocab.values()), max(t["id"] for t in tok["added_tokens"])) + 1
    eos_id = next(t["id"] for t in tok["added_tokens"] if t["content"] == "<|im_end|>")
    start_id = vocab["Ċ"]  # the newline that ends "<|im_start|>assistant\n"

    pieces, expect = chains(args.mode)
    chain_ids = [start_id]
    for i, piece in enumerate(pieces):
        tid = base_size + i
        tok["added_tokens"].append({"id": tid, "content": piece, "single_word": False, "lstrip": False,
                                    "rstrip": False, "normalized": False, "special": False})
        chain_ids.append(tid)
    vocab_size = base_size + len(pieces)
    if len(chain_ids) + 1 > HIDDEN:
        sys.exit("chain longer than the hidden size")

    # Embedding directions: chain token i → dim i; everything else → the last dim.
    other = HIDDEN - 1
    code = {t: i for i, t in enumerate(chain_ids)}
    embed = [0.0] * (vocab_size * HIDDEN)
    for t in range(vocab_size):
        embed[t * HIDDEN + code.get(t, other)] = 1.0
    lm_head = [0.0] * (vocab_size * HIDDEN)
    for i, t in enumerate(chain_ids):
        nxt = chain_ids[i + 1] if i + 1 < len(chain_ids) else eos_id
        lm_head[nxt * HIDDEN + i] = LM_WEIGHT
    lm_head[eos_id * HIDDEN + other] = LM_WEIGHT

    zeros = lambda n: [0.0] * n
    ones = lambda n: [1.0] * n
    p = "model.layers.0."
    tensors = [
        ("model.embed_tokens.weight", [vocab_size, HIDDEN], embed),
        (p + "input_layernorm.weight", [HIDDEN], ones(HIDDEN)),
        (p + "self_attn.q_proj.weight", [HEADS * HEAD_DIM, HIDDEN], zeros(HEADS * HEAD_DIM * HIDDEN)),
        (p + "self_attn.k_proj.weight", [KV_HEADS * HEAD_DIM, HIDDEN], zeros(KV_HEADS * HEAD_DIM * HIDDEN)),
        (p + "self_attn.v_proj.weight", [KV_HEADS * HEAD_DIM, HIDDEN], zeros(KV_HEADS * HEAD_DIM * HIDDEN)),
        (p + "self_attn.o_proj.weight", [HIDDEN, HEADS * HEAD_DIM], zeros(HIDDEN * HEADS * HEAD_DIM)),
        (p + "post_attention_layernorm.weight", [HIDDEN], ones(HIDDEN)),
        (p + "mlp.gate_proj.weight", [INTERMEDIATE, HIDDEN], zeros(INTERMEDIATE * HIDDEN)),
        (p + "mlp.up_proj.weight", [INTERMEDIATE, HIDDEN], zeros(INTERMEDIATE * HIDDEN)),
        (p + "mlp.down_proj.weight", [HIDDEN, INTERMEDIATE], zeros(HIDDEN * INTERMEDIATE)),
        ("model.norm.weight", [HIDDEN], ones(HIDDEN)),
        ("lm_head.weight", [vocab_size, HIDDEN], lm_head),
    ]

    os.makedirs(args.out, exist_ok=True)
    write_safetensors(os.path.join(args.out, "model.safetensors"), tensors)
    config = {
        "architectures": ["LlamaForCausalLM"], "model_type": "llama", "attention_bias": False, "mlp_bias": False,
        "hidden_act": "silu", "hidden_size": HIDDEN, "intermediate_size": INTERMEDIATE, "num_hidden_layers": 1,
        "num_attention_heads": HEADS, "num_key_value_heads": KV_HEADS, "head_dim": HEAD_DIM,
        "max_position_embeddings": 65536, "rms_norm_eps": 1e-5,
        "rope_parameters": {"rope_theta": 10000.0, "rope_type": "default"}, "tie_word_embeddings": False,
        "vocab_size": vocab_size, "bos_token_id": None, "eos_token_id": eos_id, "pad_token_id": 0,
        "dtype": "bfloat16",
    }
    with open(os.path.join(args.out, "config.json"), "w") as f:
        json.dump(config, f, indent=2)
    with open(os.path.join(args.out, "generation_config.json"), "w") as f:
        json.dump({"eos_token_id": eos_id, "bos_token_id": None}, f, indent=2)
    with open(os.path.join(args.base, "tokenizer_config.json"), encoding="utf-8") as f:
        tok_config = json.load(f)
    tok_config["chat_template"] = CHAT_TEMPLATE
    for t in tok["added_tokens"][-len(pieces):]:
        tok_config["added_tokens_decoder"][str(t["id"])] = {k: t[k] for k in
                                                            ("content", "lstrip", "normalized", "rstrip",
                                                             "single_word", "special")}
    with open(os.path.join(args.out, "tokenizer_config.json"), "w", encoding="utf-8") as f:
        json.dump(tok_config, f, indent=2, ensure_ascii=False)
    with open(os.path.join(args.out, "tokenizer.json"), "w", encoding="utf-8") as f:
        json.dump(tok, f, ensure_ascii=False)
    with open(os.path.join(args.out, "parrot.json"), "w") as f:
        json.dump({"mode": args.mode, "pieces": pieces, "chain_ids": chain_ids, "expect": expect}, f, indent=2)


if __name__ == "__main__":
    main()
