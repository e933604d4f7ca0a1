// The streaming output parser: generated text in, delta by delta; structured events out (content, reasoning,
// tool-call begin, tool-call arguments), and at the end the final assistant message. No HTTP here: the server
// turns events into `delta` chunks and the final message into `message`.
//
// Rules (docs/ARCHITECTURE.md, "Output parsing"):
//   - Text that could still be the start of a marker (<think>, </think>, <tool_call>, <function=, <TOOLCALL>)
//   is
//     held back until decided, and nothing more is held back — except trailing whitespace of reasoning, which
//     is dropped before </think>. At finish, an undecided marker prefix is flushed as what it was inside of.
//   - Reasoning: only the first <think> block counts, and only at the start of the output (ReasoningStart::
//     optional) or from the first byte (ReasoningStart::open, where a redundant leading <think> is
//     swallowed). A tool-call block opening inside reasoning ends the reasoning (Qwen3.5 often omits </think>
//     then). Whitespace right after <think> and right before </think> is dropped, as the Qwen3 templates
//     strip it.
//   - Content: whitespace at the start of a segment that follows </think> or a tool call is dropped; at the
//   very
//     start of the output, and after a malformed block passed through as content, it is dropped only when a
//     marker or the end follows. Other whitespace is kept.
//   - JSON syntaxes (Hermes, Nemotron): a call is announced only once its JSON is complete and valid; its
//     arguments then arrive in one piece. A block whose JSON is invalid, or that is unterminated at finish,
//     is passed through verbatim as content (vLLM's behaviour). A complete JSON value without the closing tag
//     is a call (the model stopped right after it).
//   - XML syntax (Qwen3-Coder): a call is announced once <function=NAME> is followed by a <parameter= or
//     </function>; arguments stream as "{", then one `"name": value` per closed parameter, then "}".
//     Malformed text before the announcement is passed through as content. Once announced, a call that cannot
//     be finished (the output ends inside a parameter value, a bad parameter name) is an error:
//     FinalMessage::error says what happened, the call is left out of tool_calls, and the rest of its block
//     is skipped. A call whose parameters are all closed but whose </function> is missing at the end is
//     complete.
#pragma once
#include <cstdint>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "chat/messages.h"
#include "chat/parsers/json_tool_calls.h"
#include "chat/parsers/output_format.h"
#include "chat/parsers/tool_schema.h"

namespace keel::chat {

struct ToolCall {
  std::string id;  // "call_" + 24 alphanumerics
  std::string name;
  std::string arguments;  // JSON text of an object (or of what the model gave instead)
};

struct OutputEvent {
  enum class Kind { content, reasoning, tool_call_begin, tool_call_arguments };
  Kind kind;
  std::string text;     // content or reasoning text, or a piece of the arguments' JSON text
  int tool_index = -1;  // tool_call_begin / tool_call_arguments: index of the call in this message, from 0
  std::string id;       // tool_call_begin only
  std::string name;     // tool_call_begin only
};

struct FinalMessage {
  std::string content;               // all content events concatenated
  std::string reasoning_content;     // all reasoning events concatenated
  std::vector<ToolCall> tool_calls;  // completed calls; arguments = that call's argument events concatenated
  std::string error;  // non-empty when an announced tool call could not be completed (see the rules above)

  bool has_tool_calls() const { return !tool_calls.empty(); }  // finish_reason "tool_calls"
  // {"role": "assistant", "content": string or null, "reasoning_content"?: string,
  //  "tool_calls"?: [{"id", "type": "function", "function": {"name", "arguments"}}]}
  Json to_json() const;
};

struct ParserOptions {
  ToolSyntax tools = ToolSyntax::none;  // none when the request has no tools or tool_choice is "none"
  ReasoningStart reasoning = ReasoningStart::disabled;
  ToolSchemas schemas;              // the request's tools, for typing XML parameter values
  std::optional<uint64_t> id_seed;  // tool-call ids are random; a seed makes them reproducible (tests)
};

// Options for one request: the template's format, the rendered prompt (to see whether it opened <think>),
// the request's `tools` array, and whether tool calls are to be parsed at all (tool_choice != "none").
ParserOptions make_parser_options(const OutputFormat& format, std::string_view rendered_prompt,
                                  const Json& request_tools, bool parse_tool_calls);

class OutputParser {
 public:
  explicit OutputParser(ParserOptions options);

  // Feeds the next piece of generated text (whole UTF-8 characters); returns the events it decides, in order.
  // Consecutive events of one kind (and one call) are merged.
  std::vector<OutputEvent> feed(std::string_view delta);
  // End of generation: decides everything held back and returns the last events. message() is final
  // afterwards; feed() must not be called again.
  std::vector<OutputEvent> finish();
  const FinalMessage& message() const { return message_; }

 private:
  enum class Mode {
    content,
    reasoning,
    call_open,        // after <tool_call> or <TOOLCALL>: deciding between a JSON and an XML body
    json_body,        // scanning a JSON value to its end
    xml_name,         // after <function=: reading NAME>
    xml_body,         // between parameters
    xml_param_name,   // after <parameter=: reading P>
    xml_param_value,  // reading a value up to </parameter>
    after_call,       // after a call: whitespace and the optional closing tag
    raw_block,   // a malformed block before any announcement: passed through as content up to its end tag
    skip_block,  // the rest of a block whose announced call failed
  };
  enum class Lead { keep, hold, drop };  // leading whitespace of the current content segment

  bool step(bool at_end);
  bool step_content(bool at_end);
  bool step_reasoning(bool at_end);
  bool step_call_open(bool at_end);
  bool step_json_body(bool at_end);
  bool step_xml_name(bool at_end);
  bool step_xml_body(bool at_end);
  bool step_xml_param_name(bool at_end);
  bool step_xml_param_value(bool at_end);
  bool step_after_call(bool at_end);
  bool step_raw_block(bool at_end);
  bool step_skip_block(bool at_end);

  std::vector<std::string_view> content_markers() const;
  std::vector<std::string_view> block_open_markers() const;
  void open_block(std::string_view marker);
  void consume(size_t n);  // moves buf_[0, n) into raw_ (until the call is announced)
  void drop_front(size_t n);
  size_t first_non_space_in_buf();  // index of buf_'s first non-whitespace byte, npos if none
  void pass_block_through();
  void enter_content(Lead lead);
  void begin_call(std::string name);
  void end_call();
  void fail_call(std::string what);
  std::string new_call_id();

  void emit_content(std::string_view text);
  void emit_reasoning(std::string_view text);
  void emit_arguments(std::string_view text);
  void push(OutputEvent::Kind kind, std::string_view text);

  ParserOptions options_;
  std::mt19937_64 id_rng_;
  FinalMessage message_;
  std::vector<OutputEvent> out_;  // events of the current feed()/finish()
  bool finished_ = false;

  std::string buf_;          // input not yet decided
  size_t space_prefix_ = 0;  // bytes at the start of buf_ known to be whitespace
  Mode mode_ = Mode::content;
  Lead lead_ = Lead::hold;
  bool content_started_ = false;  // content was emitted: a later <think> is plain text
  bool reasoning_seen_ = false;   // the one reasoning block was opened
  bool reasoning_lead_ = false;   // at the start of the reasoning block

  // The current tool-call block.
  std::string_view block_close_;  // its closing tag, empty for a bare <function=
  bool in_block_ = false;         // opened by <tool_call> / <TOOLCALL> (not a bare <function=)
  std::string raw_;  // its text consumed so far, passed through as content if it turns out malformed
  JsonExtentScanner scanner_;
  bool call_begun_ = false;  // tool_call_begin was emitted for the current call
  int call_index_ = -1;      // the current call's index in events (failed calls keep theirs)
  int calls_announced_ = 0;
  ToolCall call_;             // the current call
  std::string pending_name_;  // XML: function name read, call not yet announced
  std::string param_name_;
  size_t params_written_ = 0;
  size_t value_scan_ = 0;  // XML value: bytes of buf_ already searched for an end
};

}  // namespace keel::chat
