# tests/core: list sources with list(APPEND FASTER_BASE_TEST_SOURCES ...) or FASTER_TORCH_TEST_SOURCES
list(APPEND FASTER_BASE_TEST_SOURCES core/parallel_test.cpp core/process_clock_test.cpp
     core/progress_test.cpp core/early_context_test.cpp
     core/memory_test.cpp)
