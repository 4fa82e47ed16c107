// Small text helpers shared by the command line and the data sources (no LibTorch).
#pragma once

#include <cctype>
#include <string>

namespace faster {

// `text` in lower case (ASCII): torchvision's --opt and --lr-scheduler, file extensions, folder
// names matched without regard to case.
inline std::string lower_case(std::string text) {
  for (char& c : text) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return text;
}

}  // namespace faster
