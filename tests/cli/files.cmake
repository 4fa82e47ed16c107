# tests/cli
list(APPEND FASTER_BASE_TEST_SOURCES cli/front_test.cpp)
list(APPEND FASTER_TORCH_TEST_SOURCES cli/cli_test.cpp)
# Runs only the program: no LibTorch in the test binary.
list(APPEND FASTER_BASE_TEST_SOURCES cli/usage_errors_test.cpp cli/flag_rules_test.cpp)
