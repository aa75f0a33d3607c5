#include "compile/ane/ane_package.h"

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <utility>

#include "compile/ane/ane_rules.h"
#include "core/error.h"
#include "core/json_parse.h"

namespace orion::compile {

namespace {

using nlohmann::json;

// Reading an untrusted manifest: every access names the JSON path it failed at.
class Reader {
 public:
  explicit Reader(std::string file) : file_(std::move(file)) {}

  [[noreturn]] void fail(const std::string& path, const std::string& problem) const {
    throw Error::in_file(file_, "at " + (path.empty() ? std::string("/") : path) + ": " + problem);
  }
  const json& field(const json& j, const std::string& path, const char* key) const {
    if (!j.is_object()) fail(path, "expected an object");
    auto it = j.find(key);
    if (it == j.end()) fail(path, std::string("missing \"") + key + "\"");
    return *it;
  }
  std::string str(const json& j, const std::string& path, const char* key) const {
    const json& v = field(j, path, key);
    if (!v.is_string()) fail(path + "/" + key, "expected a string");
    return v.get<std::string>();
  }
  std::int64_t integer(const json& j, const std::string& path, const char* key, std::int64_t min = 0) const {
    const json& v = field(j, path, key);
    if (!v.is_number_integer()) fail(path + "/" + key, "expected an integer");
    const std::int64_t x = v.get<std::int64_t>();
    if (x < min) fail(path + "/" + key, "expected at least " + std::to_string(min) + ", found " + std::to_string(x));
    return x;
  }
  bool boolean(const json& j, const std::string& path, const char* key) const {
    const json& v = field(j, path, key);
    if (!v.is_boolean()) fail(path + "/" + key, "expected true or false");
    return v.get<bool>();
  }
  const json& array(const json& j, const std::string& path, const char* key) const {
    const json& v = field(j, path, key);
    if (!v.is_array()) fail(path + "/" + key, "expected an array");
    return v;
  }
  Shape shape(const json& j, const std::string& path, const char* key) const {
    Shape s;
    const json& a = array(j, path, key);
    for (std::size_t i = 0; i < a.size(); ++i) {
      if (!a[i].is_number_integer() || a[i].get<std::int64_t>() <= 0 || a[i].get<std::int64_t>() > (1LL << 40))
        fail(path + "/" + key + "/" + std::to_string(i), "expected a positive dimension");
      s.push_back(a[i].get<std::int64_t>());
    }
    if (s.size() > 8) fail(path + "/" + key, "more than 8 dimensions");
    return s;
  }
  std::vector<std::string> strings(const json& j, const std::string& path, const char* key) const {
    std::vector<std::string> out;
    const json& a = array(j, path, key);
    for (std::size_t i = 0; i < a.size(); ++i) {
      if (!a[i].is_string()) fail(path + "/" + key + "/" + std::to_string(i), "expected a string");
      out.push_back(a[i].get<std::string>());
    }
    return out;
  }
  // Rows or columns of a param: [axis 0 or 1, begin, end > begin].
  WeightPart weight_part(const json& part, const std::string& path) const {
    if (!part.is_array() || part.size() != 3 || !part[0].is_number_integer() || !part[1].is_number_integer() ||
        !part[2].is_number_integer() || part[0].get<int>() < 0 || part[0].get<int>() > 1 ||
        part[1].get<std::int64_t>() < 0 || part[2].get<std::int64_t>() <= part[1].get<std::int64_t>())
      fail(path, "expected [axis 0 or 1, begin, end > begin]");
    return {part[0].get<int>(), part[1].get<std::int64_t>(), part[2].get<std::int64_t>()};
  }
  // A name that is safe as a folder below the package: no separators, no "..".
  std::string folder_name(const json& j, const std::string& path, const char* key) const {
    std::string s = str(j, path, key);
    if (s.empty() || s == "." || s == ".." || s.find_first_of("/\\") != std::string::npos)
      fail(path + "/" + key, "\"" + s + "\" is not a plain folder name");
    return s;
  }

 private:
  std::string file_;
};

json io_tensor_json(const KernelIoTensor& t) {
  json j = {{"name", t.name}, {"logical", t.logical}, {"padded", t.padded}, {"bytes", t.bytes}};
  if (t.fixed) j["fixed"] = true;  // absent: the kernel's tokens, as every package before it wrote
  if (!t.weight.empty()) j["weight"] = t.weight;  // absent: an activation
  if (t.weight_axis >= 0) j["weight_part"] = {t.weight_axis, t.weight_begin, t.weight_end};  // absent: all of it
  return j;
}

json value_json(const PackageValue& v) {
  return {{"name", v.name}, {"value", v.value}, {"dtype", std::string(dtype_name(v.dtype))}, {"shape", v.shape}};
}

KernelIoTensor read_io_tensor(const Reader& r, const json& j, const std::string& p) {
  KernelIoTensor t;
  t.name = r.str(j, p, "name");
  t.logical = r.shape(j, p, "logical");
  t.padded = r.shape(j, p, "padded");
  t.bytes = r.integer(j, p, "bytes", 1);
  if (t.logical.size() != 4 || t.padded.size() != 4) r.fail(p, "kernel surfaces are [1, C, 1, S]");
  if (j.contains("fixed")) {
    if (!j["fixed"].is_boolean()) r.fail(p + "/fixed", "expected true or false");
    t.fixed = j["fixed"].get<bool>();
  }
  if (j.contains("weight")) {
    t.weight = r.str(j, p, "weight");
    if (!t.fixed) r.fail(p + "/weight", "a runtime weight is a fixed-length input");
    if (j.contains("weight_part")) {
      const WeightPart part = r.weight_part(j["weight_part"], p + "/weight_part");
      t.weight_axis = part.axis;
      t.weight_begin = part.begin;
      t.weight_end = part.end;
    }
  }
  // Channels are widened only for fixed-length inputs (a narrow KV cache, ANE012).
  if ((t.fixed ? t.padded[1] < t.logical[1] : t.padded[1] != t.logical[1]) || t.padded[3] < t.logical[3])
    r.fail(p, "the padded shape does not hold the logical one");
  if (t.bytes != shape_numel(t.padded) * 2) r.fail(p + "/bytes", "is not the padded fp16 size");
  return t;
}

PackageValue read_value(const Reader& r, const json& j, const std::string& p) {
  PackageValue v;
  v.name = r.str(j, p, "name");
  v.value = r.str(j, p, "value");
  const std::string d = r.str(j, p, "dtype");
  const auto dt = dtype_from_name(d);
  if (!dt) r.fail(p + "/dtype", "unknown dtype \"" + d + "\"");
  v.dtype = *dt;
  v.shape = r.shape(j, p, "shape");
  return v;
}

PackageStep read_step(const Reader& r, const json& j, const std::string& p) {
  PackageStep s;
  const std::string kind = r.str(j, p, "kind");
  if (kind == "ane") s.placement = Placement::ane;
  else if (kind == "host") s.placement = Placement::host;
  else r.fail(p + "/kind", "expected \"ane\" or \"host\", found \"" + kind + "\"");
  s.name = r.folder_name(j, p, "name");
  s.stage = static_cast<int>(r.integer(j, p, "stage"));
  if (s.placement == Placement::ane) {
    const json& io = r.field(j, p, "io");
    const std::string ip = p + "/io";
    s.io.seq = r.integer(io, ip, "seq", 1);
    s.io.padded_seq = r.integer(io, ip, "padded_seq", 1);
    s.io.input_bytes = r.integer(io, ip, "input_bytes", 1);
    s.io.output_bytes = r.integer(io, ip, "output_bytes", 1);
    for (auto [key, list, alloc] : {std::tuple{"inputs", &s.io.inputs, s.io.input_bytes},
                                    std::tuple{"outputs", &s.io.outputs, s.io.output_bytes}}) {
      const json& a = r.array(io, ip, key);
      if (a.empty()) r.fail(ip + "/" + key, "a kernel needs at least one");
      for (std::size_t i = 0; i < a.size(); ++i) {
        const std::string tp = ip + "/" + key + "/" + std::to_string(i);
        KernelIoTensor t = read_io_tensor(r, a[i], tp);
        if (t.fixed ? t.padded[3] != t.logical[3] || key != std::string("inputs")
                    : t.padded[3] != s.io.padded_seq || t.logical[3] != s.io.seq)
          r.fail(tp, t.fixed ? "a fixed-length output, or a padded fixed-length input" : "its sequence is not the kernel's");
        if (t.bytes > alloc) r.fail(tp + "/bytes", "larger than the direction's allocation");
        if (!list->empty() && !(list->back().name < t.name)) r.fail(tp + "/name", "not in binding (alphabetical) order");
        list->push_back(std::move(t));
      }
    }
    if (j.contains("kernel")) s.kernel = r.folder_name(j, p, "kernel");
    if (j.contains("bind")) {
      const json& b = r.field(j, p, "bind");
      if (!b.is_object()) r.fail(p + "/bind", "expected an object");
      for (const auto& [from, to] : b.items()) {
        if (!to.is_string()) r.fail(p + "/bind/" + from, "expected a string");
        s.bind.emplace(from, to.get<std::string>());
      }
      // Every name the runner looks up must be bound: the I/O and the weights.
      for (const auto* list : {&s.io.inputs, &s.io.outputs})
        for (const KernelIoTensor& t : *list)
          for (const std::string* name : {&t.name, &t.weight})
            if (!name->empty() && !s.bind.contains(*name)) r.fail(p + "/bind", "does not bind \"" + *name + "\"");
    }
    if (j.contains("weight_parts")) {
      const json& parts = r.field(j, p, "weight_parts");
      if (!parts.is_object()) r.fail(p + "/weight_parts", "expected an object");
      for (const auto& [param, part] : parts.items()) {
        const WeightPart w = r.weight_part(part, p + "/weight_parts/" + param);
        if (!s.bind.contains(param)) r.fail(p + "/weight_parts/" + param, "is not a bound weight");
        s.weight_parts[param] = w;
      }
    }
    if (j.contains("weights")) {
      const std::string w = r.str(j, p, "weights");
      if (w == "inputs") s.weights = KernelWeights::inputs;
      else if (w != "baked") r.fail(p + "/weights", "expected \"baked\" or \"inputs\", found \"" + w + "\"");
    }
    s.weight_bytes = r.integer(j, p, "weight_bytes");
    s.warnings = r.strings(j, p, "warnings");
  } else {
    s.inputs = r.strings(j, p, "inputs");
    s.outputs = r.strings(j, p, "outputs");
    s.params = r.strings(j, p, "params");
  }
  return s;
}

}  // namespace

std::string_view kernel_weights_name(KernelWeights w) { return w == KernelWeights::inputs ? "inputs" : "baked"; }

const std::string& kernel_folder(const PackageStep& step) { return step.kernel.empty() ? step.name : step.kernel; }

KernelIo bind_io(const KernelIo& program_io, const std::map<std::string, std::string>& bind,
                 const std::map<std::string, WeightPart>& parts) {
  KernelIo io = program_io;
  if (bind.empty()) return io;
  for (auto* list : {&io.inputs, &io.outputs})
    for (KernelIoTensor& t : *list) {
      if (auto part = parts.find(t.weight); part != parts.end()) {
        t.weight_axis = part->second.axis;
        t.weight_begin = part->second.begin;
        t.weight_end = part->second.end;
      }
      for (std::string* name : {&t.name, &t.weight})
        if (!name->empty()) *name = bind.at(*name);
    }
  return io;
}

KernelIo bound_io(const PackageStep& step) { return bind_io(step.io, step.bind, step.weight_parts); }

const PackageProgram* PackageManifest::find_program(std::string_view name) const {
  for (const PackageProgram& p : programs)
    if (p.name == name) return &p;
  return nullptr;
}

const PackageProgram& PackageManifest::program(std::string_view name) const {
  if (const PackageProgram* p = find_program(name)) return *p;
  std::string have;
  for (const PackageProgram& p : programs) have += (have.empty() ? "" : ", ") + p.name;
  throw Error("the package has no program \"" + std::string(name) + "\" (it has: " + have + ")");
}

json manifest_to_json(const PackageManifest& m) {
  json programs = json::array();
  for (const PackageProgram& p : m.programs) {
    json steps = json::array(), ins = json::array(), outs = json::array();
    for (const PackageValue& v : p.inputs) ins.push_back(value_json(v));
    for (const PackageValue& v : p.outputs) outs.push_back(value_json(v));
    for (const PackageStep& s : p.steps) {
      json js = {{"kind", std::string(placement_name(s.placement))}, {"name", s.name}, {"stage", s.stage}};
      if (s.placement == Placement::ane) {
        json ii = json::array(), oo = json::array();
        for (const KernelIoTensor& t : s.io.inputs) ii.push_back(io_tensor_json(t));
        for (const KernelIoTensor& t : s.io.outputs) oo.push_back(io_tensor_json(t));
        js["io"] = {{"seq", s.io.seq}, {"padded_seq", s.io.padded_seq}, {"input_bytes", s.io.input_bytes},
                    {"output_bytes", s.io.output_bytes}, {"inputs", ii}, {"outputs", oo}};
        if (!s.kernel.empty()) js["kernel"] = s.kernel;  // absent: its own folder
        if (!s.bind.empty()) js["bind"] = s.bind;        // absent: the program's names are the step's
        if (!s.weight_parts.empty()) {
          json parts = json::object();
          for (const auto& [param, part] : s.weight_parts) parts[param] = {part.axis, part.begin, part.end};
          js["weight_parts"] = parts;
        }
        js["weights"] = std::string(kernel_weights_name(s.weights));
        js["weight_bytes"] = s.weight_bytes;
        js["warnings"] = s.warnings;
      } else {
        js["inputs"] = s.inputs;
        js["outputs"] = s.outputs;
        js["params"] = s.params;
      }
      steps.push_back(std::move(js));
    }
    programs.push_back({{"name", p.name}, {"seq", p.seq}, {"inputs", ins}, {"outputs", outs},
                        {"steps", steps}, {"session", p.session}});
  }
  const auto weights_json = [](const std::vector<HostWeight>& list) {
    json a = json::array();
    for (const HostWeight& w : list) a.push_back({{"name", w.name}, {"shape", w.shape}, {"offset", w.offset}});
    return a;
  };
  json out = {{"format", kPackageFormat},
          {"version", kPackageVersion},
          {"dialect", m.dialect},
          {"target", {{"m1_m2", m.target.m1_m2}, {"allow_concat", m.target.allow_concat},
                      {"on_chip_bytes", m.target.on_chip_bytes},
                      {"weights", std::string(weight_form_name(m.target.weights))}, {"weight_block", m.target.weight_block}}},
          {"rules_checked", m.rules_checked},
          {"model", m.model},
          {"host_weights", {{"file", kHostWeightsFile}, {"tensors", weights_json(m.host_weights)}}},
          {"programs", programs}};
  if (!m.device_weights.empty())
    out["device_weights"] = {{"file", kDeviceWeightsFile}, {"tensors", weights_json(m.device_weights)}};
  if (!m.weights_reason.empty()) out["weights_reason"] = m.weights_reason;
  if (!m.runtime_weights.empty()) {
    json rw = json::array();
    for (const RuntimeWeight& w : m.runtime_weights) rw.push_back({{"name", w.name}, {"shape", w.shape}});
    out["runtime_weights"] = rw;
  }
  return out;
}

PackageManifest manifest_from_json(const json& j, const std::string& file) {
  const Reader r(file);
  if (r.str(j, "", "format") != kPackageFormat) r.fail("/format", std::string("expected \"") + kPackageFormat + "\"");
  if (r.integer(j, "", "version") != kPackageVersion)
    r.fail("/version", "this Orion reads version " + std::to_string(kPackageVersion) + ": recompile the package");
  PackageManifest m;
  m.dialect = r.str(j, "", "dialect");
  if (m.dialect != "ios18" && m.dialect != "ios16") r.fail("/dialect", "expected \"ios18\" or \"ios16\"");
  const json& t = r.field(j, "", "target");
  m.target.m1_m2 = r.boolean(t, "/target", "m1_m2");
  m.target.allow_concat = r.boolean(t, "/target", "allow_concat");
  m.target.on_chip_bytes = r.integer(t, "/target", "on_chip_bytes", 1);
  const std::string form = r.str(t, "/target", "weights");
  const std::optional<WeightForm> f = weight_form_from_name(form);
  if (!f) r.fail("/target/weights", "\"" + form + "\" is not fp16, int8, int4, uint4 or lut4");
  m.target.weights = *f;
  m.target.weight_block = r.integer(t, "/target", "weight_block", 0);
  m.rules_checked = r.strings(j, "", "rules_checked");
  m.model = r.field(j, "", "model");
  const auto read_weights = [&](const char* key, const char* blob_file, std::vector<HostWeight>& list) {
    const std::string at = std::string("/") + key;
    const json& hw = r.field(j, "", key);
    if (r.str(hw, at, "file") != blob_file) r.fail(at + "/file", "unexpected file name");
    const json& tensors = r.array(hw, at, "tensors");
    for (std::size_t i = 0; i < tensors.size(); ++i) {
      const std::string p = at + "/tensors/" + std::to_string(i);
      list.push_back({r.str(tensors[i], p, "name"), r.shape(tensors[i], p, "shape"),
                      static_cast<std::uint64_t>(r.integer(tensors[i], p, "offset", 64))});
    }
  };
  read_weights("host_weights", kHostWeightsFile, m.host_weights);
  if (j.contains("device_weights")) read_weights("device_weights", kDeviceWeightsFile, m.device_weights);
  if (j.contains("weights_reason")) m.weights_reason = r.str(j, "", "weights_reason");
  if (j.contains("runtime_weights")) {
    const json& rw = r.array(j, "", "runtime_weights");
    for (std::size_t i = 0; i < rw.size(); ++i) {
      const std::string p = "/runtime_weights/" + std::to_string(i);
      m.runtime_weights.push_back({r.str(rw[i], p, "name"), r.shape(rw[i], p, "shape")});
    }
  }
  const json& programs = r.array(j, "", "programs");
  if (programs.empty()) r.fail("/programs", "a package has at least one program");
  std::map<std::string, std::pair<std::string, KernelIo>> kernels;  // by folder: the first step to run it, its I/O
  for (std::size_t i = 0; i < programs.size(); ++i) {
    const std::string p = "/programs/" + std::to_string(i);
    PackageProgram prog;
    prog.name = r.str(programs[i], p, "name");
    prog.seq = r.integer(programs[i], p, "seq", 1);
    for (auto [key, list] : {std::pair{"inputs", &prog.inputs}, std::pair{"outputs", &prog.outputs}}) {
      const json& a = r.array(programs[i], p, key);
      for (std::size_t k = 0; k < a.size(); ++k)
        list->push_back(read_value(r, a[k], p + "/" + key + "/" + std::to_string(k)));
    }
    const json& steps = r.array(programs[i], p, "steps");
    if (steps.empty()) r.fail(p + "/steps", "a program has at least one step");
    for (std::size_t k = 0; k < steps.size(); ++k) {
      const std::string sp = p + "/steps/" + std::to_string(k);
      prog.steps.push_back(read_step(r, steps[k], sp));
      const PackageStep& s = prog.steps.back();
      if (s.placement != Placement::ane) continue;
      // Steps that share a kernel bind one program: the same I/O, or garbage (ANE027).
      auto [first, fresh] = kernels.emplace(kernel_folder(s), std::pair{s.name, s.io});
      if (!fresh && first->second.second != s.io)
        r.fail(sp + "/io", "differs from that of step " + first->second.first + ", which runs the same kernel " +
                               kernel_folder(s));
    }
    prog.session = r.field(programs[i], p, "session");
    if (m.find_program(prog.name)) r.fail(p + "/name", "a second program \"" + prog.name + "\"");
    m.programs.push_back(std::move(prog));
  }
  return m;
}

PackageManifest read_manifest(const std::string& dir) {
  const std::string file = (std::filesystem::path(dir) / kManifestFile).string();
  std::ifstream in(file, std::ios::binary);
  if (!in) throw Error::in_file(file, "cannot open the package's manifest (is this a folder from `orion compile --target ane`?)");
  std::stringstream ss;
  ss << in.rdbuf();
  return manifest_from_json(parse_json(ss.str(), file), file);
}

}  // namespace orion::compile
