#pragma once
// What a user asks of the built-in loader's parts, as plain values: the
// store and its cache tiers, the per-sample work, the device and the step.
// bench, tune and check fill these from their options.
#include <string>

namespace gpufeed::app {

struct DataOptions {
  std::string data;  // directory, manifest, s3://bucket/prefix or synthetic:...
  std::string s3_endpoint, s3_region, s3_profile;
  int s3_connections = 64;
  int s3_max_attempts = 5;             // tries per request, the first included
  double s3_connect_timeout_s = 5;     // to establish a connection
  int s3_request_timeout_s = 30;       // an attempt that receives nothing this long is abandoned
  std::string cache_mem;         // size, empty: no memory tier
  std::string cache_dir;         // empty: no SSD tier
  std::string cache_size = "10GiB";
};

struct WorkOptions {
  std::string decode = "none";  // none | jpeg
  double cpu_us = 0;
  int image_size = 224;
  std::string crop = "center";
  bool full_decode = false;     // no DCT scaling: decode at full size, as PIL without draft() does
  std::string filter = "fast";  // resize: fast | bilinear | bicubic
  std::string sample_bytes;     // --decode none: slot size; empty: the largest sample
};

struct DeviceOptions {
  std::string device = "auto";
  std::string step_ms = "0";
  std::string model;
};

}  // namespace gpufeed::app
