#include "corpus_tokenizer.h"

#include <memory>

#include "model_dir.h"
#include "text/gpt2_pretokenize.h"

namespace orion::cli {

CorpusTokenizer load_corpus_tokenizer(const std::string& dir) {
  auto tok = std::make_shared<const text::BpeTokenizer>(load_tokenizer(dir));
  CorpusTokenizer c;
  c.eot_id = tok->eot_id();
  c.vocab_size = static_cast<std::uint64_t>(tok->vocab_size());
  // Parts of about 1 MB, cut where GPT-2's pieces cannot cross, so that progress shows and the
  // tokens are those of the whole.
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

}  // namespace orion::cli
