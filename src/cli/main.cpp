// keel: one binary, one subcommand per job (inspect, tokenize, render, run, perplexity, bench, serve).
#include <spdlog/spdlog.h>

#include <cstdio>
#include <string>
#include <vector>

#include "cli/args.h"
#include "cli/commands.h"
#include "core/error.h"

int main(int argc, char** argv) {
  CLI::App app{"keel: an LLM inference server that never dies on a long prompt"};
  app.require_subcommand(1);
  app.set_help_all_flag("--help-all", "Help for every subcommand");
  keel::cli::add_bench_command(app);
  keel::cli::add_inspect_command(app);
  keel::cli::add_run_command(app);
  keel::cli::add_perplexity_command(app);
  keel::cli::add_quantize_command(app);
  keel::cli::add_render_command(app);
  keel::cli::add_serve_command(app);
  keel::cli::add_tokenize_command(app);

  std::vector<std::string> args(argv + 1, argv + argc);
  args = keel::cli::normalize_short_flags(args);
  std::vector<const char*> cargs{argv[0]};
  for (const auto& a : args) cargs.push_back(a.c_str());
  try {
    app.parse(static_cast<int>(cargs.size()), cargs.data());
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  } catch (const keel::Error& e) {
    std::fprintf(stderr, "keel: error: %s\n", e.what());
    return 1;
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr, "keel: error: out of memory at start-up\n");
    return 1;
  } catch (const std::exception& e) {
    // Anything a library throws (a filesystem or system error) ends the process with one line too.
    std::fprintf(stderr, "keel: error: %s\n", e.what());
    return 1;
  }
  return 0;
}
