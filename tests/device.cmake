# Device backends (src/device) and the LibTorch step (src/torch_step).
# Included by tests/CMakeLists.txt.

# Fake GPU runtimes: the same source built as a fake libcudart.so.13 and a
# fake libamdhip64.so.5 (tests/fixtures/fake_gpu_runtime), so the CUDA and HIP
# backends run end to end through dlopen() on a host without a GPU.
set(FAKE_GPU_RUNTIME_DIR ${CMAKE_CURRENT_BINARY_DIR}/fixtures/fake_gpu_runtime)
find_package(Threads REQUIRED)
foreach(flavor cuda hip)
  set(target gpufeed_fake_${flavor}_runtime)
  add_library(${target} SHARED fixtures/fake_gpu_runtime/fake_gpu_runtime.c)
  target_include_directories(${target} PRIVATE ${PROJECT_SOURCE_DIR}/src/device)
  target_compile_definitions(${target} PRIVATE _POSIX_C_SOURCE=200809L)
  target_link_libraries(${target} PRIVATE Threads::Threads)
  set_target_properties(${target} PROPERTIES
    LIBRARY_OUTPUT_DIRECTORY ${FAKE_GPU_RUNTIME_DIR}/${flavor}
    C_STANDARD 11
    C_STANDARD_REQUIRED ON
    C_EXTENSIONS OFF)
  # gpufeed_warnings() carries C++-only flags; the same set for C.
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wpedantic -Wshadow -Wcast-align -Wformat=2)
  if(GPUFEED_WERROR)
    target_compile_options(${target} PRIVATE -Werror)
  endif()
endforeach()
# The real libraries' file names but no SONAME: glibc answers dlopen("libcudart.so.13")
# with any loaded object whose SONAME is libcudart.so.13, so a fake carrying it
# would stand in for the real runtime in every later test of the process.
set_target_properties(gpufeed_fake_cuda_runtime PROPERTIES OUTPUT_NAME cudart SUFFIX .so.13 NO_SONAME ON)
set_target_properties(gpufeed_fake_hip_runtime PROPERTIES OUTPUT_NAME amdhip64 SUFFIX .so.5 NO_SONAME ON)
target_compile_definitions(gpufeed_fake_hip_runtime PRIVATE FAKE_HIP=1)

# Unit: the host backend and its page-locked allocator.
gpufeed_test_suite(gpufeed_device_unit_tests unit
  device/host_backend_test.cpp
  device/page_locked_memory_test.cpp)
target_link_libraries(gpufeed_device_unit_tests PRIVATE gpufeed_device)

# System: the CUDA/HIP backends against the fakes and the real runtimes of
# this machine, the backend choice, and the LibTorch step plugin.
gpufeed_test_suite(gpufeed_device_system_tests system
  device/open_backend_test.cpp
  device/gpu_runtime_test.cpp
  torch_step/torch_loader_test.cpp)
target_link_libraries(gpufeed_device_system_tests PRIVATE gpufeed_device gpufeed_torch_loader)
target_include_directories(gpufeed_device_system_tests PRIVATE
  ${PROJECT_SOURCE_DIR}/src/torch_step ${CMAKE_CURRENT_SOURCE_DIR}/fixtures/fake_gpu_runtime)
add_dependencies(gpufeed_device_system_tests gpufeed_fake_cuda_runtime gpufeed_fake_hip_runtime)
if(TARGET gpufeed_torch_step)
  add_dependencies(gpufeed_device_system_tests gpufeed_torch_step)
  set(torch_plugin_path $<TARGET_FILE:gpufeed_torch_step>)
else()
  set(torch_plugin_path "")
endif()
target_compile_definitions(gpufeed_device_system_tests PRIVATE
  GPUFEED_FAKE_CUDART="$<TARGET_FILE:gpufeed_fake_cuda_runtime>"
  GPUFEED_FAKE_HIP="$<TARGET_FILE:gpufeed_fake_hip_runtime>"
  GPUFEED_TORCH_PLUGIN_PATH="${torch_plugin_path}"
  GPUFEED_MAKE_MODEL="${CMAKE_CURRENT_SOURCE_DIR}/fixtures/make_model.py")

# GPU: the CUDA backend on a real device; skips without one.
gpufeed_test_suite(gpufeed_device_gpu_tests gpu device/stream_backend_cuda_test.cpp)
target_link_libraries(gpufeed_device_gpu_tests PRIVATE gpufeed_device)
