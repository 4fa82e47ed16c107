# data: sources (readers), decode, augment, loader.  Torch-free parts go to FASTER_BASE_SOURCES.
list(APPEND FASTER_BASE_SOURCES
  src/faster/data/loader/sampler.cpp
  src/faster/data/decode/jpeg_decoder.cpp
  src/faster/data/decode/jpeg_encoder.cpp
  src/faster/data/augment/resample.cpp
  src/faster/data/augment/crop_params.cpp
)
list(APPEND FASTER_TORCH_SOURCES
)
# LMDB datasets: layout, handle owners, reader (written by tools/pack).
list(APPEND FASTER_BASE_SOURCES
  src/faster/data/sources/lmdb_format.cpp
  src/faster/data/sources/lmdb_env.cpp
  src/faster/data/sources/lmdb_source.cpp
)
