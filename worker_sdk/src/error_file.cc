#include "ddp/error_file.h"

#include <c10/util/Exception.h>
#include <cxxabi.h>
#include <execinfo.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <typeinfo>
#include <vector>

namespace ddp {
namespace {

std::string demangle(const char* mangled) {
  int status = 0;
  std::unique_ptr<char, decltype(&std::free)> name(
      abi::__cxa_demangle(mangled, nullptr, nullptr, &status), &std::free);
  return status == 0 && name ? std::string(name.get()) : std::string(mangled);
}

// Demangles the symbol inside a backtrace_symbols line: "binary(_ZN3foo3barEv+0x12) [0x...]".
std::string demangle_frame(const std::string& line) {
  auto open = line.find('(');
  auto plus = line.find('+', open == std::string::npos ? 0 : open);
  if (open == std::string::npos || plus == std::string::npos || plus <= open + 1) return line;
  std::string symbol = line.substr(open + 1, plus - open - 1);
  return line.substr(0, open + 1) + demangle(symbol.c_str()) + line.substr(plus);
}

// Frames of executables and libraries without exported symbols look like
// "/path/bin(+0x1a184) [0x...]". Ask addr2line (binutils) for the function from the symbol
// table; frames stay as they are when it is missing or fails. Runs only on the failure path.
void symbolize_with_addr2line(std::vector<std::string>& lines) {
  std::map<std::string, std::vector<std::size_t>> by_binary;
  std::vector<std::string> offsets(lines.size());
  for (std::size_t i = 0; i < lines.size(); ++i) {
    const std::string& line = lines[i];
    auto open = line.find("(+0x");
    auto close = line.find(')', open == std::string::npos ? 0 : open);
    if (open == std::string::npos || close == std::string::npos) continue;
    std::string binary = line.substr(0, open);
    if (binary.find('\'') != std::string::npos) continue;
    // A return address points after the call; step back one byte to land inside it.
    unsigned long long offset = std::strtoull(line.c_str() + open + 2, nullptr, 16);
    char hex[32];
    std::snprintf(hex, sizeof hex, "0x%llx", offset == 0 ? 0 : offset - 1);
    offsets[i] = hex;
    by_binary[binary].push_back(i);
  }
  for (const auto& [binary, indices] : by_binary) {
    std::string command = "addr2line -f -C -e '" + binary + "'";
    for (std::size_t i : indices) command += " " + offsets[i];
    command += " 2>/dev/null";
    FILE* pipe = ::popen(command.c_str(), "r");
    if (pipe == nullptr) continue;
    char function[1024];
    char location[1024];
    for (std::size_t i : indices) {
      if (std::fgets(function, sizeof function, pipe) == nullptr ||
          std::fgets(location, sizeof location, pipe) == nullptr) {
        break;
      }
      std::string name(function);
      while (!name.empty() && name.back() == '\n') name.pop_back();
      std::string where(location);
      while (!where.empty() && where.back() == '\n') where.pop_back();
      if (name != "??") lines[i] = name + " at " + where + " (" + lines[i] + ")";
    }
    ::pclose(pipe);
  }
}

void terminate_handler() {
  // With no matching catch anywhere, the runtime calls terminate before unwinding, so this
  // stack is the throw site.
  std::string trace = current_stack_trace();
  // Drop this handler's own frames: keep what is below __cxa_throw (the throwing code).
  auto thrower = trace.find("__cxa_throw");
  if (thrower != std::string::npos) {
    auto next_line = trace.find('\n', thrower);
    if (next_line != std::string::npos) trace = trace.substr(next_line + 1);
  }
  std::exception_ptr error = std::current_exception();
  ErrorReport report = error ? make_error_report(error, trace)
                             : ErrorReport{"std::terminate",
                                           "terminate called without an "
                                           "active exception",
                                           trace};
  std::fprintf(stderr, "[ddp worker] uncaught %s: %s\n%s\n", report.type.c_str(),
               report.message.c_str(), report.traceback.c_str());
  const char* path = std::getenv("TORCHELASTIC_ERROR_FILE");
  if (path != nullptr && *path != '\0') {
    Status written = write_error_file(path, report);
    if (!written) std::fprintf(stderr, "[ddp worker] %s\n", written.to_string().c_str());
  }
  std::fflush(stderr);
  std::fflush(stdout);
  _exit(1);
}

// c10::Error::backtrace(): a string up to LibTorch 2.1, a shared pointer to a lazily symbolized
// string (c10::Backtrace, may be null) since 2.2. Overloads rather than a version test (so one
// of them is unused on each version).
[[maybe_unused]] std::string backtrace_text(const std::string& text) { return text; }
template <typename Lazy>
std::string backtrace_text(const std::shared_ptr<Lazy>& lazy) {
  return lazy ? lazy->get() : std::string();
}

}  // namespace

std::string current_stack_trace() {
  void* frames[64];
  int count = backtrace(frames, 64);
  std::unique_ptr<char*, decltype(&std::free)> symbols(backtrace_symbols(frames, count),
                                                       &std::free);
  std::vector<std::string> lines;
  for (int i = 0; i < count; ++i) {
    lines.push_back(symbols ? demangle_frame(symbols.get()[i]) : std::string("?"));
  }
  symbolize_with_addr2line(lines);
  std::string out;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    out += "  #" + std::to_string(i) + " " + lines[i] + '\n';
  }
  return out;
}

ErrorReport make_error_report(const std::exception_ptr& error, std::string traceback) {
  ErrorReport report;
  report.traceback = std::move(traceback);
  try {
    std::rethrow_exception(error);
  } catch (const c10::Error& e) {
    report.type = demangle(typeid(e).name());
    report.message = e.msg();
    // c10 records the stack where the error was raised; prefer it.
    if (auto stack = backtrace_text(e.backtrace()); !stack.empty()) report.traceback = stack;
  } catch (const std::exception& e) {
    report.type = demangle(typeid(e).name());
    report.message = e.what();
  } catch (...) {  // not swallowed: reported as a foreign exception and the process exits
    report.type = "unknown exception";
    report.message = "a non-std::exception was thrown";
  }
  return report;
}

std::string error_file_json(const ErrorReport& report) {
  auto seconds =
      std::chrono::duration_cast<std::chrono::seconds>(report.time.time_since_epoch()).count();
  nlohmann::json doc = {
      {"message",
       {{"message", report.type + ": " + report.message},
        {"extraInfo",
         {{"py_callstack", report.traceback}, {"timestamp", std::to_string(seconds)}}}}}};
  return doc.dump(2);
}

Status write_error_file(const std::string& path, const ErrorReport& report) {
  std::string tmp = path + ".tmp." + std::to_string(getpid());
  {
    std::ofstream out(tmp, std::ios::trunc);
    if (!out) return io_error("cannot open error file " + tmp + " for writing");
    out << error_file_json(report) << '\n';
    if (!out.flush()) return io_error("cannot write error file " + tmp);
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    return io_error("cannot rename " + tmp + " to " + path);
  }
  return Status::ok();
}

void install_error_handler() { std::set_terminate(&terminate_handler); }

}  // namespace ddp
