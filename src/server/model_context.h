// What the server needs from a loaded model, and the step from a validated request to engine input: render
// the chat template, tokenize, choose the output parser, resolve the stop tokens. `keel serve` builds the
// ModelContext (load, pool, engine); the server only borrows it.
#pragma once
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "chat/chat_template.h"
#include "chat/parsers/output_parser.h"
#include "engine/engine.h"
#include "server/generation.h"
#include "server/openai_request.h"
#include "server/request_memory.h"
#include "tokenizer/tokenizer.h"

namespace keel::server {

// Builds a request's TokenChooser from its sampling fields (unset ones take the model's defaults).
using ChooserFactory = std::function<std::unique_ptr<TokenChooser>(const GenerationOptions&)>;

struct ModelContext {
  Engine* engine = nullptr;
  const tokenizer::Tokenizer* tokenizer = nullptr;
  const chat::ChatTemplate* chat_template = nullptr;  // nullptr: /v1/chat/completions answers 400
  chat::OutputFormat output_format;  // the template's reasoning and tool-call syntax (detect_output_format)
  std::string model_id;              // what /v1/models lists (--alias, else the model folder's name)
  int64_t context_tokens = 0;        // tokens one sequence may hold: min(--ctx-size, the model's own limit)
  std::vector<int32_t> eos_tokens;   // end-of-generation ids (config.json, generation_config.json, tokenizer)
  ChooserFactory make_chooser;
  // The engine keeps prompt checkpoints (keeps_prompt_checkpoints): chat prompts then carry their message
  // boundaries, found by rendering two more times. Other models can cut a cached state back anywhere.
  bool message_checkpoints = false;
  // The request budget (request_memory.h) every generation and tokenize request acquires before it parses
  // its body; nullptr: not counted (tests that build a context by hand).
  RequestMemory* request_memory = nullptr;
};

// A request's hold on the request budget while it is parsed, rendered and tokenized. After preparation the
// hold shrinks to what stays (the body the transport keeps and the token ids), and a large body's freed
// heap goes back to the OS.
class RequestHold {
 public:
  RequestHold(const ModelContext& ctx, int64_t body_bytes);
  ~RequestHold();  // a large body's freed heap goes back to the OS, whatever the outcome
  RequestHold(const RequestHold&) = delete;
  RequestHold& operator=(const RequestHold&) = delete;
  void prepared(int64_t prompt_tokens);

 private:
  RequestMemory::Ticket ticket_;
  int64_t body_bytes_;
};

// A request ready for the engine.
struct PreparedPrompt {
  std::vector<int32_t> tokens;
  // Chat, when ModelContext::message_checkpoints: where the last message starts and where the conversation
  // ends before the generation prompt (token positions, ascending). The engine checkpoints recurrent states
  // there, since the next turn's rendering (which may drop this turn's reasoning) shares the prompt up to
  // them.
  std::vector<int64_t> message_boundaries;
  std::optional<chat::ParserOptions> parser;  // chat only
  TextOptions text;
};

// Throws ApiError: 400 for a template that rejects the conversation (its own message) or a prompt the
// tokenizer refuses (invalid UTF-8), 400 naming "model" for an unknown model name.
PreparedPrompt prepare_chat(const ModelContext& ctx, const ChatRequest& request);
PreparedPrompt prepare_completion(const ModelContext& ctx, const CompletionRequest& request);

// The model name check shared by both: empty, the served id, or the model folder's id are accepted.
void check_model_name(const ModelContext& ctx, const std::string& requested);

// Builds the engine Request for a prepared prompt and submits it; the engine answers through `sink`.
// Throws ApiError 400 context_length_exceeded (with both token counts) for a prompt that can never fit.
struct Submitted {
  std::shared_ptr<GenerationSink> sink;
  std::shared_ptr<std::atomic<bool>> cancelled;
};
// Throws ApiError 400 naming logit_bias.<id> for a biased token id outside the model's vocabulary.
void check_logit_bias(const ModelContext& ctx, const GenerationOptions& gen);
Submitted submit_generation(const ModelContext& ctx, PreparedPrompt& prompt, const GenerationOptions& gen,
                            const char* prompt_param);

}  // namespace keel::server
