// The keel subcommands. Each lives in cli/<name>.cpp and registers itself on the app with add_<name>_command;
// main.cpp calls each once. A command's callback throws keel::Error for the user's mistakes; main prints it.
#pragma once
#include <CLI/CLI.hpp>

namespace keel::cli {

void add_bench_command(CLI::App& app);
void add_inspect_command(CLI::App& app);
void add_run_command(CLI::App& app);
void add_perplexity_command(CLI::App& app);
void add_quantize_command(CLI::App& app);
void add_render_command(CLI::App& app);
void add_serve_command(CLI::App& app);
void add_tokenize_command(CLI::App& app);

}  // namespace keel::cli
