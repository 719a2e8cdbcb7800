# The built-in loader's core (pipeline, synthetic store, storage table,
# report) on fakes, and the local store and `gpufeed bench` on real files.
gpufeed_test_suite(gpufeed_loader_unit_tests unit
  core/loader/pipeline_test.cpp
  loader/os_hooks_test.cpp
  core/loader/bench_report_test.cpp
  core/loader/storage_table_test.cpp
  core/loader/synthetic_source_test.cpp)
gpufeed_test_suite(gpufeed_loader_system_tests system
  loader/local_source_test.cpp
  cli/cmd_bench_test.cpp)
