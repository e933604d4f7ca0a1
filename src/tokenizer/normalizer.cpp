#include "tokenizer/normalizer.h"

#include "core/error.h"

namespace keel::tokenizer {

Normalizer Normalizer::from_json(const json& j, const std::string& where) {
  Normalizer n;
  if (!j.is_null()) parse_into(j, where, n.steps_);
  return n;
}

void Normalizer::parse_into(const json& j, const std::string& where, std::vector<Step>& steps, int depth) {
  check_nesting(depth, where);
  const std::string type = json_type(j, where);
  Step step{};
  if (type == "Sequence") {
    const json& list = json_required(j, "normalizers", where);
    if (!list.is_array()) throw_error(ErrorCode::invalid_file, "{}.normalizers: expected an array", where);
    for (size_t i = 0; i < list.size(); ++i)
      parse_into(list[i], where + ".normalizers[" + std::to_string(i) + "]", steps, depth + 1);
    return;
  } else if (type == "NFC" || type == "NFD" || type == "NFKC" || type == "NFKD") {
    step.kind = Kind::unicode;
    step.form = type == "NFC"    ? NormalForm::nfc
                : type == "NFD"  ? NormalForm::nfd
                : type == "NFKC" ? NormalForm::nfkc
                                 : NormalForm::nfkd;
  } else if (type == "Lowercase") {
    step.kind = Kind::lowercase;
  } else if (type == "StripAccents") {
    step.kind = Kind::strip_accents;
  } else if (type == "Strip") {
    step.kind = Kind::strip;
    step.strip_left = json_bool(j, "strip_left", false, where);
    step.strip_right = json_bool(j, "strip_right", false, where);
  } else if (type == "Replace") {
    step.kind = Kind::replace;
    step.pattern = Pattern::from_json(json_required(j, "pattern", where), where + ".pattern");
    step.content = json_string(j, "content", where);
  } else if (type == "Prepend") {
    step.kind = Kind::prepend;
    step.content = json_string(j, "prepend", where);
  } else {
    throw_error(
        ErrorCode::unsupported,
        "{}: normalizer type \"{}\" is not supported (keel reads NFC, NFD, NFKC, NFKD, Lowercase, Strip, "
        "StripAccents, Replace, Prepend, Sequence)",
        where, type);
  }
  steps.push_back(std::move(step));
}

static std::string strip_whitespace(std::string_view s, bool left, bool right) {
  size_t begin = 0, end = s.size();
  if (left) {
    while (begin < end) {
      size_t i = begin;
      if (!is_whitespace(next_codepoint(s, i))) break;
      begin = i;
    }
  }
  if (right) {
    while (end > begin) {
      size_t start = end - 1;
      while (start > begin && (static_cast<uint8_t>(s[start]) & 0xC0) == 0x80) --start;
      size_t i = start;
      if (!is_whitespace(next_codepoint(s, i))) break;
      end = start;
    }
  }
  return std::string(s.substr(begin, end - begin));
}

static std::string strip_marks(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  size_t i = 0;
  while (i < s.size()) {
    const size_t start = i;
    if (!is_mark(next_codepoint(s, i))) out.append(s.substr(start, i - start));
  }
  return out;
}

std::string Normalizer::apply(std::string_view input) const {
  std::string s(input);
  for (const Step& step : steps_) {
    switch (step.kind) {
      case Kind::unicode:
        s = normalize(s, step.form);
        break;
      case Kind::lowercase:
        s = lowercase(s);
        break;
      case Kind::strip:
        s = strip_whitespace(s, step.strip_left, step.strip_right);
        break;
      case Kind::strip_accents:
        s = strip_marks(s);
        break;
      case Kind::prepend:
        if (!s.empty()) s = step.content + s;
        break;
      case Kind::replace: {
        std::string out;
        out.reserve(s.size());
        for (const Span& sp : step.pattern.find_matches(s)) {
          if (sp.is_match)
            out += step.content;
          else
            out.append(s, sp.start, sp.end - sp.start);
        }
        s = std::move(out);
        break;
      }
    }
  }
  return s;
}

}  // namespace keel::tokenizer
