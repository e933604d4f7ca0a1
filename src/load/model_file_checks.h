// Checks of config.json values that the typed reader (config.h) does not look at but that make a model load
// and then serve nonsense; run before loading, separately from the reader so either can change alone.
#pragma once
#include <string>

namespace keel {

// dir/config.json: every "rope_theta" (top level, in rope_parameters / rope_scaling, or per layer type) is a
// finite number > 0; "mamba_ssm_cache_dtype", when set, is float32, float16 or bfloat16 (keel keeps the SSM
// state in float32 whatever it says; it is a precision floor, and nothing else is a float type). Throws
// Error(invalid_file) naming the file, the field and the value.
void check_config_values(const std::string& dir);

}  // namespace keel
