// The JPEG transform: TurboJPEG decode at a reduced DCT scale, then crop and
// resize (2-tap, or antialiased as PIL does) into the batch buffer. A tjhandle is not thread-safe, so
// each worker thread owns one (thread_local), with its scratch buffer.
#include "gpufeed/decode/jpeg_transform.hpp"

#include <turbojpeg.h>

#include <cmath>
#include <cstring>
#include <stdexcept>

#include <fmt/format.h>

#include "crop.hpp"
#include "gpufeed/loader/sample_source.hpp"
#include "resample.hpp"

namespace gpufeed::loader {
namespace {

using decode::CropBox;
using decode::ScaleFactor;

constexpr int kMaxOutputSide = 16384;
// A decoded frame larger than this is refused rather than allocated: libjpeg
// accepts 65500x65500, and one such image per worker would exhaust memory.
constexpr std::uint64_t kMaxDecodedBytes = 1ULL << 30;
// Scratch kept per thread between samples; a larger one (a huge image) is
// released after use.
constexpr std::size_t kKeepScratchBytes = 64ULL << 20;

const char* const kCorruptHint = "the file is damaged or not a JPEG; replace it, or pass --skip-bad to skip bad samples";

[[noreturn]] void throw_corrupt(const std::string& key, std::string_view why) {
  throw SampleError(key, fmt::format("corrupt JPEG {}: {}", key, why), kCorruptHint);
}

// One decompressor and one scratch frame per thread.
class ThreadDecoder {
 public:
  ThreadDecoder() = default;
  ThreadDecoder(const ThreadDecoder&) = delete;
  ThreadDecoder& operator=(const ThreadDecoder&) = delete;
  ~ThreadDecoder() {
    if (handle_ != nullptr) tjDestroy(handle_);
  }

  tjhandle handle() {
    if (handle_ == nullptr) {
      handle_ = tjInitDecompress();
      if (handle_ == nullptr) {
        throw runtime_error(fmt::format("cannot start the libjpeg-turbo decompressor: {}", tjGetErrorStr2(nullptr)),
                            "check the libturbojpeg installation");
      }
    }
    return handle_;
  }
  // libjpeg-turbo 2.1 leaves a handle whose header read failed in a state
  // where the next tjDecompressHeader3 "succeeds" with a 0x0 image, so a
  // handle that saw an error is replaced rather than reused.
  void discard_handle() {
    if (handle_ != nullptr) tjDestroy(handle_);
    handle_ = nullptr;
  }
  std::vector<unsigned char>& frame() { return frame_; }
  void trim() {
    if (frame_.capacity() > kKeepScratchBytes) std::vector<unsigned char>().swap(frame_);
  }

 private:
  tjhandle handle_ = nullptr;
  std::vector<unsigned char> frame_;
};

ThreadDecoder& thread_decoder() {
  thread_local ThreadDecoder decoder;
  return decoder;
}

std::vector<ScaleFactor> available_scales() {
  int count = 0;
  const tjscalingfactor* factors = tjGetScalingFactors(&count);
  std::vector<ScaleFactor> scales;
  for (int i = 0; factors != nullptr && i < count; ++i) scales.push_back({factors[i].num, factors[i].denom});
  return scales;
}

std::string describe_crop(const JpegOptions& o) {
  if (o.crop == CropMode::RandomResized) {
    return fmt::format("random-resized crop (area {:g}-{:g}, aspect {:.2f}-{:.2f}, seed {})", o.min_area,
                       o.max_area, o.min_aspect, o.max_aspect, o.seed);
  }
  if (o.crop == CropMode::Whole) return "the whole image (aspect not kept)";
  return fmt::format("center crop {:g}%", o.center_fraction * 100);
}

class JpegTransform final : public SampleTransform {
 public:
  explicit JpegTransform(const JpegOptions& options) : options_(options), scales_(available_scales()) {}

  std::string describe() const override {
    const char* filter = options_.filter == ResizeFilter::Fast       ? "2-tap bilinear"
                         : options_.filter == ResizeFilter::Bilinear ? "antialiased bilinear"
                                                                     : "antialiased bicubic";
    return fmt::format("jpeg decode (libjpeg-turbo{}) + {} + {} resize to {}x{}x3 (HWC uint8)",
                       options_.dct_scaling ? ", DCT scaling" : "", describe_crop(options_), filter, options_.width,
                       options_.height);
  }

  std::size_t output_bytes() const override {
    return static_cast<std::size_t>(options_.width) * static_cast<std::size_t>(options_.height) * 3;
  }

  std::vector<std::int64_t> sample_shape() const override { return {options_.height, options_.width, 3}; }

  void apply(const std::string& key, std::span<const std::byte> in, std::span<std::byte> out) override {
    if (out.size() != output_bytes()) {
      throw std::invalid_argument(fmt::format("jpeg transform: output span is {} bytes, expected {}", out.size(),
                                              output_bytes()));
    }
    if (in.empty()) throw_corrupt(key, "empty file (0 bytes)");
    const auto* data = reinterpret_cast<const unsigned char*>(in.data());
    const auto size = static_cast<unsigned long>(in.size());

    ThreadDecoder& decoder = thread_decoder();
    tjhandle handle = decoder.handle();
    const auto fail = [&](std::string_view why) {
      const std::string text(why);  // may point into the handle's buffer
      decoder.discard_handle();
      throw_corrupt(key, text);
    };
    int width = 0;
    int height = 0;
    int subsampling = 0;
    int colorspace = 0;
    if (tjDecompressHeader3(handle, data, size, &width, &height, &subsampling, &colorspace) != 0) {
      fail(tjGetErrorStr2(handle));
    }
    // A header cut short reads as a tables-only stream: success, no size.
    if (width <= 0 || height <= 0) fail(fmt::format("no image in the data ({} bytes; truncated?)", in.size()));

    const CropBox crop = decode::choose_crop(width, height, options_, key);
    const ScaleFactor scale = options_.dct_scaling
                                  ? decode::choose_scale(crop, options_.width, options_.height, scales_)
                                  : ScaleFactor{1, 1};
    const int scaled_width = decode::scaled(width, scale);
    const int scaled_height = decode::scaled(height, scale);
    // libjpeg cannot turn CMYK into RGB itself; we do, after decoding.
    const bool cmyk = colorspace == TJCS_CMYK || colorspace == TJCS_YCCK;
    const int channels = cmyk ? 4 : 3;
    const std::uint64_t frame_bytes =
        static_cast<std::uint64_t>(scaled_width) * static_cast<std::uint64_t>(scaled_height) * channels;
    if (frame_bytes > kMaxDecodedBytes) {
      throw SampleError(key,
                        fmt::format("JPEG {} is too large to decode: {}x{} needs {} MiB even at scale {}/{}", key,
                                    width, height, frame_bytes >> 20, scale.num, scale.denom),
                        "resize the image offline or pass --skip-bad");
    }

    std::vector<unsigned char>& frame = decoder.frame();
    frame.resize(frame_bytes);
    // LIMITSCANS: a progressive file with thousands of scans would tie up a
    // worker for minutes; libjpeg-turbo stops at 500.
    const int flags = TJFLAG_LIMITSCANS | (options_.accept_warnings ? 0 : TJFLAG_STOPONWARNING);
    if (tjDecompress2(handle, data, size, frame.data(), scaled_width, 0, scaled_height,
                      cmyk ? TJPF_CMYK : TJPF_RGB, flags) != 0) {
      const bool warning_only = tjGetErrorCode(handle) == TJERR_WARNING;
      if (!(warning_only && options_.accept_warnings)) fail(tjGetErrorStr2(handle));
      decoder.discard_handle();  // warned: not trusted for the next sample either
    }
    if (cmyk) {
      decode::cmyk_to_rgb_in_place(frame.data(),
                                   static_cast<std::size_t>(scaled_width) * static_cast<std::size_t>(scaled_height));
    }
    const auto region = decode::scale_region(crop, width, height, scaled_width, scaled_height);
    auto* dst = reinterpret_cast<std::uint8_t*>(out.data());
    if (options_.filter == ResizeFilter::Fast) {
      decode::resize_bilinear_rgb(frame.data(), scaled_width, scaled_height, region, dst, options_.width,
                                  options_.height);
    } else {
      decode::resize_antialiased_rgb(frame.data(), scaled_width, scaled_height, region, dst, options_.width,
                                     options_.height,
                                     options_.filter == ResizeFilter::Bilinear ? decode::Kernel::Triangle
                                                                               : decode::Kernel::Bicubic);
    }
    decoder.trim();
  }

 private:
  JpegOptions options_;
  std::vector<ScaleFactor> scales_;
};

void check_options(const JpegOptions& o) {
  if (o.width < 1 || o.width > kMaxOutputSide || o.height < 1 || o.height > kMaxOutputSide) {
    throw usage_error(fmt::format("JPEG output size {}x{} is out of range", o.width, o.height),
                      fmt::format("give a width and height from 1 to {}", kMaxOutputSide));
  }
  if (!(o.center_fraction > 0 && o.center_fraction <= 1)) {
    throw usage_error(fmt::format("center crop fraction {:g} is out of range", o.center_fraction),
                      "give a fraction in (0, 1], e.g. 0.875 for Resize(256)+CenterCrop(224)");
  }
  if (!(o.min_area > 0 && o.min_area <= o.max_area && o.max_area <= 1)) {
    throw usage_error(fmt::format("random-resized crop area range {:g}-{:g} is invalid", o.min_area, o.max_area),
                      "give 0 < min <= max <= 1, e.g. 0.08-1");
  }
  if (!(o.min_aspect > 0 && o.min_aspect <= o.max_aspect && std::isfinite(o.max_aspect))) {
    throw usage_error(fmt::format("random-resized crop aspect range {:g}-{:g} is invalid", o.min_aspect,
                                  o.max_aspect),
                      "give 0 < min <= max, e.g. 0.75-1.333");
  }
}

}  // namespace

std::unique_ptr<SampleTransform> make_jpeg_transform(const JpegOptions& options) {
  check_options(options);
  return std::make_unique<JpegTransform>(options);
}

ResizeFilter parse_resize_filter(std::string_view text) {
  if (text == "fast") return ResizeFilter::Fast;
  if (text == "bilinear") return ResizeFilter::Bilinear;
  if (text == "bicubic") return ResizeFilter::Bicubic;
  throw usage_error(fmt::format("unknown resize filter '{}'", text),
                    "use fast (2-tap), bilinear or bicubic (antialiased, as PIL and torchvision resize)");
}

CropMode parse_crop_mode(std::string_view text) {
  if (text == "center") return CropMode::Center;
  if (text == "random-resized") return CropMode::RandomResized;
  if (text == "whole") return CropMode::Whole;
  throw usage_error(fmt::format("unknown crop mode '{}'", text),
                    "use center (Resize + CenterCrop), random-resized (RandomResizedCrop) or whole (Resize((h, w)): "
                    "the whole image, aspect not kept)");
}

}  // namespace gpufeed::loader
