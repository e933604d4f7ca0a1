#include "chat/jinja/pystr.h"

#include <fmt/format.h>
#include <utf8proc.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <span>
#include <unordered_set>

#include "chat/jinja/special_casing.h"

namespace keel::chat::jinja::pystr {
namespace {

// Length in bytes of the code point starting at s[pos]: a well-formed sequence, else 1 (one invalid byte).
size_t cp_len(std::string_view s, size_t pos) {
  auto b = static_cast<unsigned char>(s[pos]);
  size_t n = b < 0x80 ? 1 : (b >> 5) == 0x6 ? 2 : (b >> 4) == 0xE ? 3 : (b >> 3) == 0x1E ? 4 : 0;
  if (n <= 1 || pos + n > s.size()) return 1;
  for (size_t i = 1; i < n; ++i) {
    if ((static_cast<unsigned char>(s[pos + i]) & 0xC0) != 0x80) return 1;
  }
  return n;
}

uint32_t cp_at(std::string_view s, size_t pos, size_t n) {
  auto b = static_cast<unsigned char>(s[pos]);
  if (n == 1) return b;
  uint32_t cp = b & (0x7F >> n);
  for (size_t i = 1; i < n; ++i) cp = (cp << 6) | (static_cast<unsigned char>(s[pos + i]) & 0x3F);
  return cp;
}

// Byte offset of code point number `index` (clamped to the end).
size_t byte_offset(std::string_view s, int64_t index) {
  size_t pos = 0;
  for (int64_t i = 0; i < index && pos < s.size(); ++i) pos += cp_len(s, pos);
  return pos;
}

int64_t cp_index(std::string_view s, size_t byte_pos) {
  int64_t n = 0;
  for (size_t pos = 0; pos < byte_pos && pos < s.size(); pos += cp_len(s, pos)) ++n;
  return n;
}

// Python's slice-index adjustment for find/count/startswith: negative counts from the end, then clamp.
std::pair<int64_t, int64_t> adjust_range(int64_t len, std::optional<int64_t> start,
                                         std::optional<int64_t> end) {
  int64_t b = start.value_or(0), e = end.value_or(len);
  if (b < 0) b = std::max<int64_t>(0, b + len);
  if (e < 0) e = std::max<int64_t>(0, e + len);
  e = std::min(e, len);
  return {b, e};
}

uint32_t map_case(uint32_t cp, int mode) {  // 0 lower, 1 upper, 2 title
  if (cp > 0x10FFFF) return cp;
  auto c = static_cast<utf8proc_int32_t>(cp);
  return static_cast<uint32_t>(mode == 0   ? utf8proc_tolower(c)
                               : mode == 1 ? utf8proc_toupper(c)
                                           : utf8proc_totitle(c));
}

// CPython's full (one-to-many) upper-case and title-case mappings that utf8proc's simple mappings lack, from
// the generated table (special_casing.h): appended and true when cp has one.
bool append_special(std::string& out, uint32_t cp, std::span<const SpecialCase> table) {
  auto it = std::lower_bound(table.begin(), table.end(), cp,
                             [](const SpecialCase& e, uint32_t c) { return e.cp < c; });
  if (it == table.end() || it->cp != cp) return false;
  out += it->utf8;
  return true;
}
bool append_special_upper(std::string& out, uint32_t cp) {
  return append_special(out, cp, kSpecialUpper);
}
bool append_special_title(std::string& out, uint32_t cp) {
  return append_special(out, cp, kSpecialTitle);
}

// CPython's lower() special cases: İ becomes i + combining dot; a capital sigma that ends a word (a cased
// letter before it, none after) becomes the final form ς.
bool append_special_lower(std::string& out, const std::vector<uint32_t>& cps, size_t i) {
  uint32_t cp = cps[i];
  if (cp == 0x130) {
    out += "i\xcc\x87";
    return true;
  }
  if (cp == 0x3A3) {
    bool before = i > 0 && is_cased(cps[i - 1]);
    bool after = i + 1 < cps.size() && is_cased(cps[i + 1]);
    append_utf8(out, before && !after ? 0x3C2 : 0x3C3);
    return true;
  }
  return false;
}

std::string map_each(std::string_view s, int mode) {
  std::string out;
  out.reserve(s.size());
  if (mode == 0 && !is_ascii(s)) {
    auto cps = decode(s);
    for (size_t i = 0; i < cps.size(); ++i) {
      if (!append_special_lower(out, cps, i)) append_utf8(out, map_case(cps[i], 0));
    }
    return out;
  }
  for (size_t pos = 0; pos < s.size();) {
    size_t n = cp_len(s, pos);
    uint32_t cp = cp_at(s, pos, n);
    if (cp < 0x80) {
      char c = static_cast<char>(cp);
      out += mode == 0 ? static_cast<char>(std::tolower(c)) : static_cast<char>(std::toupper(c));
    } else if (n == 1) {
      out += s[pos];  // an invalid byte passes through
    } else if (!(mode == 1 && append_special_upper(out, cp))) {
      append_utf8(out, map_case(cp, mode));
    }
    pos += n;
  }
  return out;
}

}  // namespace

std::vector<uint32_t> decode(std::string_view s) {
  std::vector<uint32_t> out;
  out.reserve(s.size());
  for (size_t pos = 0; pos < s.size();) {
    size_t n = cp_len(s, pos);
    out.push_back(cp_at(s, pos, n));
    pos += n;
  }
  return out;
}

void append_utf8(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

std::string encode(const std::vector<uint32_t>& cps, size_t begin, size_t end) {
  std::string out;
  end = std::min(end, cps.size());
  for (size_t i = begin; i < end; ++i) append_utf8(out, cps[i]);
  return out;
}

size_t length(std::string_view s) {
  size_t n = 0;
  for (size_t pos = 0; pos < s.size(); pos += cp_len(s, pos)) ++n;
  return n;
}

bool is_ascii(std::string_view s) {
  return std::all_of(s.begin(), s.end(), [](char c) { return static_cast<unsigned char>(c) < 0x80; });
}

bool is_space(uint32_t cp) {
  if (cp < 0x80) return cp == ' ' || (cp >= 0x09 && cp <= 0x0D) || (cp >= 0x1C && cp <= 0x1F);
  switch (cp) {
    case 0x85:
    case 0xA0:
    case 0x1680:
    case 0x2028:
    case 0x2029:
    case 0x202F:
    case 0x205F:
    case 0x3000:
      return true;
    default:
      return cp >= 0x2000 && cp <= 0x200A;
  }
}

bool is_printable(uint32_t cp) {
  if (cp < 0x80) return cp >= 0x20 && cp < 0x7F;
  if (cp > 0x10FFFF) return false;
  switch (utf8proc_category(static_cast<utf8proc_int32_t>(cp))) {
    case UTF8PROC_CATEGORY_CC:
    case UTF8PROC_CATEGORY_CF:
    case UTF8PROC_CATEGORY_CS:
    case UTF8PROC_CATEGORY_CO:
    case UTF8PROC_CATEGORY_CN:
    case UTF8PROC_CATEGORY_ZL:
    case UTF8PROC_CATEGORY_ZP:
    case UTF8PROC_CATEGORY_ZS:
      return false;
    default:
      return true;
  }
}

bool is_lower_cp(uint32_t cp) {
  if (cp < 0x80) return cp >= 'a' && cp <= 'z';
  return cp <= 0x10FFFF && utf8proc_islower(static_cast<utf8proc_int32_t>(cp));
}
bool is_upper_cp(uint32_t cp) {
  if (cp < 0x80) return cp >= 'A' && cp <= 'Z';
  return cp <= 0x10FFFF && utf8proc_isupper(static_cast<utf8proc_int32_t>(cp));
}
bool is_cased(uint32_t cp) {
  if (cp < 0x80) return is_lower_cp(cp) || is_upper_cp(cp);
  if (cp > 0x10FFFF) return false;
  auto cat = utf8proc_category(static_cast<utf8proc_int32_t>(cp));
  return cat == UTF8PROC_CATEGORY_LU || cat == UTF8PROC_CATEGORY_LL || cat == UTF8PROC_CATEGORY_LT ||
         is_lower_cp(cp) || is_upper_cp(cp);
}

std::string strip(std::string_view s, const std::optional<std::string>& chars, bool left, bool right) {
  std::vector<uint32_t> set;
  if (chars) set = decode(*chars);
  auto strippable = [&](uint32_t cp) {
    return chars ? std::find(set.begin(), set.end(), cp) != set.end() : is_space(cp);
  };
  size_t begin = 0, end = s.size();
  if (left) {
    while (begin < end) {
      size_t n = cp_len(s, begin);
      if (!strippable(cp_at(s, begin, n))) break;
      begin += n;
    }
  }
  if (right) {
    size_t keep_end = begin;  // end of the last code point that is kept
    for (size_t pos = begin; pos < end;) {
      size_t n = cp_len(s, pos);
      if (!strippable(cp_at(s, pos, n))) keep_end = pos + n;
      pos += n;
    }
    end = keep_end;
  }
  return std::string(s.substr(begin, end - begin));
}

namespace {

// Whitespace-separated words of s as [begin, end) byte ranges.
std::vector<std::pair<size_t, size_t>> whitespace_words(std::string_view s) {
  std::vector<std::pair<size_t, size_t>> words;
  size_t pos = 0;
  while (pos < s.size()) {
    while (pos < s.size()) {
      size_t n = cp_len(s, pos);
      if (!is_space(cp_at(s, pos, n))) break;
      pos += n;
    }
    if (pos >= s.size()) break;
    size_t start = pos;
    while (pos < s.size()) {
      size_t n = cp_len(s, pos);
      if (is_space(cp_at(s, pos, n))) break;
      pos += n;
    }
    words.emplace_back(start, pos);
  }
  return words;
}

}  // namespace

std::vector<std::string> split(std::string_view s, const std::optional<std::string>& sep, int64_t maxsplit) {
  std::vector<std::string> out;
  if (!sep) {
    auto words = whitespace_words(s);
    for (size_t i = 0; i < words.size(); ++i) {
      if (maxsplit >= 0 && static_cast<int64_t>(i) == maxsplit) {
        out.emplace_back(s.substr(words[i].first));  // the rest, leading whitespace already skipped
        break;
      }
      out.emplace_back(s.substr(words[i].first, words[i].second - words[i].first));
    }
    return out;
  }
  size_t pos = 0;
  int64_t splits = 0;
  while (maxsplit < 0 || splits < maxsplit) {
    size_t hit = s.find(*sep, pos);
    if (hit == std::string_view::npos) break;
    out.emplace_back(s.substr(pos, hit - pos));
    pos = hit + sep->size();
    ++splits;
  }
  out.emplace_back(s.substr(pos));
  return out;
}

std::vector<std::string> rsplit(std::string_view s, const std::optional<std::string>& sep, int64_t maxsplit) {
  std::vector<std::string> out;
  if (!sep) {
    auto words = whitespace_words(s);
    int64_t taken = 0;
    size_t i = words.size();
    while (i > 0) {
      if (maxsplit >= 0 && taken == maxsplit) {
        out.emplace_back(s.substr(0, words[i - 1].second));  // the rest, trailing whitespace skipped
        i = 0;
        break;
      }
      --i;
      out.emplace_back(s.substr(words[i].first, words[i].second - words[i].first));
      ++taken;
    }
    std::reverse(out.begin(), out.end());
    return out;
  }
  size_t end = s.size();
  int64_t splits = 0;
  while (maxsplit < 0 || splits < maxsplit) {
    if (end < sep->size()) break;
    size_t hit = s.rfind(*sep, end - sep->size());
    if (hit == std::string_view::npos) break;
    out.emplace_back(s.substr(hit + sep->size(), end - hit - sep->size()));
    end = hit;
    ++splits;
  }
  out.emplace_back(s.substr(0, end));
  std::reverse(out.begin(), out.end());
  return out;
}

std::vector<std::string> splitlines(std::string_view s, bool keepends) {
  std::vector<std::string> out;
  size_t start = 0, pos = 0;
  while (pos < s.size()) {
    size_t n = cp_len(s, pos);
    uint32_t cp = cp_at(s, pos, n);
    bool is_break = cp == '\n' || cp == '\r' || cp == 0x0B || cp == 0x0C || cp == 0x1C || cp == 0x1D ||
                    cp == 0x1E || cp == 0x85 || cp == 0x2028 || cp == 0x2029;
    if (!is_break) {
      pos += n;
      continue;
    }
    size_t brk_end = pos + n;
    if (cp == '\r' && brk_end < s.size() && s[brk_end] == '\n') ++brk_end;
    out.emplace_back(s.substr(start, (keepends ? brk_end : pos) - start));
    start = pos = brk_end;
  }
  if (start < s.size()) out.emplace_back(s.substr(start));
  return out;
}

std::string replace(std::string_view s, std::string_view old, std::string_view repl, int64_t count) {
  std::string out;
  if (old.empty()) {
    // Python inserts `repl` before every code point and at the end, `count` times at most.
    int64_t done = 0;
    size_t pos = 0;
    while (pos <= s.size()) {
      if (count < 0 || done < count) {
        out += repl;
        ++done;
      }
      if (pos == s.size()) break;
      size_t n = cp_len(s, pos);
      out += s.substr(pos, n);
      pos += n;
    }
    return out;
  }
  size_t pos = 0;
  int64_t done = 0;
  while (count < 0 || done < count) {
    size_t hit = s.find(old, pos);
    if (hit == std::string_view::npos) break;
    out += s.substr(pos, hit - pos);
    out += repl;
    pos = hit + old.size();
    ++done;
  }
  out += s.substr(pos);
  return out;
}

size_t replaced_size(std::string_view s, std::string_view old, std::string_view repl, int64_t count) {
  size_t hits = old.empty() ? length(s) + 1 : 0;
  if (!old.empty()) {
    for (size_t pos = s.find(old); pos != std::string_view::npos; pos = s.find(old, pos + old.size())) ++hits;
  }
  if (count >= 0) hits = std::min(hits, static_cast<size_t>(count));
  return s.size() - hits * old.size() + hits * repl.size();
}

int64_t find(std::string_view s, std::string_view sub, std::optional<int64_t> start,
             std::optional<int64_t> end, bool reverse) {
  int64_t len = static_cast<int64_t>(length(s));
  auto [b, e] = adjust_range(len, start, end);
  if (b > len || e - b < 0) return -1;
  size_t bb = byte_offset(s, b), eb = byte_offset(s, e);
  std::string_view window = s.substr(bb, eb - bb);
  size_t hit = reverse ? window.rfind(sub) : window.find(sub);
  if (hit == std::string_view::npos) return -1;
  return b + cp_index(window, hit);
}

int64_t count(std::string_view s, std::string_view sub, std::optional<int64_t> start,
              std::optional<int64_t> end) {
  int64_t len = static_cast<int64_t>(length(s));
  auto [b, e] = adjust_range(len, start, end);
  if (b > len || e - b < 0) return 0;
  if (sub.empty()) return e - b + 1;
  size_t bb = byte_offset(s, b), eb = byte_offset(s, e);
  std::string_view window = s.substr(bb, eb - bb);
  int64_t n = 0;
  for (size_t pos = window.find(sub); pos != std::string_view::npos; pos = window.find(sub, pos + sub.size()))
    ++n;
  return n;
}

bool starts_with(std::string_view s, std::string_view prefix, std::optional<int64_t> start,
                 std::optional<int64_t> end, bool at_end) {
  int64_t len = static_cast<int64_t>(length(s));
  auto [b, e] = adjust_range(len, start, end);
  if (b > len) return false;
  if (e < b) return false;
  size_t bb = byte_offset(s, b), eb = byte_offset(s, e);
  std::string_view window = s.substr(bb, eb - bb);
  if (prefix.size() > window.size()) return false;
  return at_end ? window.substr(window.size() - prefix.size()) == prefix
                : window.substr(0, prefix.size()) == prefix;
}

std::string upper(std::string_view s) {
  return map_each(s, 1);
}
std::string lower(std::string_view s) {
  return map_each(s, 0);
}

std::string title(std::string_view s) {
  std::string out;
  bool previous_cased = false;
  for (size_t pos = 0; pos < s.size();) {
    size_t n = cp_len(s, pos);
    uint32_t cp = cp_at(s, pos, n);
    if (n == 1 && cp >= 0x80) {
      out += s[pos];
    } else if (previous_cased) {
      append_utf8(out, map_case(cp, 0));
    } else if (!append_special_title(out, cp)) {
      append_utf8(out, map_case(cp, 2));
    }
    previous_cased = is_cased(cp);
    pos += n;
  }
  return out;
}

std::string capitalize(std::string_view s) {
  if (s.empty()) return {};
  size_t n = cp_len(s, 0);
  std::string out;
  uint32_t cp = cp_at(s, 0, n);
  if (n == 1 && cp >= 0x80) {
    out += s[0];
  } else if (!append_special_title(out, cp)) {
    append_utf8(out, map_case(cp, 2));
  }
  return out + lower(s.substr(n));
}

// Python's str.swapcase: an upper-case code point takes its full lower mapping (final sigma included), a
// lower-case one its full upper mapping (ß → SS, ﬁ → FI), anything else (titlecase ǅ) stays.
std::string swapcase(std::string_view s) {
  std::string out;
  const std::vector<uint32_t> cps = decode(s);  // one entry per step of cp_len, as the loop walks
  for (size_t pos = 0, i = 0, n = 0; pos < s.size(); pos += n, ++i) {
    n = cp_len(s, pos);
    const uint32_t cp = cps[i];
    if (cp >= 0x80 && n == 1) {
      out += s[pos];  // an invalid byte passes through
    } else if (is_upper_cp(cp)) {
      if (!append_special_lower(out, cps, i)) append_utf8(out, map_case(cp, 0));
    } else if (is_lower_cp(cp)) {
      if (!append_special_upper(out, cp)) append_utf8(out, map_case(cp, 1));
    } else {
      append_utf8(out, cp);
    }
  }
  return out;
}

bool is_lower(std::string_view s) {
  bool cased = false;
  for (uint32_t cp : decode(s)) {
    if (is_upper_cp(cp) || (is_cased(cp) && !is_lower_cp(cp))) return false;
    cased = cased || is_lower_cp(cp);
  }
  return cased;
}

bool is_upper(std::string_view s) {
  bool cased = false;
  for (uint32_t cp : decode(s)) {
    if (is_lower_cp(cp) || (is_cased(cp) && !is_upper_cp(cp))) return false;
    cased = cased || is_upper_cp(cp);
  }
  return cased;
}

std::string center(std::string_view s, int64_t width, uint32_t fill) {
  int64_t len = static_cast<int64_t>(length(s));
  if (width <= len) return std::string(s);
  int64_t pad = width - len;
  // CPython: left = pad / 2 + (pad & width & 1)
  int64_t left = pad / 2 + (pad & width & 1);
  std::string out;
  for (int64_t i = 0; i < left; ++i) append_utf8(out, fill);
  out += s;
  for (int64_t i = 0; i < pad - left; ++i) append_utf8(out, fill);
  return out;
}

std::string ljust(std::string_view s, int64_t width, uint32_t fill, bool right) {
  int64_t len = static_cast<int64_t>(length(s));
  if (width <= len) return std::string(s);
  std::string pad;
  for (int64_t i = 0; i < width - len; ++i) append_utf8(pad, fill);
  return right ? pad + std::string(s) : std::string(s) + pad;
}

std::string repr(std::string_view s) {
  bool has_single = s.find('\'') != std::string_view::npos;
  bool has_double = s.find('"') != std::string_view::npos;
  char quote = has_single && !has_double ? '"' : '\'';
  std::string out(1, quote);
  for (size_t pos = 0; pos < s.size();) {
    size_t n = cp_len(s, pos);
    uint32_t cp = cp_at(s, pos, n);
    pos += n;
    if (cp == static_cast<uint32_t>(quote) || cp == '\\') {
      out += '\\';
      out += static_cast<char>(cp);
    } else if (cp == '\t') {
      out += "\\t";
    } else if (cp == '\n') {
      out += "\\n";
    } else if (cp == '\r') {
      out += "\\r";
    } else if (is_printable(cp)) {
      append_utf8(out, cp);
    } else if (cp <= 0xFF) {
      out += fmt::format("\\x{:02x}", cp);
    } else if (cp <= 0xFFFF) {
      out += fmt::format("\\u{:04x}", cp);
    } else {
      out += fmt::format("\\U{:08x}", cp);
    }
  }
  out += quote;
  return out;
}

std::string float_repr(double d) {
  if (std::isnan(d)) return "nan";
  if (std::isinf(d)) return d < 0 ? "-inf" : "inf";
  if (d == 0) return std::signbit(d) ? "-0.0" : "0.0";
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof buf, d, std::chars_format::scientific);
  std::string_view sci(buf, static_cast<size_t>(res.ptr - buf));  // [-]d[.ddd]e(+|-)dd
  std::string out;
  if (sci.front() == '-') {
    out += '-';
    sci.remove_prefix(1);
  }
  size_t e = sci.find('e');
  std::string digits;
  for (char c : sci.substr(0, e)) {
    if (c != '.') digits += c;
  }
  int exp = std::atoi(std::string(sci.substr(e + 1)).c_str());
  int decpt = exp + 1;  // value = 0.digits * 10^decpt
  int nd = static_cast<int>(digits.size());
  if (decpt <= -4 || decpt > 16) {
    out += digits[0];
    if (nd > 1) {
      out += '.';
      out.append(digits, 1);
    }
    out += fmt::format("e{}{:02d}", exp < 0 ? '-' : '+', std::abs(exp));
  } else if (decpt <= 0) {
    out += "0.";
    out.append(static_cast<size_t>(-decpt), '0');
    out += digits;
  } else if (decpt >= nd) {
    out += digits;
    out.append(static_cast<size_t>(decpt - nd), '0');
    out += ".0";
  } else {
    out.append(digits, 0, static_cast<size_t>(decpt));
    out += '.';
    out.append(digits, static_cast<size_t>(decpt));
  }
  return out;
}

namespace {

// Removes Python's digit-group underscores ("1_000"), which are only allowed between two digits.
std::optional<std::string> strip_underscores(std::string_view s, bool hex) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '_') {
      out += s[i];
      continue;
    }
    auto digit = [&](char c) {
      return hex ? std::isxdigit(static_cast<unsigned char>(c)) : std::isdigit(static_cast<unsigned char>(c));
    };
    if (i == 0 || i + 1 >= s.size() || !digit(s[i - 1]) || !digit(s[i + 1])) return std::nullopt;
  }
  return out;
}

}  // namespace

std::optional<int64_t> parse_int(std::string_view text, int base) {
  std::string trimmed = strip(text, std::nullopt, true, true);
  std::string_view s = trimmed;
  bool negative = false;
  if (!s.empty() && (s[0] == '+' || s[0] == '-')) {
    negative = s[0] == '-';
    s.remove_prefix(1);
  }
  auto has_prefix = [&](char c) {
    return s.size() >= 2 && s[0] == '0' && (s[1] == c || s[1] == std::toupper(c));
  };
  bool prefixed = false;
  bool base_zero = base == 0;
  if (base == 0) {
    if (has_prefix('x'))
      base = 16, prefixed = true;
    else if (has_prefix('o'))
      base = 8, prefixed = true;
    else if (has_prefix('b'))
      base = 2, prefixed = true;
    else
      base = 10;
  } else if ((base == 16 && has_prefix('x')) || (base == 8 && has_prefix('o')) ||
             (base == 2 && has_prefix('b'))) {
    prefixed = true;
  }
  if (prefixed) {
    s.remove_prefix(2);
    if (!s.empty() && s[0] == '_') s.remove_prefix(1);  // "0x_1f" is allowed
  } else if (base_zero && s.size() > 1 && s[0] == '0' &&
             s.find_first_not_of("0_") != std::string_view::npos) {
    return std::nullopt;  // int("010", 0) is an error; int("010") is 10
  }
  if (base < 2 || base > 36 || s.empty()) return std::nullopt;
  auto digits = strip_underscores(s, base > 10);
  if (!digits || digits->empty()) return std::nullopt;
  uint64_t value = 0;
  for (char c : *digits) {
    int d = std::isdigit(static_cast<unsigned char>(c))   ? c - '0'
            : std::isalpha(static_cast<unsigned char>(c)) ? std::tolower(c) - 'a' + 10
                                                          : 99;
    if (d >= base) return std::nullopt;
    if (value > (UINT64_MAX - static_cast<uint64_t>(d)) / static_cast<uint64_t>(base)) return std::nullopt;
    value = value * static_cast<uint64_t>(base) + static_cast<uint64_t>(d);
  }
  if (negative) {
    if (value > uint64_t{1} << 63) return std::nullopt;
    return static_cast<int64_t>(0 - value);
  }
  if (value > static_cast<uint64_t>(INT64_MAX)) return std::nullopt;
  return static_cast<int64_t>(value);
}

std::optional<double> parse_float(std::string_view text) {
  std::string lowered = lower(strip(text, std::nullopt, true, true));
  std::string_view body = lowered;
  bool negative = false;
  if (!body.empty() && (body[0] == '+' || body[0] == '-')) {
    negative = body[0] == '-';
    body.remove_prefix(1);
  }
  if (body == "inf" || body == "infinity") return negative ? -HUGE_VAL : HUGE_VAL;
  if (body == "nan") return negative ? -NAN : NAN;
  // digits [. digits] [e [sign] digits], with at least one digit in the mantissa.
  size_t i = 0, mant_digits = 0;
  auto digit_run = [&]() {
    size_t start = i;
    while (i < body.size() && (std::isdigit(static_cast<unsigned char>(body[i])) || body[i] == '_')) ++i;
    for (size_t k = start; k < i; ++k) mant_digits += body[k] != '_';
    return i - start;
  };
  digit_run();
  if (i < body.size() && body[i] == '.') {
    ++i;
    digit_run();
  }
  if (mant_digits == 0) return std::nullopt;
  if (i < body.size() && body[i] == 'e') {
    ++i;
    if (i < body.size() && (body[i] == '+' || body[i] == '-')) ++i;
    size_t before = mant_digits;
    if (digit_run() == 0 || mant_digits == before) return std::nullopt;
  }
  if (i != body.size()) return std::nullopt;
  // Underscores only between digits, in every part.
  std::string clean;
  for (size_t k = 0; k < body.size(); ++k) {
    if (body[k] == '_') {
      bool ok = k > 0 && k + 1 < body.size() && std::isdigit(static_cast<unsigned char>(body[k - 1])) &&
                std::isdigit(static_cast<unsigned char>(body[k + 1]));
      if (!ok) return std::nullopt;
      continue;
    }
    clean += body[k];
  }
  double v = std::strtod(clean.c_str(), nullptr);
  return negative ? -v : v;
}

}  // namespace keel::chat::jinja::pystr
