#pragma once
// The chat page `orion serve` answers GET / with: one self-contained HTML file (no build step,
// no CDN) that keeps the conversation, sends it to /v1/chat/completions with stream: true,
// shows the tokens as they come and the rate they came at.
#include <string>

namespace orion::serve {

const std::string& chat_page_html();

}  // namespace orion::serve
