# tests/data
list(APPEND FASTER_BASE_TEST_SOURCES data/array_dataset_test.cpp data/sampler_test.cpp)
