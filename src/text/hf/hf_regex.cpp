#include "text/hf/hf_regex.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include "core/error.h"

namespace orion::text::hf {

Regex::Regex(const std::string& pattern, bool literal, const std::string& source) {
  int error = 0;
  PCRE2_SIZE offset = 0;
  const std::uint32_t options = PCRE2_UTF | (literal ? PCRE2_LITERAL : PCRE2_UCP);  // UCP is no literal's option
  pcre2_code* code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(), options, &error,
                                   &offset, nullptr);
  if (!code) {
    PCRE2_UCHAR message[256];
    pcre2_get_error_message(error, message, sizeof message);
    throw Error::in_file(source, "the pattern " + pattern + " does not compile (at offset " + std::to_string(offset) +
                                     ": " + reinterpret_cast<const char*>(message) + ")");
  }
  pcre2_jit_compile(code, PCRE2_JIT_COMPLETE);  // where PCRE2 has no JIT, matching interprets
  code_ = std::shared_ptr<void>(code, [](void* c) { pcre2_code_free(static_cast<pcre2_code*>(c)); });
}

std::vector<std::pair<std::size_t, std::size_t>> Regex::find_all(std::string_view text) const {
  auto* code = static_cast<pcre2_code*>(code_.get());
  std::unique_ptr<pcre2_match_data, decltype(&pcre2_match_data_free)> md(pcre2_match_data_create_from_pattern(code, nullptr),
                                                                         &pcre2_match_data_free);
  std::vector<std::pair<std::size_t, std::size_t>> out;
  const auto* subject = reinterpret_cast<PCRE2_SPTR>(text.data());
  std::size_t at = 0;
  while (at <= text.size()) {
    // The text was checked as UTF-8 once; every start offset is a character boundary.
    const int rc = pcre2_match(code, subject, text.size(), at, PCRE2_NO_UTF_CHECK, md.get(), nullptr);
    if (rc == PCRE2_ERROR_NOMATCH) break;
    if (rc < 0) {
      PCRE2_UCHAR message[256];
      pcre2_get_error_message(rc, message, sizeof message);
      throw Error(std::string("tokenizer regex: ") + reinterpret_cast<const char*>(message));
    }
    const PCRE2_SIZE* v = pcre2_get_ovector_pointer(md.get());
    if (v[1] > v[0]) {
      out.emplace_back(v[0], v[1]);
      at = v[1];
    } else {  // empty: step over one character
      at = v[0] + 1;
      while (at < text.size() && (static_cast<unsigned char>(text[at]) & 0xC0) == 0x80) ++at;
    }
  }
  return out;
}

}  // namespace orion::text::hf
