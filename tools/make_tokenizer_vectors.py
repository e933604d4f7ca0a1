#!/usr/bin/env python3
"""Oracle vectors for keel's tokenizer, produced by the Hugging Face `tokenizers` library.

Trains tiny tokenizers (vocab a few hundred to ~2000) of each pipeline kind that keel reads from
`tokenizer.json` and that the llama.cpp Qwen vectors do not cover (SentencePiece-style BPE with byte
fallback and Metaspace, NFKC, Digits, Replace/Prepend/Strip/Lowercase, ByteLevel with add_prefix_space,
Split behaviours, added tokens with lstrip/rstrip/single_word/normalized), then records for a hostile
corpus what the library answers: ids with special tokens matched and not matched, ids with the
post-processor's special tokens, the token strings, and decodes. Random id sequences record decodes.
If a Qwen3 tokenizer.json path is given, the same corpus is recorded for it as well.

Usage: python3 make_tokenizer_vectors.py OUT_DIR [QWEN3_TOKENIZER_JSON]
Writes OUT_DIR/tokenizer_vectors.tar.gz holding <name>/{tokenizer.json,tokenizer_config.json,vectors.json}
and OUT_DIR/make_tokenizer_vectors.log. Deterministic: fixed corpus, fixed seeds.
"""
import io
import json
import os
import random
import sys
import tarfile
import traceback

import tokenizers
from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers
from tokenizers import processors, trainers

LOG = []


def log(msg):
    print(msg, flush=True)
    LOG.append(msg)


# ---------------------------------------------------------------------------------------------
# Training corpus: plain sentences written for this script (English prose, some other languages,
# code), enough for merges to form.
TRAIN_TEXT = """
The river ran slowly past the old mill, and the miller watched the water turn the wheel.
In the morning the village woke to the sound of bells and the smell of fresh bread.
She said that she would come back before the winter, but the roads were closed by snow.
They're building a new bridge across the valley; it should be finished next year.
We've waited for hours, and I'm tired, but we'll stay until the train arrives.
He'd never seen the sea before. It's larger than he'd imagined, and louder too.
Numbers such as 42, 1999, 3.14159 and 1,000,000 appear in reports and tables.
The committee met on 12 March 2021 to discuss the budget of 4500 dollars.
A quick brown fox jumps over the lazy dog while the cat sleeps in the sun.
Reading books in the evening is a pleasant habit that many people share.
The teacher explained the lesson twice, and the students wrote everything down.
When the storm came, the sailors lowered the sails and waited in the harbour.
Good software is tested, documented and easy to change when requirements move.
The server returned an error because the request was missing a required field.
Please write the function so that it handles empty input and very long input.
Tokenizers split text into pieces; each piece maps to an integer identifier.
The quick answer is not always the right one, so think before you speak.
Mountains, rivers, forests and deserts cover the surface of the continent.
Her grandmother's garden was full of roses, tulips, lilies and tall sunflowers.
It was the best of times, it was the worst of times, in a city of two rivers.
The meeting starts at 9:30 and ends at 11:45, with a short break at 10:15.
Everyone agreed that the plan was good, though nobody wanted to pay for it.
I don't know whether the shop is open on Sundays; you'd better call first.
The children played football in the park until the streetlights came on.
Scientists measured the temperature of the lake every day for three years.
def tokenize(text):
    pieces = text.split()
    return [vocab.get(p, 0) for p in pieces]
for (int i = 0; i < n; ++i) { total += values[i] * weights[i]; }
if (x > 0 && y < 10) { return x + y; } else { return -1; }
Le renard brun saute par-dessus le chien paresseux. C'est une belle journée à Paris.
Der schnelle braune Fuchs springt über den faulen Hund. Das Wetter ist schön.
El rápido zorro marrón salta sobre el perro perezoso. ¿Dónde está la biblioteca?
Быстрая коричневая лиса прыгает через ленивую собаку. Это хороший день.
Η γρήγορη καφέ αλεπού πηδά πάνω από το τεμπέλικο σκυλί.
今天天气很好，我们去公园散步吧。东京和北京都是大城市。
"""


def train_lines():
    lines = [l for l in TRAIN_TEXT.strip("\n").split("\n") if l.strip()]
    # Repeat with small variations so frequent pairs become merges.
    out = []
    for k in range(6):
        for l in lines:
            out.append(l if k % 2 == 0 else l.lower())
            out.append(l.upper() if k == 5 else l.replace(".", "!"))
    return out


# ---------------------------------------------------------------------------------------------
# Hostile corpus. Every tokenizer encodes every text.
def hostile_corpus():
    t = [
        "",
        " ",
        "  ",
        "   ",
        "\t",
        "\n",
        "\n\n\n",
        " \t \n \r\n ",
        "\r\n\r\n",
        "Hello world",
        " Hello world",
        "  Hello  world  ",
        "hello\tworld\nnew line\r\nwindows line",
        "The quick brown fox jumps over the lazy dog.",
        "I'm don't you'll we've they're she'd it's IT'S I'M DON'T We'Ve",
        "Ünïcödé façade naïve café résumé Ångström",
        "e\u0301 cafe\u0301 re\u0301sume\u0301 (decomposed) vs \u00e9 caf\u00e9 r\u00e9sum\u00e9",
        "a" + "\u0300" * 12 + " o\u0308\u0304 n\u0303",
        "Vie\u0302\u0301t Nam",
        "Привет, мир! Съешь же ещё этих мягких французских булок.",
        "Γειά σου Κόσμε, ΣΊΣΥΦΟΣ σίσυφος",
        "שלום עולם",
        "مرحبا بالعالم ١٢٣٤",
        "नमस्ते दुनिया",
        "สวัสดีชาวโลก",
        "你好，世界！这是一个测试。",
        "日本語のテキストとカタカナ、ひらがな。",
        "한국어 텍스트 테스트",
        "😀😃😄 👍🏽 👨\u200d👩\u200d👧\u200d👦 🏳️\u200d🌈 ❤️ 🇫🇷🇩🇪 🧑\u200d💻",
        "Mixed Ελληνικά and English and 中文 and emoji 🤖 in one line.",
        "Control\x00chars\x01\x07\x1b[31m and \x7f DEL",
        "NEL\u0085here nbsp\u00a0here LS\u2028here PS\u2029here ideo\u3000space zw\u200bsp bom\ufeffend",
        "mongolian\u180evs and en\u2002em\u2003thin\u2009spaces",
        "<|im_start|>user\nHi there<|im_end|>\n<|im_start|>assistant\n",
        "<|im_start|>system\nYou are helpful.<|im_end|>\n<|im_start|>user\n<think>\nhmm\n</think>\n\nok<|im_end|>",
        "<|im_start <|im_start|x <|im_end| |im_end|> <| im_start |> <<|im_end|>>",
        "<|endoftext|><|endoftext|>text<|endoftext|>",
        "<s>Hello</s> <s> x </s>",
        "<s >not special< /s> <s\n> <unk> <UNK> [UNK]",
        "<s><s></s></s>",
        "[INST] What is 2+2? [/INST] 4</s>",
        "hello [MASK] world",
        "hello[MASK]world and x    [MASK]    y and [MASK][MASK]",
        "ZZword ZZwords aZZword ZZword! (ZZword) _ZZword ZZword_",
        "<rs>   after and <rs>\n\nnext and<rs>x",
        "<tool>call</tool> <tool> <Tool>",
        "MYTOKEN mytoken MyToken my token",
        "<think>\nLet me think.\n</think>\n\nThe answer is 42.",
        "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>",
        "a" * 300,
        "supercalifragilisticexpialidocious" * 8,
        "abcdefghijklmnopqrstuvwxyz" * 12,
        "x" * 64 + " " + "ab" * 100,
        "1234567890",
        "3.14159265358979323846264338327950288419716939937510",
        "phone 555-0123, year 2024, 1,000,000.00 and 007",
        "١٢٣ ٤٥٦ ٠٩ (Arabic-Indic) ０１２３ (fullwidth) ½ ² ⅷ ⑦",
        "ﬁ ﬂ ﬀ ℌ ℍ ① ㈱ ｶﾀｶﾅ Ｆｕｌｌｗｉｄｔｈ ™ ℃ … ﬁx",
        "def f(x):\n    return x**2  # comment\n\tif (a && b) { c++; }\n",
        "a    b\t\t\tc\n\n\nd   \n  e",
        "word   ",
        "   word",
        "\u2581 already has metaspace \u2581\u2581 chars\u2581",
        "\u0120 and \u010a byte-level look-alikes \u0120\u0120",
        "valid but unusual: \U0010ffff \ufffd \ue000 \U000e0041 \u00ad soft\u00adhyphen",
        "https://example.com/path?query=1&x=y#frag",
        "ALL CAPS SHOUTING AND MiXeD cAsE",
        "İstanbul ß ẞ ǅ Σίσυφος ΣΑΣ ﬃ",
        "It\u2019s \u201cquoted\u201d \u2018text\u2019 \u2014 dash \u2013 en",
        "Dr. Smith's e-mail: j.smith@example.org; price: $1,234.56 (\u2248\u20ac1.1k)",
        "tab\tseparated\tvalues\t1\t2\t3",
        "line1\nline2\n\nline4\n",
        "trailing newline and spaces \n \n",
        "dash-separated-words and under_scored_words and CamelCaseWords",
        "!!!???...,,,;;;:::",
        "'s 's 'S 'll 'LL '",
    ]
    return t


def bytes_vocab_tokens():
    return ["<0x%02X>" % b for b in range(256)]


# ---------------------------------------------------------------------------------------------
# Builders. Each returns (tokenizer_json_string, tokenizer_config_dict, description).

def build_bpe_bytelevel():
    """GPT-2 style: ByteLevel(add_prefix_space, use_regex) pre-tokenizer, merges as 'a b' strings."""
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=True, use_regex=True)
    tok.decoder = decoders.ByteLevel()
    tok.post_processor = processors.ByteLevel(trim_offsets=True)
    tr = trainers.BpeTrainer(vocab_size=1000, special_tokens=["<|endoftext|>"],
                             initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    tok.train_from_iterator(train_lines(), trainer=tr)
    tok.add_special_tokens([
        AddedToken("<|im_start|>", special=True, normalized=False),
        AddedToken("<|im_end|>", special=True, normalized=False),
        AddedToken("[MASK]", special=True, lstrip=True, normalized=False),
    ])
    tok.add_tokens([
        AddedToken("<tool>", special=False, normalized=False),
        AddedToken("</tool>", special=False, normalized=False),
        AddedToken("ZZword", special=False, single_word=True, normalized=True),
        AddedToken("<rs>", special=False, rstrip=True, normalized=False),
    ])
    d = json.loads(tok.to_str())
    merges = d["model"]["merges"]
    assert all(isinstance(m, list) and len(m) == 2 and " " not in m[0] + m[1] for m in merges)
    d["model"]["merges"] = [m[0] + " " + m[1] for m in merges]  # the legacy "a b" form
    s = json.dumps(d, ensure_ascii=False)
    cfg = {"bos_token": "<|endoftext|>", "eos_token": "<|endoftext|>", "add_bos_token": False}
    return s, cfg, "byte-level BPE, ByteLevel(add_prefix_space=true,use_regex=true), merges as strings, added tokens with lstrip/rstrip/single_word"


LLAMA3_REGEX = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|"
                r" ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")


def build_bpe_llama3_split():
    """Llama-3 style: Split(regex) + ByteLevel(use_regex=false), ignore_merges, TemplateProcessing bos."""
    tok = Tokenizer(models.BPE())
    tok.normalizer = normalizers.NFC()
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(LLAMA3_REGEX), behavior="isolated", invert=False),
        pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=True, use_regex=False),
    ])
    tok.decoder = decoders.ByteLevel()
    tr = trainers.BpeTrainer(vocab_size=1500, special_tokens=["<|begin_of_text|>", "<|end_of_text|>"],
                             initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    tok.train_from_iterator(train_lines(), trainer=tr)
    tok.add_special_tokens([
        AddedToken("<|im_start|>", special=True, normalized=False),
        AddedToken("<|im_end|>", special=True, normalized=False),
    ])
    tok.add_tokens([AddedToken("<think>", special=False, normalized=False),
                    AddedToken("</think>", special=False, normalized=False)])
    bos = tok.token_to_id("<|begin_of_text|>")
    tok.post_processor = processors.Sequence([
        processors.ByteLevel(trim_offsets=False),
        processors.TemplateProcessing(single="<|begin_of_text|> $A", pair="<|begin_of_text|> $A $B",
                                      special_tokens=[("<|begin_of_text|>", bos)]),
    ])
    d = json.loads(tok.to_str())
    d["model"]["ignore_merges"] = True
    s = json.dumps(d, ensure_ascii=False)
    cfg = {"bos_token": "<|begin_of_text|>", "eos_token": "<|end_of_text|>", "add_bos_token": True}
    return s, cfg, "Llama-3 style Split regex + ByteLevel(use_regex=false), NFC, ignore_merges, TemplateProcessing"


def sp_vocab_with_bytes(tok, n_specials):
    """Insert <0x00>..<0xFF> into the model vocab right after the first n_specials ids (as Llama does)."""
    d = json.loads(tok.to_str())
    vocab = d["model"]["vocab"]
    new_vocab = {}
    for k, v in vocab.items():
        new_vocab[k] = v if v < n_specials else v + 256
    for b, name in enumerate(bytes_vocab_tokens()):
        assert name not in new_vocab
        new_vocab[name] = n_specials + b
    d["model"]["vocab"] = new_vocab
    for a in d["added_tokens"]:
        assert a["id"] < n_specials
    return d


def train_sp(vocab_size, byte_fallback, unk="<unk>", fuse_unk=True, limit_alphabet=120):
    tok = Tokenizer(models.BPE(unk_token=unk, byte_fallback=byte_fallback, fuse_unk=fuse_unk))
    tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement="\u2581", prepend_scheme="always", split=True)
    tr = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=[unk, "<s>", "</s>"],
                             limit_alphabet=limit_alphabet, show_progress=False)
    tok.train_from_iterator(train_lines(), trainer=tr)
    return tok


def build_sp_bpe_legacy():
    """Llama-2 style: Prepend+Replace normalizer, no pre-tokenizer, byte_fallback, Replace/ByteFallback/Fuse/Strip."""
    d = sp_vocab_with_bytes(train_sp(1200, True), 3)
    d["normalizer"] = None
    d["pre_tokenizer"] = None
    tok = Tokenizer.from_str(json.dumps(d))
    tok.normalizer = normalizers.Sequence([normalizers.Prepend("\u2581"), normalizers.Replace(" ", "\u2581")])
    tok.pre_tokenizer = None
    tok.decoder = decoders.Sequence([decoders.Replace("\u2581", " "), decoders.ByteFallback(), decoders.Fuse(),
                                     decoders.Strip(" ", 1, 0)])
    tok.post_processor = processors.TemplateProcessing(single="<s> $A", pair="<s> $A <s> $B",
                                                       special_tokens=[("<s>", tok.token_to_id("<s>"))])
    cfg = {"bos_token": "<s>", "eos_token": "</s>", "unk_token": "<unk>", "add_bos_token": True,
           "add_eos_token": False}
    return tok.to_str(), cfg, "Llama-2 style SentencePiece BPE: Prepend+Replace normalizer, byte_fallback, fuse_unk"


def build_sp_bpe_metaspace():
    """Mistral style: Metaspace(prepend_scheme=first, split=false) pre-tokenizer, byte_fallback."""
    d = sp_vocab_with_bytes(train_sp(1000, True), 3)
    tok = Tokenizer.from_str(json.dumps(d))
    tok.normalizer = None
    tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement="\u2581", prepend_scheme="first", split=False)
    tok.decoder = decoders.Sequence([decoders.Replace("\u2581", " "), decoders.ByteFallback(), decoders.Fuse(),
                                     decoders.Strip(" ", 1, 0)])
    tok.add_special_tokens([
        AddedToken("[INST]", special=True, normalized=False),
        AddedToken("[/INST]", special=True, normalized=False),
        AddedToken("[MASK]", special=True, lstrip=True, rstrip=True, normalized=False),
    ])
    tok.add_tokens([
        AddedToken("<tool>", special=False, normalized=True),
        AddedToken("<rs>", special=False, rstrip=True, normalized=False),
        AddedToken("ZZword", special=False, single_word=True, normalized=False),
    ])
    tok.post_processor = processors.TemplateProcessing(single="<s> $A", pair="<s> $A $B",
                                                       special_tokens=[("<s>", tok.token_to_id("<s>"))])
    cfg = {"bos_token": "<s>", "eos_token": "</s>", "unk_token": "<unk>", "add_bos_token": True}
    return tok.to_str(), cfg, "Mistral style: Metaspace(first, split=false), byte_fallback, added tokens lstrip/rstrip/single_word"


def build_sp_metaspace_always():
    """Metaspace(always, split=true) pre-tokenizer + Metaspace decoder, NFKC/Lowercase/Replace(regex), unk without fallback."""
    tok = train_sp(600, False, unk="<unk>", fuse_unk=False, limit_alphabet=60)
    tok.normalizer = normalizers.Sequence([
        normalizers.NFKC(),
        normalizers.Replace(Regex("[\u2018\u2019]"), "'"),
        normalizers.Lowercase(),
    ])
    tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement="\u2581", prepend_scheme="always", split=True)
    tok.decoder = decoders.Metaspace(replacement="\u2581", prepend_scheme="always", split=True)
    tok.add_tokens([AddedToken("MyToken", special=False, normalized=True),
                    AddedToken("<tool>", special=False, normalized=False)])
    tok.add_special_tokens([AddedToken("[MASK]", special=True, normalized=False)])
    cfg = {"bos_token": "<s>", "eos_token": "</s>", "unk_token": "<unk>"}
    return tok.to_str(), cfg, "Metaspace(always, split) + Metaspace decoder, NFKC+Replace(regex)+Lowercase, unk (no byte fallback), normalized added token"


def build_bpe_nfkc_digits():
    """NFKC + Digits(individual) + ByteLevel(add_prefix_space=true, use_regex=true) in a Sequence."""
    tok = Tokenizer(models.BPE())
    tok.normalizer = normalizers.NFKC()
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Digits(individual_digits=True),
        pre_tokenizers.ByteLevel(add_prefix_space=True, use_regex=True),
    ])
    tok.decoder = decoders.ByteLevel()
    tr = trainers.BpeTrainer(vocab_size=900, special_tokens=["<|endoftext|>"],
                             initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    tok.train_from_iterator(train_lines(), trainer=tr)
    tok.add_tokens([AddedToken("\ufb01x", special=False, normalized=True),  # NFKC("ﬁx") == "fix"
                    AddedToken("<tool>", special=False, normalized=False)])
    tok.add_special_tokens([AddedToken("<|im_start|>", special=True, normalized=False)])
    cfg = {"eos_token": "<|endoftext|>"}
    return tok.to_str(), cfg, "NFKC, Sequence[Digits(individual), ByteLevel(add_prefix_space, use_regex)], normalized added token changed by NFKC"


def build_bpe_prepend_replace_digits():
    """Strip/Replace/Lowercase/Prepend/Replace normalizers, Digits(contiguous) + Split(String/Regex) behaviours."""
    d = sp_vocab_with_bytes(train_sp(800, True), 3)
    tok = Tokenizer.from_str(json.dumps(d))
    tok.normalizer = normalizers.Sequence([
        normalizers.Strip(left=True, right=True),
        normalizers.Replace("\t", " "),
        normalizers.Lowercase(),
        normalizers.Prepend("\u2581"),
        normalizers.Replace(" ", "\u2581"),
    ])
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Digits(individual_digits=False),
        pre_tokenizers.Split("\u2581", behavior="merged_with_next"),
        pre_tokenizers.Split(Regex("[.,!?;:]"), behavior="isolated"),
    ])
    tok.decoder = decoders.Sequence([decoders.Replace("\u2581", " "), decoders.ByteFallback(), decoders.Fuse(),
                                     decoders.Strip(" ", 1, 0)])
    tok.add_special_tokens([AddedToken("<|im_start|>", special=True, normalized=False)])
    cfg = {"bos_token": "<s>", "eos_token": "</s>"}
    return tok.to_str(), cfg, "Strip/Replace/Lowercase/Prepend/Replace normalizers, Digits(contiguous), Split(String merged_with_next), byte_fallback"


def build_bpe_split_behaviors():
    """No ByteLevel: raw-char BPE with [UNK], ## prefix and </w> suffix, Split behaviours, no decoder."""
    tok = Tokenizer(models.BPE(unk_token="[UNK]", continuing_subword_prefix="##", end_of_word_suffix="</w>",
                               fuse_unk=False))
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.WhitespaceSplit(),
        pre_tokenizers.Split(Regex("-"), behavior="contiguous"),
        pre_tokenizers.Split(Regex("[A-Z]"), behavior="merged_with_next"),
        pre_tokenizers.Split(Regex("[.,!?]"), behavior="merged_with_previous"),
        pre_tokenizers.Split(Regex("[0-9]+"), behavior="removed"),
        pre_tokenizers.Split(Regex("[aeiou]+"), behavior="merged_with_previous", invert=True),
    ])
    tr = trainers.BpeTrainer(vocab_size=700, special_tokens=["[UNK]", "[CLS]", "[SEP]"], limit_alphabet=80,
                             continuing_subword_prefix="##", end_of_word_suffix="</w>", show_progress=False)
    tok.train_from_iterator(train_lines(), trainer=tr)
    tok.decoder = None
    tok.add_special_tokens([AddedToken("[MASK]", special=True, lstrip=True, normalized=False)])
    cfg = {"unk_token": "[UNK]"}
    return tok.to_str(), cfg, "raw-char BPE with [UNK], ## prefix, </w> suffix, WhitespaceSplit + Split contiguous/merged_with_next/merged_with_previous/removed/invert, no decoder"


def build_bpe_whitespace():
    """Whitespace pre-tokenizer (\\w+|[^\\w\\s]+), NFD + StripAccents + Lowercase, byte fallback."""
    d = sp_vocab_with_bytes(train_sp(700, True), 3)
    tok = Tokenizer.from_str(json.dumps(d))
    tok.normalizer = normalizers.Sequence([normalizers.NFD(), normalizers.StripAccents(), normalizers.Lowercase()])
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tok.decoder = decoders.Sequence([decoders.ByteFallback(), decoders.Fuse()])
    cfg = {}
    return tok.to_str(), cfg, "Whitespace pre-tokenizer, NFD+StripAccents+Lowercase, byte_fallback, ByteFallback+Fuse decoder"


BUILDERS = [
    ("bpe_bytelevel", build_bpe_bytelevel),
    ("bpe_llama3_split", build_bpe_llama3_split),
    ("sp_bpe_legacy", build_sp_bpe_legacy),
    ("sp_bpe_metaspace", build_sp_bpe_metaspace),
    ("sp_metaspace_always", build_sp_metaspace_always),
    ("bpe_nfkc_digits", build_bpe_nfkc_digits),
    ("bpe_prepend_replace_digits", build_bpe_prepend_replace_digits),
    ("bpe_split_behaviors", build_bpe_split_behaviors),
    ("bpe_whitespace", build_bpe_whitespace),
]


# ---------------------------------------------------------------------------------------------
# Recording.
def set_encode_special(tok, value):
    try:
        tok.encode_special_tokens = value
        return tok.encode_special_tokens == value
    except Exception as e:  # noqa: BLE001 - recorded, not fatal
        log("encode_special_tokens not settable: %r" % e)
        return False


def record(tok, texts, seed):
    out = {"tokenizers_version": tokenizers.__version__,
           "vocab_size_with_added": tok.get_vocab_size(with_added_tokens=True),
           "vocab_size_model": tok.get_vocab_size(with_added_tokens=False),
           "cases": [], "random_decode": []}
    for text in texts:
        set_encode_special(tok, False)
        e = tok.encode(text, add_special_tokens=False)
        ids = e.ids
        e_add = tok.encode(text, add_special_tokens=True)
        e_no = tok.encode(text, add_special_tokens=False) if set_encode_special(tok, True) else None
        set_encode_special(tok, False)
        case = {}
        if tok.normalizer is not None:
            case["normalized"] = tok.normalizer.normalize_str(text)
        if tok.pre_tokenizer is not None:
            case["pre_tokens"] = [p for p, _ in tok.pre_tokenizer.pre_tokenize_str(case.get("normalized", text))]
        out["cases"].append({
            **case,
            "text": text,
            "ids": ids,
            "tokens": e.tokens,
            "ids_no_special": e_no.ids if e_no is not None else None,
            "ids_add_special": e_add.ids,
            "decode": tok.decode(ids, skip_special_tokens=False),
            "decode_skip_special": tok.decode(ids, skip_special_tokens=True),
        })
    rng = random.Random(seed)
    n = out["vocab_size_with_added"]
    vocab = tok.get_vocab(with_added_tokens=True)
    byte_ids = [vocab[b] for b in bytes_vocab_tokens() if b in vocab]
    added_ids = sorted(tok.get_added_tokens_decoder().keys())
    for k in range(160):
        length = rng.randint(1, 24)
        seq = []
        for _ in range(length):
            r = rng.random()
            if byte_ids and r < 0.3:
                seq.append(rng.choice(byte_ids))
            elif added_ids and r < 0.38:
                seq.append(rng.choice(added_ids))
            elif r < 0.40:
                seq.append(n + rng.randint(0, 50))  # out of range: the library skips it
            else:
                seq.append(rng.randrange(n))
        out["random_decode"].append({
            "ids": seq,
            "decode": tok.decode(seq, skip_special_tokens=False),
            "decode_skip_special": tok.decode(seq, skip_special_tokens=True),
        })
    return out


def add_file(tar, name, data):
    b = data.encode("utf-8")
    info = tarfile.TarInfo(name)
    info.size = len(b)
    info.mtime = 0
    tar.addfile(info, io.BytesIO(b))


def main():
    out_dir = sys.argv[1]
    qwen3 = sys.argv[2] if len(sys.argv) > 2 else None
    os.makedirs(out_dir, exist_ok=True)
    log("tokenizers %s, python %s" % (tokenizers.__version__, sys.version.split()[0]))
    texts = hostile_corpus()
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for i, (name, builder) in enumerate(BUILDERS):
            try:
                s, cfg, desc = builder()
                tok = Tokenizer.from_str(s)
                vec = record(tok, texts, seed=1000 + i)
                vec["description"] = desc
                add_file(tar, name + "/tokenizer.json", s)
                add_file(tar, name + "/tokenizer_config.json", json.dumps(cfg, indent=1, ensure_ascii=False))
                add_file(tar, name + "/vectors.json", json.dumps(vec, ensure_ascii=False, indent=0))
                log("%s: ok, vocab %d, %d cases" % (name, vec["vocab_size_with_added"], len(vec["cases"])))
            except Exception:
                log("%s: FAILED\n%s" % (name, traceback.format_exc()))
        if qwen3 and os.path.exists(qwen3):
            try:
                tok = Tokenizer.from_file(qwen3)
                vec = record(tok, texts, seed=7)
                vec["description"] = "Qwen3 tokenizer.json from ../shared/fixtures/tokenizers/qwen3 (not copied here)"
                add_file(tar, "qwen3/vectors.json", json.dumps(vec, ensure_ascii=False, indent=0))
                log("qwen3: ok, vocab %d" % vec["vocab_size_with_added"])
            except Exception:
                log("qwen3: FAILED\n%s" % traceback.format_exc())
        else:
            log("qwen3: skipped (no path given or not found: %r)" % qwen3)
        add_file(tar, "GENERATED_BY.txt",
                 "tools/make_tokenizer_vectors.py with tokenizers %s\n" % tokenizers.__version__)
    with open(os.path.join(out_dir, "tokenizer_vectors.tar.gz"), "wb") as f:
        f.write(buf.getvalue())
    with open(os.path.join(out_dir, "make_tokenizer_vectors.log"), "w") as f:
        f.write("\n".join(LOG) + "\n")


if __name__ == "__main__":
    main()
