#include "resample.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

namespace gpufeed::loader::decode {

int scaled(int dimension, ScaleFactor factor) {
  return static_cast<int>((static_cast<std::int64_t>(dimension) * factor.num + factor.denom - 1) /
                          factor.denom);
}

ScaleFactor choose_scale(const CropBox& crop, int out_width, int out_height,
                         std::span<const ScaleFactor> available) {
  ScaleFactor best{1, 1};
  for (const ScaleFactor f : available) {
    if (f.num > f.denom) continue;  // never upscale in the decoder
    // Exact: crop * num/denom >= out, kept in integers.
    const bool large_enough =
        static_cast<std::int64_t>(crop.width) * f.num >= static_cast<std::int64_t>(out_width) * f.denom &&
        static_cast<std::int64_t>(crop.height) * f.num >= static_cast<std::int64_t>(out_height) * f.denom;
    if (large_enough && f.num * best.denom < best.num * f.denom) best = f;
  }
  return best;
}

Region scale_region(const CropBox& crop, int image_width, int image_height, int scaled_width,
                    int scaled_height) {
  const double sx = static_cast<double>(scaled_width) / image_width;
  const double sy = static_cast<double>(scaled_height) / image_height;
  return {crop.x * sx, crop.y * sy, crop.width * sx, crop.height * sy};
}

namespace {

// For one axis: the two source pixels each output pixel blends and the
// weight of the second.
struct Taps {
  std::vector<int> first;
  std::vector<int> second;
  std::vector<float> weight;
};

Taps make_taps(double start, double length, int src_size, int dst_size) {
  Taps taps;
  taps.first.resize(static_cast<std::size_t>(dst_size));
  taps.second.resize(static_cast<std::size_t>(dst_size));
  taps.weight.resize(static_cast<std::size_t>(dst_size));
  // Sample positions stay inside the region (crop-then-resize semantics) and
  // inside the image.
  const double lo = std::max(0.0, start);
  const double hi = std::max(lo, std::min(static_cast<double>(src_size - 1), start + length - 1.0));
  const double step = length / dst_size;
  for (int i = 0; i < dst_size; ++i) {
    const double pos = std::clamp(start + (i + 0.5) * step - 0.5, lo, hi);
    const int left = static_cast<int>(std::floor(pos));
    const auto k = static_cast<std::size_t>(i);
    taps.first[k] = left;
    taps.second[k] = std::min(left + 1, src_size - 1);
    taps.weight[k] = static_cast<float>(pos - left);
  }
  return taps;
}

}  // namespace

void resize_bilinear_rgb(const std::uint8_t* src, int src_width, int src_height, const Region& region,
                         std::uint8_t* dst, int dst_width, int dst_height) {
  const Taps xs = make_taps(region.x, region.width, src_width, dst_width);
  const Taps ys = make_taps(region.y, region.height, src_height, dst_height);
  const auto stride = static_cast<std::size_t>(src_width) * 3;
  for (int oy = 0; oy < dst_height; ++oy) {
    const auto ky = static_cast<std::size_t>(oy);
    const std::uint8_t* row0 = src + static_cast<std::size_t>(ys.first[ky]) * stride;
    const std::uint8_t* row1 = src + static_cast<std::size_t>(ys.second[ky]) * stride;
    const float wy = ys.weight[ky];
    std::uint8_t* out = dst + ky * static_cast<std::size_t>(dst_width) * 3;
    for (int ox = 0; ox < dst_width; ++ox) {
      const auto kx = static_cast<std::size_t>(ox);
      const std::size_t a = static_cast<std::size_t>(xs.first[kx]) * 3;
      const std::size_t b = static_cast<std::size_t>(xs.second[kx]) * 3;
      const float wx = xs.weight[kx];
      for (std::size_t c = 0; c < 3; ++c) {
        const float top = row0[a + c] + (row0[b + c] - row0[a + c]) * wx;
        const float bottom = row1[a + c] + (row1[b + c] - row1[a + c]) * wx;
        out[kx * 3 + c] = static_cast<std::uint8_t>(top + (bottom - top) * wy + 0.5f);
      }
    }
  }
}

void cmyk_to_rgb_in_place(std::uint8_t* data, std::size_t pixels) {
  // Writing pixel i's three bytes never overtakes reading pixel i's four.
  for (std::size_t i = 0; i < pixels; ++i) {
    const unsigned c = data[i * 4];
    const unsigned m = data[i * 4 + 1];
    const unsigned y = data[i * 4 + 2];
    const unsigned k = data[i * 4 + 3];
    data[i * 3] = static_cast<std::uint8_t>((c * k + 127) / 255);
    data[i * 3 + 1] = static_cast<std::uint8_t>((m * k + 127) / 255);
    data[i * 3 + 2] = static_cast<std::uint8_t>((y * k + 127) / 255);
  }
}

}  // namespace gpufeed::loader::decode
