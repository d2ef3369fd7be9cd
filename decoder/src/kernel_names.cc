// Demangle, MemcpyKindName, and ShortKernelName: a demangled kernel name cut to its qualified
// function name, in one forward pass that gives the name back whole whenever it does not parse as
// a signature.
#include "cupmon/decoder/kernel_names.h"

#include <cxxabi.h>

#include <cstdlib>
#include <cstring>
#include <iterator>
#include <vector>

namespace cupmon::decoder {
namespace {

constexpr std::string_view kAnonymousNamespace = "(anonymous namespace)";
constexpr std::string_view kOperator = "operator";
constexpr size_t kNpos = std::string_view::npos;

bool IsIdentChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '$';
}

// The keyword `operator` starting at s[i] (not part of a longer identifier such as "operators").
bool OperatorAt(std::string_view s, size_t i) {
  if (s.compare(i, kOperator.size(), kOperator) != 0) return false;
  if (i > 0 && IsIdentChar(s[i - 1])) return false;
  const size_t after = i + kOperator.size();
  return after == s.size() || !IsIdentChar(s[after]);
}

// The length of an operator's symbol at s[i] ("()", "[]", "<<=", "->", ...), 0 when none.
size_t OperatorSymbolLength(std::string_view s, size_t i) {
  if (s.compare(i, 2, "()") == 0 || s.compare(i, 2, "[]") == 0) return 2;
  size_t j = i;
  while (j < s.size() && std::strchr("<>=!+-*/%^&|~,", s[j]) != nullptr && s[j] != '\0') ++j;
  return j - i;
}

char CloserOf(char open) {
  switch (open) {
    case '(': return ')';
    case '<': return '>';
    case '{': return '}';
    default: return ']';
  }
}

// s[i] opens a bracket group: returns the position just past its matching closer, or kNpos when
// the brackets do not balance. Operator names inside ("operator<", "operator->", "operator()")
// and "->" are not brackets.
size_t SkipGroup(std::string_view s, size_t i) {
  std::vector<char> closers;
  for (size_t j = i; j < s.size();) {
    const char c = s[j];
    if (OperatorAt(s, j)) {
      j += kOperator.size();
      j += OperatorSymbolLength(s, j);
      continue;
    }
    if (c == '-' && j + 1 < s.size() && s[j + 1] == '>') {
      j += 2;
      continue;
    }
    if (c == '(' || c == '<' || c == '{' || c == '[') {
      closers.push_back(CloserOf(c));
    } else if (c == ')' || c == '>' || c == '}' || c == ']') {
      if (closers.empty() || closers.back() != c) return kNpos;
      closers.pop_back();
      if (closers.empty()) return j + 1;
    }
    ++j;
  }
  return kNpos;
}

// Past the cv/ref qualifiers that may follow a parameter list (" const", " volatile", " &",
// " &&"), starting at s[i].
size_t SkipQualifiers(std::string_view s, size_t i) {
  for (;;) {
    size_t j = i;
    while (j < s.size() && s[j] == ' ') ++j;
    if (s.compare(j, 5, "const") == 0 && (j + 5 == s.size() || !IsIdentChar(s[j + 5]))) {
      i = j + 5;
    } else if (s.compare(j, 8, "volatile") == 0 &&
               (j + 8 == s.size() || !IsIdentChar(s[j + 8]))) {
      i = j + 8;
    } else if (j < s.size() && s[j] == '&') {
      i = j + 1;
    } else {
      return i;
    }
  }
}

// Whether what follows the parameter list, from s[i], has no unbalanced bracket ("void f(int))"
// is no signature).
bool BalancedFrom(std::string_view s, size_t i) {
  while (i < s.size()) {
    const char c = s[i];
    if (c == '(' || c == '<' || c == '{' || c == '[') {
      i = SkipGroup(s, i);
      if (i == kNpos) return false;
    } else if (c == ')' || c == '>' || c == '}' || c == ']') {
      return false;
    } else {
      ++i;
    }
  }
  return true;
}

bool Usable(const std::string& name) {
  return !name.empty() && !(name.size() >= 2 && name.compare(name.size() - 2, 2, "::") == 0);
}

}  // namespace

std::string ShortKernelName(std::string_view s) {
  std::string out;
  bool dropped_prefix = false;  // a return type (or other words before the name) was dropped
  bool odd = false;  // `out` holds a character no C++ name has outside brackets ("a%b(int)")
  size_t i = 0;
  while (i < s.size()) {
    if (s.compare(i, kAnonymousNamespace.size(), kAnonymousNamespace) == 0) {
      out += kAnonymousNamespace;
      i += kAnonymousNamespace.size();
      continue;
    }
    if (OperatorAt(s, i)) {
      out += kOperator;
      i += kOperator.size();
      const size_t symbol = OperatorSymbolLength(s, i);
      out += s.substr(i, symbol);
      i += symbol;
      if (symbol == 0) {
        // "operator new[]", "operator delete", a conversion ("operator bool"): up to the
        // parameter list.
        while (i < s.size() && s[i] != '(') out += s[i++];
      }
      // "operator<< <char>(...)": the space before the operator's own template arguments.
      while (i + 1 < s.size() && s[i] == ' ' && (s[i + 1] == '<' || s[i + 1] == '(')) ++i;
      continue;
    }
    const char c = s[i];
    switch (c) {
      case '<': {  // template arguments: dropped
        if (out.empty()) return std::string(s);  // "<unresolved kernel name 0x...>"
        const size_t end = SkipGroup(s, i);
        if (end == kNpos) return std::string(s);
        i = end;
        break;
      }
      case '{': {  // "{lambda(int)#1}", "{unnamed type#1}": part of the scope, kept
        const size_t end = SkipGroup(s, i);
        if (end == kNpos) return std::string(s);
        out += s.substr(i, end - i);
        i = end;
        break;
      }
      case '(': {  // the parameter list, or an enclosing function's ("f(int)::{lambda()#1}")
        const size_t end = SkipGroup(s, i);
        if (end == kNpos) return std::string(s);
        const size_t next = SkipQualifiers(s, end);
        if (s.compare(next, 2, "::") == 0) {
          i = next;
          break;
        }
        return Usable(out) && !odd && BalancedFrom(s, next) ? out : std::string(s);
      }
      case ' ':  // before the name: the return type ("void ", "std::pair<int, int> ")
        out.clear();
        odd = false;
        dropped_prefix = true;
        ++i;
        break;
      case '[':  // "[CUDA memcpy HtoD]": not a C++ name
      case ')':
      case '>':
      case '}':
      case ']':  // unbalanced
        return std::string(s);
      default:
        odd |= !IsIdentChar(c) && c != ':' && c != '~';
        out += c;
        ++i;
    }
  }
  // No parameter list: a C name ("ncclDevKernel_AllReduce_Sum_f32_RING_LL"), a mangled one, or
  // words that are no signature ("void foo").
  if (dropped_prefix || odd || !Usable(out)) return std::string(s);
  return out;
}

std::string Demangle(const std::string& name) {
  if (name.size() < 2 || name[0] != '_' || name[1] != 'Z') return name;
  int status = 0;
  char* out = abi::__cxa_demangle(name.c_str(), nullptr, nullptr, &status);
  if (status != 0 || !out) return name;
  std::string result(out);
  std::free(out);
  return result;
}

const char* MemcpyKindName(uint32_t copy_kind) {
  static constexpr const char* kNames[] = {
      "[CUDA memcpy Unknown]", "[CUDA memcpy HtoD]", "[CUDA memcpy DtoH]", "[CUDA memcpy HtoA]",
      "[CUDA memcpy AtoH]",    "[CUDA memcpy AtoA]", "[CUDA memcpy AtoD]", "[CUDA memcpy DtoA]",
      "[CUDA memcpy DtoD]",    "[CUDA memcpy HtoH]", "[CUDA memcpy PtoP]"};
  return copy_kind < std::size(kNames) ? kNames[copy_kind] : kNames[0];
}

}  // namespace cupmon::decoder
