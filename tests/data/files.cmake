# tests/data
list(APPEND FASTER_BASE_TEST_SOURCES
  data/array_dataset_test.cpp
  data/sampler_test.cpp
  data/cpu_share_test.cpp
  data/jpeg_decoder_test.cpp
  data/png_codec_test.cpp
  data/jpeg_scan_test.cpp
  data/resample_test.cpp
  data/crop_params_test.cpp
  data/image_tree_test.cpp
  data/folder_source_test.cpp
  data/lmdb_format_test.cpp
  data/lmdb_source_test.cpp
  data/lmdb_damage_test.cpp
)
list(APPEND FASTER_TORCH_TEST_SOURCES data/image_loader_test.cpp data/shift_flip_test.cpp
     data/auto_augment_test.cpp)
# GPU decoding: compiled with CUDA, run on the GPU machine (skipped where no GPU is visible).
if(FASTER_CUDA)
  list(APPEND FASTER_TORCH_TEST_SOURCES data/nvjpeg_test.cpp)
endif()
