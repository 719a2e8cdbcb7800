// The LibTorch step plugin (libgpufeed_torch_step.so): a TorchScript model
// trained for one step per batch, forward and backward, on the CPU (Debian's
// LibTorch is CPU-only). This is the only translation unit that includes
// LibTorch, and <torch/script.h> suffices (about half the compile cost of
// <torch/torch.h>). gpufeed reaches it only through the C functions below
// (plugin_abi.h), after dlopen(), so the gpufeed binary neither links
// LibTorch nor pays its start-up unless --model is given.
//
// Threads: LibTorch's intra-op pool defaults to one thread per physical
// core, which competes with the loader's workers for the same cores (as in a
// real job). $GPUFEED_TORCH_THREADS=N sets it (at::set_num_threads) when the
// first model is opened; describe() reports the number in use.
#include <ATen/Parallel.h>
#include <torch/script.h>
#include <torch/version.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

#include "plugin_abi.h"

struct gpufeed_torch_step {
  torch::jit::Module module;
};

namespace {

// One line of `message` into error[error_size] (always terminated): the
// first, which is the one a user can act on, since torch's messages go on
// with C++ or TorchScript backtraces. Errors raised inside the TorchScript
// interpreter start with a fixed preamble instead and end with the real
// error ("RuntimeError: mat1 and mat2 shapes cannot be multiplied ..."): for
// those, the last non-empty line.
void set_error(char* error, std::size_t error_size, std::string_view message) {
  if (error == nullptr || error_size == 0) return;
  constexpr std::string_view kInterpreter = "The following operation failed in the TorchScript interpreter";
  std::string_view line = message.substr(0, message.find('\n'));
  if (line.starts_with(kInterpreter)) {
    std::string_view rest = message;
    while (!rest.empty() && (rest.back() == '\n' || rest.back() == ' ' || rest.back() == '\r')) rest.remove_suffix(1);
    const auto start = rest.rfind('\n');
    line = start == std::string_view::npos ? rest : rest.substr(start + 1);
  }
  while (!line.empty() && (line.back() == ' ' || line.back() == '\r')) line.remove_suffix(1);
  const std::size_t n = std::min(line.size(), error_size - 1);
  std::memcpy(error, line.data(), n);
  error[n] = '\0';
}

// Runs `body`, turning any exception into an error message and status 1.
template <class F>
int guarded(char* error, std::size_t error_size, F&& body) {
  try {
    body();
    return 0;
  } catch (const c10::Error& e) {
    set_error(error, error_size, e.what_without_backtrace());
  } catch (const std::exception& e) {
    set_error(error, error_size, e.what());
  } catch (...) {
    set_error(error, error_size, "unknown exception from LibTorch");
  }
  return 1;
}

void configure_threads() {
  static std::once_flag once;
  std::call_once(once, [] {
    const char* text = std::getenv("GPUFEED_TORCH_THREADS");
    if (text == nullptr || *text == '\0') return;
    char* end = nullptr;
    const long n = std::strtol(text, &end, 10);
    if (*end != '\0' || n < 1 || n > 4096) {
      throw std::invalid_argument(std::string("GPUFEED_TORCH_THREADS must be a thread count, not '") + text + "'");
    }
    at::set_num_threads(static_cast<int>(n));
  });
}

// Images arrive channels-last (H, W, C), as JPEG decoders write them; the
// usual convolution wants (C, H, W). A sample shape whose last dimension is a
// channel count (1, 3 or 4) and whose first is not is taken as HWC; anything
// else is fed as it is.
bool channels_last(const gpufeed_torch_batch& batch) {
  if (batch.rank != 3) return false;
  const auto is_channels = [](std::int64_t d) { return d == 1 || d == 3 || d == 4; };
  return is_channels(batch.shape[2]) && !is_channels(batch.shape[0]);
}

// The tensor to take the loss of: the output itself, or the first tensor of
// a tuple or list (models that also return auxiliary outputs).
torch::Tensor first_tensor(const c10::IValue& value) {
  if (value.isTensor()) return value.toTensor();
  if (value.isTuple()) {
    for (const auto& element : value.toTupleRef().elements()) {
      if (element.isTensor()) return element.toTensor();
    }
  }
  if (value.isList()) {
    for (const auto& element : value.toListRef()) {
      if (element.isTensor()) return element.toTensor();
    }
  }
  throw std::runtime_error("the model's forward() returned no tensor (got " + value.tagKind() + ")");
}

void validate(const gpufeed_torch_batch& batch) {
  if (batch.data == nullptr || batch.batch_size < 1 || batch.rank < 1 || batch.rank > 4 || batch.shape == nullptr) {
    throw std::invalid_argument("empty batch or sample shape of rank " + std::to_string(batch.rank) +
                                " (the step takes rank 1 to 4)");
  }
  std::int64_t elements = batch.batch_size;
  for (int i = 0; i < batch.rank; ++i) {
    if (batch.shape[i] < 1) throw std::invalid_argument("sample shape has a dimension of " + std::to_string(batch.shape[i]));
    elements *= batch.shape[i];
  }
  if (static_cast<std::size_t>(elements) != batch.bytes) {
    throw std::invalid_argument("batch of " + std::to_string(batch.bytes) + " bytes does not hold " +
                                std::to_string(batch.batch_size) + " samples of the given shape (" +
                                std::to_string(elements) + " bytes)");
  }
}

}  // namespace

#define GPUFEED_EXPORT extern "C" __attribute__((visibility("default")))

GPUFEED_EXPORT int gpufeed_torch_abi_version(void) { return GPUFEED_TORCH_PLUGIN_ABI; }

GPUFEED_EXPORT gpufeed_torch_step* gpufeed_torch_open(const char* model_path, char* error, std::size_t error_size) {
  std::unique_ptr<gpufeed_torch_step> step;
  const int status = guarded(error, error_size, [&] {
    configure_threads();
    auto loaded = std::make_unique<gpufeed_torch_step>();
    loaded->module = torch::jit::load(model_path);
    loaded->module.train();  // dropout and batch norm as in training
    step = std::move(loaded);
  });
  return status == 0 ? step.release() : nullptr;
}

GPUFEED_EXPORT int gpufeed_torch_run(gpufeed_torch_step* step, const gpufeed_torch_batch* batch, char* error,
                                     std::size_t error_size) {
  return guarded(error, error_size, [&] {
    if (step == nullptr || batch == nullptr) throw std::invalid_argument("no model or no batch");
    validate(*batch);
    // A training step needs autograd on, whatever the calling thread set.
    torch::AutoGradMode grad_on(true);
    std::vector<std::int64_t> sizes{batch->batch_size};
    sizes.insert(sizes.end(), batch->shape, batch->shape + batch->rank);
    // from_blob wraps the batch without copying; to() makes the float copy,
    // so the caller's bytes are never written.
    auto bytes = torch::from_blob(const_cast<unsigned char*>(batch->data), sizes, torch::kUInt8);
    torch::Tensor input = bytes.to(torch::kFloat32).div_(255.0);
    if (channels_last(*batch)) input = input.permute({0, 3, 1, 2}).contiguous();

    torch::Tensor output = first_tensor(step->module.forward({input}));
    torch::Tensor loss = output.to(torch::kFloat32).pow(2).mean();
    if (!loss.requires_grad()) {
      throw std::runtime_error("the model's output does not depend on any trainable parameter: nothing to backpropagate");
    }
    loss.backward();
    // No optimizer: the step's cost is forward plus backward. Dropping the
    // gradients keeps memory flat from step to step.
    for (auto parameter : step->module.parameters()) parameter.mutable_grad() = torch::Tensor();
  });
}

GPUFEED_EXPORT void gpufeed_torch_describe(const gpufeed_torch_step* step, char* out, std::size_t out_size) {
  if (out == nullptr || out_size == 0) return;
  const int threads = at::get_num_threads();
  std::snprintf(out, out_size, "forward+backward on CPU, %d thread%s, LibTorch %s%s", threads,
                threads == 1 ? "" : "s", TORCH_VERSION, step == nullptr ? " (no model)" : "");
}

GPUFEED_EXPORT void gpufeed_torch_close(gpufeed_torch_step* step) { delete step; }
