#pragma once
// The Jinja subset of Hugging Face chat templates, parsed as transformers' environment does
// (trim_blocks and lstrip_blocks on, the loop controls extension, `{% generation %}`):
//
//   {{ expr }}, {# comments #}, whitespace control with '-' (and '+' against lstrip_blocks);
//   {% if %}/{% elif %}/{% else %}/{% endif %}, {% for a[, b] in expr [if cond] %} with
//   {% else %}, {% break %}, {% continue %}, {% set x = e %}, {% set ns.x = e %},
//   {% set x %}...{% endset %}, {% macro name(a, b=default) %}...{% endmacro %},
//   {% generation %}...{% endgeneration %};
//   expressions: literals (strings, integers, floats, true/false/none in either case, lists,
//   tuples, dicts), names, a.b, a[b], slices a[b:c:d], calls with keyword arguments, filters,
//   tests (is [not]), not/and/or, comparisons, in / not in, + - ~ * / // % **, and
//   `x if c else y`.
//
// Anything else (include, import, extends, block, call, filter blocks, raw...) is refused by
// name with the line and column: a chat template that needs more fails loudly, never renders
// something else.
#include <string>
#include <string_view>

#include "text/jinja/jinja_ast.h"

namespace orion::text::jinja {

// Throws orion::Error "NAME:LINE:COL: message".
Template parse_template(std::string_view text, const std::string& name);

}  // namespace orion::text::jinja
