// OutputParser: the tool-call states (JSON and XML bodies, malformed blocks). See output_parser.h for the
// rules.
#include <fmt/format.h>

#include "chat/parsers/marker_scan.h"
#include "chat/parsers/output_parser.h"

namespace keel::chat {

using namespace markers;

namespace {

constexpr std::string_view kToolCallClose = "</tool_call>";
constexpr std::string_view kNemotronOpen = "<TOOLCALL>";
constexpr std::string_view kNemotronClose = "</TOOLCALL>";
constexpr std::string_view kFunctionOpen = "<function=";
constexpr std::string_view kFunctionClose = "</function>";
constexpr std::string_view kParamOpen = "<parameter=";
constexpr std::string_view kParamClose = "</parameter>";
constexpr size_t kMaxNameBytes = 256;  // a longer "name" is prose, not a function or parameter name

// What may follow <function=NAME> and a closed parameter.
constexpr std::string_view kBodyMarkers[] = {kParamOpen, kFunctionClose, kToolCallClose};
// What ends a parameter value: </parameter>, or (when the model forgot it) a structural tag on a new line.
constexpr std::string_view kValueEnds[] = {kParamClose, "\n<parameter=", "\n</function>", "\n</tool_call>"};
constexpr size_t kLongestValueEnd = 13;

// Position of the '>' closing a name at the start of `text`; npos if not there yet, `text.size() + 1` if the
// name is malformed (a newline or '<' first, or too long).
size_t name_end(std::string_view text) {
  for (size_t i = 0; i < text.size() && i <= kMaxNameBytes; ++i) {
    if (text[i] == '>') return i;
    if (text[i] == '\n' || text[i] == '<') return text.size() + 1;
  }
  return text.size() > kMaxNameBytes ? text.size() + 1 : npos;
}

// A function name as vLLM's qwen3coder parser accepts it: no template syntax, quotes or whitespace.
bool valid_function_name(std::string_view name) {
  return !name.empty() && name.find_first_of("{}<>\"' \t\n\r") == std::string_view::npos;
}

}  // namespace

void OutputParser::open_block(std::string_view marker) {
  raw_.assign(marker);
  scanner_.reset();
  call_begun_ = false;
  pending_name_.clear();
  params_written_ = 0;
  block_close_ = marker == kNemotronOpen ? kNemotronClose : kToolCallClose;
  in_block_ = marker != kFunctionOpen;
  mode_ = in_block_ ? Mode::call_open : Mode::xml_name;
}

void OutputParser::consume(size_t n) {
  if (!call_begun_) raw_.append(buf_, 0, n);
  drop_front(n);
}

void OutputParser::drop_front(size_t n) {
  buf_.erase(0, n);
  space_prefix_ = space_prefix_ > n ? space_prefix_ - n : 0;
}

size_t OutputParser::first_non_space_in_buf() {
  while (space_prefix_ < buf_.size() && is_space(buf_[space_prefix_])) ++space_prefix_;
  return space_prefix_ < buf_.size() ? space_prefix_ : npos;
}

void OutputParser::pass_block_through() {
  emit_content(raw_);
  raw_.clear();
  if (in_block_) {
    mode_ = Mode::raw_block;
  } else {
    enter_content(Lead::keep);
  }
}

void OutputParser::begin_call(std::string name) {
  call_ = ToolCall{new_call_id(), std::move(name), ""};
  call_index_ = calls_announced_++;
  call_begun_ = true;
  raw_.clear();
  OutputEvent event{OutputEvent::Kind::tool_call_begin, ""};
  event.tool_index = call_index_;
  event.id = call_.id;
  event.name = call_.name;
  out_.push_back(std::move(event));
}

void OutputParser::end_call() {
  message_.tool_calls.push_back(std::move(call_));
  call_ = ToolCall{};
  call_begun_ = false;
}

void OutputParser::fail_call(std::string what) {
  if (message_.error.empty()) {
    message_.error = fmt::format("tool call {} ('{}') was cut short: {}", call_index_, call_.name, what);
  }
  call_ = ToolCall{};
  call_begun_ = false;
  mode_ = Mode::skip_block;
}

bool OutputParser::step_call_open(bool at_end) {
  size_t i = first_non_space_in_buf();
  if (i == npos) {
    if (!at_end) return false;
    consume(buf_.size());
    pass_block_through();
    return true;
  }
  if (buf_[i] == '{' || buf_[i] == '[') {
    consume(i);
    mode_ = Mode::json_body;
    return true;
  }
  if (block_close_ == kToolCallClose) {
    Match m = match_at(buf_, i, kFunctionOpen);
    if (m == Match::partial && !at_end) return false;
    if (m == Match::full) {
      consume(i + kFunctionOpen.size());
      mode_ = Mode::xml_name;
      return true;
    }
  }
  consume(i);
  pass_block_through();
  return true;
}

bool OutputParser::step_json_body(bool at_end) {
  JsonExtentScanner::Result r = scanner_.scan(buf_, block_close_);
  if (r.status == JsonExtentScanner::Status::complete) {
    std::vector<JsonToolCall> calls;
    bool ok = read_json_tool_calls(std::string_view(buf_).substr(0, r.pos), calls);
    consume(r.pos);
    if (!ok) {
      pass_block_through();
      return true;
    }
    for (JsonToolCall& call : calls) {
      begin_call(std::move(call.name));
      emit_arguments(call.arguments);
      end_call();
    }
    mode_ = Mode::after_call;
    return true;
  }
  if (r.status == JsonExtentScanner::Status::interrupted) {  // the block closed before its JSON did
    consume(r.pos + block_close_.size());
    emit_content(raw_);
    raw_.clear();
    enter_content(Lead::hold);
    return true;
  }
  if (!at_end) return false;
  consume(buf_.size());  // unterminated at the end of the output
  emit_content(raw_);
  raw_.clear();
  enter_content(Lead::keep);
  return true;
}

bool OutputParser::step_xml_name(bool at_end) {
  size_t end = name_end(buf_);
  if (end == npos) {
    if (!at_end) return false;
    consume(buf_.size());
    pass_block_through();
    return true;
  }
  if (end > buf_.size() || !valid_function_name(std::string_view(buf_).substr(0, end))) {
    pass_block_through();
    return true;
  }
  pending_name_ = buf_.substr(0, end);
  consume(end + 1);
  mode_ = Mode::xml_body;
  return true;
}

bool OutputParser::step_xml_body(bool at_end) {
  size_t i = first_non_space_in_buf();
  if (i == npos) {
    if (!at_end) return false;
    consume(buf_.size());
    if (!call_begun_) {
      pass_block_through();
      return true;
    }
    emit_arguments("}");  // every parameter was closed; only </function> is missing
    end_call();
    enter_content(Lead::drop);
    return true;
  }
  std::string_view which;
  Match m = match_any_at(buf_, i, kBodyMarkers, &which);
  if (m == Match::partial && !at_end) return false;
  if (m == Match::full) {
    if (!call_begun_) {
      begin_call(std::move(pending_name_));
      emit_arguments("{");
    }
    consume(i + which.size());
    if (which == kParamOpen) {
      mode_ = Mode::xml_param_name;
      return true;
    }
    emit_arguments("}");
    end_call();
    if (which == kFunctionClose) {
      mode_ = Mode::after_call;
    } else {
      enter_content(Lead::drop);
    }
    return true;
  }
  if (!call_begun_) {  // <function=NAME> followed by prose: not a call
    consume(i);
    pass_block_through();
    return true;
  }
  size_t next = buf_.find('<', i + 1);  // stray text between parameters is skipped
  consume(next == npos ? buf_.size() : next);
  return true;
}

bool OutputParser::step_xml_param_name(bool at_end) {
  size_t end = name_end(buf_);
  if (end == npos) {
    if (!at_end) return false;
    fail_call("the output ended inside a <parameter= tag");
    return true;
  }
  if (end > buf_.size() || end == 0) {
    fail_call(fmt::format("parameter {} has no name closed by '>' on its line", params_written_ + 1));
    return true;
  }
  param_name_ = buf_.substr(0, end);
  consume(end + 1);
  value_scan_ = 0;
  mode_ = Mode::xml_param_value;
  return true;
}

bool OutputParser::step_xml_param_value(bool at_end) {
  size_t from = value_scan_;
  for (;;) {
    Found end = find_first(buf_, kValueEnds, from);
    if (end.pos == npos) {
      if (at_end) {
        fail_call(fmt::format("the output ended inside the value of parameter '{}'", param_name_));
        return true;
      }
      value_scan_ = buf_.size() > kLongestValueEnd ? buf_.size() - (kLongestValueEnd - 1) : 0;
      return false;
    }
    size_t value_size = end.pos + 1;  // a fallback end keeps its newline in the value, as vLLM does
    size_t consumed = end.pos + 1;
    if (end.marker == kParamClose) {
      // </parameter> is structural only when a tag follows (or the output ends): code in a value may contain
      // it.
      size_t after = end.pos + kParamClose.size();
      size_t j = first_non_space(buf_, after);
      Match m = j == npos ? Match::partial : match_any_at(buf_, j, kBodyMarkers);
      if (m == Match::partial && !at_end) {
        value_scan_ = end.pos;
        return false;
      }
      if (m == Match::none) {
        from = end.pos + 1;
        continue;
      }
      value_size = end.pos;
      consumed = after;
    }
    std::string_view value(buf_.data(), value_size);
    if (value.starts_with('\n')) value.remove_prefix(1);
    if (value.ends_with('\n')) value.remove_suffix(1);
    Json typed = convert_param_value(value, options_.schemas.param_types(call_.name, param_name_));
    std::string piece = params_written_ > 0 ? ", " : "";
    piece += dump_json(Json(param_name_)) + ": " + dump_json(typed);
    emit_arguments(piece);
    ++params_written_;
    consume(consumed);
    mode_ = Mode::xml_body;
    return true;
  }
}

bool OutputParser::step_after_call(bool at_end) {
  size_t i = first_non_space_in_buf();
  if (i == npos) {
    if (at_end) drop_front(buf_.size());
    return false;
  }
  Match m = match_at(buf_, i, block_close_);
  if (m == Match::partial && !at_end) return false;
  drop_front(m == Match::full ? i + block_close_.size() : i);
  enter_content(Lead::drop);
  return true;
}

bool OutputParser::step_raw_block(bool at_end) {
  size_t p = buf_.find(block_close_);
  if (p != npos) {
    emit_content(std::string_view(buf_).substr(0, p + block_close_.size()));
    drop_front(p + block_close_.size());
    enter_content(
        Lead::hold);  // the block was content: whitespace after it stays unless a call or the end follows
    return true;
  }
  std::string_view close[] = {block_close_};
  size_t hold = at_end ? 0 : partial_marker_suffix(buf_, close);
  emit_content(std::string_view(buf_).substr(0, buf_.size() - hold));
  drop_front(buf_.size() - hold);
  return false;
}

bool OutputParser::step_skip_block(bool at_end) {
  std::string_view end = in_block_ ? block_close_ : kFunctionClose;
  size_t p = buf_.find(end);
  if (p != npos) {
    drop_front(p + end.size());
    enter_content(Lead::drop);
    return true;
  }
  std::string_view ends[] = {end};
  drop_front(buf_.size() - (at_end ? 0 : partial_marker_suffix(buf_, ends)));
  return false;
}

}  // namespace keel::chat
