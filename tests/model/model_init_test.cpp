// model::init_model: a new model folder that ModelFolder loads back with the sizes asked for,
// the line that says what was written, and the refusals that keep an existing folder safe.
#include <gtest/gtest.h>

#include <string>

#include "core/error.h"
#include "core/testing_temp_dir.h"
#include "model/model_folder.h"
#include "model/model_init.h"

namespace orion::model {
namespace {

TEST(ModelInit, WritesAGpt2FolderThatLoadsWithTheSizesAskedFor) {
  testing_util::TempDir dir;
  InitOptions o;
  o.out = dir.file("m");
  o.layers = 2, o.dim = 32, o.heads = 2, o.context = 16, o.seed = 3;
  const std::string line = init_model(o);
  EXPECT_EQ(line.rfind("wrote " + o.out + ": gpt2, 2 layers, dim 32, 2 heads, context 16, vocab 257", 0), 0u) << line;
  const ModelFolder m = ModelFolder::load(o.out);
  EXPECT_EQ(m.lm().arch(), "gpt2");
  EXPECT_EQ(m.lm().layers(), 2);
  EXPECT_EQ(m.lm().context(), 16);
}

TEST(ModelInit, WritesALlamaFolderWithGroupedQueryAttention) {
  testing_util::TempDir dir;
  InitOptions o;
  o.out = dir.file("m");
  o.arch = "llama";
  o.layers = 1, o.dim = 64, o.heads = 4, o.kv_heads = 2, o.context = 32;
  const std::string line = init_model(o);
  EXPECT_NE(line.find("llama, 1 layers, dim 64, 4 heads (2 key/value)"), std::string::npos) << line;
  EXPECT_EQ(ModelFolder::load(o.out).lm().arch(), "llama");
}

TEST(ModelInit, KeepsAnExistingModelUnlessForced) {
  testing_util::TempDir dir;
  InitOptions o;
  o.out = dir.path();
  o.layers = 1, o.dim = 32, o.heads = 2, o.context = 16;
  init_model(o);
  EXPECT_THROW(init_model(o), Error);
  o.force = true;
  o.seed = 9;
  EXPECT_NO_THROW(init_model(o));
}

}  // namespace
}  // namespace orion::model
