#pragma once
// Turns an S3 answer that is not a success into the error a user can act on:
// 403 -> credentials or permissions, 404 NoSuchBucket -> the bucket is not at
// this endpoint, 404 NoSuchKey -> SampleError naming the key, 301 -> the
// bucket's region, anything else -> S3's code and message.
#include <cstddef>
#include <string_view>
#include <vector>

#include "s3_client.hpp"

namespace gpufeed::loader::s3 {

enum class Subject {
  Listing,  // the dataset as a whole: failures are fatal (gpufeed::Error)
  Object,   // one sample: a missing or refused object is a SampleError
};

[[noreturn]] void throw_s3_error(const S3Client& client, const Request& request, const Response& response,
                                 std::string_view body, Subject subject);

}  // namespace gpufeed::loader::s3
