// Fuzz target: chat templates (text/chat_template.h, the Jinja subset of text/jinja/), parsed
// and rendered with a fixed conversation, as a model folder's tokenizer_config.json gives them.
#include "fuzz_input.h"
#include "text/chat_template.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  // A template that renders forever (a loop over a huge range) is cut by range()'s limit; the
  // input size bounds the rest.
  if (size > 4096) return 0;
  orion::fuzz::expect_ok_or_error([&] {
    const auto t = orion::text::ChatTemplate::from_text(std::string(orion::fuzz::as_text(data, size)), "fuzz.jinja",
                                                        {{"bos_token", "<s>"}, {"eos_token", "</s>"}});
    const nlohmann::json messages = nlohmann::json::parse(
        R"([{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi <think>"}, {"role": "assistant", "content": "Hello"}])");
    (void)t.render(messages);
  });
  return 0;
}
