#include "launcher/completion.h"

#include <sstream>

namespace ddp::launcher {
namespace {

std::vector<std::string> spellings(const OptionName& o) {
  std::vector<std::string> out{o.dashed};
  if (o.underscore != o.dashed) out.push_back(o.underscore);
  if (!o.short_name.empty()) out.push_back(o.short_name);
  return out;
}

std::string joined(const std::vector<std::string>& words, const char* sep = " ") {
  std::string out;
  for (const auto& w : words) out += (out.empty() ? "" : sep) + w;
  return out;
}

// bash: every spelling as a word; after an option with choices, its choices; after any other
// value option, file names; once PROGRAM is there, file names only.
std::string bash(const std::vector<OptionName>& options) {
  std::ostringstream s;
  std::vector<std::string> all;
  std::vector<std::string> takes_value;
  for (const auto& o : options) {
    for (const auto& name : spellings(o)) {
      all.push_back(name);
      if (!o.flag) takes_value.push_back(name);
    }
  }
  s << "# ddprun completion for bash: eval \"$(ddprun --print-completion bash)\"\n"
    << "_ddprun() {\n"
    << "  local cur=\"${COMP_WORDS[COMP_CWORD]}\" prev=\"${COMP_WORDS[COMP_CWORD-1]}\"\n"
    << "  case \"$prev\" in\n";
  for (const auto& o : options) {
    if (o.flag) continue;
    s << "    " << joined(spellings(o), "|") << ")\n";
    if (o.choices.empty()) {
      s << "      COMPREPLY=($(compgen -f -- \"$cur\")); return;;\n";
    } else {
      s << "      COMPREPLY=($(compgen -W \"" << joined(o.choices)
        << "\" -- \"$cur\")); return;;\n";
    }
  }
  s << "  esac\n"
    << "  local i\n"
    << "  for ((i = 1; i < COMP_CWORD; i++)); do\n"
    << "    case \"${COMP_WORDS[i]}\" in\n"
    << "      " << joined(takes_value, "|") << ") ((i++));;\n"
    << "      -*) ;;\n"
    << "      *) COMPREPLY=($(compgen -f -- \"$cur\")); return;;\n"
    << "    esac\n"
    << "  done\n"
    << "  if [[ \"$cur\" == -* ]]; then\n"
    << "    COMPREPLY=($(compgen -W \"" << joined(all) << "\" -- \"$cur\"))\n"
    << "  else\n"
    << "    COMPREPLY=($(compgen -f -- \"$cur\"))\n"
    << "  fi\n"
    << "}\n"
    << "complete -o filenames -F _ddprun ddprun\n";
  return s.str();
}

// zsh: _arguments specs; a value's completion is its choices or files; `*::` for PROGRAM.
std::string zsh(const std::vector<OptionName>& options) {
  std::ostringstream s;
  s << "#compdef ddprun\n"
    << "# ddprun completion for zsh: eval \"$(ddprun --print-completion zsh)\"\n"
    << "_ddprun() {\n"
    << "  _arguments -S \\\n";
  for (const auto& o : options) {
    for (const auto& name : spellings(o)) {
      if (o.flag) {
        s << "    '" << name << "[]' \\\n";
      } else if (o.choices.empty()) {
        s << "    '" << name << "=[]:value:_files' \\\n";
      } else {
        s << "    '" << name << "=[]:value:(" << joined(o.choices) << ")' \\\n";
      }
    }
  }
  s << "    '*::program:_normal'\n"
    << "}\n"
    << "compdef _ddprun ddprun\n";
  return s.str();
}

// tcsh: `complete` with a word list for options and per-option value lists.
std::string tcsh(const std::vector<OptionName>& options) {
  std::ostringstream s;
  std::vector<std::string> words;
  std::vector<std::string> values;
  for (const auto& o : options) {
    for (const auto& name : spellings(o)) {
      if (name.rfind("--", 0) == 0) words.push_back(name.substr(2));
      if (!o.choices.empty()) values.push_back("'n/" + name + "/(" + joined(o.choices) + ")/'");
    }
  }
  s << "# ddprun completion for tcsh: eval `ddprun --print-completion tcsh`\n"
    << "complete ddprun 'c/--/(" << joined(words) << ")/' " << joined(values) << " 'p/*/f/'\n";
  return s.str();
}

}  // namespace

Result<std::string> completion_script(const std::string& shell,
                                      const std::vector<OptionName>& options) {
  if (shell == "bash") return bash(options);
  if (shell == "zsh") return zsh(options);
  if (shell == "tcsh") return tcsh(options);
  return invalid_argument("--print-completion: unknown shell '" + shell +
                          "'; use bash, zsh or tcsh");
}

}  // namespace ddp::launcher
