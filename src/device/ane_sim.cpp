#include "device/ane_sim.h"

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <map>

#include "compile/ane/ane_validator.h"
#include "compile/mil/mil_constexpr.h"
#include "compile/mil/mil_parser.h"
#include "compile/mil/mil_to_ir.h"
#include "core/atomic_file.h"
#include "core/content_hash.h"
#include "core/error.h"
#include "core/mapped_file.h"
#include "core/random.h"
#include "core/stopwatch.h"
#include "device/ane_live_columns.h"
#include "exec/cpu/executor.h"
#include "ir/transforms/dce.h"

namespace orion::device {

namespace fs = std::filesystem;

namespace {

// What the hardware says for a compile it rejects: nothing useful (ANE033).
[[noreturn]] void undiagnosed_compile_failure(const std::string& folder) {
  throw Error("ane-sim (faithful): compiling " + folder +
              " failed (ANECCompile returned an error without a diagnosis)");
}

struct FileStamp {
  std::string path;
  std::uintmax_t size = 0;
  fs::file_time_type mtime;
  bool operator==(const FileStamp&) const = default;
};

// Size and modification time of each file (a file that is gone stamps as size 0, time 0).
std::vector<FileStamp> stamp_files(const std::vector<std::string>& files) {
  std::vector<FileStamp> out;
  for (const std::string& f : files) {
    std::error_code ec;
    const auto size = fs::file_size(f, ec);
    const auto mtime = fs::last_write_time(f, ec);
    out.push_back({f, ec ? 0 : size, ec ? fs::file_time_type{} : mtime});
  }
  return out;
}

// The files a program reads: its model.mil and every weight file a BLOBFILE names, once each.
std::vector<std::string> program_files(const std::string& mil_path, const compile::MilAst& ast,
                                       const std::string& folder) {
  constexpr std::string_view kPrefix = "@model_path/";
  std::vector<std::string> files{mil_path};
  const auto add = [&](const compile::MilLiteral& lit) {
    if (!lit.is_blob || lit.blob_path.rfind(kPrefix, 0) != 0) return;
    const std::string f = (fs::path(folder) / lit.blob_path.substr(kPrefix.size())).string();
    if (std::find(files.begin(), files.end(), f) == files.end()) files.push_back(f);
  };
  for (const compile::MilFunction& fn : ast.functions)
    for (const compile::MilOperation& op : fn.ops) {
      for (const compile::MilNamedLiteral& a : op.attrs) add(a.value);
      for (const compile::MilNamedArg& a : op.args)
        if (a.value.kind == compile::MilValue::Kind::literal) add(a.value.literal);
    }
  return files;
}

// Makes node `id` a const of zeros of its own type: what the device computes for an op it
// silently ignores.
void zero_node(ir::Graph& g, ir::ValueId id) {
  ir::Node& n = g.node(id);
  n.op = ir::Op::constant;
  n.inputs.clear();
  n.attrs = {Tensor(n.type.dtype, n.type.shape)};
}

// The compile-time weights (MIL's constexpr_* ops: a dequantize of consts, a LUT form) computed
// once, at compile, into consts: the same values every evaluation would compute (the executor's
// f16 numerics: fp16 results), without dequantizing the weights again for every token. The
// consts they were made from are dropped.
void fold_constexpr_weights(ir::Graph& g) {
  bool folded = false;
  for (ir::ValueId id = 0; id < g.size(); ++id) {
    const std::optional<compile::LutForm> lut = compile::lut_form(g, id);
    if (!lut && !compile::is_constant_dequantize(g, id)) continue;
    ir::Graph one("constexpr");
    const ir::Node& n = g.node(id);
    ir::Node copy = n;
    copy.inputs.clear();
    for (ir::ValueId in : n.inputs) {
      ir::Node src = g.node(in);
      if (lut && in == lut->flat) {  // the LUT's flat layout: a reshape of the LUT const
        src.inputs = {one.add(g.node(lut->lut))};
      }
      copy.inputs.push_back(one.add(std::move(src)));
    }
    one.outputs().push_back(one.add(std::move(copy)));
    Tensor value = exec::CpuExecutor(std::move(one), exec::CpuOptions{.numerics = exec::Numerics::f16, .threads = 1}).run({})[0].to(n.type.dtype);
    ir::Node& target = g.node(id);
    target.op = ir::Op::constant;
    target.inputs.clear();
    target.attrs = {std::move(value)};
    folded = true;
  }
  if (folded) ir::dce(g);
}

// Copies `rows` rows of `bytes` bytes each, rows `from_pitch` and `to_pitch` bytes apart.
void copy_rows(const std::byte* from, std::size_t from_pitch, std::byte* to, std::size_t to_pitch, std::size_t rows,
               std::size_t bytes) {
  if (from_pitch == bytes && to_pitch == bytes) {
    std::memcpy(to, from, rows * bytes);
    return;
  }
  for (std::size_t r = 0; r < rows; ++r) std::memcpy(to + r * to_pitch, from + r * from_pitch, bytes);
}

// The columns of `io` (its last axis; a scalar is one), the bytes of `columns` of them in one
// row, and the number of rows.
std::int64_t width_of(const Shape& shape) { return shape.empty() ? 1 : shape.back(); }
std::size_t row_bytes(const AneSimIo& io, std::int64_t columns) {
  return static_cast<std::size_t>(columns) * dtype_size(io.type.dtype);
}
std::size_t rows_of(const AneSimIo& io) {
  return static_cast<std::size_t>(io.type.numel() / std::max<std::int64_t>(1, width_of(io.type.shape)));
}

// The input as the program reads it: its first `live` columns (all of them when live is the
// surface's width).
Tensor read_surface(const AneSurface& s, const AneSimIo& io, std::int64_t live) {
  Shape shape = io.type.shape;
  const std::int64_t width = width_of(shape);
  if (!shape.empty()) shape.back() = live;
  const std::size_t bytes = rows_of(io) * row_bytes(io, width);
  if (bytes > s.size())
    throw Error("ane-sim: input " + io.name + " " + io.type.str() + " needs " + std::to_string(bytes) +
                " bytes, the surface has " + std::to_string(s.size()));
  // Whole: the surface itself, not a copy (a KV cache is megabytes, read every step). The
  // executor binds inputs into buffers of its own and never writes a caller's tensor.
  if (live == width)
    return Tensor::view_of(io.type.dtype, shape, Buffer::borrow(const_cast<std::byte*>(s.bytes().data()), bytes, nullptr), 0);
  Tensor t(io.type.dtype, shape);
  copy_rows(s.bytes().data(), row_bytes(io, width), static_cast<std::byte*>(t.raw()), row_bytes(io, live), rows_of(io),
            row_bytes(io, live));
  return t;
}

// Writes an output of `live` columns into its surface; the other columns of the value are zero.
void write_surface(const Tensor& t, const AneSimIo& io, AneSurface& s) {
  const Tensor c = t.contiguous();
  const std::int64_t width = width_of(io.type.shape), live = width_of(c.shape());
  const std::size_t bytes = rows_of(io) * row_bytes(io, width);
  if (bytes > s.size())
    throw Error("ane-sim: output " + io.name + " " + io.type.str() + " needs " + std::to_string(bytes) +
                " bytes, the surface has " + std::to_string(s.size()));
  if (live < width) std::memset(s.bytes().data(), 0, bytes);
  copy_rows(static_cast<const std::byte*>(c.raw()), row_bytes(io, live), s.bytes().data(), row_bytes(io, width),
            rows_of(io), row_bytes(io, live));
}

void check_one_size(const std::vector<std::size_t>& sizes, const char* role) {
  for (std::size_t b : sizes)
    if (b != sizes.front())
      throw Error("ane-sim: evaluation failed with status 0x1d: the " + std::string(role) +
                  " surfaces have different allocation sizes (" + std::to_string(sizes.front()) + " and " +
                  std::to_string(b) + " bytes; ANE010: pad the smaller ones)");
}

}  // namespace

struct AneSim::Program {
  std::string folder;
  std::unique_ptr<exec::CpuExecutor> exec;
  std::vector<AneSimIo> inputs, outputs;  // binding (alphabetical) order
  std::vector<std::size_t> output_index;  // outputs[i] is the graph's output output_index[i]
  std::vector<std::string> files;         // model.mil and the weight files it names
  std::vector<FileStamp> stamps;          // those files as they were when the weights were baked
  bool loaded = false;
  bool garbage = false;  // faithful: the device computes nothing meaningful for this program
  // S when the program computes each of its S columns by itself (device/ane_live_columns.h),
  // else 0; and the program narrowed to the live columns last asked for (built on demand).
  std::int64_t column_width = 0;
  std::int64_t narrow_live = 0;
  std::unique_ptr<exec::CpuExecutor> narrow;
  std::uint64_t evaluations = 0;
};

AneSim::AneSim(AneSimOptions options) : options_(std::move(options)) {}
AneSim::~AneSim() = default;

AneSim::Program& AneSim::program(AneProgramId id) const {
  const std::lock_guard lock(mutex_);
  if (id < 0 || static_cast<std::size_t>(id) >= programs_.size())
    throw Error("ane-sim: no program " + std::to_string(id));
  return *programs_[static_cast<std::size_t>(id)];
}

int AneSim::compiles() const {
  const std::lock_guard lock(mutex_);
  return compiles_;
}

int AneSim::cache_hits() const {
  const std::lock_guard lock(mutex_);
  return cache_hits_;
}

AneTimings AneSim::timings() const {
  const std::lock_guard lock(mutex_);
  return timings_;
}

int AneSim::loaded() const {
  const std::lock_guard lock(mutex_);
  return static_cast<int>(std::count_if(programs_.begin(), programs_.end(), [](const auto& p) { return p->loaded; }));
}

const std::vector<AneSimIo>& AneSim::inputs(AneProgramId id) const { return program(id).inputs; }
const std::vector<AneSimIo>& AneSim::outputs(AneProgramId id) const { return program(id).outputs; }

void AneSim::bake(Program& p) {
  const bool faithful = options_.faithful;
  const std::string mil_path = (fs::path(p.folder) / "model.mil").string();
  const auto file = MappedFile::open(mil_path);
  const std::string_view text(reinterpret_cast<const char*>(file->bytes().data()), file->size());
  const compile::MilAst ast = compile::parse_mil_ast(text, mil_path);
  p.files = program_files(mil_path, ast, p.folder);
  p.stamps = stamp_files(p.files);

  auto mil_violations = compile::check_mil_program(ast, options_.target, mil_path);
  if (!faithful) compile::refuse_errors(mil_violations, p.folder);
  for (const auto& v : mil_violations) {
    if (!v.is_error()) continue;
    if (v.rule->failure == compile::AneFailure::poison) {
      // The hardware compiles it and fails every evaluation from now on.
      poisoned_ = true;
      p.garbage = true;
      return;
    }
    if (v.rule->failure == compile::AneFailure::loud) undiagnosed_compile_failure(p.folder);
  }

  ir::Graph graph = compile::mil_to_ir(ast, mil_path, p.folder);
  // Baked: the weights are copied out of the files, whatever happens to the files later.
  for (ir::ValueId id : graph.nodes_of(ir::Op::constant)) {
    ir::Node& n = graph.node(id);
    n.attrs[0] = std::get<Tensor>(n.attrs[0]).clone();
  }

  fold_constexpr_weights(graph);
  auto violations = compile::check_kernel_graph(graph, options_.target);
  if (!faithful) compile::refuse_errors(violations, p.folder);
  for (const auto& v : violations) {
    if (!v.is_error()) continue;
    const std::string_view id = v.rule->id;
    if (v.rule->failure == compile::AneFailure::loud) undiagnosed_compile_failure(p.folder);
    if (id == "ANE005" || id == "ANE013") {
      // A conv on a runtime weight ignores it; an M1 matmul with a ragged inner dimension
      // gives zeros.
      zero_node(graph, v.node);
    } else if (id == "ANE008" || id == "ANE011" || id == "ANE012") {
      p.garbage = true;  // surfaces the device misreads
    }
  }

  std::vector<std::pair<std::string, std::size_t>> outs;
  for (std::size_t i = 0; i < graph.outputs().size(); ++i) outs.emplace_back(graph.node(graph.outputs()[i]).name, i);
  std::sort(outs.begin(), outs.end());
  p.outputs.clear();
  p.output_index.clear();
  for (const auto& [name, i] : outs) {
    p.outputs.push_back({name, graph.node(graph.outputs()[i]).type});
    p.output_index.push_back(i);
  }
  p.inputs.clear();
  for (ir::ValueId id : graph.nodes_of(ir::Op::input)) p.inputs.push_back({graph.node(id).name, graph.node(id).type});
  std::sort(p.inputs.begin(), p.inputs.end(), [](const AneSimIo& a, const AneSimIo& b) { return a.name < b.name; });
  // The static check for live-column evaluation, on the graph exactly as it will run.
  p.column_width = p.garbage ? 0 : column_independent_width(graph);
  p.narrow.reset();
  p.narrow_live = 0;
  // Such a program's convs compute column by column, in full evaluations too: that is what
  // makes a narrowed evaluation's live columns the same bits.
  p.exec = std::make_unique<exec::CpuExecutor>(
      std::move(graph), exec::CpuOptions{.numerics = exec::Numerics::f16, .threads = options_.threads, .column_independent = p.column_width > 0});
}

namespace {

// The cache key of a program folder: its text and every file under weights/, by name.
std::string program_key(const std::string& folder) {
  ContentHasher h;
  h.update_file((fs::path(folder) / "model.mil").string());
  std::vector<std::string> files;
  std::error_code ec;
  for (const auto& e : fs::recursive_directory_iterator(fs::path(folder) / "weights", ec))
    if (e.is_regular_file()) files.push_back(e.path().string());
  std::sort(files.begin(), files.end());
  for (const std::string& f : files) {
    h.update(fs::relative(f, folder).string());
    h.update_file(f);
  }
  return h.hex();
}

}  // namespace

AneProgramId AneSim::compile(const std::string& folder) {
  const Stopwatch clock;
  std::string cached_marker;
  if (!options_.program_cache_dir.empty())
    cached_marker = (fs::path(options_.program_cache_dir) / program_key(folder)).string();
  // A program from the cache loads without a compile: it neither counts nor can go over.
  const bool cached = !cached_marker.empty() && fs::exists(cached_marker);
  auto p = std::make_unique<Program>();
  p->folder = folder;
  int compile_number = 0;
  {
    const std::lock_guard lock(mutex_);
    if (cached) ++cache_hits_;
    else compile_number = ++compiles_;
  }
  if (compile_number > options_.compile_budget) {
    if (!options_.faithful)
      throw Error("ane-sim: ANE030: compile " + std::to_string(compile_number) + " of this process is over the budget of " +
                  std::to_string(options_.compile_budget) +
                  " (the ANE fails silently from here): restart the process from a checkpoint, or reuse compiled "
                  "programs");
    p->garbage = true;  // the hardware "compiles" it and returns garbage
  }
  bake(*p);
  if (!cached && !cached_marker.empty() && !p->garbage) {
    std::error_code ec;
    fs::create_directories(options_.program_cache_dir, ec);
    write_file_atomic(cached_marker, folder + "\n");
  }
  const std::lock_guard lock(mutex_);
  programs_.push_back(std::move(p));
  timings_.compile_ms = clock.ms();
  return static_cast<AneProgramId>(programs_.size() - 1);
}

void AneSim::load(AneProgramId id) {
  const Stopwatch clock;
  Program& p = program(id);
  if (p.loaded) throw Error("ane-sim: program " + std::to_string(id) + " (" + p.folder + ") is already loaded");
  if (options_.reload_reads_weights && p.exec && stamp_files(p.files) != p.stamps) {
    const bool garbage = p.garbage;  // over-budget programs stay garbage
    bake(p);
    p.garbage = p.garbage || garbage;
  }
  p.loaded = true;
  const std::lock_guard lock(mutex_);
  timings_.load_ms = clock.ms();
}

void AneSim::unload(AneProgramId id) {
  Program& p = program(id);
  if (!p.loaded) throw Error("ane-sim: program " + std::to_string(id) + " (" + p.folder + ") is not loaded");
  p.loaded = false;
}

void AneSim::evaluate(AneProgramId id, const std::vector<const AneSurface*>& inputs,
                      const std::vector<AneSurface*>& outputs) {
  run(id, inputs, outputs, 0);
}

void AneSim::evaluate_live(AneProgramId id, const std::vector<const AneSurface*>& inputs,
                           const std::vector<AneSurface*>& outputs, std::int64_t live_columns) {
  if (live_columns < 1) throw Error("ane-sim: " + std::to_string(live_columns) + " live columns");
  run(id, inputs, outputs, live_columns);
}

std::int64_t AneSim::live_column_width(AneProgramId id) const { return program(id).column_width; }

// live_columns 0: every column.
void AneSim::run(AneProgramId id, const std::vector<const AneSurface*>& inputs, const std::vector<AneSurface*>& outputs,
                 std::int64_t live_columns) {
  const Stopwatch clock;
  Program& p = program(id);
  if (poisoned_)
    throw Error("ane-sim: evaluation failed: a program with tile poisoned the device for the rest of the process "
                "(ANE020)");
  if (!p.loaded) throw Error("ane-sim: program " + std::to_string(id) + " (" + p.folder + ") is not loaded");
  if (inputs.size() != p.inputs.size() || outputs.size() != p.outputs.size())
    throw Error("ane-sim: " + p.folder + " takes " + std::to_string(p.inputs.size()) + " input and " +
                std::to_string(p.outputs.size()) + " output surfaces, got " + std::to_string(inputs.size()) +
                " and " + std::to_string(outputs.size()));
  std::vector<std::size_t> in_sizes, out_sizes;
  for (const AneSurface* s : inputs) in_sizes.push_back(s->size());
  for (const AneSurface* s : outputs) out_sizes.push_back(s->size());
  check_one_size(in_sizes, "input");
  check_one_size(out_sizes, "output");
  // The minimum is the surface's, as allocated (ANE012): a small tensor in a full-size surface
  // ran on the hardware.
  bool small = false;
  for (const std::vector<std::size_t>* sizes : {&in_sizes, &out_sizes})
    if (!sizes->empty() && sizes->front() < static_cast<std::size_t>(compile::kMinSurfaceBytes)) {
      if (!options_.faithful)
        throw Error("ane-sim: ANE012: " + p.folder + " is given " + std::to_string(sizes->front()) +
                    "-byte surfaces; the ANE misreads surfaces under " + std::to_string(compile::kMinSurfaceBytes) +
                    " bytes: allocate them larger (the tensors may stay smaller)");
      small = true;
    }
  if (!options_.faithful && stamp_files(p.files) != p.stamps)
    throw Error("ane-sim: ANE029: the files of " + p.folder +
                " changed since its weights were baked; the ANE would silently use the old weights: unload and "
                "load it again (or recompile)");
  ++p.evaluations;
  if (p.garbage || small) {
    Rng rng(0x9e3779b97f4a7c15ull ^ (static_cast<std::uint64_t>(id) << 32) ^ p.evaluations);
    for (AneSurface* s : outputs)
      for (std::byte& b : s->bytes()) b = static_cast<std::byte>(rng.next_u64());
    const std::lock_guard lock(mutex_);
    timings_.evaluate_ms = clock.ms();
    return;
  }
  // Only the live columns when the program computes each column by itself: the narrowed program
  // runs the same kernels on the same values of those columns, and no live value reads a padding
  // column, so the live outputs are the full evaluation's bits (device/ane_live_columns.h).
  const bool narrowed = p.column_width > 0 && live_columns > 0 && live_columns < p.column_width;
  if (narrowed && p.narrow_live != live_columns) {
    p.narrow = std::make_unique<exec::CpuExecutor>(narrow_columns(p.exec->graph(), p.column_width, live_columns),
                                                   p.exec->options());
    p.narrow_live = live_columns;
  }
  exec::CpuExecutor& exec = narrowed ? *p.narrow : *p.exec;
  TensorMap bindings;
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    // Token inputs (the program's width) narrowed; a fixed-length one (a KV cache) read whole.
    const std::int64_t width = width_of(p.inputs[i].type.shape);
    bindings[p.inputs[i].name] =
        read_surface(*inputs[i], p.inputs[i], narrowed && width == p.column_width ? live_columns : width);
  }
  const std::vector<Tensor> results = exec.run(bindings);
  for (std::size_t i = 0; i < outputs.size(); ++i)
    write_surface(results[p.output_index[i]], p.outputs[i], *outputs[i]);
  const std::lock_guard lock(mutex_);
  timings_.evaluate_ms = clock.ms();
}

}  // namespace orion::device
