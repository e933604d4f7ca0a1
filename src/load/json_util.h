// JSON helpers shared by the model-file readers (config.json, safetensors headers, shard indexes).
#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

namespace keel {

// Parses `text` as JSON; a syntax error throws Error(invalid_file) naming `source` and the byte offset.
// Python's json.dumps writes the bare tokens Infinity, -Infinity and NaN for non-finite floats (older
// config.json files carry them); outside strings they are rewritten to transformers' own spelling
// {"__float__": "Infinity"} before parsing, so json_number() reads both spellings the same.
nlohmann::json parse_json_lenient(std::string_view text, std::string_view source);

// A JSON number, or transformers' tagged float {"__float__": "Infinity" | "-Infinity" | "NaN"}; nullopt
// otherwise.
std::optional<double> json_number(const nlohmann::json& v);
// An integer, or a float with an integral value within int64; nullopt otherwise (booleans are not integers).
std::optional<int64_t> json_integer(const nlohmann::json& v);

// The whole file as text (read_regular_file: a FIFO, device or directory is refused, not waited on). Throws
// Error(invalid_file) naming the path when it cannot be read or exceeds max_bytes.
std::string read_text_file(const std::string& path, int64_t max_bytes);

// `s` shortened to at most `max_chars` characters for an error message ("abc…" when cut).
std::string clip_for_message(std::string_view s, size_t max_chars = 120);

}  // namespace keel
