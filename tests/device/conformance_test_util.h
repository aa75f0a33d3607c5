#pragma once
// Shared by the conformance tests (conformance_test.cpp, conformance_4bit_test.cpp): a program
// in the ios18 spelling, little-endian bytes, surfaces packed and unpacked as fp16, seeded
// values, and one compile, load and evaluation on ane-sim.
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "core/half.h"
#include "device/ane_sim.h"

namespace orion::device::conformance {

inline std::string conformance_program(const std::string& params, const std::string& body, const std::string& outs) {
  return "program(1.3)\n[buildInfo = dict<string, string>({{\"coremlc-version\", \"3505.4.1\"}})]\n{\n"
         "    func main<ios18>(" + params + ") {\n" + body + "    } -> (" + outs + ");\n}\n";
}

inline void put_le(std::vector<std::byte>& b, std::size_t at, std::uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) b[at + static_cast<std::size_t>(i)] = static_cast<std::byte>(v >> (8 * i));
}

inline void write_bytes(const std::string& path, const std::string& text) { std::ofstream(path, std::ios::binary) << text; }

inline AneSurface packed(const std::vector<float>& v, std::size_t bytes) {
  AneSurface s(bytes);
  for (std::size_t i = 0; i < v.size(); ++i) {
    const std::uint16_t h = float_to_half(v[i]);
    std::memcpy(s.bytes().data() + 2 * i, &h, 2);
  }
  return s;
}

inline std::vector<float> unpacked(const AneSurface& s, std::size_t n) {
  std::vector<float> f(n);
  for (std::size_t i = 0; i < n; ++i) {
    std::uint16_t h;
    std::memcpy(&h, s.bytes().data() + 2 * i, 2);
    f[i] = half_to_float(h);
  }
  return f;
}

inline float value_at(std::size_t i, int salt) { return static_cast<float>(static_cast<int>((i * 7 + salt) % 17) - 8) / 8.0f; }

// The program in `dir` compiled, loaded and evaluated once on an ane-sim of options `o`, each
// input packed into a 49,152-byte surface (the minimum, ANE012); the first `n` output values.
inline std::vector<float> run_once(const std::string& dir, const AneSimOptions& o, const std::vector<std::vector<float>>& inputs,
                            std::size_t n) {
  AneSim sim(o);
  const AneProgramId id = sim.compile(dir);
  sim.load(id);
  std::vector<AneSurface> in;
  for (const std::vector<float>& v : inputs) in.push_back(packed(v, 49152));
  std::vector<const AneSurface*> in_ptrs;
  for (const AneSurface& a : in) in_ptrs.push_back(&a);
  AneSurface y(49152);
  sim.evaluate(id, in_ptrs, {&y});
  return unpacked(y, n);
}

}  // namespace orion::device::conformance
