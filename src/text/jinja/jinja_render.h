#pragma once
// Renders a parsed template (jinja_parser.h) with variables, as jinja2's sandboxed environment
// in transformers renders chat templates: Python's semantics for values and operators, the
// filters, tests and methods chat templates use, `raise_exception(msg)` and `strftime_now(fmt)`,
// `namespace()`, `range()`, `dict()`. An unknown filter, test or method, an operation on the
// wrong types, or an undefined value used as more than a truth value or empty text, throws
// orion::Error "TEMPLATE:LINE:COL: ...". A template's raise_exception throws orion::Error with
// its message.
#include <string>

#include "text/jinja/jinja_ast.h"

namespace orion::text::jinja {

std::string render(const Template& t, const Dict& variables);

}  // namespace orion::text::jinja
