#pragma once
// GPT-2's byte-to-character map ("bytes_to_unicode" in OpenAI's encoder.py). Byte-level BPE
// vocabularies spell every token as a string of these characters, one per byte, so that no
// token contains a space, a control character or a broken UTF-8 sequence: the 188 printable
// bytes ('!'..'~', U+00A1..U+00AC, U+00AE..U+00FF) stand for themselves, and the other 68
// bytes (0x00..0x20, 0x7F..0xA0, 0xAD), in increasing order, for U+0100..U+0143. So the space
// 0x20 is 'Ġ' (U+0120) and the newline 0x0A is 'Ċ' (U+010A).
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace orion::text {

// The code point that stands for `byte`.
char32_t byte_to_unicode(std::uint8_t byte);

// The byte that `code_point` stands for, or -1 when it is not one of the 256 mapped code points.
int unicode_to_byte(char32_t code_point);

// The UTF-8 encoding of byte_to_unicode(byte): one byte for the printable ASCII bytes, two for
// all others. The view points at static storage.
std::string_view byte_to_utf8(std::uint8_t byte);

// The 256 bytes in the order of their code points, which is the order of the first 256 entries
// of GPT-2's encoder.json (ids 0..255): the printable bytes ascending, then the others
// ascending.
const std::array<std::uint8_t, 256>& gpt2_byte_order();

// Appends the UTF-8 encoding of `code_point` (which must be at most U+10FFFF) to `out`.
void append_utf8(std::string& out, char32_t code_point);

// Raw bytes to their token spelling: each byte's character, UTF-8 encoded.
std::string bytes_to_token_text(std::string_view bytes);

// Token spelling back to raw bytes. std::nullopt when `text` is not valid UTF-8 or has a
// character outside the map (e.g. U+20AC), i.e. when it is not the spelling of any bytes.
std::optional<std::string> token_text_to_bytes(std::string_view text);

}  // namespace orion::text
