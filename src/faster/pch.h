// Precompiled header for the LibTorch translation units: these headers dominate compile time.
#pragma once

#include <torch/torch.h>
