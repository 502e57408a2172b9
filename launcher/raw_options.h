// The syntactic half of ddprun's command line: which options were given, with what text, and
// where the program starts. Built on CLI11 from one table of torchrun's options (both
// spellings), then filled from PET_<NAME> environment variables and torchrun's defaults.
// launcher/options.h gives the values meaning. Pure; any thread.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"

namespace ddp::launcher {

struct RawValue {
  std::string text;    // for flags "1" or "0"
  std::string origin;  // "--nnodes", "PET_NNODES" or "default": prefixes error messages
  bool given = false;  // on the command line or from PET_*, not a default
};

struct RawOptions {
  bool help = false;
  bool version = false;
  // --print-completion SHELL (command line only, like --help): the shell named; no PROGRAM.
  std::optional<std::string> completion_shell;
  std::string help_text;
  // Keyed by the option's underscore name ("nproc_per_node"); every known option is present.
  std::map<std::string, RawValue> values;
  // PROGRAM followed by its arguments; empty when help or version was asked for.
  std::vector<std::string> program;

  const RawValue& at(const std::string& key) const { return values.at(key); }
};

// True when `key` (underscore spelling) is an on/off flag such as "standalone", false for
// options that take a value and for unknown keys.
bool is_flag_option(const std::string& key);

// One option as the command line spells it, for generated text (shell completion).
struct OptionName {
  std::string dashed;      // "--nproc-per-node"
  std::string underscore;  // "--nproc_per_node"; equal to dashed for one-word options
  std::string short_name;  // "-r" or ""
  bool flag = false;
  std::vector<std::string> choices;  // fixed values, when the option has a closed set
};

// Every option --help lists (internal ones left out), in --help's order, plus --help and
// --version.
std::vector<OptionName> public_options();

// args: the command line without argv[0]; env: the process environment.
Result<RawOptions> read_raw_options(const std::vector<std::string>& args,
                                    const std::map<std::string, std::string>& env);

}  // namespace ddp::launcher
