#include "train/data/corpus_tokenizer.h"

#include <memory>

#include "core/error.h"
#include "model/any_model.h"
#include "model/model_folder.h"
#include "text/gpt2_pretokenize.h"

namespace orion::train {

CorpusTokenizer load_corpus_tokenizer(const std::string& dir) {
  std::shared_ptr<const text::Tokenizer> tok = model::load_tokenizer(dir);
  CorpusTokenizer c;
  if (!tok->eos_id()) throw Error::in_file(dir, "the tokenizer has no end-of-text token to separate documents with");
  c.eot_id = *tok->eos_id();
  c.vocab_size = static_cast<std::uint64_t>(model::read_data_vocab_size(dir, *tok));
  if (const std::optional<std::int64_t> bos = model::read_bos_token_id(dir)) {
    if (*bos < 0 || static_cast<std::uint64_t>(*bos) >= c.vocab_size)
      throw Error::in_file(dir, "bos_token_id " + std::to_string(*bos) + " is not in the vocabulary of " +
                                    std::to_string(c.vocab_size) + " tokens");
    c.bos_id = static_cast<std::int32_t>(*bos);
  }
  if (tok->kind() != "bpe") {
    // SentencePiece: no cutting rule is known to keep its tokens those of the whole, so a
    // document is encoded in one call.
    c.encode = [tok](std::string_view text, const CorpusTokenizer::Progress& progress) {
      std::vector<std::int32_t> out = tok->encode(text);
      if (progress) progress(text.size());
      return out;
    };
    return c;
  }
  // GPT-2's BPE: parts of about 1 MB, cut where its pieces cannot cross, so that progress shows
  // and the tokens are those of the whole.
  c.encode = [tok](std::string_view text, const CorpusTokenizer::Progress& progress) {
    constexpr std::size_t kPart = std::size_t{1} << 20;
    std::vector<std::int32_t> out;
    for (std::size_t start = 0; start < text.size();) {
      const std::size_t end = text::gpt2_safe_cut(text, start + kPart);
      const std::vector<std::int32_t> part = tok->encode(text.substr(start, end - start));
      out.insert(out.end(), part.begin(), part.end());
      start = end;
      if (progress) progress(start);
    }
    return out;
  };
  return c;
}

}  // namespace orion::train
