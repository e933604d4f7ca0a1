// keel inspect: placeholder until the model-file loader lands.
#include "cli/commands.h"
#include "core/error.h"

namespace keel::cli {

void add_inspect_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("inspect", "Describe a model folder: layers, parameters, weight and state bytes");
  auto* dir = new std::string;
  cmd->add_option("-m,--model", *dir, "Hugging Face model folder")->required();
  cmd->callback([dir] { throw_error(ErrorCode::unsupported, "inspect: not built yet ({})", *dir); });
}

}  // namespace keel::cli
