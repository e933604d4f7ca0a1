// tokenizer.json "post_processor" for a single sequence: TemplateProcessing, BertProcessing,
// RobertaProcessing, ByteLevel (no change to ids) and Sequence. Used only when encode is asked to add special
// tokens.
#pragma once
#include <string>
#include <vector>

#include "tokenizer/bpe.h"
#include "tokenizer/json_fields.h"

namespace keel::tokenizer {

class PostProcessor {
 public:
  PostProcessor() = default;  // adds nothing
  static PostProcessor from_json(const json& j, const std::string& where);
  std::vector<TokenId> apply(std::vector<TokenId> ids) const;

 private:
  // The single-sequence template: ids to emit, with kSequence standing for the encoded text.
  static constexpr TokenId kSequence = -1;
  static void parse_into(const json& j, const std::string& where,
                         std::vector<std::vector<TokenId>>& templates, int depth = 0);
  std::vector<std::vector<TokenId>> templates_;  // applied in order (Sequence)
};

}  // namespace keel::tokenizer
