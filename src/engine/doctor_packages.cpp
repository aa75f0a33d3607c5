#include "engine/doctor_packages.h"

#include <filesystem>

#include "engine/model_package.h"
#include "model/gpt2/gpt2_model.h"
#include "model/llama/llama_model.h"

namespace orion::engine {

std::vector<DoctorPackage> write_doctor_packages(const std::string& dir, bool m1_m2, std::uint64_t seed) {
  AnePackageOptions o;
  o.seq = 32;
  o.context = 32;
  o.m1_m2 = m1_m2;
  o.dialect = m1_m2 ? "ios16" : "ios18";
  o.ane_weights = "baked";

  model::Gpt2Config g;
  g.n_layer = 1;
  g.n_embd = 64;
  g.n_head = 2;
  g.n_positions = 64;
  g.vocab_size = 320;
  g.eos_token_id = 0;
  const model::Gpt2Model gpt2 = model::Gpt2Model::from_weights(g, model::gpt2_init_weights(g, seed), "orion doctor");

  model::LlamaConfig l;
  l.hidden_size = 64;
  l.intermediate_size = 192;
  l.num_hidden_layers = 1;
  l.num_attention_heads = 2;
  l.num_key_value_heads = 1;
  l.max_position_embeddings = 64;
  l.vocab_size = 320;
  const model::LlamaModel llama = model::LlamaModel::from_weights(l, model::llama_init_weights(l, seed), "orion doctor");

  std::vector<DoctorPackage> out;
  for (const model::CausalLm* m : {static_cast<const model::CausalLm*>(&gpt2), static_cast<const model::CausalLm*>(&llama)}) {
    const std::string name(m->arch());
    const std::string folder = (std::filesystem::path(dir) / name).string();
    compile_model_package(*m, "orion doctor", o, folder, true, false);
    out.push_back({name, folder});
  }
  return out;
}

}  // namespace orion::engine
