// Bounded JSON: a SAX handler that builds the document while enforcing the nesting limit and
// refusing duplicate keys, so a hostile document fails before it is ever whole.
#include "core/common/bounded_json.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "core/common/error.h"

namespace parascope {

namespace {

using json = nlohmann::json;

// One open array or object: the path to it for messages, and the key awaiting its value.
struct Frame {
  json* value;
  std::string path;
  std::string key;
};

class BoundedBuilder final : public nlohmann::json_sax<json> {
 public:
  BoundedBuilder(json& root, int maxDepth, std::string rootPath)
      : root_(root), maxDepth_(maxDepth), rootPath_(std::move(rootPath)) {}

  bool null() override { return put(nullptr); }
  bool boolean(bool v) override { return put(v); }
  bool number_integer(number_integer_t v) override { return put(v); }
  bool number_unsigned(number_unsigned_t v) override { return put(v); }
  bool number_float(number_float_t v, const string_t&) override { return put(v); }
  bool string(string_t& v) override { return put(std::move(v)); }
  bool binary(binary_t& v) override { return put(json::binary(std::move(v))); }
  bool start_object(std::size_t) override { return open(json::object()); }
  bool start_array(std::size_t) override { return open(json::array()); }
  bool end_object() override { return close(); }
  bool end_array() override { return close(); }
  bool key(string_t& k) override {
    Frame& f = stack_.back();
    if (f.value->contains(k)) {
      error_ = "duplicate key '" + clipForMessage(childPath(f, k), 120) + "'";
      return false;
    }
    f.key = std::move(k);
    return true;
  }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception& e) override {
    syntax_ = e.id == 101;  // nlohmann: parse_error.101 is a syntax error
    const std::string what = e.what();
    if (e.id == 406) {  // number overflow: name where it sits
      error_ = "number out of range (beyond +-1.8e308) at '" + currentPath() + "'";
    } else {
      error_ = what.substr(what.find(':') + 2);
      if (const auto* p = dynamic_cast<const nlohmann::json::parse_error*>(&e)) byte_ = p->byte;
    }
    return false;
  }

  const std::string& error() const { return error_; }
  bool syntax() const { return syntax_; }
  std::size_t byte() const { return byte_; }

 private:
  static std::string childPath(const Frame& f, const std::string& key) {
    return f.path.empty() ? key : f.path + "." + key;
  }
  std::string currentPath() const {
    if (stack_.empty()) return rootPath_.empty() ? "(top level)" : clipForMessage(rootPath_, 120);
    const Frame& f = stack_.back();
    const std::string p = f.value->is_object()
                              ? childPath(f, f.key)
                              : f.path + "[" + std::to_string(f.value->size()) + "]";
    return clipForMessage(p, 120);
  }
  // Where a new value goes: the root, the end of the open array, or the open object's key.
  json* slot() {
    if (stack_.empty()) return &root_;
    Frame& f = stack_.back();
    if (f.value->is_array()) return &f.value->emplace_back();
    return &(*f.value)[f.key];
  }
  bool put(json v) {
    *slot() = std::move(v);
    return true;
  }
  bool open(json v) {
    if (static_cast<int>(stack_.size()) >= maxDepth_) {
      error_ =
          "nested deeper than " + std::to_string(maxDepth_) + " levels at '" + currentPath() + "'";
      return false;
    }
    const std::string path = stack_.empty() ? rootPath_ : currentPath();
    json* target = slot();
    *target = std::move(v);
    stack_.push_back({target, path, {}});
    return true;
  }
  bool close() {
    stack_.pop_back();
    return true;
  }

  json& root_;
  int maxDepth_;
  std::string rootPath_;
  std::vector<Frame> stack_;
  std::string error_;
  bool syntax_ = false;
  std::size_t byte_ = 0;
};

// Line and column (1-based) of a 1-based byte offset, as an editor shows them.
std::string position(std::string_view text, std::size_t byte) {
  std::size_t line = 1, column = 1;
  for (std::size_t i = 0; i + 1 < byte && i < text.size(); ++i) {
    column = text[i] == '\n' ? 1 : column + 1;
    line += text[i] == '\n';
  }
  return "line " + std::to_string(line) + ", column " + std::to_string(column);
}

std::optional<json> parse(std::string_view text, const std::string& what, const JsonLimits& limits,
                          const std::string& rootPath, bool syntaxIsError) {
  if (text.size() > limits.maxBytes) {
    throw UserError(what + ": " + std::to_string(text.size()) + " bytes of JSON, more than the " +
                    std::to_string(limits.maxBytes) + "-byte limit");
  }
  json root;
  BoundedBuilder builder(root, limits.maxDepth, rootPath);
  if (json::sax_parse(text, &builder, json::input_format_t::json, true)) return root;
  if (builder.syntax() && !syntaxIsError) return std::nullopt;
  if (builder.byte() > 0) {
    throw UserError(what + ": malformed JSON at " + position(text, builder.byte()) + ": " +
                    builder.error());
  }
  throw UserError(what + ": " + builder.error());
}

}  // namespace

json parseBoundedJson(std::string_view text, const std::string& what, const JsonLimits& limits,
                      const std::string& rootPath) {
  return parse(text, what, limits, rootPath, true).value();
}

std::optional<json> parseBoundedJsonIfJson(std::string_view text, const std::string& what,
                                           const JsonLimits& limits, const std::string& rootPath) {
  return parse(text, what, limits, rootPath, false);
}

std::string readBoundedFile(const std::string& path, std::size_t maxBytes,
                            const std::string& kind) {
  // O_NONBLOCK: opening a FIFO must not wait for a writer; it is refused below anyway.
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) throw UserError(path + ": cannot open " + kind);
  struct stat st {};
  std::string text;
  try {
    if (::fstat(fd, &st) != 0) throw UserError(path + ": cannot open " + kind);
    if (S_ISDIR(st.st_mode)) throw UserError(path + ": is a directory, not a " + kind);
    if (!S_ISREG(st.st_mode)) {
      throw UserError(path + ": not a regular file (a device, FIFO or socket), not a " + kind);
    }
    if (static_cast<std::uint64_t>(st.st_size) > maxBytes) {
      throw UserError(path + ": " + std::to_string(st.st_size) + " bytes, more than the " +
                      std::to_string(maxBytes) + "-byte limit for a " + kind);
    }
    // Files under /proc report size 0 and may grow while read: read at most the limit + 1.
    char block[1 << 16];
    for (;;) {
      const ssize_t got = ::read(fd, block, sizeof block);
      if (got < 0 && errno == EINTR) continue;
      if (got < 0) throw UserError(path + ": cannot read " + kind + ": " + std::strerror(errno));
      if (got == 0) break;
      text.append(block, static_cast<std::size_t>(got));
      if (text.size() > maxBytes) {
        throw UserError(path + ": more than the " + std::to_string(maxBytes) +
                        "-byte limit for a " + kind);
      }
    }
  } catch (...) {
    ::close(fd);
    throw;
  }
  ::close(fd);
  return text;
}

std::string clipForMessage(std::string_view text, std::size_t maxChars) {
  if (text.size() <= maxChars) return std::string(text);
  return std::string(text.substr(0, maxChars)) + "... (" + std::to_string(text.size()) + " bytes)";
}

std::string describeJson(const json& value, std::size_t maxChars) {
  // Depth-first over an explicit stack of (container, next index); stops once the text is long
  // enough, so neither depth nor size of the value matters.
  std::string out;
  struct Open {
    const json* value;
    json::const_iterator next;
  };
  std::vector<Open> stack;
  // Invalid UTF-8 (possible in values built by hand) is shown replaced, never thrown.
  auto text = [](const json& v) { return v.dump(-1, ' ', false, json::error_handler_t::replace); };
  auto emit = [&](const json& v) {
    if (v.is_object() || v.is_array()) {
      out += v.is_object() ? '{' : '[';
      stack.push_back({&v, v.begin()});
    } else {
      out += text(v);
    }
  };
  emit(value);
  while (!stack.empty() && out.size() <= maxChars) {
    Open& top = stack.back();
    if (top.next == top.value->end()) {
      out += top.value->is_object() ? '}' : ']';
      stack.pop_back();
      continue;
    }
    if (top.next != top.value->begin()) out += ',';
    const json::const_iterator it = top.next++;
    if (top.value->is_object()) out += text(json(it.key())) + ':';
    emit(*it);
  }
  if (out.size() <= maxChars && stack.empty()) return out;
  return out.substr(0, maxChars) + "...";
}

}  // namespace parascope
