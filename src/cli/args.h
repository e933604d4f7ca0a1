// Command-line helpers shared by every subcommand.
#pragma once
#include <string>
#include <vector>

namespace keel::cli {

// llama-server's multi-letter short flags (-np, -ngl, ...) rewritten to their long forms, because Debian 12's
// CLI11 (2.1) reads "-np" as "-n p". "-np=4" and "-np 4" both work. Other arguments pass through unchanged.
std::vector<std::string> normalize_short_flags(const std::vector<std::string>& args);

}  // namespace keel::cli
