// A minimal JSON parser for the decoder tests: enough to check that exports are valid JSON and to
// read their fields back.
#pragma once

#include <cctype>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <vector>

namespace cupmon::testing {

// A minimal JSON parser (objects, arrays, strings, numbers, literals), enough to validate output.
struct Json {
  enum Type { kNull, kBool, kNumber, kString, kArray, kObject } type = kNull;
  double number = 0;
  std::string text;
  std::vector<Json> items;
  std::map<std::string, Json> fields;
};

class JsonParser {
 public:
  explicit JsonParser(const std::string& s) : s_(s) {}
  bool Parse(Json* out) {
    if (!Value(out)) return false;
    Ws();
    return i_ == s_.size();
  }

 private:
  void Ws() {
    while (i_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[i_]))) ++i_;
  }
  bool Lit(const char* w) {
    const size_t n = std::strlen(w);
    if (s_.compare(i_, n, w) != 0) return false;
    i_ += n;
    return true;
  }
  bool String(std::string* out) {
    if (s_[i_] != '"') return false;
    ++i_;
    while (i_ < s_.size() && s_[i_] != '"') {
      if (static_cast<unsigned char>(s_[i_]) < 0x20) return false;
      if (s_[i_] == '\\') {
        ++i_;
        if (i_ >= s_.size()) return false;
        const char e = s_[i_];
        if (e == 'u') {
          if (i_ + 4 >= s_.size()) return false;
          i_ += 4;
          out->push_back('?');
        } else if (std::strchr("\"\\/bfnrt", e)) {
          out->push_back(e);
        } else {
          return false;
        }
        ++i_;
      } else {
        out->push_back(s_[i_++]);
      }
    }
    if (i_ >= s_.size()) return false;
    ++i_;
    return true;
  }
  bool Value(Json* v) {
    Ws();
    if (i_ >= s_.size()) return false;
    const char c = s_[i_];
    if (c == '{') {
      v->type = Json::kObject;
      ++i_;
      Ws();
      if (s_[i_] == '}') return ++i_, true;
      while (true) {
        Ws();
        std::string key;
        if (!String(&key)) return false;
        Ws();
        if (s_[i_++] != ':') return false;
        if (!Value(&v->fields[key])) return false;
        Ws();
        if (s_[i_] == ',') {
          ++i_;
          continue;
        }
        if (s_[i_] == '}') return ++i_, true;
        return false;
      }
    }
    if (c == '[') {
      v->type = Json::kArray;
      ++i_;
      Ws();
      if (s_[i_] == ']') return ++i_, true;
      while (true) {
        v->items.emplace_back();
        if (!Value(&v->items.back())) return false;
        Ws();
        if (s_[i_] == ',') {
          ++i_;
          continue;
        }
        if (s_[i_] == ']') return ++i_, true;
        return false;
      }
    }
    if (c == '"') {
      v->type = Json::kString;
      return String(&v->text);
    }
    if (Lit("true") || Lit("false")) return v->type = Json::kBool, true;
    if (Lit("null")) return v->type = Json::kNull, true;
    const char* begin = s_.c_str() + i_;
    char* end = nullptr;
    v->number = std::strtod(begin, &end);
    if (end == begin) return false;
    v->type = Json::kNumber;
    i_ += static_cast<size_t>(end - begin);
    return true;
  }
  const std::string& s_;
  size_t i_ = 0;
};

}  // namespace cupmon::testing
