#include "train/data/jsonl_records.h"

#include <filesystem>
#include <fstream>

#include "core/error.h"
#include "train/data/token_file.h"

namespace orion::train {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

std::string format_of(const json& record) {
  if (record.contains("messages")) return "chat";
  if (record.contains("prompt") || record.contains("completion")) return "completion";
  if (record.contains("text")) return "text";
  return "";
}

// The keys each format may have, and which it must.
bool allowed(const std::string& format, const std::string& key) {
  if (format == "chat") return key == "messages" || key == "tools";
  if (format == "completion") return key == "prompt" || key == "completion";
  return key == "text";
}

std::string string_at(const json& record, const char* key) {
  if (!record.contains(key)) throw Error(std::string("the record has no \"") + key + "\"");
  if (!record.at(key).is_string()) throw Error(std::string("\"") + key + "\" is " + record.at(key).type_name() + ", not a string");
  return record.at(key).get<std::string>();
}

void check_messages(const json& messages) {
  if (!messages.is_array() || messages.empty()) throw Error("\"messages\" must be a non-empty array");
  for (std::size_t i = 0; i < messages.size(); ++i) {
    const json& m = messages[i];
    if (!m.is_object()) throw Error("message " + std::to_string(i) + " is not an object");
    if (!m.contains("role") || !m.at("role").is_string())
      throw Error("message " + std::to_string(i) + " has no \"role\" string");
    if (m.contains("content") && !m.at("content").is_string() && !m.at("content").is_null() && !m.at("content").is_array())
      throw Error("message " + std::to_string(i) + "'s \"content\" is " + m.at("content").type_name() +
                  ", not a string");
  }
}

EncodedRecord encode(const json& record, const std::string& format, const RecordEncoder& encoder, bool mask_prompt) {
  if (format == "text") return encoder.text(string_at(record, "text"));
  if (format == "completion")
    return encoder.completion(string_at(record, "prompt"), string_at(record, "completion"), mask_prompt);
  check_messages(record.at("messages"));
  const json tools = record.contains("tools") ? record.at("tools") : json();
  if (!tools.is_null() && !tools.is_array()) throw Error("\"tools\" must be an array");
  return encoder.chat(record.at("messages"), tools, mask_prompt);
}

}  // namespace

Records read_jsonl_records(const std::string& path, const RecordEncoder& encoder, bool mask_prompt, JsonlSummary* summary) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error::in_file(path, "cannot be opened");
  Records out;
  std::string line, format;
  std::int64_t first_line = 0;
  for (std::int64_t n = 1; std::getline(in, line); ++n) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    json record;
    try {
      record = json::parse(line);
    } catch (const json::parse_error& e) {
      // nlohmann's byte is 1-based within the line.
      throw Error::at_line(path, n, static_cast<std::int64_t>(std::max<std::size_t>(e.byte, 1)),
                           std::string("malformed JSON: ") + e.what());
    }
    try {
      if (!record.is_object()) throw Error(std::string("a record must be a JSON object, not ") + record.type_name());
      const std::string f = format_of(record);
      if (f.empty()) {
        const std::string key = record.empty() ? "" : record.begin().key();
        throw Error("unknown key \"" + key + "\": a record has \"text\", \"prompt\" and \"completion\", or \"messages\"");
      }
      for (auto it = record.begin(); it != record.end(); ++it)
        if (!allowed(f, it.key())) throw Error("unknown key \"" + it.key() + "\" in a " + f + " record");
      if (format.empty()) {
        format = f;
        first_line = n;
      } else if (f != format) {
        throw Error("a " + f + " record in a file of " + format + " records (line " + std::to_string(first_line) +
                    " is the first); one file holds one format");
      }
      const EncodedRecord r = encode(record, f, encoder, mask_prompt);
      out.add(r.tokens, r.mask);
    } catch (const Error& e) {
      throw Error::at_line(path, n, 1, e.what());
    }
  }
  if (out.count() == 0) throw Error::in_file(path, "holds no records");
  if (summary) *summary = {format, out.count()};
  return out;
}

JsonlDataset find_jsonl_dataset(const std::string& path) {
  std::error_code ec;
  if (fs::is_directory(path, ec)) {
    JsonlDataset d;
    const fs::path dir(path);
    for (auto [name, into] : {std::pair{"train.jsonl", &d.train}, {"valid.jsonl", &d.valid}, {"test.jsonl", &d.test}})
      if (fs::is_regular_file(dir / name, ec)) *into = (dir / name).string();
    if (d.train.empty()) throw Error::in_file(path, "has no train.jsonl (a dataset folder holds train.jsonl, valid.jsonl and optionally test.jsonl)");
    if (d.valid.empty()) throw Error::in_file(path, "has no valid.jsonl (a dataset folder holds train.jsonl, valid.jsonl and optionally test.jsonl)");
    return d;
  }
  if (!fs::is_regular_file(path, ec)) throw Error::in_file(path, "does not exist");
  return {path, "", ""};
}

PreparedJsonl prepare_jsonl(const std::string& model_dir, const std::string& data, bool mask_prompt, const std::string& out) {
  const JsonlDataset files = find_jsonl_dataset(data);
  const RecordEncoder encoder = RecordEncoder::load(model_dir);
  PreparedJsonl p;
  Records parts[3];
  const std::string* paths[3] = {&files.train, &files.valid, &files.test};
  JsonlSummary* summaries[3] = {&p.train, &p.valid, &p.test};
  for (int i = 0; i < 3; ++i)
    if (!paths[i]->empty()) {
      parts[i] = read_jsonl_records(*paths[i], encoder, mask_prompt, summaries[i]);
      p.tokens += parts[i].tokens.size();
    }
  write_record_file(out, encoder.vocab_size(), static_cast<std::uint64_t>(encoder.eot_id()), parts[0], parts[1], parts[2]);
  return p;
}

bool is_jsonl_data(const std::string& path) {
  std::error_code ec;
  return path.ends_with(".jsonl") || fs::is_directory(path, ec);
}

}  // namespace orion::train
