#include "chat/special_text.h"

#include <algorithm>
#include <array>
#include <unordered_map>
#include <unordered_set>

#include "core/error.h"

namespace keel::chat {

namespace {

constexpr char32_t kFirstPlaceholder = 0xF0000;  // Supplementary Private Use Area-A, then -B
constexpr char32_t kLastPlaceholder = 0x10FFFD;
constexpr int kMaxWalkDepth = 1024;  // request JSON is bounded far below this (kMaxJsonDepth)

std::string utf8(char32_t cp) {  // cp ≥ U+10000: four bytes
  std::string s(4, '\0');
  s[0] = static_cast<char>(0xF0 | (cp >> 18));
  s[1] = static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
  s[2] = static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
  s[3] = static_cast<char>(0x80 | (cp & 0x3F));
  return s;
}

// The code point of a well-formed four-byte sequence at s[i] in the private-use planes (lead byte F3 B0..
// F4 8F), else 0.
char32_t private_use_at(std::string_view s, size_t i) {
  if (i + 4 > s.size()) return 0;
  const auto b0 = static_cast<uint8_t>(s[i]);
  if (b0 != 0xF3 && b0 != 0xF4) return 0;
  const auto b1 = static_cast<uint8_t>(s[i + 1]), b2 = static_cast<uint8_t>(s[i + 2]),
             b3 = static_cast<uint8_t>(s[i + 3]);
  if ((b1 & 0xC0) != 0x80 || (b2 & 0xC0) != 0x80 || (b3 & 0xC0) != 0x80) return 0;
  const char32_t cp = (char32_t(b0 & 0x07) << 18) | (char32_t(b1 & 0x3F) << 12) | (char32_t(b2 & 0x3F) << 6) |
                      char32_t(b3 & 0x3F);
  return cp >= kFirstPlaceholder && cp <= kLastPlaceholder ? cp : 0;
}

void collect_private_use(std::string_view s, std::unordered_set<char32_t>& used) {
  for (size_t i = 0; i + 4 <= s.size(); ++i)
    if (char32_t cp = private_use_at(s, i)) used.insert(cp);
}

template <typename F>
void for_each_string(const Json& j, F&& f, int depth = 0) {
  if (depth > kMaxWalkDepth) throw_error(ErrorCode::invalid_argument, "the request nests too deeply");
  if (j.is_string()) {
    f(j.get_ref<const std::string&>());
  } else if (j.is_array()) {
    for (const Json& v : j) for_each_string(v, f, depth + 1);
  } else if (j.is_object()) {
    for (const auto& [k, v] : j.items()) {
      f(k);
      for_each_string(v, f, depth + 1);
    }
  }
}

}  // namespace

// Leftmost-longest matching over a few token texts: the candidates for each first byte, longest first.
struct SpecialTextShield::Matcher {
  std::array<std::vector<size_t>, 256> by_first_byte;
  std::vector<std::string> texts;
  explicit Matcher(const std::vector<std::string>& t) : texts(t) {
    for (size_t i = 0; i < t.size(); ++i) by_first_byte[static_cast<uint8_t>(t[i][0])].push_back(i);
    for (auto& v : by_first_byte)
      std::stable_sort(v.begin(), v.end(), [&](size_t a, size_t b) { return t[a].size() > t[b].size(); });
  }
  // The index of the longest text starting at s[i], or -1.
  int64_t at(std::string_view s, size_t i) const {
    for (size_t k : by_first_byte[static_cast<uint8_t>(s[i])])
      if (s.substr(i).starts_with(texts[k])) return static_cast<int64_t>(k);
    return -1;
  }
};

SpecialTextShield::SpecialTextShield(const std::vector<std::string>& specials,
                                     const std::vector<const Json*>& request,
                                     const std::vector<std::string_view>& template_texts) {
  std::vector<std::string> all;
  for (const std::string& s : specials)
    if (!s.empty()) all.push_back(s);
  if (all.empty()) return;
  Matcher m(all);
  std::vector<bool> present(all.size(), false);
  std::unordered_set<char32_t> used;
  for (const Json* j : request) {
    if (!j) continue;
    for_each_string(*j, [&](std::string_view s) {
      collect_private_use(s, used);
      for (size_t i = 0; i < s.size(); ++i)
        if (int64_t k = m.at(s, i); k >= 0) present[static_cast<size_t>(k)] = true;
    });
  }
  for (size_t k = 0; k < all.size(); ++k)
    if (present[k]) specials_.push_back(all[k]);
  if (specials_.empty()) return;
  matcher_ = std::make_shared<const Matcher>(specials_);
  for (std::string_view t : template_texts) collect_private_use(t, used);
  char32_t cp = kFirstPlaceholder;
  for (size_t k = 0; k < specials_.size(); ++k) {
    while (cp <= kLastPlaceholder && (used.count(cp) || (cp & 0xFFFE) == 0xFFFE)) ++cp;  // skip noncharacters
    if (cp > kLastPlaceholder)
      throw_error(
          ErrorCode::invalid_argument,
          "the request uses every private-use code point; no placeholder is free for its special-token text");
    placeholders_.push_back(cp++);
  }
}

std::string SpecialTextShield::protect_string(std::string_view s) const {
  const Matcher& m = *matcher_;
  std::string out;
  size_t copied = 0;
  for (size_t i = 0; i < s.size();) {
    int64_t k = m.at(s, i);
    if (k < 0) {
      ++i;
      continue;
    }
    out.append(s.substr(copied, i - copied));
    out += utf8(placeholders_[static_cast<size_t>(k)]);
    i += specials_[static_cast<size_t>(k)].size();
    copied = i;
  }
  if (copied == 0) return std::string(s);
  out.append(s.substr(copied));
  return out;
}

Json SpecialTextShield::protect(const Json& j) const {
  if (!active()) return j;
  // An iterative copy would be longer; the depth is bounded (kMaxWalkDepth, and the body's own bound).
  struct Walk {
    const SpecialTextShield& self;
    Json operator()(const Json& v, int depth) const {
      if (depth > kMaxWalkDepth) throw_error(ErrorCode::invalid_argument, "the request nests too deeply");
      if (v.is_string()) return self.protect_string(v.get_ref<const std::string&>());
      if (v.is_array()) {
        Json out = Json::array();
        for (const Json& e : v) out.push_back((*this)(e, depth + 1));
        return out;
      }
      if (v.is_object()) {
        Json out = Json::object();
        for (const auto& [k, e] : v.items()) out[self.protect_string(k)] = (*this)(e, depth + 1);
        return out;
      }
      return v;
    }
  };
  return Walk{*this}(j, 0);
}

SpecialTextShield::Restored SpecialTextShield::restore(std::string_view rendered) const {
  Restored r;
  if (!active()) {
    r.text = rendered;
    return r;
  }
  std::unordered_map<char32_t, size_t> index;
  for (size_t k = 0; k < placeholders_.size(); ++k) index[placeholders_[k]] = k;
  r.text.reserve(rendered.size());
  size_t copied = 0;
  for (size_t i = 0; i + 4 <= rendered.size();) {
    char32_t cp = private_use_at(rendered, i);
    auto it = cp ? index.find(cp) : index.end();
    if (it == index.end()) {
      ++i;
      continue;
    }
    r.text.append(rendered.substr(copied, i - copied));
    const size_t begin = r.text.size();
    r.text += specials_[it->second];
    if (!r.literal.empty() && r.literal.back().second == begin)
      r.literal.back().second = r.text.size();
    else
      r.literal.emplace_back(begin, r.text.size());
    i += 4;
    copied = i;
  }
  r.text.append(rendered.substr(copied));
  return r;
}

}  // namespace keel::chat
