// Chat messages as the OpenAI API and the templates see them: plain JSON values (nlohmann::json), passed to
// the Jinja engine unchanged, so a template reads exactly the fields a client sent.
#pragma once
#include <nlohmann/json.hpp>

namespace keel::chat {

using Json =
    nlohmann::ordered_json;  // key order is kept: templates and tojson print keys in the client's order

}  // namespace keel::chat
