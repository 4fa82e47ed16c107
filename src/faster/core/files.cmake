# core: errors, logging, progress, timers (no LibTorch); environment report (LibTorch).
list(APPEND FASTER_BASE_SOURCES src/faster/core/log.cpp src/faster/core/progress.cpp
     src/faster/core/line_chart.cpp src/faster/core/process_clock.cpp
     src/faster/core/interrupt.cpp src/faster/core/memory.cpp)
list(APPEND FASTER_TORCH_SOURCES src/faster/core/env.cpp)
if(FASTER_CUDA)
  list(APPEND FASTER_TORCH_SOURCES src/faster/core/gpu_info_cuda.cpp)
else()
  list(APPEND FASTER_TORCH_SOURCES src/faster/core/gpu_info_cpu.cpp)
endif()
# The early CUDA context: faster-torch starts it from its .preinit_array (faster/core/early_context.h).
list(APPEND FASTER_BASE_SOURCES src/faster/core/early_context.cpp)
if(FASTER_CUDA)
  set_source_files_properties(src/faster/core/early_context.cpp PROPERTIES COMPILE_DEFINITIONS
                                                                          FASTER_WITH_CUDA=1)
endif()
