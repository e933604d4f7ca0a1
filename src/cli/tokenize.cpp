// keel tokenize -m DIR (--text T | --file F | --decode 1,2,3) [--special]: a tokenizer.json on its own.
// Prints the ids as a JSON array, or with --decode the text. DIR needs only tokenizer.json (and
// tokenizer_config.json).
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cstdio>
#include <memory>
#include <string>

#include "cli/commands.h"
#include "core/error.h"
#include "core/mmap_file.h"
#include "tokenizer/tokenizer.h"

namespace keel::cli {

namespace {

struct TokenizeArgs {
  std::string model_dir, text, file, decode;
  bool special = false;
  int sources = 0;  // how many of --text, --file, --decode were given
  bool decoding = false;
};

std::vector<tokenizer::TokenId> parse_ids(const std::string& list) {
  std::vector<tokenizer::TokenId> ids;
  size_t pos = 0;
  while (pos <= list.size()) {
    const size_t comma = std::min(list.find(',', pos), list.size());
    const std::string item = list.substr(pos, comma - pos);
    size_t used = 0;
    long long v = -1;
    try {
      v = std::stoll(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used == 0 || used != item.size() || v < 0 || v > INT32_MAX)
      throw_error(ErrorCode::invalid_argument, "--decode: \"{}\" is not a token id (expected ids like 1,2,3)",
                  item);
    ids.push_back(static_cast<tokenizer::TokenId>(v));
    pos = comma + 1;
  }
  return ids;
}

void run_tokenize(const TokenizeArgs& a) {
  if (a.sources != 1)
    throw_error(ErrorCode::invalid_argument, "tokenize: give exactly one of --text, --file, --decode");
  const auto tok = tokenizer::Tokenizer::load(a.model_dir);
  if (a.decoding) {
    std::fputs(tok.decode(parse_ids(a.decode)).c_str(), stdout);
    std::fputs("\n", stdout);
    return;
  }
  std::string text = a.text;
  if (!a.file.empty()) {
    MappedFile f(a.file);
    text.assign(reinterpret_cast<const char*>(f.data()), static_cast<size_t>(f.size()));
  }
  const auto ids = tok.encode(text, {.allow_special = a.special});
  fmt::print("[{}]\n", fmt::join(ids, ", "));
}

}  // namespace

void add_tokenize_command(CLI::App& app) {
  auto args = std::make_shared<TokenizeArgs>();
  auto* cmd =
      app.add_subcommand("tokenize", "Encode text to token ids (a JSON array), or decode ids to text");
  cmd->add_option("-m,--model", args->model_dir, "Folder with tokenizer.json (and tokenizer_config.json)")
      ->required();
  auto* text = cmd->add_option("--text", args->text, "Text to encode");
  auto* file = cmd->add_option("--file", args->file, "File whose contents to encode");
  auto* decode = cmd->add_option("--decode", args->decode, "Comma-separated ids to decode, e.g. 9707,1879");
  cmd->add_flag(
      "--special", args->special,
      "Match special tokens written in the text (<|im_start|>...) as the Hugging Face library does by "
      "default; without it they are split like ordinary text (non-special added tokens always match)");
  cmd->callback([args, text, file, decode] {
    args->sources = static_cast<int>(text->count() + file->count() + decode->count());
    args->decoding = decode->count() > 0;
    run_tokenize(*args);
  });
}

}  // namespace keel::cli
