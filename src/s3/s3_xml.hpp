#pragma once
// The few S3 XML documents gpufeed reads: a ListObjectsV2 page and an error
// body. A small dedicated reader (elements, text, the five named entities,
// numeric character references, CDATA; attributes and namespaces ignored)
// rather than a general XML library: S3's responses are flat and machine-made.
#include <cstdint>
#include <functional>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace gpufeed::loader::s3 {

// Malformed XML; what() says where.
class XmlError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Calls `on_element(path, text)` when each element closes: `path` is the
// element names from the root joined by '/', "ListBucketResult/Contents/Key";
// `text` is the element's own decoded text (its children's text excluded).
void scan_xml(std::string_view xml, const std::function<void(const std::string& path, std::string text)>& on_element);

struct ListedObject {
  std::string key;
  std::uint64_t size = 0;
  std::string etag;  // without the surrounding quotes
};

struct ListPage {
  std::vector<ListedObject> objects;
  bool truncated = false;
  std::string next_token;  // NextContinuationToken when truncated
};

// A ListBucketResult. Throws XmlError for malformed XML, another root
// element, or a Contents entry without a key or with a bad size.
ListPage parse_list_page(std::string_view xml);

struct ErrorBody {
  std::string code;     // "NoSuchKey", "SlowDown", ...
  std::string message;  // S3's sentence
  std::string region;   // <Region>, on wrong-region errors
};

// An <Error> document, or nullopt when `xml` is empty or not one (a HEAD
// response has no body; a proxy may answer with HTML).
std::optional<ErrorBody> parse_error_body(std::string_view xml);

// ETag without quotes: "\"abc\"" -> "abc".
std::string unquote_etag(std::string_view etag);

}  // namespace gpufeed::loader::s3
