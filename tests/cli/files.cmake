# tests/cli
list(APPEND FASTER_TORCH_TEST_SOURCES cli/cli_test.cpp)
