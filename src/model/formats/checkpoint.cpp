#include "model/formats/checkpoint.h"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "model/formats/config_json.h"
#include "model/formats/folder_files.h"

namespace orion::model {

namespace fs = std::filesystem;
using nlohmann::json;

Checkpoint Checkpoint::open(const std::string& dir) {
  const fs::path d(dir);
  if (fs::exists(d / kWeightsFile) || !fs::exists(d / kShardIndexFile)) return single(SafetensorsFile::open((d / kWeightsFile).string()));
  return from_index((d / kShardIndexFile).string());
}

Checkpoint Checkpoint::single(SafetensorsFile file) {
  Checkpoint c;
  c.path_ = file.path();
  for (const SafetensorsEntry& e : file.entries()) c.where_.emplace(e.name, 0);
  c.files_.push_back(std::move(file));
  return c;
}

Checkpoint Checkpoint::from_index(const std::string& index_path) {
  const json j = parse_config_object(read_config_text(index_path), index_path);
  auto map = j.find("weight_map");
  if (map == j.end() || !map->is_object() || map->empty())
    throw Error::in_file(index_path, "key \"weight_map\" must be a non-empty object of tensor name to shard file");
  Checkpoint c;
  c.path_ = index_path;
  const fs::path dir = fs::path(index_path).parent_path();
  std::map<std::string, std::size_t> shard_index;
  for (const auto& [tensor, shard] : map->items()) {
    if (!shard.is_string())
      throw Error::in_file(index_path, "\"weight_map\": tensor " + tensor + " names " + shard.dump() + ", not a file name");
    const std::string file = shard.get<std::string>();
    // A shard is a file beside the index: a path elsewhere is refused rather than followed.
    if (file.empty() || file.find('/') != std::string::npos || file.find('\\') != std::string::npos || file == "." ||
        file == "..")
      throw Error::in_file(index_path, "\"weight_map\": tensor " + tensor + " names the shard \"" + file +
                                           "\", which is not a file name in the model folder");
    auto [it, fresh] = shard_index.try_emplace(file, c.files_.size());
    if (fresh) {
      const fs::path p = dir / file;
      if (!fs::exists(p))
        throw Error::in_file(index_path, "\"weight_map\": tensor " + tensor + " is in the shard " + file +
                                             ", which is missing from " + dir.string());
      c.files_.push_back(SafetensorsFile::open(p.string()));
    }
    const SafetensorsFile& f = c.files_[it->second];
    if (!f.find(tensor))
      throw Error::in_file(f.path(), "has no tensor " + tensor + ", which " + index_path + " places in it");
    c.where_.emplace(tensor, it->second);
  }
  for (std::size_t i = 0; i < c.files_.size(); ++i)
    for (const SafetensorsEntry& e : c.files_[i].entries()) {
      auto w = c.where_.find(e.name);
      if (w == c.where_.end())
        throw Error::in_file(c.files_[i].path(), "holds tensor " + e.name + ", which " + index_path + " does not list");
      if (w->second != i)
        throw Error::in_file(c.files_[i].path(), "holds tensor " + e.name + ", which " + index_path + " places in " +
                                                     fs::path(c.files_[w->second].path()).filename().string());
    }
  return c;
}

std::string shard_file_name(std::int64_t index, std::int64_t count) {
  char name[64];
  std::snprintf(name, sizeof name, "model-%05lld-of-%05lld.safetensors", static_cast<long long>(index),
                static_cast<long long>(count));
  return name;
}

bool is_checkpoint_file(std::string_view name) {
  if (name == kWeightsFile || name == kShardIndexFile) return true;
  return name.size() == shard_file_name(1, 1).size() && name.starts_with("model-") && name.ends_with(".safetensors") &&
         name.substr(11, 4) == "-of-";
}

void write_checkpoint(const std::string& dir, const std::vector<std::pair<std::string, Tensor>>& tensors,
                      const CheckpointLayout& layout) {
  if (layout.shards < 1 || layout.shards > 99999) throw Error("shards must be 1 to 99999, not " + std::to_string(layout.shards));
  std::vector<std::pair<std::string, Tensor>> stored;
  std::uint64_t total = 0;
  for (const auto& [name, t] : tensors) {
    stored.emplace_back(name, is_float(t.dtype()) && t.dtype() != layout.dtype ? t.to(layout.dtype) : t);
    total += static_cast<std::uint64_t>(stored.back().second.nbytes());
  }
  const fs::path d(dir);
  if (layout.shards == 1) {
    write_safetensors((d / kWeightsFile).string(), stored, {{"format", "pt"}});
    return;
  }
  if (static_cast<std::int64_t>(stored.size()) < layout.shards)
    throw Error(std::to_string(layout.shards) + " shards for " + std::to_string(stored.size()) + " tensors: fewer shards, please");
  json map = json::object();
  std::size_t next = 0;
  std::uint64_t written = 0;
  for (std::int64_t s = 1; s <= layout.shards; ++s) {
    // This shard ends where the bytes so far reach s / shards of the total, leaving a tensor for
    // every later shard.
    std::vector<std::pair<std::string, Tensor>> part;
    const std::uint64_t goal = total * static_cast<std::uint64_t>(s) / static_cast<std::uint64_t>(layout.shards);
    while (next < stored.size() && (part.empty() || written < goal) &&
           stored.size() - next > static_cast<std::size_t>(layout.shards - s)) {
      written += static_cast<std::uint64_t>(stored[next].second.nbytes());
      part.push_back(stored[next++]);
    }
    if (s == layout.shards)
      while (next < stored.size()) part.push_back(stored[next++]);
    const std::string file = shard_file_name(s, layout.shards);
    for (const auto& [name, t] : part) map[name] = file;
    write_safetensors((d / file).string(), part, {{"format", "pt"}});
  }
  const json index = {{"metadata", {{"total_size", total}}}, {"weight_map", map}};
  std::ofstream f(d / kShardIndexFile, std::ios::binary);
  f << index.dump(2) << "\n";
  if (!f.flush()) throw Error::in_file((d / kShardIndexFile).string(), "cannot be written");
}

const SafetensorsFile* Checkpoint::file_of(std::string_view name) const {
  auto it = where_.find(name);
  return it == where_.end() ? nullptr : &files_[it->second];
}

}  // namespace orion::model
