# tests/tools: list sources with list(APPEND FASTER_BASE_TEST_SOURCES ...) or FASTER_TORCH_TEST_SOURCES
list(APPEND FASTER_BASE_TEST_SOURCES tools/synth_test.cpp)
list(APPEND FASTER_BASE_TEST_SOURCES
  tools/file_io_test.cpp
  tools/downscale_test.cpp
  tools/resize_test.cpp
  tools/pack_test.cpp
  tools/odd_trees_test.cpp
  tools/mutated_jpegs_test.cpp
)
list(APPEND FASTER_BASE_TEST_SOURCES tools/export_test.cpp)
