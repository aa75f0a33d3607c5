#include "model/convert.h"

#include <array>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "core/atomic_file.h"
#include "core/atomic_folder.h"
#include "core/error.h"
#include "core/mapped_file.h"
#include "exec/cpu/quantize.h"
#include "model/any_model.h"
#include "model/formats/checkpoint.h"
#include "model/formats/config_json.h"
#include "model/formats/mlx_quantization.h"
#include "model/formats/safetensors.h"
#include "model/formats/folder_files.h"
#include "text/tokenizer_files.h"

namespace orion::model {

namespace {

namespace fs = std::filesystem;

// Copied as they are when the source has them: the config and the tokenizer files of both
// spellings (Hugging Face's and OpenAI's), plus the small JSON files hub folders carry.
constexpr std::array<const char*, 8> kCopied = {
    kConfigFile,      text::kBpeVocabFile,     text::kBpeMergesFile,    text::kOpenAiVocabFile, text::kOpenAiMergesFile,
    text::kTokenizerJsonFile, text::kTokenizerConfigFile, text::kGenerationConfigFile};

bool written_by_convert(const std::string& name) {
  if (name == kWeightsFile) return true;
  for (const char* f : kCopied)
    if (name == f) return true;
  return false;
}

bool lossy(const StoredFormat& f) { return f.dtype != WeightDType::f32; }

// `rows` (f32 [out, in]) encoded as the tensors of matrix `name` in format `to`.
void encode(const std::string& name, const Tensor& rows, const StoredFormat& to,
            std::vector<std::pair<std::string, Tensor>>& out) {
  switch (to.dtype) {
    case WeightDType::f32: out.emplace_back(name, rows); return;
    case WeightDType::f16: out.emplace_back(name, rows.to(DType::f16)); return;
    case WeightDType::q4: throw Error("q4 is MLX's layout, written for the Llama family (convert_model)");
    case WeightDType::q8: {
      const std::int64_t r = rows.dim(0), c = rows.dim(1);
      if (c % to.q8_block != 0)
        throw Error("tensor " + name + ": rows of " + std::to_string(c) + " weights are not a whole number of blocks of " +
                    std::to_string(to.q8_block) + " (try --block 32)");
      Tensor q(DType::i8, {r, c}), s(DType::f32, {r, c / to.q8_block});
      exec::cpu::quantize_q8(rows.contiguous().data<float>(), r, c, to.q8_block, q.data<std::int8_t>(), s.data<float>());
      out.emplace_back(name + std::string(kQ8Suffix), q);
      out.emplace_back(name + std::string(kQ8ScaleSuffix), to.q8_scale == DType::f32 ? s : s.to(to.q8_scale));
      return;
    }
  }
}

}  // namespace

std::vector<std::pair<std::string, Tensor>> convert_weights(const Gpt2Model& model, const StoredFormat& to) {
  if (to.dtype == WeightDType::q8 && to.q8_block != 32 && to.q8_block != 64)
    throw Error("q8 block " + std::to_string(to.q8_block) + " (32 or 64)");
  if (to.dtype == WeightDType::q8 && to.q8_scale != DType::f32 && to.q8_scale != DType::f16)
    throw Error("q8 scales are f32 or f16, not " + std::string(dtype_name(to.q8_scale)));
  const StoredWeights* stored = model.stored();
  std::vector<std::pair<std::string, Tensor>> out;
  for (const auto& [name, shape] : gpt2_param_shapes(model.config())) {
    if (!gpt2_is_linear(name)) {
      out.emplace_back(name, stored ? stored->vector(name) : model.weights().at(name));
      continue;
    }
    if (stored && stored->format() == to) {  // the same bits: no rounding twice
      const StoredMatrix& m = stored->matrix(name);
      if (to.dtype != WeightDType::q8) {
        out.emplace_back(name, m.w);
      } else {
        out.emplace_back(name + std::string(kQ8Suffix), m.w);
        out.emplace_back(name + std::string(kQ8ScaleSuffix), m.scales.to(to.q8_scale));  // exact: they were q8_scale
      }
      continue;
    }
    Tensor rows;
    if (stored) {
      rows = stored->rows_f32(name);
    } else {
      const Tensor& w = model.weights().at(name);
      rows = gpt2_is_conv1d(name) ? w.permute(std::vector<int>{1, 0}).contiguous() : w;
    }
    encode(name, rows, to, out);
  }
  return out;
}

std::vector<std::pair<std::string, Tensor>> mlx_quantized_weights(const LlamaModel& model, exec::cpu::AffineFormat f,
                                                                  DType float_type) {
  std::vector<std::pair<std::string, Tensor>> out;
  for (const auto& [name, shape] : llama_param_shapes(model.config())) {
    const Tensor& w = model.weights().at(name);
    const std::string module = quantized_module_of(name);
    if (module.empty() || shape.size() != 2 || shape[1] % f.group != 0) {
      out.emplace_back(name, w.to(float_type));
      continue;
    }
    const QuantizedMatrix q = quantize(w, f);
    out.emplace_back(name, q.words);
    out.emplace_back(module + ".scales", q.scales.to(float_type));
    out.emplace_back(module + ".biases", q.biases.to(float_type));
  }
  return out;
}

namespace {

// The source's config.json with MLX's "quantization" (and its mirror "quantization_config") set.
std::string mlx_config_text(const std::string& src_config, const MlxQuantization& q) {
  nlohmann::json j = parse_config_object(read_config_text(src_config), src_config);
  j["quantization"] = mlx_quantization_json(q);
  j["quantization_config"] = j["quantization"];
  return j.dump(4) + "\n";
}

}  // namespace

ConvertResult convert_model(const std::string& src, const std::string& out, const ConvertOptions& options) {
  ConvertResult r;
  r.to = {options.dtype, options.dtype == WeightDType::q8 ? options.q8_block : 0,
          options.dtype == WeightDType::q8 ? options.q8_scale : DType::f32};
  r.to_name = stored_format_name(r.to);
  const fs::path src_dir(src), out_dir(out);
  std::error_code ec;
  if (fs::exists(out_dir, ec)) {
    if (!fs::is_directory(out_dir, ec)) throw Error::in_file(out, "exists and is not a folder");
    if (fs::equivalent(src_dir, out_dir, ec))
      throw Error::in_file(out, "is the source folder: convert into a new folder (the source stays as it is)");
    bool empty = true;
    for (const auto& e : fs::directory_iterator(out_dir)) {
      empty = false;
      const std::string name = e.path().filename().string();
      if (options.force && (!e.is_regular_file() || !written_by_convert(name)))
        throw Error::in_file(out, "holds " + name +
                                      ", which orion convert does not write: refusing to replace the folder (choose another --out)");
    }
    if (!empty && !options.force) throw Error::in_file(out, "exists and is not empty (use --force to replace it)");
  }

  const std::string arch = read_model_type(src);
  const bool mlx = options.dtype == WeightDType::q4;
  if (mlx != is_llama_family(arch))
    throw Error::in_file((src_dir / kConfigFile).string(),
                         mlx ? "is a " + arch + " model: q4 (MLX's layout) is written for the Llama family (llama, mistral, qwen2, qwen3)"
                             : "is a " + arch + " model: orion convert writes it as q4 (MLX's layout) only; f32, f16 and q8 are "
                               "GPT-2's converted format (generate --weights packs a Llama-family model at startup instead)");
  if (mlx) {
    const exec::cpu::AffineFormat f{.bits = 4, .group = options.q4_group};
    if (const std::string p = exec::cpu::affine_format_problem(f); !p.empty()) throw Error("--group-size: " + p);
    const LlamaModel model = LlamaModel::load(src);
    const DType float_type = model.config().torch_dtype == "bfloat16" ? DType::bf16
                             : model.config().torch_dtype == "float16" ? DType::f16 : DType::f32;
    r.to_name = "q4 (MLX's " + exec::cpu::affine_format_name(f) + ", scales and biases in " +
                std::string(dtype_name(float_type)) + ")";
    if (model.config().quantization)
      r.warnings.push_back(src + " is quantized already: quantizing its dequantized weights again does not recover the "
                                 "precision it lost (convert the original instead)");
    const auto tensors = mlx_quantized_weights(model, f, float_type);
    r.bytes_in = 0;
    const Checkpoint checkpoint = Checkpoint::open(src);
    for (const SafetensorsFile& file : checkpoint.files()) r.bytes_in += fs::file_size(file.path());
    if (out_dir.has_parent_path()) fs::create_directories(out_dir.parent_path());
    AtomicFolderWriter folder(out);
    write_safetensors(folder.file(kWeightsFile), tensors, {{"format", "mlx"}});
    r.files.push_back(kWeightsFile);
    r.bytes_out = fs::file_size(folder.file(kWeightsFile));
    write_file_atomic(folder.file(kConfigFile), mlx_config_text((src_dir / kConfigFile).string(), {.defaults = f, .modules = {}}));
    r.files.push_back(kConfigFile);
    for (const char* name : kCopied) {
      const fs::path from = src_dir / name;
      if (std::string_view(name) == kConfigFile || !fs::is_regular_file(from, ec)) continue;
      const auto mapped = MappedFile::open(from.string());
      write_file_atomic(folder.file(name), mapped->bytes());
      r.files.push_back(name);
    }
    folder.commit(/*replace=*/true);
    return r;
  }

  const Gpt2Model model = Gpt2Model::load(src);
  if (model.stored()) r.from = model.stored()->format();
  if (r.from && lossy(*r.from) && !(*r.from == r.to))
    r.warnings.push_back((src_dir / kWeightsFile).string() + " is stored as " + stored_format_name(*r.from) +
                         ": converting it to " + stored_format_name(r.to) +
                         " does not recover the precision it lost (convert the original instead)");
  const std::string src_weights = (src_dir / kWeightsFile).string();
  r.bytes_in = fs::file_size(src_weights);

  std::vector<std::pair<std::string, Tensor>> tensors;
  try {
    tensors = convert_weights(model, r.to);
  } catch (const Error& e) {
    throw Error::in_file(src_weights, e.what());
  }
  if (out_dir.has_parent_path()) fs::create_directories(out_dir.parent_path());
  AtomicFolderWriter folder(out);
  write_safetensors(folder.file(kWeightsFile), tensors, stored_format_metadata(r.to));
  r.files.push_back(kWeightsFile);
  r.bytes_out = fs::file_size(folder.file(kWeightsFile));
  for (const char* name : kCopied) {
    const fs::path from = src_dir / name;
    if (!fs::is_regular_file(from, ec)) continue;
    const auto mapped = MappedFile::open(from.string());
    write_file_atomic(folder.file(name), mapped->bytes());
    r.files.push_back(name);
  }
  folder.commit(/*replace=*/true);  // a non-empty target was checked above
  return r;
}

}  // namespace orion::model
