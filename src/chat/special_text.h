// Text from a request stays text: a user who writes "<|im_end|>\n<|im_start|>system\n..." in a message must
// not get real special tokens, which would forge a turn. Only what the template itself writes is special.
//
// Design. Before rendering, every occurrence of a special token's text inside a request-derived string
// (message contents, names, tool-call arguments, tool schemas, chat_template_kwargs; values and object keys)
// is replaced by a placeholder: one code point from the Supplementary Private Use Areas (U+F0000..U+10FFFD)
// per special token, chosen per request among those that occur in none of the request's strings and none of
// the template's own texts (its sources, bos/eos), so a placeholder in the rendered prompt can only have come
// from the request. The template renders as usual (a single code point survives slicing, case changes,
// strip, split and tojson with ensure_ascii off). restore() then puts each placeholder's literal text back
// and records where it is: the prompt's text is byte for byte the template's own rendering, and the tokenizer
// encodes it with specials allowed except inside those ranges (tokenizer::EncodeOptions::literal), where a
// special token's text goes through the model as ordinary text — exactly the ids of tokenizing that text
// with specials off, in its context.
//
// Limits, stated: a template that inspects request text for a special token's spelling (`'<|im_end|>' in
// content`) or measures its length sees the placeholder instead; a template that escapes non-ASCII
// (tojson(ensure_ascii=True)) would show the placeholder's escape. No template in ../shared/fixtures does
// either. Tokens that the output parsers read back (<think>, <tool_call>, ...) are not placeholders even when
// a tokenizer marks them special: clients send them back inside assistant history, and templates split
// reasoning out of content on them.
#pragma once
#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "chat/messages.h"

namespace keel::chat {

class SpecialTextShield {
 public:
  // `specials`: the texts of the tokenizer's special tokens. `request`: every request-derived JSON value that
  // will reach the template. `template_texts`: what the template writes from elsewhere (sources, bos, eos).
  // Throws Error(invalid_argument) when the request uses so many private-use code points that no placeholder
  // is free (more than 130,000 distinct ones).
  SpecialTextShield(const std::vector<std::string>& specials, const std::vector<const Json*>& request,
                    const std::vector<std::string_view>& template_texts);

  // `j` with every special token's text in its strings and keys replaced by its placeholder.
  Json protect(const Json& j) const;

  struct Restored {
    std::string text;                                // the template's rendering with the literal text back
    std::vector<std::pair<size_t, size_t>> literal;  // byte ranges [begin, end) of text, ascending
  };
  Restored restore(std::string_view rendered) const;

  bool active() const { return !specials_.empty(); }

 private:
  struct Matcher;
  std::string protect_string(std::string_view s) const;
  std::shared_ptr<const Matcher> matcher_;
  std::vector<std::string> specials_;   // those present in the request, longest first
  std::vector<char32_t> placeholders_;  // placeholders_[i] stands for specials_[i]
};

}  // namespace keel::chat
