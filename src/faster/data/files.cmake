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
