#include "text/sentencepiece_trainer.h"

#include <sentencepiece_trainer.h>

#include <filesystem>
#include <thread>
#include <unordered_map>

#include "core/error.h"

namespace orion::text {

SentencePieceTokenizer train_sentencepiece(const SentencePieceTrainOptions& o) {
  if (o.inputs.empty()) throw Error("tokenizer training: no input files");
  for (const std::string& in : o.inputs) {
    std::error_code ec;
    if (!std::filesystem::is_regular_file(in, ec)) throw Error::in_file(in, "no such file");
    // The trainer takes a comma-separated list and cannot quote a comma.
    if (in.find(',') != std::string::npos) throw Error::in_file(in, "input paths may not contain a comma");
  }
  if (o.model_type != "bpe" && o.model_type != "unigram")
    throw Error("tokenizer training: model type '" + o.model_type + "' is not bpe or unigram");
  if (o.vocab_size < 8) throw Error("tokenizer training: a vocabulary of " + std::to_string(o.vocab_size) + " is too small");
  std::string inputs;
  for (const std::string& in : o.inputs) inputs += (inputs.empty() ? "" : ",") + in;
  const unsigned threads = o.threads > 0 ? static_cast<unsigned>(o.threads) : std::max(1u, std::thread::hardware_concurrency());
  const std::unordered_map<std::string, std::string> args = {
      {"input", inputs},
      {"model_type", o.model_type},
      {"vocab_size", std::to_string(o.vocab_size)},
      {"byte_fallback", o.byte_fallback ? "true" : "false"},
      {"normalization_rule_name", "identity"},
      {"remove_extra_whitespaces", "false"},
      {"add_dummy_prefix", "true"},
      {"split_digits", "true"},
      {"allow_whitespace_only_pieces", "true"},
      {"max_sentence_length", std::to_string(o.max_line_bytes)},
      {"num_threads", std::to_string(threads)},
      {"unk_id", "0"},
      {"bos_id", "1"},
      {"eos_id", "2"},
      {"pad_id", "-1"},
      {"minloglevel", o.verbose ? "0" : "1"},
  };
  std::string model;
  const auto status = sentencepiece::SentencePieceTrainer::Train(args, nullptr, &model);
  if (!status.ok()) throw Error("tokenizer training failed: " + status.ToString());
  return SentencePieceTokenizer::from_serialized(model, "trained tokenizer");
}

}  // namespace orion::text
