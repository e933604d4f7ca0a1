// Which syntax a model writes its reasoning and tool calls in, chosen from the chat template's text and the
// rendered prompt. The OutputParser (output_parser.h) takes these choices at construction.
#pragma once
#include <string>
#include <string_view>

namespace keel::chat {

// How a model writes tool calls.
enum class ToolSyntax {
  none,         // no tool calls: everything outside reasoning is content
  hermes_json,  // <tool_call>\n{"name": ..., "arguments": {...}}\n</tool_call> (Hermes, Qwen2.5, Qwen3)
  qwen3_xml,    // <tool_call>\n<function=NAME>\n<parameter=P>\nVALUE\n</parameter>\n</function>\n</tool_call>
                // (Qwen3-Coder, Qwen3.5, Nemotron 3)
  nemotron_json,  // <TOOLCALL>[{"name": ..., "arguments": {...}}, ...]</TOOLCALL> (Nemotron Nano v2,
                  // Nemotron-H)
};

// What the chat template tells about the model's output.
struct OutputFormat {
  ToolSyntax tools = ToolSyntax::none;
  bool think_tags = false;  // the template knows <think>...</think> reasoning blocks
};

// Picks the format from markers present in a chat template's source text. Templates whose tool syntax keel
// does not parse (GLM's <arg_key>, Mistral's [TOOL_CALLS], Llama's <|python_tag|>, ...) get ToolSyntax::none.
OutputFormat detect_output_format(std::string_view template_text);

// Where the model's output starts relative to a <think> block.
enum class ReasoningStart {
  disabled,  // no reasoning split: a <think> in the output is plain content
  optional,  // the output may open with <think>...</think> (Qwen3 with enable_thinking, DeepSeek-R1 style)
  open,  // the prompt already opened <think>: the output starts inside the reasoning (Qwen3.5, Nemotron 3)
};

// Derives the reasoning start from the rendered prompt: a prompt that ends in "<think>" (plus whitespace)
// opened the block; one that ends in "</think>" (plus whitespace) closed it, i.e. thinking is disabled;
// otherwise the model may open a block itself if the template knows think tags.
ReasoningStart reasoning_start_from_prompt(const OutputFormat& format, std::string_view rendered_prompt);

// A tool call the request forces (OpenAI tool_choice "required" / a named function, Anthropic "any" /
// "tool"): no constrained decoding, but the model's turn is begun for it. forced_tool_call_prefix() is the
// text the model itself writes to open a call in `syntax` — of the tool `name`, or of any tool when `name`
// is empty — preceded by "</think>\n\n" when the prompt left the model inside a reasoning block (forced tool
// use skips the reasoning, as Anthropic's API requires). The prompt ends with this text and the output parser
// reads it first (ParserOptions::forced_prefix), so the call it opens is parsed as the model's. Empty for
// ToolSyntax::none (the caller refuses the request).
std::string forced_tool_call_prefix(ToolSyntax syntax, std::string_view name, bool inside_reasoning);

const char* tool_syntax_name(ToolSyntax syntax);
const char* reasoning_start_name(ReasoningStart start);
// Inverses of the two above, for configuration and test data; throw Error(invalid_argument) on unknown names.
ToolSyntax tool_syntax_from_name(std::string_view name);
ReasoningStart reasoning_start_from_name(std::string_view name);

}  // namespace keel::chat
