// orion convert: a model folder rewritten in the fast decoder's layout and a chosen dtype
// (f32, f16 or per-block int8), so that generation maps the weights instead of packing a copy;
// or a Llama-family folder quantized to 4 bits in MLX's layout (q4), which mlx-lm reads too.
#include <cstdio>

#include "commands.h"
#include "core/error.h"
#include "core/stopwatch.h"
#include "model/any_model.h"
#include "model/convert.h"

namespace orion::cli {

namespace {

struct ConvertOpts {
  std::string model_dir, out, dtype, scale = "f32";
  int block = model::kQ8Block;
  int group = model::kQ4Group;
  bool force = false;
};

void convert(const ConvertOpts& o, bool block_given, bool scale_given, bool group_given) {
  model::ConvertOptions c;
  c.dtype = model::weight_dtype_from_name(o.dtype);
  if ((block_given || scale_given) && c.dtype != model::WeightDType::q8)
    throw Error("--block and --scale apply to --dtype q8 only");
  if (group_given && c.dtype != model::WeightDType::q4) throw Error("--group-size applies to --dtype q4 only");
  c.q8_block = o.block;
  c.q8_scale = o.scale == "f16" ? DType::f16 : DType::f32;
  c.q4_group = o.group;
  c.force = o.force;
  Stopwatch sw;
  const model::ConvertResult r = model::convert_model(o.model_dir, o.out, c);
  for (const std::string& w : r.warnings) std::fprintf(stderr, "orion: warning: %s\n", w.c_str());
  std::string files;
  for (const std::string& f : r.files) files += (files.empty() ? "" : ", ") + f;
  std::printf("wrote %s: weights %s (from %s), model.safetensors %.1f MB -> %.1f MB; %s (%.1f s)\n", o.out.c_str(),
              r.to_name.c_str(),
              r.from ? model::stored_format_name(*r.from).c_str() : "a Hugging Face layout file",
              static_cast<double>(r.bytes_in) / 1e6, static_cast<double>(r.bytes_out) / 1e6, files.c_str(), sw.seconds());
}

}  // namespace

void add_convert_command(CLI::App& app) {
  auto o = std::make_shared<ConvertOpts>();
  auto* cmd = app.add_subcommand(
      "convert", "Write a copy of a model folder with its weights in the fast decoder's layout: f32, f16 or q8 (GPT-2); "
                 "or in 4 bits, MLX's layout (q4, the Llama family)");
  cmd->add_option("-m,--model", o->model_dir, "Model folder to convert (Hugging Face layout or converted)")->required();
  cmd->add_option("--dtype", o->dtype,
                  "Weight format: f32, f16, q8 (int8 with one scale per block), or q4 (MLX's affine 4-bit: a scale and a "
                  "bias per group)")
      ->check(CLI::IsMember({"f32", "f16", "q8", "q4"}))
      ->required();
  auto* block = cmd->add_option("--block", o->block, "q8: weights per scale")->check(CLI::IsMember({32, 64}))->capture_default_str();
  auto* scale = cmd->add_option("--scale", o->scale, "q8: how the scales are stored (f16 halves them; they are widened to f32 at load)")
                    ->check(CLI::IsMember({"f32", "f16"}))
                    ->capture_default_str();
  auto* group = cmd->add_option("--group-size", o->group, "q4: weights per scale and bias (as mlx-lm's --q-group-size)")
                    ->check(CLI::IsMember({32, 64, 128}))
                    ->capture_default_str();
  cmd->add_option("-o,--out", o->out, "Folder to write (must not exist or be empty)")->required();
  cmd->add_flag("--force", o->force, "Replace an existing model folder at --out");
  cmd->callback([o, block, scale, group] { convert(*o, block->count() > 0, scale->count() > 0, group->count() > 0); });
}

}  // namespace orion::cli
