#include "support/schema_validator.hpp"

#include <filesystem>
#include <fstream>
#include <stdexcept>

#include <valijson/adapters/nlohmann_json_adapter.hpp>
#include <valijson/schema.hpp>
#include <valijson/schema_parser.hpp>
#include <valijson/validator.hpp>

namespace gpufeed::testing {
namespace {

nlohmann::json load_schema_file(const std::string& name) {
  const auto path = std::filesystem::path(GPUFEED_SOURCE_DIR) / "docs" / "schema" / name;
  std::ifstream in(path);
  if (!in) throw std::runtime_error("missing schema " + path.string());
  return nlohmann::json::parse(in);
}

}  // namespace

std::string schema_errors(const std::string& kind, const nlohmann::json& document) {
  const nlohmann::json schema_doc = load_schema_file(kind + ".schema.json");
  valijson::Schema schema;
  valijson::SchemaParser parser(valijson::SchemaParser::kDraft7);
  valijson::adapters::NlohmannJsonAdapter schema_adapter(schema_doc);
  // References like "envelope.schema.json#/definitions/host" name sibling files.
  auto fetch = [](const std::string& uri) -> const nlohmann::json* {
    return new nlohmann::json(load_schema_file(std::filesystem::path(uri).filename().string()));
  };
  auto release = [](const nlohmann::json* doc) { delete doc; };
  parser.populateSchema(schema_adapter, schema, fetch, release);

  valijson::Validator validator;
  valijson::ValidationResults results;
  valijson::adapters::NlohmannJsonAdapter target(document);
  if (validator.validate(schema, target, &results)) return {};
  std::string text;
  valijson::ValidationResults::Error error;
  while (results.popError(error)) {
    std::string where;
    for (const auto& part : error.context) where += part;
    text += where + ": " + error.description + "\n";
  }
  return text;
}

std::string schema_errors(const std::string& kind, const nlohmann::ordered_json& document) {
  return schema_errors(kind, nlohmann::json::parse(document.dump()));
}

}  // namespace gpufeed::testing
