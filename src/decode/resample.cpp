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

namespace {

double kernel_value(Kernel k, double x) {
  x = std::abs(x);
  if (k == Kernel::Triangle) return x < 1 ? 1 - x : 0;
  constexpr double a = -0.5;  // PIL's and torchvision's bicubic
  if (x < 1) return ((a + 2) * x - (a + 3)) * x * x + 1;
  if (x < 2) return (((x - 5) * x + 8) * x - 4) * a;
  return 0;
}

// For one axis: each output pixel's first source pixel and its normalised
// weights (a fixed count per axis, zero-padded).
struct Filter {
  std::vector<int> first;
  std::vector<float> weights;  // dst_size x taps
  int taps = 0;
};

Filter make_filter(double start, double length, int src_size, int dst_size, Kernel kernel) {
  const double support_1x = kernel == Kernel::Triangle ? 1.0 : 2.0;
  const double scale = length / dst_size;
  const double filter_scale = std::max(1.0, scale);  // widen when shrinking
  const double support = support_1x * filter_scale;
  Filter f;
  f.taps = static_cast<int>(std::ceil(support)) * 2 + 1;
  f.first.resize(static_cast<std::size_t>(dst_size));
  f.weights.assign(static_cast<std::size_t>(dst_size) * static_cast<std::size_t>(f.taps), 0.0f);
  // Source pixels are confined to the region (crop-then-resize) and the image.
  const int lo = std::clamp(static_cast<int>(std::floor(start)), 0, src_size - 1);
  const int hi = std::clamp(static_cast<int>(std::ceil(start + length)), lo + 1, src_size);
  for (int i = 0; i < dst_size; ++i) {
    const double centre = start + (i + 0.5) * scale;
    const int x0 = std::max(lo, static_cast<int>(centre - support + 0.5));
    const int x1 = std::min(hi, static_cast<int>(centre + support + 0.5));
    float* w = &f.weights[static_cast<std::size_t>(i) * static_cast<std::size_t>(f.taps)];
    double sum = 0;
    const int n = std::min(f.taps, std::max(0, x1 - x0));
    for (int k = 0; k < n; ++k) {
      const double v = kernel_value(kernel, (x0 + k - centre + 0.5) / filter_scale);
      w[k] = static_cast<float>(v);
      sum += v;
    }
    if (sum != 0) {
      for (int k = 0; k < n; ++k) w[k] = static_cast<float>(w[k] / sum);
    } else {
      w[0] = 1;  // a region thinner than a pixel: its nearest pixel
    }
    f.first[static_cast<std::size_t>(i)] = std::min(x0, src_size - 1);
  }
  return f;
}

std::uint8_t clamp_byte(float v) { return static_cast<std::uint8_t>(std::clamp(v + 0.5f, 0.0f, 255.0f)); }

}  // namespace

void resize_antialiased_rgb(const std::uint8_t* src, int src_width, int src_height, const Region& region,
                            std::uint8_t* dst, int dst_width, int dst_height, Kernel kernel) {
  const Filter fx = make_filter(region.x, region.width, src_width, dst_width, kernel);
  const Filter fy = make_filter(region.y, region.height, src_height, dst_height, kernel);
  // The source rows any output row reads.
  const int row_lo = *std::min_element(fy.first.begin(), fy.first.end());
  int row_hi = row_lo;
  for (int i = 0; i < dst_height; ++i) row_hi = std::max(row_hi, fy.first[static_cast<std::size_t>(i)] + fy.taps);
  row_hi = std::min(row_hi, src_height);
  const auto src_stride = static_cast<std::size_t>(src_width) * 3;
  const auto mid_stride = static_cast<std::size_t>(dst_width) * 3;
  thread_local std::vector<std::uint8_t> mid;
  mid.resize(static_cast<std::size_t>(row_hi - row_lo) * mid_stride);
  // Horizontal: each needed source row to dst_width pixels.
  for (int y = row_lo; y < row_hi; ++y) {
    const std::uint8_t* in = src + static_cast<std::size_t>(y) * src_stride;
    std::uint8_t* out = mid.data() + static_cast<std::size_t>(y - row_lo) * mid_stride;
    for (int ox = 0; ox < dst_width; ++ox) {
      const float* w = &fx.weights[static_cast<std::size_t>(ox) * static_cast<std::size_t>(fx.taps)];
      const int x0 = fx.first[static_cast<std::size_t>(ox)];
      const int n = std::min(fx.taps, src_width - x0);
      float r = 0, g = 0, b = 0;
      for (int k = 0; k < n; ++k) {
        const std::uint8_t* p = in + static_cast<std::size_t>(x0 + k) * 3;
        r += w[k] * p[0];
        g += w[k] * p[1];
        b += w[k] * p[2];
      }
      out[ox * 3] = clamp_byte(r);
      out[ox * 3 + 1] = clamp_byte(g);
      out[ox * 3 + 2] = clamp_byte(b);
    }
  }
  // Vertical: the intermediate rows to dst_height.
  std::vector<float> acc(mid_stride);
  for (int oy = 0; oy < dst_height; ++oy) {
    const float* w = &fy.weights[static_cast<std::size_t>(oy) * static_cast<std::size_t>(fy.taps)];
    const int y0 = fy.first[static_cast<std::size_t>(oy)];
    const int n = std::min(fy.taps, row_hi - y0);
    std::fill(acc.begin(), acc.end(), 0.0f);
    for (int k = 0; k < n; ++k) {
      const std::uint8_t* row = mid.data() + static_cast<std::size_t>(y0 + k - row_lo) * mid_stride;
      for (std::size_t i = 0; i < mid_stride; ++i) acc[i] += w[k] * row[i];
    }
    std::uint8_t* out = dst + static_cast<std::size_t>(oy) * mid_stride;
    for (std::size_t i = 0; i < mid_stride; ++i) out[i] = clamp_byte(acc[i]);
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
