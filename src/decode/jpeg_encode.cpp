// JPEG encoding for synthetic samples and tests (TurboJPEG compressor).
#include <turbojpeg.h>

#include <memory>

#include <fmt/format.h>

#include "gpufeed/error.hpp"
#include "gpufeed/decode/jpeg_transform.hpp"

namespace gpufeed::loader {
namespace {

struct CompressorDeleter {
  void operator()(void* handle) const { tjDestroy(handle); }
};
struct BufferDeleter {
  void operator()(unsigned char* buffer) const { tjFree(buffer); }
};

int channels_of(PixelLayout layout) {
  switch (layout) {
    case PixelLayout::Gray: return 1;
    case PixelLayout::Cmyk: return 4;
    case PixelLayout::Rgb: break;
  }
  return 3;
}

}  // namespace

std::vector<std::byte> encode_jpeg(std::span<const std::uint8_t> pixels, int width, int height,
                                   PixelLayout layout, int quality) {
  const int channels = channels_of(layout);
  if (width < 1 || height < 1 ||
      pixels.size() != static_cast<std::size_t>(width) * static_cast<std::size_t>(height) * channels) {
    throw runtime_error(fmt::format("cannot encode a {}x{} JPEG from {} bytes of {}-channel pixels", width, height,
                                    pixels.size(), channels));
  }
  const std::unique_ptr<void, CompressorDeleter> handle(tjInitCompress());
  if (!handle) throw runtime_error(fmt::format("cannot start the libjpeg-turbo compressor: {}", tjGetErrorStr2(nullptr)));
  const int format = layout == PixelLayout::Gray ? TJPF_GRAY : layout == PixelLayout::Cmyk ? TJPF_CMYK : TJPF_RGB;
  const int subsampling = layout == PixelLayout::Gray ? TJSAMP_GRAY : TJSAMP_420;
  unsigned char* raw = nullptr;
  unsigned long size = 0;
  const int status = tjCompress2(handle.get(), pixels.data(), width, 0, height, format, &raw, &size, subsampling,
                                 quality, 0);
  const std::unique_ptr<unsigned char, BufferDeleter> buffer(raw);
  if (status != 0) throw runtime_error(fmt::format("JPEG encoding failed: {}", tjGetErrorStr2(handle.get())));
  const auto* begin = reinterpret_cast<const std::byte*>(buffer.get());
  return {begin, begin + size};
}

}  // namespace gpufeed::loader
