#pragma once
// JSONL training data, in the formats mlx-lm's LoRA trainer and TRL read: one JSON object per
// line, {"text"}, {"prompt", "completion"} or {"messages"[, "tools"]}, the format told by each
// record's keys and the same throughout a file; blank lines are skipped. A dataset is a folder
// with train.jsonl, valid.jsonl and optionally test.jsonl, or one .jsonl file (training only).
// Errors name the file and line: malformed JSON, a record that is not an object, an unknown or
// mistyped key, a file mixing formats, an empty file, and the encoder's (a role the template
// refuses, no assistant turn under mask_prompt).
#include <cstddef>
#include <optional>
#include <string>

#include "train/data/record_encoder.h"
#include "train/data/records.h"

namespace orion::train {

struct JsonlSummary {
  std::string format;  // "text", "completion" or "chat"
  std::size_t records = 0;
};

// Every record of `path`, encoded. Throws orion::Error "PATH:LINE:COL: ..." for a bad record.
Records read_jsonl_records(const std::string& path, const RecordEncoder& encoder, bool mask_prompt,
                           JsonlSummary* summary = nullptr);

// A dataset's files: DIR/train.jsonl, DIR/valid.jsonl (both required) and DIR/test.jsonl (when
// present), or a single FILE.jsonl as the training split. Errors name what is missing.
struct JsonlDataset {
  std::string train, valid, test;  // empty: none
};
JsonlDataset find_jsonl_dataset(const std::string& path);
// A JSONL dataset tokenized for model folder `model_dir` into the record file `out` (written
// atomically: an interrupted run leaves no half-written file). Returns each split's summary.
struct PreparedJsonl {
  JsonlSummary train, valid, test;  // records 0: no such split
  Records::size_type tokens = 0;
};
PreparedJsonl prepare_jsonl(const std::string& model_dir, const std::string& data, bool mask_prompt, const std::string& out);

// Whether `path` names JSONL data (a folder, which must then hold train.jsonl, or a .jsonl
// file) rather than a token file.
bool is_jsonl_data(const std::string& path);

}  // namespace orion::train
