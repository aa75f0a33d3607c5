// train::load_corpus_tokenizer: a model folder's tokenizer as `orion data prepare` uses it, the
// same ids as the folder's own tokenizer, and the end-of-text id documents are separated by.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/error.h"
#include "core/testing_temp_dir.h"
#include "model/model_folder.h"
#include "model/model_init.h"
#include "train/data/corpus_tokenizer.h"

namespace orion::train {
namespace {

TEST(CorpusTokenizer, EncodesAsTheFoldersTokenizerDoes) {
  testing_util::TempDir dir;
  model::InitOptions o;
  o.out = dir.path();
  o.layers = 1, o.dim = 32, o.heads = 2, o.context = 16;
  model::init_model(o);
  const CorpusTokenizer tok = load_corpus_tokenizer(dir.path());
  const model::ModelFolder m = model::ModelFolder::load(dir.path());
  const std::string text = "In the beginning God created the heaven and the earth.";
  EXPECT_EQ(tok.encode(text, [](std::size_t) {}), m.tokenizer->encode(text));
  EXPECT_EQ(tok.eot_id, *m.tokenizer->eos_id());
  EXPECT_EQ(tok.vocab_size, 257u);
  EXPECT_FALSE(tok.bos_id);
}

TEST(CorpusTokenizer, AFolderWithoutATokenizerIsAnError) {
  testing_util::TempDir dir;
  EXPECT_THROW(load_corpus_tokenizer(dir.path()), Error);
}

}  // namespace
}  // namespace orion::train
