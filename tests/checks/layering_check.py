#!/usr/bin/env python3
"""Layering check: every project header a source includes belongs to a target that the
including target links (directly, or through PUBLIC links of what it links).

usage: layering_check.py [--self-test DIR] [TABLE]
  TABLE             check the project (TABLE: <build>/layering_table.txt)
  --self-test DIR   first run on the fixture DIR (DIR/table.txt) and require exactly the
                    violations listed in DIR/expected.txt (a checker that rejects nothing fails)

TABLE is written by cmake/Layering.cmake at configure time from the real link properties:
  project <source dir>        (relative paths are relative to the table's folder)
  exclude <dir>               (never walked: the build directory)
  target <name>               then, for that target:
  type <CMake TYPE>           STATIC_LIBRARY, INTERFACE_LIBRARY, EXECUTABLE, ...
  root <prefix>=<folder>      headers directly in <folder>, included as "<prefix>/x.h"
  link <dep>                  LINK_LIBRARIES (what the target compiles and links with)
  interface <dep>             INTERFACE_LINK_LIBRARIES (what its users get)
  source <path>               a source file, relative to the project
A header belongs to the targets whose root holds it; a header in no root belongs to the targets
with sources in its folder. A violation prints one line:
  <file>: includes "<header>" of <owner>, but <target> does not link <owner>
A header in the root of a library is public: what it includes must reach the library's users,
so the library must link the owner PUBLIC (or INTERFACE):
  <file>: includes "<header>" of <owner>, but <target> links <owner> PRIVATE
          (its header needs PUBLIC)
Either way the exit status is 1.
"""
import os
import re
import sys

INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"')
SOURCE_EXT = (".h", ".hpp", ".cc", ".cpp")


class Target:
    def __init__(self, name):
        self.name = name
        self.type = "EXECUTABLE"
        self.roots = []  # (prefix, folder)
        self.links = []
        self.interface = []
        self.sources = []


def read_table(path):
    targets, project, excludes, current = {}, None, [], None
    pending = ""  # a generator expression that a CMake list split over several entries
    base = os.path.dirname(os.path.abspath(path))
    with open(path) as f:
        for line in f:
            line = line.rstrip("\n")
            if not line or line.startswith("#"):
                continue
            key, _, value = line.partition(" ")
            if key == "project":
                project = os.path.normpath(os.path.join(base, value))
            elif key == "exclude":
                excludes.append(os.path.normpath(os.path.join(base, value)))
            elif key == "target":
                current = targets.setdefault(value, Target(value))
            elif key == "type":
                current.type = value
            elif key == "root":
                prefix, _, folder = value.partition("=")
                current.roots.append((prefix, folder))
            elif key in ("link", "interface"):
                pending = pending + ";" + value if pending else value
                if pending.count("$<") > pending.count(">"):
                    continue  # $<BUILD_INTERFACE:a;b> arrives as two entries
                for dep in usable_deps(pending):
                    (current.links if key == "link" else current.interface).append(dep)
                pending = ""
            elif key == "source":
                current.sources.append(os.path.normpath(value))
            else:
                raise SystemExit("%s: unknown entry: %s" % (path, line))
    if project is None:
        raise SystemExit("%s: no project line" % path)
    return project, excludes, targets


def usable_deps(entry):
    """The targets whose headers a link entry gives. $<BUILD_INTERFACE:x;y> is x and y;
    $<LINK_ONLY:x> (a static library's PRIVATE link) and $<INSTALL_INTERFACE:x> give none."""
    m = re.fullmatch(r"\$<BUILD_INTERFACE:(.*)>", entry)
    if m:
        return [d for d in m.group(1).split(";") if not d.startswith(("$<", "::@"))]
    if entry.startswith(("$<", "::@")):
        return []
    return [entry]


def usage(targets, name, memo, stack=()):
    """The targets whose headers a user of `name` may include: itself and its interface."""
    if name in memo:
        return memo[name]
    found = {name}
    if name in targets and name not in stack:
        for dep in targets[name].interface:
            found |= usage(targets, dep, memo, stack + (name,))
    memo[name] = found
    return found


def allowed(targets, t, memo):
    found = {t.name}
    for dep in t.links + t.interface:
        found |= usage(targets, dep, memo)
    return found


def walk(project, excludes):
    for dirpath, dirnames, filenames in os.walk(project):
        dirnames[:] = [d for d in dirnames if not d.startswith(".")
                       and os.path.join(dirpath, d) not in excludes
                       and not os.path.exists(os.path.join(dirpath, d, "CMakeCache.txt"))]
        for name in filenames:
            if name.endswith(SOURCE_EXT):
                yield os.path.relpath(os.path.join(dirpath, name), project)


def check(table):
    project, excludes, targets = read_table(table)
    memo = {}
    owners = {}  # include prefix -> targets holding it in a root
    files = {}   # project-relative file -> targets it is compiled (or included) as part of
    public = set()  # (file, target): a header in a library's include root
    root_folders = set()
    for t in targets.values():
        for prefix, folder in t.roots:
            owners.setdefault(prefix, set()).add(t.name)
            root_folders.add(folder)
            folder_abs = os.path.join(project, folder)
            if os.path.isdir(folder_abs):
                for name in os.listdir(folder_abs):
                    if name.endswith((".h", ".hpp")):
                        files.setdefault(os.path.join(folder, name), set()).add(t.name)
                        if t.type != "EXECUTABLE":
                            public.add((os.path.join(folder, name), t.name))
        for s in t.sources:
            files.setdefault(s, set()).add(t.name)
    source_folders = {}
    for t in targets.values():
        for s in t.sources:
            source_folders.setdefault(os.path.dirname(s), set()).add(t.name)
    unowned = []
    for f in sorted(walk(project, excludes)):
        if f in files:
            continue
        folder = os.path.dirname(f)
        if f.endswith((".h", ".hpp")) and folder not in root_folders and folder in source_folders:
            files[f] = set(source_folders[folder])
        else:
            unowned.append(f)

    violations = []
    for f in sorted(files):
        path = os.path.join(project, f)
        if not os.path.exists(path):
            continue
        with open(path, errors="replace") as src:
            includes = [m.group(1) for m in map(INCLUDE.match, src) if m]
        for inc in includes:
            beside = os.path.normpath(os.path.join(os.path.dirname(f), inc))
            if os.path.exists(os.path.join(project, beside)):
                if os.path.dirname(beside) == os.path.dirname(f):
                    continue  # a header of its own folder, found beside it
                inc = beside
            holders = owners.get(os.path.dirname(inc), set())
            if not holders:
                if os.path.exists(os.path.join(project, inc)):
                    violations.append('%s: includes "%s", which no target exports' % (f, inc))
                continue  # not a project header
            owner = "/".join(sorted(holders))
            for name in sorted(files[f]):
                if not holders & allowed(targets, targets[name], memo):
                    violations.append('%s: includes "%s" of %s, but %s does not link %s'
                                      % (f, inc, owner, name, " or ".join(sorted(holders))))
                elif (f, name) in public and not holders & usage(targets, name, memo):
                    violations.append('%s: includes "%s" of %s, but %s links %s PRIVATE '
                                      '(its header needs PUBLIC)' % (f, inc, owner, name, owner))
    return violations, unowned, len(files)


def self_test(fixture):
    violations, _, _ = check(os.path.join(fixture, "table.txt"))
    with open(os.path.join(fixture, "expected.txt")) as f:
        expected = [line.rstrip("\n") for line in f if line.strip()]
    if sorted(violations) != sorted(expected):
        print("layering self-test FAILED: on %s the checker reported" % fixture)
        print("\n".join("  " + v for v in violations) or "  (nothing)")
        print("where the fixture expects")
        print("\n".join("  " + e for e in expected))
        return False
    print("layering self-test: the fixture's %d bad includes are rejected:" % len(expected))
    print("\n".join("  " + v for v in violations))
    return True


def main(argv):
    args = argv[1:]
    fixture = None
    if "--self-test" in args:
        i = args.index("--self-test")
        fixture = args[i + 1] if i + 1 < len(args) else None
        del args[i:i + 2]
        if fixture is None:
            args = []
    if len(args) > 1 or (not args and fixture is None):
        print(__doc__)
        return 2
    if fixture is not None and not self_test(fixture):
        return 1
    if not args:
        return 0
    violations, unowned, checked = check(args[0])
    for f in unowned:
        print("note: %s is in no target of this build, not checked" % f)
    for v in violations:
        print(v)
    if violations:
        print("layering: %d include(s) not covered by the link graph" % len(violations))
        return 1
    print("layering: %d files checked, every project include is linked" % checked)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
