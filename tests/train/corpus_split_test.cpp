#include "train/data/corpus_split.h"

#include <gtest/gtest.h>

#include "core/error.h"

namespace orion::train {
namespace {

using Tokens = std::vector<std::int32_t>;

TEST(CorpusSplit, HoldsOutTheTailOfEachDocumentAndEndsEveryPartWithEndOfText) {
  SplitCorpus c;
  add_document(c, Tokens{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, 0, 0.2);  // 2 of 10 held out
  add_document(c, Tokens{}, 0, 0.2);                               // nothing at all
  add_document(c, Tokens{11, 12, 13, 14}, 0, 0.2);                 // 0.8 rounds to 1
  add_document(c, Tokens{15, 16}, 0, 0.2);                         // 0.4 rounds to 0: no val part
  EXPECT_EQ(c.train, (Tokens{1, 2, 3, 4, 5, 6, 7, 8, 0, 11, 12, 13, 0, 15, 16, 0}));
  EXPECT_EQ(c.val, (Tokens{9, 10, 0, 14, 0}));
}

// Llama-style models: each part starts with BOS as well, so both splits read like prompts do.
TEST(CorpusSplit, ABosTokenStartsEveryPart) {
  SplitCorpus c;
  add_document(c, Tokens{3, 4, 5, 6, 7}, 2, 0.4, 1);  // 2 of 5 held out
  add_document(c, Tokens{8}, 2, 0.4, 1);              // 0.4 rounds to 0: no val part
  EXPECT_EQ(c.train, (Tokens{1, 3, 4, 5, 2, 1, 8, 2}));
  EXPECT_EQ(c.val, (Tokens{1, 6, 7, 2}));
}

TEST(CorpusSplit, ZeroHoldsOutNothingAndTheFractionMustBeBelowOne) {
  SplitCorpus c;
  add_document(c, Tokens{4, 5, 6}, 9, 0.0);
  EXPECT_EQ(c.train, (Tokens{4, 5, 6, 9}));
  EXPECT_TRUE(c.val.empty());
  EXPECT_THROW(add_document(c, Tokens{1}, 9, 1.0), Error);
  EXPECT_THROW(add_document(c, Tokens{1}, 9, -0.1), Error);
}

}  // namespace
}  // namespace orion::train
