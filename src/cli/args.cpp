#include "cli/args.h"

#include <array>
#include <string_view>
#include <utility>

namespace keel::cli {

namespace {
// llama-server's short forms that are longer than one letter, and the long names keel gives them.
constexpr std::array<std::pair<std::string_view, std::string_view>, 10> kMultiLetterShort = {{
    {"-np", "--parallel"},
    {"-ngl", "--n-gpu-layers"},
    {"-fa", "--flash-attn"},
    {"-ctk", "--cache-type-k"},
    {"-ctv", "--cache-type-v"},
    {"-tb", "--threads-batch"},
    {"-ub", "--ubatch-size"},
    {"-cb", "--cont-batching"},
    {"-dev", "--device"},
    {"-sm", "--split-mode"},
}};
}  // namespace

std::vector<std::string> normalize_short_flags(const std::vector<std::string>& args) {
  std::vector<std::string> out;
  out.reserve(args.size());
  for (const std::string& arg : args) {
    std::string_view a(arg);
    std::string_view name = a.substr(0, a.find('='));
    bool replaced = false;
    for (const auto& [short_form, long_form] : kMultiLetterShort) {
      if (name == short_form) {
        out.push_back(std::string(long_form) + std::string(a.substr(name.size())));
        replaced = true;
        break;
      }
    }
    if (!replaced) out.push_back(arg);
  }
  return out;
}

}  // namespace keel::cli
