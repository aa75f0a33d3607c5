// `orion serve` on a loopback port, used by real clients: the official OpenAI client (npm
// openai, through tests/reference/openai_client.mjs) for chat and text completions, streamed
// and not, and the models list; curl for the errors of malformed requests and a client that
// disconnects mid-stream. Greedy answers must be `orion generate --temp 0`'s, token for token.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>

#include "cli/cli_folder_test.h"
#include "cli/run_cli.h"
#include "cli/serve_process.h"
#include "test_scale.h"
#include "text/hf/hf_components.h"

namespace orion::test {
namespace {

using nlohmann::json;

class ServeCli : public CliFolderTest {
 protected:
  void SetUp() override {
    CliFolderTest::SetUp();
    std::string log;
    ASSERT_EQ(make_hf_folder("qwen3", path("m"), log), 0) << log;
  }
  // `orion generate`'s continuation of `args` (the text after what it echoes of the prompt).
  std::string generated(const std::string& args, const std::string& after) {
    const CliResult r = run_command(orion_bin() + " generate -m " + path("m") + " " + args + " 2>/dev/null");
    std::string out = r.out;
    EXPECT_EQ(r.status, 0) << out;
    const std::size_t at = out.rfind(after);
    EXPECT_NE(at, std::string::npos) << out;
    out = out.substr(at + after.size());
    if (!out.empty() && out.back() == '\n') out.pop_back();
    return text::hf::valid_utf8(out);
  }
};

TEST_F(ServeCli, TheOpenAiClientGetsWhatGenerateGives) {
  ServeProcess server(path("m"), "--model-name tiny-qwen3");
  ASSERT_GT(server.port(), 0) << server.log();
  const json chat = {{"model", "tiny-qwen3"}, {"messages", {{{"role", "user"}, {"content", "Name a colour"}}}},
                     {"max_tokens", 12}, {"temperature", 0}};
  const json completion = {{"model", "tiny-qwen3"}, {"prompt", "In the beginning"}, {"max_tokens", 12}, {"temperature", 0}};
  const json cases = json::array({{{"kind", "models"}},
                                  {{"kind", "chat"}, {"params", chat}},
                                  {{"kind", "chat_stream"}, {"params", chat}},
                                  {{"kind", "completion"}, {"params", completion}},
                                  {{"kind", "completion_stream"}, {"params", completion}}});
  const std::string data = std::getenv("ORION_TEST_DATA") ? std::getenv("ORION_TEST_DATA") : "";
  const std::string cmd = "node " + std::string(ORION_SOURCE_DIR) + "/tests/reference/openai_client.mjs " + data +
                          "/node_modules " + server.url() + "/v1 " + write("cases.json", cases.dump()) + " " + path("out.json") +
                          " 2>&1";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << server.log();
  const json out = json::parse(read(path("out.json")));
  ASSERT_EQ(out.size(), 5u) << out.dump();
  EXPECT_EQ(out[0]["models"], json::array({"tiny-qwen3"})) << out.dump();
  for (int i = 1; i <= 4; ++i) ASSERT_FALSE(out[i].contains("error")) << out[i].dump() << server.log();

  const std::string want_chat = generated("-p 'Name a colour' --chat -n 12 --temp 0", "<|im_start|>assistant\n");
  const std::string want_text = generated("-p 'In the beginning' -n 12 --temp 0", "In the beginning");
  EXPECT_EQ(out[1]["text"], want_chat);
  EXPECT_EQ(out[2]["text"], want_chat);
  EXPECT_EQ(out[3]["text"], want_text);
  EXPECT_EQ(out[4]["text"], want_text);
  for (int i = 1; i <= 4; ++i) {
    EXPECT_EQ(out[i]["usage"]["completion_tokens"], 12) << out[i].dump();
    EXPECT_EQ(out[i]["finish_reason"], "length") << out[i].dump();
  }
  EXPECT_GT(out[2]["chunks"].get<int>(), 2);
  EXPECT_NE(server.log().find("completion: prompt"), std::string::npos) << server.log();
}

TEST_F(ServeCli, MalformedRequestsGetA4xxAndAnErrorObject) {
  ServeProcess server(path("m"), "--quiet --max-body-mb 1");
  ASSERT_GT(server.port(), 0) << server.log();
  const std::string post = server.url() + "/v1/chat/completions -H 'Content-Type: application/json' ";
  std::string big(2'000'000, 'x');
  const std::string big_file = write("big.json", "{\"messages\": [{\"role\": \"user\", \"content\": \"" + big + "\"}]}");
  std::string bad_utf8 = "{\"prompt\": \"caf\xC3\x28\"}";
  const std::string utf8_file = write("utf8.json", bad_utf8);
  struct Case {
    std::string args;
    int status;
    std::string message;
  };
  const std::vector<Case> cases = {
      {post + "-d '{\"messages\": [{\"role\": \"user\"'", 400, "not valid JSON"},
      {post + "-d '{\"messages\": \"hi\"}'", 400, "'messages' must be a non-empty array"},
      {post + "-d '{\"messages\": [{\"role\": \"user\", \"content\": \"hi\"}], \"max_tokens\": \"many\"}'", 400, "'max_tokens' must be an integer"},
      {post + "-d '{\"messages\": [{\"role\": \"user\", \"content\": \"hi\"}], \"max_tokens\": 1000000000}'", 400, "leave room for"},
      {post + "-d '{\"messages\": [{\"role\": \"user\", \"content\": \"hi\"}], \"temperature\": 7}'", 400, "'temperature' is 7"},
      {post + "-d '{\"messages\": [{\"role\": \"user\", \"content\": \"hi\"}], \"n\": 2}'", 400, "'n' must be 1"},
      {post + "--data-binary @" + big_file, 413, "larger than the server's limit"},
      {server.url() + "/v1/completions --data-binary @" + utf8_file, 400, "not valid UTF-8"},
      {server.url() + "/v2/anything", 404, "no such endpoint"},
  };
  for (const Case& c : cases) {
    const Http h = curl(c.args);
    EXPECT_EQ(h.status, c.status) << c.args << "\n" << h.body;
    const json j = json::parse(h.body, nullptr, false);
    ASSERT_TRUE(j.is_object() && j.contains("error")) << h.body;
    EXPECT_NE(j["error"]["message"].get<std::string>().find(c.message), std::string::npos) << h.body;
  }
  // And it still answers.
  EXPECT_EQ(curl(server.url() + "/health").status, 200);
}

// --api-key (here from a file): the API wants the Bearer key and refuses others with OpenAI's
// 401 error object; /health and the chat page stay open. A server beyond loopback without a key
// warns; an empty key file is refused by name.
TEST_F(ServeCli, AnApiKeyGuardsTheApiAndLeavesHealthOpen) {
  ServeProcess server(path("m"), "--quiet --api-key-file " + write("key.txt", "  sk-orion-test-0042\n"));
  ASSERT_GT(server.port(), 0) << server.log();
  const std::string models = server.url() + "/v1/models";
  for (const std::string& header : {std::string(), std::string("-H 'Authorization: Bearer sk-orion-test-0041'"),
                                    std::string("-H 'Authorization: sk-orion-test-0042'")}) {
    const Http h = curl(header + " " + models);
    EXPECT_EQ(h.status, 401) << header << "\n" << h.body;
    const json j = json::parse(h.body, nullptr, false);
    ASSERT_TRUE(j.is_object() && j.contains("error")) << h.body;
    EXPECT_EQ(j["error"]["code"], "invalid_api_key") << h.body;
    EXPECT_EQ(j["error"]["type"], "invalid_request_error") << h.body;
  }
  EXPECT_EQ(curl("-H 'Authorization: Bearer sk-orion-test-0042' " + models).status, 200);
  const Http chat = curl("-H 'Authorization: Bearer sk-orion-test-0042' -H 'Content-Type: application/json' -d "
                         "'{\"messages\": [{\"role\": \"user\", \"content\": \"hi\"}], \"max_tokens\": 2}' " +
                         server.url() + "/v1/chat/completions");
  EXPECT_EQ(chat.status, 200) << chat.body;
  EXPECT_EQ(curl(server.url() + "/health").status, 200);
  EXPECT_EQ(curl(server.url() + "/").status, 200);

  const CliResult empty = run_orion("serve -m " + path("m") + " --port 0 --api-key-file " + write("empty.txt", "\n"));
  EXPECT_NE(empty.status, 0);
  EXPECT_NE(empty.out.find("empty.txt: has no key on its first line"), std::string::npos) << empty.out;
  ServeProcess open(path("m"), "--quiet --host 0.0.0.0");
  ASSERT_GT(open.port(), 0) << open.log();
  EXPECT_NE(open.log().find("listening on 0.0.0.0 without --api-key"), std::string::npos) << open.log();
}

TEST_F(ServeCli, MaxTokensLimitCapsEveryRequest) {
  ServeProcess server(path("m"), "--quiet --max-tokens-limit 3 --max-concurrent 2");
  ASSERT_GT(server.port(), 0) << server.log();
  const auto complete = [&](const std::string& max_tokens) {
    return curl("-H 'Content-Type: application/json' -d '{\"prompt\": \"In the beginning\", \"ignore_eos\": true" + max_tokens +
                "}' " + server.url() + "/v1/completions");
  };
  const Http unasked = complete(""), fewer = complete(", \"max_tokens\": 2"), more = complete(", \"max_tokens\": 4");
  ASSERT_EQ(unasked.status, 200) << unasked.body;
  EXPECT_EQ(json::parse(unasked.body)["usage"]["completion_tokens"], 3) << unasked.body;
  EXPECT_EQ(json::parse(unasked.body)["choices"][0]["finish_reason"], "length") << unasked.body;
  ASSERT_EQ(fewer.status, 200) << fewer.body;
  EXPECT_EQ(json::parse(fewer.body)["usage"]["completion_tokens"], 2) << fewer.body;
  EXPECT_EQ(more.status, 400) << more.body;
  const json error = json::parse(more.body, nullptr, false);
  ASSERT_TRUE(error.is_object() && error.contains("error")) << more.body;
  EXPECT_EQ(error["error"]["param"], "max_tokens") << more.body;
  EXPECT_NE(error["error"]["message"].get<std::string>().find("at most 3 tokens"), std::string::npos) << more.body;
}

TEST_F(ServeCli, AClientThatGoesAwayStopsItsGenerationAndOthersStreamTogether) {
  ServeProcess server(path("m"), "");
  ASSERT_GT(server.port(), 0) << server.log();
  const std::string stream = server.url() + "/v1/completions -N -d '{\"prompt\": \"Once\", \"max_tokens\": 400, \"stream\": true, \"temperature\": 0}'";
  // curl gives up after half a second, mid-stream.
  curl("--max-time 0.5 " + stream);
  bool idle = false;
  for (int i = 0; i < 100 && !idle; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    idle = json::parse(curl(server.url() + "/health").body)["active"] == 0;
  }
  EXPECT_TRUE(idle) << server.log();
  EXPECT_NE(server.log().find("disconnected (cancelled)"), std::string::npos) << server.log();

  // Four streams at once all finish, each with its [DONE].
  std::vector<std::thread> clients;
  std::vector<Http> answers(4);
  for (int i = 0; i < 4; ++i)
    clients.emplace_back([&, i] {
      answers[static_cast<std::size_t>(i)] = curl(server.url() + "/v1/chat/completions -N -d '{\"messages\": [{\"role\": \"user\", \"content\": \"Hello " +
                                                  std::to_string(i) + "\"}], \"max_tokens\": 20, \"stream\": true}'");
    });
  for (auto& t : clients) t.join();
  for (const Http& h : answers) {
    EXPECT_EQ(h.status, 200) << h.body;
    EXPECT_NE(h.body.find("data: [DONE]"), std::string::npos) << h.body;
    EXPECT_NE(h.body.find("\"finish_reason\":\"length\""), std::string::npos) << h.body;
  }
}

// On ane-sim the model's kernels compile once and concurrent requests decode together in the
// package's decode_batch program (a slot each): four streams (two at the small scale) of two
// prompts of different lengths, sent together, each get what `orion generate --device ane-sim
// --temp 0` gives alone. A prefill window of 32 holds the prompts at a quarter of the cost.
TEST_F(ServeCli, OnAneSimFourConcurrentRequestsDecodeTogetherAndEqualGenerate) {
  ServeProcess server(path("m"), "--device ane-sim --no-cache --seq 32");
  ASSERT_GT(server.port(), 0) << server.log();
  const std::string prompts[] = {"Name a colour", "Count from one to three, slowly"};
  const int streams = testing_util::at_scale(4, 2), tokens = testing_util::at_scale(8, 4);
  std::vector<Http> answers(static_cast<std::size_t>(streams));
  std::vector<std::thread> clients;
  for (int i = 0; i < streams; ++i)
    clients.emplace_back([&, i] {
      const std::string body = R"({"messages": [{"role": "user", "content": ")" + prompts[i % 2] +
                               R"("}], "max_tokens": )" + std::to_string(tokens) + R"(, "temperature": 0})";
      answers[static_cast<std::size_t>(i)] = curl(server.url() + "/v1/chat/completions -H 'Content-Type: application/json' -d '" + body + "'");
    });
  for (std::thread& t : clients) t.join();
  std::string want[2];
  for (int p = 0; p < 2; ++p)
    want[p] = generated("--device ane-sim --no-cache --seq 32 -p '" + prompts[p] + "' --chat -n " + std::to_string(tokens) + " --temp 0",
                        "<|im_start|>assistant\n");
  EXPECT_NE(want[0], want[1]);
  for (int i = 0; i < streams; ++i) {
    const Http& a = answers[static_cast<std::size_t>(i)];
    ASSERT_EQ(a.status, 200) << a.body << server.log();
    EXPECT_EQ(json::parse(a.body)["choices"][0]["message"]["content"], want[i % 2]) << prompts[i % 2] << ": " << a.body;
  }
  EXPECT_NE(server.log().find("4 requests at once"), std::string::npos) << server.log();
}

// --ane-batch 1: no batch program, the one session serves requests in turn.
TEST_F(ServeCli, OnAneSimWithoutABatchRequestsTakeTurns) {
  ServeProcess server(path("m"), "--device ane-sim --no-cache --ane-batch 1 --seq 32");
  ASSERT_GT(server.port(), 0) << server.log();
  const std::string body = R"({"messages": [{"role": "user", "content": "Name a colour"}], "max_tokens": 2, "temperature": 0})";
  Http answers[2];
  std::thread other([&] { answers[1] = curl(server.url() + "/v1/chat/completions -H 'Content-Type: application/json' -d '" + body + "'"); });
  answers[0] = curl(server.url() + "/v1/chat/completions -H 'Content-Type: application/json' -d '" + body + "'");
  other.join();
  for (const Http& a : answers) ASSERT_EQ(a.status, 200) << a.body << server.log();
  EXPECT_EQ(json::parse(answers[0].body)["choices"][0]["message"]["content"],
            json::parse(answers[1].body)["choices"][0]["message"]["content"]);
  EXPECT_NE(server.log().find("one request at a time"), std::string::npos) << server.log();
}

// The chat page in a headless Chromium (tests/reference/chat_page.mjs): a typed message gets a
// streamed answer (several texts shown as it grows), the one `orion generate --chat --temp 0`
// gives with the page's address setting temperature 0, the rate on the status line, and the
// second message goes with the whole conversation.
TEST_F(ServeCli, TheChatPageInChromiumStreamsAnAnswerAndKeepsTheConversation) {
  ServeProcess server(path("m"), "--model-name tiny-qwen3");
  ASSERT_GT(server.port(), 0) << server.log();
  const std::string data = std::getenv("ORION_TEST_DATA") ? std::getenv("ORION_TEST_DATA") : "";
  const std::string cmd = "node " + std::string(ORION_SOURCE_DIR) + "/tests/reference/chat_page.mjs " + data +
                          "/node_modules '" + server.url() + "/?temperature=0&max_tokens=12' " + path("page.json") + " 2>&1";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << server.log();
  const json out = json::parse(read(path("page.json")));
  EXPECT_EQ(out["pageErrors"], json::array()) << out.dump();
  EXPECT_EQ(out["model"], "(tiny-qwen3)");
  ASSERT_EQ(out["turns"].size(), 2u) << out.dump();
  const std::string want = generated("-p 'Name a colour' --chat -n 12 --temp 0", "<|im_start|>assistant\n");
  const json& first = out["turns"][0];
  EXPECT_EQ(first["text"], want) << out.dump();
  EXPECT_GE(first["shown"].get<int>(), 3) << "not streamed: " << out.dump();
  EXPECT_NE(first["status"].get<std::string>().find("12 tokens"), std::string::npos) << out.dump();
  EXPECT_NE(first["status"].get<std::string>().find("tok/s"), std::string::npos) << out.dump();
  EXPECT_FALSE(out["turns"][1]["text"].get<std::string>().empty()) << out.dump();
  ASSERT_EQ(out["bodies"].size(), 2u) << out.dump();
  const json& second = out["bodies"][1];
  EXPECT_EQ(second["temperature"], 0);
  EXPECT_EQ(second["max_tokens"], 12);
  ASSERT_EQ(second["messages"].size(), 3u) << second.dump();
  EXPECT_EQ(second["messages"][0]["content"], "Name a colour");
  EXPECT_EQ(second["messages"][1]["role"], "assistant");
  EXPECT_EQ(second["messages"][1]["content"], want);
  EXPECT_EQ(second["messages"][2]["content"], "And another one");
}

// The load test, bounded in time (ORION_SERVE_LOAD_SECONDS, or 30 s, 8 at the small scale of
// tests/test_scale.h; the soak of an hour is the same command with more seconds) and on
// loopback (tests/reference/load_clients.mjs): 16 clients, a fifth disconnecting mid-stream, a
// fifth sending malformed bodies, the rest greedy requests that must each get what `orion
// generate --temp 0` gives. The server stays up, answers every request as it should, and its
// resident memory at the end is within 10% of what it was after a warm-up under the same load.
// `text` parsed by Prometheus's own parser (tests/reference/prometheus_text.py): its samples.
json prometheus_samples(const std::string& text, const std::string& file) {
  std::ofstream(file) << text;
  const CliResult r = run_command(std::string("/usr/bin/python3 ") + ORION_SOURCE_DIR + "/tests/reference/prometheus_text.py " + file + " 2>&1");
  EXPECT_EQ(r.status, 0) << r.out << "\n" << text;
  return json::parse(r.out, nullptr, false);
}

// The sum of the samples named `name` whose labels satisfy `keep`.
double sample_sum(const json& samples, const std::string& name, const std::function<bool(const json&)>& keep = {}) {
  double sum = 0;
  for (const json& s : samples)
    if (s["name"] == name && (!keep || keep(s["labels"]))) sum += s["value"].get<double>();
  return sum;
}

// GET /metrics after load runs whose clients counted `runs` (load_clients.mjs's counts): the
// completions answered 200 are the answers and disconnects, the 4xx the malformed requests, every
// answer's 8 tokens are among those generated, and every request that started has a first token.
// `mid` (a scrape during the load) parses too.
void expect_metrics_add_up(ServeProcess& server, const std::string& mid, const std::vector<json>& runs) {
  double answered = 0, malformed = 0, ok = 0;
  for (const json& c : runs) {
    answered += c["ok"].get<double>() + c["disconnected"].get<double>();
    malformed += c["malformed"].get<double>();
    ok += c["ok"].get<double>();
  }
  const auto completions = [](const json& l) {
    return l["endpoint"] == "/v1/chat/completions" || l["endpoint"] == "/v1/completions";
  };
  const auto status_of = [](const json& l) { return std::stoi(l["status"].get<std::string>()); };
  const std::string dir = std::filesystem::temp_directory_path() / ("orion-metrics-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  ASSERT_FALSE(mid.empty());
  const json during = prometheus_samples(mid, dir + "/mid.txt");
  ASSERT_TRUE(during.is_array()) << mid;
  EXPECT_GT(sample_sum(during, "orion_requests_total"), 0) << mid;
  // A cancelled stream is counted when its connection closes, just after the scheduler lets go.
  json samples;
  for (int i = 0; i < 50; ++i) {
    samples = prometheus_samples(curl(server.url() + "/metrics").body, dir + "/end.txt");
    if (sample_sum(samples, "orion_requests_total", [&](const json& l) { return completions(l) && status_of(l) == 200; }) >= answered)
      break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  std::filesystem::remove_all(dir);
  ASSERT_TRUE(samples.is_array());
  EXPECT_EQ(sample_sum(samples, "orion_requests_total", [&](const json& l) { return completions(l) && status_of(l) == 200; }),
            answered)
      << samples.dump();
  EXPECT_EQ(sample_sum(samples, "orion_requests_total", [&](const json& l) { return status_of(l) >= 400 && status_of(l) < 500; }),
            malformed)
      << samples.dump();
  EXPECT_GE(sample_sum(samples, "orion_generation_tokens_total"), 8 * ok);
  EXPECT_GE(sample_sum(samples, "orion_time_to_first_token_seconds_count"), ok);
  EXPECT_LE(sample_sum(samples, "orion_time_to_first_token_seconds_count"), answered);
  EXPECT_EQ(sample_sum(samples, "orion_requests_running"), 0);
}

TEST_F(ServeCli, SixteenClientsWithDisconnectsAndMalformedBodiesGetRightAnswersInBoundedMemory) {
  ServeProcess server(path("m"), "--quiet");
  ASSERT_GT(server.port(), 0) << server.log();
  const json expected = {{"chat", generated("-p 'Name a colour' --chat -n 8 --temp 0", "<|im_start|>assistant\n")},
                         {"completion", generated("-p 'In the beginning' -n 8 --temp 0", "In the beginning")}};
  const std::string exp = write("expected.json", expected.dump());
  const std::string data = std::getenv("ORION_TEST_DATA") ? std::getenv("ORION_TEST_DATA") : "";
  const char* env_seconds = std::getenv("ORION_SERVE_LOAD_SECONDS");
  const int seconds = env_seconds ? std::atoi(env_seconds) : testing_util::at_scale(10, 8);
  const auto load = [&](int s, const std::string& out) {
    const std::string cmd = "node " + std::string(ORION_SOURCE_DIR) + "/tests/reference/load_clients.mjs " + server.url() + " " +
                            std::to_string(s) + " 16 " + exp + " " + out + " 2>&1";
    EXPECT_EQ(std::system(cmd.c_str()), 0);
    return json::parse(read(out));
  };
  const auto idle = [&] {  // the disconnected requests' cancellations reach the scheduler
    for (int i = 0; i < 100; ++i) {
      if (curl(server.url() + "/health").body.find("\"active\":0") != std::string::npos) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    return false;
  };
  const json warm = load(std::max(5, seconds / 6), path("warm.json"));
  EXPECT_EQ(warm["failures"], json::array()) << warm.dump();
  ASSERT_TRUE(idle()) << server.log();
  const long rss_warm = server.rss_kb();
  // /metrics scraped while the clients run: the one scrape from the middle of the run is parsed
  // below, by Prometheus's own parser.
  std::atomic<bool> loading = true;
  std::string mid_scrape;
  std::thread scraper([&] {
    std::this_thread::sleep_for(std::chrono::seconds(seconds / 2));
    if (loading) mid_scrape = curl(server.url() + "/metrics").body;
  });
  const json run = load(seconds, path("load.json"));
  loading = false;
  scraper.join();
  EXPECT_EQ(run["failures"], json::array()) << run.dump(1);
  // Nine of the sixteen clients send well-formed requests: each was answered, on average, at
  // least once (a sanitizer build on a slow machine answers a few each).
  EXPECT_GE(run["counts"]["ok"].get<int>(), 9) << run.dump();
  EXPECT_GT(run["counts"]["disconnected"].get<int>(), 4) << run.dump();
  EXPECT_GE(run["counts"]["malformed"].get<int>(), 6) << run.dump();  // every kind at least once
  ASSERT_TRUE(server.alive()) << server.log();
  ASSERT_TRUE(idle()) << server.log();
  const long rss_end = server.rss_kb();
  expect_metrics_add_up(server, mid_scrape, {warm["counts"], run["counts"]});
  ASSERT_GT(rss_warm, 0);
  const char* rss_env = std::getenv("ORION_SERVE_LOAD_RSS");
  if (!rss_env || std::string(rss_env) != "0") {  // 0 in the sanitizer run (Makefile's SANITIZE_ENV)
    EXPECT_LE(rss_end, rss_warm * 11 / 10) << "resident " << rss_warm << " kB after warm-up, " << rss_end << " kB at the end";
  }
  std::printf("load: %s in %d s; resident %ld kB after warm-up, %ld kB at the end\n", run["counts"].dump().c_str(), seconds,
              rss_warm, rss_end);
}

// `orion bench serve` on a small folder: every stream's tokens counted, rates measured.
TEST_F(ServeCli, BenchServeReportsEveryStreamCount) {
  const CliResult r = run_orion("bench serve -m " + path("m") + " --streams 1,3 --tokens 5 --json");
  ASSERT_EQ(r.status, 0) << r.out;
  const std::size_t at = r.out.find("[{\"streams\"");
  ASSERT_NE(at, std::string::npos) << r.out;
  const nlohmann::json j = nlohmann::json::parse(r.out.substr(at));
  ASSERT_EQ(j.size(), 2u) << r.out;
  EXPECT_EQ(j[0]["streams"], 1);
  EXPECT_EQ(j[0]["tokens"], 5);
  EXPECT_EQ(j[1]["streams"], 3);
  EXPECT_EQ(j[1]["tokens"], 15);
  for (const auto& run : j) {
    EXPECT_GT(run["in_all_tok_per_s"].get<double>(), 0) << r.out;
    EXPECT_GE(run["decode_tok_per_s"].get<double>(), 0) << r.out;  // 0 when a small model finishes within one look
    EXPECT_GT(run["first_token_s"].get<double>(), 0) << r.out;
  }
  EXPECT_EQ(run_orion("bench serve -m " + path("m") + " --tokens 0").status, 2);
}

}  // namespace

}  // namespace orion::test
