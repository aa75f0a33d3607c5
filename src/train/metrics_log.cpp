#include "train/metrics_log.h"

#include <cerrno>
#include <cmath>
#include <fcntl.h>
#include <filesystem>
#include <limits>
#include <optional>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "core/atomic_file.h"
#include "core/error.h"
#include "core/json_parse.h"
#include "core/mapped_file.h"

namespace orion::train {

namespace {

nlohmann::json number(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "Infinity" : "-Infinity";
  return v;
}

double get_double(const nlohmann::json& v, const char* key, std::string_view where) {
  if (v.is_number()) return v.get<double>();
  if (v.is_string()) {
    const auto& s = v.get_ref<const std::string&>();
    if (s == "NaN") return std::numeric_limits<double>::quiet_NaN();
    if (s == "Infinity") return std::numeric_limits<double>::infinity();
    if (s == "-Infinity") return -std::numeric_limits<double>::infinity();
  }
  throw Error(std::string(where) + ": \"" + key + "\" is " + v.dump() + ", not a number");
}

std::int64_t get_int(const nlohmann::json& v, const char* key, std::string_view where) {
  if (!v.is_number_integer()) throw Error(std::string(where) + ": \"" + key + "\" is " + v.dump() + ", not an integer");
  return v.get<std::int64_t>();
}

const nlohmann::json& required(const nlohmann::json& j, const char* key, std::string_view where) {
  if (!j.contains(key)) throw Error(std::string(where) + ": missing \"" + key + "\"");
  return j.at(key);
}

// Calls fn(line_number, line, terminated) for each line (numbers from 1; `line` without its
// newline; `terminated` false only for a last line with no newline after it).
template <typename Fn>
void for_each_line(std::string_view text, Fn&& fn) {
  std::int64_t number = 0;
  while (!text.empty()) {
    const std::size_t nl = text.find('\n');
    const bool terminated = nl != std::string_view::npos;
    fn(++number, text.substr(0, terminated ? nl : text.size()), terminated);
    text.remove_prefix(terminated ? nl + 1 : text.size());
  }
}

bool blank(std::string_view line) { return line.find_first_not_of(" \t\r") == std::string_view::npos; }

MetricsRecord parse_line(std::string_view line, std::string_view name, std::int64_t number) {
  JsonParseFailure failure;
  std::optional<nlohmann::json> j = try_parse_json(line, &failure);
  if (!j) {
    // nlohmann's message restates the location ("at line 1, column N"); keep the explanation.
    std::string why = failure.message;
    if (const auto at = why.find("syntax error"); at != std::string::npos) why = why.substr(at);
    throw Error::at_line(name, number, static_cast<std::int64_t>(failure.offset.value_or(0) + 1),
                         "not a JSON metrics record: " + why);
  }
  try {
    return metrics_record_from_json(*j, "metrics record");
  } catch (const Error& e) {
    throw Error::at_line(name, number, 1, e.what());
  }
}

std::string read_all(const std::string& path) {
  const auto file = MappedFile::open(path);
  return std::string(reinterpret_cast<const char*>(file->bytes().data()), file->size());
}

}  // namespace

nlohmann::json to_json(const MetricsRecord& r) {
  nlohmann::json j = {{"step", r.step}, {"loss", number(r.loss)}, {"lr", number(r.lr)},
                      {"tokens_per_s", number(r.tokens_per_s)}};
  if (r.val_loss) j["val_loss"] = number(*r.val_loss);
  if (r.grad_norm) j["grad_norm"] = number(*r.grad_norm);
  if (r.loss_scale) j["loss_scale"] = number(*r.loss_scale);
  if (r.skipped) j["skipped"] = *r.skipped;
  if (r.clamped) j["clamped"] = *r.clamped;
  if (r.time_s) j["time_s"] = number(*r.time_s);
  if (r.trained_tokens) j["trained_tokens"] = *r.trained_tokens;
  if (r.trained_tokens_per_s) j["trained_tokens_per_s"] = number(*r.trained_tokens_per_s);
  if (r.peak_mb) j["peak_mb"] = number(*r.peak_mb);
  return j;
}

MetricsRecord metrics_record_from_json(const nlohmann::json& j, std::string_view where) {
  if (!j.is_object()) throw Error(std::string(where) + ": expected a JSON object, found " + std::string(j.type_name()));
  MetricsRecord r;
  r.step = get_int(required(j, "step", where), "step", where);
  r.loss = get_double(required(j, "loss", where), "loss", where);
  r.lr = get_double(required(j, "lr", where), "lr", where);
  r.tokens_per_s = get_double(required(j, "tokens_per_s", where), "tokens_per_s", where);
  auto opt_double = [&](const char* key, std::optional<double>& out) {
    if (j.contains(key)) out = get_double(j.at(key), key, where);
  };
  auto opt_int = [&](const char* key, std::optional<std::int64_t>& out) {
    if (j.contains(key)) out = get_int(j.at(key), key, where);
  };
  opt_double("val_loss", r.val_loss);
  opt_double("grad_norm", r.grad_norm);
  opt_double("loss_scale", r.loss_scale);
  opt_double("time_s", r.time_s);
  opt_int("skipped", r.skipped);
  opt_int("clamped", r.clamped);
  opt_int("trained_tokens", r.trained_tokens);
  opt_double("trained_tokens_per_s", r.trained_tokens_per_s);
  opt_double("peak_mb", r.peak_mb);
  return r;
}

MetricsLog MetricsLog::open_for_append(const std::string& path) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) throw Error::from_errno(path, "cannot open the metrics log for appending", errno);
  return MetricsLog(path, fd);
}

MetricsLog MetricsLog::create(const std::string& path) {
  write_file_atomic(path, std::string_view());
  return open_for_append(path);
}

MetricsLog MetricsLog::resume(const std::string& path, std::int64_t step) {
  if (!std::filesystem::exists(path)) return create(path);
  const std::string text = read_all(path);
  std::string kept;
  kept.reserve(text.size());
  for_each_line(text, [&](std::int64_t number, std::string_view line, bool terminated) {
    if (!terminated) return;  // cut short by a kill: never a whole record
    if (!blank(line) && parse_line(line, path, number).step > step) return;
    kept.append(line);
    kept.push_back('\n');
  });
  if (kept != text) write_file_atomic(path, kept);
  return open_for_append(path);
}

MetricsLog::MetricsLog(MetricsLog&& other) noexcept : path_(std::move(other.path_)), fd_(other.fd_) { other.fd_ = -1; }

MetricsLog& MetricsLog::operator=(MetricsLog&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    path_ = std::move(other.path_);
    fd_ = other.fd_;
    other.fd_ = -1;
  }
  return *this;
}

MetricsLog::~MetricsLog() {
  if (fd_ >= 0) ::close(fd_);
}

void MetricsLog::append(const MetricsRecord& r) {
  const std::string line = to_json(r).dump() + "\n";
  std::string_view rest = line;
  while (!rest.empty()) {
    const ssize_t n = ::write(fd_, rest.data(), rest.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      throw Error::from_errno(path_, "cannot append to the metrics log", errno);
    }
    rest.remove_prefix(static_cast<std::size_t>(n));
  }
}

std::vector<MetricsRecord> parse_metrics(std::string_view text, std::string_view name) {
  std::vector<MetricsRecord> out;
  for_each_line(text, [&](std::int64_t number, std::string_view line, bool) {
    if (!blank(line)) out.push_back(parse_line(line, name, number));
  });
  return out;
}

std::vector<MetricsRecord> read_metrics(const std::string& path) { return parse_metrics(read_all(path), path); }

}  // namespace orion::train
