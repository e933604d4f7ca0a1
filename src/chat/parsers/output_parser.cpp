// OutputParser: construction, the feed/finish loop, events, and the content and reasoning states. The
// tool-call states are in output_parser_calls.cpp.
#include "chat/parsers/output_parser.h"

#include "chat/parsers/marker_scan.h"
#include "core/error.h"

namespace keel::chat {

using namespace markers;

namespace {

constexpr std::string_view kThinkOpen = "<think>";
constexpr std::string_view kThinkClose = "</think>";

}  // namespace

Json FinalMessage::to_json() const {
  Json msg = Json::object();
  msg["role"] = "assistant";
  msg["content"] = content.empty() && has_tool_calls() ? Json(nullptr) : Json(content);
  if (!reasoning_content.empty()) msg["reasoning_content"] = reasoning_content;
  if (has_tool_calls()) {
    Json calls = Json::array();
    for (const ToolCall& call : tool_calls) {
      calls.push_back({{"id", call.id},
                       {"type", "function"},
                       {"function", {{"name", call.name}, {"arguments", call.arguments}}}});
    }
    msg["tool_calls"] = std::move(calls);
  }
  return msg;
}

ParserOptions make_parser_options(const OutputFormat& format, std::string_view rendered_prompt,
                                  const Json& request_tools, bool parse_tool_calls,
                                  std::string forced_prefix) {
  ParserOptions options;
  bool has_tools = request_tools.is_array() && !request_tools.empty();
  options.tools = parse_tool_calls && has_tools ? format.tools : ToolSyntax::none;
  options.reasoning = reasoning_start_from_prompt(format, rendered_prompt);
  if (options.tools != ToolSyntax::none) options.schemas = ToolSchemas(request_tools);
  options.forced_prefix = std::move(forced_prefix);
  return options;
}

OutputParser::OutputParser(ParserOptions options)
    : options_(std::move(options)), id_rng_(options_.id_seed ? *options_.id_seed : std::random_device{}()) {
  if (options_.reasoning == ReasoningStart::open) {
    mode_ = Mode::reasoning;
    reasoning_seen_ = true;
    reasoning_lead_ = true;
  }
  if (!options_.forced_prefix.empty()) {  // its events stay in out_ for the first feed() or finish()
    buf_.append(options_.forced_prefix);
    while (step(false)) {
    }
  }
}

std::vector<OutputEvent> OutputParser::feed(std::string_view delta) {
  if (finished_) throw_error(ErrorCode::internal, "OutputParser::feed called after finish()");
  buf_.append(delta);
  while (step(false)) {
  }
  return std::move(out_);
}

std::vector<OutputEvent> OutputParser::finish() {
  if (finished_) throw_error(ErrorCode::internal, "OutputParser::finish called twice");
  finished_ = true;
  while (step(true)) {
  }
  KEEL_CHECK(buf_.empty(), "output parser left {} bytes undecided at finish (mode {})", buf_.size(),
             static_cast<int>(mode_));
  return std::move(out_);
}

bool OutputParser::step(bool at_end) {
  switch (mode_) {
    case Mode::content:
      return step_content(at_end);
    case Mode::reasoning:
      return step_reasoning(at_end);
    case Mode::call_open:
      return step_call_open(at_end);
    case Mode::json_body:
      return step_json_body(at_end);
    case Mode::xml_name:
      return step_xml_name(at_end);
    case Mode::xml_body:
      return step_xml_body(at_end);
    case Mode::xml_param_name:
      return step_xml_param_name(at_end);
    case Mode::xml_param_value:
      return step_xml_param_value(at_end);
    case Mode::after_call:
      return step_after_call(at_end);
    case Mode::raw_block:
      return step_raw_block(at_end);
    case Mode::skip_block:
      return step_skip_block(at_end);
  }
  return false;
}

std::vector<std::string_view> OutputParser::block_open_markers() const {
  switch (options_.tools) {
    case ToolSyntax::none:
      return {};
    case ToolSyntax::hermes_json:
    case ToolSyntax::qwen3_xml:
      return {"<tool_call>"};
    case ToolSyntax::nemotron_json:
      return {"<TOOLCALL>"};
  }
  return {};
}

std::vector<std::string_view> OutputParser::content_markers() const {
  std::vector<std::string_view> list = block_open_markers();
  if (options_.tools == ToolSyntax::qwen3_xml)
    list.push_back("<function=");  // models sometimes skip <tool_call>
  return list;
}

void OutputParser::enter_content(Lead lead) {
  mode_ = Mode::content;
  lead_ = lead;
}

bool OutputParser::step_content(bool at_end) {
  if (buf_.empty()) return false;
  std::vector<std::string_view> markers = content_markers();
  bool think_allowed =
      options_.reasoning == ReasoningStart::optional && !reasoning_seen_ && !content_started_;
  if (think_allowed) markers.push_back(kThinkOpen);

  if (lead_ != Lead::keep) {
    size_t i = first_non_space_in_buf();
    if (i == npos) {
      if (!at_end) return false;
      drop_front(buf_.size());  // whitespace before the end of the output or of the segment
      return false;
    }
    if (lead_ == Lead::hold) {
      Match m = match_any_at(buf_, i, markers);
      if (m == Match::partial && !at_end) return false;
      if (m != Match::full) {
        lead_ = Lead::keep;
        return true;
      }
    }
    drop_front(i);
    lead_ = Lead::keep;
    return true;
  }

  if (think_allowed && match_at(buf_, 0, kThinkOpen) == Match::full) {
    drop_front(kThinkOpen.size());
    mode_ = Mode::reasoning;
    reasoning_seen_ = true;
    reasoning_lead_ = true;
    return true;
  }
  if (think_allowed) markers.pop_back();  // a <think> after other content is plain text
  Found found = find_first(buf_, markers);
  if (found.pos != npos) {
    emit_content(std::string_view(buf_).substr(0, found.pos));
    drop_front(found.pos + found.marker.size());
    open_block(found.marker);
    return true;
  }
  size_t hold = 0;
  if (!at_end) {
    hold = partial_marker_suffix(buf_, markers);
    if (think_allowed && match_at(buf_, 0, kThinkOpen) == Match::partial) hold = buf_.size();
  }
  if (hold == buf_.size()) return false;
  emit_content(std::string_view(buf_).substr(0, buf_.size() - hold));
  drop_front(buf_.size() - hold);
  return false;
}

bool OutputParser::step_reasoning(bool at_end) {
  if (reasoning_lead_) {
    size_t i = first_non_space_in_buf();
    if (i == npos) {
      if (at_end) drop_front(buf_.size());
      return false;
    }
    drop_front(i);
    Match m = match_at(buf_, 0, kThinkOpen);  // a redundant <think> after a prompt that opened the block
    if (m == Match::partial && !at_end) return false;
    if (m == Match::full) {
      drop_front(kThinkOpen.size());
      return true;
    }
    reasoning_lead_ = false;
  }
  if (buf_.empty()) return false;
  std::vector<std::string_view> ends = block_open_markers();
  ends.push_back(kThinkClose);
  size_t leading = first_non_space_in_buf();  // markers start with '<': none inside leading whitespace
  if (leading == npos && !at_end) return false;
  Found found = find_first(buf_, ends, leading == npos ? buf_.size() : leading);
  if (found.pos != npos) {
    std::string_view text = std::string_view(buf_).substr(0, found.pos);
    emit_reasoning(text.substr(0, text.size() - trailing_space(text)));
    if (found.marker == kThinkClose) {
      drop_front(found.pos + found.marker.size());
      enter_content(Lead::drop);
    } else {
      drop_front(found.pos);  // the tool-call block is content: the content state opens it
      enter_content(Lead::keep);
    }
    return true;
  }
  if (at_end) {
    emit_reasoning(std::string_view(buf_).substr(0, buf_.size() - trailing_space(buf_)));
    drop_front(buf_.size());
    return false;
  }
  size_t hold = partial_marker_suffix(buf_, ends);
  size_t kept = buf_.size() - hold;
  if (leading >= kept) {  // a long whitespace run is scanned once, not on every delta
    hold = buf_.size();
  } else {
    hold += trailing_space(std::string_view(buf_).substr(0, kept));
  }
  if (hold == buf_.size()) return false;
  emit_reasoning(std::string_view(buf_).substr(0, buf_.size() - hold));
  drop_front(buf_.size() - hold);
  return false;
}

std::string OutputParser::new_call_id() {
  static constexpr std::string_view kAlphabet =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
  std::string id = "call_";
  std::uniform_int_distribution<size_t> pick(0, kAlphabet.size() - 1);
  for (int i = 0; i < 24; ++i) id += kAlphabet[pick(id_rng_)];
  return id;
}

void OutputParser::push(OutputEvent::Kind kind, std::string_view text) {
  int index = kind == OutputEvent::Kind::tool_call_arguments ? call_index_ : -1;
  if (!out_.empty() && out_.back().kind == kind && out_.back().tool_index == index) {
    out_.back().text.append(text);
    return;
  }
  OutputEvent event{kind, std::string(text)};
  event.tool_index = index;
  out_.push_back(std::move(event));
}

void OutputParser::emit_content(std::string_view text) {
  if (text.empty()) return;
  content_started_ = true;
  message_.content.append(text);
  push(OutputEvent::Kind::content, text);
}

void OutputParser::emit_reasoning(std::string_view text) {
  if (text.empty()) return;
  message_.reasoning_content.append(text);
  push(OutputEvent::Kind::reasoning, text);
}

void OutputParser::emit_arguments(std::string_view text) {
  call_.arguments.append(text);
  push(OutputEvent::Kind::tool_call_arguments, text);
}

}  // namespace keel::chat
