// orion tokenize: text to token ids with a model's tokenizer, or ids back to text.
#include <charconv>
#include <cstdio>

#include "commands.h"
#include "core/error.h"
#include "model/model_folder.h"

namespace orion::cli {

void add_tokenize_command(CLI::App& app) {
  struct Opts {
    std::string model_dir;
    std::vector<std::string> args;
    bool decode = false;
  };
  auto o = std::make_shared<Opts>();
  auto* cmd = app.add_subcommand("tokenize", "Print the token ids of TEXT (with --decode: the text of IDS)");
  cmd->add_option("-m,--model", o->model_dir, "Model folder (or any folder with tokenizer.model, or vocab.json and merges.txt), or a GGUF file")->required();
  cmd->add_option("text", o->args, "Text to encode, or ids to decode")->required();
  cmd->add_flag("--decode", o->decode, "Decode ids (separated by spaces or commas) back to text");
  cmd->callback([o] {
    const auto tok = model::load_tokenizer(o->model_dir);
    std::string joined;
    for (const std::string& a : o->args) joined += (joined.empty() ? "" : " ") + a;
    if (!o->decode) {
      std::string line;
      for (std::int32_t id : tok->encode(joined)) line += (line.empty() ? "" : " ") + std::to_string(id);
      std::printf("%s\n", line.c_str());
      return;
    }
    std::vector<std::int32_t> ids;
    const char* p = joined.data();
    const char* end = p + joined.size();
    while (p < end) {
      if (*p == ' ' || *p == ',') { ++p; continue; }
      std::int32_t v = 0;
      auto [q, ec] = std::from_chars(p, end, v);
      if (ec != std::errc() || (q < end && *q != ' ' && *q != ','))
        throw Error("--decode: '" + std::string(p, std::min<std::size_t>(16, static_cast<std::size_t>(end - p))) +
                    "' at character " + std::to_string(p - joined.data() + 1) + " is not a token id");
      ids.push_back(v);
      p = q;
    }
    const std::string text = tok->decode(ids);
    std::fwrite(text.data(), 1, text.size(), stdout);
    std::fputc('\n', stdout);
  });
}

}  // namespace orion::cli
