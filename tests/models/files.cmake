# tests/models
list(APPEND FASTER_TORCH_TEST_SOURCES models/thinnet_test.cpp models/sync_batchnorm_test.cpp)
