#!/usr/bin/env python3
"""Trains the tokenizer of keel's bundled default model: a byte-level BPE on the Brown corpus train split.

    python3 tools/train_tokenizer.py --data .data/brown --out OUT_DIR [--vocab-size 4096]

Needs the Hugging Face `tokenizers` and `transformers` packages (the GPU machine has them; this machine does not).
Reads DATA/train.txt (documents separated by blank lines, written by tools/brown_corpus.mjs) and writes
OUT_DIR/tokenizer.json and OUT_DIR/tokenizer_config.json (special tokens, ChatML chat template), then checks
that transformers loads them, round-trips the validation text and renders the template.

The pre-tokenizer, normalizer and decoder are the ones Qwen3's tokenizer.json uses (NFC, the same Split regex,
ByteLevel without its own regex), so a tokenizer that reads Qwen3's also reads this one.
"""

import argparse
import json
import os
import sys

from tokenizers import Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, processors, trainers

# Qwen2/Qwen3's pre-tokenization pattern: contractions, letter runs with one leading non-letter, single digits,
# punctuation runs, newlines, whitespace.
SPLIT_PATTERN = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+"
    r"|\s+(?!\S)|\s+"
)

# Ids 0, 1, 2 in this order. <|endoftext|> separates documents (and starts each evaluation chunk);
# <|im_start|> / <|im_end|> frame chat turns.
SPECIAL_TOKENS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]

# ChatML: every message as <|im_start|>role\ncontent<|im_end|>\n; the generation prompt opens an assistant turn.
CHAT_TEMPLATE = (
    "{%- for message in messages %}"
    "{{- '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n' }}"
    "{%- endfor %}"
    "{%- if add_generation_prompt %}"
    "{{- '<|im_start|>assistant\\n' }}"
    "{%- endif %}"
)

MODEL_MAX_LENGTH = 4096


def read_documents(path):
    """Documents of a train.txt/valid.txt file: blocks separated by one blank line, paragraphs one per line."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    docs = [d.strip("\n") for d in text.split("\n\n")]
    return [d for d in docs if d]


def build_tokenizer(train_docs, vocab_size):
    tok = Tokenizer(models.BPE(unk_token=None, byte_fallback=False, fuse_unk=False))
    tok.normalizer = normalizers.NFC()
    tok.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Split(Regex(SPLIT_PATTERN), behavior="isolated", invert=False),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
        ]
    )
    tok.decoder = decoders.ByteLevel()
    tok.post_processor = processors.ByteLevel(trim_offsets=False)
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        min_frequency=2,
        special_tokens=SPECIAL_TOKENS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(train_docs, trainer=trainer, length=len(train_docs))
    return tok


def tokenizer_config(tok):
    added = {}
    for content in SPECIAL_TOKENS:
        added[str(tok.token_to_id(content))] = {
            "content": content,
            "lstrip": False,
            "normalized": False,
            "rstrip": False,
            "single_word": False,
            "special": True,
        }
    return {
        "tokenizer_class": "PreTrainedTokenizerFast",
        "added_tokens_decoder": added,
        "bos_token": "<|endoftext|>",
        "eos_token": "<|im_end|>",
        "pad_token": "<|endoftext|>",
        "unk_token": None,
        "add_bos_token": False,
        "add_eos_token": False,
        "clean_up_tokenization_spaces": False,
        "model_max_length": MODEL_MAX_LENGTH,
        "chat_template": CHAT_TEMPLATE,
    }


def check(out_dir, valid_docs):
    """Loads the result through transformers and checks what the model and keel rely on."""
    from transformers import AutoTokenizer

    hf = AutoTokenizer.from_pretrained(out_dir)
    ids = [hf.convert_tokens_to_ids(t) for t in SPECIAL_TOKENS]
    assert ids == [0, 1, 2], f"special token ids {ids}, expected [0, 1, 2]"
    for doc in valid_docs:
        enc = hf.encode(doc, add_special_tokens=False)
        assert hf.decode(enc) == doc, "validation document does not round-trip through encode/decode"
    messages = [
        {"role": "system", "content": "You are a helpful assistant."},
        {"role": "user", "content": "Who won the election?"},
        {"role": "assistant", "content": "The mayor did."},
    ]
    rendered = hf.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    expected = (
        "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n"
        "<|im_start|>user\nWho won the election?<|im_end|>\n"
        "<|im_start|>assistant\nThe mayor did.<|im_end|>\n"
        "<|im_start|>assistant\n"
    )
    assert rendered == expected, f"chat template rendered {rendered!r}"
    rendered_ids = hf.encode(rendered, add_special_tokens=False)
    assert rendered_ids[0] == 1 and rendered_ids.count(2) == 3, "special tokens not matched inside rendered text"
    return {
        "vocab_size": len(hf),
        "special_token_ids": dict(zip(SPECIAL_TOKENS, ids)),
        "chat_example": {"text": rendered, "ids": rendered_ids},
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", required=True, help="folder with train.txt and valid.txt")
    ap.add_argument("--out", required=True, help="folder to write tokenizer.json and tokenizer_config.json to")
    ap.add_argument("--vocab-size", type=int, default=4096, help="total vocabulary, special tokens included")
    args = ap.parse_args()
    if args.vocab_size > 8192:
        sys.exit(f"--vocab-size {args.vocab_size}: the bundled model's tokenizer is meant to stay within 8K tokens")

    train_docs = read_documents(os.path.join(args.data, "train.txt"))
    valid_docs = read_documents(os.path.join(args.data, "valid.txt"))
    tok = build_tokenizer(train_docs, args.vocab_size)
    os.makedirs(args.out, exist_ok=True)
    tok.save(os.path.join(args.out, "tokenizer.json"))
    with open(os.path.join(args.out, "tokenizer_config.json"), "w", encoding="utf-8") as f:
        json.dump(tokenizer_config(tok), f, indent=2, ensure_ascii=False)
        f.write("\n")
    summary = check(args.out, valid_docs)
    summary["train_documents"] = len(train_docs)
    print(json.dumps({k: v for k, v in summary.items() if k != "chat_example"}))


if __name__ == "__main__":
    main()
