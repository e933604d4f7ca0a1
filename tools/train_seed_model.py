#!/usr/bin/env python3
"""Trains keel's bundled default model: a small nemotron_h (Mamba2 + attention + MoE) on the Brown corpus.

    python3 tools/train_seed_model.py --data .data/brown --tokenizer TOK_DIR --out OUT_DIR [--minutes 5]

Runs on the GPU machine (torch, transformers >= 5 with NemotronH). DATA holds train.txt, valid.txt and
chat_train.jsonl from tools/brown_corpus.mjs; TOK_DIR holds tokenizer.json and tokenizer_config.json from
tools/train_tokenizer.py. Writes:
  OUT_DIR/model/          config.json, model.safetensors (bf16; the routers' e_score_correction_bias in fp32),
                          generation_config.json, tokenizer.json, tokenizer_config.json
  OUT_DIR/results.json    architecture, parameter count, training log, held-out perplexity (transformers, fp32)
                          against a unigram model, sample continuations and a chat exchange
  OUT_DIR/valid_nll.json  per document: token ids and per-token negative log-likelihoods (nats) of the
                          perplexity evaluation, so another implementation can reproduce it token by token

Training: next-token cross-entropy on random 512-token windows of one stream holding every train document
(plain text) and every train conversation (rendered with the chat template), each unit preceded by
<|endoftext|>; bf16 autocast, AdamW, cosine schedule over the time box, dropout on every mixer's output,
auxiliary-loss-free expert balancing (the router's e_score_correction_bias nudged toward equal load).
A few train documents are set aside as a dev set; the checkpoint with the lowest dev loss is kept.
The validation split is used only for the final figures.

Held-out perplexity: each validation document (its paragraphs joined by "\\n", as in valid.txt) is encoded
without special tokens and cut into consecutive pieces of CTX-1 tokens; each piece is run on its own, fresh
state, as [<|endoftext|>] + piece, and every document token is scored once. Perplexity = exp(total NLL / tokens).
The model is the saved bf16 checkpoint loaded back with from_pretrained in fp32, eager attention.
Unigram: token counts over the train documents (same encoding, no special tokens), add-one smoothing over the
whole vocabulary, scored on the same validation tokens.
"""

import argparse
import json
import math
import os
import random
import shutil
import time

import torch
import torch.nn.functional as F

from transformers import AutoTokenizer, GenerationConfig, NemotronHConfig, NemotronHForCausalLM

# M = Mamba2 mixer, * = attention, E = MoE, - = dense MLP (NemotronH's hybrid_override_pattern letters).
PATTERN = "M*EME-ME"
LEGACY_LAYER_NAMES = {"M": "mamba", "*": "attention", "E": "moe", "-": "mlp"}

ARCH = dict(
    hidden_size=256,
    num_attention_heads=4,
    num_key_value_heads=2,
    head_dim=64,
    intermediate_size=1024,
    mlp_hidden_act="relu2",
    ssm_state_size=64,
    mamba_num_heads=8,
    mamba_head_dim=64,
    n_groups=2,
    conv_kernel=4,
    expand=2,
    chunk_size=128,
    n_routed_experts=8,
    num_experts_per_tok=2,
    moe_intermediate_size=256,
    moe_shared_expert_intermediate_size=512,
    n_shared_experts=1,
    n_group=1,
    topk_group=1,
    norm_topk_prob=True,
    routed_scaling_factor=1.0,
    max_position_embeddings=4096,
    tie_word_embeddings=False,
    use_mamba_kernels=False,
    layer_norm_epsilon=1e-5,
    initializer_range=0.02,
)

SAMPLE_PROMPTS = [
    "The jury said",
    "It was a cold morning in",
    "The President of the United States",
    "She looked at him and",
    "In the laboratory, the",
]
CHAT_PROMPTS = [
    [{"role": "user", "content": "What did the jury say about the election?"}],
    [
        {"role": "system", "content": "You are a helpful assistant."},
        {"role": "user", "content": "Tell me about your home town."},
    ],
]


def log(msg):
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)


def read_documents(path):
    with open(path, encoding="utf-8") as f:
        docs = [d.strip("\n") for d in f.read().split("\n\n")]
    return [d for d in docs if d]


def read_jsonl(path):
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def make_config(vocab_size, ids):
    try:
        layer_types = NemotronHConfig._pattern_to_list(PATTERN)
    except AttributeError:
        layer_types = [LEGACY_LAYER_NAMES[c] for c in PATTERN]
    common = dict(
        vocab_size=vocab_size,
        bos_token_id=ids["<|endoftext|>"],
        eos_token_id=ids["<|im_end|>"],
        pad_token_id=ids["<|endoftext|>"],
        **ARCH,
    )
    try:
        cfg = NemotronHConfig(layers_block_type=layer_types, **common)
    except TypeError:
        cfg = NemotronHConfig(hybrid_override_pattern=PATTERN, **common)
    assert cfg.hybrid_override_pattern == PATTERN, f"layer pattern {cfg.hybrid_override_pattern}, wanted {PATTERN}"
    return cfg


def zero_dt_floor(model):
    """transformers clamps dt from below at time_step_min in the torch path; keel applies no such floor, so the
    shipped config sets it to 0. It is set only after construction: the dt_bias initialiser takes log(min)."""
    model.config.time_step_min = 0.0
    model.config.time_step_limit = (0.0, float("inf"))
    for module in model.modules():
        if hasattr(module, "time_step_min"):
            module.time_step_min = 0.0


def moe_modules(model):
    return [m for m in model.modules() if type(m).__name__ == "NemotronHMoE"]


class ExpertBalancer:
    """Auxiliary-loss-free load balancing (DeepSeek-V3 style): counts each router's top-k choices during
    training and, after each optimizer step, moves its e_score_correction_bias by `rate` toward equal load."""

    def __init__(self, model, rate):
        self.rate = rate
        self.n_experts = model.config.n_routed_experts
        self.top_k = model.config.num_experts_per_tok
        self.counts = {}
        self.moes = moe_modules(model)
        for moe in self.moes:
            self.counts[moe] = torch.zeros(self.n_experts, device=moe.gate.weight.device)
            moe.gate.register_forward_hook(self._hook(moe))

    def _hook(self, moe):
        def hook(gate, inputs, router_logits):
            if not gate.training:
                return
            with torch.no_grad():
                if isinstance(router_logits, tuple):  # transformers 5.17: (logits, top-k weights, top-k indices)
                    chosen = next(t for t in router_logits if t is not None and not t.is_floating_point())
                else:
                    scores = router_logits.sigmoid() + gate.e_score_correction_bias
                    chosen = scores.topk(self.top_k, dim=-1).indices
                chosen = chosen.flatten()
                self.counts[moe] += torch.bincount(chosen, minlength=self.n_experts).float()

        return hook

    def step(self):
        loads = []
        with torch.no_grad():
            for moe in self.moes:
                c = self.counts[moe]
                moe.gate.e_score_correction_bias += self.rate * torch.sign(c.mean() - c)
                loads.append((c.max() / c.mean().clamp(min=1)).item() if c.sum() > 0 else 0.0)
                c.zero_()
        return loads


def add_residual_dropout(model, p):
    """Dropout on each block's mixer output (GPT-2's residual dropout); active only in train mode."""
    for layer in model.model.layers:
        def hook(module, inputs, output):
            if not module.training:
                return output
            if isinstance(output, tuple):
                return (F.dropout(output[0], p, True),) + tuple(output[1:])
            return F.dropout(output, p, True)

        layer.mixer.register_forward_hook(hook)


def chunk_inputs(doc_ids, ctx, eot):
    """[<|endoftext|>] + consecutive pieces of ctx-1 document tokens; every document token is scored once."""
    return [[eot] + doc_ids[k : k + ctx - 1] for k in range(0, len(doc_ids), ctx - 1)]


@torch.no_grad()
def document_nll(model, docs_ids, ctx, eot, device, autocast, batch=32):
    """Per document, the list of per-token NLLs (nats, float64) under the chunked procedure above."""
    was_training = model.training
    model.eval()
    pieces = []  # (doc index, chunk index, tokens)
    for d, ids in enumerate(docs_ids):
        for c, chunk in enumerate(chunk_inputs(ids, ctx, eot)):
            pieces.append((d, c, chunk))
    results = {}
    by_len = {}
    for p in pieces:
        by_len.setdefault(len(p[2]), []).append(p)
    for length, group in by_len.items():
        for i in range(0, len(group), batch):
            part = group[i : i + batch]
            x = torch.tensor([p[2] for p in part], device=device)
            with torch.autocast("cuda", dtype=torch.bfloat16, enabled=autocast):
                logits = model(input_ids=x).logits
            logp = torch.log_softmax(logits.double(), dim=-1)
            nll = -logp[:, :-1].gather(-1, x[:, 1:, None]).squeeze(-1)
            for row, p in enumerate(part):
                results[(p[0], p[1])] = nll[row].tolist()
    model.train(was_training)
    out = []
    for d, ids in enumerate(docs_ids):
        n_chunks = len(chunk_inputs(ids, ctx, eot))
        out.append([v for c in range(n_chunks) for v in results[(d, c)]])
    return out


def build_stream(units, seed):
    rng = random.Random(seed)
    order = list(range(len(units)))
    rng.shuffle(order)
    flat = [t for i in order for t in units[i]]
    return torch.tensor(flat, dtype=torch.long)


def param_groups(model, weight_decay):
    decay, no_decay = [], []
    for name, p in model.named_parameters():
        if p.ndim >= 2 and "embeddings" not in name:
            decay.append(p)
        else:
            no_decay.append(p)
    return [{"params": decay, "weight_decay": weight_decay}, {"params": no_decay, "weight_decay": 0.0}]


def count_parameters(model):
    total = sum(p.numel() for p in model.parameters())
    by_kind = {}
    for name, p in model.named_parameters():
        if "embeddings" in name:
            kind = "embeddings"
        elif "lm_head" in name:
            kind = "lm_head"
        elif ".experts." in name:
            kind = "routed_experts"
        elif "shared_experts" in name:
            kind = "shared_experts"
        elif ".gate." in name:
            kind = "routers"
        elif "norm" in name and "mixer" not in name:
            kind = "norms"
        else:
            kind = f"{type(dict(model.named_modules())[name.rsplit('.', 2)[0]]).__name__}"
            kind = {"NemotronHMamba2Mixer": "mamba2", "NemotronHAttention": "attention", "NemotronHMLP": "mlp"}.get(
                kind, "mamba2" if ".mixer." in name else kind
            )
        by_kind[kind] = by_kind.get(kind, 0) + p.numel()
    cfg = model.config
    moe_layers = sum(1 for t in cfg.hybrid_override_pattern if t == "E")
    per_expert = 2 * cfg.hidden_size * cfg.moe_intermediate_size
    inactive = moe_layers * (cfg.n_routed_experts - cfg.num_experts_per_tok) * per_expert
    buffers = sum(b.numel() for n, b in model.named_buffers() if "e_score_correction_bias" in n)
    return {"total": total, "active_per_token": total - inactive, "by_kind": by_kind, "router_bias_buffers": buffers}


def generate(model, tok, prompt_ids, max_new_tokens, sample, seed, stop_ids):
    """transformers' generate; falls back to a cache-free loop if the cached path fails."""
    device = next(model.parameters()).device
    x = torch.tensor([prompt_ids], device=device)
    kwargs = dict(max_new_tokens=max_new_tokens, eos_token_id=stop_ids, pad_token_id=tok.pad_token_id)
    if sample:
        kwargs.update(do_sample=True, temperature=0.8, top_p=0.95, top_k=0)
    else:
        kwargs.update(do_sample=False)
    torch.manual_seed(seed)
    try:
        out = model.generate(input_ids=x, attention_mask=torch.ones_like(x), **kwargs)
        new = out[0, len(prompt_ids) :].tolist()
        how = "model.generate"
    except Exception as e:  # noqa: BLE001 -- recorded in the results, not hidden
        log(f"generate failed ({type(e).__name__}: {e}); using a cache-free loop")
        new = []
        seq = list(prompt_ids)
        gen = torch.Generator(device=device).manual_seed(seed)
        for _ in range(max_new_tokens):
            logits = model(input_ids=torch.tensor([seq], device=device)).logits[0, -1].float()
            if sample:
                probs = torch.softmax(logits / 0.8, dim=-1)
                sorted_p, idx = probs.sort(descending=True)
                keep = sorted_p.cumsum(0) - sorted_p < 0.95
                sorted_p = sorted_p * keep
                nxt = idx[torch.multinomial(sorted_p / sorted_p.sum(), 1, generator=gen)].item()
            else:
                nxt = int(logits.argmax())
            new.append(nxt)
            seq.append(nxt)
            if nxt in stop_ids:
                break
        how = f"cache-free loop ({type(e).__name__})"
    return new, how


def train(args, tok, ids, device):
    eot = ids["<|endoftext|>"]
    train_docs = read_documents(os.path.join(args.data, "train.txt"))
    chats = read_jsonl(os.path.join(args.data, "chat_train.jsonl"))
    manifest = json.load(open(os.path.join(args.data, "manifest.json")))
    train_ids = manifest["train"]["ids"]
    assert len(train_ids) == len(train_docs), "train.txt and manifest.json disagree on the document count"
    dev_names = {name for i, name in enumerate(train_ids) if i % args.dev_every == args.dev_every // 2}
    if args.smoke:
        keep = set(train_ids[:40]) | dev_names
        chats = [c for c in chats if c["doc"] in keep]
        train_docs = [d for d, n in zip(train_docs, train_ids) if n in keep]
        train_ids = [n for n in train_ids if n in keep]

    doc_tokens = tok(train_docs, add_special_tokens=False)["input_ids"]
    dev_docs_ids = [t for t, n in zip(doc_tokens, train_ids) if n in dev_names]
    fit_docs = [t for t, n in zip(doc_tokens, train_ids) if n not in dev_names]
    rendered = [tok.apply_chat_template(c["messages"], tokenize=False) for c in chats if c["doc"] not in dev_names]
    chat_tokens = tok(rendered, add_special_tokens=False)["input_ids"]
    units = [[eot] + t for t in fit_docs] + [[eot] + t for t in chat_tokens]
    stream = build_stream(units, args.seed).to(device)
    plain_n = sum(len(t) + 1 for t in fit_docs)
    chat_n = sum(len(t) + 1 for t in chat_tokens)
    log(f"stream: {len(stream)} tokens ({plain_n} plain text in {len(fit_docs)} documents, {chat_n} chat in "
        f"{len(chat_tokens)} conversations); dev: {len(dev_docs_ids)} documents, "
        f"{sum(len(t) for t in dev_docs_ids)} tokens")

    torch.manual_seed(args.seed)
    cfg = make_config(args.vocab_size, ids)
    model = NemotronHForCausalLM(cfg).to(device)
    zero_dt_floor(model)
    params = count_parameters(model)
    log(f"config: pattern {cfg.hybrid_override_pattern}, layer types {cfg.layers_block_type}")
    log(f"parameters: {params}")
    add_residual_dropout(model, args.dropout)
    balancer = ExpertBalancer(model, args.balance_rate)
    model.train()

    opt = torch.optim.AdamW(param_groups(model, args.weight_decay), lr=args.lr, betas=(0.9, 0.95), eps=1e-8,
                            fused=True)
    budget_s = args.minutes * 60.0
    tokens_per_step = args.batch * args.ctx
    max_steps = int(args.max_epochs * len(stream) / tokens_per_step)
    gen = torch.Generator(device=device).manual_seed(args.seed)
    offsets = torch.arange(args.ctx + 1, device=device)

    history = []
    best = {"dev_loss": float("inf"), "step": -1, "state": None}
    step = 0
    t0 = time.time()
    next_eval = args.eval_every_s
    last_log = 0.0
    while True:
        elapsed = time.time() - t0
        progress = max(elapsed / budget_s, step / max_steps)
        if progress >= 1.0:
            break
        if step < args.warmup:
            lr = args.lr * (step + 1) / args.warmup
        else:
            lr = args.lr * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * min(progress, 1.0))))
        for g in opt.param_groups:
            g["lr"] = lr
        starts = torch.randint(0, len(stream) - args.ctx - 1, (args.batch,), device=device, generator=gen)
        window = stream[starts[:, None] + offsets]
        x, y = window[:, :-1], window[:, 1:]
        with torch.autocast("cuda", dtype=torch.bfloat16):
            logits = model(input_ids=x).logits
        loss = F.cross_entropy(logits.float().reshape(-1, logits.shape[-1]), y.reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        grad_norm = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        loads = balancer.step()
        step += 1
        elapsed = time.time() - t0
        if step == 1 or elapsed - last_log >= 15 or args.smoke and step % 10 == 0:
            last_log = elapsed
            log(f"step {step} t={elapsed:.0f}s epoch={step * tokens_per_step / len(stream):.2f} lr={lr:.2e} "
                f"loss={loss.item():.4f} gnorm={grad_norm.item():.2f} max/mean expert load={max(loads):.2f} "
                f"mem={torch.cuda.max_memory_allocated() / 2**30:.1f}GiB")
        if elapsed >= next_eval or progress >= 1.0:
            next_eval = elapsed + args.eval_every_s
            nll = document_nll(model, dev_docs_ids, args.ctx, eot, device, autocast=True)
            dev_loss = sum(map(sum, nll)) / sum(map(len, nll))
            history.append({"step": step, "seconds": round(elapsed, 1), "train_loss": round(loss.item(), 4),
                            "dev_loss": round(dev_loss, 4), "lr": lr})
            log(f"  dev loss {dev_loss:.4f} (ppl {math.exp(dev_loss):.2f}) at step {step}")
            if dev_loss < best["dev_loss"]:
                best = {"dev_loss": dev_loss, "step": step,
                        "state": {k: v.detach().clone() for k, v in model.state_dict().items()}}
    train_seconds = time.time() - t0
    nll = document_nll(model, dev_docs_ids, args.ctx, eot, device, autocast=True)
    dev_loss = sum(map(sum, nll)) / sum(map(len, nll))
    history.append({"step": step, "seconds": round(train_seconds, 1), "train_loss": round(loss.item(), 4),
                    "dev_loss": round(dev_loss, 4), "lr": lr})
    log(f"end: step {step}, {train_seconds:.0f}s, dev loss {dev_loss:.4f}; best {best['dev_loss']:.4f} at step "
        f"{best['step']}")
    if dev_loss < best["dev_loss"]:
        best = {"dev_loss": dev_loss, "step": step, "state": None}
    if best["state"] is not None:
        model.load_state_dict(best["state"])
    info = {
        "steps": step,
        "train_seconds": round(train_seconds, 1),
        "tokens_seen": step * tokens_per_step,
        "epochs": round(step * tokens_per_step / len(stream), 2),
        "stream_tokens": len(stream),
        "stream_plain_tokens": plain_n,
        "stream_chat_tokens": chat_n,
        "dev_documents": sorted(dev_names),
        "dev_tokens": sum(len(t) for t in dev_docs_ids),
        "kept_step": best["step"],
        "kept_dev_loss": round(best["dev_loss"], 4),
        "history": history,
    }
    return model, params, info


def save(model, tok_dir, out_dir, ids):
    """Saves in bf16 and returns the saved values (as fp32, on the CPU) to check the reloaded model against."""
    model.eval()
    biases = [moe.gate.e_score_correction_bias.detach().float().clone() for moe in moe_modules(model)]
    model.to(torch.bfloat16)
    for moe, bias in zip(moe_modules(model), biases):
        # Kept in fp32 as transformers' _keep_in_fp32_modules_strict and NVIDIA's checkpoints keep it.
        moe.gate.e_score_correction_bias = bias
    expected = {k: v.detach().float().cpu() for k, v in model.state_dict().items()}
    model.generation_config = GenerationConfig(
        bos_token_id=ids["<|endoftext|>"],
        eos_token_id=[ids["<|im_end|>"], ids["<|endoftext|>"]],
        pad_token_id=ids["<|endoftext|>"],
        do_sample=True,
        temperature=0.8,
        top_p=0.95,
        max_new_tokens=256,
    )
    model.save_pretrained(out_dir)
    for name in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(os.path.join(tok_dir, name), os.path.join(out_dir, name))
    return expected


def evaluate(args, out_dir, tok, ids, device, expected):
    eot = ids["<|endoftext|>"]
    from safetensors import safe_open

    model = NemotronHForCausalLM.from_pretrained(out_dir, dtype=torch.float32, attn_implementation="eager").to(device)
    model.eval()
    state = model.state_dict()
    differs = [k for k in expected if k not in state or not torch.equal(state[k].cpu(), expected[k])]
    assert not differs, f"the reloaded model differs from the one saved: {differs[:8]}"
    assert model.config.time_step_min == 0.0, "time_step_min did not survive the round trip"
    tensors = {}
    with safe_open(os.path.join(out_dir, "model.safetensors"), framework="pt") as f:
        for k in f.keys():
            t = f.get_slice(k)
            tensors[k] = {"dtype": t.get_dtype(), "shape": t.get_shape()}
    dtypes = sorted({v["dtype"] for v in tensors.values()})

    valid_docs = read_documents(os.path.join(args.data, "valid.txt"))
    valid_names = json.load(open(os.path.join(args.data, "manifest.json")))["valid"]["ids"]
    if args.smoke:
        valid_docs, valid_names = valid_docs[:3], valid_names[:3]
    valid_ids = tok(valid_docs, add_special_tokens=False)["input_ids"]
    t0 = time.time()
    nll = document_nll(model, valid_ids, args.ctx, eot, device, autocast=False, batch=16)
    eval_seconds = time.time() - t0
    n_tokens = sum(map(len, nll))
    total_nll = sum(map(sum, nll))
    ppl = math.exp(total_nll / n_tokens)

    train_docs = read_documents(os.path.join(args.data, "train.txt"))
    counts = torch.zeros(args.vocab_size, dtype=torch.float64)
    for t in tok(train_docs, add_special_tokens=False)["input_ids"]:
        counts += torch.bincount(torch.tensor(t), minlength=args.vocab_size).double()
    logp_uni = torch.log((counts + 1) / (counts.sum() + args.vocab_size))
    uni_nll = -sum(logp_uni[torch.tensor(t)].sum().item() for t in valid_ids)
    uni_ppl = math.exp(uni_nll / n_tokens)
    log(f"held-out perplexity (transformers fp32): {ppl:.4f} over {n_tokens} tokens; unigram {uni_ppl:.4f}; "
        f"ratio {ppl / uni_ppl:.4f}")

    stop = [ids["<|im_end|>"], eot]
    samples = []
    for i, prompt in enumerate(SAMPLE_PROMPTS):
        prompt_ids = [eot] + tok.encode(prompt, add_special_tokens=False)
        for sample in (False, True):
            new, how = generate(model, tok, prompt_ids, args.sample_tokens, sample, 1000 + i, stop)
            samples.append({"prompt": prompt, "prompt_ids": prompt_ids, "mode": "sampled" if sample else "greedy",
                            "settings": "temperature 0.8, top_p 0.95, seed %d" % (1000 + i) if sample else "argmax",
                            "output_ids": new, "text": tok.decode(new, skip_special_tokens=True), "via": how})
            log(f"{samples[-1]['mode']}: {prompt!r} -> {samples[-1]['text']!r}")
    chats = []
    for i, messages in enumerate(CHAT_PROMPTS):
        prompt = tok.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
        prompt_ids = tok.encode(prompt, add_special_tokens=False)
        for sample in (False, True):
            new, how = generate(model, tok, prompt_ids, args.sample_tokens, sample, 2000 + i, stop)
            chats.append({"messages": messages, "rendered_prompt": prompt, "prompt_ids": prompt_ids,
                          "mode": "sampled" if sample else "greedy", "output_ids": new,
                          "reply": tok.decode(new, skip_special_tokens=True), "via": how})
            log(f"chat {chats[-1]['mode']}: {messages[-1]['content']!r} -> {chats[-1]['reply']!r}")

    per_doc = [{"id": name, "tokens": len(n), "nll_sum": sum(n)} for name, n in zip(valid_names, nll)]
    figures = {
        "perplexity": {
            "transformers_fp32": ppl,
            "unigram_add_one": uni_ppl,
            "ratio": ppl / uni_ppl,
            "tokens": n_tokens,
            "nll_sum_nats": total_nll,
            "documents": len(valid_docs),
            "context": args.ctx,
            "procedure": (
                "each validation document (valid.txt block, paragraphs joined by '\\n') encoded without special "
                f"tokens; cut into consecutive pieces of {args.ctx - 1} tokens; each piece run alone from a fresh "
                "state as [<|endoftext|>] + piece; every document token scored once; perplexity = "
                "exp(sum NLL / tokens). Model: the saved bf16 model.safetensors loaded with from_pretrained in "
                "fp32, eager attention, no autocast, log-softmax in float64."
            ),
            "unigram_procedure": "token counts over the 475 train documents (same encoding), p = (count + 1) / "
                                 "(total + vocab_size), scored on the same validation tokens",
            "eval_seconds": round(eval_seconds, 1),
            "per_document": per_doc,
        },
        "checkpoint_dtypes": dtypes,
        "checkpoint_tensors": tensors,
        "samples": samples,
        "chat": chats,
    }
    with open(os.path.join(args.out, "valid_nll.json"), "w") as f:
        json.dump({"procedure": figures["perplexity"]["procedure"],
                   "documents": [{"id": name, "token_ids": t, "nll": [round(v, 6) for v in n]}
                                 for name, t, n in zip(valid_names, valid_ids, nll)]}, f)
    return figures


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", required=True)
    ap.add_argument("--tokenizer", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--minutes", type=float, default=5.0, help="training time box (wall clock)")
    ap.add_argument("--max-epochs", type=float, default=1e9, help="stop earlier after this many passes")
    ap.add_argument("--ctx", type=int, default=512)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--lr", type=float, default=2e-3)
    ap.add_argument("--warmup", type=int, default=200)
    ap.add_argument("--weight-decay", type=float, default=0.1)
    ap.add_argument("--dropout", type=float, default=0.15)
    ap.add_argument("--balance-rate", type=float, default=1e-3)
    ap.add_argument("--dev-every", type=int, default=40, help="every N-th train document goes to the dev set")
    ap.add_argument("--eval-every-s", type=float, default=30.0)
    ap.add_argument("--sample-tokens", type=int, default=60)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--smoke", action="store_true", help="tiny data subset, for checking the pipeline")
    args = ap.parse_args()

    device = torch.device("cuda")
    tok = AutoTokenizer.from_pretrained(args.tokenizer)
    ids = {t: tok.convert_tokens_to_ids(t) for t in ("<|endoftext|>", "<|im_start|>", "<|im_end|>")}
    args.vocab_size = (len(tok) + 63) // 64 * 64
    log(f"tokenizer: {len(tok)} tokens, model vocab {args.vocab_size}, special ids {ids}")

    model, params, train_info = train(args, tok, ids, device)
    model_dir = os.path.join(args.out, "model")
    expected = save(model, args.tokenizer, model_dir, ids)
    del model
    torch.cuda.empty_cache()
    figures = evaluate(args, model_dir, tok, ids, device, expected)

    results = {
        "model_type": "nemotron_h",
        "layer_pattern": PATTERN,
        "architecture": ARCH,
        "vocab_size": args.vocab_size,
        "parameters": params,
        "training": {
            "context": args.ctx, "batch": args.batch, "lr": args.lr, "warmup_steps": args.warmup,
            "schedule": "linear warmup, cosine to 0.1x over the time box", "weight_decay": args.weight_decay,
            "dropout_on_mixer_outputs": args.dropout, "expert_balance_rate": args.balance_rate,
            "optimizer": "AdamW(0.9, 0.95), grad clip 1.0", "precision": "bf16 autocast, fp32 master weights",
            "seed": args.seed, "time_box_minutes": args.minutes,
            "torch": torch.__version__, "transformers": __import__("transformers").__version__,
            "gpu": torch.cuda.get_device_name(), **train_info,
        },
        **figures,
    }
    with open(os.path.join(args.out, "results.json"), "w") as f:
        json.dump(results, f, indent=1)
    sizes = {n: os.path.getsize(os.path.join(model_dir, n)) for n in sorted(os.listdir(model_dir))}
    log(f"saved {model_dir}: {sizes}, total {sum(sizes.values())} bytes")


if __name__ == "__main__":
    main()
