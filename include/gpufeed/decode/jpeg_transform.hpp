#pragma once
// The cost a real image pipeline pays per sample: JPEG decode (libjpeg-turbo
// through its TurboJPEG API), then a crop and a bilinear resize into the batch
// buffer, like torchvision's Resize+CenterCrop or RandomResizedCrop on PIL.
//
// Output layout: uint8 RGB, HWC (row-major, three bytes per pixel), so
// sample_shape() is {height, width, 3}, not torchvision's CHW tensor layout;
// a model step that wants CHW permutes on the device. Grayscale and CMYK/YCCK
// inputs come out as RGB too (CMYK without colour management, Adobe's
// inverted convention, as PIL and libjpeg-turbo's own tools read it).
//
// Decoding uses libjpeg-turbo's DCT scaling the way PIL's draft mode does: the
// image is decoded at the smallest scale (n/8, n = 1..8) at which the crop is
// still at least the output size, so most of the downscale is free; bilinear
// interpolation does the rest. torchvision's default loader (PIL without
// draft) always decodes at full size: dct_scaling = false measures that cost.
//
// Corrupt input (truncated, not a JPEG, empty) throws SampleError naming the
// key and libjpeg's message, e.g.
//   "corrupt JPEG train/n01/x.jpg: Premature end of JPEG file".
// libjpeg's warnings (a truncated file is one) count as corrupt unless
// accept_warnings is set: the pixels it would return are partly made up.
#include <cstdint>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "gpufeed/loader/transform.hpp"

namespace gpufeed::loader {

// How the crop is resampled to the output size. `Fast`: 2-tap bilinear
// (cheap, aliases when shrinking). `Bilinear` and `Bicubic`: antialiased,
// as PIL's Image.resize and torchvision's Resize compute them (PIL's
// default is bicubic), at their CPU cost.
enum class ResizeFilter { Fast, Bilinear, Bicubic };

enum class CropMode {
  // Deterministic: the centred region with the output's aspect ratio,
  // `center_fraction` of the image's shorter extent (0.875 = Resize(256) +
  // CenterCrop(224)).
  Center,
  // torchvision's RandomResizedCrop: a random area fraction and aspect ratio,
  // drawn from a generator seeded by the sample key and `seed`, so the same
  // key gets the same crop in every run (and a different one per seed).
  RandomResized,
  // The whole image, resized to the output size without keeping its aspect
  // ratio: PIL's Image.resize((w, h)), torchvision's Resize((h, w)).
  Whole,
};

struct JpegOptions {
  int width = 224;
  int height = 224;
  CropMode crop = CropMode::Center;
  double center_fraction = 0.875;
  // RandomResizedCrop's `scale` and `ratio` (width / height) ranges.
  double min_area = 0.08;
  double max_area = 1.0;
  double min_aspect = 3.0 / 4.0;
  double max_aspect = 4.0 / 3.0;
  std::uint64_t seed = 0;
  // Decode at a reduced DCT scale when the crop allows (PIL draft mode);
  // false always decodes at full size (slower, for comparison).
  bool dct_scaling = true;
  ResizeFilter filter = ResizeFilter::Fast;
  // Treat libjpeg warnings (truncated data, corrupt segments) as success and
  // use whatever pixels were decoded, like PIL's LOAD_TRUNCATED_IMAGES.
  bool accept_warnings = false;
};

// Throws a usage error for options out of range (size 1..16384, fractions in
// (0, 1], min <= max, aspect > 0).
std::unique_ptr<SampleTransform> make_jpeg_transform(const JpegOptions& options);

// "center", "random-resized" or "whole" (CLI spelling); a usage error otherwise.
CropMode parse_crop_mode(std::string_view text);
// "fast", "bilinear" or "bicubic"; a usage error otherwise.
ResizeFilter parse_resize_filter(std::string_view text);

// Packed 8-bit pixels: 3 bytes (RGB), 1 (gray) or 4 (CMYK, Adobe-inverted as
// JPEG stores it: 255 = no ink) per pixel, rows without padding.
enum class PixelLayout { Rgb, Gray, Cmyk };

// Encodes pixels as a baseline JPEG (4:2:0 for colour) with libjpeg-turbo:
// real JPEG samples for the synthetic store and for tests. Throws
// gpufeed::Error when the pixels do not match the size or libjpeg fails.
std::vector<std::byte> encode_jpeg(std::span<const std::uint8_t> pixels, int width, int height,
                                   PixelLayout layout, int quality = 90);

}  // namespace gpufeed::loader
