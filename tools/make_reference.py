#!/usr/bin/env python3
"""Writes keel's reference fixtures: tiny random-weight Hugging Face model folders and float64 transformers outputs.

Run where torch, transformers 5.x, tokenizers and safetensors are installed (the GPU machine; CPU works too):

    python3 tools/make_reference.py --out tests/fixtures

Per model folder tests/fixtures/<name>/: config.json, model.safetensors (bf16), generation_config.json,
tokenizer.json, tokenizer_config.json (all written by transformers / tokenizers), plus reference.safetensors
(f32 / i64 tensors) and reference.json (metadata). tests/fixtures/README.md documents every tensor.

How the reference is made: random weights scaled so the logits are far from uniform, rounded to bf16 and saved;
the saved folder is loaded back with from_pretrained, upcast with .double(), and run under Float64Mode, which
promotes the float32 casts inside transformers' code (RMSNorm, router, SSM scan, softmax...) to float64.
TF32 is off. The output is checked against a plain float32 run and a plain .double() run (see reference.json).
"""
import argparse
import contextlib
import copy
import json
import math
import os
import platform
import statistics
import sys
import time
import traceback

import torch
import torch.nn.functional as F
from torch.overrides import TorchFunctionMode

PROMPT_LEN = 299  # odd on purpose: not a multiple of any chunk size
N_GREEDY = 24
TOK_BASE_VOCAB = 381  # byte alphabet (256) + merges; 3 special tokens are appended after training
SPECIAL_TOKENS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
LOGIT_STD_TARGET_MEDIAN = 4.0
LOGIT_STD_MIN = 2.5

# Qwen2/Qwen3's pre-tokenizer split pattern.
QWEN_SPLIT = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*"
              r"|\s*[\r\n]+|\s+(?!\S)|\s+")

CHAT_TEMPLATE = (
    "{%- for message in messages %}"
    "{{- '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n' }}"
    "{%- endfor %}"
    "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}"
)

CORPUS = [
    "The river ran quietly past the old mill, and the miller's daughter counted the boats that went by. "
    "In the morning there were three; by noon there were seven, and each one carried something different: "
    "wool, salt, timber, and once a small brown dog that barked at the water wheel.",
    "A good test fails when the code is wrong. A test that cannot fail tells you nothing, so we compare every "
    "result against something we did not compute ourselves, and we write down the tolerance and the reason.",
    "She opened the notebook and wrote the numbers in a neat column: 12, 48, 96, 1024, 65536. Then she added "
    "them twice, because the first answer looked too small, and the second answer matched the first.",
    "When the weather is cold, the station keeps the trains inside. When the weather is warm, the trains "
    "wait outside in the sun, and the children on the bridge wave at the drivers who wave back.",
    "def add(a, b):\n    return a + b\n\nprint(add(2, 3))\n# The function returns the sum of its two inputs.\n",
    "The memory pool keeps count of every byte it hands out. When a request would go past the limit, it "
    "returns an error instead of crashing, and the caller decides what to do next.",
    "Questions and answers: What is the capital of the small island? It is the town by the harbour. "
    "How many people live there? About four thousand, and most of them fish or keep sheep.",
    "The model reads the prompt, one chunk at a time, and keeps a small state for every layer. "
    "The state is the same whether the prompt arrives in one piece or in many pieces.",
    "Tea, coffee, water, milk, juice. Bread, butter, cheese, apples, pears. Monday, Tuesday, Wednesday, "
    "Thursday, Friday, Saturday, Sunday. January, February, March, April, May, June, July.",
    "He said: \"I'll be there at 8:30, don't wait if I'm late.\" They didn't wait; he wasn't late. "
    "It's the kind of thing that happens when you're sure you've planned everything.",
]

CHAT_HEAD = [
    ("system", "You are a careful assistant. Answer briefly and check your numbers."),
    ("user", "The river ran past the mill. How many boats went by before noon, and what did they carry?"),
    ("assistant", "Seven boats went by before noon. They carried wool, salt, timber and a small brown dog."),
]
CHAT_TAIL = "<|im_start|>user\nThanks! Now count the days of the week.<|im_end|>\n<|im_start|>assistant\n"


def log(*args):
    print(*args, flush=True)


class Float64Mode(TorchFunctionMode):
    """Promotes every float32 request inside transformers' forward (x.float(), .to(torch.float32),
    softmax(dtype=torch.float32), torch.zeros(dtype=torch.float32)...) to float64."""

    def __init__(self):
        super().__init__()
        self.promotions = 0
        self._saved_default = None

    def __enter__(self):
        self._saved_default = torch.get_default_dtype()
        torch.set_default_dtype(torch.float64)
        return super().__enter__()

    def __exit__(self, *exc):
        torch.set_default_dtype(self._saved_default)
        return super().__exit__(*exc)

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func is torch.Tensor.float:
            self.promotions += 1
            return args[0].to(torch.float64)
        if any(a is torch.float32 for a in args) or any(v is torch.float32 for v in kwargs.values()):
            self.promotions += 1
            args = tuple(torch.float64 if a is torch.float32 else a for a in args)
            kwargs = {k: (torch.float64 if v is torch.float32 else v) for k, v in kwargs.items()}
        return func(*args, **kwargs)


# ---------------------------------------------------------------------------------------------------------------
# Capture of intermediates (first layer of each kind), through module hooks and wrapped module-level functions.

class Capture:
    def __init__(self):
        self.enabled = False
        self.active = None  # "mamba2" | "deltanet" | "attention" | "moe" while that layer's forward runs
        self.t = {}
        self.moe_margins = []  # per MoE layer: dict

    def put(self, key, tensor):
        if self.enabled:
            self.t[key] = tensor.detach().to("cpu", copy=True)


CAP = Capture()


def _wrap_attention(orig):
    def eager_attention_forward(module, query, key, value, attention_mask, *args, **kwargs):
        out = orig(module, query, key, value, attention_mask, *args, **kwargs)
        if CAP.enabled and CAP.active == "attention":
            CAP.put("attn.q", query[0].transpose(0, 1))  # [L, H, D] after q-norm and RoPE
            CAP.put("attn.k", key[0].transpose(0, 1))  # [L, Hkv, D]
            CAP.put("attn.v", value[0].transpose(0, 1))  # [L, Hkv, D]
            CAP.put("attn.core_out", out[0][0])  # [L, H, D] softmax(qk^T*scale)v, before gate / o_proj
            CAP.put("attn.scaling", torch.tensor([float(kwargs.get("scaling", float("nan")))], dtype=torch.float64))
        return out
    return eager_attention_forward


def _wrap_mamba_conv(orig):
    def causal_conv1d_fn(*args, **kwargs):
        out = orig(*args, **kwargs)
        if CAP.enabled and CAP.active == "mamba2":
            CAP.put("mamba2.xBC", out[0].transpose(0, 1))  # [L, conv_dim] after conv + silu
        return out
    return causal_conv1d_fn


def _wrap_mamba_scan(orig):
    def mamba2_chunk_scan(*args, **kwargs):
        if not (CAP.enabled and CAP.active == "mamba2"):
            return orig(*args, **kwargs)
        want_state = kwargs.get("return_final_states", False)
        kwargs["return_final_states"] = True
        y, state = orig(*args, **kwargs)
        dt_raw = args[1] if len(args) > 1 else kwargs["dt"]
        dt = dt_raw
        if kwargs.get("dt_bias") is not None:
            dt = dt + kwargs["dt_bias"].to(dt.dtype)
        if kwargs.get("dt_softplus", False):
            dt = F.softplus(dt)
        lim = kwargs.get("dt_limit", (0.0, float("inf")))
        dt = torch.clamp(dt, min=lim[0], max=lim[1])
        CAP.put("mamba2.dt", dt[0])  # [L, H]
        CAP.put("mamba2.y", y[0])  # [L, H, P]
        CAP.put("mamba2.ssm_state", state[0])  # [H, P, N]
        CAP.t["_dt_limit"] = list(lim)
        return (y, state) if want_state else y
    return mamba2_chunk_scan


def _wrap_gated_delta(orig):
    def torch_chunk_gated_delta_rule(*args, **kwargs):
        if not (CAP.enabled and CAP.active == "deltanet"):
            return orig(*args, **kwargs)
        want_state = kwargs.get("output_final_state", False)
        kwargs["output_final_state"] = True
        out, state = orig(*args, **kwargs)
        q, k, v = args[0], args[1], args[2]
        CAP.put("deltanet.q", q[0])  # [L, Hv, Dk] as fed: after conv+silu, repeated to Hv heads, before l2norm
        CAP.put("deltanet.k", k[0])  # [L, Hv, Dk]
        CAP.put("deltanet.v", v[0])  # [L, Hv, Dv]
        CAP.put("deltanet.g", kwargs["g"][0])  # [L, Hv]
        CAP.put("deltanet.beta", kwargs["beta"][0])  # [L, Hv]
        CAP.put("deltanet.core_out", out[0])  # [L, Hv, Dv]
        CAP.put("deltanet.state", state[0])  # [Hv, Dk, Dv]
        CAP.t["_use_qk_l2norm_in_kernel"] = bool(kwargs.get("use_qk_l2norm_in_kernel", False))
        return out, (state if want_state else None)
    return torch_chunk_gated_delta_rule


def install_function_wrappers():
    """Wraps the module-level functions the models call by global name. Returns a list of what was wrapped."""
    import importlib
    done = []
    plan = {
        "transformers.models.nemotron_h.modeling_nemotron_h": {
            "eager_attention_forward": _wrap_attention, "causal_conv1d_fn": _wrap_mamba_conv,
            "mamba2_chunk_scan": _wrap_mamba_scan},
        "transformers.models.qwen3_5.modeling_qwen3_5": {
            "eager_attention_forward": _wrap_attention, "torch_chunk_gated_delta_rule": _wrap_gated_delta},
        "transformers.models.qwen3_5_moe.modeling_qwen3_5_moe": {
            "eager_attention_forward": _wrap_attention, "torch_chunk_gated_delta_rule": _wrap_gated_delta},
        "transformers.models.qwen3.modeling_qwen3": {"eager_attention_forward": _wrap_attention},
        "transformers.models.llama.modeling_llama": {"eager_attention_forward": _wrap_attention},
    }
    for modname, fns in plan.items():
        try:
            mod = importlib.import_module(modname)
        except Exception as e:  # noqa: BLE001
            log(f"  [wrap] cannot import {modname}: {e}")
            continue
        for fname, wrapper in fns.items():
            if not hasattr(mod, fname):
                log(f"  [wrap] {modname}.{fname} missing")
                continue
            setattr(mod, fname, wrapper(getattr(mod, fname)))
            done.append(f"{modname.rsplit('.', 1)[-1]}.{fname}")
    return done


def _hidden_arg(args, kwargs):
    return kwargs["hidden_states"] if "hidden_states" in kwargs else args[0]


def _first(x):
    return x[0] if isinstance(x, (tuple, list)) else x


def layer_kinds(model):
    """Per decoder layer: (mixer kind, mixer module, ffn kind, ffn module)."""
    out = []
    for layer in model.model.layers if hasattr(model.model, "layers") else model.model.language_model.layers:
        if hasattr(layer, "block_type") and hasattr(layer, "mixer"):  # nemotron_h
            kind = {"linear_attention": "mamba2", "full_attention": "attention", "moe": "moe",
                    "mlp": "mlp"}[layer.block_type]
            out.append((kind, layer.mixer, None, None))
            continue
        if hasattr(layer, "linear_attn"):
            mixer = ("deltanet", layer.linear_attn)
        else:
            mixer = ("attention", layer.self_attn)
        ffn_kind = "moe" if "SparseMoe" in type(layer.mlp).__name__ else "mlp"
        out.append((mixer[0], mixer[1], ffn_kind, layer.mlp))
    return out


def install_hooks(model):
    """Hooks for all layers' outputs and for the first layer of each kind. Returns (handles, first_index)."""
    handles = []
    layers = model.model.layers
    kinds = layer_kinds(model)

    def pre_first(mod, args, kwargs):
        CAP.put("hidden.0", _hidden_arg(args, kwargs)[0])
    handles.append(layers[0].register_forward_pre_hook(pre_first, with_kwargs=True))
    for i, layer in enumerate(layers):
        def post(mod, args, out, i=i):
            CAP.put(f"hidden.{i + 1}", _first(out)[0])
        handles.append(layer.register_forward_hook(post))

    first = {}
    for i, (mk, mm, fk, fm) in enumerate(kinds):
        first.setdefault(mk, (i, mm))
        if fk is not None:
            first.setdefault(fk, (i, fm))

    def bracket(kind, module, prefix):
        def pre(mod, args, kwargs):
            if CAP.enabled:
                CAP.active = kind
                CAP.put(f"{prefix}.input", _hidden_arg(args, kwargs)[0])

        def post(mod, args, out):
            if CAP.enabled:
                o = _first(out)
                CAP.put(f"{prefix}.output", o[0] if o.dim() == 3 else o)
                CAP.active = None
        handles.append(module.register_forward_pre_hook(pre, with_kwargs=True))
        handles.append(module.register_forward_hook(post))

    def out_hook(module, fn):
        handles.append(module.register_forward_hook(lambda m, a, o: fn(o) if CAP.enabled else None))

    def in_hook(module, fn):
        handles.append(module.register_forward_pre_hook(lambda m, a: fn(a[0]) if CAP.enabled else None))

    if "attention" in first:
        _, attn = first["attention"]
        bracket("attention", attn, "attn")
        in_hook(attn.o_proj, lambda x: CAP.put("attn.o_proj_in", x[0]))
        hd = attn.head_dim
        if attn.q_proj.out_features == 2 * hd * attn.config.num_attention_heads:  # qwen3_5 gated attention
            def q_proj_out(o, hd=hd):
                qg = o[0].view(o.shape[1], -1, 2 * hd)
                CAP.put("attn.q_prenorm", qg[..., :hd])
                CAP.put("attn.gate", qg[..., hd:])  # [L, H, D], output *= sigmoid(gate)
            out_hook(attn.q_proj, q_proj_out)
    if "mamba2" in first:
        _, m = first["mamba2"]
        bracket("mamba2", m, "mamba2")
        I, cd, K = m.intermediate_size, m.conv_dim, m.conv_kernel_size

        def in_proj_out(o, I=I, cd=cd, K=K):
            o = o[0]
            CAP.put("mamba2.z", o[:, :I])
            CAP.put("mamba2.xBC_preconv", o[:, I:I + cd])
            CAP.put("mamba2.dt_raw", o[:, I + cd:])
            CAP.put("mamba2.conv_state", o[-(K - 1):, I:I + cd])
        out_hook(m.in_proj, in_proj_out)
        out_hook(m.norm, lambda o: CAP.put("mamba2.gated_norm_out", o[0]))
    if "deltanet" in first:
        _, d = first["deltanet"]
        bracket("deltanet", d, "deltanet")
        K = d.conv_kernel_size

        def qkv_out(o, K=K):
            CAP.put("deltanet.qkv_preconv", o[0])
            CAP.put("deltanet.conv_state", o[0][-(K - 1):])
        out_hook(d.in_proj_qkv, qkv_out)
        out_hook(d.in_proj_z, lambda o, dv=d.head_v_dim: CAP.put("deltanet.z", o[0].view(o.shape[1], -1, dv)))
        out_hook(d.in_proj_a, lambda o: CAP.put("deltanet.a", o[0]))
        out_hook(d.in_proj_b, lambda o: CAP.put("deltanet.b", o[0]))
        out_hook(d.norm, lambda o, dv=d.head_v_dim: CAP.put("deltanet.gated_norm_out", o.view(-1, d.num_v_heads, dv)))
    if "moe" in first:
        _, moe = first["moe"]
        bracket("moe", moe, "moe")
        if hasattr(moe, "shared_expert_gate"):
            out_hook(moe.shared_expert_gate, lambda o: CAP.put("moe.shared_gate_logit", o.reshape(-1, 1)))

    # Router hooks on every MoE layer: the first one records choices, all record selection margins.
    first_moe = first.get("moe", (None, None))[1]
    for i, (mk, mm, fk, fm) in enumerate(kinds):
        moe = mm if mk == "moe" else (fm if fk == "moe" else None)
        if moe is None:
            continue

        def gate_out(mod, args, out, i=i, is_first=(moe is first_moe)):
            if not CAP.enabled:
                return
            logits, weights, ids = out[0], out[1], out[2]
            if hasattr(mod, "e_score_correction_bias"):  # nemotron_h: sigmoid + bias, group-limited
                sel = logits.sigmoid() + mod.e_score_correction_bias
                T, E = sel.shape
                G, tg, k = mod.num_group, mod.topk_group, mod.top_k
                gs = sel.view(T, G, E // G).topk(2, dim=-1)[0].sum(-1)
                gsorted = gs.sort(-1, descending=True)[0]
                gmargin = (gsorted[:, tg - 1] - gsorted[:, tg]).min().item() if tg < G else float("inf")
                gmask = torch.zeros_like(gs, dtype=torch.bool).scatter_(1, gs.topk(tg, dim=-1)[1], True)
                masked = sel.masked_fill(~gmask.repeat_interleave(E // G, dim=1), float("-inf"))
                msorted = masked.sort(-1, descending=True)[0]
                emargin = (msorted[:, k - 1] - msorted[:, k]).min().item() if k < tg * (E // G) else float("inf")
                order = sel.gather(1, ids).argsort(dim=-1, descending=True)
                unbiased = logits.sigmoid().topk(k, dim=-1)[1].sort(-1)[0]
                changed = (unbiased != ids.sort(-1)[0]).any(-1).double().mean().item()
                CAP.moe_margins.append({"layer": i, "min_expert_margin": emargin, "min_group_margin": gmargin,
                                        "frac_tokens_differing_from_plain_sigmoid_topk": changed})
            else:  # qwen3_5_moe: softmax top-k on logits
                k = ids.shape[1]
                lsorted = logits.sort(-1, descending=True)[0]
                emargin = (lsorted[:, k - 1] - lsorted[:, k]).min().item()
                order = logits.gather(1, ids).argsort(dim=-1, descending=True)
                CAP.moe_margins.append({"layer": i, "min_expert_margin": emargin})
            if is_first:
                CAP.put("moe.router_logits", logits)
                CAP.put("moe.topk_ids", ids.gather(1, order))
                CAP.put("moe.topk_weights", weights.gather(1, order))
        handles.append(moe.gate.register_forward_hook(gate_out))

    first_index = {k: v[0] for k, v in first.items()}
    return handles, first_index


# ---------------------------------------------------------------------------------------------------------------
# Tokenizer

def train_tokenizer():
    from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers
    tok = Tokenizer(models.BPE())
    tok.normalizer = normalizers.NFC()
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(QWEN_SPLIT), behavior="isolated", invert=False),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
    ])
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=TOK_BASE_VOCAB, min_frequency=2, show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), special_tokens=[])
    tok.train_from_iterator(CORPUS, trainer=trainer)
    tok.add_special_tokens([AddedToken(s, special=True, normalized=False) for s in SPECIAL_TOKENS])
    j = json.loads(tok.to_str())
    byte_level = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": False, "use_regex": False}
    for pt in j["pre_tokenizer"]["pretokenizers"]:
        if pt["type"] == "ByteLevel":
            pt["trim_offsets"] = False
    j["decoder"] = dict(byte_level)
    j["post_processor"] = dict(byte_level)
    text = json.dumps(j, ensure_ascii=False, indent=2)
    tok = Tokenizer.from_str(text)
    return tok, text


def tokenizer_config(tok):
    added = {}
    for s in SPECIAL_TOKENS:
        added[str(tok.token_to_id(s))] = {"content": s, "lstrip": False, "normalized": False, "rstrip": False,
                                          "single_word": False, "special": True}
    return {
        "add_bos_token": False,
        "add_prefix_space": False,
        "added_tokens_decoder": added,
        "bos_token": None,
        "chat_template": CHAT_TEMPLATE,
        "clean_up_tokenization_spaces": False,
        "eos_token": "<|im_end|>",
        "errors": "replace",
        "model_max_length": 4096,
        "pad_token": "<|endoftext|>",
        "split_special_tokens": False,
        "tokenizer_class": "Qwen2Tokenizer",
        "unk_token": None,
    }


def render_chatml(messages, add_generation_prompt):
    s = "".join(f"<|im_start|>{r}\n{c}<|im_end|>\n" for r, c in messages)
    return s + ("<|im_start|>assistant\n" if add_generation_prompt else "")


def build_prompt(tok, vocab, seed):
    head = render_chatml(CHAT_HEAD, False)
    head_ids = tok.encode(head, add_special_tokens=False).ids
    tail_ids = tok.encode(CHAT_TAIL, add_special_tokens=False).ids
    n_rand = PROMPT_LEN - len(head_ids) - len(tail_ids)
    assert n_rand > 40, f"chat text too long: {len(head_ids)} + {len(tail_ids)} tokens"
    g = torch.Generator().manual_seed(seed)
    rand = torch.randint(0, vocab, (n_rand,), generator=g)
    ids = torch.tensor(head_ids + rand.tolist() + tail_ids, dtype=torch.int64)
    info = {"text_head": head, "text_head_ids": head_ids, "text_tail": CHAT_TAIL, "text_tail_ids": tail_ids,
            "random_span": [len(head_ids), len(head_ids) + n_rand],
            "layout": "ids(text_head) + uniform random ids in [0, tokenizer_vocab) + ids(text_tail)"}
    return ids, info


# ---------------------------------------------------------------------------------------------------------------
# Models

def model_specs(tok_vocab, eos, pad):
    tok_ids = dict(bos_token_id=None, eos_token_id=eos, pad_token_id=pad)
    qwen35_rope = {"rope_type": "default", "rope_theta": 10000.0, "partial_rotary_factor": 0.25,
                   "mrope_section": [2, 1, 1], "mrope_interleaved": True}
    qwen35_linear = dict(linear_conv_kernel_dim=4, linear_key_head_dim=16, linear_value_head_dim=24,
                         linear_num_key_heads=2, linear_num_value_heads=4)
    return [
        dict(name="nemotron_h", config_class="NemotronHConfig", model_class="NemotronHForCausalLM", seed=101,
             config=dict(vocab_size=tok_vocab, hidden_size=64,
                         layers_block_type=["linear_attention", "full_attention", "linear_attention", "moe", "mlp",
                                            "linear_attention", "full_attention", "moe"],  # M*ME-M*E
                         num_attention_heads=4, num_key_value_heads=2, head_dim=24, intermediate_size=96,
                         mlp_hidden_act="relu2", mamba_num_heads=8, mamba_head_dim=16, n_groups=2,
                         ssm_state_size=16, conv_kernel=4, expand=2, chunk_size=32, use_conv_bias=True,
                         mamba_proj_bias=False, use_bias=False, n_routed_experts=16, n_shared_experts=1,
                         moe_intermediate_size=32, moe_shared_expert_intermediate_size=48, num_experts_per_tok=3,
                         n_group=4, topk_group=2, routed_scaling_factor=2.5, norm_topk_prob=True,
                         layer_norm_epsilon=1e-5, tie_word_embeddings=False, max_position_embeddings=4096,
                         **tok_ids)),
        dict(name="qwen3_5", config_class="Qwen3_5TextConfig", model_class="Qwen3_5ForCausalLM", seed=202,
             config=dict(vocab_size=tok_vocab, hidden_size=64, intermediate_size=128, num_hidden_layers=6,
                         num_attention_heads=4, num_key_value_heads=2, head_dim=32, hidden_act="silu",
                         max_position_embeddings=4096, rms_norm_eps=1e-6, tie_word_embeddings=False,
                         rope_parameters=dict(qwen35_rope), attention_bias=False,
                         layer_types=["linear_attention", "linear_attention", "full_attention",
                                      "linear_attention", "linear_attention", "full_attention"],
                         **qwen35_linear, **tok_ids)),
        dict(name="qwen3_5_moe", config_class="Qwen3_5MoeTextConfig", model_class="Qwen3_5MoeForCausalLM",
             seed=303,
             config=dict(vocab_size=tok_vocab, hidden_size=64, num_hidden_layers=4, num_attention_heads=4,
                         num_key_value_heads=2, head_dim=32, hidden_act="silu", max_position_embeddings=4096,
                         rms_norm_eps=1e-6, tie_word_embeddings=False, rope_parameters=dict(qwen35_rope),
                         attention_bias=False, moe_intermediate_size=32, shared_expert_intermediate_size=48,
                         num_experts_per_tok=3, num_experts=8,
                         layer_types=["linear_attention", "linear_attention", "full_attention", "linear_attention"],
                         **qwen35_linear, **tok_ids)),
        dict(name="qwen3", config_class="Qwen3Config", model_class="Qwen3ForCausalLM", seed=404,
             config=dict(vocab_size=tok_vocab, hidden_size=64, intermediate_size=128, num_hidden_layers=4,
                         num_attention_heads=4, num_key_value_heads=2, head_dim=32, hidden_act="silu",
                         max_position_embeddings=4096, rms_norm_eps=1e-6, tie_word_embeddings=True,
                         rope_parameters={"rope_type": "default", "rope_theta": 1000000.0},
                         use_sliding_window=False, attention_bias=False, **tok_ids)),
        dict(name="llama", config_class="LlamaConfig", model_class="LlamaForCausalLM", seed=505,
             config=dict(vocab_size=512, hidden_size=64, intermediate_size=160, num_hidden_layers=4,
                         num_attention_heads=4, num_key_value_heads=2, head_dim=16, hidden_act="silu",
                         max_position_embeddings=4096, rms_norm_eps=1e-5, tie_word_embeddings=False,
                         rope_parameters={"rope_type": "default", "rope_theta": 500000.0},
                         attention_bias=False, mlp_bias=False, **tok_ids)),
    ]


@torch.no_grad()
def randomize(model, seed):
    """Weights far from default init: O(1) activations everywhere, so that logits are far from uniform."""
    g = torch.Generator().manual_seed(seed)
    # A tied embedding that dominates the residual stream makes every position predict its own input token
    # (greedy then repeats one token); keep it small and let calibrate() scale the final norm instead.
    emb_std = 0.1 if is_tied(model) else 1.0

    def normal(shape, std):
        return torch.randn(shape, generator=g, dtype=torch.float32) * std

    def uniform(shape, lo, hi):
        return torch.rand(shape, generator=g, dtype=torch.float32) * (hi - lo) + lo

    for name, p in model.named_parameters():
        leaf = name.split(".")[-1]
        owner = model.get_submodule(name.rsplit(".", 1)[0]) if "." in name else model
        cls = type(owner).__name__
        shape = p.shape
        if name.endswith("embed_tokens.weight") or name.endswith("embeddings.weight"):
            new = normal(shape, emb_std)
        elif name.startswith("lm_head"):
            new = normal(shape, 1.0 / math.sqrt(shape[-1]))
        elif leaf == "A_log" and "Mamba" in cls:
            new = torch.log(uniform(shape, 1.0, 16.0))
        elif leaf == "A_log":  # gated deltanet
            new = torch.log(uniform(shape, 0.05, 4.0))
        elif leaf == "dt_bias" and "Mamba" in cls:
            # dt = softplus(dt_raw + dt_bias) spread log-uniformly over [1e-4, 0.5]: some heads sit below the 1e-3
            # floor that transformers 5.17 derives from time_step_min, so a floored implementation is caught.
            dt = torch.exp(uniform(shape, math.log(1e-4), math.log(0.5)))
            new = dt + torch.log(-torch.expm1(-dt))
        elif leaf == "dt_bias":
            new = normal(shape, 0.5)
        elif leaf == "D":
            new = uniform(shape, 0.5, 1.5)
        elif "conv1d" in name and leaf == "weight":
            new = normal(shape, 0.5)
        elif "Norm" in cls and leaf == "weight":
            new = p.detach().float() + normal(shape, 0.1)  # keeps 1-centred (w) and 0-centred (1 + w) norms
        elif p.dim() >= 2:
            new = normal(shape, 1.0 / math.sqrt(shape[-1]))
        else:
            new = normal(shape, 0.1)
        p.copy_(new.to(p.dtype))
    for name, b in model.named_buffers():
        if name.endswith("e_score_correction_bias"):
            b.copy_(uniform(b.shape, -0.15, 0.15))


def is_tied(model):
    emb = model.get_input_embeddings().weight
    return model.lm_head.weight is emb or model.lm_head.weight.data_ptr() == emb.data_ptr()


@torch.no_grad()
def logit_stds(model, ids, dev):
    out = model(input_ids=ids[None].to(dev), use_cache=False)
    logits = out.logits[0].double()
    return logits.std(dim=-1, unbiased=False).cpu()


@torch.no_grad()
def calibrate(model, ids, dev):
    """Scales lm_head (or, with tied embeddings, the final norm's weight; both act linearly on the logits) so the
    median per-position logit std is ~4 and the minimum >= 2.5."""
    model.to(dev)
    final_norm = model.model.norm if hasattr(model.model, "norm") else model.model.norm_f
    w = final_norm.weight if is_tied(model) else model.lm_head.weight
    hist = []
    for _ in range(4):
        s = logit_stds(model, ids, dev)
        med, mn = s.median().item(), s.min().item()
        c = LOGIT_STD_TARGET_MEDIAN / med
        if mn * c < LOGIT_STD_MIN:
            c = LOGIT_STD_MIN / mn
        hist.append({"median": med, "min": mn, "scale": c})
        if abs(c - 1.0) < 0.02:
            break
        w.mul_(c)
    model.cpu()
    return hist


def reset_rotary(model, dtype, f64):
    """Recomputes RoPE inverse frequencies (a dtype cast leaves them rounded) in fp32 as transformers does, or in
    fp64 for the reference."""
    from transformers.modeling_rope_utils import ROPE_INIT_FUNCTIONS
    n = 0
    for mod in model.modules():
        if not (hasattr(mod, "inv_freq") and hasattr(mod, "rope_type") and hasattr(mod, "config")):
            continue
        if "Vision" in type(mod).__name__:
            continue
        fn = mod.compute_default_rope_parameters if mod.rope_type == "default" else ROPE_INIT_FUNCTIONS[mod.rope_type]
        with (Float64Mode() if f64 else contextlib.nullcontext()):
            inv, _ = fn(mod.config)
        dev = mod.inv_freq.device
        mod.inv_freq = inv.to(device=dev, dtype=dtype)
        if hasattr(mod, "original_inv_freq"):
            mod.original_inv_freq = mod.inv_freq.clone()
        n += 1
    return n


def safetensors_inventory(path):
    from safetensors import safe_open
    items, total = [], 0
    with safe_open(path, framework="pt") as f:
        for k in sorted(f.keys()):
            sl = f.get_slice(k)
            shape = list(sl.get_shape())
            items.append({"name": k, "dtype": sl.get_dtype(), "shape": shape})
            total += math.prod(shape)
    return items, total


def run_logprobs(model, ids, dev, f64, keep=0, hidden=False):
    """Returns (logprobs [T, V] or [keep, V], output). f64: under Float64Mode, log-softmax in float64."""
    mode = Float64Mode() if f64 else contextlib.nullcontext()
    with torch.no_grad(), mode:
        out = model(input_ids=ids[None].to(dev), use_cache=False, output_hidden_states=hidden,
                     logits_to_keep=keep)
        logits = out.logits[0]
        lp = torch.log_softmax(logits.to(torch.float64) if f64 else logits, dim=-1)
    return lp, out, (mode.promotions if f64 else 0), logits.dtype


def top2_gap(lp):
    t = lp.topk(2, dim=-1)[0]
    return t[..., 0] - t[..., 1]


def write_tokenizer(folder, tok_json, tok_cfg):
    with open(os.path.join(folder, "tokenizer.json"), "w", encoding="utf-8") as f:
        f.write(tok_json)
    with open(os.path.join(folder, "tokenizer_config.json"), "w", encoding="utf-8") as f:
        json.dump(tok_cfg, f, indent=2, ensure_ascii=False)
        f.write("\n")


def to_store(t):
    t = t.detach().cpu()
    if t.is_floating_point():
        return t.to(torch.float32).contiguous()
    return t.to(torch.int64).contiguous()


def clean_json(o):
    """Strict JSON: non-finite floats become the strings "inf" / "-inf" / "nan"."""
    if isinstance(o, bool) or o is None or isinstance(o, (int, str)):
        return o
    if isinstance(o, float):
        return o if math.isfinite(o) else ("nan" if o != o else ("inf" if o > 0 else "-inf"))
    if isinstance(o, dict):
        return {str(k): clean_json(v) for k, v in o.items()}
    if isinstance(o, (list, tuple, set)):
        return [clean_json(v) for v in o]
    return repr(o)


def write_json(path, obj):
    with open(path, "w", encoding="utf-8") as f:
        json.dump(clean_json(obj), f, indent=1, allow_nan=False)
        f.write("\n")


def save_reference(folder, tensors, meta):
    from safetensors.torch import save_file
    stored = {k: to_store(v) for k, v in tensors.items()}
    save_file(stored, os.path.join(folder, "reference.safetensors"), metadata={"format": "pt"})
    meta["tensors"] = {k: {"dtype": str(v.dtype).replace("torch.", ""), "shape": list(v.shape)}
                       for k, v in sorted(stored.items())}
    write_json(os.path.join(folder, "reference.json"), meta)


def config_summary(cfg):
    keys = ["model_type", "vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads",
            "num_key_value_heads", "head_dim", "intermediate_size", "layer_types", "layers_block_type",
            "tie_word_embeddings", "rope_parameters", "rms_norm_eps", "layer_norm_epsilon",
            "linear_num_key_heads", "linear_num_value_heads", "linear_key_head_dim", "linear_value_head_dim",
            "linear_conv_kernel_dim", "mamba_num_heads", "mamba_head_dim", "n_groups", "ssm_state_size",
            "conv_kernel", "chunk_size", "time_step_min", "time_step_limit", "n_routed_experts", "num_experts",
            "num_experts_per_tok", "n_group", "topk_group", "routed_scaling_factor", "norm_topk_prob",
            "moe_intermediate_size", "moe_shared_expert_intermediate_size", "shared_expert_intermediate_size",
            "mlp_hidden_act", "hidden_act"]
    d = cfg.to_dict()
    return {k: d[k] for k in keys if k in d}


def versions():
    import safetensors
    import tokenizers
    import transformers
    v = {"python": platform.python_version(), "torch": torch.__version__, "transformers": transformers.__version__,
         "tokenizers": tokenizers.__version__, "safetensors": safetensors.__version__}
    if torch.cuda.is_available():
        v["device"] = torch.cuda.get_device_name(0)
    return v


# ---------------------------------------------------------------------------------------------------------------

def build_fixture(spec, ctx):
    import transformers
    from transformers import GenerationConfig
    name = spec["name"]
    dev = ctx["dev"]
    folder = os.path.join(ctx["out"], name)
    os.makedirs(folder, exist_ok=True)
    meta = {"name": name, "model_class": spec["model_class"], "config_class": spec["config_class"],
            "versions": ctx["versions"], "seed": spec["seed"], "checks": {}, "errors": [],
            "command": "python3 tools/make_reference.py --out tests/fixtures"}
    tensors = {}
    result = {"name": name, "meta": meta}

    def stage(label, fn):
        t0 = time.time()
        try:
            r = fn()
            log(f"  [{name}] {label}: ok ({time.time() - t0:.1f}s)")
            return r
        except Exception as e:  # noqa: BLE001
            tb = traceback.format_exc()
            log(f"  [{name}] {label}: FAILED: {e}\n{tb}")
            meta["errors"].append(f"{label}: {e!r}")
            return None

    cfg_cls = getattr(transformers, spec["config_class"])
    model_cls = getattr(transformers, spec["model_class"])
    prompt = ctx["prompt"]

    def build():
        torch.manual_seed(spec["seed"])
        cfg = cfg_cls(**spec["config"], attn_implementation="eager", experts_implementation="eager")
        m = model_cls(cfg).eval()
        randomize(m, spec["seed"])
        if name == "nemotron_h":
            # Trap: transformers 5.17 clamps dt from below at time_step_min (1e-3); the fast kernels do not.
            m.config.time_step_min = 0.0
            m.config.time_step_limit = (0.0, float("inf"))
            for mod in m.modules():
                if hasattr(mod, "time_step_limit"):
                    mod.time_step_limit = (0.0, float("inf"))
        return m
    model = stage("build", build)
    if model is None:
        save_reference(folder, tensors, meta)
        return result
    meta["tied_embeddings"] = is_tied(model)
    meta["calibration"] = stage("calibrate", lambda: calibrate(model, prompt, dev))

    def round_and_save():
        model.to(torch.bfloat16)
        for bname, b in model.named_buffers():
            if bname.endswith("e_score_correction_bias"):  # published checkpoints keep it in f32
                owner = model.get_submodule(bname.rsplit(".", 1)[0])
                owner.e_score_correction_bias = b.float()
        model.generation_config = GenerationConfig(bos_token_id=None, eos_token_id=[ctx["eos"], ctx["pad"]],
                                                   pad_token_id=ctx["pad"])
        model.save_pretrained(folder)
        write_tokenizer(folder, ctx["tok_json"], ctx["tok_cfg"])
        return sorted(os.listdir(folder))
    meta["files"] = stage("round+save", round_and_save)
    inv = stage("inventory", lambda: safetensors_inventory(os.path.join(folder, "model.safetensors")))
    if inv:
        meta["weights"], meta["parameters"] = inv
        log(f"  [{name}] parameters (sum of numel in model.safetensors) = {meta['parameters']}")
        log(f"  [{name}] weight names: {[w['name'] for w in meta['weights']][:12]} ...")

    def config_lines():
        with open(os.path.join(folder, "config.json")) as f:
            return [ln.strip() for ln in f if "time_step" in ln]
    if name == "nemotron_h":
        meta["config_json_time_step"] = stage("config.json time_step lines", config_lines)

    def reload():
        r, info = model_cls.from_pretrained(folder, dtype=torch.float32, attn_implementation="eager",
                                            experts_implementation="eager", output_loading_info=True)
        info = {k: sorted(map(str, v)) for k, v in info.items() if v}
        sd_a = {k: v for k, v in model.state_dict().items()}
        sd_b = r.state_dict()
        diff = [k for k in sd_a if "inv_freq" not in k and (k not in sd_b or not torch.equal(
            sd_a[k].float(), sd_b[k].float()))]
        meta["checks"]["reload_loading_info"] = info
        meta["checks"]["reload_mismatched_tensors"] = diff
        log(f"  [{name}] reload: loading info {info}, mismatched {diff[:8]}")
        return r.eval() if not diff else None
    reloaded = stage("reload", reload)
    base = reloaded if reloaded is not None else copy.deepcopy(model).float()
    meta["reference_model_source"] = "from_pretrained(folder)" if reloaded is not None else "in-memory bf16 copy"
    meta["config_summary"] = config_summary(base.config)

    ref = base.double().to(dev).eval()
    meta["checks"]["rotary_modules_recomputed_f64"] = reset_rotary(ref, torch.float64, True)
    if name == "nemotron_h":
        meta["checks"]["forward_dt_limits"] = sorted({tuple(m.time_step_limit) for m in ref.modules()
                                                      if hasattr(m, "time_step_limit")})
        meta["checks"]["config_time_step_min"] = ref.config.time_step_min
    kinds = layer_kinds(ref)
    meta["layer_kinds"] = [k[0] + ("+" + k[2] if k[2] else "") for k in kinds]
    meta["n_layers"] = len(kinds)

    def main_forward():
        CAP.t.clear()
        CAP.moe_margins.clear()
        handles, first = install_hooks(ref)
        CAP.enabled = True
        try:
            lp, out, promos, ldt = run_logprobs(ref, prompt, dev, True, hidden=True)
        finally:
            CAP.enabled = False
            CAP.active = None
            for h in handles:
                h.remove()
        meta["checks"]["float64_mode_promotions"] = promos
        meta["checks"]["logits_dtype"] = str(ldt)
        meta["first_layer_of_kind"] = first
        n = len(kinds)
        hs = torch.stack([CAP.t[f"hidden.{i}"] for i in range(n + 1)])
        tensors["hidden_states"] = hs
        hf = out.hidden_states
        tensors["final_norm_out"] = hf[-1][0]
        meta["checks"]["hf_hidden_states_count"] = len(hf)
        meta["checks"]["hf_hidden_states_vs_hooks_max_abs"] = max(
            (hf[i][0].cpu() - hs[i]).abs().max().item() for i in range(n))
        meta["checks"]["hf_last_hidden_state_is_final_norm_out"] = True
        meta["checks"]["hf_last_entry_minus_prenorm_max_abs"] = (hf[-1][0].cpu() - hs[n]).abs().max().item()
        for k, v in CAP.t.items():
            if not k.startswith("hidden.") and not k.startswith("_") and k != "mamba2.xBC":
                tensors[k] = v
        if "mamba2.xBC" in CAP.t:
            c = ref.config
            H, P, G, N = c.mamba_num_heads, c.mamba_head_dim, c.n_groups, c.ssm_state_size
            xbc = CAP.t["mamba2.xBC"]
            T = xbc.shape[0]
            tensors["mamba2.x"] = xbc[:, :H * P].reshape(T, H, P)
            tensors["mamba2.B"] = xbc[:, H * P:H * P + G * N].reshape(T, G, N)
            tensors["mamba2.C"] = xbc[:, H * P + G * N:].reshape(T, G, N)
        for k in ("_dt_limit", "_use_qk_l2norm_in_kernel"):
            if k in CAP.t:
                meta["checks"][k.lstrip("_")] = CAP.t[k]
        meta["moe_router_margins"] = list(CAP.moe_margins)
        return lp.cpu()
    lp = stage("reference forward (float64)", main_forward)
    if lp is None:
        save_reference(folder, tensors, meta)
        return result
    tensors["prompt_ids"] = prompt
    tensors["logprobs"] = lp
    tensors["argmax"] = lp.argmax(-1)
    tensors["top2_gap"] = top2_gap(lp)
    stds = lp.std(dim=-1, unbiased=False)
    meta["logit_std"] = {"min": stds.min().item(), "median": stds.median().item(), "mean": stds.mean().item(),
                         "max": stds.max().item()}
    gaps = tensors["top2_gap"]
    meta["top2_gap"] = {"min": gaps.min().item(), "n_below_2e-3": int((gaps < 2e-3).sum()),
                        "n_below_1e-2": int((gaps < 1e-2).sum())}
    meta["prompt_len"] = int(prompt.numel())
    meta["vocab_size"] = int(lp.shape[-1])
    meta["tokenizer_vocab_size"] = ctx["tok_vocab"]
    log(f"  [{name}] logit std {meta['logit_std']}, top2 gap {meta['top2_gap']}")
    result["lp"] = lp

    def cross_checks():
        # Same weights, plain .double() without Float64Mode (transformers' own fp32 islands).
        lp_plain, _, _, _ = run_logprobs(ref, prompt, dev, False)
        meta["checks"]["plain_double_vs_reference_max_abs_dlogprob"] = (lp_plain.double().cpu() - lp).abs().max().item()
        # Same weights in float32 (what a correct fp32 implementation can expect to reach).
        m32 = copy.deepcopy(ref).float()  # exact: ref holds bf16 values
        reset_rotary(m32, torch.float32, False)
        lp32, _, _, _ = run_logprobs(m32, prompt, dev, False)
        d32 = (lp32.double().cpu() - lp).abs().max().item()
        meta["checks"]["float32_vs_reference_max_abs_dlogprob"] = d32
        del m32
        log(f"  [{name}] plain double vs ref {meta['checks']['plain_double_vs_reference_max_abs_dlogprob']:.3g}, "
            f"float32 vs ref {d32:.3g}")
    stage("cross-checks", cross_checks)

    if name == "nemotron_h":
        def floor_check():
            mixers = [m for m in ref.modules() if hasattr(m, "time_step_limit")]
            for m in mixers:
                m.time_step_limit = (1e-3, float("inf"))
            try:
                lpf, _, _, _ = run_logprobs(ref, prompt, dev, True)
            finally:
                for m in mixers:
                    m.time_step_limit = (0.0, float("inf"))
            d = (lpf.cpu() - lp).abs().max().item()
            meta["checks"]["dt_floor_1e-3_max_abs_dlogprob"] = d
            if "mamba2.dt" in tensors:
                meta["checks"]["first_mamba_frac_dt_below_1e-3"] = (tensors["mamba2.dt"] < 1e-3).double().mean().item()
            log(f"  [{name}] a 1e-3 dt floor changes log-probs by up to {d:.3g}")
        stage("dt floor check", floor_check)

    def greedy():
        ids = prompt.clone()
        toks, lps = [], []
        for _ in range(N_GREEDY):
            lpt, _, _, _ = run_logprobs(ref, ids, dev, True, keep=1)
            lpt = lpt[-1].cpu()
            nxt = int(lpt.argmax())
            toks.append(nxt)
            lps.append(lpt)
            ids = torch.cat([ids, torch.tensor([nxt], dtype=torch.int64)])
        glp = torch.stack(lps)
        tensors["greedy_tokens"] = torch.tensor(toks, dtype=torch.int64)
        tensors["greedy_logprobs"] = glp
        tensors["greedy_top2_gap"] = top2_gap(glp)
        meta["greedy_tokens"] = toks
        meta["greedy_text"] = ctx["tok"].decode(toks, skip_special_tokens=False)
        meta["checks"]["greedy_step0_vs_prompt_last_max_abs"] = (glp[0] - lp[-1]).abs().max().item()
        log(f"  [{name}] greedy: {toks}")
    stage("greedy (full recomputation per step)", greedy)

    save_reference(folder, tensors, meta)
    result["model_bf16"] = model
    result["ref"] = ref
    return result


def build_multimodal(text_result, ctx):
    """qwen3_5 in the published layout: model_type qwen3_5, text settings under text_config, weights under
    model.language_model.*, a tiny vision tower under model.visual.*; same text weights as the qwen3_5 fixture."""
    import transformers
    name = "qwen3_5_multimodal"
    folder = os.path.join(ctx["out"], name)
    os.makedirs(folder, exist_ok=True)
    meta = {"name": name, "versions": ctx["versions"], "checks": {}, "errors": [],
            "reference": "../qwen3_5/reference.safetensors (same text weights; compare against it)",
            "command": "python3 tools/make_reference.py --out tests/fixtures"}
    dev = ctx["dev"]
    try:
        text = text_result["model_bf16"]
        tcfg = copy.deepcopy(text.config)
        vcfg = dict(depth=1, hidden_size=32, intermediate_size=64, num_heads=2, in_channels=3, patch_size=16,
                    spatial_merge_size=2, temporal_patch_size=2, out_hidden_size=tcfg.hidden_size,
                    num_position_embeddings=16)
        cfg = transformers.Qwen3_5Config(text_config=tcfg, vision_config=vcfg, tie_word_embeddings=False,
                                         attn_implementation="eager", experts_implementation="eager")
        torch.manual_seed(606)
        vl = transformers.Qwen3_5ForConditionalGeneration(cfg).eval()
        with torch.no_grad():
            missing, unexpected = vl.model.language_model.load_state_dict(text.model.state_dict(), strict=False)
            vl.lm_head.weight.copy_(text.lm_head.weight.float())
        meta["checks"]["language_model_load"] = {"missing": list(missing), "unexpected": list(unexpected)}
        vl.to(torch.bfloat16)
        vl.generation_config = text.generation_config
        vl.save_pretrained(folder)
        write_tokenizer(folder, ctx["tok_json"], ctx["tok_cfg"])
        meta["files"] = sorted(os.listdir(folder))
        meta["weights"], meta["parameters"] = safetensors_inventory(os.path.join(folder, "model.safetensors"))
        meta["parameters_language_model_and_lm_head"] = sum(
            math.prod(w["shape"]) for w in meta["weights"] if not w["name"].startswith("model.visual."))
        log(f"  [{name}] weight names: {[w['name'] for w in meta['weights']][:6]} ... "
            f"params {meta['parameters']}")
        r, info = transformers.Qwen3_5ForConditionalGeneration.from_pretrained(
            folder, dtype=torch.float32, attn_implementation="eager", experts_implementation="eager",
            output_loading_info=True)
        meta["checks"]["reload_loading_info"] = {k: sorted(map(str, v)) for k, v in info.items() if v}
        log(f"  [{name}] reload loading info: {meta['checks']['reload_loading_info']}")
        r = r.double().to(dev).eval()
        reset_rotary(r, torch.float64, True)
        lp, _, _, _ = run_logprobs(r, ctx["prompt"], dev, True)
        d = (lp.cpu() - text_result["lp"]).abs().max().item()
        meta["checks"]["vs_qwen3_5_reference_max_abs_dlogprob"] = d
        log(f"  [{name}] from_pretrained + forward vs qwen3_5 reference: max |dlogprob| = {d:.3g}")
    except Exception as e:  # noqa: BLE001
        log(f"  [{name}] FAILED: {e}\n{traceback.format_exc()}")
        meta["errors"].append(repr(e))
    write_json(os.path.join(folder, "reference.json"), meta)
    return meta


def tokenizer_checks(ctx, folder):
    """transformers' AutoTokenizer on the written files must agree with tokenizers and our ChatML rendering."""
    from transformers import AutoTokenizer
    at = AutoTokenizer.from_pretrained(folder)
    head = render_chatml(CHAT_HEAD, False)
    ids_tok = ctx["tok"].encode(head, add_special_tokens=False).ids
    ids_at = at(head, add_special_tokens=False)["input_ids"]
    msgs = [{"role": r, "content": c} for r, c in CHAT_HEAD]
    rendered = at.apply_chat_template(msgs, tokenize=False, add_generation_prompt=True)
    return {"autotokenizer_class": type(at).__name__, "encode_matches_tokenizers": ids_tok == ids_at,
            "chat_template_matches_chatml": rendered == render_chatml(CHAT_HEAD, True),
            "len": len(at)}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True, help="output folder, e.g. tests/fixtures")
    ap.add_argument("--only", default="", help="comma-separated fixture names (default: all)")
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    args = ap.parse_args()

    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.set_float32_matmul_precision("highest")
    import transformers
    transformers.logging.set_verbosity_error()

    ctx = {"out": args.out, "dev": torch.device(args.device), "versions": versions()}
    log(f"versions: {ctx['versions']}")
    with Float64Mode() as m:
        a = torch.ones(2).float()
        b = torch.zeros(2, dtype=torch.float32)
        c = torch.ones(2, dtype=torch.float64).to(torch.float32)
    mode_ok = a.dtype == b.dtype == c.dtype == torch.float64
    log(f"Float64Mode self-test: {a.dtype} {b.dtype} {c.dtype} promotions={m.promotions} ok={mode_ok}")
    log(f"wrapped: {install_function_wrappers()}")

    tok, tok_json = train_tokenizer()
    ctx["tok"], ctx["tok_json"] = tok, tok_json
    ctx["tok_cfg"] = tokenizer_config(tok)
    ctx["tok_vocab"] = tok.get_vocab_size(with_added_tokens=True)
    ctx["eos"], ctx["pad"] = tok.token_to_id("<|im_end|>"), tok.token_to_id("<|endoftext|>")
    log(f"tokenizer: vocab {ctx['tok_vocab']}, specials "
        f"{[(s, tok.token_to_id(s)) for s in SPECIAL_TOKENS]}")
    prompt, pinfo = build_prompt(tok, ctx["tok_vocab"], seed=7)
    ctx["prompt"] = prompt
    log(f"prompt: {prompt.numel()} tokens, text head {len(pinfo['text_head_ids'])}, "
        f"tail {len(pinfo['text_tail_ids'])}")

    only = set(filter(None, args.only.split(",")))
    summary = {"versions": ctx["versions"], "float64_mode_selftest_ok": mode_ok, "prompt": pinfo,
               "tokenizer_vocab_size": ctx["tok_vocab"], "fixtures": {}}
    results = {}
    for spec in model_specs(ctx["tok_vocab"], ctx["eos"], ctx["pad"]):
        if only and spec["name"] not in only:
            continue
        log(f"== {spec['name']}")
        t0 = time.time()
        try:
            res = build_fixture(spec, ctx)
        except Exception as e:  # noqa: BLE001
            log(f"  [{spec['name']}] FAILED outside stages: {e}\n{traceback.format_exc()}")
            res = {"name": spec["name"], "meta": {"errors": [repr(e)]}}
        results[spec["name"]] = res
        mt = res["meta"]
        summary["fixtures"][spec["name"]] = {
            k: mt.get(k) for k in ("parameters", "logit_std", "top2_gap", "errors", "layer_kinds")}
        summary["fixtures"][spec["name"]]["checks"] = mt.get("checks")
        summary["fixtures"][spec["name"]]["seconds"] = round(time.time() - t0, 1)
        if spec["name"] != "qwen3_5":
            res.pop("ref", None)
            res.pop("model_bf16", None)
    if "qwen3_5" in results and "model_bf16" in results["qwen3_5"] and (not only or "qwen3_5_multimodal" in only
                                                                        or "qwen3_5" in only):
        log("== qwen3_5_multimodal")
        mm = build_multimodal(results["qwen3_5"], ctx)
        summary["fixtures"]["qwen3_5_multimodal"] = {k: mm.get(k) for k in ("parameters", "errors", "checks")}
    first_folder = next((os.path.join(args.out, n) for n in results), None)
    if first_folder:
        try:
            summary["tokenizer_checks"] = tokenizer_checks(ctx, first_folder)
        except Exception as e:  # noqa: BLE001
            summary["tokenizer_checks"] = {"error": repr(e)}
        log(f"tokenizer checks: {summary['tokenizer_checks']}")
    write_json(os.path.join(args.out, "summary.json"), summary)
    log("== summary")
    for n, s in summary["fixtures"].items():
        log(f"  {n}: params={s.get('parameters')} logit_std={s.get('logit_std')} errors={s.get('errors')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
