# data: sources (readers), decode, augment, loader.  Torch-free parts go to FASTER_BASE_SOURCES.
list(APPEND FASTER_BASE_SOURCES
  src/faster/data/loader/sampler.cpp
)
list(APPEND FASTER_TORCH_SOURCES
)
