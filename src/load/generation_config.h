// generation_config.json: the model's end-of-generation ids and sampling defaults, as transformers'
// GenerationConfig names them. Read once at start-up by `keel serve` and `keel run`; every field is checked
// here so a bad file is one error naming the file and the field, never a request-time surprise.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace keel {

struct GenerationConfig {
  std::vector<int32_t> eos_token_ids;       // "eos_token_id": one id or a list, each ≥ 0
  std::optional<float> temperature;         // ≥ 0 (0: greedy), ≤ 100
  std::optional<float> top_p;               // (0, 1]
  std::optional<int32_t> top_k;             // ≥ 0 (0: off)
  std::optional<float> min_p;               // [0, 1]
  std::optional<float> repetition_penalty;  // (0, 100]
  std::optional<bool> do_sample;            // false: greedy whatever the temperature
};

// Parses the file's text; `source` names it in errors. A null field counts as absent (transformers writes
// nulls). Throws Error(invalid_file) "<source>: '<field>' ..." for a wrong type or a value out of range.
GenerationConfig parse_generation_config(std::string_view text, const std::string& source);

// dir/generation_config.json, or an empty config when the folder has none. The file must be a regular file
// of at most 1 MiB (a FIFO or a device is refused, not waited on).
GenerationConfig load_generation_config(const std::string& dir);

}  // namespace keel
