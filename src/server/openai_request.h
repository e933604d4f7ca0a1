// OpenAI request bodies → validated, typed requests. Every malformed field is a 400 ApiError whose `param`
// names it ("messages[1].content[0].type", "temperature"); features keel does not have (n > 1, tool_choice
// response_format json_object/json_schema: it needs constrained decoding) are a clear 400, never silently
// ignored; tool_choice "required" and a named function begin the model's turn with a tool call. Unknown
// fields are ignored, as OpenAI-compatible servers do (clients send `user`, `store`, `metadata`, ...). No
// model, tokenizer or HTTP here.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "server/api_error.h"

namespace keel::server {

// What decides the tokens and how generation ends; shared by chat and text completions.
struct GenerationOptions {
  // Sampling (unset fields take the model's generation_config.json value, then keel's default).
  std::optional<float> temperature;         // ≥ 0; 0: greedy
  std::optional<float> top_p;               // (0, 1]
  std::optional<int32_t> top_k;             // ≥ 0; 0: off (−1 accepted as off, as llama-server)
  std::optional<float> min_p;               // [0, 1]
  std::optional<float> repetition_penalty;  // > 0
  float presence_penalty = 0;               // [−2, 2]
  float frequency_penalty = 0;              // [−2, 2]
  std::optional<uint64_t> seed;
  // logit_bias: token id → bias added to its logit before sampling, in [−100, 100]; −100 bans the token (as
  // OpenAI and llama-server). Ids are checked against the vocabulary when the request is submitted.
  std::vector<std::pair<int32_t, float>> logit_bias;
  // Tokens to generate at most; unset: until the context's end. Larger than the room left is not an error:
  // any value up to 2^63 − 1 is accepted and capped at the context (as llama-server caps n_predict).
  std::optional<int64_t> max_tokens;
  std::vector<std::string> stop;  // stop strings (non-empty), never part of the output
  bool stream = false;
  bool include_usage = false;  // stream_options.include_usage
  bool logprobs = false;
  int top_logprobs = 0;  // 0..20 alternatives per token
};

struct ChatRequest {
  std::string model;  // empty when not given
  // The messages as the template sees them: `content` made a string (text parts joined) or null.
  Json messages = Json::array();
  Json tools;                     // the request's tools array, or null when none were given
  bool parse_tool_calls = false;  // tools given and tool_choice is not "none"
  // tool_choice "required" / a named function (Anthropic: "any" / "tool"): the model's turn begins with a
  // tool call's opening (chat::forced_tool_call_prefix); `forced_tool` names the tool, empty for any of them.
  bool force_tool_call = false;
  std::string forced_tool;
  Json template_kwargs = Json::object();  // chat_template_kwargs
  GenerationOptions gen;
};

struct CompletionRequest {
  std::string model;
  std::string prompt;                                 // a text prompt, or
  std::optional<std::vector<int32_t>> prompt_tokens;  // a prompt given as token ids
  GenerationOptions gen;
};

// Throw ApiError (400) naming the offending field.
ChatRequest parse_chat_request(const Json& body);
CompletionRequest parse_completion_request(const Json& body);

// The body as JSON; malformed JSON is a 400 that says where it broke.
Json parse_json_body(const std::string& body);

}  // namespace keel::server
