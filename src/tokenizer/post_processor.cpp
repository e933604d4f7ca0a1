#include "tokenizer/post_processor.h"

#include "core/error.h"

namespace keel::tokenizer {

PostProcessor PostProcessor::from_json(const json& j, const std::string& where) {
  PostProcessor p;
  if (!j.is_null()) parse_into(j, where, p.templates_);
  return p;
}

// ["[CLS]", 101] → 101
static TokenId pair_id(const json& obj, const char* key, const std::string& where) {
  const json& v = json_required(obj, key, where);
  if (!v.is_array() || v.size() != 2 || !v[1].is_number_integer())
    throw_error(ErrorCode::invalid_file, "{}.{}: expected [\"token\", id], got {}", where, key,
                json_preview(v));
  return v[1].get<TokenId>();
}

void PostProcessor::parse_into(const json& j, const std::string& where,
                               std::vector<std::vector<TokenId>>& templates, int depth) {
  check_nesting(depth, where);
  const std::string type = json_type(j, where);
  if (type == "Sequence") {
    const json& list = json_required(j, "processors", where);
    if (!list.is_array()) throw_error(ErrorCode::invalid_file, "{}.processors: expected an array", where);
    for (size_t i = 0; i < list.size(); ++i)
      parse_into(list[i], where + ".processors[" + std::to_string(i) + "]", templates, depth + 1);
  } else if (type == "ByteLevel") {
    // Offsets only.
  } else if (type == "BertProcessing" || type == "RobertaProcessing") {
    templates.push_back({pair_id(j, "cls", where), kSequence, pair_id(j, "sep", where)});
  } else if (type == "TemplateProcessing") {
    const json& single = json_required(j, "single", where);
    const json& specials = json_required(j, "special_tokens", where);
    if (!single.is_array()) throw_error(ErrorCode::invalid_file, "{}.single: expected an array", where);
    std::vector<TokenId> t;
    for (size_t i = 0; i < single.size(); ++i) {
      const std::string w = where + ".single[" + std::to_string(i) + "]";
      const json& item = single[i];
      if (item.is_object() && item.contains("Sequence")) {
        t.push_back(kSequence);
      } else if (item.is_object() && item.contains("SpecialToken")) {
        const std::string name = json_string(item["SpecialToken"], "id", w + ".SpecialToken");
        if (!specials.is_object() || !specials.contains(name))
          throw_error(ErrorCode::invalid_file, "{}: special token \"{}\" is not in {}.special_tokens", w,
                      name, where);
        const json& ids = json_required(specials[name], "ids", where + ".special_tokens." + name);
        if (!ids.is_array())
          throw_error(ErrorCode::invalid_file, "{}.special_tokens.{}.ids: expected an array", where, name);
        for (const json& id : ids) {
          if (!id.is_number_integer())
            throw_error(ErrorCode::invalid_file, "{}.special_tokens.{}.ids: expected integers", where, name);
          t.push_back(id.get<TokenId>());
        }
      } else {
        throw_error(ErrorCode::invalid_file,
                    "{}: expected {{\"Sequence\": ...}} or {{\"SpecialToken\": ...}}", w);
      }
    }
    templates.push_back(std::move(t));
  } else {
    throw_error(
        ErrorCode::unsupported,
        "{}: post-processor type \"{}\" is not supported (keel reads TemplateProcessing, BertProcessing, "
        "RobertaProcessing, ByteLevel, Sequence)",
        where, type);
  }
}

std::vector<TokenId> PostProcessor::apply(std::vector<TokenId> ids) const {
  for (const auto& t : templates_) {
    std::vector<TokenId> out;
    out.reserve(ids.size() + t.size());
    for (TokenId id : t) {
      if (id == kSequence)
        out.insert(out.end(), ids.begin(), ids.end());
      else
        out.push_back(id);
    }
    ids = std::move(out);
  }
  return ids;
}

}  // namespace keel::tokenizer
