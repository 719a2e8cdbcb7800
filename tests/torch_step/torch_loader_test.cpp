// The LibTorch step through its plugin: real TorchScript models written by
// tests/fixtures/make_model.py, trained for a few steps (forward and
// backward); clear one-line errors for a missing model, a file that is not a
// model, a batch the model cannot take and a missing plugin; the plugin's
// lookup order; and the requirement that build/gpufeed does not link
// LibTorch (only the plugin does).
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "gpufeed/error.hpp"
#include "gpufeed/loader/step.hpp"
#include "gpufeed/torch_step/torch_loader.hpp"
#include "plugin_lookup.hpp"
#include "support/child_process.hpp"
#include "support/python_fixtures.hpp"
#include "support/temp_dir.hpp"

namespace gpufeed::loader {
namespace {

namespace fs = std::filesystem;
using testing::TempDir;

// Output of a shell command, or nullopt when it cannot run.
std::optional<std::string> command_output(const std::string& command) {
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return std::nullopt;
  std::string out;
  char chunk[4096];
  for (std::size_t n; (n = std::fread(chunk, 1, sizeof chunk, pipe)) > 0;) out.append(chunk, n);
  return pclose(pipe) == 0 ? std::optional(out) : std::nullopt;
}

// Shared libraries `binary` loads at start-up, as ldd resolves them (direct
// and indirect).
std::optional<std::string> loaded_libraries(const std::string& binary) {
  return command_output("ldd '" + binary + "' 2>&1");
}

bool mentions_libtorch(const std::string& ldd) {
  return ldd.find("libtorch") != std::string::npos || ldd.find("libc10.so") != std::string::npos;
}

// A batch of seeded random bytes for `shape`.
struct Batch {
  std::vector<std::byte> bytes;
  StepInput input;
};
Batch make_batch(int batch_size, std::vector<std::int64_t> shape, unsigned seed) {
  std::size_t per_sample = 1;
  for (auto d : shape) per_sample *= static_cast<std::size_t>(d);
  Batch b;
  b.bytes.resize(per_sample * static_cast<std::size_t>(batch_size));
  std::mt19937 rng(seed);
  for (auto& x : b.bytes) x = static_cast<std::byte>(rng());
  b.input.host = b.bytes.data();
  b.input.device = b.bytes.data();
  b.input.bytes = b.bytes.size();
  b.input.batch_size = batch_size;
  b.input.sample_shape = std::move(shape);
  return b;
}

// The gpufeed::Error `f` throws; fails the test when there is none.
template <class F>
std::optional<Error> error_of(F f) {
  try {
    f();
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos) << "not one line: " << e.what();
    return e;
  }
  ADD_FAILURE() << "no gpufeed::Error thrown";
  return std::nullopt;
}

class TorchStep : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    skip_reason_ = testing::torch_unavailable_reason();
    if (!skip_reason_ && (std::string(GPUFEED_TORCH_PLUGIN_PATH).empty() || !fs::exists(GPUFEED_TORCH_PLUGIN_PATH))) {
      skip_reason_ = "the LibTorch step plugin was not built (libtorch-dev missing at configure time)";
    }
    if (skip_reason_) return;
    models_ = std::make_unique<TempDir>();
    const std::string command = std::string("/usr/bin/python3 ") + GPUFEED_MAKE_MODEL + " " +
                                models_->path().string() + " --seed 7 2>&1";
    if (!command_output(command)) skip_reason_ = "tests/fixtures/make_model.py failed: " + command;
  }
  static void TearDownTestSuite() { models_.reset(); }

  void SetUp() override {
    if (skip_reason_) GTEST_SKIP() << *skip_reason_;
    setenv(torch_step::kPluginEnv, GPUFEED_TORCH_PLUGIN_PATH, 1);
  }
  void TearDown() override { unsetenv(torch_step::kPluginEnv); }

  static std::string model(const char* name) { return (models_->path() / name).string(); }

  static inline std::optional<std::string> skip_reason_;
  static inline std::unique_ptr<TempDir> models_;
};

TEST_F(TorchStep, TrainsTheImageModelOnChannelsLastBatches) {
  auto step = open_torch_step(model("image.pt"));
  const std::string description = step->describe();
  EXPECT_EQ(description.rfind("TorchScript image.pt (forward+backward on CPU", 0), 0u) << description;
  std::printf("%s\n", description.c_str());
  for (unsigned i = 0; i < 3; ++i) {
    auto batch = make_batch(4, {32, 32, 3}, i);  // HWC, as decoders write images
    const auto before = batch.bytes;
    step->run(batch.input);
    EXPECT_EQ(batch.bytes, before) << "the step wrote into the batch";
  }
}

TEST_F(TorchStep, TrainsTheImageModelOnChannelsFirstBatches) {
  auto step = open_torch_step(model("image.pt"));
  auto batch = make_batch(2, {3, 40, 24}, 11);
  step->run(batch.input);
  step->run(batch.input);
}

TEST_F(TorchStep, TrainsTheFlatModel) {
  auto step = open_torch_step(model("flat.pt"));
  for (unsigned i = 0; i < 3; ++i) {
    auto batch = make_batch(8, {48}, 20 + i);
    step->run(batch.input);
  }
  // No sample shape: one flat sample of bytes / batch_size.
  auto batch = make_batch(8, {48}, 30);
  batch.input.sample_shape.clear();
  step->run(batch.input);
}

TEST_F(TorchStep, ABatchTheModelCannotTakeIsAOneLineError) {
  auto step = open_torch_step(model("flat.pt"));
  auto wrong_width = make_batch(8, {10}, 1);
  auto e = error_of([&] { step->run(wrong_width.input); });
  ASSERT_TRUE(e);
  EXPECT_EQ(e->kind(), ErrorKind::Runtime);
  EXPECT_NE(std::string(e->what()).find("flat.pt: training step failed: "), std::string::npos) << e->what();
  // Torch's own reason, not the TorchScript interpreter's preamble.
  EXPECT_NE(std::string(e->what()).find("shapes cannot be multiplied"), std::string::npos) << e->what();
  std::printf("%s\n", e->what());

  auto short_batch = make_batch(8, {48}, 2);
  short_batch.input.bytes -= 1;
  e = error_of([&] { step->run(short_batch.input); });
  ASSERT_TRUE(e);
  EXPECT_NE(std::string(e->what()).find("does not hold 8 samples"), std::string::npos) << e->what();
}

TEST_F(TorchStep, AMissingModelFileIsAUsageError) {
  const std::string missing = (models_->path() / "missing.pt").string();
  auto e = error_of([&] { open_torch_step(missing); });
  ASSERT_TRUE(e);
  EXPECT_EQ(e->kind(), ErrorKind::Usage);
  EXPECT_NE(std::string(e->what()).find(missing), std::string::npos) << e->what();
}

TEST_F(TorchStep, AFileThatIsNotAModelNamesTheFileAndTorchsReason) {
  TempDir dir;
  const auto not_a_model = dir.write("notes.pt", "this is not a TorchScript archive\n");
  auto e = error_of([&] { open_torch_step(not_a_model.string()); });
  ASSERT_TRUE(e);
  EXPECT_EQ(e->kind(), ErrorKind::Usage);
  const std::string message = e->what();
  EXPECT_EQ(message.rfind("cannot load TorchScript model " + not_a_model.string() + ": ", 0), 0u) << message;
  EXPECT_GT(message.size(), ("cannot load TorchScript model " + not_a_model.string() + ": ").size() + 5)
      << "torch's reason is missing: " << message;
  EXPECT_NE(e->hint().find("torch.jit"), std::string::npos) << e->hint();
  std::printf("%s\n", message.c_str());
}

TEST(TorchPlugin, AMissingPluginSaysHowToGetIt) {
  TempDir dir;
  const auto model = dir.write("model.pt", "x");
  // Without the override, the lookup starts next to this test executable
  // (build/tests), where normally no plugin lies.
  unsetenv(torch_step::kPluginEnv);
  const auto dir_of_exe = torch_step::executable_dir();
  if (fs::exists(dir_of_exe / torch_step::kPluginFile) ||
      fs::exists(dir_of_exe / "../lib/gpufeed" / torch_step::kPluginFile)) {
    std::printf("a plugin lies beside %s: the not-built case is not checked\n", dir_of_exe.c_str());
  } else {
    auto e = error_of([&] { open_torch_step(model.string()); });
    ASSERT_TRUE(e);
    EXPECT_EQ(e->kind(), ErrorKind::Runtime);
    EXPECT_NE(std::string(e->what()).find("was not built or not installed"), std::string::npos) << e->what();
    EXPECT_NE(e->hint().find("libtorch-dev"), std::string::npos) << e->hint();
  }

  std::optional<Error> e;
  setenv(torch_step::kPluginEnv, "/nonexistent/libgpufeed_torch_step.so", 1);
  e = error_of([&] { open_torch_step(model.string()); });
  unsetenv(torch_step::kPluginEnv);
  ASSERT_TRUE(e);
  EXPECT_NE(std::string(e->what()).find("/nonexistent/libgpufeed_torch_step.so"), std::string::npos) << e->what();

  // A file that is not the plugin (a shared library without its entry points).
  setenv(torch_step::kPluginEnv, "/lib/x86_64-linux-gnu/libm.so.6", 1);
  if (fs::exists("/lib/x86_64-linux-gnu/libm.so.6")) {
    e = error_of([&] { open_torch_step(model.string()); });
    ASSERT_TRUE(e);
    EXPECT_NE(std::string(e->what()).find("is not a gpufeed LibTorch step plugin"), std::string::npos) << e->what();
  }
  unsetenv(torch_step::kPluginEnv);
}

TEST(TorchPlugin, LookupOrderIsOverrideThenNextToTheBinaryThenLib) {
  EXPECT_EQ(torch_step::plugin_candidates("/x/plugin.so", "/opt/gpufeed/bin"),
            (std::vector<fs::path>{"/x/plugin.so"}));
  EXPECT_EQ(torch_step::plugin_candidates("", "/opt/gpufeed/bin"),
            (std::vector<fs::path>{"/opt/gpufeed/bin/libgpufeed_torch_step.so",
                                   "/opt/gpufeed/lib/gpufeed/libgpufeed_torch_step.so"}));
  EXPECT_EQ(torch_step::plugin_candidates(nullptr, "/work/build").front(),
            fs::path("/work/build/libgpufeed_torch_step.so"));
  EXPECT_EQ(torch_step::executable_dir(), fs::canonical("/proc/self/exe").parent_path());
}

// "The gpufeed binary must neither link LibTorch nor pay its start-up": no
// LibTorch library among those the binary loads at start-up. The same check
// on the plugin must find LibTorch, or the check itself is broken.
TEST(TorchPlugin, TheGpufeedBinaryDoesNotLinkLibTorch) {
  const auto binary = loaded_libraries(GPUFEED_BINARY);
  if (!binary) GTEST_SKIP() << "ldd cannot run here";
  EXPECT_FALSE(mentions_libtorch(*binary)) << GPUFEED_BINARY << " loads LibTorch at start-up:\n" << *binary;
  EXPECT_NE(binary->find("libc.so"), std::string::npos) << *binary;  // ldd really listed something
  if (std::string(GPUFEED_TORCH_PLUGIN_PATH).empty()) GTEST_SKIP() << "the LibTorch step plugin was not built";
  const auto plugin = loaded_libraries(GPUFEED_TORCH_PLUGIN_PATH);
  ASSERT_TRUE(plugin);
  EXPECT_TRUE(mentions_libtorch(*plugin)) << *plugin;
}

}  // namespace
}  // namespace gpufeed::loader
