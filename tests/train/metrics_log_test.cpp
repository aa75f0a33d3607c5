#include "train/metrics_log.h"

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <sstream>

#include "core/error.h"
#include "core/temp_folder.h"

namespace orion::train {
namespace {

std::string read_text(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

MetricsRecord record(std::int64_t step) {
  MetricsRecord r;
  r.step = step;
  r.loss = 10.0 - 0.5 * static_cast<double>(step);
  r.lr = 1e-4 * static_cast<double>(step + 1);
  r.tokens_per_s = 1000.0 + static_cast<double>(step);
  r.time_s = 0.25 * static_cast<double>(step);
  return r;
}

class MetricsLogTest : public ::testing::Test {
 protected:
  TempFolder dir_{"orion-metrics-test"};
  std::string path_ = dir_.path() + "/metrics.jsonl";
};

TEST_F(MetricsLogTest, WritesOneObjectPerLineAndReadsItBack) {
  MetricsRecord full = record(3);
  full.val_loss = 7.25;
  full.grad_norm = 1.5;
  full.loss_scale = 65536;
  full.skipped = 2;
  full.clamped = 17;
  {
    MetricsLog log = MetricsLog::create(path_);
    log.append(record(1));
    log.append(record(2));
    // Visible before the log is closed: each line is written as it is logged.
    EXPECT_EQ(read_metrics(path_).size(), 2u);
    log.append(full);
  }
  const std::string text = read_text(path_);
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 3);
  EXPECT_EQ(text.substr(0, text.find('\n')), R"({"loss":9.5,"lr":0.0002,"step":1,"time_s":0.25,"tokens_per_s":1001.0})");
  const auto back = read_metrics(path_);
  ASSERT_EQ(back.size(), 3u);
  EXPECT_EQ(back[0], record(1));
  EXPECT_EQ(back[2], full);
}

TEST_F(MetricsLogTest, NonFiniteNumbersSurviveTheRoundTrip) {
  MetricsRecord r = record(0);
  r.loss = std::nan("");
  r.grad_norm = -INFINITY;
  MetricsLog::create(path_).append(r);
  EXPECT_NE(read_text(path_).find(R"("loss":"NaN")"), std::string::npos);
  const auto back = read_metrics(path_);
  EXPECT_TRUE(std::isnan(back.at(0).loss));
  EXPECT_EQ(*back.at(0).grad_norm, -INFINITY);
}

TEST_F(MetricsLogTest, CreateStartsAFreshLog) {
  MetricsLog::create(path_).append(record(5));
  MetricsLog::create(path_).append(record(0));
  const auto back = read_metrics(path_);
  ASSERT_EQ(back.size(), 1u);
  EXPECT_EQ(back[0].step, 0);
}

TEST_F(MetricsLogTest, ResumeDropsTheStepsPastTheCheckpointAndATornLine) {
  {
    MetricsLog log = MetricsLog::create(path_);
    for (int s = 0; s < 10; ++s) log.append(record(s));
  }
  // A kill in the middle of a write leaves part of a line.
  std::ofstream(path_, std::ios::app) << R"({"step":10,"lo)";
  {
    MetricsLog log = MetricsLog::resume(path_, 6);
    EXPECT_EQ(read_metrics(path_).size(), 7u);
    for (int s = 7; s < 12; ++s) log.append(record(s));
  }
  const auto back = read_metrics(path_);
  ASSERT_EQ(back.size(), 12u);
  for (int s = 0; s < 12; ++s) EXPECT_EQ(back[static_cast<std::size_t>(s)], record(s));
}

TEST_F(MetricsLogTest, ResumeKeepsTheKeptLinesByteForByte) {
  const std::string original = "{\"step\": 0, \"loss\": 9, \"lr\": 0.1, \"tokens_per_s\": 5, \"note\": \"x\"}\n\n"
                               "{\"step\": 1, \"loss\": 8, \"lr\": 0.1, \"tokens_per_s\": 5}\n"
                               "{\"step\": 2, \"loss\": 7, \"lr\": 0.1, \"tokens_per_s\": 5}\n";
  std::ofstream(path_) << original;
  MetricsLog::resume(path_, 1);
  EXPECT_EQ(read_text(path_), original.substr(0, original.rfind("{\"step\": 2")));
  MetricsLog::resume(path_, 100);
  EXPECT_EQ(read_text(path_), original.substr(0, original.rfind("{\"step\": 2")));
}

TEST_F(MetricsLogTest, ResumeWithoutAFileStartsOne) {
  MetricsLog::resume(path_, 3).append(record(4));
  EXPECT_EQ(read_metrics(path_).size(), 1u);
}

TEST_F(MetricsLogTest, ABadLineIsReportedWithItsLineNumber) {
  auto error = [](std::string_view text) {
    try {
      parse_metrics(text, "run/metrics.jsonl");
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("(no error)");
  };
  const std::string good = R"({"step": 1, "loss": 2, "lr": 0.1, "tokens_per_s": 5})";
  EXPECT_EQ(error(good + "\n" + good + "\n{\"step\": 3, \"loss\": 2,, }\n").substr(0, 26), "run/metrics.jsonl:3:23: no");
  const std::string missing = error(good + "\n{\"step\": 2, \"lr\": 0.1, \"tokens_per_s\": 5}\n");
  EXPECT_EQ(missing, "run/metrics.jsonl:2:1: metrics record: missing \"loss\"");
  EXPECT_EQ(error("[1, 2]\n"), "run/metrics.jsonl:1:1: metrics record: expected a JSON object, found array");
  EXPECT_EQ(error(R"({"step": 1.5, "loss": 2, "lr": 0.1, "tokens_per_s": 5})"),
            "run/metrics.jsonl:1:1: metrics record: \"step\" is 1.5, not an integer");
  EXPECT_EQ(error(R"({"step": 1, "loss": "low", "lr": 0.1, "tokens_per_s": 5})"),
            "run/metrics.jsonl:1:1: metrics record: \"loss\" is \"low\", not a number");
  // Neither a number beyond a double nor deep nesting escapes as anything but orion::Error.
  const std::string huge = error(good + "\n" + R"({"step": 2, "loss": 1e999, "lr": 0.1, "tokens_per_s": 5})");
  EXPECT_TRUE(huge.starts_with("run/metrics.jsonl:2:1: not a JSON metrics record: ")) << huge;
  EXPECT_EQ(error(std::string(100, '[') + std::string(100, ']')),
            "run/metrics.jsonl:1:65: not a JSON metrics record: JSON nested more than 64 levels deep");
  // resume refuses a bad line that is not the torn last one, and leaves the file alone.
  std::ofstream(dir_.path() + "/m.jsonl") << good << "\nnot json\n" << good << "\n";
  EXPECT_THROW(MetricsLog::resume(dir_.path() + "/m.jsonl", 0), Error);
  EXPECT_EQ(read_text(dir_.path() + "/m.jsonl"), good + "\nnot json\n" + good + "\n");
}

}  // namespace
}  // namespace orion::train
