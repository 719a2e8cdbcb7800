#include "s3_xml.hpp"

#include <charconv>

#include <fmt/format.h>

namespace gpufeed::loader::s3 {
namespace {

void append_utf8(std::string& out, std::uint32_t code) {
  if (code < 0x80) {
    out.push_back(static_cast<char>(code));
  } else if (code < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (code >> 6)));
    out.push_back(static_cast<char>(0x80 | (code & 0x3F)));
  } else if (code < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (code >> 12)));
    out.push_back(static_cast<char>(0x80 | ((code >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (code & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (code >> 18)));
    out.push_back(static_cast<char>(0x80 | ((code >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((code >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (code & 0x3F)));
  }
}

// Decodes one entity; `entity` is what lies between '&' and ';'.
void append_entity(std::string& out, std::string_view entity, std::size_t offset) {
  if (entity == "amp") return out.push_back('&');
  if (entity == "lt") return out.push_back('<');
  if (entity == "gt") return out.push_back('>');
  if (entity == "quot") return out.push_back('"');
  if (entity == "apos") return out.push_back('\'');
  if (entity.size() > 1 && entity[0] == '#') {
    const bool hex = entity[1] == 'x' || entity[1] == 'X';
    const auto digits = entity.substr(hex ? 2 : 1);
    std::uint32_t code = 0;
    const auto [end, error] = std::from_chars(digits.data(), digits.data() + digits.size(), code, hex ? 16 : 10);
    if (error == std::errc() && end == digits.data() + digits.size() && !digits.empty() && code <= 0x10FFFF) {
      return append_utf8(out, code);
    }
  }
  throw XmlError(fmt::format("unknown XML entity '&{};' at byte {}", entity, offset));
}

bool name_char(char c) { return c != '>' && c != '/' && c != ' ' && c != '\t' && c != '\r' && c != '\n'; }

// The element's local name: namespace prefixes ("s3:Key") do not matter here.
std::string_view local_name(std::string_view name) {
  const auto colon = name.find(':');
  return colon == std::string_view::npos ? name : name.substr(colon + 1);
}

}  // namespace

void scan_xml(std::string_view xml, const std::function<void(const std::string& path, std::string text)>& on_element) {
  struct Open {
    std::size_t path_length;  // of `path` before this element was added
    std::string name;
    std::string text;
  };
  std::vector<Open> stack;
  std::string path;
  std::size_t i = 0;
  bool saw_root = false;

  auto skip_past = [&](std::string_view terminator, std::string_view what) {
    const auto end = xml.find(terminator, i);
    if (end == std::string_view::npos) throw XmlError(fmt::format("unterminated {} at byte {}", what, i));
    const auto start = i;
    i = end + terminator.size();
    return xml.substr(start, end - start);
  };

  while (i < xml.size()) {
    const char c = xml[i];
    if (c == '&') {
      const auto semicolon = xml.find(';', i);
      if (semicolon == std::string_view::npos || semicolon - i > 12) {
        throw XmlError(fmt::format("bare '&' at byte {}", i));
      }
      if (!stack.empty()) append_entity(stack.back().text, xml.substr(i + 1, semicolon - i - 1), i);
      i = semicolon + 1;
      continue;
    }
    if (c != '<') {
      const auto next = xml.find_first_of("<&", i);
      const auto end = next == std::string_view::npos ? xml.size() : next;
      if (!stack.empty()) {
        stack.back().text.append(xml.substr(i, end - i));
      } else if (xml.substr(i, end - i).find_first_not_of(" \t\r\n") != std::string_view::npos) {
        throw XmlError(fmt::format("text outside the root element at byte {}", i));
      }
      i = end;
      continue;
    }
    const auto rest = xml.substr(i);
    if (rest.starts_with("<?")) {
      skip_past("?>", "processing instruction");
    } else if (rest.starts_with("<!--")) {
      skip_past("-->", "comment");
    } else if (rest.starts_with("<![CDATA[")) {
      i += 9;
      const auto data = skip_past("]]>", "CDATA section");
      if (!stack.empty()) stack.back().text.append(data);
    } else if (rest.starts_with("<!")) {
      skip_past(">", "declaration");
    } else if (rest.starts_with("</")) {
      i += 2;
      const auto tag = skip_past(">", "end tag");
      const auto name = local_name(tag.substr(0, tag.find_last_not_of(" \t\r\n") + 1));
      if (stack.empty() || stack.back().name != name) {
        throw XmlError(fmt::format("unexpected end tag </{}> at byte {}", name, i));
      }
      on_element(path, std::move(stack.back().text));
      path.resize(stack.back().path_length);
      stack.pop_back();
    } else {
      if (stack.empty() && saw_root) throw XmlError(fmt::format("a second root element at byte {}", i));
      i += 1;
      auto name_end = i;
      while (name_end < xml.size() && name_char(xml[name_end])) ++name_end;
      const auto name = local_name(xml.substr(i, name_end - i));
      if (name.empty()) throw XmlError(fmt::format("empty tag name at byte {}", i));
      const auto tag = skip_past(">", "start tag");
      const bool self_closing = !tag.empty() && tag.back() == '/';
      saw_root = true;
      stack.push_back({path.size(), std::string(name), {}});
      if (stack.size() > 1) path.push_back('/');
      path.append(name);
      if (self_closing) {
        on_element(path, {});
        path.resize(stack.back().path_length);
        stack.pop_back();
      }
    }
  }
  if (!stack.empty()) throw XmlError(fmt::format("document ends inside <{}>", path));
  if (!saw_root) throw XmlError("no XML element");
}

std::string unquote_etag(std::string_view etag) {
  if (etag.size() >= 2 && etag.front() == '"' && etag.back() == '"') etag = etag.substr(1, etag.size() - 2);
  return std::string(etag);
}

ListPage parse_list_page(std::string_view xml) {
  ListPage page;
  ListedObject current;
  bool have_key = false;
  std::string root;
  scan_xml(xml, [&](const std::string& path, std::string text) {
    if (path.find('/') == std::string::npos) root = path;
    if (path == "ListBucketResult/Contents/Key") {
      current.key = std::move(text);
      have_key = true;
    } else if (path == "ListBucketResult/Contents/Size") {
      const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), current.size);
      if (error != std::errc() || end != text.data() + text.size() || text.empty()) {
        throw XmlError(fmt::format("object size '{}' is not a number", text));
      }
    } else if (path == "ListBucketResult/Contents/ETag") {
      current.etag = unquote_etag(text);
    } else if (path == "ListBucketResult/Contents") {
      if (!have_key) throw XmlError("a listed object has no <Key>");
      page.objects.push_back(std::move(current));
      current = {};
      have_key = false;
    } else if (path == "ListBucketResult/IsTruncated") {
      page.truncated = text == "true";
    } else if (path == "ListBucketResult/NextContinuationToken") {
      page.next_token = std::move(text);
    }
  });
  if (root != "ListBucketResult") {
    throw XmlError(fmt::format("expected a <ListBucketResult>, got <{}>", root));
  }
  return page;
}

std::optional<ErrorBody> parse_error_body(std::string_view xml) {
  if (xml.find("<Error") == std::string_view::npos) return std::nullopt;
  ErrorBody body;
  std::string root;
  try {
    scan_xml(xml, [&](const std::string& path, std::string text) {
      if (path.find('/') == std::string::npos) root = path;
      if (path == "Error/Code") body.code = std::move(text);
      if (path == "Error/Message") body.message = std::move(text);
      if (path == "Error/Region") body.region = std::move(text);
    });
  } catch (const XmlError&) {
    return std::nullopt;
  }
  if (root != "Error") return std::nullopt;
  return body;
}

}  // namespace gpufeed::loader::s3
