#pragma once
// Every top-level field a request body may carry and what the server does with it: honoured,
// accepted and logged, or refused. One table (docs/SERVING.md prints it), so that nothing a
// client sends is taken and ignored: a field the table does not know is refused as OpenAI refuses
// it ("Unrecognized request argument supplied"), and a refused one unless it holds the value that
// asks for nothing (n: 1, store: false...).
#include <span>
#include <string_view>

#include <nlohmann/json.hpp>

#include "serve/openai_wire.h"

namespace orion::serve {

enum class FieldUse { honoured, logged, refused };

struct RequestField {
  std::string_view name;
  bool chat = false, completion = false;  // the endpoints that take it
  FieldUse use = FieldUse::honoured;
  std::string_view note;  // what it does, or why it is refused
  // For a refused field: whether its value asks for nothing (then it passes); nullptr: never.
  bool (*asks_nothing)(const nlohmann::json&) = nullptr;
};

std::span<const RequestField> request_fields();

// Throws ApiError (400, the field as its param) for the first field of `body` that `endpoint`
// does not take, or that is refused and asks for something.
void check_request_fields(Endpoint endpoint, const nlohmann::json& body);

}  // namespace orion::serve
