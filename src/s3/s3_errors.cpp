#include "s3_errors.hpp"

#include <fmt/format.h>

#include "gpufeed/loader/sample_source.hpp"
#include "s3_xml.hpp"

namespace gpufeed::loader::s3 {
namespace {

// "403 AccessDenied: Access Denied", or "403" for a HEAD (which has no body).
std::string status_text(const S3Client& client, long status, const ErrorBody& error) {
  if (error.code.empty()) return std::to_string(status);
  if (error.message.empty()) return client.redact(fmt::format("{} {}", status, error.code));
  return client.redact(fmt::format("{} {}: {}", status, error.code, error.message));
}

}  // namespace

void throw_s3_error(const S3Client& client, const Request& request, const Response& response, std::string_view body,
                    Subject subject) {
  const auto& config = client.config();
  const auto endpoint = config.endpoint.url();
  const auto error = parse_error_body(body).value_or(ErrorBody{});
  const auto status = response.status;
  const auto what = status_text(client, status, error);

  if (status == 403) {
    throw usage_error(fmt::format("S3 refused {} at {} ({}): the credentials are wrong or may not read this",
                                  request.what, endpoint, what),
                      fmt::format("check the credentials from {} and that they allow s3:ListBucket on bucket {} and "
                                  "s3:GetObject on its objects",
                                  config.credentials.source, config.url.bucket));
  }
  if (status == 404 && error.code == "NoSuchBucket") {
    throw usage_error(fmt::format("bucket {} does not exist at {}", config.url.bucket, endpoint),
                      "check the bucket name in the s3:// URL and the endpoint (--s3-endpoint) and region "
                      "(--s3-region)");
  }
  if (status == 301 || (status == 400 && error.code == "AuthorizationHeaderMalformed" && !error.region.empty())) {
    const auto region = !response.bucket_region.empty() ? response.bucket_region : error.region;
    throw usage_error(region.empty()
                          ? fmt::format("bucket {} is not served at {} ({})", config.url.bucket, endpoint, what)
                          : fmt::format("bucket {} is in region {}, not {}", config.url.bucket, region, config.region),
                      region.empty() ? std::string("give the bucket's region with --s3-region or AWS_REGION")
                                     : fmt::format("pass --s3-region {} (or set AWS_REGION={})", region, region));
  }
  if (subject == Subject::Object) {
    if (status == 404) {
      throw SampleError(request.key,
                        fmt::format("S3 object {} does not exist at {} ({})", config.object_url(request.key), endpoint,
                                    error.code.empty() ? "404 Not Found" : what),
                        "the object was deleted or renamed after the listing; list the dataset again");
    }
    throw SampleError(request.key, fmt::format("S3 {} failed at {}: {}", request.what, endpoint, what));
  }
  throw runtime_error(fmt::format("S3 {} failed at {}: {}", request.what, endpoint, what),
                      "see the S3 error code above; check the URL, endpoint and region");
}

}  // namespace gpufeed::loader::s3
