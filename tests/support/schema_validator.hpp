#pragma once
// Validates documents against docs/schema/<kind>.schema.json with valijson,
// resolving references between our schema files.
#include <string>

#include <nlohmann/json.hpp>

namespace gpufeed::testing {

// Empty when valid; otherwise one line per error with its JSON path.
std::string schema_errors(const std::string& kind, const nlohmann::json& document);
// Convenience for documents we keep in ordered form.
std::string schema_errors(const std::string& kind, const nlohmann::ordered_json& document);

}  // namespace gpufeed::testing
