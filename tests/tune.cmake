# tune: the DataLoader model, search and config on plain values are in
# gpufeed_core_unit_tests (tests/CMakeLists.txt).
# Serial: these tunes run real trials and choose by measured throughput, so
# another test on the same two cores moves their choice (ctest -j2 put 6
# workers above 4 in TuneCli.FromDiagnosisTakesTheLoopStep, which alone
# chooses 2-4).
gpufeed_test_suite(gpufeed_tune_system_tests system SERIAL
  cli/cmd_tune_test.cpp
  cli/pytorch_probe_test.cpp
  cli/tune_trials_test.cpp)
# The pure-Python helper that applies a config to a DataLoader (standard library only).
add_test(NAME python.gpufeed_config
         COMMAND ${PYTHON3} ${PROJECT_SOURCE_DIR}/python/test_gpufeed_config.py)
set_tests_properties(python.gpufeed_config PROPERTIES LABELS unit)
# The PyTorch probe's geometry and arguments (its measurement: tune_pytorch_probe_test.cpp).
add_test(NAME python.gpufeed_pytorch_probe
         COMMAND ${PYTHON3} ${PROJECT_SOURCE_DIR}/python/test_gpufeed_pytorch_probe.py)
set_tests_properties(python.gpufeed_pytorch_probe PROPERTIES LABELS unit)
# The between-epoch adaptation helper: its policy over a simulated matrix of
# jobs, and the real PyTorch DataLoader (on FUSE: tests/python/gpufeed_adapt_test.cpp).
# Serial: its PyTorch test compares epoch rates measured on these two cores.
add_test(NAME python.gpufeed_adapt
         COMMAND ${PYTHON3} ${PROJECT_SOURCE_DIR}/python/test_gpufeed_adapt.py)
set_tests_properties(python.gpufeed_adapt PROPERTIES LABELS unit RUN_SERIAL TRUE)
