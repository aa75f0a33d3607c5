// Record data: record files (token file version 2) round-trip and refuse what is inconsistent;
// the record loader buckets, pads with weight 0, cuts or skips long records and resumes; and
// the loss mask is honoured by the loss graph: a masked target's value changes neither the
// loss nor any gradient, an unmasked one's changes both.
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <sstream>

#include "core/error.h"
#include "core/temp_folder.h"
#include "model/llama/llama_model.h"
#include "train/data/record_loader.h"
#include "train/data/token_file.h"
#include "train/gradient_runner.h"
#include "train/loss_evaluator.h"
#include "train/model_loss.h"
#include "train/trainer_test_util.h"

namespace orion::train {
namespace {

Records sample_records(std::uint64_t vocab, int count, int base_length) {
  Records r;
  for (int i = 0; i < count; ++i) {
    std::vector<std::int32_t> t;
    std::vector<std::uint8_t> m;
    const int n = base_length + (i * 7) % 23;
    for (int k = 0; k < n; ++k) {
      t.push_back(static_cast<std::int32_t>((i * 31 + k * 17 + 5) % static_cast<int>(vocab)));
      m.push_back(k >= n / 2 ? 1 : 0);  // the second half is the answer
    }
    r.add(t, m);
  }
  return r;
}

std::string bytes_of(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

TEST(RecordFile, RoundTripsEverySplitWithItsMask) {
  TempFolder tmp("orion-records");
  const Records train = sample_records(70000, 9, 5), val = sample_records(70000, 3, 8), test;
  const std::string path = tmp.path() + "/r.tok";
  write_record_file(path, 70000, 69999, train, val, test);
  const TokenFile f = TokenFile::open(path);
  ASSERT_TRUE(f.has_records());
  EXPECT_EQ(f.header().width, 4u);
  for (auto [split, want] : {std::pair{Split::train, &train}, std::pair{Split::val, &val}}) {
    const Records got = f.records(split);
    EXPECT_EQ(got.tokens, want->tokens);
    EXPECT_EQ(got.mask, want->mask);
    EXPECT_EQ(got.starts, want->starts);
  }
  EXPECT_EQ(f.size(Split::test), 0u);
  EXPECT_EQ(f.records(Split::test).count(), 0u);
}

TEST(RecordFile, RefusesBadMasksStartsAndTrailingBytes) {
  TempFolder tmp("orion-records");
  const Records train = sample_records(500, 4, 6);
  const std::string path = tmp.path() + "/r.tok";
  write_record_file(path, 500, std::nullopt, train, train, {});
  const std::string good = bytes_of(path);
  const auto error_of = [&](const std::string& b) {
    std::ofstream(path, std::ios::binary | std::ios::trunc) << b;
    try {
      TokenFile::open(path);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  const std::size_t n = train.tokens.size() * 2, mask_at = 128 + 2 * n;
  std::string b = good;
  b[mask_at + 3] = 2;
  EXPECT_NE(error_of(b).find("at byte " + std::to_string(mask_at + 3) + ": a mask byte is neither 0 nor 1"), std::string::npos)
      << error_of(b);
  b = good;
  const std::uint64_t late = 3;  // record 1 starting before record 0's start + 1 is not increasing
  std::memcpy(b.data() + mask_at + n + 8, &late, 8);
  std::memcpy(b.data() + mask_at + n + 16, &late, 8);
  EXPECT_NE(error_of(b).find("training record 2 starts at token 3"), std::string::npos) << error_of(b);
  EXPECT_NE(error_of(good + "x").find("1 bytes follow the last token"), std::string::npos);
  b = good;
  b[100] = 1;
  EXPECT_NE(error_of(b).find("at byte 100: the header's reserved bytes are not zero"), std::string::npos) << error_of(b);
  b = good;
  b[128] ^= 1;
  EXPECT_NE(error_of(b).find("checksum"), std::string::npos) << error_of(b);
  // Inconsistent records are refused at writing, naming the file.
  Records broken = train;
  broken.mask.pop_back();
  EXPECT_THROW(write_record_file(path, 500, std::nullopt, broken, train, {}), Error);
}

TEST(RecordLoader, BucketsSortedRecordsPadsWithWeightZeroAndCountsWhatItCuts) {
  Records r = sample_records(50, 20, 4);  // lengths 4..26, tokens below 50: 60 is padding only
  RecordLoaderOptions o{.batch = 4, .seq = 16, .buckets = {8, 16}, .skip_long = false, .seed = 3, .pad_id = 60};
  const RecordLoader loader(r, o, "records");
  EXPECT_EQ(loader.batches_per_epoch(), 5u);
  std::size_t longer = 0;
  for (std::size_t i = 0; i < r.count(); ++i) longer += r.length(i) > 17;
  EXPECT_EQ(loader.stats().truncated, longer);
  std::uint64_t trained = 0;
  for (std::size_t k = 0; k < loader.batches_per_epoch(); ++k) {
    const Batch b = loader.batch(k);
    EXPECT_TRUE(b.seq == 8 || b.seq == 16);
    ASSERT_EQ(b.tokens.size(), static_cast<std::size_t>(4 * b.seq));
    std::int64_t ones = 0;
    for (std::size_t i = 0; i < b.weights.size(); ++i) {
      ones += b.weights[i] == 1.0f;
      if (b.tokens[i] == 60) {
        EXPECT_EQ(b.targets[i], 60);  // padding
        EXPECT_EQ(b.weights[i], 0.0f);
      }
    }
    EXPECT_EQ(ones, b.trained);
    trained += static_cast<std::uint64_t>(b.trained);
  }
  EXPECT_EQ(trained, loader.stats().trained_tokens);
  EXPECT_GT(loader.stats().padding_fraction(), 0.0);
  EXPECT_LT(loader.stats().padding_fraction(), 0.5);

  // An epoch visits every batch once; a restored position continues the same stream.
  RecordLoader a(r, o, "records"), b(r, o, "records");
  std::vector<std::vector<std::int32_t>> seen;
  for (int i = 0; i < 7; ++i) seen.push_back(a.next().tokens);
  b.restore({3, 4});
  for (int i = 4; i < 7; ++i) EXPECT_EQ(b.next().tokens, seen[static_cast<std::size_t>(i)]);

  o.skip_long = true;
  const RecordLoader skipping(r, o, "records");
  EXPECT_EQ(skipping.stats().skipped, longer);
  EXPECT_EQ(skipping.stats().records, r.count() - longer);
  o.buckets = {16, 8};
  EXPECT_THROW(RecordLoader(r, o, "records"), Error);
  Records none;
  const std::vector<std::int32_t> t{1, 2, 3};
  const std::vector<std::uint8_t> zero{0, 0, 0};
  none.add(t, zero);
  EXPECT_THROW(RecordLoader(none, {.batch = 1, .seq = 8, .buckets = {}, .skip_long = false, .seed = 0, .pad_id = 0}, "records"), Error);
}

TEST(LossMask, AMaskedTargetChangesNeitherTheLossNorAnyGradient) {
  const model::LlamaConfig c = testing::tiny_qwen3();
  const LossGraphFn loss = model_loss_graph(c);
  const TensorMap weights = model::llama_init_weights(c, 5);
  std::vector<std::string> names;
  for (const auto& [name, t] : weights) names.push_back(name);
  const std::int64_t seq = 8;
  exec::CpuExecutor exec(loss_gradient_graph(loss, 1, seq, names), {.numerics = exec::Numerics::f32, .threads = 1});
  Batch b;
  b.rows = 1;
  b.seq = seq;
  for (std::int64_t i = 0; i < seq; ++i) {
    b.tokens.push_back(static_cast<std::int32_t>(i * 7 % c.vocab_size));
    b.targets.push_back(static_cast<std::int32_t>((i * 7 + 7) % c.vocab_size));
    b.weights.push_back(i >= 4 ? 1.0f : 0.0f);  // a prompt of 4 targets, an answer of 4
  }
  b.trained = 4;
  const auto run = [&](const Batch& batch) {
    TensorMap feed = weights;
    fill_batch_feed(feed, batch, 0.25f);
    Tensor scale(DType::f32, {});
    scale.span<float>()[0] = 1.0f;
    feed["loss_scale"] = scale;
    return exec.run(feed);
  };
  const auto same = [](const std::vector<Tensor>& x, const std::vector<Tensor>& y) {
    for (std::size_t i = 0; i < x.size(); ++i) {
      const auto a = x[i].span<const float>(), c2 = y[i].span<const float>();
      if (std::memcmp(a.data(), c2.data(), a.size_bytes()) != 0) return false;
    }
    return true;
  };
  const std::vector<Tensor> base = run(b);
  Batch masked = b;
  masked.targets[1] = (masked.targets[1] + 13) % static_cast<std::int32_t>(c.vocab_size);
  EXPECT_TRUE(same(base, run(masked))) << "a masked target changed the loss or a gradient";
  Batch trained = b;
  trained.targets[5] = (trained.targets[5] + 13) % static_cast<std::int32_t>(c.vocab_size);
  const std::vector<Tensor> changed = run(trained);
  EXPECT_NE(base[0].span<const float>()[0], changed[0].span<const float>()[0]);
  for (std::size_t i = 1; i < base.size(); ++i) {
    const auto a = base[i].span<const float>(), c2 = changed[i].span<const float>();
    bool differs = false;
    for (std::size_t k = 0; k < a.size() && !differs; ++k) differs = a[k] != c2[k];
    // Every weight the answer's logits depend on: all of them (the embedding rows of unused
    // tokens have no gradient either way).
    if (names[i - 1].find("embed_tokens") == std::string::npos) {
      EXPECT_TRUE(differs) << names[i - 1];
    }
  }
}

}  // namespace
}  // namespace orion::train
