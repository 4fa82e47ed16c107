# data: sources (readers), decode, augment, loader.  Torch-free parts go to FASTER_BASE_SOURCES.
list(APPEND FASTER_BASE_SOURCES
  src/faster/data/loader/sampler.cpp
  src/faster/data/loader/cpu_share.cpp
  src/faster/data/sources/array_dataset.cpp
  src/faster/data/sources/array_source.cpp
  src/faster/data/decode/jpeg_decoder.cpp
  src/faster/data/decode/jpeg_scan.cpp
  src/faster/data/decode/jpeg_encoder.cpp
  src/faster/data/decode/png_codec.cpp
  src/faster/data/decode/decode_floor.cpp
  src/faster/data/augment/resample.cpp
  src/faster/data/augment/crop_params.cpp
  src/faster/data/augment/auto_augment.cpp
  src/faster/data/augment/store.cpp
  src/faster/data/sources/image_tree.cpp
  src/faster/data/sources/folder_source.cpp
  src/faster/data/sources/open_source.cpp
  src/faster/data/sources/page_cache.cpp
  # LMDB datasets: layout, handle owners, reader (written by tools/pack).
  src/faster/data/sources/lmdb_format.cpp
  src/faster/data/sources/lmdb_env.cpp
  src/faster/data/sources/lmdb_check.cpp
  src/faster/data/sources/lmdb_source.cpp
  src/faster/data/sources/lmdb_writer.cpp
)
# The loaders and the load benchmark are the LibTorch units here (slow to compile: keep few).
list(APPEND FASTER_TORCH_SOURCES
  src/faster/data/loader/device_loader.cpp
  src/faster/data/augment/shift_flip.cpp
  src/faster/data/loader/image_loader.cpp
  src/faster/data/loader/loader_options.cpp
  src/faster/data/loader/load_benchmark.cpp
)
list(APPEND FASTER_CUDA_SOURCES src/faster/data/augment/crop_resize.cu
                                src/faster/data/loader/normalize.cu)  # see models/files.cmake
if(FASTER_CUDA)
  list(APPEND FASTER_TORCH_SOURCES src/faster/data/loader/device_copy_cuda.cpp
                                   src/faster/data/decode/nvjpeg_decoder_cuda.cpp)
else()
  list(APPEND FASTER_TORCH_SOURCES src/faster/data/loader/device_copy_cpu.cpp
                                   src/faster/data/decode/nvjpeg_decoder_none.cpp)
endif()
