#include "server/model_context.h"

#include <algorithm>
#include <array>
#include <string_view>

#include "chat/jinja/errors.h"
#include "chat/special_text.h"

namespace keel::server {

namespace {

// The output parser's markers. When a tokenizer makes one of them a special token, its text must stay in the
// output for the parser to see (llama-server's "preserved tokens"); other special tokens are dropped.
constexpr std::array<std::string_view, 6> kParserMarkers = {"<think>",      "</think>",   "<tool_call>",
                                                            "</tool_call>", "<TOOLCALL>", "</TOOLCALL>"};

std::vector<int32_t> shown_special_tokens(const tokenizer::Tokenizer& tok) {
  std::vector<int32_t> ids;
  for (std::string_view m : kParserMarkers) {
    if (auto id = tok.token_to_id(m); id && tok.is_special(*id)) ids.push_back(*id);
  }
  return ids;
}

TextOptions text_options(const ModelContext& ctx, const GenerationOptions& gen) {
  TextOptions t;
  t.tokenizer = ctx.tokenizer;
  t.stop_strings = gen.stop;
  t.stop_tokens = ctx.eos_tokens;
  t.shown_special_tokens = shown_special_tokens(*ctx.tokenizer);
  return t;
}

std::vector<int32_t> encode(const ModelContext& ctx, const std::string& text, bool add_special,
                            const char* param) {
  try {
    return ctx.tokenizer->encode(text, {.allow_special = true, .add_special_tokens = add_special});
  } catch (const Error& e) {
    throw ApiError(400, "invalid_value", fmt::format("the prompt cannot be tokenized: {}", e.what()), param);
  }
}

// The special tokens whose text a request may not turn into the tokens themselves: every added token marked
// special, except the output parser's markers (clients send those back in assistant history, and templates
// split reasoning out of content on them).
std::vector<std::string> guarded_special_texts(const tokenizer::Tokenizer& tok) {
  std::vector<std::string> out;
  for (const tokenizer::AddedToken& t : tok.added_tokens())
    if (t.special &&
        std::find(kParserMarkers.begin(), kParserMarkers.end(), t.content) == kParserMarkers.end())
      out.push_back(t.content);
  return out;
}

// The shield for this request (chat::SpecialTextShield) and `in` with its request-derived strings protected.
chat::SpecialTextShield shield_inputs(const ModelContext& ctx, chat::ChatInputs& in) {
  std::vector<std::string_view> own(ctx.chat_template->own_texts().begin(),
                                    ctx.chat_template->own_texts().end());
  chat::SpecialTextShield shield(guarded_special_texts(*ctx.tokenizer), {&in.messages, &in.tools, &in.extra},
                                 own);
  if (shield.active()) {
    in.messages = shield.protect(in.messages);
    in.tools = shield.protect(in.tools);
    in.extra = shield.protect(in.extra);
  }
  return shield;
}

// A rendering of protected inputs → ids: the template's special tokens are tokens, the request's text is
// text.
std::vector<int32_t> encode_rendered(const ModelContext& ctx, const chat::SpecialTextShield::Restored& r) {
  return ctx.tokenizer->encode(r.text,
                               {.allow_special = true, .add_special_tokens = false, .literal = r.literal});
}

// The length of the prefix `prompt` shares with the rendering of `in`, or 0 when the template refuses `in`
// (some insist on a user message last) or nothing is shared.
int64_t shared_prefix(const ModelContext& ctx, const chat::ChatInputs& in,
                      const chat::SpecialTextShield& shield, const std::vector<int32_t>& prompt) {
  std::vector<int32_t> ids;
  try {
    ids = encode_rendered(ctx, shield.restore(ctx.chat_template->render(in)));
  } catch (const std::exception&) {
    return 0;
  }
  const size_t n = std::min(ids.size(), prompt.size());
  size_t k = 0;
  while (k < n && ids[k] == prompt[k]) ++k;
  return static_cast<int64_t>(k);
}

// See PreparedPrompt::message_boundaries: two more renderings, the messages before the last one and all of
// them, neither with the generation prompt.
std::vector<int64_t> message_boundaries(const ModelContext& ctx, const chat::ChatInputs& in,
                                        const chat::SpecialTextShield& shield,
                                        const std::vector<int32_t>& prompt) {
  std::vector<int64_t> at;
  chat::ChatInputs part = in;
  part.add_generation_prompt = false;
  if (in.messages.is_array() && in.messages.size() >= 2) {
    part.messages = Json(std::vector<Json>(in.messages.begin(), in.messages.end() - 1));
    at.push_back(shared_prefix(ctx, part, shield, prompt));
    part.messages = in.messages;
  }
  at.push_back(shared_prefix(ctx, part, shield, prompt));
  std::sort(at.begin(), at.end());
  at.erase(std::unique(at.begin(), at.end()), at.end());
  std::erase_if(at, [&](int64_t k) { return k <= 0 || k >= static_cast<int64_t>(prompt.size()) - 1; });
  return at;
}

}  // namespace

void check_model_name(const ModelContext& ctx, const std::string& requested) {
  if (requested.empty() || requested == ctx.model_id) return;
  throw ApiError(
      400, "model_not_found",
      fmt::format("the model '{}' is not served here; this server serves '{}'", requested, ctx.model_id),
      "model");
}

// Bodies from this size up return their freed heap to the OS when they are done: each request worker's
// malloc arena would otherwise keep its peak, and 16 workers' peaks add up far above the request budget.
constexpr int64_t kTrimAfterBodyBytes = int64_t{64} << 10;

RequestHold::RequestHold(const ModelContext& ctx, int64_t body_bytes) : body_bytes_(body_bytes) {
  if (ctx.request_memory) ticket_ = ctx.request_memory->acquire(body_bytes);
}

void RequestHold::prepared(int64_t prompt_tokens) {
  ticket_.shrink_to(body_bytes_ + prompt_tokens * static_cast<int64_t>(sizeof(int32_t)));
  if (body_bytes_ >= kTrimAfterBodyBytes) return_memory_to_os();
}

RequestHold::~RequestHold() {
  ticket_.release();
  if (body_bytes_ >= kTrimAfterBodyBytes) return_memory_to_os();
}

PreparedPrompt prepare_chat(const ModelContext& ctx, const ChatRequest& request) {
  check_model_name(ctx, request.model);
  if (!ctx.chat_template)
    throw ApiError(
        400, "unsupported",
        "this model has no chat template: use /v1/completions, or start keel with --chat-template FILE",
        "messages");
  chat::ChatInputs in;
  in.messages = ctx.chat_template->prepare_messages(request.messages);
  in.tools = request.tools;
  in.add_generation_prompt = true;
  in.extra = request.template_kwargs;
  chat::SpecialTextShield shield = shield_inputs(ctx, in);
  chat::SpecialTextShield::Restored rendered;
  try {
    rendered = shield.restore(ctx.chat_template->render(in));
  } catch (const chat::jinja::TemplateRaisedError& e) {
    throw ApiError(400, "invalid_value",
                   fmt::format("the chat template rejected the conversation: {}", e.what()), "messages");
  } catch (const Error& e) {
    throw ApiError(400, "invalid_value",
                   fmt::format("the chat template failed on this conversation: {}", e.what()), "messages");
  }
  // A forced tool call: the model's turn begins with the call's opening, which the parser reads first.
  std::string forced;
  if (request.force_tool_call && request.parse_tool_calls) {
    if (ctx.output_format.tools == chat::ToolSyntax::none)
      throw ApiError(400, "unsupported",
                     "tool_choice forces a tool call, but this model's chat template writes no tool-call "
                     "syntax keel reads",
                     "tool_choice");
    const bool inside_reasoning =
        chat::reasoning_start_from_prompt(ctx.output_format, rendered.text) == chat::ReasoningStart::open;
    forced = chat::forced_tool_call_prefix(ctx.output_format.tools, request.forced_tool, inside_reasoning);
  }
  PreparedPrompt p;
  // The template writes its own BOS. The forced opening is the model's own text (after every literal range).
  const std::string prompt_text = rendered.text;
  rendered.text += forced;
  try {
    p.tokens = encode_rendered(ctx, rendered);
  } catch (const Error& e) {
    throw ApiError(400, "invalid_value", fmt::format("the prompt cannot be tokenized: {}", e.what()),
                   "messages");
  }
  if (ctx.message_checkpoints) p.message_boundaries = message_boundaries(ctx, in, shield, p.tokens);
  p.parser = chat::make_parser_options(ctx.output_format, prompt_text, request.tools,
                                       request.parse_tool_calls, forced);
  p.text = text_options(ctx, request.gen);
  return p;
}

PreparedPrompt prepare_completion(const ModelContext& ctx, const CompletionRequest& request) {
  check_model_name(ctx, request.model);
  PreparedPrompt p;
  if (request.prompt_tokens) {
    int64_t vocab = ctx.engine->model().vocab_size();
    for (size_t i = 0; i < request.prompt_tokens->size(); ++i) {
      if ((*request.prompt_tokens)[i] >= vocab)
        throw_invalid(fmt::format("prompt[{}]", i), "'prompt[{}]' is {}, outside the vocabulary (size {})", i,
                      (*request.prompt_tokens)[i], vocab);
    }
    p.tokens = *request.prompt_tokens;
  } else {
    p.tokens = encode(ctx, request.prompt, /*add_special=*/true, "prompt");
  }
  p.text = text_options(ctx, request.gen);
  return p;
}

void check_logit_bias(const ModelContext& ctx, const GenerationOptions& gen) {
  if (gen.logit_bias.empty()) return;
  const int64_t vocab = ctx.engine->model().vocab_size();
  for (const auto& [id, bias] : gen.logit_bias)
    if (id >= vocab)
      throw_invalid(fmt::format("logit_bias.{}", id),
                    "'logit_bias' names token {}, outside the vocabulary (size {})", id, vocab);
}

Submitted submit_generation(const ModelContext& ctx, PreparedPrompt& prompt, const GenerationOptions& gen,
                            const char* prompt_param) {
  if (prompt.tokens.empty()) throw_invalid(prompt_param, "the prompt is empty after tokenization");
  check_logit_bias(ctx, gen);
  Request r;
  r.prompt = prompt.tokens;
  r.checkpoints = prompt.message_boundaries;
  // No max_tokens: until the context ends. A larger one is capped by the scheduler at the context (length).
  // Capped here, so no size computed from it (prompt + max_tokens) can overflow.
  r.max_new_tokens = std::min(gen.max_tokens.value_or(ctx.context_tokens), ctx.context_tokens);
  r.stop_tokens = ctx.eos_tokens;
  r.chooser = ctx.make_chooser(gen);
  auto sink = std::make_shared<GenerationSink>(prompt.text);
  r.sink = sink;
  Submitted s{sink, r.cancelled};
  try {
    ctx.engine->submit(std::move(r));
  } catch (const Error& e) {
    ApiError a = api_error_from(e);
    if (e.code() == ErrorCode::context_length_exceeded)
      throw ApiError(
          400, "context_length_exceeded",
          fmt::format("this model's context is {} tokens per request; {}", ctx.context_tokens, e.what()),
          prompt_param);
    throw a;
  }
  return s;
}

}  // namespace keel::server
