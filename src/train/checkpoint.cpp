#include "train/checkpoint.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>
#include <unistd.h>

#include "core/atomic_file.h"
#include "core/atomic_folder.h"
#include "core/content_hash.h"
#include "core/error.h"
#include "core/json_parse.h"
#include "model/formats/safetensors.h"
#include "model/model_folder.h"

namespace orion::train {

namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr const char* kFormat = "orion-checkpoint";
constexpr const char* kManifest = "checkpoint.json";
constexpr const char* kConfig = model::kConfigFile;
constexpr const char* kModel = model::kWeightsFile;
constexpr const char* kOptimizer = "optimizer.safetensors";
constexpr std::string_view kPrefix = "step-";

// The step of a checkpoint folder's name ("step-" and at least 8 digits), or -1.
std::int64_t step_of(const std::string& name) {
  if (!name.starts_with(kPrefix) || name.size() < kPrefix.size() + 8 || name.size() > kPrefix.size() + 18) return -1;
  std::int64_t step = 0;
  for (const char c : std::string_view(name).substr(kPrefix.size())) {
    if (c < '0' || c > '9') return -1;
    step = step * 10 + (c - '0');
  }
  return name == checkpoint_folder_name(step) ? step : -1;
}

// Folders our own saves and removals leave behind when interrupted: ".step-...tmp.XXXXXX"
// (AtomicFolderWriter), ".step-...old.XXXXXX" (its swap) and ".step-...del.PID" (pruning).
bool is_leftover(const std::string& name) {
  return name.starts_with(".step-") &&
         (name.find(".tmp.") != std::string::npos || name.find(".old.") != std::string::npos ||
          name.find(".del.") != std::string::npos);
}

struct Entry {
  std::int64_t step;
  fs::path path;
};

// The checkpoint folders of out_dir, newest first.
std::vector<Entry> list_checkpoints(const fs::path& out_dir) {
  std::vector<Entry> found;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(out_dir, ec)) {
    const std::int64_t step = step_of(e.path().filename().string());
    if (step >= 0 && e.is_directory(ec)) found.push_back({step, e.path()});
  }
  if (ec) throw Error::in_file(out_dir.string(), "cannot list the folder: " + ec.message());
  std::sort(found.begin(), found.end(), [](const Entry& a, const Entry& b) { return a.step > b.step; });
  return found;
}

// Out of sight first (one rename), then deleted: a half-deleted checkpoint is never seen
// under a checkpoint's name.
void remove_folder(const fs::path& dir) {
  const fs::path doomed = dir.parent_path() / ("." + dir.filename().string() + ".del." + std::to_string(::getpid()));
  std::error_code ec;
  fs::rename(dir, doomed, ec);
  if (ec) throw Error::in_file(dir.string(), "cannot move it aside to remove it: " + ec.message());
  fs::remove_all(doomed, ec);
  if (ec) throw Error::in_file(doomed.string(), "cannot remove: " + ec.message());
}

void copy_file_atomic(const std::string& from, const std::string& to) {
  std::ifstream in(from, std::ios::binary);
  if (!in) throw Error::in_file(from, "cannot read the model file to copy into the checkpoint");
  AtomicFileWriter out(to);
  std::vector<char> buf(1 << 20);
  while (in) {
    in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
    const auto got = static_cast<std::size_t>(in.gcount());
    if (got > 0) out.write(std::span<const std::byte>(reinterpret_cast<const std::byte*>(buf.data()), got));
  }
  if (in.bad()) throw Error::in_file(from, "read error while copying it into the checkpoint");
  out.commit();
}

std::string file_hash(const std::string& path) {
  ContentHasher h;
  h.update_file(path);
  return h.hex();
}

std::vector<std::pair<std::string, Tensor>> as_list(const TensorMap& b) {
  return {b.begin(), b.end()};
}

TensorMap read_tensors(const std::string& path) {
  const model::SafetensorsFile file = model::SafetensorsFile::open(path);
  TensorMap out;
  for (const model::SafetensorsEntry& e : file.entries()) out.emplace(e.name, file.tensor(e.name).clone());
  return out;
}

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error::in_file(path, "cannot read");
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

}  // namespace

std::string checkpoint_folder_name(std::int64_t step) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "step-%08lld", static_cast<long long>(step));
  return buf;
}

void save_checkpoint(const std::string& out_dir, const CheckpointData& data, int keep_last) {
  if (data.step < 0) throw Error::in_file(out_dir, "cannot save a checkpoint of negative step " + std::to_string(data.step));
  if (!data.params) throw Error::in_file(out_dir, "save_checkpoint: no parameters given");
  if (data.config_json.empty()) throw Error::in_file(out_dir, "save_checkpoint: the model's config.json is empty");
  const fs::path out(out_dir);
  std::error_code ec;
  fs::create_directories(out, ec);
  if (ec) throw Error::in_file(out_dir, "cannot create the folder: " + ec.message());
  std::vector<fs::path> leftovers;
  for (const auto& e : fs::directory_iterator(out, ec))
    if (is_leftover(e.path().filename().string())) leftovers.push_back(e.path());
  for (const fs::path& p : leftovers) fs::remove_all(p, ec);

  const fs::path target = out / checkpoint_folder_name(data.step);
  AtomicFolderWriter folder(target.string());
  for (const std::string& name : {data.config_file, data.weights_file})
    if (name.empty() || name == kOptimizer || name == kManifest || name.find('/') != std::string::npos)
      throw Error::in_file(out_dir, "save_checkpoint: '" + name + "' cannot name the checkpoint's config or weights");
  std::vector<std::string> names = {data.config_file, data.weights_file, kOptimizer};
  write_file_atomic(folder.file(data.config_file), data.config_json);
  model::write_safetensors(folder.file(data.weights_file), as_list(*data.params), {{"format", "pt"}});
  model::write_safetensors(folder.file(kOptimizer), as_list(data.optimizer));
  for (const std::string& src : data.model_files) {
    const std::string name = fs::path(src).filename().string();
    if (std::find(names.begin(), names.end(), name) != names.end() || name == kManifest)
      throw Error::in_file(src, "cannot be copied into the checkpoint: " + name + " is one of its own files");
    copy_file_atomic(src, folder.file(name));
    names.push_back(name);
  }
  // The checksums are of the bytes on disk, read back: what a later load will compare.
  json files = json::object();
  for (const std::string& name : names) {
    const std::string path = folder.file(name);
    files[name] = {{"bytes", fs::file_size(path)}, {"xxh3_128", file_hash(path)}};
  }
  const json manifest = {{"format", kFormat}, {"version", kCheckpointVersion}, {"step", data.step},
                         {"config", data.config_file}, {"weights", data.weights_file},
                         {"files", files},    {"state", data.state}};
  write_file_atomic(folder.file(kManifest), manifest.dump(2) + "\n");
  folder.commit(/*replace=*/true);

  if (keep_last < 1) return;
  const std::vector<Entry> all = list_checkpoints(out);
  for (std::size_t i = static_cast<std::size_t>(keep_last); i < all.size(); ++i)
    if (all[i].step != data.step) remove_folder(all[i].path);
}

std::optional<LoadedCheckpoint> load_checkpoint(const std::string& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return std::nullopt;
  const fs::path root(dir);
  const std::string manifest_path = (root / kManifest).string();
  if (!fs::exists(manifest_path, ec)) throw Error::in_file(manifest_path, "missing (an incomplete checkpoint)");
  const std::string text = read_text(manifest_path);
  const json m = parse_json(text, manifest_path);
  const auto bad = [&](const std::string& where, const std::string& what) -> Error {
    return Error::in_file(manifest_path, where + ": " + what);
  };
  if (!m.is_object()) throw bad("/", "expected an object");
  if (m.value("format", json()) != kFormat) throw bad("/format", std::string("expected \"") + kFormat + "\"");
  if (!m.contains("version") || !m.at("version").is_number_integer()) throw bad("/version", "expected an integer");
  if (m.at("version").get<std::int64_t>() != kCheckpointVersion)
    throw bad("/version", "version " + m.at("version").dump() + " is not the supported " + std::to_string(kCheckpointVersion));
  if (!m.contains("step") || !m.at("step").is_number_integer() || m.at("step").get<std::int64_t>() < 0)
    throw bad("/step", "expected a non-negative integer");
  if (!m.contains("state")) throw bad("/state", "missing");
  if (!m.contains("files") || !m.at("files").is_object()) throw bad("/files", "expected an object");
  const json& files = m.at("files");
  // Checkpoints from before LoRA runs name no config and weights files: a model folder's.
  const auto file_name = [&](const char* key, const char* otherwise) {
    if (!m.contains(key)) return std::string(otherwise);
    if (!m.at(key).is_string()) throw bad(std::string("/") + key, "expected a file name");
    return m.at(key).get<std::string>();
  };
  const std::string config_file = file_name("config", kConfig), weights_file = file_name("weights", kModel);
  for (const std::string& required : {config_file, weights_file, std::string(kOptimizer)})
    if (!files.contains(required)) throw bad("/files", std::string("does not list ") + required);
  for (const auto& [name, f] : files.items()) {
    const std::string where = "/files/" + name;
    if (name.empty() || name == "." || name == ".." || name == kManifest || name.find_first_of(std::string_view("/\0", 2)) != std::string::npos)
      throw bad(where, "not a file name of the checkpoint");
    if (!f.is_object() || !f.contains("bytes") || !f["bytes"].is_number_unsigned() || !f.contains("xxh3_128") ||
        !f["xxh3_128"].is_string())
      throw bad(where, "expected {\"bytes\": size, \"xxh3_128\": hex}");
    const std::string path = (root / name).string();
    if (!fs::is_regular_file(path, ec)) throw Error::in_file(path, "missing (listed in checkpoint.json)");
    const std::uintmax_t size = fs::file_size(path, ec);
    const auto expected = f["bytes"].get<std::uintmax_t>();
    if (ec || size != expected)
      throw Error::in_file(path, "is " + std::to_string(size) + " bytes, checkpoint.json says " + std::to_string(expected));
    const std::string hash = file_hash(path);
    if (hash != f["xxh3_128"].get<std::string>())
      throw Error::in_file(path, "checksum mismatch: the content hashes to " + hash + ", checkpoint.json says " +
                                     f["xxh3_128"].get<std::string>());
  }
  LoadedCheckpoint out;
  out.dir = dir;
  out.step = m.at("step").get<std::int64_t>();
  out.state = m.at("state");
  out.config_file = config_file;
  out.weights_file = weights_file;
  out.config_json = read_text((root / config_file).string());
  out.params = read_tensors((root / weights_file).string());
  out.optimizer = read_tensors((root / kOptimizer).string());
  return out;
}

bool has_checkpoint_folders(const std::string& out_dir) {
  std::error_code ec;
  return fs::is_directory(out_dir, ec) && !list_checkpoints(out_dir).empty();
}

std::optional<LoadedCheckpoint> load_latest_checkpoint(const std::string& out_dir) {
  std::error_code ec;
  if (!fs::is_directory(out_dir, ec)) return std::nullopt;
  for (const auto& e : fs::directory_iterator(out_dir, ec))
    if (is_leftover(e.path().filename().string()))
      std::fprintf(stderr, "orion: warning: ignoring %s: left by an interrupted checkpoint save or removal\n",
                   e.path().string().c_str());
  for (const Entry& e : list_checkpoints(out_dir)) {
    try {
      std::optional<LoadedCheckpoint> c = load_checkpoint(e.path.string());
      if (!c) continue;  // removed since it was listed
      if (c->step != e.step)
        throw Error::in_file((e.path / kManifest).string(),
                             "says step " + std::to_string(c->step) + ", the folder's name step " + std::to_string(e.step));
      return c;
    } catch (const Error& err) {
      std::fprintf(stderr, "orion: warning: skipping checkpoint %s: %s\n", e.path.string().c_str(), err.what());
    }
  }
  return std::nullopt;
}

}  // namespace orion::train
