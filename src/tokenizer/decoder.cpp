#include "tokenizer/decoder.h"

#include "core/error.h"
#include "tokenizer/pre_tokenizer.h"
#include "tokenizer/unicode.h"

namespace keel::tokenizer {

Decoder Decoder::from_json(const json& j, const std::string& where) {
  Decoder d;
  if (!j.is_null()) {
    d.present_ = true;
    parse_into(j, where, d.steps_);
  }
  return d;
}

void Decoder::parse_into(const json& j, const std::string& where, std::vector<Step>& steps, int depth) {
  check_nesting(depth, where);
  const std::string type = json_type(j, where);
  Step step{};
  if (type == "Sequence") {
    const json& list = json_required(j, "decoders", where);
    if (!list.is_array()) throw_error(ErrorCode::invalid_file, "{}.decoders: expected an array", where);
    for (size_t i = 0; i < list.size(); ++i)
      parse_into(list[i], where + ".decoders[" + std::to_string(i) + "]", steps, depth + 1);
    return;
  } else if (type == "ByteLevel") {
    step.kind = Kind::byte_level;
  } else if (type == "Metaspace") {
    step.kind = Kind::metaspace;
    step.content = json_char(j, "replacement", where);
    const std::string scheme = json_optional_string(j, "prepend_scheme", where).value_or("always");
    step.prepend = scheme != "never" && json_bool(j, "add_prefix_space", true, where);
  } else if (type == "ByteFallback") {
    step.kind = Kind::byte_fallback;
  } else if (type == "Fuse") {
    step.kind = Kind::fuse;
  } else if (type == "Strip") {
    step.kind = Kind::strip;
    step.content = json_char(j, "content", where);
    const int64_t start = json_int(j, "start", 0, where), stop = json_int(j, "stop", 0, where);
    if (start < 0 || stop < 0)
      throw_error(ErrorCode::invalid_file, "{}: Strip start/stop must not be negative", where);
    step.start = static_cast<size_t>(start);
    step.stop = static_cast<size_t>(stop);
  } else if (type == "Replace") {
    step.kind = Kind::replace;
    step.pattern = Pattern::from_json(json_required(j, "pattern", where), where + ".pattern");
    step.replacement = json_string(j, "content", where);
  } else {
    throw_error(ErrorCode::unsupported,
                "{}: decoder type \"{}\" is not supported (keel reads ByteLevel, Metaspace, ByteFallback, "
                "Fuse, Strip, "
                "Replace, Sequence)",
                where, type);
  }
  steps.push_back(std::move(step));
}

bool Decoder::has_byte_fallback() const {
  for (const Step& s : steps_)
    if (s.kind == Kind::byte_fallback) return true;
  return false;
}

// "<0xAB>" → 0xAB, or -1.
static int byte_token_value(const std::string& t) {
  if (t.size() != 6 || t.compare(0, 3, "<0x") != 0 || t[5] != '>') return -1;
  int v = 0;
  for (size_t i = 3; i < 5; ++i) {
    const char c = t[i];
    const int d = (c >= '0' && c <= '9')   ? c - '0'
                  : (c >= 'A' && c <= 'F') ? c - 'A' + 10
                  : (c >= 'a' && c <= 'f') ? c - 'a' + 10
                                           : -1;
    if (d < 0) return -1;
    v = v * 16 + d;
  }
  return v;
}

void Decoder::apply(const Step& step, std::vector<std::string>& tokens) {
  switch (step.kind) {
    case Kind::byte_level: {
      std::string bytes;
      for (const std::string& t : tokens) {
        std::string mapped;
        size_t i = 0;
        bool all = true;
        while (i < t.size()) {
          const int b = byte_level_byte(next_codepoint(t, i));
          if (b < 0) {
            all = false;
            break;
          }
          mapped.push_back(static_cast<char>(b));
        }
        bytes += all ? mapped : t;
      }
      tokens.assign(1, utf8_lossy(bytes));
      return;
    }
    case Kind::metaspace:
      for (size_t k = 0; k < tokens.size(); ++k) {
        std::string out;
        const std::string& t = tokens[k];
        size_t i = 0;
        while (i < t.size()) {
          const size_t start = i;
          const char32_t cp = next_codepoint(t, i);
          if (cp != step.content)
            out.append(t, start, i - start);
          else if (!(k == 0 && step.prepend))
            out.push_back(' ');
        }
        tokens[k] = std::move(out);
      }
      return;
    case Kind::byte_fallback: {
      std::vector<std::string> out;
      std::string pending;
      auto flush = [&] {
        if (pending.empty()) return;
        if (find_invalid_utf8(pending) == std::string::npos) {
          out.push_back(pending);
        } else {
          for (size_t k = 0; k < pending.size(); ++k) out.emplace_back("\xEF\xBF\xBD");
        }
        pending.clear();
      };
      for (std::string& t : tokens) {
        const int b = byte_token_value(t);
        if (b >= 0) {
          pending.push_back(static_cast<char>(b));
        } else {
          flush();
          out.push_back(std::move(t));
        }
      }
      flush();
      tokens = std::move(out);
      return;
    }
    case Kind::fuse: {
      std::string all;
      for (const std::string& t : tokens) all += t;
      tokens.assign(1, std::move(all));
      return;
    }
    case Kind::strip:
      for (std::string& t : tokens) {
        std::vector<std::pair<size_t, char32_t>> chars;  // (byte offset, code point)
        size_t i = 0;
        while (i < t.size()) {
          const size_t start = i;
          chars.emplace_back(start, next_codepoint(t, i));
        }
        size_t cut_start = 0;
        while (cut_start < step.start && cut_start < chars.size() && chars[cut_start].second == step.content)
          ++cut_start;
        size_t cut_stop = chars.size();
        for (size_t k = 0;
             k < step.stop && cut_stop > cut_start && chars[cut_stop - 1].second == step.content; ++k)
          --cut_stop;
        const size_t b0 = cut_start < chars.size() ? chars[cut_start].first : t.size();
        const size_t b1 = cut_stop < chars.size() ? chars[cut_stop].first : t.size();
        t = b1 > b0 ? t.substr(b0, b1 - b0) : std::string();
      }
      return;
    case Kind::replace:
      for (std::string& t : tokens) {
        std::string out;
        for (const Span& sp : step.pattern.find_matches(t)) {
          if (sp.is_match)
            out += step.replacement;
          else
            out.append(t, sp.start, sp.end - sp.start);
        }
        t = std::move(out);
      }
      return;
  }
}

std::string Decoder::decode(std::vector<std::string> tokens) const {
  std::string out;
  if (!present_) {
    for (size_t k = 0; k < tokens.size(); ++k) {
      if (k) out.push_back(' ');
      out += tokens[k];
    }
    return out;
  }
  for (const Step& step : steps_) apply(step, tokens);
  for (const std::string& t : tokens) out += t;
  return out;
}

}  // namespace keel::tokenizer
