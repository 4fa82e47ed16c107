// Enums that users name on the command line: one table of (name, value) per enum serves parsing,
// the CLI's check (with the list of choices in the message) and the names written to reports.
#pragma once

#include <cstddef>
#include <map>
#include <string>

#include "faster/core/error.h"

namespace faster {

template <typename E>
struct EnumName {
  const char* name;
  E value;
};

// The name of `value` in `table` ("?" if the table lacks it, which a test would catch).
template <typename E, size_t N>
const char* enum_name(const EnumName<E> (&table)[N], E value) {
  for (const auto& e : table)
    if (e.value == value) return e.name;
  return "?";
}

// "a, b or c": the choices, for messages.
template <typename E, size_t N>
std::string enum_choices(const EnumName<E> (&table)[N]) {
  std::string s;
  for (size_t i = 0; i < N; ++i)
    s += (i == 0 ? "" : i + 1 == N ? " or " : ", ") + std::string(table[i].name);
  return s;
}

// The value named `text`; throws a UsageError "<flag> must be a, b or c (got 'x')".
template <typename E, size_t N>
E parse_enum(const EnumName<E> (&table)[N], const std::string& text, const std::string& flag) {
  for (const auto& e : table)
    if (text == e.name) return e.value;
  FASTER_USAGE_ERROR(flag, " must be ", enum_choices(table), " (got '", text, "')");
}

// name -> value, for CLI11's CheckedTransformer: the flag is parsed into the enum where it enters.
template <typename E, size_t N>
std::map<std::string, E> enum_map(const EnumName<E> (&table)[N]) {
  std::map<std::string, E> m;
  for (const auto& e : table) m.emplace(e.name, e.value);
  return m;
}

}  // namespace faster
