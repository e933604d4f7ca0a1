#!/usr/bin/env python3
"""Writes the seed corpora in fuzz/corpus/ for safetensors_fuzz and config_fuzz (run from anywhere; idempotent).

Seeds are small well-formed inputs for every shape the parsers accept, plus hostile ones: truncated files, offsets
past the end, sizes that overflow, deep nesting, invalid UTF-8, huge numbers, Python's bare Infinity/NaN.
"""
import json
import os
import struct

HERE = os.path.dirname(os.path.abspath(__file__))


def st_file(entries, data, metadata=None, length=None, pad=True):
    header = {}
    if metadata is not None:
        header["__metadata__"] = metadata
    header.update(entries)
    h = json.dumps(header, separators=(",", ":")).encode()
    if pad:
        h += b" " * ((8 - (8 + len(h)) % 8) % 8)
    n = len(h) if length is None else length
    return struct.pack("<Q", n) + h + data


def tensor(dtype, shape, begin, end):
    return {"dtype": dtype, "shape": shape, "data_offsets": [begin, end]}


def safetensors_seeds():
    good = st_file({"a": tensor("F32", [2, 3], 0, 24), "b": tensor("BF16", [4], 24, 32),
                    "c": tensor("I64", [1], 32, 40), "s": tensor("F16", [], 40, 42), "e": tensor("U8", [0, 5], 42, 42)},
                   bytes(range(42)), metadata={"format": "pt"})
    return {
        "good_multi": good,
        "good_empty": st_file({}, b""),
        "good_i8_i32": st_file({"q": tensor("I8", [3], 0, 3), "r": tensor("I32", [1], 4, 8)}, bytes(8)),
        "truncated_header": good[:30],
        "length_past_eof": struct.pack("<Q", 1 << 20) + good[8:],
        "length_huge": struct.pack("<Q", (1 << 64) - 1) + good[8:],
        "offsets_past_end": st_file({"a": tensor("F32", [4], 0, 16)}, bytes(8)),
        "end_before_begin": st_file({"a": tensor("F32", [2], 8, 0)}, bytes(8)),
        "size_mismatch": st_file({"a": tensor("F32", [3], 0, 8)}, bytes(8)),
        "overlap": st_file({"a": tensor("F32", [2], 0, 8), "b": tensor("F32", [2], 4, 12)}, bytes(16)),
        "shape_overflow": st_file({"a": tensor("F32", [1 << 32, 1 << 32, 4], 0, 8)}, bytes(8)),
        "bytes_overflow": st_file({"a": tensor("F32", [1 << 62], 0, 8)}, bytes(8)),
        "negative_shape": st_file({"a": tensor("F32", [-1, 2], 0, 8)}, bytes(8)),
        "float_shape": st_file({"a": tensor("F32", [2.0], 0, 8)}, bytes(8)),
        "unknown_dtype": st_file({"a": tensor("F8_E4M3", [8], 0, 8)}, bytes(8)),
        "metadata_not_strings": st_file({"a": tensor("U8", [1], 0, 1)}, bytes(1), metadata={"k": 1}),
        "not_object": struct.pack("<Q", 7) + b"[1,2,3]",
        "deep_nesting": struct.pack("<Q", 2006) + b"{\"a\":" + b"[" * 1000 + b"]" * 1000 + b"}",
        "invalid_utf8": struct.pack("<Q", 8) + b"{\"\xff\xfe\":1}",
    }


def config_seeds():
    nemotron = {"model_type": "nemotron_h", "vocab_size": 1000, "hidden_size": 64, "num_hidden_layers": 4,
                "layers_block_type": ["linear_attention", "moe", "full_attention", "mlp"],
                "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 32, "mamba_num_heads": 8,
                "mamba_head_dim": 16, "n_groups": 2, "ssm_state_size": 16, "conv_kernel": 4, "chunk_size": 32,
                "time_step_limit": [0.0, {"__float__": "Infinity"}], "intermediate_size": 96,
                "n_routed_experts": 8, "num_experts_per_tok": 2, "moe_intermediate_size": 32,
                "moe_shared_expert_intermediate_size": 64, "n_group": 2, "topk_group": 1, "moe_latent_size": 32}
    qwen35_text = {"model_type": "qwen3_5_text", "vocab_size": 512, "hidden_size": 64, "num_hidden_layers": 4,
                   "intermediate_size": 96, "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 32,
                   "linear_num_key_heads": 2, "linear_num_value_heads": 4, "linear_key_head_dim": 16,
                   "linear_value_head_dim": 8, "layer_types": ["linear_attention"] * 3 + ["full_attention"],
                   "rope_parameters": {"rope_type": "default", "rope_theta": 1e7, "partial_rotary_factor": 0.25,
                                       "mrope_section": [2, 1, 1], "mrope_interleaved": True}}
    qwen35_moe = dict(qwen35_text, model_type="qwen3_5_moe_text", num_experts=8, num_experts_per_tok=2,
                      moe_intermediate_size=16, shared_expert_intermediate_size=16)
    qwen3 = {"model_type": "qwen3", "vocab_size": 151936, "hidden_size": 1024, "intermediate_size": 3072,
             "num_hidden_layers": 28, "num_attention_heads": 16, "num_key_value_heads": 8, "head_dim": 128,
             "rope_theta": 1000000, "tie_word_embeddings": True, "eos_token_id": 151645}
    llama = {"model_type": "llama", "vocab_size": 128256, "hidden_size": 2048, "intermediate_size": 8192,
             "num_hidden_layers": 16, "num_attention_heads": 32, "num_key_value_heads": 8,
             "rope_scaling": {"factor": 32.0, "high_freq_factor": 4.0, "low_freq_factor": 1.0,
                              "original_max_position_embeddings": 8192, "rope_type": "llama3"},
             "eos_token_id": [128001, 128008, 128009]}
    seeds = {
        "nemotron_h_v5.json": json.dumps(nemotron),
        "nemotron_h_pattern_bare_infinity.json": json.dumps(dict(
            {k: v for k, v in nemotron.items() if k != "layers_block_type"},
            hybrid_override_pattern="ME*-", time_step_limit=[0.0, "INF"])).replace('"INF"', "Infinity"),
        "nemotron_h_old_words.json": json.dumps(dict(nemotron, layers_block_type=["mamba", "moe", "attention", "mlp"])),
        "qwen3_5_nested.json": json.dumps({"model_type": "qwen3_5", "tie_word_embeddings": True,
                                           "text_config": qwen35_text}),
        "qwen3_5_text_interval.json": json.dumps(dict({k: v for k, v in qwen35_text.items() if k != "layer_types"},
                                                      full_attention_interval=2)),
        "qwen3_5_moe_nested.json": json.dumps({"model_type": "qwen3_5_moe", "text_config": qwen35_moe}),
        "qwen3.json": json.dumps(qwen3),
        "llama.json": json.dumps(llama),
        "huge_numbers.json": json.dumps(dict(nemotron, mamba_num_heads=2147483647, mamba_head_dim=2147483647,
                                             ssm_state_size=2147483647, n_groups=1, hidden_size=1e300)),
        "huge_layer_count.json": json.dumps(dict(qwen3, num_hidden_layers=2147483647)),
        "deep_nesting.json": '{"model_type": "qwen3", "x": ' + "[" * 5000 + "]" * 5000 + "}",
        "nan_tokens.json": '{"model_type": "llama", "rms_norm_eps": NaN, "rope_theta": -Infinity}',
        "unknown_type.json": '{"model_type": "gpt2"}',
    }
    seeds["invalid_utf8.json"] = b'{"model_type": "qwen3", "\xc3\x28": 1}'
    return seeds


def write(folder, seeds):
    os.makedirs(folder, exist_ok=True)
    for name, content in seeds.items():
        with open(os.path.join(folder, name), "wb") as f:
            f.write(content if isinstance(content, bytes) else content.encode())


if __name__ == "__main__":
    write(os.path.join(HERE, "corpus", "safetensors_fuzz"), safetensors_seeds())
    write(os.path.join(HERE, "corpus", "config_fuzz"), config_seeds())
