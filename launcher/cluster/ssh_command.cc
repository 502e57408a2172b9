#include "launcher/cluster/ssh_command.h"

#include <cctype>

#include "common/text.h"
#include "launcher/cluster/host_spec.h"
#include "launcher/cluster/shell_quote.h"

namespace ddp::launcher::cluster {
namespace {

bool valid_name(std::string_view name) {
  if (name.empty()) return false;
  if (!std::isalpha(static_cast<unsigned char>(name.front())) && name.front() != '_') return false;
  for (char c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') return false;
  }
  return true;
}

}  // namespace

Result<std::vector<std::string>> parse_ssh_command(std::string_view text) {
  std::vector<std::string> words;
  std::size_t i = 0;
  while (i < text.size()) {
    while (i < text.size() && std::isspace(static_cast<unsigned char>(text[i]))) ++i;
    std::size_t start = i;
    while (i < text.size() && !std::isspace(static_cast<unsigned char>(text[i]))) ++i;
    if (i > start) words.emplace_back(text.substr(start, i - start));
  }
  if (words.empty()) {
    return invalid_argument(
        "--ssh-command is empty; give the ssh program, e.g. ssh or "
        "/usr/bin/ssh -F ~/.ssh/cluster_config");
  }
  for (const std::string& word : words) {
    if (word.find_first_of("'\"\\") != std::string::npos) {
      return invalid_argument("--ssh-command " + std::string(text) +
                              ": quotes and backslashes are not interpreted; separate words by "
                              "spaces, or put the options in an ssh config file (-F)");
    }
  }
  return words;
}

Result<std::vector<std::string>> parse_forward_env(std::string_view text) {
  std::vector<std::string> patterns;
  if (text.empty()) return patterns;
  for (std::string_view item : split(text, ',')) {
    std::string_view name = item;
    if (!name.empty() && name.back() == '*') name.remove_suffix(1);
    if (!valid_name(name)) {
      return invalid_argument("--forward-env " + std::string(text) + ": '" + std::string(item) +
                              "' is not a variable name or prefix (NAME or PREFIX*, letters, "
                              "digits and '_')");
    }
    patterns.emplace_back(item);
  }
  return patterns;
}

std::vector<std::pair<std::string, std::string>> forwarded_environment(
    const std::vector<std::string>& patterns, const Environment& env) {
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& [name, value] : env) {  // std::map: sorted by name
    // The remote command line is argv, which every user sees (ps): never a job secret there
    // (the fan-out hands its own secret over stdin or an owner-only file).
    if (name == "DDPRUN_SECRET") continue;
    for (const std::string& pattern : patterns) {
      bool prefix = !pattern.empty() && pattern.back() == '*';
      bool match =
          prefix ? name.rfind(pattern.substr(0, pattern.size() - 1), 0) == 0 : name == pattern;
      if (match) {
        out.emplace_back(name, value);
        break;
      }
    }
  }
  return out;
}

Result<std::string> remote_command_line(const std::string& cwd,
                                        const std::vector<std::pair<std::string, std::string>>& env,
                                        const std::vector<std::string>& argv) {
  if (cwd.empty() || cwd.front() != '/') {
    return invalid_argument("the remote working directory '" + cwd + "' is not absolute");
  }
  if (argv.empty()) return invalid_argument("no remote command to run");
  std::vector<std::string> words{"exec"};
  if (!env.empty()) {
    if (argv.front().find('=') != std::string::npos) {
      return invalid_argument("the remote program '" + argv.front() +
                              "' contains '=', which env would read as a variable; rename it");
    }
    words.push_back("env");
    for (const auto& [name, value] : env) {
      if (!valid_name(name)) {
        return invalid_argument("cannot forward the variable '" + name + "': not a valid name");
      }
      words.push_back(name + "=" + value);
    }
  }
  words.insert(words.end(), argv.begin(), argv.end());
  return "cd " + shell_quote(cwd) + " && " + shell_join(words);
}

Result<std::vector<std::string>> ssh_argv(const SshSettings& settings, std::string_view host,
                                          const std::string& remote_command) {
  if (Status s = check_host_name(host, "ssh: "); !s) return s;
  if (settings.command.empty()) return invalid_argument("--ssh-command is empty");
  std::vector<std::string> argv = settings.command;
  argv.insert(argv.end(), {"-o", "BatchMode=yes"});
  if (settings.port) argv.insert(argv.end(), {"-p", std::to_string(*settings.port)});
  if (!settings.identity.empty()) argv.insert(argv.end(), {"-i", settings.identity});
  if (!settings.user.empty()) argv.insert(argv.end(), {"-l", settings.user});
  argv.insert(argv.end(), {"--", std::string(host), remote_command});
  return argv;
}

}  // namespace ddp::launcher::cluster
