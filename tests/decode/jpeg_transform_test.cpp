// The JPEG transform against the real libjpeg-turbo: JPEGs are made in the
// test (TurboJPEG's compressor, and PIL where it is installed) from synthetic
// pixel patterns, so expected pixel values are known.
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "gpufeed/decode/jpeg_transform.hpp"
#include "gpufeed/loader/sample_source.hpp"
#include "support/temp_dir.hpp"

namespace gpufeed::loader {
namespace {

using Bytes = std::vector<std::byte>;

// R rises left to right, G top to bottom, B constant: smooth, so JPEG's
// error stays small and any pixel's expected value is known.
std::vector<std::uint8_t> gradient_rgb(int width, int height) {
  std::vector<std::uint8_t> rgb(static_cast<std::size_t>(width) * static_cast<std::size_t>(height) * 3);
  for (int y = 0; y < height; ++y) {
    for (int x = 0; x < width; ++x) {
      const auto i = (static_cast<std::size_t>(y) * static_cast<std::size_t>(width) + static_cast<std::size_t>(x)) * 3;
      rgb[i] = static_cast<std::uint8_t>(x * 255 / (width - 1));
      rgb[i + 1] = static_cast<std::uint8_t>(y * 255 / (height - 1));
      rgb[i + 2] = 128;
    }
  }
  return rgb;
}

// Blocks of pseudo-random colour: any two different crops differ.
std::vector<std::uint8_t> busy_rgb(int width, int height, unsigned seed) {
  std::mt19937 rng(seed);
  std::vector<std::uint8_t> rgb(static_cast<std::size_t>(width) * static_cast<std::size_t>(height) * 3);
  for (int by = 0; by < height; by += 8) {
    for (int bx = 0; bx < width; bx += 8) {
      const std::uint8_t r = static_cast<std::uint8_t>(rng()), g = static_cast<std::uint8_t>(rng()),
                         b = static_cast<std::uint8_t>(rng());
      for (int y = by; y < std::min(by + 8, height); ++y) {
        for (int x = bx; x < std::min(bx + 8, width); ++x) {
          const auto i = (static_cast<std::size_t>(y) * static_cast<std::size_t>(width) + static_cast<std::size_t>(x)) * 3;
          rgb[i] = r;
          rgb[i + 1] = g;
          rgb[i + 2] = b;
        }
      }
    }
  }
  return rgb;
}

Bytes jpeg_of(const std::vector<std::uint8_t>& rgb, int width, int height, int quality = 95) {
  return encode_jpeg(rgb, width, height, PixelLayout::Rgb, quality);
}

struct Pixel {
  int r, g, b;
};

class Output {
 public:
  Output(const SampleTransform& t, int width) : bytes_(t.output_bytes()), width_(width) {}
  std::span<std::byte> span() { return bytes_; }
  const Bytes& bytes() const { return bytes_; }
  Pixel at(int x, int y) const {
    const auto i = (static_cast<std::size_t>(y) * static_cast<std::size_t>(width_) + static_cast<std::size_t>(x)) * 3;
    return {std::to_integer<int>(bytes_[i]), std::to_integer<int>(bytes_[i + 1]), std::to_integer<int>(bytes_[i + 2])};
  }

 private:
  Bytes bytes_;
  int width_;
};

void expect_near(const Pixel& got, const Pixel& want, int tolerance, const std::string& where) {
  EXPECT_NEAR(got.r, want.r, tolerance) << where;
  EXPECT_NEAR(got.g, want.g, tolerance) << where;
  EXPECT_NEAR(got.b, want.b, tolerance) << where;
}

// Expected colour of output pixel (ox, oy) when the whole 640x480 gradient's
// central 480x480 square is resized to 224x224.
Pixel expected_gradient(int ox, int oy) {
  const double sx = 80 + (ox + 0.5) * 480.0 / 224 - 0.5;
  const double sy = (oy + 0.5) * 480.0 / 224 - 0.5;
  return {static_cast<int>(sx * 255 / 639), static_cast<int>(sy * 255 / 479), 128};
}

TEST(DecodeJpeg, GradientIsDecodedCroppedAndResized) {
  const Bytes jpeg = jpeg_of(gradient_rgb(640, 480), 640, 480);
  for (const bool dct : {true, false}) {
    JpegOptions options;
    options.center_fraction = 1.0;  // the central 480x480 square
    options.dct_scaling = dct;
    const auto transform = make_jpeg_transform(options);
    Output out(*transform, 224);
    transform->apply("gradient.jpg", jpeg, out.span());
    for (const auto& [x, y] : {std::pair{0, 0}, {223, 0}, {0, 223}, {223, 223}, {112, 112}, {50, 170}}) {
      // JPEG (4:2:0 chroma) and the half-size DCT decode cost a few levels.
      expect_near(out.at(x, y), expected_gradient(x, y), 6,
                  "pixel " + std::to_string(x) + "," + std::to_string(y) + (dct ? " with" : " without") + " DCT scaling");
    }
  }
}

TEST(DecodeJpeg, OutputHasExactlyTheRequestedSizeAndShape) {
  JpegOptions options;
  options.width = 64;
  options.height = 48;
  const auto transform = make_jpeg_transform(options);
  EXPECT_EQ(transform->output_bytes(), 64U * 48U * 3U);
  EXPECT_EQ(transform->sample_shape(), (std::vector<std::int64_t>{48, 64, 3}));  // HWC
  EXPECT_NE(transform->describe().find("64x48x3"), std::string::npos) << transform->describe();

  const Bytes jpeg = jpeg_of(gradient_rgb(300, 200), 300, 200);
  Output out(*transform, 64);
  transform->apply("k", jpeg, out.span());
  // Top-left is darker than bottom-right in both gradient channels.
  EXPECT_LT(out.at(0, 0).r, out.at(63, 47).r);
  EXPECT_LT(out.at(0, 0).g, out.at(63, 47).g);

  Bytes wrong(transform->output_bytes() + 1);
  EXPECT_THROW(transform->apply("k", jpeg, wrong), std::invalid_argument);
}

TEST(DecodeJpeg, ManySizesAndScalesDecode) {
  const auto transform = make_jpeg_transform({});
  for (const auto& [w, h] : {std::pair{16, 16}, {223, 225}, {224, 224}, {500, 375}, {1024, 768}, {3000, 2000}, {7, 900}}) {
    const Bytes jpeg = encode_jpeg(std::vector<std::uint8_t>(static_cast<std::size_t>(w * h * 3), 200), w, h,
                                   PixelLayout::Rgb, 90);
    Output out(*transform, 224);
    transform->apply("flat", jpeg, out.span());
    // A flat image stays flat whatever the scale and crop.
    expect_near(out.at(0, 0), {200, 200, 200}, 2, std::to_string(w) + "x" + std::to_string(h));
    expect_near(out.at(223, 223), {200, 200, 200}, 2, std::to_string(w) + "x" + std::to_string(h));
  }
}

TEST(DecodeJpeg, GrayscaleComesOutAsRgb) {
  std::vector<std::uint8_t> gray(256 * 128);
  for (int y = 0; y < 128; ++y)
    for (int x = 0; x < 256; ++x) gray[static_cast<std::size_t>(y * 256 + x)] = static_cast<std::uint8_t>(x);
  const Bytes jpeg = encode_jpeg(gray, 256, 128, PixelLayout::Gray, 95);
  const auto transform = make_jpeg_transform({});
  Output out(*transform, 224);
  transform->apply("gray.jpg", jpeg, out.span());
  for (int x = 0; x < 224; x += 37) {
    const Pixel p = out.at(x, 100);
    EXPECT_EQ(p.r, p.g);
    EXPECT_EQ(p.g, p.b);
  }
  EXPECT_LT(out.at(0, 0).r + 20, out.at(223, 0).r);
}

TEST(DecodeJpeg, CmykComesOutAsRgb) {
  // Adobe-inverted CMYK as JPEG stores it: (255, 0, 0, 255) is pure red.
  std::vector<std::uint8_t> cmyk(64 * 64 * 4);
  for (std::size_t i = 0; i < 64 * 64; ++i) {
    cmyk[i * 4] = 255;
    cmyk[i * 4 + 3] = 255;
  }
  const Bytes jpeg = encode_jpeg(cmyk, 64, 64, PixelLayout::Cmyk, 95);
  const auto transform = make_jpeg_transform({});
  Output out(*transform, 224);
  transform->apply("cmyk.jpg", jpeg, out.span());
  expect_near(out.at(112, 112), {255, 0, 0}, 4, "centre");
}

void expect_corrupt(SampleTransform& transform, const std::string& key, const Bytes& data, const std::string& says) {
  Bytes out(transform.output_bytes());
  try {
    transform.apply(key, data, out);
    ADD_FAILURE() << "no error for " << key;
  } catch (const SampleError& e) {
    EXPECT_EQ(e.key(), key);
    const std::string what = e.what();
    EXPECT_EQ(what.rfind("corrupt JPEG " + key + ": ", 0), 0U) << what;
    EXPECT_NE(what.find(says), std::string::npos) << what;
    EXPECT_EQ(what.find('\n'), std::string::npos) << what;
    EXPECT_NE(e.hint().find("--skip-bad"), std::string::npos);
  }
}

TEST(DecodeJpeg, TruncatedFileIsCorrupt) {
  const auto transform = make_jpeg_transform({});
  const Bytes jpeg = jpeg_of(gradient_rgb(640, 480), 640, 480);
  expect_corrupt(*transform, "train/n01/x.jpg", Bytes(jpeg.begin(), jpeg.begin() + static_cast<long>(jpeg.size() / 2)),
                 "Premature end of JPEG file");
  // Only the end-of-image marker missing: still a libjpeg warning.
  expect_corrupt(*transform, "train/n01/y.jpg", Bytes(jpeg.begin(), jpeg.end() - 2), "Premature end of JPEG file");
  // Cut inside the header: no image at all.
  expect_corrupt(*transform, "train/n01/z.jpg", Bytes(jpeg.begin(), jpeg.begin() + 20), "no image");
}

TEST(DecodeJpeg, AnErrorDoesNotPoisonTheNextSample) {
  // libjpeg-turbo 2.1 reports a 0x0 image for the header read after a failed
  // one on the same handle; the transform must not carry that over.
  const auto transform = make_jpeg_transform({});
  const Bytes jpeg = jpeg_of(gradient_rgb(320, 240), 320, 240);
  Output out(*transform, 224);
  for (const std::size_t cut : {std::size_t{600}, std::size_t{20}, jpeg.size() / 2}) {
    EXPECT_THROW(transform->apply("cut.jpg", Bytes(jpeg.begin(), jpeg.begin() + static_cast<long>(cut)), out.span()),
                 SampleError);
    EXPECT_NO_THROW(transform->apply("whole.jpg", jpeg, out.span())) << "after a cut at " << cut;
  }
}

TEST(DecodeJpeg, AcceptWarningsDecodesWhatIsThere) {
  JpegOptions options;
  options.center_fraction = 1.0;  // as expected_gradient assumes
  options.accept_warnings = true;
  const auto transform = make_jpeg_transform(options);
  const Bytes jpeg = jpeg_of(gradient_rgb(640, 480), 640, 480);
  Output out(*transform, 224);
  EXPECT_NO_THROW(transform->apply("half.jpg", Bytes(jpeg.begin(), jpeg.begin() + static_cast<long>(jpeg.size() / 2)),
                                   out.span()));
  // The top rows were in the first half of the file.
  expect_near(out.at(112, 0), expected_gradient(112, 0), 6, "top row");
  // The bottom rows were not: libjpeg fills them with grey.
  expect_near(out.at(112, 223), {128, 128, 128}, 6, "bottom row");
}

TEST(DecodeJpeg, NonJpegInputIsCorrupt) {
  const auto transform = make_jpeg_transform({});
  std::mt19937 rng(1);
  Bytes noise(4096);
  for (auto& b : noise) b = static_cast<std::byte>(rng());
  noise[0] = std::byte{0x12};  // never an accidental JPEG start
  expect_corrupt(*transform, "noise.bin", noise, "Not a JPEG file");
  const Bytes png = {std::byte{0x89}, std::byte{'P'}, std::byte{'N'}, std::byte{'G'}, std::byte{'\r'}, std::byte{'\n'}};
  expect_corrupt(*transform, "image.png", png, "Not a JPEG file: starts with 0x89 0x50");
  expect_corrupt(*transform, "empty.jpg", {}, "empty file (0 bytes)");
}

TEST(DecodeJpeg, RandomResizedCropIsFixedPerKeyAndSeed) {
  const Bytes jpeg = jpeg_of(busy_rgb(640, 480, 9), 640, 480);
  JpegOptions options;
  options.crop = CropMode::RandomResized;
  auto decode = [&](const JpegOptions& o, const std::string& key) {
    const auto transform = make_jpeg_transform(o);
    Bytes out(transform->output_bytes());
    transform->apply(key, jpeg, out);
    return out;
  };
  EXPECT_EQ(decode(options, "a.jpg"), decode(options, "a.jpg"));
  EXPECT_NE(decode(options, "a.jpg"), decode(options, "b.jpg"));
  JpegOptions other_seed = options;
  other_seed.seed = 1;
  EXPECT_NE(decode(options, "a.jpg"), decode(other_seed, "a.jpg"));
}

TEST(DecodeJpeg, ConcurrentUseFromEightThreadsGivesTheSameBytes) {
  JpegOptions options;
  options.crop = CropMode::RandomResized;
  const auto transform = make_jpeg_transform(options);
  struct Case {
    std::string key;
    Bytes jpeg;
    Bytes expected;
  };
  std::vector<Case> cases;
  for (int i = 0; i < 6; ++i) {
    const int w = 200 + 150 * i;
    const int h = 180 + 90 * i;
    Case c{"img" + std::to_string(i) + ".jpg", jpeg_of(busy_rgb(w, h, static_cast<unsigned>(i)), w, h), {}};
    c.expected.resize(transform->output_bytes());
    transform->apply(c.key, c.jpeg, c.expected);
    cases.push_back(std::move(c));
  }
  const Bytes broken(cases[0].jpeg.begin(), cases[0].jpeg.begin() + 600);
  std::atomic<int> mismatches{0};
  std::atomic<int> errors{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      Bytes out(transform->output_bytes());
      for (int round = 0; round < 30; ++round) {
        const Case& c = cases[static_cast<std::size_t>((t + round) % 6)];
        transform->apply(c.key, c.jpeg, out);
        if (out != c.expected) ++mismatches;
        // A corrupt sample in between must not disturb the thread's decoder.
        try {
          transform->apply("broken.jpg", broken, out);
        } catch (const SampleError&) {
          ++errors;
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(mismatches.load(), 0);
  EXPECT_EQ(errors.load(), 8 * 30);
}

TEST(DecodeJpeg, BadOptionsAreUsageErrors) {
  auto kind_of = [](const JpegOptions& o) {
    try {
      make_jpeg_transform(o);
    } catch (const Error& e) {
      return e.kind();
    }
    return ErrorKind::Findings;  // "no error"
  };
  JpegOptions o;
  o.width = 0;
  EXPECT_EQ(kind_of(o), ErrorKind::Usage);
  o = {};
  o.center_fraction = 1.5;
  EXPECT_EQ(kind_of(o), ErrorKind::Usage);
  o = {};
  o.min_area = 0.9;
  o.max_area = 0.5;
  EXPECT_EQ(kind_of(o), ErrorKind::Usage);
  o = {};
  o.min_aspect = 0;
  EXPECT_EQ(kind_of(o), ErrorKind::Usage);
  EXPECT_EQ(parse_crop_mode("random-resized"), CropMode::RandomResized);
  EXPECT_EQ(parse_crop_mode("center"), CropMode::Center);
  EXPECT_THROW(parse_crop_mode("centre"), Error);
}

// Runs a PIL script with the directory as its argument (the script exits 3
// when PIL is missing). Empty when it ran; else why the test must skip.
std::optional<std::string> run_pil_script(const testing::TempDir& dir, const std::string& script) {
  const char* python = "/usr/bin/python3";
  if (!std::filesystem::exists(python)) return "no /usr/bin/python3 to run PIL with";
  const auto script_path = dir.write("pil_script.py", "import sys\ntry:\n    from PIL import Image\nexcept ImportError:\n"
                                                      "    sys.exit(3)\nd = sys.argv[1]\n" + script);
  const int status = std::system((std::string(python) + " " + script_path.string() + " " + dir.path().string()).c_str());
  if (WIFEXITED(status) && WEXITSTATUS(status) == 3) return "PIL is not installed for /usr/bin/python3";
  if (status != 0) ADD_FAILURE() << "the PIL script failed:\n" << script;
  return std::nullopt;
}

// Writes `jpeg` to dir/name, for a PIL script to read.
void write_jpeg(const testing::TempDir& dir, const std::string& name, const Bytes& jpeg) {
  std::ofstream f(dir / name, std::ios::binary);
  f.write(reinterpret_cast<const char*>(jpeg.data()), static_cast<std::streamsize>(jpeg.size()));
}

// Our transform of `jpeg` against the raw RGB a PIL script wrote to dir/pil_file:
// the mean |difference| per channel.
double mean_difference_from_pil(const JpegOptions& options, const Bytes& jpeg, const testing::TempDir& dir,
                                const std::string& pil_file) {
  const auto transform = make_jpeg_transform(options);
  Output out(*transform, options.width);
  transform->apply("busy.jpg", jpeg, out.span());
  std::ifstream in(dir / pil_file, std::ios::binary);
  const std::vector<char> pil((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(pil.size(), out.bytes().size());
  double sum = 0;
  for (std::size_t i = 0; i < std::min(pil.size(), out.bytes().size()); ++i) {
    sum += std::abs(std::to_integer<int>(out.bytes()[i]) - static_cast<int>(static_cast<unsigned char>(pil[i])));
  }
  return sum / static_cast<double>(out.bytes().size());
}

// JPEGs written by PIL (what datasets are usually made with): a progressive
// 4:4:4 gradient and a CMYK image in PIL's own convention.
TEST(DecodeJpeg, DecodesPilWrittenFiles) {
  testing::TempDir dir;
  const std::string script =
      "im = Image.new('RGB', (640, 480))\n"
      "im.putdata([(x * 255 // 639, y * 255 // 479, 128) for y in range(480) for x in range(640)])\n"
      "im.save(d + '/progressive.jpg', quality=95, progressive=True, subsampling=0)\n"
      "Image.new('CMYK', (64, 64), (0, 255, 255, 0)).save(d + '/cmyk.jpg', quality=95)\n";
  if (auto why = run_pil_script(dir, script)) GTEST_SKIP() << *why;

  auto load = [](const std::filesystem::path& path) {
    std::ifstream in(path, std::ios::binary);
    const std::vector<char> chars((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    Bytes bytes(chars.size());
    std::memcpy(bytes.data(), chars.data(), chars.size());
    return bytes;
  };
  JpegOptions options;
  options.center_fraction = 1.0;
  const auto transform = make_jpeg_transform(options);
  Output out(*transform, 224);
  transform->apply("progressive.jpg", load(dir / "progressive.jpg"), out.span());
  for (const auto& [x, y] : {std::pair{0, 0}, {223, 223}, {112, 60}}) {
    expect_near(out.at(x, y), expected_gradient(x, y), 5, "PIL progressive " + std::to_string(x) + "," + std::to_string(y));
  }
  transform->apply("cmyk.jpg", load(dir / "cmyk.jpg"), out.span());
  expect_near(out.at(112, 112), {255, 0, 0}, 4, "PIL CMYK red");
}

// The antialiased filters against PIL's own Image.resize on the same JPEG
// (sharp 8-pixel blocks, shrunk 4x: where filters differ most), and the
// 2-tap resize as the control that shows the comparison can tell.
TEST(DecodeJpeg, AntialiasedResizeMatchesPilsImageResize) {
  testing::TempDir dir;
  const Bytes jpeg = jpeg_of(busy_rgb(320, 240, 11), 320, 240);
  write_jpeg(dir, "busy.jpg", jpeg);
  const std::string script =
      "im = Image.open(d + '/busy.jpg').convert('RGB')\n"
      "for name, f in (('bilinear', Image.BILINEAR), ('bicubic', Image.BICUBIC)):\n"
      "    open(d + '/' + name + '.rgb', 'wb').write(im.resize((80, 60), f).tobytes())\n";
  if (auto why = run_pil_script(dir, script)) GTEST_SKIP() << *why;

  auto mean_difference = [&](ResizeFilter filter, const std::string& pil_file) {
    JpegOptions options;
    options.width = 80;
    options.height = 60;
    options.center_fraction = 1.0;  // 4:3 into 4:3: the whole image
    options.dct_scaling = false;    // PIL decodes at full size without draft()
    options.filter = filter;
    return mean_difference_from_pil(options, jpeg, dir, pil_file);
  };
  const double bilinear = mean_difference(ResizeFilter::Bilinear, "bilinear.rgb");
  const double bicubic = mean_difference(ResizeFilter::Bicubic, "bicubic.rgb");
  const double fast = mean_difference(ResizeFilter::Fast, "bicubic.rgb");
  std::cout << "[ measured ] mean |ours - PIL| per channel: bilinear " << bilinear << ", bicubic " << bicubic
            << ", 2-tap against PIL bicubic " << fast << "\n";
  EXPECT_LT(bilinear, 1.0);
  EXPECT_LT(bicubic, 1.0);
  EXPECT_GT(fast, 4 * bicubic) << "the 2-tap resize should differ from PIL's clearly, or the test tells nothing";
  EXPECT_EQ(parse_resize_filter("bicubic"), ResizeFilter::Bicubic);
  EXPECT_THROW(parse_resize_filter("lanczos"), Error);
}

// --crop whole against PIL's Image.resize((w, h)) of the whole image into a
// square (4:3 squeezed, as slow_job.py's --decode pil and torchvision's
// Resize((h, w)) do), with the aspect-keeping centre crop as the control.
TEST(DecodeJpeg, WholeImageResizeMatchesPilsResizeWithoutACrop) {
  testing::TempDir dir;
  const Bytes jpeg = jpeg_of(busy_rgb(320, 240, 7), 320, 240);
  write_jpeg(dir, "busy.jpg", jpeg);
  const std::string script =
      "im = Image.open(d + '/busy.jpg').convert('RGB')\n"
      "open(d + '/whole.rgb', 'wb').write(im.resize((64, 64), Image.BICUBIC).tobytes())\n";
  if (auto why = run_pil_script(dir, script)) GTEST_SKIP() << *why;
  auto mean_difference = [&](CropMode crop) {
    JpegOptions options;
    options.width = 64;
    options.height = 64;
    options.crop = crop;
    options.center_fraction = 1.0;
    options.dct_scaling = false;
    options.filter = ResizeFilter::Bicubic;
    return mean_difference_from_pil(options, jpeg, dir, "whole.rgb");
  };
  const double whole = mean_difference(CropMode::Whole);
  const double centre = mean_difference(CropMode::Center);
  std::cout << "[ measured ] mean |ours - PIL| per channel: whole " << whole << ", centre crop " << centre << "\n";
  EXPECT_LT(whole, 1.0);
  EXPECT_GT(centre, 4 * whole) << "the square centre crop should differ from a squeezed whole image";
  EXPECT_EQ(parse_crop_mode("whole"), CropMode::Whole);
  EXPECT_THROW(parse_crop_mode("full"), Error);
}

}  // namespace
}  // namespace gpufeed::loader
