#!/usr/bin/env python3
"""Holds src/ to the module table of docs/ARCHITECTURE.md (ctest `check_includes`, label unit).

Two rules, both read from the table's "may depend on" column:
  1. includes: every `#include "x/..."` in a file of module M names M itself or a module in M's row. A module
     is a src/ folder; a subfolder with a row of its own (`backend/cpu`) is a module apart from its parent.
     `all` allows everything; names that are not modules (fmt, PCRE2, ...) are not checked here.
  2. links: each library (`add_library(keel_...)` in src/**/CMakeLists.txt) links exactly the keel libraries
     its files include, PUBLIC when one of its headers includes them and PRIVATE otherwise.
Known violations that another change is removing are listed in scripts/check-includes.allow; an entry that no
longer matches anything fails too, so the list only shrinks.

usage: scripts/check-includes.py [REPO_ROOT]     (defaults to this script's parent folder)
"""
import pathlib
import re
import sys

ROOT = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else pathlib.Path(__file__).resolve().parent.parent)
SRC = ROOT / "src"
TABLE = ROOT / "docs" / "ARCHITECTURE.md"
ALLOW = ROOT / "scripts" / "check-includes.allow"
SOURCE_SUFFIXES = {".h", ".hpp", ".cpp", ".cc", ".cu", ".cuh"}
HEADER_SUFFIXES = {".h", ".hpp", ".cuh"}
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')

problems = []


def read_table():
    """module -> set of modules it may include (or None for `all`), from the first table under the title."""
    rows = {}
    for line in TABLE.read_text(encoding="utf-8").splitlines():
        m = re.match(r"^\|\s*`([a-z_/]+)`\s*\|.*\|([^|]*)\|\s*$", line)
        if not m:
            if rows and not line.startswith("|"):
                break  # the end of the module table
            continue
        names = [re.sub(r"\(.*?\)", "", n).strip().strip("`") for n in m.group(2).split(",")]
        rows[m.group(1)] = None if names == ["all"] else set(n for n in names if n)
    if not rows:
        sys.exit(f"check-includes: no module table found in {TABLE}")
    return {mod: (None if deps is None else deps & rows.keys()) for mod, deps in rows.items()}


def module_of(path, modules):
    """`backend/cpu/x.h` -> `backend/cpu` when that has a row, else `backend`; None when not a src/ module."""
    parts = pathlib.PurePosixPath(path).parts
    for n in range(len(parts) - 1, 0, -1):
        if "/".join(parts[:n]) in modules:
            return "/".join(parts[:n])
    return None


def libraries():
    """folder (relative to src/) -> library name, for every CMakeLists.txt that adds a keel_ library."""
    libs = {}
    for cml in sorted(SRC.rglob("CMakeLists.txt")):
        m = re.search(r"add_library\(\s*(keel_\w+)", cml.read_text(encoding="utf-8"))
        if m:
            libs[cml.parent.relative_to(SRC).as_posix()] = (m.group(1), cml)
    return libs


def library_of(rel_dir, libs):
    """The library whose CMakeLists.txt is nearest at or above src/<rel_dir>."""
    parts = pathlib.PurePosixPath(rel_dir).parts
    for n in range(len(parts), 0, -1):
        if "/".join(parts[:n]) in libs:
            return libs["/".join(parts[:n])][0]
    return None


def link_lists(cml, lib):
    """keel_ libraries that `lib` links in `cml`, with their visibility (PUBLIC/PRIVATE/INTERFACE)."""
    text = re.sub(r"#[^\n]*", "", cml.read_text(encoding="utf-8"))
    links = {}
    for m in re.finditer(r"target_link_libraries\(\s*" + lib + r"\b([^)]*)\)", text):
        visibility = "PUBLIC"  # CMake's default for a plain signature, for lack of a keyword
        for token in m.group(1).split():
            if token in ("PUBLIC", "PRIVATE", "INTERFACE"):
                visibility = token
            elif token.startswith("keel_") and token != "keel_warnings":
                links[token] = visibility
    return links


def main():
    table = read_table()
    libs = libraries()
    allow = {}
    if ALLOW.exists():
        for number, line in enumerate(ALLOW.read_text(encoding="utf-8").splitlines(), 1):
            line = line.split("#", 1)[0].split()
            if line:
                allow[(line[0], line[1])] = number
    used_allow = set()
    # library -> {needed library -> needed by a header?}
    needs = {lib: {} for lib, _ in libs.values()}
    files = sorted(p for p in SRC.rglob("*") if p.suffix in SOURCE_SUFFIXES and p.is_file())
    for path in files:
        rel = path.relative_to(SRC).as_posix()
        mod = module_of(rel, table)
        if mod is None:
            problems.append(f"src/{rel}: its folder has no row in the module table of "
                            f"{TABLE.relative_to(ROOT)}")
            continue
        lib = library_of(path.parent.relative_to(SRC).as_posix(), libs)
        allowed = table[mod]
        for number, line in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), 1):
            m = INCLUDE.match(line)
            if not m:
                continue
            target = module_of(m.group(1), table)
            if target is None or target == mod:
                continue
            if allowed is not None and target not in allowed:
                key = (f"src/{rel}", target)
                if key in allow:
                    used_allow.add(key)
                else:
                    problems.append(
                        f"src/{rel}:{number}: includes {m.group(1)}, but {mod} may include only "
                        f"{', '.join(sorted(allowed)) or 'nothing'} "
                        f"({TABLE.relative_to(ROOT)}, module table)")
            target_lib = library_of(target, libs)
            if lib and target_lib and target_lib != lib:
                needs[lib][target_lib] = needs[lib].get(target_lib, False) or path.suffix in HEADER_SUFFIXES
    for key, number in sorted(allow.items(), key=lambda kv: kv[1]):
        if key not in used_allow:
            problems.append(f"{ALLOW.relative_to(ROOT)}:{number}: {key[0]} does not include {key[1]} "
                            "(any more): delete this line")
    for rel_dir, (lib, cml) in sorted(libs.items()):
        links = link_lists(cml, lib)
        where = cml.relative_to(ROOT)
        for dep, in_header in sorted(needs[lib].items()):
            want = "PUBLIC" if in_header else "PRIVATE"
            if dep not in links:
                problems.append(f"{where}: {lib} includes headers of {dep} but does not link it ({want})")
            elif links[dep] != want:
                why = "a header of" if in_header else "only .cpp files of"
                problems.append(
                    f"{where}: {lib} links {dep} {links[dep]}, but {why} {lib} include it: {want}")
        for dep in sorted(set(links) - set(needs[lib])):
            problems.append(f"{where}: {lib} links {dep}, but nothing in src/{rel_dir} includes it: drop it")
    for p in problems:
        print(f"check-includes: {p}")
    if problems:
        print(f"check-includes: {len(problems)} problem(s)")
        return 1
    print(f"check-includes: ok ({len(files)} files, {len(libs)} libraries, "
          f"{len(used_allow)} known exception(s) in {ALLOW.relative_to(ROOT)})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
