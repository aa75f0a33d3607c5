#pragma once
// A training run's metrics: metrics.jsonl, one JSON object per line, one line per logged step.
//
//   {"step": 120, "loss": 5.91, "lr": 0.0003, "tokens_per_s": 5210.4, "val_loss": 6.02,
//    "grad_norm": 1.3, "loss_scale": 65536, "skipped": 0, "clamped": 12, "time_s": 61.2,
//    "trained_tokens": 1841, "trained_tokens_per_s": 4012.5, "peak_mb": 812.0}
//
// tokens_per_s counts every position run (padding included); trained_tokens the targets the
// loss covered in the step (a masked prompt's and padding's not), and trained_tokens_per_s them
// over the step's time; peak_mb is the process's peak resident memory so far.
//
// step, loss, lr and tokens_per_s are always there; the others only when the trainer has them
// (val_loss on evaluation steps, loss_scale, skipped and clamped in f16). Numbers that are not
// finite are written as the strings "NaN", "Infinity" and "-Infinity" (JSON has no literal for
// them). Readers ignore fields they do not know.
//
// Each line goes to the file in one write() as it is logged, so a killed run keeps every line it
// logged (a power cut may still lose the last ones: lines are not fsynced, which would cost a
// disk flush per step). A resumed run first drops the lines past the step it resumes from, so
// the curves never double back.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace orion::train {

struct MetricsRecord {
  std::int64_t step = 0;
  double loss = 0.0;
  double lr = 0.0;
  double tokens_per_s = 0.0;
  std::optional<double> val_loss, grad_norm, loss_scale, time_s;
  std::optional<std::int64_t> skipped, clamped;
  std::optional<std::int64_t> trained_tokens;
  std::optional<double> trained_tokens_per_s, peak_mb;

  friend bool operator==(const MetricsRecord&, const MetricsRecord&) = default;
};

nlohmann::json to_json(const MetricsRecord& r);
// Throws orion::Error "WHERE: MESSAGE" naming the field when one is missing or of the wrong type.
MetricsRecord metrics_record_from_json(const nlohmann::json& j, std::string_view where);

class MetricsLog {
 public:
  // A fresh log: PATH is replaced (atomically) by an empty file and opened for appending.
  static MetricsLog create(const std::string& path);
  // Continues a run resumed after `step`: the lines of PATH with a step above it are dropped by
  // rewriting the file atomically (the others are kept byte for byte), then the log appends. A
  // last line without its newline (a write cut short by a kill) is dropped too; any other line
  // that is not a valid record is an error naming PATH:LINE. A missing PATH starts empty.
  static MetricsLog resume(const std::string& path, std::int64_t step);

  MetricsLog(MetricsLog&& other) noexcept;
  MetricsLog& operator=(MetricsLog&& other) noexcept;
  MetricsLog(const MetricsLog&) = delete;
  MetricsLog& operator=(const MetricsLog&) = delete;
  ~MetricsLog();

  // One line, written in one write() call. Throws orion::Error naming the file on failure.
  void append(const MetricsRecord& r);
  const std::string& path() const { return path_; }

 private:
  MetricsLog(std::string path, int fd) : path_(std::move(path)), fd_(fd) {}
  static MetricsLog open_for_append(const std::string& path);
  std::string path_;
  int fd_ = -1;
};

// Every record of a metrics file, in file order; blank lines are skipped. A line that is not
// JSON, not an object, or lacks a field is an error "PATH:LINE:COLUMN: MESSAGE".
std::vector<MetricsRecord> read_metrics(const std::string& path);
// The same from text; `name` stands for the file in errors.
std::vector<MetricsRecord> parse_metrics(std::string_view text, std::string_view name);

}  // namespace orion::train
