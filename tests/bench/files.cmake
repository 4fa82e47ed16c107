# tests/bench
list(APPEND FASTER_BASE_TEST_SOURCES bench/bench_test.cpp)
