# data: sources (readers), decode, augment, loader.  Torch-free parts go to FASTER_BASE_SOURCES.
list(APPEND FASTER_BASE_SOURCES
  src/faster/data/loader/sampler.cpp
  src/faster/data/sources/array_dataset.cpp
)
list(APPEND FASTER_TORCH_SOURCES
  src/faster/data/loader/device_loader.cpp
  src/faster/data/loader/host_loader.cpp
)
