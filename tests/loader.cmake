# The built-in loader's core (pipeline, synthetic store, storage table,
# report) on fakes, and the local store and `gpufeed bench` on real files.
gpufeed_test_suite(gpufeed_loader_unit_tests unit
  unit/loader_pipeline_test.cpp
  unit/loader_os_hooks_test.cpp
  unit/loader_sources_test.cpp)
gpufeed_test_suite(gpufeed_loader_system_tests system
  system/loader_local_test.cpp
  system/bench_cli_test.cpp)
