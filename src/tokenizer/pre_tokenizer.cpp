#include "tokenizer/pre_tokenizer.h"

#include <array>

#include "core/error.h"
#include "tokenizer/unicode.h"

namespace keel::tokenizer {

namespace {

struct ByteLevelTables {
  std::array<std::string, 256> chars;
  std::array<int, 0x144> bytes;  // code point → byte, -1 where unused
  ByteLevelTables() {
    bytes.fill(-1);
    int next = 256;
    for (int b = 0; b < 256; ++b) {
      const bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
      const int cp = printable ? b : next++;
      append_utf8(chars[static_cast<size_t>(b)], static_cast<char32_t>(cp));
      bytes[static_cast<size_t>(cp)] = b;
    }
  }
};

const ByteLevelTables& byte_level_tables() {
  static const ByteLevelTables tables;
  return tables;
}

const Regex& gpt2_regex() {
  static const Regex re(R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)",
                        "ByteLevel pre-tokenizer regex");
  return re;
}

void push_pieces(const Piece& piece, const std::vector<std::pair<size_t, size_t>>& ranges,
                 std::vector<Piece>& out) {
  for (const auto& [start, end] : ranges)
    out.push_back({piece.text.substr(start, end - start), piece.at_start && start == 0});
}

}  // namespace

const std::string& byte_level_char(uint8_t byte) {
  return byte_level_tables().chars[byte];
}

int byte_level_byte(char32_t cp) {
  return cp < 0x144 ? byte_level_tables().bytes[cp] : -1;
}

std::string byte_level_encode(std::string_view bytes) {
  const auto& t = byte_level_tables();
  std::string out;
  out.reserve(bytes.size() + bytes.size() / 4);
  for (char c : bytes) out += t.chars[static_cast<uint8_t>(c)];
  return out;
}

PreTokenizer PreTokenizer::from_json(const json& j, const std::string& where) {
  PreTokenizer p;
  if (!j.is_null()) parse_into(j, where, p.steps_);
  return p;
}

void PreTokenizer::parse_into(const json& j, const std::string& where, std::vector<Step>& steps, int depth) {
  check_nesting(depth, where);
  const std::string type = json_type(j, where);
  Step step{};
  if (type == "Sequence") {
    const json& list = json_required(j, "pretokenizers", where);
    if (!list.is_array()) throw_error(ErrorCode::invalid_file, "{}.pretokenizers: expected an array", where);
    for (size_t i = 0; i < list.size(); ++i)
      parse_into(list[i], where + ".pretokenizers[" + std::to_string(i) + "]", steps, depth + 1);
    return;
  } else if (type == "Split") {
    step.kind = Kind::split;
    step.pattern = Pattern::from_json(json_required(j, "pattern", where), where + ".pattern");
    step.behavior = split_behavior_from_json(json_required(j, "behavior", where), where + ".behavior");
    step.invert = json_bool(j, "invert", false, where);
  } else if (type == "ByteLevel") {
    step.kind = Kind::byte_level;
    step.add_prefix_space = json_bool(j, "add_prefix_space", true, where);
    step.use_regex = json_bool(j, "use_regex", true, where);
    if (step.use_regex) gpt2_regex();
  } else if (type == "Metaspace") {
    step.kind = Kind::metaspace;
    step.replacement_cp = json_char(j, "replacement", where);
    append_utf8(step.replacement, step.replacement_cp);
    const std::string scheme = json_optional_string(j, "prepend_scheme", where).value_or("always");
    if (scheme == "always") {
      step.prepend = Prepend::always;
    } else if (scheme == "never") {
      step.prepend = Prepend::never;
    } else if (scheme == "first") {
      step.prepend = Prepend::first;
    } else {
      throw_error(ErrorCode::invalid_file, "{}.prepend_scheme: expected always, never or first, got \"{}\"",
                  where, scheme);
    }
    if (j.contains("add_prefix_space") && !json_bool(j, "add_prefix_space", true, where)) {
      if (step.prepend != Prepend::never && j.contains("prepend_scheme"))
        throw_error(ErrorCode::invalid_file, "{}: add_prefix_space false contradicts prepend_scheme \"{}\"",
                    where, scheme);
      step.prepend = Prepend::never;
    }
    step.metaspace_split = json_bool(j, "split", true, where);
  } else if (type == "Digits") {
    step.kind = Kind::digits;
    step.individual_digits = json_bool(j, "individual_digits", false, where);
  } else if (type == "Whitespace") {
    step.kind = Kind::whitespace;
    step.regex = std::make_shared<Regex>(R"(\w+|[^\w\s]+)", where);
  } else if (type == "WhitespaceSplit") {
    step.kind = Kind::whitespace_split;
  } else if (type == "Punctuation") {
    step.kind = Kind::punctuation;
    step.behavior = j.contains("behavior") ? split_behavior_from_json(j["behavior"], where + ".behavior")
                                           : SplitBehavior::isolated;
  } else {
    throw_error(
        ErrorCode::unsupported,
        "{}: pre-tokenizer type \"{}\" is not supported (keel reads Split, ByteLevel, Metaspace, Digits, "
        "Whitespace, WhitespaceSplit, Punctuation, Sequence)",
        where, type);
  }
  steps.push_back(std::move(step));
}

void PreTokenizer::apply_step(const Step& step, const Piece& piece, std::vector<Piece>& out) {
  const std::string& s = piece.text;
  switch (step.kind) {
    case Kind::split:
      push_pieces(piece, split_spans(step.pattern.find_matches(s), step.behavior, step.invert), out);
      return;
    case Kind::digits:
      push_pieces(
          piece,
          split_spans(find_char_matches(s, is_numeric),
                      step.individual_digits ? SplitBehavior::isolated : SplitBehavior::contiguous, false),
          out);
      return;
    case Kind::whitespace: {
      std::vector<std::pair<size_t, size_t>> m;
      step.regex->find_all(s, m);
      // Rust: split(Invert(re), Removed) keeps the matches and drops what lies between them.
      for (const auto& [start, end] : m)
        if (end > start) out.push_back({s.substr(start, end - start), piece.at_start && start == 0});
      return;
    }
    case Kind::whitespace_split:
      push_pieces(piece, split_spans(find_char_matches(s, is_whitespace), SplitBehavior::removed, false),
                  out);
      return;
    case Kind::punctuation:
      push_pieces(piece, split_spans(find_char_matches(s, is_punctuation), step.behavior, false), out);
      return;
    case Kind::metaspace: {
      Piece p{std::string(), piece.at_start};
      p.text.reserve(s.size() + 8);
      for (char c : s) {
        if (c == ' ')
          p.text += step.replacement;
        else
          p.text.push_back(c);
      }
      const bool starts = p.text.compare(0, step.replacement.size(), step.replacement) == 0;
      if (!starts && (step.prepend == Prepend::always || (step.prepend == Prepend::first && piece.at_start)))
        p.text.insert(0, step.replacement);
      if (!step.metaspace_split) {
        out.push_back(std::move(p));
        return;
      }
      const char32_t rep = step.replacement_cp;
      push_pieces(p,
                  split_spans(find_char_matches(p.text, [rep](char32_t c) { return c == rep; }),
                              SplitBehavior::merged_with_next, false),
                  out);
      return;
    }
    case Kind::byte_level: {
      Piece p = piece;
      if (step.add_prefix_space && (p.text.empty() || p.text[0] != ' ')) p.text.insert(0, 1, ' ');
      if (!step.use_regex) {
        out.push_back({byte_level_encode(p.text), p.at_start});
        return;
      }
      std::vector<std::pair<size_t, size_t>> m;
      gpt2_regex().find_all(p.text, m);
      const std::string_view v = p.text;
      for (const auto& [start, end] :
           split_spans(spans_from_matches(v.size(), m), SplitBehavior::isolated, false))
        out.push_back({byte_level_encode(v.substr(start, end - start)), p.at_start && start == 0});
      return;
    }
  }
}

std::vector<Piece> PreTokenizer::apply(std::vector<Piece> pieces) const {
  for (const Step& step : steps_) {
    std::vector<Piece> next;
    next.reserve(pieces.size() * 2);
    for (const Piece& piece : pieces) apply_step(step, piece, next);
    pieces = std::move(next);
  }
  return pieces;
}

}  // namespace keel::tokenizer
