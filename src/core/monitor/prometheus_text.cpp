#include "gpufeed/monitor/prometheus_text.hpp"

#include <charconv>
#include <cmath>
#include <stdexcept>

namespace gpufeed::prom {
namespace {

bool name_char(char c, bool first, bool colon) {
  const bool alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || (colon && c == ':');
  return alpha || (!first && c >= '0' && c <= '9');
}

bool valid_name(std::string_view name, bool colon) {
  if (name.empty()) return false;
  for (std::size_t i = 0; i < name.size(); ++i) {
    if (!name_char(name[i], i == 0, colon)) return false;
  }
  return true;
}

// HELP text escapes only backslash and newline.
std::string escape_help(std::string_view v) {
  std::string out;
  for (char c : v) {
    if (c == '\\') out += "\\\\";
    else if (c == '\n') out += "\\n";
    else out += c;
  }
  return out;
}

std::string label_block(const Labels& labels, const std::pair<std::string, std::string>* extra = nullptr) {
  if (labels.empty() && !extra) return {};
  std::string out = "{";
  auto add = [&](const std::string& k, const std::string& v) {
    if (!valid_label_name(k)) throw std::invalid_argument("invalid Prometheus label name '" + k + "'");
    if (out.size() > 1) out += ',';
    out += k + "=\"" + escape_label_value(v) + "\"";
  };
  for (const auto& [k, v] : labels) add(k, v);
  if (extra) add(extra->first, extra->second);
  return out + "}";
}

const char* type_name(Type t) {
  switch (t) {
    case Type::Gauge: return "gauge";
    case Type::Counter: return "counter";
    case Type::Histogram: return "histogram";
  }
  return "untyped";
}

}  // namespace

bool valid_metric_name(std::string_view name) { return valid_name(name, true); }

bool valid_label_name(std::string_view name) {
  return valid_name(name, false) && name.substr(0, 2) != "__";
}

std::string escape_label_value(std::string_view v) {
  std::string out;
  for (char c : v) {
    if (c == '\\') out += "\\\\";
    else if (c == '"') out += "\\\"";
    else if (c == '\n') out += "\\n";
    else out += c;
  }
  return out;
}

std::string format_value(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  char buf[32];
  const auto res = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, res.ptr);
}

std::string exposition(const std::vector<Family>& families) {
  std::string out;
  for (const Family& f : families) {
    if (!valid_metric_name(f.name)) throw std::invalid_argument("invalid Prometheus metric name '" + f.name + "'");
    out += "# HELP " + f.name + " " + escape_help(f.help) + "\n";
    out += "# TYPE " + f.name + " " + type_name(f.type) + "\n";
    if (f.type != Type::Histogram) {
      for (const Sample& s : f.samples) out += f.name + label_block(s.labels) + " " + format_value(s.value) + "\n";
      continue;
    }
    for (const HistogramSample& h : f.histograms) {
      for (std::size_t i = 0; i < h.bounds.size() && i < h.buckets.size(); ++i) {
        const std::pair<std::string, std::string> le{"le", format_value(h.bounds[i])};
        out += f.name + "_bucket" + label_block(h.labels, &le) + " " + std::to_string(h.buckets[i]) + "\n";
      }
      const std::pair<std::string, std::string> inf{"le", "+Inf"};
      out += f.name + "_bucket" + label_block(h.labels, &inf) + " " + std::to_string(h.count) + "\n";
      out += f.name + "_sum" + label_block(h.labels) + " " + format_value(h.sum) + "\n";
      out += f.name + "_count" + label_block(h.labels) + " " + std::to_string(h.count) + "\n";
    }
  }
  return out;
}

}  // namespace gpufeed::prom
